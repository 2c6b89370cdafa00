//! The watcher against the real kube-apiserver (scripts/kube-apiserver/start.sh; no nodes,
//! no controllers: every object and status is this test's). Off unless `VOLLEY_KUBE_LIVE=1`
//! (the acceptance script sets it), with `KUBECONFIG` pointing at the server's kubeconfig.
//! The test writes a story through the API — a Deployment, its ReplicaSet, three Pods that
//! become Ready, one that goes unready and back with an Unhealthy Event counted 1 → 3, the
//! Service's EndpointSlice 3 → 2 → 3 ready, an HPA 1 → 3, an OOMKilled restart — and the
//! record must say exactly that.

use std::time::{Duration, Instant, SystemTime};

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{Event, Namespace, Pod, Service, ServiceAccount};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use volley_kube::{Options, Spec, Watcher};

fn live() -> bool {
    std::env::var("VOLLEY_KUBE_LIVE").is_ok_and(|v| v == "1")
}

async fn create<K>(api: &Api<K>, v: Value) -> K
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let o: K = serde_json::from_value(v).unwrap();
    api.create(&PostParams::default(), &o).await.unwrap()
}

async fn status<K>(api: &Api<K>, name: &str, status: Value)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": status })),
    )
    .await
    .unwrap();
}

fn pod_status(ready: bool, restarts: i32, oom: bool) -> Value {
    let mut c = json!({"name": "app", "image": "volley", "imageID": "", "ready": ready,
                       "restartCount": restarts, "state": {"running": {}}});
    if oom {
        c["lastState"] = json!({"terminated": {"exitCode": 137, "reason": "OOMKilled",
                                               "finishedAt": "2026-01-01T00:00:00Z"}});
    }
    json!({"phase": "Running", "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}],
           "containerStatuses": [c]})
}

