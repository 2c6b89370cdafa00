//! Recording a run: a resolved plan ([`RunSpec`]) run by the engine, every interval written
//! to a run directory as it ends, the server's own metrics scraped beside it, and run.json
//! kept current (plan, status, errors, scrapes).
//!
//! It is a library, not part of the binary, so that `volley run`, `volley demo`,
//! `volley sweep`, the tests — and any later launcher that runs segments of one plan —
//! all record a run the same way by calling [`record`] with a typed plan. Reports are
//! computed afterwards from what is on disk (`volley-report`), never from memory.

use std::path::{Path, PathBuf};
use std::time::Duration;

use volley_engine::scrape::ScrapeSample;
use volley_engine::{
    EngineConfig, EngineError, Event, Retarget, RunControl, StopReason, Target, TlsOptions,
};
use volley_formats::recorded::{RecordedData, RecordedScenario};
pub use volley_formats::rundir::OutputNote;
use volley_formats::rundir::{ErrorNote, PlanChangeNote, ScrapeNote};
use volley_formats::segment::SegmentNote;
use volley_formats::{FormatError, RecordedPlan, RunMeta, RunStatus, RunWriter};
use volley_scenario::{Load, Plan, Threshold};
use volley_stats::{ErrorMessage, Interval, IntervalSample};

/// Everything needed to record one run.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// What the engine runs: plan, target, TLS, protocol, interval, threads, grace.
    pub engine: EngineConfig,
    /// The run's name (in the directory name and reports).
    pub name: String,
    /// The directory run directories are written under.
    pub output: PathBuf,
    /// Excluded from the start of every reported figure.
    pub warmup: Duration,
    /// Prometheus / OpenMetrics endpoints scraped every interval.
    pub server_metrics: Vec<String>,
    /// Pass/fail criteria, recorded with the plan.
    pub thresholds: Vec<Threshold>,
    /// The command line that asked for it (recorded in run.json).
    pub command: Vec<String>,
    /// The id every segment of a split run records (`plan.segment` says which share this
    /// is); `None`: made from the start time and the plan's hash ([`RunSpec::run_id`]).
    pub run_id: Option<String>,
    /// Populations run side by side ([`populations`]); then `engine.plan` is the run's
    /// envelope ([`RunSpec::envelope`]: the scenario with every step, no load of its own)
    /// and the populations' plans are what the engine runs.
    pub populations: Vec<PopulationSpec>,
}

impl RunSpec {
    /// A run of `plan` against `target` with the defaults `volley run` uses: 1 s intervals,
    /// a worker per core, 5 s of grace, nGrinder's error stop, `runs/` as output.
    pub fn new(plan: Plan, target: Target) -> RunSpec {
        let name = target.host.clone();
        RunSpec {
            engine: EngineConfig {
                plan,
                target,
                tls: TlsOptions::default(),
                http2: false,
                interval: Duration::from_secs(1),
                threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
                grace: Duration::from_secs(5),
                error_stop: true,
                start_at: None,
            },
            name,
            output: PathBuf::from("runs"),
            warmup: Duration::ZERO,
            server_metrics: Vec::new(),
            thresholds: Vec::new(),
            command: std::env::args().collect(),
            run_id: None,
            populations: Vec::new(),
        }
    }

    /// The plan of a run of `populations`: `base` (request, timeout, the scenario that lists
    /// every step) with a load of no VUs as long as the longest population runs, which is
    /// what the run's clock, planned length and progress go by.
    pub fn envelope(base: Plan, populations: &[PopulationSpec]) -> Plan {
        let end = populations
            .iter()
            .map(|p| p.plan.load.duration())
            .max()
            .unwrap_or_default();
        let shape = volley_scenario::LoadShape {
            stages: vec![volley_scenario::Stage {
                duration: end,
                target: 0,
            }],
        };
        Plan {
            load: Load {
                model: volley_scenario::Model::Closed { shape },
                pacing: Duration::ZERO,
                think_time: Duration::ZERO,
                connections: None,
            },
            ..base
        }
    }

