//! The test plan: what to send, and how the load is shaped over time.
//!
//! Pure data and arithmetic, no I/O: the engine asks a [`LoadShape`] how many virtual users
//! should be running at any instant, and sends what a [`RequestSpec`] describes.

pub mod duration;
pub mod plan;
pub mod rate;
pub mod stages;
pub mod threshold;

pub use duration::parse_duration;
pub use plan::{Load, Plan, RequestSpec, StatusSet};
pub use rate::{RateShape, RateStage, parse_rate};
pub use stages::{LoadShape, Stage, parse_stages};
pub use threshold::{Threshold, parse_threshold};

/// A plan value that could not be parsed; the message says what was expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct PlanError(pub String);
