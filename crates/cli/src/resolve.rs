//! `volley run`'s flags resolved in one place, as ripgrep turns its `LowArgs` into `HiArgs`:
//! the flags as clap parses them ([`RunArgs`]) and the scenario file under them become a
//! [`Resolved`] run — every check that needs no network, done once — and, where this process
//! runs the plan, a [`GroupSpec`] with the target's name resolved ([`Resolved::group`]).
//!
//! `run`, `sweep` and `k8s manifest` call [`resolve`] and nothing else, so a flag is parsed and
//! checked the same way wherever it is given: a new flag is one field of [`Resolved`] and one
//! line of [`resolve`]. The only difference between the callers is [`Runner`]: who runs the
//! plan, this process or the pods of an Indexed Job, whose target name, segment and `env.`
//! values are theirs, not this machine's.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, bail};
use volley_engine::{EngineConfig, SourceAddrs, Target, TlsOptions};
use volley_export::OutputSpec;
use volley_record::{GroupSpec, PopulationSpec, RunSpec};
use volley_scenario::{Plan, RequestSpec, Scenario, Segment, Settings, Warmup, Work};

use crate::args::{ProgressMode, RunArgs};

/// Who runs the plan the flags describe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Runner {
    /// This process: the whole plan, or the `--segment` (or `--segments` with
    /// `$JOB_COMPLETION_INDEX`) the flags name.
    Here,
    /// `volley k8s manifest`: `segments` pods, each running one segment. The target's name is
    /// resolved in the pods, and the scenario's `env.` values come from the pods' environment
    /// (a Secret when `env_secret`), so neither is looked up here. Every segment must be
    /// runnable, so the plan is checked as its smallest segment, the last one.
    Pods { segments: u64, env_secret: bool },
}

/// A run, as the flags and the scenario describe it, checked: everything but the target's
/// resolved address.
#[derive(Clone)]
pub(crate) struct Resolved {
    /// The command line over the scenario file's settings.
    pub(crate) settings: Settings,
    /// What the engine runs (for a run of populations, their envelope).
    pub(crate) plan: Plan,
    /// The target (a scenario's base URL), not yet resolved.
    pub(crate) url: String,
    /// The scenario's populations (`scenarios:`), each with its plan on the run's clock.
    pub(crate) populations: Vec<PopulationSpec>,
    /// How many times to run the plan (`--repeat`), and the pause between runs.
    pub(crate) repeat: usize,
    pub(crate) pause: Duration,
    pub(crate) interval: Duration,
    pub(crate) grace: Duration,
    /// Left out of the start of every figure (`--warmup`, `warmup:`, as a length of this plan).
    pub(crate) warmup: Duration,
    /// Event loops; `None`: one per core.
    pub(crate) threads: Option<usize>,
    pub(crate) sources: Option<SourceAddrs>,
    pub(crate) tls: TlsOptions,
    pub(crate) http2: bool,
    pub(crate) error_stop: bool,
    /// When a segment starts (`--start-at`, or the next whole second); `None` for a plain run.
    pub(crate) start_at: Option<SystemTime>,
    pub(crate) run_id: Option<String>,
    pub(crate) output: PathBuf,
    pub(crate) server_metrics: Vec<String>,
    /// `--kube`: the workload watched beside the load.
    pub(crate) kube: Option<volley_kube::Options>,
    /// `--out`, parsed (started only when the run starts).
    pub(crate) outputs: Vec<OutputSpec>,
    /// `--dashboard[=ADDR]`.
    pub(crate) dashboard: Option<SocketAddr>,
    pub(crate) junit: Option<PathBuf>,
    pub(crate) upload: Option<volley_store::Location>,
    pub(crate) progress: ProgressMode,
    /// `--target` (× `--peak-factor`): requests per second, and as given.
    pub(crate) target: Option<(f64, String)>,
}

/// The lowest `--target`, requests per second.
const MIN_TARGET_RATE: f64 = 0.01;

