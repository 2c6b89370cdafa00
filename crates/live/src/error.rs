//! The crate's one error type, shaped as hyper's: an [`Error`] whose [`Kind`] the caller asks
//! about (`is_open_outside()`), and a message that says what is wrong.

use std::net::SocketAddr;

/// Why the dashboard could not start, or its address could not be read.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Error(#[from] Repr);

/// What went wrong, for callers that branch on it.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The address could not be bound.
    Bind,
    /// An address other than loopback without an access token.
    OpenOutside,
    /// The dashboard's runtime could not start.
    Runtime,
    /// The address is not an address.
    BadAddr,
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> Kind {
        match &self.0 {
            Repr::Bind { .. } => Kind::Bind,
            Repr::OpenOutside(_) => Kind::OpenOutside,
            Repr::Runtime(_) => Kind::Runtime,
            Repr::BadAddr(_) => Kind::BadAddr,
        }
    }

    /// An address other than loopback was asked for without an access token.
    pub fn is_open_outside(&self) -> bool {
        self.kind() == Kind::OpenOutside
    }

    /// The address could not be bound.
    pub fn is_bind(&self) -> bool {
        self.kind() == Kind::Bind
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum Repr {
    /// The address could not be bound.
    #[error(
        "{addr}: cannot listen there: {error}. Give a free address, like 127.0.0.1:8089 (or leave the address out for a free port on 127.0.0.1)"
    )]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// What the system said.
        error: std::io::Error,
    },
    /// An address other than loopback without a token.
    #[error("{0}: a dashboard on an address other than loopback needs an access token")]
    OpenOutside(SocketAddr),
    /// The dashboard's runtime could not start.
    #[error("cannot start the dashboard's thread: {0}")]
    Runtime(std::io::Error),
    /// The address is not an address.
    #[error("`{0}`: not an address; write it like 127.0.0.1:8089, 0.0.0.0:8089 or :8089")]
    BadAddr(String),
}

#[cfg(test)]
mod tests {
    use super::Kind;

    #[test]
    fn an_address_that_is_none_is_a_bad_address() {
        let e = crate::parse_addr(Some("localhost-ish")).unwrap_err();
        assert_eq!(e.kind(), Kind::BadAddr, "{e}");
        assert!(!e.is_bind() && !e.is_open_outside());
        assert!(e.to_string().contains("not an address"), "{e}");
    }
}
