//! Who may use the dashboard: on a loopback address anyone on this machine; on any other
//! address only who has the random token printed in the URL (`?token=…`, or
//! `Authorization: Bearer …` for scrapers). Kept apart from the routes so that the rule is
//! one function every request, extra routes included, goes through.

use std::net::SocketAddr;

use axum::extract::Request;
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The access rule of a dashboard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// No token: only allowed on a loopback address.
    Open,
    /// Every request must carry this token.
    Token(String),
}

impl Access {
    /// The rule for `addr`: open on loopback, a fresh random token (122 bits from the
    /// operating system's generator) anywhere else.
    pub fn for_addr(addr: SocketAddr) -> Access {
        if addr.ip().is_loopback() {
            Access::Open
        } else {
            Access::random()
        }
    }

    /// A fresh random token.
    pub fn random() -> Access {
        Access::Token(uuid::Uuid::new_v4().simple().to_string())
    }

    /// The token, when there is one.
    pub fn token(&self) -> Option<&str> {
        match self {
            Access::Open => None,
            Access::Token(t) => Some(t),
        }
    }

    /// `?token=…` to append to the dashboard's URLs (empty when open).
    pub fn query(&self) -> String {
        self.token()
            .map(|t| format!("?token={t}"))
            .unwrap_or_default()
    }

    /// Whether `request` may pass.
    fn admits(&self, request: &Request) -> bool {
        let Some(token) = self.token() else {
            return true;
        };
        let from_query = request
            .uri()
            .query()
            .into_iter()
            .flat_map(|q| q.split('&'))
            .filter_map(|kv| kv.strip_prefix("token="))
            .any(|given| same(given, token));
        let from_header = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|given| same(given.trim(), token));
        from_query || from_header
    }
}

/// Compares without stopping at the first difference, so that response times do not tell
/// how much of a guess was right.
fn same(given: &str, token: &str) -> bool {
    given.len() == token.len()
        && given
            .bytes()
            .zip(token.bytes())
            .fold(0u8, |d, (a, b)| d | (a ^ b))
            == 0
}

/// What every request must pass: the access rule, and on loopback (where there is no
/// token) the names the dashboard is reached by.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    pub(crate) access: Access,
    /// Host names a loopback dashboard answers, on any port (a tunnel such as `ssh -L` or
    /// `kubectl port-forward` reaches it on another): `localhost` and loopback literals. A page
    /// of another site that rebinds its own name to 127.0.0.1 sends that name, and is refused.
    pub(crate) names: Vec<String>,
}

impl Guard {
    /// The guard of a dashboard bound to `bound` under `access`.
    pub(crate) fn new(access: Access, bound: SocketAddr) -> Guard {
        let mut names = vec![
            "localhost".to_string(),
            "127.0.0.1".to_string(),
            "[::1]".to_string(),
        ];
        let own = match bound.ip() {
            std::net::IpAddr::V6(ip) => format!("[{ip}]"),
            ip => ip.to_string(),
        };
        if !names.contains(&own) {
            names.push(own);
        }
        Guard { access, names }
    }

    /// The authority a request was sent to: `Host`, or the URI's (HTTP/2), lower case.
    fn authority(request: &Request) -> Option<String> {
        request
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(str::to_string)
            .or_else(|| request.uri().authority().map(|a| a.as_str().to_string()))
            .map(|h| h.to_ascii_lowercase())
    }

    /// The host of an authority, without its port: `[::1]:8089` → `[::1]`.
    fn host_of(authority: &str) -> &str {
        match authority.rfind(':') {
            Some(i) if !authority[i..].contains(']') => &authority[..i],
            _ => authority,
        }
    }

    /// Why `request` may not pass, or `None`.
    fn refuses(&self, request: &Request) -> Option<&'static str> {
        if !self.access.admits(request) {
            return Some(
                "this address needs the access token printed when the dashboard started (?token=... in the URL, or Authorization: Bearer TOKEN)",
            );
        }
        let sent_to = Self::authority(request);
        let named = sent_to.as_deref().map(Self::host_of);
        if self.access == Access::Open && !named.is_some_and(|h| self.names.iter().any(|n| n == h))
        {
            return Some(
                "the Host header is not this dashboard's address; open it as http://127.0.0.1:PORT/ or http://localhost:PORT/ (a page of another site that resolves its name to this machine is refused)",
            );
        }
        if !matches!(*request.method(), Method::GET | Method::HEAD) {
            // A control. A browser sends a "simple" cross-site request (a form, or
            // text/plain) without asking first; one with a JSON body it sends only after a
            // preflight this server never grants. And when it says where it comes from, that
            // must be here.
            let json = request
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| {
                    v.split(';')
                        .next()
                        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
                });
            if !json {
                return Some(
                    "controls take a JSON body: send them with Content-Type: application/json (e.g. curl -X POST -H 'Content-Type: application/json' -d '{}' URL/stop)",
                );
            }
            let cross_site = request
                .headers()
                .get("sec-fetch-site")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.eq_ignore_ascii_case("cross-site"));
            let origin_elsewhere = request
                .headers()
                .get(header::ORIGIN)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|o| {
                    // Same origin: the Origin's authority is the one this request was sent to.
                    let o = o.to_ascii_lowercase();
                    let o = o
                        .strip_prefix("http://")
                        .or_else(|| o.strip_prefix("https://"));
                    o.is_none_or(|o| sent_to.as_deref() != Some(o))
                });
            if cross_site || origin_elsewhere {
                return Some(
                    "a control from a page of another origin is refused; use the dashboard's own page or a command line client",
                );
            }
        }
        None
    }
}

