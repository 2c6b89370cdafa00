//! The capacity search of `volley capacity`: the highest load a service serves within its SLO.
//!
//! The binary only dispatches: it turns flags into a [`Plan`] and implements [`Prober`] (one
//! probe is one recorded run at a constant load). Everything the search decides lives here and
//! is tested without a server, over deterministic models of a target (`src/models.rs`):
//!
//! - [`volley_stats::search`] says which load comes next (step up, then bisect);
//! - [`policy`] runs the probes and reads them: retries, confirmations, recovery checks, the
//!   rules that make a probe fail whatever its latency said (errors, a fall in throughput),
//!   when the generator is to blame, and how the search ends ([`policy::Ended`]);
//! - [`early_stop`] is the rule a probe is stopped by while it runs;
//! - [`result`] assembles capacity.json's [`volley_report::capacity::Capacity`].
//!
//! Data flows one way: the binary's prober records runs and reads their reports
//! (`volley_report`), this crate judges the readings, `volley_report` draws the answer.

pub mod early_stop;
mod error;
pub mod plan;
pub mod policy;
pub mod prober;
pub mod result;

#[cfg(test)]
mod models;

pub use error::{Error, Kind};
pub use plan::Plan;
pub use policy::{Ended, run};
pub use prober::{Prober, Reading, Role};
