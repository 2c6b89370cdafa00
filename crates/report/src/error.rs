//! The report crate's one error type.

use std::path::PathBuf;

/// A report or chart could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file volley wrote (capacity.json) does not read as one.
    #[error("{path}: {message}")]
    Input {
        /// The file.
        path: PathBuf,
        /// What is wrong, and what to do.
        message: String,
    },
    /// A file or directory could not be created or written.
    #[error("{path}: {error}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the OS said (in the message, not as a source, so it is printed once).
        error: std::io::Error,
    },
    /// plotters could not draw a chart into its file.
    #[error("{path}: drawing the chart failed: {message}")]
    Draw {
        /// The image file.
        path: PathBuf,
        /// What plotters said.
        message: String,
    },
    /// A metric name that no comparison has.
    #[error("unknown metric `{name}`{}; the metrics are: {}", suggestion.map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default(), valid.join(", "))]
    UnknownMetric {
        /// As given.
        name: String,
        /// The nearest valid name, when it looks like a typo.
        suggestion: Option<&'static str>,
        /// Every valid name.
        valid: Vec<&'static str>,
    },
    /// A figure named for a gate that an input cannot give.
    #[error("{why}; leave `{metric}` out of the gated metrics")]
    GateUnavailable {
        /// The metric.
        metric: String,
        /// Which inputs lack it.
        why: String,
    },
}

/// A warm-up that cannot apply to a source.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {why}")]
pub struct WarmupError {
    /// The run or file.
    pub path: PathBuf,
    /// What is wrong and what to write instead.
    pub why: String,
}

impl ReportError {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        ReportError::Io {
            path: path.into(),
            error: source,
        }
    }
}

/// Result of a report operation.
pub type Result<T> = std::result::Result<T, ReportError>;
