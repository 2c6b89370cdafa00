//! The seeds' before/after tables: one per step of a chain of runs and a final
//! first-vs-last table, each change marked 🟢 / 🔴, or ⚪ when it is within the noise.

use serde::Serialize;
use volley_formats::{Format, HistKey, HistMetric, RunSet, Source};
use volley_stats::SuiteOptions;
use volley_stats::compare::{
    CompareRow, NOISE_Z, RESAMPLES, RunSample, Test, Verdict, compare_groups,
};

use crate::doc::{Answer, Block, Cell, Doc, Figure as Quoted, Section};
use crate::model::ReportOptions;
use volley_formats::numfmt::{self, group_thousands};

/// How the noise is estimated between two single runs (the within-run test).
pub const METHOD: &str = "Noise (within-run, single runs): a moving-block bootstrap over each run's intervals (block ≈ √n intervals, 200 resamples).
A change is marked when it exceeds 3 combined standard errors of the two runs and 2 % of the earlier value (25 % for p99 and p99.9: the run-to-run spread of tail percentiles on identical runs, docs/ARCHITECTURE.md); otherwise ⚪.
A TPS percentile must also move by more than 1.5 steps of one request per interval, its resolution.
A per-request percentile is judged only when both runs have at least 10 requests beyond it (p99.9: 10,000).
Nothing is judged when either run has fewer than 4 intervals.";

/// How the noise is judged when either side is a run group (the between-run test).
pub const GROUP_METHOD: &str = "Noise (between runs, groups): each side's value is the mean of its runs' values (for percentiles, of the runs' percentiles).
A run whose generator stalled for more than 100 ms is left out, while two others remain.
A change is marked only when it exceeds all of (1) to (3):
(1) Student's t at 3 standard errors' confidence (99.73 %) times the standard error of the difference, from the two sides' run-to-run spreads pooled (runs − 2 degrees of freedom), on the logarithms of the values when all are positive (so the bound is a ratio); a single run against a group borrows the group's spread;
(2) 3 standard errors from the runs' own within-run bootstrap;
(3) 3 % of the earlier value: the drift between groups recorded minutes apart on a shared machine, which no spread within them shows (a TPS percentile also 1.5 steps of one request per interval).
The same request and interval minimums apply to every run.";

/// What a comparison of single runs cannot see, said wherever it is shown.
pub const SINGLE_RUN_CAVEAT: &str = "Single runs: this estimate is within-run only and cannot see run-to-run variation (the host, the target's caches, the network), which on identical runs moves p99 by up to ~20 %. For a verdict that holds across runs, record groups with `volley run --repeat 3` (or more) and compare the groups.";

/// One run in a comparison.
#[derive(Debug, Clone, Serialize)]
pub struct RunRef {
    /// Label (from `--labels`, or the run's name).
    pub label: String,
    /// Where it came from.
    pub source: String,
    /// What its reader had to do with input it could not take as it stood (rows skipped or
    /// used out of order, a cut-off end, figures the file cannot give).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub input_notes: Vec<String>,
    /// A run group (`volley run --repeat`), not a single run.
    pub group: bool,
    /// Runs compared on this side (a group's completed runs; 1 for a run).
    pub runs: usize,
    /// What its own report found (the server's readings: the pool, the threads, CPU, GC, the
    /// errors), one sentence each; a group's are its first run's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
    /// The server's key figures at their peak, with where each first showed
    /// ([`server_figures`]); a group's are its first run's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub server: Vec<ServerFigure>,
    /// What its watched Kubernetes workload did (`--kube`), as its report's `cluster`; a
    /// group's are its first run's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<crate::cluster::Cluster>,
}

/// One of the server's key figures in a run: its peak, and the load at which it first
/// showed (the pool's queue above 0, the active connections and busy threads at their peak,
/// CPU at 80 %, a GC pause).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ServerFigure {
    /// `pool pending`, `busy threads`, `process CPU`, …
    pub what: String,
    /// Its peak, in `unit`.
    pub peak: f64,
    /// `""` (a count), `%` or `/s`.
    pub unit: &'static str,
    /// Where it first showed: `30 VUs` (closed model), `12 s (1,180 TPS)` (open model, where
    /// the VUs are not the load); `None` when it never did.
    pub first: Option<String>,
}

/// A series a comparison shows: (metric, label, factor, unit, whether a value counts as
/// showing given the peak).
type ServerSeries = (
    &'static str,
    &'static str,
    f64,
    &'static str,
    fn(f64, f64) -> bool,
);

/// The server series a comparison shows, with their labels, the factor to their unit, the
/// unit, and when each counts as showing (given the peak).
const SERVER_FIGURES: [ServerSeries; 6] = [
    (
        "hikaricp_connections_pending",
        "pool pending",
        1.0,
        "",
        |v, _| v > 0.0,
    ),
    (
        "hikaricp_connections_active",
        "pool active",
        1.0,
        "",
        |v, peak| v >= peak && peak > 0.0,
    ),
    (
        "tomcat_threads_busy_threads",
        "busy threads",
        1.0,
        "",
        |v, peak| v >= peak && peak > 0.0,
    ),
    ("process_cpu_usage", "process CPU", 100.0, "%", |v, _| {
        v >= 80.0
    }),
    (
        "jvm_gc_pause_seconds_sum",
        "GC pause time",
        100.0,
        "%",
        |v, _| v > 0.0,
    ),
    (
        "jvm_gc_pause_seconds_count",
        "GC pauses",
        1.0,
        "/s",
        |v, _| v > 0.0,
    ),
];

/// What the server's readings in `src` (after the warm-up) say, figure by figure: each
/// series summed over its instances and labels per scrape (CPU: the highest), at its peak,
/// and the load at which it first showed. CPU's first reading is left out, as the findings
/// leave it out (Micrometer's first `process_cpu_usage` reaches back into the JVM's start).
pub fn server_figures(src: &Source, opts: ReportOptions) -> Vec<ServerFigure> {
    let warmup = crate::model::warmup_seconds(src, opts.warmup);
    let rows = &src.series.intervals;
    let open = !crate::levels::vus_are_the_load(src);
    SERVER_FIGURES
        .iter()
        .filter_map(|&(metric, what, scale, unit, shows)| {
            let mut readings = per_scrape(
                crate::findings::series_of(src, metric, warmup),
                metric == "process_cpu_usage",
            );
            readings.iter_mut().for_each(|r| r.value *= scale);
            let peak = readings.iter().map(|r| r.value).reduce(f64::max)?;
            let first = readings.iter().find(|r| shows(r.value, peak)).map(|r| {
                let row = &rows[r.row];
                if open {
                    format!(
                        "{:.0} s ({} TPS)",
                        row.start_s + row.period_s - warmup,
                        group_thousands(row.tps.max(0.0).round() as u64)
                    )
                } else {
                    crate::findings::vus(r.vusers)
                }
            });
            Some(ServerFigure {
                what: what.to_string(),
                peak,
                unit,
                first,
            })
        })
        .collect()
}

