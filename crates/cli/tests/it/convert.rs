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
        String::from_utf8_lossy(&o.stderr).contains("volley convert <har|openapi|curl|access-log>"),
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

/// A gzip fixture unpacked into `dir` with the system's `gzip` (the documents are kept
/// compressed: 1.9 and 3.4 MB as published).
fn gunzip(gz: &Path, dir: &Path) -> PathBuf {
    let out = dir.join(gz.file_stem().unwrap());
    let o = Command::new("gzip")
        .arg("-dc")
        .arg(gz)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "`gzip -dc {}`: {e} (the test needs gzip on PATH)",
                gz.display()
            )
        });
    assert!(
        o.status.success(),
        "gzip -dc {}: {}",
        gz.display(),
        text(&o)
    );
    std::fs::write(&out, &o.stdout).unwrap();
    out
}

/// Each step URL line of a converted scenario (`request: GET /x`, `sse: /x`).
fn step_urls(yaml: &str) -> Vec<&str> {
    yaml.lines()
        .filter_map(|l| {
            let l = l.trim_start().trim_start_matches("- ");
            l.strip_prefix("request: ")
                .or_else(|| l.strip_prefix("sse: "))
        })
        .collect()
}

/// A `{name}` left in a URL's path, outside `{{ }}` templates.
fn literal_parameter(url: &str) -> Option<String> {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let mut rest = path.replace("{{", "\u{1}").replace("}}", "\u{2}");
    while let Some(open) = rest.find('{') {
        let close = rest[open..].find('}')? + open;
        let inner = &rest[open + 1..close];
        if !inner.is_empty()
            && inner
                .chars()
                .all(|c| c.is_alphanumeric() || "_-.".contains(c))
        {
            return Some(format!("{{{inner}}}"));
        }
        rest = rest[close + 1..].to_string();
    }
    None
}

/// Issue 53 §4: Twilio's and OpenAI's published documents, converted as a user would and
/// checked by `volley check`: no problem, no `{AccountSid}` left in a path, OpenAI's POSTs
/// that can also stream are requests with their JSON body (not `sse:` steps with `json:`).
#[test]
fn real_openapi_documents_convert_to_scenarios_that_check_clean() {
    let dir = out_dir();
    for (gz, steps, env) in [
        ("openapi/twilio_api_v2010.json.gz", 197, "BASIC_AUTH"),
        ("openapi/openai.json.gz", 278, "TOKEN"),
    ] {
        let spec = gunzip(&fixtures().join(gz), dir.path());
        let scenario = spec.with_extension("yaml");
        let o = volley_env(&[
            "convert",
            "openapi",
            spec.to_str().unwrap(),
            "-o",
            scenario.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{gz}: {}", text(&o));
        let yaml = std::fs::read_to_string(&scenario).unwrap();
        let urls = step_urls(&yaml);
        assert_eq!(urls.len(), steps, "{gz}: steps");
        let left: Vec<&&str> = urls
            .iter()
            .filter(|u| literal_parameter(u).is_some())
            .collect();
        assert!(
            left.is_empty(),
            "{gz}: {} URLs keep a {{param}}: {left:?}",
            left.len()
        );
        let check = Command::new(env!("CARGO_BIN_EXE_volley"))
            .args(["check", scenario.to_str().unwrap(), "--no-request"])
            .env("NO_COLOR", "1")
            .env(env, "set-for-the-check")
            .output()
            .unwrap();
        assert!(check.status.success(), "{gz}: {}", text(&check));
        assert!(
            String::from_utf8_lossy(&check.stdout).contains(&format!("{steps} steps")),
            "{gz}: {}",
            text(&check)
        );
        if gz.contains("twilio") {
            // `{Sid}.json` of a call is the sid the call's create returned.
            assert!(yaml.contains("call_sid: $.sid"), "{yaml}");
            assert!(
                yaml.contains(
                    "request: GET /2010-04-01/Accounts/{{ account_sid }}/Calls/{{ call_sid }}.json"
                ),
                "{yaml}"
            );
        } else {
            assert!(!yaml.contains("\n    sse: "), "no sse step:\n{yaml}");
            let chat = yaml
                .split("  - name: ")
                .find(|s| s.starts_with("createChatCompletion\n"))
                .expect("createChatCompletion");
            assert!(
                chat.contains("request: POST /v1/chat/completions")
                    && chat.contains("Accept: application/json")
                    && chat.contains("\n    json:\n")
                    && chat.contains("status: 200"),
                "{chat}"
            );
        }
    }
    assert_eq!(
        literal_parameter("/Accounts/{{ a }}/Calls/{Sid}.json"),
        Some("{Sid}".into())
    );
    assert_eq!(
        literal_parameter("/Accounts/{{ a }}/Calls/{{ b }}.json?x={y}"),
        None
    );
}

/// A step whose path still holds `{name}` is refused by `volley check` (exit 2), with the
/// variable to write instead.
#[test]
fn check_refuses_a_path_parameter_nobody_replaced() {
    let dir = out_dir();
    let scenario = dir.path().join("calls.yaml");
    std::fs::write(
        &scenario,
        "target: http://127.0.0.1:9\nsteps:\n  - request: GET /2010-04-01/Accounts/{AccountSid}/Calls.json\n",
    )
    .unwrap();
    let o = volley_env(&["check", scenario.to_str().unwrap(), "--no-request"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("calls.yaml:3:14:")
            && err.contains("still holds `{AccountSid}`")
            && err.contains("`{{ account_sid }}`"),
        "{}",
        text(&o)
    );
}
