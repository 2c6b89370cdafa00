//! What one virtual user sends, and the timings around it.

use std::time::Duration;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::load::{Load, LoadSpec};
use crate::threshold::Threshold;
use crate::{Error, Scenario};

/// One HTTP request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestSpec {
    /// Method, upper case.
    pub method: String,
    /// Absolute `http://` or `https://` URL.
    pub url: String,
    /// Headers as (name, value).
    pub headers: Vec<(String, String)>,
    /// Body bytes (empty for none).
    #[serde(skip)]
    pub body: Vec<u8>,
}

impl RequestSpec {
    /// A plain GET of `url`.
    pub fn get(url: impl Into<String>) -> RequestSpec {
        RequestSpec {
            method: "GET".into(),
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// Parses a `Name: value` header as given on the command line.
    pub fn parse_header(s: &str) -> Result<(String, String), Error> {
        let (n, v) = s
            .split_once(':')
            .ok_or_else(|| Error::value(format!("header `{s}`: expected `Name: value`")))?;
        let n = n.trim();
        if !is_header_name(n) {
            return Err(Error::value(format!(
                "header `{s}`: `{n}` is not a valid header name"
            )));
        }
        Ok((n.to_string(), v.trim().to_string()))
    }
}

/// Whether `name` can be a header's name: one or more `tchar`s of RFC 9110 §5.6.2.
pub fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Which HTTP statuses count as success.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusSet(pub Vec<(u16, u16)>);

impl Default for StatusSet {
    /// Everything below 400, as nGrinder and k6 judge.
    fn default() -> Self {
        StatusSet(vec![(100, 399)])
    }
}

impl StatusSet {
    /// Parses `200,201,300-399`.
    pub fn parse(s: &str) -> Result<StatusSet, Error> {
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim) {
            let bad = || {
                Error::value(format!(
                    "status `{part}`: expected a code or a range such as 200-299"
                ))
            };
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let a: u16 = a.trim().parse().map_err(|_| bad())?;
            let b: u16 = b.trim().parse().map_err(|_| bad())?;
            if !(100..=599).contains(&a) || !(100..=599).contains(&b) || a > b {
                return Err(bad());
            }
            out.push((a, b));
        }
        Ok(StatusSet(out))
    }

    /// Whether `status` is a success.
    pub fn contains(&self, status: u16) -> bool {
        self.0.iter().any(|&(a, b)| (a..=b).contains(&status))
    }
}

/// Settings a run takes from the command line or from a scenario file, typed. Both build
/// one; [`Settings::merge`] lays the command line over the file, with the rules written once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    /// The load (its own merge rules: [`LoadSpec::merge`]).
    pub load: LoadSpec,
    /// The URL (single-request runs) or base URL (scenarios).
    pub target: Option<String>,
    /// The run's name.
    pub name: Option<String>,
    /// A request not complete after this fails as a timeout.
    pub timeout: Option<Duration>,
    /// Excluded from the start of every reported figure.
    pub warmup: Option<crate::Warmup>,
    /// Statuses that count as success.
    pub expect_status: Option<StatusSet>,
    /// Pass/fail criteria.
    pub thresholds: Vec<Threshold>,
}

/// The name of a run of `url` when none is given (no `--name`, no scenario file): the URL
/// path's last non-empty segment (`http://host:8080/api/rooms?x=1` → `rooms`), or the host
/// when the path is `/`; at most [`crate::limits::MAX_NAME_LEN`] characters. A scenario run
/// is named after its file instead (`name:`, else the file's stem).
pub fn default_run_name(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let name = match path.split('/').rfind(|s| !s.is_empty()) {
        Some(segment) => segment,
        None => {
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            match host.strip_prefix('[') {
                Some(v6) => v6.split(']').next().unwrap_or_default(),
                None => host.split(':').next().unwrap_or_default(),
            }
        }
    };
    let name: String = name.chars().take(crate::limits::MAX_NAME_LEN).collect();
    if name.is_empty() {
        "run".to_string()
    } else {
        name
    }
}

