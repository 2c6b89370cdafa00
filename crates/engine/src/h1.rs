//! A small HTTP/1.1 client for the hot path, in wrk's manner: the request is serialized
//! once and written as bytes; the response head is read by a lean scanner of the status and
//! the framing headers ([`scan`]), with `httparse` for what it does not handle; the body is
//! framed by `Content-Length`, chunked encoding or the end of the connection. The first
//! byte is timed at the read that brings it, and no task or buffer lives beside the
//! connection between requests, so an idle VU costs little more than its socket.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

mod scan;

/// Largest response head accepted.
const MAX_HEAD: usize = 64 * 1024;
/// Read granularity.
pub(crate) const READ_CHUNK: usize = 4096;

/// How [`RequestWriter`] writes header names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameCase {
    /// Lower case, as the header map (and HTTP/2) has them: every request of a plan or step.
    Lower,
    /// As given: the WebSocket upgrade, named as tungstenite names them.
    AsGiven,
}

/// The one writer of HTTP/1.1 requests: the request line, `name: value` lines, an optional
/// `content-length`, the blank line and the body. Plain requests, scenario steps and the
/// WebSocket upgrade are all written through it.
pub(crate) struct RequestWriter {
    out: Vec<u8>,
    case: NameCase,
}

impl RequestWriter {
    /// Starts a request with its line, `METHOD path HTTP/1.1`; `body` is how many body bytes
    /// will follow (room is made for them).
    pub(crate) fn new(method: &str, path: &str, case: NameCase, body: usize) -> RequestWriter {
        let mut out = Vec::with_capacity(128 + path.len() + body);
        out.extend_from_slice(method.as_bytes());
        out.push(b' ');
        out.extend_from_slice(path.as_bytes());
        out.extend_from_slice(b" HTTP/1.1\r\n");
        RequestWriter { out, case }
    }

    /// One header line.
    pub(crate) fn header(&mut self, name: &str, value: &[u8]) {
        match self.case {
            NameCase::Lower => self
                .out
                .extend(name.bytes().map(|b| b.to_ascii_lowercase())),
            NameCase::AsGiven => self.out.extend_from_slice(name.as_bytes()),
        }
        self.out.extend_from_slice(b": ");
        self.out.extend_from_slice(value);
        self.out.extend_from_slice(b"\r\n");
    }

    /// The request's bytes: `content-length: N` when `length` is given, the blank line, then
    /// `body`.
    pub(crate) fn finish(mut self, length: Option<usize>, body: &[u8]) -> Vec<u8> {
        if let Some(n) = length {
            use std::io::Write as _;
            // Writing into a Vec cannot fail.
            let _ = write!(self.out, "content-length: {n}\r\n");
        }
        self.out.extend_from_slice(b"\r\n");
        self.out.extend_from_slice(body);
        self.out
    }
}

/// A plain or TLS connection.
pub(crate) enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// What went wrong in an exchange.
#[derive(Debug)]
pub(crate) enum H1Error {
    /// The socket failed.
    Io(&'static str, io::Error),
    /// The peer closed the connection before the response was complete.
    Closed(&'static str),
    /// The response is not valid HTTP/1.1.
    Invalid(String),
    /// The connection failed before any byte of a response arrived: on a reused keep-alive
    /// connection this is the server having closed it while idle, and the request can be
    /// sent again on a new connection.
    Stale(String),
}

/// A completed response.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Response {
    pub(crate) status: u16,
    /// When the first byte of the response arrived.
    pub(crate) first_byte: Instant,
    /// Body bytes (after de-chunking).
    pub(crate) body_bytes: u64,
    /// The connection can carry another request.
    pub(crate) keep_alive: bool,
}

/// What a scenario step keeps of a response, for extraction and checks.
#[derive(Debug, Default)]
pub(crate) struct Capture {
    /// Response headers, as received (only when [`Capture::headers_wanted`]).
    pub(crate) headers: Vec<(String, String)>,
    /// The body, up to [`CAPTURE_LIMIT`] bytes.
    pub(crate) body: Vec<u8>,
    /// Whether the headers are kept: copying each one into two strings costs more than a
    /// step that only reads the body should pay.
    headers_wanted: bool,
}

impl Capture {
    /// A capture of the body, and of the headers when `headers` is true.
    pub(crate) fn new(headers: bool) -> Self {
        Capture {
            headers_wanted: headers,
            ..Capture::default()
        }
    }

    /// Whether the headers are kept.
    pub(crate) fn headers_wanted(&self) -> bool {
        self.headers_wanted
    }

    /// Empty again, for the next response (what it keeps stays as it was).
    pub(crate) fn clear(&mut self) {
        self.headers.clear();
        self.body.clear();
    }
}

/// Bodies are kept up to this size for extraction; the rest is read and counted only.
pub(crate) const CAPTURE_LIMIT: usize = 8 * 1024 * 1024;

/// A response head.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Head {
    pub(crate) status: u16,
    pub(crate) framing: Framing,
    pub(crate) keep_alive: bool,
    pub(crate) first_byte: Instant,
}

