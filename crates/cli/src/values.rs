//! The values of flags that are more than a scenario value, parsed when clap reads the flags
//! (`args.rs` gives each as a value parser, wrapped in its `Typed`, which puts the flag and
//! the text before a message), so a command receives them typed and checked. A leaf: it
//! imports nothing of the binary, so the flags (`args.rs`) and the commands both use it.

use std::time::Duration;

/// The highest rate a search may reach, arrivals per second.
const MAX_RATE: f64 = volley_scenario::limits::MAX_RATE;
/// The most virtual users a search may reach.
const MAX_USERS: f64 = volley_scenario::limits::MAX_VUS as f64;

/// The longest probe, warm-up and recovery wait.
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(3600);

/// `--rates START..MAX`: arrivals per second, as `--rate` takes them.
pub(crate) fn rate_range(text: &str) -> Result<(f64, f64), String> {
    range(text, false, MAX_RATE)
}

/// `--users START..MAX` (`--vus`): whole numbers of VUs.
pub(crate) fn users_range(text: &str) -> Result<(f64, f64), String> {
    range(text, true, MAX_USERS)
}

/// `START..MAX`, both above zero, START ≤ MAX, MAX at most `cap`; a mistake says what to write
/// (the flag and `text` are put before it where the flag is parsed).
fn range(text: &str, whole: bool, cap: f64) -> Result<(f64, f64), String> {
    let like = if whole { "5..200" } else { "50..5000" };
    let bad = || format!("write START..MAX, like {like}");
    let (a, b) = text.split_once("..").ok_or_else(bad)?;
    let parse = |s: &str| -> Result<f64, String> {
        if whole {
            s.trim().parse::<u64>().map(|v| v as f64).map_err(|_| bad())
        } else {
            volley_scenario::parse_rate(s.trim()).map_err(String::from)
        }
    };
    let (start, max) = (parse(a)?, parse(b)?);
    if !(start.is_finite() && max.is_finite()) {
        return Err(format!("give finite loads, like {like}"));
    }
    if !(start > 0.0 && start <= max) {
        return Err("START must be above 0 and at most MAX".into());
    }
    if max > cap {
        return Err(format!(
            "at most {} from one process; split a larger load with --segment or volley k8s manifest",
            volley_formats::numfmt::grouped(cap)
        ));
    }
    Ok((start, max))
}

/// `--precision 5%` as a fraction (0.05); a bare fraction is refused, as everywhere a
/// percentage is given.
pub(crate) fn precision(text: &str) -> Result<f64, String> {
    let pct = volley_scenario::percent::parse_percent("--precision", text, 0.5, 100.0)?;
    Ok(pct / 100.0)
}

/// `--probe`: from 1s to an hour.
pub(crate) fn probe(text: &str) -> Result<Duration, String> {
    Ok(volley_scenario::duration::parse_within(
        text,
        Duration::from_secs(1),
        MAX_WAIT,
    )?)
}

/// `--recovery`: up to an hour.
pub(crate) fn recovery(text: &str) -> Result<Duration, String> {
    Ok(volley_scenario::duration::parse_within(
        text,
        Duration::ZERO,
        MAX_WAIT,
    )?)
}

/// `--drain`: up to 10 minutes.
pub(crate) fn drain(text: &str) -> Result<Duration, String> {
    Ok(volley_scenario::duration::parse_within(
        text,
        Duration::ZERO,
        Duration::from_secs(600),
    )?)
}

/// The widest tolerance: ten times the baseline's value (a latency may grow that much; a
/// tolerance beyond it would turn the gate off without saying so).
const MAX_TOLERANCE_PCT: f64 = 1000.0;

/// `--tolerance 5%`, parsed with the flags (clap's value parser).
pub(crate) fn tolerance(t: &str) -> Result<f64, volley_scenario::Error> {
    volley_scenario::percent::parse_percent("--tolerance", t, 0.0, MAX_TOLERANCE_PCT)
}

/// `--start-in`: at least 10s, for the pods to be scheduled and pull the image.
pub(crate) fn start_in(text: &str) -> Result<Duration, String> {
    let d = volley_scenario::parse_duration(text)?;
    if d < Duration::from_secs(10) {
        return Err("give the pods at least 10s to be scheduled and pull the image".into());
    }
    Ok(d)
}

/// `--start-tolerance 1s`, parsed with the flags (clap's value parser). Segments of one run
/// start together (--start-at); minutes apart, they are not one run.
pub(crate) fn start_tolerance(text: &str) -> Result<std::time::Duration, String> {
    let d = volley_scenario::parse_duration(text).map_err(|e| e.to_string())?;
    if d > std::time::Duration::from_secs(600) {
        return Err("segments of one run start at one --start-at, so at most 10m apart; give a shorter tolerance (the default is what a shared --start-at needs)".into());
    }
    Ok(d)
}
