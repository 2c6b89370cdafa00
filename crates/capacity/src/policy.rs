//! The search's policy: runs probes through a [`Prober`] and decides what each one means.
//!
//! Rules, as the notes of every result say them:
//! - **Step, then bisect** ([`volley_stats::search`]).
//! - **Errors count.** Every SLO holds an error rate ([`crate::plan::with_error_slo`]), so a
//!   load the service refused never passes, however fast the refusals were.
//! - **Throughput must not fall.** A probe whose successful requests per second fall below what
//!   a lower load achieved, beyond both probes' noise ([`fell`]), is past the limit: it fails
//!   whatever the SLO said.
//! - **Generator guard.** A probe with evidence that volley could not drive it (or that failed
//!   while volley itself stalled) runs once more; only a second such probe ends the search
//!   with "capacity ≥ the last pass".
//! - **Confirmation.** A probe within its noise of a limit runs `confirm` times more; if they
//!   disagree, the load is uncertain and counts as not passing. A probe stopped early broke
//!   its SLO clearly, so it is never near.
//! - **Recovery.** After a probe that did not pass, short checks at the start load run until
//!   one passes. A target that never passes the start load again ends the search as
//!   `unstable`; one that stops answering ends it as `target_failed`. Either way the bracket
//!   found so far is the answer, and the exit code is 1.

use volley_report::capacity::{Probe, ProbeLimit};
use volley_stats::search::{Outcome, Search, Status};

use crate::plan::{RECOVERY_CHECK, RECOVERY_PAUSE};
use crate::{Error, Plan, Prober, Reading, Role};

/// A fall in throughput counts when it is more than this many standard errors of the
/// difference ...
pub const FALL_Z: f64 = 3.0;
/// ... and at least this share of the higher figure, % (a flat plateau's jitter is no fall) ...
pub const FALL_FLOOR_PCT: f64 = 5.0;
/// ... or, when either probe's noise is unknown, this share, %.
pub const FALL_UNKNOWN_PCT: f64 = 10.0;

/// How a search ended: what the result is assembled from ([`crate::result`]).
#[derive(Debug, Clone)]
pub struct Ended {
    /// The bracket and the status.
    pub search: Search,
    /// Every probe in the order run (recovery checks not included).
    pub probes: Vec<Probe>,
    /// What each probe's server metrics showed running out.
    pub limits: Vec<ProbeLimit>,
    /// What happened along the way, for the notes.
    pub notes: Vec<String>,
}

/// A probe of a load, and what the search made of it.
struct Ran {
    outcome: Outcome,
    near: bool,
    reading: Reading,
}

/// The probes run so far, and the throughput each load achieved.
struct Runner<'a> {
    plan: &'a Plan,
    prober: &'a mut dyn Prober,
    probes: Vec<Probe>,
    limits: Vec<ProbeLimit>,
    /// `(load, achieved TPS, its standard error)` of every probe that measured the server.
    achieved: Vec<(f64, f64, f64)>,
    notes: Vec<String>,
}

/// Why a search stopped before its bracket closed.
enum Stop {
    Interrupted,
    TargetFailed(String),
}

