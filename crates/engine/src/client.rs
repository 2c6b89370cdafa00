//! One virtual user's client: the request built once, sent on its own connection (opened by
//! [`crate::connection`]) or on the worker's shared ones, and timed from its actual start to
//! the end of the body.

use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::Bytes;
use std::cell::RefCell;

use http::header::{CONTENT_LENGTH, HOST, HeaderMap, HeaderValue, USER_AGENT};
use http::uri::PathAndQuery;
use http::{Method, Uri};
use rustls::ClientConfig;
use volley_stats::ErrorKind;

use crate::connection::{Connection, Speaks, connect_with};
use crate::dial::{ConnectTimes, micros};
use crate::error::{Error, Repr};
use crate::failure::Failure;
pub(crate) use crate::h1::Capture;
use crate::h1::{self, NameCase, RequestWriter, Stream};
use crate::http2::{self, H2Conn, H2Head};
use crate::http3::{self, H3Conn, H3Head};
use crate::pool::{Lease, Pool, Seat, Shared};
use crate::target::Target;

/// Read buffers shared by the VUs of one worker thread: a VU holds one only while it
/// reads a response, so thousands of idle VUs hold none.
#[derive(Debug, Default)]
pub(crate) struct BufferPool(RefCell<Vec<Vec<u8>>>);

impl BufferPool {
    fn take(&self) -> Vec<u8> {
        self.0.borrow_mut().pop().unwrap_or_default()
    }

    fn give(&self, mut buf: Vec<u8>) {
        if buf.capacity() <= MAX_POOLED_BUF {
            buf.clear();
            self.0.borrow_mut().push(buf);
        }
    }
}

/// Buffers that grew past this (a large body read in one go) are freed, not pooled.
const MAX_POOLED_BUF: usize = 64 * 1024;

/// The request every iteration sends, built once.
#[derive(Debug, Clone)]
pub(crate) struct PreparedRequest {
    method: Method,
    /// HTTP/2's head: the pseudo-headers, then the headers without `Host` (`:authority`
    /// carries it) and with `content-length` when there is a body; empty where the request
    /// goes out on HTTP/1.1 alone.
    h2: H2Head,
    /// HTTP/3's head, where the request goes out on HTTP/3 (`--http3`).
    h3: Option<Box<H3Head>>,
    body: Bytes,
    /// The whole HTTP/1.1 request, serialized once.
    h1: Bytes,
}

impl PreparedRequest {
    /// The plan's request to the target's URL.
    pub(crate) fn new(
        target: &Target,
        speaks: Speaks,
        spec: &volley_scenario::RequestSpec,
    ) -> Result<Self, Error> {
        let body = Bytes::from(spec.body.clone());
        Self::assemble(
            target,
            speaks,
            &spec.method,
            &target.path,
            target.uri.clone(),
            &spec.headers,
            body,
        )
    }

    /// A request to `path_and_query` on the target (a scenario step, built per request), for
    /// a client that `speaks` so: only HTTP/1.1's bytes where that is all it speaks (the
    /// scenario's hot path: no URI or header map), only HTTP/2's head where that is all.
    pub(crate) fn build(
        target: &Target,
        speaks: Speaks,
        method: &str,
        path_and_query: &str,
        headers: &[(String, String)],
        body: Vec<u8>,
    ) -> Result<Self, Error> {
        if speaks == Speaks::Http1 {
            return Self::build_h1(target, method, path_and_query, headers, body);
        }
        let bad_path = || Repr::Path(path_and_query.to_string());
        let path: PathAndQuery = path_and_query.parse().map_err(|_| bad_path())?;
        let full_uri = Uri::builder()
            .scheme(if target.tls { "https" } else { "http" })
            .authority(target.authority.clone())
            .path_and_query(path.clone())
            .build()
            .map_err(|_| bad_path())?;
        Self::assemble(
            target,
            speaks,
            method,
            &path,
            full_uri,
            headers,
            Bytes::from(body),
        )
    }

    /// [`PreparedRequest::build`] for a client that speaks only HTTP/1.1 (no TLS, no
    /// `--http2`): the request's bytes alone, written straight from the parts, without the
    /// URI and header map only an HTTP/2 head needs. A scenario builds one per templated
    /// request, so this is its hot path; the bytes are those [`PreparedRequest::assemble`]
    /// writes (the flow's tests compare them), and the same inputs are refused.
    fn build_h1(
        target: &Target,
        method: &str,
        path_and_query: &str,
        headers: &[(String, String)],
        body: Vec<u8>,
    ) -> Result<Self, Error> {
        let method =
            Method::from_bytes(method.as_bytes()).map_err(|_| Repr::Method(method.to_string()))?;
        let path: PathAndQuery = path_and_query
            .parse()
            .map_err(|_| Repr::Path(path_and_query.to_string()))?;
        check_headers(headers)?;
        let h1 = h1_request(target, &method, path.as_str(), headers, &body);
        Ok(PreparedRequest {
            method,
            h2: H2Head::default(),
            h3: None,
            body: Bytes::from(body),
            h1: Bytes::from(h1),
        })
    }

