//! The crate's one error type, shaped as hyper's: an [`Error`] whose [`Kind`] the caller asks
//! about (`is_invalid()`), and a message that says what to change.

/// A plan or option that cannot become a working Job; the message says what to change.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Error(#[from] Repr);

/// What went wrong, for callers that branch on it.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A value that Kubernetes would refuse, or that would make a Job that cannot work.
    Invalid,
    /// A file of the plan could not be read.
    Read,
    /// Writing the manifests failed.
    Write,
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> Kind {
        match &self.0 {
            Repr::Invalid(_) => Kind::Invalid,
            Repr::Read { .. } => Kind::Read,
            Repr::Write { .. } => Kind::Write,
        }
    }

    /// A value that would make a Job that Kubernetes refuses or that cannot work.
    pub fn is_invalid(&self) -> bool {
        self.kind() == Kind::Invalid
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum Repr {
    /// A value that Kubernetes would refuse, or that would make a Job that cannot work.
    #[error("{0}")]
    Invalid(String),
    /// A file of the plan could not be read.
    #[error("{path}: cannot read it: {error}")]
    Read {
        path: std::path::PathBuf,
        error: std::io::Error,
    },
    /// Writing the manifests failed.
    #[error("{path}: cannot write it: {error}")]
    Write {
        path: std::path::PathBuf,
        error: std::io::Error,
    },
}

#[cfg(test)]
mod tests {
    use super::Kind;

    #[test]
    fn a_run_id_kubernetes_would_refuse_is_invalid() {
        let e = crate::validate_run_id("Not_A_Name").unwrap_err();
        assert_eq!(e.kind(), Kind::Invalid, "{e}");
        assert!(e.is_invalid());
    }

    #[test]
    fn a_plan_file_that_is_not_there_is_a_read_error() {
        let dir = std::env::temp_dir().join("volley-k8s-error-test-missing");
        let e = crate::bundle(&dir.join("scenario.yaml"), &[]).unwrap_err();
        assert_eq!(e.kind(), Kind::Read, "{e}");
    }
}
