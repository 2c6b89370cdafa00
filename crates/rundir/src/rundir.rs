//! The run directory: written as the run goes and flushed every interval, so a run that is
//! interrupted or killed half-way still reports on everything it recorded.
//!
//! ```text
//! runs/<UTC time>_<name>/
//!   run.json      what ran, and status: running | complete | interrupted | aborted
//!   series.csv    one row per interval; the first 13 columns are nGrinder's output.csv
//!   drain.csv     the drain after the stop (what completed in the grace period), in series.csv's
//!                 columns: a row 0 s long, so series.csv holds the measured time alone
//!   latency.hlog  HdrHistogram interval log, tagged by `hlog::HistKey`: `ttfb`, `total`, `ttfb.1`, …
//!   report.md  report.json   written at the end
//! ```

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use volley_stats::{ErrorKind, Interval, IntervalSample, Latencies, Series};

use volley_scenario::StepInfo;

use crate::error::{Error, Result};
use crate::histograms::Histograms;
use crate::hlog::{self, HistKey, HistMetric};
use crate::ngrinder::{self, DROPPED, ELAPSED, HEADER, PERIOD};
use crate::note::{InputNote, Place, cut_last_line};
use crate::numfmt::ngrinder_number;
use crate::recorded::RecordedPlan;

/// File names inside a run directory.
pub const RUN_JSON: &str = "run.json";
/// The per-interval series.
pub const SERIES_CSV: &str = "series.csv";
/// The drain after the stop (the requests that completed in the grace period), in
/// series.csv's columns, written only when there is one. It is a row of no length, so it
/// has no TPS: kept out of series.csv, every row of that file is a measured interval with
/// a number in its TPS cell, as the seeds' pandas script reads it. Run directories written
/// before it have the drain as series.csv's last row, which reads the same.
pub const DRAIN_CSV: &str = "drain.csv";
/// The histogram log.
pub const LATENCY_HLOG: &str = "latency.hlog";
/// Scraped server metrics.
pub const SERVER_CSV: &str = "server.csv";
pub use crate::kubelog::KUBE_JSONL;
/// `--kube`: the workload sampled at the scrape instants, in server.csv's columns.
pub const KUBE_CSV: &str = "kube.csv";
/// server.csv's (and kube.csv's) header.
pub const SERVER_HEADER: [&str; 5] = ["Elapsed_(s)", "Target", "Series", "Value", "Kind"];

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Still running (or killed without a chance to say otherwise).
    Running,
    /// Ran its planned course.
    Complete,
    /// Stopped early by the user (Ctrl-C).
    Interrupted,
    /// Stopped by volley itself (too many errors, a second Ctrl-C).
    Aborted,
    /// run.json still says `running`, but the process that recorded it is gone (killed or
    /// crashed): never written, only concluded when the run is read back.
    #[serde(rename = "did not finish")]
    DidNotFinish,
    /// Merged from segments of which some were missing (run.json's `merged` names them).
    Partial,
}

impl RunStatus {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Aborted => "aborted",
            RunStatus::DidNotFinish => "did not finish",
            RunStatus::Partial => "partial",
        }
    }
}

/// The first messages of one kind of error.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ErrorNote {
    /// The kind.
    pub kind: ErrorKind,
    /// How many in the whole run.
    pub count: u64,
    /// The first few distinct messages (five per step).
    pub messages: Vec<NotedMessage>,
}

/// One noted message: where it happened and what it said.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NotedMessage {
    /// The scenario step's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// What happened.
    pub text: String,
}

impl<'de> Deserialize<'de> for NotedMessage {
    /// A record, or a plain string as run.json held messages before they had a type.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Any {
            Record {
                #[serde(default)]
                step: Option<String>,
                text: String,
            },
            Text(String),
        }
        Ok(match Any::deserialize(d)? {
            Any::Record { step, text } => NotedMessage { step, text },
            Any::Text(text) => NotedMessage { step: None, text },
        })
    }
}

impl std::fmt::Display for NotedMessage {
    /// `[step] text`, as reports show it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.step {
            Some(step) => write!(f, "[{step}] {}", self.text),
            None => f.write_str(&self.text),
        }
    }
}

impl ErrorNote {
    /// Folds new messages into `notes` (five per step and kind, no repeats), then adds
    /// `counts`, an interval's errors by kind, to the notes' totals.
    pub fn add(
        notes: &mut Vec<ErrorNote>,
        counts: &[u64; volley_stats::KINDS],
        messages: Vec<volley_stats::ErrorMessage>,
    ) {
        for m in messages {
            let i = match notes.iter().position(|n| n.kind == m.kind) {
                Some(i) => i,
                None => {
                    notes.push(ErrorNote {
                        kind: m.kind,
                        count: 0,
                        messages: Vec::new(),
                    });
                    notes.len() - 1
                }
            };
            let note = &mut notes[i];
            let message = NotedMessage {
                step: m.step,
                text: m.text,
            };
            let same_step = note
                .messages
                .iter()
                .filter(|n| n.step == message.step)
                .count();
            if same_step < volley_stats::MESSAGES_PER_STEP && !note.messages.contains(&message) {
                note.messages.push(message);
            }
        }
        for n in notes.iter_mut() {
            n.count += counts[n.kind.index()];
        }
    }
}

