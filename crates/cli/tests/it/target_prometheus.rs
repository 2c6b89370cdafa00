//! `--target 'http://PROMETHEUS QUERY'` (issue 56 §4) against a real Prometheus (Debian's,
//! as tests/it/prometheus.rs starts it): scraping the demo target while volley loads it, the
//! day's-peak query a team would write (`max_over_time(sum(rate(...))[...])`) is read as the
//! target, said, and judges the run; answers that are no one finite rate are refused, exit 2.

use std::time::Duration;

use volley_export::testing::Prometheus;

use crate::parts::need;
use crate::support::{out_dir, serial, text, volley, wait_for};

/// A rate as volley says it: three decimals at most, no trailing zeros.
fn shown(rate: f64) -> String {
    let s = format!("{rate:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[test]
fn the_target_is_the_peak_prometheus_read_while_the_server_was_loaded() {
    if !need("prometheus") {
        return;
    }
    let _g = serial();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let target = rt
        .block_on(volley_demo::start(
            "127.0.0.1:0".parse().unwrap(),
            &volley_demo::Knobs::default(),
        ))
        .unwrap();
    let prom = Prometheus::start(Some(target.addr));
    wait_for(
        Duration::from_secs(30),
        "Prometheus scraping the demo",
        || (prom.scalar("up{job=\"volley\"}") == Some(1.0)).then_some(()),
    );
    let demo = format!("http://{}", target.addr);
    let out = out_dir();
    let run = |path: &str, rate: &str, secs: &str, more: &[&str]| {
        let mut args = vec![
            "run",
            "--url",
            path,
            "--rate",
            rate,
            "--duration",
            secs,
            "-o",
            out.path().to_str().unwrap(),
            "--progress",
            "none",
        ];
        args.extend_from_slice(more);
        volley(&args)
    };
    // The traffic Prometheus records: 40 requests a second on /rooms for 3 s.
    let load = run(&format!("{demo}/rooms"), "40", "3s", &[]);
    assert!(load.status.success(), "{}", text(&load));
    let rooms = "http_server_requests_seconds_count{uri=\"/rooms\"}";
    let query = format!("max_over_time(sum(rate({rooms}[3s]))[1h:1s])");
    // Prometheus has seen the load end once the rate over the last 3 s is zero: from then on
    // the peak no longer changes.
    let peak = wait_for(
        Duration::from_secs(30),
        "the load's end in Prometheus",
        || {
            let now = prom.scalar(&format!("sum(rate({rooms}[3s]))"))?;
            let peak = prom.scalar(&query)?;
            (now == 0.0 && peak > 0.0).then_some(peak)
        },
    );
    assert!(
        (20.0..80.0).contains(&peak),
        "{query} = {peak}: 40/s were sent"
    );

    // A run at 10/s on another path, judged against the peak read: below it, exit 1.
    let prom_url = format!("http://{}", prom.addr);
    let given = format!("{prom_url} {query}");
    let o = run(&format!("{demo}/health"), "10", "1s", &["--target", &given]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    let read = format!(
        "volley: --target: {} req/s read from Prometheus at {prom_url} (query {query})",
        shown(peak)
    );
    assert!(err.contains(&read), "missing `{read}`:\n{}", text(&o));
    assert!(
        err.contains(&format!("below target {} req/s", shown(peak)))
            && err.contains(&format!(
                "(target {}/s read from Prometheus at {prom_url}: {query})",
                shown(peak)
            )),
        "{}",
        text(&o)
    );
    // With a peak factor of a tenth, the same run meets it.
    let o = run(
        &format!("{demo}/health"),
        "10",
        "1s",
        &["--target", &given, "--peak-factor", "0.1"],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains(&format!("≥ target {} req/s", shown(peak / 10.0))),
        "{}",
        text(&o)
    );
    rt.block_on(target.stop()).unwrap();
}

#[test]
fn answers_that_are_no_single_finite_rate_are_refused() {
    if !need("prometheus") {
        return;
    }
    let prom = Prometheus::start(None);
    let url = format!("http://{}", prom.addr);
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    for (target, said) in [
        (
            format!("{url} no_such_metric_total"),
            "the query returned no series (an empty vector)",
        ),
        (
            format!("{url} label_replace(vector(1), \"a\", \"x\", \"\", \"\") or vector(2)"),
            "the query returned 2 series ({\"a\":\"x\"}, {}), and a target is one number: aggregate them",
        ),
        (format!("{url} 0/0"), "the query's value is NaN, not a rate"),
        (
            format!("{url} vector(0)"),
            "the query's value is 0: a target is a rate above zero",
        ),
        (
            format!("{url} sum("),
            "Prometheus answered HTTP 400: bad_data:",
        ),
        (format!("{url} up[5m]"), "the query returned a range vector"),
        (format!("{url}/no/such/prefix up"), "(HTTP 404) is not JSON"),
        (
            format!("http://{closed} up"),
            "cannot connect to http://127.0.0.1:",
        ),
        (
            format!("https://{}/ up", prom.addr),
            "volley reads Prometheus over plain http only",
        ),
        (
            url.clone(),
            "give the PromQL query after the server's address",
        ),
    ] {
        // Refused while the flags are read: no request reaches --url's port 1.
        let o = volley(&[
            "run",
            "--url",
            "http://127.0.0.1:1/",
            "--rate",
            "10",
            "--duration",
            "1s",
            "--target",
            &target,
        ]);
        assert_eq!(o.status.code(), Some(2), "{target}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(said) && err.contains("--target"),
            "{target}: missing `{said}`:\n{}",
            text(&o)
        );
    }
    // The query API's own URL, as a browser shows it, is read too.
    let o = volley(&[
        "run",
        "--url",
        "http://127.0.0.1:1/",
        "--rate",
        "10",
        "--duration",
        "1s",
        "--target",
        &format!("{url}/api/v1/query?query=vector%28221.4%29"),
        "--peak-factor",
        "2000",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "--target: 221.4 req/s read from Prometheus at {url} (query vector(221.4))"
        )) && err.contains("--peak-factor 2000"),
        "{}",
        text(&o)
    );
}
