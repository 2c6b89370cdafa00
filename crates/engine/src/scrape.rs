//! The server-metrics scraper: every interval it fetches each Prometheus / OpenMetrics
//! endpoint (Spring Boot's `/actuator/prometheus`, node_exporter, the demo target), turns
//! counters into rates, and hands the values over tagged with the interval. A scrape that
//! fails is counted and the run goes on.
//!
//! What it keeps is bounded whatever the server exports: at most [`MAX_SERIES`] series of a
//! page (the findings' first), a page of at most 16 MiB read one line at a time, and from
//! one scrape to the next only the series kept. What it does not record as read (left out,
//! a value no resource can have, a counter that went down) it says, in [`ScrapeNote`]s.

use std::collections::HashMap;
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

use crate::dial::dial;
use crate::error::{Error, Repr};
use crate::h1::{self, Framing, H1Error};
use crate::target::Target;
use crate::tls::TlsOptions;
use volley_prom as prom;

/// One endpoint's values for one interval.
#[derive(Debug, Clone)]
pub struct ScrapeSample {
    /// Interval index (the scrape happens at its end).
    pub index: u64,
    /// The endpoint.
    pub url: String,
    /// (series, value, whether the value is a per-second rate of a cumulative series).
    pub values: Vec<(String, f64, bool)>,
    /// Why the scrape failed, when it did (no values then).
    pub error: Option<String>,
    /// Readings not recorded as read: left out, marked or reset ([`Readings::take`]).
    pub notes: Vec<ScrapeNote>,
}

/// A running scraper.
pub struct Scraper {
    /// Samples, as they are taken.
    pub samples: mpsc::Receiver<ScrapeSample>,
    stop: CancellationToken,
}

impl Scraper {
    /// Stops scraping.
    pub fn stop(&self) {
        self.stop.cancel();
    }
}

/// One endpoint, resolved and with its TLS configuration, once for the whole run.
struct Endpoint {
    url: String,
    /// The target and its TLS configuration, or why it cannot be used (reported at every
    /// scrape, never fatal).
    target: Result<(Target, Option<Arc<rustls::ClientConfig>>), Error>,
}

impl Endpoint {
    fn new(url: String, tls: &TlsOptions) -> Endpoint {
        let target = Target::resolve(&url).and_then(|t| {
            let config = if t.tls {
                tls.client_config(true)?
            } else {
                None
            };
            Ok((t, config))
        });
        Endpoint { url, target }
    }
}

/// Starts scraping `urls` at the end of every interval (counted from `t0`).
pub fn start(urls: Vec<String>, tls: TlsOptions, t0: Instant, interval: Duration) -> Scraper {
    let stop = CancellationToken::new();
    let (tx, rx) = mpsc::channel();
    let thread_stop = stop.clone();
    let spawned = std::thread::Builder::new()
        .name("volley-scraper".into())
        .spawn(move || {
            let endpoints: Vec<Endpoint> =
                urls.into_iter().map(|u| Endpoint::new(u, &tls)).collect();
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                let mut readings: Vec<Readings> =
                    endpoints.iter().map(|_| Readings::default()).collect();
                let timeout = interval.min(Duration::from_secs(2));
                for index in 0u64.. {
                    let due = t0 + interval * (index as u32 + 1);
                    tokio::select! {
                        _ = tokio::time::sleep_until(due.into()) => {}
                        _ = thread_stop.cancelled() => return,
                    }
                    for (e, readings) in endpoints.iter().zip(&mut readings) {
                        let fetched = match &e.target {
                            Ok((target, tls)) => {
                                tokio::time::timeout(timeout, fetch(target, tls.as_ref()))
                                    .await
                                    .unwrap_or(Err(Repr::NoAnswer(timeout).into()))
                                    .map_err(|e| e.to_string())
                            }
                            Err(why) => Err(why.to_string()),
                        };
                        let taken = fetched.and_then(|text| readings.take(&text, Instant::now()));
                        let url = e.url.clone();
                        let sample = match taken {
                            Ok((values, notes)) => ScrapeSample {
                                index,
                                values,
                                url,
                                error: None,
                                notes,
                            },
                            Err(err) => ScrapeSample {
                                index,
                                url,
                                values: Vec::new(),
                                error: Some(err),
                                notes: Vec::new(),
                            },
                        };
                        if tx.send(sample).is_err() {
                            return;
                        }
                    }
                }
            });
        });
    if let Err(e) = spawned {
        eprintln!("volley: cannot start the metrics scraper: {e}");
    }
    Scraper { samples: rx, stop }
}