    /// The run id segments record: the one given, or `<start at, Unix s>-<plan hash>` when
    /// the segments share a start time, or `plan-<plan hash>` (then only the start times
    /// tell two runs of one plan apart: give `run_id`).
    pub fn run_id(&self) -> String {
        if let Some(id) = &self.run_id {
            return id.clone();
        }
        let hash = volley_formats::segment::plan_hash(&self.recorded_plan());
        match self
            .engine
            .start_at
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        {
            Some(at) => format!("{}-{}", at.as_secs(), &hash[..8]),
            None => format!("plan-{}", &hash[..8]),
        }
    }

    /// Whether this run is a segment of a split run (or was given a run id to share).
    pub fn is_segment(&self) -> bool {
        !self.engine.plan.segment.is_whole() || self.run_id.is_some()
    }

    /// The plan as run.json records it.
    pub fn recorded_plan(&self) -> RecordedPlan {
        let plan = &self.engine.plan;
        RecordedPlan {
            load: plan.load.clone(),
            request: plan.request.clone(),
            timeout_s: plan.timeout.as_secs_f64(),
            expect_status: plan.expect_status.clone(),
            http2: self.engine.http2,
            thresholds: self.thresholds.clone(),
            threads: self.engine.threads,
            populations: self
                .populations
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    p.recorded(populations::threads_of(
                        i,
                        self.populations.len(),
                        self.engine.threads,
                    ))
                })
                .collect(),
            scenario: plan.scenario.as_ref().map(|s| RecordedScenario {
                file: s.file.clone(),
                name: s.settings.name.clone(),
                target: s.target().to_string(),
                steps: s.step_info.clone(),
                data: s
                    .data
                    .iter()
                    .map(|d| RecordedData {
                        name: d.name.clone(),
                        file: d.file.clone(),
                        rows: d.rows.len(),
                    })
                    .collect(),
            }),
        }
    }

    /// run.json as it starts: status `running`.
    pub fn meta(&self) -> RunMeta {
        RunMeta {
            interval_s: self.engine.interval.as_secs_f64(),
            warmup_s: self.warmup.as_secs_f64(),
            command: self.command.clone(),
            host: volley_formats::rundir::host_name(),
            pid: Some(std::process::id()),
            server_metrics: self
                .server_metrics
                .iter()
                .map(|u| ScrapeNote {
                    url: u.clone(),
                    ..Default::default()
                })
                .collect(),
            steps: self
                .engine
                .plan
                .scenario
                .as_ref()
                .map_or_else(Vec::new, |s| s.step_info.clone()),
            segment: self.is_segment().then(|| SegmentNote {
                segment: self.engine.plan.segment,
                run_id: self.run_id(),
                plan_hash: volley_formats::segment::plan_hash(&self.recorded_plan()),
                start_at: self
                    .engine
                    .start_at
                    .and_then(|t| jiff::Timestamp::try_from(t).ok())
                    .map(|t| t.to_string()),
                start_lag_ms: 0.0,
                clock: clock_note(),
            }),
            ..RunMeta::new(&self.name, self.recorded_plan())
        }
    }
}

