//! `--segment`, `--segments` (with `$JOB_COMPLETION_INDEX`), `--start-at` and `--run-id`:
//! which share of a split run this process runs, and when it starts.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Result, bail};
use volley_scenario::Segment;

use crate::args::RunArgs;

/// The index a Kubernetes Indexed Job gives each pod.
const JOB_INDEX: &str = "JOB_COMPLETION_INDEX";

/// The segment the flags (and environment) name; the whole plan when none.
pub(crate) fn segment(a: &RunArgs) -> Result<Segment> {
    segment_from(
        a.segment,
        a.segments,
        std::env::var(JOB_INDEX).ok().as_deref(),
    )
}

fn segment_from(
    segment: Option<Segment>,
    segments: Option<u64>,
    job_index: Option<&str>,
) -> Result<Segment> {
    match (segment, segments) {
        (Some(seg), n) => {
            if let Some(n) = n.filter(|n| *n != seg.count) {
                bail!(
                    "--segment {seg} says {} segments but --segments says {n}; give one of them",
                    seg.count
                );
            }
            Ok(seg)
        }
        (None, Some(n)) => {
            let Some(i) = job_index else {
                bail!(
                    "--segments {n} needs this process's index: give --segment i/{n}, or set ${JOB_INDEX} (Kubernetes Indexed Jobs set it)"
                );
            };
            let i: u64 = i
                .trim()
                .parse()
                .map_err(|_| anyhow::anyhow!("${JOB_INDEX} is `{i}`, not a whole number"))?;
            Segment::new(i, n).map_err(|e| anyhow::anyhow!("${JOB_INDEX} with --segments {n}: {e}"))
        }
        (None, None) => Ok(Segment::WHOLE),
    }
}

/// When to start: the instant `--start-at` names (rounded up to a whole second, so that the
/// intervals of every segment fall on the same epoch-second boundaries), or for a segment
/// without it the next whole second; `None` for a plain run. A time already past is an
/// error: a segment starting late would skew the merged run.
pub(crate) fn start_at(a: &RunArgs, seg: Segment) -> Result<Option<SystemTime>> {
    let now = SystemTime::now();
    match &a.start_at {
        Some(text) => start_at_from(text, now).map(Some),
        None if !seg.is_whole() => Ok(Some(whole_second_after(now))),
        None => Ok(None),
    }
}

fn start_at_from(text: &str, now: SystemTime) -> Result<SystemTime> {
    let t = text.trim();
    let at = if let Ok(secs) = t.parse::<f64>() {
        if !secs.is_finite() || secs < 0.0 {
            bail!(
                "--start-at {text}: give Unix seconds (like 1767225600) or an RFC 3339 time (like 2026-01-01T00:00:00Z)"
            );
        }
        // Beyond a day ahead is refused below; this only keeps the arithmetic finite.
        let far = now.duration_since(UNIX_EPOCH).unwrap_or_default() + 2 * MAX_START_AHEAD;
        UNIX_EPOCH + Duration::try_from_secs_f64(secs).map_or(far, |d| d.min(far))
    } else {
        let ts: jiff::Timestamp = t.parse().map_err(|e| {
            anyhow::anyhow!("--start-at {text}: {e}; give an RFC 3339 time with its offset (like 2026-01-01T00:00:00Z) or Unix seconds")
        })?;
        SystemTime::from(ts)
    };
    let whole = if at
        .duration_since(UNIX_EPOCH)
        .is_ok_and(|d| d.subsec_nanos() == 0)
    {
        at
    } else {
        whole_second_after(at)
    };
    if whole != at {
        eprintln!(
            "volley: --start-at {text} rounded up to the next whole second, so intervals line up on epoch seconds"
        );
    }
    if let Ok(past) = now.duration_since(whole) {
        bail!(
            "--start-at {text} was {:.1} s ago: every segment must start at the same instant, so a time already past is refused; give a time a little in the future (e.g. --start-at $(( $(date +%s) + 30 )))",
            past.as_secs_f64()
        );
    }
    let ahead = whole.duration_since(now).unwrap_or_default();
    if ahead > MAX_START_AHEAD {
        bail!(
            "--start-at {text} is {:.0} h ahead: give a time within {} h, a little in the future (e.g. --start-at $(( $(date +%s) + 30 )))",
            ahead.as_secs_f64() / 3600.0,
            MAX_START_AHEAD.as_secs() / 3600
        );
    }
    if ahead > Duration::from_secs(2) {
        eprintln!(
            "volley: waiting {:.0} s for --start-at {text} before the run begins (Ctrl-C ends the wait)",
            ahead.as_secs_f64()
        );
    }
    Ok(whole)
}