/// Most series kept from one endpoint's page at one scrape. A Spring Boot actuator page
/// lists a few hundred to a few thousand (bench/spring's: 125; histogram buckets, which are
/// not kept, aside); a page whose label values change at every scrape lists as many as it
/// likes. The series the findings read ([`FINDINGS_FAMILIES`]) are kept first, then those
/// kept at the previous scrape (so that a series goes on), then new ones in page order.
pub const MAX_SERIES: usize = 10_000;

/// The families the report's findings, levels and peaks read, by name prefix: kept first
/// when a page lists more than [`MAX_SERIES`], and the only ones written once server.csv
/// reaches its first budget. `process_start_time_seconds` also tells one instance from
/// another.
pub const FINDINGS_FAMILIES: [&str; 7] = [
    "hikaricp_",
    "tomcat_",
    "jvm_gc_",
    "jvm_memory_",
    "jvm_threads_",
    "process_",
    "system_cpu_",
];

/// Whether a series (`name` or `name{labels}`) is one the findings read.
pub fn is_findings_series(series: &str) -> bool {
    FINDINGS_FAMILIES.iter().any(|f| series.starts_with(f))
}

/// Series whose value is a share of a whole, 0 to 1 (Micrometer's CPU loads).
const RATIOS: [&str; 2] = ["process_cpu_usage", "system_cpu_usage"];

/// Gauges that count threads or connections held now.
const COUNTS: [&str; 11] = [
    "hikaricp_connections",
    "hikaricp_connections_active",
    "hikaricp_connections_idle",
    "hikaricp_connections_pending",
    "tomcat_threads_busy_threads",
    "tomcat_threads_current_threads",
    "tomcat_connections_current_connections",
    "jvm_threads_live_threads",
    "jvm_threads_daemon_threads",
    "jvm_threads_peak_threads",
    "jvm_threads_states_threads",
];

/// The most threads or connections a server can hold (Linux caps a process's threads at
/// `kernel.threads-max`, a few million at most).
const MAX_COUNT: f64 = 1e7;

/// A magnitude no resource reaches: 2^64 (counters and sizes are 64-bit integers at most).
const MAX_MAGNITUDE: f64 = 18_446_744_073_709_551_616.0;

/// Why a value read for sample `name` cannot be what it says, if it cannot.
pub fn implausible(name: &str, value: f64, cumulative: bool) -> Option<&'static str> {
    if value.is_infinite() || value.abs() > MAX_MAGNITUDE {
        Some("a value beyond ±2^64, more than any resource holds")
    } else if RATIOS.contains(&name) && !(0.0..=1.0).contains(&value) {
        Some("a ratio outside 0–1")
    } else if cumulative && value < 0.0 {
        Some("a counter below 0")
    } else if COUNTS.contains(&name) && !(0.0..=MAX_COUNT).contains(&value) {
        Some("a count of threads or connections below 0 or above 10,000,000")
    } else if (name.ends_with("_used_bytes") || name.ends_with("_committed_bytes")) && value < 0.0 {
        Some("a size in bytes below 0")
    } else {
        None
    }
}

/// What happened to readings that are not recorded as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoteKind {
    /// Not recorded: a bound on series or bytes, or a line that is not Prometheus text.
    LeftOut,
    /// A value no such series can have, or a series listed twice with different values:
    /// not recorded, never a peak or a finding.
    Marked,
    /// A cumulative series went down, or the process answering changed: no rate from it.
    Reset,
}

impl NoteKind {
    /// As run.json writes it: `left_out`, `marked`, `reset`.
    pub fn name(self) -> &'static str {
        match self {
            NoteKind::LeftOut => "left_out",
            NoteKind::Marked => "marked",
            NoteKind::Reset => "reset",
        }
    }
}

/// Readings of one scrape not recorded as read, counted by kind and reason.
#[derive(Debug, Clone, PartialEq)]
pub struct ScrapeNote {
    /// What happened.
    pub kind: NoteKind,
    /// Why, in words (one of a few fixed reasons).
    pub why: String,
    /// Readings (or lines) it happened to.
    pub count: u64,
    /// The first of them: `series = value` or `line N: what`.
    pub first: String,
}