/// `run.json`: what ran and how it ended.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunMeta {
    /// Layout version of the run directory.
    pub schema: u32,
    /// `volley <version>`.
    pub tool: String,
    /// The run's name.
    pub name: String,
    /// Where it stands.
    pub status: RunStatus,
    /// Why it stopped early, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Start, RFC 3339 UTC.
    pub started_at: String,
    /// End, RFC 3339 UTC, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    /// Sampling interval, s.
    pub interval_s: f64,
    /// Seconds excluded from the start of every figure.
    pub warmup_s: f64,
    /// Planned length, s.
    pub planned_duration_s: f64,
    /// The plan as run (target, load, timings, thresholds, scenario).
    pub plan: RecordedPlan,
    /// The command line.
    pub command: Vec<String>,
    /// Host name of the machine that ran the load.
    pub host: String,
    /// Process id of the recorder on that host, to tell a run still going from one whose
    /// process died before it could record how the run ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Errors by kind with their first messages.
    #[serde(default)]
    pub errors: Vec<ErrorNote>,
    /// Server-metrics endpoints scraped, with how the scrapes went.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_metrics: Vec<ScrapeNote>,
    /// Scenario steps, in id order: each has its block of columns in series.csv (as
    /// nGrinder's test ids do) and its histograms in latency.hlog (`ttfb.N`, `total.N`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepInfo>,
    /// This run is one segment of a split run (`volley run --segment i/N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment: Option<crate::segment::SegmentNote>,
    /// This run was merged from segments (`volley merge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<crate::segment::MergedFrom>,
    /// Changes of plan made while the run went (the dashboard's VU or rate control), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plan_changes: Vec<PlanChangeNote>,
    /// Live metric outputs (`--out KIND=URL`), with how sending to them went.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<OutputNote>,
    /// This run directory is one population of a run (the run's is two levels up); its
    /// clock is the run's, so it has no requests before `start_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub population: Option<crate::recorded::RecordedPopulation>,
    /// The Kubernetes workload watched beside the load (`--kube`), redacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube: Option<crate::kube::KubeNote>,
}

/// A change of plan at time `at_s`: from then on the run had `vus` VUs (closed model) or
/// `rate` arrivals per second (open model) instead of what the plan said, until its end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanChangeNote {
    /// Seconds from the run's start.
    pub at_s: f64,
    /// The new VU target (closed model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vus: Option<u64>,
    /// The new arrival rate, per second (open model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Who asked (`dashboard`).
    pub by: String,
}

impl PlanChangeNote {
    /// `at 12.0 s: 50 VUs (by dashboard)`.
    pub fn describe(&self) -> String {
        let to = match (self.vus, self.rate) {
            (Some(v), _) => format!("{v} VUs"),
            (None, Some(r)) => format!("{r}/s"),
            (None, None) => "nothing".to_string(),
        };
        format!("at {:.1} s: {to} (by {})", self.at_s, self.by)
    }
}

impl RunMeta {
    /// run.json of a run called `name` that is starting now to carry out `plan`: status
    /// `running`, 1 s intervals, no warm-up, nothing recorded yet.
    pub fn new(name: &str, plan: RecordedPlan) -> RunMeta {
        RunMeta {
            schema: 1,
            tool: format!("volley {}", env!("CARGO_PKG_VERSION")),
            name: name.to_string(),
            status: RunStatus::Running,
            reason: None,
            started_at: jiff::Timestamp::now().to_string(),
            ended_at: None,
            interval_s: 1.0,
            warmup_s: 0.0,
            planned_duration_s: plan.load.duration().as_secs_f64(),
            plan,
            command: Vec::new(),
            host: String::new(),
            pid: None,
            errors: Vec::new(),
            server_metrics: Vec::new(),
            steps: Vec::new(),
            segment: None,
            merged: None,
            plan_changes: Vec::new(),
            outputs: Vec::new(),
            population: None,
            kube: None,
        }
    }
}

/// Where populations' run directories go inside a run's.
pub const POPULATIONS_DIR: &str = "populations";

/// Stream events received, per step (a volley column in the step's block).
const EVENTS: &str = "Events";

/// The columns of one step's block, nGrinder's names with the step's suffix.
fn step_header(index: usize) -> Vec<String> {
    let k = index + 1;
    let mut h = vec!["Description".to_string()];
    h.extend(HEADER[2..].iter().map(|c| format!("{c}-{k}")));
    h.push(format!("{EVENTS}-{k}"));
    h
}

/// How scraping one endpoint went.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ScrapeNote {
    /// The endpoint.
    pub url: String,
    /// Scrapes that returned metrics.
    pub ok: u64,
    /// Scrapes that failed.
    pub failed: u64,
    /// The last failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Readings not recorded as read, one note per kind and reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<SeriesNote>,
}

/// Readings of one endpoint that server.csv does not hold as read: `left_out` (a bound on
/// series or bytes, or lines that are not Prometheus text), `marked` (a value no such series
/// can have, or a series listed twice with different values: never a peak or a finding) or
/// `reset` (a counter went down, or the process answering changed: no rate from it).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SeriesNote {
    /// `left_out`, `marked` or `reset`.
    pub kind: String,
    /// Why, in words.
    pub why: String,
    /// Readings (or lines) it happened to.
    pub count: u64,
    /// The first of them, as read (`process_cpu_usage = 5`).
    pub first: String,
    /// When it first happened, s from the start.
    pub first_s: f64,
}

/// How sending a run's metrics to one live output went (`volley run --out KIND=URL`).
///
/// A payload is one interval's worth (or the last flush). Nothing is dropped silently:
/// every payload is `sent`, `failed` (the receiver refused it or could not be reached, after
/// a retry) or `dropped` (the bounded queue was full, or the run ended before it went out).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct OutputNote {
    /// The kind of output: `prometheus` (remote write) or `otlp`.
    pub kind: String,
    /// Where it went (any password in the URL replaced by `***`).
    pub url: String,
    /// Payloads the receiver accepted.
    pub sent: u64,
    /// Payloads that failed.
    pub failed: u64,
    /// Payloads never sent: the queue was full, or the run ended first.
    pub dropped: u64,
    /// The last failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// Names of the columns volley appends after nGrinder's 13.
