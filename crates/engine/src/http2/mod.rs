//! HTTP/2, client side, written for load (issue 57): frames ([`frame`]), HPACK
//! ([`hpack`]), the connection's state without I/O ([`conn`]) and the task that drives a
//! connection's socket ([`driver`]). The `h2` crate spent most of volley's instructions per
//! request (a `HeaderMap` per response, a lock per stream operation, its connection task);
//! this reads only what the recorder needs — status, body length, and headers or body only
//! for a request that asks — and sends a repeated request's head as a copy of the block it
//! encoded last.
//!
//! A connection is one task; a request is a stream any VU sharing the connection opens,
//! gated so that no more streams are open than the server's `SETTINGS_MAX_CONCURRENT_STREAMS`
//! allows. The gate's wait is measured apart from the request: the stream's own time to
//! first byte starts when the stream may open. Windows are opened wide (as h2load's are)
//! so that a response is never held back by flow control.

mod conn;
#[cfg(test)]
mod conn_tests;
#[cfg(test)]
mod differential_tests;
mod driver;
#[cfg(test)]
mod driver_tests;
mod frame;
mod hpack;

use std::time::Instant;

use volley_stats::ErrorKind;

pub(crate) use conn::H2Head;
pub(crate) use driver::{Handle as H2Conn, exchange};

use crate::failure::Failure;
use crate::h1::Stream;

/// The HTTP/2 handshake on an open stream (h2c prior knowledge, or TLS that chose h2): the
/// preface and SETTINGS go out with the first request; the connection's task runs on this
/// thread's event loop until the connection ends.
pub(crate) async fn handshake(stream: Stream) -> Result<H2Conn, Failure> {
    Ok(driver::start(stream))
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
