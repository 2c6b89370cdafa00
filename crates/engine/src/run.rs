//! Starting, conducting and stopping a run.
//!
//! One *conductor* thread owns time: it moves the VU target along the load shape, spawns
//! VUs on the worker threads, asks every worker for its part of each finished interval,
//! merges the parts and hands the caller one [`Event::Interval`] per interval. Because the
//! requests for interval parts and the final stop travel on the same ordered channel to
//! each worker, every completion lands in exactly one interval.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::mpsc as tmpsc;
use tokio_util::sync::CancellationToken;
use volley_scenario::{Plan, Work};
use volley_stats::{ErrorMessage, Interval, IntervalSample};

use crate::client::PreparedRequest;
use crate::connection::Speaks;
use crate::context::{RateChange, Shared};
use crate::error::{Error, Repr};
use crate::recorder::WorkerPart;
use crate::target::Target;
use crate::tls::TlsOptions;
use crate::worker::{Command, WorkerSeed, worker_main};

/// Everything needed to run a plan.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The plan.
    pub plan: Plan,
    /// The resolved target.
    pub target: Target,
    /// TLS trust.
    pub tls: TlsOptions,
    /// Speak HTTP/2 (prior knowledge on http://, forced on https://).
    pub http2: bool,
    /// Sampling interval.
    pub interval: Duration,
    /// Worker threads (event loops).
    pub threads: usize,
    /// How long in-flight requests may finish after the run stops.
    pub grace: Duration,
    /// Stop when errors exceed half of all requests for 10 s (nGrinder's rule).
    pub error_stop: bool,
    /// Start at this wall-clock instant (segments of one run start together): intervals and
    /// arrivals are counted from it exactly, however late the threads come up.
    pub start_at: Option<SystemTime>,
}

/// Why a run ended early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// The user asked (Ctrl-C, the dashboard's stop).
    Interrupted,
    /// The process was asked to end (SIGTERM: `kubectl delete pod`, a node drain or an
    /// eviction, `kill`); stopped as gracefully as Ctrl-C stops it.
    Terminated,
    /// volley stopped it; the text says why.
    Aborted(String),
}

/// What the caller receives.
#[derive(Debug)]
pub enum Event {
    /// One finished interval, merged over all workers.
    Interval {
        /// The raw sample (histograms included).
        sample: Box<IntervalSample>,
        /// The same per scenario step, by step id (empty without a scenario).
        steps: Vec<IntervalSample>,
        /// Its nGrinder-shaped row.
        row: Interval,
        /// Error messages first seen in this interval.
        messages: Vec<ErrorMessage>,
        /// The VU target at the end of the interval.
        target_vus: u64,
    },
    /// The plan was changed while the run went ([`RunControl::set_vus`], [`RunControl::set_rate`]).
    PlanChanged(PlanChange),
    /// The run is over; no more events follow.
    End(RunEnd),
}

/// A new load level asked for while the run goes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Retarget {
    /// Closed model: this many VUs from now on, instead of the planned shape.
    Vus(u64),
    /// Open model: this many arrivals per second from now on, instead of the planned curve.
    Rate(f64),
}

/// A change of plan the conductor carried out.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanChange {
    /// When, from the run's start.
    pub at: Duration,
    /// To what.
    pub to: Retarget,
    /// Who asked (`dashboard`, a test's name).
    pub by: String,
}

/// VUs a live change may ask for at most (or the plan's own maximum, when larger).
pub const MAX_LIVE_VUS: u64 = 100_000;

/// How a run ended.
#[derive(Debug, Clone)]
pub struct RunEnd {
    /// `None` when it ran its planned course.
    pub stopped: Option<StopReason>,
    /// Time from start to stop.
    pub elapsed: Duration,
}

enum Control {
    Stop(StopReason),
    Retarget(Retarget, String),
}

