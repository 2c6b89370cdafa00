//! The capacity search, as a decision on numbers: which load to probe next, and when the
//! answer is known.
//!
//! Step the load up by a factor (×2) from the start until a probe breaks the SLO, then
//! bisect between the highest load that passed and the lowest that did not until the two are
//! within the precision. A probe whose verdict flip-flopped when confirmed counts as *not*
//! passing (never rounded to a pass), and an answer whose upper end is such a probe is
//! `uncertain`. A probe the generator could not drive ends the search: what passed is a
//! lower bound of the server's capacity, not the capacity. The search runs no load itself
//! (`volley capacity` does, probe by probe), so every rule here is tested without a server.

use serde::{Deserialize, Serialize};

/// How one probe came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// It met the SLO (and every confirmation agreed).
    Pass,
    /// It broke the SLO.
    Fail,
    /// Confirmations disagreed: the load sits within the noise of the SLO's limit.
    Uncertain,
    /// volley could not drive the load (schedule lag, its own CPU): says nothing of the server.
    GeneratorLimited,
    /// Cut short by the user (Ctrl-C): judges nothing, and ends the search.
    Interrupted,
}

impl Outcome {
    /// As tables show it.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Uncertain => "uncertain",
            Outcome::GeneratorLimited => "generator-limited",
            Outcome::Interrupted => "interrupted",
        }
    }
}

/// Where the search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Still probing.
    Searching,
    /// The last pass and the first failure are within the precision.
    Found,
    /// The first failure is a probe whose confirmations disagreed.
    Uncertain,
    /// volley could not drive more load from here: the capacity is at least the last pass.
    GeneratorLimited,
    /// The highest load allowed passed: the capacity is above it.
    SloMetAtMax,
    /// The first (lowest) load already broke the SLO.
    SloBrokenAtStart,
    /// The probe budget ran out before the bracket was tight.
    ProbeLimit,
    /// The user stopped it: the bracket so far.
    Interrupted,
    /// The target stopped answering (refused connections, a failed pre-flight): the bracket
    /// so far.
    TargetFailed,
    /// The start load, which had passed, no longer passed after a failure: the target
    /// degraded for good (or recovers more slowly than the search waits). The bracket so far.
    Unstable,
}

impl Status {
    /// As capacity.json writes it.
    pub fn name(self) -> &'static str {
        match self {
            Status::Searching => "searching",
            Status::Found => "found",
            Status::Uncertain => "uncertain",
            Status::GeneratorLimited => "generator_limited",
            Status::SloMetAtMax => "slo_met_at_max",
            Status::SloBrokenAtStart => "slo_broken_at_start",
            Status::ProbeLimit => "probe_limit",
            Status::Interrupted => "interrupted",
            Status::TargetFailed => "target_failed",
            Status::Unstable => "unstable",
        }
    }
}

/// What to search over.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchPlan {
    /// The first load probed.
    pub start: f64,
    /// The highest load probed.
    pub max: f64,
    /// The step-up factor before the first failure (2: ×2).
    pub factor: f64,
    /// Stop when (first failure − last pass) / last pass is at most this (0.05: 5 %).
    pub precision: f64,
    /// Loads are whole numbers (virtual users).
    pub whole: bool,
    /// The most loads probed (confirmations not counted).
    pub max_probes: usize,
}

/// The search so far.
#[derive(Debug, Clone)]
pub struct Search {
    plan: SearchPlan,
    last_pass: Option<f64>,
    first_fail: Option<(f64, Outcome)>,
    probes: usize,
    ended: Option<Status>,
}

impl Search {
    /// A new search; the plan must be sane (`0 < start ≤ max`, `factor > 1`, `precision > 0`).
    pub fn new(plan: SearchPlan) -> Search {
        debug_assert!(plan.start > 0.0 && plan.start <= plan.max);
        debug_assert!(plan.factor > 1.0 && plan.precision > 0.0);
        Search {
            plan,
            last_pass: None,
            first_fail: None,
            probes: 0,
            ended: None,
        }
    }

    /// The highest load that passed.
    pub fn last_pass(&self) -> Option<f64> {
        self.last_pass
    }

    /// The lowest load that did not pass (failed, or uncertain).
    pub fn first_fail(&self) -> Option<f64> {
        self.first_fail.map(|(l, _)| l)
    }

    /// Loads probed so far.
    pub fn probes(&self) -> usize {
        self.probes
    }

    /// Where the search stands.
    pub fn status(&self) -> Status {
        self.ended.unwrap_or(Status::Searching)
    }

    /// Stops the search where it is (Ctrl-C): the bracket so far is the answer.
    pub fn interrupt(&mut self) {
        self.end(Status::Interrupted);
    }

    /// Ends the search with `status` (Ctrl-C, a target that failed or became unstable) unless
    /// it has ended already: the bracket so far is the answer.
    pub fn end(&mut self, status: Status) {
        if self.ended.is_none() {
            self.ended = Some(status);
        }
    }

    /// The next load to probe; `None` once the answer is known ([`Search::status`]).
    pub fn next_load(&mut self) -> Option<f64> {
        if self.ended.is_some() {
            return None;
        }
        let p = self.plan;
        let next = match (self.last_pass, self.first_fail) {
            (None, None) => p.start,
            (None, Some(_)) => return self.finish(Status::SloBrokenAtStart),
            (Some(lo), None) => {
                if lo >= p.max {
                    return self.finish(Status::SloMetAtMax);
                }
                self.round((lo * p.factor).min(p.max))
            }
            (Some(lo), Some((hi, outcome))) => {
                let tight = (hi - lo) / lo <= p.precision || (p.whole && hi - lo <= 1.0);
                if tight {
                    return self.finish(if outcome == Outcome::Uncertain {
                        Status::Uncertain
                    } else {
                        Status::Found
                    });
                }
                let mid = self.round((lo + hi) / 2.0);
                if mid <= lo || mid >= hi {
                    return self.finish(Status::Found);
                }
                mid
            }
        };
        if self.probes >= p.max_probes {
            return self.finish(Status::ProbeLimit);
        }
        Some(next)
    }

