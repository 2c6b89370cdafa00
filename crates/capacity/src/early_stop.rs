//! The rule a probe is stopped by while it runs: after the warm-up, once
//! [`EARLY_STOP_INTERVALS`] intervals in a row each break a latency SLO [`EARLY_STOP_FACTOR`]×
//! over, or an error-rate SLO [`EARLY_STOP_FACTOR`]× over (and by 5 points at least), the
//! server is clearly overloaded, and hammering it longer shows nothing more.
//!
//! Each figure is read from the interval by the SLO's own reader
//! ([`volley_stats::sample::IntervalSample`]: errors over all requests, a percentile of the
//! interval's successful requests), never by parsing the SLO's text again.

use volley_scenario::Threshold;
use volley_scenario::threshold::Metric;
use volley_stats::sample::IntervalSample;

/// A probe stops early once this many intervals in a row clearly break the SLO.
pub const EARLY_STOP_INTERVALS: u32 = 2;
/// "Clearly": by this factor.
pub const EARLY_STOP_FACTOR: f64 = 3.0;
/// An error-rate SLO is broken clearly only this many points over its limit at least.
pub const EARLY_STOP_ERROR_POINTS: f64 = 5.0;

/// Watches a probe's intervals.
#[derive(Debug, Clone)]
pub struct EarlyStop<'a> {
    slo: &'a [Threshold],
    warmup_intervals: u64,
    in_a_row: u32,
    stopped: Option<String>,
}

impl<'a> EarlyStop<'a> {
    /// A watch of `slo` that starts judging at interval `warmup_intervals` (0-based).
    pub fn new(slo: &'a [Threshold], warmup_intervals: u64) -> EarlyStop<'a> {
        EarlyStop {
            slo,
            warmup_intervals,
            in_a_row: 0,
            stopped: None,
        }
    }

    /// Why the probe was stopped, once it was.
    pub fn stopped(&self) -> Option<&str> {
        self.stopped.as_deref()
    }

    /// Reads interval `index` (of `period_s` seconds): `Some(why)` the first time the probe is
    /// to stop. The drain after a stop (a row of no length) is no interval of the probe.
    pub fn interval(&mut self, index: u64, period_s: f64, s: &IntervalSample) -> Option<String> {
        if index < self.warmup_intervals || self.stopped.is_some() || period_s <= 0.0 {
            return None;
        }
        match clearly_broken(self.slo, s) {
            Some(why) => {
                self.in_a_row += 1;
                if self.in_a_row < EARLY_STOP_INTERVALS {
                    return None;
                }
                let msg = format!(
                    "{EARLY_STOP_INTERVALS} intervals in a row broke the SLO {EARLY_STOP_FACTOR}× over (last: {why})"
                );
                self.stopped = Some(msg.clone());
                Some(msg)
            }
            None => {
                self.in_a_row = 0;
                None
            }
        }
    }
}

/// The figure `t` reads in one interval, in the SLO's unit (ms, %); `None` when the interval
/// does not have it (no request of that kind, a statistic an interval does not hold).
pub fn interval_figure(t: &Threshold, s: &IntervalSample) -> Option<f64> {
    let c = &s.counts;
    let latency = |l: &volley_stats::latencies::Latencies| {
        let q = t.stat.percentile()?;
        (!l.is_empty()).then(|| l.value_at_percentile(q) as f64 / 1000.0)
    };
    match t.metric {
        Metric::ErrorRate => {
            let all = c.tests + c.errors;
            (all > 0).then(|| c.errors as f64 / all as f64 * 100.0)
        }
        Metric::Ttfb => latency(&s.ttfb),
        Metric::Total => latency(&s.total),
        _ => None,
    }
}

/// How interval `s` breaks `slo` clearly, if it does: `error_rate < 1% read 94.97 %`.
fn clearly_broken(slo: &[Threshold], s: &IntervalSample) -> Option<String> {
    slo.iter().find_map(|t| {
        let got = interval_figure(t, s)?;
        let over = match t.metric {
            Metric::ErrorRate => {
                got > (t.limit * EARLY_STOP_FACTOR).max(t.limit + EARLY_STOP_ERROR_POINTS)
            }
            _ => got > t.limit * EARLY_STOP_FACTOR,
        };
        let unit = if t.metric == Metric::ErrorRate {
            "%"
        } else {
            "ms"
        };
        over.then(|| format!("{} read {got:.1} {unit}", t.expr))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(ok: u64, errors: u64, ttfb_ms: u64) -> IntervalSample {
        let mut s = IntervalSample::new(0);
        s.counts.tests = ok;
        s.counts.errors = errors;
        for _ in 0..ok {
            s.ttfb.record(ttfb_ms * 1000);
        }
        s
    }

    fn slo(exprs: &[&str]) -> Vec<Threshold> {
        exprs
            .iter()
            .map(|e| volley_scenario::parse_threshold(e).unwrap())
            .collect()
    }

    #[test]
    fn the_error_rate_is_over_all_requests() {
        // 95 % errors: 5 successes, 95 failures. It was read as 95 / 5 = 1,900 %.
        let t = slo(&["error_rate < 1%"]);
        let got = interval_figure(&t[0], &sample(5, 95, 1)).unwrap();
        assert!((got - 95.0).abs() < 1e-9, "{got}");
    }

    #[test]
    fn two_clear_breaks_in_a_row_after_the_warm_up_stop_a_probe() {
        let t = slo(&["ttfb p99 < 100ms", "error_rate < 1%"]);
        let mut w = EarlyStop::new(&t, 2);
        let bad = sample(50, 0, 400);
        // The warm-up is not judged.
        assert_eq!(w.interval(0, 1.0, &bad), None);
        assert_eq!(w.interval(1, 1.0, &bad), None);
        // One clear break, then a good interval: the count starts again.
        assert_eq!(w.interval(2, 1.0, &bad), None);
        assert_eq!(w.interval(3, 1.0, &sample(50, 0, 20)), None);
        assert_eq!(w.interval(4, 1.0, &bad), None);
        // 2× over is not clearly over.
        assert_eq!(w.interval(5, 1.0, &sample(50, 0, 200)), None);
        assert_eq!(w.interval(6, 1.0, &bad), None);
        let why = w.interval(7, 1.0, &bad).expect("stops");
        assert!(why.contains("ttfb p99 < 100ms read"), "{why}");
        assert!(why.contains(" ms"), "{why}");
        assert_eq!(w.stopped(), Some(why.as_str()));
        // The drain and later rows change nothing.
        assert_eq!(w.interval(8, 0.0, &bad), None);
    }

    #[test]
    fn an_error_cliff_stops_a_probe_and_says_the_rate_in_percent() {
        let t = slo(&["error_rate < 1%"]);
        let mut w = EarlyStop::new(&t, 0);
        let cliff = sample(5, 95, 1);
        assert_eq!(w.interval(0, 1.0, &cliff), None);
        let why = w.interval(1, 1.0, &cliff).unwrap();
        assert!(why.contains("error_rate < 1% read 95.0 %"), "{why}");
        // 4 % errors under a 1 % SLO: 3× over, but not by 5 points.
        let mut w = EarlyStop::new(&t, 0);
        let some = sample(96, 4, 1);
        assert_eq!(w.interval(0, 1.0, &some), None);
        assert_eq!(w.interval(1, 1.0, &some), None);
    }
}
