//! HTTPS (rustls) and HTTP/2 against a hyper server the test starts on 127.0.0.1.

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response, Version};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use volley_formats::RunData;

use crate::support::*;

struct HyperServer {
    port: u16,
    requests: Arc<AtomicU64>,
    versions: Arc<Mutex<Vec<Version>>>,
    paths: Arc<Mutex<Vec<String>>>,
    cert_pem: String,
    _rt: tokio::runtime::Runtime,
}

/// Serves HTTP/1.1 and HTTP/2 (ALPN over TLS when `tls`, prior knowledge otherwise).
fn hyper_server(tls: bool) -> HyperServer {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert_pem = cert.cert.pem();
    let acceptor = tls.then(|| {
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into());
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .unwrap();
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        tokio_rustls::TlsAcceptor::from(Arc::new(config))
    });
    let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let port = listener.local_addr().unwrap().port();
    let requests = Arc::new(AtomicU64::new(0));
    let versions = Arc::new(Mutex::new(Vec::new()));
    let paths = Arc::new(Mutex::new(Vec::new()));
    let (r, v, p) = (requests.clone(), versions.clone(), paths.clone());
    rt.spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let (r, v, p, acceptor) = (r.clone(), v.clone(), p.clone(), acceptor.clone());
            tokio::spawn(async move {
                let svc = service_fn(move |req: Request<Incoming>| {
                    r.fetch_add(1, Ordering::SeqCst);
                    v.lock().unwrap().push(req.version());
                    p.lock().unwrap().push(req.uri().path().to_string());
                    async {
                        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(
                            b"hello\n",
                        ))))
                    }
                });
                let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                match acceptor {
                    Some(a) => {
                        if let Ok(stream) = a.accept(tcp).await {
                            let _ = builder.serve_connection(TokioIo::new(stream), svc).await;
                        }
                    }
                    None => {
                        let _ = builder.serve_connection(TokioIo::new(tcp), svc).await;
                    }
                }
            });
        }
    });
    HyperServer {
        port,
        requests,
        versions,
        paths,
        cert_pem,
        _rt: rt,
    }
}

fn run_and_check(server: &HyperServer, url: &str, extra: &[&str], want: Version) {
    let out = out_dir();
    let mut args = vec![
        "run",
        "--url",
        url,
        "--vus",
        "3",
        "--duration",
        "1s",
        "-o",
        out.path().to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = volley(&args);
    assert!(o.status.success(), "{}", text(&o));
    let run = RunData::read(&only_run(out.path())).unwrap();
    assert!(run.series.tests() > 10);
    assert_eq!(run.series.errors(), 0);
    assert_eq!(server.requests.load(Ordering::SeqCst), run.series.tests());
    assert!(
        server.versions.lock().unwrap().iter().all(|v| *v == want),
        "expected {want:?}"
    );
}

#[test]
fn https_with_cacert_negotiates_h2() {
    let _g = serial();
    let server = hyper_server(true);
    let dir = out_dir();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &server.cert_pem).unwrap();
    let url = format!("https://localhost:{}/", server.port);
    run_and_check(
        &server,
        &url,
        &["--cacert", ca.to_str().unwrap()],
        Version::HTTP_2,
    );
}

#[test]
fn https_insecure_accepts_a_self_signed_certificate() {
    let _g = serial();
    let server = hyper_server(true);
    run_and_check(
        &server,
        &format!("https://localhost:{}/", server.port),
        &["--insecure"],
        Version::HTTP_2,
    );
}

#[test]
fn https_with_an_unknown_issuer_fails_before_the_run() {
    let server = hyper_server(true);
    let out = out_dir();
    let url = format!("https://localhost:{}/", server.port);
    let o = volley(&[
        "run",
        "--url",
        &url,
        "--vus",
        "1",
        "--duration",
        "1s",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("tls") && err.contains("UnknownIssuer"),
        "{err}"
    );
    // The engine says what failed; the binary says which flags change it.
    assert!(
        err.contains("volley: hint: ") && err.contains("--cacert") && err.contains("--insecure"),
        "{err}"
    );
}

#[test]
fn http2_prior_knowledge_on_plain_http() {
    let _g = serial();
    let server = hyper_server(false);
    run_and_check(
        &server,
        &format!("http://127.0.0.1:{}/", server.port),
        &["--http2"],
        Version::HTTP_2,
    );
    let plain = hyper_server(false);
    run_and_check(
        &plain,
        &format!("http://127.0.0.1:{}/", plain.port),
        &[],
        Version::HTTP_11,
    );
}

#[test]
fn a_scenario_extracts_over_https_and_http2() {
    let _g = serial();
    let server = hyper_server(true);
    let dir = out_dir();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &server.cert_pem).unwrap();
    let file = dir.path().join("h2.yaml");
    let yaml = format!(
        "target: https://localhost:{}\nsteps:\n  - name: greet\n    request: GET /\n    extract:\n      word: {{ regex: '(h[a-z]+)' }}\n  - name: echo\n    request: GET /{{{{ word }}}}\n",
        server.port
    );
    std::fs::write(&file, yaml).unwrap();
    let o = volley(&[
        "check",
        file.to_str().unwrap(),
        "--cacert",
        ca.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        *server.paths.lock().unwrap(),
        ["/", "/hello"],
        "the word extracted from the HTTP/2 body went into the next path"
    );
    assert!(
        server
            .versions
            .lock()
            .unwrap()
            .iter()
            .all(|v| *v == Version::HTTP_2)
    );
}