impl Runner<'_> {
    /// Runs `load` as `role` and reads it.
    fn run(&mut self, load: f64, role: Role) -> Result<Result<Ran, Stop>, Error> {
        let reading = match self
            .prober
            .probe(load, role, self.plan.probe, self.plan.warmup)
        {
            Ok(r) => r,
            Err(e) if e.is_target() => {
                return Ok(Err(Stop::TargetFailed(format!(
                    "the probe at {} could not reach the target: {e}",
                    self.plan.kind.show(load)
                ))));
            }
            Err(e) => return Err(e),
        };
        let mut outcome = reading.outcome();
        let mut probe = reading.probe.clone();
        if reading.target_down {
            probe.verdict = Outcome::Fail;
            self.push(load, probe, &reading);
            return Ok(Err(Stop::TargetFailed(format!(
                "at {} not one request succeeded and every failure was a refused, reset or timed-out connection: the target stopped answering",
                self.plan.kind.show(load)
            ))));
        }
        if outcome == Outcome::Pass
            && let Some(why) = self.fell(load, &reading)
        {
            outcome = Outcome::Fail;
            probe.judged = format!("{}; {why}", probe.judged);
        }
        probe.verdict = outcome;
        self.push(load, probe, &reading);
        if reading.interrupted {
            return Ok(Err(Stop::Interrupted));
        }
        if outcome != Outcome::GeneratorLimited {
            self.achieved
                .push((load, reading.probe.achieved_tps, reading.tps_se));
        }
        Ok(Ok(Ran {
            outcome,
            // A probe stopped early broke its SLO clearly: no noise makes that near.
            near: reading.near && reading.probe.stopped_early.is_none(),
            reading,
        }))
    }

    fn push(&mut self, load: f64, probe: Probe, reading: &Reading) {
        self.prober.decided(&probe);
        self.limits
            .push((load, probe.verdict, reading.server.clone()));
        self.probes.push(probe);
    }

    /// Whether `reading` of `load` achieved less than a lower load did, beyond the noise.
    fn fell(&self, load: f64, reading: &Reading) -> Option<String> {
        let tps = reading.probe.achieved_tps;
        let (lower, best, se) = self
            .achieved
            .iter()
            .filter(|(l, _, _)| *l < load)
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .copied()?;
        fell(best, se, tps, reading.tps_se).then(|| {
            format!(
                "throughput fell: {tps:.1} successful requests/s against {best:.1} at {} (the load is past the limit)",
                self.plan.kind.show(lower)
            )
        })
    }

    /// Short checks at the start load until one passes: how long it took, `Ok(None)` when
    /// none did within the plan's recovery time.
    fn recover(&mut self) -> Result<Result<Option<f64>, Stop>, Error> {
        let mut spent = std::time::Duration::ZERO;
        while spent < self.plan.recovery {
            if self.prober.stop_requested() {
                return Ok(Err(Stop::Interrupted));
            }
            self.prober.pause(RECOVERY_PAUSE);
            spent += RECOVERY_PAUSE + RECOVERY_CHECK;
            let start = self.plan.search.start;
            let r = match self.prober.probe(
                start,
                Role::Recovery,
                RECOVERY_CHECK,
                std::time::Duration::ZERO,
            ) {
                Ok(r) => r,
                Err(e) if e.is_target() => {
                    return Ok(Err(Stop::TargetFailed(format!(
                        "a recovery check at {} could not reach the target: {e}",
                        self.plan.kind.show(start)
                    ))));
                }
                Err(e) => return Err(e),
            };
            if r.interrupted {
                return Ok(Err(Stop::Interrupted));
            }
            if r.target_down {
                return Ok(Err(Stop::TargetFailed(format!(
                    "a recovery check at {}: not one request succeeded and every failure was a refused, reset or timed-out connection: the target stopped answering",
                    self.plan.kind.show(start)
                ))));
            }
            if r.outcome() == Outcome::Pass {
                return Ok(Ok(Some(spent.as_secs_f64())));
            }
        }
        Ok(Ok(None))
    }
}

/// Whether `tps` (standard error `se`) is below `best` (standard error `best_se`) beyond
/// the noise: [`FALL_Z`] standard errors of the difference and [`FALL_FLOOR_PCT`] of `best`,
/// or [`FALL_UNKNOWN_PCT`] of `best` when a standard error is unknown.
pub fn fell(best: f64, best_se: f64, tps: f64, se: f64) -> bool {
    if !(best > 0.0 && tps.is_finite()) {
        return false;
    }
    let drop = best - tps;
    if best_se.is_finite() && se.is_finite() {
        drop > FALL_Z * (best_se * best_se + se * se).sqrt() && drop > best * FALL_FLOOR_PCT / 100.0
    } else {
        drop > best * FALL_UNKNOWN_PCT / 100.0
    }
}

