//! `--out otlp=URL`: OTLP/HTTP metrics (protobuf), one export per interval, **delta**
//! temporality (each point holds that interval alone, from its start to its end), latency
//! as **exponential histograms** made from volley's own HdrHistograms.
//!
//! The messages are the OpenTelemetry project's (`opentelemetry-proto`); they are built here
//! rather than by re-recording every request into the OpenTelemetry SDK: volley has already
//! aggregated each interval, and the SDK would stamp points at its export time instead of
//! the interval's bounds (see docs/metrics-out.md).

use hdrhistogram::Histogram;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{
    AggregationTemporality, ExponentialHistogram, ExponentialHistogramDataPoint, Gauge, Metric,
    NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum, exponential_histogram_data_point::Buckets,
    metric::Data, number_data_point::Value,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use volley_record::{IntervalView, Observer, OutputNote, RunStart};
use volley_stats::{ErrorKind, IntervalSample};

use crate::error::Error;
use crate::send::{Payload, Sender};

/// Most buckets an exponential histogram point carries (OpenTelemetry's default, 160).
pub const MAX_BUCKETS: usize = 160;
/// The finest scale used (2^(2^-8): buckets 0.27 % wide, finer than the 3-digit HdrHistogram).
pub const MAX_SCALE: i32 = 8;

/// Sends a run's metrics to an OTLP/HTTP receiver.
pub struct Otlp {
    sender: Sender,
    run: Option<RunLabels>,
}

/// What every point of a run carries.
struct RunLabels {
    attributes: Vec<KeyValue>,
    steps: Vec<String>,
    started_ns: u64,
    interval_ns: u64,
}

impl Otlp {
    /// Starts the sender. `url` is the receiver's base (`http://collector:4318`, to which
    /// `/v1/metrics` is added) or the full metrics path.
    pub fn new(url: &str) -> Result<Otlp, Error> {
        let full = metrics_url(url);
        Ok(Otlp {
            sender: Sender::start("otlp", &full)?,
            run: None,
        })
    }
}

/// `url` with `/v1/metrics` when it has no path of its own.
/// The query string stays a query (`?tenant=a` is kept after the path).
pub fn metrics_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) if u.path().trim_end_matches('/').is_empty() => {
            u.set_path("/v1/metrics");
            u.to_string()
        }
        _ => url.to_string(),
    }
}

impl Observer for Otlp {
    fn started(&mut self, run: &RunStart<'_>) {
        let labels = crate::model::RunMetrics::new(run);
        let meta = run.meta;
        let segment = meta
            .segment
            .as_ref()
            .map_or_else(|| "0/1".to_string(), |n| n.segment.to_string());
        self.run = Some(RunLabels {
            attributes: vec![
                kv("run_id", labels.run_id()),
                kv("name", &meta.name),
                kv("segment", &segment),
            ],
            steps: meta.steps.iter().map(|s| s.name.clone()).collect(),
            started_ns: nanos(run.started),
            interval_ns: (meta.interval_s * 1e9) as u64,
        });
    }

    fn interval(&mut self, iv: &IntervalView<'_>) {
        let Some(run) = &self.run else { return };
        let body = prost::Message::encode_to_vec(&request(run, iv));
        self.sender.send(Payload {
            body,
            headers: vec![("content-type", "application/x-protobuf")],
        });
    }

    fn finished(&mut self) {
        self.sender.begin_flush();
    }

    fn outputs(&mut self) -> Vec<OutputNote> {
        self.run = None;
        vec![self.sender.flush_note()]
    }
}

fn nanos(t: std::time::SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

fn kv(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.to_string())),
        }),
        ..Default::default()
    }
}

