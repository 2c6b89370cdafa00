//! The conductor's promise, driven against a real loopback server: every completed request
//! lands in exactly one interval — intervals come in order without gaps or repeats, and
//! their counts add up to what the server answered, including requests still in flight
//! when the run stopped (they finish in the grace period and count in the last interval).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use volley_engine::{EngineConfig, Event, Target, TlsOptions};
use volley_scenario::{LoadSpec, RequestSpec, Settings, Work};

/// An HTTP/1.1 keep-alive server on 127.0.0.1 that answers every request after `delay` and
/// counts the responses it writes. It stops accepting when dropped.
struct CountingServer {
    addr: SocketAddr,
    answered: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl CountingServer {
    fn start(delay: Duration) -> CountingServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let answered = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (count, halt) = (answered.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if halt.load(Ordering::Acquire) {
                    break;
                }
                let Ok(mut conn) = conn else { continue };
                let count = count.clone();
                std::thread::spawn(move || serve(&mut conn, delay, &count));
            }
        });
        CountingServer {
            addr,
            answered,
            stop,
        }
    }
}

impl Drop for CountingServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let _ = TcpStream::connect(self.addr);
    }
}

/// Answers requests on one connection until the client closes it.
fn serve(conn: &mut TcpStream, delay: Duration, answered: &AtomicU64) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..end + 4);
            std::thread::sleep(delay);
            // Counted before the bytes leave, so the count is never behind what the client saw.
            answered.fetch_add(1, Ordering::AcqRel);
            if conn
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .is_err()
            {
                return;
            }
        }
        match conn.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn config(addr: SocketAddr, vus: u64, duration: &str, interval: Duration) -> EngineConfig {
    let url = format!("http://{addr}/");
    let mut load = LoadSpec::default();
    load.set("vus", &vus.to_string()).unwrap();
    load.set("duration", duration).unwrap();
    let plan = Settings {
        load,
        ..Settings::default()
    }
    .plan(Work::Request(RequestSpec::get(&url)))
    .unwrap();
    EngineConfig {
        plan,
        target: Target::resolve(&url).unwrap(),
        tls: TlsOptions::default(),
        http2: false,
        interval,
        threads: 2,
        grace: Duration::from_secs(3),
        error_stop: false,
        start_at: None,
    }
}

/// Runs to the end; returns each interval's (index, completions, length in s) and the errors
/// seen.
fn run(config: EngineConfig) -> (Vec<(u64, u64, f64)>, u64) {
    let run = volley_engine::start(config).unwrap();
    let (mut rows, mut errors) = (Vec::new(), 0);
    while let Some(event) = run.next_event() {
        match event {
            Event::Interval { sample, row, .. } => {
                rows.push((
                    sample.index,
                    sample.counts.tests + sample.counts.errors,
                    row.period_s,
                ));
                errors += sample.counts.errors;
            }
            Event::PlanChanged(_) => {}
            Event::End(_) => break,
        }
    }
    (rows, errors)
}

#[test]
fn every_completion_lands_in_exactly_one_interval() {
    let server = CountingServer::start(Duration::from_millis(2));
    let (rows, errors) = run(config(server.addr, 4, "2.5s", Duration::from_millis(500)));
    let indexes: Vec<u64> = rows.iter().map(|r| r.0).collect();
    let timed = rows.iter().filter(|r| r.2 > 0.0).count();
    assert_eq!(timed, 5, "five half-second intervals: {rows:?}");
    assert_eq!(
        indexes,
        (0..rows.len() as u64).collect::<Vec<_>>(),
        "in order, none twice, then at most the drain: {rows:?}"
    );
    assert!(
        rows.len() <= 6 && rows.iter().skip(5).all(|r| r.2 == 0.0),
        "{rows:?}"
    );
    let recorded: u64 = rows.iter().map(|r| r.1).sum();
    assert_eq!(errors, 0);
    assert!(recorded > 100, "the run did work: {recorded}");
    assert_eq!(
        recorded,
        server.answered.load(Ordering::Acquire),
        "every answer recorded once: {rows:?}"
    );
}

