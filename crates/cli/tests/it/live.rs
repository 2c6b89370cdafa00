//! The live dashboard (`volley run --dashboard`), used as a person would: a real headless
//! Chromium (Debian's, driven by playwright-core from npm, installed by scripts/test.sh)
//! watches a run against a loopback server, then stops it; the VU control and the token
//! rule are checked over plain HTTP.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::*;

/// `volley run … --dashboard[=ADDR]` started; returns the child and the printed URL.
pub(crate) fn start_run(args: &[&str]) -> (Child, String, std::thread::JoinHandle<String>) {
    assert_serial("a test that starts a run with a dashboard");
    let mut child = Command::new(env!("CARGO_BIN_EXE_volley"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = String::new();
    let url = loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("volley ended before printing the dashboard's URL:\n{seen}"))
            .unwrap();
        seen.push_str(&line);
        seen.push('\n');
        if let Some(url) = line.strip_prefix("volley: dashboard ") {
            break url.trim().to_string();
        }
    };
    // The rest of stderr, kept for failure messages (and so that volley never blocks on it).
    let rest = std::thread::spawn(move || {
        let mut all = seen;
        for l in lines.map_while(Result::ok) {
            all.push_str(&l);
            all.push('\n');
        }
        all
    });
    (child, url, rest)
}

/// (host:port, path with query) of an http:// URL.
fn split_url(url: &str) -> (String, String) {
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    (host.to_string(), format!("/{path}"))
}

/// One HTTP/1.1 request to `addr`: (status, body).
pub(crate) fn http(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "{method} {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}", body.len()).unwrap();
    let mut resp = String::new();
    let _ = s.read_to_string(&mut resp);
    let status = resp
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = resp
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

pub(crate) fn wait_ended(child: &mut Child, within: Duration) -> std::process::ExitStatus {
    let until = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("volley did not end within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn run_json(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(only_run(out).join("run.json")).unwrap()).unwrap()
}

fn playwright_modules() -> PathBuf {
    let dir = std::env::var_os("VOLLEY_PLAYWRIGHT")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/tools/playwright")
        })
        .join("node_modules");
    assert!(
        dir.join("playwright-core").is_dir(),
        "playwright-core is needed for this test: scripts/test.sh installs it into target/tools/playwright (npm install --prefix target/tools/playwright playwright-core@1.65.1)"
    );
    dir
}

/// Whether the browser scripts can run here: Chromium, node and playwright-core ([`need`]).
fn browser_here() -> bool {
    need("chromium") && need("node") && need("playwright")
}

/// Runs `tests/it/<script>` in node with playwright-core, against `dash` in Debian's Chromium:
/// its arguments are the dashboard's URL, Chromium's path, then `more`.
fn browser_script(script: &str, dash: &str, more: &[&str]) -> std::process::Output {
    let chromium = crate::html::chromium_path();
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it")
        .join(script);
    Command::new("node")
        .arg(&script)
        .args([dash, chromium.as_str()])
        .args(more)
        .env("NODE_PATH", playwright_modules())
        .output()
        .expect("node is needed for this test (scripts/test.sh installs nodejs)")
}

