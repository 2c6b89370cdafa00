//! What the watched Kubernetes workload did under the load (`volley run --kube`), read from
//! kube.jsonl (every observation, at its arrival `t` on the run's clock) and kube.csv (the
//! model sampled at the scrape instants), each finding tied to its window and to what it cost:
//!
//! - **no ready endpoint**: a Service whose EndpointSlices had none ready (the worst case:
//!   every request to it failed or waited), said first;
//! - **a pod not ready**: from the line that shows it turn unready (it was ready before) to the
//!   line that shows it ready again (or deleted, or the run's end); a pod that flapped is one
//!   sentence with its windows. The probe's words come from the `Unhealthy` Events about it
//!   (timed out, refused, an HTTP status), counted by the rise of each Event's `count` seen
//!   during the run (an Event listed at the start as `before` counts from its count then), up to
//!   2 s after its last window ends (the Event may arrive after the status);
//! - **a restart**, with the reason its container ended (OOMKilled, Error, exit code);
//! - **an HPA's scale** (its desired replicas changed), with its metric, when the new pods were
//!   ready, and the TPS of the intervals before the decision against those from the new pods'
//!   readiness on (each side at least [`MIN_SIDE`] intervals, else not said);
//! - **CPU at its limit**: a level held (or, without levels, the run after the warm-up) whose
//!   mean `kube_pod_cpu_cores` was at least [`AT_LIMIT`] of the pod's limit;
//! - **a gap in the record**: a watch that lost the API server, metrics that were unavailable,
//!   a cut last line, a bound reached.
//!
//! Errors are counted from series.csv: the failed requests of every interval that overlaps the
//! window (its seconds are given with the count), against the failed requests of the whole run.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use volley_formats::Source;
use volley_formats::kubelog::{EventObs, HpaObs, KubeLog, Obs, PodObs};
use volley_formats::numfmt::group_thousands;
use volley_formats::rundir::ServerPoint;
use volley_scenario::words::counted;
use volley_stats::Interval;

use crate::levels::Level;

/// CPU counts as at its limit from this share of the limit.
pub const AT_LIMIT: f64 = 0.9;
/// Intervals each side needs for a TPS change around a scale to be said.
pub const MIN_SIDE: usize = 3;
/// Seconds after a pod's last unready window within which an Unhealthy Event still counts.
const EVENT_SLACK_S: f64 = 2.0;
/// Windows a flapping pod's sentence lists before "and N more".
const LISTED_WINDOWS: usize = 3;

/// The cluster section of report.json: what the sentences say, as numbers.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Cluster {
    /// Ready pods, least and most over the samples of kube.csv.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_pods_min: Option<f64>,
    /// See `ready_pods_min`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_pods_max: Option<f64>,
    /// Windows in which a Service had no ready endpoint.
    pub no_ready_endpoints: Vec<NoEndpoints>,
    /// Pods that were not ready, each with its windows.
    pub unready: Vec<Unready>,
    /// Container restarts.
    pub restarts: Vec<Restart>,
    /// HPA scale-outs and -ins.
    pub scales: Vec<Scale>,
    /// Pods at their CPU limit.
    pub cpu_at_limit: Vec<CpuAtLimit>,
    /// Where the record has a gap.
    pub gaps: Vec<Gap>,
    /// Each interval overlapping some pod's unready window, with its errors.
    #[serde(skip)]
    pub(crate) unready_rows: Vec<(usize, u64)>,
}

impl Cluster {
    /// Seconds pods were not ready, summed over pods.
    pub fn unready_s(&self) -> f64 {
        self.unready
            .iter()
            .map(|u| u.unready_s)
            .fold(0.0, |a, b| a + b)
    }

    /// Failed requests in the intervals overlapping any pod's unready window (an interval
    /// counted once).
    pub fn errors_unready(&self) -> u64 {
        self.unready_rows.iter().map(|(_, e)| e).sum()
    }
}

/// Failed requests of the intervals overlapping a window.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Errors {
    /// How many.
    pub count: u64,
    /// The overlapping intervals' first start and last end, s (equal when none overlap).
    pub from_s: f64,
    /// See `from_s`.
    pub to_s: f64,
}

/// A time window, s since t0.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Window {
    /// From, s.
    pub from_s: f64,
    /// To, s (the run's end when `open`).
    pub to_s: f64,
    /// Still so at the run's end.
    pub open: bool,
}

/// A Service with no ready endpoint.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct NoEndpoints {
    /// The Service.
    pub service: String,
    /// When.
    pub window: Window,
    /// Its endpoints then (none ready).
    pub endpoints: u64,
    /// The errors in the window.
    pub errors: Errors,
}

/// A pod that was not ready.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Unready {
    /// The pod.
    pub pod: String,
    /// Each window it was not ready.
    pub windows: Vec<Window>,
    /// Their seconds summed.
    pub unready_s: f64,
    /// The probe failures counted (Unhealthy Events), by their words, most first.
    pub probes: Vec<(String, i64)>,
    /// The Service whose endpoints it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    /// The fewest ready endpoints of that Service during its windows, and all its endpoints then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoints_ready: Option<u64>,
    /// See `endpoints_ready`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<u64>,
    /// The errors in the intervals overlapping its windows.
    pub errors: Errors,
}

/// A container restart.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Restart {
    /// The pod.
    pub pod: String,
    /// When it was seen, s.
    pub at_s: f64,
    /// Restarts seen then (the count rose by this).
    pub restarts: i64,
    /// The container, and why it last ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// See `container`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// See `container`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The errors in the intervals around it (the one it falls in and its neighbours).
    pub errors: Errors,
}

/// An HPA's change of desired replicas.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Scale {
    /// The HPA.
    pub hpa: String,
    /// What it scales (the watched Deployment).
    pub target: String,
    /// When it was seen, s.
    pub at_s: f64,
    /// Desired replicas before and after.
    pub from: i64,
    /// See `from`.
    pub to: i64,
    /// Its metric then: name, current and target, % of request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
    /// See `metric`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_pct: Option<i64>,
    /// See `metric`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_pct: Option<i64>,
    /// Pods that appeared with it (a scale-out), and those of them that became ready.
    pub new_pods: usize,
    /// See `new_pods`.
    pub new_ready: usize,
    /// When the last of them became ready, s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_s: Option<f64>,
    /// TPS of the intervals before the decision, and from the new pods' readiness on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tps_before: Option<Tps>,
    /// See `tps_before`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tps_after: Option<Tps>,
}

/// Mean TPS over some intervals.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Tps {
    /// Mean of the intervals' TPS.
    pub tps: f64,
    /// Intervals.
    pub intervals: usize,
    /// Their first start and last end, s.
    pub from_s: f64,
    /// See `from_s`.
    pub to_s: f64,
}

