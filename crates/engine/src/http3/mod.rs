//! HTTP/3, client side (issue 57 §3): QUIC by quinn (rustls with ring, as every other
//! connection's TLS) and HTTP/3 framing and QPACK by the `h3` crate.
//!
//! - A run speaks HTTP/3 when its TLS config offers `h3` alone by ALPN
//!   ([`crate::TlsOptions::http3`], `--http3`): every https connection it opens is then a
//!   QUIC connection, on UDP to the same address and port.
//! - One quinn `Endpoint` (one UDP socket) per worker thread and runtime, shared by all the
//!   connections that worker opens; a connection per VU (or per `--connections` slot, its
//!   requests then multiplexed as streams), kept open and reused, as HTTP/1.1 and HTTP/2
//!   keep theirs.
//! - 0-RTT is off: rustls's `enable_early_data` stays false and a connection is never asked
//!   for early data, so every new connection costs its full handshake and no request can be
//!   replayed.
//! - Timings are HTTP/1.1's and HTTP/2's: time to first byte at the response head, the total
//!   at the body's end; the QUIC handshake counts as the connection's set-up (`connect_us`,
//!   and `tls_us`, since the two are one exchange).

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use http::{HeaderMap, Method, Uri};
use rustls::ClientConfig;
use volley_stats::ErrorKind;

use crate::dial::{ConnectTimes, micros};
use crate::failure::Failure;
use crate::h1::{CAPTURE_LIMIT, Capture};
use crate::http2::StreamFailed;
use crate::target::Target;

/// The ALPN protocol id of HTTP/3.
pub(crate) const ALPN: &[u8] = b"h3";

/// How long a QUIC handshake may go unanswered (UDP has no "connection refused" that quinn
/// reports: a port nobody listens on is silence) before the connection fails as `connect`.
/// A request's own timeout ends it sooner when shorter.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long an open connection may stay silent before it is dropped (quinn's idle timeout;
/// a keep-alive every third of it holds an idle VU's connection open).
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// Whether connections made with `tls` speak HTTP/3: its ALPN offers `h3` alone.
pub(crate) fn offered(tls: Option<&Arc<ClientConfig>>) -> bool {
    tls.is_some_and(|c| c.alpn_protocols.len() == 1 && c.alpn_protocols[0] == ALPN)
}

/// A request's head as the `h3` crate takes it, built once per plan or templated step.
#[derive(Debug, Clone)]
pub(crate) struct H3Head {
    method: Method,
    uri: Uri,
    headers: HeaderMap,
}

impl H3Head {
    /// `method` to `uri` (scheme, authority and path become the pseudo-headers) with
    /// `headers` (without `Host`).
    pub(crate) fn new(method: Method, uri: Uri, headers: HeaderMap) -> H3Head {
        H3Head {
            method,
            uri,
            headers,
        }
    }

    fn request(&self) -> http::Request<()> {
        let mut r = http::Request::new(());
        *r.method_mut() = self.method.clone();
        *r.uri_mut() = self.uri.clone();
        *r.headers_mut() = self.headers.clone();
        r
    }
}

type SendRequest = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// An open HTTP/3 connection: a handle any number of requests may share, each a stream.
#[derive(Clone)]
pub(crate) struct H3Conn(Rc<Inner>);

struct Inner {
    send: RefCell<SendRequest>,
    quic: quinn::Connection,
    /// Set by the connection's task when the connection ended (or a request retired it).
    closed: Rc<Cell<bool>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // H3_NO_ERROR: the client is done with it.
        self.quic.close(quinn::VarInt::from_u32(0x100), b"");
    }
}

impl H3Conn {
    pub(crate) fn is_closed(&self) -> bool {
        self.0.closed.get() || self.0.quic.close_reason().is_some()
    }

    /// No more requests on it (one failed in a way that says the connection is done).
    pub(crate) fn retire(&self) {
        self.0.closed.set(true);
    }
}

