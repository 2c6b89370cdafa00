//! `--server-metrics`: the demo target's /metrics scraped every interval into server.csv,
//! and an endpoint that does not answer counted, never fatal.

use std::time::Duration;

use crate::support::*;

/// The demo target on a free loopback port, `db_pool` connections each held `db_rtt_ms` per
/// query (the service tops out near pool / rtt), and the runtime it runs on.
fn demo_target(db_pool: usize, db_rtt_ms: u64) -> (tokio::runtime::Runtime, volley_demo::Target) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let knobs = volley_demo::Knobs {
        db_pool,
        db_rtt: Duration::from_millis(db_rtt_ms),
        ..Default::default()
    };
    let target = rt
        .block_on(volley_demo::start("127.0.0.1:0".parse().unwrap(), &knobs))
        .unwrap();
    (rt, target)
}

#[test]
fn scrapes_land_in_server_csv_and_failures_are_counted() {
    let _g = serial();
    let (rt, target) = demo_target(1, 20);
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = out_dir();
    let url = format!("http://{}/rooms", target.addr);
    let metrics = format!("http://{}/metrics", target.addr);
    let dead = format!("http://127.0.0.1:{closed}/metrics");
    let o = volley(&[
        "run",
        "--url",
        &url,
        "--vus",
        "5",
        "--duration",
        "3s",
        "--server-metrics",
        &metrics,
        "--server-metrics",
        &dead,
        "-o",
        out.path().to_str().unwrap(),
    ]);
    rt.block_on(target.stop()).unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let dir = only_run(out.path());
    let csv = std::fs::read_to_string(dir.join("server.csv")).unwrap();
    assert!(
        csv.starts_with("Elapsed_(s),Target,Series,Value,Kind\n"),
        "{}",
        &csv[..200.min(csv.len())]
    );
    let pending: Vec<f64> = csv
        .lines()
        .filter(|l| l.contains("\"hikaricp_connections_pending{pool=\"\"HikariPool-1\"\"}\""))
        .map(|l| l.rsplit(',').nth(1).unwrap().parse().unwrap())
        .collect();
    assert!(pending.len() >= 2, "{csv}");
    assert!(
        pending.iter().any(|p| *p > 0.0),
        "5 VUs on a 1-connection pool must queue: {pending:?}"
    );
    assert!(
        csv.lines()
            .any(|l| l.contains("http_server_requests_seconds_count") && l.ends_with(",rate")),
        "counters become rates"
    );
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    let notes = meta["server_metrics"].as_array().unwrap();
    assert!(notes[0]["ok"].as_u64().unwrap() >= 2, "{meta}");
    assert!(notes[1]["failed"].as_u64().unwrap() >= 2, "{meta}");
    assert!(
        notes[1]["last_error"].as_str().unwrap().contains("connect"),
        "{meta}"
    );
    // The report names the pool's queue at its peak, with the load at that moment, and draws it.
    let report = report_json(&dir);
    let peak = report["server"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| {
            p["series"]
                .as_str()
                .unwrap()
                .starts_with("hikaricp_connections_pending")
        })
        .unwrap()
        .clone();
    assert!(
        peak["peak"].as_f64().unwrap() > 0.0 && peak["vusers"].as_f64().unwrap() > 0.0,
        "{peak}"
    );
    assert!(dir.join("charts/server.png").is_file() && dir.join("charts/server.svg").is_file());
    assert!(String::from_utf8_lossy(&o.stdout).contains("Server (peaks of scraped metrics;"));
}

#[test]
fn a_ramp_on_a_small_pool_reports_pending_and_a_saturation_point() {
    let _g = serial();
    // Two connections held 10 ms per query: the service tops out near 200 TPS.
    let (rt, target) = demo_target(2, 10);
    let out = out_dir();
    let url = format!("http://{}/rooms", target.addr);
    let metrics = format!("http://{}/metrics", target.addr);
    let o = volley(&[
        "run",
        "--url",
        &url,
        "--stages",
        "8s:24",
        "--interval",
        "500ms",
        "--server-metrics",
        &metrics,
        "-o",
        out.path().to_str().unwrap(),
    ]);
    rt.block_on(target.stop()).unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let report = report_json(&only_run(out.path()));
    let findings: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(
        findings
            .iter()
            .any(|f| f.starts_with("DB pool pending > 0 from")),
        "{findings:?}"
    );
    let sat = &report["saturation"];
    let at = sat["saturated_at"]
        .as_u64()
        .unwrap_or_else(|| panic!("no saturation point: {sat}")) as usize;
    let knee_tps = sat["levels"][at]["tps"].as_f64().unwrap();
    assert!(
        (100.0..=260.0).contains(&knee_tps),
        "the knee sits near the pool's capacity of ~200 TPS: {sat}"
    );
    assert!(
        findings
            .iter()
            .any(|f| f.starts_with("TPS stopped growing at")),
        "{findings:?}"
    );
}

/// A scrape taken the instant a stage starts shows that stage's load, and is named with it:
/// 5 VUs on a pool of 6 connections never queue, 10 do; the scrape at 3 s, when 10 VUs
/// start, used to be credited to the interval that ends at 3 s (5 VUs), so the report said
/// "pending from 5 VUs" and "peaked at 5 VUs".
#[test]
fn server_readings_name_the_load_in_force_at_stage_boundaries() {
    let _g = serial();
    let (rt, target) = demo_target(6, 20);
    let out = out_dir();
    let url = format!("http://{}/rooms", target.addr);
    let metrics = format!("http://{}/metrics", target.addr);
    let o = volley(&[
        "run",
        "--url",
        &url,
        "--stages",
        "0s:5,3s:5,0s:10,3s:10",
        "--server-metrics",
        &metrics,
        "-o",
        out.path().to_str().unwrap(),
        "--progress",
        "none",
    ]);
    rt.block_on(target.stop()).unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let report = report_json(&only_run(out.path()));
    let pending = report["server"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| {
            p["series"]
                .as_str()
                .unwrap()
                .starts_with("hikaricp_connections_pending")
        })
        .unwrap_or_else(|| panic!("{report}"));
    assert!(pending["peak"].as_f64().unwrap() > 0.0, "{pending}");
    assert_eq!(pending["vusers"].as_f64(), Some(10.0), "{pending}");
    assert_eq!(
        pending["first_nonzero_vusers"].as_f64(),
        Some(10.0),
        "{pending}"
    );
    let findings = report["findings"].to_string();
    assert!(
        findings.contains("DB pool pending > 0 from 10 VUs")
            && findings.contains("waiting requests at 10 VUs"),
        "{findings}"
    );
    // The levels table: nothing waits at 5 VUs.
    let levels = report["levels"].as_array().unwrap();
    let at = |v: f64| {
        levels
            .iter()
            .find(|l| l["vusers"].as_f64() == Some(v))
            .unwrap_or_else(|| panic!("no level of {v} VUs: {levels:?}"))
    };
    let pool_pending = |l: &serde_json::Value| {
        l["server"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s[0] == "pool pending")
            .map(|s| s[1].as_f64().unwrap())
    };
    assert_eq!(pool_pending(at(5.0)), Some(0.0), "{levels:?}");
    assert!(pool_pending(at(10.0)).unwrap() > 0.0, "{levels:?}");
}