/// A pod at its CPU limit.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CpuAtLimit {
    /// The pod.
    pub pod: String,
    /// Its limit, cores.
    pub limit_cores: f64,
    /// Its mean CPU over the level, % of the limit.
    pub pct_of_limit: f64,
    /// The first level at which it was (none without levels: the run after the warm-up).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vusers: Option<f64>,
    /// Without levels, the VUs when the run held one number of them throughout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_vusers: Option<f64>,
    /// Replicas then: the Deployment's spec (its most over the level), or without a
    /// Deployment the ready pods (kube.csv's `kube_pods_ready`, mean over the level).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<f64>,
    /// The level's (or the run's) span, s.
    pub from_s: f64,
    /// See `from_s`.
    pub to_s: f64,
}

/// A gap in the record.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Gap {
    /// The watch's resource (`pods`, `metrics` ...), or the file.
    pub resource: String,
    /// `lost`, `unavailable`, `cut`, `problem`.
    pub what: String,
    /// When, s (none for a problem run.json names).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_s: Option<f64>,
    /// When the watch resumed, s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resumed_s: Option<f64>,
    /// Why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// The cluster's findings and their numbers; `None` for a run without `--kube`.
pub fn of(src: &Source, levels: &[Level], warmup_s: f64) -> Option<(Cluster, Vec<String>)> {
    let log = src.kube_log.as_ref()?;
    let rows = &src.series.intervals;
    let mut c = analyse(rows, log, &src.kube, levels, warmup_s);
    if let Some(k) = src.meta.as_ref().and_then(|m| m.kube.as_ref()) {
        c.gaps.extend(k.problems.iter().map(|p| Gap {
            resource: "kube".to_string(),
            what: "problem".to_string(),
            why: Some(p.clone()),
            ..Gap::default()
        }));
    }
    let total: u64 = rows.iter().map(|r| r.errors).sum();
    let text = sentences(&c, total);
    Some((c, text))
}

/// One pod as the lines showed it.
#[derive(Debug, Default)]
struct PodTrack {
    ready: bool,
    restarts: i64,
    gone: bool,
    open: Option<f64>,
    windows: Vec<Window>,
    first_t: f64,
    listed: bool,
    ready_t: Option<f64>,
}

/// An EndpointSlice: its name, its Service, and its endpoints (pod, ready).
type Slice = (String, String, Vec<(Option<String>, bool)>);

/// A Service's endpoints at a time: (t, ready, all).
type Point = (f64, u64, u64);

