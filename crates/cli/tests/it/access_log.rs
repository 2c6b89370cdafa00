//! `volley convert access-log` (issue 56 §4): an access log written here with a known mix
//! (60 % `GET /rooms`, 30 % `GET /rooms/{id}/messages` over several ids, 10 %
//! `POST /api-chat/chat`) and a known peak second and minute converts to exactly that mix and
//! those peaks; `volley check` passes the scenario, and it runs against the demo target with
//! its requests spread by the mix and its TPS judged against the suggested `--target`.

use std::path::Path;

use crate::support::{only_run, out_dir, report_json, serial, text, volley};

/// Requests in second `s` (0..600) of the log: 2 a second, 20 a second from 300 to 359,
/// and 50 in second 330. So the peak second is 330 (50 requests) and the peak minute starts
/// at 300: 59 × 20 + 50 = 1230 requests; 2310 in all.
fn per_second(s: u64) -> u64 {
    match s {
        330 => 50,
        300..360 => 20,
        _ => 2,
    }
}

const TOTAL: u64 = 2310;

/// The log: request k is `GET /rooms` when k % 10 < 6, `GET /rooms/{id}/messages` when
/// < 9, else `POST /api-chat/chat` — exactly 60/30/10 % of 2310. Combined format, every
/// seventh entry in common format (no referer and agent), every hundredth with a query;
/// and three lines that are no requests: one that is not an entry, nginx's `"-"` for a
/// connection that sent nothing, and a TLS handshake sent to the plain port.
fn write_log(path: &Path) {
    let ids = [
        "17",
        "42",
        "1234",
        "123e4567-e89b-12d3-a456-426614174000",
        "17",
    ];
    let mut out = String::new();
    let mut k = 0u64;
    for s in 0..600u64 {
        // 2024-05-01 12:00:00 +0200 plus s seconds.
        let (m, sec) = (s / 60, s % 60);
        let time = format!("01/May/2024:12:{m:02}:{sec:02} +0200");
        for _ in 0..per_second(s) {
            let request = match k % 10 {
                0..6 if k.is_multiple_of(100) => "GET /rooms?page=2 HTTP/1.1".to_string(),
                0..6 => "GET /rooms HTTP/1.1".to_string(),
                6..9 => format!(
                    "GET /rooms/{}/messages HTTP/1.1",
                    ids[(k / 10 % 5) as usize]
                ),
                _ => "POST /api-chat/chat HTTP/2.0".to_string(),
            };
            let tail = if k.is_multiple_of(7) {
                String::new()
            } else {
                " \"https://example.com/\" \"Mozilla/5.0 (X11; Linux x86_64)\"".to_string()
            };
            out.push_str(&format!(
                "203.0.113.{} - - [{time}] \"{request}\" 200 {}{tail}\n",
                k % 250,
                100 + k % 7
            ));
            k += 1;
        }
        if s == 10 {
            out.push_str("a line that is no entry\n");
        }
        if s == 20 {
            out.push_str(&format!(
                "198.51.100.1 - - [{time}] \"-\" 400 0 \"-\" \"-\"\n"
            ));
            out.push_str(&format!(
                "198.51.100.2 - - [{time}] \"\\x16\\x03\\x01\\x00\\xF4\\x01\" 400 157 \"-\" \"-\"\n"
            ));
        }
    }
    assert_eq!(k, TOTAL);
    std::fs::write(path, out).unwrap();
}

fn convert(dir: &Path) -> (std::process::Output, std::path::PathBuf) {
    let log = dir.join("access.log");
    write_log(&log);
    let scenario = dir.join("traffic.yaml");
    let o = volley(&[
        "convert",
        "access-log",
        log.to_str().unwrap(),
        "-o",
        scenario.to_str().unwrap(),
    ]);
    (o, scenario)
}

