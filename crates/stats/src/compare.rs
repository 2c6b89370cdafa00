//! Comparing runs, metric by metric, with run-to-run noise taken into account.
//!
//! A change is painted 🟢 or 🔴 only when it is larger than the noise of the two runs.
//! The noise of each figure is estimated from each run itself with a moving-block
//! bootstrap over its intervals: the intervals are resampled in blocks of consecutive
//! intervals (so that slow drifts and bursts stay together), the figure is recomputed on
//! every resample, and the spread of those values is the figure's standard error. A
//! change counts only when it exceeds [`NOISE_Z`] combined standard errors of the two
//! runs — a deliberately strict bar, because a comparison table holds ~20 figures and
//! two runs differ by more than their within-run noise suggests — and, because two
//! quiet runs can differ "significantly" by a fraction of a percent that no one should
//! act on, only when it is also at least [`MIN_EFFECT_PCT`] of the earlier value.

use serde::Serialize;

use crate::latency::{CompactHistogram, LatencySummary};
use crate::series::Series;
use crate::suite::{SeedSuite, SuiteOptions};

/// How many standard errors a change must exceed to count.
pub const NOISE_Z: f64 = 3.0;
/// Smallest change, in % of the earlier value, that is ever marked better or worse.
pub const MIN_EFFECT_PCT: f64 = 2.0;
/// Bootstrap resamples per run.
pub const RESAMPLES: usize = 200;

/// Which way is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Higher is better (throughput).
    Higher,
    /// Lower is better (latency, errors).
    Lower,
}

/// The verdict on one figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Better beyond the noise: 🟢.
    Better,
    /// Worse beyond the noise: 🔴.
    Worse,
    /// Within the noise (or unchanged): ⚪.
    Noise,
}

impl Verdict {
    /// The mark the seeds use.
    pub fn mark(self) -> &'static str {
        match self {
            Verdict::Better => "🟢",
            Verdict::Worse => "🔴",
            Verdict::Noise => "⚪",
        }
    }
}

/// One run's inputs: its series and, when known, per-interval latency histograms
/// (aligned with the series, µs).
#[derive(Debug, Clone)]
pub struct RunSample {
    /// The series (after warm-up).
    pub series: Series,
    /// Per-interval time-to-first-byte histograms, one per series row, if the source has them.
    pub ttfb: Option<Vec<CompactHistogram>>,
    /// TPS tail for the suite.
    pub options: SuiteOptions,
}

/// One row of a comparison table.
#[derive(Debug, Clone, Serialize)]
pub struct CompareRow {
    /// Stable key (as in the suite JSON).
    pub key: &'static str,
    /// Label as the seeds write it.
    pub label: &'static str,
    /// Unit shown after values (`ms`, `%` or empty).
    pub unit: &'static str,
    /// Which way is better.
    pub direction: Direction,
    /// Value in the earlier run.
    pub before: f64,
    /// Value in the later run.
    pub after: f64,
    /// `(after - before) / before · 100`.
    pub change_pct: f64,
    /// The change that noise alone could explain, in % of `before`.
    pub noise_pct: f64,
    /// 🟢 / 🔴 / ⚪.
    pub verdict: Verdict,
    /// A per-request percentile that either run has too few requests beyond to judge
    /// (fewer than [`MIN_TAIL`]); always ⚪.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub too_few: bool,
    /// Either run has fewer than [`MIN_INTERVALS`] intervals: its noise cannot be
    /// estimated, so nothing is judged (⚪, never against the 2 % floor alone).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub too_few_intervals: bool,
}

/// Intervals a run must have for the bootstrap to estimate its noise.
pub const MIN_INTERVALS: usize = 4;

/// Requests a run must have beyond a per-request percentile for a change in it to be
/// judged: p99.9 needs 10,000 requests, p99 1,000.
pub const MIN_TAIL: f64 = 10.0;

struct Metric {
    key: &'static str,
    label: &'static str,
    unit: &'static str,
    direction: Direction,
    value: fn(&Figures) -> f64,
}

/// The quantile a per-request percentile metric reads (`ttfb_p99_9_ms` → 0.999).
fn request_quantile(key: &str) -> Option<f64> {
    let p = key.strip_prefix("ttfb_p")?.strip_suffix("_ms")?.replace('_', ".");
    p.parse::<f64>().ok().map(|p| p / 100.0)
}

/// The figures of one run (or of one bootstrap resample).
struct Figures {
    suite: SeedSuite,
    ttfb: Option<LatencySummary>,
}