/// One reading per scrape from the readings of every series of a metric: the series' values
/// at one scrape (the k-th reading of each in a row of the series) summed, or for CPU the
/// highest, whose first reading is left out; in time order.
fn per_scrape(
    series: Vec<(String, Vec<crate::findings::Reading>)>,
    cpu: bool,
) -> Vec<crate::findings::Reading> {
    let mut out: Vec<((usize, usize), crate::findings::Reading)> = Vec::new();
    for (_, readings) in series {
        let mut seen: Vec<(usize, usize)> = Vec::new();
        for r in readings.into_iter().skip(usize::from(cpu)) {
            let k = match seen.iter_mut().find(|(row, _)| *row == r.row) {
                Some((_, n)) => {
                    *n += 1;
                    *n
                }
                None => {
                    seen.push((r.row, 0));
                    0
                }
            };
            match out.iter_mut().find(|(key, _)| *key == (r.row, k)) {
                Some((_, o)) if cpu => o.value = o.value.max(r.value),
                Some((_, o)) => o.value += r.value,
                None => out.push(((r.row, k), r)),
            }
        }
    }
    out.sort_by_key(|(key, _)| *key);
    out.into_iter().map(|(_, r)| r).collect()
}

/// A server figure's value: `9`, `87 %`, `0.40/s`.
fn server_value(f: &ServerFigure) -> String {
    match f.unit {
        "" if f.peak.fract() == 0.0 => format!("{:.0}", f.peak),
        "" => format!("{:.1}", f.peak),
        "%" => format!("{:.1} %", f.peak),
        u => format!("{:.2}{u}", f.peak),
    }
}

/// A run's findings as a comparison shows them: what its report found, less the sentence that
/// the load did not change (every run of one level says it).
fn findings_of(report: &crate::model::RunReport) -> Vec<String> {
    report
        .findings
        .iter()
        .filter(|f| !f.starts_with("The load did not change"))
        .cloned()
        .collect()
}

/// Each set's label: its `--labels` label, else its name; names two sets share (two runs of
/// one plan) are told apart by their directories, and by their place when those match too.
fn labels_of(sets: &[RunSet], labels: &[String]) -> Vec<String> {
    // A run directory is `<start>_<name>`: its start tells it apart.
    let dir = |s: &RunSet| {
        let d = s
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| s.path.display().to_string());
        match d.strip_suffix(&s.name).and_then(|d| d.strip_suffix('_')) {
            Some(start) if !start.is_empty() => start.to_string(),
            _ => d,
        }
    };
    let mut out: Vec<String> = sets
        .iter()
        .enumerate()
        .map(|(i, s)| match labels.get(i) {
            Some(l) => l.clone(),
            // The same directory twice is one run: its name says it.
            None if sets.iter().any(|o| o.name == s.name && o.path != s.path) => {
                format!("{} ({})", s.name, dir(s))
            }
            None => s.name.clone(),
        })
        .collect();
    let taken = out.clone();
    for (i, l) in out.iter_mut().enumerate() {
        let other = |j: usize| taken[j] == *l && sets[j].path != sets[i].path;
        if labels.get(i).is_none() && (0..sets.len()).any(other) {
            *l = format!("{l} #{}", i + 1);
        }
    }
    out
}

/// One before/after table.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// Label of the earlier run.
    pub before: String,
    /// Label of the later run.
    pub after: String,
    /// One row per figure.
    pub rows: Vec<CompareRow>,
    /// Scenario steps (or test ids) found in both runs, each with its key figures.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_step: Vec<StepChange>,
    /// Populations (a scenario file's `scenarios:`) found in both runs, each compared as a
    /// run of its own over the time it ran; `rows` above are the runs' totals.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_population: Vec<StepChange>,
    /// The levels of VUs both sides held, the same in the same order (a step-up
    /// `--stages "0s:5,15s:5,0s:10,15s:10"` run twice), each compared on its own intervals
    /// with the noise within it: the whole-run rows above mix the levels, so the plan's own
    /// steps count as noise there.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_level: Vec<StepChange>,
    /// What a reader must know of this table: runs left out of a group's figures (their
    /// generator stalled), and the smallest change these runs can call.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One scenario step compared across two runs.
#[derive(Debug, Clone, Serialize)]
pub struct StepChange {
    /// The step's name.
    pub name: String,
    /// Its key figures (error rate, TPS, MTTFB, per-request TTFB p50 and p99).
    pub rows: Vec<CompareRow>,
}

/// The figures compared per step: the ones that say which step got faster or slower.
const STEP_KEYS: [&str; 5] = [
    "error_rate_pct",
    "tps_avg",
    "mttfb_avg_ms",
    "ttfb_p50_ms",
    "ttfb_p99_ms",
];

/// What the noise estimate needs of a series of `src` after warm-up: the series and the
/// per-interval TTFB histograms of `ttfb`.
fn run_sample(
    src: &Source,
    series: &volley_stats::Series,
    ttfb: HistKey,
    opts: ReportOptions,
) -> RunSample {
    let warmup = crate::model::warmup_seconds(src, opts.warmup);
    let series = series.after_warmup(warmup).into_owned();
    RunSample {
        ttfb: src.interval_histograms(ttfb, series.intervals.iter().map(|r| r.start_s)),
        series,
        options: SuiteOptions {
            tps_tail: opts.tps_tail,
        },
        generator_lag_ms: generator_lag_ms(src, warmup),
    }
}

/// The generator's largest own delay in `src` after `warmup`, ms (0 when not recorded).
fn generator_lag_ms(src: &Source, warmup: f64) -> f64 {
    src.series
        .intervals
        .iter()
        .zip(&src.generator)
        .filter(|(row, _)| row.start_s + 1e-9 >= warmup)
        .map(|(_, g)| g.sched_lag_max_ms)
        .fold(0.0, f64::max)
}

/// Every figure of `src` after warm-up with its standard error from the within-run
/// bootstrap: `(key, value, standard error)` ([`RunSample::noise`]).
pub fn run_noise(src: &Source, opts: ReportOptions) -> Vec<(&'static str, f64, f64)> {
    run_sample(src, &src.series, HistKey::TTFB, opts).noise()
}

/// The noise inputs of step `i` of `src` (its block of the series, its histograms).
fn step_sample(src: &Source, i: usize, opts: ReportOptions) -> RunSample {
    run_sample(
        src,
        &src.per_test[i].1,
        HistKey::step(HistMetric::Ttfb, i),
        opts,
    )
}

/// The noise inputs of step `name` in every run of `set`, `None` when a run lacks it.
fn step_samples(set: &RunSet, name: &str, opts: ReportOptions) -> Option<Vec<RunSample>> {
    set.runs
        .iter()
        .map(|src| {
            src.per_test
                .iter()
                .position(|(n, _)| n == name)
                .map(|i| step_sample(src, i, opts))
        })
        .collect()
}

/// Steps of `a` also in `b` (matched by name, present in every run), compared.
fn per_step(a: &RunSet, b: &RunSet, opts: ReportOptions) -> Vec<StepChange> {
    a.first()
        .per_test
        .iter()
        .filter_map(|(name, _)| {
            let (sa, sb) = (step_samples(a, name, opts)?, step_samples(b, name, opts)?);
            let rows = compare_groups(&sa, &sb)
                .into_iter()
                .filter(|r| {
                    STEP_KEYS.contains(&r.key) && r.before.is_finite() && r.after.is_finite()
                })
                .collect();
            Some(StepChange {
                name: name.to_string(),
                rows,
            })
        })
        .collect()
}

