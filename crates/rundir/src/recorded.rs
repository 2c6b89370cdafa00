//! The plan as `run.json` records it: what ran, written and read by these same structs, so
//! reports and comparisons read typed fields instead of looking up JSON keys.
//!
//! Run directories written before this type existed still read: every field they may lack
//! has a default, and the keys they have that it no longer keeps are ignored.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use volley_scenario::{Load, RequestSpec, StatusSet, StepInfo, Threshold};

/// What a run was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedPlan {
    /// The load model and its shape, pacing and think time.
    pub load: Load,
    /// The request of a single-request run; absent for a scenario, whose steps are the
    /// requests (run directories written before 0.2 record a GET of its target here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<RequestSpec>,
    /// Per-request timeout, s.
    pub timeout_s: f64,
    /// Statuses counted as success.
    #[serde(default)]
    pub expect_status: StatusSet,
    /// Spoke HTTP/2.
    #[serde(default)]
    pub http2: bool,
    /// Spoke HTTP/3 (QUIC); written only when true, so other runs' run.json is unchanged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub http3: bool,
    /// Pass/fail criteria, evaluated by every report of the run.
    #[serde(default)]
    pub thresholds: Vec<Threshold>,
    /// Worker threads (event loops).
    #[serde(default)]
    pub threads: usize,
    /// The scenario file, when the run had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<RecordedScenario>,
    /// Populations run side by side (a scenario file's `scenarios:`), each recorded in a run
    /// directory of its own under this one; this run's figures are their total. `load` is
    /// then an empty shape as long as the whole run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub populations: Vec<RecordedPopulation>,
}

/// One population of a run, as run.json records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedPopulation {
    /// Its name.
    pub name: String,
    /// Its load as written, on its own clock (from its start).
    pub load: Load,
    /// When it started, s from the start of the run.
    pub start_s: f64,
    /// Worker threads it ran on.
    #[serde(default)]
    pub threads: usize,
    /// Its run directory, relative to the run's: `populations/<name>`.
    pub dir: String,
}

impl RecordedPlan {
    /// A plan of `load` sending `request`, with every other setting at its default.
    pub fn new(load: Load, request: RequestSpec) -> RecordedPlan {
        RecordedPlan {
            load,
            request: Some(request),
            timeout_s: volley_scenario::plan::DEFAULT_TIMEOUT.as_secs_f64(),
            expect_status: StatusSet::default(),
            http2: false,
            http3: false,
            thresholds: Vec::new(),
            threads: 1,
            scenario: None,
            populations: Vec::new(),
        }
    }

    /// `closed` or `open`; with populations, `mixed` when some are of each.
    pub fn model(&self) -> &'static str {
        let open = self.populations.iter().filter(|p| p.load.is_open()).count();
        match (self.populations.len(), open) {
            (0, _) => self.load.kind(),
            (n, o) if o == n => "open",
            (_, 0) => "closed",
            _ => "mixed",
        }
    }
}

/// A scenario as run: where it came from and its steps (templates, never their values).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedScenario {
    /// The file.
    pub file: PathBuf,
    /// Its `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its base URL.
    pub target: String,
    /// Its steps, by id.
    #[serde(default)]
    pub steps: Vec<StepInfo>,
    /// Its CSV feeders.
    #[serde(default)]
    pub data: Vec<RecordedData>,
}

/// A CSV feeder as run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedData {
    /// Its name in the scenario.
    pub name: String,
    /// The file.
    pub file: PathBuf,
    /// Rows it held.
    pub rows: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run.json plan as volley wrote it before the plan had a type (round 1 and 2 runs).
    const OLD: &str = r#"{"model":"closed","load":{"model":"closed","shape":{"stages":[{"duration":10.0,"target":60},{"duration":25.0,"target":60}]}},
        "request":{"method":"GET","url":"http://127.0.0.1:1/rooms","headers":[]},"max_vus":60,"pacing_s":0.0,"think_time_s":0.0,
        "timeout_s":60.0,"expect_status":[[100,399]],"http2":false,"thresholds":[{"expr":"error_rate < 1%","metric":"error_rate","stat":"value","op":"Lt","limit":1.0}],
        "threads":2,"scenario":null}"#;

    #[test]
    fn older_plans_still_read() {
        let plan: RecordedPlan = serde_json::from_str(OLD).unwrap();
        assert_eq!(plan.model(), "closed");
        assert_eq!(plan.load.max_vus(), 60);
        assert_eq!(plan.thresholds[0].expr, "error_rate < 1%");
        assert_eq!(plan.timeout_s, 60.0);
    }

    #[test]
    fn written_and_read_by_one_struct() {
        let plan: RecordedPlan = serde_json::from_str(OLD).unwrap();
        let again: RecordedPlan =
            serde_json::from_str(&serde_json::to_string(&plan).unwrap()).unwrap();
        assert_eq!(again, plan);
    }
}
