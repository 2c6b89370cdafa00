//! A small HTTP/1.1 test server on 127.0.0.1 that counts every request it reads, and
//! helpers to run the `volley` binary.
//!
//! Routes: `/ok` (200), `/delay?ms=N` (response headers after N ms), `/status?code=N`,
//! `/close` (200 then closes the connection), `/stall` (all responses frozen from 5 s to
//! 6 s of every 10 s). Anything else: 200.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

pub use crate::parts::need;

/// Load-generating tests run one at a time, so timing tests are not disturbed by others.
/// Every test that starts a load target ([`TestServer`], `ScenarioServer`, `SpringApp`) or a
/// `volley` it watches ([`Watched`], `live::start_run`) takes it first: those panic on a thread
/// that does not hold it. Tests that
/// need not take it send no load: refusals that exit 2 before any request, file-only tests
/// (`report`, `compare`, `convert`, `k8s manifest`, `scalability`), a `check` of one request.
static LOAD: Mutex<()> = Mutex::new(());

thread_local! {
    static HOLDS_LOAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The load lock, held until dropped (`let _g = serial();`).
pub struct Serial(#[allow(dead_code)] MutexGuard<'static, ()>);

impl Drop for Serial {
    fn drop(&mut self) {
        HOLDS_LOAD.with(|h| h.set(false));
    }
}

pub fn serial() -> Serial {
    let guard = LOAD.lock().unwrap_or_else(|e| e.into_inner());
    HOLDS_LOAD.with(|h| h.set(true));
    Serial(guard)
}

/// Panics unless this thread holds [`serial`]'s lock: `what` sends load.
pub fn assert_serial(what: &str) {
    assert!(
        HOLDS_LOAD.with(|h| h.get()),
        "{what} sends load: take `let _g = serial();` first (tests/it/support.rs), so no two \
         load tests disturb each other's timings"
    );
}

pub struct TestServer {
    pub port: u16,
    pub requests: Arc<AtomicU64>,
    /// How long each `/delay` request was really held before its headers were written, µs.
    pub delays_us: Arc<Mutex<Vec<u64>>>,
}

impl TestServer {
    /// Starts a thread-per-connection server: blocking sleeps are precise to well under a
    /// millisecond, unlike an async timer wheel's 1 ms ticks.
    pub fn start() -> TestServer {
        TestServer::start_with_idle_timeout(None)
    }

    /// Like [`TestServer::start`], closing a keep-alive connection idle for longer than `idle`
    /// (as nginx's `keepalive_timeout` does).
    pub fn start_with_idle_timeout(idle: Option<Duration>) -> TestServer {
        assert_serial("a test that starts a TestServer");
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(AtomicU64::new(0));
        let delays_us = Arc::new(Mutex::new(Vec::new()));
        let (counter, delays) = (requests.clone(), delays_us.clone());
        let epoch = Instant::now();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let _ = stream.set_read_timeout(idle);
                let (counter, delays) = (counter.clone(), delays.clone());
                std::thread::spawn(move || {
                    let _ = serve(stream, &counter, &delays, epoch);
                });
            }
        });
        TestServer {
            port,
            requests,
            delays_us,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn seen(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }

    /// Median of the delays the server applied, ms.
    pub fn median_delay_ms(&self) -> f64 {
        let mut d = self.delays_us.lock().unwrap().clone();
        d.sort_unstable();
        d[d.len() / 2] as f64 / 1000.0
    }
}

fn serve(
    mut stream: TcpStream,
    counter: &AtomicU64,
    delays: &Mutex<Vec<u64>>,
    epoch: Instant,
) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let head_end = loop {
            if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break p + 4;
            }
            let n = stream.read(&mut chunk)?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let received = Instant::now();
        let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
        let content_length: usize = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().parse().unwrap_or(0))
            })
            .unwrap_or(0);
        while buf.len() < head_end + content_length {
            let n = stream.read(&mut chunk)?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        buf.drain(..head_end + content_length);
        counter.fetch_add(1, Ordering::SeqCst);
        let target = head.split_whitespace().nth(1).unwrap_or("/").to_string();
        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
        let param = |name: &str| {
            query
                .split('&')
                .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
                .and_then(|v| v.parse::<u64>().ok())
        };
        let mut status = 200;
        let mut close = false;
        match path {
            "/delay" => std::thread::sleep(Duration::from_millis(param("ms").unwrap_or(0))),
            "/status" => status = param("code").unwrap_or(200),
            "/close" => close = true,
            // Every response is frozen from 5 s to 6 s of every 10 s since the server started.
            "/stall" => {
                let phase = epoch.elapsed().as_secs_f64() % 10.0;
                if (5.0..6.0).contains(&phase) {
                    std::thread::sleep(Duration::from_secs_f64(6.0 - phase));
                }
            }
            _ => {}
        }
        let body = b"hello\n";
        let resp = format!(
            "HTTP/1.1 {status} X\r\ncontent-length: {}\r\n{}\r\n",
            body.len(),
            if close { "connection: close\r\n" } else { "" }
        );
        let mut out = resp.into_bytes();
        out.extend_from_slice(body);
        if path == "/delay" {
            delays
                .lock()
                .unwrap()
                .push(received.elapsed().as_micros() as u64);
        }
        stream.write_all(&out)?;
        if close {
            return Ok(());
        }
    }
}