thread_local! {
    /// This thread's endpoints: one per runtime (the endpoint's task runs on the runtime that
    /// made it) and address family.
    static ENDPOINTS: RefCell<Vec<(tokio::runtime::Id, bool, quinn::Endpoint)>> =
        const { RefCell::new(Vec::new()) };
}

/// This worker's endpoint for targets of `addr`'s family, made at its first connection.
fn endpoint(addr: SocketAddr) -> std::io::Result<quinn::Endpoint> {
    let id = tokio::runtime::Handle::current().id();
    let v4 = addr.is_ipv4();
    ENDPOINTS.with_borrow_mut(|eps| {
        // Endpoints of runtimes that are gone (a pre-flight check's) are of no more use.
        eps.retain(|(rt, _, _)| *rt == id);
        if let Some((_, _, e)) = eps.iter().find(|(_, f, _)| *f == v4) {
            return Ok(e.clone());
        }
        let any: SocketAddr = if v4 {
            (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let e = quinn::Endpoint::client(any)
            .map_err(|e| std::io::Error::new(e.kind(), format!("a UDP socket for QUIC: {e}")))?;
        eps.push((id, v4, e.clone()));
        Ok(e)
    })
}

/// Opens an HTTP/3 connection to `target`: the QUIC handshake (TLS 1.3 inside it, ALPN h3,
/// the URL's host name checked), then HTTP/3's control streams, whose task runs on this
/// thread's event loop until the connection ends.
pub(crate) async fn connect(
    target: &Target,
    tls: &Arc<ClientConfig>,
) -> Result<(H3Conn, ConnectTimes), Failure> {
    let t0 = Instant::now();
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls.clone())
        .map_err(|e| Failure::new(ErrorKind::Tls, format!("QUIC's TLS configuration: {e}")))?;
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    transport
        .max_idle_timeout(Some(
            quinn::IdleTimeout::try_from(IDLE_TIMEOUT).expect("30 s is a valid idle timeout"),
        ))
        .keep_alive_interval(Some(IDLE_TIMEOUT / 3));
    config.transport_config(Arc::new(transport));
    let endpoint = endpoint(target.addr).map_err(|e| Failure::io("QUIC", &e))?;
    let connecting = endpoint
        .connect_with(config, target.addr, &target.host)
        .map_err(|e| Failure::new(ErrorKind::Connect, format!("QUIC connect: {e}")))?;
    let quic = match tokio::time::timeout(HANDSHAKE_TIMEOUT, connecting).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => return Err(handshake_failure(target, e)),
        Err(_) => return Err(no_answer(target)),
    };
    let handshake_us = micros(t0.elapsed());
    let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(quic.clone()))
        .await
        .map_err(|e| connection_failure("HTTP/3 set-up", &e))?;
    let closed = Rc::new(Cell::new(false));
    let flag = closed.clone();
    tokio::task::spawn_local(async move {
        let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
        flag.set(true);
    });
    Ok((
        H3Conn(Rc::new(Inner {
            send: RefCell::new(send),
            quic,
            closed,
        })),
        ConnectTimes {
            tcp_us: 0,
            tls_us: handshake_us,
        },
    ))
}

/// The handshake got no answer in [`HANDSHAKE_TIMEOUT`].
fn no_answer(target: &Target) -> Failure {
    Failure::new(
        ErrorKind::Connect,
        format!(
            "QUIC handshake with {}: no answer within {}s — is an HTTP/3 server listening on UDP port {}? (HTTP/3 runs over UDP; a TCP port that answers says nothing about it)",
            target.addr,
            HANDSHAKE_TIMEOUT.as_secs(),
            target.addr.port()
        ),
    )
}

/// A QUIC error code in TLS's range (0x100-0x1ff: a TLS alert).
fn is_crypto(code: u64) -> bool {
    (0x100..0x200).contains(&code)
}