/// The furthest ahead `--start-at` may be: segments are started together, minutes apart
/// at most, so a day covers any schedule and a typo in the year is caught.
const MAX_START_AHEAD: Duration = Duration::from_secs(24 * 3600);

/// The first whole epoch second after `t`.
fn whole_second_after(t: SystemTime) -> SystemTime {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    UNIX_EPOCH + Duration::from_secs(since.as_secs() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_from_flags_and_environment() {
        assert_eq!(segment_from(None, None, Some("3")).unwrap(), Segment::WHOLE);
        let one_of_four = Segment::new(1, 4).unwrap();
        assert_eq!(
            segment_from(Some(one_of_four), None, None).unwrap(),
            one_of_four
        );
        assert_eq!(
            segment_from(Some(one_of_four), Some(4), Some("2")).unwrap(),
            one_of_four
        );
        assert_eq!(
            segment_from(None, Some(4), Some("2")).unwrap(),
            Segment::new(2, 4).unwrap()
        );
        assert!(
            segment_from(Some(one_of_four), Some(3), None)
                .unwrap_err()
                .to_string()
                .contains("--segments says 3")
        );
        assert!(
            segment_from(None, Some(4), None)
                .unwrap_err()
                .to_string()
                .contains("JOB_COMPLETION_INDEX")
        );
        assert!(
            segment_from(None, Some(4), Some("4"))
                .unwrap_err()
                .to_string()
                .contains("0/4 … 3/4")
        );
        assert!(
            segment_from(None, Some(4), Some("x"))
                .unwrap_err()
                .to_string()
                .contains("not a whole number")
        );
    }

    #[test]
    fn start_times() {
        let now = UNIX_EPOCH + Duration::from_millis(1_767_225_600_250);
        let at = start_at_from("1767225610", now).unwrap();
        assert_eq!(at, UNIX_EPOCH + Duration::from_secs(1_767_225_610));
        assert_eq!(start_at_from("2026-01-01T00:00:10Z", now).unwrap(), at);
        assert_eq!(start_at_from("2026-01-01T01:00:10+01:00", now).unwrap(), at);
        assert_eq!(
            start_at_from("1767225609.5", now).unwrap(),
            at,
            "rounded up to a whole second"
        );
        let e = start_at_from("1767225590", now).unwrap_err().to_string();
        assert!(
            e.contains("10.2 s ago") && e.contains("a little in the future"),
            "{e}"
        );
        assert!(
            start_at_from("tomorrow", now)
                .unwrap_err()
                .to_string()
                .contains("RFC 3339")
        );
        for far in [
            "1e20",
            "1e300",
            "2027-01-01T00:00:00Z",
            "18446744073709551615",
        ] {
            let e = start_at_from(far, now).unwrap_err().to_string();
            assert!(e.contains("within 24 h"), "{far}: {e}");
        }
        assert!(
            start_at_from("2026-01-01T00:00:10", now).is_err(),
            "a time without its offset is ambiguous"
        );
        assert_eq!(
            whole_second_after(now),
            UNIX_EPOCH + Duration::from_secs(1_767_225_601)
        );
    }
}
