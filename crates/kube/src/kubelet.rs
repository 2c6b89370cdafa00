//! CPU and memory per pod from the kubelet's resource metrics (KEP-727), when there is no
//! metrics server: `GET /api/v1/nodes/{node}/proxy/metrics/resource` through the API server
//! for every node that runs a watched pod. Its `container_cpu_usage_seconds_total` is a
//! counter with its own sample timestamps, so a pod's CPU is the sum over its containers of
//! Δusage / Δtimestamp between two distinct samples (the first gives no rate, nor does a
//! counter that went back); its memory is the sum of `container_memory_working_set_bytes`.
//!
//! `get nodes/proxy` is not read-only (it also reaches the kubelet's exec), so the watcher
//! falls back to it only when metrics.k8s.io is unavailable and a SelfSubjectAccessReview says
//! the user already may (docs/kubernetes.md, "Watching the target").

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures::AsyncReadExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;

use crate::obs::PodUsage;

/// Where the CPU and memory come from, in run.json's note and the record.
pub const SOURCE: &str = "kubelet /metrics/resource";
/// Largest page read from one node (a node's page is ~1 KiB per container); a longer one is
/// refused as a problem.
pub const MAX_PAGE: usize = 4 << 20;
/// Longest wait for one node's page.
pub const TIMEOUT: Duration = Duration::from_secs(5);
/// Most nodes read per poll; the pods on others are said to be left out.
pub const MAX_NODES: usize = 64;

const CPU: &str = "container_cpu_usage_seconds_total";
const MEMORY: &str = "container_memory_working_set_bytes";

/// A container: (namespace, pod, container).
type Key = (String, String, String);

/// The samples of the watched pods read from the nodes' pages in one poll.
#[derive(Debug, Default)]
pub struct Page {
    /// Per container: the CPU counter (core-seconds) and its timestamp (ms).
    cpu: BTreeMap<Key, (f64, f64)>,
    /// Per container: the working set (bytes).
    memory: BTreeMap<Key, f64>,
}

impl Page {
    /// Adds one node's page (`text`), keeping the containers of `pods` in `namespace`. A page
    /// that is no exposition is an error; malformed lines and samples without a timestamp are
    /// skipped and told in the problems returned.
    pub fn add(
        &mut self,
        text: &str,
        namespace: &str,
        pods: &BTreeSet<String>,
    ) -> Result<Vec<String>, String> {
        if let Some(why) = volley_prom::not_exposition(text) {
            return Err(format!("not a Prometheus text page: {why}"));
        }
        let parsed = volley_prom::parse(text);
        let mut problems: Vec<String> = parsed
            .errors
            .iter()
            .take(3)
            .map(|(n, why)| format!("line {n} malformed ({why}), skipped"))
            .collect();
        let mut seen = false;
        for s in &parsed.samples {
            if s.name != CPU && s.name != MEMORY {
                continue;
            }
            seen = true;
            let label = |k: &str| {
                s.labels
                    .iter()
                    .find(|(n, _)| n == k)
                    .map(|(_, v)| v.as_str())
                    .unwrap_or("")
            };
            if label("namespace") != namespace || !pods.contains(label("pod")) {
                continue;
            }
            let key = (
                namespace.to_string(),
                label("pod").to_string(),
                label("container").to_string(),
            );
            if !s.value.is_finite() || s.value < 0.0 {
                problems.push(format!("{} of {}: {} is no usage", s.name, key.1, s.value));
                continue;
            }
            if s.name == MEMORY {
                self.memory.insert(key, s.value);
            } else {
                match s.timestamp {
                    Some(ts) => {
                        self.cpu.insert(key, (s.value, ts));
                    }
                    None => problems.push(format!(
                        "{CPU} of {} has no timestamp, so no rate: skipped",
                        key.1
                    )),
                }
            }
        }
        if !seen {
            return Err(format!("neither {CPU} nor {MEMORY} in the page"));
        }
        Ok(problems)
    }
}

/// One container's counter, as last read.
#[derive(Debug, Clone, Copy)]
struct Counter {
    value: f64,
    ts_ms: f64,
    /// Cores, and over how many seconds, from the last two distinct samples.
    rate: Option<(f64, f64)>,
}

/// The CPU counters across polls.
#[derive(Debug, Default)]
pub struct Rates {
    last: BTreeMap<Key, Counter>,
}

