//! The target: a parsed URL, its resolved address, and the check that it answers at all
//! before any load is sent.

use std::net::SocketAddr;
use std::time::Duration;

use http::Uri;
use http::uri::{Authority, PathAndQuery, Scheme};

use crate::tls::TlsOptions;

/// Where requests go.
#[derive(Debug, Clone)]
pub struct Target {
    /// `http` or `https`.
    pub tls: bool,
    /// Host name as written (for SNI and `Host`).
    pub host: String,
    /// Host and port, for `Host` / `:authority`.
    pub authority: Authority,
    /// Path and query of the URL.
    pub path: PathAndQuery,
    /// The resolved address (resolved once, before the run).
    pub addr: SocketAddr,
    /// The full URL.
    pub uri: Uri,
}

/// The target cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// The URL is not an absolute http(s) URL.
    #[error("`{0}` is not an absolute http:// or https:// URL")]
    BadUrl(String),
    /// The host name did not resolve.
    #[error("cannot resolve `{host}`: {message}")]
    Resolve {
        /// The host.
        host: String,
        /// What the resolver said.
        message: String,
    },
    /// Nothing answered on the address before the run started.
    #[error("{url} does not answer ({addr}): {message}. Is the server running and listening there?")]
    Unreachable {
        /// The URL.
        url: String,
        /// The address tried.
        addr: SocketAddr,
        /// What failed.
        message: String,
    },
}

impl Target {
    /// Parses and resolves `url`.
    pub fn resolve(url: &str) -> Result<Target, TargetError> {
        let uri: Uri = url.parse().map_err(|_| TargetError::BadUrl(url.to_string()))?;
        let tls = match uri.scheme() {
            Some(s) if *s == Scheme::HTTP => false,
            Some(s) if *s == Scheme::HTTPS => true,
            _ => return Err(TargetError::BadUrl(url.to_string())),
        };
        let authority = uri.authority().cloned().ok_or_else(|| TargetError::BadUrl(url.to_string()))?;
        let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_string();
        let port = authority.port_u16().unwrap_or(if tls { 443 } else { 80 });
        let addr = std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), port))
            .map_err(|e| TargetError::Resolve { host: host.clone(), message: e.to_string() })?
            .next()
            .ok_or_else(|| TargetError::Resolve { host: host.clone(), message: "no addresses".into() })?;
        let path = uri.path_and_query().cloned().unwrap_or_else(|| PathAndQuery::from_static("/"));
        Ok(Target { tls, host, authority, path, addr, uri })
    }
}

impl Target {
    /// `path` on the target as a full URL: http(s), or ws(s) for a WebSocket.
    pub(crate) fn url_of(&self, path: &str, websocket: bool) -> String {
        let scheme = match (websocket, self.tls) {
            (false, false) => "http",
            (false, true) => "https",
            (true, false) => "ws",
            (true, true) => "wss",
        };
        format!("{scheme}://{}{path}", self.authority)
    }
}

/// Connects once (and completes the TLS handshake for https) to show the target answers.
pub fn preflight(target: &Target, tls: &TlsOptions, timeout: Duration) -> Result<(), TargetError> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let unreachable = |message: String| TargetError::Unreachable {
        url: target.uri.to_string(),
        addr: target.addr,
        message,
    };
    tokio::task::LocalSet::new().block_on(&rt, async {
        let config = if target.tls { tls.client_config(false).map_err(&unreachable)? } else { None };
        let attempt = crate::client::connect(target, config.as_ref());
        match tokio::time::timeout(timeout, attempt).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(unreachable(e.message)),
            Err(_) => Err(unreachable(format!("no connection within {}s", timeout.as_secs_f64()))),
        }
    })
}