fn slice(ready: [bool; 3]) -> Value {
    json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
           "metadata": {"name": "chat-abc", "labels": {"kubernetes.io/service-name": "chat"}},
           "addressType": "IPv4",
           "endpoints": (0..3).map(|i| json!({"addresses": [format!("10.244.0.{}", i + 10)],
               "conditions": {"ready": ready[i]},
               "targetRef": {"kind": "Pod", "name": format!("chat-7f8c-{i}")}})).collect::<Vec<_>>()})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_record_says_what_was_written_through_the_api() {
    if !live() {
        eprintln!("skipped: VOLLEY_KUBE_LIVE=1 (and KUBECONFIG) switch on the live tests");
        return;
    }
    let client = kube::Client::try_default().await.unwrap();
    let ns = format!("volley-live-{}", std::process::id());
    let nsapi: Api<Namespace> = Api::all(client.clone());
    create(&nsapi, json!({"metadata": {"name": ns}})).await;
    // No controller-manager: the default ServiceAccount pods need is made here.
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), &ns);
    create(&sas, json!({"metadata": {"name": "default"}})).await;
    let deps: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let rss: Api<ReplicaSet> = Api::namespaced(client.clone(), &ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let svcs: Api<Service> = Api::namespaced(client.clone(), &ns);
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), &ns);
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), &ns);
    let events: Api<Event> = Api::namespaced(client.clone(), &ns);
    let labels = json!({"app": "chat"});
    let container = json!([{"name": "app", "image": "volley",
        "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "200m", "memory": "64Mi"}}}]);
    create(
        &deps,
        json!({"metadata": {"name": "chat"}, "spec": {"replicas": 3,
        "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": {"containers": container}}}}),
    )
    .await;
    create(
        &rss,
        json!({"metadata": {"name": "chat-7f8c", "labels": labels,
        "annotations": {"deployment.kubernetes.io/revision": "1"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": {"containers": container}}}}),
    )
    .await;
    create(
        &svcs,
        json!({"metadata": {"name": "chat"}, "spec": {"selector": labels,
        "ports": [{"port": 80, "targetPort": 8080}]}}),
    )
    .await;
    create(
        &svcs,
        json!({"metadata": {"name": "other"}, "spec": {"selector": {"app": "other"},
        "ports": [{"port": 80}]}}),
    )
    .await;
    create(
        &hpas,
        json!({"metadata": {"name": "chat"}, "spec": {"minReplicas": 1, "maxReplicas": 5,
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "chat"},
        "metrics": [{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 70}}}]}}),
    )
    .await;
    let mut uids = Vec::new();
    for i in 0..3 {
        let p: Pod = create(
            &pods,
            json!({"metadata": {"name": format!("chat-7f8c-{i}"), "labels": labels},
            "spec": {"nodeName": "localhost", "containers": container}}),
        )
        .await;
        uids.push(p.metadata.uid.unwrap());
        status(&pods, &format!("chat-7f8c-{i}"), pod_status(true, 0, false)).await;
    }
    create(&slices, slice([true; 3])).await;
    status(
        &hpas,
        "chat",
        json!({"currentReplicas": 1, "desiredReplicas": 1}),
    )
    .await;

    let dir = tempfile::tempdir().unwrap();
    let mut w = Watcher::connect(Options {
        specs: vec![Spec::parse(&format!("{ns}/deployment/chat")).unwrap()],
        ..Options::default()
    })
    .unwrap();
    let note = w.note().clone();
    assert_eq!(note.targets[0].services, ["chat"]);
    assert_eq!(note.targets[0].hpas, ["chat"]);
    assert_eq!(note.targets[0].selector, "app=chat");
    let interval = Duration::from_millis(500);
    w.start(
        Instant::now(),
        SystemTime::now(),
        interval,
        dir.path().to_path_buf(),
    );
    let step = || tokio::time::sleep(Duration::from_millis(600));
    step().await;
    // Pod 1 fails its readiness probe: unready, an Unhealthy Event counted 1 then 3, and
    // the Service's slice down to 2 ready.
    status(&pods, "chat-7f8c-1", pod_status(false, 0, false)).await;
    let ev = json!({"metadata": {"name": "chat-7f8c-1.unhealthy"},
        "involvedObject": {"kind": "Pod", "name": "chat-7f8c-1", "namespace": ns, "uid": uids[1]},
        "type": "Warning", "reason": "Unhealthy", "message": "Readiness probe failed: timeout",
        "count": 1, "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z"});
    create(&events, ev).await;
    slices
        .patch(
            "chat-abc",
            &PatchParams::default(),
            &Patch::Merge(slice([true, false, true])),
        )
        .await
        .unwrap();
    events
        .patch(
            "chat-7f8c-1.unhealthy",
            &PatchParams::default(),
            &Patch::Merge(json!({"count": 3})),
        )
        .await
        .unwrap();
    step().await;
    status(&pods, "chat-7f8c-1", pod_status(true, 0, false)).await;
    slices
        .patch(
            "chat-abc",
            &PatchParams::default(),
            &Patch::Merge(slice([true; 3])),
        )
        .await
        .unwrap();
    // The HPA scales 1 -> 3; pod 2 is OOMKilled and restarts.
    status(
        &hpas,
        "chat",
        json!({"currentReplicas": 1, "desiredReplicas": 3,
        "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu",
            "current": {"averageUtilization": 180}}}]}),
    )
    .await;
    status(&pods, "chat-7f8c-2", pod_status(true, 1, true)).await;
    status(
        &hpas,
        "chat",
        json!({"currentReplicas": 3, "desiredReplicas": 3}),
    )
    .await;
    step().await;
    let note = w.stop();
    let _ = nsapi.delete(&ns, &Default::default()).await;

    let jsonl = std::fs::read_to_string(dir.path().join("kube.jsonl")).unwrap();
    let lines: Vec<Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |kind: &str, name: &str| -> Vec<&Value> {
        lines
            .iter()
            .filter(|l| l["kind"] == kind && l["name"] == name)
            .collect()
    };
    let ready: Vec<bool> = of("Pod", "chat-7f8c-1")
        .iter()
        .map(|l| l["obs"]["ready"].as_bool().unwrap())
        .collect();
    assert_eq!(ready, [true, false, true], "{jsonl}");
    let counts: Vec<i64> = of("Event", "chat-7f8c-1.unhealthy")
        .iter()
        .map(|l| l["obs"]["count"].as_i64().unwrap())
        .collect();
    assert_eq!(counts, [1, 3], "{jsonl}");
    let ready_eps: Vec<usize> = of("EndpointSlice", "chat-abc")
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
    assert_eq!(ready_eps, [3, 2, 3], "{jsonl}");
    let hpa: Vec<(i64, i64)> = of("HorizontalPodAutoscaler", "chat")
        .iter()
        .map(|l| {
            (
                l["obs"]["current"].as_i64().unwrap(),
                l["obs"]["desired"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(hpa, [(1, 1), (1, 3), (3, 3)], "{jsonl}");
    let last = of("Pod", "chat-7f8c-2").last().unwrap()["obs"].clone();
    assert_eq!(last["restarts"], 1);
    assert_eq!(last["last_term"]["reason"], "OOMKilled");
    // No watch lost anything. No metrics-server either, and the admin may get nodes/proxy:
    // the kubelet fallback finds no node (this API server runs alone) and says so, as the
    // replay's story does.
    let kubelet = "kubelet /metrics/resource";
    assert!(
        note.watches
            .iter()
            .filter(|w| w.resource != kubelet)
            .all(|w| w.lost == 0),
        "{note:?}"
    );
    assert!(
        note.metrics.as_deref().is_some_and(
            |m| m.starts_with("kubelet /metrics/resource (metrics.k8s.io unavailable: 404")
        ),
        "{note:?}"
    );
    assert!(
        note.watches.iter().any(|w| w.resource == kubelet
            && w.last_error
                .as_deref()
                .is_some_and(|e| e.ends_with("404: nodes \"localhost\" not found"))),
        "{note:?}"
    );

    let points = volley_rundir::rundir::read_kube(dir.path()).unwrap();
    let max = |s: &str| {
        points
            .iter()
            .filter(|p| p.series == s)
            .map(|p| p.value)
            .fold(f64::MIN, f64::max)
    };
    let min = |s: &str| {
        points
            .iter()
            .filter(|p| p.series == s)
            .map(|p| p.value)
            .fold(f64::MAX, f64::min)
    };
    assert_eq!(max("kube_pods_ready"), 3.0);
    assert_eq!(min("kube_pods_ready"), 2.0);
    assert_eq!(min("kube_endpoints_ready{service=\"chat\"}"), 2.0);
    assert_eq!(max("kube_hpa_desired_replicas{hpa=\"chat\"}"), 3.0);
    let unready: f64 = points
        .iter()
        .filter(|p| p.series == "kube_pod_unready_s{pod=\"chat-7f8c-1\"}")
        .map(|p| p.value)
        .sum();
    assert!(unready > 0.4 && unready < 1.5, "{unready}");
    assert!(
        points
            .iter()
            .all(|p| p.target == format!("kube:{ns}/deployment/chat"))
    );
}

/// The access review before the run, against the real authorizer (RBAC): a user with no
/// grant is stopped at the first permission the watcher needs, named; with the Role of
/// docs/kubernetes.md (the rules `volley k8s manifest` writes) bound to it, every review
/// passes and what stops the watcher is only that the Deployment is not there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_access_review_is_the_authorizers_and_the_docs_role_is_enough() {
    if !live() {
        eprintln!("skipped: VOLLEY_KUBE_LIVE=1 (and KUBECONFIG) switch on the live tests");
        return;
    }
    let client = kube::Client::try_default().await.unwrap();
    let ns = format!("volley-rbac-{}", std::process::id());
    let nss: Api<Namespace> = Api::all(client.clone());
    create(&nss, json!({"metadata": {"name": ns}})).await;
    // The admin's kubeconfig, impersonating a user nothing is granted to.
    let path = std::env::var("KUBECONFIG").expect("KUBECONFIG");
    let mut kc = kube::config::Kubeconfig::read_from(&path).unwrap();
    for a in &mut kc.auth_infos {
        if let Some(ai) = &mut a.auth_info {
            ai.impersonate = Some("volley-watcher".into());
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let kcp = dir.path().join("kubeconfig");
    std::fs::write(&kcp, serde_json::to_string(&kc).unwrap()).unwrap();
    let opts = Options {
        specs: vec![Spec::parse(&format!("{ns}/deployment/chat")).unwrap()],
        kubeconfig: Some(kcp),
        ..Options::default()
    };
    let o = opts.clone();
    let e = tokio::task::spawn_blocking(move || Watcher::connect(o).err().unwrap())
        .await
        .unwrap();
    assert!(e.is_forbidden(), "{e}");
    assert!(
        e.to_string().starts_with(&format!(
            "--kube: cannot list pods in namespace {ns}: grant the Role in docs/kubernetes.md"
        )),
        "{e}"
    );
    let roles: Api<k8s_openapi::api::rbac::v1::Role> = Api::namespaced(client.clone(), &ns);
    create(
        &roles,
        json!({"metadata": {"name": "volley-watch"}, "rules": [
            {"apiGroups": [""], "resources": ["pods", "events"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["services"], "verbs": ["get", "list"]},
            {"apiGroups": ["apps"], "resources": ["deployments", "replicasets"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list", "watch"]},
            {"apiGroups": ["metrics.k8s.io"], "resources": ["pods"], "verbs": ["get", "list"]}
        ]}),
    )
    .await;
    let bindings: Api<k8s_openapi::api::rbac::v1::RoleBinding> =
        Api::namespaced(client.clone(), &ns);
    create(
        &bindings,
        json!({"metadata": {"name": "volley-watch"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "volley-watch"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "volley-watcher"}]}),
    )
    .await;
    let e = tokio::task::spawn_blocking(move || Watcher::connect(opts).err().unwrap())
        .await
        .unwrap();
    assert_eq!(e.kind(), volley_kube::Kind::NotFound, "{e}");
    assert!(
        e.to_string()
            .contains(&format!("deployment chat in namespace {ns} is not there")),
        "{e}"
    );
    nss.delete(&ns, &Default::default()).await.unwrap();
}

/// `volley sweep --setup`'s wait for a rollout, against the real API server: no controller
/// runs here, so the test moves the Deployment's status as the controller would (a new
/// generation not yet observed, one replica updated beside the old ones, then all), and the
/// wait must end only then, having said each step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rollout_wait_follows_the_deployments_status() {
    if !live() {
        eprintln!("skipped: VOLLEY_KUBE_LIVE=1 (and KUBECONFIG) switch on the live tests");
        return;
    }
    let client = kube::Client::try_default().await.unwrap();
    let ns = format!("volley-rollout-{}", std::process::id());
    let nss: Api<Namespace> = Api::all(client.clone());
    create(&nss, json!({"metadata": {"name": ns}})).await;
    let deps: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let labels = json!({"app": "chat"});
    create(
        &deps,
        json!({"metadata": {"name": "chat"}, "spec": {"replicas": 2,
        "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels},
                     "spec": {"containers": [{"name": "app", "image": "volley"}]}}}}),
    )
    .await;
    let st = |obs: i64, total: i32, upd: i32, ready: i32| {
        json!({"observedGeneration": obs, "replicas": total, "updatedReplicas": upd,
               "readyReplicas": ready, "availableReplicas": ready})
    };
    status(&deps, "chat", st(1, 2, 2, 2)).await;
    // The --setup: 2 -> 3 replicas, generation 2.
    deps.patch(
        "chat",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 3}})),
    )
    .await
    .unwrap();
    let opts = Options {
        specs: vec![Spec::parse(&format!("{ns}/deployment/chat")).unwrap()],
        ..Options::default()
    };
    let waiting = tokio::task::spawn_blocking(move || {
        let mut said = Vec::new();
        let r = volley_kube::rollout::wait(&opts, Duration::from_secs(20), &mut |l| said.push(l));
        (r, said)
    });
    let start = Instant::now();
    tokio::time::sleep(Duration::from_millis(700)).await;
    status(&deps, "chat", st(2, 3, 1, 2)).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    status(&deps, "chat", st(2, 3, 3, 3)).await;
    let (r, said) = waiting.await.unwrap();
    r.unwrap();
    assert!(start.elapsed() >= Duration::from_millis(1400));
    let text = said.join("\n");
    for want in [
        "waiting for the controller to see generation 2 (it has seen 1)",
        "waiting for 1 of 3 replicas updated",
        "rolled out: generation 2, 3 replicas ready",
    ] {
        assert!(text.contains(want), "{want}:\n{text}");
    }
    nss.delete(&ns, &Default::default()).await.unwrap();
}

