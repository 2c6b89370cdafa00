//! Opening a connection: TCP without Nagle's delay, then, for an https target, the TLS
//! handshake, each phase timed.
//!
//! Every connection the engine opens comes from here — a VU's, an event stream's, a
//! WebSocket's, the pre-flight check's and the metrics scraper's — so that all of them
//! connect, verify certificates and time their phases the same way.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use tokio::net::{TcpSocket, TcpStream};
use tokio_rustls::TlsConnector;

use crate::error::{Error, Repr};
use crate::h1::Stream;
use crate::target::Target;

/// What it took to open a connection, µs.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ConnectTimes {
    /// From the start to the TCP connection.
    pub(crate) tcp_us: u64,
    /// The TLS handshake (0 without TLS).
    pub(crate) tls_us: u64,
}

/// Connects to `target`; with a TLS `config`, and when the target is https, completes the
/// handshake (SNI and verification against the URL's host name) before returning.
pub(crate) async fn dial(
    target: &Target,
    tls: Option<&Arc<ClientConfig>>,
) -> Result<(Stream, ConnectTimes), Error> {
    let t0 = Instant::now();
    let tcp = connect(target).await.map_err(Repr::Connect)?;
    let _ = tcp.set_nodelay(true);
    let t1 = Instant::now();
    let mut times = ConnectTimes {
        tcp_us: micros(t1 - t0),
        tls_us: 0,
    };
    let Some(config) = tls.filter(|_| target.tls) else {
        return Ok((Stream::Plain(tcp), times));
    };
    let name = ServerName::try_from(target.host.clone()).map_err(Repr::ServerName)?;
    let stream = TlsConnector::from(config.clone())
        .connect(name, tcp)
        .await
        .map_err(Repr::Tls)?;
    times.tls_us = micros(t1.elapsed());
    Ok((Stream::Tls(Box::new(stream)), times))
}

/// A TCP connection to the target, from the next source address when some are given.
async fn connect(target: &Target) -> std::io::Result<TcpStream> {
    let Some(source) = target.sources.take() else {
        return TcpStream::connect(target.addr).await.map_err(ports_hint);
    };
    let socket = if target.addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    bind_address_no_port(&socket);
    socket
        .bind(std::net::SocketAddr::new(source, 0))
        .map_err(|e| {
            std::io::Error::new(e.kind(), format!("binding to source address {source}: {e}"))
        })?;
    socket.connect(target.addr).await.map_err(ports_hint)
}

/// Lets `bind` to a source address leave the port to `connect` (Linux's
/// `IP_BIND_ADDRESS_NO_PORT`, as HAProxy and Envoy set it). Without it, `bind(addr, 0)`
/// reserves a port for every destination and searches the whole range for a free one:
/// 19,000 paced VUs from one address sent 11,030 requests in 20 s with the core saturated
/// (bench/vus.sh); with it, `connect` picks a port unique for the whole 4-tuple, and the
/// same run sent 131,009. Neither rustix nor socket2 offers the option, hence one of the
/// engine's two `unsafe` calls (the other is `run::trim_heap`).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn bind_address_no_port(socket: &TcpSocket) {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: `socket` owns a valid socket descriptor for the whole call, and the option
    // value is a `c_int` whose size is passed with it. A failure (an old kernel) only
    // leaves the kernel's default.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn bind_address_no_port(_: &TcpSocket) {}

/// "Cannot assign requested address" on connect: the local ports ran out.
fn ports_hint(e: std::io::Error) -> std::io::Error {
    if e.kind() != std::io::ErrorKind::AddrNotAvailable {
        return e;
    }
    std::io::Error::new(
        e.kind(),
        format!(
            "{e}: no local port left for another connection — spread connections over several source addresses with --source-addrs (e.g. 127.0.0.1-127.0.0.4 on loopback)"
        ),
    )
}

/// A duration in whole µs, as every timing is kept.
pub(crate) fn micros(d: Duration) -> u64 {
    d.as_micros() as u64
}