/// The export request of one interval.
fn request(run: &RunLabels, iv: &IntervalView<'_>) -> ExportMetricsServiceRequest {
    let start = run.started_ns + run.interval_ns * iv.index;
    // The drain after the stop (a row of no length) runs from the stop until now.
    let end = if iv.row.period_s > 0.0 {
        start + run.interval_ns
    } else {
        nanos(std::time::SystemTime::now()).max(start + 1)
    };
    let mut metrics = Vec::new();
    part(
        &mut metrics,
        "volley.",
        iv.sample,
        &run.attributes,
        start,
        end,
    );
    for (name, s) in run.steps.iter().zip(iv.steps) {
        let mut attrs = run.attributes.clone();
        attrs.push(kv("step", name));
        part(&mut metrics, "volley.step.", s, &attrs, start, end);
    }
    // One metric per name: merge the steps' points into the first metric of each name.
    let mut merged: Vec<Metric> = Vec::new();
    for m in metrics {
        match merged.iter_mut().find(|g| g.name == m.name) {
            Some(g) => match (&mut g.data, m.data) {
                (Some(Data::Sum(a)), Some(Data::Sum(b))) => a.data_points.extend(b.data_points),
                (Some(Data::ExponentialHistogram(a)), Some(Data::ExponentialHistogram(b))) => {
                    a.data_points.extend(b.data_points)
                }
                _ => {}
            },
            None => merged.push(m),
        }
    }
    let c = &iv.sample.counts;
    merged.push(sum(
        "volley.dropped_arrivals",
        "{arrival}",
        "Open model: arrivals that found no free VU",
        vec![point(&run.attributes, start, end, c.dropped)],
    ));
    merged.push(sum(
        "volley.late_arrivals",
        "{arrival}",
        "Open model: arrivals sent late",
        vec![point(&run.attributes, start, end, c.late)],
    ));
    let gauge = |name: &str, desc: &str, v: f64| Metric {
        name: name.into(),
        description: desc.into(),
        unit: "{vu}".into(),
        data: Some(Data::Gauge(Gauge {
            data_points: vec![NumberDataPoint {
                attributes: run.attributes.clone(),
                time_unix_nano: end,
                value: Some(Value::AsDouble(v)),
                ..Default::default()
            }],
        })),
        ..Default::default()
    };
    merged.push(gauge(
        "volley.vus",
        "Virtual users running at the end of the interval",
        iv.row.vusers,
    ));
    merged.push(gauge(
        "volley.target_vus",
        "The plan's VU target at the end of the interval",
        iv.target_vus as f64,
    ));
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: vec![kv("service.name", "volley")],
                ..Default::default()
            }),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(InstrumentationScope {
                    name: "volley".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..Default::default()
                }),
                metrics: merged,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

fn point(attrs: &[KeyValue], start: u64, end: u64, v: u64) -> NumberDataPoint {
    NumberDataPoint {
        attributes: attrs.to_vec(),
        start_time_unix_nano: start,
        time_unix_nano: end,
        value: Some(Value::AsInt(v as i64)),
        ..Default::default()
    }
}

fn sum(name: &str, unit: &str, desc: &str, points: Vec<NumberDataPoint>) -> Metric {
    Metric {
        name: name.into(),
        description: desc.into(),
        unit: unit.into(),
        data: Some(Data::Sum(Sum {
            data_points: points,
            aggregation_temporality: AggregationTemporality::Delta as i32,
            is_monotonic: true,
        })),
        ..Default::default()
    }
}

/// Requests, errors by kind, bytes, TTFB and total time of one part (the run or a step).
fn part(
    out: &mut Vec<Metric>,
    prefix: &str,
    s: &IntervalSample,
    attrs: &[KeyValue],
    start: u64,
    end: u64,
) {
    let c = &s.counts;
    out.push(sum(
        &format!("{prefix}requests"),
        "{request}",
        "Requests that completed or failed",
        vec![point(attrs, start, end, c.tests + c.errors)],
    ));
    let errors = ErrorKind::ALL
        .into_iter()
        .filter(|k| *k != ErrorKind::NotSent)
        .map(|k| {
            let mut a = attrs.to_vec();
            a.push(kv("kind", k.name()));
            point(&a, start, end, c.errors_by_kind[k.index()])
        })
        .collect();
    out.push(sum(
        &format!("{prefix}errors"),
        "{request}",
        "Failed requests by kind",
        errors,
    ));
    out.push(sum(
        &format!("{prefix}response_bytes"),
        "By",
        "Response body bytes of successful requests",
        vec![point(attrs, start, end, c.bytes)],
    ));
    for (name, desc, h, sum_us) in [
        (
            "ttfb",
            "Time to first byte of successful requests",
            &s.ttfb,
            c.ttfb_sum_us,
        ),
        (
            "request_duration",
            "Total time of successful requests",
            &s.total,
            c.total_sum_us,
        ),
    ] {
        let mut p = exponential(&h.histogram());
        p.attributes = attrs.to_vec();
        p.start_time_unix_nano = start;
        p.time_unix_nano = end;
        p.sum = Some(sum_us as f64 / 1e6);
        out.push(Metric {
            name: format!("{prefix}{name}"),
            description: desc.into(),
            unit: "s".into(),
            data: Some(Data::ExponentialHistogram(ExponentialHistogram {
                data_points: vec![p],
                aggregation_temporality: AggregationTemporality::Delta as i32,
            })),
            ..Default::default()
        });
    }
}

