//! From what `--kube` names to what is watched: a Deployment's label selector, the Services
//! whose selector its pods match, and the HPAs that scale it.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::Api;
use kube::api::ListParams;

use crate::error::{Error, Result};
use crate::spec::{Spec, What};

/// A workload, resolved against the API server before the run.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// As given.
    pub spec: Spec,
    /// Its namespace.
    pub namespace: String,
    /// kube.csv's Target column for it.
    pub target: String,
    /// The pods' label selector, as the API takes it.
    pub selector: String,
    /// The Deployment (none when pods are named by a selector).
    pub deployment: Option<String>,
    /// Services in the namespace whose selector the pods match.
    pub services: Vec<String>,
    /// HPAs whose scaleTargetRef is the Deployment.
    pub hpas: Vec<String>,
}

/// A label selector as the API's `labelSelector` parameter writes it.
pub fn selector_string(s: &LabelSelector) -> String {
    let mut terms: Vec<String> = s
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    for e in s.match_expressions.iter().flatten() {
        let values = e.values.clone().unwrap_or_default().join(",");
        terms.push(match e.operator.as_str() {
            "In" => format!("{} in ({values})", e.key),
            "NotIn" => format!("{} notin ({values})", e.key),
            "Exists" => e.key.clone(),
            _ => format!("!{}", e.key),
        });
    }
    terms.join(",")
}

/// The labels an equality selector (`a=b,c==d`) requires.
fn required_labels(selector: &str) -> BTreeMap<String, String> {
    selector
        .split(',')
        .filter(|t| !t.contains("!="))
        .filter_map(|t| {
            let (k, v) = t.split_once("==").or_else(|| t.split_once('='))?;
            Some((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

/// Whether a Service's selector picks pods labelled `labels`.
pub fn service_selects(svc: &Service, labels: &BTreeMap<String, String>) -> bool {
    match svc.spec.as_ref().and_then(|s| s.selector.as_ref()) {
        Some(sel) if !sel.is_empty() => sel.iter().all(|(k, v)| labels.get(k) == Some(v)),
        _ => false,
    }
}

/// Resolves one `--kube` value (`default_ns` when it names no namespace).
pub async fn resolve(client: &kube::Client, spec: &Spec, default_ns: &str) -> Result<Resolved> {
    let ns = spec.namespace_or(default_ns).to_string();
    let (selector, labels, deployment) = match &spec.what {
        What::Deployment(name) => {
            let api: Api<Deployment> = Api::namespaced(client.clone(), &ns);
            let d = api.get(name).await.map_err(|e| {
                Error::api("get", "deployments", &ns, &format!("deployment {name}"), e)
            })?;
            let dspec = d.spec;
            let selector = selector_string(&dspec.selector);
            if selector.is_empty() {
                return Err(Error::config(format!(
                    "deployment {name} in namespace {ns} has an empty selector: it would watch \
                     every pod of the namespace; name the pods with pods/SELECTOR instead"
                )));
            }
            let labels = dspec
                .template
                .metadata
                .and_then(|m| m.labels)
                .unwrap_or_default();
            (selector, labels, Some(name.clone()))
        }
        What::Pods(sel) => (sel.clone(), required_labels(sel), None),
    };
    let svcs: Api<Service> = Api::namespaced(client.clone(), &ns);
    let list = svcs
        .list(&ListParams::default())
        .await
        .map_err(|e| Error::api("list", "services", &ns, "services", e))?;
    let mut services: Vec<String> = list
        .items
        .iter()
        .filter(|s| service_selects(s, &labels))
        .filter_map(|s| s.metadata.name.clone())
        .collect();
    services.sort();
    let mut hpas = Vec::new();
    if let Some(name) = &deployment {
        let api: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), &ns);
        let list = api
            .list(&ListParams::default())
            .await
            .map_err(|e| Error::api("list", "horizontalpodautoscalers", &ns, "autoscalers", e))?;
        hpas = list
            .items
            .iter()
            .filter(|h| {
                let r = &h.spec.scale_target_ref;
                r.kind == "Deployment" && &r.name == name
            })
            .filter_map(|h| h.metadata.name.clone())
            .collect();
        hpas.sort();
    }
    Ok(Resolved {
        target: spec.target(&ns),
        spec: spec.clone(),
        namespace: ns,
        selector,
        deployment,
        services,
        hpas,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_and_the_services_they_pick() {
        let s: LabelSelector = serde_json::from_value(serde_json::json!({
            "matchLabels": {"app": "chat", "tier": "web"},
            "matchExpressions": [{"key": "track", "operator": "In", "values": ["a", "b"]},
                                 {"key": "canary", "operator": "DoesNotExist"}]
        }))
        .unwrap();
        assert_eq!(
            selector_string(&s),
            "app=chat,tier=web,track in (a,b),!canary"
        );
        let labels = required_labels("app=chat,tier==web,x!=y");
        assert_eq!(labels.len(), 2);
        let svc = |sel: serde_json::Value| -> Service {
            serde_json::from_value(serde_json::json!({"spec": {"selector": sel}})).unwrap()
        };
        assert!(service_selects(
            &svc(serde_json::json!({"app": "chat"})),
            &labels
        ));
        assert!(!service_selects(
            &svc(serde_json::json!({"app": "chat", "v": "2"})),
            &labels
        ));
        assert!(!service_selects(&svc(serde_json::json!({})), &labels));
    }
}
