//! The watcher: its own thread and tokio runtime (the engine's threads never wait on it),
//! one kube-runtime watch per resource of each workload, merged into one stream; every
//! observation goes to kube.jsonl as it comes and into the model, which is sampled into
//! kube.csv at the scrape instants (`t0 + interval·(i+1)`, as the server-metrics scraper
//! takes its scrapes). A lost watch says so and resumes from its last resourceVersion; a
//! 410 Gone lists again, and what is not listed again was deleted in the gap.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use futures::stream::{BoxStream, SelectAll};
use futures::{Stream, StreamExt};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{Event, Pod};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource, ResourceExt};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;
use volley_rundir::kube::{KubeNote, KubeTargetNote, KubeWatchNote};

use crate::error::{Error, Result};
use crate::obs::{
    DeploymentObs, EventObs, HpaObs, Obs, PodMetricsObs, PodObs, PodUsage, Reduce, ReplicaSetObs,
    SliceObs, quantity,
};
use crate::record::{ObjectLine, Recorder, WatchLine};
use crate::resolve::{Resolved, resolve};
use crate::spec::Spec;
use crate::state::{Change, State};

/// What to watch, and with which configuration.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The workloads (`--kube`, repeatable).
    pub specs: Vec<Spec>,
    /// The kubeconfig context (`--kube-context`); `None`: the current one.
    pub context: Option<String>,
    /// A kubeconfig file; `None`: `KUBECONFIG`, `~/.kube/config`, or in-cluster.
    pub kubeconfig: Option<PathBuf>,
    /// Why this process does not watch although `--kube` was given (a segment other than 0
    /// of a split run: segment 0 watches for all). The watcher then reaches nothing, writes
    /// no file, and run.json's note says this in its `problems`.
    pub off: Option<String>,
}

/// Longest wait for the API server before the run (loading, resolving the workloads).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
/// Longest wait for the watcher to stop and hand back its note.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// Where and when the run's record starts.
struct Go {
    t0: Instant,
    started: SystemTime,
    interval: Duration,
    dir: PathBuf,
}

/// A connected watcher: resolved, waiting for [`Watcher::start`].
pub struct Watcher {
    note: KubeNote,
    go: Option<tokio::sync::oneshot::Sender<Go>>,
    stop: CancellationToken,
    done: mpsc::Receiver<KubeNote>,
    /// Off ([`Options::off`]): nothing to start or stop.
    idle: bool,
}

