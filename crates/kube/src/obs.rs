//! Each watched object reduced to the fields the record keeps (never the whole object: no
//! environment values, annotations or secrets get in), as kube.jsonl writes them.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{Event, Pod};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

pub use volley_rundir::kubelog::{
    DeploymentObs, EndpointObs, EventObs, HpaMetric, HpaObs, Obs, PodMetricsObs, PodObs, PodUsage,
    ReplicaSetObs, SliceObs, Termination,
};

/// Reduces an API object to the record's type of it (the types live in volley-rundir, where
/// the reports read them back; the reduction from the API's types lives here).
pub trait Reduce<T> {
    /// The reduced object.
    fn of(o: &T) -> Self;
}

fn time(t: &Option<Time>) -> Option<String> {
    t.as_ref().map(|t| t.0.to_string())
}

fn int(v: Option<i32>) -> i64 {
    i64::from(v.unwrap_or(0))
}

/// Kubernetes' quantity (`250m`, `1.5`, `128Mi`, `2G`, `100n`, `1e3`) as a number of units.
pub fn quantity(q: &str) -> Option<f64> {
    let q = q.trim();
    let split = q
        .find(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
        .unwrap_or(q.len());
    let (num, suffix) = q.split_at(split);
    let n: f64 = num.parse().ok()?;
    let m = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        _ => return None,
    };
    Some(n * m).filter(|v| v.is_finite())
}

/// The sum over containers of one resource, `None` when a container does not set it.
fn sum(maps: impl Iterator<Item = Option<BTreeMap<String, Quantity>>>, key: &str) -> Option<f64> {
    let mut total = 0.0;
    let mut any = false;
    for m in maps {
        let v = m
            .as_ref()
            .and_then(|m| m.get(key))
            .and_then(|q| quantity(&q.0))?;
        total += v;
        any = true;
    }
    any.then_some(total)
}

impl Reduce<Pod> for PodObs {
    /// Reduces a pod.
    fn of(p: &Pod) -> PodObs {
        let status = p.status.as_ref();
        let ready_cond = status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
        let statuses = status
            .and_then(|s| s.container_statuses.clone())
            .unwrap_or_default();
        let last_term = statuses
            .iter()
            .filter_map(|c| {
                let t = c.last_state.as_ref()?.terminated.as_ref()?;
                Some((
                    t.finished_at.as_ref().map(|f| f.0),
                    Termination {
                        container: c.name.clone(),
                        reason: t.reason.clone(),
                        exit_code: t.exit_code,
                    },
                ))
            })
            .max_by_key(|(at, _)| *at)
            .map(|(_, t)| t);
        let waiting = statuses
            .iter()
            .find_map(|c| c.state.as_ref()?.waiting.as_ref()?.reason.clone());
        let containers = p
            .spec
            .as_ref()
            .map(|s| s.containers.clone())
            .unwrap_or_default();
        let res = |f: fn(
            &k8s_openapi::api::core::v1::ResourceRequirements,
        ) -> Option<BTreeMap<String, Quantity>>| {
            containers
                .iter()
                .map(move |c| c.resources.as_ref().and_then(f))
                .collect::<Vec<_>>()
                .into_iter()
        };
        PodObs {
            phase: status.and_then(|s| s.phase.clone()),
            ready: ready_cond.map(|c| c.status == "True"),
            ready_at: ready_cond.and_then(|c| time(&c.last_transition_time)),
            restarts: statuses.iter().map(|c| i64::from(c.restart_count)).sum(),
            last_term,
            waiting,
            deleting: p.metadata.deletion_timestamp.is_some(),
            node: p.spec.as_ref().and_then(|s| s.node_name.clone()),
            cpu_request: sum(res(|r| r.requests.clone()), "cpu"),
            cpu_limit: sum(res(|r| r.limits.clone()), "cpu"),
            memory_limit: sum(res(|r| r.limits.clone()), "memory"),
            uid: p.metadata.uid.clone(),
        }
    }
}

impl Reduce<Event> for EventObs {
    /// Reduces an Event.
    fn of(e: &Event) -> EventObs {
        let o = &e.involved_object;
        EventObs {
            r#type: e.type_.clone(),
            reason: e.reason.clone(),
            object: format!(
                "{}/{}",
                o.kind.as_deref().unwrap_or("?"),
                o.name.as_deref().unwrap_or("?")
            ),
            object_uid: o.uid.clone(),
            message: e.message.clone().map(|m| cut(&m, 512)),
            count: e.count.map_or(1, i64::from),
            first: time(&e.first_timestamp)
                .or_else(|| e.event_time.as_ref().map(|t| t.0.to_string())),
            last: time(&e.last_timestamp)
                .or_else(|| e.event_time.as_ref().map(|t| t.0.to_string())),
            before: false,
        }
    }
}

/// At most `max` bytes of `s`, cut at a character boundary.
fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

impl Reduce<EndpointSlice> for SliceObs {
    /// Reduces an EndpointSlice.
    fn of(s: &EndpointSlice) -> SliceObs {
        SliceObs {
            service: s
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("kubernetes.io/service-name").cloned())
                .unwrap_or_default(),
            endpoints: s
                .endpoints
                .iter()
                .flatten()
                .map(|e| {
                    let c = e.conditions.as_ref();
                    EndpointObs {
                        pod: e.target_ref.as_ref().and_then(|r| r.name.clone()),
                        ready: c.and_then(|c| c.ready).unwrap_or(true),
                        terminating: c.and_then(|c| c.terminating).unwrap_or(false),
                    }
                })
                .collect(),
        }
    }
}