/// The noise inputs of `level` of `src`: its rows, their histograms and the generator's lag.
fn level_sample(src: &Source, level: &crate::levels::Level, opts: ReportOptions) -> RunSample {
    let rows = &src.series.intervals;
    let inside = |r: &volley_stats::Interval| {
        r.start_s + 1e-9 >= level.from_s && r.start_s + 1e-9 < level.to_s && r.period_s > 0.0
    };
    let idx: Vec<usize> = (0..rows.len()).filter(|&i| inside(&rows[i])).collect();
    RunSample {
        series: volley_stats::Series {
            intervals: idx.iter().map(|&i| rows[i].clone()).collect(),
        },
        ttfb: src.interval_histograms(HistKey::TTFB, idx.iter().map(|&i| rows[i].start_s)),
        options: SuiteOptions {
            tps_tail: opts.tps_tail,
        },
        generator_lag_ms: idx
            .iter()
            .filter_map(|&i| src.generator.get(i))
            .map(|g| g.sched_lag_max_ms)
            .fold(0.0, f64::max),
    }
}

/// Each run's held levels, in the order of its runs.
pub(crate) type RunLevels = Vec<Vec<crate::levels::Level>>;

/// Each run's held levels, when every run of `a` and of `b` held the same levels of VUs in the
/// same order (at least two).
pub(crate) fn shared_levels(
    a: &[Source],
    b: &[Source],
    opts: ReportOptions,
) -> Option<(RunLevels, RunLevels)> {
    let of = |set: &[Source]| -> RunLevels {
        set.iter()
            .map(|s| crate::levels::planned(s, opts))
            .collect()
    };
    let (la, lb) = (of(a), of(b));
    let vus = |l: &Vec<crate::levels::Level>| l.iter().map(|x| x.vusers).collect::<Vec<_>>();
    let first = vus(la.first()?);
    (first.len() >= 2 && la.iter().chain(&lb).all(|l| vus(l) == first)).then_some((la, lb))
}

/// A level's name: `10 VUs`, with its start when the plan holds that many VUs twice.
pub(crate) fn level_name(levels: &[crate::levels::Level], k: usize) -> String {
    let l = &levels[k];
    if levels.iter().filter(|o| o.vusers == l.vusers).count() > 1 {
        format!("{:.0} VUs from {:.0} s", l.vusers, l.from_s)
    } else {
        format!("{:.0} VUs", l.vusers)
    }
}

/// The noise inputs of level `k` in every run of `sources`.
pub(crate) fn level_samples(
    sources: &[Source],
    levels: &[Vec<crate::levels::Level>],
    k: usize,
    opts: ReportOptions,
) -> Vec<RunSample> {
    sources
        .iter()
        .zip(levels)
        .map(|(src, l)| level_sample(src, &l[k], opts))
        .collect()
}

/// Levels both sides held, compared level by level.
fn per_level(a: &RunSet, b: &RunSet, opts: ReportOptions) -> Vec<StepChange> {
    let Some((la, lb)) = shared_levels(&a.runs, &b.runs, opts) else {
        return Vec::new();
    };
    (0..la[0].len())
        .map(|k| {
            let (sa, sb) = (
                level_samples(&a.runs, &la, k, opts),
                level_samples(&b.runs, &lb, k, opts),
            );
            StepChange {
                name: level_name(&la[0], k),
                rows: compare_groups(&sa, &sb)
                    .into_iter()
                    .filter(|r| {
                        STEP_KEYS.contains(&r.key) && r.before.is_finite() && r.after.is_finite()
                    })
                    .collect(),
            }
        })
        .collect()
}

/// The figures a gate judges unless told otherwise: errors, throughput, and the mean and tail
/// of the time to first byte. TPS and MTTFB percentiles, counts and variability are left out:
/// they move with the load shape or are too noisy to fail a build on.
pub const DEFAULT_METRICS: [&str; 6] = [
    "error_rate_pct",
    "tps_avg",
    "mttfb_avg_ms",
    "ttfb_p50_ms",
    "ttfb_p95_ms",
    "ttfb_p99_ms",
];

/// The figures compared per population: a gate's default figures.
const POPULATION_KEYS: [&str; 6] = DEFAULT_METRICS;

/// The noise inputs of population `name` in every run of `set` (each over the time it ran,
/// after the run's warm-up), `None` when a run lacks it.
fn population_samples(set: &RunSet, name: &str, opts: ReportOptions) -> Option<Vec<RunSample>> {
    set.runs
        .iter()
        .map(|src| {
            let p = src.populations.iter().find(|p| p.name == name)?;
            let start = p
                .meta
                .as_ref()
                .and_then(|m| m.population.as_ref())
                .map_or(0.0, |n| n.start_s);
            let warmup = crate::model::warmup_seconds(src, opts.warmup).max(start);
            Some(run_sample(
                p,
                &p.series,
                HistKey::TTFB,
                ReportOptions {
                    warmup: Some(volley_scenario::Warmup::Time(
                        std::time::Duration::from_secs_f64(warmup),
                    )),
                    ..opts
                },
            ))
        })
        .collect()
}

/// Populations of `a` also in `b` (by name, in every run), compared.
fn per_population(a: &RunSet, b: &RunSet, opts: ReportOptions) -> Vec<StepChange> {
    a.first()
        .populations
        .iter()
        .filter_map(|p| {
            let (sa, sb) = (
                population_samples(a, &p.name, opts)?,
                population_samples(b, &p.name, opts)?,
            );
            let rows = compare_groups(&sa, &sb)
                .into_iter()
                .filter(|r| {
                    POPULATION_KEYS.contains(&r.key) && r.before.is_finite() && r.after.is_finite()
                })
                .collect();
            Some(StepChange {
                name: p.name.clone(),
                rows,
            })
        })
        .collect()
}

/// A whole comparison; serialized as the JSON output.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Layout version.
    pub schema: u32,
    /// The runs in order.
    pub runs: Vec<RunRef>,
    /// Consecutive steps.
    pub steps: Vec<Step>,
    /// First vs last, when there are more than two runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overall: Option<Step>,
    /// How noise was judged (the methods of the tests used).
    pub method: String,
    /// What the estimate cannot see, when any table compares two single runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caveat: Option<String>,
    /// Bootstrap parameters.
    pub noise_z: f64,
    /// Resamples per run.
    pub resamples: usize,
}

/// What the noise estimate needs of each source: its series and per-interval TTFB
/// histograms after warm-up.
pub(crate) fn samples(sources: &[Source], opts: ReportOptions) -> Vec<RunSample> {
    sources
        .iter()
        .map(|s| run_sample(s, &s.series, HistKey::TTFB, opts))
        .collect()
}

