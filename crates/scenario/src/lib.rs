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
mod error;
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
pub use error::{Error, Kind, Problem};
pub use file::{load_scenario, load_scenario_with, parse_scenario};
pub use load::{Load, LoadSpec, Model};
pub use plan::{Plan, RequestSpec, Settings, StatusSet, Work, default_run_name};
pub use rate::{ArrivalClock, ArrivalWait, Arrivals, RateShape, RateStage, parse_rate};
pub use scenario::{Population, Scenario, StepInfo, StepKind, qualified_step};
pub use segment::Segment;
pub use stages::{LoadShape, Stage, parse_stages};
pub use threshold::{Threshold, parse_threshold};
pub use warmup::Warmup;
