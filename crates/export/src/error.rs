//! The crate's one error type, shaped as hyper's: an [`Error`] whose [`Kind`] the caller asks
//! about (`is_spec()`), and a message in the crate's terms (an output, its URL); the binary
//! names the flag the output came from.

/// Why an output could not be set up.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Error(#[from] Repr);

/// What went wrong, for callers that branch on it.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The output was not `KIND=URL` with a known kind.
    Spec,
    /// The output's URL does not parse or is not http(s).
    Url,
    /// The HTTP client or its runtime could not start.
    Client,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum Repr {
    #[error("output {given}: {why}")]
    Spec { given: String, why: String },
    #[error("output {kind}={url}: {why}")]
    Url {
        kind: &'static str,
        url: String,
        why: String,
    },
    #[error("cannot start the metrics sender: {0}")]
    Client(String),
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> Kind {
        match &self.0 {
            Repr::Spec { .. } => Kind::Spec,
            Repr::Url { .. } => Kind::Url,
            Repr::Client(_) => Kind::Client,
        }
    }

    /// The output was not `KIND=URL` with a known kind.
    pub fn is_spec(&self) -> bool {
        self.kind() == Kind::Spec
    }

    /// The output's URL cannot be used.
    pub fn is_url(&self) -> bool {
        self.kind() == Kind::Url
    }
}

#[cfg(test)]
mod tests {
    use super::Kind;
    use crate::OutputSpec;

    #[test]
    fn an_unknown_output_kind_is_a_spec_error_that_names_no_flag() {
        let e = OutputSpec::parse("nope=http://127.0.0.1:9/").unwrap_err();
        assert_eq!(e.kind(), Kind::Spec, "{e}");
        assert!(e.is_spec() && !e.is_url());
        assert!(
            e.to_string()
                .starts_with("output nope=http://127.0.0.1:9/: unknown kind `nope`"),
            "{e}"
        );
        let e = OutputSpec::parse("otlp=http://[::1").unwrap_err();
        assert_eq!(e.kind(), Kind::Url, "{e}");
    }
}
