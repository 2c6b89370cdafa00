//! The model of one watched workload, kept from what the watches report, and sampled at the
//! scrape instants into kube.csv's rows (server.csv's columns).

use std::collections::{BTreeMap, HashSet};

use volley_prom::escape_label_value;

use crate::obs::{DeploymentObs, EventObs, HpaObs, Obs, PodObs, PodUsage, ReplicaSetObs, SliceObs};

/// A pod, with the time it spent unready since the last sample.
#[derive(Debug, Clone)]
struct PodState {
    obs: PodObs,
    /// Unready since this `t` (seconds since t0), while it is.
    unready_since: Option<f64>,
    /// Seconds unready already counted for the interval being sampled.
    unready: f64,
    /// Deleted: sampled once more (its unready seconds), then dropped.
    gone: bool,
}

/// One workload's state.
#[derive(Debug, Clone, Default)]
pub struct State {
    services: Vec<String>,
    hpas: Vec<String>,
    deployment_name: Option<String>,
    pods: BTreeMap<String, PodState>,
    slices: BTreeMap<String, SliceObs>,
    hpa: BTreeMap<String, HpaObs>,
    deployment: Option<DeploymentObs>,
    replicasets: BTreeMap<String, ReplicaSetObs>,
    usage: BTreeMap<String, PodUsage>,
    /// `Kind/name` and uids of the objects watched, for the Events that name them.
    names: HashSet<String>,
    uids: HashSet<String>,
    last_sample: f64,
}

/// A change to an object.
#[derive(Debug, Clone)]
pub enum Change<'a> {
    /// Added, modified or listed.
    Apply(&'a Obs),
    /// Deleted (or not listed again after a relist).
    Delete(&'a str),
}

fn label(name: &str, k: &str, v: &str) -> String {
    series_key(name, &[(k.to_string(), v.to_string())])
}

/// `name{k="v",...}`, label values escaped as the scraper writes them.
fn series_key(name: &str, labels: &[(String, String)]) -> String {
    let labels: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape_label_value(v)))
        .collect();
    format!("{name}{{{}}}", labels.join(","))
}

impl State {
    /// A workload whose Services and HPAs were resolved before the run: each is sampled
    /// from the start (0 ready endpoints until its slices are listed).
    pub fn new(deployment: Option<&str>, services: &[String], hpas: &[String]) -> State {
        let mut s = State {
            services: services.to_vec(),
            hpas: hpas.to_vec(),
            deployment_name: deployment.map(str::to_string),
            ..State::default()
        };
        if let Some(d) = deployment {
            s.names.insert(format!("Deployment/{d}"));
        }
        for h in hpas {
            s.names.insert(format!("HorizontalPodAutoscaler/{h}"));
        }
        s
    }

    /// Whether an Event is about one of the watched objects.
    pub fn wants(&self, e: &EventObs) -> bool {
        e.object_uid.as_ref().is_some_and(|u| self.uids.contains(u))
            || self.names.contains(&e.object)
    }

    /// Applies a change to the object `name` of `kind` (the [`Obs`] variant's name)
    /// observed `t` seconds into the run.
    pub fn apply(&mut self, t: f64, kind: &str, name: &str, change: Change<'_>) {
        match change {
            Change::Apply(obs) => self.put(t, name, obs),
            Change::Delete(_) => self.delete(t, kind, name),
        }
    }

    fn put(&mut self, t: f64, name: &str, obs: &Obs) {
        match obs {
            Obs::Pod(p) => {
                self.names.insert(format!("Pod/{name}"));
                if let Some(u) = &p.uid {
                    self.uids.insert(u.clone());
                }
                let ready = p.is_ready();
                let last = self.last_sample;
                let e = self.pods.entry(name.to_string()).or_insert(PodState {
                    obs: p.clone(),
                    unready_since: None,
                    unready: 0.0,
                    gone: false,
                });
                e.gone = false;
                match (e.unready_since, ready) {
                    (Some(since), true) => {
                        e.unready += (t - since.max(last)).max(0.0);
                        e.unready_since = None;
                    }
                    (None, false) => e.unready_since = Some(t.max(0.0)),
                    _ => {}
                }
                e.obs = p.clone();
            }
            Obs::EndpointSlice(s) => {
                self.slices.insert(name.to_string(), s.clone());
            }
            Obs::HorizontalPodAutoscaler(h) => {
                self.hpa.insert(name.to_string(), h.clone());
            }
            Obs::Deployment(d) => self.deployment = Some(d.clone()),
            Obs::ReplicaSet(r) => {
                self.names.insert(format!("ReplicaSet/{name}"));
                self.replicasets.insert(name.to_string(), r.clone());
            }
            Obs::PodMetrics(m) => {
                self.usage = m.pods.clone();
            }
            Obs::Event(_) => {}
        }
    }

