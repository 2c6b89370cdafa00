//! What `--kube` names: a Deployment, or the pods a label selector picks, in a namespace.
//!
//! ```text
//! deployment/NAME          the Deployment NAME in the kubeconfig's namespace (also deploy/NAME)
//! NS/deployment/NAME       ... in namespace NS
//! pods/SELECTOR            the pods that match SELECTOR: key=value[,key=value...] (also key!=value)
//! NS/pods/SELECTOR         ... in namespace NS
//! ```
//! A label key may hold a prefix (`pods/app.kubernetes.io/name=chat`): everything after
//! `pods/` is the selector.

use crate::error::{Error, Result};

/// Longest `--kube` value taken.
pub const MAX_SPEC: usize = 1024;

/// One watched workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// The namespace; `None`: the kubeconfig's (or the service account's).
    pub namespace: Option<String>,
    /// What is watched in it.
    pub what: What,
}

/// A Deployment or a set of pods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum What {
    /// A Deployment by name: its pods, ReplicaSets, Services and HPAs.
    Deployment(String),
    /// The pods a label selector picks, and the Services that select them.
    Pods(String),
}

const FORMS: &str =
    "write deployment/NAME, NS/deployment/NAME, pods/app=chat or NS/pods/app=chat,tier=web";

impl Spec {
    /// Parses a `--kube` value (see the module's grammar); the error says what to write.
    pub fn parse(value: &str) -> Result<Spec> {
        let bad = |why: String| Error::spec(value, why);
        if value.len() > MAX_SPEC {
            return Err(bad(format!("longer than {MAX_SPEC} bytes")));
        }
        if value.trim().is_empty() {
            return Err(bad(format!("empty: {FORMS}")));
        }
        let (namespace, rest) = match value.split_once('/') {
            Some((first, rest)) if !is_kind(first) && !first.contains('=') => {
                (Some(first.to_string()), rest)
            }
            _ => (None, value),
        };
        if let Some(ns) = &namespace {
            check_name(ns, 63, false).map_err(|why| bad(format!("namespace {ns:?} {why}")))?;
        }
        let Some((kind, name)) = rest.split_once('/') else {
            return Err(bad(
                if let (Some(first), false) = (&namespace, rest.contains('=')) {
                    format!(
                        "{first:?} is not a kind that is watched (a Deployment, or pods by label): {FORMS}"
                    )
                } else if rest.contains('=') {
                    let ns = namespace.map(|n| format!("{n}/")).unwrap_or_default();
                    format!("a label selector is written after pods/: write {ns}pods/{rest}")
                } else {
                    format!("no kind: {FORMS}")
                },
            ));
        };
        let what = match kind {
            "deployment" | "deploy" | "deployments" | "deployment.apps" => {
                check_name(name, 253, true).map_err(|why| bad(format!("name {name:?} {why}")))?;
                What::Deployment(name.to_string())
            }
            "pods" | "pod" => {
                check_selector(name).map_err(bad)?;
                What::Pods(name.to_string())
            }
            k if k.contains('=') => {
                let ns = namespace.map(|n| format!("{n}/")).unwrap_or_default();
                return Err(bad(format!(
                    "a label selector is written after pods/: write {ns}pods/{rest}"
                )));
            }
            other => {
                return Err(bad(format!(
                    "{other:?} is not a kind that is watched (a Deployment, or pods by label): \
                     {FORMS}"
                )));
            }
        };
        Ok(Spec { namespace, what })
    }

    /// The namespace, given or `default_ns`.
    pub fn namespace_or<'a>(&'a self, default_ns: &'a str) -> &'a str {
        self.namespace.as_deref().unwrap_or(default_ns)
    }

    /// The Target column of kube.csv: `kube:NS/deployment/NAME` or `kube:NS/pods/SELECTOR`.
    pub fn target(&self, ns: &str) -> String {
        match &self.what {
            What::Deployment(n) => format!("kube:{ns}/deployment/{n}"),
            What::Pods(s) => format!("kube:{ns}/pods/{s}"),
        }
    }
}

impl std::fmt::Display for Spec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(ns) = &self.namespace {
            write!(f, "{ns}/")?;
        }
        match &self.what {
            What::Deployment(n) => write!(f, "deployment/{n}"),
            What::Pods(s) => write!(f, "pods/{s}"),
        }
    }
}

fn is_kind(s: &str) -> bool {
    matches!(
        s,
        "deployment" | "deploy" | "deployments" | "deployment.apps" | "pods" | "pod"
    )
}