#[test]
fn requests_in_flight_at_the_stop_count_in_the_drain_after_the_last_interval() {
    // Each answer takes 400 ms, so when the 1.1 s run stops every VU has a request in flight.
    let server = CountingServer::start(Duration::from_millis(400));
    let (rows, errors) = run(config(server.addr, 3, "1.1s", Duration::from_millis(500)));
    let indexes: Vec<u64> = rows.iter().map(|r| r.0).collect();
    assert_eq!(indexes, vec![0, 1, 2, 3], "{rows:?}");
    let lengths: Vec<f64> = rows
        .iter()
        .map(|r| (r.2 * 1000.0).round() / 1000.0)
        .collect();
    assert_eq!(
        lengths,
        [0.5, 0.5, 0.1, 0.0],
        "the last interval ends at the stop: {rows:?}"
    );
    assert_eq!(errors, 0);
    let recorded: u64 = rows.iter().map(|r| r.1).sum();
    assert_eq!(
        recorded,
        server.answered.load(Ordering::Acquire),
        "{rows:?}"
    );
    // 3 VUs × 3 answers each (at 0.4, 0.8 and 1.2 s): the third lands after the stop.
    assert_eq!(recorded, 9, "{rows:?}");
    assert_eq!(
        (rows[2].1, rows[3].1),
        (0, 3),
        "the requests in flight at the stop finished in the grace period, counted in the drain, not in the last interval: {rows:?}"
    );
}

/// Runs `config`, calling `change` with the run's control once `after` has passed; returns
/// the intervals' (target VUs, requests) and the change the conductor reported.
fn run_with_change(
    config: EngineConfig,
    after: Duration,
    change: impl FnOnce(&volley_engine::RunControl) + Send + 'static,
) -> (Vec<(u64, u64)>, volley_engine::PlanChange) {
    let run = volley_engine::start(config).unwrap();
    let control = run.control();
    let changer = std::thread::spawn(move || {
        // When the change comes: the event under test, not a state waited for.
        std::thread::sleep(after);
        change(&control);
    });
    let (mut rows, mut changed) = (Vec::new(), None);
    while let Some(event) = run.next_event() {
        match event {
            Event::Interval {
                sample, target_vus, ..
            } => rows.push((
                target_vus,
                sample.counts.tests + sample.counts.errors + sample.counts.dropped,
            )),
            Event::PlanChanged(c) => changed = Some(c),
            Event::End(_) => break,
        }
    }
    changer.join().unwrap();
    (rows, changed.expect("the conductor reported the change"))
}

#[test]
fn a_vu_target_set_live_replaces_the_shape() {
    let server = CountingServer::start(Duration::from_millis(2));
    let (rows, change) = run_with_change(
        config(server.addr, 2, "3s", Duration::from_millis(500)),
        Duration::from_millis(1200),
        |c| {
            assert!(
                c.set_rate(10.0, "test").is_err(),
                "a closed-model run has no rate"
            );
            c.set_vus(5, "test").unwrap();
        },
    );
    assert_eq!(change.to, volley_engine::Retarget::Vus(5));
    assert_eq!(change.by, "test");
    assert!(
        change.at >= Duration::from_millis(1200) && change.at < Duration::from_millis(1500),
        "{:?}",
        change.at
    );
    let targets: Vec<u64> = rows.iter().map(|r| r.0).collect();
    // Intervals ending before the change ran 2 VUs; those after, 5 (the last reports 0: stopped).
    assert_eq!(&targets[..2], &[2, 2], "{targets:?}");
    assert_eq!(&targets[3..5], &[5, 5], "{targets:?}");
}

