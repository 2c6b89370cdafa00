//! What can go wrong outside a request's own outcome: a target that cannot be used, a
//! connection that cannot be opened, a TLS set-up or a request that cannot be built, a
//! scrape that fails.
//!
//! The connection and response variants are short (`connect: …`, `tls: …`): a VU's
//! failure carries their text into the run's error counts, once per failed request. The
//! variants a person meets before a run starts say what to do next.
//!
//! Each message already contains the cause's text, so no variant names a `source`:
//! a caller printing the chain (`{:#}`) would otherwise show it twice.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// An engine failure.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
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
        "{url} failed the TLS handshake ({addr}): {message}. Does the server speak TLS on that port? If its certificate is the trouble, give --cacert with its CA (PEM), or --insecure"
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
    /// `--source-addrs` is not a list of usable local addresses.
    #[error("--source-addrs {0}")]
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
    /// The `--cacert` file cannot be used.
    #[error("--cacert {}: {message}", path.display())]
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
        "`{0}` carries user information (`user:password@`), which volley does not send from a URL; drop it from the URL and send an `Authorization: Basic <base64 of user:password>` header instead (-H, or `headers:` in a scenario)"
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
impl From<EngineError> for String {
    /// For the flow's own step failures, which travel as messages.
    fn from(e: EngineError) -> String {
        e.to_string()
    }
}