impl Reduce<HorizontalPodAutoscaler> for HpaObs {
    /// Reduces an HPA (autoscaling/v2).
    fn of(h: &HorizontalPodAutoscaler) -> HpaObs {
        let spec = Some(&h.spec);
        let status = h.status.as_ref();
        let mut metrics: Vec<HpaMetric> = spec
            .and_then(|s| s.metrics.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|m| {
                let r = m.resource.as_ref()?;
                Some(HpaMetric {
                    name: r.name.clone(),
                    current_pct: None,
                    target_pct: r.target.average_utilization.map(i64::from),
                })
            })
            .collect();
        for m in status
            .and_then(|s| s.current_metrics.as_ref())
            .into_iter()
            .flatten()
        {
            let Some(r) = &m.resource else { continue };
            let cur = r.current.average_utilization.map(i64::from);
            match metrics.iter_mut().find(|x| x.name == r.name) {
                Some(x) => x.current_pct = cur,
                None => metrics.push(HpaMetric {
                    name: r.name.clone(),
                    current_pct: cur,
                    target_pct: None,
                }),
            }
        }
        HpaObs {
            current: status.and_then(|s| s.current_replicas).map(i64::from),
            desired: status.map_or(0, |s| i64::from(s.desired_replicas)),
            min: spec.and_then(|s| s.min_replicas).map(i64::from),
            max: spec.map_or(0, |s| i64::from(s.max_replicas)),
            metrics,
            last_scale: status.and_then(|s| time(&s.last_scale_time)),
        }
    }
}

impl Reduce<Deployment> for DeploymentObs {
    /// Reduces a Deployment.
    fn of(d: &Deployment) -> DeploymentObs {
        let s = d.status.as_ref();
        DeploymentObs {
            spec: d.spec.replicas.map(i64::from),
            replicas: int(s.and_then(|s| s.replicas)),
            updated: int(s.and_then(|s| s.updated_replicas)),
            ready: int(s.and_then(|s| s.ready_replicas)),
            available: int(s.and_then(|s| s.available_replicas)),
            generation: d.metadata.generation,
            observed_generation: s.and_then(|s| s.observed_generation),
            progressing: s
                .and_then(|s| s.conditions.as_ref())
                .and_then(|c| c.iter().find(|c| c.type_.as_deref() == Some("Progressing")))
                .and_then(|c| c.reason.clone()),
        }
    }
}

impl Reduce<ReplicaSet> for ReplicaSetObs {
    /// Reduces a ReplicaSet.
    fn of(r: &ReplicaSet) -> ReplicaSetObs {
        ReplicaSetObs {
            revision: r
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("deployment.kubernetes.io/revision").cloned()),
            replicas: r.status.as_ref().map_or(0, |s| i64::from(s.replicas)),
            ready: int(r.status.as_ref().and_then(|s| s.ready_replicas)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities() {
        assert_eq!(quantity("250m"), Some(0.25));
        assert_eq!(quantity("2"), Some(2.0));
        assert_eq!(quantity("1.5"), Some(1.5));
        assert_eq!(quantity("128Mi"), Some(134_217_728.0));
        assert_eq!(quantity("1Ki"), Some(1024.0));
        assert_eq!(quantity("2G"), Some(2e9));
        assert!((quantity("123456789n").unwrap() - 0.123456789).abs() < 1e-15);
        assert_eq!(quantity("1e3"), Some(1000.0));
        assert_eq!(quantity("12x"), None);
        assert_eq!(quantity(""), None);
    }

    #[test]
    fn a_pod_keeps_readiness_restarts_and_the_last_termination() {
        let p: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "chat-1", "uid": "u1", "annotations": {"secret": "x"}},
            "spec": {"nodeName": "n1", "containers": [
                {"name": "a", "env": [{"name": "PASSWORD", "value": "hunter2"}],
                 "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "200m", "memory": "64Mi"}}},
                {"name": "b", "resources": {"requests": {"cpu": "50m"}, "limits": {"cpu": "100m", "memory": "64Mi"}}}]},
            "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T00:00:41Z"}],
                "containerStatuses": [
                    {"name": "a", "image": "i", "imageID": "", "ready": false, "restartCount": 2,
                     "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled", "finishedAt": "2026-01-01T00:00:40Z"}}},
                    {"name": "b", "image": "i", "imageID": "", "ready": true, "restartCount": 1,
                     "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": "2026-01-01T00:00:10Z"}}}]}
        }))
        .unwrap();
        let o = PodObs::of(&p);
        assert_eq!(o.ready, Some(false));
        assert_eq!(o.restarts, 3);
        assert_eq!(
            o.last_term.as_ref().unwrap().reason.as_deref(),
            Some("OOMKilled")
        );
        assert_eq!(o.last_term.as_ref().unwrap().exit_code, 137);
        assert!((o.cpu_request.unwrap() - 0.15).abs() < 1e-12);
        assert!((o.cpu_limit.unwrap() - 0.3).abs() < 1e-12);
        assert_eq!(o.memory_limit, Some(134_217_728.0));
        assert_eq!(o.ready_at.as_deref(), Some("2026-01-01T00:00:41Z"));
        let json = serde_json::to_string(&Obs::Pod(o)).unwrap();
        assert!(
            !json.contains("hunter2") && !json.contains("secret"),
            "{json}"
        );
    }
}
