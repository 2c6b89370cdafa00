//! `volley run`: turn the flags (and a scenario file's settings under them) into a typed
//! [`RunSpec`], record the run with `volley-record`, then write and print the report.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use volley_engine::{Target, TlsOptions};
use volley_formats::{RunData, RunStatus};
use volley_record::{
    GroupSpec, IntervalView, Observer, Observers, PopulationSpec, Quiet, Recorded, RunSpec,
    RunStart,
};
use volley_report::{ReportOptions, RunReport};
use volley_scenario::{RequestSpec, Scenario, Settings, StatusSet, parse_duration};

use crate::args::{ProgressMode, RunArgs};
use crate::progress::Progress;

fn duration_flag(flag: &str, value: &str) -> Result<Duration> {
    parse_duration(value).map_err(|e| anyhow::anyhow!("--{flag}: {e}"))
}

/// Reads a scenario file; its errors list file, line and column.
pub(crate) fn load_scenario(path: &Path) -> Result<Scenario> {
    volley_scenario::load_scenario(path).map_err(|errors| {
        let n = errors.0.len();
        anyhow::anyhow!(
            "{n} problem{} in the scenario:\n{errors}",
            if n == 1 { "" } else { "s" }
        )
    })
}

/// The settings the flags give, typed (a scenario's go under them: [`Settings::merge`]).
fn flag_settings(a: &RunArgs) -> Result<Settings> {
    let timeout = a
        .timeout
        .as_deref()
        .map(|t| duration_flag("timeout", t))
        .transpose()?;
    if timeout.is_some_and(|t| t.is_zero()) {
        bail!("--timeout must be above zero");
    }
    Ok(Settings {
        load: a.load.0.clone(),
        target: a.url.clone(),
        name: a.name.clone(),
        timeout,
        warmup: a
            .warmup
            .as_deref()
            .map(|w| duration_flag("warmup", w))
            .transpose()?,
        expect_status: a
            .expect_status
            .as_deref()
            .map(|s| StatusSet::parse(s).map_err(|e| anyhow::anyhow!("--expect-status: {e}")))
            .transpose()?,
        thresholds: a
            .thresholds
            .iter()
            .map(|t| {
                volley_scenario::parse_threshold(t).map_err(|e| anyhow::anyhow!("--threshold: {e}"))
            })
            .collect::<Result<_>>()?,
    })
}

/// The request of a single-URL run: method, headers and body from the flags.
fn flag_request(a: &RunArgs, url: &str) -> Result<RequestSpec> {
    let body = match (&a.body, &a.body_file) {
        (Some(b), _) => b.clone().into_bytes(),
        (None, Some(path)) => std::fs::read(path)
            .with_context(|| format!("--body-file {}: cannot read it", path.display()))?,
        (None, None) => Vec::new(),
    };
    let headers = a
        .headers
        .iter()
        .map(|h| RequestSpec::parse_header(h).map_err(|e| anyhow::anyhow!("--header: {e}")))
        .collect::<Result<Vec<_>>>()?;
    Ok(RequestSpec {
        method: a.method.to_ascii_uppercase(),
        url: url.to_string(),
        headers,
        body,
    })
}

/// The flags and the scenario, checked and merged, before the target's name is resolved
/// (what `volley k8s manifest` checks on a machine that may not resolve the target).
pub(crate) struct CheckedRun {
    pub(crate) settings: Settings,
    pub(crate) scenario: Option<Arc<Scenario>>,
    pub(crate) plan: volley_scenario::Plan,
    pub(crate) url: String,
    pub(crate) interval: Duration,
    /// How many times to run the plan (`--repeat`), and the pause between runs.
    pub(crate) repeat: usize,
    pub(crate) pause: Duration,
    /// The scenario's populations (`scenarios:`), each with its plan on the run's clock;
    /// `plan` is then their envelope.
    pub(crate) populations: Vec<PopulationSpec>,
}

