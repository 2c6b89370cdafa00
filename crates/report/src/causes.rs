//! Every error with its cause: when the errors start (the level held, or the time), which kinds
//! they are, and what the time each failure took says about why — read first among the
//! findings, because errors are what failed.
//!
//! - **Fast refusals** (an HTTP error status within [`FAST_MS`] at the 90th percentile, 429,
//!   502, 503 or 504): admission control. The server turned the request away without working on it: Tomcat's
//!   accept queue (`server.tomcat.accept-count`) full beyond its threads
//!   (`server.tomcat.threads.max`), a rate limiter, a proxy with no ready backend. A fast 500
//!   or 4xx is no refusal: the application failed, or refused the request itself.
//! - **Failures at one fixed duration** (half a second at least, the 99th percentile within
//!   [`FIXED_SPREAD`] of the median): a wait that timed out — HikariCP's
//!   `connection-timeout`, a client or proxy timeout; volley's own `--timeout` when the failures
//!   are timeouts of that length.
//! - **Refused or reset connections**: the process was down or restarting.
//!
//! With server metrics, each is tied to the resource that shows it: Tomcat's busy threads at
//! their maximum, HikariCP's `hikaricp_connections_timeout_total` rising, a process that
//! restarted (its start time moved, or its uptime fell).

use serde::Serialize;
use volley_formats::Source;
use volley_formats::numfmt::{group_thousands, short};
use volley_stats::ErrorKind;
use volley_stats::latency::LatencySummary;

use crate::findings::{Reading, level_of, series_of, summed, vus};
use crate::levels::Level;

/// One kind of error with its first messages.
#[derive(Debug, Clone, Serialize)]
pub struct ErrorLine {
    /// Kind name.
    pub kind: String,
    /// Count after warm-up.
    pub count: u64,
    /// First messages seen.
    pub messages: Vec<String>,
}

/// Errors start where their rate reaches this, % of the requests of a level (or interval).
pub const START_PCT: f64 = 1.0;
/// Failures whose 90th percentile took at most this were refused at once, ms.
pub const FAST_MS: f64 = 50.0;
/// Failures took one fixed duration when their 99th percentile is within this share of their
/// median ...
pub const FIXED_SPREAD: f64 = 0.05;
/// ... and that median is at least this long, ms.
pub const FIXED_MIN_MS: f64 = 500.0;
/// A class of failures explains the errors when it holds at least this share of them.
const DOMINANT: f64 = 0.8;