impl Watcher {
    /// Loads the configuration, reaches the API server and resolves every workload (its
    /// selector, Services, HPAs), on the watcher's own thread; an error here (a missing
    /// permission, no such Deployment) comes before any load is sent.
    pub fn connect(options: Options) -> Result<Watcher> {
        if let Some(why) = &options.off {
            let (_, done) = mpsc::channel::<KubeNote>();
            return Ok(Watcher {
                note: KubeNote {
                    targets: options
                        .specs
                        .iter()
                        .map(|s| KubeTargetNote {
                            spec: s.to_string(),
                            ..KubeTargetNote::default()
                        })
                        .collect(),
                    problems: vec![why.clone()],
                    ..KubeNote::default()
                },
                go: None,
                stop: CancellationToken::new(),
                done,
                idle: true,
            });
        }
        let (ready_tx, ready_rx) = mpsc::channel::<Result<KubeNote>>();
        let (go_tx, go_rx) = tokio::sync::oneshot::channel::<Go>();
        let (done_tx, done_rx) = mpsc::channel::<KubeNote>();
        let stop = CancellationToken::new();
        let thread_stop = stop.clone();
        std::thread::Builder::new()
            .name("volley-kube".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(Error::config(format!(
                            "cannot start the watcher's runtime: {e}"
                        ))));
                        return;
                    }
                };
                rt.block_on(async move {
                    let setup = tokio::time::timeout(CONNECT_TIMEOUT, setup(&options)).await;
                    let (client, resolved, note) = match setup {
                        Ok(Ok(s)) => s,
                        Ok(Err(e)) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                        Err(_) => {
                            let _ = ready_tx.send(Err(Error::config(format!(
                                "the API server did not answer within {} s",
                                CONNECT_TIMEOUT.as_secs()
                            ))));
                            return;
                        }
                    };
                    if ready_tx.send(Ok(note.clone())).is_err() {
                        return;
                    }
                    let go = tokio::select! {
                        go = go_rx => match go { Ok(go) => go, Err(_) => return },
                        _ = thread_stop.cancelled() => return,
                    };
                    let note = run(client, resolved, note, go, thread_stop).await;
                    let _ = done_tx.send(note);
                });
            })
            .map_err(|e| Error::write(&PathBuf::from("(thread volley-kube)"), e))?;
        let note = ready_rx.recv().map_err(|_| {
            Error::config("the watcher's thread ended before it was ready".to_string())
        })??;
        Ok(Watcher {
            note,
            go: Some(go_tx),
            stop,
            done: done_rx,
            idle: false,
        })
    }

    /// run.json's note as resolved (before any watch ran).
    pub fn note(&self) -> &KubeNote {
        &self.note
    }

    /// Starts watching: kube.jsonl and kube.csv in `dir`, times from `t0` (the scraper's),
    /// samples every `interval`. `started` is t0 as wall time (Events listed that ended
    /// before it are marked `before`).
    pub fn start(&mut self, t0: Instant, started: SystemTime, interval: Duration, dir: PathBuf) {
        if let Some(go) = self.go.take() {
            let _ = go.send(Go {
                t0,
                started,
                interval,
                dir,
            });
        }
    }

    /// Stops watching (within [`STOP_TIMEOUT`]), after the samples due by now are written;
    /// gives run.json's note with each watch's counts.
    pub fn stop(mut self) -> KubeNote {
        self.stop.cancel();
        if self.go.take().is_some() || self.idle {
            return self.note.clone();
        }
        match self.done.recv_timeout(STOP_TIMEOUT) {
            Ok(note) => note,
            Err(_) => {
                let mut note = self.note.clone();
                note.problems.push(format!(
                    "the watcher did not stop within {} s: its record may end early",
                    STOP_TIMEOUT.as_secs()
                ));
                note
            }
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn setup(options: &Options) -> Result<(kube::Client, Vec<Resolved>, KubeNote)> {
    let loaded =
        crate::config::load(options.context.as_deref(), options.kubeconfig.as_deref()).await?;
    let client = kube::Client::try_from(loaded.config)
        .map_err(|e| Error::config(format!("cannot make a client of the kubeconfig: {e}")))?;
    // Every permission reviewed before anything is read: a denied one names itself.
    let checked = crate::preflight::check(&client, &options.specs, &loaded.namespace).await?;
    let mut resolved = Vec::new();
    for spec in &options.specs {
        resolved.push(resolve(&client, spec, &loaded.namespace).await?);
    }
    let note = KubeNote {
        context: loaded.context,
        server: loaded.server,
        namespace: loaded.namespace,
        auth: loaded.auth,
        targets: resolved
            .iter()
            .map(|r| KubeTargetNote {
                spec: r.spec.to_string(),
                target: r.target.clone(),
                selector: r.selector.clone(),
                services: r.services.clone(),
                hpas: r.hpas.clone(),
            })
            .collect(),
        metrics: checked.metrics,
        problems: checked.problems,
        ..KubeNote::default()
    };
    Ok((client, resolved, note))
}

/// One watch's event, reduced.
enum Ev {
    /// Where the CPU and memory come from from now on (the kubelet fallback), and why.
    Source(String),
    Init,
    InitApply(String, String, Obs),
    InitDone,
    Apply(String, String, Obs),
    Delete(String, String, Obs),
}

/// An event of one watch of one workload (`resource` names the watch).
struct Item {
    target: usize,
    resource: &'static str,
    ev: std::result::Result<Ev, String>,
}

const METRICS: &str = "pods.metrics.k8s.io";
/// The fallback's "watch" (crate::kubelet).
const KUBELET: &str = crate::kubelet::SOURCE;

fn describe(e: &watcher::Error) -> String {
    let status = match e {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => Some((s.code, s.message.clone())),
        watcher::Error::WatchError(s) => Some((s.code, s.message.clone())),
        _ => None,
    };
    match status {
        Some((403, m)) => format!(
            "forbidden (403: {m}): grant the Role in docs/kubernetes.md (\"Watching the target\")"
        ),
        Some((code, m)) => format!("{code}: {m}"),
        None => e.to_string(),
    }
}

fn watch<K>(
    api: Api<K>,
    config: watcher::Config,
    target: usize,
    resource: &'static str,
    reduce: fn(&K) -> Obs,
) -> BoxStream<'static, Item>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let named = move |o: &K| (o.name_any(), o.namespace().unwrap_or_default(), reduce(o));
    watcher(api, config)
        .default_backoff()
        .map(move |r| Item {
            target,
            resource,
            ev: match r {
                Ok(watcher::Event::Init) => Ok(Ev::Init),
                Ok(watcher::Event::InitDone) => Ok(Ev::InitDone),
                Ok(watcher::Event::InitApply(o)) => {
                    let (n, ns, obs) = named(&o);
                    Ok(Ev::InitApply(n, ns, obs))
                }
                Ok(watcher::Event::Apply(o)) => {
                    let (n, ns, obs) = named(&o);
                    Ok(Ev::Apply(n, ns, obs))
                }
                Ok(watcher::Event::Delete(o)) => {
                    let (n, ns, obs) = named(&o);
                    Ok(Ev::Delete(n, ns, obs))
                }
                Err(e) => Err(describe(&e)),
            },
        })
        .boxed()
}

/// How one watch goes.
#[derive(Default)]
struct Track {
    note: KubeWatchNote,
    inits: u32,
    listing: Option<BTreeSet<String>>,
    /// Objects seen and not deleted, with their kind.
    known: BTreeMap<String, &'static str>,
    lost: bool,
}

fn kind_of(o: &Obs) -> &'static str {
    match o {
        Obs::Pod(_) => "Pod",
        Obs::Event(_) => "Event",
        Obs::EndpointSlice(_) => "EndpointSlice",
        Obs::HorizontalPodAutoscaler(_) => "HorizontalPodAutoscaler",
        Obs::Deployment(_) => "Deployment",
        Obs::ReplicaSet(_) => "ReplicaSet",
        Obs::PodMetrics(_) => "PodMetrics",
    }
}