/// A running test.
pub struct Run {
    events: mpsc::Receiver<Event>,
    control: RunControl,
    /// Wall-clock start.
    pub started: SystemTime,
    /// The instant intervals are counted from.
    pub t0: Instant,
    /// With a start time: how long after it the load actually began.
    pub start_lag: Duration,
}

impl Run {
    /// The next event; `None` once the run has ended and every event was taken.
    pub fn next_event(&self) -> Option<Event> {
        self.events.recv().ok()
    }

    /// A handle that stops the run from another thread.
    pub fn control(&self) -> RunControl {
        self.control.clone()
    }
}

/// Stops or re-targets a run from anywhere (a signal handler, the dashboard, a test).
#[derive(Clone)]
pub struct RunControl {
    control: mpsc::Sender<Control>,
    abort: CancellationToken,
    /// What the plan allows to change live.
    model: LiveModel,
    /// Runs stopped together with this one ([`RunControl::together`]).
    also: Vec<RunControl>,
}

/// Which live change a plan takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LiveModel {
    /// Closed model: the VU target, up to this many VUs.
    Vus {
        /// The most VUs that may be asked for.
        max: u64,
    },
    /// Open model: the arrival rate.
    Rate,
    /// A run count (`iterations`): nothing; the run ends when every VU has run its count.
    Fixed,
    /// Several populations side by side ([`RunControl::together`]): nothing yet.
    Populations,
}

impl RunControl {
    /// Stops gracefully: no new iterations, in-flight requests get the grace period.
    pub fn stop(&self, reason: StopReason) {
        let _ = self.control.send(Control::Stop(reason.clone()));
        self.also.iter().for_each(|c| c.stop(reason.clone()));
    }

    /// What this run lets change live.
    pub fn model(&self) -> LiveModel {
        self.model
    }

    /// Closed model: runs `vus` VUs from now on (the planned shape no longer steers; the
    /// run keeps its planned end). The conductor carries it out on its next tick and reports
    /// it as [`Event::PlanChanged`]; `by` says who asked.
    pub fn set_vus(&self, vus: u64, by: &str) -> Result<(), Error> {
        match self.model {
            LiveModel::Vus { max } if vus <= max => self.send(Control::Retarget(Retarget::Vus(vus), by.to_string())),
            LiveModel::Vus { max } => Err(Repr::Control(format!("{vus} VUs is more than this run may start ({max}); give at most {max}")).into()),
            LiveModel::Rate => Err(Repr::Control("this run has an arrival rate (open model): change the rate, not the VUs".into()).into()),
            LiveModel::Fixed => Err(Repr::Control("this run has a run count (iterations): it ends when every VU has run its count, so its VUs cannot change".into()).into()),
            LiveModel::Populations => Err(populations_fixed()),
        }
    }

    /// Open model: `rate` arrivals per second from now on, until the plan's end. The
    /// conductor hands it to the pacers and reports it as [`Event::PlanChanged`].
    pub fn set_rate(&self, rate: f64, by: &str) -> Result<(), Error> {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(Repr::Control(format!(
                "a rate of {rate}/s sends nothing; give a rate above zero, like 500"
            ))
            .into());
        }
        volley_scenario::limits::rate_at_most(rate, &format!("{rate:e}/s"))
            .map_err(|e| Repr::Control(e.to_string()))?;
        match self.model {
            LiveModel::Rate => self.send(Control::Retarget(Retarget::Rate(rate), by.to_string())),
            LiveModel::Populations => Err(populations_fixed()),
            _ => Err(Repr::Control(
                "this run has virtual users (closed model): change the VUs, not the rate".into(),
            )
            .into()),
        }
    }

    fn send(&self, control: Control) -> Result<(), Error> {
        self.control
            .send(control)
            .map_err(|_| Repr::Control("the run is over".into()).into())
    }

    /// Drops in-flight requests at once.
    pub fn abort(&self) {
        let _ = self.control.send(Control::Stop(StopReason::Aborted(
            "aborted by a second interrupt".into(),
        )));
        self.abort.cancel();
        self.also.iter().for_each(RunControl::abort);
    }

    /// One handle that stops every run of `controls` (runs side by side, such as a
    /// scenario file's populations); `None` when there are none.
    pub fn together(controls: Vec<RunControl>) -> Option<RunControl> {
        let mut controls = controls.into_iter();
        let mut first = controls.next()?;
        first.also.extend(controls);
        if !first.also.is_empty() {
            first.model = LiveModel::Populations;
        }
        Some(first)
    }
}

