//! volley's files: the run directory written while a test runs (and read back after), and
//! readers for the result files other load tools write.
//!
//! Every reader turns a file into a [`volley_stats::Series`] (plus histograms when the file
//! has per-request data), so the metric suite works the same on any source.

pub mod bucket;
mod civil;
pub mod error;
pub mod group;
pub mod hlog;
pub mod import;
pub mod ngrinder;
pub mod note;
mod num;
pub mod numfmt;
mod open;
pub mod recorded;
pub mod rundir;
pub mod runset;
pub mod segment;
pub mod source;

pub use error::{FormatError, Result};
pub use group::{GroupMeta, GroupRun, GroupWriter};
pub use hlog::{HistKey, HistMetric};
pub use note::{Figure, InputNote};
pub use open::{open, open_as};
pub use recorded::RecordedPlan;
pub use rundir::{RunData, RunMeta, RunStatus, RunWriter};
pub use runset::{RunSet, open_run_or_group};
pub use source::{Format, Source, ToolLatency};
