//! The test plan: what to send, and how the load is shaped over time; scenario files
//! (YAML) with their templates, extraction, checks and test data.
//!
//! The plan itself is data and arithmetic: the engine asks a [`LoadShape`] how many virtual
//! users should be running at any instant, and sends what a [`RequestSpec`] describes. I/O
//! happens only when a scenario is loaded: [`load_scenario`] reads the YAML file and looks up
//! the environment variables it names, and compiling it ([`parse_scenario`]) reads each CSV
//! feeder it declares whole ([`data::Feeder::load`]). Nothing here touches the network.

pub mod data;
pub mod duration;
pub mod extract;
pub mod file;
pub mod grpc;
pub mod json;
pub mod limits;
pub mod load;
pub mod percent;
pub mod plan;
pub mod rate;
pub mod scenario;
pub mod secret;
pub mod segment;
pub mod stages;
pub mod suggest;
pub mod template;
pub mod threshold;
pub mod warmup;
pub mod words;

pub use duration::parse_duration;
pub(crate) use duration::secs;
pub use file::{ScenarioError, ScenarioErrors, load_scenario, load_scenario_with, parse_scenario};
pub use load::{Load, LoadSpec, Model};
pub use plan::{Plan, RequestSpec, Settings, StatusSet, Work, default_run_name};
pub use rate::{ArrivalClock, ArrivalWait, Arrivals, RateShape, RateStage, parse_rate};
pub use scenario::{Population, Scenario, StepInfo, StepKind, qualified_step};
pub use segment::Segment;
pub use stages::{LoadShape, Stage, parse_stages};
pub use threshold::{Threshold, parse_threshold};
pub use warmup::Warmup;

/// A plan value that could not be parsed; the message says what was expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct PlanError(pub String);

impl From<String> for PlanError {
    fn from(message: String) -> Self {
        PlanError(message)
    }
}

impl From<PlanError> for String {
    fn from(e: PlanError) -> Self {
        e.0
    }
}

/// The message, to read as text.
impl std::ops::Deref for PlanError {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<&str> for PlanError {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}
