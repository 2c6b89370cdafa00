//! The target's Kubernetes workload, watched while a run loads it (`volley run --kube
//! deployment/chat`): its pods' readiness, restarts and their reasons, the warning Events
//! (probe failures), the Services' ready endpoints, the HPA's replicas and metric, the
//! Deployment's rollout, and CPU and memory from metrics.k8s.io (or, without it, from the
//! kubelets' resource metrics when `get nodes/proxy` is allowed). Every observation goes to
//! kube.jsonl as it comes; the model is sampled into kube.csv at the scrape instants, in
//! server.csv's columns, so the reports align it with the load as they align server metrics.
//! Through kube-rs (rustls with ring), on its own thread. docs/kubernetes.md has the files'
//! formats and the Role the watcher needs.

mod config;
mod error;
mod kubelet;
pub mod obs;
pub mod preflight;
mod record;
#[cfg(feature = "replay")]
pub mod replay;
mod resolve;
pub mod rollout;
mod spec;
mod state;
mod watch;

pub use config::{Loaded, auth_kind, load, server_of};
pub use error::{Error, Kind, Result};
pub use record::MAX_FILE;
pub use resolve::{Resolved, resolve};
pub use spec::{MAX_SPEC, Spec, What};
pub use state::{Change, State};
pub use watch::{CONNECT_TIMEOUT, Options, STOP_TIMEOUT, Watcher};
