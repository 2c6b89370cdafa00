//! Readers for other load tools' result files. Each turns a file into a [`Source`]:
//! per-request formats are bucketed into intervals (and give true per-request
//! percentiles); per-interval and summary formats say what they cannot give.

pub mod gatling;
pub mod jmeter;
pub mod k6;
pub mod locust;

pub(crate) use volley_text::{parts, point, rows};

use std::path::Path;

use crate::source::{Format, Source};

/// Interval used when bucketing per-request files.
pub const BUCKET_S: f64 = 1.0;

/// A new source for an imported file.
pub(crate) fn source(path: &Path, format: Format) -> Source {
    Source {
        path: path.to_path_buf(),
        name: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        format,
        series: Default::default(),
        per_test: Vec::new(),
        histograms: Default::default(),
        errors_by_kind: Vec::new(),
        meta: None,
        notes: Vec::new(),
        input_notes: Vec::new(),
        generator: Vec::new(),
        server: Vec::new(),
        kube: Vec::new(),
        kube_log: None,
        step_events: Vec::new(),
        tool_latency: Default::default(),
        merged: Default::default(),
        populations: Vec::new(),
    }
}

/// Latest time stamp accepted, ms since the epoch (the end of the year 9999).
pub(crate) const MAX_EPOCH_MS: f64 = 253_402_300_799_999.0;
/// Longest time a request is accepted to have taken, ms: a week.
pub(crate) const MAX_DURATION_MS: f64 = 7.0 * 86_400_000.0;

/// Why `v` falls outside `0..=max`, in words (`below` and `above` say how it is out);
/// `None` when it is inside.
#[inline]
pub(crate) fn out_of_range(
    v: f64,
    max: f64,
    below: &'static str,
    above: &'static str,
) -> Option<&'static str> {
    if v.is_nan() {
        Some("NaN")
    } else if v.is_infinite() {
        Some("infinite")
    } else if v < 0.0 {
        Some(below)
    } else if v > max {
        Some(above)
    } else {
        None
    }
}

/// Why `ms`, a time stamp in ms since the epoch, cannot place a record; `None` when it can.
#[inline]
pub(crate) fn bad_stamp(ms: f64) -> Option<&'static str> {
    out_of_range(ms, MAX_EPOCH_MS, "before 1970", "after the year 9999")
}

/// Why `ms` is not the time a request took; `None` when it can be.
#[inline]
pub(crate) fn bad_duration(ms: f64) -> Option<&'static str> {
    out_of_range(ms, MAX_DURATION_MS, "negative", "longer than a week")
}

/// `ms` as whole µs (the caller has checked it with [`bad_duration`]).
pub(crate) fn ms_to_us(ms: f64) -> u64 {
    (ms * 1000.0).round().max(0.0) as u64
}
