//! The outputs as library observers of a real run against the demo target on loopback:
//! `/metrics` scraped by a real Prometheus, OTLP requests decoded with the OpenTelemetry
//! project's own messages, and a receiver that is not there counted in run.json.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::metrics::v1::{
    AggregationTemporality, metric::Data, number_data_point::Value,
};
use volley_engine::Target;
use volley_export::testing::Prometheus;
use volley_export::{MetricsEndpoint, Otlp, RemoteWrite, buckets};
use volley_formats::{HistKey, RunData, RunStatus};
use volley_record::{Observer, Observers, RunSpec};
use volley_scenario::{LoadSpec, RequestSpec, Settings, Work};
use volley_stats::CompactHistogram;

#[path = "../../cli/tests/it/parts.rs"]
mod parts;
use parts::need;

/// Records `seconds` of 4 VUs against a fresh demo target, watched by `observer`.
fn run(
    rt: &tokio::runtime::Runtime,
    seconds: u32,
    observer: &mut dyn Observer,
) -> (tempfile::TempDir, RunData) {
    let knobs = volley_demo::Knobs {
        db_pool: 4,
        db_rtt: Duration::from_millis(2),
        ..Default::default()
    };
    let target = rt
        .block_on(volley_demo::start("127.0.0.1:0".parse().unwrap(), &knobs))
        .unwrap();
    let url = format!("http://{}/rooms", target.addr);
    let mut load = LoadSpec::default();
    load.set("vus", "4").unwrap();
    load.set("duration", &format!("{seconds}s")).unwrap();
    let plan = Settings {
        load,
        ..Settings::default()
    }
    .plan(Work::Request(RequestSpec::get(&url)))
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut spec = RunSpec::new(plan, Target::resolve(&url).unwrap());
    spec.name = "export".into();
    spec.output = out.path().to_path_buf();
    spec.engine.threads = 1;
    let recorded = volley_record::record(&spec, observer).unwrap();
    rt.block_on(target.stop()).unwrap();
    assert_eq!(recorded.status, RunStatus::Complete);
    let data = RunData::read(&recorded.dir).unwrap();
    (out, data)
}

