//! The open model on one worker thread: arrivals due at absolute times from the rate
//! curve, each carried out by a free VU (a connection). An arrival that finds every VU
//! busy waits in a backlog and is sent as soon as one frees up — counted as *late*, and
//! its latency still measured from its due time — or, if it has waited longer than the
//! request timeout, is counted as *dropped*. Nothing is silently skipped. The backlog is
//! bounded ([`BACKLOG_CAP`]; beyond it an arrival is dropped at once, and counted), and a
//! schedule that runs behind the clock yields to its VUs and to the stop every
//! [`YIELD_EVERY`] arrivals, so no rate can exhaust memory or outlive a Ctrl-C.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use volley_scenario::{ArrivalClock, Arrivals, RateShape};

use crate::alarm::Alarm;
use crate::client::Client;
use crate::context::{Shared, WorkerContext};
use crate::flow::FlowState;
use crate::vu::{Iterate, ScenarioIterations, SingleRequest};

/// A VU of the open model: its connection, its variables and what it does per arrival.
struct Vu<W> {
    client: Client,
    flow: FlowState,
    work: W,
}

/// The VUs of one worker and the arrivals waiting for one.
struct Pool<W> {
    idle: Vec<Vu<W>>,
    created: usize,
    cap: usize,
    backlog: VecDeque<Instant>,
}

impl<W> Pool<W> {
    fn take(
        &mut self,
        ctx: &WorkerContext,
        worker: u64,
        workers: u64,
        work: impl FnOnce() -> W,
    ) -> Option<Vu<W>> {
        self.idle.pop().or_else(|| {
            (self.created < self.cap).then(|| {
                // VU numbers unique across workers, as in the closed model.
                let id = ctx
                    .plan
                    .segment
                    .global(self.created as u64 * workers + worker);
                self.created += 1;
                Vu {
                    client: ctx.client(),
                    flow: FlowState::new(id),
                    work: work(),
                }
            })
        })
    }
}

/// Dispatches this worker's share of the arrivals until the shape ends or the run stops,
/// then waits for its requests. Arrival `k` of the whole schedule belongs to segment
/// `k mod N` ([`volley_scenario::segment`]); of the segment's own arrivals (local numbers
/// 0, 1, 2, …), worker `w` of `W` takes `w`, `w + W`, …: global arrivals `i + N·w`,
/// stepping by `N·W`.
///
/// The worker waits for each due time on its own event loop with an [`Alarm`] (the
/// kernel's high-resolution timer beside the sockets): an arrival wakes one thread, once.
/// With `--arrival-wait spin` it never sleeps: it yields to its other tasks and polls its
/// sockets until the due time, so the core stays awake (a sleeping vCPU is woken late by the
/// machine; bench/README, "The generator's lag").
/// Once the run stops, arrivals due before the stop ([`Shared::stopped_at`]) are still
/// dispatched — sent, or counted as dropped, never lost — and the schedule ends.
pub(crate) async fn run_arrivals(
    ctx: Rc<WorkerContext>,
    rate: RateShape,
    worker: u64,
    workers: u64,
    cap: usize,
    t0: Instant,
) {
    // One task type per kind of plan, as for closed-model VUs (`vu::spawn_vu`).
    match ctx.plan.scenario().cloned() {
        Some(scenario) => {
            arrivals(ctx, rate, worker, workers, cap, t0, move || {
                ScenarioIterations::new(scenario.clone())
            })
            .await
        }
        None => arrivals(ctx, rate, worker, workers, cap, t0, || SingleRequest).await,
    }
}

