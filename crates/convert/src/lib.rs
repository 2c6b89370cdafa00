//! Scenario files from what a team already has: a browser recording (HAR), an OpenAPI
//! document, a curl command line, a web server's access log (its mix and peak rate). Each
//! converter writes scenario YAML as text with comments (where a value came from, which
//! environment variable to set), never a recorded credential; `volley check` validates what
//! it wrote like any hand-written file.
//!
//! Input is text (the caller reads files; an access log is read as a stream of lines);
//! nothing here touches the network.

pub mod access_log;
mod correlate;
pub mod curl;
mod exchange;
pub mod har;
pub mod openapi;
mod schema;
mod secrets;
mod step;
mod text;
mod yaml;

pub use access_log::AccessLogOptions;
pub use har::HarOptions;
pub use openapi::OpenApiOptions;

/// A scenario file's text and what the converter wants the user to know.
#[derive(Debug, Clone)]
pub struct Converted {
    /// The scenario file.
    pub yaml: String,
    /// One line each: what was left out, what to set.
    pub notes: Vec<String>,
    /// Environment variables the scenario reads (credentials it replaced).
    pub env: Vec<String>,
}

/// Why a conversion failed: its [`Kind`] is what was being converted, and the message says
/// what is wrong and what to give instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: Kind,
    message: String,
}

/// What was being converted, for callers that branch on it.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A HAR file.
    Har,
    /// An OpenAPI document.
    OpenApi,
    /// A curl command line.
    Curl,
    /// An access log.
    AccessLog,
}

impl Error {
    pub(crate) fn new(kind: Kind, message: String) -> Error {
        Error { kind, message }
    }

    /// What was being converted.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// A curl command line could not be converted.
    pub fn is_curl(&self) -> bool {
        self.kind == Kind::Curl
    }

    /// What is wrong, without the prefix naming the input.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.kind {
            Kind::Har => "HAR",
            Kind::OpenApi => "OpenAPI",
            Kind::Curl => "curl",
            Kind::AccessLog => "access log",
        };
        write!(f, "{what}: {}", self.message)
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod error_tests {
    use super::Kind;

    #[test]
    fn a_curl_form_is_refused_as_a_curl_error() {
        let args: Vec<String> = ["curl", "-F", "a=1", "http://127.0.0.1:8080/up"]
            .map(String::from)
            .into();
        let e = crate::curl::convert(&args, "volley convert curl").unwrap_err();
        assert_eq!(e.kind(), Kind::Curl, "{e}");
        assert!(e.is_curl());
        assert!(
            e.to_string()
                .starts_with("curl: `-F` sends a multipart form"),
            "{e}"
        );
        assert!(e.message().starts_with("`-F`"), "{e}");
    }
}
