//! The target: a parsed URL and its resolved address.

use std::net::SocketAddr;

use http::Uri;
use http::uri::{Authority, PathAndQuery, Scheme};

use crate::error::EngineError;

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

impl Target {
    /// Parses and resolves `url`.
    pub fn resolve(url: &str) -> Result<Target, EngineError> {
        let uri: Uri = url.parse().map_err(|_| EngineError::BadUrl(url.to_string()))?;
        let tls = match uri.scheme() {
            Some(s) if *s == Scheme::HTTP => false,
            Some(s) if *s == Scheme::HTTPS => true,
            _ => return Err(EngineError::BadUrl(url.to_string())),
        };
        let authority = uri.authority().cloned().ok_or_else(|| EngineError::BadUrl(url.to_string()))?;
        let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_string();
        // The `http` crate reads a port that does not fit as no port at all: read it from
        // the text, so that `:99999` is an error, never port 80 and a different server.
        let written = authority.as_str().rsplit_once(']').map_or(authority.as_str(), |(_, rest)| rest).rsplit_once(':').map(|(_, p)| p);
        let port = match written {
            None | Some("") => if tls { 443 } else { 80 },
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => n,
                _ => return Err(EngineError::BadPort { url: url.to_string(), port: p.to_string() }),
            },
        };
        let addr = std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), port))
            .map_err(|e| EngineError::Resolve { host: host.clone(), message: e.to_string() })?
            .next()
            .ok_or_else(|| EngineError::Resolve { host: host.clone(), message: "no addresses".into() })?;
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