/// Compares `sets` (runs or run groups) in order; `labels` name them (defaults: their names).
pub fn build(sets: &[RunSet], labels: &[String], opts: ReportOptions) -> Comparison {
    let samples: Vec<Vec<RunSample>> = sets.iter().map(|s| samples(&s.runs, opts)).collect();
    let names = labels_of(sets, labels);
    let runs: Vec<RunRef> = sets
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let report = crate::model::RunReport::from_source(s.first(), opts);
            (i, s, report)
        })
        .map(|(i, s, report)| RunRef {
            // Names come from run.json as written: each renderer escapes them its own way
            // (the terminal's control characters, Markdown's and HTML's own).
            label: names[i].clone(),
            findings: findings_of(&report),
            cluster: report.cluster,
            server: server_figures(s.first(), opts),
            source: s.path.display().to_string(),
            input_notes: s
                .notes
                .iter()
                .cloned()
                .chain(
                    s.runs
                        .iter()
                        .flat_map(|r| r.input_notes.iter().map(ToString::to_string)),
                )
                .collect(),
            group: s.is_group(),
            runs: s.runs.len(),
        })
        .collect();
    // A figure any file cannot give (its reader said so) is left out, not compared as 0.
    let available = |a: usize, b: usize, r: &CompareRow| {
        figures_of(r.key).iter().all(|&f| {
            [a, b]
                .iter()
                .all(|&i| sets[i].runs.iter().all(|s| s.unavailable(f).is_none()))
        })
    };
    let step = |a: usize, b: usize| Step {
        before: runs[a].label.clone(),
        after: runs[b].label.clone(),
        rows: compare_groups(&samples[a], &samples[b])
            .into_iter()
            .filter(|r| available(a, b, r))
            .collect(),
        per_step: per_step(&sets[a], &sets[b], opts),
        per_population: per_population(&sets[a], &sets[b], opts),
        per_level: per_level(&sets[a], &sets[b], opts),
        notes: Vec::new(),
    };
    let step = |a: usize, b: usize| {
        let mut s = step(a, b);
        s.notes = left_out(&sets[a], &samples[a], &runs[a].label)
            .into_iter()
            .chain(left_out(&sets[b], &samples[b], &runs[b].label))
            .chain(callable(&s.rows))
            .chain((!s.per_level.is_empty()).then(|| {
                format!(
                    "Both held the same levels ({}): the whole-run rows mix them, so the plan's own steps count as noise there; the per-level rows judge each level on its own intervals.",
                    s.per_level
                        .iter()
                        .map(|l| l.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }))
            .chain(mttfb_meanings(
                (&runs[a].label, sets[a].first().format),
                (&runs[b].label, sets[b].first().format),
            ))
            .chain(load_models(
                (&runs[a].label, sets[a].first()),
                (&runs[b].label, sets[b].first()),
            ))
            .collect();
        s
    };
    let steps: Vec<Step> = (1..sets.len()).map(|i| step(i - 1, i)).collect();
    let overall = (sets.len() > 2).then(|| step(0, sets.len() - 1));
    let tests: Vec<Test> = steps
        .iter()
        .chain(&overall)
        .flat_map(|s| s.rows.iter().map(|r| r.test))
        .collect();
    let single = tests.contains(&Test::WithinRun);
    let mut method = Vec::new();
    if single {
        method.push(METHOD);
    }
    if tests.contains(&Test::PooledT) {
        method.push(GROUP_METHOD);
    }
    if method.is_empty() {
        method.push(METHOD);
    }
    // The runs a group side was judged on (a run left out for a stall does not count).
    let pairs = (1..sets.len())
        .map(|i| (i - 1, i))
        .chain((sets.len() > 2).then_some((0, sets.len() - 1)));
    let few = steps
        .iter()
        .chain(&overall)
        .zip(pairs)
        .flat_map(|(s, (a, b))| {
            let runs = &runs;
            s.rows
                .iter()
                .filter(|r| r.test == Test::PooledT)
                .flat_map(move |r| {
                    [
                        (runs[a].group, r.runs_before),
                        (runs[b].group, r.runs_after),
                    ]
                })
        })
        .filter(|(group, _)| *group)
        .map(|(_, n)| n)
        .min()
        .filter(|&n| n < 3);
    let caveat = match (single, few) {
        (true, _) => Some(SINGLE_RUN_CAVEAT.to_string()),
        (false, Some(n)) => Some(format!(
            "A side has only {n} run{}: the between-run test then has so few degrees of freedom that only very large changes can be marked; repeat with `--repeat 3` or more (5 to see a 10 % change).",
            if n == 1 { "" } else { "s" }
        )),
        _ => None,
    };
    Comparison {
        schema: 1,
        runs,
        steps,
        overall,
        method: method.join("\n"),
        caveat,
        noise_z: NOISE_Z,
        resamples: RESAMPLES,
    }
}

/// The runs of a group its figures leave out ([`volley_stats::compare::kept`]), one
/// sentence each.
fn left_out(set: &RunSet, samples: &[RunSample], label: &str) -> Vec<String> {
    let kept = volley_stats::compare::kept(samples);
    let kept_note = stalled_but_kept(samples, &kept, &format!("{label}: runs"));
    samples
        .iter()
        .enumerate()
        .filter(|(i, _)| !kept.contains(i))
        .map(|(i, r)| {
            let dir = set.runs[i]
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            format!(
                "{label}: run {} (`{}`) is left out of the group's figures: volley's own loop stalled for {:.0} ms (more than {:.0} ms), so its latencies hold volley's delay and its throughput the gap.",
                i + 1,
                dir,
                r.generator_lag_ms,
                volley_stats::compare::STALL_MS
            )
        })
        .chain(kept_note)
        .collect()
}

/// A warning when the two sides' MTTFB stand for different times (a JMeter JTL's Latency
/// against a Gatling log's response time).
fn mttfb_meanings((a, fa): (&str, Format), (b, fb): (&str, Format)) -> Option<String> {
    let (ma, mb) = (fa.mttfb_meaning(), fb.mttfb_meaning());
    (ma != mb).then(|| {
        format!(
            "MTTFB is {ma} in {a} ({fa}) but {mb} in {b} ({fb}), which records no first byte: the MTTFB rows compare different times; compare TPS, errors and the total-time figures instead."
        )
    })
}

/// Whether `src` ran an open model (arrivals on a schedule), a closed one (VUs), or is a
/// file that does not say.
fn open_model(src: &Source) -> Option<bool> {
    src.meta.as_ref().map(|m| m.plan.load.is_open())
}

/// The start of the warning that two sides ran different load models.
pub const UNLIKE_MODELS: &str = "Unlike load models:";

/// A warning when one side ran an open model and the other a closed one: their latencies are
/// measured from different moments, and their throughput answers different questions.
fn load_models((a, sa): (&str, &Source), (b, sb): (&str, &Source)) -> Option<String> {
    let (oa, ob) = (open_model(sa)?, open_model(sb)?);
    (oa != ob).then(|| {
        let (open, closed) = if oa { (a, b) } else { (b, a) };
        format!(
            "{UNLIKE_MODELS} {open} ran an open model (arrivals on a schedule: its latencies are measured from each request's due time, so a wait to be sent counts, and its TPS is the rate it was asked for while the server kept up) and {closed} a closed model (virtual users: latencies from the send, and its TPS is what the users' round trips allowed). The latency and TPS rows compare different measures, not one server before and after; run both with --rate, or both with --vus, to compare them."
        )
    })
}

/// The figures a comparison opens with.
const QUOTED: [&str; 3] = ["tps_avg", "ttfb_p99_ms", "error_rate_pct"];

/// The figures whose smallest callable change a table states.
const CALLABLE_KEYS: [&str; 2] = ["tps_avg", "mttfb_avg_ms"];

/// What a between-run table can and cannot call: the smallest change of TPS and MTTFB
/// these runs can mark at their spread, and what five (or ten) runs a side would.
fn callable(rows: &[CompareRow]) -> Option<String> {
    use volley_stats::compare::callable_pct;
    let rows: Vec<&CompareRow> = CALLABLE_KEYS
        .iter()
        .filter_map(|k| rows.iter().find(|r| r.key == *k && r.test == Test::PooledT))
        .filter(|r| r.spread_log.is_some() && r.noise_pct.is_finite())
        .collect();
    let first = rows.first()?;
    let (na, nb) = (first.runs_before, first.runs_after);
    let more = if na.max(nb) < 5 { 5 } else { 2 * na.max(nb) };
    let now: Vec<String> = rows
        .iter()
        .map(|r| {
            let pct = callable_pct(r.spread_log.unwrap_or(f64::NAN), na, nb).max(r.noise_pct);
            format!("{} % ({})", pct_text(pct), r.label)
        })
        .collect();
    let then: Vec<String> = rows
        .iter()
        .map(|r| {
            let pct = callable_pct(r.spread_log.unwrap_or(f64::NAN), more, more);
            format!("{} %", pct_text(pct))
        })
        .collect();
    Some(format!(
        "With {na} vs {nb} runs at this run-to-run spread, a change must exceed {} to be called; with {more} runs a side (--repeat {more}), about {}.",
        now.join(" and "),
        then.join(" and ")
    ))
}

/// A percentage as the notes write it: whole from 10 up, one decimal below.
fn pct_text(p: f64) -> String {
    if p.is_finite() {
        numfmt::short(p, 10.0)
    } else {
        "∞".to_string()
    }
}

/// The figures a comparison row stands on, for the rows a file may be unable to give (the
/// metric table's `needs`).
fn figures_of(key: &str) -> &'static [volley_formats::Figure] {
    volley_stats::metric::metric(key).map_or(&[], |m| m.needs)
}