fn extra_header() -> Vec<String> {
    let mut h = vec![ELAPSED.to_string(), PERIOD.to_string()];
    h.extend(
        ErrorKind::ALL
            .iter()
            .map(|k| format!("Errors_{}", k.name())),
    );
    h.extend(
        [
            "Reconnects",
            DROPPED,
            "TTFB_p50_(ms)",
            "TTFB_p99_(ms)",
            "Total_p99_(ms)",
            "Mean_TLS_handshake_(ms)",
            "Mean_waiting_(ms)",
            "Mean_receiving_(ms)",
            LATE,
            SCHED_LAG,
            GENERATOR_CPU,
            POOL_WAIT,
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    h
}

/// Open-model arrivals sent late (they waited for a free VU).
pub const LATE: &str = "Late";
/// The generator's largest dispatch delay in the interval, ms.
pub const SCHED_LAG: &str = "Schedule_lag_max_(ms)";
/// The generator's CPU use, % of its cores.
pub const GENERATOR_CPU: &str = "Generator_CPU_(%)";
/// `--connections`: mean wait of a request for a shared connection or stream, ms.
pub const POOL_WAIT: &str = "Mean_pool_wait_(ms)";

/// Writes a run directory while the run goes.
#[derive(Debug)]
pub struct RunWriter {
    dir: PathBuf,
    meta: RunMeta,
    started: SystemTime,
    series: BufWriter<File>,
    /// series.csv's header line, which drain.csv repeats.
    header: String,
    /// drain.csv, once the drain is written.
    drain: Option<BufWriter<File>>,
    hlog: BufWriter<File>,
    server: Option<csv::Writer<File>>,
}

impl RunWriter {
    /// Creates `<root>/<UTC time>_<name>/` and writes the headers and a `running` run.json.
    pub fn create(root: &Path, meta: RunMeta, started: SystemTime) -> Result<RunWriter> {
        let stamp = jiff::Timestamp::try_from(started).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        let base = format!(
            "{}_{}",
            stamp.strftime("%Y%m%dT%H%M%SZ"),
            sanitize(&meta.name)
        );
        // The directory is claimed by creating it, which fails when another process (a segment
        // started at the same instant by --start-at) made it first: then the next suffix.
        fs::create_dir_all(root).map_err(|e| Error::io(root, e))?;
        for n in 1..=10_000 {
            let dir = match n {
                1 => root.join(&base),
                n => root.join(format!("{base}-{n}")),
            };
            match fs::create_dir(&dir) {
                Ok(()) => return Self::create_at(&dir, meta, started),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::io(&dir, e)),
            }
        }
        Err(Error::unrecognised(
            root.join(&base),
            "10,000 run directories of this name and second exist already; give another -o",
        ))
    }

    /// Writes a run directory at exactly `dir` (created; it must not hold a run already).
    pub fn create_at(dir: &Path, meta: RunMeta, started: SystemTime) -> Result<RunWriter> {
        let dir = dir.to_path_buf();
        if dir.join(RUN_JSON).exists() {
            return Err(Error::unrecognised(
                dir,
                "already holds a run directory; give a new directory",
            ));
        }
        fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let open = |name: &str| {
            let p = dir.join(name);
            File::create(&p)
                .map(BufWriter::new)
                .map_err(|e| Error::io(p, e))
        };
        let mut series = open(SERIES_CSV)?;
        let mut header: Vec<String> = HEADER.iter().map(|s| s.to_string()).collect();
        for i in 0..meta.steps.len() {
            header.extend(step_header(i));
        }
        header.extend(extra_header());
        let header = header.join(",");
        writeln!(series, "{header}").map_err(|e| Error::io(dir.join(SERIES_CSV), e))?;
        let mut hlog_out = open(LATENCY_HLOG)?;
        hlog::write_header(&mut hlog_out, started)
            .map_err(|e| Error::io(dir.join(LATENCY_HLOG), e))?;
        let mut w = RunWriter {
            dir,
            meta,
            started,
            series,
            header,
            drain: None,
            hlog: hlog_out,
            server: None,
        };
        w.flush()?;
        w.write_meta()?;
        Ok(w)
    }

    /// The directory being written.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The run.json contents so far.
    pub fn meta(&self) -> &RunMeta {
        &self.meta
    }

    /// run.json as it stands, to change (then [`RunWriter::write_meta`]).
    pub fn meta_mut(&mut self) -> &mut RunMeta {
        &mut self.meta
    }

    /// Appends one interval to `series.csv` and `latency.hlog` and flushes both; `steps`
    /// holds the scenario steps' samples (empty without a scenario). A row of no length, the
    /// drain after the stop, goes to `drain.csv` instead (created with series.csv's header).
    pub fn write_interval(
        &mut self,
        sample: &IntervalSample,
        row: &Interval,
        steps: &[IntervalSample],
    ) -> Result<()> {
        let wall = self.started + secs(row.start_s + row.period_s);
        let local = jiff::Timestamp::try_from(wall)
            .map(|t| {
                t.to_zoned(jiff::tz::TimeZone::system())
                    .strftime("%Y-%m-%d %H:%M:%S")
                    .to_string()
            })
            .unwrap_or_default();
        let mut fields: Vec<String> = ngrinder::format_row(&local, row).into();
        for (step, s) in self.meta.steps.iter().zip(steps) {
            let step_row = s.to_interval(row.start_s, row.period_s, row.vusers);
            let cells = ngrinder::format_row(&local, &step_row);
            fields.push(csv_field(&step.name));
            fields.extend(cells[2..].iter().cloned());
            fields.push(s.counts.events.to_string());
        }
        let n = ngrinder_number;
        let pct = |h: &Latencies, p: f64| h.value_at_percentile(p) as f64 / 1000.0;
        fields.push(n(row.start_s));
        fields.push(n(row.period_s));
        fields.extend(sample.counts.errors_by_kind.iter().map(|c| c.to_string()));
        fields.push(sample.counts.reconnects.to_string());
        fields.push(sample.counts.dropped.to_string());
        fields.push(n(pct(&sample.ttfb, 50.0)));
        fields.push(n(pct(&sample.ttfb, 99.0)));
        fields.push(n(pct(&sample.total, 99.0)));
        let (tls, waiting, receiving) = sample.counts.phase_means_ms();
        fields.extend([n(tls), n(waiting), n(receiving)]);
        fields.push(sample.counts.late.to_string());
        fields.push(n(sample.counts.sched_lag_max_us as f64 / 1000.0));
        fields.push(n(sample.counts.generator_cpu_pct));
        fields.push(n(sample.counts.pool_wait_mean_ms()));
        let line = fields.join(",");
        if row.period_s <= 0.0 {
            let path = self.dir.join(DRAIN_CSV);
            if self.drain.is_none() {
                let mut f = File::create(&path)
                    .map(BufWriter::new)
                    .map_err(|e| Error::io(&path, e))?;
                writeln!(f, "{}", self.header).map_err(|e| Error::io(&path, e))?;
                self.drain = Some(f);
            }
            let out = self.drain.as_mut().expect("just created");
            writeln!(out, "{line}").map_err(|e| Error::io(&path, e))?;
        } else {
            let path = self.dir.join(SERIES_CSV);
            writeln!(self.series, "{line}").map_err(|e| Error::io(&path, e))?;
        }
        let (start, len) = (secs(row.start_s), secs(row.period_s));
        let hpath = self.dir.join(LATENCY_HLOG);
        let mut write = |h: &Histogram<u64>, key: HistKey| {
            hlog::write_interval(&mut self.hlog, h, start, len, key)
                .map_err(|e| Error::io(&hpath, e))
        };
        write(&sample.ttfb.histogram(), HistKey::TTFB)?;
        write(&sample.total.histogram(), HistKey::TOTAL)?;
        // One at a time, each made only while it is written: a scenario may have thousands of steps.
        for (i, s) in steps.iter().enumerate() {
            write(&s.ttfb.histogram(), HistKey::step(HistMetric::Ttfb, i))?;
            write(&s.total.histogram(), HistKey::step(HistMetric::Total, i))?;
        }
        if let Some(u) = &sample.unfinished {
            write(u, HistKey::UNFINISHED)?;
        }
        if let Some(it) = &sample.iteration {
            write(it, HistKey::ITERATION)?;
        }
        if let Some(lag) = &sample.sched_lag {
            write(lag, HistKey::SCHED_LAG)?;
        }
        if let Some(f) = &sample.failed {
            write(f, HistKey::FAILED)?;
        }
        if let Some(w) = &sample.pool_wait {
            write(w, HistKey::POOL_WAIT)?;
        }
        if let Some(actual) = &sample.actual {
            write(&actual.0.histogram(), HistKey::TTFB_ACTUAL)?;
            write(&actual.1.histogram(), HistKey::TOTAL_ACTUAL)?;
        }
        self.flush()
    }

    /// Appends one scrape to `server.csv` (created with its header on first use):
    /// `Elapsed_(s),Target,Series,Value,Kind` where Kind is `gauge` or `rate` (per second).
    pub fn write_server(
        &mut self,
        elapsed_s: f64,
        url: &str,
        values: &[(String, f64, bool)],
    ) -> Result<()> {
        let path = self.dir.join(SERVER_CSV);
        let failed = |e: csv::Error| Error::io(&path, std::io::Error::other(e));
        if self.server.is_none() {
            let mut w =
                csv::Writer::from_writer(File::create(&path).map_err(|e| Error::io(&path, e))?);
            w.write_record(SERVER_HEADER).map_err(failed)?;
            self.server = Some(w);
        }
        let out = self.server.as_mut().expect("just created");
        // A target's URL and a series' labels are quoted where they need it (a comma, a quote).
        for (series, value, rate) in values {
            out.write_record(server_row(elapsed_s, url, series, *value, *rate))
                .map_err(failed)?;
        }
        out.flush().map_err(|e| Error::io(&path, e))
    }

    fn flush(&mut self) -> Result<()> {
        self.series
            .flush()
            .map_err(|e| Error::io(self.dir.join(SERIES_CSV), e))?;
        if let Some(d) = &mut self.drain {
            d.flush()
                .map_err(|e| Error::io(self.dir.join(DRAIN_CSV), e))?;
        }
        self.hlog
            .flush()
            .map_err(|e| Error::io(self.dir.join(LATENCY_HLOG), e))
    }

    /// Rewrites run.json atomically (temporary file, then rename).
    pub fn write_meta(&self) -> Result<()> {
        write_meta(&self.dir, &self.meta)
    }

    /// Records how the run ended and rewrites run.json.
    pub fn finish(&mut self, status: RunStatus, reason: Option<String>) -> Result<()> {
        self.flush()?;
        self.meta.status = status;
        self.meta.reason = reason;
        self.meta.ended_at = Some(jiff::Timestamp::now().to_string());
        self.write_meta()
    }
}

/// Writes `meta` as `dir/run.json` atomically.
pub fn write_meta(dir: &Path, meta: &RunMeta) -> Result<()> {
    let tmp = dir.join(".run.json.tmp");
    let json = serde_json::to_vec_pretty(meta).expect("run metadata serializes");
    fs::write(&tmp, json).map_err(|e| Error::io(&tmp, e))?;
    fs::rename(&tmp, dir.join(RUN_JSON)).map_err(|e| Error::io(dir.join(RUN_JSON), e))
}

/// A step name as a `Description` cell: nGrinder files are never quoted, so the
/// characters that would break the row become spaces (run.json keeps the real name).
fn csv_field(s: &str) -> String {
    s.chars()
        .map(|c| {
            if matches!(c, ',' | '"' | '\n' | '\r' | '\t' | ';') {
                ' '
            } else {
                c
            }
        })
        .collect()
}

pub fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if s.is_empty() { "run".to_string() } else { s }
}

