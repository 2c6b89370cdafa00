//! The crate's one error type, shaped as hyper's: an [`Error`] whose [`Kind`] the caller asks
//! about (`is_starts_apart()`), and a message that says what is wrong and what to do in the
//! merge's terms; the binary names the flags.

use std::path::PathBuf;

/// Why segments could not be merged. Every message says what to do instead.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Error(#[from] Repr);

/// What went wrong, for callers that branch on it.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An input could not be read.
    Read,
    /// No run directory was found under the inputs.
    NoRuns,
    /// A run directory is not a segment of a split run.
    NotASegment,
    /// Two directories hold the same segment.
    Duplicate,
    /// The segments do not belong to one run.
    Mismatch,
    /// A segment's plan was edited after its run.
    PlanEdited,
    /// The segments started too far apart for their intervals to line up.
    StartsApart,
    /// The output could not be written.
    Output,
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> Kind {
        match &self.0 {
            Repr::Read(_) => Kind::Read,
            Repr::NoRuns(_) => Kind::NoRuns,
            Repr::NotASegment(_) => Kind::NotASegment,
            Repr::Duplicate { .. } => Kind::Duplicate,
            Repr::Mismatch { .. } => Kind::Mismatch,
            Repr::PlanEdited { .. } => Kind::PlanEdited,
            Repr::StartsApart { .. } => Kind::StartsApart,
            Repr::Output(..) => Kind::Output,
        }
    }

    /// A run directory is not a segment of a split run.
    pub fn is_not_a_segment(&self) -> bool {
        self.kind() == Kind::NotASegment
    }

    /// The segments started too far apart for their intervals to line up.
    pub fn is_starts_apart(&self) -> bool {
        self.kind() == Kind::StartsApart
    }
}

impl From<volley_rundir::Error> for Error {
    fn from(e: volley_rundir::Error) -> Error {
        Error(Repr::Read(e))
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum Repr {
    /// An input could not be read.
    #[error(transparent)]
    Read(volley_rundir::Error),
    /// No run directory was found under the inputs.
    #[error(
        "no run directory under {0}: give the segments' run directories (each holds run.json and series.csv), or a directory that holds them"
    )]
    NoRuns(String),
    /// A run directory is not a segment.
    #[error(
        "{0}: not a segment of a split run (its run.json has no `segment`); merge the run directories of the segments of one split run"
    )]
    NotASegment(PathBuf),
    /// Two directories hold the same segment.
    #[error(
        "segment {segment} appears twice: {first} and {second} (a retried pod?); keep the one to merge and leave the other out"
    )]
    Duplicate {
        /// `i/N`.
        segment: String,
        /// The first directory.
        first: PathBuf,
        /// The second.
        second: PathBuf,
    },
    /// The segments do not belong to one run.
    #[error(
        "{dir}: {what} is {theirs}, but {first} has {ours}; merge only the segments of one run"
    )]
    Mismatch {
        /// The segment that differs.
        dir: PathBuf,
        /// What differs: its run id, plan, segment count, interval.
        what: &'static str,
        /// Its value.
        theirs: String,
        /// The first segment's directory.
        first: PathBuf,
        /// The first segment's value.
        ours: String,
    },
    /// A segment's plan is not the plan its hash was recorded for: run.json was edited.
    #[error(
        "{dir}: the plan in its run.json hashes to {recomputed}, but the segment was recorded with plan hash {recorded}: the plan was edited after the run (its URL, its VUs?), and its figures would be merged under a plan they were not recorded with; merge the run directories as volley wrote them"
    )]
    PlanEdited {
        /// The segment's directory.
        dir: PathBuf,
        /// `segment.plan_hash` in its run.json.
        recorded: String,
        /// The hash of the plan its run.json holds.
        recomputed: String,
    },
    /// The segments started too far apart for their intervals to line up.
    #[error(
        "segments started {apart_ms:.0} ms apart ({first} at {first_at}, {last} at {last_at}), more than the tolerance of {tolerance_ms:.0} ms: their intervals would not line up. Start them at one time, or widen the start tolerance"
    )]
    StartsApart {
        /// Earliest start's directory.
        first: PathBuf,
        /// Its start.
        first_at: String,
        /// Latest start's directory.
        last: PathBuf,
        /// Its start.
        last_at: String,
        /// How far apart, ms.
        apart_ms: f64,
        /// The tolerance, ms.
        tolerance_ms: f64,
    },
    /// The output could not be written.
    #[error("{0}: {1}")]
    Output(PathBuf, String),
}
