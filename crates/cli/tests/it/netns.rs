//! Acceptance of split runs with each segment on "its own host": every `volley run
//! --segment i/N` process in its own network namespace with its own address, the demo target
//! in another, all joined by a bridge in a namespace of its own (nothing is changed in the
//! machine's own network). For N = 1, 2 and 4 segments of one open-model plan:
//!
//! - the merged request count equals the count the target itself reports on /metrics;
//! - merged TPS and TTFB percentiles match those of the single segment (N = 1) within noise;
//! - a closed-model plan split 4 ways also lands exactly on the target's count.
//!
//! Needs root (`ip netns add`): the part `netns` of tests/it/parts.rs, so on a machine that
//! refuses it the test says why and skips, and fails under `VOLLEY_TEST_ALL=1`.
//! `bench/segments.sh` runs it in release mode and prints the figures.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use volley_formats::RunData;

use crate::support::*;

/// Namespaces and links made for the test, removed when it ends, whatever happens.
struct Net {
    tag: String,
    namespaces: Vec<String>,
    target: Option<Child>,
}

impl Drop for Net {
    fn drop(&mut self) {
        if let Some(t) = &mut self.target {
            let _ = t.kill();
            let _ = t.wait();
        }
        for ns in self.namespaces.iter().rev() {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

fn ip(args: &[&str]) -> Result<(), String> {
    let o = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ))
    }
}

const GENERATORS: usize = 4;
const PORT: u16 = 18080;

