//! Who may use the dashboard: on a loopback address anyone on this machine; on any other
//! address only who has the random token printed in the URL (`?token=…`, or
//! `Authorization: Bearer …` for scrapers). Kept apart from the routes so that the rule is
//! one function every request, extra routes included, goes through.

use std::net::SocketAddr;

use axum::extract::Request;
use axum::http::{StatusCode, header};
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

/// Middleware: 403 with a short explanation for a request without the token.
pub(crate) async fn guard(
    access: axum::extract::State<Access>,
    request: Request,
    next: Next,
) -> Response {
    if access.admits(&request) {
        return next.run(request).await;
    }
    (StatusCode::FORBIDDEN, "volley dashboard: this address needs the access token printed when the dashboard started (?token=... in the URL, or Authorization: Bearer TOKEN)\n")
        .into_response()
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
}
