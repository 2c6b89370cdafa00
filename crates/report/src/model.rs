//! What a report holds; serialized as `report.json`.

use serde::Serialize;

pub use crate::causes::ErrorLine;
use crate::inputs::readable;
pub use crate::inputs::{ReportOptions, check_warmup, warmup_seconds};
use volley_formats::{Figure, Format, HistKey, HistMetric, InputNote, Source};
use volley_scenario::Warmup;
use volley_stats::{ErrorKind, LatencySummary, SeedSuite, SuiteOptions};

/// Version of the `report.json` layout; bumped when a field changes meaning or goes away.
pub const SCHEMA_VERSION: u32 = 1;

/// Everything a report shows.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// [`SCHEMA_VERSION`].
    pub schema: u32,
    /// Run name.
    pub name: String,
    /// Where the figures came from (a directory or a file).
    pub source: String,
    /// The format it was read as; shown (and serialized) as its label (`volley`,
    /// `ngrinder`, `k6-csv`, ...).
    pub format: Format,
    /// running | complete | interrupted | aborted, or `imported`.
    pub status: String,
    /// Why it stopped early.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When it started, as recorded.
    pub started_at: String,
    /// Sampling interval, s.
    pub interval_s: f64,
    /// Seconds excluded from the start.
    pub warmup_s: f64,
    /// Seconds covered by the figures.
    pub measured_s: f64,
    /// The seed suite over the per-interval series.
    pub seed_suite: SeedSuite,
    /// `closed` or `open` for volley runs; empty for imports.
    pub model: String,
    /// Open model: how the arrivals were spaced (`even`, `poisson (seed 1)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<String>,
    /// Per-request figures (absent when the source has only per-interval data).
    pub per_request: PerRequest,
    /// The load generator's own health (volley runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generator: Option<Generator>,
    /// The suite of each test id or step, when the source has several.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_test: Vec<TestSuite>,
    /// Peaks of the server series that point at bottlenecks (runs with `--server-metrics`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub server: Vec<ServerPeak>,
    /// The levels of VUs the run held, one row each (a step-up's table).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<crate::levels::Level>,
    /// The ramp's saturation point (runs whose VUs change).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saturation: Option<volley_stats::knee::Saturation>,
    /// The run's pass/fail criteria and how they came out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<ThresholdResult>,
    /// Plain-language findings about bottlenecks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
    /// What the watched Kubernetes workload did (runs with `--kube`): the cluster's findings
    /// as numbers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<crate::cluster::Cluster>,
    /// Errors by kind.
    pub errors: Vec<ErrorLine>,
    /// What the reader did with input it could not take as it stood (rows skipped or used
    /// out of order, a record cut off at the end, figures the source cannot give), as
    /// records; each is also one of the `notes`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub input_notes: Vec<InputNote>,
    /// Changes of plan made while the run went (the dashboard's VU or rate control).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub plan_changes: Vec<volley_formats::rundir::PlanChangeNote>,
    /// Things a reader must know to read the figures right.
    pub notes: Vec<String>,
    /// A run of populations (a scenario file's `scenarios:`): each population's own report;
    /// this report's figures are their total.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub populations: Vec<PopulationReport>,
}

/// One population of a run, reported as a run of its own.
#[derive(Debug, Clone, Serialize)]
pub struct PopulationReport {
    /// Its name.
    pub name: String,
    /// `closed` or `open`.
    pub model: String,
    /// When it started, s from the start of the run.
    pub start_s: f64,
    /// Its figures (its warm-up is the run's, or until it started when that is later).
    pub report: RunReport,
}

impl PopulationReport {
    /// The reports of `src`'s populations, each after the run's warm-up `warmup_s` or its
    /// own start, whichever is later (so its figures cover only the time it ran).
    fn of(src: &Source, warmup_s: f64, opts: ReportOptions) -> Vec<PopulationReport> {
        src.populations
            .iter()
            .map(|p| {
                let note = p.meta.as_ref().and_then(|m| m.population.as_ref());
                let start_s = note.map_or(0.0, |n| n.start_s);
                let model = note.map_or("", |n| n.load.kind()).to_string();
                let opts = ReportOptions {
                    warmup: Some(Warmup::Time(std::time::Duration::from_secs_f64(
                        warmup_s.max(start_s),
                    ))),
                    ..opts
                };
                PopulationReport {
                    name: p.name.clone(),
                    model,
                    start_s,
                    report: RunReport::from_source(p, opts),
                }
            })
            .collect()
    }
}