/// Writes `request` and reads one whole response. `head_only`: the request was HEAD.
/// With `capture`, the headers and body are kept.
pub(crate) async fn exchange(
    stream: &mut Stream,
    request: &[u8],
    head_only: bool,
    buf: &mut Vec<u8>,
    mut capture: Option<&mut Capture>,
) -> Result<Response, H1Error> {
    stream
        .write_all(request)
        .await
        .map_err(|e| H1Error::Stale(format!("write: {e}")))?;
    buf.clear();
    let head = read_head(
        stream,
        buf,
        capture
            .as_deref_mut()
            .filter(|c| c.headers_wanted())
            .map(|c| &mut c.headers),
    )
    .await?;
    let status = head.status;
    let no_body = head_only || status == 204 || status == 304 || (100..200).contains(&status);
    let body_bytes = if no_body {
        0
    } else {
        match capture {
            Some(c) => {
                let body = &mut c.body;
                read_body(stream, buf, head.framing, Idle::Keep, &mut |chunk| {
                    let room = CAPTURE_LIMIT.saturating_sub(body.len());
                    body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                    true
                })
                .await?
            }
            None => read_body(stream, buf, head.framing, Idle::Keep, &mut |_| true).await?,
        }
    };
    let keep_alive = head.keep_alive && !matches!(head.framing, Framing::UntilClose);
    Ok(Response {
        status,
        first_byte: head.first_byte,
        body_bytes,
        keep_alive,
    })
}

/// Reads a response head (skipping informational ones) into `buf`, leaving any body bytes
/// after it there. A failure before the first byte is [`H1Error::Stale`].
pub(crate) async fn read_head(
    stream: &mut Stream,
    buf: &mut Vec<u8>,
    mut headers: Option<&mut Vec<(String, String)>>,
) -> Result<Head, H1Error> {
    let mut first_byte = None;
    loop {
        let (status, head_len, framing, keep_alive) = loop {
            if let Some(parsed) = parse_head(buf)? {
                break parsed;
            }
            if buf.len() > MAX_HEAD {
                return Err(H1Error::Invalid(format!(
                    "response head larger than {MAX_HEAD} bytes"
                )));
            }
            let got = match fill(stream, buf, Idle::Keep).await {
                Err(H1Error::Io(_, e)) if first_byte.is_none() => {
                    return Err(H1Error::Stale(format!("read: {e}")));
                }
                other => other?,
            };
            if got == 0 {
                return Err(if first_byte.is_none() {
                    H1Error::Stale("connection closed before any response".into())
                } else {
                    H1Error::Closed("connection closed inside the response head")
                });
            }
            first_byte.get_or_insert_with(Instant::now);
        };
        // Informational responses (100 Continue, 103 Early Hints) precede the real one.
        if (100..200).contains(&status) && status != 101 {
            buf.drain(..head_len);
            continue;
        }
        if let Some(out) = headers.as_deref_mut() {
            collect_headers(&buf[..head_len], out);
        }
        buf.drain(..head_len);
        return Ok(Head {
            status,
            framing,
            keep_alive,
            first_byte: first_byte.unwrap_or_else(Instant::now),
        });
    }
}