/// Runs the search of `plan` with `prober`. An `Err` is a probe that could not run for a
/// reason other than the target (the caller says it and exits 2); everything the target
/// does, down to dying, is an answer.
pub fn run(plan: &Plan, prober: &mut dyn Prober) -> Result<Ended, Error> {
    let mut search = Search::new(plan.search);
    let mut r = Runner {
        plan,
        prober,
        probes: Vec::new(),
        limits: Vec::new(),
        achieved: Vec::new(),
        notes: Vec::new(),
    };
    let stop = 'search: loop {
        let Some(load) = search.next_load() else {
            break None;
        };
        if r.prober.stop_requested() {
            break Some(Stop::Interrupted);
        }
        let role = if search.first_fail().is_none() {
            Role::Step
        } else {
            Role::Bisect
        };
        let first = match r.run(load, role)? {
            Ok(ran) => ran,
            Err(stop) => break Some(stop),
        };
        let (mut outcome, mut near) = (first.outcome, first.near);
        // A probe the generator could not drive runs once more: a stall of a shared machine
        // passes, a load volley cannot offer from here does not. So does a probe that failed
        // while the machine paused volley itself: its latencies hold that pause.
        let stalled = outcome == Outcome::Fail && first.reading.stalled_ms.is_some();
        if outcome == Outcome::GeneratorLimited || stalled {
            let again = match r.run(load, Role::Retry)? {
                Ok(ran) => ran,
                Err(stop) => break Some(stop),
            };
            let why = match first.reading.stalled_ms {
                Some(ms) if stalled => format!("failed while volley itself stalled for {ms:.0} ms"),
                _ => format!(
                    "was generator-limited ({})",
                    first
                        .reading
                        .generator
                        .as_deref()
                        .unwrap_or("volley could not keep its schedule")
                ),
            };
            r.notes.push(format!(
                "The probe at {} {why}; it ran once more: {}.",
                plan.kind.show(load),
                again.outcome.name()
            ));
            (outcome, near) = (again.outcome, again.near);
        }
        if near && matches!(outcome, Outcome::Pass | Outcome::Fail) {
            for c in 0..plan.confirm {
                let again = match r.run(load, Role::Confirm)? {
                    Ok(ran) => ran,
                    Err(stop) => break 'search Some(stop),
                };
                if again.outcome == Outcome::GeneratorLimited {
                    outcome = again.outcome;
                    break;
                }
                if again.outcome != outcome {
                    outcome = Outcome::Uncertain;
                    r.notes.push(format!(
                        "{} flip-flopped: {} of {} runs agreed before one differed; it counts as uncertain, not as a pass.",
                        plan.kind.show(load),
                        c + 1,
                        c + 2
                    ));
                    break;
                }
            }
        }
        search.record(load, outcome);
        if outcome != Outcome::Pass
            && outcome != Outcome::GeneratorLimited
            && search.status() == Status::Searching
            && search.last_pass().is_some()
            && !plan.recovery.is_zero()
        {
            let start = plan.kind.show(plan.search.start);
            match r.recover()? {
                Ok(Some(t)) => r.notes.push(format!(
                    "After the probe at {}, the target met the SLO again at {start} within {t:.1} s.",
                    plan.kind.show(load),
                )),
                Ok(None) => {
                    r.notes.push(format!(
                        "After the probe at {}, the target did not meet the SLO at {start} again within {} s, though it had before: the target is unstable (it degraded for good, or needs longer than --recovery to recover), so probes after it would read low. The search ends with the bracket so far.",
                        plan.kind.show(load),
                        plan.recovery.as_secs()
                    ));
                    search.end(Status::Unstable);
                }
                Err(stop) => break Some(stop),
            }
        }
    };
    match stop {
        Some(Stop::Interrupted) => search.end(Status::Interrupted),
        Some(Stop::TargetFailed(why)) => {
            let end = if why.ends_with(['.', '?', '!']) {
                ""
            } else {
                "."
            };
            r.notes.push(format!(
                "The search ended because {why}{end} The bracket so far is the answer."
            ));
            search.end(Status::TargetFailed);
        }
        None => {}
    }
    Ok(Ended {
        search,
        probes: r.probes,
        limits: r.limits,
        notes: r.notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fall_is_judged_against_the_noise() {
        // 2,251 → 1,116 TPS (the README's closed-model search past its limit): a fall.
        assert!(fell(2251.0, 20.0, 1116.0, 30.0));
        // A plateau's jitter is not.
        assert!(!fell(2251.0, 20.0, 2200.0, 30.0));
        // Outside the floor but inside the noise: not a fall.
        assert!(!fell(1000.0, 40.0, 920.0, 40.0));
        // Unknown noise: 10 %.
        assert!(fell(1000.0, f64::NAN, 880.0, 5.0));
        assert!(!fell(1000.0, f64::NAN, 920.0, 5.0));
    }
}
