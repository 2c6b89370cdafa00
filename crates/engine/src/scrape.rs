//! The server-metrics scraper: every interval it fetches each Prometheus / OpenMetrics
//! endpoint (Spring Boot's `/actuator/prometheus`, node_exporter, the demo target), turns
//! counters into rates, and hands the values over tagged with the interval. A scrape that
//! fails is counted and the run goes on.

use std::collections::HashMap;
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

use crate::dial::dial;
use crate::error::EngineError;
use crate::h1::{self, Framing, H1Error};
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
    /// The target and its TLS configuration, or why it cannot be used (reported at every
    /// scrape, never fatal).
    target: Result<(Target, Option<Arc<rustls::ClientConfig>>), EngineError>,
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
                let mut previous: HashMap<String, (f64, Instant)> = HashMap::new();
                let timeout = interval.min(Duration::from_secs(2));
                for index in 0u64.. {
                    let due = t0 + interval * (index as u32 + 1);
                    tokio::select! {
                        _ = tokio::time::sleep_until(due.into()) => {}
                        _ = thread_stop.cancelled() => return,
                    }
                    for e in &endpoints {
                        let fetched = match &e.target {
                            Ok((target, tls)) => {
                                tokio::time::timeout(timeout, fetch(target, tls.as_ref()))
                                    .await
                                    .unwrap_or(Err(EngineError::NoAnswer(timeout)))
                                    .map_err(|e| e.to_string())
                            }
                            Err(why) => Err(why.to_string()),
                        };
                        let url = e.url.clone();
                        let sample = match fetched {
                            Ok(text) => ScrapeSample {
                                index,
                                values: values(&url, &text, &mut previous),
                                url,
                                error: None,
                            },
                            Err(err) => ScrapeSample {
                                index,
                                url,
                                values: Vec::new(),
                                error: Some(err),
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

/// The values to record from one exposition: gauges as they are, cumulative series as
/// their rate per second since the previous scrape. Histogram buckets are left out (their
/// count and sum are kept).
fn values(
    url: &str,
    text: &str,
    previous: &mut HashMap<String, (f64, Instant)>,
) -> Vec<(String, f64, bool)> {
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
                let delta = if s.value >= before {
                    s.value - before
                } else {
                    s.value
                };
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
    let inner: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", prom::escape_label_value(v)))
        .collect();
    format!("{name}{{{}}}", inner.join(","))
}

/// The largest metrics page read (Prometheus's own `body_size_limit` is unlimited by
/// default; a Spring Boot actuator page is well under 1 MiB).
const MAX_BODY: usize = 16 << 20;

/// GETs the endpoint on a new connection and returns the body, read by the HTTP/1.1
/// reader VUs use (framed by length, chunks or the end of the connection).
async fn fetch(
    target: &Target,
    tls: Option<&Arc<rustls::ClientConfig>>,
) -> Result<String, EngineError> {
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
        .map_err(|error| EngineError::Io {
            stage: "write",
            error,
        })?;
    let mut buf = Vec::new();
    let head = h1::read_head(&mut stream, &mut buf, None)
        .await
        .map_err(|e| match e {
            H1Error::Io(stage, error) => EngineError::Io { stage, error },
            H1Error::Stale(what) => EngineError::Response(what),
            H1Error::Invalid(_) | H1Error::Closed(_) => EngineError::NotHttp,
        })?;
    if head.status != 200 {
        return Err(EngineError::Status(head.status));
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
        return Err(EngineError::Response(format!(
            "the metrics page is larger than {} MiB, more than any exporter writes; point --server-metrics at a /metrics endpoint",
            MAX_BODY >> 20
        )));
    }
    match read {
        Ok(_) => {}
        // Many TLS servers close without a close_notify: for a body that ends with the
        // connection, that is its end.
        Err(H1Error::Io(_, e))
            if head.framing == Framing::UntilClose
                && e.kind() == std::io::ErrorKind::UnexpectedEof => {}
        Err(H1Error::Io(stage, error)) => return Err(EngineError::Io { stage, error }),
        Err(H1Error::Closed(what)) => return Err(EngineError::Response(what.into())),
        Err(H1Error::Invalid(what) | H1Error::Stale(what)) => {
            return Err(EngineError::Response(what));
        }
    }
    String::from_utf8(body).map_err(|_| EngineError::NotUtf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_become_rates_and_gauges_stay() {
        let mut prev = HashMap::new();
        let text = "# TYPE req counter\nreq_total{code=\"200\"} 100\n# TYPE g gauge\ng 5\n# TYPE h histogram\nh_bucket{le=\"1\"} 3\nh_count 3\n";
        let first = values("u", text, &mut prev);
        assert_eq!(
            first,
            vec![("g".to_string(), 5.0, false)],
            "cumulative series need two scrapes"
        );
        std::thread::sleep(Duration::from_millis(50));
        let second = values(
            "u",
            &text.replace("100", "110").replace("h_count 3", "h_count 8"),
            &mut prev,
        );
        let rate = second
            .iter()
            .find(|v| v.0 == "req_total{code=\"200\"}")
            .unwrap();
        assert!(rate.2 && rate.1 > 10.0 && rate.1 < 400.0, "{rate:?}");
        assert!(second.iter().any(|v| v.0 == "h_count" && v.2));
        assert!(!second.iter().any(|v| v.0.starts_with("h_bucket")));
    }

    /// Serves `response` once on a loopback port, in pieces of `step` bytes, and returns
    /// what [`fetch`] made of it.
    fn fetch_served(response: &'static [u8], step: usize) -> Result<String, EngineError> {
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
