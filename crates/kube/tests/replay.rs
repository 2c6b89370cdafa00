//! The watcher and its record against answers recorded from a real kube-apiserver
//! (fixtures/kube/basic, `scripts/kube-watch-record.sh`; story.json says what happened): the real
//! kube client and kube-runtime watchers read them from an API server on loopback
//! (`volley_kube::replay`), which can cut a watch mid-line or end it with a 410 Gone. What
//! kube.jsonl and kube.csv say must be the story, whatever the fault.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;
use volley_kube::replay::{Fault, Replay};
use volley_kube::{Options, Spec, Watcher};
use volley_rundir::kube::KubeNote;
use volley_rundir::rundir::{ServerPoint, read_kube};

const TOKEN: &str = "volley-test-token-5f0c9a1e";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/kube/basic")
}

struct Record {
    lines: Vec<Value>,
    points: Vec<ServerPoint>,
    note: KubeNote,
    _dir: tempfile::TempDir,
}

impl Record {
    fn of(&self, kind: &str, name: &str) -> Vec<&Value> {
        self.lines
            .iter()
            .filter(|l| l["kind"] == kind && l["name"] == name)
            .collect()
    }

    fn watch_ops(&self, resource: &str) -> Vec<String> {
        self.lines
            .iter()
            .filter(|l| l["kind"] == "watch" && l["resource"] == resource)
            .map(|l| l["op"].as_str().unwrap().to_string())
            .collect()
    }

    fn series(&self, s: &str) -> Vec<f64> {
        self.points
            .iter()
            .filter(|p| p.series == s)
            .map(|p| p.value)
            .collect()
    }
}

fn options(dir: &Path, server: &Replay) -> Options {
    let kc = dir.join("kubeconfig");
    std::fs::write(&kc, server.kubeconfig(TOKEN)).unwrap();
    Options {
        specs: vec![Spec::parse("deployment/chat").unwrap()],
        context: None,
        kubeconfig: Some(kc),
        off: None,
    }
}

