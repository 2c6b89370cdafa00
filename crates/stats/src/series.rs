//! The per-interval series: one row per sampling interval, the shape every tool's
//! per-interval output (and ours) reduces to.

/// One sampling interval, in nGrinder's terms.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Interval {
    /// Seconds from the start of the run to the start of this interval.
    pub start_s: f64,
    /// Length of the interval in seconds (the last one of a stopped run may be shorter).
    pub period_s: f64,
    /// Virtual users running when the interval was sampled.
    pub vusers: f64,
    /// Requests (tests) that succeeded in the interval.
    pub tests: u64,
    /// Requests that failed in the interval.
    pub errors: u64,
    /// Successful tests per second.
    pub tps: f64,
    /// Mean total time of the successful tests, ms.
    pub mean_test_time_ms: f64,
    /// Standard deviation of the successful tests' total time, ms.
    pub test_time_sd_ms: f64,
    /// Mean time to first byte of the successful tests, ms.
    pub mttfb_ms: f64,
    /// Mean response length per test, bytes.
    pub mean_response_length: f64,
    /// Response bytes per second.
    pub response_bytes_per_second: f64,
    /// HTTP responses with status >= 400, whether or not they failed the test.
    pub response_errors: u64,
    /// Mean host resolution time per test, ms.
    pub mean_resolve_ms: f64,
    /// Mean connection set-up time per test, ms.
    pub mean_connect_ms: f64,
    /// Open-model arrivals that found no free VU (0 for closed-model runs).
    pub dropped: u64,
}

/// A whole series plus what is known about where it came from.
#[derive(Debug, Clone, Default)]
pub struct Series {
    /// The rows, in time order.
    pub intervals: Vec<Interval>,
}

impl Series {
    /// Rows that start at or after `warmup_s` seconds: this series itself when that is every
    /// row (no copy of a long series for nothing), else a copy of those rows.
    pub fn after_warmup(&self, warmup_s: f64) -> std::borrow::Cow<'_, Series> {
        let kept = |i: &&Interval| i.start_s + 1e-9 >= warmup_s;
        if self.intervals.iter().all(|i| kept(&i)) {
            return std::borrow::Cow::Borrowed(self);
        }
        std::borrow::Cow::Owned(Series {
            intervals: self.intervals.iter().filter(kept).cloned().collect(),
        })
    }

    /// The nominal sampling interval: the most common period, in seconds.
    pub fn nominal_interval_s(&self) -> f64 {
        let Some(first) = self.intervals.first().map(|i| i.period_s) else {
            return 1.0;
        };
        // Nearly always every row has the same period: no copy, no selection.
        if self
            .intervals
            .iter()
            .all(|i| i.period_s.to_bits() == first.to_bits())
        {
            return first;
        }
        let mut periods: Vec<f64> = self.intervals.iter().map(|i| i.period_s).collect();
        let half = periods.len() / 2;
        *periods.select_nth_unstable_by(half, f64::total_cmp).1
    }

    /// How many rows are measured intervals: all but the drain after a stop, the rows of no
    /// length at the end (volley's grace-period completions, in a run directory's drain.csv),
    /// which count in the totals but cover no time.
    pub fn measured_rows(&self) -> usize {
        self.intervals
            .iter()
            .rposition(|r| r.period_s > 0.0)
            .map_or(0, |i| i + 1)
    }

    /// Seconds the intervals cover, summed in order.
    pub fn measured_s(&self) -> f64 {
        self.intervals.iter().map(|i| i.period_s).sum()
    }

    /// Total successful tests.
    pub fn tests(&self) -> u64 {
        self.intervals.iter().map(|i| i.tests).sum()
    }

    /// Total failed tests.
    pub fn errors(&self) -> u64 {
        self.intervals.iter().map(|i| i.errors).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(periods: &[f64]) -> Series {
        Series {
            intervals: periods
                .iter()
                .map(|&period_s| Interval {
                    period_s,
                    ..Default::default()
                })
                .collect(),
        }
    }

    #[test]
    fn the_nominal_interval_is_the_middle_period_in_order() {
        let mut rng = fastrand::Rng::with_seed(5);
        for len in 1..60 {
            let periods: Vec<f64> = (0..len)
                .map(|_| [0.5, 1.0, 1.0, 2.0, 10.0][rng.usize(..5)])
                .collect();
            let mut sorted = periods.clone();
            sorted.sort_by(f64::total_cmp);
            assert_eq!(
                series(&periods).nominal_interval_s(),
                sorted[len / 2],
                "{periods:?}"
            );
        }
        assert_eq!(series(&[2.0; 7]).nominal_interval_s(), 2.0);
        assert_eq!(
            series(&[]).nominal_interval_s(),
            1.0,
            "an empty series reads as 1 s"
        );
    }
}
