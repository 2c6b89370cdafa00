//! One virtual user's connection: TCP (+ TLS) set-up with phase timings, an HTTP/1.1 or
//! HTTP/2 handshake, and requests timed from their actual start to the end of the body.

use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{HOST, HeaderMap, HeaderValue, USER_AGENT};
use http::{Method, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::TokioIo;
use rustls::ClientConfig;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use volley_stats::ErrorKind;

use crate::target::Target;
use crate::timed_io::{FirstByte, TimedIo};

/// A failed request: its kind and what happened.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub(crate) kind: ErrorKind,
    pub(crate) message: String,
}

impl Failure {
    fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Failure { kind, message: message.into() }
    }

    fn io(stage: &str, e: &std::io::Error) -> Self {
        use std::io::ErrorKind as K;
        let kind = match e.kind() {
            K::ConnectionRefused | K::AddrNotAvailable | K::NotFound | K::HostUnreachable | K::NetworkUnreachable => {
                ErrorKind::Connect
            }
            K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof => ErrorKind::Reset,
            K::TimedOut => ErrorKind::Timeout,
            _ if e.get_ref().is_some_and(|inner| inner.is::<rustls::Error>()) => ErrorKind::Tls,
            _ => ErrorKind::Protocol,
        };
        Failure::new(kind, format!("{stage}: {e}"))
    }

    fn hyper(e: &hyper::Error) -> Self {
        let kind = if e.is_canceled() || e.is_closed() || e.is_incomplete_message() {
            ErrorKind::Reset
        } else if e.is_timeout() {
            ErrorKind::Timeout
        } else if let Some(io) = std::error::Error::source(e).and_then(|s| s.downcast_ref::<std::io::Error>()) {
            return Failure::io("response", io);
        } else {
            ErrorKind::Protocol
        };
        Failure::new(kind, format!("response: {e}"))
    }
}

enum Sender {
    H1(http1::SendRequest<Full<Bytes>>),
    H2(http2::SendRequest<Full<Bytes>>),
}

/// An open connection and its first-byte clock.
pub(crate) struct Connection {
    sender: Sender,
    first_byte: Rc<FirstByte>,
}

impl Connection {
    fn is_closed(&self) -> bool {
        match &self.sender {
            Sender::H1(s) => s.is_closed(),
            Sender::H2(s) => s.is_closed(),
        }
    }
}

/// What it took to open a connection, µs.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ConnectTimes {
    pub(crate) tcp_us: u64,
    pub(crate) tls_us: u64,
}

/// Opens a connection to `target`, with TLS when `tls` is given (and the URL is https).
pub(crate) async fn connect(
    target: &Target,
    tls: Option<&Arc<ClientConfig>>,
) -> Result<(Connection, ConnectTimes), Failure> {
    connect_with(target, tls, false).await
}

async fn connect_with(
    target: &Target,
    tls: Option<&Arc<ClientConfig>>,
    force_h2: bool,
) -> Result<(Connection, ConnectTimes), Failure> {
    let t0 = Instant::now();
    let tcp = TcpStream::connect(target.addr).await.map_err(|e| Failure::io("connect", &e))?;
    let _ = tcp.set_nodelay(true);
    let t1 = Instant::now();
    let mut times = ConnectTimes { tcp_us: micros(t1 - t0), tls_us: 0 };
    match (target.tls, tls) {
        (true, Some(config)) => {
            let name = rustls::pki_types::ServerName::try_from(target.host.clone())
                .map_err(|e| Failure::new(ErrorKind::Tls, format!("tls: bad server name: {e}")))?;
            let stream = TlsConnector::from(config.clone())
                .connect(name, tcp)
                .await
                .map_err(|e| Failure::new(ErrorKind::Tls, format!("tls: {e}")))?;
            times.tls_us = micros(t1.elapsed());
            let h2 = force_h2 || stream.get_ref().1.alpn_protocol() == Some(b"h2");
            Ok((handshake(stream, h2).await?, times))
        }
        _ => Ok((handshake(tcp, force_h2).await?, times)),
    }
}

async fn handshake<S>(stream: S, h2: bool) -> Result<Connection, Failure>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + 'static,
{
    let (io, first_byte) = TimedIo::new(stream);
    let io = TokioIo::new(io);
    let sender = if h2 {
        let (sender, conn) = http2::handshake(LocalExec, io).await.map_err(|e| Failure::hyper(&e))?;
        tokio::task::spawn_local(conn);
        Sender::H2(sender)
    } else {
        let (sender, conn) = http1::handshake(io).await.map_err(|e| Failure::hyper(&e))?;
        tokio::task::spawn_local(conn);
        Sender::H1(sender)
    };
    Ok(Connection { sender, first_byte })
}

/// Runs HTTP/2 connection tasks on the current thread's event loop.
#[derive(Clone, Copy)]
struct LocalExec;

impl<F: Future + 'static> hyper::rt::Executor<F> for LocalExec {
    fn execute(&self, fut: F) {
        tokio::task::spawn_local(fut);
    }
}

/// The request every iteration sends, built once.
#[derive(Debug, Clone)]
pub(crate) struct PreparedRequest {
    method: Method,
    path_uri: Uri,
    full_uri: Uri,
    headers: HeaderMap,
    body: Bytes,
}