/// A run directory read back.
#[derive(Debug, Clone)]
pub struct RunData {
    /// Its directory.
    pub dir: PathBuf,
    /// run.json.
    pub meta: RunMeta,
    /// series.csv.
    pub series: Series,
    /// latency.hlog, every interval: checked and indexed, read again for each pass.
    pub histograms: Histograms,
    /// Errors by kind per interval, from series.csv.
    pub errors_by_kind: Vec<[u64; volley_stats::KINDS]>,
    /// The generator's health per interval, from series.csv.
    pub generator: Vec<GeneratorHealth>,
    /// Scraped server metrics, from server.csv (empty when none were scraped).
    pub server: Vec<ServerPoint>,
    /// The watched Kubernetes workload sampled, from kube.csv (`--kube`; empty without).
    pub kube: Vec<ServerPoint>,
    /// Its every observation, from kube.jsonl (`--kube`; `None` without).
    pub kube_log: Option<crate::kubelog::KubeLog>,
    /// Each scenario step's series (name, series), from its block of series.csv.
    pub steps: Vec<(String, Series)>,
    /// Stream events per step and interval.
    pub step_events: Vec<Vec<u64>>,
    /// What the reader did with what a crash left behind (a cut last line, rows skipped).
    pub input_notes: Vec<InputNote>,
    /// Each population's run directory (run.json's `plan.populations`), read the same way.
    pub populations: Vec<RunData>,
}

