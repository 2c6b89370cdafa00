//! The crate's one error type, shaped as hyper's: an [`Error`] whose [`Kind`] the caller asks
//! about (`is_spec()`), and a message that says what to change.

/// Why the workload cannot be watched; the message says what to write or grant instead.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Error(#[from] Repr);

/// The crate's result.
pub type Result<T> = std::result::Result<T, Error>;

/// What went wrong, for callers that branch on it.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A `--kube` value that names no workload ([`crate::Spec::parse`]).
    Spec,
    /// No kubeconfig or in-cluster service account could be loaded.
    Config,
    /// The API server refused a request for want of a permission (HTTP 403).
    Forbidden,
    /// The watched object is not there (HTTP 404).
    NotFound,
    /// The API server could not be reached, or answered with another error.
    Api,
    /// A file of the run directory could not be written, or a thread not started.
    Write,
    /// A Deployment did not roll out in time ([`crate::rollout::wait`]).
    Rollout,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum Repr {
    #[error("--kube {value:?}: {why}")]
    Spec { value: String, why: String },
    #[error("--kube: {0}")]
    Config(String),
    #[error(
        "--kube: cannot {verb} {resource} in namespace {namespace} (the API server answered 403: \
         {message}); grant the Role in docs/kubernetes.md (\"Watching the target\")"
    )]
    Forbidden {
        verb: &'static str,
        resource: &'static str,
        namespace: String,
        message: String,
    },
    #[error(
        "--kube: cannot {verb} {resource} in namespace {namespace}: grant the Role in \
         docs/kubernetes.md (\"Watching the target\"){}",
        if why.is_empty() { String::new() } else { format!("; the access review said: {why}") }
    )]
    Denied {
        verb: &'static str,
        resource: &'static str,
        namespace: String,
        why: String,
    },
    #[error("--kube: {what} is not there: {message}")]
    NotFound { what: String, message: String },
    #[error("--kube: cannot {verb} {resource} in namespace {namespace}: {message}")]
    Api {
        verb: &'static str,
        resource: &'static str,
        namespace: String,
        message: String,
    },
    #[error("--kube: {0}")]
    Rollout(String),
    #[error("{path}: cannot write it: {error}")]
    Write {
        path: std::path::PathBuf,
        error: std::io::Error,
    },
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> Kind {
        match &self.0 {
            Repr::Spec { .. } => Kind::Spec,
            Repr::Config(_) => Kind::Config,
            Repr::Forbidden { .. } | Repr::Denied { .. } => Kind::Forbidden,
            Repr::NotFound { .. } => Kind::NotFound,
            Repr::Api { .. } => Kind::Api,
            Repr::Write { .. } => Kind::Write,
            Repr::Rollout(_) => Kind::Rollout,
        }
    }

    /// A `--kube` value that names no workload: a usage error.
    pub fn is_spec(&self) -> bool {
        self.kind() == Kind::Spec
    }

    /// A permission is missing.
    pub fn is_forbidden(&self) -> bool {
        self.kind() == Kind::Forbidden
    }

    pub(crate) fn spec(value: &str, why: impl Into<String>) -> Error {
        Error(Repr::Spec {
            value: value.to_string(),
            why: why.into(),
        })
    }

    pub(crate) fn rollout(why: impl Into<String>) -> Error {
        Error(Repr::Rollout(why.into()))
    }

    pub(crate) fn config(why: impl Into<String>) -> Error {
        Error(Repr::Config(why.into()))
    }

    /// A SelfSubjectAccessReview said no (before the run).
    pub(crate) fn denied(
        verb: &'static str,
        resource: &'static str,
        namespace: &str,
        why: String,
    ) -> Error {
        Error(Repr::Denied {
            verb,
            resource,
            namespace: namespace.to_string(),
            why,
        })
    }

    pub(crate) fn write(path: &std::path::Path, error: std::io::Error) -> Error {
        Error(Repr::Write {
            path: path.to_path_buf(),
            error,
        })
    }

    /// A request `verb resource` in `namespace` failed with `e`: a 403 names the permission,
    /// a 404 the object, anything else the request.
    pub(crate) fn api(
        verb: &'static str,
        resource: &'static str,
        namespace: &str,
        what: &str,
        e: kube::Error,
    ) -> Error {
        match e {
            kube::Error::Api(status) if status.code == 403 => Error(Repr::Forbidden {
                verb,
                resource,
                namespace: namespace.to_string(),
                message: status.message,
            }),
            kube::Error::Api(status) if status.code == 404 => Error(Repr::NotFound {
                what: format!("{what} in namespace {namespace}"),
                message: status.message,
            }),
            e => Error(Repr::Api {
                verb,
                resource,
                namespace: namespace.to_string(),
                message: e.to_string(),
            }),
        }
    }
}
