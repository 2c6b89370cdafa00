//! The open model and coordinated omission.
//!
//! The target freezes every response from 5 s to 6 s of each 10 s. At a fixed 500
//! arrivals/s for 20 s, an honest client sends 10,000 requests; the 1,000 due inside the
//! two freezes (10 %) wait until the freeze ends, so their latencies spread evenly over
//! 0–1 s. The fraction slower than x seconds is then (1 − x) · 0.1, which puts the true
//! p99 at x = 0.9 s and p99.9 at 0.99 s (the figures an open-model tool must report).

use volley_formats::RunData;

use crate::support::*;

/// Runs 500/s for 20 s; returns the report JSON, the run, and `volley report`'s table.
fn open_run(server: &TestServer, max_vus: &str) -> (serde_json::Value, RunData, String) {
    let out = out_dir();
    let url = server.url("/stall");
    let o = volley(&[
        "run",
        "--url",
        &url,
        "--rate",
        "500",
        "--duration",
        "20s",
        "--max-vus",
        max_vus,
        "--progress",
        "none",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let dir = only_run(out.path());
    let table = volley(&["report", "--verbose", dir.to_str().unwrap()]);
    (
        report_json(&dir),
        RunData::read(&dir).unwrap(),
        String::from_utf8_lossy(&table.stdout).into_owned(),
    )
}

fn ms(r: &serde_json::Value, which: &str, p: &str) -> f64 {
    r["per_request"][which][p]
        .as_f64()
        .unwrap_or_else(|| panic!("{which}.{p} in {r}"))
}

#[test]
fn corrected_percentiles_show_the_stall_with_enough_vus() {
    let _g = serial();
    let server = TestServer::start();
    let (r, run, _) = open_run(&server, "700");
    let requests = run.series.tests() + run.series.errors();
    assert!(
        (9_900..=10_001).contains(&requests),
        "{requests} requests for 500/s over 20 s"
    );
    assert_eq!(server.seen(), requests);
    let g = &r["generator"];
    assert_eq!(g["dropped"], 0, "{g}");
    // Every arrival's dispatch delay is in the schedule-lag histogram, once.
    assert_eq!(g["sched_lag_ms"]["count"].as_u64(), Some(requests), "{g}");
    let (p99, p999) = (ms(&r, "ttfb_ms", "p99_ms"), ms(&r, "ttfb_ms", "p99_9_ms"));
    assert!(
        (800.0..=1000.0).contains(&p99),
        "p99 {p99} ms, expected ≈ 900"
    );
    assert!(
        (940.0..=1050.0).contains(&p999),
        "p99.9 {p999} ms, expected ≈ 990"
    );
    assert!(
        r["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("Open model"))
    );
}

#[test]
fn too_few_vus_late_arrivals_are_reported_and_uncorrected_figures_understate() {
    let _g = serial();
    let server = TestServer::start();
    let (r, run, stdout) = open_run(&server, "8");
    let g = &r["generator"];
    assert!(g["late"].as_u64().unwrap() > 500, "{g}");
    // Every arrival was still sent, late: latency from the due time shows the stall...
    assert!(run.series.tests() + run.series.errors() >= 9_900);
    let corrected = ms(&r, "ttfb_ms", "p99_ms");
    assert!(
        (750.0..=1100.0).contains(&corrected),
        "corrected p99 {corrected} ms"
    );
    // ...while the same requests timed from their actual send hide it, as a closed loop does.
    let uncorrected = ms(&r, "ttfb_actual_ms", "p99_ms");
    assert!(uncorrected < 100.0, "uncorrected p99 {uncorrected} ms");
    // The generator's own lag is not the wait for a free VU (that is `late`): it stays far
    // below the stall while every arrival is still counted in it.
    let lag = &g["sched_lag_ms"];
    assert_eq!(
        lag["count"].as_u64(),
        Some(run.series.tests() + run.series.errors() + g["dropped"].as_u64().unwrap()),
        "{g}"
    );
    assert!(
        lag["p99_ms"].as_f64().unwrap() < corrected / 4.0,
        "schedule lag p99 {lag} vs corrected p99 {corrected} ms"
    );
    assert!(stdout.contains("schedule lag p50"), "{stdout}");
    assert!(
        stdout.contains("TTFB (from due time)") && stdout.contains("TTFB (actual send)"),
        "{stdout}"
    );
}

#[test]
fn ttfb_at_a_fixed_rate_matches_the_server_delay() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let url = server.url("/delay?ms=20");
    let o = volley(&[
        "run",
        "--url",
        &url,
        "--rate",
        "100",
        "--duration",
        "3s",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r = report_json(&only_run(out.path()));
    let p50 = ms(&r, "ttfb_ms", "p50_ms");
    let held = server.median_delay_ms();
    assert!(
        (p50 - held).abs() < 1.0 && (p50 - 20.0).abs() < 1.0,
        "TTFB p50 {p50} ms, the server held {held} ms"
    );
    let rows = RunData::read(&only_run(out.path())).unwrap();
    let sent = rows.series.tests() + rows.series.errors();
    assert!(
        (299..=301).contains(&sent),
        "{sent} arrivals for 100/s over 3 s"
    );
}
