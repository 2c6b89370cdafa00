//! `/metrics`: the running (or last) run's series as OpenMetrics text, for a Prometheus that
//! pulls. The same families as remote write, without timestamps (the scrape stamps them).
//!
//! [`MetricsEndpoint`] is both the observer that keeps the figures current and the source
//! of the [`axum::Router`] that serves them: clone it, give one to the run's observers and
//! mount [`MetricsEndpoint::router`] on any axum server (the dashboard's).

use std::fmt::Write;
use std::sync::{Arc, Mutex};

use axum::http::header;
use axum::response::IntoResponse;
use volley_record::{IntervalView, Observer, RunStart};

use crate::model::{Family, Kind, RunMetrics};

/// OpenMetrics' content type.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The figures `/metrics` serves; cheap to clone (clones share them).
#[derive(Clone, Default)]
pub struct MetricsEndpoint {
    run: Arc<Mutex<Option<RunMetrics>>>,
}

impl MetricsEndpoint {
    /// Nothing to serve yet (`/metrics` answers with no series until a run starts).
    pub fn new() -> MetricsEndpoint {
        MetricsEndpoint::default()
    }

    /// `GET /metrics`, serving these figures.
    pub fn router<S: Clone + Send + Sync + 'static>(&self) -> axum::Router<S> {
        let me = self.clone();
        axum::Router::new().route(
            "/metrics",
            axum::routing::get(move || std::future::ready(me.response())),
        )
    }

    /// The current text.
    pub fn text(&self) -> String {
        let run = self.run.lock().unwrap().clone();
        render(&run.map(|r| r.families()).unwrap_or_default())
    }

    fn response(&self) -> axum::response::Response {
        ([(header::CONTENT_TYPE, CONTENT_TYPE)], self.text()).into_response()
    }
}

impl Observer for MetricsEndpoint {
    fn started(&mut self, run: &RunStart<'_>) {
        *self.run.lock().unwrap() = Some(RunMetrics::new(run));
    }

    fn interval(&mut self, iv: &IntervalView<'_>) {
        if let Some(run) = self.run.lock().unwrap().as_mut() {
            run.add(iv);
        }
    }
}

/// OpenMetrics text of `families`, ending in `# EOF`.
pub fn render(families: &[Family]) -> String {
    let mut out = String::with_capacity(families.len() * 512);
    for f in families {
        let kind = match f.kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        };
        let _ = writeln!(out, "# TYPE {} {kind}", f.name);
        if let Some(unit) = f.unit {
            let _ = writeln!(out, "# UNIT {} {unit}", f.name);
        }
        let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
        for s in &f.samples {
            out.push_str(&f.name);
            out.push_str(s.suffix);
            out.push('{');
            for (i, (k, v)) in s.labels.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{k}=\"{}\"", volley_prom::escape_label_value(v));
            }
            let _ = writeln!(out, "}} {}", s.value);
        }
    }
    out.push_str("# EOF\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Sample;

    #[test]
    fn text_has_type_unit_and_eof_and_escapes_labels() {
        let f = Family {
            name: "volley_ttfb_seconds".into(),
            help: "TTFB",
            kind: Kind::Histogram,
            unit: Some("seconds"),
            samples: vec![Sample {
                suffix: "_count",
                labels: vec![("name", "a\"b".into())],
                value: 3.0,
            }],
        };
        assert_eq!(
            render(&[f]),
            "# TYPE volley_ttfb_seconds histogram\n# UNIT volley_ttfb_seconds seconds\n# HELP volley_ttfb_seconds TTFB\nvolley_ttfb_seconds_count{name=\"a\\\"b\"} 3\n# EOF\n"
        );
    }
}
