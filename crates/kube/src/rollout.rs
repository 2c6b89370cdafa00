//! Waiting for a Deployment's rollout (`volley sweep --setup` that changed one): done when the
//! controller has seen the latest spec (`observedGeneration ≥ generation`) and every replica
//! the spec asks for is updated, ready and available with no old pod left (`status.replicas`
//! = updated) — what `kubectl rollout status` waits for. Read with a GET every
//! [`POLL`]; a `ProgressDeadlineExceeded` condition ends the wait at once.

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;

use crate::error::{Error, Result};
use crate::spec::What;
use crate::watch::Options;

/// How often the Deployment is read while waiting.
pub const POLL: Duration = Duration::from_millis(250);
/// Longest `--rollout-timeout` taken.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(3600);

/// Where a rollout stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// `metadata.generation`.
    pub generation: i64,
    /// `status.observedGeneration`.
    pub observed: i64,
    /// `spec.replicas` (1 when unset).
    pub spec: i32,
    /// `status.updatedReplicas`, `readyReplicas`, `availableReplicas`, `replicas`.
    pub updated: i32,
    /// Ready replicas.
    pub ready: i32,
    /// Available replicas.
    pub available: i32,
    /// All replicas, old ones included.
    pub total: i32,
    /// `ProgressDeadlineExceeded`'s message, when the controller gave up.
    pub stalled: Option<String>,
}

impl Progress {
    /// Reads a Deployment.
    pub fn of(d: &Deployment) -> Progress {
        let s = d.status.clone().unwrap_or_default();
        let stalled = s.conditions.iter().flatten().find_map(|c| {
            (c.type_.as_deref() == Some("Progressing")
                && c.reason.as_deref() == Some("ProgressDeadlineExceeded"))
            .then(|| c.message.clone().unwrap_or_default())
        });
        Progress {
            generation: d.metadata.generation.unwrap_or(0),
            observed: s.observed_generation.unwrap_or(0),
            spec: d.spec.replicas.unwrap_or(1),
            updated: s.updated_replicas.unwrap_or(0),
            ready: s.ready_replicas.unwrap_or(0),
            available: s.available_replicas.unwrap_or(0),
            total: s.replicas.unwrap_or(0),
            stalled,
        }
    }

    /// The first condition not met, or `None` when the rollout is complete.
    pub fn waiting_for(&self) -> Option<String> {
        let n = self.spec;
        if self.observed < self.generation {
            return Some(format!(
                "the controller to see generation {} (it has seen {})",
                self.generation, self.observed
            ));
        }
        if self.updated < n {
            return Some(format!("{} of {n} replicas updated", self.updated));
        }
        if self.total > self.updated {
            return Some(format!(
                "{} old replicas to go ({} in all, {} updated)",
                self.total - self.updated,
                self.total,
                self.updated
            ));
        }
        if self.ready < n {
            return Some(format!("{} of {n} replicas ready", self.ready));
        }
        if self.available < n {
            return Some(format!("{} of {n} replicas available", self.available));
        }
        None
    }
}

