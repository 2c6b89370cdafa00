//! Any result volley can read — a run directory or another tool's file — opened into one
//! shape, so reports and comparisons treat them alike.

use std::path::{Path, PathBuf};

use hdrhistogram::Histogram;
use volley_stats::{CompactHistogram, LatencySummary, Series};

use crate::error::{FormatError, Result};
use crate::hlog::LoggedHistogram;
use crate::rundir::{RunData, RunMeta};

/// Formats `open` recognises, for error messages.
pub const READABLE: &str = "a volley run directory, nGrinder output.csv";

/// A result opened for reporting.
#[derive(Debug, Clone)]
pub struct Source {
    /// Where it came from.
    pub path: PathBuf,
    /// A short name (the run's name, or the file name).
    pub name: String,
    /// The format it was read as.
    pub format: &'static str,
    /// The totals series.
    pub series: Series,
    /// Per-test series (nGrinder test ids, scenario steps), with their names.
    pub per_test: Vec<(String, Series)>,
    /// Per-interval histograms, tagged `ttfb` / `total`; empty for per-interval formats.
    pub histograms: Vec<LoggedHistogram>,
    /// Errors by kind per interval, where known.
    pub errors_by_kind: Vec<[u64; 6]>,
    /// run.json, for volley runs.
    pub meta: Option<RunMeta>,
}

impl Source {
    /// A volley run directory.
    pub fn from_run(run: RunData) -> Source {
        Source {
            name: run.meta.name.clone(),
            path: run.dir,
            format: "volley",
            series: run.series,
            per_test: Vec::new(),
            histograms: run.histograms,
            errors_by_kind: run.errors_by_kind,
            meta: Some(run.meta),
        }
    }

    /// Whether per-request histograms are available.
    pub fn has_histograms(&self) -> bool {
        !self.histograms.is_empty()
    }

    /// All histograms of `tag` from `warmup_s` on, merged.
    pub fn merged(&self, tag: &str, warmup_s: f64) -> Histogram<u64> {
        CompactHistogram::merge_all(
            self.histograms.iter().filter(|l| l.tag == tag && l.start_s + 1e-9 >= warmup_s).map(|l| &l.histogram),
        )
    }

    /// Per-request summary of `tag` from `warmup_s` on.
    pub fn latency(&self, tag: &str, warmup_s: f64) -> Option<LatencySummary> {
        LatencySummary::from_histogram(&self.merged(tag, warmup_s))
    }

    /// One histogram of `tag` per series row from `warmup_s` on (empty where a row has none),
    /// or `None` when the source has no histograms.
    pub fn per_interval(&self, tag: &str, warmup_s: f64) -> Option<Vec<CompactHistogram>> {
        if !self.has_histograms() {
            return None;
        }
        let rows = self.series.after_warmup(warmup_s);
        Some(
            rows.intervals
                .iter()
                .map(|row| {
                    self.histograms
                        .iter()
                        .find(|l| l.tag == tag && (l.start_s - row.start_s).abs() < 1e-3)
                        .map(|l| l.histogram.clone())
                        .unwrap_or_default()
                })
                .collect(),
        )
    }
}

/// Opens a run directory or a result file, detecting the format from the content.
pub fn open(path: &Path) -> Result<Source> {
    if path.is_dir() {
        if !RunData::is_run_dir(path) {
            return Err(FormatError::Unrecognised {
                path: path.to_path_buf(),
                message: format!("not a volley run directory (no run.json and series.csv); volley reads {READABLE}"),
            });
        }
        return Ok(Source::from_run(RunData::read(path)?));
    }
    let text = std::fs::read_to_string(path).map_err(|e| FormatError::io(path, e))?;
    if crate::ngrinder::sniff(&text) {
        let file = crate::ngrinder::parse(path, &text)?;
        return Ok(Source {
            path: path.to_path_buf(),
            name: file_name(path),
            format: "ngrinder",
            series: file.total,
            per_test: file.tests,
            histograms: Vec::new(),
            errors_by_kind: Vec::new(),
            meta: None,
        });
    }
    Err(FormatError::Unrecognised {
        path: path.to_path_buf(),
        message: format!("not a format volley reads; it reads {READABLE}"),
    })
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}
