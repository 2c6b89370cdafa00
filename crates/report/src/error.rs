//! The report crate's one error type.

use std::path::PathBuf;

/// A report or chart could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file or directory could not be created or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// plotters could not draw a chart into its file.
    #[error("{path}: drawing the chart failed: {message}")]
    Draw {
        /// The image file.
        path: PathBuf,
        /// What plotters said.
        message: String,
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
        ReportError::Io { path: path.into(), source }
    }
}

/// Result of a report operation.
pub type Result<T> = std::result::Result<T, ReportError>;
