//! `--connections N` against real loopback servers: an HTTP/2 server on the `h2` crate's
//! own server (cleartext prior knowledge, or TLS choosing h2 by ALPN) that counts the
//! connections it accepted, the requests it answered and the most streams it had open at
//! once; and an HTTP/1.1 keep-alive server that counts its connections. Every test runs a
//! fixed number of iterations, so the counts on both sides must agree exactly.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use volley_engine::{EngineConfig, Event, Target, TlsOptions};
use volley_scenario::{LoadSpec, RequestSpec, Settings, Work};
use volley_stats::{ErrorKind, IntervalSample};

/// What a server saw.
#[derive(Default)]
struct Seen {
    connections: AtomicU64,
    requests: AtomicU64,
    open: AtomicU64,
    most_open: AtomicU64,
    http2: AtomicU64,
    /// Each request's authority and path, as the server received them.
    targets: std::sync::Mutex<Vec<String>>,
}

struct Server {
    addr: SocketAddr,
    seen: Arc<Seen>,
    cert_pem: Option<String>,
    _rt: tokio::runtime::Runtime,
}

/// How the HTTP/2 server behaves.
#[derive(Clone, Copy)]
struct H2Options {
    max_streams: u32,
    delay: Duration,
    tls: bool,
    /// Sends GOAWAY (NO_ERROR) after this many requests on a connection, as nginx does at
    /// `keepalive_requests`.
    requests_per_connection: Option<u64>,
}

impl Default for H2Options {
    fn default() -> Self {
        H2Options {
            max_streams: 100,
            delay: Duration::ZERO,
            tls: false,
            requests_per_connection: None,
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A self-signed certificate for `localhost` and a TLS acceptor offering only h2.
fn tls_acceptor() -> (tokio_rustls::TlsAcceptor, String) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into());
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert.cert.der().clone()], key)
    .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec()];
    (
        tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        cert.cert.pem(),
    )
}

fn h2_server(opts: H2Options) -> Server {
    let rt = runtime();
    let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let (acceptor, cert_pem) = if opts.tls {
        let (a, p) = tls_acceptor();
        (Some(a), Some(p))
    } else {
        (None, None)
    };
    let s = seen.clone();
    rt.spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            s.connections.fetch_add(1, Ordering::SeqCst);
            let (s, acceptor) = (s.clone(), acceptor.clone());
            tokio::spawn(async move {
                match acceptor {
                    Some(a) => {
                        if let Ok(tls) = a.accept(tcp).await {
                            serve_h2(tls, opts, s).await;
                        }
                    }
                    None => serve_h2(tcp, opts, s).await,
                }
            });
        }
    });
    Server {
        addr,
        seen,
        cert_pem,
        _rt: rt,
    }
}

async fn serve_h2<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(
    io: T,
    opts: H2Options,
    seen: Arc<Seen>,
) {
    let Ok(mut conn) = h2::server::Builder::new()
        .max_concurrent_streams(opts.max_streams)
        .handshake::<_, Bytes>(io)
        .await
    else {
        return;
    };
    let mut served = 0u64;
    while let Some(Ok((req, mut respond))) = conn.accept().await {
        served += 1;
        let seen = seen.clone();
        tokio::spawn(async move {
            let now = seen.open.fetch_add(1, Ordering::SeqCst) + 1;
            seen.most_open.fetch_max(now, Ordering::SeqCst);
            seen.http2.fetch_add(
                u64::from(req.version() == http::Version::HTTP_2),
                Ordering::SeqCst,
            );
            seen.targets.lock().unwrap().push(format!(
                "{} {}",
                req.uri().authority().map_or("-", |a| a.as_str()),
                req.uri().path_and_query().map_or("-", |p| p.as_str())
            ));
            tokio::time::sleep(opts.delay).await;
            seen.open.fetch_sub(1, Ordering::SeqCst);
            // Counted before the response leaves, so the count is never behind the client.
            seen.requests.fetch_add(1, Ordering::SeqCst);
            let response = http::Response::builder().status(200).body(()).unwrap();
            if let Ok(mut body) = respond.send_response(response, false) {
                let _ = body.send_data(Bytes::from_static(b"hello\n"), true);
            }
        });
        if opts.requests_per_connection == Some(served) {
            conn.graceful_shutdown();
        }
    }
}

