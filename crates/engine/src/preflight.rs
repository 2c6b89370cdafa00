//! The check, before any load is sent, that the target answers at all: one connection
//! opened exactly as a VU opens its own (TCP, TLS, and HTTP/2's handshake when the server
//! chooses it), so that a wrong port or an untrusted certificate is one clear message
//! rather than a run full of errors.

use std::time::Duration;

use volley_stats::ErrorKind;

use crate::connection::connect;
use crate::error::{Error, Repr};
use crate::target::Target;
use crate::tls::TlsOptions;

/// Connects once (and completes the TLS handshake for https) to show the target answers.
pub fn preflight(target: &Target, tls: &TlsOptions, timeout: Duration) -> Result<(), Error> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let config = if target.tls {
        tls.client_config(false)?
    } else {
        None
    };
    let unreachable = |message: String| Repr::Unreachable {
        url: target.uri.to_string(),
        addr: target.addr,
        message,
    };
    tokio::task::LocalSet::new()
        .block_on(&rt, async {
            match tokio::time::timeout(timeout, connect(target, config.as_ref())).await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(f)) if f.kind == ErrorKind::Tls => Err(Repr::TlsRejected {
                    url: target.uri.to_string(),
                    addr: target.addr,
                    message: f.message,
                }),
                Ok(Err(f)) => Err(unreachable(f.message)),
                Err(_) if tls.http3 => Err(unreachable(format!(
                    "no QUIC handshake answer within {}s (HTTP/3 runs over UDP: is an HTTP/3 server listening on UDP port {}?)",
                    timeout.as_secs_f64(),
                    target.addr.port()
                ))),
                Err(_) => Err(unreachable(format!(
                    "no connection within {}s",
                    timeout.as_secs_f64()
                ))),
            }
        })
        .map_err(Error::from)
}
