//! What one virtual user sends, and the timings around it.

use std::time::Duration;

use serde::Serialize;

use crate::PlanError;
use crate::rate::RateShape;
use crate::stages::LoadShape;

/// One HTTP request.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    /// Parses a `Name: value` header as given on the command line.
    pub fn parse_header(s: &str) -> Result<(String, String), PlanError> {
        let (n, v) = s
            .split_once(':')
            .ok_or_else(|| PlanError(format!("header `{s}`: expected `Name: value`")))?;
        let n = n.trim();
        if n.is_empty() || n.bytes().any(|b| !(b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))) {
            return Err(PlanError(format!("header `{s}`: `{n}` is not a valid header name")));
        }
        Ok((n.to_string(), v.trim().to_string()))
    }
}

/// Which HTTP statuses count as success.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatusSet(pub Vec<(u16, u16)>);

impl Default for StatusSet {
    /// Everything below 400, as nGrinder and k6 judge.
    fn default() -> Self {
        StatusSet(vec![(100, 399)])
    }
}

impl StatusSet {
    /// Parses `200,201,300-399`.
    pub fn parse(s: &str) -> Result<StatusSet, PlanError> {
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim) {
            let bad = || PlanError(format!("status `{part}`: expected a code or a range such as 200-299"));
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

/// How load is applied.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "model", rename_all = "lowercase")]
pub enum Load {
    /// A number of virtual users over time, each looping (nGrinder, JMeter, Locust).
    Closed {
        /// VUs over time.
        shape: LoadShape,
    },
    /// Arrivals at a rate over time, each carried out by a free VU (k6's arrival-rate
    /// executors, wrk2); latency is measured from each arrival's due time.
    Open {
        /// Arrivals per second over time.
        rate: RateShape,
        /// VUs (connections) that carry out arrivals, created as needed up to this many.
        max_vus: u64,
    },
}

impl Load {
    /// Planned length.
    pub fn duration(&self) -> Duration {
        match self {
            Load::Closed { shape } => shape.duration(),
            Load::Open { rate, .. } => rate.duration(),
        }
    }

    /// The most VUs the run may use.
    pub fn max_vus(&self) -> u64 {
        match self {
            Load::Closed { shape } => shape.max_vus(),
            Load::Open { max_vus, .. } => *max_vus,
        }
    }

    /// Whether arrivals are scheduled (open model).
    pub fn is_open(&self) -> bool {
        matches!(self, Load::Open { .. })
    }
}

/// A test plan.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// What each iteration sends.
    pub request: RequestSpec,
    /// How load is applied.
    pub load: Load,
    /// An iteration starts at most once per this (0: no pacing).
    #[serde(with = "secs")]
    pub pacing: Duration,
    /// Pause after each iteration.
    #[serde(with = "secs")]
    pub think_time: Duration,
    /// A request that takes longer fails with a timeout.
    #[serde(with = "secs")]
    pub timeout: Duration,
    /// Statuses counted as success.
    pub expect_status: StatusSet,
    /// Closed model: each VU runs this many iterations, then stops; the run ends when every
    /// VU has (nGrinder's run count, k6's per-vu-iterations). The load's duration caps it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u64>,
    /// The scenario every iteration runs, instead of `request` (which then names the
    /// target, for the pre-run connection check).
    #[serde(skip)]
    pub scenario: Option<std::sync::Arc<crate::Scenario>>,
}

mod secs {
    use std::time::Duration;

    pub(super) fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
