//! A request's failure as the run counts it: an [`ErrorKind`] and the text shown once per
//! kind. Every layer below a request (dialing, TLS, HTTP/1.1, HTTP/2) reports through it, so
//! it sits beneath them all.

use volley_stats::ErrorKind;

use crate::error::{Error, Repr};
use crate::h1;

/// A failed request: its kind and what happened.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub(crate) kind: ErrorKind,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Failure {
            kind,
            message: message.into(),
        }
    }

    pub(crate) fn io(stage: &str, e: &std::io::Error) -> Self {
        use std::io::ErrorKind as K;
        let kind = match e.kind() {
            K::ConnectionRefused
            | K::AddrNotAvailable
            | K::NotFound
            | K::HostUnreachable
            | K::NetworkUnreachable => ErrorKind::Connect,
            K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof => {
                ErrorKind::Reset
            }
            K::TimedOut => ErrorKind::Timeout,
            _ if e.get_ref().is_some_and(|inner| inner.is::<rustls::Error>()) => ErrorKind::Tls,
            _ => ErrorKind::Protocol,
        };
        Failure::new(kind, format!("{stage}: {e}"))
    }

    pub(crate) fn h1(e: h1::H1Error) -> Self {
        match e {
            h1::H1Error::Io(stage, io) => Failure::io(stage, &io),
            h1::H1Error::Closed(what) => Failure::new(ErrorKind::Reset, what),
            h1::H1Error::Invalid(why) => Failure::new(ErrorKind::Protocol, why),
            h1::H1Error::Stale(what) => Failure::new(ErrorKind::Reset, what),
        }
    }

    /// A connection that could not be opened.
    pub(crate) fn dial(e: Error) -> Self {
        match e.0 {
            Repr::Connect(io) => Failure::io("connect", &io),
            e @ (Repr::Tls(_) | Repr::ServerName(_)) => Failure::new(ErrorKind::Tls, e.to_string()),
            e => Failure::new(ErrorKind::Protocol, e.to_string()),
        }
    }
}
