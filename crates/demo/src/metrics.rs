//! `/metrics` in the Prometheus text format with Spring Boot / Micrometer names:
//! `http_server_requests_seconds` (histogram by method, uri template, status, outcome),
//! `hikaricp_connections_*`, `tomcat_threads_*`, `process_cpu_usage`, `system_cpu_usage`,
//! `jvm_threads_live_threads`. Labels end with a trailing comma, as Spring Boot 2
//! (Prometheus simpleclient) writes them, so parsers meet that case here too.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::App;

/// Histogram buckets, seconds (Micrometer's SLO-style boundaries).
const BUCKETS: [f64; 12] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

#[derive(Default)]
struct Series {
    buckets: [u64; 12],
    count: u64,
    sum: f64,
    max: f64,
}

/// Counters and gauges of the service.
pub(crate) struct Metrics {
    started: Instant,
    max_threads: usize,
    pub(crate) busy: AtomicI64,
    pub(crate) queued: AtomicI64,
    pub(crate) rejected: AtomicU64,
    requests: Mutex<BTreeMap<(String, String, u16), Series>>,
    cpu: Mutex<CpuClock>,
}

#[derive(Default)]
struct CpuClock {
    at: Option<Instant>,
    process_ticks: u64,
    system: (u64, u64),
    last: (f64, f64),
}

impl Metrics {
    pub(crate) fn new(max_threads: usize, _db_pool: usize) -> Self {
        Metrics {
            started: Instant::now(),
            max_threads,
            busy: AtomicI64::new(0),
            queued: AtomicI64::new(0),
            rejected: AtomicU64::new(0),
            requests: Mutex::new(BTreeMap::new()),
            cpu: Mutex::new(CpuClock::default()),
        }
    }

    fn observe(&self, method: &str, uri: &str, status: u16, seconds: f64) {
        let mut map = self.requests.lock().expect("metrics lock");
        let s = map
            .entry((method.to_string(), uri.to_string(), status))
            .or_default();
        s.count += 1;
        s.sum += seconds;
        s.max = s.max.max(seconds);
        for (b, le) in s.buckets.iter_mut().zip(BUCKETS) {
            if seconds <= le {
                *b += 1;
            }
        }
    }

    /// (process, system) CPU usage in 0..1 since the previous scrape.
    fn cpu_usage(&self) -> (f64, f64) {
        let mut c = self.cpu.lock().expect("cpu lock");
        let now = Instant::now();
        let ticks = process_ticks().unwrap_or(0);
        let system = system_ticks().unwrap_or((0, 0));
        if let Some(at) = c.at {
            let wall = now.duration_since(at).as_secs_f64();
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
            if wall > 0.05 {
                let process = (ticks.saturating_sub(c.process_ticks)) as f64 / 100.0 / wall / cores;
                let (busy, total) = (
                    system.0.saturating_sub(c.system.0),
                    system.1.saturating_sub(c.system.1),
                );
                let sys = if total == 0 {
                    0.0
                } else {
                    busy as f64 / total as f64
                };
                c.last = (process.min(1.0), sys);
            }
        }
        if c.at
            .is_none_or(|at| now.duration_since(at).as_secs_f64() > 0.05)
        {
            c.at = Some(now);
            c.process_ticks = ticks;
            c.system = system;
        }
        c.last
    }
}

/// utime + stime of this process, in clock ticks (USER_HZ, 100 on Linux).
fn process_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = after.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// (busy, total) jiffies of all CPUs.
fn system_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let total: u64 = v.iter().sum();
    let idle = v.get(3)? + v.get(4).unwrap_or(&0);
    Some((total - idle, total))
}

fn live_threads() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("Threads:")
                    .map(|v| v.trim().parse().unwrap_or(0))
            })
        })
        .unwrap_or(0)
}

/// Middleware: times every request under its route template.
pub(crate) async fn record(State(app): State<App>, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = req.method().to_string();
    let uri = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "UNKNOWN".to_string(), |p| p.as_str().to_string());
    let response = next.run(req).await;
    if uri != "/metrics" && uri != "/actuator/prometheus" {
        app.metrics.observe(
            &method,
            &uri,
            response.status().as_u16(),
            start.elapsed().as_secs_f64(),
        );
    }
    response
}

fn outcome(status: u16) -> &'static str {
    match status {
        100..=199 => "INFORMATIONAL",
        200..=299 => "SUCCESS",
        300..=399 => "REDIRECTION",
        400..=499 => "CLIENT_ERROR",
        _ => "SERVER_ERROR",
    }
}

