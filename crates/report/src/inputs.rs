//! How a report reads its source, decided before any figure: the options (the warm-up left
//! out, the TPS tail), the seconds a warm-up stands for, and which server readings can be read
//! at all. A leaf: the model, the levels and the findings all read through it.

use volley_formats::Source;
use volley_scenario::Warmup;
use volley_stats::TpsTail;

/// How to compute the report.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReportOptions {
    /// What to exclude from the start; `None` uses the run's own warm-up.
    pub warmup: Option<Warmup>,
    /// TPS tail.
    pub tps_tail: TpsTail,
}

/// Seconds to exclude from `src` for `warmup`: given seconds, the length of the plan's
/// first N stages, or the run's own warm-up.
pub fn warmup_seconds(src: &Source, warmup: Option<Warmup>) -> f64 {
    match warmup {
        Some(Warmup::Time(d)) => d.as_secs_f64(),
        Some(Warmup::Stages(n)) => {
            let stages = src
                .meta
                .as_ref()
                .map(|m| m.plan.load.stage_durations())
                .unwrap_or_default();
            stages.iter().take(n).map(|d| d.as_secs_f64()).sum()
        }
        None => src.meta.as_ref().map_or(0.0, |m| m.warmup_s),
    }
}

/// Checks that `warmup` leaves something of `src` to report: `stage:N` needs a run with
/// more than N stages, and a warm-up in seconds must be shorter than what was measured.
pub fn check_warmup(src: &Source, warmup: Option<Warmup>) -> crate::error::Result<()> {
    let fail = |why: String| {
        Err(crate::error::Repr::Warmup {
            path: src.path.clone(),
            why,
        }
        .into())
    };
    match warmup {
        Some(Warmup::Stages(n)) => {
            let stages = src
                .meta
                .as_ref()
                .map(|m| m.plan.load.stage_durations())
                .unwrap_or_default();
            if stages.is_empty() {
                return fail(format!(
                    "the warm-up stage:{n} needs a volley run's stages and this has none; give the warm-up in seconds, e.g. 60s"
                ));
            }
            if n >= stages.len() {
                return fail(format!(
                    "the warm-up stage:{n} leaves nothing to report: the run has {} stage{}; give at most stage:{}",
                    stages.len(),
                    if stages.len() == 1 { "" } else { "s" },
                    stages.len() - 1
                ));
            }
        }
        Some(Warmup::Time(d)) => {
            let s = d.as_secs_f64();
            // Summed only for a warm-up in seconds (a long imported series is millions of rows).
            let measured = src.series.measured_s();
            // An interval counts from its start: a warm-up that no interval starts after
            // leaves nothing, even when it is a little shorter than the run.
            // (The drain after the stop, a row of no length, is nothing measured.)
            let last_start = src
                .series
                .intervals
                .iter()
                .filter(|i| i.period_s > 0.0)
                .map(|i| i.start_s)
                .fold(f64::NEG_INFINITY, f64::max);
            if measured > 0.0 && (s >= measured || s > last_start) {
                return fail(format!(
                    "a warm-up of {s}s leaves nothing of the {measured:.0} s measured; give a shorter warm-up"
                ));
            }
        }
        _ => {}
    }
    Ok(())
}

/// Whether a reading of server.csv can be what it says: finite, within ±2^64, and a CPU
/// load within 0–1. The scraper records no other (it marks them in run.json); a run
/// directory written before it did may hold some, and a peak or a finding never reads them.
pub(crate) fn readable(p: &volley_formats::rundir::ServerPoint) -> bool {
    const MAX_MAGNITUDE: f64 = 18_446_744_073_709_551_616.0;
    p.value.is_finite()
        && p.value.abs() <= MAX_MAGNITUDE
        && (!["process_cpu_usage", "system_cpu_usage"]
            .iter()
            .any(|r| p.series == *r || p.series.starts_with(&format!("{r}{{")))
            || (0.0..=1.0).contains(&p.value))
}