/// The record read: everything but the sentences.
pub(crate) fn analyse(
    rows: &[Interval],
    log: &KubeLog,
    kube: &[ServerPoint],
    levels: &[Level],
    warmup_s: f64,
) -> Cluster {
    let end = rows
        .iter()
        .map(|r| r.start_s + r.period_s)
        .fold(0.0, f64::max)
        .max(log.objects.last().map_or(0.0, |o| o.t));
    let mut pods: BTreeMap<String, PodTrack> = BTreeMap::new();
    let mut restarts = Vec::new();
    // Unhealthy Events' rises: (pod, t, words, rise).
    let mut probes: Vec<(String, f64, String, i64)> = Vec::new();
    let mut event_counts: HashMap<String, i64> = HashMap::new();
    // Slices (name -> service, endpoints) and each Service's timeline.
    let mut slices: Vec<Slice> = Vec::new();
    let mut services: Vec<(String, Vec<Point>)> = Vec::new();
    let mut hpas: Vec<(String, i64)> = Vec::new();
    let mut scales = Vec::new();
    for line in &log.objects {
        let t = line.t;
        let ended_op = matches!(line.op.as_str(), "delete" | "gone");
        match &line.obs {
            Obs::Pod(p) => pod_line(
                &mut pods,
                &mut restarts,
                &line.name,
                p,
                t,
                ended_op,
                line.op == "list",
            ),
            Obs::Event(e) => {
                if let Some((pod, words, rise)) = event_line(&mut event_counts, &line.name, e) {
                    probes.push((pod, t, words, rise));
                }
            }
            Obs::EndpointSlice(s) => {
                let eps: Vec<(Option<String>, bool)> = if ended_op {
                    Vec::new()
                } else {
                    s.endpoints
                        .iter()
                        .map(|e| (e.pod.clone(), e.ready && !e.terminating))
                        .collect()
                };
                match slices.iter_mut().find(|(n, _, _)| *n == line.name) {
                    Some(x) => x.2 = eps,
                    None => slices.push((line.name.clone(), s.service.clone(), eps)),
                }
                let (ready, all) = slices
                    .iter()
                    .filter(|(_, svc, _)| *svc == s.service)
                    .flat_map(|(_, _, e)| e.iter())
                    .fold((0, 0), |(r, a), (_, ok)| (r + u64::from(*ok), a + 1));
                match services.iter_mut().find(|(n, _)| *n == s.service) {
                    Some((_, tl)) => tl.push((t, ready, all)),
                    None => services.push((s.service.clone(), vec![(t, ready, all)])),
                }
            }
            Obs::HorizontalPodAutoscaler(h) => {
                if let Some(s) = hpa_line(&mut hpas, &line.name, h, t, &line.target) {
                    scales.push(s);
                }
            }
            _ => {}
        }
    }
    // The load's end: windows that start after it (the watcher's last seconds, the load
    // stopped) cost no request and are left out.
    let load_end = rows
        .iter()
        .filter(|r| r.period_s > 0.0)
        .map(|r| r.start_s + r.period_s)
        .fold(0.0, f64::max);
    for p in pods.values_mut() {
        if let Some(from) = p.open.take() {
            p.windows.push(Window {
                from_s: from,
                to_s: end,
                open: true,
            });
        }
        p.windows.retain(|w| w.from_s < load_end);
    }
    // The Service each pod was an endpoint of.
    let service_of = |pod: &str| {
        slices
            .iter()
            .find(|(_, _, e)| e.iter().any(|(p, _)| p.as_deref() == Some(pod)))
            .map(|(_, s, _)| s.clone())
            .or_else(|| (services.len() == 1).then(|| services[0].0.clone()))
    };
    let mut unready: Vec<Unready> = pods
        .iter()
        .filter(|(_, p)| !p.windows.is_empty())
        .map(|(name, p)| {
            let last = p.windows.last().expect("not empty");
            let until = if last.open {
                f64::INFINITY
            } else {
                last.to_s + EVENT_SLACK_S
            };
            let mut words: Vec<(String, i64)> = Vec::new();
            for (_, _, w, rise) in probes
                .iter()
                .filter(|(n, t, _, _)| n == name && *t <= until)
            {
                match words.iter_mut().find(|(x, _)| x == w) {
                    Some(x) => x.1 += rise,
                    None => words.push((w.clone(), *rise)),
                }
            }
            words.retain(|(_, n)| *n > 0);
            words.sort_by_key(|w| std::cmp::Reverse(w.1));
            let service = service_of(name);
            let low = service.as_ref().and_then(|s| {
                let tl = &services.iter().find(|(n, _)| n == s)?.1;
                p.windows
                    .iter()
                    .filter_map(|w| fewest(tl, w.from_s, w.to_s))
                    .min_by_key(|(r, _)| *r)
            });
            Unready {
                pod: name.clone(),
                unready_s: p
                    .windows
                    .iter()
                    .map(|w| w.to_s - w.from_s)
                    .fold(0.0, |a, b| a + b),
                errors: errors_in(rows, &p.windows),
                windows: p.windows.clone(),
                probes: words,
                service,
                endpoints_ready: low.map(|l| l.0),
                endpoints: low.map(|l| l.1),
            }
        })
        .collect();
    unready.sort_by_key(|u| std::cmp::Reverse(u.errors.count));
    let mut no_ready_endpoints = Vec::new();
    for (service, tl) in &services {
        let mut open: Option<(f64, u64)> = None;
        for &(t, ready, all) in tl {
            match (ready, open) {
                (0, None) => open = Some((t, all)),
                (0, Some((f, n))) => open = Some((f, n.max(all))),
                (_, Some((f, n))) => {
                    no_ready_endpoints.push(no_endpoints(rows, service, f, t, false, n));
                    open = None;
                }
                _ => {}
            }
        }
        if let Some((f, n)) = open {
            no_ready_endpoints.push(no_endpoints(rows, service, f, end, true, n));
        }
    }
    no_ready_endpoints.retain(|n| n.window.from_s < load_end);
    for r in &mut restarts {
        let r: &mut Restart = r;
        let p = rows.first().map_or(1.0, |r| r.period_s.max(1e-3));
        r.errors = errors_in(
            rows,
            &[Window {
                from_s: r.at_s - p,
                to_s: r.at_s + p,
                open: false,
            }],
        );
    }
    let scale_times: Vec<f64> = scales.iter().map(|s: &Scale| s.at_s).collect();
    for (k, s) in scales.iter_mut().enumerate() {
        let prev = if k == 0 { 0.0 } else { scale_times[k - 1] };
        let next = scale_times.get(k + 1).copied().unwrap_or(f64::INFINITY);
        if s.to > s.from {
            let mut fresh: Vec<&PodTrack> = pods
                .values()
                .filter(|p| !p.listed && p.first_t + EVENT_SLACK_S >= s.at_s && p.first_t < next)
                .collect();
            fresh.sort_by(|a, b| a.first_t.total_cmp(&b.first_t));
            fresh.truncate((s.to - s.from) as usize);
            s.new_pods = fresh.len();
            s.new_ready = fresh.iter().filter(|p| p.ready_t.is_some()).count();
            if s.new_pods > 0 && s.new_ready == s.new_pods {
                s.ready_s = fresh.iter().filter_map(|p| p.ready_t).reduce(f64::max);
            }
        }
        let after_from = if s.to > s.from {
            s.ready_s
        } else {
            Some(s.at_s)
        };
        s.tps_before = tps(rows, prev.max(warmup_s), s.at_s);
        s.tps_after = after_from.and_then(|f| tps(rows, f, next));
        if s.tps_before.is_none() || s.tps_after.is_none() {
            s.tps_before = None;
            s.tps_after = None;
        }
    }
    let mut gaps = Vec::new();
    for (i, w) in log.watches.iter().enumerate() {
        match w.op.as_str() {
            "lost" => gaps.push(Gap {
                resource: w.resource.clone(),
                what: "lost".to_string(),
                at_s: Some(w.t),
                resumed_s: log.watches[i + 1..]
                    .iter()
                    .find(|x| {
                        x.target == w.target
                            && x.resource == w.resource
                            && matches!(x.op.as_str(), "resumed" | "relisted" | "listed")
                    })
                    .map(|x| x.t),
                why: w.why.clone(),
            }),
            "unavailable" => gaps.push(Gap {
                resource: w.resource.clone(),
                what: "unavailable".to_string(),
                at_s: Some(w.t),
                resumed_s: None,
                why: w.why.clone(),
            }),
            _ => {}
        }
    }
    if log.cut {
        gaps.push(Gap {
            resource: volley_formats::rundir::KUBE_JSONL.to_string(),
            what: "cut".to_string(),
            ..Gap::default()
        });
    }
    let ready: Vec<f64> = kube
        .iter()
        .filter(|p| p.series == "kube_pods_ready" && p.value.is_finite())
        .map(|p| p.value)
        .collect();
    let unready_rows = unready_rows(rows, &unready);
    Cluster {
        ready_pods_min: ready.iter().copied().reduce(f64::min),
        ready_pods_max: ready.iter().copied().reduce(f64::max),
        no_ready_endpoints,
        unready,
        restarts,
        scales,
        cpu_at_limit: cpu_at_limit(rows, kube, levels, warmup_s),
        gaps,
        unready_rows,
    }
}

fn pod_line(
    pods: &mut BTreeMap<String, PodTrack>,
    restarts: &mut Vec<Restart>,
    name: &str,
    p: &PodObs,
    t: f64,
    ended_op: bool,
    listed: bool,
) {
    let ended = ended_op || p.deleting;
    let now = p.is_ready() && !ended;
    let Some(e) = pods.get_mut(name) else {
        pods.insert(
            name.to_string(),
            PodTrack {
                ready: now,
                restarts: p.restarts,
                gone: ended,
                first_t: t,
                listed,
                ready_t: now.then_some(t),
                ..PodTrack::default()
            },
        );
        return;
    };
    if e.gone && !ended {
        // Listed again after a gap: a pod of the same name (a StatefulSet's) starts afresh.
        e.gone = false;
    }
    if p.restarts > e.restarts {
        let term = p.last_term.as_ref();
        restarts.push(Restart {
            pod: name.to_string(),
            at_s: t,
            restarts: p.restarts - e.restarts,
            container: term.map(|t| t.container.clone()),
            reason: term.and_then(|t| t.reason.clone()),
            exit_code: term.map(|t| t.exit_code),
            errors: Errors::default(),
        });
    }
    e.restarts = e.restarts.max(p.restarts);
    if ended {
        if let Some(from) = e.open.take() {
            e.windows.push(Window {
                from_s: from,
                to_s: t,
                open: false,
            });
        }
        e.gone = true;
        e.ready = false;
        return;
    }
    if e.ready && !now {
        e.open = Some(t);
    } else if !e.ready && now {
        if let Some(from) = e.open.take() {
            e.windows.push(Window {
                from_s: from,
                to_s: t,
                open: false,
            });
        }
        e.ready_t.get_or_insert(t);
    }
    e.ready = now;
}

