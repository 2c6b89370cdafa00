//! Any result volley can read — a run directory or another tool's file — opened into one
//! shape, so reports and comparisons treat them alike.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use hdrhistogram::Histogram;
use volley_stats::compare::IntervalHistograms;
use volley_stats::{CompactHistogram, LatencySummary, Series};

use crate::histograms::{Histograms, MergedByKey};
use crate::hlog::{HistKey, LoggedHistogram};
use crate::rundir::{RunData, RunMeta};

/// Formats `open` recognises, for error messages.
pub const READABLE: &str = "a volley run directory, nGrinder output.csv, k6 --out csv / --out json / --summary-export, JMeter JTL (CSV), Locust _stats_history.csv / _stats.csv, Gatling simulation.log (text 3.4–3.12, binary 3.13+)";

/// A result opened for reporting.
#[derive(Debug, Clone)]
pub struct Source {
    /// Where it came from.
    pub path: PathBuf,
    /// A short name (the run's name, or the file name).
    pub name: String,
    /// The format it was read as.
    pub format: Format,
    /// The totals series.
    pub series: Series,
    /// Per-test series (nGrinder test ids, scenario steps), with their names.
    pub per_test: Vec<(String, Series)>,
    /// Per-interval histograms, by [`HistKey`]; none for per-interval formats. A run
    /// directory's stay in its log and are read a pass at a time.
    pub histograms: Histograms,
    /// Errors by kind per interval, where known.
    pub errors_by_kind: Vec<[u64; volley_stats::KINDS]>,
    /// run.json, for volley runs.
    pub meta: Option<RunMeta>,
    /// What a reader must know about how this source's figures were obtained.
    pub notes: Vec<String>,
    /// What the reader did with input it could not take as it stood: rows skipped or used
    /// out of order, a record cut off at the end, figures the source cannot give.
    pub input_notes: Vec<crate::note::InputNote>,
    /// The load generator's health per interval (volley runs only).
    pub generator: Vec<crate::rundir::GeneratorHealth>,
    /// Scraped server metrics (volley runs with `--server-metrics`).
    pub server: Vec<crate::rundir::ServerPoint>,
    /// The watched Kubernetes workload sampled at the scrape instants, kube.csv (volley runs
    /// with `--kube`).
    pub kube: Vec<crate::rundir::ServerPoint>,
    /// Its every observation, kube.jsonl (volley runs with `--kube`).
    pub kube_log: Option<crate::kubelog::KubeLog>,
    /// Stream events per scenario step and interval (volley runs with a scenario).
    pub step_events: Vec<Vec<u64>>,
    /// Per-request statistics the tool computed itself, for files that hold no per-request
    /// data (a k6 summary, Locust's `_stats.csv`); used when there are no histograms.
    pub tool_latency: ToolLatency,
    /// Every key's histograms merged, by warm-up: one pass over the log serves every key.
    pub(crate) merged: MergedCache,
    /// A volley run's populations (a scenario file's `scenarios:`), each opened as a run of
    /// its own; this source's figures are their total.
    pub populations: Vec<Source>,
}

impl Source {
    /// A volley run directory.
    pub fn from_run(run: RunData) -> Source {
        Source {
            populations: run.populations.into_iter().map(Source::from_run).collect(),
            name: run.meta.name.clone(),
            path: run.dir,
            format: Format::Volley,
            series: run.series,
            per_test: run.steps,
            histograms: run.histograms,
            errors_by_kind: run.errors_by_kind,
            meta: Some(run.meta),
            notes: Vec::new(),
            input_notes: run.input_notes,
            generator: run.generator,
            server: run.server,
            kube: run.kube,
            kube_log: run.kube_log,
            step_events: run.step_events,
            tool_latency: ToolLatency::default(),
            merged: Default::default(),
        }
    }

    /// Why `figure` is not available from this source, when it is not.
    pub fn unavailable(&self, figure: crate::note::Figure) -> Option<&str> {
        self.input_notes.iter().find_map(|n| match n {
            crate::note::InputNote::Unavailable { figure: f, why } if *f == figure => {
                Some(why.as_str())
            }
            _ => None,
        })
    }

