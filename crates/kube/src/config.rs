//! Which cluster, as whom: the kubeconfig (`KUBECONFIG`, `~/.kube/config`, or a path given)
//! with its current context or `--kube-context`, else the pod's service account; and the
//! redacted summary of it that run.json keeps (context, server, namespace, the *kind* of
//! credential, never the credential).

use std::path::Path;

use kube::config::{AuthInfo, KubeConfigOptions, Kubeconfig};

use crate::error::{Error, Result};

/// A client configuration and what may be said about it.
pub struct Loaded {
    /// What kube's client is built from.
    pub config: kube::Config,
    /// The context used (`None` in-cluster).
    pub context: Option<String>,
    /// `scheme://host:port`: no user, no path, no query.
    pub server: String,
    /// The default namespace.
    pub namespace: String,
    /// How the client authenticates: `token`, `token-file`, `client-cert`, `exec:NAME`,
    /// `auth-provider:NAME`, `basic`, `in-cluster` or `none`.
    pub auth: String,
}

/// Loads the configuration: from `kubeconfig` when given, else kube's own search
/// (`KUBECONFIG`, `~/.kube/config`), else in-cluster. `context` picks a kubeconfig context.
pub async fn load(context: Option<&str>, kubeconfig: Option<&Path>) -> Result<Loaded> {
    let kc = match kubeconfig {
        Some(p) => Some(Kubeconfig::read_from(p).map_err(|e| {
            Error::config(format!("cannot read the kubeconfig {}: {e}", p.display()))
        })?),
        None => match Kubeconfig::read() {
            Ok(kc) => Some(kc),
            Err(e) if context.is_some() => {
                return Err(Error::config(format!(
                    "--kube-context {:?} needs a kubeconfig, and none could be read ({e}): set \
                     KUBECONFIG",
                    context.unwrap_or_default()
                )));
            }
            Err(_) => None,
        },
    };
    let Some(kc) = kc else {
        let config = kube::Config::incluster().map_err(|e| {
            Error::config(format!(
                "no kubeconfig (KUBECONFIG or ~/.kube/config) and not in a pod with a service \
                 account ({e}): set KUBECONFIG to the cluster's kubeconfig"
            ))
        })?;
        return Ok(Loaded {
            server: server_of(&config.cluster_url),
            namespace: config.default_namespace.clone(),
            context: None,
            auth: "in-cluster".into(),
            config,
        });
    };
    let name = context
        .map(str::to_string)
        .or_else(|| kc.current_context.clone());
    if let Some(n) = &name
        && !kc.contexts.iter().any(|c| &c.name == n)
    {
        let known: Vec<&str> = kc.contexts.iter().map(|c| c.name.as_str()).collect();
        return Err(Error::config(format!(
            "the kubeconfig has no context {n:?}; its contexts: {}",
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        )));
    }
    let user = name
        .as_ref()
        .and_then(|n| kc.contexts.iter().find(|c| &c.name == n))
        .and_then(|c| c.context.as_ref())
        .and_then(|c| c.user.clone());
    let auth = user
        .and_then(|u| kc.auth_infos.iter().find(|a| a.name == u))
        .and_then(|a| a.auth_info.as_ref())
        .map_or_else(|| "none".to_string(), auth_kind);
    let options = KubeConfigOptions {
        context: name.clone(),
        ..KubeConfigOptions::default()
    };
    let config = kube::Config::from_custom_kubeconfig(kc, &options)
        .await
        .map_err(|e| Error::config(format!("the kubeconfig cannot be used: {e}")))?;
    Ok(Loaded {
        server: server_of(&config.cluster_url),
        namespace: config.default_namespace.clone(),
        context: name,
        auth,
        config,
    })
}

/// The kind of credential, never its value.
pub fn auth_kind(a: &AuthInfo) -> String {
    if let Some(exec) = &a.exec {
        let cmd = exec.command.as_deref().unwrap_or("?");
        let base = Path::new(cmd)
            .file_name()
            .and_then(|f| f.to_str())
            .unwrap_or(cmd);
        return format!("exec:{base}");
    }
    if let Some(p) = &a.auth_provider {
        return format!("auth-provider:{}", p.name);
    }
    if a.token.is_some() {
        "token".into()
    } else if a.token_file.is_some() {
        "token-file".into()
    } else if a.client_certificate.is_some() || a.client_certificate_data.is_some() {
        "client-cert".into()
    } else if a.username.is_some() {
        "basic".into()
    } else {
        "none".into()
    }
}

/// `scheme://host:port` of a server URL: the user, path and query left out.
pub fn server_of(uri: &http::Uri) -> String {
    let scheme = uri.scheme_str().unwrap_or("https");
    let host = uri.host().unwrap_or("?");
    let port = uri
        .port_u16()
        .unwrap_or(if scheme == "http" { 80 } else { 443 });
    if host.contains(':') && !host.starts_with('[') {
        format!("{scheme}://[{host}]:{port}")
    } else {
        format!("{scheme}://{host}:{port}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_keeps_no_user_or_path() {
        let u: http::Uri = "https://admin:s3cret@api.example.com:6443/k8s?token=x"
            .parse()
            .unwrap();
        assert_eq!(server_of(&u), "https://api.example.com:6443");
        let u: http::Uri = "https://api.example.com".parse().unwrap();
        assert_eq!(server_of(&u), "https://api.example.com:443");
        let u: http::Uri = "http://127.0.0.1".parse().unwrap();
        assert_eq!(server_of(&u), "http://127.0.0.1:80");
    }

    #[tokio::test]
    async fn a_kubeconfig_gives_its_context_and_the_kind_of_credential() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubeconfig");
        std::fs::write(
            &path,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \
             'https://10.1.2.3:6443', insecure-skip-tls-verify: true}\n- name: d\n  cluster: \
             {server: 'https://10.9.9.9'}\nusers:\n- name: u\n  user: {token: tok-123}\n- name: \
             e\n  user:\n    exec: {apiVersion: client.authentication.k8s.io/v1, command: \
             /usr/local/bin/aws, args: [eks, get-token]}\ncontexts:\n- name: one\n  context: \
             {cluster: c, user: u, namespace: shop}\n- name: two\n  context: {cluster: d, user: \
             e}\ncurrent-context: one\n",
        )
        .unwrap();
        let l = load(None, Some(&path)).await.unwrap();
        assert_eq!(l.context.as_deref(), Some("one"));
        assert_eq!(l.server, "https://10.1.2.3:6443");
        assert_eq!(l.namespace, "shop");
        assert_eq!(l.auth, "token");
        let l = load(Some("two"), Some(&path)).await.unwrap();
        assert_eq!(l.auth, "exec:aws");
        assert_eq!(l.namespace, "default");
        let e = load(Some("three"), Some(&path)).await.err().unwrap();
        assert_eq!(e.kind(), crate::Kind::Config);
        assert!(
            e.to_string()
                .contains("no context \"three\"; its contexts: one, two"),
            "{e}"
        );
    }
}