#[test]
fn a_rate_set_live_replaces_the_schedule_from_its_instant() {
    let server = CountingServer::start(Duration::from_millis(1));
    let url = format!("http://{}/", server.addr);
    let mut load = LoadSpec::default();
    load.set("rate", "100").unwrap();
    load.set("duration", "3s").unwrap();
    let plan = Settings {
        load,
        ..Settings::default()
    }
    .plan(Work::Request(RequestSpec::get(&url)))
    .unwrap();
    let config = EngineConfig {
        plan,
        ..config(server.addr, 1, "3s", Duration::from_millis(500))
    };
    let (rows, change) = run_with_change(config, Duration::from_millis(1000), |c| {
        assert!(
            c.set_vus(3, "test").is_err(),
            "an open-model run has no VU target"
        );
        assert!(
            c.set_rate(0.0, "test").is_err(),
            "a rate of zero sends nothing"
        );
        c.set_rate(400.0, "test").unwrap();
    });
    assert_eq!(change.to, volley_engine::Retarget::Rate(400.0));
    let at = change.at.as_secs_f64();
    let sent: u64 = rows.iter().map(|r| r.1).sum();
    // 100/s up to the change, 400/s from it to the planned end at 3 s.
    let expected = 100.0 * at + 400.0 * (3.0 - at);
    assert!(
        (sent as f64 - expected).abs() <= expected * 0.03 + 4.0,
        "sent {sent}, expected about {expected:.0} (change at {at:.3} s)"
    );
    assert_eq!(
        sent,
        server.answered.load(Ordering::Acquire),
        "every arrival answered, none dropped"
    );
}

/// An open-model plan: `rate` arrivals per second for `duration`, at most `max_vus` VUs.
fn open_config(
    addr: SocketAddr,
    rate: &str,
    duration: &str,
    max_vus: u64,
    threads: usize,
) -> EngineConfig {
    let url = format!("http://{addr}/");
    let mut load = LoadSpec::default();
    load.set("rate", rate).unwrap();
    load.set("duration", duration).unwrap();
    load.set("max_vus", &max_vus.to_string()).unwrap();
    let plan = Settings {
        load,
        ..Settings::default()
    }
    .plan(Work::Request(RequestSpec::get(&url)))
    .unwrap();
    let mut c = config(addr, 1, "1s", Duration::from_millis(250));
    c.plan = plan;
    c.threads = threads;
    c
}

#[test]
fn the_open_model_makes_exactly_the_scheduled_arrivals_on_every_worker_count() {
    // 800/s for 1.5 s: arrivals due at 0, 1.25, 2.5, … ms — 1,200 of them, whichever worker
    // makes each; the server answers at once, so every one is sent and recorded.
    let server = CountingServer::start(Duration::ZERO);
    let mut before = 0;
    for threads in [1, 2] {
        let run =
            volley_engine::start(open_config(server.addr, "800", "1.5s", 200, threads)).unwrap();
        let (mut recorded, mut dropped, mut lag_recorded) = (0, 0, false);
        while let Some(event) = run.next_event() {
            match event {
                Event::Interval { sample, .. } => {
                    recorded += sample.counts.tests + sample.counts.errors;
                    dropped += sample.counts.dropped;
                    lag_recorded |= sample.counts.sched_lag_max_us > 0;
                }
                Event::PlanChanged(_) => {}
                Event::End(_) => break,
            }
        }
        let answered = server.answered.load(Ordering::Acquire) - before;
        before += answered;
        assert_eq!(
            (recorded, dropped),
            (1_200, 0),
            "{threads} worker(s): every scheduled arrival sent and recorded once"
        );
        assert_eq!(
            answered, 1_200,
            "{threads} worker(s): the server saw each arrival once"
        );
        // Waking for an arrival takes the kernel more than a microsecond, so some lag shows.
        assert!(
            lag_recorded,
            "{threads} worker(s): the dispatch delay is recorded"
        );
    }
}