/// The rise of an Unhealthy Event's count: (pod, the probe's words, rise).
fn event_line(
    counts: &mut HashMap<String, i64>,
    name: &str,
    e: &EventObs,
) -> Option<(String, String, i64)> {
    let rise = match counts.get_mut(name) {
        Some(c) => {
            let rise = e.count - *c;
            *c = (*c).max(e.count);
            rise
        }
        None => {
            counts.insert(name.to_string(), e.count);
            if e.before { 0 } else { e.count }
        }
    };
    if rise <= 0 || e.reason.as_deref() != Some("Unhealthy") {
        return None;
    }
    let pod = e.object.strip_prefix("Pod/")?;
    Some((
        pod.to_string(),
        probe_words(e.message.as_deref().unwrap_or("")),
        rise,
    ))
}

/// A probe failure's message in words: `readiness probe timed out`, `liveness probe refused
/// the connection`, `readiness probe answered 503`.
pub fn probe_words(message: &str) -> String {
    let m = message.to_ascii_lowercase();
    let probe = if m.starts_with("liveness") {
        "liveness probe"
    } else if m.starts_with("startup") {
        "startup probe"
    } else {
        "readiness probe"
    };
    let what =
        if m.contains("deadline exceeded") || m.contains("timeout") || m.contains("timed out") {
            "timed out".to_string()
        } else if m.contains("connection refused") {
            "refused the connection".to_string()
        } else if m.contains("connection reset") {
            "had its connection reset".to_string()
        } else if let Some(code) = m
            .split("statuscode:")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
        {
            format!("answered {code}")
        } else {
            "failed".to_string()
        };
    format!("{probe} {what}")
}

fn hpa_line(
    hpas: &mut Vec<(String, i64)>,
    name: &str,
    h: &HpaObs,
    t: f64,
    target: &str,
) -> Option<Scale> {
    let Some((_, prev)) = hpas.iter_mut().find(|(n, _)| n == name) else {
        hpas.push((name.to_string(), h.desired));
        return None;
    };
    if h.desired == *prev || h.desired <= 0 {
        return None;
    }
    let from = std::mem::replace(prev, h.desired);
    let m = h.metrics.iter().find(|m| m.current_pct.is_some());
    Some(Scale {
        hpa: name.to_string(),
        target: target.rsplit('/').next().unwrap_or(target).to_string(),
        at_s: t,
        from,
        to: h.desired,
        metric: m.map(|m| m.name.clone()),
        current_pct: m.and_then(|m| m.current_pct),
        target_pct: m.and_then(|m| m.target_pct),
        ..Scale::default()
    })
}

/// The fewest ready endpoints of a Service between `from` and `to` (its state at `from` and
/// every change up to `to`), with all its endpoints then.
fn fewest(tl: &[Point], from: f64, to: f64) -> Option<(u64, u64)> {
    let then = tl.iter().rfind(|p| p.0 <= from);
    then.into_iter()
        .chain(tl.iter().filter(|p| p.0 > from && p.0 <= to))
        .map(|p| (p.1, p.2))
        .min_by_key(|p| p.0)
}

fn no_endpoints(
    rows: &[Interval],
    service: &str,
    from: f64,
    to: f64,
    open: bool,
    endpoints: u64,
) -> NoEndpoints {
    let window = Window {
        from_s: from,
        to_s: to,
        open,
    };
    NoEndpoints {
        service: service.to_string(),
        errors: errors_in(rows, std::slice::from_ref(&window)),
        window,
        endpoints,
    }
}

/// Whether row `r` overlaps window `w` (a window of no length: the row it falls in).
fn overlaps(r: &Interval, w: &Window) -> bool {
    let end = r.start_s + r.period_s;
    if w.to_s <= w.from_s {
        return r.start_s <= w.from_s && w.from_s < end;
    }
    r.start_s < w.to_s && end > w.from_s
}

/// The failed requests of the intervals overlapping any of `windows`, each interval once.
fn errors_in(rows: &[Interval], windows: &[Window]) -> Errors {
    let hit: Vec<&Interval> = rows
        .iter()
        .filter(|r| windows.iter().any(|w| overlaps(r, w)))
        .collect();
    Errors {
        count: hit.iter().map(|r| r.errors).sum(),
        from_s: hit.first().map_or(0.0, |r| r.start_s),
        to_s: hit.last().map_or(0.0, |r| r.start_s + r.period_s),
    }
}

/// Each interval overlapping some pod's unready window, with its errors.
fn unready_rows(rows: &[Interval], unready: &[Unready]) -> Vec<(usize, u64)> {
    rows.iter()
        .enumerate()
        .filter(|(_, r)| {
            unready
                .iter()
                .any(|u| u.windows.iter().any(|w| overlaps(r, w)))
        })
        .map(|(i, r)| (i, r.errors))
        .collect()
}

/// Mean TPS of the intervals (of some length) within `from`..`to`; `None` below [`MIN_SIDE`].
fn tps(rows: &[Interval], from: f64, to: f64) -> Option<Tps> {
    const EPS: f64 = 1e-6;
    let span: Vec<&Interval> = rows
        .iter()
        .filter(|r| {
            r.period_s > 0.0 && r.start_s + EPS >= from && r.start_s + r.period_s <= to + EPS
        })
        .collect();
    (span.len() >= MIN_SIDE).then(|| Tps {
        tps: span.iter().map(|r| r.tps).sum::<f64>() / span.len() as f64,
        intervals: span.len(),
        from_s: span[0].start_s,
        to_s: span[span.len() - 1].start_s + span[span.len() - 1].period_s,
    })
}

/// The `pod` label of a kube.csv series.
fn pod_label(series: &str) -> Option<&str> {
    let rest = series.split_once("pod=\"")?.1;
    Some(&rest[..rest.find('"')?])
}

