//! The crate's one error type, shaped as hyper's: an [`Error`] whose [`Kind`] the caller asks
//! about (`is_malformed()`), and a message that names the file, the line and what was expected.

use std::path::PathBuf;

/// A result file could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Error(Repr);

/// Result of a format operation.
pub type Result<T> = std::result::Result<T, Error>;

/// What went wrong, for callers that branch on it.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The file could not be opened, read or written.
    Io,
    /// The content is not what the format requires.
    Malformed,
    /// The file is not a run directory or a format volley reads.
    Unrecognised,
}

#[derive(Debug, thiserror::Error)]
enum Repr {
    #[error("{path}: {error}")]
    Io {
        path: PathBuf,
        /// What the OS said (in the message itself, not as a source, so a chain of causes
        /// does not print it twice).
        error: std::io::Error,
    },
    #[error("{path}:{line}{}: {message}", column.map(|c| format!(":{c}")).unwrap_or_default())]
    Malformed {
        path: PathBuf,
        /// 1-based line.
        line: u64,
        /// 1-based column (field) where known.
        column: Option<u64>,
        message: String,
    },
    #[error("{path}: {message}")]
    Unrecognised { path: PathBuf, message: String },
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error(Repr::Io {
            path: path.into(),
            error: source,
        })
    }

    /// A malformed-content error at `line` (and `column`, 1-based).
    pub fn malformed(
        path: impl Into<PathBuf>,
        line: u64,
        column: Option<u64>,
        message: impl Into<String>,
    ) -> Self {
        Error(Repr::Malformed {
            path: path.into(),
            line,
            column,
            message: message.into(),
        })
    }

    /// `path` is not a run directory or a format volley reads: `message` says what was found
    /// and what volley reads.
    pub fn unrecognised(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Error(Repr::Unrecognised {
            path: path.into(),
            message: message.into(),
        })
    }

    /// What went wrong.
    pub fn kind(&self) -> Kind {
        match &self.0 {
            Repr::Io { .. } => Kind::Io,
            Repr::Malformed { .. } => Kind::Malformed,
            Repr::Unrecognised { .. } => Kind::Unrecognised,
        }
    }

    /// The content is not what the format requires.
    pub fn is_malformed(&self) -> bool {
        self.kind() == Kind::Malformed
    }

    /// The file is not a run directory or a format volley reads.
    pub fn is_unrecognised(&self) -> bool {
        self.kind() == Kind::Unrecognised
    }

    /// A malformed-content error's line counted from `base` lines further on (a part's line
    /// as the file's); any other error as it is.
    pub fn rebased(mut self, base: u64) -> Self {
        if let Repr::Malformed { line, .. } = &mut self.0 {
            *line += base;
        }
        self
    }

    /// A malformed-content error with `note` added to what was wrong; any other error as it is.
    pub fn noted(mut self, note: &str) -> Self {
        if let Repr::Malformed { message, .. } = &mut self.0 {
            message.push(' ');
            message.push_str(note);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::Kind;

    #[test]
    fn a_row_the_reader_refuses_is_malformed_and_a_read_that_fails_is_io() {
        use crate::rows::{Dialect, records, stream};
        let path = std::path::Path::new("series.csv");
        let refuse = |_: &crate::rows::Fields<'_>, line: u64| {
            Err(super::Error::malformed(path, line, Some(2), "not a number"))
        };
        let e = records(path, b"a,b\n", 4, true, Dialect::csv(b','), refuse).unwrap_err();
        assert_eq!(e.kind(), Kind::Malformed, "{e}");
        assert!(e.is_malformed() && !e.is_unrecognised());
        assert_eq!(e.rebased(10).to_string(), "series.csv:11:2: not a number");
        // Reading a directory as a file fails with the OS's error.
        let dir = std::env::temp_dir();
        let e = stream(
            &dir,
            std::fs::File::open(&dir).unwrap(),
            Dialect::csv(b','),
            1,
            |_, _| Ok(()),
        )
        .unwrap_err();
        assert_eq!(e.kind(), Kind::Io, "{e}");
    }
}