#[derive(Deserialize)]
struct MetricsList {
    #[serde(default)]
    items: Vec<MetricsItem>,
}

#[derive(Deserialize)]
struct MetricsItem {
    metadata: kube::api::ObjectMeta,
    timestamp: Option<String>,
    window: Option<String>,
    #[serde(default)]
    containers: Vec<MetricsContainer>,
}

#[derive(Deserialize)]
struct MetricsContainer {
    #[serde(default)]
    usage: BTreeMap<String, String>,
}

/// Polls metrics.k8s.io for a workload's pods at the middle of every interval (metrics-server
/// has no watch), sending a reading when it is new; stops for good when the API is not there
/// or not allowed.
fn poll_metrics(
    client: kube::Client,
    r: &Resolved,
    target: usize,
    go: &Go,
    stop: CancellationToken,
) -> BoxStream<'static, Item> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Item>();
    let sel: String = form_urlencoded::byte_serialize(r.selector.as_bytes()).collect();
    let url = format!(
        "/apis/metrics.k8s.io/v1beta1/namespaces/{}/pods?labelSelector={sel}",
        r.namespace
    );
    let (t0, interval) = (go.t0, go.interval);
    let (namespace, selector) = (r.namespace.clone(), r.selector.clone());
    tokio::spawn(async move {
        let mut last: Option<BTreeMap<String, PodUsage>> = None;
        // The kubelet fallback, once metrics.k8s.io proved unavailable.
        let mut kubelet: Option<crate::kubelet::Rates> = None;
        let mut failing: Option<String> = None;
        for i in 0u32.. {
            let due = t0 + interval * i + interval / 2;
            tokio::select! {
                _ = tokio::time::sleep_until(due.into()) => {}
                _ = stop.cancelled() => return,
            }
            if let Some(rates) = &mut kubelet {
                let polled = tokio::select! {
                    p = crate::kubelet::poll(&client, &namespace, &selector, rates) => p,
                    _ = stop.cancelled() => return,
                };
                // A failure is told once, until it changes or a poll goes through.
                let mut items = Vec::new();
                match polled {
                    Ok(p) => {
                        let why = (!p.problems.is_empty()).then(|| p.problems.join("; "));
                        if why.is_some() && why != failing {
                            items.push(Err(why.clone().unwrap_or_default()));
                        }
                        failing = why;
                        if !p.pods.is_empty() && last.as_ref() != Some(&p.pods) {
                            last = Some(p.pods.clone());
                            items.push(Ok(Ev::Apply(
                                String::new(),
                                String::new(),
                                Obs::PodMetrics(PodMetricsObs { pods: p.pods }),
                            )));
                        }
                    }
                    Err(why) => {
                        if failing.as_ref() != Some(&why) {
                            items.push(Err(why.clone()));
                        }
                        failing = Some(why);
                    }
                }
                for ev in items {
                    let item = Item {
                        target,
                        resource: KUBELET,
                        ev,
                    };
                    if tx.send(item).is_err() {
                        return;
                    }
                }
                continue;
            }
            let Ok(req) = http::Request::get(&url).body(Vec::new()) else {
                return;
            };
            let ev = match client.request::<MetricsList>(req).await {
                Ok(list) => {
                    let pods: BTreeMap<String, PodUsage> = list
                        .items
                        .into_iter()
                        .map(|m| {
                            let total = |k: &str| {
                                m.containers
                                    .iter()
                                    .filter_map(|c| c.usage.get(k).and_then(|q| quantity(q)))
                                    .sum::<f64>()
                            };
                            let usage = PodUsage {
                                cpu: total("cpu"),
                                memory: total("memory"),
                                timestamp: m.timestamp.clone(),
                                window: m.window.clone(),
                            };
                            (m.metadata.name.unwrap_or_default(), usage)
                        })
                        .collect();
                    if last.as_ref() == Some(&pods) {
                        continue;
                    }
                    last = Some(pods.clone());
                    Ok(Ev::Apply(
                        String::new(),
                        String::new(),
                        Obs::PodMetrics(PodMetricsObs { pods }),
                    ))
                }
                Err(kube::Error::Api(s)) if [403, 404, 503].contains(&s.code) => {
                    let why = format!("unavailable: {}: {}", s.code, s.message);
                    // The kubelet's page only when the user may already read it: get
                    // nodes/proxy also reaches the kubelet's exec, so it is never asked for.
                    let ev = match crate::preflight::node_proxy(&client).await {
                        Ok(()) => {
                            kubelet = Some(crate::kubelet::Rates::default());
                            Ok(Ev::Source(format!(
                                "{KUBELET} (metrics.k8s.io {why}; get nodes/proxy is allowed)"
                            )))
                        }
                        Err(no) => Err(format!(
                            "{why}; no fallback to the kubelet's /metrics/resource: {no}"
                        )),
                    };
                    let fallback = ev.is_ok();
                    let _ = tx.send(Item {
                        target,
                        resource: METRICS,
                        ev,
                    });
                    if fallback {
                        continue;
                    }
                    return;
                }
                Err(e) => Err(e.to_string()),
            };
            if tx
                .send(Item {
                    target,
                    resource: METRICS,
                    ev,
                })
                .is_err()
            {
                return;
            }
        }
    });
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|i| (i, rx)) }).boxed()
}