/// Pods whose mean CPU over a level (or the run after the warm-up) was at [`AT_LIMIT`] of their
/// limit: the first such level of each.
fn cpu_at_limit(
    rows: &[Interval],
    kube: &[ServerPoint],
    levels: &[Level],
    warmup_s: f64,
) -> Vec<CpuAtLimit> {
    let mut pods: Vec<(&str, &str)> = Vec::new();
    for p in kube
        .iter()
        .filter(|p| p.series.starts_with("kube_pod_cpu_cores{"))
    {
        if let Some(pod) = pod_label(&p.series)
            && !pods.contains(&(p.target.as_str(), pod))
        {
            pods.push((p.target.as_str(), pod));
        }
    }
    let spans: Vec<(Option<f64>, f64, f64)> = if levels.is_empty() {
        let end = rows
            .iter()
            .map(|r| r.start_s + r.period_s)
            .fold(0.0, f64::max);
        vec![(None, warmup_s, end)]
    } else {
        levels
            .iter()
            .map(|l| (Some(l.vusers), l.from_s, l.to_s))
            .collect()
    };
    let in_span = |p: &ServerPoint, from: f64, to: f64| {
        p.row(rows)
            .is_some_and(|r| rows[r].start_s + 1e-9 >= from && rows[r].start_s + 1e-9 < to)
    };
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let mut out = Vec::new();
    for (target, pod) in pods {
        let of_pod = |p: &&ServerPoint, metric: &str| {
            p.target == target
                && crate::findings::is_metric(p, metric)
                && pod_label(&p.series) == Some(pod)
                && p.value.is_finite()
        };
        let Some(limit) = kube
            .iter()
            .filter(|p| of_pod(p, "kube_pod_cpu_limit_cores"))
            .map(|p| p.value)
            .next_back()
            .filter(|l| *l > 0.0)
        else {
            continue;
        };
        for &(vusers, from, to) in &spans {
            let used: Vec<f64> = kube
                .iter()
                .filter(|p| of_pod(p, "kube_pod_cpu_cores") && in_span(p, from, to))
                .map(|p| p.value)
                .collect();
            let Some(m) = mean(&used).filter(|m| *m >= AT_LIMIT * limit) else {
                continue;
            };
            // The replicas asked for (the Deployment's spec, its most over the level): pods
            // that flap in and out of Ready are still replicas sharing the load. Without a
            // Deployment (`pods/SELECTOR`), the ready pods.
            let of_series = |series: &str| -> Vec<f64> {
                kube.iter()
                    .filter(|p| p.target == target && p.series == series && in_span(p, from, to))
                    .map(|p| p.value)
                    .collect()
            };
            let spec = of_series("kube_deployment_replicas{state=\"spec\"}");
            let replicas = if spec.is_empty() {
                mean(&of_series("kube_pods_ready"))
            } else {
                spec.iter().copied().reduce(f64::max)
            };
            let ran: Vec<f64> = rows
                .iter()
                .filter(|r| r.period_s > 0.0 && r.start_s + 1e-9 >= from && r.start_s < to)
                .map(|r| r.vusers.round())
                .collect();
            let held_vusers =
                (vusers.is_none() && !ran.is_empty() && ran.iter().all(|v| *v == ran[0]))
                    .then(|| ran[0]);
            out.push(CpuAtLimit {
                pod: pod.to_string(),
                limit_cores: limit,
                pct_of_limit: m / limit * 100.0,
                vusers,
                held_vusers,
                replicas,
                from_s: from,
                to_s: to,
            });
            break;
        }
    }
    out
}

/// Kubernetes' way of writing cores: `100m`, `1.5`.
fn cores(c: f64) -> String {
    let m = c * 1000.0;
    if c < 1.0 && (m - m.round()).abs() < 1e-6 {
        format!("{:.0}m", m)
    } else {
        format!("{}", (c * 1000.0).round() / 1000.0)
    }
}

/// Seconds as the sentences give them: whole, or to a tenth when a window is shorter than 2 s.
fn span(from: f64, to: f64) -> String {
    if to - from < 2.0 {
        format!("{from:.1}–{to:.1} s")
    } else {
        format!("{from:.0}–{to:.0} s")
    }
}

fn errors_text(e: &Errors, total: u64, what: &str) -> String {
    if total == 0 {
        return "no request of the run failed".to_string();
    }
    format!(
        "{} of the run's {} errors fall in the intervals overlapping {what} ({})",
        group_thousands(e.count),
        group_thousands(total),
        span(e.from_s, e.to_s)
    )
}