pub(crate) fn value(v: f64, unit: &str, key: &str) -> String {
    if key == "total_tests" {
        return group_thousands(v as u64);
    }
    match unit {
        "" => format!("{v:.2}"),
        "%" => format!("{v:.2}%"),
        u => format!("{v:.2} {u}"),
    }
}

/// A change as the text before its mark and the text after it: (`+3.20%`, ` (too few
/// requests)`); the mark follows the first after a space.
pub(crate) fn change_parts(r: &CompareRow) -> (String, &'static str) {
    if r.change_pct.is_infinite() {
        return ("new".to_string(), "");
    }
    let why = if r.too_few_intervals {
        " (too few intervals to judge)"
    } else if r.too_few {
        " (too few requests)"
    } else {
        ""
    };
    (format!("{:+.2}%", r.change_pct), why)
}

/// The heads of a comparison row's figures: both labels, the change, the noise, the test.
pub(crate) fn row_heads(before: &str, after: &str) -> [String; 5] {
    [
        before.to_string(),
        after.to_string(),
        "Change".into(),
        "noise ±".into(),
        "judged by".into(),
    ]
}

/// A comparison row's figures as cells under [`row_heads`]: both values, the change with its
/// mark, the noise and the test that judged it.
pub(crate) fn row_cells(r: &CompareRow) -> [Cell; 5] {
    let (change, after) = change_parts(r);
    [
        Cell::from(value(r.before, r.unit, r.key)),
        Cell::from(value(r.after, r.unit, r.key)),
        Cell {
            text: change,
            mark: Some(r.verdict),
            after: after.to_string(),
            strong: true,
            ..Cell::default()
        },
        Cell::from(noise(r.noise_pct)),
        Cell::from(judged_by(r)),
    ]
}

/// The noise column: `4.2%`, or `n/a` where it could not be estimated.
pub(crate) fn noise(pct: f64) -> String {
    if pct.is_finite() {
        format!("{pct:.1}%")
    } else {
        "n/a".to_string()
    }
}

/// Which test judged a row, and with how many runs: `within-run`, `pooled t, 3 vs 3 runs`.
pub(crate) fn judged_by(r: &CompareRow) -> String {
    r.test.describe(r.runs_before, r.runs_after)
}

impl Comparison {
    /// Every run's input notes, with the run's label.
    fn input_notes(&self) -> impl Iterator<Item = (&str, &str)> {
        self.runs.iter().flat_map(|r| {
            r.input_notes
                .iter()
                .map(move |n| (r.label.as_str(), n.as_str()))
        })
    }

    fn tables(&self) -> impl Iterator<Item = (String, &Step)> {
        let steps = self
            .steps
            .iter()
            .map(|s| (format!("{} → {}", s.before, s.after), s));
        steps.chain(
            self.overall
                .iter()
                .map(|s| (format!("Overall: {} → {}", s.before, s.after), s)),
        )
    }