/// Middleware: 403 with a short explanation for a request the [`Guard`] refuses.
pub(crate) async fn guard(
    guard: axum::extract::State<Guard>,
    request: Request,
    next: Next,
) -> Response {
    match guard.refuses(&request) {
        None => next.run(request).await,
        Some(why) => (StatusCode::FORBIDDEN, format!("volley dashboard: {why}\n")).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(uri: &str, auth: Option<&str>) -> Request {
        let mut b = Request::builder().uri(uri);
        if let Some(a) = auth {
            b = b.header(header::AUTHORIZATION, a);
        }
        b.body(axum::body::Body::empty()).unwrap()
    }

    #[test]
    fn loopback_is_open_and_other_addresses_get_a_random_token() {
        assert_eq!(
            Access::for_addr("127.0.0.1:0".parse().unwrap()),
            Access::Open
        );
        assert_eq!(Access::for_addr("[::1]:0".parse().unwrap()), Access::Open);
        let (a, b) = (
            Access::for_addr("0.0.0.0:0".parse().unwrap()),
            Access::for_addr("0.0.0.0:0".parse().unwrap()),
        );
        assert_eq!(a.token().map(str::len), Some(32));
        assert_ne!(a, b, "every dashboard gets its own token");
    }

    #[test]
    fn a_request_passes_with_the_token_only() {
        let a = Access::Token("abc123".into());
        assert!(a.admits(&req("/events?token=abc123", None)));
        assert!(a.admits(&req("/x?a=1&token=abc123", None)));
        assert!(a.admits(&req("/metrics", Some("Bearer abc123"))));
        assert!(!a.admits(&req("/", None)));
        assert!(!a.admits(&req("/?token=abc124", None)));
        assert!(!a.admits(&req("/?token=abc1234", None)));
        assert!(!a.admits(&req("/", Some("Bearer nope"))));
        assert!(Access::Open.admits(&req("/", None)));
    }

    fn request(method: &str, host: Option<&str>, headers: &[(&str, &str)]) -> Request {
        let mut b = Request::builder().method(method).uri("/stop");
        if let Some(h) = host {
            b = b.header(header::HOST, h);
        }
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(axum::body::Body::empty()).unwrap()
    }

    #[test]
    fn loopback_answers_its_own_names_and_controls_only_as_json_from_here() {
        let g = Guard::new(Access::Open, "127.0.0.1:8080".parse().unwrap());
        let json = [("content-type", "application/json")];
        assert_eq!(
            g.refuses(&request("GET", Some("127.0.0.1:8080"), &[])),
            None
        );
        assert_eq!(
            g.refuses(&request("GET", Some("LOCALHOST:8080"), &[])),
            None
        );
        // DNS rebinding: another site's name, or no Host at all.
        // Another port is the dashboard through a tunnel; a bare name is port 80.
        assert_eq!(
            g.refuses(&request("GET", Some("127.0.0.1:9999"), &[])),
            None
        );
        assert_eq!(g.refuses(&request("GET", Some("localhost"), &[])), None);
        assert_eq!(g.refuses(&request("GET", Some("[::1]:8080"), &[])), None);
        for host in [
            Some("evil.example:8080"),
            Some("evil.example"),
            Some("127.0.0.1.evil.example:8080"),
            None,
        ] {
            let why = g.refuses(&request("GET", host, &[])).unwrap();
            assert!(why.contains("Host"), "{why}");
        }
        assert_eq!(
            g.refuses(&request("POST", Some("127.0.0.1:8080"), &json)),
            None
        );
        assert_eq!(
            g.refuses(&request(
                "POST",
                Some("127.0.0.1:8080"),
                &[
                    ("content-type", "application/json; charset=utf-8"),
                    ("origin", "http://127.0.0.1:8080")
                ]
            )),
            None
        );
        // Simple requests a page of any site can send.
        for ct in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data",
        ] {
            let why = g
                .refuses(&request(
                    "POST",
                    Some("127.0.0.1:8080"),
                    &[("content-type", ct)],
                ))
                .unwrap();
            assert!(why.contains("application/json"), "{ct}: {why}");
        }
        assert!(
            g.refuses(&request("POST", Some("127.0.0.1:8080"), &[]))
                .is_some()
        );
        // JSON, but from another origin.
        for h in [
            ("origin", "http://evil.example"),
            ("sec-fetch-site", "cross-site"),
            ("origin", "null"),
        ] {
            let why = g
                .refuses(&request("POST", Some("127.0.0.1:8080"), &[json[0], h]))
                .unwrap();
            assert!(why.contains("another origin"), "{h:?}: {why}");
        }
        // A token dashboard on another address is reached by names of its own.
        let t = Guard::new(Access::Token("abc".into()), "0.0.0.0:8080".parse().unwrap());
        let r = Request::builder()
            .uri("/?token=abc")
            .header(header::HOST, "loadgen.internal:8080")
            .body(axum::body::Body::empty())
            .unwrap();
        assert_eq!(t.refuses(&r), None);
    }
}