/// An HTTP/1.1 keep-alive server answering `ok` after `delay`.
fn h1_server(delay: Duration) -> Server {
    let rt = runtime();
    let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let s = seen.clone();
    rt.spawn(async move {
        loop {
            let Ok((mut tcp, _)) = listener.accept().await else {
                return;
            };
            s.connections.fetch_add(1, Ordering::SeqCst);
            let s = s.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        buf.drain(..end + 4);
                        let now = s.open.fetch_add(1, Ordering::SeqCst) + 1;
                        s.most_open.fetch_max(now, Ordering::SeqCst);
                        tokio::time::sleep(delay).await;
                        s.open.fetch_sub(1, Ordering::SeqCst);
                        s.requests.fetch_add(1, Ordering::SeqCst);
                        if tcp
                            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                    match tcp.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    Server {
        addr,
        seen,
        cert_pem: None,
        _rt: rt,
    }
}

/// `vus` VUs, `iterations` each, on `connections` shared connections.
fn config(
    url: &str,
    vus: u64,
    iterations: u64,
    connections: u64,
    http2: bool,
    threads: usize,
) -> EngineConfig {
    let mut load = LoadSpec::default();
    load.set("vus", &vus.to_string()).unwrap();
    load.set("iterations", &iterations.to_string()).unwrap();
    load.set("duration", "30s").unwrap();
    load.set("connections", &connections.to_string()).unwrap();
    let plan = Settings {
        load,
        ..Settings::default()
    }
    .plan(Work::Request(RequestSpec::get(url)))
    .unwrap();
    EngineConfig {
        plan,
        target: Target::resolve(url).unwrap(),
        tls: TlsOptions::default(),
        http2,
        interval: Duration::from_millis(500),
        threads,
        grace: Duration::from_secs(3),
        error_stop: false,
        start_at: None,
    }
}

/// Runs to the end and merges every interval.
fn run(config: EngineConfig) -> IntervalSample {
    let run = volley_engine::start(config).unwrap();
    let mut all = IntervalSample::new(0);
    while let Some(event) = run.next_event() {
        match event {
            Event::Interval { sample, .. } => all.merge(&sample),
            Event::PlanChanged(_) => {}
            Event::End(_) => break,
        }
    }
    all
}

/// A scenario's steps on shared HTTP/2 connections go out with their own path and the
/// target's authority, templated or not (they were once built for HTTP/1.1 alone there, and
/// went out as a bare `GET /` that a catch-all route answered 200: fast, and wrong).
#[test]
fn scenario_steps_on_shared_http2_connections_carry_their_path() {
    let server = h2_server(H2Options::default());
    let url = format!("http://{}", server.addr);
    let text = format!(
        "target: {url}\nsteps:\n  - request: GET /items/{{{{ vu }}}}?i={{{{ iteration }}}}\n  - request: GET /literal\n"
    );
    let scenario =
        volley_scenario::parse_scenario(std::path::Path::new("flow.yaml"), &text, &|_| None)
            .unwrap();
    let mut config = config(&url, 4, 5, 2, true, 1);
    config.plan.work = Work::Scenario(Arc::new(scenario));
    let all = run(config);
    assert_eq!(all.counts.errors, 0, "{:?}", all.counts.errors_by_kind);
    assert_eq!(all.counts.tests, 40, "4 VUs × 5 iterations × 2 steps");
    let mut targets = server.seen.targets.lock().unwrap().clone();
    targets.sort();
    let authority = server.addr.to_string();
    let mut want: Vec<String> = (0..4)
        .flat_map(|vu| (0..5).map(move |i| format!("/items/{vu}?i={i}")))
        .chain((0..20).map(|_| "/literal".to_string()))
        .map(|p| format!("{authority} {p}"))
        .collect();
    want.sort();
    assert_eq!(targets, want);
}

#[test]
fn http2_vus_share_the_given_connections_and_every_request_counts_once() {
    let server = h2_server(H2Options::default());
    let url = format!("http://{}/", server.addr);
    let all = run(config(&url, 12, 50, 3, true, 2));
    assert_eq!(all.counts.errors, 0, "{:?}", all.counts.errors_by_kind);
    assert_eq!(all.counts.tests, 600, "12 VUs × 50 iterations");
    assert_eq!(
        server.seen.requests.load(Ordering::SeqCst),
        600,
        "the server answered each once"
    );
    assert_eq!(server.seen.http2.load(Ordering::SeqCst), 600);
    assert_eq!(
        server.seen.connections.load(Ordering::SeqCst),
        3,
        "12 VUs on 3 connections"
    );
    assert!(
        server.seen.most_open.load(Ordering::SeqCst) > 3,
        "streams ran side by side on the shared connections"
    );
}

#[test]
fn http2_streams_never_exceed_the_servers_limit_and_the_wait_is_not_latency() {
    // One connection allowing 2 streams; 8 VUs; each answer takes 40 ms. A VU waits for
    // a stream about 3 answers long (120 ms), but its own request still takes ~40 ms.
    let server = h2_server(H2Options {
        max_streams: 2,
        delay: Duration::from_millis(40),
        ..H2Options::default()
    });
    let url = format!("http://{}/", server.addr);
    let all = run(config(&url, 8, 5, 1, true, 1));
    assert_eq!(
        all.counts.errors, 0,
        "no stream refused: {:?}",
        all.counts.errors_by_kind
    );
    assert_eq!(
        (
            all.counts.tests,
            server.seen.requests.load(Ordering::SeqCst)
        ),
        (40, 40)
    );
    // No stream opens before the server's SETTINGS say how many may: none refused, so no
    // second connection either.
    assert_eq!(server.seen.connections.load(Ordering::SeqCst), 1);
    assert_eq!(
        server.seen.most_open.load(Ordering::SeqCst),
        2,
        "SETTINGS_MAX_CONCURRENT_STREAMS respected"
    );
    let p50_ms = all.ttfb.value_at_percentile(50.0) as f64 / 1000.0;
    assert!(
        (40.0..100.0).contains(&p50_ms),
        "TTFB is the stream's own, not its wait: p50 {p50_ms} ms"
    );
    let wait_ms = all.counts.pool_wait_mean_ms();
    assert!(
        wait_ms > 40.0,
        "the wait for a stream is kept apart: mean {wait_ms} ms"
    );
}

#[test]
fn http2_over_tls_is_chosen_by_alpn_on_shared_connections() {
    let server = h2_server(H2Options {
        tls: true,
        ..H2Options::default()
    });
    let dir = std::env::temp_dir().join(format!("volley-h2-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, server.cert_pem.as_ref().unwrap()).unwrap();
    let url = format!("https://localhost:{}/", server.addr.port());
    let mut config = config(&url, 6, 20, 2, false, 1);
    config.tls = TlsOptions {
        insecure: false,
        cacert: Some(ca),
        http3: false,
    };
    let all = run(config);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(all.counts.errors, 0, "{:?}", all.counts.errors_by_kind);
    assert_eq!(
        (
            all.counts.tests,
            server.seen.requests.load(Ordering::SeqCst)
        ),
        (120, 120)
    );
    assert_eq!(
        server.seen.http2.load(Ordering::SeqCst),
        120,
        "every request went as HTTP/2"
    );
    assert_eq!(server.seen.connections.load(Ordering::SeqCst), 2);
    assert!(all.counts.tls_sum_us > 0, "the handshakes were timed");
}

#[test]
fn a_goaway_moves_the_streams_to_a_new_connection_without_losing_a_request() {
    // The server ends each connection after 25 requests, as nginx does at keepalive_requests.
    let server = h2_server(H2Options {
        requests_per_connection: Some(25),
        ..H2Options::default()
    });
    let url = format!("http://{}/", server.addr);
    let all = run(config(&url, 4, 50, 1, true, 1));
    assert_eq!(
        all.counts.errors, 0,
        "refused streams are sent again: {:?}",
        all.counts.errors_by_kind
    );
    assert_eq!(
        (
            all.counts.tests,
            server.seen.requests.load(Ordering::SeqCst)
        ),
        (200, 200)
    );
    let conns = server.seen.connections.load(Ordering::SeqCst);
    assert!(conns >= 8, "a new connection after each GOAWAY: {conns}");
    assert!(all.counts.reconnects > 0);
}

#[test]
fn http2_errors_are_counted_by_kind() {
    // A server that resets every stream: each request is one error of kind rst_stream.
    let rt = runtime();
    let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    rt.spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let Ok(mut conn) = h2::server::handshake(tcp).await else {
                    return;
                };
                while let Some(Ok((_, mut respond))) = conn.accept().await {
                    respond.send_reset(h2::Reason::INTERNAL_ERROR);
                }
            });
        }
    });
    let all = run(config(&format!("http://{addr}/"), 3, 10, 1, true, 1));
    assert_eq!(
        (all.counts.tests, all.counts.errors),
        (0, 30),
        "every request counted once, as an error"
    );
    assert_eq!(
        all.counts.errors_by_kind[ErrorKind::StreamReset.index()],
        30,
        "{:?}",
        all.counts.errors_by_kind
    );
}

