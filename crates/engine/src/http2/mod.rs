//! HTTP/2 on the `h2` crate directly, without hyper's client on top: hyper added a
//! dispatch channel, a boxed body and a task hop per request, and spent twice h2load's
//! CPU per request (issue 17). Here a connection is one task that drives the `h2`
//! connection; a request is a stream opened from a [`SendRequest`] handle that any number
//! of VUs may share, gated so that no more streams are opened than the server's
//! `SETTINGS_MAX_CONCURRENT_STREAMS` allows. The gate's wait is measured apart from the
//! request: the stream's own time to first byte starts when the stream may open.
//!
//! Windows are opened wide (as h2load's are) so that a response is never held back by
//! flow control, and every DATA frame's capacity is given back as soon as it is read.

// The codec, not yet driving connections: the engine stays on the `h2` crate until the
// codec's connection passes every test.
#[allow(dead_code)]
mod conn;
#[cfg(test)]
mod conn_tests;
#[allow(dead_code)]
mod driver;
#[allow(dead_code)]
mod frame;
#[allow(dead_code)]
mod hpack;

use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

use bytes::Bytes;
use h2::client::SendRequest;
use http::Request;
use tokio::sync::Notify;
use volley_stats::ErrorKind;

use crate::failure::Failure;
use crate::h1::{CAPTURE_LIMIT, Capture, Stream};

/// Stream receive window: large enough that a response body never waits for a
/// WINDOW_UPDATE on loopback.
const STREAM_WINDOW: u32 = 1 << 24;
/// Connection receive window, shared by all the streams of a connection.
const CONNECTION_WINDOW: u32 = 1 << 30;
/// Largest DATA frame the server may send: fewer frames for large bodies.
const MAX_FRAME: u32 = 1 << 20;
/// Streams opened before the server's first SETTINGS arrive. One: a server allowing fewer
/// than we guessed refuses the excess (REFUSED_STREAM), and a new connection would race the
/// same way. `h2` replaces it with the server's limit, or with no limit when its SETTINGS
/// name none, as soon as they arrive; they come before the first response, so only the
/// first round trip of a connection is narrowed.
const INITIAL_STREAMS: usize = 1;

/// An open HTTP/2 connection: a handle to open streams on and the gate they pass.
#[derive(Clone)]
pub(crate) struct H2Conn {
    send: SendRequest<Bytes>,
    gate: Rc<Gate>,
}

impl std::fmt::Debug for H2Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H2Conn")
            .field("open_streams", &self.gate.open.get())
            .field("closed", &self.gate.closed.get())
            .finish()
    }
}

impl H2Conn {
    /// The connection ended (GOAWAY, an error, the server closed it): open another.
    pub(crate) fn is_closed(&self) -> bool {
        self.gate.closed.get()
    }

    /// Takes the connection out of use (the server is going away): streams still on it
    /// finish, new requests open another connection.
    pub(crate) fn retire(&self) {
        self.gate.closed.set(true);
        self.gate.freed.notify_waiters();
    }
}

/// Counts a connection's open streams against the server's limit; VUs over it wait in
/// turn. Single-threaded: a worker's VUs and its connections share one event loop.
#[derive(Default)]
struct Gate {
    open: Cell<usize>,
    closed: Cell<bool>,
    freed: Notify,
}

/// A stream slot; giving it back lets the next waiting VU open its stream.
struct Permit(Rc<Gate>);

impl Drop for Permit {
    fn drop(&mut self) {
        self.0.open.set(self.0.open.get() - 1);
        self.0.freed.notify_one();
    }
}

impl Gate {
    async fn enter(self: &Rc<Self>, send: &SendRequest<Bytes>) -> Permit {
        loop {
            // Read each time: the server's SETTINGS may lower or raise it at any moment.
            let limit = send.current_max_send_streams().max(1);
            if self.open.get() < limit || self.closed.get() {
                self.open.set(self.open.get() + 1);
                return Permit(self.clone());
            }
            self.freed.notified().await;
        }
    }
}

/// The HTTP/2 handshake on an open stream (h2c prior knowledge, or TLS that chose h2);
/// the connection's task runs on this thread's event loop until the connection ends.
pub(crate) async fn handshake(stream: Stream) -> Result<H2Conn, Failure> {
    let (send, connection) = h2::client::Builder::new()
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .max_frame_size(MAX_FRAME)
        .initial_max_send_streams(INITIAL_STREAMS)
        .enable_push(false)
        .handshake::<_, Bytes>(stream)
        .await
        .map_err(|e| failure("handshake", e))?;
    let gate = Rc::new(Gate::default());
    let ended = gate.clone();
    tokio::task::spawn_local(async move {
        let _ = connection.await;
        ended.closed.set(true);
        // Waiting VUs go on to find the connection closed.
        ended.freed.notify_waiters();
    });
    Ok(H2Conn { send, gate })
}

