//! The demo target's one error type, shaped as hyper's: an [`Error`] whose [`Kind`] the
//! caller asks about (`is_pool_timeout()`), and the message the service reports.

/// Why the demo target could not start, a knob could not be set, or a query failed.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Error(#[from] Repr);

/// What went wrong, for callers that branch on it.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// No database connection became free within the acquire timeout.
    PoolTimeout,
    /// The database failed (SQLite, PostgreSQL, its file, or a query's task).
    Database,
    /// The address could not be listened on.
    Listen,
    /// No such knob.
    UnknownKnob,
    /// The value does not fit the knob.
    KnobValue,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum Repr {
    /// No connection became free within the acquire timeout.
    #[error("HikariPool-1 - Connection is not available, request timed out after {0}ms.")]
    PoolTimeout(u128),
    /// SQLite said no.
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// PostgreSQL said no.
    #[error("database error: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    /// The file could not be created.
    #[error("database file: {0}")]
    DbFile(std::io::Error),
    /// The query's blocking task failed.
    #[error("query task: {0}")]
    Task(String),
    /// The address could not be listened on.
    #[error("cannot listen: {0}")]
    Listen(std::io::Error),
    /// HTTP/3 could not be served (its certificate, TLS configuration or UDP socket).
    #[error("HTTP/3: {0}")]
    Http3(String),
    /// No such knob.
    #[error("`{name}` is not a demo-target knob; the knobs are {knobs}")]
    UnknownKnob {
        /// As given.
        name: String,
        /// Every knob's name, comma-separated.
        knobs: String,
    },
    /// The value does not fit the knob.
    #[error("{name}={value}: {why}")]
    KnobValue {
        /// The knob.
        name: String,
        /// As given.
        value: String,
        /// What it should look like.
        why: String,
    },
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> Kind {
        match &self.0 {
            Repr::PoolTimeout(_) => Kind::PoolTimeout,
            Repr::Sqlite(_) | Repr::Postgres(_) | Repr::DbFile(_) | Repr::Task(_) => Kind::Database,
            Repr::Listen(_) | Repr::Http3(_) => Kind::Listen,
            Repr::UnknownKnob { .. } => Kind::UnknownKnob,
            Repr::KnobValue { .. } => Kind::KnobValue,
        }
    }

    /// No database connection became free within the acquire timeout.
    pub fn is_pool_timeout(&self) -> bool {
        self.kind() == Kind::PoolTimeout
    }

    /// No such knob, or a value that does not fit it.
    pub fn is_knob(&self) -> bool {
        matches!(self.kind(), Kind::UnknownKnob | Kind::KnobValue)
    }
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Error {
        Error(Repr::Sqlite(e))
    }
}

impl From<tokio_postgres::Error> for Error {
    fn from(e: tokio_postgres::Error) -> Error {
        Error(Repr::Postgres(e))
    }
}

#[cfg(test)]
mod tests {
    use super::Kind;
    use crate::Knobs;

    #[test]
    fn a_knob_that_does_not_exist_or_fit_says_so_by_kind() {
        let mut knobs = Knobs::default();
        let e = knobs.set("db-pools", "3").unwrap_err();
        assert_eq!(e.kind(), Kind::UnknownKnob, "{e}");
        assert!(e.is_knob() && !e.is_pool_timeout());
        assert!(e.to_string().contains("is not a demo-target knob"), "{e}");
        let e = knobs.set("db-pool", "lots").unwrap_err();
        assert_eq!(e.kind(), Kind::KnobValue, "{e}");
    }
}