/// The sentences that give the run's errors their causes; none for a run without errors.
pub fn of(
    src: &Source,
    warmup_s: f64,
    levels: &[Level],
    failed: Option<&LatencySummary>,
    errors: &[ErrorLine],
) -> Vec<String> {
    let rows = &src.series.intervals;
    let mut kinds = [0u64; volley_stats::KINDS];
    let mut total = 0u64;
    for (i, row) in rows.iter().enumerate() {
        if row.start_s + 1e-9 < warmup_s {
            continue;
        }
        total += row.tests + row.errors;
        if let Some(k) = src.errors_by_kind.get(i) {
            for (sum, n) in kinds.iter_mut().zip(k) {
                *sum += n;
            }
        }
    }
    let not_sent = kinds[ErrorKind::NotSent.index()];
    let failures: u64 = kinds.iter().sum::<u64>() - not_sent;
    if failures == 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let start = start_of(src, warmup_s, levels);
    // Which kinds, largest first.
    let mut by_kind: Vec<(ErrorKind, u64)> = ErrorKind::ALL
        .iter()
        .map(|&k| (k, kinds[k.index()]))
        .filter(|(k, n)| *n > 0 && *k != ErrorKind::NotSent)
        .collect();
    by_kind.sort_by_key(|k| std::cmp::Reverse(k.1));
    let codes = status_codes(errors);
    let list: Vec<String> = by_kind
        .iter()
        .map(|(k, n)| match k {
            ErrorKind::Status if !codes.is_empty() => {
                format!("{} {}", group_thousands(*n), codes.join("/"))
            }
            k => format!("{} {}", group_thousands(*n), kind_words(*k)),
        })
        .collect();
    let share = failures as f64 / total.max(1) as f64 * 100.0;
    out.push(format!(
        "Errors: {} of {} requests failed ({share:.2} %){} — {}.",
        group_thousands(failures),
        group_thousands(total),
        match &start {
            Some(s) => format!(", {s}"),
            None => String::new(),
        },
        list.join(", ")
    ));
    let of_kinds = |ks: &[ErrorKind]| ks.iter().map(|k| kinds[k.index()]).sum::<u64>();
    let dominant = |n: u64| n as f64 >= DOMINANT * failures as f64;
    let connections = of_kinds(&[ErrorKind::Connect, ErrorKind::Reset]);
    let statuses = of_kinds(&[ErrorKind::Status]);
    let timeouts = of_kinds(&[ErrorKind::Timeout]);
    let timing = failed.filter(|f| f.count > 0);
    let fast = timing.is_some_and(|f| f.p90_ms <= FAST_MS);
    let fixed = timing.filter(|f| {
        f.p50_ms >= FIXED_MIN_MS && (f.p99_ms - f.p50_ms).abs() <= FIXED_SPREAD * f.p50_ms
    });
    let timeout_s = src.meta.as_ref().map(|m| m.plan.timeout_s);
    if dominant(connections) {
        out.push(format!(
            "{} of them were refused or reset connections: nothing was listening, or the process was down or restarting (or its listen backlog overflowed).",
            group_thousands(connections)
        ));
    } else if dominant(statuses) && fast && !codes.is_empty() && !codes.iter().any(|c| refusal(c)) {
        // A fast 500 or 404 is no refusal for load: the request failed as soon as it came.
        let f = timing.expect("fast implies a timing");
        let client = codes.iter().all(|c| c.starts_with("HTTP 4"));
        out.push(format!(
            "The {} came back within {} ms (p90 of the failures): answered at once with an error, not turned away for load — {}",
            codes.join("/"),
            short(f.p90_ms, 100.0),
            if client {
                "the server refused the request itself: check its URL, method, credentials and body."
            } else {
                "the application failed on them (an exception or a broken dependency: its log says which), not a queue or a limit."
            }
        ));
    } else if dominant(statuses) && fast {
        let f = timing.expect("fast implies a timing");
        let here = match tomcat_full(src, warmup_s, levels) {
            Some((max, at)) => format!(
                " Here it was Tomcat: all {max:.0} of its threads were busy from {at}, so requests past its accept queue were refused."
            ),
            None => String::new(),
        };
        out.push(format!(
            "The {} came back within {} ms (p90 of the failures): fast refusals, admission control rather than slowness — the server turned requests away without working on them: Tomcat's accept queue (server.tomcat.accept-count) full beyond its threads (server.tomcat.threads.max), a rate limiter, or a proxy with no ready backend.{here}",
            if codes.is_empty() {
                "error statuses".to_string()
            } else {
                codes.join("/")
            },
            short(f.p90_ms, 100.0)
        ));
    } else if let Some(f) = fixed {
        let at_timeout = dominant(timeouts)
            && timeout_s.is_some_and(|t| (f.p50_ms / 1000.0 - t).abs() <= 0.05 * t);
        if at_timeout {
            out.push(format!(
                "The failures took {:.1} s each (p50 {} ms, p99 {} ms): volley's own --timeout; the server did not answer within it (a queue behind a full pool or thread limit, or a stuck dependency).",
                f.p50_ms / 1000.0,
                short(f.p50_ms, 100.0),
                short(f.p99_ms, 100.0)
            ));
        } else {
            out.push(format!(
                "The failures took {:.1} s each (p50 {} ms, p99 {} ms): a wait that timed out — HikariCP's connection-timeout (30 s by default), or a client or proxy timeout of that length.",
                f.p50_ms / 1000.0,
                short(f.p50_ms, 100.0),
                short(f.p99_ms, 100.0)
            ));
        }
    } else if dominant(timeouts) {
        out.push(format!(
            "{} requests timed out at volley's --timeout{}: the server did not answer within it.",
            group_thousands(timeouts),
            timeout_s.map_or(String::new(), |t| format!(" ({t} s)"))
        ));
    } else if let Some(f) = timing {
        out.push(format!(
            "The failures took {} ms at the median (p90 {} ms, max {} ms).",
            short(f.p50_ms, 100.0),
            short(f.p90_ms, 100.0),
            short(f.max_ms, 100.0)
        ));
    }
    out.extend(server_evidence(src, warmup_s, levels));
    out
}

