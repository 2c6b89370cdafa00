//! `volley sweep`: one run per value, the comparison, and the best value named.

use crate::support::*;

#[test]
fn a_sweep_over_demo_pool_sizes_names_the_best() {
    let _g = serial();
    let out = out_dir();
    let o = volley(&[
        "sweep",
        "--demo",
        "--vary",
        "db-pool=1,4",
        "--demo-knob",
        "db-rtt=5ms",
        "--objective",
        "tps",
        "-o",
        out.path().to_str().unwrap(),
        "--",
        "--url",
        "{target}/rooms",
        "--vus",
        "8",
        "--duration",
        "2s",
        "--interval",
        "250ms",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("db-pool=4") && stdout.contains("← best"),
        "{stdout}"
    );
    // The answer first, on one screen: two lines per value's run, then the sweep's verdict.
    crate::terminal::on_one_screen(&stdout, crate::terminal::BUDGET + 2 * 2, "Best by tps", 12);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("sweep.json")).unwrap())
            .unwrap();
    assert_eq!(summary["best"], "db-pool=4", "{summary}");
    assert_eq!(
        summary["beyond_noise"], true,
        "4 connections at 5 ms each beat 1: {summary}"
    );
    let rows = summary["rows"].as_array().unwrap();
    assert!(
        rows[1]["tps_avg"].as_f64().unwrap() > 2.0 * rows[0]["tps_avg"].as_f64().unwrap(),
        "{summary}"
    );
    assert!(out.path().join("sweep.md").is_file() && out.path().join("sweep.html").is_file());
}

#[test]
fn a_sweep_substitutes_values_into_flags_and_the_setup_command() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let marker = out.path().join("setup.log");
    let setup = format!("echo {{vus}} >> {}", marker.display());
    let url = server.url("/ok");
    let o = volley(&[
        "sweep",
        "--vary",
        "vus=1,3",
        "--setup",
        &setup,
        "-o",
        out.path().to_str().unwrap(),
        "--",
        "--url",
        &url,
        "--vus",
        "{vus}",
        "--duration",
        "1s",
        "--pacing",
        "100ms",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "1\n3\n");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("sweep.json")).unwrap())
            .unwrap();
    let tps: Vec<f64> = summary["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["tps_avg"].as_f64().unwrap())
        .collect();
    assert!(
        (tps[0] - 10.0).abs() <= 1.5 && (tps[1] - 30.0).abs() <= 3.0,
        "1 and 3 VUs at 10 iterations/s: {tps:?}"
    );
    let o = volley(&["sweep", "--vary", "vus=1", "--", "--url", &url]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "one value is not a sweep: {}",
        text(&o)
    );
}

#[test]
fn a_sweep_with_repeat_runs_a_group_per_value_and_judges_between_runs() {
    let _g = serial();
    let out = out_dir();
    let o = volley(&[
        "sweep",
        "--demo",
        "--vary",
        "db-pool=1,4",
        "--demo-knob",
        "db-rtt=5ms",
        "--repeat",
        "2",
        "-o",
        out.path().to_str().unwrap(),
        "--",
        "--url",
        "{target}/rooms",
        "--vus",
        "8",
        "--duration",
        "2s",
        "--interval",
        "250ms",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("sweep.json")).unwrap())
            .unwrap();
    assert_eq!(summary["judged_by"], "pooled t, 2 vs 2 runs", "{summary}");
    assert_eq!(summary["best"], "db-pool=4", "{summary}");
    for r in summary["rows"].as_array().unwrap() {
        assert_eq!(r["runs"], 2, "{summary}");
    }
    let groups: Vec<_> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("group.json").is_file())
        .collect();
    assert_eq!(groups.len(), 2, "one run group per value: {groups:?}");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("pooled t, 2 vs 2 runs"),
        "{}",
        text(&o)
    );
}