#[test]
fn an_access_log_converts_to_its_mix_and_its_peaks() {
    let dir = out_dir();
    let (o, scenario) = convert(dir.path());
    assert!(o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    for said in [
        "2310 requests in 2313 lines; peak second 50 req/s at 2024-05-01 12:05:30 +0200; peak minute 1230 requests (20.5 req/s) from 2024-05-01 12:05:00 +0200; mean 3.85 req/s",
        "mix: GET /rooms 60.0 %, GET /rooms/{id}/messages 30.0 %, POST /api-chat/chat 10.0 %",
        "2 entries without a request line",
        "1 of 2313 lines is not an access-log entry (combined or common format) and is left out; ",
        "access.log:23: no `[time]` after the client's address: `a line that is no entry`",
        "suggested: --target 1230/m (the peak minute, 20.5 req/s; the peak second was 50 req/s)",
    ] {
        assert!(err.contains(said), "missing `{said}`:\n{}", text(&o));
    }

    // The scenario: one `one_of` whose weights are the counts over their divisor (1386, 693,
    // 231 → 6, 3, 1), the peak minute's rate as its load, the room ids as a variable.
    let yaml = std::fs::read_to_string(&scenario).unwrap();
    let doc: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
    let branches = doc["steps"][0]["one_of"].as_array().expect(&yaml);
    let mix: Vec<(u64, &str, &str)> = branches
        .iter()
        .map(|b| {
            let step = &b["steps"][0];
            (
                b["weight"].as_u64().unwrap(),
                step["name"].as_str().unwrap(),
                step["request"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        mix,
        vec![
            (6, "GET /rooms", "GET /rooms"),
            (
                3,
                "GET /rooms/{id}/messages",
                "GET /rooms/{{ (room_ids | split(','))[random(0, 3)] }}/messages"
            ),
            (1, "POST /api-chat/chat", "POST /api-chat/chat"),
        ],
        "{yaml}"
    );
    // Ids by how often they were asked for (17 twice as often), then by text.
    assert_eq!(
        doc["variables"]["room_ids"], "17,1234,123e4567-e89b-12d3-a456-426614174000,42",
        "{yaml}"
    );
    assert_eq!(doc["load"]["rate"], 20.5, "{yaml}");
    assert!(
        yaml.contains("# 60.0 % of the requests (1386 of 2310); statuses: 200 × 1386"),
        "{yaml}"
    );
    assert!(
        yaml.contains("24 of its requests had a query string, left out"),
        "{yaml}"
    );

    let check = volley(&["check", scenario.to_str().unwrap(), "--no-request"]);
    assert!(check.status.success(), "{}\n{yaml}", text(&check));
    let out = String::from_utf8_lossy(&check.stdout);
    assert!(out.contains("branch (6 in 10)"), "{out}");
}

#[test]
fn the_converted_traffic_runs_by_its_mix_against_the_suggested_target() {
    let _guard = serial();
    let dir = out_dir();
    let (o, scenario) = convert(dir.path());
    assert!(o.status.success(), "{}", text(&o));
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
    let runs = out_dir();
    let run = volley(&[
        "run",
        scenario.to_str().unwrap(),
        "--url",
        &format!("http://{}", target.addr),
        "--rate",
        "50",
        "--duration",
        "2s",
        "--target",
        "1230/m",
        "-o",
        runs.path().to_str().unwrap(),
        "--progress",
        "none",
    ]);
    rt.block_on(target.stop()).unwrap();
    // The POSTs have no body (a log holds none): the demo refuses them, the rest succeed.
    assert!(run.status.success(), "{}", text(&run));
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains("≥ target 20.5 req/s") && err.contains("(target 1230/m)"),
        "{}",
        text(&run)
    );
    let report = report_json(&only_run(runs.path()));
    // A step's requests, failed ones included.
    let count = |name: &str| {
        report["per_test"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .map_or(0, |t| t["seed_suite"]["total_tests"].as_u64().unwrap())
    };
    let (rooms, messages, posts) = (
        count("GET /rooms"),
        count("GET /rooms/{id}/messages"),
        count("POST /api-chat/chat"),
    );
    // 100 picks at 60/30/10 %: each is requested, in the mix's order (an inversion is
    // beyond five standard deviations).
    assert_eq!(rooms + messages + posts, 100, "{report:#}");
    assert!(
        rooms > messages && messages > posts && posts > 0,
        "{rooms} / {messages} / {posts}"
    );
}

#[test]
fn logs_that_are_no_access_logs_are_refused_saying_what_a_line_looks_like() {
    let dir = out_dir();
    let json = dir.path().join("app.log");
    std::fs::write(&json, "{\"level\":\"info\",\"msg\":\"GET /rooms\"}\n").unwrap();
    let o = volley(&["convert", "access-log", json.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no line is a request in nginx's or Apache's combined or common log format")
            && err.contains("app.log:1: no `[time]`")
            && err.contains("\"GET /rooms HTTP/1.1\" 200 2326"),
        "{}",
        text(&o)
    );
    let gz = dir.path().join("access.log.2.gz");
    std::fs::write(&gz, [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]).unwrap();
    let o = volley(&["convert", "access-log", gz.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("is gzip-compressed")
            && String::from_utf8_lossy(&o.stderr).contains("| volley convert access-log -"),
        "{}",
        text(&o)
    );
    let o = volley(&["convert", "access-log", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("is a directory; give a file"),
        "{}",
        text(&o)
    );
}