/// `GET /metrics`.
pub(crate) async fn expose(State(app): State<App>) -> impl IntoResponse {
    let m = &app.metrics;
    let db = &app.db;
    let mut out = String::new();
    let gauge = |out: &mut String, name: &str, help: &str, labels: &str, v: f64| {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} gauge\n{name}{{{labels}}} {v}"
        );
    };
    let pool = "pool=\"HikariPool-1\",";
    gauge(
        &mut out,
        "hikaricp_connections_active",
        "Active connections",
        pool,
        db.stats.active.load(Ordering::Relaxed) as f64,
    );
    gauge(
        &mut out,
        "hikaricp_connections_idle",
        "Idle connections",
        pool,
        (db.max as i64 - db.stats.active.load(Ordering::Relaxed)) as f64,
    );
    gauge(
        &mut out,
        "hikaricp_connections_pending",
        "Pending threads",
        pool,
        db.stats.pending.load(Ordering::Relaxed) as f64,
    );
    gauge(
        &mut out,
        "hikaricp_connections_max",
        "Max connections",
        pool,
        db.max as f64,
    );
    gauge(
        &mut out,
        "hikaricp_connections_min",
        "Min connections",
        pool,
        db.max as f64,
    );
    gauge(
        &mut out,
        "hikaricp_connections",
        "Total connections",
        pool,
        db.max as f64,
    );
    let _ = writeln!(
        out,
        "# HELP hikaricp_connections_timeout_total Connection timeout total count\n# TYPE hikaricp_connections_timeout_total counter\nhikaricp_connections_timeout_total{{{pool}}} {}",
        db.stats.timeouts.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        out,
        "# HELP hikaricp_connections_acquire_seconds Connection acquire time\n# TYPE hikaricp_connections_acquire_seconds summary\nhikaricp_connections_acquire_seconds_count{{{pool}}} {}\nhikaricp_connections_acquire_seconds_sum{{{pool}}} {}",
        db.stats.acquires.load(Ordering::Relaxed),
        db.stats.acquire_us.load(Ordering::Relaxed) as f64 / 1e6
    );
    let tomcat = "name=\"http-nio-8080\",";
    gauge(
        &mut out,
        "tomcat_threads_busy_threads",
        "Busy worker threads",
        tomcat,
        m.busy.load(Ordering::Relaxed) as f64,
    );
    gauge(
        &mut out,
        "tomcat_threads_config_max_threads",
        "Worker thread limit",
        tomcat,
        m.max_threads as f64,
    );
    gauge(
        &mut out,
        "tomcat_threads_current_threads",
        "Worker threads",
        tomcat,
        m.max_threads as f64,
    );
    gauge(
        &mut out,
        "volley_demo_accept_queue_waiting",
        "Requests waiting for a worker",
        "",
        m.queued.load(Ordering::Relaxed) as f64,
    );
    let _ = writeln!(
        out,
        "# HELP volley_demo_rejected_total Requests refused with a full accept queue\n# TYPE volley_demo_rejected_total counter\nvolley_demo_rejected_total {}",
        m.rejected.load(Ordering::Relaxed)
    );
    let (process, system) = m.cpu_usage();
    gauge(
        &mut out,
        "process_cpu_usage",
        "Recent CPU usage of the process",
        "",
        process,
    );
    gauge(
        &mut out,
        "system_cpu_usage",
        "Recent CPU usage of the system",
        "",
        system,
    );
    gauge(
        &mut out,
        "jvm_threads_live_threads",
        "Live threads",
        "",
        live_threads() as f64,
    );
    gauge(
        &mut out,
        "process_uptime_seconds",
        "Uptime",
        "",
        m.started.elapsed().as_secs_f64(),
    );
    let map = m.requests.lock().expect("metrics lock");
    let _ = writeln!(
        out,
        "# HELP http_server_requests_seconds Duration of HTTP server request handling\n# TYPE http_server_requests_seconds histogram"
    );
    for ((method, uri, status), s) in map.iter() {
        let labels = format!(
            "exception=\"None\",method=\"{}\",outcome=\"{}\",status=\"{status}\",uri=\"{}\",",
            volley_prom::escape_label_value(method),
            outcome(*status),
            volley_prom::escape_label_value(uri)
        );
        for (le, c) in BUCKETS.iter().zip(s.buckets) {
            let _ = writeln!(
                out,
                "http_server_requests_seconds_bucket{{{labels}le=\"{le}\",}} {c}"
            );
        }
        let _ = writeln!(
            out,
            "http_server_requests_seconds_bucket{{{labels}le=\"+Inf\",}} {}",
            s.count
        );
        let _ = writeln!(
            out,
            "http_server_requests_seconds_count{{{labels}}} {}",
            s.count
        );
        let _ = writeln!(
            out,
            "http_server_requests_seconds_sum{{{labels}}} {}",
            s.sum
        );
    }
    let _ = writeln!(
        out,
        "# HELP http_server_requests_seconds_max Maximum request duration\n# TYPE http_server_requests_seconds_max gauge"
    );
    for ((method, uri, status), s) in map.iter() {
        let _ = writeln!(
            out,
            "http_server_requests_seconds_max{{exception=\"None\",method=\"{}\",outcome=\"{}\",status=\"{status}\",uri=\"{}\",}} {}",
            volley_prom::escape_label_value(method),
            outcome(*status),
            volley_prom::escape_label_value(uri),
            s.max
        );
    }
    drop(map);
    app.grpc.render(&mut out);
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        out,
    )
}