fn collect_headers(head: &[u8], out: &mut Vec<(String, String)>) {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut headers);
    if resp.parse(head).is_ok() {
        out.extend(resp.headers.iter().map(|h| {
            (
                h.name.to_string(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        }));
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Framing {
    Length(u64),
    Chunked,
    UntilClose,
}

/// Parses a complete head at the start of `buf`: (status, head length, framing, keep-alive).
/// The scanner reads the heads it handles; `httparse` reads the rest (and says what is wrong
/// with a bad one).
fn parse_head(buf: &[u8]) -> Result<Option<(u16, usize, Framing, bool)>, H1Error> {
    match scan::scan(buf) {
        Some(scanned) => scanned
            .map(Some)
            .map_err(|why| H1Error::Invalid(why.into())),
        // Nothing read yet (`read_head` asks before its first read): httparse's answer too.
        None if buf.is_empty() => Ok(None),
        None => parse_head_httparse(buf),
    }
}

/// [`parse_head`] by `httparse`: for the heads the scanner leaves (a bare LF, obs-fold, a bad
/// byte, a head not complete yet), and the reference its differential test compares with.
fn parse_head_httparse(buf: &[u8]) -> Result<Option<(u16, usize, Framing, bool)>, H1Error> {
    // Left uninitialised: httparse fills only the headers it finds (initialising 64 empty
    // ones cost ~1,000 instructions per response, a seventh of a request's; bench/README).
    let mut headers = [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; 64];
    let mut resp = httparse::Response::new(&mut []);
    let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut resp,
        buf,
        &mut headers,
    );
    let len = match parsed {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(H1Error::Invalid(format!("invalid response head: {e}"))),
    };
    let status = resp.code.unwrap_or(0);
    let mut keep_alive = resp.version == Some(1);
    let mut framing = Framing::UntilClose;
    for h in resp.headers.iter() {
        frame(h.name.as_bytes(), h.value, &mut framing, &mut keep_alive)
            .map_err(|why| H1Error::Invalid(why.into()))?;
    }
    Ok(Some((status, len, framing, keep_alive)))
}

/// Reads one header into the framing and keep-alive: the first framing error, if any, is the
/// head's. `name` is a token (both readers refuse anything else) and `value` holds no CR.
#[inline]
fn frame(
    name: &[u8],
    value: &[u8],
    framing: &mut Framing,
    keep_alive: &mut bool,
) -> Result<(), &'static str> {
    // Only three names matter: their lengths (14, 17, 10) pass over every other header with
    // one comparison.
    match name.len() {
        14 if *framing != Framing::Chunked && is_lower(name, b"content-length") => {
            let n = content_length(value).ok_or("invalid Content-Length")?;
            // RFC 9112 §6.3: differing lengths make the response's end unknowable.
            if matches!(*framing, Framing::Length(m) if m != n) {
                return Err("conflicting Content-Length headers");
            }
            *framing = Framing::Length(n);
        }
        17 if is_lower(name, b"transfer-encoding")
            && ((value.len() == 7 && is_lower(value, b"chunked"))
                || contains_token(value, b"chunked")) =>
        {
            *framing = Framing::Chunked;
        }
        10 if is_lower(name, b"connection") => {
            // The common values first, whole; then any list.
            if value.len() == 10 && is_lower(value, b"keep-alive") {
                *keep_alive = true;
            } else if (value.len() == 5 && is_lower(value, b"close"))
                || contains_token(value, b"close")
            {
                *keep_alive = false;
            } else if contains_token(value, b"keep-alive") {
                *keep_alive = true;
            }
        }
        _ => {}
    }
    Ok(())
}

/// `bytes` is `lower` in any case, where `lower` (at least 4 bytes) is lower-case letters and
/// `-`, `bytes` has `lower`'s length and holds no CR: then setting each byte's 0x20 bit maps
/// exactly the bytes that equal `lower`'s ignoring case (and CR, 0x0D, to `-`) onto them, so the
/// compare is a word or a few.
#[inline]
fn is_lower(bytes: &[u8], lower: &[u8]) -> bool {
    debug_assert!(bytes.len() == lower.len() && lower.len() >= 4 && !bytes.contains(&b'\r'));
    let n = lower.len();
    if n < 8 {
        let word = |s: &[u8], at: usize| u32::from_le_bytes(s[at..at + 4].try_into().unwrap());
        let ones = 0x2020_2020;
        return word(bytes, 0) | ones == word(lower, 0)
            && word(bytes, n - 4) | ones == word(lower, n - 4);
    }
    let word = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().unwrap());
    let ones = 0x2020_2020_2020_2020;
    let mut at = 0;
    while at + 8 < n {
        if word(bytes, at) | ones != word(lower, at) {
            return false;
        }
        at += 8;
    }
    word(bytes, n - 8) | ones == word(lower, n - 8)
}

/// A `Content-Length` value's number: decimal digits between optional spaces or tabs (and,
/// as `str::parse` took it before, an optional `+`), read by hand; `None` if it is anything
/// else or past `u64`.
fn content_length(value: &[u8]) -> Option<u64> {
    let v = value.trim_ascii();
    let digits = v.strip_prefix(b"+").unwrap_or(v);
    if digits.is_empty() {
        return None;
    }
    let mut n = 0u64;
    for &b in digits {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u64::from(d))?;
    }
    Some(n)
}

fn contains_token(value: &[u8], token: &[u8]) -> bool {
    value
        .split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

/// How a body's read buffer is held while the stream waits for bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Idle {
    /// Kept (a response read to its end: the buffer is reused at once).
    Keep,
    /// Freed while the buffer holds nothing and the stream waits, allocated when bytes are
    /// there: a stream held open for minutes (an SSE step, a WebSocket) then costs no read
    /// buffer while it waits. A plain socket says when it has bytes without a buffer; a TLS
    /// stream (readiness of its socket is not readiness of its data) is asked with one,
    /// dropped again if nothing came.
    Release,
}

/// Reads more bytes into `buf`; returns how many (0 at end of stream).
async fn fill(stream: &mut Stream, buf: &mut Vec<u8>, idle: Idle) -> Result<usize, H1Error> {
    std::future::poll_fn(|cx| poll_fill(cx, stream, buf, idle))
        .await
        .map_err(|e| H1Error::Io("read", e))
}

/// [`fill`] as a poll, appending to `buf`. An empty buffer with [`Idle::Release`] — or, on
/// plain TCP, one never allocated — is not held through a wait: on plain TCP it is allocated
/// only once the socket has bytes (and freed again if they were not there after all), on TLS
/// freed again if the read found nothing. A stream waiting for minutes then holds no read
/// buffer, and neither does a connection waiting for its first response (thousands of streams
/// opening at once against a slow server would otherwise each hold one for the wait).
pub(crate) fn poll_fill(
    cx: &mut Context<'_>,
    stream: &mut Stream,
    buf: &mut Vec<u8>,
    idle: Idle,
) -> Poll<io::Result<usize>> {
    if buf.is_empty()
        && (idle == Idle::Release || buf.capacity() == 0)
        && let Stream::Plain(tcp) = stream
    {
        loop {
            *buf = Vec::new();
            ready!(tcp.poll_read_ready(cx))?;
            buf.reserve(READ_CHUNK);
            match tcp.try_read_buf(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                r => return Poll::Ready(r),
            }
        }
    }
    // A kept buffer is read through `poll_read`, not readiness and `try_read_buf`: after a
    // short read tokio clears the socket's readiness itself, where `try_read_buf` leaves it
    // set and the next read is a `recv` that finds nothing (tried: twice the `recv` calls
    // under callgrind and more instructions per request, not fewer; bench/README.md).
    buf.reserve(READ_CHUNK);
    let read = tokio_util::io::poll_read_buf(Pin::new(stream), cx, buf);
    if read.is_pending() && idle == Idle::Release && buf.is_empty() {
        *buf = Vec::new();
    }
    read
}