/// One finished stream: status, when its head came, body bytes, and how long the VU
/// waited for a stream slot before it could open it, µs.
pub(crate) struct StreamDone {
    pub(crate) status: u16,
    pub(crate) first: Instant,
    pub(crate) bytes: u64,
    pub(crate) wait_us: u64,
}

/// A failed stream, and whether the request may go once more on a new connection
/// (refused before the server processed it: GOAWAY past its last stream, REFUSED_STREAM,
/// or a connection already gone when the stream was to open).
#[derive(Debug)]
pub(crate) struct StreamFailed {
    pub(crate) failure: Failure,
    pub(crate) retry: bool,
}

/// A stream failure of `kind` that may not be retried.
pub(crate) fn fail(kind: ErrorKind, message: impl Into<String>) -> StreamFailed {
    StreamFailed {
        failure: Failure::new(kind, message),
        retry: false,
    }
}

/// Sends one request as a stream on `conn` and reads the whole response.
pub(crate) async fn exchange(
    conn: &H2Conn,
    request: Request<()>,
    body: &Bytes,
    mut capture: Option<&mut Capture>,
) -> Result<StreamDone, StreamFailed> {
    let waited = Instant::now();
    let permit = conn.gate.enter(&conn.send).await;
    let wait_us = crate::dial::micros(waited.elapsed());
    let refused = |e: h2::Error| StreamFailed {
        retry: true,
        failure: failure("request", e),
    };
    let mut send = conn.send.clone().ready().await.map_err(refused)?;
    let end = body.is_empty();
    let (response, mut out) = send.send_request(request, end).map_err(refused)?;
    if !end {
        out.send_data(body.clone(), true)
            .map_err(|e| StreamFailed {
                retry: false,
                failure: failure("request body", e),
            })?;
    }
    let response = response.await.map_err(|e| StreamFailed {
        retry: unprocessed(&e),
        failure: failure("response", e),
    })?;
    let first = Instant::now();
    let status = response.status().as_u16();
    if let Some(c) = capture.as_deref_mut() {
        c.clear();
        if c.headers_wanted() {
            c.headers = response
                .headers()
                .iter()
                .map(|(n, v)| {
                    (
                        n.as_str().to_string(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect();
        }
    }
    let mut body = response.into_body();
    let mut bytes = 0u64;
    while let Some(data) = body.data().await {
        let data = data.map_err(|e| StreamFailed {
            retry: false,
            failure: failure("response body", e),
        })?;
        bytes += data.len() as u64;
        let _ = body.flow_control().release_capacity(data.len());
        if let Some(c) = capture.as_deref_mut() {
            let room = CAPTURE_LIMIT.saturating_sub(c.body.len());
            c.body.extend_from_slice(&data[..data.len().min(room)]);
        }
    }
    drop(permit);
    Ok(StreamDone {
        status,
        first,
        bytes,
        wait_us,
    })
}

/// Whether the server refused the stream before processing it, so that it may be sent
/// again (RFC 9113 §8.7): a GOAWAY whose last stream is below it, or REFUSED_STREAM.
fn unprocessed(e: &h2::Error) -> bool {
    (e.is_go_away() && e.is_remote()) || e.reason() == Some(h2::Reason::REFUSED_STREAM)
}

/// An `h2` error as a failure of its kind: GOAWAY and RST_STREAM from the server are kinds
/// of their own; socket errors are classed as for HTTP/1.1.
pub(crate) fn failure(stage: &str, e: h2::Error) -> Failure {
    if e.is_go_away() && e.is_remote() {
        let reason = e
            .reason()
            .map_or_else(|| "?".to_string(), |r| format!("{r:?}"));
        return Failure::new(
            ErrorKind::GoAway,
            format!("{stage}: the server sent GOAWAY ({reason})"),
        );
    }
    if e.is_reset() && e.is_remote() {
        let reason = e
            .reason()
            .map_or_else(|| "?".to_string(), |r| format!("{r:?}"));
        return Failure::new(
            ErrorKind::StreamReset,
            format!("{stage}: the server reset the stream (RST_STREAM {reason})"),
        );
    }
    if let Some(io) = e.get_io() {
        return Failure::io(stage, io);
    }
    Failure::new(ErrorKind::Protocol, format!("{stage}: {e}"))
}
