//! Run directories to and from S3-compatible object storage, so that results can leave a
//! machine that is gone when the run ends (a Kubernetes pod, a CI runner).
//!
//! [`Location`] is an `s3://bucket/prefix` URL; [`Store`] opens the bucket with the standard
//! AWS environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
//! `AWS_REGION`, web identity, ...) and `AWS_ENDPOINT_URL` for S3-compatible servers (MinIO,
//! Ceph, moto), addressed path-style; then [`Store::upload_dir`] copies a directory's files
//! under the prefix and [`Store::download`] copies everything under a prefix into a directory.
//! What the files mean (segments, run ids) is for the callers: this crate moves bytes.

mod client;
mod location;
mod transfer;

pub use client::Store;
pub use location::Location;
pub use transfer::Transfer;

/// What went wrong talking to object storage; the message says what to change.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The URL is not `s3://bucket/prefix`.
    #[error("`{url}`: {why}; write it as s3://BUCKET/PREFIX, e.g. s3://load-results/volley")]
    Location { url: String, why: String },
    /// The environment does not describe a usable endpoint or credentials.
    #[error("{0}")]
    Config(String),
    /// A local file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    /// The object store refused or failed a request.
    #[error("{what}: {source}")]
    Remote {
        what: String,
        source: object_store::Error,
    },
    /// A key under the prefix would be written outside the destination directory.
    #[error(
        "object `{0}` has a name that is not a plain relative path (`..`, `.` or an empty part); refusing to write it"
    )]
    UnsafeKey(String),
}

impl StoreError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        StoreError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