/// A request not complete after this fails, unless the user says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

impl Settings {
    /// The command line (`self`) over a scenario file's settings: each value given on the
    /// command line wins; thresholds add up (the file's first).
    pub fn merge(self, file: &Settings) -> Settings {
        Settings {
            load: self.load.merge(&file.load),
            target: self.target.or_else(|| file.target.clone()),
            name: self.name.or_else(|| file.name.clone()),
            timeout: self.timeout.or(file.timeout),
            warmup: self.warmup.or(file.warmup),
            expect_status: self.expect_status.or_else(|| file.expect_status.clone()),
            thresholds: file
                .thresholds
                .iter()
                .cloned()
                .chain(self.thresholds)
                .collect(),
        }
    }

    /// The plan the engine runs: `work` (a request, or a scenario) under the resolved load.
    pub fn plan(&self, work: Work) -> Result<Plan, Error> {
        Ok(Plan {
            work,
            load: self.load.resolve()?,
            timeout: self.timeout.unwrap_or(DEFAULT_TIMEOUT),
            expect_status: self.expect_status.clone().unwrap_or_default(),
            segment: crate::Segment::WHOLE,
        })
    }
}

/// What every iteration of a plan runs.
#[derive(Debug, Clone)]
pub enum Work {
    /// One request (`volley run --url`).
    Request(RequestSpec),
    /// A scenario's flow, step by step.
    Scenario(Arc<Scenario>),
}

/// A test plan, resolved: what the engine runs.
#[derive(Debug, Clone)]
pub struct Plan {
    /// What each iteration runs.
    pub work: Work,
    /// How load is applied.
    pub load: Load,
    /// A request that takes longer fails with a timeout.
    pub timeout: Duration,
    /// Statuses counted as success.
    pub expect_status: StatusSet,
    /// The share of the load this process runs ([`crate::segment`]); the whole by default.
    pub segment: crate::Segment,
}

impl Plan {
    /// The scenario every iteration runs, if the plan is one.
    pub fn scenario(&self) -> Option<&Arc<Scenario>> {
        match &self.work {
            Work::Scenario(s) => Some(s),
            Work::Request(_) => None,
        }
    }

    /// The single request every iteration sends, if the plan is one.
    pub fn request(&self) -> Option<&RequestSpec> {
        match &self.work {
            Work::Request(r) => Some(r),
            Work::Scenario(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_named_after_its_url_path_else_its_host() {
        for (url, name) in [
            ("http://127.0.0.1:8080/rooms?x=1", "rooms"),
            ("http://127.0.0.1:8080/api/rooms/", "rooms"),
            ("https://api.internal/rooms/42#top", "42"),
            ("http://127.0.0.1:8080/", "127.0.0.1"),
            ("http://127.0.0.1:8080", "127.0.0.1"),
            ("http://127.0.0.1:8080?q=/x", "127.0.0.1"),
            ("http://[::1]:8080/", "::1"),
            ("http://example.com//", "example.com"),
        ] {
            assert_eq!(default_run_name(url), name, "{url}");
        }
        let long = format!("http://h/{}", "a".repeat(300));
        assert_eq!(
            default_run_name(&long).chars().count(),
            crate::limits::MAX_NAME_LEN
        );
    }

    #[test]
    fn headers() {
        assert_eq!(
            RequestSpec::parse_header("Content-Type: application/json").unwrap(),
            ("Content-Type".into(), "application/json".into())
        );
        assert!(RequestSpec::parse_header("nocolon").is_err());
        assert!(RequestSpec::parse_header("bad name: x").is_err());
    }

    #[test]
    fn statuses() {
        let s = StatusSet::parse("200, 404,500-503").unwrap();
        assert!(s.contains(404) && s.contains(502) && !s.contains(201));
        assert!(StatusSet::default().contains(302) && !StatusSet::default().contains(400));
        assert!(StatusSet::parse("20x").is_err());
        assert!(StatusSet::parse("500-400").is_err());
    }
}
