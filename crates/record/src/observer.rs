//! Watching a run as it records: the [`Observer`] trait and what it is shown.

use std::path::Path;

use volley_engine::RunControl;
use volley_engine::scrape::ScrapeSample;
use volley_rundir::RunMeta;
use volley_rundir::rundir::{OutputNote, PlanChangeNote};
use volley_stats::{ErrorMessage, Interval, IntervalSample};

use crate::Recorded;

/// What a caller sees while a run records; every method has a default that does nothing.
///
/// Live consumers (the terminal's progress line, the dashboard, metric outputs) are observers:
/// they see each interval as the recorder wrote it, after the run directory has it, so
/// nothing they show can disagree with what the report later computes from disk.
pub trait Observer {
    /// The run started and its directory exists; `run.control` stops it (Ctrl-C, a test).
    fn started(&mut self, _run: &RunStart<'_>) {}
    /// An interval ended and was written.
    fn interval(&mut self, _interval: &IntervalView<'_>) {}
    /// A scrape of the server's metrics (`--server-metrics`) was written.
    fn server(&mut self, _scrape: &ScrapeSample) {}
    /// The plan was changed live ([`RunControl::set_vus`], [`RunControl::set_rate`]) and
    /// run.json records it.
    fn plan_changed(&mut self, _change: &PlanChangeNote) {}
    /// The load is over (the run directory is being closed).
    fn finished(&mut self) {}
    /// Live outputs this observer sent the run to, with how sending went; asked once per
    /// run, after [`Observer::finished`], and written to run.json's `outputs`.
    fn outputs(&mut self) -> Vec<OutputNote> {
        Vec::new()
    }
    /// A group's run `index` (0-based) of `of` is about to start.
    fn run_starting(&mut self, _index: usize, _of: usize) {}
    /// A run was recorded (its run directory is closed).
    fn run_recorded(&mut self, _run: &Recorded) {}
    /// Whether a group should go on to its next run (`false` once the user asked to stop);
    /// asked before every run and during pauses.
    fn keep_going(&mut self) -> bool {
        true
    }
}

/// A run that has just started.
pub struct RunStart<'a> {
    /// Its run directory.
    pub dir: &'a Path,
    /// Stops the run.
    pub control: RunControl,
    /// run.json as it starts (name, run id, plan, steps, segment).
    pub meta: &'a RunMeta,
    /// Wall-clock start: interval `k` covers `[k·interval, (k+1)·interval)` from it.
    pub started: std::time::SystemTime,
}

/// One interval as it was written to the run directory.
pub struct IntervalView<'a> {
    /// Its index from the start of the run (0-based).
    pub index: u64,
    /// Its nGrinder-shaped row.
    pub row: &'a Interval,
    /// The raw sample, histograms included.
    pub sample: &'a IntervalSample,
    /// The same per scenario step, by step id (empty without a scenario).
    pub steps: &'a [IntervalSample],
    /// The VU target at the end of the interval.
    pub target_vus: u64,
    /// Error messages first seen in this interval.
    pub messages: &'a [ErrorMessage],
}

/// Several observers watching one run, in order; a group goes on only while all agree.
pub struct Observers<'a>(pub Vec<&'a mut dyn Observer>);

impl Observer for Observers<'_> {
    fn started(&mut self, run: &RunStart<'_>) {
        self.0.iter_mut().for_each(|o| o.started(run));
    }
    fn interval(&mut self, interval: &IntervalView<'_>) {
        self.0.iter_mut().for_each(|o| o.interval(interval));
    }
    fn server(&mut self, scrape: &ScrapeSample) {
        self.0.iter_mut().for_each(|o| o.server(scrape));
    }
    fn plan_changed(&mut self, change: &PlanChangeNote) {
        self.0.iter_mut().for_each(|o| o.plan_changed(change));
    }
    fn finished(&mut self) {
        self.0.iter_mut().for_each(|o| o.finished());
    }
    fn outputs(&mut self) -> Vec<OutputNote> {
        self.0.iter_mut().flat_map(|o| o.outputs()).collect()
    }
    fn run_starting(&mut self, index: usize, of: usize) {
        self.0.iter_mut().for_each(|o| o.run_starting(index, of));
    }
    fn run_recorded(&mut self, run: &Recorded) {
        self.0.iter_mut().for_each(|o| o.run_recorded(run));
    }
    fn keep_going(&mut self) -> bool {
        // Every observer is asked (none is skipped once one says stop).
        let mut all = true;
        for o in self.0.iter_mut() {
            all &= o.keep_going();
        }
        all
    }
}

/// An observer that watches nothing.
pub struct Quiet;

impl Observer for Quiet {}
