//! The crate's one error type, shaped as hyper's: an [`Error`] whose [`Kind`] the caller asks
//! about (`is_too_few_points()`), and a message in the statistics' terms; the binary names
//! the flags. (`ErrorKind` and `ErrorMessage` are not errors of this crate but the run's
//! request errors, counted.)

use crate::usl::{MIN_POINTS, MIN_R2, Usl};

/// Why no law is given.
#[derive(Debug, Clone, PartialEq)]
pub struct Error(pub(crate) Repr);

/// What went wrong, for callers that branch on it.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Fewer than [`MIN_POINTS`] distinct concurrencies: an input problem.
    TooFewPoints,
    /// The law explains too little of the data to predict from (R² below [`MIN_R2`]): a
    /// verdict that cannot be judged.
    PoorFit,
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> Kind {
        match &self.0 {
            Repr::TooFewPoints(_) => Kind::TooFewPoints,
            Repr::PoorFit(_) => Kind::PoorFit,
        }
    }

    /// Fewer than [`MIN_POINTS`] distinct concurrencies.
    pub fn is_too_few_points(&self) -> bool {
        self.kind() == Kind::TooFewPoints
    }

    /// The law fits the points poorly.
    pub fn is_poor_fit(&self) -> bool {
        self.kind() == Kind::PoorFit
    }

    /// The poor fit, when that is what went wrong.
    pub fn poor_fit(&self) -> Option<&Usl> {
        match &self.0 {
            Repr::PoorFit(u) => Some(u),
            Repr::TooFewPoints(_) => None,
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Error {}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Repr {
    /// Fewer than [`MIN_POINTS`] distinct concurrencies.
    TooFewPoints(usize),
    /// The law explains too little of the data to predict from (R² below [`MIN_R2`]).
    PoorFit(Usl),
}

impl std::fmt::Display for Repr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Repr::TooFewPoints(n) => write!(
                f,
                "{n} usable point{} (concurrency > 0, throughput 0 or more, distinct concurrencies); the law has 3 parameters and needs at least {MIN_POINTS}: measure more levels (a step-up with more stages, or a capacity search over numbers of users)",
                if *n == 1 { "" } else { "s" }
            ),
            Repr::PoorFit(u) => write!(
                f,
                "the law fits these points poorly (R² {:.3} < {MIN_R2}), so it predicts nothing: the throughput is too noisy, or something other than concurrency changed between the points",
                u.r2
            ),
        }
    }
}