async fn arrivals<W: Iterate + 'static>(
    ctx: Rc<WorkerContext>,
    rate: RateShape,
    worker: u64,
    workers: u64,
    cap: usize,
    t0: Instant,
    work: impl Fn() -> W,
) {
    let pool = Rc::new(RefCell::new(Pool {
        idle: Vec::new(),
        created: 0,
        cap: cap.max(1),
        backlog: VecDeque::new(),
    }));
    let mut tasks = tokio::task::JoinSet::new();
    let seg = ctx.plan.segment;
    let mut schedule = Schedule::new(
        rate,
        ctx.plan.load.arrivals,
        seg.global(worker),
        seg.count * workers,
        t0,
    );
    let mut alarm = Alarm::new();
    let spin = ctx.plan.load.arrival_wait == volley_scenario::ArrivalWait::Spin;
    let shared = ctx.shared.clone();
    let stopped = shared.stop.cancelled();
    tokio::pin!(stopped);
    let mut stopping = false;
    let mut without_wait = 0u32;
    loop {
        schedule.retarget(&shared);
        let Some(due) = schedule.peek() else { break };
        // A schedule behind the clock is dispatched without waiting; give the VUs' tasks
        // (and the stop) their turn every so often, so a rate beyond what this thread can
        // send cannot starve them or outlive a Ctrl-C.
        without_wait += 1;
        if without_wait >= YIELD_EVERY {
            without_wait = 0;
            tokio::task::yield_now().await;
            stopping |= shared.stop.is_cancelled();
        }
        if !stopping && due > Instant::now() {
            without_wait = 0;
            // Long waits are taken in slices, so that a rate set live is seen promptly.
            let wake = due.min(Instant::now() + RETARGET_SLICE);
            if spin {
                // Never asleep: the sockets and the clock polled in turn (ArrivalWait::Spin).
                while !stopping && Instant::now() < wake {
                    tokio::task::yield_now().await;
                    stopping |= shared.stop.is_cancelled();
                }
            } else {
                tokio::select! {
                    biased;
                    _ = &mut stopped => stopping = true,
                    _ = alarm.until(wake) => {}
                }
            }
            if !stopping && Instant::now() < due {
                continue;
            }
        }
        if schedule.after_stop(due, &shared) {
            break;
        }
        schedule.advance();
        ctx.recorder
            .borrow_mut()
            .record_sched_lag(due, Instant::now().saturating_duration_since(due));
        // Finished requests give their task back without a wake-up of their own.
        while let Some(r) = tasks.try_join_next() {
            shared.task_ended(r);
        }
        let vu = pool.borrow_mut().take(&ctx, worker, workers, &work);
        match vu {
            Some(vu) => {
                tasks.spawn_local(serve(ctx.clone(), pool.clone(), vu, due));
            }
            None => {
                let mut p = pool.borrow_mut();
                // A full backlog, or an arrival already older than the timeout, could only
                // be dropped later: count it dropped now, so memory stays bounded.
                if p.backlog.len() >= BACKLOG_CAP || due.elapsed() > ctx.plan.timeout {
                    drop(p);
                    ctx.recorder
                        .borrow_mut()
                        .record_arrival_outcome(due, false, true);
                } else {
                    p.backlog.push_back(due);
                }
            }
        }
    }
    while let Some(r) = tasks.join_next().await {
        shared.task_ended(r);
    }
    // Arrivals still waiting when the run stopped were never sent.
    let left: Vec<Instant> = pool.borrow_mut().backlog.drain(..).collect();
    let mut rec = ctx.recorder.borrow_mut();
    for due in left {
        rec.record_arrival_outcome(due, false, true);
    }
}

/// One worker's share of the rate curve's arrivals: `first`, `first + step`, … as instants,
/// each where the curve's integral reaches its operational time ([`ArrivalClock`]: `n`
/// evenly spaced, a sum of exponential gaps for Poisson arrivals).
///
/// A rate set live ([`Shared::rate_change`]) replaces the schedule from its instant on: the
/// constant schedule starts there with the same share (`first`, `step`), and an arrival of
/// the old schedule due after the change is never sent (it no longer exists).
struct Schedule {
    rate: RateShape,
    arrivals: Arrivals,
    clock: ArrivalClock,
    first: u64,
    next: u64,
    step: u64,
    t0: Instant,
    /// Where `rate` starts from `t0` (the instant of a live change; zero before one).
    base: Duration,
    /// The planned end, from `t0` (a live change keeps it).
    end: Duration,
    /// The live changes seen so far ([`Shared::rate_generation`]).
    seen: u64,
    /// The due time of arrival `next`, `None` past the curve's end.
    due: Option<Instant>,
}