impl Rates {
    /// Takes a poll's samples; gives each pod whose every container has a rate its CPU
    /// (cores), memory (bytes), the newest sample's time and the longest window.
    pub fn update(&mut self, page: &Page) -> BTreeMap<String, PodUsage> {
        for (key, &(value, ts_ms)) in &page.cpu {
            let c = self.last.entry(key.clone()).or_insert(Counter {
                value,
                ts_ms,
                rate: None,
            });
            if ts_ms > c.ts_ms {
                let dt = (ts_ms - c.ts_ms) / 1000.0;
                c.rate = (value >= c.value).then(|| ((value - c.value) / dt, dt));
                c.value = value;
                c.ts_ms = ts_ms;
            } else if ts_ms < c.ts_ms || value < c.value {
                // Older than the last, or the same instant told otherwise: start again.
                *c = Counter {
                    value,
                    ts_ms,
                    rate: None,
                };
            }
        }
        // Containers no longer read are forgotten.
        self.last.retain(|k, _| page.cpu.contains_key(k));
        let mut by_pod: BTreeMap<&str, Vec<(&Key, &Counter)>> = BTreeMap::new();
        for (k, c) in &self.last {
            by_pod.entry(k.1.as_str()).or_default().push((k, c));
        }
        let mut out = BTreeMap::new();
        for (pod, containers) in by_pod {
            let Some(rates) = containers
                .iter()
                .map(|(_, c)| c.rate)
                .collect::<Option<Vec<_>>>()
            else {
                continue;
            };
            let cpu: f64 = rates.iter().map(|r| r.0).sum();
            let window = rates.iter().map(|r| r.1).fold(0.0, f64::max);
            let ts = containers.iter().map(|(_, c)| c.ts_ms).fold(0.0, f64::max);
            let memory: f64 = page
                .memory
                .iter()
                .filter(|(k, _)| k.1 == pod)
                .map(|(_, v)| v)
                .sum();
            out.insert(
                pod.to_string(),
                PodUsage {
                    cpu,
                    memory,
                    timestamp: jiff::Timestamp::from_millisecond(ts as i64)
                        .ok()
                        .map(|t| t.to_string()),
                    window: Some(format!("{window:.3}s")),
                },
            );
        }
        out
    }
}

/// What one poll of the nodes gives: the pods' usage (those with a rate), and what went
/// wrong on the way that did not stop it.
pub struct Polled {
    /// Per pod.
    pub pods: BTreeMap<String, PodUsage>,
    /// Nodes not read, malformed lines, pods left out.
    pub problems: Vec<String>,
}

/// Reads the page of every node that runs a pod of `selector` in `namespace` and updates
/// `rates`; `Err` when the pods could not be listed or no node's page could be read.
pub async fn poll(
    client: &kube::Client,
    namespace: &str,
    selector: &str,
    rates: &mut Rates,
) -> Result<Polled, String> {
    let api: kube::Api<Pod> = kube::Api::namespaced(client.clone(), namespace);
    let listed = tokio::time::timeout(TIMEOUT, api.list(&ListParams::default().labels(selector)))
        .await
        .map_err(|_| format!("the pods were not listed within {} s", TIMEOUT.as_secs()))?
        .map_err(|e| format!("the pods could not be listed: {}", api_error(&e)))?;
    let mut nodes: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for p in listed.items {
        if let (Some(name), Some(node)) = (p.metadata.name, p.spec.and_then(|s| s.node_name)) {
            nodes.entry(node).or_default().insert(name);
        }
    }
    let mut problems = Vec::new();
    if nodes.len() > MAX_NODES {
        problems.push(format!(
            "the pods run on {} nodes: only the first {MAX_NODES} are read",
            nodes.len()
        ));
    }
    let mut page = Page::default();
    let mut read = 0usize;
    for (node, pods) in nodes.iter().take(MAX_NODES) {
        match fetch(client, node).await {
            Ok(text) => match page.add(&text, namespace, pods) {
                Ok(p) => {
                    read += 1;
                    problems.extend(p.into_iter().map(|p| format!("node {node}: {p}")));
                }
                Err(why) => problems.push(format!("node {node}: {why}")),
            },
            Err(why) => problems.push(format!("node {node}: {why}")),
        }
    }
    if read == 0 && !nodes.is_empty() {
        return Err(problems.join("; "));
    }
    Ok(Polled {
        pods: rates.update(&page),
        problems,
    })
}

fn api_error(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => format!("{}: {}", s.code, s.message),
        e => e.to_string(),
    }
}

