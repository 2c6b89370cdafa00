//! The HTTP/3 client against a loopback HTTP/3 server (quinn + h3, a self-signed
//! certificate): one kept connection for every request, the body and headers read, a stream
//! the server resets counted as `rst_stream` with its code, and a silent port bounded by the
//! request's timeout.

use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use volley_stats::ErrorKind;

use crate::client::{BufferPool, Capture, Client, PreparedRequest};
use crate::connection::Speaks;
use crate::target::Target;
use crate::tls::TlsOptions;

/// A loopback HTTP/3 server: `/reset` resets its stream with H3_REQUEST_CANCELLED, any
/// other path answers 200 `hello h3` with `x-proto: h3`. Counts the connections it accepts.
struct Server {
    addr: std::net::SocketAddr,
    cert: std::path::PathBuf,
    connections: Arc<AtomicUsize>,
}

fn serve() -> Server {
    let made =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let cert = std::env::temp_dir().join(format!(
        "volley-h3-test-{}-{}.pem",
        std::process::id(),
        fastrand::u64(..)
    ));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(made.signing_key.serialize_der().into());
    let mut tls = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS13])
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![made.cert.der().clone()], key)
    .unwrap();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let config = quinn::ServerConfig::with_crypto(Arc::new(
        quinn::crypto::rustls::QuicServerConfig::try_from(tls).unwrap(),
    ));
    let endpoint = quinn::Endpoint::server(config, "127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = endpoint.local_addr().unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let count = connections.clone();
    tokio::spawn(async move {
        while let Some(incoming) = endpoint.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let conn = incoming.await.unwrap();
                let mut h3 =
                    h3::server::Connection::<_, Bytes>::new(h3_quinn::Connection::new(conn))
                        .await
                        .unwrap();
                while let Ok(Some(resolver)) = h3.accept().await {
                    tokio::spawn(async move {
                        let (req, mut stream) = resolver.resolve_request().await.unwrap();
                        while stream.recv_data().await.unwrap().is_some() {}
                        if req.uri().path() == "/reset" {
                            stream.stop_stream(h3::error::Code::H3_REQUEST_CANCELLED);
                            return;
                        }
                        let resp = http::Response::builder()
                            .status(200)
                            .header("x-proto", "h3")
                            .body(())
                            .unwrap();
                        stream.send_response(resp).await.unwrap();
                        stream
                            .send_data(Bytes::from_static(b"hello h3"))
                            .await
                            .unwrap();
                        stream.finish().await.unwrap();
                    });
                }
            });
        }
    });
    Server {
        addr,
        cert,
        connections,
    }
}

/// Runs `test` on a current-thread runtime in a local set (as a worker runs), bounded to 10 s.
fn run<F: Future<Output = ()>>(test: impl FnOnce() -> F) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tokio::task::LocalSet::new().block_on(&rt, async {
        tokio::time::timeout(Duration::from_secs(10), test())
            .await
            .expect("the test took over 10 s")
    });
}

fn client(url: &str, cacert: Option<std::path::PathBuf>) -> (Client, Rc<Target>) {
    let target = Rc::new(Target::resolve(url).unwrap());
    let tls = TlsOptions {
        insecure: cacert.is_none(),
        cacert,
        http3: true,
    }
    .client_config(false)
    .unwrap();
    assert!(super::offered(tls.as_ref()));
    (Client::new(target.clone(), tls, false), target)
}

fn get(target: &Target, path: &str) -> PreparedRequest {
    let spec = volley_scenario::RequestSpec {
        method: "GET".into(),
        url: format!("https://{}{path}", target.authority),
        headers: Vec::new(),
        body: Vec::new(),
    };
    let target = Target::resolve(&spec.url).unwrap();
    PreparedRequest::new(&target, Speaks::Http3, &spec).unwrap()
}

const TIMEOUT: Duration = Duration::from_secs(5);

#[test]
fn every_request_goes_on_one_kept_connection_and_is_read_whole() {
    run(|| async {
        let server = serve();
        let (mut client, target) = client(
            &format!("https://{}/", server.addr),
            Some(server.cert.clone()),
        );
        assert_eq!(client.speaks(), Speaks::Http3);
        let req = get(&target, "/hello");
        let buffers = BufferPool::default();
        for i in 0..5 {
            let ex = client.send(&req, TIMEOUT, &buffers).await.unwrap();
            assert_eq!((ex.status, ex.bytes), (200, 8), "request {i}");
            assert!(!ex.reconnected);
            assert!(ex.ttfb_us <= ex.total_us);
            // The handshake is counted in the first request only.
            assert_eq!(ex.connect_us > 0, i == 0, "request {i}: {}", ex.connect_us);
        }
        let mut capture = Capture::new(true);
        let ex = client
            .send_capture(&req, TIMEOUT, &buffers, Some(&mut capture))
            .await
            .unwrap();
        assert_eq!(ex.status, 200);
        assert_eq!(capture.body, b"hello h3");
        assert!(
            capture
                .headers
                .iter()
                .any(|(n, v)| n == "x-proto" && v == "h3"),
            "{:?}",
            capture.headers
        );
        assert_eq!(server.connections.load(Ordering::SeqCst), 1);
        let _ = std::fs::remove_file(&server.cert);
    });
}

#[test]
fn a_stream_the_server_resets_is_rst_stream_with_its_code() {
    run(|| async {
        let server = serve();
        let (mut client, target) = client(
            &format!("https://{}/", server.addr),
            Some(server.cert.clone()),
        );
        let buffers = BufferPool::default();
        let failure = client
            .send(&get(&target, "/reset"), TIMEOUT, &buffers)
            .await
            .unwrap_err();
        assert_eq!(failure.kind, ErrorKind::StreamReset, "{}", failure.message);
        assert!(
            failure.message.contains("H3_REQUEST_CANCELLED (0x10c)"),
            "{}",
            failure.message
        );
        // The next request opens a new connection and goes through.
        let ex = client
            .send(&get(&target, "/"), TIMEOUT, &buffers)
            .await
            .unwrap();
        assert_eq!(ex.status, 200);
        let _ = std::fs::remove_file(&server.cert);
    });
}

#[test]
fn an_untrusted_certificate_is_a_tls_error() {
    run(|| async {
        let server = serve();
        // No --cacert and not --insecure: the system's roots do not know the test's CA.
        let target = Rc::new(Target::resolve(&format!("https://{}/", server.addr)).unwrap());
        let tls = TlsOptions {
            http3: true,
            ..TlsOptions::default()
        }
        .client_config(false)
        .unwrap();
        let mut client = Client::new(target.clone(), tls, false);
        let failure = client
            .send(&get(&target, "/"), TIMEOUT, &BufferPool::default())
            .await
            .unwrap_err();
        assert_eq!(failure.kind, ErrorKind::Tls, "{}", failure.message);
        assert!(
            failure.message.contains("UnknownIssuer"),
            "{}",
            failure.message
        );
        let _ = std::fs::remove_file(&server.cert);
    });
}

#[test]
fn a_silent_port_ends_at_the_request_timeout() {
    run(|| async {
        let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let (mut client, target) =
            client(&format!("https://{}/", silent.local_addr().unwrap()), None);
        let timeout = Duration::from_millis(300);
        let started = Instant::now();
        let failure = client
            .send(&get(&target, "/"), timeout, &BufferPool::default())
            .await
            .unwrap_err();
        let took = started.elapsed();
        assert_eq!(failure.kind, ErrorKind::Timeout, "{}", failure.message);
        assert!(took >= timeout && took < Duration::from_secs(2), "{took:?}");
    });
}