/// One scraped value.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerPoint {
    /// Seconds from the start of the run.
    pub elapsed_s: f64,
    /// The endpoint.
    pub target: String,
    /// `name{labels}`.
    pub series: String,
    /// The value (per second when `rate`).
    pub value: f64,
    /// Whether the value is a rate of a cumulative series.
    pub rate: bool,
}

/// Gauges that are an average over the recent past, not the state at the scrape (Micrometer's
/// `process_cpu_usage` and `system_cpu_usage` are the CPU load since the JVM last measured
/// it): credited, like a rate, to the interval that ends at the scrape.
const RECENT_AVERAGES: [&str; 2] = ["process_cpu_usage", "system_cpu_usage"];

impl ServerPoint {
    /// The series row this reading belongs to, so that every report puts a server reading
    /// and the load beside it on one time axis. `elapsed_s` is when the scrape was taken,
    /// at the end of an interval. A rate (or a recent average, [`RECENT_AVERAGES`]) covers
    /// the interval since the previous scrape: the row that ends at `elapsed_s`. A gauge is
    /// the server's state at that instant, with the load then in force: the row that starts
    /// at `elapsed_s` (a stage that starts at 5 s has its VUs running when the scrape at
    /// 5 s is taken), or the last row for the scrape at the very end. `intervals` are in
    /// time order, as a series holds them.
    pub fn row(&self, intervals: &[Interval]) -> Option<usize> {
        const EPS: f64 = 1e-6;
        let t = self.elapsed_s;
        let end = |r: &Interval| r.start_s + r.period_s;
        if self.covers_the_past() {
            let i = intervals.partition_point(|r| end(r) < t - EPS);
            let r = intervals.get(i)?;
            (t > r.start_s + EPS && t <= end(r) + EPS).then_some(i)
        } else {
            let mut i = intervals
                .partition_point(|r| r.start_s <= t + EPS)
                .checked_sub(1)?;
            // The drain after the stop (a row of no length) is no time to be at: a gauge
            // taken at the stop belongs to the last row that ran.
            while intervals[i].period_s <= 0.0 {
                i = i.checked_sub(1)?;
            }
            let r = &intervals[i];
            let last = intervals[i + 1..].iter().all(|r| r.period_s <= 0.0);
            (t < end(r) - EPS || (last && t <= end(r) + EPS)).then_some(i)
        }
    }

    /// Whether this reading reaches back before the run: the first reading of a recent
    /// average ([`RECENT_AVERAGES`]) covers the time since it was last read, for the first
    /// scrape of a fresh JVM its start-up (`process_cpu_usage` 1.00 at 1 s, 0.1-0.4 after), so it
    /// is no reading of the load. Readings must come in time order; `seen` holds the averaged
    /// series already read, of each endpoint (start with an empty one).
    pub fn reaches_before_the_run(&self, seen: &mut Vec<(String, String)>) -> bool {
        if !RECENT_AVERAGES.iter().any(|p| self.series.starts_with(p))
            || seen
                .iter()
                .any(|(t, s)| *t == self.target && *s == self.series)
        {
            return false;
        }
        seen.push((self.target.clone(), self.series.clone()));
        true
    }

    /// Whether the value describes the interval before the scrape rather than its instant.
    fn covers_the_past(&self) -> bool {
        self.rate || RECENT_AVERAGES.iter().any(|p| self.series.starts_with(p))
    }
}

/// A value as server.csv writes it: as Rust prints it, or in scientific notation when very
/// large or small (`1e-300`, not 300 digits).
fn server_value(v: f64) -> String {
    if v == 0.0 || !v.is_finite() || (1e-4..1e15).contains(&v.abs()) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// One row of server.csv (or kube.csv) as it is written: `elapsed_s` in nGrinder's format,
/// the value as [`server_value`] writes it, `rate` or `gauge`.
pub fn server_row(
    elapsed_s: f64,
    target: &str,
    series: &str,
    value: f64,
    rate: bool,
) -> [String; 5] {
    [
        ngrinder_number(elapsed_s),
        target.to_string(),
        series.to_string(),
        server_value(value),
        if rate { "rate" } else { "gauge" }.to_string(),
    ]
}

/// Reads a run directory's kube.csv (`--kube`) as server.csv is read; empty without one.
pub fn read_kube(dir: &Path) -> Result<Vec<ServerPoint>> {
    read_server(&dir.join(KUBE_CSV))
}

/// Reads `server.csv`.
fn read_server(path: &Path) -> Result<Vec<ServerPoint>> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(path, e)),
        Ok(_) => {}
    }
    // A FIFO in its place would block the report forever, a device never end.
    let file = volley_scenario::limits::open_bounded(path, MAX_RUN_FILE).map_err(|why| {
        Error::io(
            path,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, why),
        )
    })?;
    let mut out = Vec::new();
    for (i, rec) in csv::Reader::from_reader(file).records().enumerate() {
        let line = i as u64 + 2;
        let rec = rec.map_err(|e| Error::malformed(path, line, None, e.to_string()))?;
        let num = |c: usize| {
            rec.get(c)
                .and_then(|v| v.parse::<f64>().ok())
                .ok_or_else(|| {
                    Error::malformed(path, line, Some(c as u64 + 1), "expected a number")
                })
        };
        out.push(ServerPoint {
            elapsed_s: num(0)?,
            target: rec.get(1).unwrap_or_default().to_string(),
            series: rec.get(2).unwrap_or_default().to_string(),
            value: num(3)?,
            rate: rec.get(4) == Some("rate"),
        });
    }
    Ok(out)
}

