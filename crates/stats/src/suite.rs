//! The seed metric suite: the numbers users already publish, computed exactly as the
//! published pandas script computes them from a per-interval series.

use serde::Serialize;

use crate::percentile::numpy_percentiles;
use crate::series::{Interval, Series};

/// Which tail of the per-interval TPS distribution "TPS p99" means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TpsTail {
    /// "TPS p99" is the 1st percentile: 99 % of intervals reached at least this throughput.
    #[default]
    Low,
    /// "TPS p99" is the 99th percentile of per-interval TPS.
    High,
}

impl TpsTail {
    /// The label every output shows beside TPS percentiles.
    pub fn label(self) -> &'static str {
        match self {
            TpsTail::Low => "low tail: pX = throughput reached in X% of intervals",
            TpsTail::High => "high tail: pX = X-th percentile of per-interval TPS",
        }
    }
}

/// Options for [`SeedSuite::compute`].
#[derive(Debug, Clone, Copy, Default)]
pub struct SuiteOptions {
    /// Which TPS tail to report.
    pub tps_tail: TpsTail,
}

/// The seed suite, field names as in the published fixtures' `.expected.json`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SeedSuite {
    /// Σ tests + Σ errors.
    pub total_tests: u64,
    /// Σ errors.
    pub errors: u64,
    /// Σ errors / total · 100.
    pub error_rate_pct: f64,
    /// Plain mean of per-interval TPS.
    pub tps_avg: f64,
    /// TPS p50 (tail per `tps_tail`).
    pub tps_p50: f64,
    /// TPS p95.
    pub tps_p95: f64,
    /// TPS p99.
    pub tps_p99: f64,
    /// TPS p99.9.
    pub tps_p99_9: f64,
    /// Tail used for the TPS percentiles.
    pub tps_tail: TpsTail,
    /// MTTFB weighted by successful tests, ms.
    pub mttfb_avg_ms: f64,
    /// Percentiles of per-interval MTTFB, ms.
    pub mttfb_p50_ms: f64,
    /// p95 of per-interval MTTFB.
    pub mttfb_p95_ms: f64,
    /// p99 of per-interval MTTFB.
    pub mttfb_p99_ms: f64,
    /// p99.9 of per-interval MTTFB.
    pub mttfb_p99_9_ms: f64,
    /// Mean absolute change of MTTFB between consecutive intervals, ms.
    pub mttfb_avg_diff_ms: f64,
    /// The published variability formula, %.
    pub mttfb_variability_pct: f64,
    /// Intervals counted: the measured ones, the drain after a stop aside.
    pub intervals: usize,
    /// Intervals left out of the variability sum because their MTTFB was 0.
    pub variability_zero_intervals: usize,
}

