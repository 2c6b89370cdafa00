//! `volley run`: validate the flags, check the target answers, run, write the run
//! directory as it goes, and print the report at the end.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use volley_engine::{EngineConfig, Event, StopReason, Target, TlsOptions};
use volley_formats::rundir::{ErrorNote, ScrapeNote, StepMeta};
use volley_formats::{RunData, RunMeta, RunStatus, RunWriter};
use volley_report::{ReportOptions, RunReport};
use volley_scenario::{
    Load, LoadShape, Plan, RateShape, RequestSpec, Scenario, StatusSet, parse_duration, parse_rate, parse_stages,
};

use crate::args::{ProgressMode, RunArgs};
use crate::progress::Progress;

/// A `volley run` whose flags were checked.
struct RunConfig {
    engine: EngineConfig,
    /// A run count without a duration: it ends when the VUs are done, not at a planned time.
    open_ended: bool,
    name: String,
    output: PathBuf,
    warmup: Duration,
    progress: ProgressMode,
    server_metrics: Vec<String>,
    thresholds: Vec<volley_scenario::Threshold>,
}

fn duration_flag(flag: &str, value: &str) -> Result<Duration> {
    parse_duration(value).map_err(|e| anyhow::anyhow!("--{flag}: {e}"))
}

fn opt_duration(flag: &str, value: &Option<String>) -> Result<Duration> {
    value.as_deref().map_or(Ok(Duration::ZERO), |v| duration_flag(flag, v))
}

/// The load model the flags describe: --rate / --rate-stages (open), else --stages or
/// --vus with --duration (closed).
fn load_from_args(a: &RunArgs) -> Result<Load> {
    let max_vus = a.max_vus.unwrap_or(DEFAULT_MAX_VUS);
    if max_vus == 0 {
        bail!("--max-vus must be at least 1");
    }
    if let Some(r) = &a.rate_stages {
        let rate = RateShape::parse(r).map_err(|e| anyhow::anyhow!("--rate-stages: {e}"))?;
        return Ok(Load::Open { rate, max_vus });
    }
    let duration = match &a.duration {
        Some(d) => Some(duration_flag("duration", d)?),
        None => None,
    };
    if let Some(r) = &a.rate {
        let rate = parse_rate(r).map_err(|e| anyhow::anyhow!("--rate: {e}"))?;
        let Some(duration) = duration else { bail!("say how long to run: --rate {r} --duration 30s") };
        return Ok(Load::Open { rate: RateShape::constant(rate, duration), max_vus });
    }
    if let Some(s) = &a.stages {
        return Ok(Load::Closed { shape: LoadShape { stages: parse_stages(s).map_err(|e| anyhow::anyhow!("--stages: {e}"))? } });
    }
    // A run count needs no duration: the run ends when every VU is done (a day at most).
    let duration = duration.or(a.iterations.map(|_| Duration::from_secs(24 * 3600)));
    let Some(duration) = duration else {
        bail!("say how long to run: --duration 30s (with --vus N), --iterations 10 (with --vus N), --stages \"1m:50,2m:50\", or --rate 100 --duration 30s")
    };
    let vus = a.vus.unwrap_or(1);
    if vus == 0 {
        bail!("--vus must be at least 1");
    }
    let shape = LoadShape::constant(vus, duration, opt_duration("ramp-up", &a.ramp_up)?).map_err(|e| anyhow::anyhow!("--ramp-up: {e}"))?;
    Ok(Load::Closed { shape })
}

/// Open model: VUs when neither the flags nor the scenario say.
const DEFAULT_MAX_VUS: u64 = 1000;

/// Reads a scenario file; its errors list file, line and column.
pub(crate) fn load_scenario(path: &Path) -> Result<Scenario> {
    volley_scenario::load_scenario(path).map_err(|errors| {
        let n = errors.0.len();
        anyhow::anyhow!("{n} problem{} in the scenario:\n{errors}", if n == 1 { "" } else { "s" })
    })
}

