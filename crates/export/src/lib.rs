//! A run's metrics out while it runs, for the team's Prometheus, Grafana and OpenTelemetry:
//!
//! - `--out prometheus=URL`: Prometheus remote write ([`RemoteWrite`]);
//! - `--out otlp=URL`: OTLP/HTTP metrics, delta temporality, exponential histograms ([`Otlp`]);
//! - `/metrics`: the same series as OpenMetrics text for a Prometheus that pulls
//!   ([`MetricsEndpoint`], an [`axum::Router`] the dashboard mounts).
//!
//! Every output is a [`volley_record::Observer`]: it sees each interval after the recorder
//! wrote it, so nothing it sends can disagree with the run directory. Latency goes out as
//! histograms (cumulative `le` buckets, or exponential ones for OTLP), never as percentiles:
//! percentiles cannot be added across segments or intervals, buckets can. Sending happens on
//! a thread of its own behind a bounded queue ([`send`]); the run never waits on the network,
//! and how sending went is written to run.json's `outputs`.

pub mod buckets;
mod error;
pub mod model;
pub mod openmetrics;
pub mod otlp;
pub mod remote_write;
pub mod send;

pub use error::{Error, Kind};
pub use openmetrics::MetricsEndpoint;
pub use otlp::Otlp;
pub use remote_write::RemoteWrite;

use error::Repr;
use volley_record::{IntervalView, Observer, OutputNote, RunStart};

/// The kinds of `--out`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputKind {
    /// Prometheus remote write.
    Prometheus,
    /// OTLP/HTTP metrics.
    Otlp,
}

impl OutputKind {
    /// Every kind, with what it is, as the error for an unknown one lists them.
    pub const ALL: [(OutputKind, &'static str, &'static str); 2] = [
        (
            OutputKind::Prometheus,
            "prometheus",
            "Prometheus remote write, e.g. prometheus=http://127.0.0.1:9090/api/v1/write",
        ),
        (
            OutputKind::Otlp,
            "otlp",
            "OTLP/HTTP metrics, e.g. otlp=http://127.0.0.1:4318 (/v1/metrics is added)",
        ),
    ];

    /// Its name in `--out`.
    pub fn name(self) -> &'static str {
        OutputKind::ALL
            .iter()
            .find(|(k, ..)| *k == self)
            .map_or("", |(_, n, _)| n)
    }
}

/// One `--out KIND=URL`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputSpec {
    pub kind: OutputKind,
    pub url: String,
}

impl OutputSpec {
    /// Parses `KIND=URL`.
    pub fn parse(s: &str) -> Result<OutputSpec, Error> {
        let kinds = || {
            OutputKind::ALL
                .iter()
                .map(|(_, n, what)| format!("  {n}: {what}"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let Some((kind, url)) = s.split_once('=') else {
            return Err(Repr::Spec {
                given: s.into(),
                why: format!("write KIND=URL; the kinds are:\n{}", kinds()),
            }
            .into());
        };
        let Some((kind, ..)) = OutputKind::ALL
            .iter()
            .find(|(_, n, _)| n.eq_ignore_ascii_case(kind.trim()))
        else {
            return Err(Repr::Spec {
                given: s.into(),
                why: format!("unknown kind `{kind}`; the kinds are:\n{}", kinds()),
            }
            .into());
        };
        let url = url.trim();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(Repr::Spec {
                given: s.into(),
                why: "the URL must start with http:// or https://".into(),
            }
            .into());
        }
        send::checked_url(kind.name(), url)?;
        Ok(OutputSpec {
            kind: *kind,
            url: url.to_string(),
        })
    }

    /// Starts the output (its sender thread; nothing is sent before the run starts).
    pub fn start(&self) -> Result<Output, Error> {
        Ok(match self.kind {
            OutputKind::Prometheus => Output::Prometheus(Box::new(RemoteWrite::new(&self.url)?)),
            OutputKind::Otlp => Output::Otlp(Box::new(Otlp::new(&self.url)?)),
        })
    }
}

/// A started `--out`.
pub enum Output {
    /// Boxed, as is the other: each holds its encoder's buffers and its sender.
    Prometheus(Box<RemoteWrite>),
    Otlp(Box<Otlp>),
}

impl Output {
    fn inner(&mut self) -> &mut dyn Observer {
        match self {
            Output::Prometheus(o) => o.as_mut(),
            Output::Otlp(o) => o.as_mut(),
        }
    }
}

impl Observer for Output {
    fn started(&mut self, run: &RunStart<'_>) {
        self.inner().started(run);
    }
    fn interval(&mut self, iv: &IntervalView<'_>) {
        self.inner().interval(iv);
    }
    fn finished(&mut self) {
        self.inner().finished();
    }
    fn outputs(&mut self) -> Vec<OutputNote> {
        self.inner().outputs()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_specs_parse_and_unknown_kinds_list_the_known_ones() {
        let s = OutputSpec::parse("prometheus=http://127.0.0.1:9090/api/v1/write").unwrap();
        assert_eq!(s.kind, OutputKind::Prometheus);
        assert_eq!(
            OutputSpec::parse("OTLP=https://c:4318").unwrap().kind,
            OutputKind::Otlp
        );
        let e = OutputSpec::parse("influx=http://x")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown kind `influx`") && e.contains("prometheus:") && e.contains("otlp:"),
            "{e}"
        );
        assert!(
            OutputSpec::parse("prometheus")
                .unwrap_err()
                .to_string()
                .contains("KIND=URL")
        );
        assert!(
            OutputSpec::parse("prometheus=localhost:9090")
                .unwrap_err()
                .to_string()
                .contains("http://")
        );
    }
}

#[cfg(feature = "testing")]
pub mod testing;