/// `--target RATE` times `--peak-factor F`: requests per second, and the text that says how.
pub(crate) fn target_rate(a: &RunArgs) -> Result<Option<(f64, String)>> {
    let Some(text) = &a.target else {
        return Ok(None);
    };
    // A rate, or a Prometheus server and query (then `text` says what was read).
    let (rate, text) = &crate::prom_target::target(text)?;
    let rate = *rate;
    // A target of almost nothing makes a headroom of hundreds of digits.
    if rate < MIN_TARGET_RATE {
        bail!(
            "--target {text}: give at least {MIN_TARGET_RATE}/s (36/h, 864/day), like 220.69/s or 19080000/day; a lower target needs no load test"
        );
    }
    let factor = a.peak_factor.unwrap_or(1.0);
    if !factor.is_finite() || factor <= 0.0 || factor > 1000.0 {
        bail!(
            "--peak-factor {factor}: give the peak over the average, above 0 and at most 1000 (e.g. 3)"
        );
    }
    let given = if factor == 1.0 {
        text.clone()
    } else {
        format!("{text} × {factor}")
    };
    Ok(Some((rate * factor, given)))
}

/// Reads a scenario file; its errors list file, line and column. `env` gives the values of
/// the `env.NAME`s it reads.
pub(crate) fn load_scenario_with(
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Scenario> {
    volley_scenario::load_scenario_with(path, env).map_err(|errors| {
        let n = errors.problems().len();
        anyhow::anyhow!(
            "{n} problem{} in the scenario:\n{errors}",
            if n == 1 { "" } else { "s" }
        )
    })
}

/// Reads a scenario file with this process's environment.
pub(crate) fn load_scenario(path: &Path) -> Result<Scenario> {
    load_scenario_with(path, &|name| std::env::var(name).ok())
}

/// The one way from `volley run`'s flags to a checked run.
/// The most worker threads a run takes.
const MAX_THREADS: usize = 1024;

pub(crate) fn resolve(a: &RunArgs, runner: Runner) -> Result<Resolved> {
    let flags = flag_settings(a);
    let segment = match runner {
        Runner::Here => crate::segment_flags::segment(a)?,
        Runner::Pods { segments, .. } => Segment::new(segments.saturating_sub(1), segments)?,
    };
    if let Runner::Pods { .. } = runner {
        for (flag, given, what) in [
            (
                "--body-file",
                a.body_file.as_deref(),
                "give the body with --body, or write a scenario",
            ),
            (
                "--cacert",
                a.cacert.as_deref(),
                "build an image that trusts the CA, or use --insecure",
            ),
        ] {
            if let Some(f) = given {
                bail!(
                    "{flag} {}: the pods cannot read files from this machine; {what}",
                    f.display()
                );
            }
        }
        if let Some(t) = &a.target {
            bail!(
                "--target {t}: each pod runs a share of the load, so its TPS says nothing of the target; judge the merged run instead: volley k8s collect ..., then read its TPS against {t}"
            );
        }
        if let Some(j) = &a.junit {
            bail!(
                "--junit {}: a pod's files are gone when it ends (only its run directory is uploaded); gate the merged run instead: volley k8s collect ..., then volley compare --junit FILE",
                j.display()
            );
        }
    }
    let (settings, scenario) = match &a.scenario {
        Some(path) => {
            if !a.headers.is_empty()
                || a.body.is_some()
                || a.body_file.is_some()
                || a.method != "GET"
            {
                bail!(
                    "-X, --header, --body and --body-file are for single-URL runs; with a scenario, put them on its steps"
                );
            }
            if a.dashboard.as_deref() == Some("") && !path.exists() {
                // `--dashboard 127.0.0.1:8089`: the address went to the scenario's place.
                bail!(
                    "{0}: no such scenario file. If {0} is the dashboard's address, write it with `=`: --dashboard={0}",
                    path.display()
                );
            }
            let mut sc = match runner {
                Runner::Here => load_scenario(path)?,
                // The pods' environment has the values: here only whether the file reads any.
                Runner::Pods { env_secret, .. } => {
                    let sc = load_scenario_with(path, &|_| Some(String::new()))?;
                    if !sc.env.is_empty() && !env_secret {
                        let names: Vec<String> =
                            sc.env.iter().map(|(n, _)| format!("env.{n}")).collect();
                        bail!(
                            "the scenario reads {} from the environment, and the pods need them too: put them in a Secret (kubectl create secret generic volley-env --from-literal={}=...) and pass --env-secret volley-env",
                            names.join(", "),
                            sc.env[0].0
                        );
                    }
                    sc
                }
            };
            sc.for_segment(segment)?;
            let mut settings = flags.clone().merge(&sc.settings);
            // A run judges the file's service level (`slo:`) as thresholds.
            settings.thresholds.extend(sc.slo.iter().cloned());
            settings.name = settings.name.or_else(|| {
                sc.file
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
            });
            (settings, Some(Arc::new(sc)))
        }
        None => (flags.clone(), None),
    };
    if let Some(name) = &settings.name
        && name.chars().count() > volley_scenario::limits::MAX_NAME_LEN
    {
        bail!(
            "the run's name is {} characters; at most {} (it names the run directory, with a time stamp before it): give a shorter --name or `name:`",
            name.chars().count(),
            volley_scenario::limits::MAX_NAME_LEN
        );
    }
    let url = settings
        .target
        .clone()
        .context("--url is required without a scenario")?;
    let work = match &scenario {
        Some(sc) => Work::Scenario(sc.clone()),
        None => Work::Request(flag_request(a, &url)?),
    };
    if scenario.is_none()
        && let Some(t) = settings
            .thresholds
            .iter()
            .find(|t| t.metric == volley_scenario::threshold::Metric::Iteration)
    {
        bail!(
            "--threshold `{}`: an iteration is a scenario's whole flow, and a single-URL run has none; judge its requests with `total` (e.g. total p95 < 1s)",
            t.expr
        );
    }
    let mut settings = settings;
    let populations = match scenario.as_deref() {
        Some(sc) if !sc.populations.is_empty() => {
            // Each population's own thresholds are the run's too (judged on its rows).
            settings.thresholds.extend(
                sc.populations
                    .iter()
                    .flat_map(|p| p.scenario.settings.thresholds.iter().cloned()),
            );
            population_specs(sc, &flags, &settings, segment)?
        }
        _ => {
            if let Some(t) = settings.thresholds.iter().find(|t| t.population.is_some()) {
                bail!(
                    "--threshold `{}`: `{}.` names a population, but this run has none (populations are a scenario file's `scenarios:`); write `{}`",
                    t.expr,
                    t.population.as_deref().unwrap_or_default(),
                    t.local_expr()
                );
            }
            Vec::new()
        }
    };
    // Thresholds no run can pass together fail every run: said before any load is sent.
    if let Some(why) = volley_scenario::threshold::unmeetable(&settings.thresholds) {
        bail!("the thresholds can never pass: {why}");
    }
    let mut plan = if populations.is_empty() {
        settings.plan(work)?
    } else {
        envelope(&settings, work, &populations)
    };
    if populations.is_empty() {
        // Each population's share was checked on its own load.
        segment.check(&plan.load)?;
    }
    plan.segment = segment;
    let (repeat, pause) = settings.load.repeat()?;
    if repeat > 1 && !segment.is_whole() {
        bail!(
            "--repeat and a split run (--segment, --segments, k8s manifest) do not go together: every segment of a run starts at the same instant; run the segments again (a new --run-id) to repeat them"
        );
    }
    if a.http3 && !url.starts_with("https://") {
        bail!(
            "--http3 needs an https:// URL ({url} is not): HTTP/3 runs only over QUIC, which is always encrypted; write https://... (with --cacert FILE or --insecure for a self-signed certificate)"
        );
    }
    if a.threads == Some(0) {
        bail!("--threads must be at least 1 (one event loop per thread; default: one per core)");
    }
    if let Some(t) = a.threads
        && t > MAX_THREADS
    {
        bail!(
            "--threads {t} is more event loops than any machine runs well (at most {MAX_THREADS}; one per core is best, the default)"
        );
    }
    let warmup = match settings.warmup {
        Some(Warmup::Stages(_)) if !populations.is_empty() => bail!(
            "--warmup stage:N counts the stages of one load, and each population has its own: give the warm-up as a time, e.g. --warmup 30s"
        ),
        Some(w) => w
            .length(&plan.load)
            .map_err(|e| anyhow::anyhow!("--warmup {w}: {e}"))?,
        None => Duration::ZERO,
    };
    let dashboard = a
        .dashboard
        .as_deref()
        .map(|text| volley_live::parse_addr(Some(text)))
        .transpose()
        .map_err(|e| anyhow::anyhow!("--dashboard {e}"))?;
    if runner == Runner::Here {
        crate::ci::check_junit_path(a.junit.as_deref())?;
    }
    if repeat > 1 && a.upload.is_some() {
        bail!(
            "--upload takes one run directory; with --repeat, upload the group directory afterwards or drop --repeat"
        );
    }
    let start_at = match runner {
        Runner::Here => crate::segment_flags::start_at(a, segment)?,
        // The manifest gives the pods their start (`--start-in`).
        Runner::Pods { .. } => None,
    };
    Ok(Resolved {
        settings,
        plan,
        url,
        populations,
        repeat,
        pause,
        interval: a.interval,
        grace: a.grace,
        warmup,
        threads: a.threads,
        sources: a.source_addrs.clone(),
        tls: TlsOptions {
            insecure: a.insecure,
            cacert: a.cacert.clone(),
            http3: a.http3,
        },
        http2: a.http2,
        error_stop: !a.no_error_stop,
        start_at,
        run_id: a.run_id.clone(),
        output: a.output.clone(),
        server_metrics: a.server_metrics.clone(),
        kube: kube_options(a, scenario.as_deref(), segment)?,
        outputs: a.outs.clone(),
        dashboard,
        junit: a.junit.clone(),
        upload: a.upload.clone(),
        progress: a.progress,
        target: target_rate(a)?,
    })
}

/// `--kube` (else the scenario's `kube:`) with `--kube-context` (else `kube_context:`). In a
/// split run only segment 0 watches: the others say so in run.json's `kube` note.
fn kube_options(
    a: &RunArgs,
    scenario: Option<&Scenario>,
    segment: Segment,
) -> Result<Option<volley_kube::Options>> {
    let specs = match scenario {
        Some(sc) if a.kube.is_empty() => sc
            .kube
            .iter()
            .map(|v| volley_kube::Spec::parse(v))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| anyhow::anyhow!("{}: `kube:`: {e}", sc.file.display()))?,
        _ => a.kube.clone(),
    };
    if specs.is_empty() {
        if let Some(c) = &a.kube_context {
            bail!(
                "--kube-context {c} without --kube: name the workload to watch (e.g. --kube deployment/chat, or `kube:` in the scenario file)"
            );
        }
        if let Some(c) = scenario.and_then(|sc| sc.kube_context.as_ref()) {
            bail!(
                "`kube_context: {c}` without `kube:`: name the workload to watch (e.g. `kube: deployment/chat`) or drop kube_context"
            );
        }
        return Ok(None);
    }
    let off = (segment.index > 0).then(|| {
        format!(
            "--kube is off in segment {}/{}: segment 0 watches the cluster for the whole run, and the merge keeps its record",
            segment.index, segment.count
        )
    });
    Ok(Some(volley_kube::Options {
        specs,
        context: a
            .kube_context
            .clone()
            .or_else(|| scenario.and_then(|sc| sc.kube_context.clone())),
        kubeconfig: None,
        off,
    }))
}