const fn m(
    key: &'static str,
    label: &'static str,
    unit: &'static str,
    direction: Direction,
    value: fn(&Figures) -> f64,
) -> Metric {
    Metric { key, label, unit, direction, value }
}

fn ttfb(f: &Figures, pick: fn(&LatencySummary) -> f64) -> f64 {
    f.ttfb.as_ref().map_or(f64::NAN, pick)
}

const METRICS: &[Metric] = &[
    m("total_tests", "Total Tests", "", Direction::Higher, |f| f.suite.total_tests as f64),
    m("error_rate_pct", "Error Rate", "%", Direction::Lower, |f| f.suite.error_rate_pct),
    m("tps_avg", "TPS Average", "", Direction::Higher, |f| f.suite.tps_avg),
    m("tps_p50", "TPS p50", "", Direction::Higher, |f| f.suite.tps_p50),
    m("tps_p95", "TPS p95", "", Direction::Higher, |f| f.suite.tps_p95),
    m("tps_p99", "TPS p99", "", Direction::Higher, |f| f.suite.tps_p99),
    m("tps_p99_9", "TPS p99.9", "", Direction::Higher, |f| f.suite.tps_p99_9),
    m("mttfb_avg_ms", "MTTFB Average", "ms", Direction::Lower, |f| f.suite.mttfb_avg_ms),
    m("mttfb_p50_ms", "MTTFB p50", "ms", Direction::Lower, |f| f.suite.mttfb_p50_ms),
    m("mttfb_p95_ms", "MTTFB p95", "ms", Direction::Lower, |f| f.suite.mttfb_p95_ms),
    m("mttfb_p99_ms", "MTTFB p99", "ms", Direction::Lower, |f| f.suite.mttfb_p99_ms),
    m("mttfb_p99_9_ms", "MTTFB p99.9", "ms", Direction::Lower, |f| f.suite.mttfb_p99_9_ms),
    m("mttfb_avg_diff_ms", "MTTFB Average Difference", "ms", Direction::Lower, |f| f.suite.mttfb_avg_diff_ms),
    m("mttfb_variability_pct", "MTTFB Average Variability", "%", Direction::Lower, |f| f.suite.mttfb_variability_pct),
    m("ttfb_p50_ms", "TTFB p50 (per request)", "ms", Direction::Lower, |f| ttfb(f, |l| l.p50_ms)),
    m("ttfb_p95_ms", "TTFB p95 (per request)", "ms", Direction::Lower, |f| ttfb(f, |l| l.p95_ms)),
    m("ttfb_p99_ms", "TTFB p99 (per request)", "ms", Direction::Lower, |f| ttfb(f, |l| l.p99_ms)),
    m("ttfb_p99_9_ms", "TTFB p99.9 (per request)", "ms", Direction::Lower, |f| ttfb(f, |l| l.p99_9_ms)),
];

/// Every figure a comparison judges, in table order: (key, label). The keys are the ones
/// `report.json` and `--format json` use, and the names CI gates take.
pub fn metrics() -> impl Iterator<Item = (&'static str, &'static str)> {
    METRICS.iter().map(|m| (m.key, m.label))
}

impl RunSample {
    fn figures(&self) -> Figures {
        let ttfb = self.ttfb.as_ref().and_then(|hs| LatencySummary::from_histogram(&CompactHistogram::merge_all(hs)));
        Figures { suite: SeedSuite::compute(&self.series, self.options), ttfb }
    }

    /// Standard error of every metric, by moving-block bootstrap over intervals.
    fn standard_errors(&self, seed: u64) -> Vec<f64> {
        let n = self.series.intervals.len();
        if n < MIN_INTERVALS {
            return vec![f64::NAN; METRICS.len()];
        }
        let block = ((n as f64).sqrt().round() as usize).clamp(2, n);
        let sparse = self.ttfb.as_ref().map(|hs| SparseHistograms::new(hs));
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut samples: Vec<Vec<f64>> = vec![Vec::with_capacity(RESAMPLES); METRICS.len()];
        let mut picks = Vec::with_capacity(n);
        for _ in 0..RESAMPLES {
            picks.clear();
            while picks.len() < n {
                let start = rng.usize(0..=n - block);
                picks.extend((start..start + block).take(n - picks.len()));
            }
            let series = Series { intervals: picks.iter().map(|&i| self.series.intervals[i].clone()).collect() };
            let figures = Figures {
                suite: SeedSuite::compute(&series, self.options),
                ttfb: sparse.as_ref().and_then(|s| s.summary(&picks)),
            };
            for (out, metric) in samples.iter_mut().zip(METRICS) {
                out.push((metric.value)(&figures));
            }
        }
        samples.iter().map(|v| std_dev(v)).collect()
    }
}

