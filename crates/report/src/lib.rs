//! Reports: the figures of a run (or of any result file) laid out for a terminal, for
//! Markdown (the seeds' table layout) and as JSON with a stable schema.
//!
//! Nothing here computes a metric: [`RunReport`] gathers what `volley-stats` computed.

mod causes;
mod error;
mod escape;
mod findings;
mod inputs;
mod marks;
mod model;
mod render;
#[cfg(test)]
mod testrun;

pub use doc::Detail;
pub use error::{Error, Kind, Result};
pub use escape::{md_text, terminal_safe};
pub use model::{
    ErrorLine, ReportOptions, RunReport, SCHEMA_VERSION, TestSuite, ThresholdResult, check_warmup,
    threshold_actual, warmup_seconds,
};
pub use render::{csv, doc, markdown, markdown_with_charts, table};

pub mod capacity;
pub mod charts;
pub mod chartset;
pub mod cluster;
pub mod compare;
pub mod doc;
pub mod gate;
pub mod group;
pub mod history;
pub mod html;
pub mod junit;
pub mod levels;
pub mod sweep;
pub mod trend;