/// What receives body bytes as they arrive; returning `false` stops reading (the
/// connection is then left mid-body and must not be reused).
pub(crate) type Sink<'a> = &'a mut dyn FnMut(&[u8]) -> bool;

/// Reads the body (part of which may already be in `buf`), handing it to `sink`, and
/// returns its length.
///
/// A plain function returning a poll: a body read for minutes (an SSE step holds one for the
/// stream's life) is then its decoder's few words and four references, not the state of
/// nested `async fn`s (432 bytes, most of it for the awaits it is not at).
pub(crate) fn read_body<'a>(
    stream: &'a mut Stream,
    buf: &'a mut Vec<u8>,
    framing: Framing,
    idle: Idle,
    sink: Sink<'a>,
) -> impl Future<Output = Result<u64, H1Error>> + 'a {
    let mut body = Body::new(framing);
    std::future::poll_fn(move |cx| {
        loop {
            if body.take(buf, sink)? {
                return Poll::Ready(Ok(body.total));
            }
            if ready!(poll_fill(cx, stream, buf, idle)).map_err(|e| H1Error::Io("read", e))? == 0 {
                return Poll::Ready(body.end());
            }
        }
    })
}

/// A response body's framing as a decoder fed bytes as they arrive (no I/O of its own).
#[derive(Debug)]
struct Body {
    state: BodyState,
    /// Body bytes handed on (after de-chunking).
    total: u64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum BodyState {
    /// This many bytes of a `Content-Length` body are still to come.
    Length(u64),
    /// Everything up to the end of the connection.
    UntilClose,
    /// A chunk's `size[;ext]` line.
    ChunkSize,
    /// This many bytes of a chunk's data are still to come.
    ChunkData(u64),
    /// This many bytes of the CRLF after a chunk's data are still to come.
    ChunkEnd(u8),
    /// Trailer lines, up to an empty one.
    Trailers,
    Done,
}

impl Body {
    fn new(framing: Framing) -> Self {
        let state = match framing {
            Framing::Length(0) => BodyState::Done,
            Framing::Length(n) => BodyState::Length(n),
            Framing::UntilClose => BodyState::UntilClose,
            Framing::Chunked => BodyState::ChunkSize,
        };
        Body { state, total: 0 }
    }

    /// Decodes what `buf` holds, handing body bytes to `sink`, and removes what it used
    /// (bytes past a `Content-Length` body are dropped). True when the body is complete or
    /// `sink` asked to stop; false when it needs more bytes.
    fn take(&mut self, buf: &mut Vec<u8>, sink: Sink<'_>) -> Result<bool, H1Error> {
        let mut at = 0;
        let done = loop {
            let rest = &buf[at..];
            match self.state {
                BodyState::Done => break true,
                _ if rest.is_empty() => break false,
                BodyState::Length(left) | BodyState::ChunkData(left) => {
                    let n = (rest.len() as u64).min(left) as usize;
                    at += n;
                    self.total += n as u64;
                    let left = left - n as u64;
                    self.state = match self.state {
                        BodyState::Length(_) if left == 0 => BodyState::Done,
                        BodyState::Length(_) => BodyState::Length(left),
                        _ if left == 0 => BodyState::ChunkEnd(2),
                        _ => BodyState::ChunkData(left),
                    };
                    if !sink(&rest[..n]) {
                        break true;
                    }
                    if self.state == BodyState::Done {
                        at = buf.len();
                    }
                }
                BodyState::UntilClose => {
                    at = buf.len();
                    self.total += rest.len() as u64;
                    if !sink(rest) {
                        break true;
                    }
                }
                BodyState::ChunkEnd(left) => {
                    let n = rest.len().min(usize::from(left));
                    at += n;
                    self.state = if n == usize::from(left) {
                        BodyState::ChunkSize
                    } else {
                        BodyState::ChunkEnd(left - n as u8)
                    };
                }
                BodyState::ChunkSize | BodyState::Trailers => {
                    let Some(end) = rest.windows(2).position(|w| w == b"\r\n") else {
                        if rest.len() > MAX_HEAD {
                            return Err(H1Error::Invalid("chunk line too long".into()));
                        }
                        break false;
                    };
                    let line = &rest[..end];
                    at += end + 2;
                    self.state = if self.state == BodyState::Trailers {
                        if line.is_empty() {
                            BodyState::Done
                        } else {
                            BodyState::Trailers
                        }
                    } else {
                        let size_text = line.split(|&b| b == b';').next().unwrap_or(&[]);
                        let size = std::str::from_utf8(size_text)
                            .ok()
                            .and_then(|s| u64::from_str_radix(s.trim(), 16).ok())
                            .ok_or_else(|| H1Error::Invalid("invalid chunk size".into()))?;
                        if size == 0 {
                            BodyState::Trailers
                        } else {
                            BodyState::ChunkData(size)
                        }
                    };
                }
            }
        };
        if at == buf.len() {
            buf.clear();
        } else {
            buf.drain(..at);
        }
        Ok(done)
    }

