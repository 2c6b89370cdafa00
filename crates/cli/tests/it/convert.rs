//! `volley convert` end to end: a real browser recording (fixtures/har/) and a curl command
//! converted, validated by `volley check`, and run against the demo target with zero errors;
//! bad input exits 2 saying what to write.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{only_run, out_dir, report_json, serial, text};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// `volley` with the credentials the converted recording asks for.
fn volley_env(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_volley"))
        .args(args)
        .env("NO_COLOR", "1")
        .env("TOKEN", "a-token-of-this-run")
        .env("SESSION", "a-session-of-this-run")
        .output()
        .unwrap()
}

fn demo_target() -> (tokio::runtime::Runtime, volley_demo::Target) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let target = rt
        .block_on(volley_demo::start(
            "127.0.0.1:0".parse().unwrap(),
            &volley_demo::Knobs::default(),
        ))
        .unwrap();
    (rt, target)
}

#[test]
fn a_browser_recording_converts_checks_and_runs_against_the_demo_target() {
    let _guard = serial();
    let dir = out_dir();
    let scenario = dir.path().join("chat.yaml");
    let har = fixtures().join("har/chat.har");
    let o = volley_env(&[
        "convert",
        "har",
        har.to_str().unwrap(),
        "-o",
        scenario.to_str().unwrap(),
        "--think-times",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let yaml = std::fs::read_to_string(&scenario).unwrap();
    assert!(
        !yaml.contains("rec-SECRET"),
        "a recorded credential was written:\n{yaml}"
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("TOKEN, SESSION"),
        "{}",
        text(&o)
    );

    let (rt, target) = demo_target();
    let url = format!("http://{}", target.addr);
    let check = volley_env(&["check", scenario.to_str().unwrap(), "--url", &url]);
    assert!(check.status.success(), "{}\n{yaml}", text(&check));
    let out = String::from_utf8_lossy(&check.stdout);
    // The new room's id and the pair room's access code came from this run's responses.
    assert!(out.contains("set room_id = "), "{out}");
    assert!(out.contains("set access_code = "), "{out}");
    assert!(out.contains("12 requests, 0 failed"), "{out}");

    let runs = out_dir();
    let run = volley_env(&[
        "run",
        scenario.to_str().unwrap(),
        "--url",
        &url,
        "--vus",
        "3",
        "--iterations",
        "3",
        "-o",
        runs.path().to_str().unwrap(),
        "--progress",
        "none",
    ]);
    assert!(run.status.success(), "{}", text(&run));
    let report = report_json(&only_run(runs.path()));
    assert_eq!(report["seed_suite"]["errors"], 0, "{report:#}");
    assert_eq!(
        report["seed_suite"]["total_tests"],
        3 * 3 * 12,
        "{report:#}"
    );
    rt.block_on(target.stop()).unwrap();
}

#[test]
fn a_curl_command_becomes_one_step_that_runs() {
    let _guard = serial();
    let (rt, target) = demo_target();
    let dir = out_dir();
    let scenario = dir.path().join("curl.yaml");
    let cmd = format!(
        "curl -X POST http://{}/rooms -H 'Content-Type: application/json' -H 'Authorization: Bearer s3cr3t-value' -d '{{\"name\":\"from curl\"}}'",
        target.addr
    );
    let o = volley_env(&["convert", "curl", &cmd, "-o", scenario.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let yaml = std::fs::read_to_string(&scenario).unwrap();
    assert!(!yaml.contains("s3cr3t-value"), "{yaml}");
    let check = volley_env(&["check", scenario.to_str().unwrap()]);
    assert!(check.status.success(), "{}\n{yaml}", text(&check));
    assert!(
        String::from_utf8_lossy(&check.stdout).contains("← 201"),
        "{}",
        text(&check)
    );
    rt.block_on(target.stop()).unwrap();
}

#[test]
fn bad_input_exits_2_saying_what_to_write() {
    let dir = out_dir();
    let bad = dir.path().join("bad.har");
    std::fs::write(&bad, "{\"log\": {}}").unwrap();
    let o = volley_env(&["convert", "har", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("log.entries"),
        "{}",
        text(&o)
    );
    let spec = dir.path().join("swagger.json");
    std::fs::write(&spec, "{\"swagger\": \"2.0\", \"paths\": {}}").unwrap();
    let o = volley_env(&["convert", "openapi", spec.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("OpenAPI 3.0 and 3.1"),
        "{}",
        text(&o)
    );
    let o = volley_env(&["convert", "postman", "x.json"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("volley convert <har|openapi|curl>"),
        "{}",
        text(&o)
    );
    let o = volley_env(&["convert", "curl", "curl -d @body.json http://127.0.0.1:1/x"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("paste the body inline"),
        "{}",
        text(&o)
    );
}

/// GET over a plain socket (the test's own client, so that what volley sends is not involved).
fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_string()
}

#[test]
fn the_demo_targets_own_openapi_document_converts_checks_and_runs() {
    let _guard = serial();
    let (rt, target) = demo_target();
    let dir = out_dir();
    let spec = dir.path().join("openapi.json");
    std::fs::write(&spec, http_get(target.addr, "/openapi.json")).unwrap();
    let scenario = dir.path().join("api.yaml");
    let url = format!("http://{}", target.addr);
    let o = volley_env(&[
        "convert",
        "openapi",
        spec.to_str().unwrap(),
        "--target",
        &url,
        "-o",
        scenario.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let yaml = std::fs::read_to_string(&scenario).unwrap();
    // Creates come first, and what they return feeds the paths and bodies after them.
    assert!(
        yaml.contains("room_id: $.id") && yaml.contains("access_code: $.accessCode"),
        "{yaml}"
    );
    assert!(
        yaml.contains("request: GET /rooms/{{ room_id }}/messages")
            && yaml.contains("roomId: \"{{ room_id }}\""),
        "{yaml}"
    );
    assert!(
        yaml.contains("sse: /api/pair-room/{{ access_code }}/connect"),
        "{yaml}"
    );
    let check = volley_env(&["check", scenario.to_str().unwrap()]);
    assert!(check.status.success(), "{}\n{yaml}", text(&check));
    assert!(
        String::from_utf8_lossy(&check.stdout).contains(", 0 failed"),
        "{}",
        text(&check)
    );
    let runs = out_dir();
    let run = volley_env(&[
        "run",
        scenario.to_str().unwrap(),
        "--vus",
        "2",
        "--iterations",
        "3",
        "-o",
        runs.path().to_str().unwrap(),
        "--progress",
        "none",
    ]);
    assert!(run.status.success(), "{}", text(&run));
    let report = report_json(&only_run(runs.path()));
    assert_eq!(report["seed_suite"]["errors"], 0, "{report:#}");
    assert!(
        report["seed_suite"]["total_tests"].as_u64().unwrap() >= 2 * 3 * 17,
        "{report:#}"
    );
    // A subset by tag.
    let o = volley_env(&[
        "convert",
        "openapi",
        spec.to_str().unwrap(),
        "--tag",
        "chat",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains("pair-room"),
        "{}",
        text(&o)
    );
    rt.block_on(target.stop()).unwrap();
}