/// The JSON line a browser script printed last; fails with its output and volley's `log`.
fn script_result(node: &std::process::Output, log: &str) -> serde_json::Value {
    assert!(
        node.status.success(),
        "the browser script failed: {}\n{}\nvolley:\n{log}",
        String::from_utf8_lossy(&node.stderr),
        String::from_utf8_lossy(&node.stdout)
    );
    serde_json::from_str(
        String::from_utf8_lossy(&node.stdout)
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap()
}

#[test]
fn the_dashboard_shows_the_run_live_in_chromium_and_stops_it() {
    if !browser_here() {
        return;
    }
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let url = server.url("/delay?ms=2");
    let (mut child, dash, rest) = start_run(&[
        "run",
        "--url",
        &url,
        "--vus",
        "4",
        "--duration",
        "60s",
        "--progress",
        "none",
        "--dashboard",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    assert!(
        dash.starts_with("http://127.0.0.1:") && !dash.contains("token"),
        "loopback, no token: {dash}"
    );
    let shot = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/live-dashboard.png");
    let shot = std::path::absolute(&shot).unwrap();
    let _ = std::fs::remove_file(&shot);
    let started = Instant::now();
    let node = browser_script("live_dashboard.cjs", &dash, &[shot.to_str().unwrap()]);
    let status = wait_ended(&mut child, Duration::from_secs(30));
    let log = rest.join().unwrap();
    let seen = script_result(&node, &log);
    eprintln!("live dashboard: {seen}\nscreenshot: {}", shot.display());
    assert!(seen["chart_updates"].as_u64().unwrap() >= 3, "{seen}");
    assert!(
        seen["points"].as_u64().unwrap() >= 3,
        "three intervals drawn: {seen}"
    );
    assert!(
        seen["canvases"].as_u64().unwrap() >= 4,
        "tps, ttfb, errors, percentiles: {seen}"
    );
    assert_eq!(
        seen["console_errors"].as_array().unwrap().len(),
        0,
        "{seen}"
    );
    // No request left loopback: every URL the page asked for is volley's.
    let origin = dash.split('/').take(3).collect::<Vec<_>>().join("/");
    for r in seen["requests"].as_array().unwrap() {
        let r = r.as_str().unwrap();
        assert!(
            r.starts_with(&format!("{origin}/")),
            "a request to somewhere else than the dashboard: {r}"
        );
    }
    // Stop is Ctrl-C: the run is `interrupted`, its report written, and the page became it.
    assert!(status.success(), "{status:?}\n{log}");
    let meta = run_json(out.path());
    assert_eq!(meta["status"], "interrupted", "{log}");
    assert!(
        started.elapsed() < Duration::from_secs(50),
        "the run was stopped, not run to its end"
    );
    assert!(
        seen["final_url"].as_str().unwrap().ends_with("/report"),
        "{seen}"
    );
    assert!(
        seen["final_title"]
            .as_str()
            .unwrap()
            .starts_with("volley report"),
        "{seen}"
    );
    assert!(seen["final_canvases"].as_u64().unwrap() >= 4, "{seen}");
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "a screenshot with charts in it: {} bytes",
        png.len()
    );
    println!("screenshot of the live dashboard: {}", shot.display());
}

#[test]
fn a_vu_change_from_the_dashboard_is_carried_out_and_recorded() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let url = server.url("/delay?ms=5");
    let (mut child, dash, rest) = start_run(&[
        "run",
        "--url",
        &url,
        "--vus",
        "2",
        "--duration",
        "5s",
        "--progress",
        "none",
        "--dashboard",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    let (addr, _) = split_url(&dash);
    // The change comes once the first interval (2 VUs) is recorded.
    wait_for_intervals(out.path(), 1, Duration::from_secs(30));
    let wrong = http(&addr, "POST", "/target", r#"{"rate": 100}"#);
    assert_eq!(
        wrong.0, 409,
        "a closed-model run takes VUs, not a rate: {wrong:?}"
    );
    assert!(wrong.1.contains("change the VUs"), "{wrong:?}");
    let set = http(&addr, "POST", "/target", r#"{"vus": 6}"#);
    assert_eq!(set.0, 200, "{set:?}");
    let status = wait_ended(&mut child, Duration::from_secs(30));
    let log = rest.join().unwrap();
    assert!(status.success(), "{log}");
    let meta = run_json(out.path());
    let changes = meta["plan_changes"]
        .as_array()
        .unwrap_or_else(|| panic!("no plan_changes in run.json: {meta}"));
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0]["vus"], 6);
    assert_eq!(changes[0]["by"], "dashboard");
    let at = changes[0]["at_s"].as_f64().unwrap();
    assert!((1.0..4.0).contains(&at), "changed about 1.5 s in: {at}");
    assert_eq!(meta["status"], "complete");
    // The engine did it: intervals after the change ran 6 VUs, those before 2.
    let data = volley_formats::RunData::read(&only_run(out.path())).unwrap();
    let vus: Vec<f64> = data.series.intervals.iter().map(|i| i.vusers).collect();
    assert_eq!(vus[0], 2.0, "{vus:?}");
    assert!(
        data.series
            .intervals
            .iter()
            .any(|i| i.start_s > at && i.vusers == 6.0),
        "{vus:?}"
    );
    // And the report says so.
    let report = report_json(&only_run(out.path()));
    assert_eq!(report["plan_changes"][0]["vus"], 6, "{report}");
    assert!(
        report["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("6 VUs (by dashboard)")),
        "{report}"
    );
}

#[test]
fn a_dashboard_outside_loopback_needs_its_token() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let url = server.url("/ok");
    let (mut child, dash, rest) = start_run(&[
        "run",
        "--url",
        &url,
        "--vus",
        "1",
        "--duration",
        "3s",
        "--progress",
        "none",
        "--dashboard=0.0.0.0:0",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    let token = dash
        .split("?token=")
        .nth(1)
        .unwrap_or_else(|| panic!("no token in {dash}"));
    assert_eq!(token.len(), 32, "{dash}");
    let (host, _) = split_url(&dash);
    let port = host.rsplit(':').next().unwrap();
    let addr = format!("127.0.0.1:{port}");
    for path in ["/", "/events", "/report", "/?token=wrong"] {
        let (status, body) = http(&addr, "GET", path, "");
        assert_eq!(status, 403, "{path}: {body}");
        assert!(body.contains("access token"), "{body}");
    }
    assert_eq!(
        http(&addr, "POST", "/stop", "").0,
        403,
        "no stopping without the token"
    );
    let (status, page) = http(&addr, "GET", &format!("/?token={token}"), "");
    assert_eq!(status, 200);
    assert!(page.contains("volley live"), "the page");
    assert!(
        !page.contains("src=\"http") && !page.contains("href=\"http"),
        "nothing loaded from another host"
    );
    let status = wait_ended(&mut child, Duration::from_secs(30));
    let log = rest.join().unwrap();
    assert!(status.success(), "{log}");
    assert_eq!(
        run_json(out.path())["status"],
        "complete",
        "the 403s did not stop it"
    );
}

#[test]
fn a_dashboard_address_after_a_space_is_a_usage_error_that_shows_the_equals_form() {
    // `--dashboard 127.0.0.1:8089` leaves the address where the scenario file goes.
    let out = volley(&[
        "run",
        "--dashboard",
        "127.0.0.1:8089",
        "--url",
        "http://127.0.0.1:9/",
        "--duration",
        "1s",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--dashboard=127.0.0.1:8089"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_page_of_another_origin_in_chromium_can_neither_read_nor_stop_the_dashboard() {
    if !browser_here() {
        return;
    }
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let url = server.url("/ok");
    let (mut child, dash, rest) = start_run(&[
        "run",
        "--url",
        &url,
        "--vus",
        "2",
        "--duration",
        "300s",
        "--progress",
        "none",
        "--dashboard",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    let dash = dash.trim_end_matches('/').to_string();
    // The run outlasts the browser's script by far (the test stops it below): on a busy
    // 2-core machine Chromium took over 60 s, the run had ended on its own, and the check
    // that the page could not stop it failed for the wrong reason.
    let node = browser_script("cross_origin.cjs", &dash, &[]);
    let still_running = child.try_wait().unwrap().is_none();
    // Stop it as the dashboard's own page does, and let it end.
    let addr = dash.trim_start_matches("http://").to_string();
    let (status, body) = http(&addr, "POST", "/stop", "{}");
    let ended = wait_ended(&mut child, Duration::from_secs(30));
    let log = rest.join().unwrap();
    let seen = script_result(&node, &log);
    eprintln!("cross-origin: {seen}");
    assert!(
        still_running,
        "a page of another origin stopped the run: {seen}\n{log}"
    );
    assert_eq!((status, ended.code()), (200, Some(0)), "{body}\n{log}");
    // Every request of the hostile pages that reached volley was refused.
    let answered = seen["answered"].as_array().unwrap();
    assert!(
        answered
            .iter()
            .any(|r| r["url"].as_str().unwrap().ends_with("/stop")),
        "the simple POST reached volley (Chromium let it through): {seen}"
    );
    for r in answered {
        assert_eq!(r["status"], 403, "{r} in {seen}");
    }
    // The JSON control needed a preflight volley never grants; the page could read nothing.
    assert!(
        seen["cross_site"]["json"]
            .as_str()
            .is_some_and(|s| s.starts_with("blocked")),
        "{seen}"
    );
    assert!(
        seen["cross_site"]["events"]
            .as_str()
            .is_some_and(|s| s.starts_with("blocked")),
        "{seen}"
    );
    assert_eq!(seen["rebind_page"], 403, "{seen}");
    assert_eq!(seen["rebind_events"], 403, "{seen}");
    let meta = run_json(out.path());
    assert_eq!(
        meta["status"], "interrupted",
        "stopped by our own request only: {meta}"
    );
}
