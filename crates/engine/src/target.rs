//! The target: a parsed URL and its resolved address, and the local addresses connections
//! to it leave from.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use http::Uri;
use http::uri::{Authority, PathAndQuery, Scheme};

use crate::error::{Error, Repr};

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
    /// Local addresses to connect from, taken in turn (none: the system picks).
    pub sources: SourceAddrs,
}

/// Local addresses connections leave from, in turn. One local address has one range of
/// ephemeral ports (`net.ipv4.ip_local_port_range`: ~28,000 by default), so one source can
/// hold only that many connections to one server address — and finds a free port cheaply
/// only while fewer than half are taken; several spread them (on loopback, any address in
/// 127.0.0.0/8 works without setup).
#[derive(Debug, Clone, Default)]
pub struct SourceAddrs {
    addrs: Arc<[IpAddr]>,
    next: Arc<AtomicUsize>,
}

impl SourceAddrs {
    /// Parses `127.0.0.1,127.0.0.2` or a range `127.0.0.1-127.0.0.4` (or both, comma-separated).
    pub fn parse(text: &str) -> Result<SourceAddrs, Error> {
        let bad = |why: String| {
            Repr::SourceAddrs(format!(
                "`{text}`: {why}; write addresses such as 127.0.0.1,127.0.0.2 or a range 127.0.0.1-127.0.0.4"
            ))
        };
        let ip = |s: &str| {
            s.trim()
                .parse::<IpAddr>()
                .map_err(|_| bad(format!("`{}` is not an IP address", s.trim())))
        };
        let mut addrs = Vec::new();
        for item in text.split(',').filter(|i| !i.trim().is_empty()) {
            match item.split_once('-') {
                Some((a, b)) => match (ip(a)?, ip(b)?) {
                    (IpAddr::V4(a), IpAddr::V4(b))
                        if u32::from(a) <= u32::from(b) && u32::from(b) - u32::from(a) < 65_536 =>
                    {
                        addrs.extend((u32::from(a)..=u32::from(b)).map(|n| IpAddr::V4(n.into())));
                    }
                    _ => {
                        return Err(bad(format!(
                            "`{}` is no ascending IPv4 range of at most 65,536 addresses",
                            item.trim()
                        ))
                        .into());
                    }
                },
                None => addrs.push(ip(item)?),
            }
        }
        if addrs.is_empty() {
            return Err(bad("no address".into()).into());
        }
        // An address this machine does not have fails every connection with "cannot assign
        // requested address": say so now, naming it, rather than blame the target later.
        // (127.0.0.0/8 is all this machine's; the others are bound once each, at most 256.)
        for a in addrs
            .iter()
            .filter(|a| !matches!(a, IpAddr::V4(v) if v.is_loopback()))
            .take(256)
        {
            if let Err(e) = std::net::UdpSocket::bind((*a, 0))
                && e.kind() == std::io::ErrorKind::AddrNotAvailable
            {
                return Err(Repr::SourceAddrs(format!(
                    "`{text}`: this machine has no address {a} (`ip addr` lists the ones it has); connections can only leave from an address of its own"
                )).into());
            }
        }
        Ok(SourceAddrs {
            addrs: addrs.into(),
            next: Arc::default(),
        })
    }

    /// The addresses.
    pub fn addrs(&self) -> &[IpAddr] {
        &self.addrs
    }

    /// The address the next connection leaves from; `None` when none was given.
    pub(crate) fn take(&self) -> Option<IpAddr> {
        (!self.addrs.is_empty())
            .then(|| self.addrs[self.next.fetch_add(1, Ordering::Relaxed) % self.addrs.len()])
    }
}

impl Target {
    /// Parses and resolves `url`.
    pub fn resolve(url: &str) -> Result<Target, Error> {
        let uri: Uri = url.parse().map_err(|_| Repr::BadUrl(url.to_string()))?;
        let tls = match uri.scheme() {
            Some(s) if *s == Scheme::HTTP => false,
            Some(s) if *s == Scheme::HTTPS => true,
            _ => return Err(Repr::BadUrl(url.to_string()).into()),
        };
        let authority = uri
            .authority()
            .cloned()
            .ok_or_else(|| Repr::BadUrl(url.to_string()))?;
        if let Some((_, host)) = authority.as_str().rsplit_once('@') {
            // The message shows the URL without the credentials.
            let shown = url.replacen(authority.as_str(), &format!("…@{host}"), 1);
            return Err(Repr::UserInfo(shown).into());
        }
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        // The `http` crate reads a port that does not fit as no port at all: read it from
        // the text, so that `:99999` is an error, never port 80 and a different server.
        let written = authority
            .as_str()
            .rsplit_once(']')
            .map_or(authority.as_str(), |(_, rest)| rest)
            .rsplit_once(':')
            .map(|(_, p)| p);
        let port = match written {
            None | Some("") => {
                if tls {
                    443
                } else {
                    80
                }
            }
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => n,
                _ => {
                    return Err(Repr::BadPort {
                        url: url.to_string(),
                        port: p.to_string(),
                    }
                    .into());
                }
            },
        };
        let addr = std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), port))
            .map_err(|e| Repr::Resolve {
                host: host.clone(),
                message: e.to_string(),
            })?
            .next()
            .ok_or_else(|| Repr::Resolve {
                host: host.clone(),
                message: "no addresses".into(),
            })?;
        let path = uri
            .path_and_query()
            .cloned()
            .unwrap_or_else(|| PathAndQuery::from_static("/"));
        Ok(Target {
            tls,
            host,
            authority,
            path,
            addr,
            uri,
            sources: SourceAddrs::default(),
        })
    }

    /// Connections leave from `sources`, in turn; each must be of the target's family.
    pub fn with_sources(mut self, sources: SourceAddrs) -> Result<Target, Error> {
        if let Some(a) = sources
            .addrs()
            .iter()
            .find(|a| a.is_ipv4() != self.addr.is_ipv4())
        {
            return Err(Repr::SourceAddrs(format!(
                "source address {a} is {} but the target {} is {}: give addresses of the same family",
                if a.is_ipv4() { "IPv4" } else { "IPv6" },
                self.addr,
                if self.addr.is_ipv4() { "IPv4" } else { "IPv6" }
            )).into());
        }
        self.sources = sources;
        Ok(self)
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