fn populations_fixed() -> Error {
    Repr::Control(
        "this run has several populations, and live changes of one population are not supported: stop the run and change the scenario file's `scenarios:`".into(),
    ).into()
}

impl EngineConfig {
    /// Event loops when none are asked for: one per core.
    pub fn default_threads() -> usize {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }

    /// How long the pre-run connection check may take.
    pub fn timeout_for_preflight(&self) -> Duration {
        self.plan.timeout.min(Duration::from_secs(5))
    }
}

/// Starts the run on background threads.
pub fn start(config: EngineConfig) -> Result<Run, Error> {
    let tls = if config.target.tls {
        config.tls.client_config(false)?
    } else {
        None
    };
    let request = match &config.plan.work {
        Work::Request(r) => Some(PreparedRequest::new(
            &config.target,
            Speaks::of(config.http2, tls.as_ref()),
            r,
        )?),
        Work::Scenario(scenario) => {
            crate::grpc::resolve(
                &scenario.steps,
                &scenario.step_info,
                &config.target,
                &tls,
                config.timeout_for_preflight(),
            )?;
            None
        }
    };
    // Closed model: one flag per VU of this segment the shape may start.
    let max_vus = if config.plan.load.is_open() {
        0
    } else {
        config.plan.segment.share(config.plan.load.max_vus()) as usize
    };
    let shared = Arc::new(Shared::new(max_vus, 0));
    let (t0, started, start_lag) = match config.start_at {
        Some(at) => {
            wait_until(at);
            let (now, wall) = (Instant::now(), SystemTime::now());
            let lag = wall.duration_since(at).unwrap_or_default();
            (now.checked_sub(lag).unwrap_or(now), at, lag)
        }
        None => (Instant::now(), SystemTime::now(), Duration::ZERO),
    };
    let plan = Arc::new(config.plan.clone());
    let (parts_tx, parts_rx) = mpsc::channel();
    let mut workers = Vec::new();
    // Shared connections: no more event loops than connections, so each has one at least.
    let conns = config
        .plan
        .load
        .connections
        .map_or(u64::MAX, |n| config.plan.segment.share(n).max(1));
    let threads = config.threads.max(1).min(conns as usize);
    for w in 0..threads {
        let (tx, rx) = tmpsc::unbounded_channel();
        let ctx = WorkerSeed {
            shared: shared.clone(),
            plan: plan.clone(),
            target: config.target.clone(),
            tls: tls.clone(),
            force_h2: config.http2,
            request: request.clone(),
            t0,
            interval: config.interval,
            grace: config.grace,
            parts: parts_tx.clone(),
            worker: w as u64,
            workers: threads as u64,
        };
        std::thread::Builder::new()
            .name(format!("volley-worker-{w}"))
            .spawn(move || {
                // A worker that panics (a bug) stops the run as aborted, saying so, instead
                // of leaving a run that looks complete with its counts missing.
                let shared = ctx.shared.clone();
                let run = std::panic::AssertUnwindSafe(move || worker_main(ctx, rx));
                if std::panic::catch_unwind(run).is_err() {
                    shared.halt(format!(
                        "worker thread {w} failed (a bug in volley: please report the command); its requests are missing from the counts"
                    ));
                    shared.dead_workers.fetch_add(1, Ordering::AcqRel);
                }
            })
            .map_err(|error| Repr::Start {
                what: "a worker thread",
                error,
            })?;
        workers.push(tx);
    }
    let (events_tx, events_rx) = mpsc::channel();
    let (control_tx, control_rx) = mpsc::channel();
    let abort = shared.abort.clone();
    let load = &config.plan.load;
    let model = if load.is_open() {
        LiveModel::Rate
    } else if load.iterations().is_some() {
        LiveModel::Fixed
    } else {
        LiveModel::Vus {
            max: load.max_vus().max(MAX_LIVE_VUS),
        }
    };
    let conductor = Conductor {
        config,
        shared,
        workers,
        parts: parts_rx,
        events: events_tx,
        control: control_rx,
        t0,
        cpu: std::cell::RefCell::new(CpuClock::new()),
        vus_set: std::cell::Cell::new(None),
    };
    std::thread::Builder::new()
        .name("volley-conductor".into())
        .spawn(move || conductor.run())
        .map_err(|error| Repr::Start {
            what: "the conductor thread",
            error,
        })?;
    Ok(Run {
        events: events_rx,
        control: RunControl {
            control: control_tx,
            abort,
            model,
            also: Vec::new(),
        },
        started,
        t0,
        start_lag,
    })
}