/// A DNS-1123 label (`dots: false`, a namespace) or subdomain (`dots: true`, an object name).
fn check_name(s: &str, max: usize, dots: bool) -> std::result::Result<(), String> {
    if s.is_empty() {
        return Err("is empty".into());
    }
    if s.len() > max {
        return Err(format!("is longer than {max} characters"));
    }
    let ok = s
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || (dots && b == b'.'));
    let ends = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if !ok || !ends(s.as_bytes()[0]) || !ends(s.as_bytes()[s.len() - 1]) {
        return Err(format!(
            "is not a Kubernetes name (lowercase letters, digits and '-'{}, starting and \
             ending with a letter or digit)",
            if dots { ", '.'" } else { "" }
        ));
    }
    Ok(())
}

/// A selector of `key=value`, `key==value` or `key!=value` terms joined by commas.
fn check_selector(s: &str) -> std::result::Result<(), String> {
    if s.is_empty() {
        return Err(format!("pods/ without a selector: {FORMS}"));
    }
    for term in s.split(',') {
        let (key, value) = term
            .split_once("!=")
            .or_else(|| term.split_once("=="))
            .or_else(|| term.split_once('='))
            .ok_or_else(|| {
                format!("selector term {term:?} is not key=value or key!=value: {FORMS}")
            })?;
        let label = |c: char| c.is_ascii_alphanumeric() || "-_./".contains(c);
        if key.is_empty() || !key.chars().all(label) {
            return Err(format!(
                "selector term {term:?}: the key {key:?} is not a label key (letters, digits, \
                 '-', '_', '.', and one '/' after a prefix)"
            ));
        }
        if !value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(format!(
                "selector term {term:?}: the value {value:?} is not a label value (letters, \
                 digits, '-', '_', '.')"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> Spec {
        Spec::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn err(s: &str) -> String {
        let e = Spec::parse(s).unwrap_err();
        assert!(e.is_spec());
        e.to_string()
    }

    #[test]
    fn deployments_with_and_without_a_namespace() {
        assert_eq!(
            ok("deployment/chat"),
            Spec {
                namespace: None,
                what: What::Deployment("chat".into())
            }
        );
        assert_eq!(ok("deploy/chat"), ok("deployment/chat"));
        let s = ok("shop/deployment/chat-v2.web");
        assert_eq!(s.namespace.as_deref(), Some("shop"));
        assert_eq!(s.what, What::Deployment("chat-v2.web".into()));
        assert_eq!(s.to_string(), "shop/deployment/chat-v2.web");
        assert_eq!(
            s.target(s.namespace_or("x")),
            "kube:shop/deployment/chat-v2.web"
        );
        assert_eq!(
            ok("deployment/chat").target("default"),
            "kube:default/deployment/chat"
        );
    }

    #[test]
    fn pods_by_selector_keep_prefixed_keys_whole() {
        let s = ok("shop/pods/app=chat,tier!=batch");
        assert_eq!(s.namespace.as_deref(), Some("shop"));
        assert_eq!(s.what, What::Pods("app=chat,tier!=batch".into()));
        let s = ok("pods/app.kubernetes.io/name=chat");
        assert_eq!(s.namespace, None);
        assert_eq!(s.what, What::Pods("app.kubernetes.io/name=chat".into()));
        let s = ok("default/pods/app.kubernetes.io/name=chat");
        assert_eq!(s.what, What::Pods("app.kubernetes.io/name=chat".into()));
    }

    #[test]
    fn bad_values_say_what_to_write() {
        assert!(
            err("app=chat").contains("write pods/app=chat"),
            "{}",
            err("app=chat")
        );
        assert!(err("shop/app=chat,tier=web").contains("write shop/pods/app=chat,tier=web"));
        assert!(err("statefulset/db").contains("\"statefulset\" is not a kind"));
        assert!(err("chat").contains("write deployment/NAME"));
        assert!(err("").contains("empty"));
        assert!(
            err("Shop/deployment/chat").contains("namespace \"Shop\" is not a Kubernetes name")
        );
        assert!(err("deployment/Chat_1").contains("name \"Chat_1\""));
        assert!(err("deployment/").contains("is empty"));
        assert!(err("pods/").contains("without a selector"));
        assert!(err("pods/app").contains("not key=value"));
        assert!(err("pods/a b=c").contains("not a label key"));
        assert!(err(&format!("deployment/{}", "a".repeat(2000))).contains("longer than 1024"));
    }
}
