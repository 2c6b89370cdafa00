//! The run directory: what `volley run` writes while a test runs (run.json, the per-interval
//! series in nGrinder's CSV layout, the latency histograms, the server's scrapes, a group's
//! group.json) and reads back after, with the notes a reader leaves on input it could not take
//! as it stood.
//!
//! It is what recording, merging and the live dashboard need, without the other tools'
//! importers (`volley-formats`), so those crates depend on this one alone.

pub mod group;
pub mod histograms;
pub mod hlog;
pub mod kube;
pub mod kubelog;
pub mod ngrinder;
pub mod note;
pub mod numfmt;
pub mod recorded;
pub mod rundir;
pub mod segment;

pub use group::{GroupMeta, GroupRun, GroupWriter};
pub use histograms::Histograms;
pub use hlog::{HistKey, HistMetric};
pub use note::{Figure, InputNote};
pub use recorded::RecordedPlan;
pub use rundir::{RunData, RunMeta, RunStatus, RunWriter};
pub use volley_text::error;
pub use volley_text::{Error, Kind, Result};
