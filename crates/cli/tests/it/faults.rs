//! Faults a run must survive and report honestly: it always ends on time, and it counts only
//! what it did (issue class "a run always ends on time, and counts only what it did").

use std::time::{Duration, Instant};

use crate::support::{TestServer, only_run, out_dir, report_json, serial, text, volley};

/// A step whose request can never be built from the data (a space in the path): nothing is
/// sent, so nothing is a test; the run stops at once with the reason, instead of spinning.
#[test]
fn a_step_that_can_never_be_built_stops_the_run_and_counts_no_test() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    std::fs::write(out.path().join("users.csv"), "name\nann lee\nbo diaz\n").unwrap();
    let file = out.path().join("bad.yaml");
    std::fs::write(
        &file,
        format!(
            "target: {}\ndata:\n  users: {{ file: users.csv }}\nsteps:\n  - name: profile\n    request: GET /x/{{{{ users.name }}}}\n",
            server.url("")
        ),
    )
    .unwrap();
    let runs = out.path().join("runs");
    let started = Instant::now();
    let o = volley(&[
        "run",
        file.to_str().unwrap(),
        "--vus",
        "4",
        "--duration",
        "60s",
        "-o",
        runs.to_str().unwrap(),
        "--progress",
        "none",
    ]);
    let took = started.elapsed();
    assert_eq!(
        o.status.code(),
        Some(1),
        "an aborted run fails: {}",
        text(&o)
    );
    assert!(
        took < Duration::from_secs(20),
        "the run stopped at once, not after its 60 s: {took:?}"
    );
    let r = report_json(&only_run(&runs));
    assert_eq!(r["status"], "aborted", "{r}");
    let reason = r["reason"].as_str().unwrap();
    assert!(
        reason.contains("iterations in a row sent no request")
            && reason.contains("[profile]")
            && reason.contains("not a valid URL path"),
        "{reason}"
    );
    assert_eq!(
        r["seed_suite"]["total_tests"], 0,
        "nothing was sent, so nothing is a test: {r}"
    );
    assert_eq!(r["seed_suite"]["errors"], 0, "{r}");
    let not_sent = r["errors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "not_sent")
        .unwrap_or_else(|| panic!("{r}"));
    assert!(not_sent["count"].as_u64().unwrap() >= 100, "{not_sent}");
    // Each distinct message once (one per feeder row here), never one per iteration.
    assert_eq!(
        not_sent["messages"].as_array().unwrap().len(),
        2,
        "{not_sent}"
    );
    assert_eq!(server.seen(), 0, "the server saw no request");
}

/// A server that never answers: the requests still in flight when the grace period ends
/// are errors (`unfinished`), not silence, so a CI gate cannot pass against a stalled server.
#[test]
fn requests_a_stalled_server_never_answers_are_counted_as_unfinished() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let url = server.url("/delay?ms=20000");
    let o = volley(&[
        "run",
        "--verbose",
        "--url",
        &url,
        "--vus",
        "3",
        "--duration",
        "1s",
        "--grace",
        "500ms",
        "--threshold",
        "error_rate < 1%",
        "-o",
        out.path().to_str().unwrap(),
        "--progress",
        "none",
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "the threshold fails: {}",
        text(&o)
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("NO REQUEST COMPLETED"),
        "said at the top: {stdout}"
    );
    let r = report_json(&only_run(out.path()));
    assert_eq!(r["status"], "complete", "{r}");
    // No first byte arrived: the MTTFB percentiles are not figures, not "0.00 ms".
    for key in [
        "mttfb_avg_ms",
        "mttfb_p50_ms",
        "mttfb_p99_ms",
        "mttfb_p99_9_ms",
    ] {
        assert!(r["seed_suite"][key].is_null(), "{key}: {r}");
    }
    assert!(
        stdout
            .lines()
            .any(|l| l.trim_start().starts_with("MTTFB p50") && l.trim_end().ends_with("n/a")),
        "{stdout}"
    );
    let html = std::fs::read_to_string(only_run(out.path()).join("report.html")).unwrap();
    assert!(
        html.contains("NO REQUEST COMPLETED") && !html.contains("0.00 ms"),
        "the page says it too, and shows no zero time"
    );
    assert_eq!(r["seed_suite"]["total_tests"], 3, "{r}");
    assert_eq!(r["seed_suite"]["errors"], 3, "{r}");
    let unfinished = r["errors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "unfinished")
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(unfinished["count"], 3, "{unfinished}");
    // How long they had waited is in the latency figures, labelled: ~1 s of run + 0.5 s of grace.
    let waited = &r["per_request"]["unfinished_ms"];
    assert_eq!(waited["count"], 3, "{r}");
    assert!(
        waited["min_ms"].as_f64().unwrap() >= 1000.0 && waited["max_ms"].as_f64().unwrap() < 5000.0,
        "{waited}"
    );
    assert!(stdout.contains("Unfinished (waited)"), "{stdout}");
    assert!(r["thresholds"][0]["passed"] == false, "{r}");
    assert_eq!(server.seen(), 3);
}

/// A run in which every answer is an error (a mistyped path answered 404 throughout) fails
/// with exit 1 and says why, whatever its thresholds say; the JUnit file fails it too; the
/// same run with 404 named as the expected answer passes.
#[test]
fn a_run_in_which_nothing_succeeded_fails() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let url = server.url("/status?code=404");
    let junit = out.path().join("junit.xml");
    let run = |extra: &[&str]| {
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
            "--progress",
            "none",
        ];
        args.extend_from_slice(extra);
        volley(&args)
    };
    let o = run(&["--junit", junit.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("volley: FAILED: no request succeeded: all ")
            && stderr.contains(" status (")
            && stderr.contains("--expect-status"),
        "{stderr}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(r#"<testcase name="a request succeeded""#)
            && xml.contains(r#"type="no_success""#),
        "{xml}"
    );
    let o = run(&["--expect-status", "404"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("FAILED"),
        "{}",
        text(&o)
    );
}