/// The index of the bucket holding `x` (> 0) at `scale`: bucket `i` is (base^i, base^(i+1)]
/// with base = 2^(2^-scale).
pub fn bucket_index(x: f64, scale: i32) -> i32 {
    ((x.log2() * 2f64.powi(scale)).ceil() - 1.0) as i32
}

/// An HdrHistogram of µs as an exponential histogram of seconds: the finest scale (at most
/// [`MAX_SCALE`]) at which its range fits in [`MAX_BUCKETS`]; each HdrHistogram bucket
/// counted at the highest value it stands for.
pub fn exponential(h: &Histogram<u64>) -> ExponentialHistogramDataPoint {
    let mut p = ExponentialHistogramDataPoint {
        count: h.len(),
        ..Default::default()
    };
    if h.is_empty() {
        return p;
    }
    let secs = |us: u64| h.highest_equivalent(us) as f64 / 1e6;
    let (lo, hi) = (secs(h.min()), secs(h.max()));
    let mut scale = MAX_SCALE;
    while scale > -10 && (bucket_index(hi, scale) - bucket_index(lo, scale)) as usize >= MAX_BUCKETS
    {
        scale -= 1;
    }
    let offset = bucket_index(lo, scale);
    let mut counts = vec![0u64; (bucket_index(hi, scale) - offset + 1) as usize];
    for v in h.iter_recorded() {
        counts[(bucket_index(secs(v.value_iterated_to()), scale) - offset) as usize] +=
            v.count_at_value();
    }
    p.scale = scale;
    p.positive = Some(Buckets {
        offset,
        bucket_counts: counts,
    });
    p.min = Some(h.min() as f64 / 1e6);
    p.max = Some(hi);
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metrics_path_is_added_to_a_bare_base_url() {
        assert_eq!(
            metrics_url("http://127.0.0.1:4318"),
            "http://127.0.0.1:4318/v1/metrics"
        );
        assert_eq!(
            metrics_url("http://127.0.0.1:4318/"),
            "http://127.0.0.1:4318/v1/metrics"
        );
        assert_eq!(
            metrics_url("http://c:4318/otlp/v1/metrics"),
            "http://c:4318/otlp/v1/metrics"
        );
        assert_eq!(
            metrics_url("http://c:4318?tenant=a"),
            "http://c:4318/v1/metrics?tenant=a"
        );
        assert_eq!(
            metrics_url("http://c:4318/?tenant=a"),
            "http://c:4318/v1/metrics?tenant=a"
        );
    }

    #[test]
    fn an_exponential_histogram_keeps_every_count_in_the_bucket_of_its_value() {
        let mut h = volley_stats::new_histogram();
        h.record_n(1_000, 5).unwrap(); // 1 ms
        h.record_n(2_000_000, 1).unwrap(); // 2 s
        let p = exponential(&h);
        let b = p.positive.as_ref().unwrap();
        assert_eq!(p.count, 6);
        assert_eq!(b.bucket_counts.iter().sum::<u64>(), 6);
        assert!(b.bucket_counts.len() <= MAX_BUCKETS);
        // The bucket of 1 ms holds 1 ms: base^offset < 0.001 <= base^(offset+1).
        let base = 2f64.powf(2f64.powi(-p.scale));
        assert!(
            base.powi(b.offset) < 0.001 && 0.001 <= base.powi(b.offset + 1) * (1.0 + 1e-9),
            "scale {} offset {}",
            p.scale,
            b.offset
        );
        assert_eq!(b.bucket_counts[0], 5);
        assert_eq!(*b.bucket_counts.last().unwrap(), 1);
        // 1 ms .. 2 s is 11 octaves: scale 3 (8 a octave, 88 buckets) fits, scale 4 does not.
        assert_eq!(p.scale, 3);
    }
}
