//! Opening a bucket from the standard AWS environment, with the few rules volley adds:
//! path-style addressing for S3-compatible endpoints, plain http only to loopback (or when
//! `AWS_ALLOW_HTTP=true` says so), and rustls with ring as the TLS provider.

use std::net::IpAddr;
use std::sync::Arc;

use object_store::ObjectStore;
use object_store::aws::AmazonS3Builder;

use crate::{Error, Location, Repr};

/// An open bucket, and the runtime its requests run on (callers are synchronous).
#[derive(Debug)]
pub struct Store {
    pub(crate) inner: Arc<dyn ObjectStore>,
    pub(crate) location: Location,
    pub(crate) runtime: tokio::runtime::Runtime,
}

impl Store {
    /// Opens `location`'s bucket with credentials, region and endpoint from the environment.
    pub fn from_env(location: &Location) -> Result<Store, Error> {
        Store::with_env(location, std::env::vars())
    }

    /// As [`Store::from_env`], with the environment given (tests; no process-wide state).
    pub fn with_env(
        location: &Location,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Store, Error> {
        // reqwest is built without a default provider so that aws-lc stays out of the build;
        // ring is the project's provider. Installing fails harmlessly when one is set already.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let env: Vec<(String, String)> = env
            .into_iter()
            .filter(|(k, _)| k.starts_with("AWS_"))
            .collect();
        let get = |key: &str| env.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
        let mut builder = AmazonS3Builder::new();
        for (key, value) in &env {
            if let Ok(config) = key.to_ascii_lowercase().parse() {
                builder = builder.with_config(config, value);
            }
        }
        builder = builder
            .with_bucket_name(&location.bucket)
            .with_virtual_hosted_style_request(false);
        let endpoint = get("AWS_ENDPOINT_URL_S3")
            .or(get("AWS_ENDPOINT_URL"))
            .or(get("AWS_ENDPOINT"));
        if let Some(endpoint) = endpoint {
            builder = builder.with_endpoint(endpoint);
            let explicit = get("AWS_ALLOW_HTTP").is_some_and(|v| v.eq_ignore_ascii_case("true"));
            if let Some(rest) = endpoint.strip_prefix("http://") {
                if is_loopback(rest) {
                    builder = builder.with_allow_http(true);
                } else if !explicit {
                    return Err(Repr::Config(format!(
                        "AWS_ENDPOINT_URL={endpoint} is plain http to a host that is not loopback: use https, or set AWS_ALLOW_HTTP=true to send credentials and results unencrypted on purpose"
                    )).into());
                }
            }
        }
        if get("AWS_REGION").is_none() && get("AWS_DEFAULT_REGION").is_none() {
            builder = builder.with_region("us-east-1");
        }
        let s3 = builder.build().map_err(|source| Repr::Remote {
            what: format!("opening {location}"),
            source,
        })?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Repr::Config(format!("cannot start the I/O runtime: {e}")))?;
        Ok(Store {
            inner: Arc::new(s3),
            location: location.clone(),
            runtime,
        })
    }

    /// Where this store reads and writes.
    pub fn location(&self) -> &Location {
        &self.location
    }
}

/// `host[:port][/...]` names the loopback interface.
fn is_loopback(rest: &str) -> bool {
    let authority = rest.split('/').next().unwrap_or_default();
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for yes in [
            "127.0.0.1:9000",
            "localhost:5000/",
            "[::1]:9000",
            "127.0.0.2",
        ] {
            assert!(is_loopback(yes), "{yes}");
        }
        for no in [
            "minio.minio.svc:9000",
            "10.0.0.1:9000",
            "[2001:db8::1]:80",
            "localhost.example.com",
        ] {
            assert!(!is_loopback(no), "{no}");
        }
    }

    #[test]
    fn plain_http_elsewhere_needs_consent() {
        let loc: Location = "s3://results/x".parse().unwrap();
        let env = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Vec<_>>()
        };
        let e = Store::with_env(
            &loc,
            env(&[("AWS_ENDPOINT_URL", "http://minio.example:9000")]),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("AWS_ALLOW_HTTP=true"), "{e}");
        Store::with_env(
            &loc,
            env(&[
                ("AWS_ENDPOINT_URL", "http://minio.example:9000"),
                ("AWS_ALLOW_HTTP", "true"),
            ]),
        )
        .unwrap();
        Store::with_env(&loc, env(&[("AWS_ENDPOINT_URL", "http://127.0.0.1:9000")])).unwrap();
    }
}
