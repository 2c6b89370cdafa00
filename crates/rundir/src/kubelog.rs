//! kube.jsonl, the record `volley run --kube` keeps of the watched workload: the reduced
//! objects (one type for the watcher that writes them, in volley-kube, and for the reports
//! that read them), the lines that carry them, and [`read_kube_log`], the bounded reader.
//! No kube-rs here: the reports read the record without compiling the Kubernetes API.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// `--kube`: every observation of the watched workload, in arrival order (docs/kubernetes.md).
pub const KUBE_JSONL: &str = "kube.jsonl";

/// Most bytes of kube.jsonl read (the watcher stops writing at this bound too).
pub const MAX_KUBE_LOG: u64 = 256 << 20;

/// One object as observed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "obs")]
pub enum Obs {
    /// A pod of the workload.
    Pod(PodObs),
    /// A core/v1 Event about a watched object.
    Event(EventObs),
    /// An EndpointSlice of a Service that selects the pods.
    EndpointSlice(SliceObs),
    /// An HPA that scales the Deployment.
    HorizontalPodAutoscaler(HpaObs),
    /// The Deployment.
    Deployment(DeploymentObs),
    /// A ReplicaSet of the Deployment.
    ReplicaSet(ReplicaSetObs),
    /// The pods' CPU and memory from metrics.k8s.io.
    PodMetrics(PodMetricsObs),
}

/// A pod.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PodObs {
    /// Pending, Running, Succeeded, Failed, Unknown.
    pub phase: Option<String>,
    /// The Ready condition (`None` before the kubelet set it).
    pub ready: Option<bool>,
    /// When the Ready condition last changed, as the API says (whole seconds).
    pub ready_at: Option<String>,
    /// Restarts of all its containers.
    pub restarts: i64,
    /// Why a container last ended (OOMKilled, Error, Completed), with its exit code.
    pub last_term: Option<Termination>,
    /// Why a container waits (CrashLoopBackOff, ImagePullBackOff).
    pub waiting: Option<String>,
    /// Being deleted (a deletionTimestamp is set).
    pub deleting: bool,
    /// The node it runs on.
    pub node: Option<String>,
    /// The sum of its containers' CPU requests and limits, in cores (`None` when a
    /// container has none).
    pub cpu_request: Option<f64>,
    /// See `cpu_request`.
    pub cpu_limit: Option<f64>,
    /// The sum of its containers' memory limits, in bytes.
    pub memory_limit: Option<f64>,
    /// Its uid (Events name the object they are about by it).
    pub uid: Option<String>,
}

/// How a container last ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Termination {
    /// The container.
    pub container: String,
    /// OOMKilled, Error, Completed.
    pub reason: Option<String>,
    /// Its exit code.
    pub exit_code: i32,
}

/// An Event; repeats raise `count`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EventObs {
    /// Normal or Warning.
    pub r#type: Option<String>,
    /// Unhealthy, Killing, BackOff, SuccessfulRescale, ScalingReplicaSet ...
    pub reason: Option<String>,
    /// `Kind/name` of the object it is about.
    pub object: String,
    /// That object's uid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_uid: Option<String>,
    /// What it says.
    pub message: Option<String>,
    /// How many times it happened.
    pub count: i64,
    /// When it first and last happened (whole seconds).
    pub first: Option<String>,
    /// See `first`.
    pub last: Option<String>,
    /// Listed at the start and last seen before the run began: context, not a finding.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub before: bool,
}

/// An EndpointSlice.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SliceObs {
    /// The Service it belongs to.
    pub service: String,
    /// Its endpoints.
    pub endpoints: Vec<EndpointObs>,
}

/// One endpoint of a slice.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EndpointObs {
    /// The pod behind it.
    pub pod: Option<String>,
    /// Ready (an unknown state counts as ready, as the API says).
    pub ready: bool,
    /// Being removed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub terminating: bool,
}

/// An HPA.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HpaObs {
    /// Replicas now.
    pub current: Option<i64>,
    /// Replicas it wants.
    pub desired: i64,
    /// Its bounds.
    pub min: Option<i64>,
    /// See `min`.
    pub max: i64,
    /// Each resource metric: its current utilization against its target (% of request).
    pub metrics: Vec<HpaMetric>,
    /// When it last scaled (whole seconds).
    pub last_scale: Option<String>,
}

