//! `--out prometheus=URL` against a real Prometheus (Debian's package, started by the test
//! with its remote-write receiver on a free loopback port): after a scenario run against the
//! demo target, Prometheus' HTTP API gives back exactly the request counts the run directory
//! holds, per run and per step, `histogram_quantile` lands within one bucket of volley's own
//! p99, and every panel of grafana/volley.json returns sane series.

use std::time::Duration;

use volley_export::buckets;
use volley_export::testing::Prometheus;
use volley_formats::RunData;
use volley_formats::hlog::HistKey;
use volley_stats::CompactHistogram;

use crate::support::*;

/// The request count of a run, as report.json counts it: tests + errors.
fn requests(s: &volley_stats::Series) -> u64 {
    s.intervals.iter().map(|i| i.tests + i.errors).sum()
}

#[test]
fn remote_write_gives_prometheus_the_exact_counts_and_a_p99_within_one_bucket() {
    if !need("prometheus") {
        return;
    }
    let _g = serial();
    let prom = Prometheus::start(None);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let knobs = volley_demo::Knobs {
        db_pool: 4,
        db_rtt: Duration::from_millis(2),
        ..Default::default()
    };
    let target = rt
        .block_on(volley_demo::start("127.0.0.1:0".parse().unwrap(), &knobs))
        .unwrap();
    let out = out_dir();
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/pair-room.yaml");
    let o = volley(&[
        "run",
        scenario,
        "--url",
        &format!("http://{}", target.addr),
        "--vus",
        "4",
        "--duration",
        "4s",
        "--out",
        &format!("prometheus={}", prom.write_url()),
        "-o",
        out.path().to_str().unwrap(),
        "--progress",
        "none",
    ]);
    rt.block_on(target.stop()).unwrap();
    // The file's thresholds may fail on a loaded machine (exit 1); the run must have run.
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", text(&o));
    let dir = only_run(out.path());
    let data = RunData::read(&dir).unwrap();
    assert_eq!(data.meta.status.name(), "complete", "{}", text(&o));
    let run_id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let sel = format!("run_id=\"{run_id}\"");

    // Nothing was lost on the way, and run.json says so.
    let note = &data.meta.outputs[0];
    assert_eq!(
        (note.kind.as_str(), note.sent, note.failed, note.dropped),
        ("prometheus", data.series.intervals.len() as u64, 0, 0),
        "{note:?}"
    );

    // The run's request count, exactly.
    let total = requests(&data.series);
    assert!(total > 20, "{total} requests");
    let promql = format!("sum(last_over_time(volley_requests_total{{{sel}}}[1h]))");
    assert_eq!(
        prom.scalar(&promql),
        Some(total as f64),
        "{promql}\n{}",
        prom.log()
    );
    // Each step's too.
    assert!(data.steps.len() >= 5, "pair-room has steps");
    for (step, series) in &data.steps {
        let promql =
            format!("sum(last_over_time(volley_step_requests_total{{{sel},step=\"{step}\"}}[1h]))");
        assert_eq!(
            prom.scalar(&promql),
            Some(requests(series) as f64),
            "{promql}"
        );
    }

    // p99 of TTFB from the buckets, against volley's own from latency.hlog.
    let ttfb = CompactHistogram::merge_all(
        data.histograms
            .collect()
            .unwrap()
            .iter()
            .filter(|h| h.key == HistKey::TTFB)
            .map(|h| &h.histogram),
    );
    let volley_p99_us = volley_stats::rank::value_at_percentile(&ttfb, 99.0);
    let promql = format!(
        "histogram_quantile(0.99, sum by (le) (last_over_time(volley_ttfb_seconds_bucket{{{sel}}}[1h])))"
    );
    let prom_p99_s = prom.scalar(&promql).unwrap();
    let (a, b) = (
        buckets::index_of(volley_p99_us),
        buckets::index_of((prom_p99_s * 1e6).round() as u64),
    );
    assert!(
        a.abs_diff(b) <= 1,
        "{promql} = {prom_p99_s} s (bucket {b}); volley's p99 {volley_p99_us} µs (bucket {a})"
    );
    let count = prom
        .scalar(&format!(
            "sum(last_over_time(volley_ttfb_seconds_count{{{sel}}}[1h]))"
        ))
        .unwrap();
    assert_eq!(
        count,
        ttfb.len() as f64,
        "the histogram holds every successful request"
    );

    // Every panel of the Grafana dashboard, its variables filled in, over the run.
    let dashboard: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../grafana/volley.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let ts = |s: &str| s.parse::<jiff::Timestamp>().unwrap().as_millisecond() as f64 / 1000.0;
    let (start, end) = (
        ts(&data.meta.started_at),
        ts(data.meta.ended_at.as_deref().unwrap()) + 2.0,
    );
    let panels = dashboard["panels"].as_array().unwrap();
    assert!(panels.len() >= 6);
    for panel in panels {
        let title = panel["title"].as_str().unwrap();
        let unit = panel["fieldConfig"]["defaults"]["unit"].as_str().unwrap();
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"]
                .as_str()
                .unwrap()
                .replace("$run_id", &run_id)
                .replace("$__rate_interval", "4s");
            let series = prom.query_range(&expr, start, end, 1.0);
            assert!(
                !series.is_empty(),
                "panel {title:?}: {expr} returned nothing"
            );
            let values: Vec<f64> = series
                .iter()
                .flat_map(|(_, v)| v.iter().copied())
                .filter(|v| v.is_finite())
                .collect();
            assert!(
                !values.is_empty() && values.iter().all(|v| *v >= 0.0),
                "panel {title:?}: {expr}: {values:?}"
            );
            let max = values.iter().copied().fold(0.0, f64::max);
            let legend = target["legendFormat"].as_str().unwrap_or_default();
            match unit {
                // Per second, never above the whole run's count; requests flowed.
                "reqps" => {
                    assert!(
                        max <= total as f64,
                        "panel {title:?}: {expr}: {max}/s of {total} requests"
                    );
                    if !legend.contains("error")
                        && !title.contains("Error")
                        && !title.contains("Dropped")
                    {
                        assert!(max > 0.0, "panel {title:?}: {expr}: no throughput");
                    }
                }
                "s" => assert!(
                    max > 0.0 && max < 10.0,
                    "panel {title:?}: {expr}: {values:?}"
                ),
                "short" => assert_eq!(max, 4.0, "panel {title:?}: {expr}: 4 VUs ran"),
                other => panic!("panel {title:?}: unit {other} has no check"),
            }
        }
    }
}

#[test]
fn an_unknown_out_kind_is_a_usage_error_that_lists_the_kinds() {
    let o = volley(&[
        "run",
        "--url",
        "http://127.0.0.1:9/",
        "--vus",
        "1",
        "--duration",
        "1s",
        "--out",
        "influx=http://127.0.0.1:8086",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("unknown kind `influx`")
            && err.contains("prometheus:")
            && err.contains("otlp:"),
        "{err}"
    );
}