/// The kubelet fallback's review (`get nodes/proxy`, cluster-wide), against the real
/// authorizer: a user with the namespaced Role only is denied, so a run without metrics-server
/// stays without CPU and memory rather than reading the kubelet; the ClusterRole of
/// docs/kubernetes.md, bound to it, allows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_nodes_proxy_is_allowed_only_by_the_docs_cluster_role() {
    if !live() {
        eprintln!("skipped: VOLLEY_KUBE_LIVE=1 (and KUBECONFIG) switch on the live tests");
        return;
    }
    let client = kube::Client::try_default().await.unwrap();
    let user = format!("volley-kubelet-{}", std::process::id());
    let path = std::env::var("KUBECONFIG").expect("KUBECONFIG");
    let mut kc = kube::config::Kubeconfig::read_from(&path).unwrap();
    for a in &mut kc.auth_infos {
        if let Some(ai) = &mut a.auth_info {
            ai.impersonate = Some(user.clone());
        }
    }
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    let as_user = kube::Client::try_from(config).unwrap();
    let denied = volley_kube::preflight::node_proxy(&as_user)
        .await
        .unwrap_err();
    assert!(
        denied.starts_with("get nodes/proxy is not allowed"),
        "{denied}"
    );
    let roles: Api<k8s_openapi::api::rbac::v1::ClusterRole> = Api::all(client.clone());
    create(
        &roles,
        json!({"metadata": {"name": user},
               "rules": [{"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["get"]}]}),
    )
    .await;
    let bindings: Api<k8s_openapi::api::rbac::v1::ClusterRoleBinding> = Api::all(client.clone());
    create(
        &bindings,
        json!({"metadata": {"name": user},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}),
    )
    .await;
    // The authorizer sees the binding once its informer has it: asked until then, bounded.
    let deadline = Instant::now() + Duration::from_secs(10);
    let allowed = loop {
        let r = volley_kube::preflight::node_proxy(&as_user).await;
        if r.is_ok() || Instant::now() > deadline {
            break r;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    bindings.delete(&user, &Default::default()).await.unwrap();
    roles.delete(&user, &Default::default()).await.unwrap();
    assert_eq!(allowed, Ok(()));
}
