//! The findings and levels of real step-ups on the seeds' own stack, read back from what
//! volley recorded: Spring Boot 2.7.18 (Tomcat 9, HikariCP 4, Micrometer 1.9) on H2, whose
//! `GET /rooms` holds a pooled connection for 20 ms (bench/spring/run.sh, 2026-11-27). Each
//! case's true answer is known by construction; fixtures/README.md says what was kept.

use std::path::Path;

use volley_formats::{RunData, Source};
use volley_report::{ReportOptions, RunReport};

fn report(case: &str) -> RunReport {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/spring")
        .join(case);
    let src = Source::from_run(RunData::read(&dir).unwrap());
    RunReport::from_source(&src, ReportOptions::default())
}

fn finding<'a>(r: &'a RunReport, prefix: &str) -> &'a str {
    r.findings
        .iter()
        .find(|f| f.starts_with(prefix))
        .unwrap_or_else(|| panic!("no finding `{prefix}…` in {:#?}", r.findings))
}

fn levels(r: &RunReport) -> Vec<f64> {
    r.levels.iter().map(|l| l.vusers).collect()
}

#[test]
fn pool_10_queues_from_20_users_and_saturates_at_10() {
    let r = report("pool10");
    assert_eq!(levels(&r), [5.0, 10.0, 20.0, 40.0]);
    let pending = finding(&r, "DB pool pending");
    assert!(
        pending.starts_with("DB pool pending > 0 from 20 VUs"),
        "{pending}"
    );
    assert!(pending.contains("waiting requests at 40 VUs"), "{pending}");
    let knee = finding(&r, "TPS stopped growing");
    assert!(knee.starts_with("TPS stopped growing at 10 VUs"), "{knee}");
    // The pool's ceiling, 10 / 20 ms, at the levels it limits.
    for l in r.levels.iter().filter(|l| l.vusers >= 20.0) {
        assert!((l.tps_avg / 500.0 - 1.0).abs() < 0.10, "{l:?}");
    }
    // No interval above the ceiling: the grace period's completions are the drain, out of TPS.
    assert!(r.seed_suite.tps_p99_9 <= 500.0 * 1.05, "{:?}", r.seed_suite);
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("completed in the grace period after the stop"))
    );
}

#[test]
fn pool_5_queues_from_10_users_not_5() {
    let r = report("pool5");
    let pending = finding(&r, "DB pool pending");
    assert!(
        pending.starts_with("DB pool pending > 0 from 10 VUs"),
        "{pending}"
    );
    let knee = finding(&r, "TPS stopped growing");
    assert!(knee.starts_with("TPS stopped growing at 5 VUs"), "{knee}");
}

#[test]
fn paced_pool_2_queues_from_30_users_and_peaks_at_60() {
    let r = report("paced-pool2");
    assert_eq!(levels(&r), [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]);
    let pending = finding(&r, "DB pool pending");
    assert!(
        pending.starts_with("DB pool pending > 0 from 30 VUs"),
        "{pending}"
    );
    assert!(pending.contains("waiting requests at 60 VUs"), "{pending}");
    // 10 and 20 paced users (40 and 80 requests/s) fit in 2 connections: bursts, said as such.
    assert!(
        pending.contains("only bursts as users started"),
        "{pending}"
    );
}

#[test]
fn max_connections_is_named_and_cpu_is_not_blamed() {
    let r = report("maxconn10");
    let tomcat = finding(&r, "Tomcat held all 10 connections");
    assert!(tomcat.contains("from 10 VUs"), "{tomcat}");
    assert!(tomcat.contains("requests never finished"), "{tomcat}");
    let cpu = finding(&r, "Server process CPU");
    assert!(cpu.ends_with("so CPU was not the limit."), "{cpu}");
    // Its scrapes on the app's own port waited with the load, and every form says so.
    assert!(
        r.notes.iter().any(|n| n.contains("scrapes of")
            && n.contains("failed")
            && n.contains("management.server.port")),
        "{:#?}",
        r.notes
    );
}

#[test]
fn five_threads_are_named_as_the_limit() {
    let r = report("threads5");
    // From 5 users: the scrape on the app's own port takes the sixth request's thread.
    let threads = finding(&r, "Tomcat: all 5 worker threads were busy from 5 VUs");
    assert!(threads.contains("server.tomcat.threads.max"), "{threads}");
    // The first CPU reading (100 %: the JVM's start-up) is in no level's peak.
    let cpu = |l: &volley_report::levels::Level| {
        l.server.iter().find(|(k, _)| k == "CPU").map(|(_, v)| *v)
    };
    assert!(
        cpu(&r.levels[0]).is_some_and(|c| c < 0.9),
        "{:?}",
        r.levels[0]
    );
}