/// Waits until every Deployment in `options.specs` has rolled out, at most `timeout` in all;
/// `say` gets a line when the wait starts and each time what it waits for changes. A spec of
/// pods by selector is not waited for. Blocking (its own runtime).
pub fn wait(options: &Options, timeout: Duration, say: &mut dyn FnMut(String)) -> Result<()> {
    let deployments: Vec<_> = options
        .specs
        .iter()
        .filter_map(|s| match &s.what {
            What::Deployment(name) => Some((s.clone(), name.clone())),
            What::Pods(_) => None,
        })
        .collect();
    if deployments.is_empty() {
        return Ok(());
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::config(format!("cannot start the rollout wait's runtime: {e}")))?;
    rt.block_on(async {
        let loaded =
            crate::config::load(options.context.as_deref(), options.kubeconfig.as_deref()).await?;
        let client = kube::Client::try_from(loaded.config)
            .map_err(|e| Error::config(format!("cannot make a client of the kubeconfig: {e}")))?;
        let start = Instant::now();
        for (spec, name) in deployments {
            let ns = spec.namespace_or(&loaded.namespace).to_string();
            let api: Api<Deployment> = Api::namespaced(client.clone(), &ns);
            let mut last: Option<String> = None;
            say(format!(
                "waiting for deployment {ns}/{name} to roll out (observedGeneration ≥ \
                 generation; updated = ready = available = spec replicas; no old pods), up to \
                 {}",
                secs(timeout.saturating_sub(start.elapsed()))
            ));
            loop {
                let d = match tokio::time::timeout(POLL * 8, api.get(&name)).await {
                    Ok(r) => r.map_err(|e| {
                        Error::api("get", "deployments", &ns, &format!("deployment {name}"), e)
                    })?,
                    Err(_) => {
                        return Err(Error::rollout(format!(
                            "deployment {ns}/{name}: the API server did not answer within {} s",
                            (POLL * 8).as_secs()
                        )));
                    }
                };
                let p = Progress::of(&d);
                if let Some(m) = &p.stalled {
                    return Err(Error::rollout(format!(
                        "deployment {ns}/{name} did not roll out: the controller gave up \
                         (ProgressDeadlineExceeded: {m}); fix the Deployment, then run again"
                    )));
                }
                let Some(now) = p.waiting_for() else {
                    say(format!(
                        "deployment {ns}/{name} rolled out: generation {}, {} replicas ready \
                         ({:.1} s)",
                        p.generation,
                        p.spec,
                        start.elapsed().as_secs_f64()
                    ));
                    break;
                };
                if start.elapsed() >= timeout {
                    return Err(Error::rollout(format!(
                        "deployment {ns}/{name} did not roll out within {}: still waiting for \
                         {now}; raise --rollout-timeout, or see `kubectl rollout status \
                         deployment/{name} -n {ns}`",
                        secs(timeout)
                    )));
                }
                if last.as_deref() != Some(now.as_str()) {
                    say(format!("deployment {ns}/{name}: waiting for {now}"));
                    last = Some(now);
                }
                tokio::time::sleep(POLL.min(timeout.saturating_sub(start.elapsed()))).await;
            }
        }
        Ok(())
    })
}

/// `5 s`, `0.7 s`.
fn secs(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dep(v: serde_json::Value) -> Progress {
        Progress::of(&serde_json::from_value(v).unwrap())
    }

    #[test]
    fn each_condition_in_turn() {
        let d = |gen_: i64, obs: i64, upd: i32, total: i32, ready: i32, avail: i32| {
            dep(serde_json::json!({
                "metadata": {"name": "chat", "generation": gen_},
                "spec": {"replicas": 3, "selector": {}, "template": {}},
                "status": {"observedGeneration": obs, "updatedReplicas": upd, "replicas": total,
                           "readyReplicas": ready, "availableReplicas": avail}
            }))
        };
        let w = |p: Progress| p.waiting_for().unwrap_or_default();
        assert!(w(d(2, 1, 3, 3, 3, 3)).contains("see generation 2 (it has seen 1)"));
        assert_eq!(w(d(2, 2, 1, 4, 3, 3)), "1 of 3 replicas updated");
        assert!(w(d(2, 2, 3, 4, 3, 3)).starts_with("1 old replicas to go"));
        assert_eq!(w(d(2, 2, 3, 3, 2, 2)), "2 of 3 replicas ready");
        assert_eq!(w(d(2, 2, 3, 3, 3, 2)), "2 of 3 replicas available");
        assert_eq!(d(2, 2, 3, 3, 3, 3).waiting_for(), None);
        let stalled = dep(serde_json::json!({
            "metadata": {"name": "chat", "generation": 1},
            "spec": {"selector": {}, "template": {}},
            "status": {"conditions": [{"type": "Progressing", "status": "False",
                "reason": "ProgressDeadlineExceeded", "message": "ReplicaSet chat-1 has timed out"}]}
        }));
        assert_eq!(stalled.spec, 1);
        assert_eq!(
            stalled.stalled.as_deref(),
            Some("ReplicaSet chat-1 has timed out")
        );
    }
}