impl Net {
    /// A bridge namespace, the target's namespace (10.77.0.1) and one per generator (10.77.0.11…).
    fn build() -> Result<Net, String> {
        let tag = format!("{}", std::process::id() % 100_000);
        let mut net = Net {
            tag: tag.clone(),
            namespaces: Vec::new(),
            target: None,
        };
        let sw = format!("vsw{tag}");
        ip(&["netns", "add", &sw])?;
        net.namespaces.push(sw.clone());
        ip(&["-n", &sw, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &sw, "link", "set", "br0", "up"])?;
        for k in 0..=GENERATORS {
            let ns = net.ns(k);
            ip(&["netns", "add", &ns])?;
            net.namespaces.push(ns.clone());
            let (inner, outer) = (format!("ve{k}x{tag}"), format!("vb{k}x{tag}"));
            ip(&[
                "link", "add", &inner, "type", "veth", "peer", "name", &outer,
            ])?;
            ip(&["link", "set", &inner, "netns", &ns])?;
            ip(&["link", "set", &outer, "netns", &sw])?;
            ip(&["-n", &sw, "link", "set", &outer, "master", "br0", "up"])?;
            ip(&[
                "-n",
                &ns,
                "addr",
                "add",
                &format!("{}/24", net.addr(k)),
                "dev",
                &inner,
            ])?;
            ip(&["-n", &ns, "link", "set", &inner, "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        }
        Ok(net)
    }

    /// Namespace `k`: 0 is the target's, 1… the generators'.
    fn ns(&self, k: usize) -> String {
        if k == 0 {
            format!("vt{}", self.tag)
        } else {
            format!("vg{k}x{}", self.tag)
        }
    }

    fn addr(&self, k: usize) -> String {
        if k == 0 {
            "10.77.0.1".into()
        } else {
            format!("10.77.0.{}", 10 + k)
        }
    }

    /// `volley target serve` in the target's namespace; waits until it answers.
    fn start_target(&mut self) -> Result<(), String> {
        let child = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.ns(0),
                env!("CARGO_BIN_EXE_volley"),
                "target",
                "serve",
                "--listen",
                &format!("10.77.0.1:{PORT}"),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| e.to_string())?;
        self.target = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if self.target_count().is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err("the demo target did not answer in its namespace within 20 s".into())
    }

    /// Requests to /health the target has counted (its own /metrics, read from generator 1's
    /// namespace with bash's /dev/tcp: no other client needed).
    fn target_count(&self) -> Result<u64, String> {
        let script = format!(
            "exec 3<>/dev/tcp/10.77.0.1/{PORT} && printf 'GET /metrics HTTP/1.0\\r\\nHost: t\\r\\n\\r\\n' >&3 && cat <&3"
        );
        let o = Command::new("ip")
            .args(["netns", "exec", &self.ns(1), "bash", "-c", &script])
            .output()
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&o.stdout);
        if !text.contains("http_server_requests") && !text.contains("hikaricp") {
            return Err(format!(
                "no metrics: {}",
                String::from_utf8_lossy(&o.stderr)
            ));
        }
        Ok(text
            .lines()
            .filter(|l| {
                l.starts_with("http_server_requests_seconds_count{")
                    && l.contains("uri=\"/health\"")
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum())
    }

    /// Runs `n` segments of `plan`, one per generator namespace, started together; merges
    /// them; returns the merged run directory and how long the merge took.
    fn split_run(&self, n: usize, plan: &[&str], out: &Path, label: &str) -> (PathBuf, Duration) {
        let at = crate::support::start_at_in(3);
        let url = format!("http://10.77.0.1:{PORT}/health");
        let children: Vec<Child> = (0..n)
            .map(|i| {
                Command::new("ip")
                    .args([
                        "netns",
                        "exec",
                        &self.ns(i + 1),
                        env!("CARGO_BIN_EXE_volley"),
                        "run",
                        "--url",
                        &url,
                    ])
                    .args(plan)
                    .args([
                        "--segment",
                        &format!("{i}/{n}"),
                        "--start-at",
                        &at,
                        "--run-id",
                        label,
                        "--threads",
                        "1",
                        "--progress",
                        "none",
                        "-o",
                    ])
                    .arg(out.join(format!("{label}-seg{i}")))
                    .env("NO_COLOR", "1")
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for c in children {
            let o = c.wait_with_output().unwrap();
            assert!(o.status.success(), "{label}: {}", text(&o));
        }
        let merged = out.join(format!("{label}-merged"));
        let inputs: Vec<PathBuf> = (0..n)
            .map(|i| out.join(format!("{label}-seg{i}")))
            .collect();
        let mut args: Vec<&str> = vec!["merge"];
        args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
        args.extend(["-o", merged.to_str().unwrap()]);
        let t = Instant::now();
        let o = volley(&args);
        let took = t.elapsed();
        assert!(o.status.success(), "{label} merge: {}", text(&o));
        (merged, took)
    }
}

#[test]
fn segments_in_their_own_namespaces_add_up_to_the_targets_count() {
    if !need("netns") {
        return;
    }
    let _g = serial();
    let mut net = Net::build().expect("network namespaces");
    net.start_target().expect("the demo target");
    let out = out_dir();
    let open = ["--rate", "1500", "--duration", "5s", "--max-vus", "64"];
    let mut rows = Vec::new();
    for (n, plan, label) in [
        (1, &open[..], "open-n1"),
        (2, &open[..], "open-n2"),
        (4, &open[..], "open-n4"),
        (4, &["--vus", "8", "--duration", "4s"][..], "closed-n4"),
    ] {
        let before = net.target_count().unwrap();
        let (merged, took) = net.split_run(n, plan, out.path(), label);
        let seen = net.target_count().unwrap() - before;
        let run = RunData::read(&merged).unwrap();
        let sent = run.series.tests() + run.series.errors();
        assert_eq!(sent, seen, "{label}: the merged count is the target's");
        assert_eq!(run.series.errors(), 0, "{label}");
        let hosts: Vec<String> = run
            .meta
            .merged
            .as_ref()
            .unwrap()
            .segments
            .iter()
            .map(|s| s.host.clone())
            .collect();
        assert_eq!(hosts.len(), n);
        let r = report_json(&merged);
        let ttfb = &r["per_request"]["ttfb_ms"];
        let f = |v: &serde_json::Value| v.as_f64().unwrap();
        rows.push((
            label,
            n,
            seen,
            sent,
            f(&r["seed_suite"]["tps_avg"]),
            f(&ttfb["p50_ms"]),
            f(&ttfb["p90_ms"]),
            f(&ttfb["p99_ms"]),
            took,
        ));
    }
    eprintln!("run        N  target  merged  TPS avg  TTFB p50  p90     p99     merge");
    for (label, n, seen, sent, tps, p50, p90, p99, took) in &rows {
        eprintln!(
            "{label:<10} {n}  {seen:>6}  {sent:>6}  {tps:>7.1}  {p50:>6.3}  {p90:>6.3}  {p99:>6.3}  {:.2} s",
            took.as_secs_f64()
        );
    }
    // The open model: the schedule fixes the count and the rate exactly; latencies within
    // noise of the single process (a few hundred µs on a loaded 2-core machine).
    let (single, split) = (&rows[0], &rows[1..3]);
    for r in split {
        assert_eq!(
            r.2, single.2,
            "{}: the same schedule sends the same number of requests as one process",
            r.0
        );
        assert!(
            (r.4 - single.4).abs() / single.4 < 0.01,
            "{}: TPS {} vs {}",
            r.0,
            r.4,
            single.4
        );
        assert!(
            (r.5 - single.5).abs() < (0.5 * single.5).max(0.5),
            "{}: TTFB p50 {} vs {} ms",
            r.0,
            r.5,
            single.5
        );
    }
}
