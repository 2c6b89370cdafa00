//! The crate's one error type, shaped as hyper's: an [`Error`] whose [`Kind`] the caller asks
//! about (`kind()`, `is_unreachable()`, `is_tls_handshake()`), and a message that says what
//! happened in the engine's terms; the binary adds which flag to change.
//!
//! What can go wrong outside a request's own outcome: a target that cannot be used, a
//! connection that cannot be opened, a TLS set-up or a request that cannot be built, a
//! scrape that fails.
//!
//! The connection and response errors are short (`connect: …`, `tls: …`): a VU's
//! failure carries their text into the run's error counts, once per failed request. The
//! errors a person meets before a run starts say what is wrong.
//!
//! Each message already contains the cause's text, so no variant names a `source`:
//! a caller printing the chain (`{:#}`) would otherwise show it twice.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// An engine failure: what went wrong is its [`kind()`](Error::kind).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Error(#[from] pub(crate) Repr);

/// The engine's result.
pub type Result<T> = std::result::Result<T, Error>;

/// What went wrong, for callers that branch on it.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A live change of a running plan could not be made.
    Control,
    /// The URL cannot be used: not absolute http(s), or a port out of range.
    Url,
    /// The URL names a user (`user:password@host`), which is not sent from a URL: the
    /// credentials belong in an `Authorization` header.
    UserInfo,
    /// The host name did not resolve.
    Resolve,
    /// Nothing answered on the target's address before the run started.
    Unreachable,
    /// The server answered but the TLS handshake failed before the run started (it does not
    /// speak TLS on that port, or its certificate is not one this client trusts).
    TlsHandshake,
    /// The TCP connection could not be opened.
    Connect,
    /// The local source addresses are not a list of usable addresses of this machine.
    SourceAddrs,
    /// The TLS handshake failed, or the host is no name a certificate can be checked against.
    Tls,
    /// The CA certificate file cannot be used.
    CaCert,
    /// rustls refused the TLS configuration.
    TlsSetup,
    /// A request cannot be built (method, header, path).
    Request,
    /// The socket failed while writing or reading.
    Io,
    /// A thread or a runtime could not be started.
    Start,
    /// A plan without a scenario was given to check.
    NoScenario,
    /// A scenario iteration could not go on (test data ran out).
    Halted,
    /// The response is not HTTP, broke off, or its body is not the text expected.
    Response,
    /// The server answered with another status than expected.
    Status,
    /// A `grpc:` step cannot be called as written.
    Grpc,
    /// Nothing complete came back in time.
    Timeout,
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> Kind {
        match &self.0 {
            Repr::Control(_) => Kind::Control,
            Repr::BadUrl(_) | Repr::BadPort { .. } => Kind::Url,
            Repr::UserInfo(_) => Kind::UserInfo,
            Repr::Resolve { .. } => Kind::Resolve,
            Repr::Unreachable { .. } => Kind::Unreachable,
            Repr::TlsRejected { .. } => Kind::TlsHandshake,
            Repr::Connect(_) => Kind::Connect,
            Repr::SourceAddrs(_) => Kind::SourceAddrs,
            Repr::ServerName(_) | Repr::Tls(_) => Kind::Tls,
            Repr::CaCert { .. } => Kind::CaCert,
            Repr::TlsConfig(_) => Kind::TlsSetup,
            Repr::Method(_) | Repr::HeaderName(_) | Repr::HeaderValue(_) | Repr::Path(_) => {
                Kind::Request
            }
            Repr::Io { .. } => Kind::Io,
            Repr::Start { .. } => Kind::Start,
            Repr::NoScenario => Kind::NoScenario,
            Repr::Halted(_) => Kind::Halted,
            Repr::NotHttp | Repr::Response(_) | Repr::NotUtf8 => Kind::Response,
            Repr::Status(_) => Kind::Status,
            Repr::Grpc(_) => Kind::Grpc,
            Repr::NoAnswer(_) => Kind::Timeout,
        }
    }

    /// Nothing answered on the target's address before the run started.
    pub fn is_unreachable(&self) -> bool {
        self.kind() == Kind::Unreachable
    }

    /// The target's host name did not resolve.
    pub fn is_resolve(&self) -> bool {
        self.kind() == Kind::Resolve
    }

    /// The TLS handshake failed before the run started.
    pub fn is_tls_handshake(&self) -> bool {
        self.kind() == Kind::TlsHandshake
    }

    /// The URL cannot be used.
    pub fn is_url(&self) -> bool {
        self.kind() == Kind::Url
    }

    /// Nothing complete came back in time.
    pub fn is_timeout(&self) -> bool {
        self.kind() == Kind::Timeout
    }
}