/// Per-request latency summaries.
#[derive(Debug, Clone, Serialize, Default)]
pub struct PerRequest {
    /// Time to first byte, connection set-up included; in open-model runs from each
    /// arrival's due time (corrected for coordinated omission).
    pub ttfb_ms: Option<LatencySummary>,
    /// Total time to the end of the body (from the due time in open-model runs).
    pub total_ms: Option<LatencySummary>,
    /// Open model: time to first byte from the actual send (uncorrected).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttfb_actual_ms: Option<LatencySummary>,
    /// Open model: total time from the actual send (uncorrected).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_actual_ms: Option<LatencySummary>,
    /// Scenarios: whole iterations that ran through every step (think times included).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iteration_ms: Option<LatencySummary>,
    /// Requests with no response when the run's grace period ended: how long they had
    /// waited (a lower bound of their latency; they are errors of kind `unfinished`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unfinished_ms: Option<LatencySummary>,
    /// Failed requests: how long each took until it failed (refusals fail in milliseconds,
    /// a wait that timed out at its timeout); absent for runs that recorded none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_ms: Option<LatencySummary>,
    /// Shared connections (`--connections`): each request's wait for a connection or a
    /// stream, kept out of its TTFB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_wait_ms: Option<LatencySummary>,
}

/// What the load generator itself went through.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct Generator {
    /// Open model: arrivals never sent (they waited longer than the timeout, or the run ended).
    pub dropped: u64,
    /// Open model: arrivals sent late because every VU was busy.
    pub late: u64,
    /// The generator's largest own delay, ms: between an arrival's due time and its dispatch
    /// (open model), or of a worker's event loop waking from a 10 ms sleep (closed model).
    pub sched_lag_max_ms: f64,
    /// Open model: the delay of every arrival's dispatch, from its due time to the moment
    /// the generator took it up (the generator's own lag, not the wait for a free VU,
    /// which is `late`); absent for runs that recorded no such histogram.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sched_lag_ms: Option<LatencySummary>,
    /// Highest CPU use in an interval, % of the generator's cores.
    pub cpu_max_pct: f64,
    /// Intervals in which the generator was behind schedule by more than 10 ms (open
    /// model), or stalled for more than 100 ms (closed model).
    pub behind_intervals: usize,
    /// Intervals in which the generator used more than 90 % of its cores.
    pub saturated_intervals: usize,
}

/// Dispatch delay beyond which an open model's generator counts as behind schedule, ms.
const BEHIND_MS: f64 = 10.0;
/// CPU use beyond which the generator counts as saturated, %.
const SATURATED_PCT: f64 = 90.0;