/// Fills the flags the user left out from the scenario's settings. A load shape on the
/// command line (any of --vus, --duration, --ramp-up, --stages, --rate, --rate-stages)
/// replaces the file's whole shape, so the two never mix.
fn apply_scenario(a: &mut RunArgs, sc: &Scenario) -> Result<()> {
    if !a.headers.is_empty() || a.body.is_some() || a.body_file.is_some() || a.method != "GET" {
        bail!("-X, --header, --body and --body-file are for single-URL runs; with a scenario, put them on its steps");
    }
    let l = &sc.load;
    let shape_given = a.vus.is_some()
        || a.duration.is_some()
        || a.ramp_up.is_some()
        || a.stages.is_some()
        || a.rate.is_some()
        || a.rate_stages.is_some();
    if !shape_given {
        a.iterations = a.iterations.or(l.iterations);
        a.vus = l.vus;
        a.duration = l.duration.clone();
        a.ramp_up = l.ramp_up.clone();
        a.stages = l.stages.clone();
        a.rate = l.rate.clone();
        a.rate_stages = l.rate_stages.clone();
    }
    let open = a.rate.is_some() || a.rate_stages.is_some();
    a.max_vus = a.max_vus.or(l.max_vus);
    if !open {
        a.pacing = a.pacing.take().or_else(|| l.pacing.clone());
        a.think_time = a.think_time.take().or_else(|| l.think_time.clone());
    }
    a.url = a.url.take().or_else(|| Some(sc.target.clone()));
    a.warmup = a.warmup.take().or_else(|| sc.warmup.clone());
    a.timeout = a.timeout.take().or_else(|| sc.timeout.map(|t| format!("{}s", t.as_secs_f64())));
    let stem = || sc.file.file_stem().map(|s| s.to_string_lossy().into_owned());
    a.name = a.name.take().or_else(|| sc.name.clone()).or_else(stem);
    Ok(())
}

impl RunConfig {
    fn from_args(mut a: RunArgs) -> Result<RunConfig> {
        let scenario = match a.scenario.clone() {
            Some(path) => {
                let sc = load_scenario(&path)?;
                apply_scenario(&mut a, &sc)?;
                Some(Arc::new(sc))
            }
            None => None,
        };
        let load = load_from_args(&a)?;
        if a.iterations == Some(0) {
            bail!("--iterations must be at least 1");
        }
        let body = match (&a.body, &a.body_file) {
            (Some(b), _) => b.clone().into_bytes(),
            (None, Some(path)) => {
                std::fs::read(path).with_context(|| format!("--body-file {}: cannot read it", path.display()))?
            }
            (None, None) => Vec::new(),
        };
        let headers = a
            .headers
            .iter()
            .map(|h| RequestSpec::parse_header(h).map_err(|e| anyhow::anyhow!("--header: {e}")))
            .collect::<Result<Vec<_>>>()?;
        let expect_status = match &a.expect_status {
            Some(s) => StatusSet::parse(s).map_err(|e| anyhow::anyhow!("--expect-status: {e}"))?,
            None => scenario.as_ref().and_then(|s| s.expect_status.clone()).unwrap_or_default(),
        };
        let interval = duration_flag("interval", &a.interval)?;
        if interval < Duration::from_millis(100) {
            bail!("--interval must be at least 100ms");
        }
        let timeout = duration_flag("timeout", a.timeout.as_deref().unwrap_or("60s"))?;
        if timeout.is_zero() {
            bail!("--timeout must be above zero");
        }
        let url = a.url.clone().context("--url is required without a scenario")?;
        let target = Target::resolve(&url)?;
        let mut thresholds = scenario.as_ref().map(|s| s.thresholds.clone()).unwrap_or_default();
        for t in &a.thresholds {
            thresholds.push(volley_scenario::parse_threshold(t).map_err(|e| anyhow::anyhow!("--threshold: {e}"))?);
        }
        let plan = Plan {
            scenario,
            request: RequestSpec { method: a.method.to_ascii_uppercase(), url: url.clone(), headers, body },
            load,
            pacing: opt_duration("pacing", &a.pacing)?,
            think_time: opt_duration("think-time", &a.think_time)?,
            timeout,
            expect_status,
            iterations: a.iterations,
        };
        let threads = a.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let name = a.name.clone().unwrap_or_else(|| target.host.clone());
        Ok(RunConfig {
            open_ended: a.iterations.is_some() && a.duration.is_none() && a.stages.is_none(),
            engine: EngineConfig {
                plan,
                target,
                tls: TlsOptions { insecure: a.insecure, cacert: a.cacert.clone() },
                http2: a.http2,
                interval,
                threads: threads.max(1),
                grace: duration_flag("grace", &a.grace)?,
                error_stop: !a.no_error_stop,
            },
            name,
            output: a.output,
            warmup: opt_duration("warmup", &a.warmup)?,
            progress: a.progress,
            server_metrics: a.server_metrics.clone(),
            thresholds,
        })
    }

