//! What the search asks of whoever runs the load: a [`Prober`] runs one probe and hands back
//! its [`Reading`]. The binary's prober records a run of `volley run`'s plan at one constant
//! load and reads its report; the tests' probers are models of a target.

use std::time::Duration;

use volley_report::capacity::{Probe, ServerLimit};
use volley_stats::search::Outcome;

use crate::Error;

/// Why a probe runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A step up, before the first failure.
    Step,
    /// Between the last pass and the first failure.
    Bisect,
    /// A repeat of a probe within its noise of a limit.
    Confirm,
    /// A repeat of a probe the generator could not drive, or that ran while volley stalled.
    Retry,
    /// A short check at the start load after a failure: has the target recovered?
    Recovery,
}

impl Role {
    /// As capacity.json's `role` and the probes' directory names say it.
    pub fn name(self) -> &'static str {
        match self {
            Role::Step => "step",
            Role::Bisect => "bisect",
            Role::Confirm => "confirm",
            Role::Retry => "retry",
            Role::Recovery => "recovery",
        }
    }
}

/// One probe, read: the row capacity.json lists, and what the search decides on.
#[derive(Debug, Clone)]
pub struct Reading {
    /// The row (its `verdict` is set by the search, from this reading).
    pub probe: Probe,
    /// Every SLO held, by the probe's report.
    pub passed: bool,
    /// The plan's SLO thresholds (by index) whose figure is within its noise of its limit:
    /// the load is confirmed by probes long enough to read those figures
    /// ([`crate::policy::confirm_length`]).
    pub near: Vec<usize>,
    /// Evidence that volley could not drive the load (dropped arrivals, lag in several
    /// intervals, its own CPU at its limit), when there is some.
    pub generator: Option<String>,
    /// Ctrl-C cut it short.
    pub interrupted: bool,
    /// volley's own longest delay after the warm-up, ms, when it passed the stall mark: the
    /// machine paused volley itself.
    pub stalled_ms: Option<f64>,
    /// What the server metrics showed running out.
    pub server: Option<ServerLimit>,
    /// The standard error of `probe.achieved_tps` (successful requests per second) over the
    /// probe's intervals; NaN when unknown.
    pub tps_se: f64,
    /// Not one request succeeded and every failure was a refused or reset connection (or a
    /// connect timeout): nothing is listening.
    pub target_down: bool,
}

impl Reading {
    /// How the probe came out, by its own figures alone (the search may still fail it, for
    /// a fall in throughput: [`crate::policy`]).
    pub fn outcome(&self) -> Outcome {
        if self.interrupted {
            Outcome::Interrupted
        } else if self.generator.is_some() {
            Outcome::GeneratorLimited
        } else if self.passed && self.probe.stopped_early.is_none() {
            Outcome::Pass
        } else {
            Outcome::Fail
        }
    }
}

/// Runs probes for the search.
pub trait Prober {
    /// Runs probe `n` (1-based, counting every probe of the search but the recovery checks)
    /// of `load` as `role`: `warmup`, then `length` measured.
    fn probe(
        &mut self,
        load: f64,
        role: Role,
        length: Duration,
        warmup: Duration,
    ) -> Result<Reading, Error>;

    /// The search's verdict on a probe it ran, once decided (a pass can still fail on a fall in
    /// throughput): where the binary says it.
    fn decided(&mut self, _probe: &Probe) {}

    /// Whether the user asked to stop (Ctrl-C): the search ends with the bracket so far.
    fn stop_requested(&self) -> bool;

    /// Waits `d` (before a recovery check); a model waits no time.
    fn pause(&mut self, d: Duration);
}