/// The populations of `scenario` under the run's `settings` (the command line over the
/// file's top level): each keeps its own load and thresholds, takes the command line's
/// timeout and expected statuses, runs segment `segment` of its load, starts at its offset.
/// Load flags other than --repeat/--repeat-pause are refused: each population has its own.
pub(crate) fn population_specs(
    scenario: &Scenario,
    flags: &Settings,
    settings: &Settings,
    segment: volley_scenario::Segment,
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
        .filter(|k| !k.starts_with("repeat"))
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
    let request = RequestSpec::get(settings.target.clone().unwrap_or_default());
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
            .plan(request.clone(), Some(p.scenario.clone()))
            .map_err(|e| anyhow::anyhow!("scenario `{}`: {e}", p.name))?;
        segment
            .check(&plan.load)
            .map_err(|e| anyhow::anyhow!("scenario `{}`: {e}", p.name))?;
        let load = plan.load.clone();
        plan.load = load.delayed(p.start);
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

/// Every check of the flags that needs no network.
pub(crate) fn check_run(a: &RunArgs) -> Result<CheckedRun> {
    let flags = flag_settings(a)?;
    let segment = crate::segment_flags::segment(a)?;
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
            let mut sc = load_scenario(path)?;
            sc.for_segment(segment)?;
            let mut settings = flags.clone().merge(&sc.settings);
            settings.name = settings.name.or_else(|| {
                sc.file
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
            });
            (settings, Some(Arc::new(sc)))
        }
        None => (flags.clone(), None),
    };
    let url = settings
        .target
        .clone()
        .context("--url is required without a scenario")?;
    let request = match scenario {
        Some(_) => RequestSpec::get(&url),
        None => flag_request(a, &url)?,
    };
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
    let mut plan = if populations.is_empty() {
        settings.plan(request, scenario.clone())?
    } else {
        envelope(&settings, request, scenario.clone(), &populations)
    };
    if populations.is_empty() {
        // Each population's share was checked on its own load.
        segment.check(&plan.load)?;
    }
    plan.segment = segment;
    let (repeat, pause) = settings.load.repeat()?;
    if repeat > 1 && !segment.is_whole() {
        bail!(
            "--repeat and --segment do not go together: every segment of a run starts at the same instant; run the segments again (a new --run-id) to repeat them"
        );
    }
    let interval = duration_flag("interval", &a.interval)?;
    if interval < Duration::from_millis(100) {
        bail!("--interval must be at least 100ms");
    }
    if a.threads == Some(0) {
        bail!("--threads must be at least 1 (one event loop per thread; default: one per core)");
    }
    if let (Some(warmup), Some(planned)) = (settings.warmup, plan.load.planned())
        && warmup >= planned
    {
        bail!(
            "--warmup {}s leaves nothing of the {}s run to report; give a warm-up shorter than the run",
            warmup.as_secs_f64(),
            planned.as_secs_f64()
        );
    }
    duration_flag("grace", &a.grace)?;
    Ok(CheckedRun {
        settings,
        scenario,
        plan,
        url,
        interval,
        repeat,
        pause,
        populations,
    })
}

/// The plan of a run of populations: the run's request and timeouts, the scenario with
/// every step, and no load of its own ([`RunSpec::envelope`]).
pub(crate) fn envelope(
    settings: &Settings,
    request: RequestSpec,
    scenario: Option<Arc<Scenario>>,
    populations: &[PopulationSpec],
) -> volley_scenario::Plan {
    let base = volley_scenario::Plan {
        request,
        load: populations[0].plan.load.clone(),
        timeout: settings
            .timeout
            .unwrap_or(volley_scenario::plan::DEFAULT_TIMEOUT),
        expect_status: settings.expect_status.clone().unwrap_or_default(),
        scenario,
        segment: volley_scenario::Segment::WHOLE,
    };
    RunSpec::envelope(base, populations)
}

/// The flags, checked and resolved into what `volley-record` runs, with how often
/// (`--repeat`, `--repeat-pause`, or the file's `repeat` / `repeat_pause`).
pub(crate) fn run_group_spec(a: &RunArgs) -> Result<GroupSpec> {
    let CheckedRun {
        settings,
        plan,
        url,
        interval,
        repeat,
        pause,
        populations,
        ..
    } = check_run(a)?;
    let mut target = Target::resolve(&url)?;
    if let Some(list) = &a.source_addrs {
        target = target.with_sources(volley_engine::SourceAddrs::parse(list)?)?;
    }
    let mut spec = RunSpec::new(plan, target);
    spec.populations = populations;
    spec.name = settings
        .name
        .clone()
        .unwrap_or_else(|| spec.engine.target.host.clone());
    spec.engine.tls = TlsOptions {
        insecure: a.insecure,
        cacert: a.cacert.clone(),
    };
    spec.engine.http2 = a.http2;
    spec.engine.interval = interval;
    if let Some(t) = a.threads {
        spec.engine.threads = t.max(1);
    }
    spec.engine.grace = duration_flag("grace", &a.grace)?;
    spec.engine.error_stop = !a.no_error_stop;
    spec.output = a.output.clone();
    spec.warmup = settings.warmup.unwrap_or_default();
    spec.server_metrics = a.server_metrics.clone();
    spec.thresholds = settings.thresholds;
    spec.engine.start_at = crate::segment_flags::start_at(a, spec.engine.plan.segment)?;
    spec.run_id = a.run_id.clone();
    Ok(GroupSpec {
        run: spec,
        repeat,
        pause,
    })
}

