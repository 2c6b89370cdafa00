//! Every error with its cause: a step-up into each kind of failure — refusals at once (a full
//! accept queue), waits that time out (a DB pool's connection-timeout), a target that goes
//! away (refused connections) — names the kind, the level where it starts and what its timing
//! says, in the terminal, report.md, report.json and report.html alike.

use std::path::Path;
use std::time::Duration;

use crate::support::*;

fn demo(knobs: volley_demo::Knobs) -> (tokio::runtime::Runtime, volley_demo::Target) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let target = rt
        .block_on(volley_demo::start("127.0.0.1:0".parse().unwrap(), &knobs))
        .unwrap();
    (rt, target)
}

/// 2 VUs for 3 s, then 30 for 3 s, with the target's metrics.
fn step_up(target: &volley_demo::Target, out: &Path) -> std::process::Output {
    let url = format!("http://{}/rooms", target.addr);
    let metrics = format!("http://{}/metrics", target.addr);
    volley(&[
        "run",
        "--url",
        &url,
        "--stages",
        "0s:2,3s:2,0s:30,3s:30",
        "--server-metrics",
        &metrics,
        "--no-error-stop",
        "--timeout",
        "10s",
        "-o",
        out.to_str().unwrap(),
    ])
}

/// The findings of the run in `out`, and each form's text.
fn findings_everywhere(o: &std::process::Output, out: &Path) -> Vec<String> {
    let dir = only_run(out);
    let report = report_json(&dir);
    let findings: Vec<String> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let terminal = String::from_utf8_lossy(&o.stdout);
    for f in findings.iter().filter(|f| f.starts_with("Errors:")) {
        assert!(md.contains(f.as_str()), "report.md lacks `{f}`");
        assert!(terminal.contains(f.as_str()), "the terminal lacks `{f}`");
        // The page escapes text: compare its first words.
        let head: String = f.chars().take(30).collect();
        assert!(html.contains(&head), "report.html lacks `{head}`");
    }
    findings
}

#[test]
fn a_full_accept_queue_is_named_as_fast_refusals_at_the_level_they_start() {
    let _g = serial();
    let (rt, target) = demo(volley_demo::Knobs {
        max_threads: 2,
        accept_count: 2,
        db_rtt: Duration::from_millis(5),
        ..Default::default()
    });
    let out = out_dir();
    let o = step_up(&target, out.path());
    rt.block_on(target.stop()).unwrap();
    let f = findings_everywhere(&o, out.path());
    let all = f.join("\n");
    assert!(f[0].starts_with("Errors:"), "errors come first:\n{all}");
    assert!(f[0].contains("from 30 VUs"), "{all}");
    assert!(f[0].contains("HTTP 503"), "{all}");
    assert!(
        f[1].contains("fast refusals") && f[1].contains("accept-count"),
        "{all}"
    );
    assert!(f[1].contains("all 2 of its threads were busy"), "{all}");
    // The level table's error rate is of all requests: at most 100 %.
    let dir = only_run(out.path());
    let r = report_json(&dir);
    for l in r["levels"].as_array().unwrap() {
        let e = l["error_rate_pct"].as_f64().unwrap();
        assert!((0.0..=100.0).contains(&e), "{l}");
    }
    // The time each failure took is kept, with its own percentiles.
    let failed = &r["per_request"]["failed_ms"];
    assert!(failed["p90_ms"].as_f64().unwrap() < 50.0, "{failed}");
}

#[test]
fn a_pool_that_times_out_is_named_as_a_wait_of_fixed_length() {
    let _g = serial();
    let (rt, target) = demo(volley_demo::Knobs {
        db_pool: 1,
        db_rtt: Duration::from_millis(40),
        db_timeout: Duration::from_millis(600),
        ..Default::default()
    });
    let out = out_dir();
    let o = step_up(&target, out.path());
    rt.block_on(target.stop()).unwrap();
    let f = findings_everywhere(&o, out.path());
    let all = f.join("\n");
    assert!(f[0].starts_with("Errors:"), "{all}");
    assert!(f[0].contains("from 30 VUs"), "{all}");
    assert!(
        f.iter()
            .any(|s| s.contains("took 0.6 s each") && s.contains("connection-timeout")),
        "{all}"
    );
    assert!(f.iter().any(|s| s.contains("HikariCP timed out")), "{all}");
}

#[test]
fn a_target_that_goes_away_is_named_as_refused_connections() {
    let _g = serial();
    let (rt, target) = demo(volley_demo::Knobs::default());
    let out = out_dir();
    let url = format!("http://{}/rooms", target.addr);
    let child = Watched::start(&[
        "run",
        "--url",
        &url,
        "--vus",
        "4",
        "--pacing",
        "10ms",
        "--duration",
        "5s",
        "--no-error-stop",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    // The target stops two seconds in: the event under test, not a state waited for.
    std::thread::sleep(Duration::from_secs(2));
    rt.block_on(target.stop()).unwrap();
    let o = child.finish();
    let f = findings_everywhere(&o, out.path());
    let all = f.join("\n");
    assert!(f[0].starts_with("Errors:"), "{all}");
    assert!(
        f[0].contains("from 2.") || f[0].contains("from 1."),
        "{all}"
    );
    assert!(
        f.iter().any(|s| s.contains("refused or reset connections")),
        "{all}"
    );
}

/// What the measurement hides, shown: with `--connections`, each request's wait for a shared
/// connection is kept out of its TTFB, and reported on its own line with its percentiles.
#[test]
fn the_wait_for_a_shared_connection_has_its_own_line_and_percentiles() {
    let _g = serial();
    let (rt, target) = demo(volley_demo::Knobs {
        db_rtt: Duration::from_millis(5),
        ..Default::default()
    });
    let out = out_dir();
    let url = format!("http://{}/rooms", target.addr);
    let o = volley(&[
        "run",
        "--url",
        &url,
        "--stages",
        "0s:40,3s:40",
        "--connections",
        "2",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    // A run without shared connections keeps no such histogram.
    let plain = out_dir();
    let p = volley(&[
        "run",
        "--url",
        &url,
        "--vus",
        "2",
        "--duration",
        "1s",
        "-o",
        plain.path().to_str().unwrap(),
    ]);
    rt.block_on(target.stop()).unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(p.status.success(), "{}", text(&p));
    let dir = only_run(out.path());
    let r = report_json(&dir);
    let wait = &r["per_request"]["pool_wait_ms"];
    assert!(wait["count"].as_u64().unwrap() > 0, "{wait}");
    // 40 VUs take turns on 2 connections: most of a request's life is that wait.
    assert!(wait["p50_ms"].as_f64().unwrap() > 0.0, "{wait}");
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("Connection wait (pool)"), "{md}");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("Connection wait (pool)"),
        "{}",
        text(&o)
    );
    let r = report_json(&only_run(plain.path()));
    assert!(r["per_request"].get("pool_wait_ms").is_none(), "{r}");
}