impl SeedSuite {
    /// Computes the suite over every interval of `series` (exclude warm-up first). The drain
    /// after a stop (its rows of no length at the end, [`Series::measured_rows`]: what
    /// completed in the grace period, volley's drain.csv) counts in Total Tests and the
    /// errors, and in no per-interval figure: TPS and MTTFB are the seeds' script's on the
    /// measured intervals alone, series.csv as it reads it.
    pub fn compute(series: &Series, opts: SuiteOptions) -> SeedSuite {
        let measured = series.measured_rows();
        let rows = &series.intervals[..measured];
        let drain = &series.intervals[measured..];
        // One pass over the rows (a long imported series is read from memory once, not once
        // a figure); the sums run in row order, as a pass of their own would run them.
        // (-0.0: where `Iterator::sum` starts, so an all-negative-zero sum stays one.)
        let (mut tests, mut errors, mut weighted) = (0u64, 0u64, -0.0f64);
        let mut tps: Vec<f64> = Vec::with_capacity(rows.len());
        // TPS weighted by each interval's length, for series whose intervals differ (an
        // import's edges cut to its traffic): (Σ tps·period, Σ period, whether they differ).
        let (mut tps_time, mut time, mut first_period, mut uneven) =
            (-0.0f64, -0.0f64, None::<f64>, false);
        let mut mttfb: Vec<f64> = Vec::with_capacity(rows.len());
        let mut variability = Variability::default();
        for (i, r) in rows.iter().enumerate() {
            variability.add(rows, i);
            tests += r.tests;
            errors += r.errors;
            weighted += r.mttfb_ms * r.tests as f64;
            // An interval whose TPS is unknown (NaN: an edge of an import whose time stamps
            // are whole seconds) is left out of the TPS figures, and so is one of no length,
            // which has no rate; both still count their requests.
            if !r.tps.is_nan() && r.period_s > 0.0 {
                tps.push(r.tps);
                tps_time += r.tps * r.period_s;
                time += r.period_s;
                uneven |= *first_period.get_or_insert(r.period_s) != r.period_s;
            }
            mttfb.push(r.mttfb_ms);
        }
        // Successes of the measured intervals: MTTFB's weights.
        let measured_tests = tests;
        for r in drain {
            tests += r.tests;
            errors += r.errors;
        }
        let total = tests + errors;
        // In time order, before the values are reordered for their percentiles. Intervals of
        // one length (nGrinder's seconds, volley's own intervals): the plain mean, as the
        // seeds' pandas script takes it, to the bit. Intervals of different lengths: the mean
        // over time, so that an import's TPS average is its successes per second of traffic
        // (the plain mean of a ramped file with cut edges was 1.5-2.1 % under it).
        let tps_avg = if uneven && time > 0.0 {
            tps_time / time
        } else {
            mean(&tps)
        };
        let diffs: f64 = mttfb.windows(2).map(|w| (w[1] - w[0]).abs()).sum();
        let mttfb_avg_diff_ms = ratio(diffs, mttfb.len().saturating_sub(1) as f64);
        let high = [50.0, 95.0, 99.0, 99.9];
        // The low tail's p99.9 is p(100 - 99.9), as computed (not the literal 0.1).
        let tps_ps = match opts.tps_tail {
            TpsTail::Low => high.map(|p| 100.0 - p),
            TpsTail::High => high,
        };
        let [tps_p50, tps_p95, tps_p99, tps_p99_9] =
            numpy_percentiles(&mut tps, tps_ps).map(|v| v.unwrap_or(f64::NAN));
        // With no success there is no first byte: the intervals' zeros are not times.
        let [mttfb_p50_ms, mttfb_p95_ms, mttfb_p99_ms, mttfb_p99_9_ms] = if measured_tests == 0 {
            [f64::NAN; 4]
        } else {
            numpy_percentiles(&mut mttfb, high).map(|v| v.unwrap_or(f64::NAN))
        };
        let mttfb_avg_diff_ms = if measured_tests == 0 {
            f64::NAN
        } else {
            mttfb_avg_diff_ms
        };
        let (variability, zero) = variability.value();
        SeedSuite {
            total_tests: total,
            errors,
            error_rate_pct: ratio(errors as f64 * 100.0, total as f64),
            tps_avg,
            tps_p50,
            tps_p95,
            tps_p99,
            tps_p99_9,
            tps_tail: opts.tps_tail,
            mttfb_avg_ms: ratio(weighted, measured_tests as f64),
            mttfb_p50_ms,
            mttfb_p95_ms,
            mttfb_p99_ms,
            mttfb_p99_9_ms,
            mttfb_avg_diff_ms,
            mttfb_variability_pct: variability,
            intervals: rows.len(),
            variability_zero_intervals: zero,
        }
    }
}

/// The published script's variability, summed row by row: its pandas index alignment makes
/// the denominator the *current* interval and drops the first and the last row's pairs.
#[derive(Default)]
struct Variability {
    num: f64,
    den: f64,
    /// Intervals left out because their MTTFB was 0.
    zero: usize,
}

impl Variability {
    /// Adds row `i` of `rows` (rows are added in order).
    #[inline]
    fn add(&mut self, rows: &[Interval], i: usize) {
        if i == 0 || i + 1 >= rows.len() {
            return;
        }
        let (cur, prev) = (&rows[i], &rows[i - 1]);
        if cur.mttfb_ms == 0.0 {
            self.zero += 1;
            return;
        }
        let w = cur.tests as f64;
        self.num += ((cur.mttfb_ms - prev.mttfb_ms) / cur.mttfb_ms).abs() * 100.0 * w;
        self.den += w;
    }