    /// Whether per-request histograms are available.
    pub fn has_histograms(&self) -> bool {
        !self.histograms.is_empty()
    }

    /// All histograms of `key` from `warmup_s` on, merged.
    pub fn merged(&self, key: HistKey, warmup_s: f64) -> Histogram<u64> {
        CompactHistogram::merge_all(self.merged_all(warmup_s).get(&key))
    }

    /// Every key's histograms from `warmup_s` on, merged, in one pass (kept for the next
    /// look-up: a report reads each key's several times).
    fn merged_all(&self, warmup_s: f64) -> Arc<HashMap<HistKey, CompactHistogram>> {
        let mut cache = self.merged.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = cache.get(&warmup_s.to_bits()) {
            return m.clone();
        }
        if let Some(m) = self.histograms.merged_at_open(warmup_s) {
            cache.insert(warmup_s.to_bits(), m.clone());
            return m;
        }
        let mut merged = MergedByKey::default();
        each_logged(&self.histograms, None, |l| merged.add(l, warmup_s));
        let all = merged.finish();
        cache.insert(warmup_s.to_bits(), all.clone());
        all
    }

    /// Per-request summary of `key` from `warmup_s` on; without histograms, the tool's own
    /// statistics of the whole run (TTFB and total only).
    pub fn latency(&self, key: HistKey, warmup_s: f64) -> Option<LatencySummary> {
        if !self.has_histograms() {
            return match key {
                HistKey::TTFB => self.tool_latency.ttfb.clone(),
                HistKey::TOTAL => self.tool_latency.total.clone(),
                _ => None,
            };
        }
        LatencySummary::from_histogram(&self.merged(key, warmup_s))
    }

    /// Visits each histogram of `key` that belongs to a row of the series, with the row's
    /// index in `series.intervals`, in log order: one pass, nothing held.
    pub fn each_interval(&self, key: HistKey, mut f: impl FnMut(usize, &CompactHistogram)) {
        self.rows_of(key, self.series.intervals.iter().map(|r| r.start_s))
            .each(&mut f);
    }

    /// The histograms of `key` of the rows starting at `starts`, as a noise estimate reads
    /// them (each pass reads the log again), or `None` when the source has no histograms.
    pub fn interval_histograms(
        &self,
        key: HistKey,
        starts: impl IntoIterator<Item = f64>,
    ) -> Option<Arc<dyn IntervalHistograms>> {
        if !self.has_histograms() {
            return None;
        }
        Some(Arc::new(self.rows_of(key, starts)))
    }

    /// The histograms of `key` of the rows starting at `starts`.
    fn rows_of(&self, key: HistKey, starts: impl IntoIterator<Item = f64>) -> RowHistograms {
        RowHistograms {
            histograms: self.histograms.clone(),
            key,
            rows: RowIndex::of(starts),
        }
    }
}

/// [`Histograms::each`]: the histograms of `key` (every key when `None`) in log order. A log
/// changed on disk since the run was opened is named on stderr, and its figures stop where it
/// no longer reads.
fn each_logged(h: &Histograms, key: Option<HistKey>, f: impl FnMut(&LoggedHistogram)) {
    if let Err(e) = h.each(key, f) {
        eprintln!("volley: warning: {e}");
    }
}

/// Every key's merged histograms by warm-up (its bits). A clone starts empty: it may be
/// given other histograms.
#[derive(Debug, Default)]
pub(crate) struct MergedCache(Mutex<HashMap<u64, Arc<HashMap<HistKey, CompactHistogram>>>>);

impl Clone for MergedCache {
    fn clone(&self) -> Self {
        MergedCache::default()
    }
}

/// Rows by their start, to the millisecond (a log's interval starts are written in ms).
#[derive(Debug)]
struct RowIndex(HashMap<i64, usize>);