/// What the load generator itself went through in one interval.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GeneratorHealth {
    /// Arrivals sent late.
    pub late: u64,
    /// Arrivals never sent.
    pub dropped: u64,
    /// Largest dispatch delay, ms.
    pub sched_lag_max_ms: f64,
    /// CPU use, % of the generator's cores.
    pub cpu_pct: f64,
}

impl RunData {
    /// Whether `path` is a run directory (a series.csv that is not a regular file is then
    /// named by the reader, rather than the directory called no run at all).
    pub fn is_run_dir(path: &Path) -> bool {
        path.join(RUN_JSON).is_file() && path.join(SERIES_CSV).exists()
    }

    /// Reads the run directory at `dir`.
    pub fn read(dir: &Path) -> Result<RunData> {
        Self::read_with(dir, true)
    }

    /// Reads the run directory at `dir` without its histograms (`histograms` stays empty),
    /// for readers that walk `latency.hlog` themselves with [`crate::hlog::Reader`].
    pub fn read_without_histograms(dir: &Path) -> Result<RunData> {
        Self::read_with(dir, false)
    }

    fn read_with(dir: &Path, with_histograms: bool) -> Result<RunData> {
        let meta_path = dir.join(RUN_JSON);
        let meta_text = fs::read_to_string(&meta_path).map_err(|e| Error::io(&meta_path, e))?;
        let mut meta: RunMeta = serde_json::from_str(&meta_text).map_err(|e| {
            Error::malformed(
                &meta_path,
                e.line() as u64,
                Some(e.column() as u64),
                e.to_string(),
            )
        })?;
        check_meta(&meta, &meta_text, &meta_path)?;
        let mut input_notes: Vec<InputNote> = meta
            .merged
            .iter()
            .flat_map(|m| &m.notes)
            .map(|n| InputNote::Merged { note: n.clone() })
            .collect();
        if meta.status == RunStatus::Running && recorder_gone(&meta) == Some(true) {
            meta.status = RunStatus::DidNotFinish;
            meta.reason = Some(format!(
                "run.json still says running, but its recorder (pid {} on {}) is gone: it was killed or crashed before it could record how the run ended; everything it flushed is reported",
                meta.pid.unwrap_or_default(),
                meta.host
            ));
        }
        // A crash can cut the last line of either file: the rows before it are reported.
        let spath = dir.join(SERIES_CSV);
        let series_text = read_run_file(&spath)?;
        let series_text = match cut_last_line(&series_text) {
            Some((start, line)) => {
                input_notes.push(InputNote::CutOff {
                    file: SERIES_CSV.to_string(),
                    at: Place::Line(line),
                });
                &series_text[..start]
            }
            None => &series_text[..],
        };
        let series_text = String::from_utf8(series_text.to_vec()).map_err(|e| {
            Error::io(
                &spath,
                std::io::Error::new(std::io::ErrorKind::InvalidData, e),
            )
        })?;
        let mut file = ngrinder::parse(&spath, &series_text)?;
        input_notes.extend(file.notes.iter().cloned());
        let series_rows = file.total.intervals.len();
        append_drain(dir, &mut file, &mut input_notes)?;
        let hpath = dir.join(LATENCY_HLOG);
        let (histograms, logged) = if with_histograms && hpath.exists() {
            let file = volley_scenario::limits::open_bounded(&hpath, MAX_RUN_FILE)
                .map_err(|why| {
                    Error::io(
                        &hpath,
                        std::io::Error::new(std::io::ErrorKind::InvalidInput, why),
                    )
                })?
                .into_inner();
            let (len, cut) = crate::histograms::complete_len(&hpath, &file)?;
            let (log, counts) = crate::histograms::LogFile::open(&hpath, file, len, meta.warmup_s)?;
            if cut {
                input_notes.push(InputNote::CutOff {
                    file: LATENCY_HLOG.to_string(),
                    at: Place::Line(counts.lines + 1),
                });
            }
            let logged = counts.total;
            let histograms = match counts.all {
                0 => Histograms::None,
                _ => Histograms::Logged(std::sync::Arc::new(log)),
            };
            (histograms, logged)
        } else {
            (Histograms::None, 0)
        };
        // The series is written before the histograms of each interval: a crash in between
        // leaves the last intervals without histograms.
        let rows = file.total.intervals.len();
        if logged > 0 && logged < rows {
            // The lines of the rows without histograms (line 1 is the header), in series.csv
            // and then in drain.csv, whose rows follow series.csv's.
            for (name, from, to) in [(SERIES_CSV, 0, series_rows), (DRAIN_CSV, series_rows, rows)] {
                let missing = logged.max(from)..to;
                if missing.is_empty() {
                    continue;
                }
                let mut r = crate::note::Rows::new(crate::note::Locator::Line);
                for i in missing {
                    r.push((i - from) as u64 + 2);
                }
                input_notes.push(InputNote::Used {
                    unit: crate::note::Unit::Row,
                    rows: r,
                    how: format!("in {name}, without histograms in {LATENCY_HLOG} (the run stopped between writing the two): counted in the per-interval figures, not in the per-request percentiles."),
                });
            }
        }
        // volley's own columns after nGrinder's; one missing reads as 0 in every row.
        let at = |c: Option<&[f64]>, i: usize| c.map_or(0.0, |c| c[i]);
        let kind_cols: Vec<Option<&[f64]>> = ErrorKind::ALL
            .iter()
            .map(|k| file.extra(&format!("Errors_{}", k.name())))
            .collect();
        let errors_by_kind = (0..rows)
            .map(|i| {
                let mut out = [0u64; volley_stats::KINDS];
                for (o, c) in out.iter_mut().zip(&kind_cols) {
                    *o = at(*c, i) as u64;
                }
                out
            })
            .collect();
        let (late_c, lag_c, cpu_c, drop_c) = (
            file.extra(LATE),
            file.extra(SCHED_LAG),
            file.extra(GENERATOR_CPU),
            file.extra(DROPPED),
        );
        let generator = (0..rows)
            .map(|i| GeneratorHealth {
                late: at(late_c, i) as u64,
                dropped: at(drop_c, i) as u64,
                sched_lag_max_ms: at(lag_c, i),
                cpu_pct: at(cpu_c, i),
            })
            .collect();
        let server = read_server(&dir.join(SERVER_CSV))?;
        let kube = read_kube(dir)?;
        let kube_log = crate::kubelog::read_kube_log(dir)?;
        let mut populations = Vec::new();
        for p in &meta.plan.populations {
            let sub = dir.join(&p.dir);
            if !is_plain_subdir(&p.dir) {
                return Err(Error::malformed(
                    &meta_path,
                    1,
                    None,
                    format!(
                        "population `{}`: its directory `{}` is not inside the run directory",
                        p.name, p.dir
                    ),
                ));
            }
            populations.push(Self::read_with(&sub, with_histograms)?);
        }
        let step_events = (0..file.tests.len())
            .map(|i| {
                let c = file.extra(&format!("{EVENTS}-{}", i + 1));
                (0..rows).map(|r| at(c, r) as u64).collect()
            })
            .collect();
        Ok(RunData {
            dir: dir.to_path_buf(),
            series: file.total,
            histograms,
            errors_by_kind,
            generator,
            server,
            kube,
            kube_log,
            // The names as written in the scenario (the CSV cells lose commas).
            steps: file
                .tests
                .into_iter()
                .enumerate()
                .map(|(i, (name, series))| {
                    (meta.steps.get(i).map_or(name, |s| s.name.clone()), series)
                })
                .collect(),
            step_events,
            meta,
            input_notes,
            populations,
        })
    }
}