/// The engine's failures, each with its message.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Repr {
    /// A live change of a running plan that cannot be made; the text says why.
    #[error("cannot change the run: {0}")]
    Control(String),
    /// The URL is not an absolute http(s) URL.
    #[error("`{0}` is not an absolute http:// or https:// URL")]
    BadUrl(String),
    /// The host name did not resolve.
    #[error(
        "cannot resolve `{host}`: {message}. Check the host name in the URL, or give an IP address"
    )]
    Resolve {
        /// The host.
        host: String,
        /// What the resolver said.
        message: String,
    },
    /// Nothing answered on the address before the run started.
    #[error(
        "{url} does not answer ({addr}): {message}. Is the server running and listening there?"
    )]
    Unreachable {
        /// The URL.
        url: String,
        /// The address tried.
        addr: SocketAddr,
        /// What failed.
        message: String,
    },
    /// The server answered, but its TLS handshake failed before the run started.
    #[error(
        "{url} failed the TLS handshake ({addr}): {message}. Does the server speak TLS on that port, with a certificate this client trusts?"
    )]
    TlsRejected {
        /// The URL.
        url: String,
        /// The address tried.
        addr: SocketAddr,
        /// What the handshake said.
        message: String,
    },
    /// The TCP connection could not be opened.
    #[error("connect: {0}")]
    Connect(io::Error),
    /// The source addresses are not a list of usable local addresses.
    #[error("source addresses {0}")]
    SourceAddrs(String),
    /// The host is no name a certificate can be checked against.
    #[error("tls: bad server name: {0}")]
    ServerName(rustls::pki_types::InvalidDnsNameError),
    /// The TLS handshake failed.
    #[error("tls: {0}")]
    Tls(io::Error),
    /// rustls refused the TLS configuration.
    #[error("TLS set-up: {0}")]
    TlsConfig(rustls::Error),
    /// The CA certificate file cannot be used.
    #[error("CA certificate file {}: {message}", path.display())]
    CaCert {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// A request's method is no HTTP method.
    #[error("bad method `{0}`")]
    Method(String),
    /// A request header's name is no header name.
    #[error("bad header name `{0}`")]
    HeaderName(String),
    /// A request header's value cannot be sent.
    #[error("header `{0}`: the value has characters a header cannot carry")]
    HeaderValue(String),
    /// A request's path is no URL path.
    #[error("`{0}` is not a valid URL path")]
    Path(String),
    /// The socket failed while writing or reading (`stage`).
    #[error("{stage}: {error}")]
    Io {
        /// `write` or `read`.
        stage: &'static str,
        /// What the socket said.
        error: io::Error,
    },
    /// The URL names a user (`user:password@host`), which an HTTP request cannot carry in
    /// its host: sent as written it would put the credentials in `Host`.
    #[error(
        "`{0}` carries user information (`user:password@`), which volley does not send from a URL; drop it from the URL and send an `Authorization: Basic <base64 of user:password>` header instead"
    )]
    UserInfo(String),
    /// The URL's port is not one a socket can have.
    #[error("`{url}`: port {port} is not a port; ports run from 1 to 65535")]
    BadPort {
        /// The URL.
        url: String,
        /// The port as written.
        port: String,
    },
    /// The engine could not start a thread or a runtime.
    #[error("cannot start {what}: {error}")]
    Start {
        /// What: a worker thread, the conductor, a runtime.
        what: &'static str,
        /// What the system said.
        error: io::Error,
    },
    /// `volley check` was asked to check a plan without a scenario.
    #[error("there is no scenario to check")]
    NoScenario,
    /// A scenario iteration could not go on (test data ran out).
    #[error("{0}")]
    Halted(String),
    /// The server's answer does not start with an HTTP response head.
    #[error("not an HTTP response")]
    NotHttp,
    /// The response broke off or broke HTTP/1.1's framing (what the reader found).
    #[error("{0}")]
    Response(String),
    /// The server answered with another status than expected.
    #[error("HTTP {0}")]
    Status(u16),
    /// The body was expected to be text.
    #[error("the body is not UTF-8")]
    NotUtf8,
    /// A `grpc:` step cannot be called as written (reflection found no such service, method
    /// or field; the server offers no reflection): what is wrong and what to write.
    #[error("{0}")]
    Grpc(String),
    /// Nothing complete came back in time.
    #[error("no answer within {}s", .0.as_secs_f64())]
    NoAnswer(Duration),
}

/// For callers that still carry errors as text (the run's set-up, a scenario step).
impl From<Error> for String {
    /// For the flow's own step failures, which travel as messages.
    fn from(e: Error) -> String {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Kind;
    use crate::{SourceAddrs, Target, TlsOptions, preflight};

    #[test]
    fn a_closed_port_is_unreachable() {
        // A port just freed: nothing listens there.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let target = Target::resolve(&format!("http://127.0.0.1:{port}/")).unwrap();
        let e = preflight(&target, &TlsOptions::default(), Duration::from_secs(5)).unwrap_err();
        assert_eq!(e.kind(), Kind::Unreachable, "{e}");
        assert!(e.is_unreachable() && !e.is_tls_handshake());
        assert!(e.to_string().contains("does not answer"), "{e}");
    }

    #[test]
    fn bad_source_addresses_say_what_is_wrong_without_a_flag() {
        let e = SourceAddrs::parse("127.0.0.9-127.0.0.1").unwrap_err();
        assert_eq!(e.kind(), Kind::SourceAddrs);
        assert!(
            e.to_string()
                .starts_with("source addresses `127.0.0.9-127.0.0.1`"),
            "{e}"
        );
        assert!(!e.to_string().contains("--"), "{e}");
    }
}