fn streams(
    client: &kube::Client,
    resolved: &[Resolved],
    go: &Go,
    stop: &CancellationToken,
) -> SelectAll<BoxStream<'static, Item>> {
    let mut all = SelectAll::new();
    for (i, r) in resolved.iter().enumerate() {
        let ns = r.namespace.as_str();
        let c = || client.clone();
        let by_labels = || watcher::Config::default().labels(&r.selector);
        all.push(watch(
            Api::<Pod>::namespaced(c(), ns),
            by_labels(),
            i,
            "pods",
            |p| Obs::Pod(PodObs::of(p)),
        ));
        all.push(watch(
            Api::<Event>::namespaced(c(), ns),
            watcher::Config::default(),
            i,
            "events",
            |e| Obs::Event(EventObs::of(e)),
        ));
        if let Some(d) = &r.deployment {
            all.push(watch(
                Api::<Deployment>::namespaced(c(), ns),
                watcher::Config::default().fields(&format!("metadata.name={d}")),
                i,
                "deployments",
                |d| Obs::Deployment(DeploymentObs::of(d)),
            ));
            all.push(watch(
                Api::<ReplicaSet>::namespaced(c(), ns),
                by_labels(),
                i,
                "replicasets",
                |r| Obs::ReplicaSet(ReplicaSetObs::of(r)),
            ));
        }
        for s in &r.services {
            all.push(watch(
                Api::<EndpointSlice>::namespaced(c(), ns),
                watcher::Config::default().labels(&format!("kubernetes.io/service-name={s}")),
                i,
                "endpointslices",
                |s| Obs::EndpointSlice(SliceObs::of(s)),
            ));
        }
        for h in &r.hpas {
            all.push(watch(
                Api::<HorizontalPodAutoscaler>::namespaced(c(), ns),
                watcher::Config::default().fields(&format!("metadata.name={h}")),
                i,
                "horizontalpodautoscalers",
                |h| Obs::HorizontalPodAutoscaler(HpaObs::of(h)),
            ));
        }
        all.push(poll_metrics(client.clone(), r, i, go, stop.clone()));
    }
    all
}

