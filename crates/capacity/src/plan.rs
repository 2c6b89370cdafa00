//! A search, checked: what to vary, between which loads, how long each probe runs, and the
//! service level it must meet.

use std::time::Duration;

use volley_report::capacity::LoadKind;
use volley_scenario::Threshold;
use volley_scenario::threshold::Metric;
use volley_stats::search::SearchPlan;

/// Whether the search sets load option `key` itself, probe by probe (so `volley capacity`
/// refuses it and leaves it out of its help): the load's shape and how often the plan runs,
/// by the option table's roles.
pub fn search_owns(key: &str) -> bool {
    use volley_scenario::load::{Role, role_of};
    matches!(role_of(key), Role::Shape | Role::Runs)
}

/// The error SLO in force when none is given: a load the service refused is no capacity.
pub const DEFAULT_ERROR_SLO: &str = "error_rate < 1%";

/// The search, as the binary resolved it from flags (or a scenario's `slo:`).
#[derive(Debug, Clone)]
pub struct Plan {
    /// What the search varies.
    pub kind: LoadKind,
    /// Where it steps and bisects.
    pub search: SearchPlan,
    /// Measurement of each probe, after its warm-up.
    pub probe: Duration,
    /// Left out of each probe's figures.
    pub warmup: Duration,
    /// Extra runs of a probe within its noise of a limit.
    pub confirm: u64,
    /// How long recovery checks at the start load may take after a failed probe.
    pub recovery: Duration,
    /// The service level every probe is judged by (the error SLO included, see
    /// [`with_error_slo`]).
    pub slo: Vec<Threshold>,
    /// Whether [`DEFAULT_ERROR_SLO`] was added because no error SLO was given.
    pub error_slo_added: bool,
    /// `--target`: requests per second, and as given.
    pub target: Option<(f64, String)>,
    /// Open model with Poisson arrivals: the search's seed. Probe `n` (1-based) draws its
    /// arrivals from [`Plan::probe_seed`]`(n)`, so no two probes replay one schedule.
    pub poisson_seed: Option<u64>,
}

/// The length of one recovery check at the start load.
pub const RECOVERY_CHECK: Duration = Duration::from_secs(2);
/// The pause before each recovery check.
pub const RECOVERY_PAUSE: Duration = Duration::from_millis(500);

impl Plan {
    /// The seed of probe `n`'s Poisson arrivals: the search's seed and the probe's number mixed
    /// (splitmix64), recorded with the probe.
    pub fn probe_seed(&self, n: usize) -> Option<u64> {
        self.poisson_seed.map(|s| {
            let mut z = s ^ (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        })
    }

    /// The SLO as one line: `ttfb p99 < 200ms, error_rate < 1%`.
    pub fn slo_text(&self) -> String {
        self.slo
            .iter()
            .map(|t| t.expr.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// `slo` with [`DEFAULT_ERROR_SLO`] added when it names no error rate, and whether it was.
/// `--slo "error_rate < 100%"` is the explicit way to judge latency alone.
pub fn with_error_slo(mut slo: Vec<Threshold>) -> (Vec<Threshold>, bool) {
    if slo.iter().any(|t| t.metric == Metric::ErrorRate) {
        return (slo, false);
    }
    let t =
        volley_scenario::parse_threshold(DEFAULT_ERROR_SLO).expect("the default error SLO parses");
    slo.push(t);
    (slo, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_slo_is_always_in_force() {
        let p99 = volley_scenario::parse_threshold("ttfb p99 < 200ms").unwrap();
        let (slo, added) = with_error_slo(vec![p99.clone()]);
        assert!(added);
        assert_eq!(
            slo.iter().map(|t| t.expr.as_str()).collect::<Vec<_>>(),
            ["ttfb p99 < 200ms", "error_rate < 1%"]
        );
        let off = volley_scenario::parse_threshold("error_rate < 100%").unwrap();
        let (slo, added) = with_error_slo(vec![p99, off]);
        assert!(!added);
        assert_eq!(slo.len(), 2);
    }
}