impl RowIndex {
    fn of(starts: impl IntoIterator<Item = f64>) -> RowIndex {
        RowIndex(
            starts
                .into_iter()
                .enumerate()
                .map(|(i, s)| (Self::ms(s), i))
                .collect(),
        )
    }

    fn ms(s: f64) -> i64 {
        (s * 1000.0).round() as i64
    }

    fn get(&self, start_s: f64) -> Option<usize> {
        self.0.get(&Self::ms(start_s)).copied()
    }
}

/// One key's histograms of some rows, read from the source's histograms on each pass.
#[derive(Debug)]
struct RowHistograms {
    histograms: Histograms,
    key: HistKey,
    rows: RowIndex,
}

impl IntervalHistograms for RowHistograms {
    fn each(&self, f: &mut dyn FnMut(usize, &CompactHistogram)) {
        each_logged(&self.histograms, Some(self.key), |l| {
            if let Some(i) = self.rows.get(l.start_s) {
                f(i, &l.histogram);
            }
        });
    }
}

/// Per-request statistics a tool wrote in its own summary; a statistic the file lacks is
/// NaN (reports show n/a), never another one standing in for it.
#[derive(Debug, Clone, Default)]
pub struct ToolLatency {
    /// Time to first byte, as the tool defines it.
    pub ttfb: Option<LatencySummary>,
    /// Total time, as the tool defines it.
    pub total: Option<LatencySummary>,
}

/// The formats volley reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A volley run directory.
    Volley,
    /// nGrinder `output.csv`.
    Ngrinder,
    /// k6 `--out csv`.
    K6Csv,
    /// k6 `--out json`.
    K6Json,
    /// k6 `--summary-export`.
    K6Summary,
    /// JMeter JTL (CSV).
    Jtl,
    /// Locust `_stats_history.csv`.
    LocustHistory,
    /// Locust `_stats.csv`.
    LocustStats,
    /// Gatling `simulation.log` (text).
    Gatling,
    /// Gatling `simulation.log` (binary, 3.13+).
    GatlingBinary,
}

impl Format {
    /// Every format with its name, as `--from` takes it.
    pub const ALL: [(Format, &'static str); 10] = [
        (Format::Volley, "volley"),
        (Format::Ngrinder, "ngrinder"),
        (Format::K6Csv, "k6-csv"),
        (Format::K6Json, "k6-json"),
        (Format::K6Summary, "k6-summary"),
        (Format::Jtl, "jtl"),
        (Format::LocustHistory, "locust-history"),
        (Format::LocustStats, "locust-stats"),
        (Format::Gatling, "gatling"),
        (Format::GatlingBinary, "gatling-binary"),
    ];

    /// The format named `name`.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(f, _)| *f)
    }

    /// What its MTTFB stands for: the time to first byte, or (for tools that record no first
    /// byte: Gatling, Locust) the whole response time.
    pub fn mttfb_meaning(self) -> &'static str {
        match self {
            Format::Gatling
            | Format::GatlingBinary
            | Format::LocustHistory
            | Format::LocustStats => "the response time",
            _ => "the time to first byte",
        }
    }

    /// How reports name it (`format` in report.json); both Gatling logs are `gatling-log`.
    pub fn label(self) -> &'static str {
        match self {
            Format::Volley => "volley",
            Format::Ngrinder => "ngrinder",
            Format::K6Csv => "k6-csv",
            Format::K6Json => "k6-json",
            Format::K6Summary => "k6-summary",
            Format::Jtl => "jmeter-jtl",
            Format::LocustHistory => "locust-history",
            Format::LocustStats => "locust-stats",
            Format::Gatling | Format::GatlingBinary => "gatling-log",
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// Serialized as its [`label`](Format::label).
impl serde::Serialize for Format {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.label())
    }
}

/// A format equals the label reports show for it (`src.format == "jmeter-jtl"`).
impl PartialEq<&str> for Format {
    fn eq(&self, other: &&str) -> bool {
        self.label() == *other
    }
}