    /// The value, and how many intervals were left out because their MTTFB was 0.
    fn value(&self) -> (f64, usize) {
        (ratio(self.num, self.den), self.zero)
    }
}

fn mean(v: &[f64]) -> f64 {
    ratio(v.iter().sum(), v.len() as f64)
}

fn ratio(a: f64, b: f64) -> f64 {
    if b == 0.0 { f64::NAN } else { a / b }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::Interval;

    fn series(mttfb: &[f64], tests: &[u64]) -> Series {
        Series {
            intervals: mttfb
                .iter()
                .zip(tests)
                .map(|(&m, &t)| Interval {
                    mttfb_ms: m,
                    tests: t,
                    tps: t as f64,
                    period_s: 1.0,
                    ..Default::default()
                })
                .collect(),
        }
    }

    #[test]
    fn tps_average_of_intervals_of_different_lengths_is_per_second_of_the_span() {
        // An import's edges cut to its traffic: 0.9 s, 1 s and 1.109 s holding 3, 10 and 11
        // successes. The plain mean of 3/0.9, 10 and 11/1.109 would be 7.749; per second of
        // the 3.009 s it is 24 / 3.009 = 7.976.
        let rows = [(3u64, 0.9), (10, 1.0), (11, 1.109)]
            .iter()
            .scan(0.0, |start, &(tests, period)| {
                let row = Interval {
                    start_s: *start,
                    period_s: period,
                    tests,
                    tps: tests as f64 / period,
                    mttfb_ms: 5.0,
                    ..Default::default()
                };
                *start += period;
                Some(row)
            })
            .collect();
        let suite = SeedSuite::compute(&Series { intervals: rows }, SuiteOptions::default());
        assert!(
            (suite.tps_avg - 24.0 / 3.009).abs() < 1e-9,
            "{}",
            suite.tps_avg
        );
    }

    #[test]
    fn variability_matches_the_documented_check() {
        let s = series(&[100.0, 110.0, 90.0, 120.0, 100.0], &[10, 20, 30, 40, 50]);
        let suite = SeedSuite::compute(&s, SuiteOptions::default());
        assert!(
            (suite.mttfb_variability_pct - 20.5387).abs() < 1e-3,
            "{}",
            suite.mttfb_variability_pct
        );
        assert_eq!(suite.mttfb_avg_diff_ms, 20.0);
        // weighted mean: (1000+2200+2700+4800+5000)/150
        assert!((suite.mttfb_avg_ms - 15700.0 / 150.0).abs() < 1e-9);
    }

    #[test]
    fn tps_tails() {
        let s = series(&[1.0; 5], &[10, 20, 30, 40, 50]);
        let low = SeedSuite::compute(
            &s,
            SuiteOptions {
                tps_tail: TpsTail::Low,
            },
        );
        let high = SeedSuite::compute(
            &s,
            SuiteOptions {
                tps_tail: TpsTail::High,
            },
        );
        assert!((low.tps_p99 - 10.4).abs() < 1e-9);
        assert!((high.tps_p99 - 49.6).abs() < 1e-9);
        assert_eq!(low.tps_p50, 30.0);
        assert_eq!(low.tps_avg, 30.0);
    }

    #[test]
    fn one_pass_and_selected_percentiles_give_what_a_pass_and_a_sort_per_figure_give() {
        use crate::percentile::numpy_percentile;
        let mut rng = fastrand::Rng::with_seed(11);
        for len in [0, 1, 2, 3, 10, 101, 1000] {
            let mttfb: Vec<f64> = (0..len)
                .map(|_| {
                    if rng.u8(..10) == 0 {
                        f64::NAN
                    } else {
                        rng.f64() * 50.0
                    }
                })
                .collect();
            let tests: Vec<u64> = (0..len).map(|_| rng.u64(0..1000)).collect();
            let mut s = series(&mttfb, &tests);
            s.intervals
                .iter_mut()
                .filter(|_| rng.u8(..8) == 0)
                .for_each(|i| i.tps = f64::NAN);
            let got = SeedSuite::compute(&s, SuiteOptions::default());
            let rows = &s.intervals;
            let tps: Vec<f64> = rows.iter().map(|r| r.tps).filter(|t| !t.is_nan()).collect();
            let m: Vec<f64> = rows.iter().map(|r| r.mttfb_ms).collect();
            let same = |a: f64, b: f64, what: &str| {
                assert!(a.to_bits() == b.to_bits(), "{what} of {len}: {a} != {b}")
            };
            same(got.tps_avg, mean(&tps), "tps_avg");
            for (p, v) in [
                (50.0, got.tps_p50),
                (95.0, got.tps_p95),
                (99.0, got.tps_p99),
                (99.9, got.tps_p99_9),
            ] {
                same(
                    v,
                    numpy_percentile(&tps, 100.0 - p).unwrap_or(f64::NAN),
                    "tps percentile",
                );
            }
            for (p, v) in [
                (50.0, got.mttfb_p50_ms),
                (95.0, got.mttfb_p95_ms),
                (99.0, got.mttfb_p99_ms),
                (99.9, got.mttfb_p99_9_ms),
            ] {
                same(
                    v,
                    numpy_percentile(&m, p).unwrap_or(f64::NAN),
                    "mttfb percentile",
                );
            }
            same(
                got.mttfb_avg_diff_ms,
                mean(
                    &m.windows(2)
                        .map(|w| (w[1] - w[0]).abs())
                        .collect::<Vec<_>>(),
                ),
                "avg diff",
            );
            let weighted: f64 = rows.iter().map(|r| r.mttfb_ms * r.tests as f64).sum();
            same(
                got.mttfb_avg_ms,
                ratio(weighted, s.tests() as f64),
                "mttfb_avg",
            );
            assert_eq!(
                (got.total_tests, got.errors),
                (s.tests() + s.errors(), s.errors())
            );
        }
    }

    #[test]
    fn the_drain_counts_in_the_totals_and_in_no_per_interval_figure() {
        // Four measured intervals, then the drain after the stop: 0 s long, no TPS, 7
        // successes at 300 ms and 2 failures.
        let measured = series(&[100.0, 110.0, 90.0, 120.0], &[10, 20, 30, 40]);
        let mut with_drain = measured.clone();
        with_drain.intervals.push(Interval {
            start_s: 4.0,
            period_s: 0.0,
            tests: 7,
            errors: 2,
            tps: f64::NAN,
            mttfb_ms: 300.0,
            ..Default::default()
        });
        assert_eq!(with_drain.measured_rows(), 4);
        let (a, b) = (
            SeedSuite::compute(&measured, SuiteOptions::default()),
            SeedSuite::compute(&with_drain, SuiteOptions::default()),
        );
        assert_eq!((b.total_tests, b.errors), (a.total_tests + 9, 2));
        assert!((b.error_rate_pct - 200.0 / 109.0).abs() < 1e-12);
        // Everything per interval is the measured intervals' alone, to the bit.
        let per_interval = |s: &SeedSuite| {
            [
                s.tps_avg,
                s.tps_p50,
                s.tps_p95,
                s.tps_p99,
                s.tps_p99_9,
                s.mttfb_avg_ms,
                s.mttfb_p50_ms,
                s.mttfb_p95_ms,
                s.mttfb_p99_ms,
                s.mttfb_p99_9_ms,
                s.mttfb_avg_diff_ms,
                s.mttfb_variability_pct,
            ]
            .map(f64::to_bits)
        };
        assert_eq!(per_interval(&a), per_interval(&b));
        assert_eq!((a.intervals, b.intervals), (4, 4));
    }

    #[test]
    fn zero_mttfb_intervals_are_left_out() {
        let s = series(&[100.0, 0.0, 100.0, 100.0], &[10, 0, 10, 10]);
        let suite = SeedSuite::compute(&s, SuiteOptions::default());
        assert_eq!(suite.variability_zero_intervals, 1);
        assert_eq!(suite.mttfb_variability_pct, 100.0);
    }
}
