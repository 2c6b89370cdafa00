//! Readers for other load tools' result files. Each turns a file into a [`Source`]:
//! per-request formats are bucketed into intervals (and give true per-request
//! percentiles); per-interval and summary formats say what they cannot give.

pub mod gatling;
pub mod jmeter;
pub mod k6;
pub mod locust;

use std::path::Path;

use crate::source::{Format, Source};

/// Interval used when bucketing per-request files.
pub const BUCKET_S: f64 = 1.0;

/// A new source for an imported file.
pub(crate) fn source(path: &Path, format: Format) -> Source {
    Source {
        path: path.to_path_buf(),
        name: path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        format,
        series: Default::default(),
        per_test: Vec::new(),
        histograms: Vec::new(),
        errors_by_kind: Vec::new(),
        meta: None,
        notes: Vec::new(),
        generator: Vec::new(),
        server: Vec::new(),
        step_events: Vec::new(),
    }
}