/// Whether an Event last happened before `started`.
fn before(e: &EventObs, started: SystemTime) -> bool {
    let Some(last) = e
        .last
        .as_deref()
        .and_then(|l| l.parse::<jiff::Timestamp>().ok())
    else {
        return false;
    };
    jiff::Timestamp::try_from(started).is_ok_and(|s| last < s)
}

struct Run {
    rec: Recorder,
    states: Vec<State>,
    tracks: BTreeMap<(usize, &'static str), Track>,
    targets: Vec<String>,
    note: KubeNote,
    t0: Instant,
    started: SystemTime,
}

impl Run {
    fn t(&self) -> f64 {
        (self.t0.elapsed().as_secs_f64() * 1000.0).round() / 1000.0
    }

    fn problem(&mut self, why: String) {
        if !self.note.problems.contains(&why) {
            self.note.problems.push(why);
        }
    }

    fn write(&mut self, line: &impl serde::Serialize) {
        if let Err(e) = self.rec.line(line) {
            self.problem(e.to_string());
        }
    }

    fn handle(&mut self, item: Item) {
        let t = self.t();
        let target = self.targets[item.target].clone();
        let ns_default = ns_of(&target).to_string();
        let track = self.tracks.entry((item.target, item.resource)).or_default();
        if track.note.resource.is_empty() {
            track.note.resource = item.resource.to_string();
            track.note.target = target.clone();
        }
        // Watch lines before the objects (resumed), the objects, the deletions a relist
        // found, and the watch lines after (lost, listed, relisted).
        let mut pre: Vec<(&'static str, Option<usize>, Option<String>)> = Vec::new();
        let mut post: Vec<(&'static str, Option<usize>, Option<String>)> = Vec::new();
        let mut objects: Vec<(&'static str, String, String, Obs)> = Vec::new();
        let mut deletes: Vec<(String, &'static str)> = Vec::new();
        match item.ev {
            Err(why) if item.resource == METRICS && why.starts_with("unavailable") => {
                self.note.metrics = Some(format!("metrics.k8s.io {why}"));
                post.push(("unavailable", None, Some(why)));
            }
            Ok(Ev::Source(source)) => {
                self.note.metrics = Some(source.clone());
                post.push(("fallback", None, Some(source)));
            }
            Err(why) if item.resource == KUBELET => {
                // A poll of the nodes that went wrong: a gap in the CPU and memory.
                track.note.lost += 1;
                track.note.last_error = Some(why.clone());
                track.lost = true;
                let p = format!("{KUBELET} of {target}: {why}");
                // At most 5 of them in run.json (kube.jsonl has every one).
                let told = self.note.problems.iter().filter(|p| p.starts_with(KUBELET));
                if told.count() < 5 && !self.note.problems.contains(&p) {
                    self.note.problems.push(p);
                }
                post.push(("lost", None, Some(why)));
            }
            Err(why) => {
                track.note.lost += 1;
                track.note.last_error = Some(why.clone());
                track.lost = true;
                if why.starts_with("forbidden") {
                    let p = format!("{} of {target}: {why}", item.resource);
                    if !self.note.problems.contains(&p) {
                        self.note.problems.push(p);
                    }
                }
                post.push(("lost", None, Some(why)));
            }
            Ok(Ev::Init) => {
                track.inits += 1;
                track.listing = Some(BTreeSet::new());
            }
            Ok(Ev::InitApply(name, ns, mut obs)) => {
                if let Obs::Event(e) = &mut obs {
                    if !self.states[item.target].wants(e) {
                        return;
                    }
                    e.before = before(e, self.started);
                }
                let op = if track.inits > 1 { "relist" } else { "list" };
                if let Some(l) = &mut track.listing {
                    l.insert(name.clone());
                }
                track.known.insert(name.clone(), kind_of(&obs));
                objects.push((op, name, ns, obs));
            }
            Ok(Ev::InitDone) => {
                let listed = track.listing.take().unwrap_or_default();
                if item.resource != "events" {
                    deletes = track
                        .known
                        .iter()
                        .filter(|(n, _)| !listed.contains(*n))
                        .map(|(n, k)| (n.clone(), *k))
                        .collect();
                    for (n, _) in &deletes {
                        track.known.remove(n);
                    }
                }
                let op = if track.inits > 1 {
                    track.note.relisted += 1;
                    "relisted"
                } else {
                    "listed"
                };
                track.lost = false;
                post.push((op, Some(listed.len()), None));
            }
            Ok(Ev::Apply(name, ns, obs) | Ev::Delete(name, ns, obs)) if matches!(&obs, Obs::Event(e) if !self.states[item.target].wants(e)) =>
            {
                let _ = (name, ns);
                return;
            }
            Ok(Ev::Apply(name, ns, obs)) => {
                if item.resource == METRICS && self.note.metrics.is_none() {
                    self.note.metrics = Some("metrics.k8s.io".into());
                }
                if std::mem::take(&mut track.lost) {
                    pre.push(("resumed", None, None));
                }
                track.known.insert(name.clone(), kind_of(&obs));
                objects.push(("apply", name, ns, obs));
            }
            Ok(Ev::Delete(name, ns, obs)) => {
                if std::mem::take(&mut track.lost) {
                    pre.push(("resumed", None, None));
                }
                track.known.remove(&name);
                objects.push(("delete", name, ns, obs));
            }
        }
        if item.resource != METRICS && item.resource != KUBELET {
            track.note.observed += (objects.len() + deletes.len()) as u64;
        }
        let resource = item.resource;
        fn watch_line<'a>(
            t: f64,
            target: &'a str,
            resource: &'a str,
            (op, objects, why): &'a (&'static str, Option<usize>, Option<String>),
        ) -> WatchLine<'a> {
            WatchLine {
                t,
                kind: "watch",
                target,
                resource,
                op,
                objects: *objects,
                why: why.as_deref(),
            }
        }
        for w in &pre {
            self.write(&watch_line(t, &target, resource, w));
        }
        for (op, name, ns, obs) in &objects {
            let ns = if ns.is_empty() { &ns_default } else { ns };
            self.write(&ObjectLine {
                t,
                target: &target,
                op,
                ns,
                name,
                obs,
            });
            let change = if *op == "delete" {
                Change::Delete(kind_of(obs))
            } else {
                Change::Apply(obs)
            };
            self.states[item.target].apply(t, kind_of(obs), name, change);
        }
        for (name, kind) in deletes {
            self.write(&serde_json::json!({
                "t": t, "target": target, "op": "gone", "ns": ns_default, "name": name,
                "kind": kind,
            }));
            self.states[item.target].apply(t, kind, &name, Change::Delete(kind));
        }
        for w in &post {
            self.write(&watch_line(t, &target, resource, w));
        }
    }

    fn sample(&mut self, elapsed: f64) {
        for i in 0..self.states.len() {
            let rows = self.states[i].sample(elapsed);
            let target = self.targets[i].clone();
            if let Err(e) = self.rec.rows(elapsed, &target, &rows) {
                self.problem(e.to_string());
            }
        }
    }
}

/// The namespace of a Target `kube:NS/...`.
fn ns_of(target: &str) -> &str {
    target
        .strip_prefix("kube:")
        .and_then(|t| t.split('/').next())
        .unwrap_or("")
}

async fn run(
    client: kube::Client,
    resolved: Vec<Resolved>,
    mut note: KubeNote,
    go: Go,
    stop: CancellationToken,
) -> KubeNote {
    let rec = match Recorder::create(&go.dir) {
        Ok(r) => r,
        Err(e) => {
            note.problems.push(e.to_string());
            return note;
        }
    };
    let mut merged = streams(&client, &resolved, &go, &stop);
    let mut run = Run {
        rec,
        states: resolved
            .iter()
            .map(|r| State::new(r.deployment.as_deref(), &r.services, &r.hpas))
            .collect(),
        tracks: BTreeMap::new(),
        targets: resolved.iter().map(|r| r.target.clone()).collect(),
        note,
        t0: go.t0,
        started: go.started,
    };
    let secs = go.interval.as_secs_f64();
    let mut index = 0u32;
    loop {
        let due = go.t0 + go.interval * (index + 1);
        tokio::select! {
            biased;
            _ = stop.cancelled() => break,
            _ = tokio::time::sleep_until(due.into()) => {
                run.sample(secs * f64::from(index + 1));
                index += 1;
            }
            item = next(&mut merged) => match item {
                Some(item) => run.handle(item),
                None => {
                    // No watch left (none can end on its own): wait for the stop.
                    stop.cancelled().await;
                    break;
                }
            },
        }
    }
    // The samples due by now (the scrape at the run's last instant among them).
    let now = Instant::now() + Duration::from_millis(50);
    while go.t0 + go.interval * (index + 1) <= now {
        run.sample(secs * f64::from(index + 1));
        index += 1;
    }
    let mut note = run.note;
    note.watches = run.tracks.into_values().map(|t| t.note).collect();
    note.problems.extend(run.rec.full);
    note
}

async fn next<S: Stream + Unpin>(s: &mut S) -> Option<S::Item> {
    s.next().await
}
