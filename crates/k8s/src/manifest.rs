//! The ConfigMap and the Indexed Job, as JSON values and as YAML for `kubectl apply`.
//!
//! Each pod runs `volley run [/plan/SCENARIO] FLAGS --segment $(JOB_COMPLETION_INDEX)/N
//! --start-at T --output /runs --upload s3://BUCKET/PREFIX/RUN_ID/segment-$(JOB_COMPLETION_INDEX)`.
//! Kubernetes expands `$(JOB_COMPLETION_INDEX)` from the container's environment, where the
//! Job controller puts the pod's index (declared here too, from the pod's annotation, so the
//! expansion never depends on the controller's order). Everything else is written with each
//! `$` doubled ([`escaped`]), so that it reaches volley as it was typed: the kubelet turns `$$`
//! into `$` and `$(NAME)` into NAME's value, in args and in env values alike.

use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use jiff::Timestamp;
use serde_json::{Value, json};
use volley_store::Location;

use crate::{Error, PLAN_DIR, PlanFile, RUNS_DIR, Repr, validate_run_id};

/// How pods are spread over nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spread {
    /// At most one pod more on any node than on another; pods wait rather than pile up
    /// (`whenUnsatisfiable: DoNotSchedule`).
    Hard,
    /// Spread when the scheduler can, pile up when it cannot (`ScheduleAnyway`).
    Soft,
}

/// What each pod gets: requests equal limits (the Guaranteed QoS class), so a generator is
/// never throttled below what it was promised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resources {
    /// CPU, a Kubernetes quantity (`2`, `1500m`).
    pub cpu: String,
    /// Memory, a Kubernetes quantity (`1Gi`, `512Mi`).
    pub memory: String,
}

/// Where the pods' S3 credentials come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credentials {
    /// A Secret with keys `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and, optionally,
    /// `AWS_SESSION_TOKEN`.
    Secret(String),
    /// A service account whose identity the cluster maps to a role (EKS IRSA, Pod Identity,
    /// GKE/Azure workload identity); no keys in the cluster.
    ServiceAccount(String),
}

/// Everything the manifests are made from.
#[derive(Debug, Clone)]
pub struct JobSpec {
    /// Names the Job (`volley-<id>`), the ConfigMap (`volley-<id>-plan`), the pods' label
    /// and the results' prefix.
    pub run_id: String,
    /// Pods, each running segment `i/N`.
    pub segments: u32,
    /// The volley image.
    pub image: String,
    /// `Always`, `IfNotPresent` or `Never`; `None` leaves Kubernetes' default.
    pub image_pull_policy: Option<String>,
    /// The namespace, or `None` for kubectl's current one.
    pub namespace: Option<String>,
    /// The scenario's path under [`PLAN_DIR`], when the plan has one.
    pub scenario: Option<String>,
    /// The scenario and its data files.
    pub files: Vec<PlanFile>,
    /// `volley run` flags, passed to every pod as they are.
    pub run_args: Vec<String>,
    /// The instant every segment starts at, in whole seconds ([`start_at`]): the pods'
    /// `--start-at` is written to the second.
    pub start_at: Timestamp,
    /// How long the plan runs, when it is known; the Job is ended this long (plus the wait
    /// for the start and a margin) after it is created.
    pub planned: Option<Duration>,
    /// Where results go: segment `i` uploads to `<results>/<run id>/segment-<i>/`.
    pub results: Location,
    /// Where the S3 credentials come from.
    pub credentials: Credentials,
    /// Further environment for the pods (`AWS_REGION`, `AWS_ENDPOINT_URL`, ...).
    pub env: Vec<(String, String)>,
    /// A Secret whose keys all become environment variables (the scenario's `${VAR}`s).
    pub env_secret: Option<String>,
    /// CPU and memory per pod.
    pub resources: Resources,
    /// How pods are spread over nodes.
    pub spread: Spread,
    /// Finished Jobs are deleted this long after they end (`None`: kept).
    pub ttl_after_finished: Option<Duration>,
    /// The pods use the node's network namespace (`hostNetwork: true`): a target on the
    /// node's loopback, or a test cluster of one node with no pod network. Such pods no longer
    /// meet the "baseline" Pod Security Standard, and two of them on one node share its ports
    /// (volley listens on none unless told to).
    pub host_network: bool,
    /// The namespace of each `--kube` value in `run_args` (`None`: the Job's own). Not
    /// empty: the pods' service account may watch them (a Role and a RoleBinding in each,
    /// [`crate::rbac`]), and is made here unless [`Credentials::ServiceAccount`] names one.
    pub watched: Vec<Option<String>>,
}

/// The objects to apply, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifests {
    /// With `--kube`: the ServiceAccount (unless given), then a Role and its RoleBinding
    /// per watched namespace.
    pub rbac: Vec<Value>,
    /// The plan's files.
    pub config_map: Value,
    /// The segments.
    pub job: Value,
}

