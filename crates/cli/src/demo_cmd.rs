//! `volley demo` and `volley target serve`.
//!
//! The demo is a seed-style tuning story on the embedded target: the chat server's
//! `GET /rooms` under a ramp of virtual users with too few Tomcat threads behind a small accept
//! queue (Original: the seeds' tables open with the error rate, and so does this one), then
//! with the threads raised (Phase 1: the small DB pool is next), a bigger pool (Phase 2), and
//! the look-aside cache on (Phase 3) — each run written as a normal run directory, then
//! compared phase by phase. Last, the
//! pair-room user flow of seed 003 runs as a scenario (`examples/pair-room.yaml`) on the
//! tuned target, with a row of metrics per step.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use volley_demo::Knobs;
use volley_record::RunSpec;
use volley_report::ReportOptions;

use crate::args::{DemoArgs, ProgressMode, RunLine, ServeArgs};
use crate::resolve::{Runner, resolve};

/// One phase of the story: what changes on the target, and why.
struct Phase {
    label: &'static str,
    change: &'static str,
    knobs: Knobs,
    /// Run flags of its own (the Original's errors must not stop its run).
    flags: &'static [&'static str],
}

fn phases() -> Vec<Phase> {
    // A remote database's 5 ms round trip makes the pool the bottleneck, as in the seeds.
    let base = Knobs {
        db_pool: 2,
        db_rtt: Duration::from_millis(5),
        max_threads: 200,
        ..Knobs::default()
    };
    vec![
        Phase {
            label: "Original",
            change: "8 Tomcat threads behind an accept queue of 10, DB pool of 2, no cache",
            knobs: Knobs {
                max_threads: 8,
                accept_count: 10,
                ..base.clone()
            },
            flags: &["--no-error-stop"],
        },
        Phase {
            label: "Phase 1",
            change: "Tomcat threads raised to 200 (accept queue 100)",
            knobs: base.clone(),
            flags: &[],
        },
        Phase {
            label: "Phase 2",
            change: "DB pool raised to 10 connections",
            knobs: Knobs {
                db_pool: 10,
                ..base.clone()
            },
            flags: &[],
        },
        Phase {
            label: "Phase 3",
            change: "look-aside cache on for the room list",
            knobs: Knobs {
                db_pool: 10,
                cache: true,
                ..base
            },
            flags: &[],
        },
    ]
}

pub(crate) fn demo(a: DemoArgs) -> Result<ExitCode> {
    // Each phase's run is a line (all of it with --verbose); the comparison is the answer.
    crate::run_cmd::set_detail(if a.verbose {
        volley_report::Detail::Verbose
    } else {
        volley_report::Detail::Line
    });
    // Stages per phase: a ramp-up, then a hold (seed 000's 296 VUs, scaled to a laptop).
    let stages = if a.quick {
        "2s:30,4s:30"
    } else {
        "10s:60,25s:60"
    };
    std::fs::create_dir_all(&a.output)
        .with_context(|| format!("cannot create {}", a.output.display()))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let mut runs = Vec::new();
    let phases = phases();
    eprintln!("== Tuning the chat server's GET /rooms in four phases ==");
    for (i, phase) in phases.iter().enumerate() {
        eprintln!("\n== {} — {} ==", phase.label, phase.change);
        let target = rt.block_on(volley_demo::start("127.0.0.1:0".parse()?, &phase.knobs))?;
        let name = format!(
            "demo-{}-{}",
            i,
            phase.label.to_lowercase().replace(' ', "-")
        );
        let spec = demo_spec(
            target.addr,
            "/rooms",
            stages,
            (None, phase.flags),
            &name,
            &a.output,
        );
        let dir = spec
            .and_then(|s| crate::run_cmd::execute(&s, ProgressMode::Plain))
            .map(|(dir, _)| dir);
        rt.block_on(target.stop())?;
        runs.push(dir?);
    }
    compare(&runs, &phases, &a.output, a.verbose)?;
    if a.capacity {
        capacities(&rt, &[&phases[1], &phases[3]], &a.output, a.quick)?;
    }
    let flow = scenario_run(&rt, &phases[phases.len() - 1].knobs, &a.output, a.quick)?;
    eprintln!(
        "volley: the pair-room flow is in {}; write your own flows like {}",
        flow.display(),
        a.output.join("pair-room.yaml").display()
    );
    Ok(ExitCode::SUCCESS)
}