fn requests(data: &RunData) -> u64 {
    data.series
        .intervals
        .iter()
        .map(|i| i.tests + i.errors)
        .sum()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_real_prometheus_scraping_metrics_gets_the_exact_count_and_the_p99_bucket() {
    if !need("prometheus") {
        return;
    }
    let rt = rt();
    let endpoint = MetricsEndpoint::new();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let router = endpoint.router();
    rt.spawn(async move { axum::serve(listener, router).await });
    let prom = Prometheus::start(Some(addr));
    let (_out, data) = run(&rt, 4, &mut endpoint.clone());
    let total = requests(&data);
    assert!(total > 20, "{total} requests");
    let run_id = data.dir.file_name().unwrap().to_string_lossy().into_owned();
    let sel = format!("job=\"volley\",run_id=\"{run_id}\"");

    // The endpoint itself: OpenMetrics, ending in # EOF.
    let text = endpoint.text();
    assert!(
        text.ends_with("# EOF\n") && text.contains("# TYPE volley_ttfb_seconds histogram"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "volley_requests_total{{run_id=\"{run_id}\",name=\"export\",segment=\"0/1\"}} {total}\n"
        )),
        "{text}"
    );

    // Prometheus scrapes every second: wait (bounded) for a scrape after the run's end.
    let promql = format!("sum(last_over_time(volley_requests_total{{{sel}}}[1h]))");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut got = None;
    while Instant::now() < deadline {
        got = prom.scalar(&promql);
        if got == Some(total as f64) {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    assert_eq!(got, Some(total as f64), "{promql}\n{}", prom.log());
    let health = prom.query("up{job=\"volley\"}");
    assert_eq!(health[0]["value"][1], "1", "{health}");

    let ttfb = CompactHistogram::merge_all(
        data.histograms
            .collect()
            .unwrap()
            .iter()
            .filter(|h| h.key == HistKey::TTFB)
            .map(|h| &h.histogram),
    );
    let promql = format!(
        "histogram_quantile(0.99, sum by (le) (last_over_time(volley_ttfb_seconds_bucket{{{sel}}}[1h])))"
    );
    let p99 = prom.scalar(&promql).unwrap();
    let (a, b) = (
        buckets::index_of(volley_stats::rank::value_at_percentile(&ttfb, 99.0)),
        buckets::index_of((p99 * 1e6).round() as u64),
    );
    assert!(
        a.abs_diff(b) <= 1,
        "{promql} = {p99} (bucket {b}), volley's p99 in bucket {a}"
    );
}

#[test]
fn otlp_exports_delta_sums_and_exponential_histograms_that_add_up_to_the_run() {
    let rt = rt();
    let got: Arc<Mutex<Vec<ExportMetricsServiceRequest>>> = Arc::default();
    let sink = got.clone();
    let app = axum::Router::new().route(
        "/v1/metrics",
        axum::routing::post(
            move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let sink = sink.clone();
                async move {
                    assert_eq!(headers["content-type"], "application/x-protobuf");
                    sink.lock()
                        .unwrap()
                        .push(prost::Message::decode(body.as_ref()).unwrap());
                    axum::http::StatusCode::OK
                }
            },
        ),
    );
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    rt.spawn(async move { axum::serve(listener, app).await });
    let mut otlp = Otlp::new(&format!("http://{addr}")).unwrap();
    let (_out, data) = run(&rt, 3, &mut otlp);
    let note = &data.meta.outputs[0];
    assert_eq!(
        (note.kind.as_str(), note.sent, note.failed, note.dropped),
        ("otlp", data.series.intervals.len() as u64, 0, 0),
        "{note:?}"
    );

    let reqs = got.lock().unwrap();
    assert_eq!(reqs.len(), data.series.intervals.len());
    let (mut requests_sum, mut hist_count, mut last_end) = (0i64, 0u64, 0u64);
    for r in reqs.iter() {
        let metrics = &r.resource_metrics[0].scope_metrics[0].metrics;
        for m in metrics {
            match &m.data {
                Some(Data::Sum(s)) => {
                    assert_eq!(
                        s.aggregation_temporality,
                        AggregationTemporality::Delta as i32,
                        "{}",
                        m.name
                    );
                    if m.name == "volley.requests" {
                        let p = &s.data_points[0];
                        // Intervals follow each other without a gap or an overlap.
                        assert!(
                            last_end == 0 || p.start_time_unix_nano == last_end,
                            "{} after {last_end}",
                            p.start_time_unix_nano
                        );
                        last_end = p.time_unix_nano;
                        let Some(Value::AsInt(n)) = p.value else {
                            panic!("{p:?}")
                        };
                        requests_sum += n;
                    }
                }
                Some(Data::ExponentialHistogram(h)) => {
                    assert_eq!(
                        h.aggregation_temporality,
                        AggregationTemporality::Delta as i32,
                        "{}",
                        m.name
                    );
                    if m.name == "volley.ttfb" {
                        let p = &h.data_points[0];
                        let in_buckets: u64 = p
                            .positive
                            .as_ref()
                            .map_or(0, |b| b.bucket_counts.iter().sum());
                        assert_eq!(in_buckets, p.count);
                        hist_count += p.count;
                    }
                }
                Some(Data::Gauge(_)) => {}
                other => panic!("{}: {other:?}", m.name),
            }
        }
    }
    assert_eq!(requests_sum as u64, requests(&data));
    assert_eq!(
        hist_count,
        data.series.intervals.iter().map(|i| i.tests).sum::<u64>()
    );
}

#[test]
fn a_receiver_that_is_not_there_is_counted_in_run_json_and_the_run_goes_on() {
    let rt = rt();
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut rw = RemoteWrite::new(&format!("http://127.0.0.1:{closed}/api/v1/write")).unwrap();
    let mut endpoint = MetricsEndpoint::new();
    let (_out, data) = run(&rt, 2, &mut Observers(vec![&mut rw, &mut endpoint]));
    let note = &data.meta.outputs[0];
    assert_eq!(
        (note.sent, note.failed, note.dropped),
        (0, data.series.intervals.len() as u64, 0),
        "{note:?}"
    );
    assert!(
        note.last_error
            .as_deref()
            .unwrap_or_default()
            .contains("cannot send"),
        "{note:?}"
    );
    let json = std::fs::read_to_string(data.dir.join("run.json")).unwrap();
    assert!(
        json.contains("\"outputs\"") && json.contains("\"failed\""),
        "{json}"
    );
}
