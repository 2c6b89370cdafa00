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

mod error;

pub use client::Store;
use error::Repr;
pub use error::{Error, Kind};
pub use location::Location;
pub use transfer::Transfer;
