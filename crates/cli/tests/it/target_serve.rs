//! `volley target serve` stops as a pod's process must (issue 54 §3): on SIGTERM it stops
//! accepting, lets the requests in flight finish, and exits 0 within `--drain`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::support::{Watched, serial, wait_for};

/// One GET on a fresh connection: its status line's code.
fn get(addr: &str, path: &str) -> std::io::Result<u16> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"
    )?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    out.get(9..12)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no status line in {out:?}")))
}

/// Starts the target with `args`; returns it and its address, as its first line says.
fn serve(args: &[&str]) -> (Watched, String) {
    let mut all = vec![
        "target",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--db-rtt",
        "0ms",
    ];
    all.extend_from_slice(args);
    let mut t = Watched::start(&all);
    let line = t.wait_for(Duration::from_secs(20), |l| {
        l.contains("demo target on http://")
    });
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap()
        .to_string();
    (t, addr)
}

/// Waits until one request is being handled (the busy-workers gauge reads 1).
fn one_busy(addr: &str) {
    wait_for(Duration::from_secs(10), "a busy worker", || {
        let mut s = TcpStream::connect(addr).ok()?;
        write!(
            s,
            "GET /metrics HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"
        )
        .ok()?;
        let mut m = String::new();
        s.read_to_string(&mut m).ok()?;
        m.lines()
            .any(|l| l == "tomcat_threads_busy_threads{name=\"http-nio-8080\",} 1")
            .then_some(())
    });
}

#[test]
fn sigterm_stops_accepting_lets_the_request_in_flight_finish_and_exits_0() {
    let _g = serial();
    let (mut t, addr) = serve(&["--cpu-work", "700ms"]);
    let a = addr.clone();
    let in_flight = std::thread::spawn(move || get(&a, "/rooms"));
    one_busy(&addr);
    let signalled = Instant::now();
    t.signal("-TERM");
    t.wait_for(Duration::from_secs(5), |l| {
        l.contains("SIGTERM: stopping (no new connections")
    });
    // Refused from now on, while the request in flight is still computing.
    wait_for(Duration::from_secs(5), "new connections refused", || {
        TcpStream::connect(&addr).is_err().then_some(())
    });
    assert_eq!(in_flight.join().unwrap().unwrap(), 200);
    let o = t.finish();
    let took = signalled.elapsed();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!err.contains("still in flight"), "{err}");
    assert!(
        took < Duration::from_secs(20),
        "not within the 20 s drain: {took:?}"
    );
}

#[test]
fn a_request_longer_than_the_drain_does_not_hold_the_exit() {
    let _g = serial();
    let (mut t, addr) = serve(&["--cpu-work", "10s", "--drain", "300ms"]);
    let a = addr.clone();
    // Cut off when the process exits: its result does not matter.
    std::thread::spawn(move || get(&a, "/rooms"));
    one_busy(&addr);
    let signalled = Instant::now();
    t.signal("-TERM");
    t.wait_for(Duration::from_secs(5), |l| {
        l.contains("still in flight after 300ms")
    });
    let o = t.finish();
    let took = signalled.elapsed();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        took < Duration::from_secs(5),
        "the 10 s of work held the exit {took:?}"
    );
}

#[test]
fn drain_and_cpu_work_are_bounded() {
    let o = crate::support::volley(&["target", "serve", "--drain", "2h"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        crate::support::text(&o).contains("--drain"),
        "{}",
        crate::support::text(&o)
    );
    let o = crate::support::volley(&["target", "serve", "--cpu-work", "1m"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        crate::support::text(&o).contains("cpu-work=1m: at most 10s of CPU a request"),
        "{}",
        crate::support::text(&o)
    );
}
