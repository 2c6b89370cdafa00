//! `s3://bucket/prefix` parsed once, so that a bad URL is refused before a run starts rather
//! than when its results are uploaded.

use std::fmt;
use std::str::FromStr;

use crate::{Error, Repr};

/// A bucket and a key prefix (no leading or trailing `/`; empty for the bucket's root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The bucket's name.
    pub bucket: String,
    /// Key prefix, parts joined by `/`.
    pub prefix: String,
}

impl Location {
    /// This location with `part` (one or more `/`-separated parts) appended to the prefix.
    pub fn join(&self, part: &str) -> Location {
        let part = part.trim_matches('/');
        let prefix = match (self.prefix.is_empty(), part.is_empty()) {
            (_, true) => self.prefix.clone(),
            (true, false) => part.to_string(),
            (false, false) => format!("{}/{part}", self.prefix),
        };
        Location {
            bucket: self.bucket.clone(),
            prefix,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.prefix.is_empty() {
            write!(f, "s3://{}", self.bucket)
        } else {
            write!(f, "s3://{}/{}", self.bucket, self.prefix)
        }
    }
}

impl FromStr for Location {
    type Err = Error;

    fn from_str(url: &str) -> Result<Self, Error> {
        let bad = |why: &str| Repr::Location {
            url: url.to_string(),
            why: why.to_string(),
        };
        let rest = url.strip_prefix("s3://").ok_or_else(|| {
            bad("only s3:// URLs are understood (any S3-compatible server: set AWS_ENDPOINT_URL)")
        })?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        // S3's bucket naming rules, shortened: 3-63 of a-z 0-9 . - starting and ending alphanumeric.
        let ok_char =
            |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.';
        if bucket.is_empty() {
            return Err(bad("the bucket name is missing").into());
        }
        if !(3..=63).contains(&bucket.len())
            || !bucket.chars().all(ok_char)
            || !bucket.starts_with(|c: char| c.is_ascii_alphanumeric())
            || !bucket.ends_with(|c: char| c.is_ascii_alphanumeric())
        {
            return Err(bad(&format!(
                "`{bucket}` is not a bucket name (3-63 characters of a-z, 0-9, `.` and `-`)"
            ))
            .into());
        }
        let parts: Vec<&str> = prefix.split('/').filter(|p| !p.is_empty()).collect();
        if parts.iter().any(|p| *p == "." || *p == "..") {
            return Err(bad("the prefix may not contain `.` or `..` parts").into());
        }
        Ok(Location {
            bucket: bucket.to_string(),
            prefix: parts.join("/"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bucket_and_prefix() {
        let l: Location = "s3://load-results/team/volley/".parse().unwrap();
        assert_eq!(
            l,
            Location {
                bucket: "load-results".into(),
                prefix: "team/volley".into()
            }
        );
        assert_eq!(l.to_string(), "s3://load-results/team/volley");
        assert_eq!(
            l.join("run-1/segment-0").to_string(),
            "s3://load-results/team/volley/run-1/segment-0"
        );
        let root: Location = "s3://abc".parse().unwrap();
        assert_eq!(root.prefix, "");
        assert_eq!(root.join("x").to_string(), "s3://abc/x");
    }

    #[test]
    fn refuses_what_is_not_an_s3_url() {
        for (url, says) in [
            ("https://bucket/x", "only s3://"),
            ("s3://", "bucket name is missing"),
            ("s3://Big_Bucket/x", "not a bucket name"),
            ("s3://ab/x", "not a bucket name"),
            ("s3://bucket/a/../b", "`..`"),
        ] {
            let e = url.parse::<Location>().unwrap_err().to_string();
            assert!(e.contains(says), "{url}: {e}");
            assert!(e.contains("s3://BUCKET/PREFIX"), "{e}");
        }
    }
}