    /// The connection ended: the body's length, or why it is incomplete.
    fn end(&self) -> Result<u64, H1Error> {
        match self.state {
            BodyState::UntilClose | BodyState::Done => Ok(self.total),
            BodyState::Length(_) => Err(H1Error::Closed("connection closed inside the body")),
            BodyState::ChunkData(_) | BodyState::ChunkEnd(_) => {
                Err(H1Error::Closed("connection closed inside a chunk"))
            }
            BodyState::ChunkSize | BodyState::Trailers => {
                Err(H1Error::Closed("connection closed inside the chunked body"))
            }
        }
    }
}

/// Test support: answers one connection's first request with `response`, written in
/// pieces of `step` bytes a millisecond apart, so readers meet every split.
#[cfg(test)]
pub(crate) async fn serve_in_pieces(
    listener: tokio::net::TcpListener,
    response: &'static [u8],
    step: usize,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (mut s, _) = listener.accept().await.unwrap();
    let mut req = [0u8; 1024];
    let _ = s.read(&mut req).await.unwrap();
    for piece in response.chunks(step) {
        s.write_all(piece).await.unwrap();
        s.flush().await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `parse_head`'s reading of the framing headers before names were told apart by their
    /// length and `Content-Length` read by hand: the reference the lean reading must match.
    fn framing_as_before(buf: &[u8]) -> Result<Option<(Framing, bool)>, String> {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut resp = httparse::Response::new(&mut headers);
        match resp.parse(buf) {
            Ok(httparse::Status::Complete(_)) => {}
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(e) => return Err(format!("invalid response head: {e}")),
        }
        let mut keep_alive = resp.version == Some(1);
        let mut framing = Framing::UntilClose;
        for h in resp.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") && framing != Framing::Chunked {
                let v = std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|v| v.trim().parse().ok());
                let n = v.ok_or("invalid Content-Length")?;
                if matches!(framing, Framing::Length(m) if m != n) {
                    return Err("conflicting Content-Length headers".into());
                }
                framing = Framing::Length(n);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding")
                && contains_token(h.value, b"chunked")
            {
                framing = Framing::Chunked;
            } else if h.name.eq_ignore_ascii_case("connection") {
                if contains_token(h.value, b"close") {
                    keep_alive = false;
                } else if contains_token(h.value, b"keep-alive") {
                    keep_alive = true;
                }
            }
        }
        Ok(Some((framing, keep_alive)))
    }