    fn finish(&mut self, status: Status) -> Option<f64> {
        self.ended = Some(status);
        None
    }

    fn round(&self, x: f64) -> f64 {
        if self.plan.whole {
            x.round().max(1.0)
        } else {
            x
        }
    }

    /// Records how the probe of `load` came out.
    pub fn record(&mut self, load: f64, outcome: Outcome) {
        self.probes += 1;
        match outcome {
            Outcome::Pass => {
                self.last_pass = Some(self.last_pass.map_or(load, |l| l.max(load)));
            }
            Outcome::Fail | Outcome::Uncertain => {
                if self.first_fail.is_none_or(|(l, _)| load < l) {
                    self.first_fail = Some((load, outcome));
                }
            }
            Outcome::GeneratorLimited => {
                self.ended = Some(Status::GeneratorLimited);
            }
            Outcome::Interrupted => {
                self.ended = Some(Status::Interrupted);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(start: f64, max: f64) -> SearchPlan {
        SearchPlan {
            start,
            max,
            factor: 2.0,
            precision: 0.05,
            whole: false,
            max_probes: 30,
        }
    }

    /// Runs a search against a server that passes below `limit`; returns the probes.
    fn against(plan: SearchPlan, judge: impl Fn(f64) -> Outcome) -> (Search, Vec<f64>) {
        let mut s = Search::new(plan);
        let mut probed = Vec::new();
        while let Some(load) = s.next_load() {
            probed.push(load);
            s.record(load, judge(load));
        }
        (s, probed)
    }

    #[test]
    fn steps_up_then_bisects_to_the_precision() {
        let (s, probed) = against(plan(50.0, 10_000.0), |l| {
            if l < 184.0 {
                Outcome::Pass
            } else {
                Outcome::Fail
            }
        });
        assert_eq!(s.status(), Status::Found);
        assert_eq!(&probed[..3], &[50.0, 100.0, 200.0]);
        let (lo, hi) = (s.last_pass().unwrap(), s.first_fail().unwrap());
        assert!(
            lo < 184.0 && hi >= 184.0 && (hi - lo) / lo <= 0.05,
            "{lo}..{hi}"
        );
        // 3 steps, then 100 → 200 halved until within 5 %: 150, 175, 187.5, 181.25.
        assert_eq!(probed.len(), 7, "{probed:?}");
    }

    #[test]
    fn the_ends_of_the_range_say_so() {
        let (s, probed) = against(plan(50.0, 300.0), |_| Outcome::Pass);
        assert_eq!(s.status(), Status::SloMetAtMax);
        assert_eq!(probed, vec![50.0, 100.0, 200.0, 300.0]);
        let (s, probed) = against(plan(50.0, 300.0), |_| Outcome::Fail);
        assert_eq!(s.status(), Status::SloBrokenAtStart);
        assert_eq!(probed, vec![50.0]);
        assert_eq!(s.last_pass(), None);
    }

    #[test]
    fn an_uncertain_probe_is_never_a_pass() {
        // Loads near 150 flip-flop: they bound the answer from above, and the answer says so.
        let (s, _) = against(plan(40.0, 1000.0), |l| {
            if l < 145.0 {
                Outcome::Pass
            } else if l < 155.0 {
                Outcome::Uncertain
            } else {
                Outcome::Fail
            }
        });
        assert!(s.last_pass().unwrap() < 145.0);
        let hi = s.first_fail().unwrap();
        assert!(hi >= 145.0, "{hi}");
        assert!(matches!(s.status(), Status::Uncertain | Status::Found));
    }

    #[test]
    fn a_generator_limit_ends_the_search_with_a_lower_bound() {
        let (s, probed) = against(plan(1000.0, 1e6), |l| {
            if l > 5000.0 {
                Outcome::GeneratorLimited
            } else {
                Outcome::Pass
            }
        });
        assert_eq!(s.status(), Status::GeneratorLimited);
        assert_eq!(s.last_pass(), Some(4000.0));
        assert_eq!(probed.len(), 4);
    }

    #[test]
    fn users_are_whole_and_the_budget_is_kept() {
        let mut p = plan(5.0, 200.0);
        p.whole = true;
        let (s, probed) = against(p, |l| {
            if l <= 37.0 {
                Outcome::Pass
            } else {
                Outcome::Fail
            }
        });
        assert!(probed.iter().all(|l| l.fract() == 0.0), "{probed:?}");
        assert_eq!((s.last_pass(), s.first_fail()), (Some(37.0), Some(38.0)));
        p.max_probes = 4;
        let (s, probed) = against(p, |l| {
            if l <= 37.0 {
                Outcome::Pass
            } else {
                Outcome::Fail
            }
        });
        assert_eq!(s.status(), Status::ProbeLimit);
        assert_eq!(probed.len(), 4);
    }

    #[test]
    fn an_interrupt_keeps_the_bracket() {
        let mut s = Search::new(plan(10.0, 100.0));
        let l = s.next_load().unwrap();
        s.record(l, Outcome::Pass);
        s.interrupt();
        assert_eq!(s.next_load(), None);
        assert_eq!(s.status(), Status::Interrupted);
        assert_eq!(s.last_pass(), Some(10.0));
    }
}
