//! What run.json says about segments: a run that is segment `i/N` of a split run
//! ([`SegmentNote`]), and a run merged from segments ([`MergedFrom`]), with each segment's
//! origin and the health of its generator kept.
//!
//! Segments of one run are recognised by their run id and by the hash of the plan they
//! ran ([`plan_hash`]), which leaves out what may rightly differ between processes: the
//! worker threads (one per core of each host) and the rows of each segment's share of a
//! CSV file.

use serde::{Deserialize, Serialize};
use volley_scenario::Segment;

use crate::recorded::RecordedPlan;

/// In a segment's run.json: which share of which run it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SegmentNote {
    /// `i/N`.
    pub segment: Segment,
    /// Shared by every segment of the run (`--run-id`, or made from the start time and the
    /// plan's hash).
    pub run_id: String,
    /// [`plan_hash`] of the plan run.
    pub plan_hash: String,
    /// The agreed start (`--start-at`), RFC 3339 UTC; `None` when the segment started on
    /// its own at the next whole second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<String>,
    /// How long after the agreed start the load actually began, ms.
    pub start_lag_ms: f64,
    /// What is known about the host's clock (NTP synchronisation), when the host says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<String>,
}

/// In a merged run's run.json: what it was merged from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergedFrom {
    /// The run id the segments share.
    pub run_id: String,
    /// How many segments the run was split into.
    pub count: u64,
    /// Segments that were not found (the merged run's status is then `partial`).
    #[serde(default)]
    pub missing: Vec<u64>,
    /// Each segment merged, in index order.
    pub segments: Vec<SegmentOrigin>,
    /// What the merge found in its segments' files and how it took it (rows left out, a
    /// histogram log cut short), each naming its segment; the merged run's reports show them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One merged segment: where it ran and how its generator fared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SegmentOrigin {
    /// `i/N`.
    pub segment: Segment,
    /// Its run directory as given to the merge.
    pub dir: String,
    /// The host that ran it.
    pub host: String,
    /// How it ended (`complete`, `interrupted`, …).
    pub status: String,
    /// Its start, RFC 3339 UTC.
    pub started_at: String,
    /// How long after the agreed start its load began, ms.
    pub start_lag_ms: f64,
    /// Its intervals' offset in the merged run (0 when it started with the first segment).
    pub offset_intervals: u64,
    /// Successful requests.
    pub tests: u64,
    /// Failed requests.
    pub errors: u64,
    /// Open model: arrivals sent late (they waited for a free VU).
    pub late: u64,
    /// Open model: arrivals never sent.
    pub dropped: u64,
    /// Its generator's largest dispatch delay, ms.
    pub sched_lag_max_ms: f64,
    /// Its generator's highest CPU use, % of its cores.
    pub cpu_max_pct: f64,
    /// Its clock, as it recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<String>,
}

/// A stable hash (FNV-1a, 64 bit, hex) of `plan` without the worker threads and the CSV
/// feeders' row counts, which differ between the segments of one run.
pub fn plan_hash(plan: &RecordedPlan) -> String {
    let mut p = plan.clone();
    p.threads = 0;
    if let Some(s) = &mut p.scenario {
        for d in &mut s.data {
            d.rows = 0;
        }
    }
    let json = serde_json::to_vec(&p).expect("a plan serializes");
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in json {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_ignores_threads_and_row_counts_only() {
        let plan: RecordedPlan = serde_json::from_str(
            r#"{"load":{"model":"closed","shape":{"stages":[{"duration":2.0,"target":4}]}},"request":{"method":"GET","url":"http://127.0.0.1/","headers":[]},"timeout_s":60.0,"threads":2}"#,
        )
        .unwrap();
        let mut other = plan.clone();
        other.threads = 8;
        assert_eq!(plan_hash(&plan), plan_hash(&other));
        other.timeout_s = 5.0;
        assert_ne!(plan_hash(&plan), plan_hash(&other));
        assert_eq!(plan_hash(&plan).len(), 16);
    }
}
