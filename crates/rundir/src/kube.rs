//! run.json's `kube` note: the Kubernetes workload watched beside the load (`volley run
//! --kube`), redacted — the context, the server's scheme://host:port, the namespace and the
//! *kind* of credential, never a credential — with how each watch went.

use serde::{Deserialize, Serialize};

/// What was watched, and how.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KubeNote {
    /// The kubeconfig context (none in a pod with a service account).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// The API server, `scheme://host:port`.
    pub server: String,
    /// The default namespace.
    pub namespace: String,
    /// How the client authenticated: `token`, `client-cert`, `exec:aws`, `in-cluster` ...
    pub auth: String,
    /// Each workload, as resolved before the run.
    pub targets: Vec<KubeTargetNote>,
    /// Each watch: what it saw and how often it was lost or relisted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub watches: Vec<KubeWatchNote>,
    /// Where CPU and memory came from (`metrics.k8s.io`), or why there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<String>,
    /// What went wrong while watching (a missing permission, a bound reached).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// One watched workload.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KubeTargetNote {
    /// As `--kube` gave it.
    pub spec: String,
    /// kube.csv's Target column for it (`kube:NS/deployment/NAME`).
    pub target: String,
    /// The pods' label selector.
    pub selector: String,
    /// The Services that select its pods.
    #[serde(default)]
    pub services: Vec<String>,
    /// The HPAs that scale it.
    #[serde(default)]
    pub hpas: Vec<String>,
}

/// One watch (a resource of a workload).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KubeWatchNote {
    /// kube.csv's Target.
    pub target: String,
    /// `pods`, `events`, `endpointslices` ...
    pub resource: String,
    /// Objects observed (listed, added, modified, deleted).
    pub observed: u64,
    /// Times the watch was lost (a cut connection, an error from the server).
    pub lost: u64,
    /// Times it was listed again (after a 410 Gone, or at its start: not counted).
    pub relisted: u64,
    /// The last error, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}
