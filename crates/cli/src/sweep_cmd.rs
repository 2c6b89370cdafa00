//! `volley sweep`: the same test once per value of one setting — a knob of the demo
//! target, or anything a `--setup` command can change — then the comparison across the
//! values and the best one by an objective, with its margin over the runner-up against
//! the noise of the two runs.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use volley_demo::Knobs;
use volley_report::ReportOptions;

use crate::args::{Objective, ProgressMode, RunLine, SweepArgs};

/// Sets demo knob `name` to `value`.
fn set_knob(knobs: &mut Knobs, name: &str, value: &str) -> Result<()> {
    knobs.set(name, value).map_err(anyhow::Error::from)
}

pub(crate) fn sweep(a: SweepArgs) -> Result<ExitCode> {
    // Each value's run is a line (all of it with --verbose); the sweep's answer follows.
    crate::run_cmd::set_detail(if a.verbose {
        volley_report::Detail::Verbose
    } else {
        volley_report::Detail::Line
    });
    let (name, values) = a
        .vary
        .split_once('=')
        .context("--vary: write it as NAME=V1,V2,... (e.g. db-pool=5,10,20)")?;
    let values: Vec<&str> = values
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .collect();
    if values.len() < 2 {
        bail!("--vary {name}: give at least two values");
    }
    if let Some((i, twice)) = values
        .iter()
        .enumerate()
        .find(|(i, v)| values[..*i].contains(v))
    {
        bail!(
            "--vary {name}: {twice} is given twice (values {} and {}); give each value once (repeat each value with --repeat N)",
            values.iter().position(|v| v == twice).unwrap_or_default() + 1,
            i + 1
        );
    }
    let mut base = Knobs::default();
    for k in &a.demo_knobs {
        let (kn, kv) = k
            .split_once('=')
            .context("--demo-knob: write it as NAME=VALUE")?;
        set_knob(&mut base, kn, kv)?;
    }
    let placeholder = format!("{{{name}}}");
    // The run flags as the first value's run reads them (the demo target's address not known
    // yet), checked before any --setup runs or target starts.
    let (_, given) = RunLine::parse_given(line(&a.run, &placeholder, values[0], STAND_IN))?;
    if given.iter().any(|id| id == "output" || id == "name") {
        bail!(
            "volley sweep names each run and writes them to its own -o; leave --name and -o out of the run flags"
        );
    }
    std::fs::create_dir_all(&a.output)
        .with_context(|| format!("cannot create {}", a.output.display()))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    // Where the value goes is a matter of the words the user wrote, not of any one flag.
    let used = a.run.iter().any(|f| f.contains(&placeholder))
        || a.setup.as_ref().is_some_and(|s| s.contains(&placeholder));
    if !a.demo && !used {
        bail!(
            "--vary {name}: `{placeholder}` appears in neither the run flags nor --setup, so every run would be the same; put it where the value goes (e.g. --setup './restart.sh --pool {placeholder}') or use --demo to sweep a demo-target knob"
        );
    }
    // Ctrl-C and SIGTERM are listened for from here on, the --setup commands included: the
    // first ends the sweep (the setup's process group stopped, no later value started).
    let _ = crate::signals::stop_requested();
    let mut runs: Vec<PathBuf> = Vec::new();
    let mut ran: Vec<&str> = Vec::new();
    let mut failed: Vec<String> = Vec::new();
    let mut stopped: Option<String> = None;
    for value in &values {
        if crate::signals::stop_requested() {
            stopped = Some(format!("before {name}={value}"));
            break;
        }
        eprintln!("\n== {name}={value} ==");
        if let Some(setup) = &a.setup {
            let cmd = setup.replace(&placeholder, value);
            if !run_setup(&cmd)? {
                stopped = Some(format!("during the --setup of {name}={value}"));
                break;
            }
        }
        let target = if a.demo {
            let mut knobs = base.clone();
            set_knob(&mut knobs, name, value)?;
            Some(rt.block_on(volley_demo::start("127.0.0.1:0".parse()?, &knobs))?)
        } else {
            None
        };
        let base_url = target
            .as_ref()
            .map(|t| format!("http://{}", t.addr))
            .unwrap_or_default();
        // The user's run flags with this value in place, parsed as `volley run` parses them;
        // the sweep names the run and places it.
        let args = RunLine::parse(line(&a.run, &placeholder, value, &base_url))?;
        let resolved = crate::resolve::resolve(&args, crate::resolve::Runner::Here)?;
        // A --setup that changed a watched Deployment (replicas, a probe's timeout) is
        // measured once its rollout is done, not while old and new pods share the load.
        if a.setup.is_some()
            && let Some(kube) = &resolved.kube
            && kube.off.is_none()
        {
            volley_kube::rollout::wait(kube, a.rollout_timeout, &mut |line| {
                eprintln!("volley: {line}")
            })
            .with_context(|| format!("after the --setup of {name}={value}"))?;
        }
        // What a single run does with these, a sweep of many runs does not: refused, not dropped.
        for (given, flag) in [
            (resolved.upload.is_some(), "--upload"),
            (!resolved.outputs.is_empty(), "--out"),
            (resolved.dashboard.is_some(), "--dashboard"),
            (resolved.junit.is_some(), "--junit"),
        ] {
            if given {
                bail!(
                    "{flag} is not for sweeps: run `volley run ... {flag}` per value, or use what the sweep writes to {} (sweep.json, sweep.md, each run's directory)",
                    a.output.display()
                );
            }
        }
        let dir = resolved.group().and_then(|mut group| {
            group.run.name = format!("{name}={value}");
            group.run.output = a.output.clone();
            if let Some(n) = a.repeat {
                group.repeat = n as usize;
            }
            let progress = if given.iter().any(|id| id == "progress") {
                args.progress
            } else {
                ProgressMode::Plain
            };
            // Each value repeated is a run group, so the comparison judges it between runs.
            if group.repeat > 1 {
                crate::run_cmd::execute_group(&group, progress)
            } else {
                crate::run_cmd::execute(&group.run, progress).map(|(dir, r)| (dir, vec![r]))
            }
        });
        if let Some(t) = target {
            rt.block_on(t.stop())?;
        }
        let (dir, reports) = dir?;
        // A value whose run failed its thresholds or was aborted fails the sweep, as a run
        // group does: its figures are still compared below.
        for r in &reports {
            failed.extend(
                r.failures()
                    .into_iter()
                    .map(|why| format!("{name}={value}: {why}")),
            );
        }
        runs.push(dir);
        ran.push(value);
        if crate::signals::stop_requested() {
            stopped = Some(format!("during {name}={value}"));
            break;
        }
    }
    let mut sets = Vec::new();
    let mut labels: Vec<String> = Vec::new();
    for (dir, value) in runs.iter().zip(&ran) {
        match volley_formats::open_run_or_group(dir, None) {
            Ok(set) => {
                sets.push(set);
                labels.push(format!("{name}={value}"));
            }
            // A group stopped before any of its runs completed has nothing to compare.
            Err(e) if stopped.is_some() => {
                eprintln!("volley: {name}={value} is left out: {e}");
                if let Some(when) = &mut stopped {
                    when.push_str(", before any of its runs completed");
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    let not_run: Vec<String> = values[ran.len()..]
        .iter()
        .map(|v| format!("{name}={v}"))
        .collect();
    if let Some(when) = &stopped {
        failed.push(format!(
            "stopped by a signal {when}{}",
            if not_run.is_empty() {
                String::new()
            } else {
                format!("; not run: {}", not_run.join(", "))
            }
        ));
    }
    if sets.is_empty() {
        eprintln!("volley: the sweep was stopped before any value ran: nothing to compare");
        eprintln!("volley: the sweep failed:\n  {}", failed.join("\n  "));
        return Ok(ExitCode::from(1));
    }
    let opts = ReportOptions::default();
    let mut summary = volley_report::sweep::summarize(&sets, &labels, a.objective.into(), opts);
    if let Some(when) = &stopped {
        summary = summary.stopped(format!("stopped by a signal {when}"), not_run);
    }
    let mut files = vec!["sweep.md", "sweep.json"];
    // One value alone has nothing to be compared with: its summary is the sweep's record.
    let cmp = (sets.len() > 1).then(|| volley_report::compare::build(&sets, &labels, opts));
    // The answer (the best value) first, then the comparison: a line of it, or all with --verbose.
    let rest = a.output.join("sweep.md").display().to_string();
    let detail = crate::run_cmd::detail_of(a.verbose);
    println!("\n{}", summary.doc().terminal_as(detail, &rest));
    if let Some(cmp) = &cmp {
        let at = match detail {
            volley_report::Detail::Verbose => detail,
            _ => volley_report::Detail::Line,
        };
        print!("{}", cmp.doc().terminal_as(at, &rest));
    }
    std::fs::write(a.output.join("sweep.json"), summary.to_json())?;
    std::fs::write(
        a.output.join("sweep.md"),
        match &cmp {
            Some(cmp) => format!("{}\n{}", summary.markdown(), cmp.markdown()),
            None => summary.markdown(),
        },
    )?;
    if let Some(cmp) = &cmp {
        crate::report_cmd::write_compare_html(
            cmp,
            &sets,
            opts,
            &a.output.join("sweep.html"),
            |sources, svgs| volley_report::html::sweep_page(&summary, cmp, sources, opts, svgs),
        )?;
        files.push("sweep.html");
    }
    eprintln!(
        "volley: the sweep is in {} ({})",
        a.output.display(),
        files.join(", ")
    );
    if !failed.is_empty() {
        eprintln!("volley: the sweep failed:\n  {}", failed.join("\n  "));
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// What `{target}` stands for where the demo target has no address yet.
const STAND_IN: &str = "http://127.0.0.1:1";

/// The run flags of one value: `{NAME}` replaced by `value`, `{target}` by `base_url`.
fn line<'a>(
    run: &'a [String],
    placeholder: &'a str,
    value: &'a str,
    base_url: &'a str,
) -> impl Iterator<Item = String> + 'a {
    run.iter()
        .map(move |s| s.replace(placeholder, value).replace("{target}", base_url))
}

/// Runs a `--setup` command to its end: `Ok(true)` when it succeeded, `Ok(false)` when a
/// signal stopped the sweep meanwhile. It runs in a process group of its own, which a signal
/// stops as a whole (the shell and whatever it started), and without the terminal's input,
/// which a background group cannot read.
fn run_setup(cmd: &str) -> Result<bool> {
    use std::os::unix::process::CommandExt as _;
    let mut child = std::process::Command::new("sh")
        .args(["-c", cmd])
        .stdin(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .with_context(|| format!("--setup `{cmd}`"))?;
    let watched = crate::signals::watch_group(child.id(), format!("--setup `{cmd}`"));
    let status = child.wait().with_context(|| format!("--setup `{cmd}`"));
    drop(watched);
    let status = status?;
    if crate::signals::stop_requested() {
        eprintln!("volley: --setup `{cmd}` was stopped ({status})");
        return Ok(false);
    }
    if !status.success() {
        bail!("--setup `{cmd}` failed ({status}); the sweep stops here");
    }
    Ok(true)
}

impl From<Objective> for volley_report::sweep::Objective {
    fn from(o: Objective) -> Self {
        match o {
            Objective::Tps => volley_report::sweep::Objective::Tps,
            Objective::TtfbP99 => volley_report::sweep::Objective::TtfbP99,
            Objective::ErrorRate => volley_report::sweep::Objective::ErrorRate,
        }
    }
}