/// A fresh output directory for runs.
/// `--start-at` for segments started together: `secs` whole seconds from now, as Unix seconds.
pub fn start_at_in(secs: u64) -> String {
    (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + secs)
        .to_string()
}

pub fn out_dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// Runs `volley` with `args`, waiting for it to end.
pub fn volley(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_volley"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// The single run directory under `out`.
pub fn only_run(out: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(
        dirs.len(),
        1,
        "expected one run directory in {}: {dirs:?}",
        out.display()
    );
    dirs.into_iter().next().unwrap()
}

pub fn report_json(run: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("report.json")).unwrap()).unwrap()
}

pub fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Waits (at most `limit`, looking every 20 ms) until `state` gives a value, and returns it:
/// how a test waits for a state (a file, a row, a status), instead of a sleep that assumes it.
pub fn wait_for<T>(limit: Duration, what: &str, mut state: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + limit;
    loop {
        if let Some(v) = state() {
            return v;
        }
        assert!(Instant::now() < end, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Complete rows (measured intervals) in `run`'s series.csv so far; 0 before it exists.
pub fn intervals_in(run: &Path) -> usize {
    std::fs::read(run.join("series.csv"))
        .map(|b| b.iter().filter(|&&c| c == b'\n').count().saturating_sub(1))
        .unwrap_or(0)
}

/// The run directory under `root` (`-o root`; a group's runs one level further down) once its
/// series.csv holds `n` intervals: the run is under way, `n` intervals in.
pub fn wait_for_intervals(root: &Path, n: usize, limit: Duration) -> PathBuf {
    let dirs = |d: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(d)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect()
    };
    let what = format!("{n} intervals in a series.csv under {}", root.display());
    wait_for(limit, &what, || {
        dirs(root)
            .into_iter()
            .flat_map(|d| {
                let mut all = dirs(&d);
                all.push(d);
                all
            })
            .find(|d| intervals_in(d) >= n)
    })
}

/// A `volley` process whose stderr is read as it comes, so a test can wait for a state the
/// process says (a probe's line, "stopping") instead of sleeping for it.
pub struct Watched {
    pub child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    seen: Vec<String>,
    stdout: std::thread::JoinHandle<Vec<u8>>,
}

impl Watched {
    /// Starts `volley args` with stdout and stderr piped.
    pub fn start(args: &[&str]) -> Watched {
        assert_serial("a test that starts a watched volley");
        let mut child = Command::new(env!("CARGO_BIN_EXE_volley"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut out = child.stdout.take().unwrap();
        let stdout = std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = out.read_to_end(&mut v);
            v
        });
        Watched {
            child,
            lines,
            seen: Vec::new(),
            stdout,
        }
    }

    /// Waits (at most `limit`) for a stderr line for which `pred` holds; panics with what was
    /// seen when none comes.
    pub fn wait_for(&mut self, limit: Duration, pred: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + limit;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if pred(&line) {
                        return line;
                    }
                }
                Err(_) => panic!(
                    "no such line within {limit:?}; stderr so far:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }

    /// Sends `signal` (`-INT`, `-TERM`) to the process.
    pub fn signal(&self, signal: &str) {
        Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap();
    }

    /// Waits for the process to end: its output, stderr whole.
    pub fn finish(mut self) -> Output {
        let status = self.child.wait().unwrap();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(line);
        }
        let mut stderr = self.seen.join("\n").into_bytes();
        stderr.push(b'\n');
        Output {
            status,
            stdout: self.stdout.join().unwrap(),
            stderr,
        }
    }
}
