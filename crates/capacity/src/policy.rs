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
//! - **Confirmation.** A probe within its noise of a limit said too little to decide: the load
//!   runs `confirm` times more, each run long enough for the figure that was near to rest on
//!   [`TAIL_SAMPLES`] requests beyond it ([`confirm_length`], at most [`CONFIRM_MAX_FACTOR`]
//!   probe lengths), and the confirmations decide. If they disagree among themselves, the load
//!   is uncertain and counts as not passing. A probe stopped early broke its SLO clearly, so it
//!   is never near.
//! - **Recovery.** After a probe that did not pass, short checks at the start load run until
//!   one passes. A target that never passes the start load again ends the search as
//!   `unstable`; one that stops answering ends it as `target_failed`. Either way the bracket
//!   found so far is the answer, and the exit code is 1.

use std::time::Duration;

use volley_report::capacity::{Probe, ProbeLimit};
use volley_scenario::Threshold;
use volley_scenario::threshold::Metric;
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

/// A percentile near its limit is confirmed by a run holding at least this many requests beyond
/// it (a p99 from 10,000 requests, a p95 from 2,000), and an error rate near its limit by a
/// run holding this many failures at the limit (1 % from 10,000 requests). A 30 s probe at 70
/// requests per second reads its p99 from 21 requests: on a Poisson queue that figure spread
/// 74–120 ms over five searches against a 100 ms SLO (bench/README.md).
pub const TAIL_SAMPLES: f64 = 100.0;
/// A confirmation runs at most this many probe lengths.
pub const CONFIRM_MAX_FACTOR: u32 = 4;

/// The requests a run needs for threshold `t`'s figure to be read within its noise: see
/// [`TAIL_SAMPLES`]. Zero for a figure more requests do not sharpen (a maximum, a mean, a
/// per-interval figure).
pub fn requests_needed(t: &Threshold) -> f64 {
    match t.metric {
        Metric::ErrorRate if t.limit > 0.0 && t.limit < 100.0 => TAIL_SAMPLES / (t.limit / 100.0),
        Metric::Ttfb | Metric::Total | Metric::Iteration => match t.stat.percentile() {
            Some(q) if q < 100.0 => TAIL_SAMPLES / (1.0 - q / 100.0),
            _ => 0.0,
        },
        _ => 0.0,
    }
}

/// How long each confirmation of a load runs, from the probe that was near: long enough for
/// every figure that was near to hold [`requests_needed`] at the rate that probe measured,
/// never shorter than the plan's probe nor longer than [`CONFIRM_MAX_FACTOR`] of it.
pub fn confirm_length(plan: &Plan, reading: &Reading) -> Duration {
    let p = &reading.probe;
    // Latency percentiles read successful requests; an error rate reads all of them.
    let ok_rate = p.achieved_tps;
    let ok_share = 1.0 - p.error_rate_pct / 100.0;
    let all_rate = if ok_share > 0.0 {
        ok_rate / ok_share
    } else {
        f64::NAN
    };
    let secs = reading
        .near
        .iter()
        .filter_map(|&i| plan.slo.get(i))
        .map(|t| {
            let rate = if t.metric == Metric::ErrorRate {
                all_rate
            } else {
                ok_rate
            };
            let need = requests_needed(t);
            if need > 0.0 && rate.is_finite() && rate > 0.0 {
                need / rate
            } else {
                0.0
            }
        })
        .fold(0.0, f64::max);
    let longest = plan.probe * CONFIRM_MAX_FACTOR;
    Duration::from_secs_f64(secs.min(longest.as_secs_f64())).max(plan.probe)
}

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
    /// The SLO thresholds within their noise of their limits (none for a probe stopped early).
    near: Vec<usize>,
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
    /// Runs `load` as `role` for `length` after the plan's warm-up, and reads it.
    fn run(&mut self, load: f64, role: Role, length: Duration) -> Result<Result<Ran, Stop>, Error> {
        let reading = match self.prober.probe(load, role, length, self.plan.warmup) {
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
            near: if reading.probe.stopped_early.is_none() {
                reading.near.clone()
            } else {
                Vec::new()
            },
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

/// A length in whole seconds, as the notes say it.
fn secs(d: Duration) -> String {
    format!("{:.0}", d.as_secs_f64())
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
        let first = match r.run(load, role, plan.probe)? {
            Ok(ran) => ran,
            Err(stop) => break Some(stop),
        };
        let (mut outcome, mut last) = (first.outcome, first);
        // A probe the generator could not drive runs once more: a stall of a shared machine
        // passes, a load volley cannot offer from here does not. So does a probe that failed
        // while the machine paused volley itself: its latencies hold that pause.
        let stalled = outcome == Outcome::Fail && last.reading.stalled_ms.is_some();
        if outcome == Outcome::GeneratorLimited || stalled {
            let again = match r.run(load, Role::Retry, plan.probe)? {
                Ok(ran) => ran,
                Err(stop) => break Some(stop),
            };
            let why = match last.reading.stalled_ms {
                Some(ms) if stalled => format!("failed while volley itself stalled for {ms:.0} ms"),
                _ => format!(
                    "was generator-limited ({})",
                    last.reading
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
            (outcome, last) = (again.outcome, again);
        }
        if !last.near.is_empty()
            && plan.confirm > 0
            && matches!(outcome, Outcome::Pass | Outcome::Fail)
        {
            // The probe was within its noise of a limit: it could not tell. Runs long enough
            // to read the figure that was near decide, not a vote with the short one.
            let length = confirm_length(plan, &last.reading);
            let near = last
                .near
                .iter()
                .filter_map(|&i| plan.slo.get(i))
                .map(|t| t.expr.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            let mut decided: Option<Outcome> = None;
            for c in 0..plan.confirm {
                let again = match r.run(load, Role::Confirm, length)? {
                    Ok(ran) => ran,
                    Err(stop) => break 'search Some(stop),
                };
                if again.outcome == Outcome::GeneratorLimited {
                    decided = Some(again.outcome);
                    break;
                }
                match decided {
                    Some(d) if d != again.outcome => {
                        decided = Some(Outcome::Uncertain);
                        r.notes.push(format!(
                            "{} flip-flopped: {} of its {} confirmations of {} s agreed before one differed; it counts as uncertain, not as a pass.",
                            plan.kind.show(load),
                            c,
                            plan.confirm,
                            secs(length)
                        ));
                        break;
                    }
                    _ => decided = Some(again.outcome),
                }
            }
            if let Some(d) = decided {
                if matches!(d, Outcome::Pass | Outcome::Fail) && d != outcome {
                    r.notes.push(format!(
                        "The probe at {} was within its noise of the SLO ({near}) and read {}; its {} of {} s, long enough to read that figure, read {}: the longer measurement decides.",
                        plan.kind.show(load),
                        outcome.name(),
                        if plan.confirm == 1 { "confirmation" } else { "confirmations" },
                        secs(length),
                        d.name()
                    ));
                }
                outcome = d;
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