    /// The one place a request's head is made: `Host` and `User-Agent`, then `headers`
    /// (each replacing one of the same name), serialized once for HTTP/1.1; HTTP/2 takes
    /// the authority from `full_uri` instead of `Host`.
    fn assemble(
        target: &Target,
        speaks: Speaks,
        method: &str,
        path: &PathAndQuery,
        full_uri: Uri,
        headers: &[(String, String)],
        body: Bytes,
    ) -> Result<Self, Error> {
        let method =
            Method::from_bytes(method.as_bytes()).map_err(|_| Repr::Method(method.to_string()))?;
        let mut map = HeaderMap::new();
        let host = HeaderValue::from_str(target.authority.as_str())
            .map_err(|_| Repr::HeaderValue(HOST.to_string()))?;
        map.insert(HOST, host);
        map.insert(USER_AGENT, HeaderValue::from_static(USER_AGENT_VALUE));
        for (n, v) in headers {
            let name = http::HeaderName::from_bytes(n.as_bytes())
                .map_err(|_| Repr::HeaderName(n.clone()))?;
            let value = HeaderValue::from_str(v).map_err(|_| Repr::HeaderValue(n.clone()))?;
            map.insert(name, value);
        }
        // HTTP/1.1's bytes only where the request may go out on it.
        let h1 = match speaks {
            Speaks::Http2 | Speaks::Http3 => Bytes::new(),
            Speaks::Http1 | Speaks::Either => {
                Bytes::from(h1_request(target, &method, path.as_str(), headers, &body))
            }
        };
        map.remove(HOST);
        if sends_body(&method, &body) && !map.contains_key(CONTENT_LENGTH) {
            map.insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
        }
        let h2 = match speaks {
            Speaks::Http1 | Speaks::Http3 => H2Head::default(),
            Speaks::Http2 | Speaks::Either => h2_head(&method, &full_uri, &map),
        };
        let h3 =
            (speaks == Speaks::Http3).then(|| Box::new(H3Head::new(method.clone(), full_uri, map)));
        Ok(PreparedRequest {
            method,
            h2,
            h3,
            body,
            h1,
        })
    }

    /// The HTTP/1.1 bytes (streams open their own connection).
    pub(crate) fn h1_bytes(&self) -> &[u8] {
        &self.h1
    }
}

/// An HTTP/2 request head (the body goes apart, as DATA): `:method`, `:scheme`,
/// `:authority`, `:path`, then `headers` in the map's order, names in lower case.
fn h2_head(method: &Method, uri: &Uri, headers: &HeaderMap) -> H2Head {
    let field = |n: &[u8], v: &[u8]| (Box::from(n), Box::from(v));
    let mut fields = vec![
        field(b":method", method.as_str().as_bytes()),
        field(b":scheme", uri.scheme_str().unwrap_or("http").as_bytes()),
        field(
            b":authority",
            uri.authority().map_or("", |a| a.as_str()).as_bytes(),
        ),
        field(
            b":path",
            uri.path_and_query().map_or("/", |p| p.as_str()).as_bytes(),
        ),
    ];
    fields.extend(
        headers
            .iter()
            .map(|(n, v)| field(n.as_str().as_bytes(), v.as_bytes())),
    );
    H2Head::new(fields)
}

/// Every request's `User-Agent` unless it names its own.
const USER_AGENT_VALUE: &str = concat!("volley/", env!("CARGO_PKG_VERSION"));

/// Refuses a header name that is not an HTTP token, or a value with a control character (the
/// header map's rules, for requests written without it).
pub(crate) fn check_headers(headers: &[(String, String)]) -> Result<(), Error> {
    for (n, v) in headers {
        if !volley_scenario::plan::is_header_name(n) {
            return Err(Repr::HeaderName(n.clone()).into());
        }
        if !v.bytes().all(|b| b == b'\t' || (b >= 32 && b != 127)) {
            return Err(Repr::HeaderValue(n.clone()).into());
        }
    }
    Ok(())
}