/// Sleeps until the wall clock reads `at` (at once if it already has). Ctrl-C meanwhile
/// ends the process as usual: volley's own handler is installed once the run has started.
fn wait_until(at: SystemTime) {
    while let Ok(left) = at.duration_since(SystemTime::now()) {
        if left.is_zero() {
            break;
        }
        // In slices, so a clock that is stepped while waiting is followed.
        std::thread::sleep(left.min(Duration::from_millis(250)));
    }
}

struct Conductor {
    config: EngineConfig,
    shared: Arc<Shared>,
    workers: Vec<tmpsc::UnboundedSender<Command>>,
    parts: mpsc::Receiver<WorkerPart>,
    events: mpsc::Sender<Event>,
    control: mpsc::Receiver<Control>,
    t0: Instant,
    cpu: std::cell::RefCell<CpuClock>,
    /// The VU target set live, for the whole plan (every segment takes its share).
    vus_set: std::cell::Cell<Option<u64>>,
}

/// The generator's own CPU use between two readings.
struct CpuClock {
    at: Instant,
    cpu_s: f64,
}

impl CpuClock {
    fn new() -> Self {
        CpuClock {
            at: Instant::now(),
            cpu_s: process_cpu_seconds(),
        }
    }

    /// % of `cores` used since the last call.
    fn percent(&mut self, cores: usize) -> f64 {
        let (now, cpu) = (Instant::now(), process_cpu_seconds());
        let wall = now.duration_since(self.at).as_secs_f64();
        let pct = if wall > 0.0 {
            (cpu - self.cpu_s) / wall / cores.max(1) as f64 * 100.0
        } else {
            0.0
        };
        (self.at, self.cpu_s) = (now, cpu);
        pct.max(0.0)
    }
}

/// User + system CPU seconds of this process (Linux `/proc/self/stat`; 0 elsewhere).
fn process_cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    let Some((_, after)) = stat.rsplit_once(')') else {
        return 0.0;
    };
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the line; USER_HZ is 100 on Linux.
    (ticks(11) + ticks(12)) / 100.0
}

/// How often the conductor moves the VU target.
const CONTROL_TICK: Duration = Duration::from_millis(10);

/// Most VUs the conductor starts per tick ([`CONTROL_TICK`]): 100,000 per second.
const SPAWN_BATCH: u32 = 1000;