impl Schedule {
    fn new(rate: RateShape, arrivals: Arrivals, first: u64, step: u64, t0: Instant) -> Self {
        let end = rate.duration();
        let mut clock = arrivals.clock();
        let due = rate.due_at(clock.at(first)).map(|d| t0 + d);
        Schedule {
            rate,
            arrivals,
            clock,
            first,
            next: first,
            step,
            t0,
            base: Duration::ZERO,
            end,
            seen: 0,
            due,
        }
    }

    fn peek(&self) -> Option<Instant> {
        self.due
    }

    fn advance(&mut self) {
        self.next += self.step;
        self.due = self
            .rate
            .due_at(self.clock.at(self.next))
            .map(|d| self.t0 + self.base + d);
    }

    /// Switches to a rate set live since the last look, if any.
    fn retarget(&mut self, shared: &Shared) {
        let generation = shared.rate_generation.load(Ordering::Acquire);
        if generation == self.seen {
            return;
        }
        self.seen = generation;
        if let Some(change) = *shared.rate_change.lock().unwrap_or_else(|p| p.into_inner()) {
            self.rate = RateShape::constant(change.rate, self.end.saturating_sub(change.at));
            self.base = change.at;
            self.next = self.first;
            self.clock = self.arrivals.clock();
            self.due = self
                .rate
                .due_at(self.clock.at(self.next))
                .map(|d| self.t0 + self.base + d);
        }
    }

    /// Whether an arrival due at `due` comes after the run stopped (and so is not made).
    fn after_stop(&self, due: Instant, shared: &Shared) -> bool {
        shared.stop.is_cancelled() && shared.stopped_at.get().is_none_or(|at| due >= *at)
    }
}

/// Most arrivals one worker keeps waiting for a free VU; one more is counted dropped at
/// once (1.6 MB of due times: far more than VUs can work off within any timeout that
/// matters, and a bound on what a rate beyond the target's can cost).
const BACKLOG_CAP: usize = 100_000;

/// Arrivals dispatched back to back before the loop yields to its VUs and looks at the stop.
const YIELD_EVERY: u32 = 64;

/// The longest a worker waits for an arrival before looking for a rate set live.
const RETARGET_SLICE: Duration = Duration::from_millis(20);