    /// The comparison as a document, the one its terminal, Markdown and HTML forms are
    /// drawn from: the marks counted and the quoted figures of the last table first, then
    /// each table, its per-level, per-population and per-step tables, and the method.
    pub fn doc(&self) -> Doc {
        let labels: Vec<&str> = self.runs.iter().map(|r| r.label.as_str()).collect();
        let meta = self
            .runs
            .iter()
            .map(|r| {
                let what = if r.group {
                    format!("a group of {} runs", r.runs)
                } else {
                    "a run".to_string()
                };
                format!("{}: {what}, {}", r.label, r.source)
            })
            .collect();
        let last = self.overall.as_ref().or(self.steps.last());
        let mut answer = Answer::default();
        // Runs of unlike load models are said before any figure of theirs is read.
        let unlike: Vec<&str> = self
            .steps
            .iter()
            .flat_map(|s| &s.notes)
            .filter(|n| n.starts_with(UNLIKE_MODELS))
            .map(String::as_str)
            .collect();
        if let Some(first) = unlike.first() {
            answer.banner = Some(first.to_string());
        }
        if let Some(step) = last {
            let count = |v: Verdict| step.rows.iter().filter(|r| r.verdict == v).count();
            answer.summary = Some(format!(
                "{} → {}: {} better 🟢, {} worse 🔴, {} within the noise ⚪ (of {} figures).",
                step.before,
                step.after,
                count(Verdict::Better),
                count(Verdict::Worse),
                count(Verdict::Noise),
                step.rows.len()
            ));
            answer.figures = QUOTED
                .iter()
                .filter_map(|k| step.rows.iter().find(|r| r.key == *k))
                .map(|r| {
                    let (change, _) = change_parts(r);
                    Quoted {
                        label: r.label.to_string(),
                        value: value(r.after, r.unit, r.key),
                        change: Some((r.verdict, change)),
                    }
                })
                .collect();
        }
        let header = |first: &[&str], step: &Step| -> Vec<String> {
            first
                .iter()
                .map(|s| s.to_string())
                .chain(row_heads(&step.before, &step.after))
                .collect()
        };
        let row = |first: Vec<Cell>, r: &CompareRow| -> Vec<Cell> {
            first.into_iter().chain(row_cells(r)).collect()
        };
        let mut sections = Vec::new();
        for (title, step) in self.tables() {
            let mut blocks = vec![Block::Table {
                header: header(&["Metric"], step),
                rows: step
                    .rows
                    .iter()
                    .map(|r| row(vec![Cell::from(r.label)], r))
                    .collect(),
            }];
            if !step.notes.is_empty() {
                blocks.push(Block::Notes(step.notes.clone()));
            }
            sections.push(Section {
                id: "steps".into(),
                title: title.clone(),
                caption: String::new(),
                blocks,
            });
            if let Some(server) = self.server_section(step, &title) {
                sections.push(server);
            }
            // A level's name is plain; a population's and a step's are code.
            for (id, what, column, parts, code) in [
                ("per_level", "level", "Level", &step.per_level, false),
                (
                    "per_population",
                    "population",
                    "Population",
                    &step.per_population,
                    true,
                ),
                ("per_step", "step", "Step", &step.per_step, true),
            ] {
                if parts.is_empty() {
                    continue;
                }
                let rows = parts
                    .iter()
                    .flat_map(|p| {
                        p.rows.iter().map(move |r| {
                            let name = Cell {
                                text: p.name.clone(),
                                code,
                                ..Cell::default()
                            };
                            row(vec![name, Cell::from(r.label)], r)
                        })
                    })
                    .collect();
                sections.push(Section {
                    id: id.into(),
                    title: format!("Per {what}: {title}"),
                    caption: String::new(),
                    blocks: vec![Block::Table {
                        header: header(&[column, "Metric"], step),
                        rows,
                    }],
                });
            }
        }
        if let Some(section) = self.cluster_section() {
            sections.push(section);
        }
        if self
            .runs
            .iter()
            .any(|r| !r.findings.is_empty() || !r.server.is_empty())
        {
            let found = self
                .runs
                .iter()
                .map(|r| {
                    let said = if !r.findings.is_empty() {
                        r.findings.join(" ")
                    } else if r.server.is_empty() {
                        "nothing found, and no server metrics were scraped".to_string()
                    } else {
                        "no bottleneck in the scraped metrics".to_string()
                    };
                    format!("{}: {said}", r.label)
                })
                .collect();
            sections.push(Section::new(
                "findings",
                "What each phase found",
                "each run's own findings, from the target's metrics and its errors",
                Block::List(found),
            ));
        }
        let input: Vec<String> = self
            .input_notes()
            .map(|(run, note)| format!("{run}: {note}"))
            .collect();
        if !input.is_empty() {
            sections.push(Section::new(
                "input_notes",
                "What the readers did with the input",
                "",
                Block::Notes(input),
            ));
        }
        let mut method: Vec<String> = self.caveat.iter().cloned().collect();
        method.extend(self.method.lines().map(str::to_string));
        sections.push(Section::new("method", "Method", "", Block::List(method)));
        Doc {
            title: format!("Comparison of {}", labels.join(", ")),
            meta,
            answer,
            sections,
        }
    }

    /// The watched workloads side by side, one column per run (`--kube`); none when no run
    /// watched one.
    fn cluster_section(&self) -> Option<Section> {
        if self.runs.iter().all(|r| r.cluster.is_none()) {
            return None;
        }
        type Figure = fn(&crate::cluster::Cluster) -> String;
        let figures: [(&str, Figure); 7] = [
            ("ready pods (min–max)", |c| {
                match (c.ready_pods_min, c.ready_pods_max) {
                    (Some(lo), Some(hi)) if lo == hi => format!("{lo:.0}"),
                    (Some(lo), Some(hi)) => format!("{lo:.0}–{hi:.0}"),
                    _ => "-".into(),
                }
            }),
            ("no ready endpoint, s", |c| {
                format!(
                    "{:.1}",
                    c.no_ready_endpoints
                        .iter()
                        .map(|n| n.window.to_s - n.window.from_s)
                        .fold(0.0, |a, b| a + b)
                )
            }),
            ("unready, pod-seconds", |c| format!("{:.1}", c.unready_s())),
            ("errors in unready windows", |c| {
                group_thousands(c.errors_unready())
            }),
            ("restarts", |c| {
                c.restarts
                    .iter()
                    .map(|r| r.restarts)
                    .sum::<i64>()
                    .to_string()
            }),
            ("scales", |c| {
                let s: Vec<String> = c
                    .scales
                    .iter()
                    .map(|s| format!("{} → {} at {:.0} s", s.from, s.to, s.at_s))
                    .collect();
                if s.is_empty() {
                    "none".into()
                } else {
                    s.join(", ")
                }
            }),
            ("CPU at limit", |c| {
                let s: Vec<String> = c
                    .cpu_at_limit
                    .iter()
                    .map(|a| match a.vusers {
                        Some(v) => format!("{} from {v:.0} VUs ({:.0} %)", a.pod, a.pct_of_limit),
                        None => format!("{} ({:.0} %)", a.pod, a.pct_of_limit),
                    })
                    .collect();
                if s.is_empty() {
                    "none".into()
                } else {
                    s.join(", ")
                }
            }),
        ];
        let rows =
            figures
                .iter()
                .map(|(what, f)| {
                    std::iter::once(Cell::from(*what))
                        .chain(self.runs.iter().map(|r| {
                            Cell::from(r.cluster.as_ref().map_or("no --kube".to_string(), f))
                        }))
                        .collect()
                })
                .collect();
        Some(Section {
            id: "cluster".into(),
            title: "Cluster".into(),
            caption: "the watched Kubernetes workload in each run (volley run --kube): ready pods over kube.csv's samples; seconds with no ready endpoint; seconds pods were not ready, summed over pods; failed requests in the intervals overlapping those windows; container restarts; the HPA's scales; pods whose mean CPU over a level reached 90 % of their limit".into(),
            blocks: vec![Block::Table {
                header: std::iter::once("Cluster".to_string())
                    .chain(self.runs.iter().map(|r| r.label.clone()))
                    .collect(),
                rows,
            }],
        })
    }