    #[test]
    fn the_framing_headers_read_as_they_were_read_before() {
        const NAMES: &[&str] = &[
            "Content-Length",
            "content-length",
            "CONTENT-LENGTH",
            "Content-Lengtx",
            "Content-Lengths",
            "Content-Type",
            "Transfer-Encoding",
            "transfer-encoding",
            "Transfer-Encodinx",
            "Connection",
            "connection",
            "Connectiom",
            "X-Connection",
            "Server",
            "Date",
        ];
        const VALUES: &[&str] = &[
            "0",
            "5",
            " 5 ",
            "\t5",
            "+5",
            "-5",
            "05",
            "5 5",
            "5a",
            "",
            "18446744073709551615",
            "18446744073709551616",
            "99999999999999999999",
            "chunked",
            "gzip, chunked",
            "Chunked ,x",
            "close",
            "keep-alive",
            "Keep-Alive, Upgrade",
            "upgrade, close",
            "text/plain",
        ];
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as usize
        };
        for case in 0..20_000 {
            let version = ["HTTP/1.1", "HTTP/1.0"][next(2)];
            let mut head = format!("{version} 200 OK\r\n");
            for _ in 0..next(6) {
                head += &format!(
                    "{}: {}\r\n",
                    NAMES[next(NAMES.len())],
                    VALUES[next(VALUES.len())]
                );
            }
            head += "\r\n";
            let now = parse_head(head.as_bytes())
                .map(|p| p.map(|(_, _, f, k)| (f, k)))
                .map_err(|e| match e {
                    H1Error::Invalid(w) => w,
                    other => format!("{other:?}"),
                });
            let before = framing_as_before(head.as_bytes());
            assert_eq!(now, before, "case {case}: {head:?}");
        }
    }

    #[test]
    fn is_lower_is_eq_ignore_ascii_case_without_cr() {
        const WORDS: &[&[u8]] = &[
            b"content-length",
            b"transfer-encoding",
            b"connection",
            b"keep-alive",
            b"close",
            b"chunked",
        ];
        // Every byte but CR, at every position, in each word and its upper-case form.
        for word in WORDS {
            let upper = word.to_ascii_uppercase();
            for base in [word.to_vec(), upper] {
                assert!(is_lower(&base, word));
                for at in 0..base.len() {
                    for b in (0..=255u8).filter(|&b| b != b'\r') {
                        let mut v = base.clone();
                        v[at] = b;
                        assert_eq!(
                            is_lower(&v, word),
                            v.eq_ignore_ascii_case(word),
                            "{v:?} against {word:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn content_length_reads_what_str_parse_read() {
        let alphabet = b"0123456789 \t+-a.";
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..50_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 24) as usize;
            let v: Vec<u8> = (0..len)
                .map(|i| alphabet[((x >> (i * 2 % 60)) % alphabet.len() as u64) as usize])
                .collect();
            let before = std::str::from_utf8(&v)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok());
            assert_eq!(
                content_length(&v),
                before,
                "{:?}",
                String::from_utf8_lossy(&v)
            );
        }
        assert_eq!(content_length(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(content_length(b"18446744073709551616"), None);
        assert_eq!(content_length(b" 42\t"), Some(42));
    }

    type Parsed = Result<Option<(u16, usize, Framing, bool)>, String>;

    fn comparable(r: Result<Option<(u16, usize, Framing, bool)>, H1Error>) -> Parsed {
        r.map_err(|e| match e {
            H1Error::Invalid(w) => w,
            other => format!("{other:?}"),
        })
    }

    /// A response head from parts that `httparse` accepts or refuses: status lines, names and
    /// values that are fine, near misses and bad bytes, bare LFs, obs-fold, header counts about
    /// the limit. Half are drawn from the parts `httparse` accepts only; half of the others
    /// have one byte changed.
    fn generated_head(next: &mut impl FnMut(usize) -> usize) -> Vec<u8> {
        const STATUS: &[&[u8]] = &[
            b"HTTP/1.1 200 OK\r\n",
            b"HTTP/1.1 200 OK\r\n",
            b"HTTP/1.0 404 Not Found\r\n",
            b"HTTP/1.1 204\r\n",
            b"HTTP/1.1 200 \r\n",
            b"HTTP/1.1 301 Moved\tPermanently\r\n",
            b"HTTP/1.1 200 \xe9t\xe9 \x80\r\n",
            b"HTTP/1.1 100 Continue\r\n",
            b"HTTP/1.1 200 OK\n",
            b"\r\nHTTP/1.1 200 OK\r\n",
            b"\nHTTP/1.1 200 OK\r\n",
            b"HTTP/1.2 200 OK\r\n",
            b"http/1.1 200 OK\r\n",
            b"HTTP/1.1  200 OK\r\n",
            b"HTTP/1.1 20 OK\r\n",
            b"HTTP/1.1 2000 OK\r\n",
            b"HTTP/1.1 200 O\x01K\r\n",
            b"HTTP/1.1 200 O\x7fK\r\n",
            b"HTTP/1.1 200 OK\r\r\n",
            b"HTTP/1.1 200\n",
            b"HTTP/1.1 200OK\r\n",
        ];
        const NAMES: &[&[u8]] = &[
            b"Content-Length",
            b"content-length",
            b"Transfer-Encoding",
            b"TRANSFER-ENCODING",
            b"Connection",
            b"Server",
            b"Date",
            b"Content-Type",
            b"X-Token!#$%&'*+-.^_`|~09",
            b"X Y",
            b"X\x7fY",
            b"X(Y",
            b"X\xc3\xa9",
            b"",
            b" Folded",
            b"\tFolded",
        ];
        const SEPARATORS: &[&[u8]] = &[b": ", b": ", b":", b":\t", b":  \t ", b" : "];
        const VALUES: &[&[u8]] = &[
            b"0",
            b"5",
            b"5 ",
            b"+5",
            b"-5",
            b"5a",
            b"",
            b"18446744073709551616",
            b"chunked",
            b"gzip, chunked",
            b"close",
            b"keep-alive",
            b"Keep-Alive, Upgrade",
            b"nginx/1.22.1",
            b"Sun, 29 Nov 2026 02:45:00 GMT",
            b"text/html; charset=utf-8",
            b"a\tb \t",
            b"caf\xe9",
            b"a\x01b",
            b"a\x7fb",
            b"a\x00b",
            b"a\rb",
            b"a long value that runs past a word or two, \"quoted\" (and more)",
        ];
        const ENDS: &[&[u8]] = &[
            b"\r\n",
            b"\r\n",
            b"\r\n",
            b"\r\n",
            b"\n",
            b"\r\n \tfold\r\n",
        ];
        let count = match next(40) {
            0 => 62 + next(5),
            _ => next(9),
        };
        // Half the heads are drawn from the parts `httparse` accepts (those listed first).
        let clean = next(2) == 0;
        let mut pick = |parts: &[&'static [u8]], fine: usize| {
            parts[next(if clean { fine } else { parts.len() })]
        };
        let mut head = pick(STATUS, 8).to_vec();
        for _ in 0..count {
            head.extend_from_slice(pick(NAMES, 9));
            head.extend_from_slice(pick(SEPARATORS, 5));
            head.extend_from_slice(pick(VALUES, 18));
            head.extend_from_slice(pick(ENDS, 4));
        }
        head.extend_from_slice(pick(&[b"\r\n", b"\n", b"\r"], 1));
        if !clean && next(2) == 0 {
            const BYTES: &[u8] = b"\r\n\t :\x00\x01\x7f\x80\xff(a0";
            let at = next(head.len());
            head[at] = BYTES[next(BYTES.len())];
        }
        head.extend_from_slice(b"hello");
        head
    }

    /// The scanner against `httparse` on generated heads, each cut at every length as the
    /// reads may cut it (a head split across two reads is parsed at the first read's length,
    /// then at the whole): wherever the scanner answers, `httparse` answers the same, and
    /// `parse_head` always does.
    #[test]
    fn the_scanner_reads_what_httparse_reads() {
        let mut x = 0x51AF_D7ED_558C_CD1Fu64;
        let mut next = |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as usize
        };
        let (mut scanned, mut left, mut refused) = (0, 0, 0);
        for case in 0..6_000 {
            let head = generated_head(&mut next);
            // Every length for a third of the heads, the whole head for the rest.
            let cuts: Box<dyn Iterator<Item = usize>> = if case % 3 == 0 {
                Box::new(0..=head.len())
            } else {
                Box::new(std::iter::once(head.len()))
            };
            for cut in cuts {
                let part = &head[..cut];
                let reference = comparable(parse_head_httparse(part));
                let by_scan = scan::scan(part);
                if cut == head.len() {
                    match by_scan {
                        Some(_) => scanned += 1,
                        None => left += 1,
                    }
                }
                if let Some(by_scan) = by_scan {
                    let by_scan = by_scan.map(Some).map_err(String::from);
                    assert_eq!(by_scan, reference, "case {case} cut {cut}: {part:?}");
                }
                assert_eq!(
                    comparable(parse_head(part)),
                    reference,
                    "case {case} cut {cut}: {part:?}"
                );
                if cut == head.len() && reference.is_err() {
                    refused += 1;
                }
            }
        }
        // Not vacuous: both readers are exercised, and so is refusal.
        assert!(scanned > 1_500, "the scanner read {scanned} heads");
        assert!(left > 1_500, "the scanner left {left} heads");
        assert!(refused > 1_000, "{refused} refused");
    }

    #[test]
    fn heads() {
        assert!(matches!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\nhello"),
            Err(H1Error::Invalid(w)) if w.contains("conflicting")
        ));
        assert!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello")
                .is_ok()
        );
        let (s, n, f, k) = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
            .unwrap()
            .unwrap();
        assert_eq!((s, n, f, k), (200, 38, Framing::Length(5), true));
        let (_, _, f, k) = parse_head(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!((f, k), (Framing::Chunked, false));
        let (_, _, f, k) = parse_head(b"HTTP/1.0 200 OK\r\n\r\n").unwrap().unwrap();
        assert_eq!((f, k), (Framing::UntilClose, false));
        assert!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-")
                .unwrap()
                .is_none()
        );
        assert!(parse_head(b"garbage\r\n\r\n").is_err());
    }

    /// Serves `response` in pieces of `step` bytes and returns what the client made of it.
    fn run(response: &'static [u8], step: usize, head_only: bool) -> Result<Response, H1Error> {
        run_capture(response, step, head_only, None)
    }

    fn run_capture(
        response: &'static [u8],
        step: usize,
        head_only: bool,
        capture: Option<&mut Capture>,
    ) -> Result<Response, H1Error> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server = tokio::spawn(serve_in_pieces(listener, response, step));
            let mut stream = Stream::Plain(TcpStream::connect(addr).await.unwrap());
            let mut buf = Vec::new();
            let r = exchange(
                &mut stream,
                b"GET / HTTP/1.1\r\nhost: x\r\n\r\n",
                head_only,
                &mut buf,
                capture,
            )
            .await;
            server.await.unwrap();
            r
        })
    }

    #[test]
    fn bodies_by_length_chunks_and_close_in_any_split() {
        let chunked: &'static [u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n7\r\n, world\r\n0\r\nTrailer: t\r\n\r\n";
        for step in [1, 3, 7, 1000] {
            let r = run(
                b"HTTP/1.1 201 Created\r\ncontent-length: 11\r\n\r\nhello world",
                step,
                false,
            )
            .unwrap();
            assert_eq!(
                (r.status, r.body_bytes, r.keep_alive),
                (201, 11, true),
                "step {step}"
            );
            let r = run(chunked, step, false).unwrap();
            assert_eq!(
                (r.status, r.body_bytes, r.keep_alive),
                (200, 12, true),
                "step {step}"
            );
            let r = run(
                b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\n\r\nuntil close",
                step,
                false,
            )
            .unwrap();
            assert_eq!(
                (r.status, r.body_bytes, r.keep_alive),
                (200, 11, false),
                "step {step}"
            );
        }
        let r = run(b"HTTP/1.1 200 OK\r\ncontent-length: 500\r\n\r\n", 100, true).unwrap();
        assert_eq!(r.body_bytes, 0, "HEAD has no body");
    }

    #[test]
    fn a_buffer_released_while_waiting_reads_the_same_bytes_in_any_split() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let responses: [&'static [u8]; 3] = [
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 12\r\n\r\nhello, world",
            b"HTTP/1.0 200 OK\r\n\r\nhello, world",
        ];
        for response in responses {
            for step in [1, 4, 1000] {
                let body = rt.block_on(async move {
                    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                    let addr = listener.local_addr().unwrap();
                    let server = tokio::spawn(serve_in_pieces(listener, response, step));
                    let mut stream = Stream::Plain(TcpStream::connect(addr).await.unwrap());
                    use tokio::io::AsyncWriteExt;
                    stream
                        .write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
                        .await
                        .unwrap();
                    let mut buf = Vec::new();
                    let head = read_head(&mut stream, &mut buf, None).await.unwrap();
                    let mut body = Vec::new();
                    let n = read_body(
                        &mut stream,
                        &mut buf,
                        head.framing,
                        Idle::Release,
                        &mut |chunk| {
                            body.extend_from_slice(chunk);
                            true
                        },
                    )
                    .await
                    .unwrap();
                    assert_eq!(n, 12);
                    server.await.unwrap();
                    body
                });
                assert_eq!(
                    body,
                    b"hello, world",
                    "step {step}: {}",
                    String::from_utf8_lossy(response)
                );
            }
        }
    }

    #[test]
    fn captured_bodies_and_headers_match_in_any_split() {
        let chunked: &'static [u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Token: abc\r\n\r\n5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n";
        for step in [1, 4, 9, 1000] {
            let mut c = Capture::new(true);
            run_capture(chunked, step, false, Some(&mut c)).unwrap();
            assert_eq!(c.body, b"hello, world", "step {step}");
            assert!(
                c.headers
                    .contains(&("X-Token".to_string(), "abc".to_string())),
                "step {step}: {:?}",
                c.headers
            );
            let mut c = Capture::new(false);
            run_capture(
                b"HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\nhello world",
                step,
                false,
                Some(&mut c),
            )
            .unwrap();
            assert_eq!(c.body, b"hello world", "step {step}");
            assert!(
                c.headers.is_empty(),
                "step {step}: headers kept unasked: {:?}",
                c.headers
            );
        }
    }

    /// Feeds `wire` to a decoder in pieces cut at `cuts` (bytes left over stay for the next
    /// piece, as a read buffer keeps them); returns the body handed on, whether the decoder
    /// said it was complete, and its count.
    fn decode(
        framing: Framing,
        wire: &[u8],
        cuts: &[usize],
    ) -> Result<(Vec<u8>, bool, u64), H1Error> {
        let mut body = Body::new(framing);
        let (mut got, mut buf, mut from) = (Vec::new(), Vec::new(), 0);
        for &cut in cuts.iter().chain([&wire.len()]) {
            buf.extend_from_slice(&wire[from..cut]);
            from = cut;
            if body.take(&mut buf, &mut |c| {
                got.extend_from_slice(c);
                true
            })? {
                return Ok((got, true, body.total));
            }
        }
        Ok((got, false, body.total))
    }

    #[test]
    fn the_body_decoder_hands_on_the_same_bytes_at_every_split() {
        let chunked: &[u8] = b"5;x=y\r\nhello\r\n7\r\n, world\r\n0\r\nTrailer: t\r\n\r\n";
        let cases: [(Framing, &[u8], bool); 4] = [
            (Framing::Chunked, chunked, true),
            (
                Framing::Length(12),
                b"hello, world and bytes past the length",
                true,
            ),
            (Framing::UntilClose, b"hello, world", false),
            (Framing::Length(0), b"", true),
        ];
        for (framing, wire, complete) in cases {
            let all: Vec<usize> = (1..wire.len()).collect();
            for cuts in [vec![], all.clone()]
                .into_iter()
                .chain((0..=wire.len()).map(|c| vec![c]))
            {
                let (got, done, total) = decode(framing, wire, &cuts).unwrap();
                let want: &[u8] = if wire.is_empty() {
                    b""
                } else {
                    b"hello, world"
                };
                assert_eq!(
                    (got.as_slice(), done, total),
                    (want, complete, want.len() as u64),
                    "{framing:?} cut at {cuts:?}"
                );
            }
        }
        // The end of the connection: complete only for a body framed by it.
        let mut body = Body::new(Framing::Chunked);
        let mut buf = chunked[..9].to_vec();
        assert!(!body.take(&mut buf, &mut |_| true).unwrap());
        assert!(matches!(
            body.end(),
            Err(H1Error::Closed("connection closed inside a chunk"))
        ));
        assert!(matches!(
            Body::new(Framing::Length(3)).end(),
            Err(H1Error::Closed(_))
        ));
        assert_eq!(Body::new(Framing::UntilClose).end().unwrap(), 0);
    }

    #[test]
    fn the_body_decoder_stops_when_the_sink_does_and_refuses_bad_chunks() {
        let mut body = Body::new(Framing::Chunked);
        let mut buf = b"5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n".to_vec();
        let mut calls = 0;
        assert!(
            body.take(&mut buf, &mut |_| {
                calls += 1;
                false
            })
            .unwrap()
        );
        assert_eq!(
            (calls, body.total),
            (1, 5),
            "one chunk handed on, then stopped"
        );
        for bad in [&b"zz\r\nhello"[..], b"-1\r\n"] {
            let r = decode(Framing::Chunked, bad, &[]);
            assert!(
                matches!(&r, Err(H1Error::Invalid(m)) if m == "invalid chunk size"),
                "{r:?}"
            );
        }
        let long = vec![b'1'; MAX_HEAD + 1];
        assert!(
            matches!(decode(Framing::Chunked, &long, &[]), Err(H1Error::Invalid(m)) if m == "chunk line too long")
        );
    }

    #[test]
    fn truncated_responses_are_errors() {
        assert!(matches!(
            run(
                b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhel",
                100,
                false
            ),
            Err(H1Error::Closed(_))
        ));
        assert!(matches!(
            run(b"HTTP/1.1 200 OK\r\nconte", 100, false),
            Err(H1Error::Closed(_))
        ));
        assert!(matches!(run(b"", 100, false), Err(H1Error::Stale(_))));
    }
}