fn handshake_failure(target: &Target, e: quinn::ConnectionError) -> Failure {
    use quinn::ConnectionError as E;
    let kind = match &e {
        E::TimedOut => return no_answer(target),
        E::TransportError(t) if is_crypto(u64::from(t.code)) => ErrorKind::Tls,
        E::ConnectionClosed(c) if is_crypto(u64::from(c.error_code)) => ErrorKind::Tls,
        E::VersionMismatch | E::TransportError(_) | E::ConnectionClosed(_) => ErrorKind::Protocol,
        E::Reset | E::ApplicationClosed(_) => ErrorKind::Reset,
        E::LocallyClosed | E::CidsExhausted => ErrorKind::Protocol,
    };
    let hint = match &e {
        // TLS alert 120, no_application_protocol: the server took no h3.
        E::ConnectionClosed(c) if u64::from(c.error_code) == 0x178 => {
            " (the server does not offer HTTP/3: ALPN h3 refused)"
        }
        _ => "",
    };
    Failure::new(
        kind,
        format!("QUIC handshake with {}: {e}{hint}", target.addr),
    )
}

/// An `h3` connection error, by what ended it.
fn connection_failure(stage: &str, e: &h3::error::ConnectionError) -> Failure {
    use h3::error::ConnectionError as C;
    use h3::quic::ConnectionErrorIncoming as I;
    let kind = match e {
        C::Timeout { .. } | C::Remote { 0: I::Timeout, .. } => ErrorKind::Timeout,
        C::Remote {
            0: I::ApplicationClose { .. },
            ..
        } => ErrorKind::Reset,
        _ => ErrorKind::Protocol,
    };
    Failure::new(kind, format!("{stage}: {}", describe_connection(e)))
}

/// An `h3` connection error in words, with an application close's code named.
fn describe_connection(e: &h3::error::ConnectionError) -> String {
    use h3::error::ConnectionError as C;
    use h3::quic::ConnectionErrorIncoming as I;
    match e {
        C::Remote {
            0: I::ApplicationClose { error_code },
            ..
        } => format!(
            "the server closed the connection with {}",
            code_name(*error_code)
        ),
        C::Remote { 0: I::Timeout, .. } | C::Timeout { .. } => {
            "the connection timed out (no packets)".into()
        }
        e => e.to_string(),
    }
}

/// An HTTP/3 error code's name (RFC 9114 §8.1), or its number.
fn code_name(code: u64) -> String {
    let name = match code {
        0x100 => "H3_NO_ERROR",
        0x101 => "H3_GENERAL_PROTOCOL_ERROR",
        0x102 => "H3_INTERNAL_ERROR",
        0x103 => "H3_STREAM_CREATION_ERROR",
        0x104 => "H3_CLOSED_CRITICAL_STREAM",
        0x105 => "H3_FRAME_UNEXPECTED",
        0x106 => "H3_FRAME_ERROR",
        0x107 => "H3_EXCESSIVE_LOAD",
        0x108 => "H3_ID_ERROR",
        0x109 => "H3_SETTINGS_ERROR",
        0x10a => "H3_MISSING_SETTINGS",
        0x10b => "H3_REQUEST_REJECTED",
        0x10c => "H3_REQUEST_CANCELLED",
        0x10d => "H3_REQUEST_INCOMPLETE",
        0x10e => "H3_MESSAGE_ERROR",
        0x10f => "H3_CONNECT_ERROR",
        0x110 => "H3_VERSION_FALLBACK",
        0x200 => "QPACK_DECOMPRESSION_FAILED",
        0x201 => "QPACK_ENCODER_STREAM_ERROR",
        0x202 => "QPACK_DECODER_STREAM_ERROR",
        _ => return format!("error code {code:#x}"),
    };
    format!("{name} ({code:#x})")
}