/// Notes of one scrape, one per kind and reason.
#[derive(Debug, Default)]
struct Notes(Vec<ScrapeNote>);

impl Notes {
    fn add(&mut self, kind: NoteKind, why: &str, count: u64, first: impl FnOnce() -> String) {
        if count == 0 {
            return;
        }
        match self.0.iter_mut().find(|n| n.kind == kind && n.why == why) {
            Some(n) => n.count += count,
            None => self.0.push(ScrapeNote {
                kind,
                why: why.to_string(),
                count,
                first: shorten(&first()),
            }),
        }
    }
}

/// A value as a note shows it: plain, or in scientific notation when very large or small
/// (`1e308`, not 309 digits).
pub fn shown(v: f64) -> String {
    if v == 0.0 || !v.is_finite() || (1e-4..1e15).contains(&v.abs()) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// At most 200 characters of `s`, for an example in a note.
fn shorten(s: &str) -> String {
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// What a series is to the bound of [`MAX_SERIES`]: kept first, kept before, or new.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rank {
    Findings,
    Before,
    New,
}

/// One series read from a page.
struct Entry {
    key: String,
    value: f64,
    cumulative: bool,
    rank: Rank,
    /// Listed again on the page with another value.
    conflict: bool,
}

/// One endpoint's readings from scrape to scrape: the series kept at the last scrape that
/// returned metrics (at most [`MAX_SERIES`]), with the value of each cumulative one, so
/// that the next scrape's rates come from one series of one instance.
#[derive(Default)]
pub struct Readings {
    /// Series kept last time: the value of a cumulative one, `None` for a gauge.
    previous: HashMap<String, Option<f64>>,
    /// When they were read.
    previous_at: Option<Instant>,
    /// `process_start_time_seconds` then, which tells a restart or another instance.
    started: Option<f64>,
}

/// What one page gave: (series, value, whether the value is a rate) and the notes.
pub type Taken = (Vec<(String, f64, bool)>, Vec<ScrapeNote>);

impl Readings {
    /// The values to record from the page `text` read at `now`: gauges as they are,
    /// cumulative series as their rate per second since the previous scrape of the same
    /// instance; at most [`MAX_SERIES`] series; implausible values, repeated series,
    /// resets and what was left out as notes. Histogram buckets are left out (their count
    /// and sum are kept); a NaN is no reading. A page that is not Prometheus text, or holds
    /// no sample, is an error.
    pub fn take(&mut self, text: &str, now: Instant) -> Result<Taken, String> {
        if let Some(why) = prom::not_exposition(text) {
            return Err(why);
        }
        let mut notes = Notes::default();
        let mut entries: Vec<Entry> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut counts = [0usize; 3];
        let (mut samples, mut malformed) = (0u64, 0u64);
        let mut started = None;
        let mut reader = prom::Reader::new(text);
        while let Some(item) = reader.next() {
            let s = match item {
                Ok(s) => s,
                Err((line, what)) => {
                    malformed += 1;
                    notes.add(
                        NoteKind::LeftOut,
                        "lines that are not Prometheus text (skipped)",
                        1,
                        || format!("line {line}: {what}"),
                    );
                    continue;
                }
            };
            samples += 1;
            if s.name == "process_start_time_seconds" && started.is_none() {
                started = Some(s.value);
            }
            if s.name.ends_with("_bucket") || s.value.is_nan() {
                continue;
            }
            let cumulative = reader.is_cumulative(&s.name);
            let key = series_key(&s.name, &s.labels);
            if let Some(why) = implausible(&s.name, s.value, cumulative) {
                notes.add(NoteKind::Marked, why, 1, || {
                    format!("{key} = {}", shown(s.value))
                });
                continue;
            }
            if let Some(&i) = index.get(&key) {
                let e: &mut Entry = &mut entries[i];
                e.conflict |= e.value != s.value;
                continue;
            }
            let rank = if is_findings_series(&key) {
                Rank::Findings
            } else if self.previous.contains_key(&key) {
                Rank::Before
            } else {
                Rank::New
            };
            // Each rank holds at most MAX_SERIES until the page is read, so that the
            // findings' series listed last still come first.
            if counts[rank as usize] >= MAX_SERIES {
                notes.add(NoteKind::LeftOut, &beyond_the_bound(), 1, || key.clone());
                continue;
            }
            counts[rank as usize] += 1;
            index.insert(key.clone(), entries.len());
            entries.push(Entry {
                key,
                value: s.value,
                cumulative,
                rank,
                conflict: false,
            });
        }
        drop(index);
        if samples == 0 {
            return Err(if malformed > 0 {
                let first = notes.0.first().map(|n| n.first.clone()).unwrap_or_default();
                format!(
                    "the page is not Prometheus text: none of its {malformed} lines is a sample ({first}); point --server-metrics at the Prometheus endpoint (Spring Boot: /actuator/prometheus)"
                )
            } else {
                "the page holds no samples (an empty page, or comments only)".to_string()
            });
        }
        // What room the findings' series leave, first to the series kept before.
        let before = counts[Rank::Before as usize].min(MAX_SERIES - counts[0]);
        let new = counts[Rank::New as usize].min(MAX_SERIES - counts[0] - before);
        let mut taken = [0usize; 3];
        let (mut left_out, mut first_left) = (0u64, None);
        entries.retain(|e| {
            let room = match e.rank {
                Rank::Findings => MAX_SERIES,
                Rank::Before => before,
                Rank::New => new,
            };
            taken[e.rank as usize] += 1;
            let keep = taken[e.rank as usize] <= room;
            if !keep {
                left_out += 1;
                first_left.get_or_insert_with(|| e.key.clone());
            }
            keep
        });
        notes.add(NoteKind::LeftOut, &beyond_the_bound(), left_out, || {
            first_left.unwrap_or_default()
        });
        // Another process than last time: nothing cumulative of its is comparable.
        let restarted = match (self.started, started) {
            (Some(a), Some(b)) if a != b => {
                notes.add(
                    NoteKind::Reset,
                    "process_start_time_seconds changed: the server restarted or another instance answered, so no rate was taken from that scrape",
                    1,
                    || format!("process_start_time_seconds {} then {}", shown(a), shown(b)),
                );
                true
            }
            _ => false,
        };
        let dt = self
            .previous_at
            .map(|at| now.saturating_duration_since(at).as_secs_f64());
        let mut out = Vec::with_capacity(entries.len());
        let mut previous = HashMap::with_capacity(entries.len());
        for e in entries {
            if e.conflict {
                notes.add(
                    NoteKind::Marked,
                    "a series listed twice on one page with different values (two registries or instances): neither was read",
                    1,
                    || e.key.clone(),
                );
                continue;
            }
            if !e.cumulative {
                out.push((e.key.clone(), e.value, false));
                previous.insert(e.key, None);
                continue;
            }
            if !restarted
                && let (Some(Some(before)), Some(dt)) = (self.previous.get(&e.key), dt)
                && dt > 0.0
            {
                if e.value >= *before {
                    out.push((e.key.clone(), (e.value - before) / dt, true));
                } else {
                    notes.add(
                        NoteKind::Reset,
                        "a counter went down: the server restarted or another instance answered, so no rate was taken from it",
                        1,
                        || format!("{} {} then {}", e.key, shown(*before), shown(e.value)),
                    );
                }
            }
            previous.insert(e.key, Some(e.value));
        }
        self.previous = previous;
        self.previous_at = Some(now);
        if started.is_some() {
            self.started = started;
        }
        Ok((out, notes.0))
    }
}

/// Why a series beyond [`MAX_SERIES`] was left out.
fn beyond_the_bound() -> String {
    format!(
        "beyond {MAX_SERIES} series on one page (the findings' series kept first, then those kept before)"
    )
}

/// `name{a="x",b="y"}` — the identity of a series.
pub fn series_key(name: &str, labels: &[(String, String)]) -> String {
    if labels.is_empty() {
        return name.to_string();
    }
    // One string, sized once: a label value of megabytes is copied once, not four times.
    let len = labels
        .iter()
        .map(|(k, v)| k.len() + v.len() + 4)
        .sum::<usize>();
    let mut out = String::with_capacity(name.len() + 2 + len);
    out.push_str(name);
    out.push('{');
    for (i, (k, v)) in labels.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(k);
        out.push_str("=\"");
        prom::escape_into(&mut out, v);
        out.push('"');
    }
    out.push('}');
    out
}

