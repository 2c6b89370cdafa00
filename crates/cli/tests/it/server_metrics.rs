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
        "--verbose",
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
/// 5 VUs on a pool of 6 connections never queue, 20 do; the scrape at 3 s, when 20 VUs
/// start, used to be credited to the interval that ends at 3 s (5 VUs), so the report said
/// "pending from 5 VUs" and "peaked at 5 VUs". 20, not 10: with 10 VUs only 4 wait, and on a
/// busy 2-core machine (a clean clone's test run) the demo's one runtime thread fell behind so
/// far that 3 of 4 scrapes at 10 VUs found no one waiting, and the finding said "bursts".
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
        "0s:5,3s:5,0s:20,3s:20",
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
    assert_eq!(pending["vusers"].as_f64(), Some(20.0), "{pending}");
    assert_eq!(
        pending["first_nonzero_vusers"].as_f64(),
        Some(20.0),
        "{pending}"
    );
    let findings = report["findings"].to_string();
    assert!(
        findings.contains("DB pool pending > 0 from 20 VUs")
            && findings.contains("waiting requests at 20 VUs"),
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
    assert!(pool_pending(at(20.0)).unwrap() > 0.0, "{levels:?}");
}

// --- Servers that export without bound, or report nonsense (issues 55 §1, 53 §6) ----------

/// Serves `/metrics`-like pages on a free loopback port: `page(path, n)` is the body of the
/// `n`-th request (0-based) of `path`; any other request gets `ok`. Keep-alive, one thread
/// per connection, stopped on drop.
struct PageServer {
    addr: std::net::SocketAddr,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl PageServer {
    fn start(page: impl Fn(&str, u64) -> Option<Vec<u8>> + Send + Sync + 'static) -> PageServer {
        use std::io::{BufRead, BufReader, Write};
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::{Arc, Mutex};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let page = Arc::new(page);
        let seen: Arc<Mutex<std::collections::HashMap<String, u64>>> = Arc::default();
        let stopped = stop.clone();
        std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                let Ok((stream, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                stream.set_nonblocking(false).unwrap();
                let (page, seen) = (page.clone(), seen.clone());
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut out = stream;
                    loop {
                        let mut request = String::new();
                        if reader.read_line(&mut request).unwrap_or(0) == 0 {
                            return;
                        }
                        let mut line = String::new();
                        while reader.read_line(&mut line).unwrap_or(0) > 2 {
                            line.clear();
                        }
                        let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
                        let n = {
                            let mut seen = seen.lock().unwrap();
                            let n = seen.entry(path.clone()).or_insert(0);
                            *n += 1;
                            *n - 1
                        };
                        let body = page(&path, n).unwrap_or_else(|| b"ok".to_vec());
                        let head = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\n\r\n",
                            body.len()
                        );
                        if out.write_all(head.as_bytes()).is_err() || out.write_all(&body).is_err()
                        {
                            return;
                        }
                    }
                });
            }
        });
        PageServer { addr, stop }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for PageServer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Runs `volley` under `ulimit -v` (KiB of address space) and returns its output and its