/// A demo run: `stages` against the target's `path` (a scenario's base URL when `scenario` is
/// given), the target's own `/metrics` scraped beside it, so each phase's report names its
/// bottleneck. It is the `volley run` command it prints, resolved as `volley run` resolves
/// its flags ([`crate::resolve`]), so what is shown is what runs.
fn demo_spec(
    target: std::net::SocketAddr,
    path: &str,
    stages: &str,
    (scenario, extra): (Option<&Path>, &[&str]),
    name: &str,
    output: &Path,
) -> Result<RunSpec> {
    let url = format!("http://{target}{path}");
    let metrics = format!("http://{target}/metrics");
    let mut flags: Vec<String> = scenario
        .map(|p| p.display().to_string())
        .into_iter()
        .collect();
    for f in [
        "--url",
        &url,
        "--stages",
        stages,
        "--server-metrics",
        &metrics,
        "--name",
        name,
    ]
    .into_iter()
    .chain(extra.iter().copied())
    .chain(["-o"])
    {
        flags.push(f.to_string());
    }
    flags.push(output.display().to_string());
    eprintln!("$ volley run {}", flags.join(" "));
    let args = RunLine::parse(flags)?;
    Ok(resolve(&args, Runner::Here)?.group()?.run)
}

/// The seed-003 pair-room flow, shipped in `examples/`.
const PAIR_ROOM: &str = include_str!("../../../examples/pair-room.yaml");

/// Runs the pair-room scenario against a fresh target with `knobs`.
fn scenario_run(
    rt: &tokio::runtime::Runtime,
    knobs: &Knobs,
    output: &Path,
    quick: bool,
) -> Result<PathBuf> {
    eprintln!(
        "\n== A user flow: the pair-room scenario of seed 003, one row of metrics per step =="
    );
    let file = output.join("pair-room.yaml");
    std::fs::write(&file, PAIR_ROOM).with_context(|| format!("cannot write {}", file.display()))?;
    let target = rt.block_on(volley_demo::start("127.0.0.1:0".parse()?, knobs))?;
    let stages = if quick { "2s:5,3s:5" } else { "5s:20,10s:20" };
    let spec = demo_spec(
        target.addr,
        "",
        stages,
        (Some(&file), &[]),
        "demo-4-pair-room-flow",
        output,
    );
    let dir = spec
        .and_then(|s| crate::run_cmd::execute(&s, ProgressMode::Plain))
        .map(|(dir, _)| dir);
    rt.block_on(target.stop())?;
    dir
}

fn compare(runs: &[PathBuf], phases: &[Phase], out: &Path, verbose: bool) -> Result<()> {
    let sources = runs
        .iter()
        .map(|p| volley_formats::open(p))
        .collect::<Result<Vec<_>, _>>()?;
    let sets: Vec<volley_formats::RunSet> = sources
        .iter()
        .cloned()
        .map(volley_formats::RunSet::single)
        .collect();
    let labels: Vec<String> = phases.iter().map(|p| p.label.to_string()).collect();
    let cmp = volley_report::compare::build(&sets, &labels, ReportOptions::default());
    // The comparison carries what each phase found (from the target's own metrics) and the
    // server's figures phase by phase, in every form.
    let rest = out.join("comparison.md").display().to_string();
    let detail = crate::run_cmd::detail_of(verbose);
    println!("\n{}", cmp.doc().terminal_as(detail, &rest));
    let md_path = out.join("comparison.md");
    let mut md = String::from("# volley demo: tuning the chat server's `GET /rooms`\n\n");
    for (p, dir) in phases.iter().zip(runs) {
        md.push_str(&format!(
            "- **{}**: {} — `{}`\n",
            p.label,
            p.change,
            dir.display()
        ));
    }
    md.push('\n');
    md.push_str(&cmp.markdown());
    md.push_str("\n![TPS by phase](comparison_charts/tps.png)\n![MTTFB by phase](comparison_charts/mttfb.png)\n![TTFB by percentile](comparison_charts/percentiles.png)\n");
    crate::report_cmd::write_compare_html(
        &cmp,
        &sets,
        ReportOptions::default(),
        &out.join("comparison.html"),
        |sources, svgs| {
            volley_report::html::compare_page(&cmp, sources, ReportOptions::default(), svgs, None)
        },
    )?;
    std::fs::write(&md_path, md)?;
    std::fs::write(out.join("comparison.json"), cmp.to_json())?;
    eprintln!(
        "volley: the runs are in {}; each has report.html, report.md, report.json and charts/",
        out.display()
    );
    eprintln!(
        "volley: the comparison is in {} (open it in a browser), {} and comparison.json",
        out.join("comparison.html").display(),
        md_path.display()
    );
    eprintln!(
        "volley: compare them again with: volley compare {} --labels {}",
        runs.iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(" "),
        phases
            .iter()
            .map(|p| p.label)
            .collect::<Vec<_>>()
            .join(",")
            .replace(' ', "\\ ")
    );
    Ok(())
}

