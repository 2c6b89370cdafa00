//! Every endpoint of the demo target against SQLite, over real sockets.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use volley_demo::{IdType, Knobs};

mod common;
use common::http;

fn json_of(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

async fn start(knobs: Knobs) -> volley_demo::Target {
    volley_demo::start("127.0.0.1:0".parse().unwrap(), &knobs)
        .await
        .unwrap()
}

/// The gauge `series` (a `/metrics` line's name and labels) once `ok` holds for it, looked at
/// every 5 ms for at most 5 s: the state a test needs, read from the target, not slept for.
async fn gauge_when(addr: std::net::SocketAddr, series: &str, ok: impl Fn(f64) -> bool) -> f64 {
    let end = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let (_, m) = http(addr, "GET", "/metrics", None).await;
        let v = m
            .lines()
            .find_map(|l| {
                l.strip_prefix(series)?
                    .strip_prefix(' ')?
                    .parse::<f64>()
                    .ok()
            })
            .unwrap_or_else(|| panic!("no {series} in /metrics:\n{m}"));
        if ok(v) {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < end,
            "{series} is still {v} after 5 s"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn chat_endpoints() {
    let t = start(Knobs {
        db_rtt: Duration::ZERO,
        ..Knobs::default()
    })
    .await;
    let (s, b) = http(t.addr, "GET", "/rooms", None).await;
    assert_eq!(s, 200);
    assert_eq!(json_of(&b).as_array().unwrap().len(), 20);
    let (s, b) = http(t.addr, "POST", "/rooms", Some(json!({"name": "new room"}))).await;
    assert_eq!(s, 201, "{b}");
    let room = json_of(&b)["id"].as_i64().unwrap();
    for i in 0..3 {
        let (s, b) = http(
            t.addr,
            "POST",
            "/api-chat/chat",
            Some(json!({"roomId": room, "userId": 1, "content": format!("hi {i}")})),
        )
        .await;
        assert_eq!(s, 201, "{b}");
    }
    let (s, b) = http(
        t.addr,
        "GET",
        &format!("/rooms/{room}/messages?size=2"),
        None,
    )
    .await;
    assert_eq!(s, 200);
    let page = json_of(&b);
    assert_eq!(page["messages"].as_array().unwrap().len(), 2);
    let (s, _) = http(
        t.addr,
        "POST",
        "/api-chat/chat",
        Some(json!({"roomId": 9999, "userId": 1, "content": "x"})),
    )
    .await;
    assert_eq!(s, 404);
    let (s, _) = http(
        t.addr,
        "POST",
        "/api-chat/chat",
        Some(json!({"roomId": room})),
    )
    .await;
    assert_eq!(s, 422, "missing fields are rejected");
    assert_eq!(t.db.count_messages().await.unwrap(), 3);
    t.stop().await.unwrap();
}

/// A path the target does not serve is a 404 naming it, not the gRPC router's 200.
#[tokio::test]
async fn an_unknown_path_is_not_found() {
    let t = start(Knobs::default()).await;
    let (s, b) = http(t.addr, "GET", "/roms", None).await;
    assert_eq!(s, 404, "{b}");
    assert!(b.contains("no such path: GET /roms"), "{b}");
    let (s, _) = http(t.addr, "GET", "/", None).await;
    assert_eq!(s, 404);
    let (s, _) = http(t.addr, "GET", "/rooms", None).await;
    assert_eq!(s, 200);
}

#[tokio::test]
async fn pair_room_flow() {
    let t = start(Knobs {
        db_rtt: Duration::ZERO,
        cache: true,
        ..Knobs::default()
    })
    .await;
    let (s, b) = http(
        t.addr,
        "POST",
        "/api/pair-room",
        Some(json!({"driver": "kim", "navigator": "lee"})),
    )
    .await;
    assert_eq!(s, 201, "{b}");
    let code = json_of(&b)["accessCode"].as_str().unwrap().to_string();
    let base = format!("/api/pair-room/{code}");
    let (s, b) = http(t.addr, "GET", &base, None).await;
    assert_eq!((s, json_of(&b)["driver"].as_str().unwrap()), (200, "kim"));
    assert_eq!(
        http(t.addr, "PATCH", &format!("{base}/swap"), None).await.0,
        204
    );
    let (_, b) = http(t.addr, "GET", &base, None).await;
    assert_eq!(
        json_of(&b)["driver"],
        "lee",
        "the cache is invalidated on change"
    );
    for i in 0..10 {
        assert_eq!(
            http(
                t.addr,
                "POST",
                &format!("{base}/todos"),
                Some(json!({"content": format!("todo {i}")}))
            )
            .await
            .0,
            201
        );
    }
    let (_, b) = http(t.addr, "GET", &format!("{base}/todos"), None).await;
    assert_eq!(json_of(&b).as_array().unwrap().len(), 10);
    assert_eq!(
        http(
            t.addr,
            "POST",
            &format!("{base}/category"),
            Some(json!({"name": "docs"}))
        )
        .await
        .0,
        201
    );
    let (_, b) = http(t.addr, "GET", &format!("{base}/category"), None).await;
    assert_eq!(json_of(&b)[0]["name"], "docs");
    assert_eq!(
        http(
            t.addr,
            "POST",
            &format!("{base}/reference-link"),
            Some(json!({"url": "https://example.org", "category": "docs"}))
        )
        .await
        .0,
        201
    );
    let (_, b) = http(t.addr, "GET", &format!("{base}/reference-link"), None).await;
    assert_eq!(json_of(&b)[0]["url"], "https://example.org");
    assert_eq!(
        http(t.addr, "PATCH", &format!("{base}/timer/start"), None)
            .await
            .0,
        204
    );
    let (_, b) = http(t.addr, "GET", &format!("{base}/timer"), None).await;
    assert_eq!(json_of(&b)["running"], true);
    assert_eq!(
        http(t.addr, "PATCH", &format!("{base}/timer/stop"), None)
            .await
            .0,
        204
    );
    let (_, b) = http(t.addr, "GET", &format!("{base}/timer"), None).await;
    assert_eq!(json_of(&b)["running"], false);
    assert_eq!(
        http(
            t.addr,
            "PATCH",
            &format!("{base}/status"),
            Some(json!({"status": "COMPLETED"}))
        )
        .await
        .0,
        204
    );
    assert_eq!(
        http(
            t.addr,
            "PATCH",
            &format!("{base}/status"),
            Some(json!({"status": "NOPE"}))
        )
        .await
        .0,
        400
    );
    assert_eq!(
        http(t.addr, "GET", "/api/pair-room/NOSUCH", None).await.0,
        404
    );
    t.stop().await.unwrap();
}

#[tokio::test]
async fn sse_stream_announces_changes() {
    let t = start(Knobs {
        db_rtt: Duration::ZERO,
        ..Knobs::default()
    })
    .await;
    let (_, b) = http(
        t.addr,
        "POST",
        "/api/pair-room",
        Some(json!({"driver": "a", "navigator": "b"})),
    )
    .await;
    let code = json_of(&b)["accessCode"].as_str().unwrap().to_string();
    let mut s = tokio::net::TcpStream::connect(t.addr).await.unwrap();
    s.write_all(
        format!("GET /api/pair-room/{code}/connect HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    while !seen.contains("event: connect") {
        let n = s.read(&mut buf).await.unwrap();
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    http(
        t.addr,
        "POST",
        &format!("/api/pair-room/{code}/todos"),
        Some(json!({"content": "x"})),
    )
    .await;
    tokio::time::timeout(Duration::from_secs(5), async {
        while !seen.contains("event: todo") {
            let n = s.read(&mut buf).await.unwrap();
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    })
    .await
    .expect("the todo event arrives");
    t.stop().await.unwrap();
}

#[tokio::test]
async fn metrics_show_the_pool_and_requests() {
    let t = start(Knobs {
        db_rtt: Duration::ZERO,
        ..Knobs::default()
    })
    .await;
    http(t.addr, "GET", "/api/pair-room/NOSUCH", None).await;
    let (s, b) = http(t.addr, "GET", "/metrics", None).await;
    assert_eq!(s, 200);
    assert!(
        b.contains("hikaricp_connections_max{pool=\"HikariPool-1\",} 10"),
        "{b}"
    );
    assert!(b.contains("uri=\"/api/pair-room/{code}\""), "{b}");
    assert!(b.contains("http_server_requests_seconds_count{exception=\"None\",method=\"GET\",outcome=\"CLIENT_ERROR\",status=\"404\""), "{b}");
    assert!(b.contains("process_cpu_usage"));
    t.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_pending_rises_when_requests_outnumber_connections() {
    let t = start(Knobs {
        db_pool: 2,
        db_rtt: Duration::from_millis(50),
        ..Knobs::default()
    })
    .await;
    let addr = t.addr;
    let load: Vec<_> = (0..20)
        .map(|_| tokio::spawn(async move { http(addr, "GET", "/rooms", None).await.0 }))
        .collect();
    // 20 requests on 2 connections: at least 10 wait for one, while the load lasts.
    gauge_when(
        addr,
        "hikaricp_connections_pending{pool=\"HikariPool-1\",}",
        |pending| pending >= 10.0,
    )
    .await;
    for l in load {
        assert_eq!(l.await.unwrap(), 200);
    }
    t.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_timeout_fails_the_request_like_hikari() {
    let t = start(Knobs {
        db_pool: 1,
        db_rtt: Duration::from_millis(300),
        db_timeout: Duration::from_millis(50),
        ..Knobs::default()
    })
    .await;
    let addr = t.addr;
    let a = tokio::spawn(async move { http(addr, "GET", "/rooms", None).await });
    // Once the first request holds the only connection (for 300 ms).
    gauge_when(
        addr,
        "hikaricp_connections_active{pool=\"HikariPool-1\",}",
        |v| v == 1.0,
    )
    .await;
    let (s, b) = http(addr, "GET", "/rooms", None).await;
    assert_eq!(s, 500);
    assert!(
        b.contains("Connection is not available, request timed out after 50ms"),
        "{b}"
    );
    assert_eq!(a.await.unwrap().0, 200);
    t.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_message_is_stored_with_either_key_type() {
    for id_type in [IdType::Sequential, IdType::Random] {
        let t = start(Knobs {
            db_pool: 4,
            db_rtt: Duration::ZERO,
            id_type,
            ..Knobs::default()
        })
        .await;
        let addr = t.addr;
        let tasks: Vec<_> = (0..8)
            .map(|u| {
                tokio::spawn(async move {
                    let mut ok = 0;
                    for i in 0..25 {
                        let body = json!({"roomId": 1 + (i % 20), "userId": u + 1, "content": format!("m{u}-{i}")});
                        if http(addr, "POST", "/api-chat/chat", Some(body)).await.0 == 201 {
                            ok += 1;
                        }
                    }
                    ok
                })
            })
            .collect();
        let mut acknowledged = 0;
        for t in tasks {
            acknowledged += t.await.unwrap();
        }
        let db = t.db.clone();
        t.stop().await.unwrap();
        assert_eq!(acknowledged, 200);
        assert_eq!(
            db.count_messages().await.unwrap(),
            acknowledged,
            "{id_type:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_limit_queues_then_refuses() {
    let t = start(Knobs {
        max_threads: 1,
        accept_count: 1,
        db_rtt: Duration::from_millis(200),
        ..Knobs::default()
    })
    .await;
    let addr = t.addr;
    let busy = "tomcat_threads_busy_threads{name=\"http-nio-8080\",}";
    let first = tokio::spawn(async move { http(addr, "GET", "/rooms", None).await.0 });
    gauge_when(addr, busy, |v| v == 1.0).await;
    let second = tokio::spawn(async move { http(addr, "GET", "/rooms", None).await.0 });
    gauge_when(addr, "volley_demo_accept_queue_waiting{}", |v| v == 1.0).await;
    let third = http(addr, "GET", "/rooms", None).await.0;
    assert_eq!(third, 503, "one running, one queued, the third is refused");
    assert_eq!(first.await.unwrap(), 200);
    assert_eq!(second.await.unwrap(), 200);
    t.stop().await.unwrap();
}

/// A client that gives up while its request waits for a worker (a proxy's timeout, a closed
/// connection) leaves the queue: hyper drops the request, and the queue's count must drop with
/// it. It used to stay counted, so every abandoned wait shrank the accept queue for good, and a
/// pod ended up refusing with 503 while idle (issue 54's acceptance saw such a stall).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_abandoned_while_queued_or_running_leaves_the_counts() {
    let t = start(Knobs {
        max_threads: 1,
        accept_count: 1,
        db_rtt: Duration::from_millis(300),
        ..Knobs::default()
    })
    .await;
    let addr = t.addr;
    let busy = "tomcat_threads_busy_threads{name=\"http-nio-8080\",}";
    let queued = "volley_demo_accept_queue_waiting{}";
    let raw = b"GET /rooms HTTP/1.1\r\nhost: x\r\n\r\n";
    // One running and one queued, both on connections this test closes.
    let mut running = tokio::net::TcpStream::connect(addr).await.unwrap();
    running.write_all(raw).await.unwrap();
    gauge_when(addr, busy, |v| v == 1.0).await;
    let mut waiting = tokio::net::TcpStream::connect(addr).await.unwrap();
    waiting.write_all(raw).await.unwrap();
    gauge_when(addr, queued, |v| v == 1.0).await;
    drop(waiting);
    gauge_when(addr, queued, |v| v == 0.0).await;
    drop(running);
    gauge_when(addr, busy, |v| v == 0.0).await;
    // The queue holds one again: one running, one queued, the third refused.
    let first = tokio::spawn(async move { http(addr, "GET", "/rooms", None).await.0 });
    gauge_when(addr, busy, |v| v == 1.0).await;
    let second = tokio::spawn(async move { http(addr, "GET", "/rooms", None).await.0 });
    gauge_when(addr, queued, |v| v == 1.0).await;
    assert_eq!(http(addr, "GET", "/rooms", None).await.0, 503);
    assert_eq!(first.await.unwrap(), 200);
    assert_eq!(second.await.unwrap(), 200);
    t.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_connections_holds_new_connections_until_one_closes() {
    let t = start(Knobs {
        max_connections: 1,
        db_rtt: Duration::ZERO,
        ..Knobs::default()
    })
    .await;
    // One idle keep-alive connection takes the only slot.
    let mut first = tokio::net::TcpStream::connect(t.addr).await.unwrap();
    first
        .write_all(b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 256];
    let n = first.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    let addr = t.addr;
    let second = tokio::spawn(async move { http(addr, "GET", "/health", None).await.0 });
    // 300 ms in which the second must not be served: the window under test, not a state.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !second.is_finished(),
        "a second connection is served while the first holds the only slot"
    );
    drop(first);
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(5), second)
            .await
            .unwrap()
            .unwrap(),
        200
    );
    t.stop().await.unwrap();
}