/// A failed stream: its kind, and whether the request may go once more on a new connection
/// (the server refused it unprocessed: GOAWAY, H3_REQUEST_REJECTED, or a connection that
/// was already gone when the stream was to open).
fn stream_failure(e: h3::error::StreamError, opened: bool) -> StreamFailed {
    use h3::error::StreamError as S;
    let (kind, message, retry) = match &e {
        S::RemoteTerminate { code, .. } => (
            ErrorKind::StreamReset,
            format!(
                "stream reset by the server with {}",
                code_name(code.value())
            ),
            code.value() == 0x10b,
        ),
        S::StreamError { code, reason, .. } => (
            ErrorKind::Protocol,
            format!("HTTP/3 stream error {}: {reason}", code_name(code.value())),
            false,
        ),
        S::RemoteClosing { .. } => (
            ErrorKind::GoAway,
            "the server is closing the connection (GOAWAY)".to_string(),
            true,
        ),
        S::HeaderTooBig {
            actual_size,
            max_size,
            ..
        } => (
            ErrorKind::Protocol,
            format!("a header section of {actual_size} bytes, over the limit of {max_size}"),
            false,
        ),
        S::ConnectionError { 0: c, .. } => {
            let f = connection_failure("HTTP/3 connection", c);
            (f.kind, f.message, !opened)
        }
        e => (ErrorKind::Protocol, format!("HTTP/3: {e}"), false),
    };
    StreamFailed {
        failure: Failure::new(kind, message),
        retry,
    }
}

/// One finished request: its status, when its head came, and its body's length.
pub(crate) struct Done {
    pub(crate) status: u16,
    pub(crate) first: Instant,
    pub(crate) bytes: u64,
}

/// Sends one request as a stream on `conn` and reads the whole response, keeping its
/// headers and body in `capture` when asked.
pub(crate) async fn exchange(
    conn: &H3Conn,
    head: &H3Head,
    body: &Bytes,
    mut capture: Option<&mut Capture>,
) -> Result<Done, StreamFailed> {
    if conn.is_closed() {
        return Err(StreamFailed {
            failure: Failure::new(ErrorKind::Reset, "the HTTP/3 connection had ended"),
            retry: true,
        });
    }
    // The handle is cloned (a few reference counts) so that no borrow is held across an
    // await while other VUs open streams on the same connection.
    let mut send = conn.0.send.borrow().clone();
    let mut stream = send
        .send_request(head.request())
        .await
        .map_err(|e| stream_failure(e, false))?;
    drop(send);
    if !body.is_empty() {
        stream
            .send_data(body.clone())
            .await
            .map_err(|e| stream_failure(e, true))?;
    }
    stream.finish().await.map_err(|e| stream_failure(e, true))?;
    let response = stream
        .recv_response()
        .await
        .map_err(|e| stream_failure(e, true))?;
    let first = Instant::now();
    let want_body = match capture.as_deref_mut() {
        Some(c) => {
            c.clear();
            if c.headers_wanted() {
                c.headers.extend(response.headers().iter().map(|(n, v)| {
                    (
                        n.as_str().to_string(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                }));
            }
            true
        }
        None => false,
    };
    let mut bytes = 0u64;
    while let Some(mut chunk) = stream
        .recv_data()
        .await
        .map_err(|e| stream_failure(e, true))?
    {
        let n = chunk.remaining();
        bytes += n as u64;
        if let Some(c) = capture.as_deref_mut().filter(|_| want_body) {
            while chunk.has_remaining() && c.body.len() < CAPTURE_LIMIT {
                let part = chunk.chunk();
                let take = part.len().min(CAPTURE_LIMIT - c.body.len());
                c.body.extend_from_slice(&part[..take]);
                chunk.advance(take);
            }
        }
        chunk.advance(chunk.remaining());
    }
    Ok(Done {
        status: response.status().as_u16(),
        first,
        bytes,
    })
}

#[cfg(test)]
mod tests;