pub(crate) fn serve(a: ServeArgs) -> Result<ExitCode> {
    let knobs = a.knobs.0;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let served = rt.block_on(async {
        let cert = a.http3_cert.clone().unwrap_or_else(|| {
            std::env::temp_dir().join(format!("volley-demo-h3-{}.pem", std::process::id()))
        });
        let h3 = a.http3.map(|udp| (udp, cert.as_path()));
        let target = volley_demo::start_with_http3(a.listen, &knobs, h3)
            .await
            .map_err(|e| anyhow::anyhow!("cannot start the target on {}: {e}", a.listen))?;
        eprintln!(
            "volley: demo target on http://{} (database {})",
            target.addr, target.db.location
        );
        if let Some(h3) = &target.http3 {
            eprintln!(
                "volley: HTTP/3 on https://{} (UDP; self-signed certificate {})",
                h3.addr,
                h3.cert.display()
            );
            eprintln!(
                "volley: try  volley run --http3 --cacert {} --url https://{}/rooms --vus 20 --duration 30s",
                h3.cert.display(),
                h3.addr
            );
        }
        eprintln!(
            "volley: try  volley run --url http://{}/rooms --vus 20 --duration 30s",
            target.addr
        );
        eprintln!(
            "volley: or a user flow  volley examples ex && volley check ex/pair-room.yaml --url http://{}",
            target.addr
        );
        eprintln!(
            "volley: metrics at http://{}/metrics; SIGTERM or Ctrl-C stops",
            target.addr
        );
        let signal = stop_signal().await?;
        let drain = humantime::format_duration(a.drain);
        eprintln!(
            "volley: {signal}: stopping (no new connections; in-flight requests finish, for at most {drain})"
        );
        match tokio::time::timeout(a.drain, target.stop()).await {
            Ok(stopped) => stopped?,
            Err(_) => eprintln!("volley: requests were still in flight after {drain}; exiting"),
        }
        anyhow::Ok(())
    });
    // Work still running past the drain (a request's CPU work) must not hold the exit.
    rt.shutdown_background();
    served?;
    Ok(ExitCode::SUCCESS)
}

/// Waits for SIGTERM (how Kubernetes stops a pod: the target is PID 1 there, which ignores a
/// signal it has no handler for) or Ctrl-C, and names it.
async fn stop_signal() -> Result<&'static str> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
        tokio::select! {
            _ = term.recv() => Ok("SIGTERM"),
            _ = tokio::signal::ctrl_c() => Ok("Ctrl-C"),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        Ok("Ctrl-C")
    }
}

/// The capacity of each phase under one SLO, searched as the `volley capacity` command it
/// prints would search it, then the two compared: the answer the tuning was for.
fn capacities(
    rt: &tokio::runtime::Runtime,
    phases: &[&Phase],
    out: &Path,
    quick: bool,
) -> Result<()> {
    let mut results = Vec::new();
    for phase in phases {
        eprintln!("\n== Capacity of {} — {} ==", phase.label, phase.change);
        let target = rt.block_on(volley_demo::start("127.0.0.1:0".parse()?, &phase.knobs))?;
        let base = format!("http://{}", target.addr);
        let dir = out.join(format!(
            "capacity-{}",
            phase.label.to_lowercase().replace(' ', "-")
        ));
        let flags: Vec<String> = [
            "--url",
            &format!("{base}/rooms"),
            "--rates",
            "50..20000",
            "--slo",
            "ttfb p99 < 250ms",
            "--slo",
            "error_rate < 1%",
            "--probe",
            if quick { "2s" } else { "5s" },
            "--warmup",
            if quick { "1s" } else { "2s" },
            "--precision",
            if quick { "20%" } else { "5%" },
            "--server-metrics",
            &format!("{base}/metrics"),
            "-o",
            &dir.to_string_lossy(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let shown: Vec<String> = flags
            .iter()
            .map(|f| {
                if f.contains(' ') {
                    format!("\"{f}\"")
                } else {
                    f.clone()
                }
            })
            .collect();
        eprintln!("$ volley capacity {}", shown.join(" "));
        let argv = ["volley".to_string(), "capacity".to_string()]
            .into_iter()
            .chain(flags);
        let crate::args::Command::Capacity(args) = crate::args::parse_from(argv)?.command else {
            unreachable!("the command is capacity");
        };
        let searched = crate::capacity_cmd::search(*args);
        rt.block_on(target.stop())?;
        let (_, result, _) = searched?;
        results.push(result);
    }
    println!(
        "\n{}",
        volley_report::capacity::compare_table(
            &results[0],
            &results[1],
            [phases[0].label, phases[1].label]
        )
    );
    Ok(())
}