/// Sends the arrival due at `due` on `client`, then keeps serving the backlog with the
/// same VU; gives the VU back when the backlog is empty.
async fn serve<W: Iterate>(
    ctx: Rc<WorkerContext>,
    pool: Rc<RefCell<Pool<W>>>,
    mut vu: Vu<W>,
    mut due: Instant,
) {
    let mut late = false;
    loop {
        ctx.shared.active_vus.fetch_add(1, Ordering::Relaxed);
        let queued_us = Instant::now().saturating_duration_since(due).as_micros() as u64;
        if let Err(why) = vu
            .work
            .once(&ctx, &mut vu.client, &mut vu.flow, queued_us)
            .await
        {
            ctx.shared.halt(why);
        }
        ctx.shared.active_vus.fetch_sub(1, Ordering::Relaxed);
        if late {
            ctx.recorder
                .borrow_mut()
                .record_arrival_outcome(due, true, false);
        }
        // Next: the oldest waiting arrival that has not outlived the timeout.
        let next = loop {
            if ctx.shared.stop.is_cancelled() {
                break None;
            }
            let Some(d) = pool.borrow_mut().backlog.pop_front() else {
                break None;
            };
            if d.elapsed() > ctx.plan.timeout {
                ctx.recorder
                    .borrow_mut()
                    .record_arrival_outcome(d, false, true);
                continue;
            }
            break Some(d);
        };
        match next {
            Some(d) => {
                due = d;
                late = true;
            }
            None => {
                pool.borrow_mut().idle.push(vu);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The schedules of several workers hand over together exactly the arrivals of
    //! [`RateShape::due`]: none twice, none missing, each worker's in order; after a stop,
    //! only those due before it.

    use std::sync::Arc;

    use volley_scenario::RateStage;

    use super::*;

    /// Every due time of `schedule` until it ends or one comes after the stop.
    fn drain(mut schedule: Schedule, shared: &Shared) -> Vec<Instant> {
        let mut out = Vec::new();
        while let Some(due) = schedule.peek() {
            if schedule.after_stop(due, shared) {
                break;
            }
            out.push(due);
            schedule.advance();
        }
        out
    }

    #[test]
    fn workers_share_the_schedule_without_gap_or_duplicate() {
        // A ramp from 0 to 3000/s over 100 ms, then 3000/s for 100 ms: 150 + 300 arrivals.
        let ms = Duration::from_millis;
        let rate = RateShape {
            start_rate: 0.0,
            stages: vec![
                RateStage {
                    duration: ms(100),
                    rate: 3000.0,
                },
                RateStage {
                    duration: ms(100),
                    rate: 3000.0,
                },
            ],
        };
        let schedule: Vec<Duration> = (0..).map_while(|n| rate.due(n)).collect();
        assert_eq!(schedule.len(), 450);
        let t0 = Instant::now();
        let shared = Shared::new(0, 0);
        for workers in [1, 3, 4] {
            let got: Vec<Vec<Instant>> = (0..workers)
                .map(|w| {
                    drain(
                        Schedule::new(rate.clone(), Arrivals::Even, w, workers, t0),
                        &shared,
                    )
                })
                .collect();
            for (w, dues) in got.iter().enumerate() {
                let share: Vec<Instant> = schedule
                    .iter()
                    .skip(w)
                    .step_by(workers as usize)
                    .map(|d| t0 + *d)
                    .collect();
                assert_eq!(dues, &share, "worker {w} of {workers}: its share, in order");
            }
            let mut all: Vec<Instant> = got.into_iter().flatten().collect();
            all.sort();
            let whole: Vec<Instant> = schedule.iter().map(|d| t0 + *d).collect();
            assert_eq!(all, whole, "{workers} workers: every arrival once");
        }
    }

    #[test]
    fn poisson_workers_share_one_schedule() {
        // Poisson arrivals split among 1, 2 or 3 workers (or segments): together exactly the
        // schedule one worker walks alone, each arrival once.
        let rate = RateShape::constant(2000.0, Duration::from_millis(500));
        let arrivals = Arrivals::Poisson { seed: 5 };
        let t0 = Instant::now();
        let shared = Shared::new(0, 0);
        let whole = drain(Schedule::new(rate.clone(), arrivals, 0, 1, t0), &shared);
        assert!((900..1100).contains(&whole.len()), "{}", whole.len());
        assert!(whole.windows(2).all(|w| w[0] <= w[1]));
        for workers in [2u64, 3] {
            let mut all: Vec<Instant> = (0..workers)
                .flat_map(|w| {
                    drain(
                        Schedule::new(rate.clone(), arrivals, w, workers, t0),
                        &shared,
                    )
                })
                .collect();
            all.sort();
            assert_eq!(all, whole, "{workers} workers");
        }
    }

    #[test]
    fn a_stopped_schedule_ends_at_the_stop() {
        let rate = RateShape::constant(200.0, Duration::from_secs(60));
        let t0 = Instant::now();
        let shared = Arc::new(Shared::new(0, 0));
        // Not stopped: the whole minute, 12,000 arrivals, half for each of two workers.
        assert_eq!(
            drain(
                Schedule::new(rate.clone(), Arrivals::Even, 1, 2, t0),
                &shared
            )
            .len(),
            6_000
        );
        let _ = shared.stopped_at.set(t0 + Duration::from_millis(50));
        shared.stop.cancel();
        for w in 0..2u64 {
            let dues = drain(
                Schedule::new(rate.clone(), Arrivals::Even, w, 2, t0),
                &shared,
            );
            // Due at 0, 5, … 45 ms: ten before the stop, five per worker.
            let share: Vec<Instant> = (w..10)
                .step_by(2)
                .map(|n| t0 + rate.due(n).unwrap())
                .collect();
            assert_eq!(
                dues, share,
                "worker {w}: its arrivals due before the stop, and no more"
            );
        }
    }
}