/// The findings, worst first: no ready endpoint, pods not ready, restarts, scales, CPU at its
/// limit, then the gaps in the record.
pub(crate) fn sentences(c: &Cluster, total: u64) -> Vec<String> {
    let mut out = Vec::new();
    for n in &c.no_ready_endpoints {
        out.push(format!(
            "Service {} had no ready endpoint {}{} (0 of {}): every request it took then had no pod to go to; {}.",
            n.service,
            span(n.window.from_s, n.window.to_s),
            if n.window.open { ", still at the run's end" } else { "" },
            n.endpoints,
            errors_text(&n.errors, total, "that window")
        ));
    }
    for u in &c.unready {
        let spans: Vec<String> = u.windows.iter().map(|w| span(w.from_s, w.to_s)).collect();
        let when = if spans.len() == 1 {
            spans[0].clone()
        } else {
            let shown = if spans.len() > LISTED_WINDOWS + 1 {
                format!(
                    "{}, … and {} more, the last {}",
                    spans[..LISTED_WINDOWS].join(", "),
                    spans.len() - LISTED_WINDOWS - 1,
                    spans[spans.len() - 1]
                )
            } else {
                format!(
                    "{} and {}",
                    spans[..spans.len() - 1].join(", "),
                    spans[spans.len() - 1]
                )
            };
            format!(
                "{} times, {:.1} s in all: {shown}",
                spans.len(),
                u.unready_s
            )
        };
        let probes = if u.probes.is_empty() {
            "no probe failure recorded: no Unhealthy Event about it".to_string()
        } else {
            u.probes
                .iter()
                .map(|(w, n)| format!("{w}, {}", counted(n, "time")))
                .collect::<Vec<_>>()
                .join("; ")
        };
        let endpoints = match (u.endpoints_ready, u.endpoints) {
            (Some(r), Some(n)) => format!(
                "{}{r} of {n} endpoints{} ready; ",
                if u.windows.len() > 1 {
                    "as few as "
                } else {
                    ""
                },
                u.service
                    .as_ref()
                    .map_or(String::new(), |s| format!(" of Service {s}"))
            ),
            _ => String::new(),
        };
        let open = if u.windows.last().is_some_and(|w| w.open) {
            ", still not ready at the run's end"
        } else {
            ""
        };
        out.push(format!(
            "Pod {} was not ready {when} ({probes}){open}: {endpoints}{}.",
            u.pod,
            errors_text(
                &u.errors,
                total,
                if u.windows.len() == 1 {
                    "that window"
                } else {
                    "those windows"
                }
            )
        ));
    }
    for r in &c.restarts {
        let why = match (&r.reason, r.exit_code) {
            (Some(reason), Some(code)) => format!("{reason}, exit code {code}"),
            (None, Some(code)) => format!("exit code {code}"),
            (Some(reason), None) => reason.clone(),
            (None, None) => "no reason recorded".to_string(),
        };
        out.push(format!(
            "Pod {} restarted{} at {:.0} s ({}{why}): {}.",
            r.pod,
            if r.restarts > 1 {
                format!(" {} times", r.restarts)
            } else {
                String::new()
            },
            r.at_s,
            r.container
                .as_ref()
                .map_or(String::new(), |c| format!("container {c}: ")),
            if total == 0 {
                "no request of the run failed".to_string()
            } else if r.errors.to_s <= r.errors.from_s {
                "after the load's last interval".to_string()
            } else {
                format!(
                    "{} of the run's {} errors fall in the intervals around it ({})",
                    group_thousands(r.errors.count),
                    group_thousands(total),
                    span(r.errors.from_s, r.errors.to_s)
                )
            }
        ));
    }
    for s in &c.scales {
        let metric = match (&s.metric, s.current_pct) {
            (Some(m), Some(cur)) => format!(
                " ({} {cur} % of request{})",
                if m == "cpu" { "CPU" } else { m.as_str() },
                s.target_pct
                    .map_or(String::new(), |t| format!(", target {t} %"))
            ),
            _ => String::new(),
        };
        let ready = if s.to > s.from && s.new_pods > 0 {
            match s.ready_s {
                Some(r) => format!(
                    "; the new pod{} ready at {r:.0} s",
                    if s.new_pods > 1 { "s were" } else { " was" }
                ),
                None => format!(
                    "; {} of its {} new pods became ready before the run's end",
                    s.new_ready, s.new_pods
                ),
            }
        } else {
            String::new()
        };
        let change = match (&s.tps_before, &s.tps_after) {
            (Some(b), Some(a)) if b.tps > 0.0 => {
                let ratio = a.tps / b.tps;
                format!(
                    "; TPS {} {ratio:.1}× after ({:.0} → {:.0} req/s: {} before {:.0} s, {} from {:.0} s)",
                    if ratio >= 1.0 { "rose" } else { "fell" },
                    b.tps,
                    a.tps,
                    counted(b.intervals, "interval"),
                    s.at_s,
                    counted(a.intervals, "interval"),
                    a.from_s
                )
            }
            _ => String::new(),
        };
        out.push(format!(
            "The HPA {} scaled {} {} → {} at {:.0} s{metric}{ready}{change}.",
            s.hpa, s.target, s.from, s.to, s.at_s
        ));
    }
    for a in &c.cpu_at_limit {
        let (at, over) = match (a.vusers, a.held_vusers) {
            (Some(v), _) => (format!("from {v:.0} VUs"), "that level".to_string()),
            (None, Some(v)) => (
                format!("at {v:.0} VUs"),
                format!("the run after its warm-up, {}", span(a.from_s, a.to_s)),
            ),
            (None, None) => (
                "over the run".to_string(),
                format!("the run after its warm-up, {}", span(a.from_s, a.to_s)),
            ),
        };
        let on = a.replicas.map_or(String::new(), |r| {
            format!(" on {}", counted(r.round() as i64, "replica"))
        });
        out.push(format!(
            "Pod {} at its CPU limit ({}) {at}{on} ({:.0} % of the limit over {over}).",
            a.pod,
            cores(a.limit_cores),
            a.pct_of_limit,
        ));
    }
    for g in &c.gaps {
        let why = g.why.as_ref().map_or(String::new(), |w| format!(" ({w})"));
        out.push(match g.what.as_str() {
            // The kubelet's pages (metrics.k8s.io's fallback) are polled, not watched.
            "lost" if g.resource.starts_with("kubelet") => match g.resumed_s {
                Some(r) => format!(
                    "Reading the {} failed at {:.0} s{why} and worked again at {r:.0} s: pod CPU and memory have a gap of {:.1} s.",
                    g.resource,
                    g.at_s.unwrap_or(0.0),
                    r - g.at_s.unwrap_or(0.0)
                ),
                None => format!(
                    "Reading the {} failed at {:.0} s{why} and did not work again: pod CPU and memory stop there.",
                    g.resource,
                    g.at_s.unwrap_or(0.0),
                ),
            },
            "lost" => match g.resumed_s {
                Some(r) => format!(
                    "The watch of {} lost the API server at {:.0} s{why} and resumed at {r:.0} s: the record of {} has a gap of {:.1} s.",
                    g.resource,
                    g.at_s.unwrap_or(0.0),
                    g.resource,
                    r - g.at_s.unwrap_or(0.0)
                ),
                None => format!(
                    "The watch of {} lost the API server at {:.0} s{why} and did not resume: the record of {} stops there.",
                    g.resource,
                    g.at_s.unwrap_or(0.0),
                    g.resource
                ),
            },
            "unavailable" if g.resource.contains("metrics") => format!(
                "Pod metrics were unavailable{why}: the record has no CPU or memory of the pods, so no CPU limit could be judged."
            ),
            "unavailable" => format!(
                "The watch of {} was unavailable{why}: the record has none of it.",
                g.resource
            ),
            "cut" => format!(
                "{}'s last line was cut off (the run ended while it was written) and was left out.",
                g.resource
            ),
            _ => format!("The Kubernetes record has a gap:{why}."),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_formats::kubelog::{
        EndpointObs, HpaMetric, ObjectLine, SliceObs, Termination, WatchLine,
    };

    const TARGET: &str = "kube:shop/deployment/chat";

    /// `n` one-second rows at 4 VUs, with `errors(i)` failures and `tps(i)` TPS.
    fn rows(n: usize, errors: impl Fn(usize) -> u64, tps: impl Fn(usize) -> f64) -> Vec<Interval> {
        (0..n)
            .map(|i| Interval {
                start_s: i as f64,
                period_s: 1.0,
                vusers: 4.0,
                errors: errors(i),
                tps: tps(i),
                ..Interval::default()
            })
            .collect()
    }

    fn line(t: f64, op: &str, name: &str, obs: Obs) -> ObjectLine {
        ObjectLine {
            t,
            target: TARGET.into(),
            op: op.into(),
            ns: "shop".into(),
            name: name.into(),
            obs,
        }
    }

    fn pod(t: f64, op: &str, name: &str, ready: bool) -> ObjectLine {
        line(
            t,
            op,
            name,
            Obs::Pod(PodObs {
                phase: Some("Running".into()),
                ready: Some(ready),
                ..PodObs::default()
            }),
        )
    }

    fn unhealthy(t: f64, name: &str, pod: &str, message: &str, count: i64) -> ObjectLine {
        line(
            t,
            "apply",
            name,
            Obs::Event(EventObs {
                r#type: Some("Warning".into()),
                reason: Some("Unhealthy".into()),
                object: format!("Pod/{pod}"),
                message: Some(message.into()),
                count,
                ..EventObs::default()
            }),
        )
    }

    fn slice(t: f64, endpoints: &[(&str, bool)]) -> ObjectLine {
        line(
            t,
            "apply",
            "chat-abcde",
            Obs::EndpointSlice(SliceObs {
                service: "chat".into(),
                endpoints: endpoints
                    .iter()
                    .map(|(p, r)| EndpointObs {
                        pod: Some(p.to_string()),
                        ready: *r,
                        terminating: false,
                    })
                    .collect(),
            }),
        )
    }

    fn log(objects: Vec<ObjectLine>) -> KubeLog {
        KubeLog {
            objects,
            ..KubeLog::default()
        }
    }

    const TIMEOUT: &str = "Readiness probe failed: Get \"http://10.0.0.5:8080/health\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)";

    #[test]
    fn a_pod_not_ready_names_its_window_probe_endpoints_and_errors() {
        // 10 errors a second in 45..=52, one in every other second: 8 * 10 + 52 = 132.
        let rows = rows(
            60,
            |i| if (45..=52).contains(&i) { 10 } else { 1 },
            |_| 50.0,
        );
        let log = log(vec![
            pod(0.2, "list", "chat-a", true),
            pod(0.2, "list", "chat-b", true),
            slice(0.3, &[("chat-a", true), ("chat-b", true)]),
            // An older failure listed as before the run: context, not counted.
            line(0.3, "list", "old", {
                let Obs::Event(mut e) = unhealthy(0.0, "old", "chat-a", TIMEOUT, 5).obs else {
                    unreachable!()
                };
                e.before = true;
                Obs::Event(e)
            }),
            unhealthy(44.0, "chat-a.1", "chat-a", TIMEOUT, 1),
            unhealthy(45.0, "chat-a.1", "chat-a", TIMEOUT, 3),
            pod(45.3, "apply", "chat-a", false),
            slice(45.4, &[("chat-a", false), ("chat-b", true)]),
            pod(52.1, "apply", "chat-a", true),
            slice(52.2, &[("chat-a", true), ("chat-b", true)]),
            // After its window: not this window's.
            unhealthy(58.0, "chat-a.1", "chat-a", TIMEOUT, 4),
        ]);
        let c = analyse(&rows, &log, &[], &[], 0.0);
        assert_eq!(c.unready.len(), 1, "{c:?}");
        let u = &c.unready[0];
        assert_eq!(
            u.windows,
            vec![Window {
                from_s: 45.3,
                to_s: 52.1,
                open: false
            }]
        );
        assert_eq!(u.probes, vec![("readiness probe timed out".to_string(), 3)]);
        assert_eq!((u.endpoints_ready, u.endpoints), (Some(1), Some(2)));
        assert_eq!(
            u.errors,
            Errors {
                count: 80,
                from_s: 45.0,
                to_s: 53.0
            }
        );
        assert!(c.no_ready_endpoints.is_empty() && c.restarts.is_empty());
        let text = sentences(&c, 132);
        assert_eq!(
            text,
            vec![
                "Pod chat-a was not ready 45–52 s (readiness probe timed out, 3 times): 1 of 2 endpoints of Service chat ready; 80 of the run's 132 errors fall in the intervals overlapping that window (45–53 s)."
            ]
        );
        assert_eq!(c.errors_unready(), 80);
    }

    #[test]
    fn a_flapping_pod_is_one_sentence_and_no_ready_endpoint_comes_first() {
        let rows = rows(40, |i| u64::from((10..12).contains(&i)) * 100, |_| 10.0);
        let mut lines = vec![
            pod(0.1, "list", "chat-a", true),
            pod(0.1, "list", "chat-b", true),
            slice(0.2, &[("chat-a", true), ("chat-b", true)]),
        ];
        for k in 0..4 {
            let t = 10.0 + 5.0 * k as f64;
            lines.push(unhealthy(
                t - 0.5,
                "chat-a.1",
                "chat-a",
                "Readiness probe failed: HTTP probe failed with statuscode: 503",
                k + 1,
            ));
            lines.push(pod(t, "apply", "chat-a", false));
            lines.push(pod(t + 1.5, "apply", "chat-a", true));
        }
        // Both out at 10.0-11.5: the Service had no ready endpoint.
        lines.push(pod(10.2, "apply", "chat-b", false));
        lines.push(slice(10.3, &[("chat-a", false), ("chat-b", false)]));
        lines.push(pod(11.4, "apply", "chat-b", true));
        lines.push(slice(11.6, &[("chat-a", true), ("chat-b", true)]));
        lines.sort_by(|a, b| a.t.total_cmp(&b.t));
        let c = analyse(&rows, &log(lines), &[], &[], 0.0);
        assert_eq!(c.no_ready_endpoints.len(), 1);
        let n = &c.no_ready_endpoints[0];
        assert_eq!(
            (n.window.from_s, n.window.to_s, n.endpoints),
            (10.3, 11.6, 2)
        );
        assert_eq!(n.errors.count, 200);
        let a = c.unready.iter().find(|u| u.pod == "chat-a").unwrap();
        assert_eq!(a.windows.len(), 4);
        assert!((a.unready_s - 6.0).abs() < 1e-9);
        assert_eq!(
            a.probes,
            vec![("readiness probe answered 503".to_string(), 4)]
        );
        let text = sentences(&c, 200);
        assert_eq!(text.len(), 3, "{text:#?}");
        assert_eq!(
            text[0],
            "Service chat had no ready endpoint 10.3–11.6 s (0 of 2): every request it took then had no pod to go to; 200 of the run's 200 errors fall in the intervals overlapping that window (10–12 s)."
        );
        let flap = text.iter().find(|t| t.starts_with("Pod chat-a")).unwrap();
        assert_eq!(
            flap,
            "Pod chat-a was not ready 4 times, 6.0 s in all: 10.0–11.5 s, 15.0–16.5 s, 20.0–21.5 s and 25.0–26.5 s (readiness probe answered 503, 4 times): as few as 0 of 2 endpoints of Service chat ready; 200 of the run's 200 errors fall in the intervals overlapping those windows (10–27 s)."
        );
        let re = regex_like(flap);
        assert!(re, "{flap}");
    }

    /// The acceptance script's pattern `was not ready .* s \((readiness probe|...)`.
    fn regex_like(s: &str) -> bool {
        s.split_once("was not ready ")
            .is_some_and(|(_, rest)| rest.contains(" s (readiness probe"))
    }

    #[test]
    fn an_hpa_scale_out_names_the_new_pods_and_the_tps_change() {
        let rows = rows(
            80,
            |_| 0,
            |i| {
                if i < 41 {
                    40.0
                } else if i < 59 {
                    70.0
                } else {
                    100.0
                }
            },
        );
        let hpa = |t: f64, desired: i64, cur: i64| {
            line(
                t,
                if t < 1.0 { "list" } else { "apply" },
                "chat",
                Obs::HorizontalPodAutoscaler(HpaObs {
                    current: Some(1),
                    desired,
                    min: Some(1),
                    max: 5,
                    metrics: vec![HpaMetric {
                        name: "cpu".into(),
                        current_pct: Some(cur),
                        target_pct: Some(50),
                    }],
                    last_scale: None,
                }),
            )
        };
        let log = log(vec![
            pod(0.1, "list", "chat-a", true),
            hpa(0.2, 1, 20),
            hpa(40.2, 3, 180),
            pod(40.5, "apply", "chat-b", false),
            pod(40.6, "apply", "chat-c", false),
            pod(55.0, "apply", "chat-b", true),
            pod(58.3, "apply", "chat-c", true),
        ]);
        let c = analyse(&rows, &log, &[], &[], 0.0);
        assert_eq!(c.scales.len(), 1);
        let s = &c.scales[0];
        assert_eq!((s.from, s.to, s.new_pods, s.new_ready), (1, 3, 2, 2));
        assert_eq!(s.ready_s, Some(58.3));
        let (b, a) = (
            s.tps_before.as_ref().unwrap(),
            s.tps_after.as_ref().unwrap(),
        );
        assert_eq!(
            (b.intervals, b.tps, b.from_s, b.to_s),
            (40, 40.0, 0.0, 40.0)
        );
        assert_eq!(
            (a.intervals, a.tps, a.from_s, a.to_s),
            (21, 100.0, 59.0, 80.0)
        );
        // New pods starting are no unready window.
        assert!(c.unready.is_empty());
        assert_eq!(
            sentences(&c, 0),
            vec![
                "The HPA chat scaled chat 1 → 3 at 40 s (CPU 180 % of request, target 50 %); the new pods were ready at 58 s; TPS rose 2.5× after (40 → 100 req/s: 40 intervals before 40 s, 21 intervals from 59 s)."
            ]
        );
        // Fewer than three intervals on a side: no TPS said.
        let short = self::rows(42, |_| 0, |_| 1.0);
        let c = analyse(&short, &log, &[], &[], 0.0);
        assert!(c.scales[0].tps_after.is_none());
        assert!(!sentences(&c, 0)[0].contains("TPS"));
    }

    fn level(vusers: f64, from_s: f64, to_s: f64) -> Level {
        Level {
            vusers,
            from_s,
            to_s,
            tps_avg: 0.0,
            mttfb_avg_ms: 0.0,
            ttfb_p50_ms: None,
            ttfb_p99_ms: None,
            error_rate_pct: 0.0,
            intervals: (to_s - from_s) as usize,
            server: Vec::new(),
            pool_wait_p99_ms: None,
            ready_pods: None,
            replicas: None,
        }
    }

    #[test]
    fn cpu_at_its_limit_is_named_at_its_first_level() {
        let rows = rows(30, |_| 0, |_| 1.0);
        let levels = [
            level(8.0, 0.0, 10.0),
            level(16.0, 10.0, 20.0),
            level(32.0, 20.0, 30.0),
        ];
        let mut kube = Vec::new();
        for i in 1..=30 {
            let t = i as f64;
            let used = if t <= 10.0 {
                0.05
            } else if t <= 20.0 {
                0.08
            } else {
                0.098
            };
            let point = |series: &str, value: f64, rate: bool| ServerPoint {
                elapsed_s: t,
                target: TARGET.into(),
                series: series.into(),
                value,
                rate,
            };
            kube.push(point("kube_pods_ready", 1.0, false));
            kube.push(point(
                "kube_pod_cpu_limit_cores{pod=\"proxy-5d9\"}",
                0.1,
                false,
            ));
            kube.push(point("kube_pod_cpu_cores{pod=\"proxy-5d9\"}", used, true));
        }
        let c = analyse(&rows, &KubeLog::default(), &kube, &levels, 0.0);
        assert_eq!(c.cpu_at_limit.len(), 1);
        let a = &c.cpu_at_limit[0];
        assert_eq!((a.vusers, a.replicas), (Some(32.0), Some(1.0)));
        assert!((a.pct_of_limit - 98.0).abs() < 1e-9);
        assert_eq!((c.ready_pods_min, c.ready_pods_max), (Some(1.0), Some(1.0)));
        assert_eq!(
            sentences(&c, 0),
            vec![
                "Pod proxy-5d9 at its CPU limit (100m) from 32 VUs on 1 replica (98 % of the limit over that level)."
            ]
        );
        // 80 % is not at the limit.
        let below: Vec<ServerPoint> = kube
            .iter()
            .filter(|p| p.elapsed_s <= 20.0)
            .cloned()
            .collect();
        assert!(
            analyse(&rows, &KubeLog::default(), &below, &levels, 0.0)
                .cpu_at_limit
                .is_empty()
        );
    }

    #[test]
    fn an_oom_killed_restart_names_its_reason_and_the_errors_around_it() {
        let rows = rows(80, |i| if i == 63 { 40 } else { 0 }, |_| 1.0);
        let mut restarted = pod(63.2, "apply", "chat-a", true);
        if let Obs::Pod(p) = &mut restarted.obs {
            p.restarts = 1;
            p.last_term = Some(Termination {
                container: "app".into(),
                reason: Some("OOMKilled".into()),
                exit_code: 137,
            });
        }
        let log = log(vec![pod(0.1, "list", "chat-a", true), restarted]);
        let c = analyse(&rows, &log, &[], &[], 0.0);
        assert_eq!(c.restarts.len(), 1);
        assert_eq!(c.restarts[0].errors.count, 40);
        assert_eq!(
            sentences(&c, 40),
            vec![
                "Pod chat-a restarted at 63 s (container app: OOMKilled, exit code 137): 40 of the run's 40 errors fall in the intervals around it (62–65 s)."
            ]
        );
    }

    #[test]
    fn a_lost_watch_and_unavailable_metrics_are_said() {
        let watch = |t: f64, resource: &str, op: &str, why: Option<&str>| WatchLine {
            t,
            target: TARGET.into(),
            resource: resource.into(),
            op: op.into(),
            objects: None,
            why: why.map(str::to_string),
        };
        let log = KubeLog {
            watches: vec![
                watch(0.1, "pods", "listed", None),
                watch(
                    0.1,
                    "metrics",
                    "unavailable",
                    Some("metrics.k8s.io is not served"),
                ),
                watch(30.0, "pods", "lost", Some("connection reset")),
                watch(34.6, "pods", "resumed", None),
                watch(50.0, "events", "lost", Some("EOF")),
                watch(40.0, "kubelet /metrics/resource", "lost", Some("503")),
                watch(42.0, "kubelet /metrics/resource", "resumed", None),
            ],
            cut: true,
            ..KubeLog::default()
        };
        let c = analyse(&rows(60, |_| 0, |_| 1.0), &log, &[], &[], 0.0);
        assert_eq!(c.gaps.len(), 5);
        assert_eq!(
            sentences(&c, 0),
            vec![
                "Pod metrics were unavailable (metrics.k8s.io is not served): the record has no CPU or memory of the pods, so no CPU limit could be judged.",
                "The watch of pods lost the API server at 30 s (connection reset) and resumed at 35 s: the record of pods has a gap of 4.6 s.",
                "The watch of events lost the API server at 50 s (EOF) and did not resume: the record of events stops there.",
                "Reading the kubelet /metrics/resource failed at 40 s (503) and worked again at 42 s: pod CPU and memory have a gap of 2.0 s.",
                "kube.jsonl's last line was cut off (the run ended while it was written) and was left out.",
            ]
        );
    }

    #[test]
    fn probe_messages_in_words() {
        assert_eq!(probe_words(TIMEOUT), "readiness probe timed out");
        assert_eq!(
            probe_words(
                "Liveness probe failed: Get \"http://x/\": dial tcp 10.0.0.5:8080: connect: connection refused"
            ),
            "liveness probe refused the connection"
        );
        assert_eq!(
            probe_words("Readiness probe failed: HTTP probe failed with statuscode: 500"),
            "readiness probe answered 500"
        );
        assert_eq!(
            probe_words("Readiness probe errored: rpc error"),
            "readiness probe failed"
        );
    }
}
