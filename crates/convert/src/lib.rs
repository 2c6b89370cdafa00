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

/// Why a conversion failed; the message says what is wrong and what to give instead.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    /// The HAR file.
    #[error("HAR: {0}")]
    Har(String),
    /// The OpenAPI document.
    #[error("OpenAPI: {0}")]
    OpenApi(String),
    /// The curl command line.
    #[error("curl: {0}")]
    Curl(String),
    /// The access log.
    #[error("access log: {0}")]
    AccessLog(String),
}