    fn delete(&mut self, t: f64, kind: &str, name: &str) {
        match kind {
            "Pod" => {
                let last = self.last_sample;
                if let Some(p) = self.pods.get_mut(name) {
                    if let Some(since) = p.unready_since.take() {
                        p.unready += (t - since.max(last)).max(0.0);
                    }
                    p.gone = true;
                }
                self.usage.remove(name);
            }
            "EndpointSlice" => {
                self.slices.remove(name);
            }
            "HorizontalPodAutoscaler" => {
                self.hpa.remove(name);
            }
            "Deployment" => self.deployment = None,
            "ReplicaSet" => {
                self.replicasets.remove(name);
            }
            _ => {}
        }
    }

    /// The rows for the scrape instant `elapsed` (seconds since t0): (series, value, rate),
    /// as server.csv holds them. Gauges are the state at `elapsed`; rates
    /// (`kube_pod_cpu_cores`, `kube_pod_unready_s`) cover the interval that ends there.
    pub fn sample(&mut self, elapsed: f64) -> Vec<(String, f64, bool)> {
        let mut out = Vec::new();
        let live = self.pods.values().filter(|p| !p.gone);
        out.push(("kube_pods".to_string(), live.clone().count() as f64, false));
        out.push((
            "kube_pods_ready".to_string(),
            live.filter(|p| p.obs.is_ready()).count() as f64,
            false,
        ));
        let mut services: Vec<String> = self.services.clone();
        for s in self.slices.values() {
            if !services.contains(&s.service) {
                services.push(s.service.clone());
            }
        }
        for svc in &services {
            let eps = self
                .slices
                .values()
                .filter(|s| &s.service == svc)
                .flat_map(|s| &s.endpoints);
            let (all, ready) = eps.fold((0, 0), |(a, r), e| (a + 1, r + usize::from(e.ready)));
            out.push((
                label("kube_endpoints_ready", "service", svc),
                ready as f64,
                false,
            ));
            out.push((label("kube_endpoints", "service", svc), all as f64, false));
        }
        for (name, h) in &self.hpa {
            if !self.hpas.contains(name) && !self.hpas.is_empty() {
                continue;
            }
            if let Some(c) = h.current {
                out.push((
                    label("kube_hpa_current_replicas", "hpa", name),
                    c as f64,
                    false,
                ));
            }
            out.push((
                label("kube_hpa_desired_replicas", "hpa", name),
                h.desired as f64,
                false,
            ));
            for m in &h.metrics {
                let labels = [
                    ("hpa".to_string(), name.clone()),
                    ("metric".to_string(), m.name.clone()),
                ];
                if let Some(c) = m.current_pct {
                    out.push((series_key("kube_hpa_metric_pct", &labels), c as f64, false));
                }
                if let Some(t) = m.target_pct {
                    out.push((series_key("kube_hpa_target_pct", &labels), t as f64, false));
                }
            }
        }
        if let Some(d) = &self.deployment {
            let mut put = |state: &str, v: i64| {
                out.push((
                    label("kube_deployment_replicas", "state", state),
                    v as f64,
                    false,
                ));
            };
            if let Some(s) = d.spec {
                put("spec", s);
            }
            put("updated", d.updated);
            put("ready", d.ready);
            put("available", d.available);
        }
        let last = self.last_sample;
        for (name, p) in &mut self.pods {
            if let Some(since) = p.unready_since {
                p.unready += (elapsed - since.max(last)).max(0.0);
            }
            let unready = std::mem::take(&mut p.unready);
            if !p.gone {
                let o = &p.obs;
                out.push((
                    label("kube_pod_ready", "pod", name),
                    f64::from(u8::from(o.is_ready())),
                    false,
                ));
                out.push((
                    label("kube_pod_restarts", "pod", name),
                    o.restarts as f64,
                    false,
                ));
                if let Some(l) = o.cpu_limit {
                    out.push((label("kube_pod_cpu_limit_cores", "pod", name), l, false));
                }
                if let Some(r) = o.cpu_request {
                    out.push((label("kube_pod_cpu_request_cores", "pod", name), r, false));
                }
                if let Some(l) = o.memory_limit {
                    out.push((label("kube_pod_memory_limit_bytes", "pod", name), l, false));
                }
                if let Some(u) = self.usage.get(name) {
                    out.push((label("kube_pod_memory_bytes", "pod", name), u.memory, false));
                    out.push((label("kube_pod_cpu_cores", "pod", name), u.cpu, true));
                }
            }
            out.push((
                label("kube_pod_unready_s", "pod", name),
                round_ms(unready),
                true,
            ));
        }
        self.pods.retain(|_, p| !p.gone);
        self.last_sample = elapsed;
        let _ = &self.deployment_name;
        out
    }
}

