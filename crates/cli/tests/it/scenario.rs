//! Scenario files end to end: extraction, loops, feeders, checks, SSE, WebSocket,
//! thresholds, secrets, `volley check` and bad files, against servers on loopback.

use std::path::{Path, PathBuf};

use crate::scenario_server::ScenarioServer;
use crate::support::{TestServer, only_run, out_dir, report_json, serial, text, volley};

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

fn step<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["per_test"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no step {name}"))
}

const LOGIN_FLOW: &str = r#"
target: {{URL}}
steps:
  - name: login
    request: POST /login
    extract:
      token: $.token
      session: { header: X-Session }
      link: { regex: "href='([^']+)'" }
  - name: item by json
    request: GET /items/{{ token }}
    headers: { X-Session: "{{ session }}" }
    check:
      json: { "$.token": "{{ token }}" }
  - name: item by regex
    request: GET {{ link }}
    headers: { X-Session: "{{ session }}" }
  - group: loop
    repeat: 10
    steps:
      - name: count
        request: GET /count
"#;

#[test]
fn extracted_values_feed_later_requests_and_loops_repeat() {
    let _guard = serial();
    let server = ScenarioServer::start();
    let dir = out_dir();
    let file = write(
        dir.path(),
        "login.yaml",
        &LOGIN_FLOW.replace("{{URL}}", &server.url()),
    );
    // One iteration, exactly.
    let o = volley(&["check", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    {
        let s = server.seen();
        assert_eq!(s.logins, 1);
        assert_eq!(
            s.accepted.len(),
            2,
            "both later requests carried the issued token and session"
        );
        assert_eq!(s.refused, 0);
        assert_eq!(s.counted, 10, "repeat: 10 ran ten times");
    }
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("set token = tok1x") && out.contains("set session = sess-1"),
        "{out}"
    );
    // Under load: every token a VU extracted comes back to the server, and the loop keeps its ratio.
    let runs = out_dir();
    let o = volley(&[
        "run",
        file.to_str().unwrap(),
        "--vus",
        "3",
        "--duration",
        "2s",
        "-o",
        runs.path().to_str().unwrap(),
        "--progress",
        "none",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let s = server.seen();
    assert!(s.logins > 20, "{}", s.logins);
    assert_eq!(
        s.refused, 0,
        "no request carried a token that was not issued to it"
    );
    assert!(
        s.accepted.len() as u64 >= 2 * (s.logins - 1) - 3,
        "accepted {} of {} logins",
        s.accepted.len(),
        s.logins
    );
    let iterations = s.accepted.len() as f64 / 2.0;
    let ratio = (s.counted - 10) as f64 / (iterations - 1.0);
    assert!((9.0..=10.5).contains(&ratio), "count per iteration {ratio}");
    let report = report_json(&only_run(runs.path()));
    assert_eq!(step(&report, "count")["kind"], "http");
    assert_eq!(
        step(&report, "count")["seed_suite"]["total_tests"]
            .as_u64()
            .unwrap(),
        s.counted - 10
    );
    assert_eq!(
        step(&report, "login")["seed_suite"]["total_tests"]
            .as_u64()
            .unwrap(),
        s.logins - 1
    );
    assert!(
        step(&report, "item by json")["ttfb_ms"]["p99_ms"]
            .as_f64()
            .unwrap()
            > 0.0
    );
}

#[test]
fn feeders_hand_out_rows_in_order_and_unique_rows_stop_the_run() {
    let _guard = serial();
    let server = ScenarioServer::start();
    let dir = out_dir();
    write(
        dir.path(),
        "users.csv",
        "email,name\na@x.org,A\nb@x.org,B\nc@x.org,C\n",
    );
    let scenario = |order: &str, unique: bool| {
        format!(
            "target: {}\ndata:\n  users: {{ file: users.csv, order: {order}, unique: {unique} }}\nload: {{ vus: 1, duration: 3s, pacing: 200ms }}\nsteps:\n  - name: user\n    request: POST /user\n    json: {{ email: \"{{{{ users.email }}}}\" }}\n",
            server.url()
        )
    };
    let file = write(dir.path(), "shared.yaml", &scenario("shared", false));
    let runs = out_dir();
    let o = volley(&[
        "run",
        file.to_str().unwrap(),
        "-o",
        runs.path().to_str().unwrap(),
        "--progress",
        "none",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let emails = server.seen().emails.clone();
    assert!(emails.len() >= 10, "{emails:?}");
    for (i, e) in emails.iter().enumerate() {
        assert_eq!(
            e,
            ["a@x.org", "b@x.org", "c@x.org"][i % 3],
            "row {i} of {emails:?}"
        );
    }
    // Unique rows: three iterations, then the run stops and says why.
    server.seen().emails.clear();
    let file = write(dir.path(), "unique.yaml", &scenario("shared", true));
    let runs = out_dir();
    let o = volley(&[
        "run",
        file.to_str().unwrap(),
        "-o",
        runs.path().to_str().unwrap(),
        "--progress",
        "none",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(server.seen().emails, ["a@x.org", "b@x.org", "c@x.org"]);
    let report = report_json(&only_run(runs.path()));
    assert_eq!(report["status"], "aborted");
    assert!(
        report["reason"].as_str().unwrap().contains("data `users`")
            && report["reason"].as_str().unwrap().contains("ran out"),
        "{report}"
    );
}

#[test]
fn failed_checks_are_errors_of_their_own_kind_and_thresholds_set_the_exit_code() {
    let _guard = serial();
    let server = ScenarioServer::start();
    let dir = out_dir();
    let base = format!(
        "target: {}\nload: {{ vus: 2, duration: 2s }}\nsteps:\n  - name: room\n    request: GET /room\n    check:\n      json: {{ \"$.status\": OPEN }}\n  - name: slow\n    request: GET /slow?ms=20\n",
        server.url()
    );
    let file = write(
        dir.path(),
        "checks.yaml",
        &format!("{base}thresholds:\n  - slow: ttfb p50 < 2ms\n"),
    );
    let runs = out_dir();
    let o = volley(&[
        "run",
        file.to_str().unwrap(),
        "-o",
        runs.path().to_str().unwrap(),
        "--progress",
        "none",
        "--no-error-stop",
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "a failed threshold exits 1: {}",
        text(&o)
    );
    let report = report_json(&only_run(runs.path()));
    let room = step(&report, "room");
    assert!(room["seed_suite"]["errors"].as_u64().unwrap() > 10);
    assert_eq!(
        room["seed_suite"]["errors"], room["seed_suite"]["total_tests"],
        "every response failed its check"
    );
    let check = report["errors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "check")
        .expect("check errors");
    assert!(
        check["messages"][0]
            .as_str()
            .unwrap()
            .contains("[room] `$.status` is \"CLOSED\", expected \"OPEN\""),
        "{check}"
    );
    assert_eq!(step(&report, "slow")["seed_suite"]["errors"], 0);
    let t = &report["thresholds"][0];
    assert_eq!(
        (t["expr"].as_str().unwrap(), t["passed"].as_bool().unwrap()),
        ("slow: ttfb p50 < 2ms", false)
    );
    assert!(t["actual"].as_f64().unwrap() >= 20.0);
    // The same run with a threshold it meets exits 0.
    let file = write(
        dir.path(),
        "pass.yaml",
        &format!("{base}thresholds:\n  - slow: ttfb p50 < 2s\n"),
    );
    let runs = out_dir();
    let o = volley(&[
        "run",
        file.to_str().unwrap(),
        "-o",
        runs.path().to_str().unwrap(),
        "--progress",
        "none",
        "--no-error-stop",
    ]);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn sse_time_to_first_event_and_websocket_round_trip_are_measured() {
    let _guard = serial();
    let server = ScenarioServer::start();
    let dir = out_dir();
    let file = write(
        dir.path(),
        "streams.yaml",
        &format!(
            "target: {}\nload: {{ vus: 2, duration: 3s }}\nsteps:\n  - name: events\n    sse: /events?delay_ms=300\n    events: 3\n    wait: true\n  - name: echo\n    websocket: /ws?delay_ms=50\n    send: \"hello {{{{ vu }}}}\"\n    expect: \"echo: hello\"\n",
            server.url()
        ),
    );
    let runs = out_dir();
    let o = volley(&[
        "run",
        file.to_str().unwrap(),
        "-o",
        runs.path().to_str().unwrap(),
        "--progress",
        "none",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let report = report_json(&only_run(runs.path()));
    let events = step(&report, "events");
    assert_eq!(events["kind"], "sse");
    let ttfe = events["total_ms"]["p50_ms"].as_f64().unwrap();
    assert!(
        (300.0..360.0).contains(&ttfe),
        "time to first event {ttfe} ms"
    );
    assert!(
        events["ttfb_ms"]["p50_ms"].as_f64().unwrap() < 50.0,
        "{events}"
    );
    assert!(
        events["events"].as_u64().unwrap()
            >= 3 * events["seed_suite"]["total_tests"].as_u64().unwrap()
    );
    let echo = step(&report, "echo");
    let rtt =
        echo["total_ms"]["p50_ms"].as_f64().unwrap() - echo["ttfb_ms"]["p50_ms"].as_f64().unwrap();
    assert!(
        (50.0..80.0).contains(&rtt),
        "WebSocket round trip {rtt} ms: {echo}"
    );
    assert_eq!(echo["seed_suite"]["errors"], 0);
    // The run directory holds the steps the nGrinder way, readable by `report`, and charts them.
    let run = only_run(runs.path());
    let series = std::fs::read_to_string(run.join("series.csv")).unwrap();
    let header = series.lines().next().unwrap();
    assert!(
        header.contains(",Description,Tests-1,Errors-1,") && header.contains(",Tests-2,"),
        "{header}"
    );
    assert!(run.join("charts/steps.png").is_file() && run.join("charts/steps.svg").is_file());
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(
        html.contains("MTTFB per step") && html.contains("time to the first event"),
        "step chart and table in the page"
    );
    let o = volley(&["report", "--format", "md", run.to_str().unwrap()]);
    let md = String::from_utf8_lossy(&o.stdout);
    assert!(
        md.contains("## Steps") && md.contains("| events | sse |"),
        "{md}"
    );
}

#[test]
fn websocket_messages_longer_than_any_read_buffer_arrive_whole_and_the_upgrade_is_checked() {
    let _guard = serial();
    let server = ScenarioServer::start();
    let dir = out_dir();
    // 200 KB each way: tungstenite reads 256 bytes at a time from a 4 KiB socket read that
    // exists only while it holds bytes; the whole message must come through, in order.
    let long = format!("start-{}-end", "0123456789".repeat(20_000));
    let file = write(
        dir.path(),
        "ws.yaml",
        &format!(
            "target: {}\nsteps:\n  - name: long\n    websocket: /ws\n    send: \"{long}\"\n    expect: \"echo: start-0123456789\"\n  - name: tail\n    websocket: /ws\n    send: \"{long}\"\n    expect: \"789-end\"\n  - name: refused\n    websocket: /nowhere\n    send: hi\n  - name: own key\n    websocket: /ws\n    headers: {{ Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ== }}\n    send: hi\n    expect: \"echo: hi\"\n  - name: subprotocol\n    websocket: /ws\n    headers: {{ Sec-WebSocket-Protocol: chat }}\n    send: hi\n",
            server.url()
        ),
    );
    let o = volley(&["check", file.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(1),
        "the refused step fails the check: {}",
        text(&o)
    );
    assert!(out.contains("websocket upgrade refused: HTTP 404"), "{out}");
    // The server (axum) speaks no subprotocol: one the scenario offers goes unanswered.
    assert!(
        out.contains("websocket upgrade: the server chose none of the subprotocols offered (chat)"),
        "{out}"
    );
    let runs = out_dir();
    let o = volley(&[
        "run",
        file.to_str().unwrap(),
        "--vus",
        "2",
        "--duration",
        "2s",
        "-o",
        runs.path().to_str().unwrap(),
        "--progress",
        "none",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let report = report_json(&only_run(runs.path()));
    for name in ["long", "tail", "own key"] {
        let s = step(&report, name);
        assert_eq!(s["seed_suite"]["errors"], 0, "{s}");
        assert!(s["seed_suite"]["total_tests"].as_u64().unwrap() > 2, "{s}");
    }
    for name in ["refused", "subprotocol"] {
        let s = step(&report, name);
        assert_eq!(s["seed_suite"]["error_rate_pct"], 100.0, "{s}");
        assert!(s["seed_suite"]["errors"].as_u64().unwrap() > 2, "{s}");
    }
}

#[test]
fn an_open_model_scenario_runs_one_iteration_per_arrival() {
    let _guard = serial();
    let server = ScenarioServer::start();
    let dir = out_dir();
    let file = write(
        dir.path(),
        "login.yaml",
        &LOGIN_FLOW.replace("{{URL}}", &server.url()),
    );
    let runs = out_dir();
    let o = volley(&[
        "run",
        file.to_str().unwrap(),
        "--rate",
        "25",
        "--duration",
        "2s",
        "-o",
        runs.path().to_str().unwrap(),
        "--progress",
        "none",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let s = server.seen();
    assert!(
        (48..=50).contains(&s.logins),
        "50 arrivals due in 2 s at 25/s, {} iterations started",
        s.logins
    );
    assert_eq!(s.refused, 0);
    let report = report_json(&only_run(runs.path()));
    assert_eq!(report["model"], "open");
    assert_eq!(
        step(&report, "count")["seed_suite"]["total_tests"]
            .as_u64()
            .unwrap(),
        s.counted
    );
}

#[test]
fn secrets_from_the_environment_stay_out_of_the_run_directory() {
    let _guard = serial();
    let server = ScenarioServer::start();
    let dir = out_dir();
    let file = write(
        dir.path(),
        "secret.yaml",
        &format!(
            "target: {}\nheaders:\n  Authorization: \"Bearer {{{{ env.VOLLEY_TEST_SECRET }}}}\"\nload: {{ vus: 1, duration: 1s }}\nsteps:\n  - request: GET /items/unknown\n",
            server.url()
        ),
    );
    let runs = out_dir();
    let secret = "sup3r-s3cret-value";
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_volley"))
        .args([
            "run",
            file.to_str().unwrap(),
            "-o",
            runs.path().to_str().unwrap(),
            "--progress",
            "none",
            "--no-error-stop",
        ])
        .env("VOLLEY_TEST_SECRET", secret)
        .output()
        .unwrap();
    // Every answer a 404: the run fails (nothing succeeded), and the secret still stays out.
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        server
            .seen()
            .authorizations
            .iter()
            .all(|a| a == &format!("Bearer {secret}"))
    );
    assert!(!server.seen().authorizations.is_empty());
    let run = only_run(runs.path());
    for f in std::fs::read_dir(&run).unwrap() {
        let p = f.unwrap().path();
        if p.is_file() {
            let content = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
            assert!(
                !content.contains(secret),
                "{} holds the secret",
                p.display()
            );
        }
    }
    // Without the variable, the file is refused before any load.
    let o = volley(&[
        "run",
        file.to_str().unwrap(),
        "-o",
        runs.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("environment variable `VOLLEY_TEST_SECRET` is not set"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_bad_scenario_names_file_line_and_column_and_exits_2() {
    let dir = out_dir();
    let file = write(
        dir.path(),
        "bad.yaml",
        "target: http://127.0.0.1:9\nsteps:\n  - request: GET /a/{{ id }}\n    extract: { id: $.id }\n  - requets: GET /\n",
    );
    for cmd in ["check", "run"] {
        let o = volley(&[cmd, file.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!(
                "{}:5:5: unknown key `requets` in a step; did you mean `request`?",
                file.display()
            )),
            "{err}"
        );
    }
    let file = write(
        dir.path(),
        "undefined.yaml",
        "target: http://127.0.0.1:9\nsteps:\n  - request: GET /a/{{ id }}\n    extract: { id: $.id }\n",
    );
    let o = volley(&["check", file.to_str().unwrap(), "--no-request"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(
            "undefined.yaml:3:14: `url`: variable `id` is used before any step defines it"
        ),
        "{}",
        text(&o)
    );
}

#[test]
fn comparing_scenario_runs_judges_each_step() {
    let _guard = serial();
    let server = ScenarioServer::start();
    let dir = out_dir();
    let runs = out_dir();
    for (name, ms) in [("before", 40), ("after", 5)] {
        let file = write(
            dir.path(),
            &format!("{name}.yaml"),
            &format!(
                "name: {name}\ntarget: {}\nload: {{ vus: 4, duration: 5s }}\nsteps:\n  - name: fast\n    request: GET /count\n  - name: slow\n    request: GET /slow?ms={ms}\n",
                server.url()
            ),
        );
        let o = volley(&[
            "run",
            file.to_str().unwrap(),
            "-o",
            runs.path().to_str().unwrap(),
            "--progress",
            "none",
        ]);
        assert!(o.status.success(), "{}", text(&o));
    }
    let mut dirs: Vec<_> = std::fs::read_dir(runs.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort_by_key(|d| !d.to_string_lossy().ends_with("before"));
    let o = volley(&[
        "compare",
        dirs[0].to_str().unwrap(),
        dirs[1].to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let cmp: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let per_step = cmp["steps"][0]["per_step"].as_array().unwrap();
    let slow = per_step.iter().find(|s| s["name"] == "slow").unwrap();
    let p50 = slow["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == "ttfb_p50_ms")
        .unwrap();
    assert_eq!(p50["verdict"], "better", "{p50}");
    assert!(
        p50["before"].as_f64().unwrap() >= 40.0 && p50["after"].as_f64().unwrap() < 20.0,
        "{p50}"
    );
    let md = volley(&[
        "compare",
        dirs[0].to_str().unwrap(),
        dirs[1].to_str().unwrap(),
        "--format",
        "md",
    ]);
    assert!(String::from_utf8_lossy(&md.stdout).contains("| `slow` | TTFB p50 (per request) |"));
}

#[test]
fn a_run_count_runs_each_vu_exactly_that_many_iterations() {
    let _guard = serial();
    let server = ScenarioServer::start();
    let dir = out_dir();
    let file = write(
        dir.path(),
        "login.yaml",
        &LOGIN_FLOW.replace("{{URL}}", &server.url()),
    );
    let runs = out_dir();
    let started = std::time::Instant::now();
    let o = volley(&[
        "run",
        file.to_str().unwrap(),
        "--vus",
        "2",
        "--iterations",
        "3",
        "-o",
        runs.path().to_str().unwrap(),
        "--progress",
        "none",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "the run ends when the VUs are done, not at its cap"
    );
    let s = server.seen();
    assert_eq!(
        (s.logins, s.accepted.len(), s.counted),
        (6, 12, 60),
        "2 VUs × 3 iterations, 10 loop turns each"
    );
    let report = report_json(&only_run(runs.path()));
    assert_eq!(report["status"], "complete");
    assert_eq!(step(&report, "count")["seed_suite"]["total_tests"], 60);
    let iteration = &report["per_request"]["iteration_ms"];
    assert_eq!(
        iteration["count"], 6,
        "every iteration ran through: {iteration}"
    );
    assert!(
        iteration["p50_ms"].as_f64().unwrap()
            >= step(&report, "login")["total_ms"]["p50_ms"]
                .as_f64()
                .unwrap()
    );
}

#[test]
fn one_of_picks_branches_by_weight() {
    let _guard = serial();
    let server = ScenarioServer::start();
    let dir = out_dir();
    let file = write(
        dir.path(),
        "mix.yaml",
        &format!(
            "target: {}\nsteps:\n  - one_of:\n      - weight: 3\n        steps:\n          - name: read\n            request: GET /count\n      - weight: 1\n        steps:\n          - name: write\n            request: POST /user\n            json: {{ email: w }}\n",
            server.url()
        ),
    );
    let runs = out_dir();
    let o = volley(&[
        "run",
        file.to_str().unwrap(),
        "--vus",
        "2",
        "--iterations",
        "200",
        "-o",
        runs.path().to_str().unwrap(),
        "--progress",
        "none",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let (reads, writes) = {
        let seen = server.seen();
        (seen.counted, seen.emails.len() as u64)
    };
    assert_eq!(reads + writes, 400, "one branch per iteration");
    // 400 draws at 3:1: 300 expected reads, standard deviation 8.7; 4 deviations either way.
    assert!((265..=335).contains(&reads), "{reads} reads of 400");
    let report = report_json(&only_run(runs.path()));
    assert_eq!(
        step(&report, "read")["seed_suite"]["total_tests"]
            .as_u64()
            .unwrap(),
        reads
    );
}

#[test]
fn a_check_of_one_request_says_1_request() {
    let _guard = serial();
    let server = TestServer::start();
    let dir = out_dir();
    let file = write(
        dir.path(),
        "one.yaml",
        &format!("target: {}\nsteps:\n  - request: GET /ok\n", server.url("")),
    );
    let o = volley(&["check", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("\n1 request, 0 failed") && !out.contains("1 requests"),
        "{out}"
    );
}