impl Conductor {
    fn run(self) {
        let interval = self.config.interval;
        let duration = self.config.plan.load.duration();
        let mut next_index = 0u64;
        let mut error_watch = ErrorWatch::default();
        let stopped = 'conduct: loop {
            let elapsed = self.t0.elapsed();
            // Finished intervals, except the run's last one, which `finish` emits (and after
            // it the drain, what completes in the grace period).
            while interval * (next_index as u32 + 1) <= elapsed
                && interval * (next_index as u32 + 1) < duration
            {
                let (sample, steps, messages) = self.collect(Command::Flush(next_index));
                let tripped = self.emit(
                    next_index,
                    sample,
                    steps,
                    messages,
                    interval,
                    &mut error_watch,
                );
                next_index += 1;
                if let Some(reason) = tripped.filter(|_| self.config.error_stop) {
                    break 'conduct Some(StopReason::Aborted(reason));
                }
            }
            if elapsed >= duration || self.all_iterations_done() {
                break None;
            }
            if let Some(why) = self.shared.halted() {
                break Some(StopReason::Aborted(why));
            }
            // After emitting, so an interval reports the VUs that ran in it.
            self.steer(elapsed);
            let wait =
                CONTROL_TICK.min((interval * (next_index as u32 + 1)).saturating_sub(elapsed));
            match self.control.recv_timeout(wait) {
                Ok(Control::Stop(reason)) => break Some(reason),
                Ok(Control::Retarget(to, by)) => self.retarget(to, by),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break Some(StopReason::Interrupted),
            }
        };
        self.finish(next_index, stopped);
    }

    /// With a run count, whether every VU has run all its iterations.
    fn all_iterations_done(&self) -> bool {
        let max = self
            .config
            .plan
            .segment
            .share(self.config.plan.load.max_vus());
        self.config.plan.load.iterations().is_some()
            && max > 0
            && self.shared.finished_vus.load(Ordering::Acquire) >= max
    }

    /// Moves the VU target to where the shape (or the target set live) says and starts
    /// VUs that should run.
    fn steer(&self, elapsed: Duration) {
        let Some(shape) = self.config.plan.load.shape() else {
            return;
        };
        // This segment's VUs among the plan's first `vus_at` (all of them when whole).
        let target = self
            .config
            .plan
            .segment
            .share(self.vus_set.get().unwrap_or_else(|| shape.vus_at(elapsed)));
        self.shared.target_vus.store(target, Ordering::Relaxed);
        let mut running = self
            .shared
            .running
            .read()
            .unwrap_or_else(|p| p.into_inner());
        if running.len() < target as usize {
            drop(running);
            let mut grown = self
                .shared
                .running
                .write()
                .unwrap_or_else(|p| p.into_inner());
            let more = target as usize - grown.len();
            grown.extend((0..more).map(|_| AtomicBool::new(false)));
            drop(grown);
            running = self
                .shared
                .running
                .read()
                .unwrap_or_else(|p| p.into_inner());
        }
        // At most SPAWN_BATCH new VUs per tick: a jump to 100,000 VUs (from the dashboard, or
        // a stage that starts at once) reaches the workers as a ramp of a few ticks, with the
        // interval flushes and the stop between the batches, instead of one queue of 100,000
        // spawns that the next flush waits behind.
        let mut started = 0;
        for id in 0..target {
            if started == SPAWN_BATCH {
                break;
            }
            if !running[id as usize].swap(true, Ordering::AcqRel) {
                started += 1;
                self.shared.active_vus.fetch_add(1, Ordering::Relaxed);
                let _ = self.workers[id as usize % self.workers.len()].send(Command::Spawn(id));
            }
        }
    }

    /// Carries out a change of plan asked for live, and reports it.
    fn retarget(&self, to: Retarget, by: String) {
        let at = self.t0.elapsed();
        match to {
            Retarget::Vus(vus) => self.vus_set.set(Some(vus)),
            Retarget::Rate(rate) => {
                *self
                    .shared
                    .rate_change
                    .lock()
                    .unwrap_or_else(|p| p.into_inner()) = Some(RateChange { at, rate });
                self.shared.rate_generation.fetch_add(1, Ordering::AcqRel);
            }
        }
        let _ = self
            .events
            .send(Event::PlanChanged(PlanChange { at, to, by }));
    }

    /// Sends `command` to every worker and merges the parts they answer with.
    fn collect(
        &self,
        command: Command,
    ) -> (IntervalSample, Vec<IntervalSample>, Vec<ErrorMessage>) {
        let index = match command {
            Command::Flush(i) | Command::Finish(i) | Command::Spawn(i) => i,
        };
        // A worker that is gone (see the panic guard in `start`) answers nothing.
        let alive = self
            .workers
            .iter()
            .filter(|w| w.send(command).is_ok())
            .count();
        self.receive(index, alive, &mut Vec::new())
    }

    /// Merges the parts of interval `index` that `alive` workers send. At the stop a worker
    /// sends two parts, the last interval's and the drain's, and a quick worker's drain can come
    /// before a slow worker's last interval: a part of another interval waits in `early`, and
    /// the parts already waiting there are taken first.
    fn receive(
        &self,
        index: u64,
        alive: usize,
        early: &mut Vec<WorkerPart>,
    ) -> (IntervalSample, Vec<IntervalSample>, Vec<ErrorMessage>) {
        let mut merged = IntervalSample::new(index);
        let mut steps: Vec<IntervalSample> = Vec::new();
        let mut messages = Vec::new();
        let (mut ready, later): (Vec<WorkerPart>, Vec<WorkerPart>) =
            early.drain(..).partition(|p| p.sample.index == index);
        *early = later;
        // A worker that panics after taking the command never answers: wait for the others.
        let mut got = 0;
        while got < alive {
            let part = match ready.pop() {
                Some(part) => Ok(part),
                None => self.parts.recv_timeout(Duration::from_millis(50)),
            };
            let part = match part {
                Ok(part) if part.sample.index != index => {
                    early.push(part);
                    continue;
                }
                Ok(part) => part,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let dead = self.shared.dead_workers.load(Ordering::Acquire) as usize;
                    if dead > 0 && got + dead >= alive {
                        break;
                    }
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            };
            got += 1;
            merged.merge(&part.sample);
            if steps.is_empty() {
                steps = part.steps;
            } else {
                for (m, s) in steps.iter_mut().zip(&part.steps) {
                    m.merge(s);
                }
            }
            messages.extend(part.messages);
        }
        (merged, steps, messages)
    }

    fn emit(
        &self,
        index: u64,
        mut sample: IntervalSample,
        steps: Vec<IntervalSample>,
        messages: Vec<ErrorMessage>,
        period: Duration,
        watch: &mut ErrorWatch,
    ) -> Option<String> {
        let start = self.config.interval.as_secs_f64() * index as f64;
        let vus = self.shared.active_vus.load(Ordering::Relaxed) as f64;
        sample.counts.generator_cpu_pct = self.cpu.borrow_mut().percent(self.workers.len());
        let row = sample.to_interval(start, period.as_secs_f64(), vus);
        let tripped = watch.observe(&row, start + period.as_secs_f64());
        let _ = self.events.send(Event::Interval {
            sample: Box::new(sample),
            steps,
            row,
            messages,
            target_vus: self.shared.target_vus.load(Ordering::Relaxed),
        });
        tripped
    }

    /// Stops every VU and emits the last interval (what completed up to the stop), then lets
    /// in-flight requests finish within the grace period and emits them as the drain: a row of
    /// its own at the stop, 0 s long and with 0 VUs, which the TPS figures leave out (the
    /// requests queued at the stop would otherwise all land in the last interval and raise
    /// its TPS above what the target sustained), then the end.
    fn finish(&self, next_index: u64, stopped: Option<StopReason>) {
        let stop_at = self.t0.elapsed().min(self.config.plan.load.duration());
        let interval = self.config.interval;
        let vus_at_stop = self.shared.active_vus.load(Ordering::Relaxed) as f64;
        self.shared.target_vus.store(0, Ordering::Relaxed);
        let _ = self.shared.stopped_at.set(self.t0 + stop_at);
        self.shared.stop.cancel();
        // The interval holding the stop instant (a stop exactly on a boundary belongs to
        // the interval before it), but never one already emitted.
        let holding = (stop_at.as_nanos().div_ceil(interval.as_nanos()) as u64).saturating_sub(1);
        let last = holding.max(next_index);
        let alive = self
            .workers
            .iter()
            .filter(|w| w.send(Command::Finish(last)).is_ok())
            .count();
        let mut early = Vec::new();
        let (sample, steps, messages) = self.receive(last, alive, &mut early);
        let start = interval * last as u32;
        let period = stop_at.saturating_sub(start);
        let emitted = period > Duration::ZERO;
        // A last interval of no length (a stop on an interval boundary already emitted) is
        // part of the drain.
        let (mut carried, mut carried_steps, mut carried_messages) = (None, Vec::new(), Vec::new());
        if emitted {
            let row = sample.to_interval(start.as_secs_f64(), period.as_secs_f64(), vus_at_stop);
            let _ = self.events.send(Event::Interval {
                sample: Box::new(sample),
                steps,
                row,
                messages,
                target_vus: 0,
            });
        } else {
            (carried, carried_steps, carried_messages) = (Some(sample), steps, messages);
        }
        let (mut drain, mut steps, mut messages) = self.receive(last + 1, alive, &mut early);
        if let Some(c) = carried {
            drain.merge(&c);
            for (d, c) in steps.iter_mut().zip(&carried_steps) {
                d.merge(c);
            }
            messages.extend(carried_messages);
        }
        // Every worker has answered, its VUs gone: their memory goes back before the report.
        trim_heap();
        if drain.counts.tests + drain.counts.errors > 0 || !messages.is_empty() {
            // Numbered after the last row sent, so the rows' indices stay consecutive.
            let index = if emitted { last + 1 } else { last };
            drain.index = index;
            let steps = steps
                .into_iter()
                .map(|mut s| {
                    s.index = index;
                    s
                })
                .collect();
            let row = drain.to_interval(stop_at.as_secs_f64(), 0.0, 0.0);
            let _ = self.events.send(Event::Interval {
                sample: Box::new(drain),
                steps,
                row,
                messages,
                target_vus: 0,
            });
        }
        let _ = self.events.send(Event::End(RunEnd {
            stopped,
            elapsed: stop_at,
        }));
    }
}