/// The value `headers` give `name` last (names compared without case), if any.
pub(crate) fn last_value<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .rev()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Hands `line` each header of a request written without a header map, in the map's order:
/// the `fixed` names first, each with the value `headers` give it last or else its own, then
/// every other name of `headers` once, where it first appears, with the value it was given
/// last.
pub(crate) fn each_header<'a>(
    fixed: &[(&'a str, &'a str)],
    headers: &'a [(String, String)],
    mut line: impl FnMut(&'a str, &'a str),
) {
    for &(name, value) in fixed {
        line(name, last_value(headers, name).unwrap_or(value));
    }
    for (i, (name, _)) in headers.iter().enumerate() {
        let is_fixed = fixed.iter().any(|(f, _)| f.eq_ignore_ascii_case(name));
        if is_fixed
            || headers[..i]
                .iter()
                .any(|(m, _)| m.eq_ignore_ascii_case(name))
        {
            continue;
        }
        line(name, last_value(headers, name).unwrap_or_default());
    }
}

/// A request's HTTP/1.1 bytes, through the one writer ([`RequestWriter`]): `Host` and
/// `User-Agent`, then `headers` (each replacing one of the same name, in the header map's
/// order: [`each_header`]), names in lower case, and `content-length` when the request sends
/// a body and names none.
fn h1_request(
    target: &Target,
    method: &Method,
    path: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> Vec<u8> {
    let mut w = RequestWriter::new(method.as_str(), path, NameCase::Lower, body.len());
    let mut has_length = false;
    each_header(
        &[
            ("host", target.authority.as_str()),
            ("user-agent", USER_AGENT_VALUE),
        ],
        headers,
        |name, value| {
            has_length |= name.eq_ignore_ascii_case("content-length");
            w.header(name, value.as_bytes());
        },
    );
    let length = (sends_body(method, body) && !has_length).then_some(body.len());
    w.finish(length, body)
}

/// Whether a request carries a body (and so says its length), even an empty one.
fn sends_body(method: &Method, body: &[u8]) -> bool {
    !body.is_empty() || matches!(*method, Method::POST | Method::PUT | Method::PATCH)
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
    /// A new connection was opened although this VU (or, with shared connections, the
    /// connection's slot) had one before.
    pub(crate) reconnected: bool,
    /// Shared connections: how long the request waited for a connection or an HTTP/2
    /// stream slot, µs; not part of `ttfb_us` or `total_us`.
    pub(crate) wait_us: u64,
}

/// A VU's connection — its own, or its seat in the worker's shared [`Pool`] — and what it
/// needs to (re)open it.
pub(crate) struct Client {
    target: Rc<Target>,
    tls: Option<Arc<ClientConfig>>,
    force_h2: bool,
    /// What its connections speak: its own, or the shared pool's.
    speaks: Speaks,
    conn: Option<Connection>,
    opened_before: bool,
    seat: Option<Seat>,
    /// The request timeout's timer, made at the first request and moved to each next
    /// request's deadline: a later deadline only updates the registered timer (tokio's fast
    /// path), where a `tokio::time::timeout` per request registered and cancelled one.
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

/// A deadline past any run, for a timeout too long to add to an instant (tokio's own).
const FAR_FUTURE: Duration = Duration::from_secs(86400 * 365 * 30);

/// How a request went on the wire, before it becomes an [`Exchange`].
struct Wire {
    status: u16,
    first: Instant,
    bytes: u64,
    connect_us: u64,
    tls_us: u64,
    reconnected: bool,
    wait_us: u64,
}

impl Wire {
    /// A request that started at `start` (its first byte is set when it comes).
    fn new(start: Instant) -> Self {
        Wire {
            status: 0,
            first: start,
            bytes: 0,
            connect_us: 0,
            tls_us: 0,
            reconnected: false,
            wait_us: 0,
        }
    }

    fn opened(&mut self, times: ConnectTimes, reconnect: bool) {
        self.connect_us += times.tcp_us + times.tls_us;
        self.tls_us += times.tls_us;
        self.reconnected |= reconnect;
    }
}

impl Client {
    /// A client with a connection of its own, opened at the first request.
    pub(crate) fn new(target: Rc<Target>, tls: Option<Arc<ClientConfig>>, force_h2: bool) -> Self {
        Client {
            speaks: Speaks::of(force_h2, tls.as_ref()),
            target,
            tls,
            force_h2,
            conn: None,
            opened_before: false,
            seat: None,
            timer: None,
        }
    }

    /// What its connections speak, which its requests are built for.
    pub(crate) fn speaks(&self) -> Speaks {
        self.speaks
    }

    /// A client that sends on the worker's shared connections.
    pub(crate) fn pooled(pool: &Rc<Pool>) -> Self {
        let mut c = Client::new(pool.target.clone(), None, false);
        // The pool's connections, not a connection of its own, carry its requests: built for
        // what those speak (an HTTP/1.1-only build has no HTTP/2 head to send on them).
        c.speaks = pool.speaks();
        c.seat = Some(Seat::new(pool));
        c
    }

    /// Sends `req`, opening a connection first if needed; the whole exchange is bounded by
    /// `timeout`. A failure drops the connection so the next request reconnects.
    #[cfg(test)]
    pub(crate) async fn send(
        &mut self,
        req: &PreparedRequest,
        timeout: Duration,
        buffers: &BufferPool,
    ) -> Result<Exchange, Failure> {
        self.send_capture(req, timeout, buffers, None).await
    }

    /// [`Client::send`], keeping the response's headers and body in `capture`.
    pub(crate) async fn send_capture(
        &mut self,
        req: &PreparedRequest,
        timeout: Duration,
        buffers: &BufferPool,
        capture: Option<&mut Capture>,
    ) -> Result<Exchange, Failure> {
        self.send_from(Instant::now(), req, timeout, buffers, capture)
            .await
            .map(|(ex, _)| ex)
    }

    /// [`Client::send_capture`] for a request that started at `start` (the caller's clock
    /// reading), with the exchange's end: a request reads the clock at its start, its first
    /// byte and its end, and the caller records it with these.
    pub(crate) async fn send_from(
        &mut self,
        start: Instant,
        req: &PreparedRequest,
        timeout: Duration,
        buffers: &BufferPool,
        capture: Option<&mut Capture>,
    ) -> Result<(Exchange, Instant), Failure> {
        let deadline = tokio::time::Instant::from_std(
            start
                .checked_add(timeout)
                .unwrap_or_else(|| start + FAR_FUTURE),
        );
        // Taken out while the exchange borrows the client; a request dropped midway (its VU
        // aborted) loses it, and the next request makes another.
        let mut timer = match self.timer.take() {
            Some(mut t) => {
                t.as_mut().reset(deadline);
                t
            }
            None => Box::pin(tokio::time::sleep_until(deadline)),
        };
        let mut buf = buffers.take();
        let result = {
            let mut exchange = std::pin::pin!(self.exchange(start, req, &mut buf, capture));
            // As `tokio::time::timeout` polls: the exchange first, then the deadline.
            std::future::poll_fn(|cx| {
                if let Poll::Ready(r) = exchange.as_mut().poll(cx) {
                    return Poll::Ready(Some(r));
                }
                timer.as_mut().poll(cx).map(|()| None)
            })
            .await
        };
        self.timer = Some(timer);
        buffers.give(buf);
        let out = match result {
            Some(r) => r,
            None => Err(Failure::new(
                ErrorKind::Timeout,
                format!("no complete response within {}s", timeout.as_secs_f64()),
            )),
        };
        let wire = match out {
            Ok(w) => w,
            Err(f) => {
                self.conn = None;
                if let Some(seat) = &mut self.seat {
                    seat.cached = None;
                }
                return Err(f);
            }
        };
        let end = Instant::now();
        // The wait for a shared connection or stream is the pool's, not the server's.
        let since =
            |t: Instant| micros(t.saturating_duration_since(start)).saturating_sub(wire.wait_us);
        let ex = Exchange {
            status: wire.status,
            ttfb_us: since(wire.first),
            total_us: since(end),
            connect_us: wire.connect_us,
            tls_us: wire.tls_us,
            queued_us: 0,
            bytes: wire.bytes,
            reconnected: wire.reconnected,
            wait_us: wire.wait_us,
        };
        Ok((ex, end))
    }

    async fn exchange(
        &mut self,
        start: Instant,
        req: &PreparedRequest,
        buf: &mut Vec<u8>,
        capture: Option<&mut Capture>,
    ) -> Result<Wire, Failure> {
        if self.seat.is_some() {
            return self.exchange_pooled(start, req, buf, capture).await;
        }
        let mut wire = Wire::new(start);
        let mut capture = capture;
        // A reused connection that the server closed while idle fails before any response
        // byte; the request is then sent once more on a new connection (as browsers and
        // hyper do), its time still counted from the first attempt. HTTP/2 does the same
        // for a stream the server refused unprocessed (GOAWAY, REFUSED_STREAM).
        let mut may_retry = true;
        loop {
            let fresh = self.conn.as_ref().is_none_or(Connection::is_closed);
            if fresh {
                // Boxed: connecting (TCP, TLS, the HTTP/2 handshake) happens once per connection,
                // and inline its 1.2 KB of state would size every VU's task for its whole life.
                let (conn, times) =
                    Box::pin(connect_with(&self.target, self.tls.as_ref(), self.force_h2)).await?;
                wire.opened(times, self.opened_before);
                self.opened_before = true;
                self.conn = Some(conn);
            }
            match self.conn.as_mut().expect("connection just ensured") {
                Connection::H1(stream) => {
                    match h1_exchange(stream, req, buf, capture.as_deref_mut(), &mut wire).await {
                        Ok(keep_alive) => {
                            if !keep_alive {
                                self.conn = None;
                            }
                            return Ok(wire);
                        }
                        Err(h1::H1Error::Stale(_)) if !fresh && may_retry => {
                            self.conn = None;
                            may_retry = false;
                        }
                        Err(e) => return Err(Failure::h1(e)),
                    }
                }
                Connection::H2(conn) => {
                    let conn = conn.clone();
                    match h2_exchange(&conn, req, capture.as_deref_mut(), &mut wire).await {
                        Ok(()) => return Ok(wire),
                        Err(f) if f.retry && may_retry => {
                            conn.retire();
                            self.conn = None;
                            may_retry = false;
                        }
                        Err(f) => return Err(f.failure),
                    }
                }
                Connection::H3(conn) => {
                    let conn = conn.clone();
                    match h3_exchange(&conn, req, capture.as_deref_mut(), &mut wire).await {
                        Ok(()) => return Ok(wire),
                        Err(f) if f.retry && may_retry && !fresh => {
                            conn.retire();
                            self.conn = None;
                            may_retry = false;
                        }
                        Err(f) => return Err(f.failure),
                    }
                }
            }
        }
    }

    /// One request on the worker's shared connections.
    async fn exchange_pooled(
        &mut self,
        start: Instant,
        req: &PreparedRequest,
        buf: &mut Vec<u8>,
        mut capture: Option<&mut Capture>,
    ) -> Result<Wire, Failure> {
        let seat = self.seat.as_mut().expect("a pooled client");
        let mut wire = Wire::new(start);
        let mut may_retry = true;
        loop {
            let cached = seat.cached.as_ref().filter(|c| !c.is_closed()).cloned();
            let (lease, fresh) = match cached {
                Some(Shared::H2(c)) => (Lease::H2(c, None), false),
                Some(Shared::H3(c)) => (Lease::H3(c, None), false),
                None => {
                    let asked = Instant::now();
                    let lease = seat.pool.lease(seat.assigned).await?;
                    let opened = match &lease {
                        Lease::H2(_, o) | Lease::H3(_, o) => *o,
                        Lease::H1(l) => l.opened,
                    };
                    let connect_us = opened.map_or(0, |o| o.times.tcp_us + o.times.tls_us);
                    wire.wait_us += micros(asked.elapsed()).saturating_sub(connect_us);
                    if let Some(o) = opened {
                        wire.opened(o.times, o.reconnect);
                    }
                    (lease, opened.is_some())
                }
            };
            match lease {
                Lease::H2(conn, _) => {
                    seat.cached = Some(Shared::H2(conn.clone()));
                    match h2_exchange(&conn, req, capture.as_deref_mut(), &mut wire).await {
                        Ok(()) => return Ok(wire),
                        Err(f) if f.retry && may_retry => {
                            conn.retire();
                            seat.cached = None;
                            may_retry = false;
                        }
                        Err(f) => return Err(f.failure),
                    }
                }
                Lease::H3(conn, _) => {
                    seat.cached = Some(Shared::H3(conn.clone()));
                    match h3_exchange(&conn, req, capture.as_deref_mut(), &mut wire).await {
                        Ok(()) => return Ok(wire),
                        Err(f) if f.retry && may_retry && !fresh => {
                            conn.retire();
                            seat.cached = None;
                            may_retry = false;
                        }
                        Err(f) => return Err(f.failure),
                    }
                }
                Lease::H1(mut lease) => {
                    match h1_exchange(lease.stream(), req, buf, capture.as_deref_mut(), &mut wire)
                        .await
                    {
                        Ok(keep_alive) => {
                            if !keep_alive {
                                lease.discard();
                            }
                            return Ok(wire);
                        }
                        Err(h1::H1Error::Stale(_)) if !fresh && may_retry => {
                            lease.discard();
                            may_retry = false;
                        }
                        Err(e) => {
                            lease.discard();
                            return Err(Failure::h1(e));
                        }
                    }
                }
            }
        }
    }
}

/// One HTTP/1.1 exchange on `stream`, noted in `wire`; says whether the connection stays open.
async fn h1_exchange(
    stream: &mut Stream,
    req: &PreparedRequest,
    buf: &mut Vec<u8>,
    mut capture: Option<&mut Capture>,
    wire: &mut Wire,
) -> Result<bool, h1::H1Error> {
    if let Some(c) = capture.as_deref_mut() {
        c.clear();
    }
    let r = h1::exchange(stream, &req.h1, req.method == Method::HEAD, buf, capture).await?;
    (wire.status, wire.first, wire.bytes) = (r.status, r.first_byte, r.body_bytes);
    Ok(r.keep_alive)
}

/// One HTTP/3 stream on `conn`, noted in `wire`.
async fn h3_exchange(
    conn: &H3Conn,
    req: &PreparedRequest,
    capture: Option<&mut Capture>,
    wire: &mut Wire,
) -> Result<(), http2::StreamFailed> {
    let Some(head) = req.h3.as_deref() else {
        return Err(http2::fail(
            ErrorKind::Protocol,
            "a request built without an HTTP/3 head went out on an HTTP/3 connection",
        ));
    };
    let done = http3::exchange(conn, head, &req.body, capture).await?;
    (wire.status, wire.first, wire.bytes) = (done.status, done.first, done.bytes);
    Ok(())
}

/// One HTTP/2 stream on `conn`, noted in `wire`.
async fn h2_exchange(
    conn: &H2Conn,
    req: &PreparedRequest,
    capture: Option<&mut Capture>,
    wire: &mut Wire,
) -> Result<(), http2::StreamFailed> {
    let done = http2::exchange(conn, &req.h2, &req.body, capture).await?;
    (wire.status, wire.first, wire.bytes) = (done.status, done.first, done.bytes);
    wire.wait_us += done.wait_us;
    Ok(())
}

#[cfg(test)]
mod build_tests {
    //! A request built for HTTP/1.1 alone (the lean build) writes the bytes a request built
    //! for either protocol writes and refuses what it refuses; one built for HTTP/2 alone has
    //! its head and no HTTP/1.1 bytes.

    use super::*;

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_request_for_http2_alone_has_its_head_and_no_http1_bytes() {
        let target = Target::resolve("http://127.0.0.1:8080/base").unwrap();
        let headers = h(&[("X-Trace", "a")]);
        let req = PreparedRequest::build(
            &target,
            Speaks::Http2,
            "POST",
            "/items?q=1",
            &headers,
            b"{}".to_vec(),
        )
        .unwrap();
        assert!(req.h1_bytes().is_empty());
        let head = &req.h2;
        let names: Vec<&[u8]> = head.fields.iter().map(|(n, _)| &n[..]).collect();
        assert_eq!(
            names[..4],
            [&b":method"[..], b":scheme", b":authority", b":path"]
        );
        assert_eq!(head.get(":method"), Some(&b"POST"[..]));
        assert_eq!(head.get(":scheme"), Some(&b"http"[..]));
        assert_eq!(head.get(":authority"), Some(&b"127.0.0.1:8080"[..]));
        assert_eq!(head.get(":path"), Some(&b"/items?q=1"[..]));
        assert_eq!(head.get("x-trace"), Some(&b"a"[..]));
        assert_eq!(head.get("content-length"), Some(&b"2"[..]));
        assert_eq!(head.get("host"), None);
        let lean = PreparedRequest::build(
            &target,
            Speaks::Http1,
            "POST",
            "/items?q=1",
            &headers,
            b"{}".to_vec(),
        )
        .unwrap();
        assert!(!lean.h1_bytes().is_empty());
    }

    #[test]
    fn the_lean_build_writes_the_same_bytes() {
        let target = Target::resolve("http://127.0.0.1:8080/base").unwrap();
        type Case<'a> = (&'a str, &'a str, Vec<(String, String)>, &'a [u8]);
        let cases: Vec<Case<'_>> = vec![
            ("GET", "/a?b=1", h(&[]), b""),
            (
                "POST",
                "/login",
                h(&[("Content-Type", "application/json")]),
                b"{\"u\":1}",
            ),
            ("POST", "/empty", h(&[]), b""),
            (
                "PUT",
                "/x",
                h(&[("content-length", "3"), ("X-Trace", "a\tb")]),
                b"abc",
            ),
            (
                "GET",
                "/h",
                h(&[
                    ("Host", "example.test"),
                    ("User-Agent", "me/1"),
                    ("Accept", "*/*"),
                ]),
                b"",
            ),
            (
                "GET",
                "/dup",
                h(&[("X-A", "1"), ("x-b", "2"), ("X-a", "3")]),
                b"",
            ),
            (
                "DELETE",
                "/frag#part",
                h(&[("Authorization", "Token t0k3n")]),
                b"",
            ),
            ("GET", "/utf8", h(&[("X-Name", "caf\u{e9}")]), b""),
        ];
        for (method, path, headers, body) in cases {
            let full = PreparedRequest::build(
                &target,
                Speaks::Either,
                method,
                path,
                &headers,
                body.to_vec(),
            )
            .unwrap();
            let lean = PreparedRequest::build(
                &target,
                Speaks::Http1,
                method,
                path,
                &headers,
                body.to_vec(),
            )
            .unwrap();
            assert_eq!(
                String::from_utf8_lossy(lean.h1_bytes()),
                String::from_utf8_lossy(full.h1_bytes()),
                "{method} {path} {headers:?}"
            );
        }
    }

    #[test]
    fn the_lean_build_refuses_what_the_full_one_refuses() {
        let target = Target::resolve("http://127.0.0.1:8080/").unwrap();
        type Case<'a> = (&'a str, &'a str, Vec<(String, String)>);
        let bad: Vec<Case<'_>> = vec![
            ("G ET", "/", h(&[])),
            ("GET", "/a b", h(&[])),
            ("GET", "/", h(&[("X Y", "1")])),
            ("GET", "/", h(&[("", "1")])),
            ("GET", "/", h(&[("X-Y", "a\r\nInjected: 1")])),
            ("GET", "/", h(&[("X-Y", "nul\u{0}")])),
            ("GET", "/", h(&[("X-Y", "del\u{7f}")])),
        ];
        for (method, path, headers) in bad {
            let full =
                PreparedRequest::build(&target, Speaks::Either, method, path, &headers, Vec::new())
                    .map(|_| ())
                    .map_err(|e| e.to_string());
            let lean =
                PreparedRequest::build(&target, Speaks::Http1, method, path, &headers, Vec::new())
                    .map(|_| ())
                    .map_err(|e| e.to_string());
            assert!(full.is_err(), "{method} {path} {headers:?}");
            assert_eq!(lean, full, "{method} {path} {headers:?}");
        }
    }
}

