//! `--out prometheus=URL`: Prometheus remote write (protocol 1.0: protobuf `WriteRequest`,
//! snappy block compression), one request per interval, stamped at the interval's end.
//!
//! Counters and histograms are cumulative from the run's start, so a payload that never
//! arrives loses only its own instant: the next one carries the totals. The first payload
//! also carries a zero at the run's start for every series, so `increase()` over the run
//! counts its first interval too.

use volley_record::{IntervalView, Observer, OutputNote, RunStart};

use crate::error::Error;
use crate::model::{Family, Kind, RunMetrics};
use crate::send::{Payload, Sender};

/// The remote-write messages (prometheus/prompb/types.proto, the fields volley sends).
mod prompb {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct WriteRequest {
        #[prost(message, repeated, tag = "1")]
        pub timeseries: Vec<TimeSeries>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TimeSeries {
        #[prost(message, repeated, tag = "1")]
        pub labels: Vec<Label>,
        #[prost(message, repeated, tag = "2")]
        pub samples: Vec<Sample>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Label {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub value: String,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        #[prost(double, tag = "1")]
        pub value: f64,
        #[prost(int64, tag = "2")]
        pub timestamp: i64,
    }
}

/// Sends a run's metrics to a Prometheus remote-write endpoint.
pub struct RemoteWrite {
    sender: Sender,
    run: Option<RunMetrics>,
}

impl RemoteWrite {
    /// Starts the sender for `url` (e.g. `http://prometheus:9090/api/v1/write`).
    pub fn new(url: &str) -> Result<RemoteWrite, Error> {
        Ok(RemoteWrite {
            sender: Sender::start("prometheus", url)?,
            run: None,
        })
    }
}

impl Observer for RemoteWrite {
    fn started(&mut self, run: &RunStart<'_>) {
        self.run = Some(RunMetrics::new(run));
    }

    fn interval(&mut self, iv: &IntervalView<'_>) {
        let Some(run) = &mut self.run else { return };
        let first = run.intervals == 0;
        run.add(iv);
        let at = run.stamp_ms(iv);
        let body = encode(&run.families(), first.then(|| run.start_ms()), at);
        self.sender.send(Payload {
            body,
            headers: HEADERS.to_vec(),
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

const HEADERS: [(&str, &str); 4] = [
    ("content-type", "application/x-protobuf"),
    ("content-encoding", "snappy"),
    ("x-prometheus-remote-write-version", "0.1.0"),
    ("user-agent", concat!("volley/", env!("CARGO_PKG_VERSION"))),
];

/// The snappy-compressed `WriteRequest` of `families` at `at` (ms), with a zero at `zero_at`
/// before it when given.
pub(crate) fn encode(families: &[Family], zero_at: Option<i64>, at: i64) -> Vec<u8> {
    let mut req = prompb::WriteRequest::default();
    for f in families {
        for s in &f.samples {
            let mut labels: Vec<prompb::Label> = s
                .labels
                .iter()
                .map(|(k, v)| prompb::Label {
                    name: k.to_string(),
                    value: v.clone(),
                })
                .collect();
            labels.push(prompb::Label {
                name: "__name__".into(),
                value: format!("{}{}", f.name, s.suffix),
            });
            // The spec wants labels sorted by name.
            labels.sort_by(|a, b| a.name.cmp(&b.name));
            let mut samples = Vec::with_capacity(2);
            if let Some(t0) = zero_at
                && f.kind != Kind::Gauge
            {
                samples.push(prompb::Sample {
                    value: 0.0,
                    timestamp: t0,
                });
            }
            samples.push(prompb::Sample {
                value: s.value,
                timestamp: at,
            });
            req.timeseries.push(prompb::TimeSeries { labels, samples });
        }
    }
    let bytes = prost::Message::encode_to_vec(&req);
    // Compressing a Vec cannot fail below snappy's 4 GB limit.
    snap::raw::Encoder::new()
        .compress_vec(&bytes)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Sample;

    #[test]
    fn a_payload_decodes_back_with_sorted_labels_and_the_zero_first() {
        let f = Family {
            name: "volley_requests".into(),
            help: "",
            kind: Kind::Counter,
            unit: None,
            samples: vec![Sample {
                suffix: "_total",
                labels: vec![("run_id", "r1".into()), ("name", "n".into())],
                value: 42.0,
            }],
        };
        let body = encode(&[f], Some(1000), 2000);
        let raw = snap::raw::Decoder::new().decompress_vec(&body).unwrap();
        let req: prompb::WriteRequest = prost::Message::decode(raw.as_slice()).unwrap();
        let ts = &req.timeseries[0];
        let names: Vec<&str> = ts.labels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["__name__", "name", "run_id"]);
        assert_eq!(ts.labels[0].value, "volley_requests_total");
        assert_eq!(
            ts.samples,
            [
                prompb::Sample {
                    value: 0.0,
                    timestamp: 1000
                },
                prompb::Sample {
                    value: 42.0,
                    timestamp: 2000
                }
            ]
        );
    }
}