/// Returns the freed VUs' memory to the system, once all workers are done (`malloc_trim`
/// walks every arena). glibc keeps what a thread frees in that thread's arena, which the
/// report (made on another thread) does not reuse: without this, a large run's peak RSS was at
/// times its VUs *and* its report (10,000 held SSE streams: 2.35 instead of 2.0 KB per VU in 4
/// of 11 runs; with it, every run at 1.98–2.03, bench/vus.sh). The rustix crate has no binding
/// for it; `libc` has.
fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    // SAFETY: `malloc_trim` takes no pointer; it only gives free pages back to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// nGrinder's safety stop: errors above half of all requests (cumulative), still so 10 s later.
#[derive(Default)]
struct ErrorWatch {
    tests: u64,
    errors: u64,
    since: Option<f64>,
}

impl ErrorWatch {
    const HOLD_S: f64 = 10.0;

    fn observe(&mut self, row: &Interval, now_s: f64) -> Option<String> {
        self.tests += row.tests;
        self.errors += row.errors;
        if self.errors * 2 <= self.tests + self.errors {
            self.since = None;
            return None;
        }
        let since = *self.since.get_or_insert(now_s);
        (now_s - since >= Self::HOLD_S).then(|| {
            format!(
                "too many errors: {} of {} requests failed ({:.1} %), above half for {:.0} s",
                self.errors,
                self.tests + self.errors,
                self.errors as f64 * 100.0 / (self.tests + self.errors) as f64,
                now_s - since
            )
        })
    }
}
