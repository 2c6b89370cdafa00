//! `volley run` end to end.

use std::process::Command;
use std::time::Duration;

use volley_formats::RunData;

use crate::support::*;

#[test]
fn every_request_the_server_saw_is_recorded_once() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let url = server.url("/ok");
    let o = volley(&[
        "run",
        "--url",
        &url,
        "--vus",
        "8",
        "--duration",
        "3s",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let run = RunData::read(&only_run(out.path())).unwrap();
    let recorded = run.series.tests() + run.series.errors();
    assert!(recorded > 100, "too few requests: {recorded}");
    assert_eq!(
        server.seen(),
        recorded,
        "server saw {} requests, volley recorded {recorded}",
        server.seen()
    );
    assert_eq!(run.series.errors(), 0);
    // Three intervals, and the drain after the stop (the requests in flight then, completed
    // in the grace period) as a row of no length.
    let timed = run
        .series
        .intervals
        .iter()
        .filter(|r| r.period_s > 0.0)
        .count();
    assert_eq!(timed, 3);
    assert!(
        run.series.intervals[3..]
            .iter()
            .all(|r| r.period_s == 0.0 && r.vusers == 0.0 && r.tps.is_nan()),
        "{:?}",
        run.series.intervals
    );
    assert_eq!(run.meta.status, volley_formats::RunStatus::Complete);
}

#[test]
fn stages_and_pacing_are_honoured() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let url = server.url("/ok");
    // 0-2 s: 4 VUs; 2-4 s: 8 VUs; each VU starts an iteration every 100 ms.
    let args = [
        "run",
        "--url",
        &url,
        "--stages",
        "0s:4,2s:4,0s:8,2s:8",
        "--pacing",
        "100ms",
        "-o",
        out.path().to_str().unwrap(),
    ];
    let o = volley(&args);
    assert!(o.status.success(), "{}", text(&o));
    let run = RunData::read(&only_run(out.path())).unwrap();
    let rows = &run.series.intervals;
    assert_eq!(rows.len(), 4);
    let expected = [40.0, 40.0, 80.0, 80.0];
    for (row, want) in rows.iter().zip(expected) {
        // Within one interval's tolerance: one iteration per VU either side.
        let vus = want / 10.0;
        assert!(
            (row.tps - want).abs() <= vus,
            "interval at {} s: TPS {} (want {want})",
            row.start_s,
            row.tps
        );
        assert_eq!(row.vusers, vus, "interval at {} s", row.start_s);
    }
    assert_eq!(server.seen(), run.series.tests() + run.series.errors());
}

