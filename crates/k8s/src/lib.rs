//! A plan as Kubernetes manifests: a ConfigMap holding the scenario and the data files it
//! reads, and an Indexed Job whose pods each run one segment of the plan (`volley run
//! --segment i/N`, `i` = the pod's completion index), wait for the same `--start-at`
//! instant, and upload their run directory to object storage when they finish.
//!
//! Kubernetes is only the engine that starts N processes: everything volley-specific is in
//! the worker contract (`--segment`, `--start-at`, `--upload`), so a CI matrix or SSH can
//! drive the same segments. This crate builds the objects as data and YAML for `kubectl
//! apply`; it talks to no API server. The choices that keep the load honest are here, once:
//! no retries of an index (a retried pod would send its share twice), pods spread over
//! nodes, CPU requests equal to limits (no throttled generator posing as a slow server).

mod bundle;
mod error;
mod manifest;
mod names;
pub mod rbac;

pub use bundle::{MAX_PLAN_BYTES, PlanFile, bundle};
use error::Repr;
pub use error::{Error, Kind};
pub use manifest::{
    Credentials, JobSpec, MAX_SEGMENTS, Manifests, Resources, Spread, check_segments, manifests,
    start_at,
};
pub use names::{MAX_RUN_ID, run_id_from, validate_run_id};

/// Where the plan's files are mounted in the pod.
pub const PLAN_DIR: &str = "/plan";
/// Where the pod writes its run directory (an emptyDir) before uploading it.
pub const RUNS_DIR: &str = "/runs";