impl Manifests {
    /// The objects, in the order to apply them: the RBAC objects, the ConfigMap, the Job.
    pub fn objects(&self) -> Vec<&Value> {
        self.rbac
            .iter()
            .chain([&self.config_map, &self.job])
            .collect()
    }

    /// One YAML stream (`---` between documents), for `kubectl apply -f -`.
    pub fn to_yaml(&self) -> String {
        self.objects()
            .iter()
            .map(|o| to_yaml(o))
            .collect::<Vec<_>>()
            .join("---\n")
    }

    /// Writes `configmap.yaml` and `job.yaml` into `dir` (created when missing), with
    /// `--kube` also `serviceaccount.yaml`, `role-NS.yaml` and `rolebinding-NS.yaml`; returns
    /// the paths.
    pub fn write_dir(&self, dir: &Path) -> Result<Vec<std::path::PathBuf>, Error> {
        let write = |path: std::path::PathBuf, text: String| {
            std::fs::write(&path, text)
                .map_err(|error| Repr::Write {
                    path: path.clone(),
                    error,
                })
                .map(|_| path)
        };
        std::fs::create_dir_all(dir).map_err(|error| Repr::Write {
            path: dir.to_path_buf(),
            error,
        })?;
        let mut out = Vec::new();
        for o in &self.rbac {
            let file = match (o["kind"].as_str(), o["metadata"]["namespace"].as_str()) {
                (Some("Role"), Some(ns)) => format!("role-{ns}.yaml"),
                (Some("RoleBinding"), Some(ns)) => format!("rolebinding-{ns}.yaml"),
                _ => "serviceaccount.yaml".to_string(),
            };
            out.push(write(dir.join(file), to_yaml(o))?);
        }
        out.push(write(
            dir.join("configmap.yaml"),
            to_yaml(&self.config_map),
        )?);
        out.push(write(dir.join("job.yaml"), to_yaml(&self.job))?);
        Ok(out)
    }
}

fn to_yaml(v: &Value) -> String {
    serde_saphyr::to_string(v).expect("a JSON value always serializes as YAML")
}

/// Labels every object and pod of the run carries.
fn labels(run_id: &str) -> Value {
    json!({ "app.kubernetes.io/name": "volley", "app.kubernetes.io/component": "load-generator", "volley.dev/run-id": run_id })
}

/// `text` as the kubelet must see it to hand `text` to the container: each `$` doubled.
/// Kubernetes expands a container's args and env values (`third_party/forked/golang/
/// expansion`): `$$` becomes `$`, `$(NAME)` NAME's value when the container has NAME, and any
/// other `$` stays. Doubling every `$` leaves nothing to expand, so `pa$$word` arrives as
/// `pa$$word`, not `pa$word`; escaping `$(` alone (as before) let `$$` through as `$`.
pub(crate) fn escaped(text: &str) -> String {
    text.replace('$', "$$")
}

/// Margin after the planned end before the Job is stopped: grace, reports and upload.
/// The most pods (segments) one Job runs.
pub const MAX_SEGMENTS: u32 = 1000;

const DEADLINE_MARGIN: Duration = Duration::from_secs(600);

/// The instant `start_in` after `now`, rounded up to a whole second. `--start-at` is
/// written to the second, and a start rounded down would give the pods up to a second less
/// than `--start-in` promised (a real node showed it: 9.1 s of a 10 s `--start-in`).
pub fn start_at(now: Timestamp, start_in: Duration) -> Result<Timestamp, Error> {
    let too_far = || Repr::Invalid(format!("--start-in {start_in:?}: give a shorter wait"));
    let at = jiff::SignedDuration::try_from(start_in)
        .ok()
        .and_then(|d| now.checked_add(d).ok())
        .ok_or_else(too_far)?;
    at.round(
        jiff::TimestampRound::new()
            .smallest(jiff::Unit::Second)
            .mode(jiff::RoundMode::Ceil),
    )
    .map_err(|_| too_far().into())
}

