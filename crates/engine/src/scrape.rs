//! The server-metrics scraper: every interval it fetches each Prometheus / OpenMetrics
//! endpoint (Spring Boot's `/actuator/prometheus`, node_exporter, the demo target), turns
//! counters into rates, and hands the values over tagged with the interval. A scrape that
//! fails is counted and the run goes on.

use std::collections::HashMap;
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use crate::prom;
use crate::target::Target;
use crate::tls::TlsOptions;

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
    /// The target, or why it cannot be used (reported at every scrape, never fatal).
    target: Result<Target, String>,
    tls: Option<Arc<rustls::ClientConfig>>,
}

impl Endpoint {
    fn new(url: String, tls: &TlsOptions) -> Endpoint {
        let target = Target::resolve(&url).map_err(|e| e.to_string());
        let config = match &target {
            Ok(t) if t.tls => tls.client_config(true).ok().flatten(),
            _ => None,
        };
        Endpoint { url, target, tls: config }
    }
}

/// Starts scraping `urls` at the end of every interval (counted from `t0`).
pub fn start(urls: Vec<String>, tls: TlsOptions, t0: Instant, interval: Duration) -> Scraper {
    let stop = CancellationToken::new();
    let (tx, rx) = mpsc::channel();
    let thread_stop = stop.clone();
    let spawned = std::thread::Builder::new().name("volley-scraper".into()).spawn(move || {
        let endpoints: Vec<Endpoint> = urls.into_iter().map(|u| Endpoint::new(u, &tls)).collect();
        let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
        rt.block_on(async move {
            let mut previous: HashMap<String, (f64, Instant)> = HashMap::new();
            let timeout = interval.min(Duration::from_secs(2));
            for index in 0u64.. {
                let due = t0 + interval * (index as u32 + 1);
                tokio::select! {
                    _ = tokio::time::sleep_until(due.into()) => {}
                    _ = thread_stop.cancelled() => return,
                }
                for e in &endpoints {
                    let fetched = tokio::time::timeout(timeout, fetch(e))
                        .await
                        .unwrap_or_else(|_| Err(format!("no answer within {}s", timeout.as_secs_f64())));
                    let url = e.url.clone();
                    let sample = match fetched {
                        Ok(text) => ScrapeSample { index, values: values(&url, &text, &mut previous), url, error: None },
                        Err(err) => ScrapeSample { index, url, values: Vec::new(), error: Some(err) },
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

/// The values to record from one exposition: gauges as they are, cumulative series as
/// their rate per second since the previous scrape. Histogram buckets are left out (their
/// count and sum are kept).
fn values(url: &str, text: &str, previous: &mut HashMap<String, (f64, Instant)>) -> Vec<(String, f64, bool)> {
    let e = prom::parse(text);
    let now = Instant::now();
    let mut out = Vec::new();
    for s in &e.samples {
        if s.name.ends_with("_bucket") || !s.value.is_finite() {
            continue;
        }
        let key = series_key(&s.name, &s.labels);
        if e.is_cumulative(&s.name) {
            let memory = format!("{url} {key}");
            if let Some((before, at)) = previous.insert(memory, (s.value, now)) {
                let dt = now.duration_since(at).as_secs_f64();
                // A counter that went down was reset: count from zero.
                let delta = if s.value >= before { s.value - before } else { s.value };
                if dt > 0.0 {
                    out.push((key, delta / dt, true));
                }
            }
        } else {
            out.push((key, s.value, false));
        }
    }
    out
}

/// `name{a="x",b="y"}` — the identity of a series.
pub fn series_key(name: &str, labels: &[(String, String)]) -> String {
    if labels.is_empty() {
        return name.to_string();
    }
    let inner: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", prom::escape_label_value(v))).collect();
    format!("{name}{{{}}}", inner.join(","))
}

/// GETs the endpoint on a new connection and returns the body.
async fn fetch(endpoint: &Endpoint) -> Result<String, String> {
    let target = endpoint.target.as_ref().map_err(Clone::clone)?;
    let request = format!(
        "GET {} HTTP/1.1\r\nhost: {}\r\naccept: text/plain;version=0.0.4\r\nuser-agent: volley/{}\r\nconnection: close\r\n\r\n",
        target.path,
        target.authority,
        env!("CARGO_PKG_VERSION")
    );
    let tcp = tokio::net::TcpStream::connect(target.addr).await.map_err(|e| format!("connect: {e}"))?;
    let mut raw = Vec::new();
    if let Some(config) = &endpoint.tls {
        let name = rustls::pki_types::ServerName::try_from(target.host.clone()).map_err(|e| e.to_string())?;
        let mut s = tokio_rustls::TlsConnector::from(config.clone()).connect(name, tcp).await.map_err(|e| format!("tls: {e}"))?;
        s.write_all(request.as_bytes()).await.map_err(|e| e.to_string())?;
        let _ = s.read_to_end(&mut raw).await;
    } else {
        let mut s = tcp;
        s.write_all(request.as_bytes()).await.map_err(|e| e.to_string())?;
        s.read_to_end(&mut raw).await.map_err(|e| e.to_string())?;
    }
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut headers);
    let head_len = match resp.parse(&raw) {
        Ok(httparse::Status::Complete(n)) => n,
        _ => return Err("not an HTTP response".into()),
    };
    let status = resp.code.unwrap_or(0);
    if status != 200 {
        return Err(format!("HTTP {status}"));
    }
    let chunked = resp.headers.iter().any(|h| h.name.eq_ignore_ascii_case("transfer-encoding") && h.value.eq_ignore_ascii_case(b"chunked"));
    let body = &raw[head_len..];
    let body = if chunked { dechunk(body)? } else { body.to_vec() };
    String::from_utf8(body).map_err(|_| "the body is not UTF-8".into())
}

fn dechunk(mut s: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let line_end = s.windows(2).position(|w| w == b"\r\n").ok_or("truncated chunked body")?;
        let size_text = std::str::from_utf8(&s[..line_end]).map_err(|e| e.to_string())?;
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16).map_err(|_| "bad chunk size")?;
        s = &s[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        if s.len() < size {
            return Err("truncated chunk".into());
        }
        out.extend_from_slice(&s[..size]);
        s = s.get(size + 2..).unwrap_or(&[]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_become_rates_and_gauges_stay() {
        let mut prev = HashMap::new();
        let text = "# TYPE req counter\nreq_total{code=\"200\"} 100\n# TYPE g gauge\ng 5\n# TYPE h histogram\nh_bucket{le=\"1\"} 3\nh_count 3\n";
        let first = values("u", text, &mut prev);
        assert_eq!(first, vec![("g".to_string(), 5.0, false)], "cumulative series need two scrapes");
        std::thread::sleep(Duration::from_millis(50));
        let second = values("u", &text.replace("100", "110").replace("h_count 3", "h_count 8"), &mut prev);
        let rate = second.iter().find(|v| v.0 == "req_total{code=\"200\"}").unwrap();
        assert!(rate.2 && rate.1 > 10.0 && rate.1 < 400.0, "{rate:?}");
        assert!(second.iter().any(|v| v.0 == "h_count" && v.2));
        assert!(!second.iter().any(|v| v.0.starts_with("h_bucket")));
    }

    #[test]
    fn chunked_bodies() {
        assert_eq!(dechunk(b"3\r\nabc\r\n2;x\r\nde\r\n0\r\n\r\n").unwrap(), b"abcde");
        assert!(dechunk(b"5\r\nab").is_err());
    }
}