/// What a caller sees while a run records; every method has a default that does nothing.
///
/// Live consumers (the terminal's progress line, the dashboard, metric outputs) are observers:
/// they see each interval as the recorder wrote it, after the run directory has it, so
/// nothing they show can disagree with what the report later computes from disk.
pub trait Observer {
    /// The run started and its directory exists; `run.control` stops it (Ctrl-C, a test).
    fn started(&mut self, _run: &RunStart<'_>) {}
    /// An interval ended and was written.
    fn interval(&mut self, _interval: &IntervalView<'_>) {}
    /// A scrape of the server's metrics (`--server-metrics`) was written.
    fn server(&mut self, _scrape: &ScrapeSample) {}
    /// The plan was changed live ([`RunControl::set_vus`], [`RunControl::set_rate`]) and
    /// run.json records it.
    fn plan_changed(&mut self, _change: &PlanChangeNote) {}
    /// The load is over (the run directory is being closed).
    fn finished(&mut self) {}
    /// Live outputs this observer sent the run to, with how sending went; asked once per
    /// run, after [`Observer::finished`], and written to run.json's `outputs`.
    fn outputs(&mut self) -> Vec<OutputNote> {
        Vec::new()
    }
    /// A group's run `index` (0-based) of `of` is about to start.
    fn run_starting(&mut self, _index: usize, _of: usize) {}
    /// A run was recorded (its run directory is closed).
    fn run_recorded(&mut self, _run: &Recorded) {}
    /// Whether a group should go on to its next run (`false` once the user asked to stop);
    /// asked before every run and during pauses.
    fn keep_going(&mut self) -> bool {
        true
    }
}

/// A run that has just started.
pub struct RunStart<'a> {
    /// Its run directory.
    pub dir: &'a Path,
    /// Stops the run.
    pub control: RunControl,
    /// run.json as it starts (name, run id, plan, steps, segment).
    pub meta: &'a RunMeta,
    /// Wall-clock start: interval `k` covers `[k·interval, (k+1)·interval)` from it.
    pub started: std::time::SystemTime,
}

/// One interval as it was written to the run directory.
pub struct IntervalView<'a> {
    /// Its index from the start of the run (0-based).
    pub index: u64,
    /// Its nGrinder-shaped row.
    pub row: &'a Interval,
    /// The raw sample, histograms included.
    pub sample: &'a IntervalSample,
    /// The same per scenario step, by step id (empty without a scenario).
    pub steps: &'a [IntervalSample],
    /// The VU target at the end of the interval.
    pub target_vus: u64,
    /// Error messages first seen in this interval.
    pub messages: &'a [ErrorMessage],
}

/// Several observers watching one run, in order; a group goes on only while all agree.
pub struct Observers<'a>(pub Vec<&'a mut dyn Observer>);

impl Observer for Observers<'_> {
    fn started(&mut self, run: &RunStart<'_>) {
        self.0.iter_mut().for_each(|o| o.started(run));
    }
    fn interval(&mut self, interval: &IntervalView<'_>) {
        self.0.iter_mut().for_each(|o| o.interval(interval));
    }
    fn server(&mut self, scrape: &ScrapeSample) {
        self.0.iter_mut().for_each(|o| o.server(scrape));
    }
    fn plan_changed(&mut self, change: &PlanChangeNote) {
        self.0.iter_mut().for_each(|o| o.plan_changed(change));
    }
    fn finished(&mut self) {
        self.0.iter_mut().for_each(|o| o.finished());
    }
    fn outputs(&mut self) -> Vec<OutputNote> {
        self.0.iter_mut().flat_map(|o| o.outputs()).collect()
    }
    fn run_starting(&mut self, index: usize, of: usize) {
        self.0.iter_mut().for_each(|o| o.run_starting(index, of));
    }
    fn run_recorded(&mut self, run: &Recorded) {
        self.0.iter_mut().for_each(|o| o.run_recorded(run));
    }
    fn keep_going(&mut self) -> bool {
        self.0.iter_mut().fold(true, |all, o| o.keep_going() && all)
    }
}

/// An observer that watches nothing.
pub struct Quiet;

impl Observer for Quiet {}

/// A recorded run.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Its run directory.
    pub dir: PathBuf,
    /// How it ended.
    pub status: RunStatus,
    /// Why it stopped early, when it did.
    pub reason: Option<String>,
}

/// Why a run could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The target did not answer before the run (nothing was sent or written), or the
    /// engine could not start.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The run directory could not be written.
    #[error(transparent)]
    Write(#[from] FormatError),
}

mod group;
pub mod populations;
pub use group::{GroupSpec, RecordedGroup, record_group};
pub use populations::PopulationSpec;

