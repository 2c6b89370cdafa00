//! The crate's one error type, shaped as hyper's: an [`Error`] with a [`Kind`] the caller asks
//! about (`is_target()`), and a message that says what happened, not which flag to change.

use std::fmt;

/// What went wrong in a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The target could not be reached or stopped answering (the pre-flight check failed, the
    /// connection was refused): the search ends with what it found, as `target_failed`.
    Target,
    /// Anything else (the run directory could not be written, ...): the search cannot go on.
    Other,
}

/// A probe that could not be run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: Kind,
    message: String,
}

impl Error {
    /// An error of `kind` saying `message`.
    pub fn new(kind: Kind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
        }
    }

    /// Its kind.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The target could not be reached.
    pub fn is_target(&self) -> bool {
        self.kind == Kind::Target
    }

    /// What happened.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
