//! What a run is: [`RunSpec`], the typed plan and everything around it that `volley-record`
//! runs, and run.json as it starts ([`RunSpec::meta`]).

use std::path::PathBuf;
use std::time::Duration;

use volley_engine::{EngineConfig, Target, TlsOptions};
use volley_rundir::recorded::{RecordedData, RecordedScenario};
use volley_rundir::rundir::ScrapeNote;
use volley_rundir::segment::SegmentNote;
use volley_rundir::{RecordedPlan, RunMeta};
use volley_scenario::{Load, Plan, Threshold};

use crate::populations::{self, PopulationSpec};

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
    /// The Kubernetes workload watched beside the load (`--kube`), into kube.jsonl and
    /// kube.csv; `None`: nothing is watched and nothing more written.
    pub kube: Option<volley_kube::Options>,
}

impl RunSpec {
    /// A run of `plan` against `target` with the defaults `volley run` uses: named after the
    /// URL ([`volley_scenario::default_run_name`]), 1 s intervals,
    /// a worker per core, 5 s of grace, nGrinder's error stop, `runs/` as output.
    pub fn new(plan: Plan, target: Target) -> RunSpec {
        let name = volley_scenario::default_run_name(&target.uri.to_string());
        RunSpec {
            engine: EngineConfig {
                plan,
                target,
                tls: TlsOptions::default(),
                http2: false,
                interval: Duration::from_secs(1),
                threads: EngineConfig::default_threads(),
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
            kube: None,
        }
    }

    /// The plan of a run of `populations`: `base` (timeout, statuses, the scenario that lists
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
                arrivals: Default::default(),
                arrival_wait: Default::default(),
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
        let hash = volley_rundir::segment::plan_hash(&self.recorded_plan());
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
            // run.json travels (--upload, CI artifacts): credentials in headers are kept as ***.
            request: plan.request().cloned().map(|mut r| {
                r.url = volley_scenario::secret::mask_url(&r.url);
                for (n, v) in &mut r.headers {
                    *v = volley_scenario::secret::masked_header_value(n, v);
                }
                r
            }),
            timeout_s: plan.timeout.as_secs_f64(),
            expect_status: plan.expect_status.clone(),
            http2: self.engine.http2,
            http3: self.engine.tls.http3,
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
            scenario: plan.scenario().map(|s| RecordedScenario {
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
            host: volley_rundir::rundir::host_name(),
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
                .scenario()
                .map_or_else(Vec::new, |s| s.step_info.clone()),
            segment: self.is_segment().then(|| SegmentNote {
                segment: self.engine.plan.segment,
                run_id: self.run_id(),
                plan_hash: volley_rundir::segment::plan_hash(&self.recorded_plan()),
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