    /// The server's figures before and after `step`, with the load at which each first
    /// showed; none when neither side scraped any.
    fn server_section(&self, step: &Step, title: &str) -> Option<Section> {
        let find = |label: &str| self.runs.iter().find(|r| r.label == label);
        let (a, b) = (find(&step.before)?, find(&step.after)?);
        if a.server.is_empty() && b.server.is_empty() {
            return None;
        }
        let mut whats: Vec<&str> = a.server.iter().map(|f| f.what.as_str()).collect();
        for f in &b.server {
            if !whats.contains(&f.what.as_str()) {
                whats.push(&f.what);
            }
        }
        let of = |r: &RunRef, what: &str| r.server.iter().find(|f| f.what == what).cloned();
        let rows = whats
            .iter()
            .map(|what| {
                let (fa, fb) = (of(a, what), of(b, what));
                let peak = |f: &Option<ServerFigure>| f.as_ref().map_or("-".into(), server_value);
                let first = |f: &Option<ServerFigure>| {
                    f.as_ref()
                        .and_then(|f| f.first.clone())
                        .unwrap_or_else(|| "-".into())
                };
                vec![
                    Cell::from(*what),
                    Cell::from(peak(&fa)),
                    Cell::from(peak(&fb)),
                    Cell::from(first(&fa)),
                    Cell::from(first(&fb)),
                ]
            })
            .collect();
        Some(Section {
            id: "server".into(),
            title: format!("Server: {title}"),
            caption: "peaks after the warm-up; first: where the pool's queue rose above 0, the active connections and busy threads reached their peak, CPU 80 %, and the first GC pause".into(),
            blocks: vec![Block::Table {
                header: vec![
                    "Server".into(),
                    step.before.clone(),
                    step.after.clone(),
                    format!("first ({})", step.before),
                    format!("first ({})", step.after),
                ],
                rows,
            }],
        })
    }

    /// Markdown in the seeds' layout: `| Metric | Before | After | Change |`.
    pub fn markdown(&self) -> String {
        self.doc().markdown()
    }

    /// A terminal table.
    pub fn table(&self) -> String {
        self.doc().terminal()
    }

    /// CSV: one row per figure per step.
    pub fn csv(&self) -> String {
        let mut lines: Vec<Vec<String>> = vec![
            [
                "step",
                "before_label",
                "after_label",
                "key",
                "label",
                "before",
                "after",
                "change_pct",
                "noise_pct",
                "verdict",
                "test",
                "runs_before",
                "runs_after",
            ]
            .map(str::to_string)
            .to_vec(),
        ];
        for (title, step) in self.tables() {
            let mut rows: Vec<(String, &CompareRow)> =
                step.rows.iter().map(|r| (title.clone(), r)).collect();
            rows.extend(
                step.per_level
                    .iter()
                    .chain(&step.per_step)
                    .flat_map(|s| s.rows.iter().map(|r| (format!("{title} / {}", s.name), r))),
            );
            let name = |v: serde_json::Result<serde_json::Value>| {
                v.ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default()
            };
            for (title, r) in rows {
                lines.push(vec![
                    title,
                    step.before.clone(),
                    step.after.clone(),
                    r.key.to_string(),
                    r.label.to_string(),
                    r.before.to_string(),
                    r.after.to_string(),
                    r.change_pct.to_string(),
                    r.noise_pct.to_string(),
                    name(serde_json::to_value(r.verdict)),
                    name(serde_json::to_value(r.test)),
                    r.runs_before.to_string(),
                    r.runs_after.to_string(),
                ]);
            }
        }
        crate::render::csv_text(lines)
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("comparisons serialize")
    }
}

