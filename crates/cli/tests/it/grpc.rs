//! `grpc:` steps against the demo target's gRPC chat service (crates/demo/proto/chat.proto)
//! over real sockets: unary and server-streaming calls, extract and check, a status code
//! counted as its error kind, server reflection instead of a .proto file, TLS with ALPN h2,
//! shared HTTP/2 connections, and bad input refused with exit code 2.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use volley_formats::RunData;

use crate::support::*;

/// The demo target on 127.0.0.1, reached through a proxy the test starts in front of it that
/// counts the TCP connections it accepts and, with `tls`, terminates TLS (ALPN h2) — the
/// target itself speaks HTTP/1.1 and h2c.
struct Demo {
    port: u16,
    direct: u16,
    accepted: Arc<AtomicU64>,
    db: Arc<volley_demo::Db>,
    cert_pem: Option<String>,
    _rt: tokio::runtime::Runtime,
}

impl Demo {
    fn start(tls: bool) -> Demo {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let knobs = volley_demo::Knobs {
            db_rtt: std::time::Duration::ZERO,
            ..volley_demo::Knobs::default()
        };
        let target = rt
            .block_on(volley_demo::start("127.0.0.1:0".parse().unwrap(), &knobs))
            .unwrap();
        let (direct, db) = (target.addr, target.db.clone());
        std::mem::forget(target);
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let cert_pem = tls.then(|| cert.cert.pem());
        let acceptor = tls.then(|| {
            let key =
                rustls::pki_types::PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into());
            let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.cert.der().clone()], key)
            .unwrap();
            config.alpn_protocols = vec![b"h2".to_vec()];
            tokio_rustls::TlsAcceptor::from(Arc::new(config))
        });
        let accepted = Arc::new(AtomicU64::new(0));
        let count = accepted.clone();
        rt.spawn(async move {
            loop {
                let Ok((mut tcp, _)) = listener.accept().await else {
                    return;
                };
                count.fetch_add(1, Ordering::SeqCst);
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(mut upstream) = tokio::net::TcpStream::connect(direct).await else {
                        return;
                    };
                    match acceptor {
                        Some(a) => {
                            if let Ok(mut s) = a.accept(tcp).await {
                                let _ = tokio::io::copy_bidirectional(&mut s, &mut upstream).await;
                            }
                        }
                        None => {
                            let _ = tokio::io::copy_bidirectional(&mut tcp, &mut upstream).await;
                        }
                    }
                });
            }
        });
        Demo {
            port,
            direct: direct.port(),
            accepted,
            db,
            cert_pem,
            _rt: rt,
        }
    }

    fn url(&self) -> String {
        match self.cert_pem {
            Some(_) => format!("https://localhost:{}", self.port),
            None => format!("http://127.0.0.1:{}", self.port),
        }
    }

    fn count(&self, sql: &str) -> i64 {
        self._rt.block_on(self.db.query(sql, vec![])).unwrap()[0][0].int()
    }

    /// `/metrics`, over HTTP/1.1 (plain targets only).
    fn metrics(&self) -> String {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.direct)).unwrap();
        write!(
            s,
            "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }
}

fn proto() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../demo/proto/chat.proto")
        .canonicalize()
        .unwrap()
}

/// Writes `body` as a scenario file (with the demo's .proto copied beside it) and returns its path.
fn scenario(dir: &Path, target: &str, body: &str) -> PathBuf {
    std::fs::copy(proto(), dir.join("chat.proto")).unwrap();
    let path = dir.join("grpc.yaml");
    std::fs::write(&path, format!("target: {target}\nsteps:\n{body}")).unwrap();
    path
}

fn step<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["per_test"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no step {name}: {report}"))
}

fn metric(text: &str, starts: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(starts))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no `{starts}` in\n{text}"))
}

const FLOW: &str = r#"
  - name: create room
    grpc: volley.chat.v1.Chat/CreateRoom
    proto: chat.proto
    message: { name: "grpc room {{ vu }}" }
    extract: { room: $.id }
    check: { json: { "$.name": "grpc room {{ vu }}" } }
    headers: { x-trace: "vu-{{ vu }}" }
  - name: post
    grpc: volley.chat.v1.Chat/PostMessage
    proto: chat.proto
    message: { room_id: "{{ room }}", userId: "{{ vu }}", content: "hi {{ iteration }}" }
    check: { json: { "$.roomId": "{{ room }}" } }
    repeat: 3
  - name: list
    grpc: volley.chat.v1.Chat/ListMessages
    proto: chat.proto
    message: { room_id: "{{ room }}" }
    check: { exists: [ "$.messages[2].content" ] }
    extract: { newest: "$.messages[0].content" }
  - name: stream
    grpc: volley.chat.v1.Chat/StreamMessages
    proto: chat.proto
    message: { room_id: "{{ room }}", recent: 3 }
    messages: 3
    timeout: 5s
  - name: no such room
    grpc: volley.chat.v1.Chat/PostMessage
    proto: chat.proto
    message: { room_id: 987654321, user_id: 1, content: "lost" }
