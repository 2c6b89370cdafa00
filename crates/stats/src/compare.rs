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
//!
//! That estimate sees only what varies *within* a run. What changes *between* runs (the
//! host, the target's caches, the network) it cannot see, so for run groups (`volley run
//! --repeat N`) [`compare_groups`] judges each figure between runs instead: Student's t on
//! the logarithms of the runs' values with the two sides' spreads pooled (on the log scale a
//! 2× slower target spreads as much as the faster one, so one spread serves both and three
//! runs a side keep four degrees of freedom: Welch's t fell to about two whenever one run was
//! disturbed, and could then call nothing), floored by the runs' within-run bootstrap, at the
//! same confidence as [`NOISE_Z`] standard errors. A run whose generator stalled
//! ([`STALL_MS`]) is left out of its side while two others remain. Every row says which test
//! judged it ([`Test`]) and with how many runs.

use serde::Serialize;

use crate::latency::{CompactHistogram, LatencySummary};
pub use crate::metric::Direction;
use crate::metric::{METRICS, Metric};
use crate::series::Series;
use crate::suite::{SeedSuite, SuiteOptions};

/// How many standard errors a change must exceed to count.
pub const NOISE_Z: f64 = 3.0;
/// Smallest change, in % of the earlier value, that is ever marked better or worse.
pub const MIN_EFFECT_PCT: f64 = 2.0;
/// Smallest change, in % of the earlier value, that a comparison of run groups marks. Groups
/// recorded minutes apart on a shared machine differ by more than their runs' spread shows:
/// on a 2-core VM at load average 4, ten pairs of identical groups of 3 differed in TPS and
/// MTTFB average by 0.99 % rms (up to 2.3 %) while each group's runs agreed to 0.5 %, a
/// drift of the machine between the groups that no spread within them can see. Three times
/// that rms, as [`NOISE_Z`] keeps elsewhere (bench/README.md, "Run groups on a loaded machine").
pub const GROUP_FLOOR_PCT: f64 = 3.0;
/// Bootstrap resamples per run.
pub const RESAMPLES: usize = 200;

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

/// Which test judged a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Test {
    /// Moving-block bootstrap within each of two single runs: blind to run-to-run variation.
    WithinRun,
    /// Student's t on the runs' values of two groups (or a group and a run), on their
    /// logarithms, with the two sides' spreads pooled, floored by the runs' within-run
    /// bootstrap.
    PooledT,
}

impl Test {
    /// How the row was judged, as the tables say it: `within-run`, `pooled t, 3 vs 3 runs`.
    pub fn describe(self, before: usize, after: usize) -> String {
        match self {
            Test::WithinRun => "within-run".to_string(),
            Test::PooledT => format!("pooled t, {before} vs {after} runs"),
        }
    }
}

/// The generator's own delay, ms, beyond which a run counts as stalled: its event loop (or
/// an open model's dispatch) could not run for that long, ten times what a busy shared
/// machine's scheduler makes it wait, so its latencies hold volley's delay and its
/// throughput the gap. A group leaves such a run out of its figures ([`kept`]).
pub const STALL_MS: f64 = 100.0;

/// The runs of a side that judge it, by index: every run whose generator did not stall, as
/// long as at least two remain (otherwise all, stalled or not: a side is never judged on
/// one run it was not given as one).
pub fn kept(runs: &[RunSample]) -> Vec<usize> {
    let calm: Vec<usize> = (0..runs.len()).filter(|&i| !runs[i].stalled()).collect();
    if calm.len() >= 2 {
        calm
    } else {
        (0..runs.len()).collect()
    }
}

/// The runs [`kept`] of `runs`.
fn kept_runs(runs: &[RunSample]) -> Vec<&RunSample> {
    kept(runs).into_iter().map(|i| &runs[i]).collect()
}

/// Per-interval histograms, one per row of a sample's series, read a pass at a time: a long
/// run's do not fit in memory at once (a run directory's are read again from its log).
pub trait IntervalHistograms: std::fmt::Debug + Send + Sync {
    /// Visits each row's histogram with the row's index (a row without one is left out).
    fn each(&self, f: &mut dyn FnMut(usize, &CompactHistogram));
}

