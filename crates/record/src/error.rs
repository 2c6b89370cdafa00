//! The crate's one error type, shaped as hyper's: an [`Error`] whose [`Kind`] the caller asks
//! about (`is_engine()`), its message the engine's or the run directory's own.

/// Why a run could not be recorded.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Error(Repr);

/// The crate's result.
pub type Result<T> = std::result::Result<T, Error>;

/// What went wrong, for callers that branch on it.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The engine failed: the target did not answer before the run (nothing was sent or
    /// written), or the run could not be set up ([`Error::engine`] says how).
    Engine,
    /// The run directory could not be written.
    Write,
    /// A thread of the recorder could not be started.
    Start,
    /// The Kubernetes workload (`--kube`) cannot be watched ([`Error::kube`] says why).
    Kube,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum Repr {
    #[error(transparent)]
    Engine(volley_engine::Error),
    #[error(transparent)]
    Write(volley_rundir::Error),
    #[error(transparent)]
    Kube(volley_kube::Error),
    #[error("cannot start {what}: {error}")]
    Start {
        what: &'static str,
        error: std::io::Error,
    },
}

impl Error {
    /// A thread named `what` could not be started.
    pub(crate) fn start(what: &'static str, error: std::io::Error) -> Error {
        Error(Repr::Start { what, error })
    }

    /// What went wrong.
    pub fn kind(&self) -> Kind {
        match &self.0 {
            Repr::Engine(_) => Kind::Engine,
            Repr::Write(_) => Kind::Write,
            Repr::Start { .. } => Kind::Start,
            Repr::Kube(_) => Kind::Kube,
        }
    }

    /// The engine failed (see [`Error::engine`]).
    pub fn is_engine(&self) -> bool {
        self.kind() == Kind::Engine
    }

    /// The run directory could not be written.
    pub fn is_write(&self) -> bool {
        self.kind() == Kind::Write
    }

    /// The engine's error, when the engine failed. (Its message is this error's own, so it is
    /// not also given as `source()`, which would print it twice.)
    pub fn engine(&self) -> Option<&volley_engine::Error> {
        match &self.0 {
            Repr::Engine(e) => Some(e),
            _ => None,
        }
    }
}

impl From<volley_engine::Error> for Error {
    fn from(e: volley_engine::Error) -> Error {
        Error(Repr::Engine(e))
    }
}

impl From<volley_kube::Error> for Error {
    fn from(e: volley_kube::Error) -> Error {
        Error(Repr::Kube(e))
    }
}

impl From<volley_rundir::Error> for Error {
    fn from(e: volley_rundir::Error) -> Error {
        Error(Repr::Write(e))
    }
}