/// One constant load, as a capacity probe holds it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum ConstantLoad {
    /// Arrivals per second (open model), and the seed of Poisson arrivals when they are.
    Rate(f64, Option<u64>),
    /// Virtual users (closed model).
    Vus(u64),
}

impl Resolved {
    /// The same run at one constant `load` for `warmup` + `length`, the warm-up left out of its
    /// figures, judged by `slo`: what a capacity probe runs. Nothing is parsed or read again
    /// (the scenario file neither); the load's other options (`--max-vus`, `--connections`,
    /// `--arrivals`, pacing) stay as given.
    pub(crate) fn with_load(
        &self,
        load: ConstantLoad,
        length: Duration,
        warmup: Duration,
        slo: &[volley_scenario::Threshold],
    ) -> Result<Resolved> {
        let mut r = self.clone();
        let mut shape = volley_scenario::LoadSpec {
            duration: Some(warmup + length),
            ..Default::default()
        };
        match load {
            ConstantLoad::Rate(rate, seed) => {
                shape.rate = Some(rate);
                if let Some(seed) = seed {
                    shape.arrivals = Some(volley_scenario::Arrivals::Poisson { seed });
                }
            }
            ConstantLoad::Vus(vus) => shape.vus = Some(vus),
        }
        // The probe's shape replaces the run's whole shape; `--repeat` is the search's.
        r.settings.load = shape.merge(&self.settings.load);
        r.settings.load.repeat = None;
        r.settings.load.repeat_pause = None;
        r.settings.warmup = Some(Warmup::Time(warmup));
        r.warmup = warmup;
        r.settings.thresholds = slo.to_vec();
        r.plan.load = r.settings.load.resolve()?;
        r.plan.segment.check(&r.plan.load)?;
        (r.repeat, r.pause) = (1, Duration::ZERO);
        r.target = None;
        r.progress = ProgressMode::None;
        Ok(r)
    }

