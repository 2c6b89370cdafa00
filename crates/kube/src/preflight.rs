//! Before any load: one SelfSubjectAccessReview (authorization.k8s.io/v1, which any
//! authenticated user may create) per verb and resource the watcher needs in each watched
//! namespace, so a missing permission stops the run with the verb, the resource and the
//! namespace, not a watch that fails mid-run. metrics.k8s.io denied is a note: the record
//! has no CPU or memory then, and the rest goes on.

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::Api;
use kube::api::PostParams;

use crate::error::{Error, Result};
use crate::spec::{Spec, What};

/// One permission: (API group, resource, verb).
pub type Need = (&'static str, &'static str, &'static str);

/// What watching one workload takes, in the order the docs' Role lists it (without
/// metrics.k8s.io: [`METRICS_NEED`]).
pub fn needs(spec: &Spec) -> Vec<Need> {
    let mut out: Vec<Need> = vec![
        ("", "pods", "list"),
        ("", "pods", "watch"),
        ("", "events", "list"),
        ("", "events", "watch"),
        ("", "services", "list"),
        ("discovery.k8s.io", "endpointslices", "list"),
        ("discovery.k8s.io", "endpointslices", "watch"),
    ];
    if let What::Deployment(_) = spec.what {
        out.extend([
            ("apps", "deployments", "get"),
            ("apps", "deployments", "list"),
            ("apps", "deployments", "watch"),
            ("apps", "replicasets", "list"),
            ("apps", "replicasets", "watch"),
            ("autoscaling", "horizontalpodautoscalers", "list"),
            ("autoscaling", "horizontalpodautoscalers", "watch"),
        ]);
    }
    out
}

/// CPU and memory: not needed to watch, said when missing.
pub const METRICS_NEED: Need = ("metrics.k8s.io", "pods", "list");

/// What the reviews found that does not stop the run (metrics.k8s.io not allowed, the review
/// itself not served).
#[derive(Debug, Default)]
pub struct Checked {
    /// Why there will be no CPU or memory, when the review says so.
    pub metrics: Option<String>,
    /// Reviews that could not be made (the permissions are then found as the watches start).
    pub problems: Vec<String>,
}

/// Whether the client may `verb` `resource` (of `group`) in `namespace`: `Ok(Err(reason))`
/// when denied, `Err` when the review could not be made.
async fn review(
    client: &kube::Client,
    (group, resource, verb): Need,
    namespace: &str,
) -> std::result::Result<std::result::Result<(), String>, kube::Error> {
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let ask = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                group: Some(group.to_string()),
                resource: Some(resource.to_string()),
                verb: Some(verb.to_string()),
                namespace: Some(namespace.to_string()),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    let answer = api.create(&PostParams::default(), &ask).await?;
    let status = answer.status.unwrap_or_default();
    if status.allowed {
        return Ok(Ok(()));
    }
    let why = [status.reason, status.evaluation_error]
        .into_iter()
        .flatten()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    Ok(Err(why))
}

/// Whether the client may `get nodes/proxy` (cluster-wide), which the kubelet fallback for
/// CPU and memory needs: `Err(why)` when denied or when the review could not be made.
pub async fn node_proxy(client: &kube::Client) -> std::result::Result<(), String> {
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let ask = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                group: Some(String::new()),
                resource: Some("nodes".to_string()),
                subresource: Some("proxy".to_string()),
                verb: Some("get".to_string()),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    match api.create(&PostParams::default(), &ask).await {
        Ok(a) => {
            let status = a.status.unwrap_or_default();
            if status.allowed {
                return Ok(());
            }
            let why = [status.reason, status.evaluation_error]
                .into_iter()
                .flatten()
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join("; ");
            Err(if why.is_empty() {
                "get nodes/proxy is not allowed".to_string()
            } else {
                format!("get nodes/proxy is not allowed ({why})")
            })
        }
        Err(e) => Err(format!("get nodes/proxy could not be reviewed ({e})")),
    }
}

/// Reviews every permission the `specs` need (`default_ns` for those naming no namespace);
/// the first denied one is the error. A review the server does not serve (404) or refuses
/// is a problem noted, not a stop.
pub async fn check(client: &kube::Client, specs: &[Spec], default_ns: &str) -> Result<Checked> {
    let mut checked = Checked::default();
    let mut asked: Vec<(Need, String)> = Vec::new();
    let mut plan: Vec<(Need, String)> = Vec::new();
    for spec in specs {
        let ns = spec.namespace_or(default_ns).to_string();
        for need in needs(spec).into_iter().chain([METRICS_NEED]) {
            let key = (need, ns.clone());
            if !asked.contains(&key) {
                asked.push(key.clone());
                plan.push(key);
            }
        }
    }
    for (need, ns) in plan {
        let (group, resource, verb) = need;
        match review(client, need, &ns).await {
            Ok(Ok(())) => {}
            Ok(Err(why)) if need == METRICS_NEED => {
                let why = if why.is_empty() {
                    String::new()
                } else {
                    format!(": {why}")
                };
                checked.metrics = Some(format!(
                    "metrics.k8s.io not allowed (cannot list pods.metrics.k8s.io in namespace \
                     {ns}{why}): no CPU or memory from it (the kubelet's /metrics/resource is \
                     read instead only if get nodes/proxy is allowed); grant it with the Role \
                     in docs/kubernetes.md"
                ));
            }
            Ok(Err(why)) => {
                let _ = group;
                return Err(Error::denied(verb, resource, &ns, why));
            }
            Err(kube::Error::Api(s)) if [403, 404].contains(&s.code) => {
                let p = format!(
                    "the permissions could not be reviewed before the run (a \
                     SelfSubjectAccessReview was answered {}: {}): a missing one shows when its \
                     watch starts",
                    s.code, s.message
                );
                checked.problems.push(p);
                return Ok(checked);
            }
            Err(e) => {
                return Err(Error::api(
                    "create",
                    "selfsubjectaccessreviews",
                    &ns,
                    "the access review",
                    e,
                ));
            }
        }
    }
    Ok(checked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deployment_needs_more_than_pods_by_selector() {
        let d = needs(&Spec::parse("deployment/chat").unwrap());
        let p = needs(&Spec::parse("pods/app=chat").unwrap());
        assert!(d.contains(&("apps", "deployments", "get")));
        assert!(d.contains(&("autoscaling", "horizontalpodautoscalers", "watch")));
        assert!(!p.iter().any(|n| n.0 == "apps" || n.0 == "autoscaling"));
        assert!(p.contains(&("", "pods", "watch")));
    }
}
