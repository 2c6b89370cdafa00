//! `volley run`: turn the flags (and a scenario file's settings under them) into a typed
//! [`RunSpec`], record the run with `volley-record`, then write and print the report.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use volley_engine::{Target, TlsOptions};
use volley_formats::{RunData, RunStatus};
use volley_record::{GroupSpec, IntervalView, Observer, Recorded, RunSpec, RunStart};
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
        anyhow::anyhow!("{n} problem{} in the scenario:\n{errors}", if n == 1 { "" } else { "s" })
    })
}

/// The settings the flags give, typed (a scenario's go under them: [`Settings::merge`]).
fn flag_settings(a: &RunArgs) -> Result<Settings> {
    let timeout = a.timeout.as_deref().map(|t| duration_flag("timeout", t)).transpose()?;
    if timeout.is_some_and(|t| t.is_zero()) {
        bail!("--timeout must be above zero");
    }
    Ok(Settings {
        load: a.load.0.clone(),
        target: a.url.clone(),
        name: a.name.clone(),
        timeout,
        warmup: a.warmup.as_deref().map(|w| duration_flag("warmup", w)).transpose()?,
        expect_status: a
            .expect_status
            .as_deref()
            .map(|s| StatusSet::parse(s).map_err(|e| anyhow::anyhow!("--expect-status: {e}")))
            .transpose()?,
        thresholds: a
            .thresholds
            .iter()
            .map(|t| volley_scenario::parse_threshold(t).map_err(|e| anyhow::anyhow!("--threshold: {e}")))
            .collect::<Result<_>>()?,
    })
}

/// The request of a single-URL run: method, headers and body from the flags.
fn flag_request(a: &RunArgs, url: &str) -> Result<RequestSpec> {
    let body = match (&a.body, &a.body_file) {
        (Some(b), _) => b.clone().into_bytes(),
        (None, Some(path)) => std::fs::read(path).with_context(|| format!("--body-file {}: cannot read it", path.display()))?,
        (None, None) => Vec::new(),
    };
    let headers = a
        .headers
        .iter()
        .map(|h| RequestSpec::parse_header(h).map_err(|e| anyhow::anyhow!("--header: {e}")))
        .collect::<Result<Vec<_>>>()?;
    Ok(RequestSpec { method: a.method.to_ascii_uppercase(), url: url.to_string(), headers, body })
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
}