"#;

#[test]
fn unary_and_streaming_calls_extract_check_and_count_status_codes_as_kinds() {
    let _g = serial();
    let demo = Demo::start(false);
    let dir = out_dir();
    let file = scenario(dir.path(), &demo.url(), FLOW);
    let rooms_before = demo.count("SELECT count(*) FROM rooms");
    let out = out_dir();
    let o = volley(&[
        "run",
        file.to_str().unwrap(),
        "--vus",
        "2",
        "--iterations",
        "3",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    let run = only_run(out.path());
    let report = report_json(&run);
    // The only errors are the unknown room's, so thresholds-free exit 0.
    assert!(o.status.success(), "{}\n{report}", text(&o));
    // 2 VUs × 3 iterations, every call answered: exactly what the server stored.
    assert_eq!(demo.count("SELECT count(*) FROM rooms") - rooms_before, 6);
    assert_eq!(demo.count("SELECT count(*) FROM messages_seq"), 18);
    for (name, tests) in [("create room", 6), ("post", 18), ("list", 6), ("stream", 6)] {
        let s = &step(&report, name)["seed_suite"];
        assert_eq!(
            (s["total_tests"].as_u64(), s["errors"].as_u64()),
            (Some(tests), Some(0)),
            "{name}: {s}"
        );
    }
    assert_eq!(step(&report, "create room")["kind"], "grpc");
    let lost = &step(&report, "no such room")["seed_suite"];
    assert_eq!(
        (lost["total_tests"].as_u64(), lost["errors"].as_u64()),
        (Some(6), Some(6)),
        "{lost}"
    );
    let kinds: Vec<(String, u64)> = report["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap().to_string(),
                e["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(kinds, vec![("grpc_not_found".to_string(), 6)], "{report}");
    // The note says what gRPC times hold (docs/grpc.md), not the HTTP rule.
    let notes = report["notes"].to_string();
    assert!(
        notes.contains("TTFB and MTTFB are measured from each gRPC call's start; connection set-up is not included, except in the first call on each connection (connections are opened on first use, then reused).")
            && !notes.contains("connection set-up included"),
        "{notes}"
    );
    let data = RunData::read(&run).unwrap();
    let stream_id = data
        .steps
        .iter()
        .position(|(name, _)| name == "stream")
        .unwrap();
    assert_eq!(
        data.step_events[stream_id].iter().sum::<u64>(),
        18,
        "3 messages per stream"
    );
    // The server counted the same calls, by status code, in its Micrometer-named series.
    let m = demo.metrics();
    let ok = r#"grpc_server_processing_duration_seconds_count{method="PostMessage",methodType="UNARY",service="volley.chat.v1.Chat",statusCode="OK",}"#;
    let nf = r#"grpc_server_processing_duration_seconds_count{method="PostMessage",methodType="UNARY",service="volley.chat.v1.Chat",statusCode="NOT_FOUND",}"#;
    assert_eq!((metric(&m, ok), metric(&m, nf)), (18.0, 6.0));
    assert!(
        !m.contains("uri=\"/volley.chat.v1.Chat"),
        "gRPC calls are not HTTP server requests"
    );
}

#[test]
fn reflection_describes_the_service_and_check_traces_the_calls() {
    let _g = serial();
    let demo = Demo::start(false);
    let dir = out_dir();
    let body = FLOW.replace("    proto: chat.proto\n", "");
    let file = scenario(dir.path(), &demo.url(), &body);
    let o = volley(&["check", file.to_str().unwrap()]);
    let t = text(&o);
    // `volley check` runs one iteration; the unknown room fails it (exit 1) and says why.
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("gRPC volley.chat.v1.Chat/CreateRoom (by reflection)"),
        "{t}"
    );
    assert!(
        t.contains("gRPC volley.chat.v1.Chat/StreamMessages (by reflection)"),
        "{t}"
    );
    assert!(t.contains("OK: 3 messages"), "{t}");
    assert!(t.contains("NotFound: room 987654321 not found"), "{t}");
    assert!(t.contains("x-trace: vu-0"), "metadata sent as headers: {t}");
    let out = out_dir();
    let o = volley(&[
        "run",
        file.to_str().unwrap(),
        "--vus",
        "1",
        "--iterations",
        "2",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let report = report_json(&only_run(out.path()));
    assert_eq!(step(&report, "post")["seed_suite"]["total_tests"], 6);
    assert_eq!(step(&report, "post")["seed_suite"]["errors"], 0);
}

#[test]
fn tls_with_alpn_h2_and_shared_connections() {
    let _g = serial();
    let demo = Demo::start(true);
    let dir = out_dir();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, demo.cert_pem.as_ref().unwrap()).unwrap();
    let body = r#"
  - name: create room
    grpc: volley.chat.v1.Chat/CreateRoom
    message: { name: "tls room" }
    connections: 1
"#;
    let file = scenario(dir.path(), &demo.url(), body);
    let out = out_dir();
    let args = [
        "run",
        file.to_str().unwrap(),
        "--vus",
        "4",
        "--iterations",
        "5",
        "--threads",
        "1",
        "--cacert",
        ca.to_str().unwrap(),
        "-o",
        out.path().to_str().unwrap(),
    ];
    let o = volley(&args);
    assert!(o.status.success(), "{}", text(&o));
    let report = report_json(&only_run(out.path()));
    assert_eq!(
        step(&report, "create room")["seed_suite"]["total_tests"],
        20
    );
    assert_eq!(step(&report, "create room")["seed_suite"]["errors"], 0);
    // The pre-flight check, reflection, and one HTTP/2 connection the four VUs share.
    assert_eq!(demo.accepted.load(Ordering::SeqCst), 3);
    // Without `connections`, each VU has its own.
    std::fs::write(
        &file,
        std::fs::read_to_string(&file)
            .unwrap()
            .replace("    connections: 1\n", ""),
    )
    .unwrap();
    let out = out_dir();
    let mut args = args.to_vec();
    let o_path = out.path().to_str().unwrap().to_string();
    *args.last_mut().unwrap() = &o_path;
    let o = volley(&args);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(demo.accepted.load(Ordering::SeqCst), 3 + 2 + 4);
    // The run's --connections is taken when no step names a number.
    let out = out_dir();
    let o_path = out.path().to_str().unwrap().to_string();
    *args.last_mut().unwrap() = &o_path;
    let mut with_run_connections = args.clone();
    with_run_connections.extend(["--connections", "1"]);
    let o = volley(&with_run_connections);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        step(&report_json(&only_run(out.path())), "create room")["seed_suite"]["total_tests"],
        20
    );
    assert_eq!(demo.accepted.load(Ordering::SeqCst), 3 + 2 + 4 + 2 + 1);
    // An untrusted certificate fails before any load, as for HTTP.
    let o = volley(&[
        "run",
        file.to_str().unwrap(),
        "--vus",
        "1",
        "--iterations",
        "1",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn bad_input_exits_2_saying_what_to_write() {
    let _g = serial();
    let demo = Demo::start(false);
    let dir = out_dir();
    let cases = [
        (
            "grpc: volley.chat.v1.Chats/CreateRoom\n    proto: chat.proto",
            "chat.proto has no service `volley.chat.v1.Chats`; did you mean `volley.chat.v1.Chat`?",
        ),
        (
            "grpc: volley.chat.v1.Chat/CreateRom\n    proto: chat.proto",
            "has no method `CreateRom`; did you mean `CreateRoom`?",
        ),
        (
            "grpc: volley.chat.v1.Chat/CreateRoom\n    proto: chat.proto\n    message: { title: x }",
            "message `volley.chat.v1.CreateRoomRequest` has no field `title`",
        ),
        (
            "grpc: volley.chat.v1.Chat/CreateRoom\n    proto: missing.proto",
            "`missing.proto` is not a file",
        ),
        (
            "grpc: volley.chat.v1.Chat/CreateRoom\n    proto: chat.proto\n    check: { status: 200 }",
            "`check.status` is an HTTP status",
        ),
        (
            "grpc: CreateRoom",
            "should be a service and a method, like `grpc: volley.chat.v1.Chat/CreateRoom`",
        ),
        // By reflection: found only when the run starts, refused before any load.
        (
            "grpc: volley.chat.v1.Chats/CreateRoom",
            "the server has no service `volley.chat.v1.Chats` (asked by reflection); it offers volley.chat.v1.Chat",
        ),
        (
            "grpc: volley.chat.v1.Chat/CreateRoom\n    message: { title: x }",
            "has no field `title`",
        ),
    ];
    for (step, want) in cases {
        let file = scenario(dir.path(), &demo.url(), &format!("  - {step}\n"));
        let out = out_dir();
        let o = volley(&[
            "run",
            file.to_str().unwrap(),
            "--vus",
            "1",
            "--iterations",
            "1",
            "-o",
            out.path().to_str().unwrap(),
        ]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{step}: {t}");
        assert!(t.contains(want), "{step}: expected `{want}` in {t}");
    }
    // A server without reflection, and no .proto: say to give one (the scenario test
    // server speaks plain HTTP only: it answers the reflection call with no gRPC at all).
    let plain = crate::scenario_server::ScenarioServer::start();
    let file = scenario(
        dir.path(),
        &plain.url(),
        "  - grpc: volley.chat.v1.Chat/CreateRoom\n",
    );
    let o = volley(&["check", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("reflection"), "{}", text(&o));
}
