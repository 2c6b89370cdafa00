//! The report crate's one error type, shaped as hyper's: an [`Error`] whose [`Kind`] the
//! caller asks about (`kind()`, `is_warmup()`), and a message that says what is wrong in the
//! report's terms; the binary adds which flag to change.

use std::path::PathBuf;

/// A report, chart or gate could not be made or written.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Error(#[from] Repr);

/// Result of a report operation.
pub type Result<T> = std::result::Result<T, Error>;

/// What went wrong, for callers that branch on it.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A file volley wrote (capacity.json) does not read as one.
    Input,
    /// A file or directory could not be created or written.
    Io,
    /// A chart could not be drawn into its file.
    Draw,
    /// A metric name that no comparison has.
    UnknownMetric,
    /// A gated metric that an input cannot give.
    GateUnavailable,
    /// A warm-up that leaves nothing of a run to report.
    Warmup,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum Repr {
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
    /// A warm-up that cannot apply to a source.
    #[error("{path}: {why}")]
    Warmup {
        /// The run or file.
        path: PathBuf,
        /// What is wrong and what to write instead.
        why: String,
    },
}

impl Repr {
    /// An I/O error on `path`.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Repr::Io {
            path: path.into(),
            error: source,
        }
    }
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> Kind {
        match &self.0 {
            Repr::Input { .. } => Kind::Input,
            Repr::Io { .. } => Kind::Io,
            Repr::Draw { .. } => Kind::Draw,
            Repr::UnknownMetric { .. } => Kind::UnknownMetric,
            Repr::GateUnavailable { .. } => Kind::GateUnavailable,
            Repr::Warmup { .. } => Kind::Warmup,
        }
    }

    /// A file could not be created or written.
    pub fn is_io(&self) -> bool {
        self.kind() == Kind::Io
    }

    /// A metric name that no comparison has.
    pub fn is_unknown_metric(&self) -> bool {
        self.kind() == Kind::UnknownMetric
    }

    /// A warm-up that leaves nothing of a run to report.
    pub fn is_warmup(&self) -> bool {
        self.kind() == Kind::Warmup
    }
}

#[cfg(test)]
mod tests {
    use super::Kind;

    #[test]
    fn a_metric_no_comparison_has_is_an_unknown_metric() {
        let e = crate::gate::metric_name("ttfb_p99").unwrap_err();
        assert_eq!(e.kind(), Kind::UnknownMetric, "{e}");
        assert!(e.is_unknown_metric() && !e.is_warmup() && !e.is_io());
        assert!(e.to_string().contains("did you mean `ttfb_p99_ms`?"), "{e}");
    }
}