/// The largest metrics page read (Prometheus's own `body_size_limit` is unlimited by
/// default; a Spring Boot actuator page is well under 1 MiB).
const MAX_BODY: usize = 16 << 20;

/// GETs the endpoint on a new connection and returns the body, read by the HTTP/1.1
/// reader VUs use (framed by length, chunks or the end of the connection).
async fn fetch(target: &Target, tls: Option<&Arc<rustls::ClientConfig>>) -> Result<String, Error> {
    let request = format!(
        "GET {} HTTP/1.1\r\nhost: {}\r\naccept: text/plain;version=0.0.4\r\nuser-agent: volley/{}\r\nconnection: close\r\n\r\n",
        target.path,
        target.authority,
        env!("CARGO_PKG_VERSION")
    );
    let (mut stream, _) = dial(target, tls).await?;
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|error| Repr::Io {
            stage: "write",
            error,
        })?;
    let mut buf = Vec::new();
    let head = h1::read_head(&mut stream, &mut buf, None)
        .await
        .map_err(|e| match e {
            H1Error::Io(stage, error) => Repr::Io { stage, error },
            H1Error::Stale(what) => Repr::Response(what),
            H1Error::Invalid(_) | H1Error::Closed(_) => Repr::NotHttp,
        })?;
    if head.status != 200 {
        return Err(Repr::Status(head.status).into());
    }
    let mut body = Vec::new();
    let mut too_long = false;
    let read = h1::read_body(
        &mut stream,
        &mut buf,
        head.framing,
        h1::Idle::Keep,
        &mut |chunk| {
            too_long = body.len() + chunk.len() > MAX_BODY;
            if !too_long {
                body.extend_from_slice(chunk);
            }
            !too_long
        },
    )
    .await;
    if too_long {
        return Err(Repr::Response(format!(
            "the metrics page is larger than {} MiB, more than any exporter writes; point --server-metrics at a /metrics endpoint",
            MAX_BODY >> 20
        )).into());
    }
    match read {
        Ok(_) => {}
        // Many TLS servers close without a close_notify: for a body that ends with the
        // connection, that is its end.
        Err(H1Error::Io(_, e))
            if head.framing == Framing::UntilClose
                && e.kind() == std::io::ErrorKind::UnexpectedEof => {}
        Err(H1Error::Io(stage, error)) => return Err(Repr::Io { stage, error }.into()),
        Err(H1Error::Closed(what)) => return Err(Repr::Response(what.into()).into()),
        Err(H1Error::Invalid(what) | H1Error::Stale(what)) => {
            return Err(Repr::Response(what).into());
        }
    }
    String::from_utf8(body).map_err(|_| Repr::NotUtf8.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Readings::take` at `t` s after a fixed instant.
    fn take_at(r: &mut Readings, text: &str, t: f64) -> Result<Taken, String> {
        static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        let t0 = *START.get_or_init(Instant::now);
        r.take(text, t0 + Duration::from_secs_f64(t))
    }

    fn value(taken: &Taken, key: &str) -> Option<(f64, bool)> {
        taken.0.iter().find(|v| v.0 == key).map(|v| (v.1, v.2))
    }

    fn note(taken: &Taken, kind: NoteKind) -> Option<&ScrapeNote> {
        taken.1.iter().find(|n| n.kind == kind)
    }

    #[test]
    fn counters_become_rates_and_gauges_stay() {
        let mut r = Readings::default();
        let text = "# TYPE req counter\nreq_total{code=\"200\"} 100\n# TYPE g gauge\ng 5\n# TYPE h histogram\nh_bucket{le=\"1\"} 3\nh_count 3\n";
        let first = take_at(&mut r, text, 1.0).unwrap();
        assert_eq!(
            first.0,
            vec![("g".to_string(), 5.0, false)],
            "cumulative series need two scrapes"
        );
        let second = take_at(
            &mut r,
            &text.replace("100", "110").replace("h_count 3", "h_count 8"),
            3.0,
        )
        .unwrap();
        assert_eq!(value(&second, "req_total{code=\"200\"}"), Some((5.0, true)));
        assert_eq!(value(&second, "h_count"), Some((2.5, true)));
        assert!(!second.0.iter().any(|v| v.0.starts_with("h_bucket")));
        assert!(second.1.is_empty(), "{:?}", second.1);
    }

    #[test]
    fn pages_that_are_no_exposition_fail_and_say_what_they_are() {
        let mut r = Readings::default();
        let html = take_at(
            &mut r,
            "<!DOCTYPE html>\n<html><body>Whitelabel Error Page\nCopyright 2024</body></html>\n",
            1.0,
        )
        .unwrap_err();
        assert!(
            html.contains("HTML or XML, not Prometheus text") && html.contains("`<!DOCTYPE html>`"),
            "{html}"
        );
        let json = take_at(&mut r, "{\"names\":[\"jvm.memory.used\"]}", 1.0).unwrap_err();
        assert!(
            json.contains("JSON") && json.contains("/actuator/prometheus"),
            "{json}"
        );
        let prose = take_at(&mut r, "Hello there\nall is well\n", 1.0).unwrap_err();
        assert!(
            prose.contains("none of its 2 lines is a sample (line 1: "),
            "{prose}"
        );
        let empty = take_at(&mut r, "# HELP x y\n", 1.0).unwrap_err();
        assert!(empty.contains("no samples"), "{empty}");
        // A page with some bad lines still counts, and says what it skipped.
        let half = take_at(&mut r, "ok 1\nnot a sample\n", 1.0).unwrap();
        assert_eq!(value(&half, "ok"), Some((1.0, false)));
        let n = note(&half, NoteKind::LeftOut).unwrap();
        assert_eq!(n.count, 1);
        assert!(n.first.starts_with("line 2: "), "{n:?}");
    }

    #[test]
    fn values_no_resource_can_have_are_marked_not_read() {
        let mut r = Readings::default();
        let page = "process_cpu_usage 5.0\nsystem_cpu_usage 0.5\njvm_memory_used_bytes{area=\"heap\"} 1e308\nhikaricp_connections_pending{pool=\"p\"} -3\njvm_memory_max_bytes{id=\"x\"} -1\nup +Inf\nq NaN\n";
        let t = take_at(&mut r, page, 1.0).unwrap();
        assert_eq!(
            t.0,
            vec![
                ("system_cpu_usage".to_string(), 0.5, false),
                ("jvm_memory_max_bytes{id=\"x\"}".to_string(), -1.0, false)
            ]
        );
        let whys: Vec<(&str, u64, &str)> =
            t.1.iter()
                .map(|n| (n.why.as_str(), n.count, n.first.as_str()))
                .collect();
        assert_eq!(
            whys,
            vec![
                ("a ratio outside 0–1", 1, "process_cpu_usage = 5"),
                (
                    "a value beyond ±2^64, more than any resource holds",
                    2,
                    "jvm_memory_used_bytes{area=\"heap\"} = 1e308"
                ),
                (
                    "a count of threads or connections below 0 or above 10,000,000",
                    1,
                    "hikaricp_connections_pending{pool=\"p\"} = -3"
                ),
            ]
        );
        assert!(t.1.iter().all(|n| n.kind == NoteKind::Marked));
    }

    #[test]
    fn a_counter_listed_twice_with_two_values_gives_no_rate() {
        let mut r = Readings::default();
        let page = |a: u32, b: u32| {
            format!("# TYPE gc counter\ngc_total {a}\nother 1\ngc_total {b}\nsame 2\nsame 2\n")
        };
        take_at(&mut r, &page(0, 100), 1.0).unwrap();
        let t = take_at(&mut r, &page(0, 100), 2.0).unwrap();
        assert_eq!(value(&t, "gc_total"), None, "{t:?}");
        assert_eq!(
            value(&t, "same"),
            Some((2.0, false)),
            "the same value twice is one reading"
        );
        let n = note(&t, NoteKind::Marked).unwrap();
        assert!(
            n.why.starts_with("a series listed twice") && n.first == "gc_total",
            "{n:?}"
        );
        assert!(note(&t, NoteKind::Reset).is_none(), "{t:?}");
    }

    #[test]
    fn another_instance_or_a_restart_gives_no_rate_and_is_said() {
        // Two instances behind one URL, scraped in turn, each with its own start time.
        let page = |start: u32, gc: u32| {
            format!("process_start_time_seconds {start}\n# TYPE gc counter\ngc_total {gc}\n")
        };
        let mut r = Readings::default();
        let mut rates = Vec::new();
        let mut resets = 0;
        for (i, (start, gc)) in [
            (1000, 10),
            (2000, 998_000),
            (1000, 12),
            (2000, 998_002),
            (2000, 998_004),
        ]
        .into_iter()
        .enumerate()
        {
            let t = take_at(&mut r, &page(start, gc), i as f64 + 1.0).unwrap();
            rates.extend(value(&t, "gc_total").map(|v| v.0));
            resets +=
                t.1.iter()
                    .filter(|n| n.kind == NoteKind::Reset)
                    .map(|n| n.count)
                    .sum::<u64>();
        }
        assert_eq!(
            rates,
            vec![2.0],
            "only the last two scrapes are of one instance"
        );
        assert_eq!(resets, 3);
        // Without a start time, a counter that goes down is a reset: no rate, said.
        let mut r = Readings::default();
        let page = |gc: u32| format!("# TYPE gc counter\ngc_total {gc}\n");
        take_at(&mut r, &page(500), 1.0).unwrap();
        let t = take_at(&mut r, &page(3), 2.0).unwrap();
        assert_eq!(value(&t, "gc_total"), None);
        assert_eq!(
            note(&t, NoteKind::Reset).unwrap().first,
            "gc_total 500 then 3"
        );
        let t = take_at(&mut r, &page(7), 3.0).unwrap();
        assert_eq!(
            value(&t, "gc_total"),
            Some((4.0, true)),
            "counted again from the reset"
        );
    }

    #[test]
    fn a_page_of_new_series_each_scrape_keeps_the_findings_series_and_a_bounded_rest() {
        let mut r = Readings::default();
        for scrape in 0..3 {
            let mut page = String::from("stable 1\n# TYPE c counter\n");
            for i in 0..(MAX_SERIES + 500) {
                page.push_str(&format!("c_total{{id=\"{scrape}-{i}\"}} {i}\n"));
            }
            // Listed last, after more series than are kept: still kept.
            page.push_str("hikaricp_connections_pending{pool=\"p\"} 2\n");
            let t = take_at(&mut r, &page, scrape as f64 + 1.0).unwrap();
            assert_eq!(
                value(&t, "hikaricp_connections_pending{pool=\"p\"}"),
                Some((2.0, false))
            );
            if scrape > 0 {
                assert_eq!(
                    value(&t, "stable"),
                    Some((1.0, false)),
                    "a series kept before goes on"
                );
            }
            assert!(r.previous.len() <= MAX_SERIES, "{}", r.previous.len());
            let left = note(&t, NoteKind::LeftOut).unwrap();
            assert_eq!(
                left.count as usize,
                MAX_SERIES + 502 - MAX_SERIES,
                "{left:?}"
            );
            assert!(
                left.why.starts_with("beyond 10000 series on one page"),
                "{left:?}"
            );
        }
    }

    /// Serves `response` once on a loopback port, in pieces of `step` bytes, and returns
    /// what [`fetch`] made of it.
    fn fetch_served(response: &'static [u8], step: usize) -> Result<String, Error> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let target = Target::resolve(&format!(
                "http://{}/metrics",
                listener.local_addr().unwrap()
            ))
            .unwrap();
            let server = tokio::spawn(crate::h1::serve_in_pieces(listener, response, step));
            let fetched = tokio::time::timeout(Duration::from_secs(10), fetch(&target, None))
                .await
                .expect("bounded");
            server.await.unwrap();
            fetched
        })
    }

    #[test]
    fn bodies_by_length_chunks_and_close_in_any_split() {
        for step in [1, 3, 1000] {
            let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x\r\nde\r\n0\r\n\r\n";
            assert_eq!(fetch_served(chunked, step).unwrap(), "abcde", "step {step}");
            let sized = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nabcde";
            assert_eq!(fetch_served(sized, step).unwrap(), "abcde", "step {step}");
            let until_close = b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nabcde";
            assert_eq!(
                fetch_served(until_close, step).unwrap(),
                "abcde",
                "step {step}"
            );
        }
    }

    #[test]
    fn failed_scrapes_say_why() {
        let err = |response: &'static [u8]| fetch_served(response, 1000).unwrap_err().to_string();
        assert_eq!(
            err(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"),
            "HTTP 404"
        );
        assert_eq!(err(b"SSH-2.0-OpenSSH_9.6\r\n\r\n"), "not an HTTP response");
        assert_eq!(err(b"HTTP/1.1 200 OK\r\ncontent-"), "not an HTTP response");
        assert_eq!(
            err(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n\xff\xfe"),
            "the body is not UTF-8"
        );
        assert!(
            err(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab")
                .contains("closed inside")
        );
        let closed = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let target = Target::resolve(&format!("http://{closed}/metrics")).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let refused = rt.block_on(fetch(&target, None)).unwrap_err().to_string();
        assert!(refused.starts_with("connect: "), "{refused}");
    }
}