#[test]
fn ttfb_of_a_delayed_response_matches_the_delay() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let url = server.url("/delay?ms=40");
    let o = volley(&[
        "run",
        "--verbose",
        "--url",
        &url,
        "--vus",
        "2",
        "--duration",
        "2s",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let report = report_json(&only_run(out.path()));
    let p50 = report["per_request"]["ttfb_ms"]["p50_ms"].as_f64().unwrap();
    let held = server.median_delay_ms();
    assert!(
        (held - 40.0).abs() < 1.0,
        "the server held requests {held} ms"
    );
    assert!(
        (p50 - held).abs() < 1.0,
        "TTFB p50 {p50} ms, the server held responses {held} ms"
    );
    assert!(
        (p50 - 40.0).abs() < 1.0,
        "TTFB p50 {p50} ms, server delayed 40 ms"
    );
    assert!(report["seed_suite"]["mttfb_avg_ms"].as_f64().unwrap() >= 40.0);
    // A closed run's generator health has its event loop's own delay as a distribution: a
    // check every 10 ms on each worker, about 200 per worker over 2 s.
    let g = &report["generator"];
    let checks = g["sched_lag_ms"]["count"].as_u64().unwrap_or(0);
    assert!((80..=2 * 210).contains(&checks), "{g}");
    let (p50, max) = (
        g["sched_lag_ms"]["p50_ms"].as_f64().unwrap(),
        g["sched_lag_max_ms"].as_f64().unwrap(),
    );
    assert!(p50 <= max, "{g}");
    // Timed with the high-resolution alarm: tokio's timer would round every check up to the
    // next millisecond and show ~1 ms of lag on an idle loop.
    assert!(
        p50 < 0.9,
        "an idle loop's median delay is well under 1 ms: {g}"
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("event-loop lag p50 "), "{stdout}");
}

#[test]
fn errors_are_classified() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let o_dir = out.path().to_str().unwrap();
    let url = server.url("/status?code=500");
    let o = volley(&[
        "run",
        "--url",
        &url,
        "--vus",
        "2",
        "--duration",
        "1s",
        "--no-error-stop",
        "-o",
        o_dir,
        "--name",
        "five",
    ]);
    // Every answer a 500: the run fails as a whole (nothing succeeded), and is still recorded.
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no request succeeded"),
        "{}",
        text(&o)
    );
    let url = server.url("/delay?ms=1000");
    let o = volley(&[
        "run",
        "--url",
        &url,
        "--vus",
        "2",
        "--duration",
        "1s",
        "--timeout",
        "200ms",
        "-o",
        o_dir,
        "--name",
        "slow",
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "every request timed out: {}",
        text(&o)
    );
    let mut runs: Vec<_> = std::fs::read_dir(o_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    runs.sort();
    for run in runs {
        let data = RunData::read(&run).unwrap();
        let report = report_json(&run);
        let errors = report["errors"].as_array().unwrap();
        assert_eq!(errors.len(), 1, "{}", report);
        let (want_kind, want_message) = if data.meta.name == "five" {
            ("status", "HTTP 500")
        } else {
            ("timeout", "no complete response")
        };
        assert_eq!(errors[0]["kind"], want_kind);
        assert!(
            errors[0]["messages"][0]
                .as_str()
                .unwrap()
                .contains(want_message),
            "{}",
            errors[0]
        );
        assert_eq!(data.series.tests(), 0);
        assert!(data.series.errors() > 0);
        if want_kind == "status" {
            assert_eq!(
                data.series
                    .intervals
                    .iter()
                    .map(|i| i.response_errors)
                    .sum::<u64>(),
                data.series.errors()
            );
        }
    }
}

#[test]
fn status_expected_by_flag_is_a_success() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let url = server.url("/status?code=404");
    let o = volley(&[
        "run",
        "--url",
        &url,
        "--vus",
        "1",
        "--duration",
        "1s",
        "--expect-status",
        "404",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let run = RunData::read(&only_run(out.path())).unwrap();
    assert!(run.series.tests() > 0);
    assert_eq!(run.series.errors(), 0);
    // Counted in nGrinder's Response_errors all the same.
    assert_eq!(
        run.series
            .intervals
            .iter()
            .map(|i| i.response_errors)
            .sum::<u64>(),
        run.series.tests()
    );
}

#[test]
fn connection_close_reconnects_and_counts() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let url = server.url("/close");
    let o = volley(&[
        "run",
        "--url",
        &url,
        "--vus",
        "2",
        "--duration",
        "1s",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let run = RunData::read(&only_run(out.path())).unwrap();
    assert_eq!(run.series.errors(), 0);
    assert_eq!(server.seen(), run.series.tests());
    // The measured intervals' and the drain's after the stop (drain.csv, when there is one).
    let mut reconnects = 0;
    for file in ["series.csv", "drain.csv"] {
        let Ok(csv) = std::fs::read_to_string(only_run(out.path()).join(file)) else {
            continue;
        };
        let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let col = header.iter().position(|h| *h == "Reconnects").unwrap();
        reconnects += csv
            .lines()
            .skip(1)
            .map(|l| l.split(',').nth(col).unwrap().parse::<u64>().unwrap())
            .sum::<u64>();
    }
    assert_eq!(
        reconnects,
        run.series.tests() - 2,
        "every request after each VU's first needs a new connection"
    );
}

#[test]
fn unreachable_target_is_reported_before_the_run() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let out = out_dir();
    let url = format!("http://127.0.0.1:{port}/");
    let o = volley(&[
        "run",
        "--url",
        &url,
        "--vus",
        "1",
        "--duration",
        "5s",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("does not answer") && err.contains("refused"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_dir(out.path()).unwrap().count(),
        0,
        "no run directory for a run that never started"
    );
}

#[test]
fn bad_flags_exit_2_with_a_clear_message() {
    for (args, needle) in [
        (
            vec![
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--stages",
                "2m:50,abc",
            ],
            "stage 2 `abc`",
        ),
        (
            vec!["run", "--url", "ftp://x/", "--vus", "1", "--duration", "1s"],
            "not an absolute http",
        ),
        (
            vec!["run", "--url", "http://127.0.0.1:1/", "--vus", "1"],
            "--duration",
        ),
        (
            vec!["run", "--url", "http://127.0.0.1:1/", "--duration", "soon"],
            "`soon` is not a duration",
        ),
        (
            vec![
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--vus",
                "0",
                "--duration",
                "1s",
            ],
            "--vus 0: must be at least 1",
        ),
        (
            vec![
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--vus",
                "1",
                "--duration",
                "0s",
            ],
            "lasts no time at all",
        ),
        (
            vec![
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--rate",
                "0",
                "--duration",
                "1s",
            ],
            "give a rate above zero",
        ),
        (
            vec![
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--vus",
                "1",
                "--duration",
                "1s",
                "--max-vus",
                "0",
            ],
            "--max-vus 0: must be at least 1",
        ),
        (
            vec![
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--vus",
                "1",
                "--iterations",
                "0",
            ],
            "--iterations 0: must be at least 1",
        ),
        (
            vec![
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--vus",
                "1",
                "--duration",
                "1s",
                "--timeout",
                "0s",
            ],
            "--timeout 0s: `0s` is shorter than the 1 ms a timer can tell apart",
        ),
        (
            vec![
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--vus",
                "1",
                "--duration",
                "1s",
                "--threads",
                "0",
            ],
            "--threads must be at least 1",
        ),
        (
            vec![
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--vus",
                "1",
                "--duration",
                "10s",
                "--warmup",
                "10s",
            ],
            "leaves nothing of the 10s run",
        ),
        (
            vec![
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--vus",
                "1",
                "--duration",
                "1s",
                "--interval",
                "10ms",
            ],
            "--interval 10ms: give between 100ms and 1h",
        ),
        (
            vec![
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--vus",
                "1",
                "--duration",
                "1s",
                "--threshold",
                "error_rate < 200%",
            ],
            "from 0% to 100%",
        ),
        (
            vec![
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--vus",
                "1",
                "--duration",
                "1s",
                "--ramp-up",
                "2s",
            ],
            "longer than the duration",
        ),
        (
            vec![
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--rate",
                "10",
                "--vus",
                "2",
                "--duration",
                "1s",
            ],
            "cannot be used with",
        ),
        (
            vec!["target", "serve", "--db-pool", "many"],
            "db-pool=many: expected a whole number",
        ),
        (
            vec![
                "run",
                "--url",
                "http://127.0.0.1:99999/",
                "--vus",
                "1",
                "--duration",
                "1s",
            ],
            "port 99999 is not a port; ports run from 1 to 65535",
        ),
        (
            vec![
                "run",
                "--url",
                "http://127.0.0.1:0/",
                "--vus",
                "1",
                "--duration",
                "1s",
            ],
            "port 0 is not a port",
        ),
        (
            vec![
                "run",
                "--url",
                "http://kim:s3cret@127.0.0.1:1/",
                "--vus",
                "1",
                "--duration",
                "1s",
            ],
            "`http://…@127.0.0.1:1/` carries user information (`user:password@`), which volley does not send from a URL; drop it from the URL and send an `Authorization: Basic <base64 of user:password>` header",
        ),
        (
            vec![
                "report",
                "--warmup",
                "stage:2",
                "../../fixtures/ngrinder/ngrinder_neven7_output.csv",
            ],
            "needs a volley run's stages and this has none",
        ),
        (
            vec![
                "report",
                "--warmup",
                "1h",
                "../../fixtures/ngrinder/ngrinder_neven7_output.csv",
            ],
            "leaves nothing of the 594 s measured",
        ),
        (
            vec![
                "report",
                "--warmup",
                "stage:x",
                "../../fixtures/ngrinder/ngrinder_neven7_output.csv",
            ],
            "write stage:N",
        ),
        (
            vec![
                "sweep",
                "--vary",
                "pool=5,10",
                "--",
                "--url",
                "http://127.0.0.1:1/",
                "--vus",
                "1",
                "--duration",
                "1s",
            ],
            "`{pool}` appears in neither the run flags nor --setup",
        ),
        // One rule for every duration and time: a bare number is refused, with what to write.
        (
            vec![
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--vus",
                "1",
                "--duration",
                "5",
            ],
            "--duration 5: `5` has no unit: write 5s, 5ms or 5m",
        ),
        (
            vec![
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--stages",
                "0s:5,5:5",
            ],
            "stage 2 `5:5`: `5` has no unit: write 5s, 5ms or 5m",
        ),
        (
            vec![
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--vus",
                "1",
                "--duration",
                "1s",
                "--threshold",
                "ttfb p99 < 500",
            ],
            "threshold `ttfb p99 < 500`: `500` has no unit: write 500s, 500ms or 500m",
        ),
        (
            vec![
                "run",
                "--url",
                "http://127.0.0.1:1/",
                "--vus",
                "1",
                "--duration",
                "1s",
                "--think-time",
                "0",
            ],
            "`0` has no unit: write 0s, 0ms or 0m",
        ),
        (
            vec![
                "capacity",
                "--url",
                "http://127.0.0.1:1/",
                "--rates",
                "10..20",
                "--slo",
                "ttfb p99 < 200",
            ],
            "`200` has no unit",
        ),
    ] {
        let o = volley(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(needle),
            "{args:?}: {}",
            text(&o)
        );
    }
}

#[test]
fn sigint_leaves_an_interrupted_run_that_reports() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let url = server.url("/delay?ms=5");
    let child = Command::new(env!("CARGO_BIN_EXE_volley"))
        .args([
            "run",
            "--url",
            &url,
            "--vus",
            "4",
            "--duration",
            "60s",
            "-o",
            out.path().to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Ctrl-C once two intervals are recorded.
    wait_for_intervals(out.path(), 2, Duration::from_secs(30));
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let dir = only_run(out.path());
    let run = RunData::read(&dir).unwrap();
    assert_eq!(run.meta.status, volley_formats::RunStatus::Interrupted);
    assert!(
        run.series.intervals.len() >= 2 && run.series.intervals.len() <= 4,
        "{} intervals",
        run.series.intervals.len()
    );
    assert_eq!(server.seen(), run.series.tests() + run.series.errors());
    assert_eq!(report_json(&dir)["status"], "interrupted");
    // And `volley report` reads it again.
    let o = volley(&["report", dir.to_str().unwrap()]);
    assert!(
        o.status.success() && String::from_utf8_lossy(&o.stdout).contains("interrupted"),
        "{}",
        text(&o)
    );
}

/// The seeds' own metric script (bench/import/seed_suite.py: pandas reads the CSV, `np.sort`
/// and `np.percentile` take the percentiles), run with numpy and pandas from PyPI
/// (scripts/test.sh puts them in target/tools/venv) on a file; its figures by label, as
/// printed. The test calls `need("pandas")` before it.
fn seed_script(csv: &std::path::Path) -> std::collections::HashMap<String, String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = root.join("target/tools/venv/bin/python3");
    // C: the script sets the locale from the environment, and groups Total Tests by it.
    let o = Command::new(&python)
        .arg(root.join("bench/import/seed_suite.py"))
        .arg(csv)
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "seed_suite.py {}: {}",
        csv.display(),
        text(&o)
    );
    let out = String::from_utf8(o.stdout).unwrap();
    out.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// Issue 53 §1: series.csv is a file the seeds' script reads as it always did, every row's
/// TPS a number, so on a run with a drain after its stop (a 20-VU run has requests in flight
/// then) it gives report.json's TPS and MTTFB figures to the digit the report prints, not
/// NaN; the drain is in drain.csv, in the same columns, and the script's Total Tests on the
/// two files add up to the report's, whose notes say the drain is in it.
#[test]
fn the_seeds_script_on_series_csv_gives_the_reported_figures() {
    if !need("pandas") {
        return;
    }
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let url = server.url("/delay?ms=20");
    let o = volley(&[
        "run",
        "--verbose",
        "--url",
        &url,
        "--vus",
        "20",
        "--duration",
        "6s",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let dir = only_run(out.path());
    let report = report_json(&dir);
    let reported = &report["seed_suite"];
    // 20 VUs each wait 20 ms a request: at the stop, requests are in flight.
    assert!(
        dir.join("drain.csv").is_file(),
        "no drain after the stop of a 20-VU run"
    );
    let script = seed_script(&dir.join("series.csv"));
    let drain = seed_script(&dir.join("drain.csv"));
    let two = |key: &str| {
        let v = reported[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key}: {reported}"));
        format!("{v:.2}")
    };
    for (label, key, unit) in [
        ("TPS 평균", "tps_avg", ""),
        ("TPS p50", "tps_p50", ""),
        ("TPS p95", "tps_p95", ""),
        ("TPS p99", "tps_p99", ""),
        ("TPS p99.9", "tps_p99_9", ""),
        ("MTTFB 평균", "mttfb_avg_ms", " ms"),
        ("MTTFB p50", "mttfb_p50_ms", " ms"),
        ("MTTFB p95", "mttfb_p95_ms", " ms"),
        ("MTTFB p99", "mttfb_p99_ms", " ms"),
        ("MTTFB p99.9", "mttfb_p99_9_ms", " ms"),
        ("MTTFB 차이 평균", "mttfb_avg_diff_ms", " ms"),
        ("MTTFB 평균적인 변동률", "mttfb_variability_pct", "%"),
    ] {
        assert_eq!(
            script.get(label).map(String::as_str),
            Some(format!("{}{unit}", two(key)).as_str()),
            "{label}: the seeds' script on series.csv against report.json's {key}\n{script:#?}"
        );
    }
    // Total Tests: the script's on series.csv and on drain.csv, added, are the report's; so
    // are the errors (the count in its Error Rate line).
    let count = |figures: &std::collections::HashMap<String, String>, label: &str| -> u64 {
        let v = &figures[label];
        let v = v
            .rsplit_once('(')
            .map_or(v.as_str(), |(_, n)| n.trim_end_matches(')'));
        v.parse().unwrap_or_else(|e| panic!("{label} `{v}`: {e}"))
    };
    let in_drain = count(&drain, "Total Tests");
    assert!(in_drain > 0, "{drain:#?}");
    assert_eq!(
        count(&script, "Total Tests") + in_drain,
        reported["total_tests"].as_u64().unwrap()
    );
    assert_eq!(
        count(&script, "Error Rate") + count(&drain, "Error Rate"),
        reported["errors"].as_u64().unwrap()
    );
    // "… 20 requests that completed …" (or "1 request that …").
    let note = format!("Total Tests include {in_drain} request");
    assert!(
        report["notes"].as_array().unwrap().iter().any(|n| {
            let n = n.as_str().unwrap();
            n.starts_with(&note)
                && n.contains("completed in the grace period after the stop")
                && n.contains("drain.csv")
        }),
        "{}",
        report["notes"]
    );
    // And the terminal table prints the same TPS average.
    let stdout = String::from_utf8_lossy(&o.stdout);
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("TPS Average"))
        .unwrap();
    assert!(line.contains(&two("tps_avg")), "{line}");
}

#[test]
fn too_many_errors_stop_the_run_after_ten_seconds() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let url = server.url("/status?code=503");
    let o = volley(&[
        "run",
        "--url",
        &url,
        "--vus",
        "2",
        "--duration",
        "40s",
        "--pacing",
        "50ms",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let dir = only_run(out.path());
    let run = RunData::read(&dir).unwrap();
    assert_eq!(run.meta.status, volley_formats::RunStatus::Aborted);
    assert!(
        run.meta
            .reason
            .as_deref()
            .unwrap()
            .contains("too many errors"),
        "{:?}",
        run.meta.reason
    );
    let n = run.series.intervals.len();
    assert!((10..=13).contains(&n), "stopped after {n} intervals");
    assert_eq!(server.seen(), run.series.errors());
    assert!(String::from_utf8_lossy(&o.stdout).contains("too many errors"));
}

#[test]
fn phase_columns_add_up() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let url = server.url("/delay?ms=5");
    let o = volley(&[
        "run",
        "--url",
        &url,
        "--vus",
        "2",
        "--duration",
        "1s",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let csv = std::fs::read_to_string(only_run(out.path()).join("series.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let row: Vec<f64> = csv
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .skip(1)
        .map(|v| v.parse().unwrap())
        .collect();
    let get = |name: &str| row[header.iter().position(|h| *h == name).unwrap() - 1];
    let (ttfb, connect, waiting) = (
        get("Mean_time_to_first_byte"),
        get("Mean_time_to_establish_connection"),
        get("Mean_waiting_(ms)"),
    );
    assert!(
        (ttfb - connect - waiting).abs() < 0.01,
        "{ttfb} = {connect} + {waiting}"
    );
    assert!(waiting >= 5.0, "the server waits 5 ms: {waiting}");
    let total = get("Mean_Test_Time_(ms)");
    assert!((total - ttfb - get("Mean_receiving_(ms)")).abs() < 0.01);
}

#[test]
fn a_keep_alive_connection_the_server_closed_while_idle_is_not_an_error() {
    let _g = serial();
    // The server drops connections idle for 100 ms; each VU calls every 300 ms.
    let server = TestServer::start_with_idle_timeout(Some(Duration::from_millis(100)));
    let out = out_dir();
    let url = server.url("/ok");
    let o = volley(&[
        "run",
        "--url",
        &url,
        "--vus",
        "2",
        "--pacing",
        "300ms",
        "--duration",
        "2s",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let dir = only_run(out.path());
    let run = RunData::read(&dir).unwrap();
    assert_eq!(
        run.series.errors(),
        0,
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(run.series.tests() >= 12, "{} requests", run.series.tests());
    assert_eq!(server.seen(), run.series.tests());
}

#[test]
fn thresholds_set_the_exit_code_and_show_in_every_report() {
    let _g = serial();
    let server = TestServer::start();
    let url = server.url("/delay?ms=20");
    let run = |thresholds: &[&str]| {
        let out = out_dir();
        let mut args = vec![
            "run",
            "--url",
            &url,
            "--vus",
            "2",
            "--duration",
            "1s",
            "-o",
            out.path().to_str().unwrap(),
        ];
        for t in thresholds {
            args.extend(["--threshold", t]);
        }
        let o = volley(&args);
        let dir = only_run(out.path());
        (
            o,
            report_json(&dir),
            std::fs::read_to_string(dir.join("report.md")).unwrap(),
            out,
        )
    };
    let (o, r, md, _keep) = run(&["error_rate < 1%", "ttfb p99 < 2s"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(r["thresholds"].as_array().unwrap().len(), 2);
    assert!(
        md.contains("| `ttfb p99 < 2s` |") && md.contains("pass"),
        "{md}"
    );
    let (o, r, _, _keep) = run(&["error_rate < 1%", "ttfb p50 < 5ms"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "a 20 ms server fails `ttfb p50 < 5ms`: {}",
        text(&o)
    );
    let failed: Vec<&str> = r["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["passed"] == false)
        .map(|t| t["expr"].as_str().unwrap())
        .collect();
    assert_eq!(failed, vec!["ttfb p50 < 5ms"]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("thresholds failed: ttfb p50 < 5ms"),
        "{}",
        text(&o)
    );
    let o = volley(&[
        "run",
        "--url",
        &url,
        "--vus",
        "1",
        "--duration",
        "1s",
        "--threshold",
        "latency p99 < 5ms",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("unknown figure `latency`"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_run_count_sends_exactly_vus_times_iterations() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let o = volley(&[
        "run",
        "--url",
        &server.url("/ok"),
        "--vus",
        "3",
        "--iterations",
        "5",
        "-o",
        out.path().to_str().unwrap(),
        "--progress",
        "none",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        server.seen(),
        15,
        "3 VUs × 5 iterations (the pre-run check connects without a request)"
    );
}

#[test]
fn a_run_is_named_after_its_url_path_else_its_host() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let runs = out.path().join("runs");
    let junit = out.path().join("run.xml");
    let o = volley(&[
        "run",
        "--url",
        &server.url("/api/rooms?x=1"),
        "--iterations",
        "1",
        "-o",
        runs.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
        "--progress",
        "none",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let run = only_run(&runs);
    assert!(
        run.file_name()
            .unwrap()
            .to_string_lossy()
            .ends_with("Z_rooms"),
        "{}",
        run.display()
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("classname=\"volley.run.rooms\""), "{xml}");
    // `volley runs --name rooms` finds it, as the README shows.
    let o = volley(&["runs", runs.to_str().unwrap(), "--name", "rooms", "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let list: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1, "{list:#}");
    assert_eq!(list[0]["name"], "rooms", "{list:#}");

    // A URL without a path is named after its host, as before.
    let root = out.path().join("root");
    let o = volley(&[
        "run",
        "--url",
        &server.url("/"),
        "--iterations",
        "1",
        "-o",
        root.to_str().unwrap(),
        "--progress",
        "none",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let run = only_run(&root);
    assert!(
        run.file_name()
            .unwrap()
            .to_string_lossy()
            .ends_with("Z_127-0-0-1"),
        "{}",
        run.display()
    );
}