impl IntervalHistograms for Vec<CompactHistogram> {
    fn each(&self, f: &mut dyn FnMut(usize, &CompactHistogram)) {
        for (i, h) in self.iter().enumerate() {
            f(i, h);
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
    pub ttfb: Option<std::sync::Arc<dyn IntervalHistograms>>,
    /// TPS tail for the suite.
    pub options: SuiteOptions,
    /// The generator's largest own delay in these intervals, ms (its dispatch or event-loop
    /// lag; 0 when the source did not record it).
    pub generator_lag_ms: f64,
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
    /// Which test judged it.
    pub test: Test,
    /// Runs on the earlier side (1 for a single run).
    pub runs_before: usize,
    /// Runs on the later side.
    pub runs_after: usize,
    /// Between runs: the degrees of freedom of the pooled spread (runs − 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub df: Option<f64>,
    /// Between runs, on the log scale: the pooled standard deviation of the runs'
    /// logarithms, from which [`callable_pct`] tells the smallest change these or more runs
    /// can call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spread_log: Option<f64>,
}

/// Intervals a run must have for the bootstrap to estimate its noise.
pub const MIN_INTERVALS: usize = 4;

/// Requests a run must have beyond a per-request percentile for a change in it to be
/// judged: p99.9 needs 10,000 requests, p99 1,000.
pub const MIN_TAIL: f64 = 10.0;

impl Metric {
    /// Its value in one run's figures.
    fn of(&self, f: &Figures) -> f64 {
        (self.value)(&f.suite, f.ttfb.as_ref())
    }

    /// The row for this figure: its two values, the change noise could explain (NaN: not
    /// estimated), the fewest requests either side has, and how it was judged.
    #[allow(clippy::too_many_arguments)]
    fn row(
        &self,
        a: f64,
        b: f64,
        noise: f64,
        fewest: f64,
        too_few_intervals: bool,
        test: Test,
        (runs_before, runs_after): (usize, usize),
    ) -> CompareRow {
        let diff = b - a;
        let too_few = request_quantile(self.key).is_some_and(|q| fewest * (1.0 - q) < MIN_TAIL);
        CompareRow {
            key: self.key,
            label: self.label,
            unit: self.unit,
            direction: self.direction,
            before: a,
            after: b,
            change_pct: pct_of(diff, a),
            noise_pct: pct_of(noise, a),
            verdict: verdict(diff, noise, too_few, self.direction),
            too_few,
            too_few_intervals,
            test,
            runs_before,
            runs_after,
            df: None,
            spread_log: None,
        }
    }
}

/// The smallest change, in % of the earlier value, that a between-run comparison of
/// `before` against `after` runs can call when the runs' logarithms spread by `spread_log`
/// (the t bound alone, with [`GROUP_FLOOR_PCT`] under it; a rise of it, and so a fall of
/// it too, is called): what a group of N runs can and cannot detect.
pub fn callable_pct(spread_log: f64, before: usize, after: usize) -> f64 {
    let (na, nb) = (before as f64, after as f64);
    let df = na + nb - 2.0;
    if df < 1.0 || !spread_log.is_finite() {
        return f64::NAN;
    }
    let t = t_critical(df) * spread_log * (1.0 / na + 1.0 / nb).sqrt();
    (t.exp_m1() * 100.0).max(GROUP_FLOOR_PCT)
}

/// The quantile a per-request percentile metric reads (`ttfb_p99_9_ms` → 0.999).
fn request_quantile(key: &str) -> Option<f64> {
    let p = key
        .strip_prefix("ttfb_p")?
        .strip_suffix("_ms")?
        .replace('_', ".");
    p.parse::<f64>().ok().map(|p| p / 100.0)
}

/// The figures of one run (or of one bootstrap resample).
struct Figures {
    suite: SeedSuite,
    ttfb: Option<LatencySummary>,
}

/// Every figure a comparison judges, in table order: (key, label). The keys are the ones
/// `report.json` and `--format json` use, and the names CI gates take.
pub fn metrics() -> impl Iterator<Item = (&'static str, &'static str)> {
    METRICS.iter().map(|m| (m.key, m.label))
}

impl RunSample {
    /// Whether the generator stalled in this run ([`STALL_MS`]).
    pub fn stalled(&self) -> bool {
        self.generator_lag_ms > STALL_MS
    }

    fn figures(&self) -> Figures {
        let ttfb = self.ttfb.as_ref().and_then(|hs| {
            let mut merged = crate::latency::new_histogram();
            hs.each(&mut |_, h| h.add_to(&mut merged));
            LatencySummary::from_histogram(&merged)
        });
        Figures {
            suite: SeedSuite::compute(&self.series, self.options),
            ttfb,
        }
    }

    /// Every figure of the run with its standard error from the within-run bootstrap
    /// (NaN with fewer than [`MIN_INTERVALS`] intervals): `(key, value, standard error)`,
    /// in table order. What a single measurement of a figure could be off by, e.g. how
    /// near a capacity probe's p99 is to an SLO's limit.
    pub fn noise(&self) -> Vec<(&'static str, f64, f64)> {
        let figures = self.figures();
        let errors = self.standard_errors(0x5eed_0003);
        METRICS
            .iter()
            .zip(errors)
            .map(|(m, se)| (m.key, m.of(&figures), se))
            .collect()
    }

    /// Standard error of every metric, by moving-block bootstrap over intervals.
    fn standard_errors(&self, seed: u64) -> Vec<f64> {
        let n = self.series.intervals.len();
        if n < MIN_INTERVALS {
            return vec![f64::NAN; METRICS.len()];
        }
        let block = ((n as f64).sqrt().round() as usize).clamp(2, n);
        let mut rng = fastrand::Rng::with_seed(seed);
        // Each resample as its blocks (start, length): the series figures are computed here,
        // the histograms' in two passes over them for all resamples at once.
        let mut draws = Vec::with_capacity(RESAMPLES);
        let mut suites = Vec::with_capacity(RESAMPLES);
        let mut picks = Vec::with_capacity(n);
        for _ in 0..RESAMPLES {
            picks.clear();
            let mut blocks = Vec::new();
            while picks.len() < n {
                let start = rng.usize(0..=n - block);
                let len = block.min(n - picks.len());
                picks.extend(start..start + len);
                blocks.push((start, len));
            }
            let series = Series {
                intervals: picks
                    .iter()
                    .map(|&i| self.series.intervals[i].clone())
                    .collect(),
            };
            suites.push(SeedSuite::compute(&series, self.options));
            draws.push(blocks);
        }
        let ttfb = match &self.ttfb {
            Some(hs) => resampled_summaries(hs.as_ref(), &mut draws, block),
            None => vec![None; RESAMPLES],
        };
        let mut samples: Vec<Vec<f64>> = vec![Vec::with_capacity(RESAMPLES); METRICS.len()];
        for (suite, ttfb) in suites.into_iter().zip(ttfb) {
            let figures = Figures { suite, ttfb };
            for (out, metric) in samples.iter_mut().zip(METRICS) {
                out.push(metric.of(&figures));
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

/// Each resample's merged histogram summary, from two passes over the per-interval
/// histograms: their distinct values, then each resample's count at each value (an interval
/// drawn twice counts twice). It holds one count per distinct value and resample, bounded by
/// the histogram's buckets, not the intervals: a long run's histograms are never all in
/// memory. `draws` are each resample's blocks (start, length), at most `block` long.
fn resampled_summaries(
    hs: &dyn IntervalHistograms,
    draws: &mut [Vec<(usize, usize)>],
    block: usize,
) -> Vec<Option<LatencySummary>> {
    let mut distinct = std::collections::HashSet::new();
    hs.each(&mut |_, h| distinct.extend(h.entries.iter().map(|e| e.0)));
    let mut values: Vec<u64> = distinct.into_iter().collect();
    values.sort_unstable();
    let width = values.len();
    let mut counts = vec![0u64; draws.len() * width];
    for blocks in draws.iter_mut() {
        blocks.sort_unstable();
    }
    let mut at = Vec::new();
    hs.each(&mut |i, h| {
        at.clear();
        at.extend(h.entries.iter().map(|&(v, c)| {
            (
                values.binary_search(&v).expect("value in the first pass"),
                c,
            )
        }));
        for (r, blocks) in draws.iter().enumerate() {
            // The blocks covering interval i start in (i − block, i].
            let from = blocks.partition_point(|b| b.0 + block <= i);
            let times = blocks[from..]
                .iter()
                .take_while(|b| b.0 <= i)
                .filter(|b| i < b.0 + b.1)
                .count() as u64;
            if times > 0 {
                let row = &mut counts[r * width..(r + 1) * width];
                for &(v, c) in &at {
                    row[v] += c * times;
                }
            }
        }
    });
    (0..draws.len())
        .map(|r| summary_of(&values, &counts[r * width..(r + 1) * width]))
        .collect()
}

/// The summary of `counts[i]` requests at `values[i]` µs each (the mean is left NaN: the
/// bootstrap reads percentiles only).
fn summary_of(values: &[u64], counts: &[u64]) -> Option<LatencySummary> {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return None;
    }
    // p0 is the first value here: these are the buckets' highest equivalents, and `in_buckets`
    // reads a bucket at its value as given.
    let buckets = values.iter().copied().zip(counts.iter().copied());
    let [min, p50, p90, p95, p99, p99_9, p99_99, max] = crate::rank::in_buckets(
        buckets,
        total,
        [0.0, 50.0, 90.0, 95.0, 99.0, 99.9, 99.99, 100.0],
    )
    .map(|us| us as f64 / 1000.0);
    Some(LatencySummary {
        count: total,
        min_ms: min,
        mean_ms: f64::NAN,
        p50_ms: p50,
        p90_ms: p90,
        p95_ms: p95,
        p99_ms: p99,
        p99_9_ms: p99_9,
        p99_99_ms: p99_99,
        max_ms: max,
    })
}

/// The smallest change a single-run comparison marks for figure `key`, in % of the
/// earlier value: [`MIN_EFFECT_PCT`], or for a tail percentile the run-to-run spread
/// measured on identical runs ([`TAIL_FLOOR_PCT`]), which the within-run bootstrap
/// cannot see.
pub fn single_run_floor_pct(key: &str) -> f64 {
    match key {
        "ttfb_p99_ms" | "ttfb_p99_9_ms" | "mttfb_p99_ms" | "mttfb_p99_9_ms" => TAIL_FLOOR_PCT,
        _ => MIN_EFFECT_PCT,
    }
}

/// Run-to-run floor for tail percentiles (p99, p99.9) in single-run comparisons, in % of
/// the earlier value: see `docs/ARCHITECTURE.md`, "Run-to-run noise", for the measurements.
pub const TAIL_FLOOR_PCT: f64 = 25.0;

/// The smallest step a figure of these runs can take: a TPS percentile is a count of
/// requests in one interval over its length, so it moves in steps of one request per
/// interval (4 TPS with 250 ms intervals); a change of one step is the measurement's
/// resolution, not a change. Returns 1.5 steps for TPS percentiles, 0 for the rest.
fn resolution(key: &str, runs: &[&RunSample]) -> f64 {
    if !key.starts_with("tps_p") {
        return 0.0;
    }
    let step = runs
        .iter()
        .flat_map(|r| r.series.intervals.iter().map(|i| i.period_s))
        .filter(|p| *p > 0.0)
        .map(|p| 1.0 / p)
        .fold(0.0, f64::max);
    1.5 * step
}

/// The band noise could explain around `a` when the relative noise of `a` and `b` together is
/// `t` on the log scale (a ratio): in the direction of the change, `a · (1 − e⁻ᵗ)` below it or
/// `a · (eᵗ − 1)` above it. On a linear scale a band of 100 % or more could never call a fall
/// of a lower-is-better figure, however large (a p99 nine times lower was ⚪ "±180.8 %").
fn log_band(a: f64, b: f64, t: f64) -> f64 {
    if !t.is_finite() {
        f64::NAN
    } else if b < a {
        a * -(-t).exp_m1()
    } else {
        a * t.exp_m1()
    }
}

/// The verdict on a change `diff` of a figure whose earlier value is `a`, against `noise`.
fn verdict(diff: f64, noise: f64, too_few: bool, direction: Direction) -> Verdict {
    if too_few || diff == 0.0 || !noise.is_finite() || diff.abs() <= noise {
        Verdict::Noise
    } else if (diff > 0.0) == (direction == Direction::Higher) {
        Verdict::Better
    } else {
        Verdict::Worse
    }
}

/// `x` in % of `a` (∞ for a change from 0).
fn pct_of(x: f64, a: f64) -> f64 {
    match x {
        _ if x.is_nan() => f64::NAN,
        _ if a == 0.0 => {
            if x == 0.0 {
                0.0
            } else {
                f64::INFINITY
            }
        }
        _ => x / a * 100.0,
    }
}

/// Compares `before` with `after`, figure by figure, with the within-run estimate only.
pub fn compare(before: &RunSample, after: &RunSample) -> Vec<CompareRow> {
    let (fa, fb) = (before.figures(), after.figures());
    let requests = |f: &Figures| f.ttfb.as_ref().map_or(0, |t| t.count) as f64;
    let fewest = requests(&fa).min(requests(&fb));
    let (sa, sb) = (
        before.standard_errors(0x5eed_0001),
        after.standard_errors(0x5eed_0002),
    );
    let too_few_intervals = before
        .series
        .intervals
        .len()
        .min(after.series.intervals.len())
        < MIN_INTERVALS;
    let tps_avg = METRICS
        .iter()
        .position(|m| m.key == "tps_avg")
        .expect("the metric table has TPS");
    METRICS
        .iter()
        .enumerate()
        .filter_map(|(i, metric)| {
            let (a, b) = (metric.of(&fa), metric.of(&fb));
            if !a.is_finite() || !b.is_finite() {
                return None;
            }
            // Total Tests is TPS times the measured time: its noise is TPS's, in the same share.
            let (i, scale) = match metric.key {
                "total_tests" => match (tps_avg, METRICS[tps_avg].of(&fa)) {
                    (t, tps) if tps > 0.0 => (t, a / tps),
                    _ => (i, 1.0),
                },
                _ => (i, 1.0),
            };
            let (se_a, se_b) = (sa[i] * scale, sb[i] * scale);
            // `f64::max` drops a NaN: without an estimate there is no noise figure at all.
            let noise = if too_few_intervals {
                f64::NAN
            } else {
                let within = if metric.direction == Direction::Lower && a > 0.0 && b > 0.0 {
                    log_band(
                        a,
                        b,
                        NOISE_Z * ((se_a / a).powi(2) + (se_b / b).powi(2)).sqrt(),
                    )
                } else {
                    NOISE_Z * (se_a.powi(2) + se_b.powi(2)).sqrt()
                };
                within
                    .max(a.abs() * single_run_floor_pct(metric.key) / 100.0)
                    .max(resolution(metric.key, &[before, after]))
            };
            Some(metric.row(
                a,
                b,
                noise,
                fewest,
                too_few_intervals,
                Test::WithinRun,
                (1, 1),
            ))
        })
        .collect()
}

/// One figure of one run, as the group summary lists it.
#[derive(Debug, Clone, Serialize)]
pub struct MetricValue {
    /// Stable key (as in the suite JSON).
    pub key: &'static str,
    /// Label as the seeds write it.
    pub label: &'static str,
    /// Unit shown after values.
    pub unit: &'static str,
    /// The run's value (NaN where the run cannot give it).
    pub value: f64,
}

/// Every compared figure of one run.
pub fn metric_values(run: &RunSample) -> Vec<MetricValue> {
    let f = run.figures();
    METRICS
        .iter()
        .map(|m| MetricValue {
            key: m.key,
            label: m.label,
            unit: m.unit,
            value: m.of(&f),
        })
        .collect()
}

/// One side of a group comparison: every kept run's figures and within-run standard errors.
struct Side {
    values: Vec<Vec<f64>>,
    errors: Vec<Vec<f64>>,
    fewest_requests: f64,
    fewest_intervals: usize,
}

impl Side {
    fn new(runs: &[&RunSample], seed: u64) -> Side {
        let figures: Vec<Figures> = runs.iter().map(|r| r.figures()).collect();
        Side {
            values: figures
                .iter()
                .map(|f| METRICS.iter().map(|m| m.of(f)).collect())
                .collect(),
            errors: runs
                .iter()
                .enumerate()
                .map(|(i, r)| r.standard_errors(seed + i as u64))
                .collect(),
            fewest_requests: figures
                .iter()
                .map(|f| f.ttfb.as_ref().map_or(0, |t| t.count) as f64)
                .fold(f64::INFINITY, f64::min),
            fewest_intervals: runs
                .iter()
                .map(|r| r.series.intervals.len())
                .min()
                .unwrap_or(0),
        }
    }

    fn n(&self) -> usize {
        self.values.len()
    }

    /// Metric `i`'s values over the runs, `None` when a run cannot give it.
    fn of(&self, i: usize) -> Option<Vec<f64>> {
        let v: Vec<f64> = self.values.iter().map(|r| r[i]).collect();
        v.iter().all(|x| x.is_finite()).then_some(v)
    }

    /// Mean within-run variance of metric `i` (NaN when a run has no estimate).
    fn within_var(&self, i: usize) -> f64 {
        self.errors.iter().map(|e| e[i].powi(2)).sum::<f64>() / self.n() as f64
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Sum of squared deviations from the mean (0 for one value).
fn sum_sq(v: &[f64]) -> f64 {
    let m = mean(v);
    v.iter().map(|x| (x - m).powi(2)).sum::<f64>()
}

/// The two-sided confidence of [`NOISE_Z`] standard errors of a normal variable
/// (3 → 99.73 %), which the between-run test keeps.
fn confidence() -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal};
    Normal::standard().cdf(NOISE_Z)
}

/// Student's t quantile at the confidence of [`NOISE_Z`], for `df` degrees of freedom.
pub fn t_critical(df: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    match StudentsT::new(0.0, 1.0, df.max(1.0)) {
        Ok(t) => t.inverse_cdf(confidence()),
        Err(_) => f64::NAN,
    }
}

/// Compares two sides of runs (run groups, or a group and a single run), figure by figure.
///
/// Two single runs are judged as [`compare`] judges them (within-run). Otherwise each side
/// is the runs [`kept`] of it (a run whose generator stalled is left out while two others
/// remain), and each figure is judged between runs: the side's value is the mean of its
/// runs' values, and a change counts only when it exceeds all of
/// - Student's t critical value (at the confidence of [`NOISE_Z`] normal standard errors:
///   99.73 %) times the standard error of the difference of the means, with the two sides'
///   spreads pooled (runs − 2 degrees of freedom), of the values' logarithms when all are
///   positive (of the values otherwise); a single run against a group so borrows the
///   group's spread;
/// - [`NOISE_Z`] standard errors of the difference from the runs' within-run bootstrap
///   (three runs can agree by chance; the noise inside them is still there);
/// - [`GROUP_FLOOR_PCT`] of the earlier value (the drift between groups recorded apart).
///
/// Why pooled and on logs: a figure's run-to-run spread grows with it (a target twice as
/// slow varies twice as much in ms) but its spread in logarithms does not, so one spread
/// serves both sides; and with three runs a side, Welch's unpooled t fell to about two
/// degrees of freedom as soon as one run was disturbed (t ≈ 19 at this confidence), so a
/// 5× change went unmarked.
pub fn compare_groups(before: &[RunSample], after: &[RunSample]) -> Vec<CompareRow> {
    assert!(
        !before.is_empty() && !after.is_empty(),
        "each side of a comparison has at least one run"
    );
    if before.len() == 1 && after.len() == 1 {
        return compare(&before[0], &after[0]);
    }
    let (ka, kb) = (kept_runs(before), kept_runs(after));
    let (sa, sb) = (Side::new(&ka, 0x5eed_1000), Side::new(&kb, 0x5eed_2000));
    let (na, nb) = (sa.n() as f64, sb.n() as f64);
    let df = na + nb - 2.0;
    let fewest = sa.fewest_requests.min(sb.fewest_requests);
    let too_few_intervals = sa.fewest_intervals.min(sb.fewest_intervals) < MIN_INTERVALS;
    let runs: Vec<&RunSample> = ka.iter().chain(&kb).copied().collect();
    METRICS
        .iter()
        .enumerate()
        .filter_map(|(i, metric)| {
            let (va, vb) = (sa.of(i)?, sb.of(i)?);
            let (a, b) = (mean(&va), mean(&vb));
            let (wa, wb) = (sa.within_var(i), sb.within_var(i));
            let log = va.iter().chain(&vb).all(|&x| x > 0.0);
            let scale = |v: &[f64]| {
                if log {
                    v.iter().map(|x| x.ln()).collect::<Vec<_>>()
                } else {
                    v.to_vec()
                }
            };
            // The pooled spread of the runs (a side of one run adds nothing to it).
            let spread = ((sum_sq(&scale(&va)) + sum_sq(&scale(&vb))) / df).sqrt();
            let se_between = spread * (1.0 / na + 1.0 / nb).sqrt();
            // Within runs: the bootstrap's standard errors of the runs, averaged per side.
            let se_within = (wa / na + wb / nb).sqrt();
            let noise = if too_few_intervals || se_within.is_nan() {
                f64::NAN
            } else {
                let t = t_critical(df) * se_between;
                // On the log scale the bound is a ratio, in the direction of the change:
                // up to a · (eᵗ − 1) above the earlier value, a · (1 − e⁻ᵗ) below it.
                let between = match (t.is_finite(), log) {
                    (false, _) => 0.0,
                    (true, true) if b < a => a.abs() * -(-t).exp_m1(),
                    (true, true) => a.abs() * t.exp_m1(),
                    (true, false) => t,
                };
                between
                    .max(NOISE_Z * se_within)
                    .max(a.abs() * GROUP_FLOOR_PCT / 100.0)
                    .max(resolution(metric.key, &runs))
            };
            let mut row = metric.row(
                a,
                b,
                noise,
                fewest,
                too_few_intervals,
                Test::PooledT,
                (sa.n(), sb.n()),
            );
            row.df = Some(df);
            row.spread_log = (log && spread.is_finite()).then_some(spread);
            Some(row)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::Interval;

    #[test]
    fn a_band_on_the_log_scale_can_call_a_ninefold_fall() {
        // p99 900 → 100 ms with a relative noise of 0.6 on the earlier run: on a linear scale
        // the band was 3 × 0.6 × 900 = 1,620 ms (±180 %), above any fall; on the log scale
        // it is 900 · (1 − e^−1.83) = 756 ms, and the 800 ms fall is called.
        let t = NOISE_Z * (0.6f64.powi(2) + 0.1f64.powi(2)).sqrt();
        let band = log_band(900.0, 100.0, t);
        assert!(band < 800.0 && band > 700.0, "{band}");
        assert_eq!(
            verdict(100.0 - 900.0, band, false, Direction::Lower),
            Verdict::Better
        );
        // A rise is judged above: e^t − 1.
        assert!((log_band(100.0, 200.0, 0.5) - 100.0 * 0.5f64.exp_m1()).abs() < 1e-9);
        assert!(log_band(1.0, 2.0, f64::NAN).is_nan());
    }

    fn run(seed: u64, mttfb_scale: f64, n: usize) -> RunSample {
        let mut rng = fastrand::Rng::with_seed(seed);
        let intervals = (0..n)
            .map(|i| {
                let tests = 900 + rng.u64(0..200);
                let mttfb = (20.0 + rng.f64() * 4.0) * mttfb_scale;
                Interval {
                    start_s: i as f64,
                    period_s: 1.0,
                    tests,
                    tps: tests as f64,
                    mttfb_ms: mttfb,
                    ..Default::default()
                }
            })
            .collect();
        let ttfb: Vec<CompactHistogram> = (0..n)
            .map(|_| {
                let mut h = crate::latency::new_histogram();
                for _ in 0..300 {
                    h.record(((15_000.0 + rng.f64() * 15_000.0) * mttfb_scale) as u64)
                        .unwrap();
                }
                CompactHistogram::from_histogram(&h)
            })
            .collect();
        RunSample {
            series: Series { intervals },
            ttfb: Some(std::sync::Arc::new(ttfb)),
            options: SuiteOptions::default(),
            generator_lag_ms: 0.0,
        }
    }

    /// The bootstrap in two passes over the histograms gives what merging each resample's
    /// intervals in memory gives, figure for figure.
    #[test]
    fn the_streamed_bootstrap_is_the_in_memory_one() {
        for n in [4, 9, 37, 120] {
            let sample = run(n as u64, 1.0, n);
            let streamed = sample.standard_errors(7);
            // The same draws, each resample's histograms merged whole.
            let hs: Vec<CompactHistogram> = {
                let mut v = Vec::new();
                sample
                    .ttfb
                    .as_ref()
                    .unwrap()
                    .each(&mut |_, h| v.push(h.clone()));
                v
            };
            let block = ((n as f64).sqrt().round() as usize).clamp(2, n);
            let mut rng = fastrand::Rng::with_seed(7);
            let mut samples: Vec<Vec<f64>> = vec![Vec::new(); METRICS.len()];
            for _ in 0..RESAMPLES {
                let mut picks = Vec::new();
                while picks.len() < n {
                    let start = rng.usize(0..=n - block);
                    picks.extend((start..start + block).take(n - picks.len()));
                }
                let series = Series {
                    intervals: picks
                        .iter()
                        .map(|&i| sample.series.intervals[i].clone())
                        .collect(),
                };
                let merged = CompactHistogram::merge_all(picks.iter().map(|&i| &hs[i]));
                let mut ttfb = LatencySummary::from_histogram(&merged);
                if let Some(t) = ttfb.as_mut() {
                    t.mean_ms = f64::NAN;
                }
                let figures = Figures {
                    suite: SeedSuite::compute(&series, sample.options),
                    ttfb,
                };
                for (out, m) in samples.iter_mut().zip(METRICS) {
                    out.push(m.of(&figures));
                }
            }
            let reference: Vec<f64> = samples.iter().map(|v| std_dev(v)).collect();
            for ((a, b), m) in streamed.iter().zip(&reference).zip(METRICS) {
                assert!(
                    a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-9 * b.abs(),
                    "{n} intervals, {}: streamed {a}, in memory {b}",
                    m.key
                );
            }
        }
    }

    #[test]
    fn identical_load_is_all_noise() {
        let rows = compare(&run(1, 1.0, 60), &run(2, 1.0, 60));
        assert_eq!(rows.len(), METRICS.len());
        for r in &rows {
            assert_eq!(
                r.verdict,
                Verdict::Noise,
                "{} changed {:.2}% (noise {:.2}%)",
                r.label,
                r.change_pct,
                r.noise_pct
            );
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
                    Interval {
                        start_s: i as f64,
                        period_s: 1.0,
                        tests,
                        tps: tests as f64,
                        mttfb_ms: 20.0,
                        ..Default::default()
                    }
                })
                .collect();
            RunSample {
                series: Series { intervals },
                ttfb: None,
                options: SuiteOptions::default(),
                generator_lag_ms: 0.0,
            }
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
            assert!(
                r.too_few_intervals && r.verdict == Verdict::Noise && r.noise_pct.is_nan(),
                "{r:?}"
            );
        }
        assert!(
            compare(&run(1, 1.0, 8), &run(2, 1.0, 8))
                .iter()
                .all(|r| !r.too_few_intervals)
        );
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
        assert_eq!(
            few.iter().find(|r| r.key == "ttfb_p50_ms").unwrap().verdict,
            Verdict::Worse
        );
    }

    #[test]
    fn doubled_latency_is_worse_and_halved_is_better() {
        let rows = compare(&run(1, 1.0, 60), &run(2, 2.0, 60));
        for key in ["mttfb_avg_ms", "mttfb_p50_ms", "ttfb_p50_ms", "ttfb_p99_ms"] {
            let r = rows.iter().find(|r| r.key == key).unwrap();
            assert_eq!(r.verdict, Verdict::Worse, "{key}: {r:?}");
            assert!(
                (r.change_pct - 100.0).abs() < 10.0,
                "{key}: {}",
                r.change_pct
            );
        }
        let rows = compare(&run(1, 2.0, 60), &run(2, 1.0, 60));
        assert_eq!(
            rows.iter()
                .find(|r| r.key == "ttfb_p99_ms")
                .unwrap()
                .verdict,
            Verdict::Better
        );
    }

    /// A run whose latencies are all scaled by `shift`: what a run-to-run change of host
    /// or cache state does, invisible within the run.
    fn shifted(seed: u64, shift: f64) -> RunSample {
        run(seed, shift, 30)
    }

    #[test]
    fn groups_see_run_to_run_shifts_that_single_runs_do_not() {
        // Runs that differ by up to ±8 % from run to run, on the same "target".
        let shifts = [1.0, 1.08, 0.93, 1.05, 0.95, 1.02];
        let runs: Vec<RunSample> = shifts
            .iter()
            .enumerate()
            .map(|(i, &s)| shifted(10 + i as u64, s))
            .collect();
        // Two single runs 16 % apart are (wrongly) judged different by the within-run test...
        let single = compare(&runs[2], &runs[1]);
        let p50 = single.iter().find(|r| r.key == "ttfb_p50_ms").unwrap();
        assert_eq!(
            (p50.verdict, p50.test),
            (Verdict::Worse, Test::WithinRun),
            "{p50:?}"
        );
        // ...while the groups, whose runs show the spread, are not.
        let rows = compare_groups(&runs[..3], &runs[3..]);
        for r in &rows {
            assert_eq!(
                r.verdict,
                Verdict::Noise,
                "{} changed {:.2}% (noise {:.2}%)",
                r.label,
                r.change_pct,
                r.noise_pct
            );
            assert_eq!((r.test, r.runs_before, r.runs_after), (Test::PooledT, 3, 3));
        }
        // A doubling across the same spread is seen, group against group and against a run.
        let slow: Vec<RunSample> = shifts
            .iter()
            .enumerate()
            .map(|(i, &s)| shifted(20 + i as u64, 2.0 * s))
            .collect();
        // (A single run against a group has the group's runs − 1 degrees of freedom: six runs.)
        for rows in [
            compare_groups(&runs[..3], &slow[..3]),
            compare_groups(&runs, &slow[..1]),
            compare_groups(&runs[..1], &slow),
        ] {
            for key in ["mttfb_avg_ms", "ttfb_p50_ms", "ttfb_p99_ms"] {
                let r = rows.iter().find(|r| r.key == key).unwrap();
                assert_eq!(
                    (r.verdict, r.test),
                    (Verdict::Worse, Test::PooledT),
                    "{key}: {r:?}"
                );
            }
        }
    }

    #[test]
    fn two_single_runs_are_judged_within_run_and_floor_their_tails() {
        let rows = compare_groups(&[run(1, 1.0, 60)], &[run(2, 1.2, 60)]);
        let p50 = rows.iter().find(|r| r.key == "ttfb_p50_ms").unwrap();
        assert_eq!(
            (p50.verdict, p50.test, p50.runs_before),
            (Verdict::Worse, Test::WithinRun, 1)
        );
        // A 20 % change in p99 is within the run-to-run floor of a single run's tail.
        let p99 = rows.iter().find(|r| r.key == "ttfb_p99_ms").unwrap();
        assert_eq!(p99.verdict, Verdict::Noise, "{p99:?}");
        assert!(p99.noise_pct >= TAIL_FLOOR_PCT, "{p99:?}");
    }

    #[test]
    fn a_tps_percentile_moving_by_one_request_per_interval_is_not_marked() {
        // 250 ms intervals: TPS moves in steps of 4; p50 180 → 184 is one step (2.2 %).
        let quarter = |tests: &[u64]| RunSample {
            series: Series {
                intervals: tests
                    .iter()
                    .enumerate()
                    .map(|(i, &t)| Interval {
                        start_s: i as f64 * 0.25,
                        period_s: 0.25,
                        tests: t,
                        tps: t as f64 * 4.0,
                        mttfb_ms: 20.0,
                        ..Default::default()
                    })
                    .collect(),
            },
            ttfb: None,
            options: SuiteOptions::default(),
            generator_lag_ms: 0.0,
        };
        let (a, b) = (quarter(&[45; 20]), quarter(&[46; 20]));
        let rows = compare_groups(
            &[a.clone(), a.clone(), a.clone()],
            &[b.clone(), b.clone(), b.clone()],
        );
        let p50 = rows.iter().find(|r| r.key == "tps_p50").unwrap();
        assert!(
            (p50.change_pct - 100.0 / 45.0).abs() < 1e-9 && p50.verdict == Verdict::Noise,
            "{p50:?}"
        );
        assert_eq!(
            compare(&a, &b)
                .iter()
                .find(|r| r.key == "tps_p50")
                .unwrap()
                .verdict,
            Verdict::Noise
        );
        // Two steps are a change (the runs agree exactly, so nothing else bounds it).
        let c = quarter(&[47; 20]);
        let rows = compare_groups(
            &[a.clone(), a.clone(), a.clone()],
            &[c.clone(), c.clone(), c],
        );
        assert_eq!(
            rows.iter().find(|r| r.key == "tps_p50").unwrap().verdict,
            Verdict::Better
        );
    }

    #[test]
    fn a_run_whose_generator_stalled_is_left_out_of_its_group() {
        let before: Vec<RunSample> = (0..3).map(|i| shifted(40 + i, 1.0)).collect();
        // Twice as slow, but the third run of the group looks like "before": its generator
        // stalled, and the stall is what made it differ.
        let mut after: Vec<RunSample> = (0..2).map(|i| shifted(50 + i, 2.0)).collect();
        after.push(shifted(52, 0.9));
        let ttfb = |rows: &[CompareRow]| rows.iter().find(|r| r.key == "ttfb_p50_ms").cloned();
        // Not flagged: the odd run spreads its group too wide to call the doubling.
        let rows = compare_groups(&before, &after);
        let r = ttfb(&rows).unwrap();
        assert_eq!((r.verdict, r.runs_after), (Verdict::Noise, 3), "{r:?}");
        // Flagged by its generator's lag: left out, and the doubling is called on the two others.
        after[2].generator_lag_ms = 1_200.0;
        assert_eq!(kept(&after), vec![0, 1]);
        let r = ttfb(&compare_groups(&before, &after)).unwrap();
        assert_eq!((r.verdict, r.runs_after), (Verdict::Worse, 2), "{r:?}");
        // A side never drops below two runs: with two of three stalled, all three stay.
        after[1].generator_lag_ms = 500.0;
        assert_eq!(kept(&after), vec![0, 1, 2]);
    }

    #[test]
    fn one_disturbed_run_does_not_hide_a_fourfold_change() {
        // Issue 36: every "before" run at least 4× slower than every "after" run, one "before"
        // run disturbed by half again. Welch's t fell to ~2 degrees of freedom here and
        // marked nothing; the pooled spread keeps 4.
        let before: Vec<RunSample> = [4.0, 6.0, 3.9]
            .iter()
            .enumerate()
            .map(|(i, &s)| shifted(60 + i as u64, s))
            .collect();
        let after: Vec<RunSample> = [1.0, 1.05, 0.97]
            .iter()
            .enumerate()
            .map(|(i, &s)| shifted(70 + i as u64, s))
            .collect();
        let rows = compare_groups(&before, &after);
        for key in ["mttfb_avg_ms", "ttfb_p50_ms", "ttfb_p95_ms", "ttfb_p99_ms"] {
            let r = rows.iter().find(|r| r.key == key).unwrap();
            assert_eq!(
                (r.verdict, r.test, r.df),
                (Verdict::Better, Test::PooledT, Some(4.0)),
                "{key}: {r:?}"
            );
        }
        // ...while identical groups with the same kind of disturbance mark nothing.
        let same: Vec<RunSample> = [1.0, 1.5, 0.97]
            .iter()
            .enumerate()
            .map(|(i, &s)| shifted(80 + i as u64, s))
            .collect();
        for r in compare_groups(&same, &after) {
            assert_eq!(r.verdict, Verdict::Noise, "{r:?}");
        }
    }

    #[test]
    fn what_a_group_can_call_shrinks_with_runs() {
        // Spread 0.1 in logs, 3 vs 3: t(4) = 6.62 at 99.73 %, × 0.1 × √(2/3) = 0.540 → +71.7 %.
        assert!(
            (callable_pct(0.1, 3, 3) - 71.7).abs() < 0.3,
            "{}",
            callable_pct(0.1, 3, 3)
        );
        assert!(callable_pct(0.1, 5, 5) < callable_pct(0.1, 3, 3) / 2.0);
        assert_eq!(callable_pct(0.0, 3, 3), GROUP_FLOOR_PCT);
        assert!(callable_pct(0.1, 1, 1).is_nan());
    }

    #[test]
    fn t_critical_matches_tables() {
        // Two-sided 99.73 %: z = 3 in the limit; larger with few degrees of freedom.
        assert!((t_critical(1e6) - 3.0).abs() < 1e-3);
        assert!((t_critical(4.0) - 6.62).abs() < 0.01, "{}", t_critical(4.0));
        assert!(t_critical(2.0) > t_critical(8.0));
    }
}
