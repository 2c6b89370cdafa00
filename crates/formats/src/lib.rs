//! Every result volley reads, as one [`Source`]: a run directory (`volley-rundir`) or the
//! result file of another load tool — nGrinder's CSV, k6's CSV, NDJSON and summary, JMeter's
//! JTL, Locust's CSVs, Gatling's logs — and run groups as a [`RunSet`].
//!
//! Every reader turns a file into a [`volley_stats::Series`] (plus histograms when the file
//! has per-request data), so the metric suite works the same on any source. The run directory
//! itself and the fast text reading live in crates of their own (`volley-rundir`,
//! `volley-text`); their modules are re-exported here under the names they always had.

pub mod bucket;
pub mod import;
mod open;
pub mod runset;
pub mod source;

pub use volley_rundir::{
    group, histograms, hlog, kube, kubelog, ngrinder, note, numfmt, recorded, rundir, segment,
};
pub use volley_text::error;
use volley_text::{civil, num};

pub use error::{Error, Kind, Result};
pub use group::{GroupMeta, GroupRun, GroupWriter};
pub use hlog::{HistKey, HistMetric};
pub use note::{Figure, InputNote};
pub use open::{open, open_as};
pub use recorded::RecordedPlan;
pub use rundir::{RunData, RunMeta, RunStatus, RunWriter};
pub use runset::{RunSet, open_run_or_group};
pub use source::{Format, Source, ToolLatency};
