use super::*;

fn spec() -> JobSpec {
    JobSpec {
        run_id: "flow-20261123-050000".into(),
        segments: 4,
        image: "ghcr.io/example/volley:0.1.0".into(),
        image_pull_policy: Some("IfNotPresent".into()),
        namespace: Some("load".into()),
        scenario: Some("flow.yaml".into()),
        files: vec![
            PlanFile {
                key: "flow.yaml".into(),
                path: "flow.yaml".into(),
                contents: b"name: flow\n".to_vec(),
            },
            PlanFile {
                key: "data.users.csv".into(),
                path: "data/users.csv".into(),
                contents: b"email\na@b\n".to_vec(),
            },
            PlanFile {
                key: "blob.bin".into(),
                path: "blob.bin".into(),
                contents: vec![0xff, 0x00, 0x10],
            },
        ],
        run_args: vec![
            "--vus".into(),
            "40".into(),
            "--header".into(),
            "X-Tag: $(HOME)".into(),
        ],
        start_at: "2026-11-23T05:02:00Z".parse().unwrap(),
        planned: Some(Duration::from_secs(300)),
        results: "s3://load-results/volley".parse().unwrap(),
        credentials: Credentials::Secret("volley-s3".into()),
        env: vec![("AWS_REGION".into(), "eu-west-1".into())],
        env_secret: None,
        resources: Resources {
            cpu: "2".into(),
            memory: "1Gi".into(),
        },
        spread: Spread::Hard,
        ttl_after_finished: Some(Duration::from_secs(86400)),
        host_network: false,
        watched: Vec::new(),
    }
}

fn now() -> Timestamp {
    "2026-11-23T05:00:00Z".parse().unwrap()
}