fn std_dev(v: &[f64]) -> f64 {
    let finite: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if finite.len() < 2 {
        return f64::NAN;
    }
    let mean = finite.iter().sum::<f64>() / finite.len() as f64;
    (finite.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (finite.len() - 1) as f64).sqrt()
}

/// Per-interval histograms as sparse counts over the union of their distinct values, so a
/// bootstrap resample merges a few hundred entries per interval instead of whole arrays.
struct SparseHistograms {
    values: Vec<u64>,
    intervals: Vec<Vec<(u32, u64)>>,
}

impl SparseHistograms {
    fn new(hs: &[CompactHistogram]) -> Self {
        let mut values: Vec<u64> = hs.iter().flat_map(|h| h.entries.iter().map(|e| e.0)).collect();
        values.sort_unstable();
        values.dedup();
        let intervals = hs
            .iter()
            .map(|h| {
                h.entries.iter().map(|&(v, c)| (values.binary_search(&v).expect("value in union") as u32, c)).collect()
            })
            .collect();
        SparseHistograms { values, intervals }
    }

    fn summary(&self, picks: &[usize]) -> Option<LatencySummary> {
        let mut counts = vec![0u64; self.values.len()];
        for &i in picks {
            for &(idx, c) in &self.intervals[i] {
                counts[idx as usize] += c;
            }
        }
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return None;
        }
        let at = |p: f64| {
            let rank = ((p / 100.0) * total as f64).ceil().max(1.0) as u64;
            let mut seen = 0;
            for (i, c) in counts.iter().enumerate() {
                seen += c;
                if seen >= rank {
                    return self.values[i] as f64 / 1000.0;
                }
            }
            *self.values.last().expect("non-empty") as f64 / 1000.0
        };
        Some(LatencySummary {
            count: total,
            min_ms: at(0.0),
            mean_ms: f64::NAN,
            p50_ms: at(50.0),
            p90_ms: at(90.0),
            p95_ms: at(95.0),
            p99_ms: at(99.0),
            p99_9_ms: at(99.9),
            p99_99_ms: at(99.99),
            max_ms: at(100.0),
        })
    }
}

