//! What `--kube` in the pods' flags needs: the watcher (in segment 0's pod; the other
//! segments do not watch) reads the target's workload with the pod's service account, so the
//! manifests add a Role with the rules of docs/kubernetes.md ("Watching the target") in every
//! watched namespace, a RoleBinding of it to the pods' service account, and that service
//! account (`volley-<run id>`) unless one is given (`--service-account`).

use serde_json::{Value, json};

use crate::Repr;
use crate::error::Error;

/// The Role's rules: those docs/kubernetes.md gives (the watcher's preflight reviews each).
pub fn rules() -> Value {
    json!([
        { "apiGroups": [""], "resources": ["pods", "events"], "verbs": ["get", "list", "watch"] },
        { "apiGroups": [""], "resources": ["services"], "verbs": ["get", "list"] },
        { "apiGroups": ["apps"], "resources": ["deployments", "replicasets"], "verbs": ["get", "list", "watch"] },
        { "apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"], "verbs": ["get", "list", "watch"] },
        { "apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list", "watch"] },
        { "apiGroups": ["metrics.k8s.io"], "resources": ["pods"], "verbs": ["get", "list"] }
    ])
}

/// A watched namespace with its Role and RoleBinding.
pub(crate) type Grant = (String, Value, Value);

/// The objects, in the order to apply them: the service account when it is made here, then
/// a Role and a RoleBinding per namespace. `namespace`: the Job's; `watched`: each `--kube`
/// value's namespace (`None`: the Job's); `given`: `--service-account`.
pub(crate) fn objects(
    run_id: &str,
    namespace: Option<&str>,
    watched: &[Option<String>],
    given: Option<&str>,
    labels: &Value,
) -> Result<(Option<Value>, Vec<Grant>), Error> {
    if watched.is_empty() {
        return Ok((None, Vec::new()));
    }
    let Some(job_ns) = namespace else {
        return Err(Repr::Invalid(
            "--kube in the pods' flags needs --namespace: the RoleBinding that lets the pods \
             watch names their service account with its namespace; give -n NAMESPACE"
                .into(),
        )
        .into());
    };
    let name = format!("volley-{run_id}");
    let sa_name = given.unwrap_or(&name).to_string();
    let account = given.is_none().then(|| {
        json!({ "apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": { "name": sa_name, "namespace": job_ns, "labels": labels } })
    });
    let mut namespaces: Vec<String> = watched
        .iter()
        .map(|n| n.clone().unwrap_or_else(|| job_ns.to_string()))
        .collect();
    namespaces.sort();
    namespaces.dedup();
    let role = format!("{name}-watch");
    let pairs = namespaces
        .into_iter()
        .map(|ns| {
            let meta = json!({ "name": role, "namespace": ns, "labels": labels });
            let r = json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                            "metadata": meta, "rules": rules() });
            let b = json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                            "metadata": meta,
                            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role },
                            "subjects": [{ "kind": "ServiceAccount", "name": sa_name, "namespace": job_ns }] });
            (ns, r, b)
        })
        .collect();
    Ok((account, pairs))
}