impl RunReport {
    /// The report of any opened result.
    pub fn from_source(src: &Source, opts: ReportOptions) -> RunReport {
        let warmup_s = warmup_seconds(src, opts.warmup);
        let suite_opts = SuiteOptions {
            tps_tail: opts.tps_tail,
        };
        let series = src.series.after_warmup(warmup_s);
        let seed_suite = unavailable(src, SeedSuite::compute(&series, suite_opts));
        let first_kept = src.series.intervals.len() - series.intervals.len();
        let errors = error_lines(src, first_kept);
        let mut notes = src.notes.clone();
        notes.extend(src.input_notes.iter().map(ToString::to_string));
        if let Some(n) = errors.iter().find(|e| e.kind == ErrorKind::NotSent.name()) {
            notes.push(format!(
                "{} scenario steps could not be built (a template, URL or header failed) and were never sent (`not_sent`): they count neither as tests nor as errors.",
                n.count
            ));
        }
        if warmup_s > 0.0 {
            notes.push(format!(
                "The first {warmup_s} s (warm-up, {}) are excluded from every figure.",
                volley_scenario::words::counted(first_kept, "interval")
            ));
        }
        let unreadable: Vec<_> = src.server.iter().filter(|p| !readable(p)).collect();
        if let Some(p) = unreadable.first() {
            notes.push(format!(
                "{} readings in server.csv are values no server can have (first: `{} = {}` at {} s): no peak or finding reads them.",
                unreadable.len(),
                p.series,
                p.value,
                p.elapsed_s
            ));
        }
        for s in src.meta.iter().flat_map(|m| &m.server_metrics) {
            notes.extend(s.notes.iter().map(|n| series_note(&s.url, n)));
            if s.failed > 0 {
                notes.push(format!(
                    "{} of {} scrapes of {} failed{}: the server readings have gaps there, and no finding is made about a level without readings. A scrape on the application's own port waits for a worker thread and a connection like any request; scrape a management port (Spring Boot: management.server.port) to read the server while it is saturated.",
                    s.failed,
                    s.failed + s.ok,
                    s.url,
                    s.last_error
                        .as_ref()
                        .map(|e| format!(" (last: {e})"))
                        .unwrap_or_default()
                ));
            }
        }
        if seed_suite.variability_zero_intervals > 0 && src.unavailable(Figure::Ttfb).is_none() {
            notes.push(format!(
                "{} with no successful request (MTTFB 0) {} left out of the variability.",
                volley_scenario::words::counted(seed_suite.variability_zero_intervals, "interval"),
                if seed_suite.variability_zero_intervals == 1 {
                    "is"
                } else {
                    "are"
                }
            ));
        }
        let nominal = series.nominal_interval_s();
        // The drain after the stop: rows of no length at the end (drain.csv, or the end of
        // series.csv in a run directory written before drain.csv).
        let timed = series.measured_rows();
        let drain = &series.intervals[timed..];
        if !drain.is_empty() {
            let (t, e): (u64, u64) = drain
                .iter()
                .fold((0, 0), |(t, e), r| (t + r.tests, e + r.errors));
            // Where the run directory keeps it: drain.csv, or (written before it) series.csv.
            let drain_csv = volley_formats::rundir::DRAIN_CSV;
            let kept = if src.path.join(drain_csv).is_file() {
                drain_csv
            } else {
                "the last row of series.csv"
            };
            notes.push(format!(
                "Total Tests include {} that completed in the grace period after the stop ({t} succeeded, {e} failed; {kept}): they count in the totals, the error rate and the per-request latencies, and in no per-interval figure (TPS, MTTFB), which are of the measured intervals.",
                volley_scenario::words::counted(t + e, "request")
            ));
        }
        if let Some(last) = series.intervals[..timed]
            .last()
            .filter(|l| l.period_s < nominal * 0.999)
        {
            notes.push(format!(
                "The last interval is partial ({:.2} s of {nominal} s); its TPS is per second of that part.",
                last.period_s
            ));
        }
        let closed_model = src.meta.as_ref().is_none_or(|m| m.plan.model() == "closed");
        if src.format == Format::Volley && src.has_histograms() && closed_model {
            // gRPC channels connect on their first call and are reused (docs/grpc.md).
            let steps = src.meta.iter().flat_map(|m| &m.steps);
            let grpc = |s: &volley_scenario::StepInfo| s.kind == volley_scenario::StepKind::Grpc;
            let note = match (steps.clone().any(grpc), steps.clone().all(grpc)) {
                (false, _) => {
                    "TTFB and MTTFB are measured from the request's actual start, connection set-up included (as nGrinder does)."
                }
                (true, true) => {
                    "TTFB and MTTFB are measured from each gRPC call's start; connection set-up is not included, except in the first call on each connection (connections are opened on first use, then reused)."
                }
                (true, false) => {
                    "TTFB and MTTFB are measured from the request's actual start, connection set-up included (as nGrinder does); for gRPC calls it is not, except in the first call on each connection (connections are opened on first use, then reused)."
                }
            };
            notes.push(note.to_string());
        }
        if src.format == Format::Ngrinder {
            notes.push("This file has only per-interval means: per-request percentiles are not available from it.".to_string());
        }
        let steps = src
            .meta
            .as_ref()
            .map(|m| m.steps.as_slice())
            .unwrap_or_default();
        let per_test = src
            .per_test
            .iter()
            .enumerate()
            .map(|(i, (name, s))| {
                let step = steps.get(i);
                TestSuite {
                    name: name.clone(),
                    kind: step.map(|s| s.kind.name().to_string()),
                    seed_suite: unavailable(
                        src,
                        SeedSuite::compute(&s.after_warmup(warmup_s), suite_opts),
                    ),
                    ttfb_ms: src.latency(HistKey::step(HistMetric::Ttfb, i), warmup_s),
                    total_ms: src.latency(HistKey::step(HistMetric::Total, i), warmup_s),
                    events: src
                        .step_events
                        .get(i)
                        .map_or(0, |e| e.iter().skip(first_kept).sum()),
                }
            })
            .collect();
        let varies = || {
            series
                .intervals
                .windows(2)
                .any(|w| (w[0].vusers - w[1].vusers).abs() >= 1.0)
        };
        // A total of populations sums VUs of different flows and models: no knee to read
        // from it (each population's report has its own). Only a volley run's VUs are looked
        // through (an imported series may be millions of rows).
        let levels = if src.format == Format::Volley && src.populations.is_empty() {
            crate::levels::of(src, opts)
        } else {
            Vec::new()
        };
        // The knee is read on the levels the plan held when it held three or more (a step-up
        // of 5/10/20/40 VUs is four levels, not ten bins of equal width that merge two of
        // them into one that never ran), else on the ramp's VUs binned.
        let saturation = (src.format == Format::Volley
            && src.populations.is_empty()
            && crate::levels::vus_are_the_load(src)
            && varies())
        .then(|| {
            let planned = crate::levels::planned(src, opts);
            if planned.len() >= 3 {
                volley_stats::knee::saturation_of(
                    planned
                        .iter()
                        .map(crate::levels::Level::load_level)
                        .collect(),
                )
            } else {
                volley_stats::knee::saturation(&series)
            }
        });
        let server = server_peaks(src, warmup_s);
        let meta = src.meta.as_ref();
        let model = meta.map(|m| m.plan.model()).unwrap_or_default().to_string();
        let open = model == "open";
        let generator = generator(src, first_kept, warmup_s, open);
        if let Some(g) = &generator {
            let mut what = Vec::new();
            if g.behind_intervals > 0 {
                what.push(if open {
                    format!(
                        "behind schedule (> {BEHIND_MS} ms) in {}",
                        volley_scenario::words::counted(g.behind_intervals, "interval")
                    )
                } else {
                    format!(
                        "stalled (its event loop woke more than {} ms late) in {}",
                        volley_stats::compare::STALL_MS,
                        volley_scenario::words::counted(g.behind_intervals, "interval")
                    )
                });
            }
            if g.saturated_intervals > 0 {
                what.push(format!(
                    "above {SATURATED_PCT} % CPU in {}",
                    volley_scenario::words::counted(g.saturated_intervals, "interval")
                ));
            }
            if !what.is_empty() {
                notes.push(format!(
                    "The load generator was {}: latencies measured then include volley's own delay and are not trustworthy.",
                    what.join(" and ")
                ));
            }
            if g.dropped > 0 || g.late > 0 {
                notes.push(format!(
                    "{} arrivals waited for a free VU and were sent late (measured from their due time); {} were never sent (dropped). Raise --max-vus to keep up.",
                    g.late, g.dropped
                ));
            }
        }
        let plan_changes = meta.map(|m| m.plan_changes.clone()).unwrap_or_default();
        if !plan_changes.is_empty() {
            notes.push(format!(
                "The plan was changed while the run went, from then on until its end: {}.",
                plan_changes
                    .iter()
                    .map(|c| c.describe())
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
        let failed = src.latency(HistKey::FAILED, warmup_s);
        // How the arrivals were spaced: every report of an open-model run says it, since
        // even spacing hides the queues bursty traffic meets below a target's limit.
        let arrivals = meta
            .filter(|m| m.plan.load.is_open())
            .map(|m| m.plan.load.arrivals.label());
        if let Some(a) = &arrivals {
            notes.push(format!(
                "Open model: arrivals {a}{}.",
                if a == "even" {
                    " (evenly spaced; --arrivals poisson spaces them as independent users arrive)"
                } else {
                    " (exponential gaps, as independent users arrive)"
                }
            ));
        }
        if meta.is_some_and(|m| m.plan.load.is_open() && !m.plan.load.arrival_wait.is_sleep()) {
            notes.push("Open model: each worker waited for its arrivals by spinning (--arrival-wait spin): never asleep, a whole core per worker thread, for less schedule lag.".to_string());
        }
        if model == "open" {
            notes.push("Open model: TTFB and total time are measured from each arrival's due time (corrected for coordinated omission); the `actual` rows measure from the actual send, as an uncorrected tool would.".to_string());
        }
        let cluster = crate::cluster::of(src, &levels, warmup_s);
        let mut report = RunReport {
            schema: SCHEMA_VERSION,
            name: src.name.clone(),
            source: src.path.display().to_string(),
            format: src.format,
            status: meta.map_or("imported".to_string(), |m| m.status.name().to_string()),
            reason: meta.and_then(|m| m.reason.clone()),
            started_at: meta.map(|m| m.started_at.clone()).unwrap_or_default(),
            interval_s: meta.map_or(nominal, |m| m.interval_s),
            warmup_s,
            measured_s: series.measured_s(),
            seed_suite,
            model,
            arrivals,
            findings: {
                // The errors' causes first: errors are what failed.
                let mut f = crate::causes::of(src, warmup_s, &levels, failed.as_ref(), &errors);
                // The cluster's causes of errors beside the errors' causes.
                f.extend(cluster.iter().flat_map(|(_, text)| text.iter().cloned()));
                f.extend(crate::findings::of(
                    src,
                    warmup_s,
                    &levels,
                    saturation.as_ref(),
                ));
                f
            },
            cluster: cluster.map(|(c, _)| c),
            levels,
            per_request: PerRequest {
                ttfb_ms: src.latency(HistKey::TTFB, warmup_s),
                total_ms: src.latency(HistKey::TOTAL, warmup_s),
                ttfb_actual_ms: src.latency(HistKey::TTFB_ACTUAL, warmup_s),
                total_actual_ms: src.latency(HistKey::TOTAL_ACTUAL, warmup_s),
                iteration_ms: src.latency(HistKey::ITERATION, warmup_s),
                unfinished_ms: src.latency(HistKey::UNFINISHED, warmup_s),
                failed_ms: failed,
                pool_wait_ms: src.latency(HistKey::POOL_WAIT, warmup_s),
            },
            generator,
            per_test,
            server,
            saturation,
            errors,
            input_notes: src.input_notes.clone(),
            plan_changes,
            notes,
            thresholds: Vec::new(),
            populations: PopulationReport::of(src, warmup_s, opts),
        };
        if !report.populations.is_empty() {
            let each: Vec<String> = report
                .populations
                .iter()
                .map(|p| format!("{} ({}, from {} s)", p.name, p.model, p.start_s))
                .collect();
            report.notes.push(format!(
                "Populations run side by side: {}. The figures above are their total (every request of every population); each has its own row and report below{}.",
                each.join(", "),
                if report.model == "mixed" { " — the total's latencies mix open-model requests (from their due time) and closed-model ones (from their actual start)" } else { "" }
            ));
        }
        // The saturation finding points at the level row it read, where the run held levels.
        if let (Some(s), Some(at)) = (
            &report.saturation,
            report.saturation.as_ref().and_then(|s| s.saturated_at),
        ) && let Some(load) = s.levels.get(at).map(|l| l.load)
            && let Some(row) = report
                .levels
                .iter()
                .position(|l| (l.vusers - load).abs() < 0.5)
            && let Some(f) = report.findings.iter_mut().find(|f| **f == s.finding)
        {
            f.push_str(&format!(
                " (row {} of the Levels table: {:.0} VUs)",
                row + 1,
                load
            ));
        }
        let criteria = meta
            .map(|m| m.plan.thresholds.as_slice())
            .unwrap_or_default();
        report.thresholds = criteria.iter().map(|t| judge(t, &report)).collect();
        report
    }

    /// Requests that completed successfully.
    pub fn completed(&self) -> u64 {
        self.seed_suite
            .total_tests
            .saturating_sub(self.seed_suite.errors)
    }

    /// Why this run fails as a whole, one sentence each; empty when it passes. A run fails
    /// when volley had to stop it, when no request succeeded in its measured time (whatever
    /// its thresholds say: a run of 404s has no figure worth passing), or when a threshold
    /// failed. `run`, `merge`, `sweep` and the JUnit file all judge by this.
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.status == volley_formats::RunStatus::Aborted.name() {
            out.push(format!(
                "volley stopped the run: {}",
                self.reason.as_deref().unwrap_or("it was aborted")
            ));
        }
        out.extend(self.nothing_succeeded());
        let failed: Vec<String> = self
            .thresholds
            .iter()
            .filter(|t| !t.passed)
            .map(|t| format!("{} (read {})", t.expr, t.read()))
            .collect();
        if !failed.is_empty() {
            out.push(format!("thresholds failed: {}", failed.join("; ")));
        }
        out
    }

    /// Why the run fails for want of a single successful request, with what to do about it;
    /// `None` when one succeeded.
    pub fn nothing_succeeded(&self) -> Option<String> {
        if self.completed() > 0 {
            return None;
        }
        let total = self.seed_suite.total_tests;
        if total == 0 {
            let when = if self.status == volley_formats::RunStatus::Interrupted.name() {
                "the run was interrupted before any request ended in its measured time"
            } else {
                "none ended in the measured time (after the warm-up)"
            };
            return Some(format!("no request succeeded: {when}"));
        }
        let kinds: Vec<String> = self
            .errors
            .iter()
            .filter(|e| e.count > 0)
            .map(|e| match e.messages.first() {
                Some(m) => format!("{} {} ({})", e.count, e.kind, m),
                None => format!("{} {}", e.count, e.kind),
            })
            .collect();
        let mut s = format!("no request succeeded: all {total} failed");
        if !kinds.is_empty() {
            s.push_str(&format!(" — {}", kinds.join(", ")));
        }
        if self
            .errors
            .iter()
            .any(|e| e.kind == "status" && e.count > 0)
        {
            s.push_str(
                "; if these statuses are what the target should answer, name them with \
                 --expect-status (or expect_status: in the scenario)",
            );
        }
        Some(s)
    }

    /// Why `figure` is not available from this report's source, when it is not.
    pub fn unavailable(&self, figure: Figure) -> Option<&str> {
        self.input_notes.iter().find_map(|n| match n {
            InputNote::Unavailable { figure: f, why } if *f == figure => Some(why.as_str()),
            _ => None,
        })
    }

    /// Whether every threshold passed (true when there are none).
    pub fn thresholds_passed(&self) -> bool {
        self.thresholds.iter().all(|t| t.passed)
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("reports serialize")
    }
}

/// The suite of one test id or step.
#[derive(Debug, Clone, Serialize)]
pub struct TestSuite {
    /// Its name or description.
    pub name: String,
    /// Scenario steps: `http`, `sse` or `websocket`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Its figures.
    pub seed_suite: SeedSuite,
    /// Per-request time to first byte (scenario steps): the response head; for a
    /// WebSocket, the completed upgrade.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttfb_ms: Option<LatencySummary>,
    /// Per-request total time (scenario steps): for an event stream, the time to its
    /// first event; for a WebSocket, to the expected message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_ms: Option<LatencySummary>,
    /// Event-stream events or WebSocket messages received.
    #[serde(skip_serializing_if = "is_zero")]
    pub events: u64,
}

/// `suite` with the figures `src` cannot give set to n/a (NaN), not to what a missing
/// column would read as (0): the metric table says which figures each needs.
fn unavailable(src: &Source, suite: SeedSuite) -> SeedSuite {
    volley_stats::metric::without(suite, |f| src.unavailable(f).is_some())
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

fn error_lines(src: &Source, first_kept: usize) -> Vec<ErrorLine> {
    let mut errors = Vec::new();
    for kind in ErrorKind::ALL {
        let count: u64 = src
            .errors_by_kind
            .iter()
            .skip(first_kept)
            .map(|e| e[kind.index()])
            .sum();
        if count > 0 {
            let messages = src
                .meta
                .iter()
                .flat_map(|m| m.errors.iter())
                .find(|n| n.kind == kind)
                .map(|n| n.messages.iter().map(ToString::to_string).collect())
                .unwrap_or_default();
            errors.push(ErrorLine {
                kind: kind.name().to_string(),
                count,
                messages,
            });
        }
    }
    errors
}

fn generator(src: &Source, first_kept: usize, warmup_s: f64, open: bool) -> Option<Generator> {
    if src.generator.is_empty() {
        return None;
    }
    // An open model's dispatch lag against its schedule; a closed model's event-loop lag,
    // which a busy machine pushes past 10 ms often, counts only as a stall.
    let behind_ms = if open {
        BEHIND_MS
    } else {
        volley_stats::compare::STALL_MS
    };
    let kept = &src.generator[first_kept.min(src.generator.len())..];
    Some(Generator {
        dropped: kept.iter().map(|g| g.dropped).sum(),
        late: kept.iter().map(|g| g.late).sum(),
        sched_lag_max_ms: kept.iter().map(|g| g.sched_lag_max_ms).fold(0.0, f64::max),
        sched_lag_ms: src.latency(HistKey::SCHED_LAG, warmup_s),
        cpu_max_pct: kept.iter().map(|g| g.cpu_pct).fold(0.0, f64::max),
        behind_intervals: kept
            .iter()
            .filter(|g| g.sched_lag_max_ms > behind_ms)
            .count(),
        saturated_intervals: kept.iter().filter(|g| g.cpu_pct > SATURATED_PCT).count(),
    })
}

/// A sentence for readings of `url` that server.csv does not hold as read.
fn series_note(url: &str, n: &volley_formats::rundir::SeriesNote) -> String {
    let what = match n.kind.as_str() {
        "left_out" => format!("{} readings of {url} were left out of server.csv", n.count),
        "marked" => format!(
            "{} readings of {url} were marked and not used (no peak, no finding)",
            n.count
        ),
        "reset" => format!("{} times a rate of {url} was not taken", n.count),
        other => format!("{} readings of {url} were {other}", n.count),
    };
    format!(
        "{what}: {} (first: `{}` at {} s).",
        n.why, n.first, n.first_s
    )
}

/// Series that point at a bottleneck, by name prefix: connection pools, worker threads,
/// CPU, garbage collection, heap.
pub const KEY_SERVER_SERIES: [&str; 11] = [
    "hikaricp_connections_pending",
    "hikaricp_connections_active",
    "tomcat_threads_busy_threads",
    "tomcat_threads_config_max_threads",
    "tomcat_connections_current_connections",
    "jvm_threads_live_threads",
    "process_cpu_usage",
    "system_cpu_usage",
    "jvm_gc_pause_seconds_count",
    "jvm_gc_pause_seconds_sum",
    "jvm_memory_used_bytes{area=\"heap\"",
];

/// One key server series at its peak, and the load at that moment.
#[derive(Debug, Clone, Serialize)]
pub struct ServerPeak {
    /// `name{labels}`.
    pub series: String,
    /// Per second (`rate`) or as scraped.
    pub kind: String,
    /// Highest value.
    pub peak: f64,
    /// When, s from the start.
    pub at_s: f64,
    /// VUs in force at the peak (those of the series row the reading is credited to).
    pub vusers: f64,
    /// TPS in the interval of the peak.
    pub tps: f64,
    /// First time the value was above zero, s (for queues such as the pool's pending count).
    pub first_nonzero_s: Option<f64>,
    /// VUs in force at that first time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_nonzero_vusers: Option<f64>,
}

fn server_peaks(src: &Source, warmup_s: f64) -> Vec<ServerPeak> {
    let mut peaks: Vec<ServerPeak> = Vec::new();
    let rows = &src.series.intervals;
    let mut averaged = Vec::new();
    for p in &src.server {
        if !KEY_SERVER_SERIES.iter().any(|k| p.series.starts_with(k)) || !readable(p) {
            continue;
        }
        if p.reaches_before_the_run(&mut averaged) {
            continue;
        }
        // The load beside a reading is that of the row it is credited to (one time axis),
        // and the warm-up leaves out the readings of its rows, as it leaves out the rows.
        let Some(row) = p.row(rows).map(|i| &rows[i]) else {
            continue;
        };
        if row.start_s + 1e-9 < warmup_s || row.period_s <= 0.0 {
            continue;
        }
        let row = Some(row);
        let (vusers, tps) = row.map_or((0.0, 0.0), |r| (r.vusers, r.tps));
        match peaks.iter_mut().find(|k| k.series == p.series) {
            Some(k) => {
                if p.value > k.peak {
                    (k.peak, k.at_s, k.vusers, k.tps) = (p.value, p.elapsed_s, vusers, tps);
                }
                if p.value > 0.0 && k.first_nonzero_s.is_none() {
                    k.first_nonzero_s = Some(p.elapsed_s);
                    k.first_nonzero_vusers = Some(vusers);
                }
            }
            None => peaks.push(ServerPeak {
                series: p.series.clone(),
                kind: if p.rate {
                    "rate".into()
                } else {
                    "gauge".into()
                },
                peak: p.value,
                at_s: p.elapsed_s,
                vusers,
                tps,
                first_nonzero_s: (p.value > 0.0).then_some(p.elapsed_s),
                first_nonzero_vusers: (p.value > 0.0).then_some(vusers),
            }),
        }
    }
    peaks
}

/// One threshold and how it came out.
#[derive(Debug, Clone, Serialize)]
pub struct ThresholdResult {
    /// As written.
    pub expr: String,
    /// The figure it read (`null` when the run has no such figure).
    pub actual: f64,
    /// The unit of `actual`: ` %`, ` ms`, `/s`.
    pub unit: &'static str,
    /// Whether it held; a missing figure fails.
    pub passed: bool,
}

impl ThresholdResult {
    /// The figure it read, in its unit: `94.97 %`, `212.30 ms`, `n/a`.
    pub fn read(&self) -> String {
        if self.actual.is_finite() {
            format!("{:.2}{}", self.actual, self.unit)
        } else {
            "n/a".to_string()
        }
    }
}

/// A threshold of the run: of its total, or of one of its populations.
fn judge(t: &volley_scenario::Threshold, r: &RunReport) -> ThresholdResult {
    let Some(name) = &t.population else {
        return evaluate(t, r);
    };
    let expr = match &t.step {
        Some(step) => format!(
            "{}: {}",
            volley_scenario::qualified_step(name, step),
            t.local_expr()
        ),
        None => t.expr.clone(),
    };
    match r.populations.iter().find(|p| p.name == *name) {
        Some(p) => {
            let local = volley_scenario::Threshold {
                expr: t.local_expr().to_string(),
                population: None,
                ..t.clone()
            };
            ThresholdResult {
                expr,
                ..evaluate(&local, &p.report)
            }
        }
        // A population the run did not record (its directory is gone) fails.
        None => ThresholdResult {
            expr,
            actual: f64::NAN,
            unit: t.metric.unit(),
            passed: false,
        },
    }
}

fn evaluate(t: &volley_scenario::Threshold, r: &RunReport) -> ThresholdResult {
    let step = t
        .step
        .as_ref()
        .and_then(|name| r.per_test.iter().find(|p| p.name == *name));
    let expr = match &t.step {
        Some(name) => format!("{name}: {}", t.expr),
        None => t.expr.clone(),
    };
    if t.step.is_some() && step.is_none() {
        return ThresholdResult {
            expr,
            actual: f64::NAN,
            unit: t.metric.unit(),
            passed: false,
        };
    }
    let s = step.map_or(&r.seed_suite, |p| &p.seed_suite);
    let (ttfb, total) = match step {
        Some(p) => (&p.ttfb_ms, &p.total_ms),
        None => (&r.per_request.ttfb_ms, &r.per_request.total_ms),
    };
    let actual = threshold_actual(t, s, ttfb, total, &r.per_request.iteration_ms);
    ThresholdResult {
        expr,
        actual,
        unit: t.metric.unit(),
        passed: actual.is_finite() && t.op.holds(actual, t.limit),
    }
}

/// Statistic `stat` of a per-request latency summary, ms: NaN for one a latency has not
/// ([`volley_scenario::threshold::Stat::Value`], which `parse_threshold` refuses for it). The
/// one reading of a summary by a threshold's statistic, for reports, the live page and
/// capacity probes alike.
pub fn latency_stat(l: &LatencySummary, stat: volley_scenario::threshold::Stat) -> f64 {
    use volley_scenario::threshold::Stat;
    match stat {
        Stat::Mean | Stat::Avg => l.mean_ms,
        Stat::P50 => l.p50_ms,
        Stat::P90 => l.p90_ms,
        Stat::P95 => l.p95_ms,
        Stat::P99 => l.p99_ms,
        Stat::P99_9 => l.p99_9_ms,
        Stat::P99_99 => l.p99_99_ms,
        Stat::Max => l.max_ms,
        Stat::Value => f64::NAN,
    }
}

/// The figure threshold `t` reads, from the suite and latencies of the run (or of its step):
/// one reading for the report and for the live dashboard. NaN when the figure is missing.
pub fn threshold_actual(
    t: &volley_scenario::Threshold,
    s: &SeedSuite,
    ttfb: &Option<LatencySummary>,
    total: &Option<LatencySummary>,
    iteration: &Option<LatencySummary>,
) -> f64 {
    use volley_scenario::threshold::Metric;
    // Suite figures by the metric table's `threshold`; per-request ones from their summary.
    // A statistic its figure does not have (parse_threshold refuses those) reads NaN, which
    // no comparison passes.
    let latency =
        |l: &Option<LatencySummary>| l.as_ref().map_or(f64::NAN, |l| latency_stat(l, t.stat));
    match t.metric {
        Metric::ErrorRate | Metric::Tps | Metric::Mttfb => {
            volley_stats::metric::for_threshold(t.metric.name(), t.stat.name())
                .map_or(f64::NAN, |m| (m.value)(s, None))
        }
        Metric::Ttfb => latency(ttfb),
        Metric::Total => latency(total),
        Metric::Iteration => latency(iteration),
    }
}

#[cfg(test)]
mod tests {
    use volley_scenario::threshold::Metric;

    /// Every suite statistic a threshold may name reads a metric of the table, and every
    /// metric the table gives a threshold can be written as one.
    #[test]
    fn thresholds_and_the_metric_table_name_the_same_figures() {
        for figure in [Metric::ErrorRate, Metric::Tps, Metric::Mttfb] {
            for stat in figure.stats() {
                assert!(
                    volley_stats::metric::for_threshold(figure.name(), stat.name()).is_some(),
                    "{} {stat}",
                    figure.name()
                );
            }
        }
        for m in volley_stats::METRICS {
            if let Some((figure, stat)) = m.threshold {
                let limit = match figure {
                    "error_rate" => "1%",
                    "tps" => "1",
                    _ => "1ms",
                };
                let t = volley_scenario::parse_threshold(&format!("{figure} {stat} < {limit}"))
                    .unwrap_or_else(|e| panic!("{}: {e}", m.key));
                assert_eq!((t.metric.name(), t.stat.name()), (figure, stat));
            }
        }
    }
}