/// Watches the replay with `fault` until the story's last steps are in kube.jsonl, and one
/// more sample after them.
fn watch(fault: Fault) -> Record {
    let server = Replay::serve(&fixture(), fault, 10.0);
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let mut w = Watcher::connect(options(dir.path(), &server)).unwrap();
    let interval = Duration::from_millis(100);
    w.start(Instant::now(), SystemTime::now(), interval, run.clone());
    let deadline = Instant::now() + Duration::from_secs(30);
    // The story's last step of every watch: pod 2's restart, the HPA at 3/3, the slice back
    // at 3 of 3 (its third line).
    let done = |text: &str| {
        let has = |a: &str, b: &str| text.lines().any(|l| l.contains(a) && l.contains(b));
        has("\"name\":\"chat-7f8c-2\"", "\"restarts\":1")
            && has("\"kind\":\"HorizontalPodAutoscaler\"", "\"current\":3")
            && text
                .lines()
                .filter(|l| l.contains("\"kind\":\"EndpointSlice\""))
                .count()
                >= 3
    };
    loop {
        let text = std::fs::read_to_string(run.join("kube.jsonl")).unwrap_or_default();
        if done(&text) {
            break;
        }
        assert!(Instant::now() < deadline, "the story did not end:\n{text}");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The next sample holds the last step.
    let samples = || read_kube(&run).unwrap().len();
    let before = samples();
    while samples() == before {
        assert!(Instant::now() < deadline, "no sample after the story");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Its watches are open (the replay holds them): stopping still takes no time.
    let stopping = Instant::now();
    let note = w.stop();
    assert!(
        stopping.elapsed() < Duration::from_secs(1),
        "{:?}",
        stopping.elapsed()
    );
    let text = std::fs::read_to_string(run.join("kube.jsonl")).unwrap();
    // Never the credential, in any file of the record.
    for e in std::fs::read_dir(&run).unwrap() {
        let p = e.unwrap().path();
        let bytes = std::fs::read(&p).unwrap();
        assert!(
            !bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()),
            "{} holds the token",
            p.display()
        );
    }
    assert!(!serde_json::to_string(&note).unwrap().contains(TOKEN));
    Record {
        lines: text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
        points: read_kube(&run).unwrap(),
        note,
        _dir: dir,
    }
}

/// What story.json says happened, whichever way the watch got it.
fn assert_story(r: &Record, pod_ops: &[&str]) {
    let pod1: Vec<(String, bool)> = r
        .of("Pod", "chat-7f8c-1")
        .iter()
        .map(|l| {
            (
                l["op"].as_str().unwrap().to_string(),
                l["obs"]["ready"].as_bool().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, bool)> = pod_ops
        .iter()
        .zip([true, false, true])
        .map(|(o, r)| (o.to_string(), r))
        .collect();
    assert_eq!(pod1, want, "pod chat-7f8c-1: Ready, not Ready, Ready");
    let event: Vec<(i64, &str)> = r
        .of("Event", "chat-7f8c-1.unhealthy")
        .iter()
        .map(|l| {
            (
                l["obs"]["count"].as_i64().unwrap(),
                l["obs"]["reason"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(event, [(1, "Unhealthy"), (3, "Unhealthy")]);
    assert_eq!(
        r.of("Event", "chat-7f8c-1.unhealthy")[0]["obs"]["object"],
        "Pod/chat-7f8c-1"
    );
    let ready_eps: Vec<usize> = r
        .of("EndpointSlice", "chat-abc")
        .iter()
        .map(|l| {
            l["obs"]["endpoints"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["ready"] == true)
                .count()
        })
        .collect();
    assert_eq!(ready_eps, [3, 2, 3], "endpoints ready 3 -> 2 -> 3");
    let hpa: Vec<(i64, i64)> = r
        .of("HorizontalPodAutoscaler", "chat")
        .iter()
        .map(|l| {
            (
                l["obs"]["current"].as_i64().unwrap(),
                l["obs"]["desired"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(hpa, [(1, 1), (1, 3), (3, 3)], "HPA 1 -> desired 3 -> 3");
    assert_eq!(
        r.of("HorizontalPodAutoscaler", "chat")[1]["obs"]["metrics"][0]["current_pct"],
        180
    );
    let pod2 = r.of("Pod", "chat-7f8c-2");
    let last = &pod2.last().unwrap()["obs"];
    assert_eq!(last["restarts"], 1);
    assert_eq!(last["last_term"]["reason"], "OOMKilled");
    assert_eq!(last["last_term"]["exit_code"], 137);
    assert_eq!(r.of("Deployment", "chat")[0]["obs"]["ready"], 3);
    assert_eq!(r.of("ReplicaSet", "chat-7f8c")[0]["obs"]["revision"], "1");
    // Lines come in arrival order.
    let ts: Vec<f64> = r.lines.iter().map(|l| l["t"].as_f64().unwrap()).collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "{ts:?}");

    // kube.csv: the last sample is the story's end.
    let last = |s: &str| *r.series(s).last().unwrap_or_else(|| panic!("no {s}"));
    assert_eq!(last("kube_pods"), 3.0);
    assert_eq!(last("kube_pods_ready"), 3.0);
    assert_eq!(last("kube_endpoints_ready{service=\"chat\"}"), 3.0);
    assert_eq!(last("kube_endpoints{service=\"chat\"}"), 3.0);
    assert_eq!(last("kube_hpa_current_replicas{hpa=\"chat\"}"), 3.0);
    assert_eq!(last("kube_hpa_desired_replicas{hpa=\"chat\"}"), 3.0);
    assert_eq!(last("kube_pod_restarts{pod=\"chat-7f8c-2\"}"), 1.0);
    assert_eq!(last("kube_pod_cpu_limit_cores{pod=\"chat-7f8c-0\"}"), 0.2);
    assert_eq!(last("kube_deployment_replicas{state=\"spec\"}"), 3.0);
    assert!(
        r.points
            .iter()
            .all(|p| p.target == "kube:shop/deployment/chat")
    );
    let unready: f64 = r
        .series("kube_pod_unready_s{pod=\"chat-7f8c-1\"}")
        .iter()
        .sum();
    assert!(
        unready > 0.0,
        "pod chat-7f8c-1's unready seconds are counted"
    );
    assert_eq!(
        r.series("kube_pod_unready_s{pod=\"chat-7f8c-0\"}")
            .iter()
            .sum::<f64>(),
        0.0
    );
    // The note: resolved before the run, metrics.k8s.io absent (a bare API server).
    assert_eq!(
        r.note.targets[0].services,
        ["chat"],
        "not the Service \"other\""
    );
    assert_eq!(r.note.targets[0].hpas, ["chat"]);
    assert_eq!(r.note.targets[0].selector, "app=chat");
    assert_eq!(r.note.auth, "token");
    assert_eq!(r.note.namespace, "shop");
    assert!(
        r.note.server.starts_with("http://127.0.0.1:"),
        "{}",
        r.note.server
    );
    assert!(
        r.note
            .metrics
            .as_deref()
            .is_some_and(|m| m.contains("unavailable: 404")),
        "{:?}",
        r.note.metrics
    );
}

#[test]
fn the_record_is_the_story() {
    let r = watch(Fault::None);
    assert_story(&r, &["list", "apply", "apply"]);
    // Sampled at 100 ms while the story played at 10x: the 2-of-3 endpoints are in a sample.
    let eps = r.series("kube_endpoints_ready{service=\"chat\"}");
    assert!(eps.contains(&2.0), "{eps:?}");
    assert_eq!(r.watch_ops("pods"), ["listed"]);
    // No metrics server, and the kubelet fallback (get nodes/proxy is allowed) finds no node:
    // the recorded API server ran alone. That gap is said, once; the watches lost nothing.
    let kubelet = "kubelet /metrics/resource";
    assert!(
        r.note
            .watches
            .iter()
            .filter(|w| w.resource != kubelet)
            .all(|w| w.lost == 0 && w.relisted == 0),
        "{:?}",
        r.note.watches
    );
    assert_eq!(r.watch_ops(kubelet), ["lost"]);
    assert_eq!(
        r.note.problems,
        [format!(
            "{kubelet} of kube:shop/deployment/chat: node localhost: GET \
             /api/v1/nodes/localhost/proxy/metrics/resource: 404: nodes \"localhost\" not found"
        )]
    );
}

#[test]
fn a_watch_cut_mid_line_then_refused_is_lost_then_resumed_from_its_last_resource_version() {
    // kube resumes a cut watch from its last resourceVersion without an error (a cut looks
    // like a watch's normal end): the record keeps every event once; the re-watch the server
    // refuses is what is `lost`, and the first event after it `resumed`.
    let r = watch(Fault::Cut {
        resource: "pods",
        after: 1,
    });
    assert_story(&r, &["list", "apply", "apply"]);
    assert_eq!(r.watch_ops("pods"), ["listed", "lost", "resumed"]);
    let pods = r
        .note
        .watches
        .iter()
        .find(|w| w.resource == "pods")
        .unwrap();
    assert_eq!((pods.lost, pods.relisted), (1, 0));
    assert!(
        pods.last_error
            .as_deref()
            .is_some_and(|e| e.starts_with("500")),
        "{pods:?}"
    );
}

#[test]
fn a_410_gone_lists_again_and_the_record_goes_on() {
    let r = watch(Fault::Gone {
        resource: "pods",
        after: 1,
    });
    // After the 410 the rest of pod 1's story comes in the new listing.
    assert_story(&r, &["list", "apply", "relist"]);
    let ops = r.watch_ops("pods");
    assert_eq!(ops.first().map(String::as_str), Some("listed"));
    assert!(
        ops.contains(&"lost".to_string()) && ops.last().unwrap() == "relisted",
        "{ops:?}"
    );
    let pods = r
        .note
        .watches
        .iter()
        .find(|w| w.resource == "pods")
        .unwrap();
    assert_eq!(pods.relisted, 1);
    assert!(
        pods.last_error
            .as_deref()
            .is_some_and(|e| e.starts_with("410")),
        "{pods:?}"
    );
}

#[test]
fn a_missing_permission_names_the_verb_the_resource_and_the_namespace() {
    let server = Replay::serve(
        &fixture(),
        Fault::Forbidden {
            resource: "deployments",
        },
        10.0,
    );
    let dir = tempfile::tempdir().unwrap();
    let e = Watcher::connect(options(dir.path(), &server))
        .err()
        .unwrap();
    assert!(e.is_forbidden(), "{e}");
    let msg = e.to_string();
    // Found by the access review before anything is read.
    assert!(
        msg.starts_with(
            "--kube: cannot get deployments in namespace shop: grant the Role in \
             docs/kubernetes.md"
        ),
        "{msg}"
    );
    let asked = server.requests();
    assert!(
        asked.contains(&"review get apps/deployments shop".to_string()),
        "{asked:?}"
    );
    assert!(
        !asked.iter().any(|r| r.starts_with("GET ")),
        "nothing is read after a denied review: {asked:?}"
    );
    let e = Watcher::connect(Options {
        specs: vec![Spec::parse("shop/deployment/nope").unwrap()],
        ..options(dir.path(), &server)
    })
    .err()
    .unwrap();
    assert_eq!(e.kind(), volley_kube::Kind::Forbidden, "{e}");
}

#[test]
fn a_deployment_that_is_not_there_is_said_before_the_run() {
    let server = Replay::serve(&fixture(), Fault::None, 10.0);
    let dir = tempfile::tempdir().unwrap();
    let e = Watcher::connect(Options {
        specs: vec![Spec::parse("deployment/nope").unwrap()],
        ..options(dir.path(), &server)
    })
    .err()
    .unwrap();
    assert_eq!(e.kind(), volley_kube::Kind::NotFound, "{e}");
    assert!(
        e.to_string()
            .contains("deployment nope in namespace shop is not there"),
        "{e}"
    );
}

#[test]
fn the_access_review_names_the_first_permission_missing_and_metrics_is_only_a_note() {
    let server = Replay::serve(&fixture(), Fault::Forbidden { resource: "pods" }, 10.0);
    let dir = tempfile::tempdir().unwrap();
    let e = Watcher::connect(options(dir.path(), &server))
        .err()
        .unwrap();
    assert_eq!(e.kind(), volley_kube::Kind::Forbidden, "{e}");
    assert!(
        e.to_string().starts_with(
            "--kube: cannot list pods in namespace shop: grant the Role in docs/kubernetes.md"
        ),
        "{e}"
    );
    // Every permission the docs' Role grants is reviewed when all are allowed, each once.
    let server = Replay::serve(
        &fixture(),
        Fault::Forbidden {
            resource: "metrics.k8s.io/pods",
        },
        10.0,
    );
    let w = Watcher::connect(options(dir.path(), &server)).unwrap();
    let metrics = w.note().metrics.clone().unwrap_or_default();
    assert!(
        metrics.contains("metrics.k8s.io not allowed") && metrics.contains("no CPU or memory"),
        "{metrics}"
    );
    let reviews: Vec<String> = server
        .requests()
        .into_iter()
        .filter(|r| r.starts_with("review "))
        .collect();
    assert_eq!(reviews.len(), 15, "{reviews:?}");
    for want in [
        "review watch /pods shop",
        "review list discovery.k8s.io/endpointslices shop",
        "review watch autoscaling/horizontalpodautoscalers shop",
        "review list metrics.k8s.io/pods shop",
    ] {
        assert!(reviews.iter().any(|r| r == want), "{want}: {reviews:?}");
    }
    drop(w);
}

#[test]
fn a_watcher_that_is_off_reaches_nothing_and_says_why() {
    let server = Replay::serve(&fixture(), Fault::None, 10.0);
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let why = "--kube is off in segment 1/2: segment 0 watches the cluster for the whole run";
    let mut w = Watcher::connect(Options {
        off: Some(why.into()),
        ..options(dir.path(), &server)
    })
    .unwrap();
    w.start(
        Instant::now(),
        SystemTime::now(),
        Duration::from_millis(50),
        run.clone(),
    );
    std::thread::sleep(Duration::from_millis(120));
    let stopping = Instant::now();
    let note = w.stop();
    assert!(stopping.elapsed() < Duration::from_millis(500));
    assert_eq!(note.problems, [why]);
    assert_eq!(note.targets[0].spec, "deployment/chat");
    assert!(server.requests().is_empty(), "{:?}", server.requests());
    assert_eq!(std::fs::read_dir(&run).unwrap().count(), 0);
}

#[test]
fn a_rollout_is_waited_for_condition_by_condition_and_a_slow_one_times_out() {
    let server = Replay::serve(&fixture(), Fault::Rollout { ms: 1200 }, 10.0);
    let dir = tempfile::tempdir().unwrap();
    let mut said = Vec::new();
    let start = Instant::now();
    volley_kube::rollout::wait(
        &options(dir.path(), &server),
        Duration::from_secs(20),
        &mut |l| said.push(l),
    )
    .unwrap();
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(1200), "{took:?} {said:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    let text = said.join("\n");
    for want in [
        "waiting for deployment shop/chat to roll out",
        "waiting for the controller to see generation 2 (it has seen 1)",
        "waiting for 1 of 3 replicas updated",
        "deployment shop/chat rolled out: generation 2, 3 replicas ready",
    ] {
        assert!(text.contains(want), "{want}:\n{text}");
    }
    // Pods by selector have no rollout: nothing asked.
    let server = Replay::serve(&fixture(), Fault::Rollout { ms: 60_000 }, 10.0);
    volley_kube::rollout::wait(
        &Options {
            specs: vec![Spec::parse("pods/app=chat").unwrap()],
            ..options(dir.path(), &server)
        },
        Duration::from_secs(1),
        &mut |_| {},
    )
    .unwrap();
    assert!(server.requests().is_empty());
    let start = Instant::now();
    let e = volley_kube::rollout::wait(
        &options(dir.path(), &server),
        Duration::from_millis(700),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(3));
    assert_eq!(e.kind(), volley_kube::Kind::Rollout);
    assert!(
        e.to_string()
            .contains("deployment shop/chat did not roll out within 0.7 s: still waiting for ")
            && e.to_string().contains("raise --rollout-timeout"),
        "{e}"
    );
}

/// The kubelet's `/metrics/resource` pages recorded from a real v1.37 node
/// (fixtures/kube/kubelet/SOURCES.md), with its two chat pods renamed to the story's first two
/// (`chat-7f8c-0`, `chat-7f8c-1` in namespace shop); the proxy pod is left as it was, to be
/// left out.
fn kubelet_page(n: u32) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../../fixtures/kube/kubelet/page{n}.prom"));
    std::fs::read_to_string(p)
        .unwrap()
        .replace(
            "namespace=\"default\",pod=\"chat-5746797b8-6qz26\"",
            "namespace=\"shop\",pod=\"chat-7f8c-0\"",
        )
        .replace(
            "namespace=\"default\",pod=\"chat-5746797b8-cwxh8\"",
            "namespace=\"shop\",pod=\"chat-7f8c-1\"",
        )
}

/// The value and timestamp of `series` for `pod` in a page, read by hand.
fn sample(page: &str, series: &str, pod: &str) -> (f64, f64) {
    let line = page
        .lines()
        .find(|l| l.starts_with(series) && l.contains(&format!("pod=\"{pod}\"")))
        .unwrap();
    let mut f = line.rsplit(' ');
    let ts = f.next().unwrap().parse().unwrap();
    (f.next().unwrap().parse().unwrap(), ts)
}

/// Watches `server` (interval 100 ms) until kube.jsonl has a line `until` accepts.
fn watch_until(server: &Replay, until: impl Fn(&Value) -> bool) -> Record {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let mut w = Watcher::connect(options(dir.path(), server)).unwrap();
    w.start(
        Instant::now(),
        SystemTime::now(),
        Duration::from_millis(100),
        run.clone(),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(run.join("kube.jsonl")).unwrap_or_default();
        if text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .any(|l| until(&l))
        {
            break;
        }
        assert!(Instant::now() < deadline, "not seen:\n{text}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let note = w.stop();
    let text = std::fs::read_to_string(run.join("kube.jsonl")).unwrap();
    Record {
        lines: text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
        points: read_kube(&run).unwrap(),
        note,
        _dir: dir,
    }
}

fn is_pod_metrics(l: &Value) -> bool {
    l["kind"] == "PodMetrics"
}

#[test]
fn without_a_metrics_server_cpu_and_memory_come_from_the_kubelets_pages() {
    let server = Replay::serve(&fixture(), Fault::None, 10.0);
    let (p1, p2) = (kubelet_page(1), kubelet_page(2));
    server.kubelet(vec![p1.clone(), p2.clone()]);
    let r = watch_until(&server, is_pod_metrics);
    let metrics: Vec<&Value> = r.lines.iter().filter(|l| is_pod_metrics(l)).collect();
    // The first page gives no rate: one reading, from the two pages.
    assert_eq!(metrics.len(), 1, "{metrics:?}");
    let pods = metrics[0]["obs"]["pods"].as_object().unwrap();
    assert_eq!(
        pods.keys().collect::<Vec<_>>(),
        ["chat-7f8c-0", "chat-7f8c-1"],
        "only the watched pods on the page (not the proxy, nor chat-7f8c-2, not on it)"
    );
    for pod in ["chat-7f8c-0", "chat-7f8c-1"] {
        let cpu = "container_cpu_usage_seconds_total";
        let ((v1, t1), (v2, t2)) = (sample(&p1, cpu, pod), sample(&p2, cpu, pod));
        assert_eq!(
            pods[pod]["cpu"].as_f64().unwrap(),
            (v2 - v1) / ((t2 - t1) / 1000.0),
            "{pod}"
        );
        let memory = sample(&p2, "container_memory_working_set_bytes", pod).0;
        assert_eq!(pods[pod]["memory"].as_f64().unwrap(), memory, "{pod}");
        assert_eq!(
            r.series(&format!("kube_pod_memory_bytes{{pod=\"{pod}\"}}"))
                .last()
                .copied(),
            Some(memory),
            "kube.csv has it"
        );
    }
    // By hand: (10.885522168 - 7.652184143) core-s over 16.209 s.
    let cpu0 = pods["chat-7f8c-0"]["cpu"].as_f64().unwrap();
    assert!((cpu0 - 0.199478).abs() < 1e-6, "{cpu0}");
    assert_eq!(pods["chat-7f8c-0"]["window"], "16.209s");
    assert_eq!(pods["chat-7f8c-0"]["timestamp"], "2026-11-29T03:49:18.981Z");
    let metrics_note = r.note.metrics.clone().unwrap_or_default();
    assert!(
        metrics_note.starts_with("kubelet /metrics/resource (metrics.k8s.io unavailable: 404"),
        "{metrics_note}"
    );
    assert_eq!(r.watch_ops("pods.metrics.k8s.io"), ["fallback"]);
    assert!(r.note.problems.is_empty(), "{:?}", r.note.problems);
    let asked = server.requests();
    assert!(
        asked.iter().any(|a| a == "review get /nodes/proxy "),
        "{asked:?}"
    );
    assert!(
        asked
            .iter()
            .any(|a| a == "GET /api/v1/nodes/localhost/proxy/metrics/resource?"),
        "{asked:?}"
    );
}

#[test]
fn the_kubelet_is_not_read_when_get_nodes_proxy_is_not_allowed() {
    let server = Replay::serve(
        &fixture(),
        Fault::Forbidden {
            resource: "nodes/proxy",
        },
        10.0,
    );
    server.kubelet(vec![kubelet_page(1), kubelet_page(2)]);
    let r = watch_until(&server, |l| l["op"] == "unavailable");
    let metrics_note = r.note.metrics.clone().unwrap_or_default();
    assert!(
        metrics_note.starts_with("metrics.k8s.io unavailable: 404")
            && metrics_note.contains(
                "no fallback to the kubelet's /metrics/resource: get nodes/proxy is not allowed"
            ),
        "{metrics_note}"
    );
    assert!(!r.lines.iter().any(is_pod_metrics));
    assert!(
        !server.requests().iter().any(|a| a.contains("/proxy/")),
        "{:?}",
        server.requests()
    );
}

#[test]
fn a_malformed_kubelet_page_is_a_noted_gap_and_the_next_good_one_counts() {
    let server = Replay::serve(&fixture(), Fault::None, 10.0);
    server.kubelet(vec![
        kubelet_page(1),
        "<html><body>502 Bad Gateway</body></html>".into(),
        kubelet_page(2),
    ]);
    let r = watch_until(&server, is_pod_metrics);
    let problem = r
        .note
        .problems
        .iter()
        .find(|p| p.starts_with("kubelet /metrics/resource of kube:shop/deployment/chat: node localhost: not a Prometheus text page"));
    assert!(problem.is_some(), "{:?}", r.note.problems);
    assert_eq!(
        r.watch_ops("kubelet /metrics/resource"),
        ["lost", "resumed"]
    );
    // The bad page did not break the counters: the rate is page 1 to page 2's.
    let m = r.lines.iter().find(|l| is_pod_metrics(l)).unwrap();
    let cpu0 = m["obs"]["pods"]["chat-7f8c-0"]["cpu"].as_f64().unwrap();
    assert!((cpu0 - 0.199478).abs() < 1e-6, "{cpu0}");
}
