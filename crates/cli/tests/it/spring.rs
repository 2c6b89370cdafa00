//! The seeds' own stack: a step-up on Spring Boot 2.7 + HikariCP + Tomcat (bench/spring/app,
//! built from Maven Central by scripts/test.sh), read level by level. `GET /rooms` holds a
//! pooled connection for 20 ms, so each level's ceiling is known by construction: a pool of
//! P connections serves at most P / 20 ms, and U < P users at most U / 20 ms.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::*;

/// Each request holds its pooled connection this long (the app's `app.hold-ms`).
const HOLD_MS: f64 = 20.0;

/// The built application.
fn jar() -> PathBuf {
    let jar =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/spring/app/target/rooms-app.jar");
    assert!(
        jar.is_file(),
        "{} is missing: scripts/test.sh builds it (or: mvn -q -B -f bench/spring/app/pom.xml package; it needs maven and a JDK 17)",
        jar.display()
    );
    jar
}

/// The application on a free loopback port, stopped when dropped.
pub(crate) struct SpringApp {
    child: Child,
    pub(crate) port: u16,
}

impl SpringApp {
    /// Starts the app with `settings` (`--spring.datasource.hikari.maximum-pool-size=2`, ...)
    /// and waits until it answers.
    pub(crate) fn start(settings: &[String]) -> SpringApp {
        assert_serial("a test that starts the Spring Boot app");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("java")
            .args(["-Xmx256m", "-jar"])
            .arg(jar())
            .arg(format!("--server.port={port}"))
            .args(settings)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("java runs (scripts/test.sh installs default-jdk-headless when missing)");
        let mut app = SpringApp { child, port };
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Ok(Some(status)) = app.child.try_wait() {
                panic!("the Spring Boot app exited before it answered: {status}");
            }
            if http_get(port, "/actuator/health").is_some_and(|b| b.contains("UP")) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the Spring Boot app did not answer within 120 s"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
        // One request through the pool, so the first level does not time the JIT's first pass.
        for _ in 0..20 {
            let _ = http_get(port, "/rooms?hold=0");
        }
        app
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for SpringApp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A plain GET's body, or None.
fn http_get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    out.starts_with("HTTP/1.1 200").then_some(out)
}

/// A step-up of 5, 10 and 20 VUs, each held 8 s, against an app whose pool has `pool`
/// connections, its /actuator/prometheus scraped; the run directory.
fn step_up(pool: usize, out: &Path) -> PathBuf {
    let app = SpringApp::start(&[format!(
        "--spring.datasource.hikari.maximum-pool-size={pool}"
    )]);
    let dir = out.join(format!("pool{pool}"));
    let o = volley(&[
        "run",
        "--url",
        &app.url("/rooms"),
        "--stages",
        "0s:5,8s:5,0s:10,8s:10,0s:20,8s:20",
        "--server-metrics",
        &app.url("/actuator/prometheus"),
        "--name",
        &format!("pool{pool}"),
        "-o",
        dir.to_str().unwrap(),
    ]);
    drop(app);
    assert!(o.status.success(), "{}", text(&o));
    only_run(&dir)
}

/// The report's levels as (VUs, TPS, MTTFB ms).
fn levels(report: &serde_json::Value) -> Vec<(f64, f64, f64)> {
    report["levels"]
        .as_array()
        .expect("a step-up's report has levels")
        .iter()
        .map(|l| {
            (
                l["vusers"].as_f64().unwrap(),
                l["tps_avg"].as_f64().unwrap(),
                l["mttfb_avg_ms"].as_f64().unwrap(),
            )
        })
        .collect()
}

fn findings(report: &serde_json::Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_step_up_on_spring_boot_is_read_level_by_level() {
    if !need("spring-app") {
        return;
    }
    let _g = serial();
    let out = out_dir();
    let small = step_up(2, out.path());
    let large = step_up(10, out.path());

    for (dir, pool) in [(&small, 2.0), (&large, 10.0)] {
        let report = report_json(dir);
        let levels = levels(&report);
        let found = findings(&report);
        assert_eq!(
            levels.iter().map(|l| l.0).collect::<Vec<_>>(),
            [5.0, 10.0, 20.0],
            "pool {pool}: {report:#}"
        );
        // A level the pool limits (more users than connections) is within 10 % of its ceiling
        // by construction, pool / hold; a level of no more users than connections is limited by
        // its users (each also spends its HTTP round trip outside the pool): never above
        // users / hold, and within 10 % of Little's law (users / time per request).
        for (vus, tps, mttfb) in &levels {
            let expected = if *vus > pool {
                pool / (HOLD_MS / 1000.0)
            } else {
                assert!(
                    *tps <= vus / (HOLD_MS / 1000.0),
                    "pool {pool}, {vus} VUs: {tps:.1} TPS"
                );
                vus / (mttfb / 1000.0)
            };
            assert!(
                (tps / expected - 1.0).abs() <= 0.10,
                "pool {pool}, {vus} VUs: {tps:.1} TPS against {expected:.0} by construction\n{found:#?}"
            );
        }
        // The drain after the stop is a row of its own, out of the TPS figures.
        let suite_tps = report["seed_suite"]["tps_p99_9"].as_f64().unwrap();
        assert!(
            suite_tps <= pool / (HOLD_MS / 1000.0) * 1.10,
            "pool {pool}: no interval above the ceiling (the grace period's completions), TPS p99.9 {suite_tps:.1}"
        );
        let pending = found
            .iter()
            .find(|f| f.starts_with("DB pool pending"))
            .unwrap_or_else(|| panic!("pool {pool}: a pool finding\n{found:#?}"));
        if pool == 2.0 {
            // 5 users on 2 connections queue from the first level on.
            assert!(
                pending.starts_with("DB pool pending > 0 from 5 VUs"),
                "{pending}"
            );
        } else {
            // 10 users on 10 connections cannot queue: pending from 20, its peak there too.
            assert!(
                pending.starts_with("DB pool pending > 0 from 20 VUs"),
                "{pending}"
            );
            assert!(pending.contains("waiting requests at 20 VUs"), "{pending}");
            let knee = found
                .iter()
                .find(|f| f.starts_with("TPS stopped growing"))
                .unwrap_or_else(|| panic!("a knee on pool 10\n{found:#?}"));
            assert!(knee.starts_with("TPS stopped growing at 10 VUs"), "{knee}");
        }
        // CPU is judged at the levels: a start-up reading is no finding.
        if let Some(cpu) = found.iter().find(|f| f.starts_with("Server process CPU")) {
            assert!(cpu.contains("CPU was not the limit"), "{cpu}");
        }
    }

    // Compared level by level: the pool's change is marked at every level.
    let o = volley(&[
        "compare",
        small.to_str().unwrap(),
        large.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let cmp: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let per_level = cmp["steps"][0]["per_level"]
        .as_array()
        .unwrap_or_else(|| panic!("a per-level comparison: {cmp:#}"));
    assert_eq!(per_level.len(), 3, "{cmp:#}");
    for level in per_level {
        let tps = level["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["key"] == "tps_avg")
            .unwrap();
        assert_eq!(tps["verdict"], "better", "{}: {tps:#}", level["name"]);
    }
    let table = volley(&[
        "compare",
        "--verbose",
        small.to_str().unwrap(),
        large.to_str().unwrap(),
    ]);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.contains("Per level:")
            && table
                .lines()
                .any(|l| l.trim_start().starts_with("20 VUs") && l.contains("TPS Average")),
        "{table}"
    );
}