/// The note for runs of a group that stalled but are `kept` (fewer than two would remain
/// without them), `who` opening it (`Runs`, `before: runs`); `None` when there are none.
pub(crate) fn stalled_but_kept(
    samples: &[volley_stats::compare::RunSample],
    kept: &[usize],
    who: &str,
) -> Option<String> {
    let runs: Vec<String> = kept
        .iter()
        .filter(|&&i| samples.len() > 1 && samples[i].stalled())
        .map(|&i| format!("{} ({:.0} ms)", i + 1, samples[i].generator_lag_ms))
        .collect();
    (!runs.is_empty()).then(|| {
        format!(
            "{who} {} stalled (volley's own loop, more than {:.0} ms) but are kept, since fewer than two runs would remain: the group's figures hold volley's delay; run the group again on a quieter machine.",
            runs.join(", "),
            volley_stats::compare::STALL_MS
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A name from run.json is kept as written in the model (and its JSON); each renderer
    /// escapes it: no control character reaches the terminal, Markdown or the page.
    #[test]
    fn names_are_escaped_by_each_renderer_not_in_the_model() {
        let dir = tempfile::tempdir().unwrap();
        let evil = "evil\x1b[2J";
        let sets = [
            RunSet::single(crate::testrun::run(
                &dir.path().join("a"),
                evil,
                6,
                50,
                5,
                &[],
            )),
            RunSet::single(crate::testrun::run(
                &dir.path().join("b"),
                "b",
                6,
                50,
                5,
                &[],
            )),
        ];
        let cmp = build(&sets, &[], ReportOptions::default());
        assert_eq!(cmp.runs[0].label, evil);
        assert!(cmp.to_json().contains("evil\\u001b[2J"));
        let (t, m, h) = (cmp.table(), cmp.markdown(), cmp.doc().html());
        for form in [&t, &m, &h] {
            assert!(!form.contains('\x1b'), "{form}");
        }
        assert!(t.contains("evil\\u{1b}[2J"), "{t}");
    }

    /// Two step-ups (5, 10, 20 VUs) that differ only at 20 VUs, where the second serves
    /// twice as much: the per-level rows mark that level alone, and say why they are there.
    #[test]
    fn runs_with_the_same_levels_are_compared_level_by_level() {
        let dir = tempfile::tempdir().unwrap();
        let vus = crate::findings::tests::step_up();
        let a = crate::testrun::stepped(
            &dir.path().join("a"),
            &vus,
            |v| 10 * u64::from(v).min(10),
            20,
            &[],
        );
        let b =
            crate::testrun::stepped(&dir.path().join("b"), &vus, |v| 10 * u64::from(v), 20, &[]);
        let cmp = build(
            &[RunSet::single(a), RunSet::single(b)],
            &[],
            ReportOptions::default(),
        );
        let step = &cmp.steps[0];
        let names: Vec<&str> = step.per_level.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["5 VUs", "10 VUs", "20 VUs"]);
        let tps = |k: usize| {
            step.per_level[k]
                .rows
                .iter()
                .find(|r| r.key == "tps_avg")
                .unwrap()
                .clone()
        };
        assert_eq!(tps(0).verdict, volley_stats::compare::Verdict::Noise);
        assert_eq!(tps(1).verdict, volley_stats::compare::Verdict::Noise);
        assert_eq!(tps(2).verdict, volley_stats::compare::Verdict::Better);
        assert!((tps(2).change_pct - 100.0).abs() < 1e-9);
        assert!(
            step.notes
                .iter()
                .any(|n| n.starts_with("Both held the same levels (5 VUs, 10 VUs, 20 VUs)"))
        );
        let table = cmp.table();
        assert!(
            table
                .lines()
                .any(|l| l.starts_with("  20 VUs") && l.contains("TPS Average")),
            "{table}"
        );
        assert!(cmp.markdown().contains("## Per level:"));
        let csv = cmp.csv();
        let steps: Vec<String> = csv::Reader::from_reader(csv.as_bytes())
            .records()
            .map(|r| r.unwrap()[0].to_string())
            .collect();
        assert!(steps.iter().any(|s| s.ends_with(" / 20 VUs")), "{csv}");
        // The gate judges each level too: the second is better at 20 VUs, so reversed it is a
        // regression there, which fails the gate by that level's row.
        let back = build(
            &[
                RunSet::single(crate::testrun::stepped(
                    &dir.path().join("c"),
                    &vus,
                    |v| 10 * u64::from(v),
                    20,
                    &[],
                )),
                RunSet::single(crate::testrun::stepped(
                    &dir.path().join("d"),
                    &vus,
                    |v| 10 * u64::from(v).min(10),
                    20,
                    &[],
                )),
            ],
            &[],
            ReportOptions::default(),
        );
        // Runs of one level (no step-up) have no per-level rows.
        let flat = build(
            &[
                RunSet::single(crate::testrun::run(
                    &dir.path().join("e"),
                    "e",
                    10,
                    50,
                    5,
                    &[],
                )),
                RunSet::single(crate::testrun::run(
                    &dir.path().join("f"),
                    "f",
                    10,
                    90,
                    5,
                    &[],
                )),
            ],
            &[],
            ReportOptions::default(),
        );
        assert!(flat.steps[0].per_level.is_empty());
        let spec = crate::gate::GateSpec::parse(Some("tps_avg"), 0.0).unwrap();
        let gate = crate::gate::GateResult::evaluate(&back, &spec, false).unwrap();
        assert!(!gate.passed, "{}", gate.table());
        assert!(
            gate.table().contains("level 20 VUs: TPS Average"),
            "{}",
            gate.table()
        );
    }

    #[test]
    fn the_method_states_the_floor_the_statistics_use() {
        let floor = format!(
            "{} % for p99 and p99.9",
            volley_stats::compare::TAIL_FLOOR_PCT
        );
        assert!(METHOD.contains(&floor), "{METHOD}");
        assert!(SINGLE_RUN_CAVEAT.contains("--repeat"));
    }

    /// Two step-ups of one name, the first with its DB pool queueing from 10 VUs: the server's
    /// figures and each run's findings are in every form, and the runs are labelled apart.
    #[test]
    fn a_comparison_carries_the_server_and_tells_runs_of_one_name_apart() {
        let dir = tempfile::tempdir().unwrap();
        let vus = crate::findings::tests::step_up();
        let pending = "hikaricp_connections_pending";
        let busy = "tomcat_threads_busy_threads";
        let a = crate::testrun::stepped(
            &dir.path().join("a"),
            &vus,
            |v| 10 * u64::from(v),
            20,
            &[
                (1.5, pending, 0.0, false),
                (3.5, pending, 0.0, false),
                (6.5, pending, 2.0, false),
                (8.5, pending, 2.0, false),
                (12.5, pending, 3.0, false),
                (14.5, pending, 3.0, false),
                (6.5, busy, 8.0, false),
                (12.5, busy, 8.0, false),
            ],
        );
        let b = crate::testrun::stepped(
            &dir.path().join("b"),
            &vus,
            |v| 10 * u64::from(v),
            20,
            &[(6.5, pending, 0.0, false), (12.5, pending, 0.0, false)],
        );
        let cmp = build(
            &[RunSet::single(a), RunSet::single(b)],
            &[],
            ReportOptions::default(),
        );
        let (la, lb) = (&cmp.runs[0].label, &cmp.runs[1].label);
        assert!(
            la != lb && la.starts_with("stepped (") && lb.starts_with("stepped ("),
            "{la} {lb}"
        );
        let pool = cmp.runs[0]
            .server
            .iter()
            .find(|f| f.what == "pool pending")
            .unwrap();
        assert_eq!((pool.peak, pool.first.as_deref()), (3.0, Some("10 VUs")));
        let threads = cmp.runs[0]
            .server
            .iter()
            .find(|f| f.what == "busy threads")
            .unwrap();
        assert_eq!(
            (threads.peak, threads.first.as_deref()),
            (8.0, Some("10 VUs"))
        );
        let none = cmp.runs[1]
            .server
            .iter()
            .find(|f| f.what == "pool pending")
            .unwrap();
        assert_eq!((none.peak, none.first.as_deref()), (0.0, None));
        assert!(
            cmp.runs[0].findings.iter().any(|f| f.contains("DB pool")),
            "{:?}",
            cmp.runs[0].findings
        );
        let doc = cmp.doc();
        let server = doc.sections.iter().find(|s| s.id == "server").unwrap();
        assert_eq!(server.title, format!("Server: {la} → {lb}"));
        let found = doc.sections.iter().find(|s| s.id == "findings").unwrap();
        assert_eq!(found.title, "What each phase found");
        let (t, m, h) = (doc.terminal(), doc.markdown(), doc.html());
        for w in [
            "What each phase found",
            "pool pending",
            "busy threads",
            "10 VUs",
        ] {
            assert!(t.contains(w) && m.contains(w) && h.contains(w), "{w}");
        }
        assert!(
            t.lines().any(|l| l.starts_with("  pool pending")
                && l.contains("3")
                && l.contains("10 VUs")),
            "{t}"
        );
        assert!(cmp.to_json().contains("\"first\": \"10 VUs\""));
        // Given labels are kept as given.
        let named = build(
            &[
                RunSet::single(crate::testrun::run(
                    &dir.path().join("c"),
                    "r",
                    6,
                    20,
                    5,
                    &[],
                )),
                RunSet::single(crate::testrun::run(
                    &dir.path().join("d"),
                    "r",
                    6,
                    20,
                    5,
                    &[],
                )),
            ],
            &["before".into(), "after".into()],
            ReportOptions::default(),
        );
        assert_eq!(named.steps[0].before, "before");
    }

    /// An open-model run against a closed-model one is said, first and under its table.
    #[test]
    fn unlike_load_models_are_said() {
        let dir = tempfile::tempdir().unwrap();
        let closed = crate::testrun::run(&dir.path().join("c"), "closed", 6, 20, 5, &[]);
        let mut open = crate::testrun::run(&dir.path().join("o"), "open", 6, 20, 5, &[]);
        let mut load = volley_scenario::LoadSpec::default();
        load.set("rate", "20").unwrap();
        load.duration = Some(std::time::Duration::from_secs(6));
        open.meta.as_mut().unwrap().plan.load = load.resolve().unwrap();
        let cmp = build(
            &[RunSet::single(open), RunSet::single(closed.clone())],
            &[],
            ReportOptions::default(),
        );
        let note = cmp.steps[0]
            .notes
            .iter()
            .find(|n| n.starts_with(UNLIKE_MODELS))
            .expect("the models are said");
        assert!(
            note.contains("open ran an open model") && note.contains("closed a closed model"),
            "{note}"
        );
        let t = cmp.table();
        assert!(
            t.find(UNLIKE_MODELS).unwrap() < t.find("TPS Average").unwrap(),
            "{t}"
        );
        // Two closed runs say nothing of it.
        let alike = build(
            &[RunSet::single(closed.clone()), RunSet::single(closed)],
            &[],
            ReportOptions::default(),
        );
        assert!(!alike.table().contains(UNLIKE_MODELS));
    }
}