/// Where the errors start: `from 160 VUs (84.1 % of requests there; under 1 % before)` or
/// `from 42.0 s`, the first level (else interval) whose error rate reaches [`START_PCT`].
fn start_of(src: &Source, warmup_s: f64, levels: &[Level]) -> Option<String> {
    if !levels.is_empty() {
        let at = levels.iter().position(|l| l.error_rate_pct >= START_PCT)?;
        let l = &levels[at];
        let before = if at == 0 {
            String::new()
        } else {
            format!("; under {START_PCT} % before")
        };
        return Some(format!(
            "from {} ({:.1} % of requests there{before})",
            vus(l.vusers),
            l.error_rate_pct
        ));
    }
    src.series
        .intervals
        .iter()
        .filter(|r| r.start_s + 1e-9 >= warmup_s && r.period_s > 0.0)
        .find(|r| {
            let all = r.tests + r.errors;
            all > 0 && r.errors as f64 / all as f64 * 100.0 >= START_PCT
        })
        .map(|r| format!("from {:.1} s at {}", r.start_s, vus(r.vusers)))
}

/// Tomcat's threads at their maximum: the maximum, and from where (a level, or a time).
fn tomcat_full(src: &Source, warmup_s: f64, levels: &[Level]) -> Option<(f64, String)> {
    let rows = &src.series.intervals;
    let max = series_of(src, "tomcat_threads_config_max_threads", 0.0)
        .into_iter()
        .filter_map(|(_, r)| r.last().map(|r| r.value))
        .fold(f64::NAN, f64::max);
    if max.is_nan() || max <= 0.0 {
        return None;
    }
    let first = series_of(src, "tomcat_threads_busy_threads", warmup_s)
        .into_iter()
        .flat_map(|(_, r)| r.into_iter())
        .filter(|r| r.value >= max)
        .min_by_key(|r| r.row)?;
    Some((max, at(levels, rows, &first)))
}

/// Where reading `r` was taken: the level held, else the time.
fn at(levels: &[Level], rows: &[volley_stats::Interval], r: &Reading) -> String {
    match level_of(levels, rows, r.row) {
        Some(l) => vus(l.vusers),
        None => format!("{:.0} s", rows[r.row].start_s),
    }
}

/// What the server's own readings show with the errors.
fn server_evidence(src: &Source, warmup_s: f64, levels: &[Level]) -> Vec<String> {
    let rows = &src.series.intervals;
    let mut out = Vec::new();
    let at = |r: &Reading| at(levels, rows, r);
    // HikariCP giving up on connection requests.
    let timeouts = summed(src, "hikaricp_connections_timeout_total", warmup_s);
    if let Some(first) = timeouts.iter().find(|r| r.value > 0.0) {
        let top = timeouts.iter().map(|r| r.value).fold(0.0, f64::max);
        out.push(format!(
            "HikariCP timed out connection requests from {} (hikaricp_connections_timeout_total rose, up to {top:.1} a second): requests waited connection-timeout for a DB connection, then failed.",
            at(first)
        ));
    }
    // A restart: the start time moved, or the uptime fell.
    let restarted = |metric: &str, moved: fn(f64, f64) -> bool| {
        series_of(src, metric, 0.0).into_iter().find_map(|(_, r)| {
            r.windows(2)
                .find(|w| moved(w[0].value, w[1].value))
                .map(|w| w[1])
        })
    };
    if let Some(r) = restarted("process_start_time_seconds", |a, b| b > a + 0.5)
        .or_else(|| restarted("process_uptime_seconds", |a, b| b + 1.0 < a))
    {
        out.push(format!(
            "The target process restarted at {:.0} s (its start time moved): requests in flight then were reset, and new ones refused until it listened again.",
            rows[r.row].start_s
        ));
    }
    out
}

/// The HTTP statuses the error messages name (`HTTP 503`), in order.
fn status_codes(errors: &[ErrorLine]) -> Vec<String> {
    let mut codes: Vec<String> = Vec::new();
    for e in errors.iter().filter(|e| e.kind == ErrorKind::Status.name()) {
        for m in &e.messages {
            if let Some(code) = m.strip_prefix("HTTP ").map(|c| c.trim().to_string())
                && !codes.contains(&code)
            {
                codes.push(code);
            }
        }
    }
    codes.into_iter().map(|c| format!("HTTP {c}")).collect()
}

/// Whether `code` (`HTTP 503`) is how a server, limiter or proxy turns requests away for load:
/// 429 Too Many Requests, 502/504 from a proxy, 503 Service Unavailable.
fn refusal(code: &str) -> bool {
    ["HTTP 429", "HTTP 502", "HTTP 503", "HTTP 504"].contains(&code)
}

fn kind_words(k: ErrorKind) -> String {
    match k {
        ErrorKind::Connect => "connections refused".into(),
        ErrorKind::Reset => "connections reset".into(),
        ErrorKind::Timeout => "timeouts".into(),
        ErrorKind::Tls => "TLS failures".into(),
        ErrorKind::Status => "error statuses".into(),
        other => other.name().replace('_', " "),
    }
}