impl PreparedRequest {
    pub(crate) fn new(target: &Target, spec: &volley_scenario::RequestSpec) -> Result<Self, String> {
        let method = Method::from_bytes(spec.method.as_bytes()).map_err(|_| format!("bad method `{}`", spec.method))?;
        let mut headers = HeaderMap::new();
        headers.insert(HOST, HeaderValue::from_str(target.authority.as_str()).map_err(|e| e.to_string())?);
        headers.insert(USER_AGENT, HeaderValue::from_static(concat!("volley/", env!("CARGO_PKG_VERSION"))));
        for (n, v) in &spec.headers {
            let name = http::HeaderName::from_bytes(n.as_bytes()).map_err(|_| format!("bad header name `{n}`"))?;
            let value = HeaderValue::from_str(v).map_err(|_| format!("bad value for header `{n}`"))?;
            headers.insert(name, value);
        }
        Ok(PreparedRequest {
            method,
            path_uri: Uri::from(target.path.clone()),
            full_uri: target.uri.clone(),
            headers,
            body: Bytes::from(spec.body.clone()),
        })
    }

    fn build(&self, h2: bool) -> Request<Full<Bytes>> {
        let mut req = Request::new(Full::new(self.body.clone()));
        *req.method_mut() = self.method.clone();
        *req.headers_mut() = self.headers.clone();
        if h2 {
            *req.uri_mut() = self.full_uri.clone();
            req.headers_mut().remove(HOST);
        } else {
            *req.uri_mut() = self.path_uri.clone();
        }
        req
    }
}

/// One completed exchange (any status), µs from the actual start.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Exchange {
    pub(crate) status: u16,
    pub(crate) ttfb_us: u64,
    pub(crate) total_us: u64,
    pub(crate) connect_us: u64,
    pub(crate) tls_us: u64,
    /// Open model: how long after its due time the request was actually sent, µs.
    pub(crate) queued_us: u64,
    pub(crate) bytes: u64,
    /// A new connection was opened although this VU had one before.
    pub(crate) reconnected: bool,
}

/// A VU's connection slot and what it needs to (re)open it.
pub(crate) struct Client {
    target: Target,
    tls: Option<Arc<ClientConfig>>,
    force_h2: bool,
    conn: Option<Connection>,
    opened_before: bool,
}

impl Client {
    pub(crate) fn new(target: Target, tls: Option<Arc<ClientConfig>>, force_h2: bool) -> Self {
        Client { target, tls, force_h2, conn: None, opened_before: false }
    }

    /// Sends `req`, opening a connection first if needed; the whole exchange is bounded by
    /// `timeout`. A failure drops the connection so the next request reconnects.
    pub(crate) async fn send(&mut self, req: &PreparedRequest, timeout: Duration) -> Result<Exchange, Failure> {
        let start = Instant::now();
        let result = tokio::time::timeout(timeout, self.exchange(req, start)).await;
        let out = match result {
            Ok(r) => r,
            Err(_) => Err(Failure::new(ErrorKind::Timeout, format!("no complete response within {}s", timeout.as_secs_f64()))),
        };
        if out.is_err() {
            self.conn = None;
        }
        out
    }

    async fn exchange(&mut self, req: &PreparedRequest, start: Instant) -> Result<Exchange, Failure> {
        let (mut connect_us, mut tls_us) = (0, 0);
        let mut reconnected = false;
        if self.conn.as_ref().is_none_or(Connection::is_closed) {
            let (conn, times) = connect_with(&self.target, self.tls.as_ref(), self.force_h2).await?;
            connect_us = times.tcp_us + times.tls_us;
            tls_us = times.tls_us;
            reconnected = self.opened_before;
            self.opened_before = true;
            self.conn = Some(conn);
        }
        let conn = self.conn.as_mut().expect("connection just ensured");
        let (response, h2) = match &mut conn.sender {
            Sender::H1(s) => {
                s.ready().await.map_err(|e| Failure::hyper(&e))?;
                (s.send_request(req.build(false)).await, false)
            }
            Sender::H2(s) => {
                s.ready().await.map_err(|e| Failure::hyper(&e))?;
                (s.send_request(req.build(true)).await, true)
            }
        };
        let response = response.map_err(|e| Failure::hyper(&e))?;
        let headers_at = Instant::now();
        // HTTP/2 shares the socket with control frames, so the head's arrival is its first byte.
        let first = if h2 { headers_at } else { conn.first_byte.take().unwrap_or(headers_at) };
        let status = response.status().as_u16();
        let mut body = response.into_body();
        let mut bytes = 0u64;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| Failure::hyper(&e))?;
            if let Some(data) = frame.data_ref() {
                bytes += data.len() as u64;
            }
        }
        let end = Instant::now();
        Ok(Exchange {
            status,
            ttfb_us: micros(first.saturating_duration_since(start)),
            total_us: micros(end - start),
            connect_us,
            tls_us,
            queued_us: 0,
            bytes,
            reconnected,
        })
    }
}

fn micros(d: Duration) -> u64 {
    d.as_micros() as u64
}