/// Checks the target answers, runs the plan, and writes its run directory as it goes.
pub fn record(spec: &RunSpec, observer: &mut dyn Observer) -> Result<Recorded, RecordError> {
    if !spec.populations.is_empty() {
        return populations::record_populations(spec, observer);
    }
    let engine = &spec.engine;
    volley_engine::preflight(&engine.target, &engine.tls, engine.timeout_for_preflight())?;
    let run = volley_engine::start(engine.clone())?;
    let mut meta = spec.meta();
    if let Ok(t) = jiff::Timestamp::try_from(run.started) {
        meta.started_at = t.to_string();
    }
    if let Some(note) = &mut meta.segment {
        note.start_lag_ms = run.start_lag.as_secs_f64() * 1000.0;
    }
    let mut writer = RunWriter::create(&spec.output, meta, run.started)?;
    observer.started(&RunStart {
        dir: writer.dir(),
        control: run.control(),
        meta: writer.meta(),
        started: run.started,
    });
    let scraper = (!spec.server_metrics.is_empty()).then(|| {
        volley_engine::scrape::start(
            spec.server_metrics.clone(),
            engine.tls.clone(),
            run.t0,
            engine.interval,
        )
    });
    let mut stopped = None;
    let mut index = 0u64;
    while let Some(event) = run.next_event() {
        match event {
            Event::Interval {
                sample,
                steps,
                row,
                messages,
                target_vus,
            } => {
                writer.write_interval(&sample, &row, &steps)?;
                // Counts every interval (run.json's totals stay whole); written when there is news.
                let news = !messages.is_empty();
                ErrorNote::add(
                    &mut writer.meta_mut().errors,
                    &sample.counts.errors_by_kind,
                    messages.clone(),
                );
                if news {
                    writer.write_meta()?;
                }
                observer.interval(&IntervalView {
                    index,
                    row: &row,
                    sample: &sample,
                    steps: &steps,
                    target_vus,
                    messages: &messages,
                });
                index += 1;
                if let Some(scraper) = &scraper {
                    record_scrapes(&mut writer, scraper, engine.interval, observer)?;
                }
            }
            Event::PlanChanged(change) => {
                let (vus, rate) = match change.to {
                    Retarget::Vus(v) => (Some(v), None),
                    Retarget::Rate(r) => (None, Some(r)),
                };
                let note = PlanChangeNote {
                    at_s: change.at.as_secs_f64(),
                    vus,
                    rate,
                    by: change.by,
                };
                writer.meta_mut().plan_changes.push(note.clone());
                writer.write_meta()?;
                observer.plan_changed(&note);
            }
            Event::End(end) => {
                observer.finished();
                writer.meta_mut().outputs = observer.outputs();
                if let Some(scraper) = &scraper {
                    scraper.stop();
                    record_scrapes(&mut writer, scraper, engine.interval, observer)?;
                }
                stopped = Some(end.stopped);
                break;
            }
        }
    }
    let (status, reason) = match stopped.flatten() {
        None => (RunStatus::Complete, None),
        Some(StopReason::Interrupted) => (
            RunStatus::Interrupted,
            Some("interrupted by the user".to_string()),
        ),
        Some(StopReason::Aborted(why)) => (RunStatus::Aborted, Some(why)),
    };
    writer.finish(status, reason.clone())?;
    Ok(Recorded {
        dir: writer.dir().to_path_buf(),
        status,
        reason,
    })
}

/// Whether this host's clock is NTP-synchronised, as `timedatectl` says (`None` where it
/// cannot say: no systemd, as in most containers).
fn clock_note() -> Option<String> {
    let out = std::process::Command::new("timedatectl")
        .args(["show", "-p", "NTPSynchronized", "--value"])
        .output()
        .ok()?;
    let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && (v == "yes" || v == "no"))
        .then(|| format!("NTP synchronized: {v} (timedatectl)"))
}

/// Writes the scrapes taken so far to server.csv and tallies them in run.json.
fn record_scrapes(
    writer: &mut RunWriter,
    scraper: &volley_engine::scrape::Scraper,
    interval: Duration,
    observer: &mut dyn Observer,
) -> Result<(), FormatError> {
    let mut any = false;
    while let Ok(s) = scraper.samples.try_recv() {
        any = true;
        let elapsed = interval.as_secs_f64() * (s.index + 1) as f64;
        writer.write_server(elapsed, &s.url, &s.values)?;
        if let Some(note) = writer
            .meta_mut()
            .server_metrics
            .iter_mut()
            .find(|n| n.url == s.url)
        {
            match &s.error {
                Some(e) => {
                    note.failed += 1;
                    note.last_error = Some(e.clone());
                }
                None => note.ok += 1,
            }
        }
        observer.server(&s);
    }
    if any {
        writer.write_meta()?;
    }
    Ok(())
}