    /// The run's name: `--name`, the scenario's (`name:`, else its file's stem), else the
    /// URL's ([`volley_scenario::default_run_name`]: its path's last segment, else its host).
    pub(crate) fn name(&self) -> String {
        self.settings
            .name
            .clone()
            .unwrap_or_else(|| volley_scenario::default_run_name(&self.url))
    }

    /// What `volley-record` runs, with the target's name resolved (the one step that needs
    /// the network), and how often.
    pub(crate) fn group(&self) -> Result<GroupSpec> {
        let mut target = Target::resolve(&self.url)?;
        if let Some(sources) = &self.sources {
            target = target.with_sources(sources.clone())?;
        }
        let run = RunSpec {
            name: self.name(),
            engine: EngineConfig {
                plan: self.plan.clone(),
                target,
                tls: self.tls.clone(),
                http2: self.http2,
                interval: self.interval,
                threads: self.threads.unwrap_or_else(EngineConfig::default_threads),
                grace: self.grace,
                error_stop: self.error_stop,
                start_at: self.start_at,
            },
            output: self.output.clone(),
            warmup: self.warmup,
            server_metrics: self.server_metrics.clone(),
            thresholds: self.settings.thresholds.clone(),
            command: volley_scenario::secret::mask_args(std::env::args()),
            run_id: self.run_id.clone(),
            populations: self.populations.clone(),
            kube: self.kube.clone(),
        };
        Ok(GroupSpec {
            run,
            repeat: self.repeat,
            pause: self.pause,
        })
    }
}