#[test]
fn http1_vus_take_turns_on_a_pool_of_connections() {
    let server = h1_server(Duration::from_millis(5));
    let url = format!("http://{}/", server.addr);
    let all = run(config(&url, 10, 20, 3, false, 1));
    assert_eq!(all.counts.errors, 0, "{:?}", all.counts.errors_by_kind);
    assert_eq!(
        (
            all.counts.tests,
            server.seen.requests.load(Ordering::SeqCst)
        ),
        (200, 200)
    );
    assert_eq!(
        server.seen.connections.load(Ordering::SeqCst),
        3,
        "10 VUs on a pool of 3"
    );
    assert_eq!(
        server.seen.most_open.load(Ordering::SeqCst),
        3,
        "one request per connection at a time"
    );
    assert!(
        all.counts.pool_wait_mean_ms() > 1.0,
        "VUs waited for a turn: {} ms",
        all.counts.pool_wait_mean_ms()
    );
    let p50_ms = all.ttfb.value_at_percentile(50.0) as f64 / 1000.0;
    assert!(p50_ms < 15.0, "TTFB is the request's own: p50 {p50_ms} ms");
}

#[test]
fn without_connections_each_vu_keeps_its_own() {
    let server = h2_server(H2Options::default());
    let url = format!("http://{}/", server.addr);
    let mut config = config(&url, 5, 10, 1, true, 1);
    config.plan.load.connections = None;
    let all = run(config);
    assert_eq!((all.counts.tests, all.counts.errors), (50, 0));
    assert_eq!(server.seen.connections.load(Ordering::SeqCst), 5);
}