/// One node's page, at most [`MAX_PAGE`] bytes, within [`TIMEOUT`].
async fn fetch(client: &kube::Client, node: &str) -> Result<String, String> {
    if node.is_empty()
        || !node
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
    {
        return Err(format!("{node:?} is no node name"));
    }
    let url = format!("/api/v1/nodes/{node}/proxy/metrics/resource");
    let req = http::Request::get(&url)
        .body(Vec::new())
        .map_err(|e| e.to_string())?;
    let read = async {
        let body = client
            .request_stream(req)
            .await
            .map_err(|e| format!("GET {url}: {}", api_error(&e)))?;
        let mut bytes = Vec::new();
        let mut limited = body.take(MAX_PAGE as u64 + 1);
        limited
            .read_to_end(&mut bytes)
            .await
            .map_err(|e| format!("GET {url}: {e}"))?;
        if bytes.len() > MAX_PAGE {
            return Err(format!(
                "GET {url}: the page is longer than {} MiB, refused",
                MAX_PAGE >> 20
            ));
        }
        String::from_utf8(bytes).map_err(|_| format!("GET {url}: the page is not UTF-8"))
    };
    tokio::time::timeout(TIMEOUT, read)
        .await
        .map_err(|_| format!("GET {url}: no page within {} s", TIMEOUT.as_secs()))?
}

#[cfg(test)]
mod tests {
    use super::*;

    const P1: &str = "# TYPE container_cpu_usage_seconds_total counter\n\
        container_cpu_usage_seconds_total{container=\"a\",namespace=\"shop\",pod=\"p\"} 1.5 1000\n\
        container_cpu_usage_seconds_total{container=\"b\",namespace=\"shop\",pod=\"p\"} 2 1000\n\
        container_cpu_usage_seconds_total{container=\"a\",namespace=\"other\",pod=\"p\"} 9 1000\n\
        container_memory_working_set_bytes{container=\"a\",namespace=\"shop\",pod=\"p\"} 1e6 1000\n\
        container_memory_working_set_bytes{container=\"b\",namespace=\"shop\",pod=\"p\"} 2e6 1000\n";

    fn page(text: &str) -> Page {
        let mut p = Page::default();
        let pods = BTreeSet::from(["p".to_string()]);
        p.add(text, "shop", &pods).unwrap();
        p
    }

    #[test]
    fn cpu_is_the_counters_delta_over_their_timestamps_and_the_first_page_has_none() {
        let mut r = Rates::default();
        assert!(r.update(&page(P1)).is_empty());
        // The same samples again (the kubelet has not refreshed): still no rate.
        assert!(r.update(&page(P1)).is_empty());
        let p2 = P1
            .replace("} 1.5 1000", "} 2.5 3000")
            .replace("} 2 1000", "} 2.5 3000");
        let u = r.update(&page(&p2));
        // (1 + 0.5) core-seconds over 2 s; the other namespace's pod "p" is not counted.
        assert_eq!(u["p"].cpu, 0.75);
        assert_eq!(u["p"].memory, 3e6);
        assert_eq!(u["p"].window.as_deref(), Some("2.000s"));
        assert_eq!(u["p"].timestamp.as_deref(), Some("1970-01-01T00:00:03Z"));
        // A counter that went back (a restarted container) gives no rate until the next.
        let p3 = p2.replace(
            "} 2.5 3000\ncontainer_cpu_usage_seconds_total{container=\"b\"",
            "} 0.1 4000\ncontainer_cpu_usage_seconds_total{container=\"b\"",
        );
        assert!(r.update(&page(&p3)).is_empty());
    }

    #[test]
    fn a_page_that_is_no_exposition_is_an_error_and_a_bad_line_a_problem() {
        let pods = BTreeSet::from(["p".to_string()]);
        let e = Page::default()
            .add("<html><body>502 Bad Gateway</body></html>", "shop", &pods)
            .unwrap_err();
        assert!(e.starts_with("not a Prometheus text page"), "{e}");
        let e = Page::default().add("up 1\n", "shop", &pods).unwrap_err();
        assert!(e.contains("neither"), "{e}");
        let bad = format!("{P1}container_cpu_usage_seconds_total{{pod=\"p\" 1\n");
        let problems = Page::default().add(&bad, "shop", &pods).unwrap();
        assert!(problems[0].starts_with("line 7 malformed"), "{problems:?}");
    }
}