fn round_ms(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(ready: bool, restarts: i64) -> Obs {
        Obs::Pod(PodObs {
            phase: Some("Running".into()),
            ready: Some(ready),
            restarts,
            cpu_limit: Some(0.2),
            ..PodObs::default()
        })
    }

    fn get(rows: &[(String, f64, bool)], s: &str) -> Option<f64> {
        rows.iter().find(|r| r.0 == s).map(|r| r.1)
    }

    #[test]
    fn unready_seconds_are_split_at_the_samples_and_a_flip_between_two_is_kept() {
        let mut s = State::new(Some("chat"), &["chat".into()], &[]);
        s.apply(0.1, "Pod", "a", Change::Apply(&pod(true, 0)));
        s.apply(0.2, "Pod", "b", Change::Apply(&pod(true, 0)));
        s.apply(1.5, "Pod", "a", Change::Apply(&pod(false, 0)));
        let r = s.sample(2.0);
        assert_eq!(get(&r, "kube_pods_ready"), Some(1.0));
        assert_eq!(get(&r, "kube_pod_unready_s{pod=\"a\"}"), Some(0.5));
        assert_eq!(get(&r, "kube_pod_ready{pod=\"a\"}"), Some(0.0));
        // Still unready through the next interval, ready again at 3.25.
        s.apply(3.25, "Pod", "a", Change::Apply(&pod(true, 1)));
        // b flips and back between two samples: not lost.
        s.apply(3.5, "Pod", "b", Change::Apply(&pod(false, 0)));
        s.apply(3.75, "Pod", "b", Change::Apply(&pod(true, 0)));
        let r = s.sample(4.0);
        assert_eq!(get(&r, "kube_pod_unready_s{pod=\"a\"}"), Some(1.25));
        assert_eq!(get(&r, "kube_pod_unready_s{pod=\"b\"}"), Some(0.25));
        assert_eq!(get(&r, "kube_pod_restarts{pod=\"a\"}"), Some(1.0));
        assert_eq!(get(&r, "kube_pods_ready"), Some(2.0));
        assert_eq!(get(&r, "kube_endpoints_ready{service=\"chat\"}"), Some(0.0));
        // A deleted pod reports its last unready seconds once, then is gone.
        s.apply(4.5, "Pod", "b", Change::Apply(&pod(false, 0)));
        s.apply(4.75, "Pod", "b", Change::Delete("Pod"));
        let r = s.sample(5.0);
        assert_eq!(get(&r, "kube_pod_unready_s{pod=\"b\"}"), Some(0.25));
        assert_eq!(get(&r, "kube_pod_ready{pod=\"b\"}"), None);
        assert_eq!(get(&r, "kube_pods"), Some(1.0));
        let r = s.sample(6.0);
        assert_eq!(get(&r, "kube_pod_unready_s{pod=\"b\"}"), None);
    }
}