/// A resource metric of an HPA.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HpaMetric {
    /// cpu, memory.
    pub name: String,
    /// Average utilization now, % of request.
    pub current_pct: Option<i64>,
    /// Its target, % of request.
    pub target_pct: Option<i64>,
}

/// A Deployment's rollout.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeploymentObs {
    /// spec.replicas.
    pub spec: Option<i64>,
    /// status.replicas, updated, ready, available.
    pub replicas: i64,
    /// See `replicas`.
    pub updated: i64,
    /// See `replicas`.
    pub ready: i64,
    /// See `replicas`.
    pub available: i64,
    /// metadata.generation and status.observedGeneration: the rollout is seen when equal.
    pub generation: Option<i64>,
    /// See `generation`.
    pub observed_generation: Option<i64>,
    /// The Progressing condition's reason (NewReplicaSetAvailable, ReplicaSetUpdated ...).
    pub progressing: Option<String>,
}

/// A ReplicaSet.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplicaSetObs {
    /// The Deployment's revision it holds.
    pub revision: Option<String>,
    /// Its replicas and ready ones.
    pub replicas: i64,
    /// See `replicas`.
    pub ready: i64,
}

/// One reading of metrics.k8s.io for the workload's pods.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PodMetricsObs {
    /// Per pod: CPU in cores, memory in bytes, and the reading's own time.
    pub pods: BTreeMap<String, PodUsage>,
}

/// A pod's usage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PodUsage {
    /// CPU, cores (an average over `window_s`).
    pub cpu: f64,
    /// Working-set memory, bytes.
    pub memory: f64,
    /// When metrics-server read it.
    pub timestamp: Option<String>,
    /// Over how long the CPU is averaged.
    pub window: Option<String>,
}

impl PodObs {
    /// Ready, as the Service counts it.
    pub fn is_ready(&self) -> bool {
        self.ready == Some(true) && !self.deleting
    }
}

/// One object line of kube.jsonl, as read back (the watcher writes the same fields).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectLine {
    /// Seconds since the run's t0, on arrival.
    pub t: f64,
    /// kube.csv's Target of the workload.
    pub target: String,
    /// `list` (the first listing), `relist`, `apply`, `delete`, `gone` (not listed again).
    pub op: String,
    /// Its namespace.
    pub ns: String,
    /// Its name.
    pub name: String,
    /// `kind` and `obs`.
    #[serde(flatten)]
    pub obs: Obs,
}

/// One watch line of kube.jsonl (`"kind":"watch"`), as read back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WatchLine {
    /// Seconds since the run's t0.
    pub t: f64,
    /// kube.csv's Target of the workload.
    pub target: String,
    /// `pods`, `events`, `metrics` ...
    pub resource: String,
    /// `listed`, `relisted`, `lost`, `resumed`, `unavailable`.
    pub op: String,
    /// Objects in a listing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objects: Option<usize>,
    /// The error, when lost or unavailable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// kube.jsonl read back: its object lines and its watch lines, each in file order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KubeLog {
    /// The observations.
    pub objects: Vec<ObjectLine>,
    /// What happened to the watches.
    pub watches: Vec<WatchLine>,
    /// The last line was cut off (a crash mid-write) and left out.
    pub cut: bool,
}

/// Reads `dir`'s kube.jsonl; `None` without one (a run without `--kube`). A file over
/// [`MAX_KUBE_LOG`] bytes, or a line that is not one of its lines, is an error naming the
/// line; a last line without its newline that does not parse (cut by a crash) is left out
/// and said in [`KubeLog::cut`].
pub fn read_kube_log(dir: &Path) -> Result<Option<KubeLog>> {
    let path = dir.join(KUBE_JSONL);
    match std::fs::metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(&path, e)),
        Ok(_) => {}
    }
    let bytes = volley_scenario::limits::read_bounded(&path, MAX_KUBE_LOG).map_err(|why| {
        Error::io(
            &path,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, why),
        )
    })?;
    parse_kube_log(&path, &bytes).map(Some)
}