/// Every check of the flags that needs no network.
pub(crate) fn check_run(a: &RunArgs) -> Result<CheckedRun> {
    let flags = flag_settings(a)?;
    let segment = crate::segment_flags::segment(a)?;
    let (settings, scenario) = match &a.scenario {
        Some(path) => {
            if !a.headers.is_empty() || a.body.is_some() || a.body_file.is_some() || a.method != "GET" {
                bail!("-X, --header, --body and --body-file are for single-URL runs; with a scenario, put them on its steps");
            }
            let mut sc = load_scenario(path)?;
            sc.for_segment(segment)?;
            let mut settings = flags.merge(&sc.settings);
            settings.name = settings.name.or_else(|| sc.file.file_stem().map(|s| s.to_string_lossy().into_owned()));
            (settings, Some(Arc::new(sc)))
        }
        None => (flags, None),
    };
    let url = settings.target.clone().context("--url is required without a scenario")?;
    let request = match scenario {
        Some(_) => RequestSpec::get(&url),
        None => flag_request(a, &url)?,
    };
    let mut plan = settings.plan(request, scenario.clone())?;
    segment.check(&plan.load)?;
    plan.segment = segment;
    let (repeat, pause) = settings.load.repeat()?;
    if repeat > 1 && !segment.is_whole() {
        bail!("--repeat and --segment do not go together: every segment of a run starts at the same instant; run the segments again (a new --run-id) to repeat them");
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
    Ok(CheckedRun { settings, scenario, plan, url, interval, repeat, pause })
}

/// The flags, checked and resolved into what `volley-record` runs, with how often
/// (`--repeat`, `--repeat-pause`, or the file's `repeat` / `repeat_pause`).
pub(crate) fn run_group_spec(a: &RunArgs) -> Result<GroupSpec> {
    let CheckedRun { settings, plan, url, interval, repeat, pause, .. } = check_run(a)?;
    let mut target = Target::resolve(&url)?;
    if let Some(list) = &a.source_addrs {
        target = target.with_sources(volley_engine::SourceAddrs::parse(list)?)?;
    }
    let mut spec = RunSpec::new(plan, target);
    spec.name = settings.name.clone().unwrap_or_else(|| spec.engine.target.host.clone());
    spec.engine.tls = TlsOptions { insecure: a.insecure, cacert: a.cacert.clone() };
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
    Ok(GroupSpec { run: spec, repeat, pause })
}

pub(crate) fn run(args: RunArgs) -> Result<ExitCode> {
    let group = run_group_spec(&args)?;
    crate::ci::check_junit_path(args.junit.as_deref())?;
    if group.repeat > 1 && args.upload.is_some() {
        bail!("--upload takes one run directory; with --repeat, upload the group directory afterwards or drop --repeat");
    }
    // Opened before the run, so that a bad endpoint or missing bucket setting fails first.
    let upload = args.upload.as_ref().map(volley_store::Store::from_env).transpose()?;
    let reports = if group.repeat > 1 {
        execute_group(&group, args.progress)?.1
    } else {
        let (dir, report) = execute(&group.run, args.progress)?;
        if let Some(store) = upload {
            let sent = store.upload_dir(&dir)?;
            eprintln!("volley: uploaded {} files ({} bytes) to {}/", sent.files.len(), sent.bytes, store.location());
        }
        vec![report]
    };
    crate::ci::after_runs(args.junit.as_deref(), &reports)?;
    // A run volley had to stop (too many errors) failed as surely as a threshold.
    let mut failed = false;
    for (i, report) in reports.iter().enumerate() {
        failed |= report.status == RunStatus::Aborted.name() || !report.thresholds_passed();
        if !report.thresholds_passed() {
            let which = if reports.len() > 1 { format!(" (run {} of {})", i + 1, reports.len()) } else { String::new() };
            eprintln!(
                "volley: thresholds failed{which}: {}",
                report.thresholds.iter().filter(|t| !t.passed).map(|t| t.expr.as_str()).collect::<Vec<_>>().join("; ")
            );
        }
    }
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
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
        Terminal { progress: Progress::new(mode, planned), mode, planned, reports: Vec::new() }
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
pub(crate) fn execute_group(spec: &GroupSpec, progress: ProgressMode) -> Result<(PathBuf, Vec<RunReport>)> {
    let mut terminal = Terminal::new(progress, spec.run.engine.plan.load.planned());
    let recorded = volley_record::record_group(spec, &mut terminal)?;
    eprintln!("volley: run group {}", recorded.dir.display());
    let reports = terminal.reports.into_iter().collect::<Result<Vec<_>>>()?;
    write_group_summary(&recorded.dir)?;
    if recorded.status != RunStatus::Complete {
        eprintln!("volley: the group was stopped after {} of {} runs; group.json says which completed", recorded.runs.len(), spec.repeat);
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
    eprintln!("volley: wrote {0}/summary.md and summary.json", dir.display());
    Ok(())
}

/// Records a run to the end and returns its run directory and report (written and printed).
pub(crate) fn execute(spec: &RunSpec, progress: ProgressMode) -> Result<(PathBuf, RunReport)> {
    if spec.is_segment() {
        let seg = spec.engine.plan.segment;
        let wait = spec.engine.start_at.and_then(|t| t.duration_since(std::time::SystemTime::now()).ok()).unwrap_or_default();
        eprintln!("volley: segment {seg} of run {}: starting in {:.1} s", spec.run_id(), wait.as_secs_f64());
    }
    let mut terminal = Terminal::new(progress, spec.engine.plan.load.planned());
    let recorded = volley_record::record(spec, &mut terminal)?;
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
        .filter_map(|p| Some((p.file_stem()?.to_string_lossy().into_owned(), format!("charts/{}", p.file_name()?.to_string_lossy()))))
        .collect();
    let links: Vec<(&str, &str)> = links.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    std::fs::write(dir.join("report.md"), volley_report::markdown_with_charts(&report, &links))?;
    std::fs::write(dir.join("report.json"), report.to_json())?;
    std::fs::write(dir.join("report.html"), volley_report::html::report_page(std::slice::from_ref(&source), std::slice::from_ref(&report), opts))?;
    println!("{}", volley_report::table(&report));
    eprintln!("volley: wrote {0}/report.html, report.md, report.json and charts/", dir.display());
    Ok(report)
}
