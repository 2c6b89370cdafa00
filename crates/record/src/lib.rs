//! Recording a run: a resolved plan ([`RunSpec`]) run by the engine, every interval written
//! to a run directory as it ends, the server's own metrics scraped beside it, and run.json
//! kept current (plan, status, errors, scrapes).
//!
//! It is a library, not part of the binary, so that `volley run`, `volley demo`,
//! `volley sweep`, the tests — and any later launcher that runs segments of one plan —
//! all record a run the same way by calling [`record`] with a typed plan. Reports are
//! computed afterwards from what is on disk (`volley-report`), never from memory.
//!
//! - [`spec`]: what a run is ([`RunSpec`]) and run.json as it starts;
//! - [`observer`]: what a caller is shown while it records;
//! - [`record`](mod@record): one run; [`populations`]: several side by side; [`group`]: the
//!   same run repeated.

use std::path::PathBuf;

use volley_rundir::RunStatus;

mod error;
mod group;
pub mod observer;
pub mod populations;
mod record;
pub mod spec;
mod write;

pub use error::{Error, Kind, Result};
pub use group::{GroupSpec, RecordedGroup, record_group};
pub use observer::{IntervalView, Observer, Observers, Quiet, RunStart};
pub use populations::PopulationSpec;
pub use record::record;
pub use spec::RunSpec;
pub use volley_rundir::rundir::OutputNote;

/// A recorded run.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Its run directory.
    pub dir: PathBuf,
    /// How it ended.
    pub status: RunStatus,
    /// Why it stopped early, when it did.
    pub reason: Option<String>,
}
