//! The crate's one error type, shaped as hyper's: an [`Error`] whose [`Kind`] the caller asks
//! about (`is_location()`), and a message that says what to change.

/// What went wrong talking to object storage; the message says what to change.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Error(#[from] Repr);

/// What went wrong, for callers that branch on it.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The URL is not `s3://bucket/prefix`.
    Location,
    /// The environment does not describe a usable endpoint or credentials, or a name cannot
    /// be an object's.
    Config,
    /// A local file or directory could not be read or written.
    Io,
    /// The object store refused or failed a request.
    Remote,
    /// A key under the prefix would be written outside the destination directory.
    UnsafeKey,
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> Kind {
        match &self.0 {
            Repr::Location { .. } => Kind::Location,
            Repr::Config(_) => Kind::Config,
            Repr::Io { .. } => Kind::Io,
            Repr::Remote { .. } => Kind::Remote,
            Repr::UnsafeKey(_) => Kind::UnsafeKey,
        }
    }

    /// The URL is not `s3://bucket/prefix`.
    pub fn is_location(&self) -> bool {
        self.kind() == Kind::Location
    }

    /// The object store refused or failed a request.
    pub fn is_remote(&self) -> bool {
        self.kind() == Kind::Remote
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum Repr {
    /// The URL is not `s3://bucket/prefix`.
    #[error("`{url}`: {why}; write it as s3://BUCKET/PREFIX, e.g. s3://load-results/volley")]
    Location { url: String, why: String },
    /// The environment does not describe a usable endpoint or credentials.
    #[error("{0}")]
    Config(String),
    /// A local file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    /// The object store refused or failed a request.
    #[error("{what}: {source}")]
    Remote {
        what: String,
        source: object_store::Error,
    },
    /// A key under the prefix would be written outside the destination directory.
    #[error(
        "object `{0}` has a name that is not a plain relative path (`..`, `.` or an empty part); refusing to write it"
    )]
    UnsafeKey(String),
}

impl Repr {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        Repr::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Kind;
    use crate::Location;

    #[test]
    fn a_url_that_is_not_s3_is_a_location_error() {
        let e = "https://bucket/prefix".parse::<Location>().unwrap_err();
        assert_eq!(e.kind(), Kind::Location, "{e}");
        assert!(e.is_location() && !e.is_remote());
        assert!(
            e.to_string().contains("write it as s3://BUCKET/PREFIX"),
            "{e}"
        );
    }
}