/// Appends the rows of `dir`'s drain.csv (the drain after the stop), when it has one, to
/// `file`, its series.csv as read: every reader of a run directory then finds the drain as the
/// last row of the series, as in the run directories written before drain.csv, whose
/// series.csv held it. drain.csv must have series.csv's header, and hold rows of no length.
fn append_drain(
    dir: &Path,
    file: &mut ngrinder::NgrinderFile,
    notes: &mut Vec<InputNote>,
) -> Result<()> {
    let path = dir.join(DRAIN_CSV);
    if path
        .symlink_metadata()
        .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
    {
        return Ok(());
    }
    let bytes = read_run_file(&path)?;
    // A crash can cut its last line too, or its header before the line end (then it holds
    // nothing yet).
    let cut = match cut_last_line(&bytes) {
        Some((start, line)) => Some((start, line)),
        None if !bytes.is_empty() && !bytes.contains(&b'\n') => Some((0, 1)),
        None => None,
    };
    let bytes = match cut {
        Some((start, line)) => {
            notes.push(InputNote::CutOff {
                file: DRAIN_CSV.to_string(),
                at: Place::Line(line),
            });
            &bytes[..start]
        }
        None => &bytes[..],
    };
    if bytes.is_empty() {
        return Ok(());
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        Error::io(
            &path,
            std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        )
    })?;
    let drain = ngrinder::parse(&path, text)?;
    if drain.header != file.header {
        return Err(Error::malformed(
            &path,
            1,
            None,
            format!(
                "its header is not {SERIES_CSV}'s: {DRAIN_CSV} holds the drain after the stop in {SERIES_CSV}'s columns, under the same header line; write {SERIES_CSV}'s first line as its first line"
            ),
        ));
    }
    if let Some((i, r)) = drain
        .total
        .intervals
        .iter()
        .enumerate()
        .find(|(_, r)| r.period_s != 0.0)
    {
        return Err(Error::malformed(
            &path,
            i as u64 + 2,
            None,
            format!(
                "{PERIOD} is {}: {DRAIN_CSV} holds only the drain after the stop, rows 0 s long (what completed in the grace period); a row of measured time belongs in {SERIES_CSV}",
                ngrinder_number(r.period_s)
            ),
        ));
    }
    // Rows it could not use are named as its own, not series.csv's.
    notes.extend(drain.notes.into_iter().map(|n| match n {
        InputNote::Skipped { unit, rows, why } => InputNote::Skipped {
            unit,
            rows,
            why: format!("{why} (in {DRAIN_CSV})"),
        },
        InputNote::Used { unit, rows, how } => InputNote::Used {
            unit,
            rows,
            how: format!("{how} (in {DRAIN_CSV})"),
        },
        n => n,
    }));
    let added = drain.total.intervals.len();
    file.total.intervals.extend(drain.total.intervals);
    for ((_, ours), (_, theirs)) in file.tests.iter_mut().zip(drain.tests) {
        ours.intervals.extend(theirs.intervals);
    }
    for (name, values) in &mut file.extras {
        match drain.extras.iter().find(|(n, _)| n == name) {
            Some((_, more)) => values.extend(more),
            None => values.resize(values.len() + added, 0.0),
        }
    }
    Ok(())
}

/// This machine's host name, as run.json records it.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_default()
}