pub(crate) fn run(args: RunArgs) -> Result<ExitCode> {
    let group = run_group_spec(&args)?;
    crate::ci::check_junit_path(args.junit.as_deref())?;
    // Parsed and started before the run, so that a bad --out fails before any load.
    let mut outputs = args
        .outs
        .iter()
        .map(|s| volley_export::OutputSpec::parse(s).and_then(|o| o.start()))
        .collect::<Result<Vec<_>, _>>()?;
    if group.repeat > 1 && args.upload.is_some() {
        bail!(
            "--upload takes one run directory; with --repeat, upload the group directory afterwards or drop --repeat"
        );
    }
    // Opened before the run, so that a bad endpoint or missing bucket setting fails first.
    let upload = args
        .upload
        .as_ref()
        .map(volley_store::Store::from_env)
        .transpose()?;
    // The dashboard's port also serves `/metrics` (OpenMetrics) for a Prometheus that pulls.
    let mut scrape = volley_export::MetricsEndpoint::new();
    let mut dashboard = args
        .dashboard
        .as_deref()
        .map(|addr| crate::live_cmd::start(addr, &scrape))
        .transpose()?;
    let mut watchers: Vec<&mut dyn Observer> =
        outputs.iter_mut().map(|o| o as &mut dyn Observer).collect();
    if let Some(d) = &mut dashboard {
        watchers.push(&mut scrape);
        watchers.push(d);
    }
    let mut watchers = Observers(watchers);
    let reports = if group.repeat > 1 {
        let (dir, reports) = execute_group_with(&group, args.progress, &mut watchers)?;
        if let (Some(d), Some(last)) = (&dashboard, last_run_dir(&dir)) {
            d.report_ready(&last);
        }
        reports
    } else {
        let (dir, report) = execute_with(&group.run, args.progress, &mut watchers)?;
        if let Some(d) = &dashboard {
            d.report_ready(&dir);
        }
        if let Some(store) = upload {
            let sent = store.upload_dir(&dir)?;
            eprintln!(
                "volley: uploaded {} files ({} bytes) to {}/",
                sent.files.len(),
                sent.bytes,
                store.location()
            );
        }
        vec![report]
    };
    if let Some(d) = &dashboard {
        // Pages that watched the run load its report before volley ends.
        d.wait_for_viewers(Duration::from_secs(10));
    }
    drop(dashboard);
    crate::ci::after_runs(args.junit.as_deref(), &reports)?;
    // A run volley had to stop (too many errors) failed as surely as a threshold.
    let mut failed = false;
    for (i, report) in reports.iter().enumerate() {
        failed |= report.status == RunStatus::Aborted.name() || !report.thresholds_passed();
        if !report.thresholds_passed() {
            let which = if reports.len() > 1 {
                format!(" (run {} of {})", i + 1, reports.len())
            } else {
                String::new()
            };
            eprintln!(
                "volley: thresholds failed{which}: {}",
                report
                    .thresholds
                    .iter()
                    .filter(|t| !t.passed)
                    .map(|t| t.expr.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            );
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// What the terminal shows while a run records: its directory, progress, and Ctrl-C; for
/// a group also which run it is, each run's report as it ends, and whether to go on.
struct Terminal {
    progress: Progress,
    mode: ProgressMode,
    planned: Option<Duration>,
    /// Reports of a group's runs, in order (or why one could not be written).
    reports: Vec<Result<RunReport>>,
}

impl Terminal {
    fn new(mode: ProgressMode, planned: Option<Duration>) -> Terminal {
        Terminal {
            progress: Progress::new(mode, planned),
            mode,
            planned,
            reports: Vec::new(),
        }
    }
}

impl Observer for Terminal {
    fn started(&mut self, run: &RunStart<'_>) {
        eprintln!("volley: run directory {}", run.dir.display());
        let control = run.control.clone();
        // A Ctrl-C that came while this run was starting stops it at once.
        if crate::signals::stop_requested() {
            control.stop(volley_engine::StopReason::Interrupted);
        }
        crate::signals::install(control);
    }

    fn interval(&mut self, iv: &IntervalView<'_>) {
        self.progress.interval(iv.row, iv.sample, iv.target_vus);
    }

    fn finished(&mut self) {
        self.progress.finish();
    }

    fn run_starting(&mut self, index: usize, of: usize) {
        eprintln!("\n== run {} of {of} ==", index + 1);
        self.progress = Progress::new(self.mode, self.planned);
    }

    fn run_recorded(&mut self, run: &Recorded) {
        self.reports.push(write_reports(&run.dir));
    }

    fn keep_going(&mut self) -> bool {
        !crate::signals::stop_requested()
    }
}

/// Records a run group to the end (or until Ctrl-C): every run's report as it ends, then
/// the group summary (each figure's mean and spread across the runs), printed and written
/// as summary.md and summary.json in the group directory.
pub(crate) fn execute_group(
    spec: &GroupSpec,
    progress: ProgressMode,
) -> Result<(PathBuf, Vec<RunReport>)> {
    execute_group_with(spec, progress, &mut Quiet)
}

/// [`execute_group`], with `extra` (the dashboard, `--out`) watching every run after the terminal.
pub(crate) fn execute_group_with(
    spec: &GroupSpec,
    progress: ProgressMode,
    extra: &mut dyn Observer,
) -> Result<(PathBuf, Vec<RunReport>)> {
    let mut terminal = Terminal::new(progress, spec.run.engine.plan.load.planned());
    let recorded = volley_record::record_group(spec, &mut Observers(vec![&mut terminal, extra]))?;
    eprintln!("volley: run group {}", recorded.dir.display());
    let reports = terminal.reports.into_iter().collect::<Result<Vec<_>>>()?;
    write_group_summary(&recorded.dir)?;
    if recorded.status != RunStatus::Complete {
        eprintln!(
            "volley: the group was stopped after {} of {} runs; group.json says which completed",
            recorded.runs.len(),
            spec.repeat
        );
    }
    Ok((recorded.dir, reports))
}

/// Reads a group back and writes (and prints) its summary.
pub(crate) fn write_group_summary(dir: &Path) -> Result<()> {
    let set = match volley_formats::open_run_or_group(dir, None) {
        Ok(set) => set,
        // A group stopped before any run completed has nothing to summarize.
        Err(e) => {
            eprintln!("volley: no group summary: {e}");
            return Ok(());
        }
    };
    let summary = volley_report::group::summarize(&set, ReportOptions::default());
    std::fs::write(dir.join("summary.md"), summary.markdown())?;
    std::fs::write(dir.join("summary.json"), summary.to_json())?;
    println!("{}", summary.table());
    eprintln!(
        "volley: wrote {0}/summary.md and summary.json",
        dir.display()
    );
    Ok(())
}

/// Records a run to the end and returns its run directory and report (written and printed).
pub(crate) fn execute(spec: &RunSpec, progress: ProgressMode) -> Result<(PathBuf, RunReport)> {
    execute_with(spec, progress, &mut Quiet)
}

/// [`execute`], with `extra` (the dashboard, `--out`) watching the run after the terminal.
pub(crate) fn execute_with(
    spec: &RunSpec,
    progress: ProgressMode,
    extra: &mut dyn Observer,
) -> Result<(PathBuf, RunReport)> {
    if spec.is_segment() {
        let seg = spec.engine.plan.segment;
        let wait = spec
            .engine
            .start_at
            .and_then(|t| t.duration_since(std::time::SystemTime::now()).ok())
            .unwrap_or_default();
        eprintln!(
            "volley: segment {seg} of run {}: starting in {:.1} s",
            spec.run_id(),
            wait.as_secs_f64()
        );
    }
    let mut terminal = Terminal::new(progress, spec.engine.plan.load.planned());
    let recorded = volley_record::record(spec, &mut Observers(vec![&mut terminal, extra]))?;
    let report = write_reports(&recorded.dir)?;
    Ok((recorded.dir, report))
}

/// Reads the run directory back (the report is computed from what is on disk), prints the
/// report and writes report.md and report.json beside the data.
pub(crate) fn write_reports(dir: &Path) -> Result<RunReport> {
    let source = volley_formats::Source::from_run(RunData::read(dir)?);
    let opts = ReportOptions::default();
    let report = RunReport::from_source(&source, opts);
    let charts = volley_report::charts::run_charts(&source, opts, &dir.join("charts"))?;
    let links: Vec<(String, String)> = charts
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "png"))
        .filter_map(|p| {
            Some((
                p.file_stem()?.to_string_lossy().into_owned(),
                format!("charts/{}", p.file_name()?.to_string_lossy()),
            ))
        })
        .collect();
    let links: Vec<(&str, &str)> = links
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    std::fs::write(
        dir.join("report.md"),
        volley_report::markdown_with_charts(&report, &links),
    )?;
    std::fs::write(dir.join("report.json"), report.to_json())?;
    std::fs::write(
        dir.join("report.html"),
        volley_report::html::report_page(
            std::slice::from_ref(&source),
            std::slice::from_ref(&report),
            opts,
        ),
    )?;
    println!("{}", volley_report::table(&report));
    eprintln!(
        "volley: wrote {0}/report.html, report.md, report.json and charts/",
        dir.display()
    );
    Ok(report)
}

/// The last run directory of a group (the one the dashboard's page becomes).
fn last_run_dir(group: &Path) -> Option<PathBuf> {
    let meta = volley_formats::group::read_group(group).ok()?;
    meta.runs.last().map(|r| group.join(&r.dir))
}