/// kube.jsonl's text parsed; `path` names it in errors.
pub fn parse_kube_log(path: &Path, bytes: &[u8]) -> Result<KubeLog> {
    let mut log = KubeLog::default();
    let ends_whole = bytes.last().is_none_or(|b| *b == b'\n');
    let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    let n = lines.len();
    for (i, line) in lines.into_iter().enumerate() {
        let no = i as u64 + 1;
        let last_cut = i + 1 == n && !ends_whole;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let bad = |why: String| {
            Error::malformed(
                path,
                no,
                None,
                format!(
                    "{why}; each line of kube.jsonl is an object line {{\"t\",\"target\",\"op\",\"ns\",\"name\",\"kind\",\"obs\"}} or a watch line {{\"t\",\"kind\":\"watch\",\"target\",\"resource\",\"op\"}} (docs/kubernetes.md)"
                ),
            )
        };
        let value: serde_json::Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(_) if last_cut => {
                log.cut = true;
                continue;
            }
            Err(e) => return Err(bad(format!("not JSON ({e})"))),
        };
        let t = value.get("t").and_then(serde_json::Value::as_f64);
        if !t.is_some_and(|t| t.is_finite() && (0.0..=1e9).contains(&t)) {
            return Err(bad(
                "`t` is missing or not a number of seconds from 0 to 1e9".to_string(),
            ));
        }
        if value.get("kind").and_then(serde_json::Value::as_str) == Some("watch") {
            log.watches
                .push(serde_json::from_value(value).map_err(|e| bad(e.to_string()))?);
        } else {
            log.objects
                .push(serde_json::from_value(value).map_err(|e| bad(e.to_string()))?);
        }
    }
    Ok(log)
}

#[cfg(test)]
mod tests {
    use super::*;

    const POD: &str = r#"{"t":1.25,"target":"kube:shop/deployment/chat","op":"apply","ns":"shop","name":"chat-1","kind":"Pod","obs":{"phase":"Running","ready":false,"ready_at":"2026-01-01T00:00:41Z","restarts":1,"last_term":{"container":"app","reason":"OOMKilled","exit_code":137},"waiting":null,"deleting":false,"node":"n1","cpu_request":0.1,"cpu_limit":0.2,"memory_limit":67108864.0,"uid":"u1"}}"#;
    const WATCH: &str = r#"{"t":3.5,"kind":"watch","target":"kube:shop/deployment/chat","resource":"pods","op":"lost","why":"connection reset"}"#;

    #[test]
    fn reads_object_and_watch_lines() {
        let text = format!("{POD}\n{WATCH}\n");
        let log = parse_kube_log(Path::new("kube.jsonl"), text.as_bytes()).unwrap();
        assert_eq!(log.objects.len(), 1);
        let o = &log.objects[0];
        assert_eq!(
            (o.t, o.name.as_str(), o.op.as_str()),
            (1.25, "chat-1", "apply")
        );
        let Obs::Pod(p) = &o.obs else { panic!("{o:?}") };
        assert_eq!(p.ready, Some(false));
        assert_eq!(p.last_term.as_ref().unwrap().exit_code, 137);
        assert_eq!(log.watches.len(), 1);
        assert_eq!(log.watches[0].op, "lost");
        assert_eq!(log.watches[0].why.as_deref(), Some("connection reset"));
        assert!(!log.cut);
        // What is read writes back the same line.
        let again: serde_json::Value = serde_json::to_value(o).unwrap();
        assert_eq!(
            again,
            serde_json::from_str::<serde_json::Value>(POD).unwrap()
        );
    }

    #[test]
    fn a_malformed_line_is_named_and_a_cut_last_line_left_out() {
        let text = format!("{POD}\n{{\"t\":2,\"kind\":\"Pod\",\"obs\":7}}\n{WATCH}\n");
        let e = parse_kube_log(Path::new("kube.jsonl"), text.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("kube.jsonl:2:") && e.contains("object line"),
            "{e}"
        );
        let text = format!("{POD}\n{{\"t\":-1,\"kind\":\"watch\"}}\n");
        let e = parse_kube_log(Path::new("kube.jsonl"), text.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(e.contains("`t`"), "{e}");
        let text = format!("{POD}\n{}", &WATCH[..20]);
        let log = parse_kube_log(Path::new("kube.jsonl"), text.as_bytes()).unwrap();
        assert!(log.cut && log.objects.len() == 1 && log.watches.is_empty());
    }

    #[test]
    fn no_file_is_none_and_a_large_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_kube_log(dir.path()).unwrap(), None);
        let f = std::fs::File::create(dir.path().join(KUBE_JSONL)).unwrap();
        f.set_len(MAX_KUBE_LOG + 1).unwrap();
        let e = read_kube_log(dir.path()).unwrap_err().to_string();
        assert!(e.contains("kube.jsonl"), "{e}");
    }
}