    fn meta(&self) -> RunMeta {
        let plan = &self.engine.plan;
        RunMeta {
            schema: 1,
            tool: format!("volley {}", env!("CARGO_PKG_VERSION")),
            name: self.name.clone(),
            status: RunStatus::Running,
            reason: None,
            started_at: jiff::Timestamp::now().to_string(),
            ended_at: None,
            interval_s: self.engine.interval.as_secs_f64(),
            warmup_s: self.warmup.as_secs_f64(),
            planned_duration_s: plan.load.duration().as_secs_f64(),
            plan: serde_json::json!({
                "model": if plan.load.is_open() { "open" } else { "closed" },
                "load": plan.load,
                "request": plan.request,
                "max_vus": plan.load.max_vus(),
                "pacing_s": plan.pacing.as_secs_f64(),
                "think_time_s": plan.think_time.as_secs_f64(),
                "timeout_s": plan.timeout.as_secs_f64(),
                "expect_status": plan.expect_status,
                "http2": self.engine.http2,
                "thresholds": self.thresholds,
                "threads": self.engine.threads,
                "scenario": plan.scenario.as_ref().map(|s| serde_json::json!({
                    "file": s.file,
                    "name": s.name,
                    "target": s.target,
                    "steps": s.step_info,
                    "data": s.data.iter().map(|d| serde_json::json!({"name": d.name, "file": d.file, "rows": d.rows.len()})).collect::<Vec<_>>(),
                })),
            }),
            command: std::env::args().collect(),
            host: hostname(),
            errors: Vec::new(),
            server_metrics: self.server_metrics.iter().map(|u| ScrapeNote { url: u.clone(), ..Default::default() }).collect(),
            steps: plan.scenario.as_ref().map_or_else(Vec::new, |s| {
                s.step_info.iter().map(|i| StepMeta { name: i.name.clone(), kind: i.kind.name().to_string() }).collect()
            }),
        }
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_default()
}

pub(crate) fn run(args: RunArgs) -> Result<ExitCode> {
    let (_, report) = execute(args)?;
    // A run volley had to stop (too many errors) failed as surely as a threshold.
    let failed = report.status == RunStatus::Aborted.name() || !report.thresholds_passed();
    if !report.thresholds_passed() {
        eprintln!("volley: thresholds failed: {}", report.thresholds.iter().filter(|t| !t.passed).map(|t| t.expr.as_str()).collect::<Vec<_>>().join("; "));
    }
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// Runs a test to the end and returns its run directory and report (written and printed).
pub(crate) fn execute(args: RunArgs) -> Result<(PathBuf, RunReport)> {
    let config = RunConfig::from_args(args)?;
    volley_engine::preflight(&config.engine.target, &config.engine.tls, config.engine.timeout_for_preflight())?;
    let meta = config.meta();
    let run = volley_engine::start(config.engine.clone()).map_err(anyhow::Error::msg)?;
    let mut writer = RunWriter::create(&config.output, meta, run.started)?;
    eprintln!("volley: run directory {}", writer.dir().display());
    crate::signals::install(run.control());
    let scraper = (!config.server_metrics.is_empty()).then(|| {
        volley_engine::scrape::start(config.server_metrics.clone(), config.engine.tls.clone(), run.t0, config.engine.interval)
    });
    let planned = (!config.open_ended).then(|| config.engine.plan.load.duration());
    let mut progress = Progress::new(config.progress, planned);
    let mut stopped = None;
    while let Some(event) = run.next_event() {
        match event {
            Event::Interval { sample, steps, row, messages, target_vus } => {
                writer.write_interval(&sample, &row, &steps)?;
                if !messages.is_empty() {
                    add_messages(&mut writer.meta_mut().errors, &sample.counts.errors_by_kind, messages);
                    writer.write_meta()?;
                }
                progress.interval(&row, &sample, target_vus);
                if let Some(scraper) = &scraper {
                    record_scrapes(&mut writer, scraper, config.engine.interval)?;
                }
            }
            Event::End(end) => {
                progress.finish();
                if let Some(scraper) = &scraper {
                    scraper.stop();
                    record_scrapes(&mut writer, scraper, config.engine.interval)?;
                }
                stopped = Some(end.stopped);
                break;
            }
        }
    }
    let (status, reason) = match stopped.flatten() {
        None => (RunStatus::Complete, None),
        Some(StopReason::Interrupted) => (RunStatus::Interrupted, Some("interrupted by the user".to_string())),
        Some(StopReason::Aborted(why)) => (RunStatus::Aborted, Some(why)),
    };
    writer.finish(status, reason)?;
    let report = write_reports(writer.dir())?;
    Ok((writer.dir().to_path_buf(), report))
}

/// Writes the scrapes taken so far to server.csv and tallies them in run.json.
fn record_scrapes(writer: &mut RunWriter, scraper: &volley_engine::scrape::Scraper, interval: Duration) -> Result<()> {
    let mut any = false;
    while let Ok(s) = scraper.samples.try_recv() {
        any = true;
        let elapsed = interval.as_secs_f64() * (s.index + 1) as f64;
        writer.write_server(elapsed, &s.url, &s.values)?;
        if let Some(note) = writer.meta_mut().server_metrics.iter_mut().find(|n| n.url == s.url) {
            match s.error {
                Some(e) => {
                    note.failed += 1;
                    note.last_error = Some(e);
                }
                None => note.ok += 1,
            }
        }
    }
    if any {
        writer.write_meta()?;
    }
    Ok(())
}

/// The `[step]` a scenario error message starts with, if any.
fn step_of(message: &str) -> Option<&str> {
    message.strip_prefix('[').and_then(|m| m.split_once("] ")).map(|(step, _)| step)
}

/// Folds new error messages into run.json's notes and refreshes their counts.
fn add_messages(notes: &mut Vec<ErrorNote>, counts: &[u64; volley_stats::KINDS], messages: Vec<(volley_stats::ErrorKind, String)>) {
    for (kind, message) in messages {
        let note = match notes.iter_mut().position(|n| n.kind == kind.name()) {
            Some(i) => &mut notes[i],
            None => {
                notes.push(ErrorNote { kind: kind.name().to_string(), ..Default::default() });
                notes.last_mut().expect("just pushed")
            }
        };
        // Five per kind, and in a scenario five per step and kind (messages start `[step]`).
        let step = step_of(&message);
        let same_step = note.messages.iter().filter(|m| step_of(m) == step).count();
        if same_step < 5 && !note.messages.contains(&message) {
            note.messages.push(message);
        }
    }
    for n in notes.iter_mut() {
        if let Some(k) = volley_stats::ErrorKind::ALL.iter().find(|k| k.name() == n.kind) {
            n.count += counts[k.index()];
        }
    }
}

/// Reads the run directory back (the report is computed from what is on disk), prints the
/// report and writes report.md and report.json beside the data.
pub(crate) fn write_reports(dir: &Path) -> Result<RunReport> {
    let source = volley_formats::Source::from_run(RunData::read(dir)?);
    let opts = ReportOptions::default();
    let report = RunReport::from_source(&source, opts);
    let charts = volley_report::charts::run_charts(&source, opts, &dir.join("charts")).map_err(anyhow::Error::msg)?;
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
