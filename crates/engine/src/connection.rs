//! Opening a connection: TCP (+ TLS) with phase timings, then HTTP/1.1 as is or an HTTP/2
//! handshake when ALPN chose h2 or the run forces it. Shared by a VU's own connection, the
//! worker's pool and the preflight check.

use std::sync::Arc;

use rustls::ClientConfig;

use crate::dial::{ConnectTimes, dial};
use crate::failure::Failure;
use crate::h1::Stream;
use crate::http2::{self, H2Conn};
use crate::http3::{self, H3Conn};
use crate::target::Target;

/// An open connection: our own HTTP/1.1, or HTTP/2 on the `h2` crate.
pub(crate) enum Connection {
    H1(Stream),
    H2(H2Conn),
    /// HTTP/3 on quinn and the `h3` crate, when the TLS config offers h3 alone.
    H3(H3Conn),
}

impl Connection {
    pub(crate) fn is_closed(&self) -> bool {
        match self {
            Connection::H1(_) => false,
            Connection::H2(c) => c.is_closed(),
            Connection::H3(c) => c.is_closed(),
        }
    }
}

/// Opens a connection to `target`, with TLS when `tls` is given (and the URL is https).
pub(crate) async fn connect(
    target: &Target,
    tls: Option<&Arc<ClientConfig>>,
) -> Result<(Connection, ConnectTimes), Failure> {
    connect_with(target, tls, false).await
}

/// [`connect`]; HTTP/2 when the server chose it in the TLS handshake, or with `force_h2`.
pub(crate) async fn connect_with(
    target: &Target,
    tls: Option<&Arc<ClientConfig>>,
    force_h2: bool,
) -> Result<(Connection, ConnectTimes), Failure> {
    if let Some(config) = tls.filter(|c| target.tls && http3::offered(Some(c))) {
        let (conn, times) = http3::connect(target, config).await?;
        return Ok((Connection::H3(conn), times));
    }
    let (stream, times) = dial(target, tls).await.map_err(Failure::dial)?;
    let h2 = force_h2
        || matches!(&stream, Stream::Tls(s) if s.get_ref().1.alpn_protocol() == Some(b"h2"));
    Ok((
        if h2 {
            Connection::H2(http2::handshake(stream).await?)
        } else {
            Connection::H1(stream)
        },
        times,
    ))
}

/// The protocols a client's requests may go out on, so that a request is built for those
/// and no other: HTTP/1.1 bytes, an HTTP/2 head, or both where TLS's ALPN picks per
/// connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Speaks {
    Http1,
    Http2,
    Either,
    /// HTTP/3 alone (`--http3`).
    Http3,
}

impl Speaks {
    /// `--http2` speaks HTTP/2 alone (prior knowledge, or forced over TLS); TLS otherwise lets
    /// ALPN choose; plain TCP is HTTP/1.1. A TLS config that offers h3 alone speaks HTTP/3.
    pub(crate) fn of(force_h2: bool, tls: Option<&Arc<ClientConfig>>) -> Speaks {
        if http3::offered(tls) {
            return Speaks::Http3;
        }
        match (force_h2, tls.is_some()) {
            (true, _) => Speaks::Http2,
            (false, true) => Speaks::Either,
            (false, false) => Speaks::Http1,
        }
    }
}