/// Whether the process that recorded `meta` is gone: `Some(true)` when it ran on this host
/// and no process of its pid runs (or one does that started after the run did, so the pid
/// was reused), `Some(false)` when it still runs, `None` when this cannot be told (another
/// host, no pid recorded, no `/proc`).
pub fn recorder_gone(meta: &RunMeta) -> Option<bool> {
    let pid = meta.pid?;
    if meta.host.is_empty() || meta.host != host_name() || !Path::new("/proc/self").exists() {
        return None;
    }
    let stat = match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s,
        Err(_) => return Some(true),
    };
    // Field 22 is the start time in clock ticks after boot (the name in field 2 may hold
    // spaces, so count from its closing parenthesis); boot time is `btime` in /proc/stat.
    let started_ticks: Option<f64> = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(19))
        .and_then(|v| v.parse().ok());
    let boot: Option<f64> = fs::read_to_string("/proc/stat").ok().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("btime ").and_then(|v| v.trim().parse().ok()))
    });
    let run_started = meta
        .started_at
        .parse::<jiff::Timestamp>()
        .ok()
        .map(|t| t.as_millisecond() as f64 / 1000.0);
    match (started_ticks, boot, run_started) {
        // Linux reports in USER_HZ, 100 on every architecture it runs on; a few seconds of slack.
        (Some(ticks), Some(boot), Some(run)) => Some(boot + ticks / 100.0 > run + 5.0),
        _ => Some(false),
    }
}
/// The largest series.csv or latency.hlog read (a week of 1 s intervals is well under it).
const MAX_RUN_FILE: u64 = 8 << 30;

/// Reads a run directory's file: a regular file within [`MAX_RUN_FILE`] (a FIFO in its place
/// would block forever), with the reason named when it is not.
fn read_run_file(path: &Path) -> Result<Vec<u8>> {
    volley_scenario::limits::read_bounded(path, MAX_RUN_FILE).map_err(|why| {
        Error::io(
            path,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, why),
        )
    })
}

/// Refuses a run.json whose numbers or times no run can have (a hand edit, a file written by
/// something else): each with the file, the line and what it must be.
fn check_meta(meta: &RunMeta, text: &str, path: &Path) -> Result<()> {
    let bad = |key: &str, why: String| {
        let line = text
            .lines()
            .position(|l| l.contains(&format!("\"{key}\"")))
            .map_or(1, |i| i as u64 + 1);
        Err(Error::malformed(path, line, None, why))
    };
    let shown = |v: f64| {
        if v.abs() < 1e9 {
            v.to_string()
        } else {
            format!("{v:.3e}")
        }
    };
    let max_interval = volley_scenario::limits::MAX_INTERVAL.as_secs_f64();
    if !(meta.interval_s.is_finite() && meta.interval_s > 0.0 && meta.interval_s <= max_interval) {
        return bad(
            "interval_s",
            format!(
                "interval_s is {}: it is the length of one interval in seconds, above 0 and at most an hour (volley writes 1)",
                shown(meta.interval_s)
            ),
        );
    }
    let max_len = volley_scenario::limits::MAX_DURATION.as_secs_f64();
    for (key, v) in [
        ("warmup_s", meta.warmup_s),
        ("planned_duration_s", meta.planned_duration_s),
    ] {
        if !(v.is_finite() && (0.0..=max_len).contains(&v)) {
            return bad(
                key,
                format!(
                    "{key} is {}: it is a length in seconds, from 0 to 7 days",
                    shown(v)
                ),
            );
        }
    }
    if meta.started_at.parse::<jiff::Timestamp>().is_err() {
        return bad(
            "started_at",
            format!(
                "started_at `{}` is not a time; volley writes RFC 3339 UTC, like 2026-01-01T12:00:00Z",
                meta.started_at
            ),
        );
    }
    Ok(())
}

/// Whether `rel`, a directory named in run.json or group.json, is a plain path below the
/// directory that names it: relative, of ordinary names only (no `.`, `..`, root, or empty
/// part). Anything else could point outside it (`../other`) or back at it (`.`, which
/// reading a run's populations would follow forever), so readers refuse it.
pub fn is_plain_subdir(rel: &str) -> bool {
    use std::path::Component;
    !rel.is_empty()
        && !rel.split('/').any(str::is_empty)
        && Path::new(rel)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
        && !rel.split('/').any(|c| c == "." || c == "..")
}

/// Seconds as a `Duration`; a value no duration can hold (negative, NaN, beyond `u64`
/// seconds, as a hand-edited or merged file may give) is zero, never a panic.
fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or_default()
}

#[cfg(test)]
mod server_point_tests {
    use super::*;

    fn rows(n: usize) -> Vec<Interval> {
        (0..n)
            .map(|i| Interval {
                start_s: i as f64,
                period_s: 1.0,
                ..Default::default()
            })
            .collect()
    }

    fn point(t: f64, rate: bool) -> ServerPoint {
        ServerPoint {
            elapsed_s: t,
            target: String::new(),
            series: "x".into(),
            value: 1.0,
            rate,
        }
    }

    #[test]
    fn a_gauge_belongs_to_the_interval_it_opens_and_a_rate_to_the_one_it_closes() {
        let r = rows(10);
        // The scrape at 5 s: the gauge shows the stage that starts at 5 s, the rate covers 4–5 s.
        assert_eq!(point(5.0, false).row(&r), Some(5));
        assert_eq!(point(5.0, true).row(&r), Some(4));
        // The first scrape, at 1 s.
        assert_eq!(point(1.0, false).row(&r), Some(1));
        assert_eq!(point(1.0, true).row(&r), Some(0));
        // The scrape at the very end: the last row for both; beyond it, none.
        assert_eq!(point(10.0, false).row(&r), Some(9));
        assert_eq!(point(10.0, true).row(&r), Some(9));
        assert_eq!(point(11.0, false).row(&r), None);
        assert_eq!(point(11.0, true).row(&r), None);
        assert_eq!(point(1.0, false).row(&[]), None);
        assert_eq!(point(0.5, false).row(&r), Some(0));
        // Micrometer's CPU gauges average the past: like a rate.
        let cpu = ServerPoint {
            series: "process_cpu_usage".into(),
            ..point(5.0, false)
        };
        assert_eq!(cpu.row(&r), Some(4));
    }
}