/// Compares `before` with `after`, figure by figure.
pub fn compare(before: &RunSample, after: &RunSample) -> Vec<CompareRow> {
    let (fa, fb) = (before.figures(), after.figures());
    let requests = |f: &Figures| f.ttfb.as_ref().map_or(0, |t| t.count) as f64;
    let fewest = requests(&fa).min(requests(&fb));
    let (sa, sb) = (before.standard_errors(0x5eed_0001), after.standard_errors(0x5eed_0002));
    let too_few_intervals = before.series.intervals.len().min(after.series.intervals.len()) < MIN_INTERVALS;
    METRICS
        .iter()
        .enumerate()
        .filter_map(|(i, metric)| {
            let (a, b) = ((metric.value)(&fa), (metric.value)(&fb));
            if !a.is_finite() || !b.is_finite() {
                return None;
            }
            // `f64::max` drops a NaN: without an estimate there is no noise figure at all.
            let noise = if too_few_intervals {
                f64::NAN
            } else {
                (NOISE_Z * (sa[i].powi(2) + sb[i].powi(2)).sqrt()).max(a.abs() * MIN_EFFECT_PCT / 100.0)
            };
            let diff = b - a;
            let too_few = request_quantile(metric.key).is_some_and(|q| fewest * (1.0 - q) < MIN_TAIL);
            let verdict = if too_few || diff == 0.0 || !noise.is_finite() || diff.abs() <= noise {
                Verdict::Noise
            } else if (diff > 0.0) == (metric.direction == Direction::Higher) {
                Verdict::Better
            } else {
                Verdict::Worse
            };
            let pct = |x: f64| match x {
                _ if x.is_nan() => f64::NAN,
                _ if a == 0.0 => if x == 0.0 { 0.0 } else { f64::INFINITY },
                _ => x / a * 100.0,
            };
            Some(CompareRow {
                key: metric.key,
                label: metric.label,
                unit: metric.unit,
                direction: metric.direction,
                before: a,
                after: b,
                change_pct: pct(diff),
                noise_pct: pct(noise),
                verdict,
                too_few,
                too_few_intervals,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::Interval;

    fn run(seed: u64, mttfb_scale: f64, n: usize) -> RunSample {
        let mut rng = fastrand::Rng::with_seed(seed);
        let intervals = (0..n)
            .map(|i| {
                let tests = 900 + rng.u64(0..200);
                let mttfb = (20.0 + rng.f64() * 4.0) * mttfb_scale;
                Interval { start_s: i as f64, period_s: 1.0, tests, tps: tests as f64, mttfb_ms: mttfb, ..Default::default() }
            })
            .collect();
        let ttfb = (0..n)
            .map(|_| {
                let mut h = crate::latency::new_histogram();
                for _ in 0..300 {
                    h.record(((15_000.0 + rng.f64() * 15_000.0) * mttfb_scale) as u64).unwrap();
                }
                CompactHistogram::from_histogram(&h)
            })
            .collect();
        RunSample { series: Series { intervals }, ttfb: Some(ttfb), options: SuiteOptions::default() }
    }

    #[test]
    fn identical_load_is_all_noise() {
        let rows = compare(&run(1, 1.0, 60), &run(2, 1.0, 60));
        assert_eq!(rows.len(), METRICS.len());
        for r in &rows {
            assert_eq!(r.verdict, Verdict::Noise, "{} changed {:.2}% (noise {:.2}%)", r.label, r.change_pct, r.noise_pct);
        }
    }

    #[test]
    fn a_seven_percent_gain_between_noisy_runs_is_not_green() {
        // Per-second TPS swinging between 500 and 1500 (as on a congested target).
        let noisy = |seed: u64, scale: f64| {
            let mut rng = fastrand::Rng::with_seed(seed);
            let intervals = (0..60)
                .map(|i| {
                    let tests = ((500.0 + rng.f64() * 1000.0) * scale) as u64;
                    Interval { start_s: i as f64, period_s: 1.0, tests, tps: tests as f64, mttfb_ms: 20.0, ..Default::default() }
                })
                .collect();
            RunSample { series: Series { intervals }, ttfb: None, options: SuiteOptions::default() }
        };
        let rows = compare(&noisy(7, 1.0), &noisy(8, 1.07));
        let tps = rows.iter().find(|r| r.key == "tps_avg").unwrap();
        assert_eq!(tps.verdict, Verdict::Noise, "{tps:?}");
    }

    #[test]
    fn runs_of_too_few_intervals_are_not_judged() {
        // Three intervals each: a 50 % change in every figure is still not judged.
        let (a, b) = (run(1, 1.0, 3), run(2, 1.5, 3));
        let rows = compare(&a, &b);
        assert!(!rows.is_empty());
        for r in &rows {
            assert!(r.too_few_intervals && r.verdict == Verdict::Noise && r.noise_pct.is_nan(), "{r:?}");
        }
        assert!(compare(&run(1, 1.0, 8), &run(2, 1.0, 8)).iter().all(|r| !r.too_few_intervals));
    }

    #[test]
    fn extreme_percentiles_of_few_requests_are_not_judged() {
        // 60 intervals x 300 requests = 18,000: p99.9 has 18 beyond it, p99.99 only 1.8.
        let rows = compare(&run(1, 1.0, 60), &run(2, 2.0, 60));
        let p999 = rows.iter().find(|r| r.key == "ttfb_p99_9_ms").unwrap();
        assert!(!p999.too_few && p999.verdict == Verdict::Worse, "{p999:?}");
        assert!((request_quantile("ttfb_p99_9_ms").unwrap() - 0.999).abs() < 1e-12);
        let few = compare(&run(1, 1.0, 6), &run(2, 2.0, 6)); // 1,800 requests: p99.9 has 1.8 beyond it
        let p999 = few.iter().find(|r| r.key == "ttfb_p99_9_ms").unwrap();
        assert!(p999.too_few && p999.verdict == Verdict::Noise, "{p999:?}");
        assert_eq!(few.iter().find(|r| r.key == "ttfb_p50_ms").unwrap().verdict, Verdict::Worse);
    }

    #[test]
    fn doubled_latency_is_worse_and_halved_is_better() {
        let rows = compare(&run(1, 1.0, 60), &run(2, 2.0, 60));
        for key in ["mttfb_avg_ms", "mttfb_p50_ms", "ttfb_p50_ms", "ttfb_p99_ms"] {
            let r = rows.iter().find(|r| r.key == key).unwrap();
            assert_eq!(r.verdict, Verdict::Worse, "{key}: {r:?}");
            assert!((r.change_pct - 100.0).abs() < 10.0, "{key}: {}", r.change_pct);
        }
        let rows = compare(&run(1, 2.0, 60), &run(2, 1.0, 60));
        assert_eq!(rows.iter().find(|r| r.key == "ttfb_p99_ms").unwrap().verdict, Verdict::Better);
    }
}
