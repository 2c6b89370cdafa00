//! `volley run`: the flags resolved into a typed [`GroupSpec`] ([`crate::resolve`]), the run
//! recorded with `volley-record`, then the report written and printed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use volley_formats::{RunData, RunStatus};
use volley_record::{
    GroupSpec, IntervalView, Observer, Observers, Quiet, Recorded, RunSpec, RunStart,
};
use volley_report::{Detail, ReportOptions, RunReport};

use crate::args::{ProgressMode, RunArgs};
use crate::progress::Progress;
use crate::resolve::{Runner, resolve};

/// How much of each run's report the terminal shows: a run's own command sets it (`--verbose`),
/// a demo or sweep sets [`Detail::Line`] for the runs it makes. One command runs per process.
static DETAIL: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(1);

/// Sets how much of each run's report (and a group's summary) the terminal shows.
pub(crate) fn set_detail(detail: Detail) {
    let n = match detail {
        Detail::Line => 0,
        Detail::Summary => 1,
        Detail::Verbose => 2,
    };
    DETAIL.store(n, std::sync::atomic::Ordering::Relaxed);
}

/// See [`set_detail`].
pub(crate) fn detail() -> Detail {
    match DETAIL.load(std::sync::atomic::Ordering::Relaxed) {
        0 => Detail::Line,
        1 => Detail::Summary,
        _ => Detail::Verbose,
    }
}

/// `--verbose` as a [`Detail`].
pub(crate) fn detail_of(verbose: bool) -> Detail {
    if verbose {
        Detail::Verbose
    } else {
        Detail::Summary
    }
}

pub(crate) fn run(args: RunArgs) -> Result<ExitCode> {
    set_detail(detail_of(args.verbose));
    let resolved = resolve(&args, Runner::Here)?;
    let group = resolved.group()?;
    // Started before the run, so that a receiver that cannot be set up fails before any load.
    let mut outputs = resolved
        .outputs
        .iter()
        .map(volley_export::OutputSpec::start)
        .collect::<Result<Vec<_>, _>>()?;
    // Opened before the run, so that a bad endpoint or missing bucket setting fails first.
    let upload = resolved
        .upload
        .as_ref()
        .map(volley_store::Store::from_env)
        .transpose()?;
    // The dashboard's port also serves `/metrics` (OpenMetrics) for a Prometheus that pulls.
    let mut scrape = volley_export::MetricsEndpoint::new();
    let mut dashboard = resolved
        .dashboard
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
        let (dir, reports) = execute_group_with(&group, resolved.progress, &mut watchers)?;
        if let (Some(d), Some(last)) = (&dashboard, last_run_dir(&dir)) {
            d.report_ready(&last);
        }
        reports
    } else {
        let (dir, report) = execute_with(&group.run, resolved.progress, &mut watchers)?;
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
    crate::ci::after_runs(
        resolved.junit.as_deref(),
        &reports,
        resolved.target.as_ref(),
    )?;
    // A run volley had to stop (too many errors) failed as surely as a threshold.
    let mut failed = false;
    if let Some((rate, given)) = &resolved.target {
        for report in &reports {
            let tps = report.seed_suite.tps_avg;
            let v = volley_report::capacity::TargetVerdict::of(tps, *rate, given);
            eprintln!(
                "volley: TPS {} {} (target {given})",
                volley_formats::numfmt::grouped(tps),
                v.describe()
            );
            failed |= !v.met;
        }
    }
    // A segment stopped before its plan's end (SIGTERM from `kubectl delete pod`, a drain or
    // an eviction; Ctrl-C) leaves the merged run without its share from then on: it fails, so
    // that its pod, and the Job, say so too. A whole run stopped by hand is the user's choice.
    let segment = resolved.plan.segment;
    if !segment.is_whole() {
        for report in reports
            .iter()
            .filter(|r| r.status == RunStatus::Interrupted.name())
        {
            failed = true;
            eprintln!(
                "volley: FAILED: segment {segment} was interrupted after {:.1} s: the merged run lacks its share from then on",
                report.measured_s
            );
        }
    }
    for (i, report) in reports.iter().enumerate() {
        let which = if reports.len() > 1 {
            format!(" (run {} of {})", i + 1, reports.len())
        } else {
            String::new()
        };
        for why in report.failures() {
            failed = true;
            eprintln!(
                "volley: FAILED{which}: {}",
                volley_report::terminal_safe(&why)
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
        // A group's runs are a line each (all of each with --verbose); its summary follows.
        let each = match detail() {
            Detail::Verbose => Detail::Verbose,
            _ => Detail::Line,
        };
        self.reports
            .push(write_reports_at(&run.dir, Some(each)).map(|(r, _)| r));
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
    let rest = dir.join("summary.md").display().to_string();
    let at = match detail() {
        Detail::Line => Detail::Summary,
        d => d,
    };
    print!("{}", summary.doc().terminal_as(at, &rest));
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
    let (report, _) = write_reports_at(dir, Some(detail()))?;
    Ok(report)
}

/// [`write_reports`], printing the report only when `print`; also returns the source read.
pub(crate) fn write_reports_of(
    dir: &Path,
    print: bool,
) -> Result<(RunReport, volley_formats::Source)> {
    write_reports_at(dir, print.then(detail))
}

/// [`write_reports`], printing the report at `print` (not at all when none); also returns
/// the source read.
pub(crate) fn write_reports_at(
    dir: &Path,
    print: Option<Detail>,
) -> Result<(RunReport, volley_formats::Source)> {
    let source = volley_formats::Source::from_run(RunData::read(dir)?);
    let opts = ReportOptions::default();
    let report = RunReport::from_source(&source, opts);
    let charts = volley_report::charts::run_charts(&source, opts, &dir.join("charts"))?;
    let links = volley_report::charts::png_links(&charts);
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
            &[],
            opts,
        ),
    )?;
    if let Some(detail) = print {
        let rest = dir.join("report.md").display().to_string();
        let text = volley_report::doc(&report, &[]).terminal_as(detail, &rest);
        if detail == Detail::Line {
            print!("{text}");
        } else {
            println!("{text}");
        }
        eprintln!(
            "volley: wrote {0}/report.html, report.md, report.json and charts/",
            dir.display()
        );
    }
    Ok((report, source))
}

/// The last run directory of a group (the one the dashboard's page becomes).
fn last_run_dir(group: &Path) -> Option<PathBuf> {
    let meta = volley_formats::group::read_group(group).ok()?;
    meta.runs.last().map(|r| group.join(&r.dir))
}