/// Builds the ConfigMap and the Job.
pub fn manifests(spec: &JobSpec, now: Timestamp) -> Result<Manifests, Error> {
    check(spec)?;
    let job_name = format!("volley-{}", spec.run_id);
    let cm_name = format!("{job_name}-plan");
    let mut meta = json!({ "name": cm_name, "labels": labels(&spec.run_id) });
    if let Some(ns) = &spec.namespace {
        meta["namespace"] = json!(ns);
    }

    let mut data = serde_json::Map::new();
    let mut binary = serde_json::Map::new();
    for f in &spec.files {
        match std::str::from_utf8(&f.contents) {
            Ok(text) => data.insert(f.key.clone(), json!(text)),
            Err(_) => binary.insert(
                f.key.clone(),
                json!(base64::engine::general_purpose::STANDARD.encode(&f.contents)),
            ),
        };
    }
    let mut config_map =
        json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": meta.clone(), "data": data });
    if !binary.is_empty() {
        config_map["binaryData"] = Value::Object(binary);
    }

    let n = spec.segments;
    let index = "$(JOB_COMPLETION_INDEX)";
    let mut args = vec!["run".to_string()];
    if let Some(s) = &spec.scenario {
        args.push(escaped(&format!("{PLAN_DIR}/{s}")));
    }
    args.extend(spec.run_args.iter().map(|a| escaped(a)));
    // The bucket and prefix as typed; the index is the one reference the kubelet expands.
    let upload = format!(
        "{}/segment-{index}",
        escaped(&spec.results.join(&spec.run_id).to_string())
    );
    args.extend([
        "--segment".into(),
        format!("{index}/{n}"),
        "--start-at".into(),
        spec.start_at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        // Every segment records the Job's run id, so the merged run is named as the Job is.
        "--run-id".into(),
        spec.run_id.clone(),
        "--output".into(),
        RUNS_DIR.into(),
        "--progress".into(),
        "plain".into(),
        "--upload".into(),
        upload,
    ]);

    let mut env = vec![json!({
        "name": "JOB_COMPLETION_INDEX",
        "valueFrom": { "fieldRef": { "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']" } }
    })];
    env.extend(
        spec.env
            .iter()
            .map(|(k, v)| json!({ "name": k, "value": escaped(v) })),
    );
    if let Credentials::Secret(secret) = &spec.credentials {
        for (key, optional) in [
            ("AWS_ACCESS_KEY_ID", false),
            ("AWS_SECRET_ACCESS_KEY", false),
            ("AWS_SESSION_TOKEN", true),
        ] {
            env.push(json!({ "name": key, "valueFrom": { "secretKeyRef": { "name": secret, "key": key, "optional": optional } } }));
        }
    }
    let resources = json!({ "cpu": spec.resources.cpu, "memory": spec.resources.memory });
    let mut container = json!({
        "name": "volley",
        "image": spec.image,
        "args": args,
        "env": env,
        "resources": { "requests": resources, "limits": resources },
        "volumeMounts": [
            { "name": "plan", "mountPath": PLAN_DIR, "readOnly": true },
            { "name": "runs", "mountPath": RUNS_DIR }
        ],
        "securityContext": {
            "allowPrivilegeEscalation": false,
            "readOnlyRootFilesystem": true,
            "capabilities": { "drop": ["ALL"] }
        }
    });
    if let Some(p) = &spec.image_pull_policy {
        container["imagePullPolicy"] = json!(p);
    }
    if let Some(secret) = &spec.env_secret {
        container["envFrom"] = json!([{ "secretRef": { "name": secret } }]);
    }
    let items: Vec<Value> = spec
        .files
        .iter()
        .map(|f| json!({ "key": f.key, "path": f.path }))
        .collect();
    let mut pod = json!({
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 30,
        "securityContext": { "runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532, "seccompProfile": { "type": "RuntimeDefault" } },
        "topologySpreadConstraints": [{
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": match spec.spread { Spread::Hard => "DoNotSchedule", Spread::Soft => "ScheduleAnyway" },
            "labelSelector": { "matchLabels": { "volley.dev/run-id": spec.run_id } }
        }],
        "containers": [container],
        "volumes": [
            { "name": "plan", "configMap": { "name": cm_name, "items": items } },
            { "name": "runs", "emptyDir": {} }
        ]
    });
    if spec.host_network {
        pod["hostNetwork"] = json!(true);
        // Cluster DNS still answers for in-cluster names (the target's Service, the S3 endpoint).
        pod["dnsPolicy"] = json!("ClusterFirstWithHostNet");
    }
    let given = match &spec.credentials {
        Credentials::ServiceAccount(sa) => Some(sa.as_str()),
        Credentials::Secret(_) => None,
    };
    let (account, roles) = crate::rbac::objects(
        &spec.run_id,
        spec.namespace.as_deref(),
        &spec.watched,
        given,
        &labels(&spec.run_id),
    )?;
    match (&spec.credentials, &account) {
        (Credentials::ServiceAccount(sa), _) => pod["serviceAccountName"] = json!(sa),
        // The watcher reads the cluster with this account's token.
        (Credentials::Secret(_), Some(a)) => {
            pod["serviceAccountName"] = a["metadata"]["name"].clone()
        }
        (Credentials::Secret(_), None) => pod["automountServiceAccountToken"] = json!(false),
    }
    let mut rbac: Vec<Value> = account.into_iter().collect();
    for (_, role, binding) in roles {
        rbac.extend([role, binding]);
    }

    let mut job_meta = meta;
    job_meta["name"] = json!(job_name);
    let mut job_spec = json!({
        "completionMode": "Indexed",
        "completions": n,
        "parallelism": n,
        // A failed index is not retried: a second pod would send that segment's load again.
        "backoffLimitPerIndex": 0,
        // Nor is a pod replaced while the old one may still be sending (e.g. evicted, terminating).
        "podReplacementPolicy": "Failed",
        "template": { "metadata": { "labels": labels(&spec.run_id) }, "spec": pod }
    });
    if let Some(planned) = spec.planned {
        let wait = spec.start_at.duration_since(now).as_secs().max(0) as u64;
        job_spec["activeDeadlineSeconds"] =
            json!(wait + planned.as_secs() + DEADLINE_MARGIN.as_secs());
    }
    if let Some(ttl) = spec.ttl_after_finished {
        job_spec["ttlSecondsAfterFinished"] = json!(ttl.as_secs());
    }
    let job =
        json!({ "apiVersion": "batch/v1", "kind": "Job", "metadata": job_meta, "spec": job_spec });
    Ok(Manifests {
        rbac,
        config_map,
        job,
    })
}

/// Refuses a Job of no pods, or of more than [`MAX_SEGMENTS`].
pub fn check_segments(segments: u32) -> Result<(), Error> {
    if !(1..=MAX_SEGMENTS).contains(&segments) {
        return Err(Repr::Invalid(format!(
            "--segments {segments}: give 1 to {MAX_SEGMENTS} pods"
        ))
        .into());
    }
    Ok(())
}

/// Refuses what would make objects Kubernetes rejects, or a Job that cannot do its work.
fn check(spec: &JobSpec) -> Result<(), Error> {
    let bad = |m: String| Err(Repr::Invalid(m).into());
    validate_run_id(&spec.run_id)?;
    check_segments(spec.segments)?;
    if spec.image.trim().is_empty() || spec.image.contains(char::is_whitespace) {
        return bad(format!(
            "--image `{}`: give an image reference such as ghcr.io/you/volley:0.1.0",
            spec.image
        ));
    }
    if let Some(p) = &spec.image_pull_policy
        && !["Always", "IfNotPresent", "Never"].contains(&p.as_str())
    {
        return bad(format!(
            "--image-pull-policy `{p}`: write Always, IfNotPresent or Never"
        ));
    }
    if let Some(ns) = &spec.namespace {
        check_dns_label("--namespace", ns)?;
    }
    for name in [
        spec.env_secret.as_deref(),
        match &spec.credentials {
            Credentials::Secret(s) | Credentials::ServiceAccount(s) => Some(s.as_str()),
        },
    ]
    .into_iter()
    .flatten()
    {
        check_dns_subdomain(name)?;
    }
    check_quantity("--cpu", &spec.resources.cpu, &["m"])?;
    check_quantity(
        "--memory",
        &spec.resources.memory,
        &["Ki", "Mi", "Gi", "Ti", "k", "M", "G", "T"],
    )?;
    for (k, _) in &spec.env {
        if k.is_empty()
            || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            || k.starts_with(|c: char| c.is_ascii_digit())
        {
            return bad(format!(
                "environment variable name `{k}`: use letters, digits and `_`, not starting with a digit"
            ));
        }
    }
    Ok(())
}

fn check_dns_label(what: &str, s: &str) -> Result<(), Error> {
    let ok = !s.is_empty()
        && s.len() <= 63
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(Repr::Invalid(format!(
            "{what} `{s}`: a Kubernetes name is 1-63 characters of a-z, 0-9 and `-`"
        ))
        .into())
    }
}

fn check_dns_subdomain(s: &str) -> Result<(), Error> {
    let ok = !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|part| check_dns_label("", part).is_ok());
    if ok {
        Ok(())
    } else {
        Err(Repr::Invalid(format!(
            "`{s}` is not a Kubernetes object name (a-z, 0-9, `-` and `.`)"
        ))
        .into())
    }
}

/// A decimal number with one of `suffixes` or none (what `--cpu 2`, `--memory 1Gi` need).
fn check_quantity(flag: &str, s: &str, suffixes: &[&str]) -> Result<(), Error> {
    let number = suffixes.iter().find_map(|x| s.strip_suffix(x)).unwrap_or(s);
    let ok = !number.is_empty()
        && number.chars().all(|c| c.is_ascii_digit() || c == '.')
        && number.matches('.').count() <= 1
        && number.parse::<f64>().is_ok_and(|v| v > 0.0);
    if ok {
        Ok(())
    } else {
        Err(Repr::Invalid(format!(
            "{flag} `{s}`: give a positive Kubernetes quantity, e.g. {}",
            if flag == "--cpu" {
                "2 or 1500m"
            } else {
                "1Gi or 512Mi"
            }
        ))
        .into())
    }
}

#[cfg(test)]
mod tests;