#[cfg(test)]
mod tests {
    //! The retry rule of [`Client::exchange`], against a loopback server that follows a
    //! script: a request is sent again, once, only when a reused connection fails before
    //! any byte of its response.

    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};
    use tokio::sync::mpsc;

    use super::*;

    /// What the server does with one request on a connection.
    #[derive(Debug, Clone, Copy)]
    enum Reply {
        /// A whole keep-alive response.
        Ok,
        /// Closes the connection without a byte of response.
        Hangup,
        /// Part of a response, then closes.
        CutShort,
        /// Bytes that are not HTTP.
        Garbage,
        /// A whole keep-alive response, this many milliseconds after the request.
        Late(u64),
        /// No answer: the connection is held open, silent, until the test ends.
        Silent,
    }

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";

    /// A loopback server: connection `i` answers the requests of `script[i]` in order and is
    /// then closed (a keep-alive connection closed while idle). It stops with the test's
    /// runtime, and accepts no connection beyond the script.
    struct Server {
        target: Target,
        /// Connections accepted so far.
        accepted: Arc<AtomicUsize>,
        /// The number of each connection the server has closed, as it closes it.
        closed: mpsc::UnboundedReceiver<usize>,
    }

    fn serve(script: Vec<Vec<Reply>>) -> Server {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let target =
            Target::resolve(&format!("http://{}/", listener.local_addr().unwrap())).unwrap();
        let listener = TcpListener::from_std(listener).unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let (tx, closed) = mpsc::unbounded_channel();
        let count = accepted.clone();
        tokio::spawn(async move {
            for (i, replies) in script.into_iter().enumerate() {
                let (mut s, _) = listener.accept().await.unwrap();
                count.fetch_add(1, Ordering::SeqCst);
                for reply in replies {
                    if !read_request(&mut s).await {
                        break;
                    }
                    let bytes: &[u8] = match reply {
                        Reply::Ok => OK,
                        Reply::Late(ms) => {
                            tokio::time::sleep(Duration::from_millis(ms)).await;
                            OK
                        }
                        Reply::Silent => {
                            std::future::pending::<()>().await;
                            unreachable!()
                        }
                        Reply::Hangup => break,
                        Reply::CutShort => b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nok",
                        Reply::Garbage => b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
                    };
                    s.write_all(bytes).await.unwrap();
                    if !matches!(reply, Reply::Ok | Reply::Late(_)) {
                        break;
                    }
                }
                drop(s);
                let _ = tx.send(i);
            }
        });
        Server {
            target,
            accepted,
            closed,
        }
    }

    /// Reads one request head; false at the end of the connection.
    async fn read_request(s: &mut TcpStream) -> bool {
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            match s.read(&mut byte).await {
                Ok(1) => head.push(byte[0]),
                _ => return false,
            }
        }
        true
    }

    /// Runs `test` on a current-thread runtime, bounded to 10 s.
    fn run<F: Future<Output = ()>>(test: impl FnOnce() -> F) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(10), test())
                .await
                .expect("the test took over 10 s")
        });
    }

    fn client_for(server: &Server) -> (Client, PreparedRequest) {
        let spec = volley_scenario::RequestSpec {
            method: "GET".into(),
            url: server.target.uri.to_string(),
            headers: Vec::new(),
            body: Vec::new(),
        };
        let request = PreparedRequest::new(&server.target, Speaks::Http1, &spec).unwrap();
        (
            Client::new(Rc::new(server.target.clone()), None, false),
            request,
        )
    }

    const TIMEOUT: Duration = Duration::from_secs(5);

    #[test]
    fn a_kept_alive_connection_the_server_closed_while_idle_is_retried_on_a_new_one() {
        run(|| async {
            let mut server = serve(vec![vec![Reply::Ok], vec![Reply::Ok]]);
            let (mut client, req) = client_for(&server);
            let pool = BufferPool::default();
            let first = client.send(&req, TIMEOUT, &pool).await.unwrap();
            assert_eq!((first.status, first.reconnected), (200, false));
            assert_eq!(
                server.closed.recv().await,
                Some(0),
                "the server closed the idle connection"
            );
            let second = client
                .send(&req, TIMEOUT, &pool)
                .await
                .expect("retried on a new connection");
            assert_eq!((second.status, second.reconnected), (200, true));
            assert!(
                second.connect_us > 0,
                "the new connection's set-up is counted in the request"
            );
            assert!(second.total_us >= second.connect_us);
            assert_eq!(server.accepted.load(Ordering::SeqCst), 2);
        });
    }

    #[test]
    fn each_request_has_its_own_deadline_on_the_client_s_one_timer() {
        run(|| async {
            let timeout = Duration::from_millis(300);
            let server = serve(vec![vec![Reply::Ok, Reply::Late(100), Reply::Silent]]);
            let (mut client, req) = client_for(&server);
            let pool = BufferPool::default();
            let first = Instant::now();
            client.send(&req, timeout, &pool).await.unwrap();
            // Idle past the first request's deadline: its timer fires with no request on.
            tokio::time::sleep_until((first + timeout + Duration::from_millis(50)).into()).await;
            let second = client
                .send(&req, timeout, &pool)
                .await
                .expect("the second request has its own deadline, not the first's");
            assert!(second.total_us >= 100_000, "{}", second.total_us);
            let third = Instant::now();
            let failure = client.send(&req, timeout, &pool).await.unwrap_err();
            assert_eq!(failure.kind, ErrorKind::Timeout, "{}", failure.message);
            let took = third.elapsed();
            assert!(
                took >= timeout && took < timeout + Duration::from_secs(2),
                "timed out after {took:?}, not at its own deadline ({timeout:?})"
            );
            assert_eq!(server.accepted.load(Ordering::SeqCst), 1);
        });
    }

    #[test]
    fn a_new_connection_that_fails_before_a_response_is_not_retried() {
        run(|| async {
            let server = serve(vec![vec![Reply::Hangup], vec![Reply::Ok]]);
            let (mut client, req) = client_for(&server);
            let failure = client
                .send(&req, TIMEOUT, &BufferPool::default())
                .await
                .unwrap_err();
            assert_eq!(failure.kind, ErrorKind::Reset, "{}", failure.message);
            assert_eq!(
                server.accepted.load(Ordering::SeqCst),
                1,
                "no second connection"
            );
        });
    }

    #[test]
    fn a_request_is_retried_once_only() {
        run(|| async {
            let mut server = serve(vec![vec![Reply::Ok], vec![Reply::Hangup], vec![Reply::Ok]]);
            let (mut client, req) = client_for(&server);
            let pool = BufferPool::default();
            client.send(&req, TIMEOUT, &pool).await.unwrap();
            assert_eq!(server.closed.recv().await, Some(0));
            let failure = client.send(&req, TIMEOUT, &pool).await.unwrap_err();
            assert_eq!(failure.kind, ErrorKind::Reset, "{}", failure.message);
            assert_eq!(
                server.accepted.load(Ordering::SeqCst),
                2,
                "the stale connection and one retry"
            );
            // The failure dropped the connection: the next request opens the third.
            let third = client.send(&req, TIMEOUT, &pool).await.unwrap();
            assert!(third.reconnected);
            assert_eq!(server.accepted.load(Ordering::SeqCst), 3);
        });
    }

    #[test]
    fn a_reused_connection_that_fails_after_its_first_byte_is_not_retried() {
        for (reply, kind) in [
            (Reply::CutShort, ErrorKind::Reset),
            (Reply::Garbage, ErrorKind::Protocol),
        ] {
            run(move || async move {
                let server = serve(vec![vec![Reply::Ok, reply], vec![Reply::Ok]]);
                let (mut client, req) = client_for(&server);
                let pool = BufferPool::default();
                client.send(&req, TIMEOUT, &pool).await.unwrap();
                let failure = client.send(&req, TIMEOUT, &pool).await.unwrap_err();
                assert_eq!(failure.kind, kind, "{reply:?}: {}", failure.message);
                assert_eq!(
                    server.accepted.load(Ordering::SeqCst),
                    1,
                    "{reply:?}: not sent again"
                );
            });
        }
    }
}