#[test]
fn indexed_job_runs_one_segment_per_pod() {
    let m = manifests(&spec(), now()).unwrap();
    let job = &m.job["spec"];
    assert_eq!(job["completionMode"], "Indexed");
    assert_eq!(job["completions"], 4);
    assert_eq!(job["parallelism"], 4);
    assert_eq!(job["backoffLimitPerIndex"], 0);
    assert_eq!(job["podReplacementPolicy"], "Failed");
    // 120 s until the start, 300 s of plan, 600 s of margin.
    assert_eq!(job["activeDeadlineSeconds"], 1020);
    let pod = &job["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let c = &pod["containers"][0];
    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(
        args,
        [
            "run",
            "/plan/flow.yaml",
            "--vus",
            "40",
            "--header",
            "X-Tag: $$(HOME)",
            "--segment",
            "$(JOB_COMPLETION_INDEX)/4",
            "--start-at",
            "2026-11-23T05:02:00Z",
            "--run-id",
            "flow-20261123-050000",
            "--output",
            "/runs",
            "--progress",
            "plain",
            "--upload",
            "s3://load-results/volley/flow-20261123-050000/segment-$(JOB_COMPLETION_INDEX)",
        ]
    );
    assert_eq!(c["env"][0]["name"], "JOB_COMPLETION_INDEX");
    assert_eq!(c["resources"]["requests"], c["resources"]["limits"]);
    assert_eq!(c["resources"]["limits"]["cpu"], "2");
    let spread = &pod["topologySpreadConstraints"][0];
    assert_eq!(spread["topologyKey"], "kubernetes.io/hostname");
    assert_eq!(spread["whenUnsatisfiable"], "DoNotSchedule");
    assert_eq!(
        spread["labelSelector"]["matchLabels"]["volley.dev/run-id"],
        "flow-20261123-050000"
    );
    assert_eq!(
        job["template"]["metadata"]["labels"]["volley.dev/run-id"],
        "flow-20261123-050000"
    );
    let secret_keys: Vec<&str> = c["env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["valueFrom"]["secretKeyRef"]["key"].as_str())
        .collect();
    assert_eq!(
        secret_keys,
        [
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN"
        ]
    );
}

#[test]
fn the_start_is_rounded_up_to_the_second_it_is_written_in() {
    let now: Timestamp = "2026-11-23T05:00:00.300Z".parse().unwrap();
    let at = start_at(now, Duration::from_secs(10)).unwrap();
    assert_eq!(at.to_string(), "2026-11-23T05:00:11Z");
    assert!(at.duration_since(now) >= jiff::SignedDuration::from_secs(10));
    let whole: Timestamp = "2026-11-23T05:00:00Z".parse().unwrap();
    assert_eq!(
        start_at(whole, Duration::from_secs(10))
            .unwrap()
            .to_string(),
        "2026-11-23T05:00:10Z"
    );
    assert!(start_at(now, Duration::from_secs(u64::MAX)).is_err());
}

#[test]
fn host_network_only_when_asked() {
    let pod = |s: &JobSpec| manifests(s, now()).unwrap().job["spec"]["template"]["spec"].clone();
    let plain = pod(&spec());
    assert!(plain.get("hostNetwork").is_none() && plain.get("dnsPolicy").is_none());
    let mut s = spec();
    s.host_network = true;
    let host = pod(&s);
    assert_eq!(host["hostNetwork"], true);
    assert_eq!(host["dnsPolicy"], "ClusterFirstWithHostNet");
}

#[test]
fn config_map_carries_the_files_at_their_paths() {
    let m = manifests(&spec(), now()).unwrap();
    assert_eq!(
        m.config_map["metadata"]["name"],
        "volley-flow-20261123-050000-plan"
    );
    assert_eq!(m.config_map["data"]["data.users.csv"], "email\na@b\n");
    assert_eq!(m.config_map["binaryData"]["blob.bin"], "/wAQ");
    let vol = &m.job["spec"]["template"]["spec"]["volumes"][0]["configMap"];
    assert_eq!(vol["name"], "volley-flow-20261123-050000-plan");
    assert_eq!(
        vol["items"][1],
        json!({ "key": "data.users.csv", "path": "data/users.csv" })
    );
}

#[test]
fn yaml_round_trips_to_the_same_objects() {
    let m = manifests(&spec(), now()).unwrap();
    let yaml = m.to_yaml();
    let docs: Vec<Value> = serde_saphyr::from_multiple(&yaml).unwrap();
    assert_eq!(docs, [m.config_map.clone(), m.job.clone()]);
    assert!(m.rbac.is_empty());
    // Numbers stay numbers, and strings that look like numbers stay strings.
    assert!(yaml.contains("completions: 4"), "{yaml}");
    assert!(!yaml.contains("cpu: 2\n"), "{yaml}");
}

#[test]
fn service_account_instead_of_keys() {
    let mut s = spec();
    s.credentials = Credentials::ServiceAccount("volley-results".into());
    s.spread = Spread::Soft;
    s.planned = None;
    let m = manifests(&s, now()).unwrap();
    let pod = &m.job["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "volley-results");
    assert!(
        pod["containers"][0]["env"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["valueFrom"]["secretKeyRef"].is_null())
    );
    assert_eq!(
        pod["topologySpreadConstraints"][0]["whenUnsatisfiable"],
        "ScheduleAnyway"
    );
    assert!(m.job["spec"]["activeDeadlineSeconds"].is_null());
}

#[test]
fn refuses_values_kubernetes_would_reject() {
    type Change = Box<dyn Fn(&mut JobSpec)>;
    let cases: Vec<(Change, &str)> = vec![
        (Box::new(|s| s.segments = 0), "--segments 0"),
        (Box::new(|s| s.resources.cpu = "two".into()), "--cpu `two`"),
        (
            Box::new(|s| s.resources.memory = "1GB".into()),
            "--memory `1GB`",
        ),
        (
            Box::new(|s| s.namespace = Some("Load".into())),
            "--namespace `Load`",
        ),
        (
            Box::new(|s| s.image_pull_policy = Some("always".into())),
            "Always, IfNotPresent or Never",
        ),
        (Box::new(|s| s.image = "".into()), "--image"),
        (
            Box::new(|s| s.run_id = "Bad_Id".into()),
            "--run-id `Bad_Id`",
        ),
        (Box::new(|s| s.env.push(("1X".into(), "v".into()))), "`1X`"),
    ];
    for (change, says) in cases {
        let mut s = spec();
        change(&mut s);
        let e = manifests(&s, now()).unwrap_err().to_string();
        assert!(e.contains(says), "expected {says:?} in {e}");
    }
}

/// Every `$` the user typed is doubled, in args and env values, so the kubelet's expansion
/// (`$$` → `$`) gives back what was typed; only the pod's index is left to expand.
/// crates/cli/tests/it/k8s.rs runs Kubernetes' own expansion over a whole manifest.
#[test]
fn every_dollar_typed_is_doubled_and_only_the_index_is_expanded() {
    let mut s = spec();
    s.run_args = ["pa$$word", "a=$$b", "$(HOME)", "$", "x$y"]
        .map(String::from)
        .to_vec();
    s.env = vec![("AWS_ENDPOINT_URL".into(), "http://s3$$:9000".into())];
    let m = manifests(&s, now()).unwrap();
    let c = &m.job["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(
        args[2..7],
        ["pa$$$$word", "a=$$$$b", "$$(HOME)", "$$", "x$$y"]
    );
    assert_eq!(args[8], "$(JOB_COMPLETION_INDEX)/4");
    assert!(
        args.last()
            .unwrap()
            .ends_with("/segment-$(JOB_COMPLETION_INDEX)")
    );
    assert_eq!(c["env"][1]["value"], "http://s3$$$$:9000");
}

#[test]
fn kube_in_the_pods_flags_adds_a_role_per_namespace_and_binds_the_pods_account() {
    let mut s = spec();
    s.watched = vec![None, Some("shop".into()), Some("load".into())];
    let m = manifests(&s, now()).unwrap();
    let kinds: Vec<(&str, &str)> = m
        .rbac
        .iter()
        .map(|o| {
            (
                o["kind"].as_str().unwrap(),
                o["metadata"]["namespace"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("ServiceAccount", "load"),
            ("Role", "load"),
            ("RoleBinding", "load"),
            ("Role", "shop"),
            ("RoleBinding", "shop"),
        ]
    );
    let account = "volley-flow-20261123-050000";
    let pod = &m.job["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], account);
    assert!(
        pod["automountServiceAccountToken"].is_null(),
        "the watcher needs the token"
    );
    let binding = &m.rbac[4];
    assert_eq!(
        binding["roleRef"]["name"],
        "volley-flow-20261123-050000-watch"
    );
    assert_eq!(
        binding["subjects"][0],
        serde_json::json!({"kind": "ServiceAccount", "name": account, "namespace": "load"})
    );
    assert_eq!(m.rbac[1]["rules"], crate::rbac::rules());
    // The objects come first in the YAML stream, ServiceAccount before the Job that uses it.
    let docs: Vec<Value> = serde_saphyr::from_multiple(&m.to_yaml()).unwrap();
    assert_eq!(docs.len(), 7);
    assert_eq!(docs[0]["kind"], "ServiceAccount");
    assert_eq!(docs[6]["kind"], "Job");
    // A given service account is bound, not made.
    s.credentials = Credentials::ServiceAccount("volley-results".into());
    let m = manifests(&s, now()).unwrap();
    assert_eq!(m.rbac.len(), 4);
    assert_eq!(m.rbac[1]["subjects"][0]["name"], "volley-results");
    // Without a namespace the binding could not name the account's.
    s.namespace = None;
    let e = manifests(&s, now()).unwrap_err().to_string();
    assert!(
        e.contains("--kube in the pods' flags needs --namespace"),
        "{e}"
    );
}
