//! The knobs the cluster story needs (issue 54 §3): CPU work per request, and a `/health` that
//! shares the request workers, over real sockets.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use volley_demo::Knobs;

mod common;
use common::http;

const BUSY: &str = "tomcat_threads_busy_threads{name=\"http-nio-8080\",}";

async fn start(knobs: Knobs) -> volley_demo::Target {
    volley_demo::start("127.0.0.1:0".parse().unwrap(), &knobs)
        .await
        .unwrap()
}

/// The busy-workers gauge once it reads `want`.
async fn busy_is(addr: SocketAddr, want: f64) {
    gauge_is(addr, BUSY, want).await
}

/// The gauge `series` once it reads `want`, looked at every 5 ms for at most 5 s: the state a
/// test needs, read from the target, not slept for.
async fn gauge_is(addr: SocketAddr, series: &str, want: f64) {
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let (_, m) = http(addr, "GET", "/metrics", None).await;
        let v = m
            .lines()
            .find_map(|l| l.strip_prefix(series)?.trim().parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no {series} in /metrics:\n{m}"));
        if v == want {
            return;
        }
        assert!(Instant::now() < end, "{series} still {v}, not {want}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The accept-queue gauge once it reads `want`.
async fn queued_is(addr: SocketAddr, want: f64) {
    gauge_is(addr, "volley_demo_accept_queue_waiting{}", want).await
}

/// utime + stime of this test process (all threads), from /proc/self/stat in 10 ms ticks.
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let f: Vec<u64> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .skip(11)
        .take(2)
        .map(|v| v.parse().unwrap())
        .collect();
    Duration::from_millis((f[0] + f[1]) * 10)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cpu_work_is_spent_on_the_cpu_and_holds_the_worker() {
    let t = start(Knobs {
        max_threads: 1,
        cpu_work: Duration::from_millis(60),
        db_rtt: Duration::ZERO,
        ..Knobs::default()
    })
    .await;
    let addr = t.addr;
    let (cpu, wall) = (process_cpu(), Instant::now());
    let requests: Vec<_> = (0..4)
        .map(|_| tokio::spawn(async move { http(addr, "GET", "/rooms", None).await.0 }))
        .collect();
    for r in requests {
        assert_eq!(r.await.unwrap(), 200);
    }
    let (cpu, wall) = (process_cpu() - cpu, wall.elapsed());
    // One worker: the four requests' 240 ms of CPU one after another, each on the CPU (a
    // sleep would leave the process's CPU time where it was); 20 ms for the clock's ticks.
    assert!(wall >= Duration::from_millis(240), "{wall:?}");
    assert!(
        cpu >= Duration::from_millis(220),
        "{cpu:?} of CPU in {wall:?}"
    );
    // The probe is not held by the CPU work when it does not share the workers.
    let slow = tokio::spawn(async move { http(addr, "GET", "/rooms", None).await.0 });
    busy_is(addr, 1.0).await;
    assert_eq!(http(addr, "GET", "/health", None).await, (200, "ok".into()));
    assert_eq!(slow.await.unwrap(), 200);
    t.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_health_check_sharing_the_workers_is_refused_when_they_are_all_busy() {
    let t = start(Knobs {
        max_threads: 1,
        accept_count: 0,
        cpu_work: Duration::from_millis(300),
        db_rtt: Duration::ZERO,
        health_shares_workers: true,
        ..Knobs::default()
    })
    .await;
    let addr = t.addr;
    assert_eq!(http(addr, "GET", "/health", None).await, (200, "ok".into()));
    let slow = tokio::spawn(async move { http(addr, "GET", "/rooms", None).await.0 });
    busy_is(addr, 1.0).await;
    // The one worker is computing and nothing may queue: the probe fails, as Spring's did.
    let (status, body) = http(addr, "GET", "/health", None).await;
    assert_eq!((status, body.as_str()), (503, "accept queue full\n"));
    assert_eq!(slow.await.unwrap(), 200);
    busy_is(addr, 0.0).await;
    assert_eq!(http(addr, "GET", "/health", None).await, (200, "ok".into()));
    t.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_health_check_waits_for_the_cpu_work_ahead_of_it() {
    let t = start(Knobs {
        max_threads: 1,
        accept_count: 5,
        cpu_work: Duration::from_millis(200),
        db_rtt: Duration::ZERO,
        health_shares_workers: true,
        ..Knobs::default()
    })
    .await;
    let addr = t.addr;
    let get = move || tokio::spawn(async move { http(addr, "GET", "/rooms", None).await.0 });
    let first = get();
    busy_is(addr, 1.0).await;
    let second = get();
    queued_is(addr, 1.0).await;
    let asked = Instant::now();
    assert_eq!(http(addr, "GET", "/health", None).await, (200, "ok".into()));
    let waited = asked.elapsed();
    // Behind the rest of the first request and the whole of the second (the queue is first
    // come, first served): a probe with a 1 s timeout misses once enough work is ahead of it.
    assert!(waited >= Duration::from_millis(200), "{waited:?}");
    let slow = [first, second];
    for s in slow {
        assert_eq!(s.await.unwrap(), 200);
    }
    t.stop().await.unwrap();
}