/// peak resident memory (VmHWM, KB), read from /proc while it runs.
fn volley_measured(args: &[&str], kib: u64) -> (std::process::Output, u64) {
    use std::process::{Command, Stdio};
    let quoted: Vec<String> = args
        .iter()
        .map(|a| format!("'{}'", a.replace('\'', "'\\''")))
        .collect();
    let script = format!(
        "ulimit -v {kib}; exec timeout -s INT -k 5 60 '{}' {}",
        env!("CARGO_BIN_EXE_volley"),
        quoted.join(" ")
    );
    let logs = tempfile::tempdir().unwrap();
    let (out, err) = (logs.path().join("out"), logs.path().join("err"));
    let mut child = Command::new("sh")
        .args(["-c", &script])
        .env("NO_COLOR", "1")
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    // `sh` execs `timeout`, which runs volley as its child.
    let status_of = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/status")).ok();
    let hwm = |status: &str| {
        status
            .lines()
            .find(|l| l.starts_with("VmHWM:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
    };
    let mut peak = 0;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        let children = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", child.id()))
            .unwrap_or_default();
        for pid in children.split_whitespace().filter_map(|p| p.parse().ok()) {
            if let Some(h) = status_of(pid).as_deref().and_then(hwm) {
                peak = peak.max(h);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let o = std::process::Output {
        status,
        stdout: std::fs::read(&out).unwrap(),
        stderr: std::fs::read(&err).unwrap(),
    };
    (o, peak)
}

/// run.json's notes of the endpoint `url`.
fn notes_of(meta: &serde_json::Value, url: &str) -> serde_json::Value {
    meta["server_metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["url"] == url)
        .unwrap_or_else(|| panic!("no {url} in {meta}"))
        .clone()
}

fn run_meta(dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap()
}

/// A page whose 30,000 series are new at every scrape (the findings' one listed last) and a
/// page of 10 MB (20,000 series) every interval: volley's memory and server.csv stay bounded, the pool's
/// series is kept at every scrape, and run.json and the report say what was left out. It
/// grew by ~25 MB a scrape, and server.csv by ~16 MB, before.
#[test]
fn pages_without_bound_keep_memory_and_server_csv_bounded() {
    let _g = serial();
    let churn = |n: u64| {
        let mut p = String::with_capacity(2 << 20);
        p.push_str("# TYPE http_requests counter\n");
        for i in 0..30_000 {
            p.push_str(&format!("http_requests_total{{session=\"{n}-{i}\"}} {i}\n"));
        }
        p.push_str("hikaricp_connections_pending{pool=\"HikariPool-1\"} 3\n");
        p
    };
    let big: std::sync::Arc<Vec<u8>> = std::sync::Arc::new(
        (0..20_000)
            .map(|i| format!("cache_entry_bytes{{key=\"{i:0>500}\"}} {i}\n"))
            .collect::<String>()
            .into_bytes(),
    );
    assert!(big.len() > 10_000_000 && big.len() < 16 << 20);
    let server = PageServer::start(move |path, n| match path {
        "/churn" => Some(churn(n).into_bytes()),
        "/big" => Some(big.to_vec()),
        _ => None,
    });
    let out = out_dir();
    let (churned, sized) = (server.url("/churn"), server.url("/big"));
    let (o, hwm_kb) = volley_measured(
        &[
            "run",
            "--url",
            &server.url("/"),
            "--vus",
            "1",
            "--duration",
            "4s",
            "--interval",
            "500ms",
            "--server-metrics",
            &churned,
            "--server-metrics",
            &sized,
            "--progress",
            "none",
            "-o",
            out.path().to_str().unwrap(),
        ],
        1_000_000,
    );
    assert!(o.status.success(), "{}", text(&o));
    let dir = only_run(out.path());
    let meta = run_meta(&dir);
    let csv = std::fs::read_to_string(dir.join("server.csv")).unwrap();
    let scrapes = |url: &str| notes_of(&meta, url)["ok"].as_u64().unwrap();
    let (n_churn, n_big) = (scrapes(&churned), scrapes(&sized));
    // A debug build reads these pages slower than the interval: a few scrapes each.
    assert!(n_churn >= 2 && n_big >= 2, "{meta}");
    // At most 10,000 series of a page at a scrape, whatever it lists.
    let rows = |url: &str| csv.lines().filter(|l| l.contains(url)).count() as u64;
    assert!(rows(&sized) <= 10_000 * n_big, "{} rows", rows(&sized));
    assert!(
        rows(&churned) <= 10_000 * n_churn,
        "{} rows",
        rows(&churned)
    );
    // The findings' series, listed after 30,000 others, is kept at every scrape.
    let pending = csv
        .lines()
        .filter(|l| l.contains(&churned) && l.contains("hikaricp_connections_pending"))
        .count() as u64;
    assert_eq!(pending, n_churn, "{meta}");
    for url in [&churned, &sized] {
        let left = notes_of(&meta, url)["notes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["kind"] == "left_out")
            .unwrap_or_else(|| panic!("{meta}"))
            .clone();
        assert!(
            left["why"]
                .as_str()
                .unwrap()
                .starts_with("beyond 10000 series on one page"),
            "{left}"
        );
        assert!(
            left["count"].as_u64().unwrap() >= 10_000 * n_churn.min(n_big),
            "{left}"
        );
    }
    let notes = report_json(&dir)["notes"].to_string();
    assert!(
        notes.contains(&format!(
            "readings of {churned} were left out of server.csv: beyond 10000 series"
        )),
        "{notes}"
    );
    let csv_mb = csv.len() as f64 / 1e6;
    eprintln!(
        "server.csv {csv_mb:.1} MB for {} scrapes; volley's VmHWM {hwm_kb} KB",
        n_churn + n_big
    );
    assert!(hwm_kb > 0, "VmHWM was read");
    assert!(hwm_kb < 150_000, "volley's peak memory: {hwm_kb} KB");
}

/// Servers that report nonsense: an HTML page is a failed scrape that says it is not
/// Prometheus text; a CPU load of 5.0 and a heap of 1e308 are marked, never a peak or "CPU
/// peaked at 500 %"; a counter listed twice with two values, and two instances behind one
/// URL scraped in turn, give no rate; a counter reset is said, and counted from again.
#[test]
fn pages_that_report_nonsense_are_said_not_read() {
    let _g = serial();
    let server = PageServer::start(|path, n| {
        let page = match path {
            "/html" => "<!DOCTYPE html>\n<html><head><title>Login</title></head>\n<body>Sign in</body></html>\n".to_string(),
            "/nonsense" => format!(
                "# TYPE process_cpu_usage gauge\nprocess_cpu_usage {}\njvm_memory_used_bytes{{area=\"heap\",id=\"G1 Old Gen\"}} {}\nhikaricp_connections_active{{pool=\"p\"}} 2\n",
                if n % 2 == 0 { "5.0" } else { "0.25" },
                if n % 2 == 0 { "1e308" } else { "1.5E7" },
            ),
            // Two registries write the same counter: one never moves, one is at 100.
            "/twice" => "# TYPE jvm_gc_pause_seconds counter\njvm_gc_pause_seconds_count{action=\"end of minor GC\",} 0.0\njvm_gc_pause_seconds_count{action=\"end of minor GC\",} 100.0\n".to_string(),
            // Two instances behind one URL, scraped in turn.
            "/instances" => {
                let (start, base) = if n % 2 == 0 { (1_700_000_000, 10) } else { (1_700_000_555, 998_000) };
                format!(
                    "process_start_time_seconds {start}\n# TYPE jvm_gc_pause_seconds summary\njvm_gc_pause_seconds_count{{cause=\"G1 Evacuation Pause\"}} {}\n",
                    base + n
                )
            }
            // A counter that goes up 5 a scrape, reset to 0 at the fourth.
            "/reset" => format!(
                "# TYPE requests counter\nrequests_total {}\n",
                if n < 3 { 1000 + 5 * n } else { 5 * (n - 3) }
            ),
            _ => return None,
        };
        Some(page.into_bytes())
    });
    let out = out_dir();
    let urls: Vec<String> = ["/html", "/nonsense", "/twice", "/instances", "/reset"]
        .iter()
        .map(|p| server.url(p))
        .collect();
    let mut args: Vec<&str> = vec![
        "run",
        "--url",
        "",
        "--vus",
        "1",
        "--duration",
        "3s",
        "--interval",
        "500ms",
        "--progress",
        "none",
        "-o",
        out.path().to_str().unwrap(),
    ];
    let target = server.url("/");
    args[2] = &target;
    for u in &urls {
        args.extend(["--server-metrics", u.as_str()]);
    }
    let o = volley(&args);
    assert!(o.status.success(), "{}", text(&o));
    let dir = only_run(out.path());
    let meta = run_meta(&dir);
    let csv = std::fs::read_to_string(dir.join("server.csv")).unwrap();
    // server.csv read as CSV (Elapsed_(s), Target, Series, Value, Kind): a field is quoted
    // only where it needs it.
    let rows = |url: &str| -> Vec<(String, f64, String)> {
        csv::Reader::from_reader(csv.as_bytes())
            .records()
            .map(|r| r.unwrap())
            .filter(|r| &r[1] == url)
            .map(|r| (r[2].to_string(), r[3].parse().unwrap(), r[4].to_string()))
            .collect()
    };
    let note = |url: &str, kind: &str| {
        notes_of(&meta, url)["notes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|n| n["kind"] == kind)
            .cloned()
            .unwrap_or_else(|| panic!("no {kind} note of {url}: {meta}"))
    };
    // HTML: every scrape failed, and says why.
    let html = notes_of(&meta, &urls[0]);
    assert_eq!(html["ok"], 0, "{html}");
    assert!(html["failed"].as_u64().unwrap() >= 3, "{html}");
    assert!(
        html["last_error"]
            .as_str()
            .unwrap()
            .contains("the page is HTML or XML, not Prometheus text"),
        "{html}"
    );
    // Nonsense values: marked, not written; the plausible ones are.
    let nonsense = rows(&urls[1]);
    assert!(
        nonsense
            .iter()
            .all(|(s, v, _)| !s.starts_with("process_cpu_usage") || *v <= 1.0),
        "{nonsense:?}"
    );
    assert!(
        nonsense
            .iter()
            .any(|(s, v, _)| s.starts_with("process_cpu_usage") && *v == 0.25),
        "{nonsense:?}"
    );
    assert!(csv.lines().all(|l| l.len() < 300), "no 309-digit numbers");
    let marked = note(&urls[1], "marked");
    assert!(marked["count"].as_u64().unwrap() >= 2, "{marked}");
    let whys = notes_of(&meta, &urls[1])["notes"].to_string();
    assert!(
        whys.contains("a ratio outside 0–1") && whys.contains("process_cpu_usage = 5"),
        "{whys}"
    );
    assert!(
        whys.contains("beyond ±2^64") && whys.contains("= 1e308"),
        "{whys}"
    );
    // Listed twice with two values: no reading at all.
    assert!(rows(&urls[2]).is_empty(), "{:?}", rows(&urls[2]));
    assert!(
        note(&urls[2], "marked")["why"]
            .as_str()
            .unwrap()
            .starts_with("a series listed twice")
    );
    // Two instances in turn: no rate, each change said.
    assert!(
        rows(&urls[3])
            .iter()
            .all(|(s, _, _)| !s.starts_with("jvm_gc")),
        "{:?}",
        rows(&urls[3])
    );
    assert!(note(&urls[3], "reset")["count"].as_u64().unwrap() >= 3);
    // A reset: said once, no rate across it, counted again after.
    let reset = note(&urls[4], "reset");
    assert_eq!(reset["count"], 1, "{reset}");
    assert!(
        reset["first"]
            .as_str()
            .unwrap()
            .starts_with("requests_total 1010 then 0"),
        "{reset}"
    );
    let rates: Vec<f64> = rows(&urls[4]).iter().map(|r| r.1).collect();
    assert!(
        rates.len() >= 3 && rates.iter().all(|r| (2.0..=40.0).contains(r)),
        "{rates:?}"
    );
    // The report: no CPU of 500 %, no GC from the counters that never moved, the notes said.
    let report = report_json(&dir);
    let findings = report["findings"].to_string();
    assert!(
        !findings.contains("500 %") && !findings.contains("inf"),
        "{findings}"
    );
    assert!(
        findings.contains("Server process CPU peaked at 25 %"),
        "{findings}"
    );
    assert!(!findings.contains("GC pauses"), "{findings}");
    let cpu = report["server"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["series"] == "process_cpu_usage")
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(cpu["peak"], 0.25, "{cpu}");
    let notes = report["notes"].to_string();
    for needle in [
        "were marked and not used (no peak, no finding): a ratio outside 0–1",
        "times a rate of",
        "not Prometheus text",
    ] {
        assert!(notes.contains(needle), "{needle} not in {notes}");
    }
}