/// The settings the flags give (typed as clap parsed them; a scenario's go under them:
/// [`Settings::merge`]).
fn flag_settings(a: &RunArgs) -> Settings {
    Settings {
        load: a.load.0.clone(),
        target: a.url.clone(),
        name: a.name.clone(),
        timeout: a.timeout,
        warmup: a.warmup,
        expect_status: a.expect_status.clone(),
        thresholds: a.thresholds.clone(),
    }
}

/// The request of a single-URL run: method, headers and body from the flags.
fn flag_request(a: &RunArgs, url: &str) -> Result<RequestSpec> {
    let body = match (&a.body, &a.body_file) {
        (Some(b), _) => b.clone().into_bytes(),
        (None, Some(path)) => {
            volley_scenario::limits::read_bounded(path, volley_scenario::limits::MAX_BODY_FILE)
                .map_err(|e| anyhow::anyhow!("--body-file: {e}"))?
        }
        (None, None) => Vec::new(),
    };
    Ok(RequestSpec {
        method: a.method.to_ascii_uppercase(),
        url: url.to_string(),
        headers: a.headers.clone(),
        body,
    })
}

/// The populations of `scenario` under the run's `settings` (the command line over the
/// file's top level): each keeps its own load and thresholds, takes the command line's
/// timeout and expected statuses, runs segment `segment` of its load, starts at its offset.
/// Load flags other than --repeat/--repeat-pause are refused: each population has its own.
fn population_specs(
    scenario: &Scenario,
    flags: &Settings,
    settings: &Settings,
    segment: Segment,
) -> Result<Vec<PopulationSpec>> {
    let names: Vec<&str> = scenario
        .populations
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    let shaping: Vec<String> = flags
        .load
        .given()
        .into_iter()
        .filter(|k| volley_scenario::load::role_of(k) != volley_scenario::load::Role::Runs)
        .map(|k| format!("--{}", k.replace('_', "-")))
        .collect();
    if !shaping.is_empty() {
        bail!(
            "{} would apply to every scenario of {} ({}), each of which has its own load; set the load in each scenario under `scenarios:` (or the shared defaults in the file's top-level `load`)",
            shaping.join(", "),
            scenario.file.display(),
            names.join(", ")
        );
    }
    for t in &settings.thresholds {
        if let Some(p) = &t.population
            && !names.contains(&p.as_str())
        {
            bail!(
                "--threshold `{}`: the scenario has no population `{p}`; its scenarios are {}",
                t.expr,
                names.join(", ")
            );
        }
    }
    let mut out = Vec::new();
    for p in &scenario.populations {
        let own = &p.scenario.settings;
        let pop = Settings {
            load: own.load.clone(),
            target: settings.target.clone(),
            name: Some(p.name.clone()),
            timeout: flags.timeout.or(own.timeout),
            warmup: None,
            expect_status: flags
                .expect_status
                .clone()
                .or_else(|| own.expect_status.clone()),
            thresholds: Vec::new(),
        };
        let mut plan = pop
            .plan(Work::Scenario(p.scenario.clone()))
            .map_err(|e| anyhow::anyhow!("scenario `{}`: {e}", p.name))?;
        segment
            .check(&plan.load)
            .map_err(|e| anyhow::anyhow!("scenario `{}`: {e}", p.name))?;
        let load = plan.load.clone();
        plan.load = load.delayed(p.start);
        plan.load.check().map_err(|e| {
            anyhow::anyhow!(
                "scenario `{}` (with its start {}): {e}",
                p.name,
                humantime::format_duration(p.start)
            )
        })?;
        plan.segment = segment;
        let thresholds = settings
            .thresholds
            .iter()
            .filter(|t| t.population.as_deref() == Some(p.name.as_str()))
            .cloned()
            .collect();
        out.push(PopulationSpec {
            name: p.name.clone(),
            plan,
            load,
            start: p.start,
            thresholds,
        });
    }
    Ok(out)
}

/// The plan of a run of populations: the run's timeouts, the scenario with every step, and
/// no load of its own ([`RunSpec::envelope`]).
fn envelope(settings: &Settings, work: Work, populations: &[PopulationSpec]) -> Plan {
    let base = Plan {
        work,
        load: populations[0].plan.load.clone(),
        timeout: settings
            .timeout
            .unwrap_or(volley_scenario::plan::DEFAULT_TIMEOUT),
        expect_status: settings.expect_status.clone().unwrap_or_default(),
        segment: Segment::WHOLE,
    };
    RunSpec::envelope(base, populations)
}
