//! Errors that name the file, the line and what was expected.

use std::path::PathBuf;

/// A result file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// The file could not be opened, read or written.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said (in the message itself, not as a source, so a chain of causes
        /// does not print it twice).
        error: std::io::Error,
    },
    /// The content is not what the format requires.
    #[error("{path}:{line}{}: {message}", column.map(|c| format!(":{c}")).unwrap_or_default())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: u64,
        /// 1-based column (field) where known.
        column: Option<u64>,
        /// What was wrong and what was expected.
        message: String,
    },
    /// The file is not a run directory or a format volley reads.
    #[error("{path}: {message}")]
    Unrecognised {
        /// The file or directory.
        path: PathBuf,
        /// What was found and what volley reads.
        message: String,
    },
}

impl FormatError {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        FormatError::Io {
            path: path.into(),
            error: source,
        }
    }

    /// A malformed-content error at `line` (and `column`, 1-based).
    pub fn malformed(
        path: impl Into<PathBuf>,
        line: u64,
        column: Option<u64>,
        message: impl Into<String>,
    ) -> Self {
        FormatError::Malformed {
            path: path.into(),
            line,
            column,
            message: message.into(),
        }
    }
}

/// Result of a format operation.
pub type Result<T> = std::result::Result<T, FormatError>;
