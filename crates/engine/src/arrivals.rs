//! The open model on one worker thread: arrivals due at absolute times from the rate
//! curve, each carried out by a free VU (a connection). An arrival that finds every VU
//! busy waits in a backlog and is sent as soon as one frees up — counted as *late*, and
//! its latency still measured from its due time — or, if it has waited longer than the
//! request timeout, is counted as *dropped*. Nothing is silently skipped.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use volley_scenario::RateShape;

use crate::client::Client;
use crate::flow::FlowState;
use crate::context::{Shared, WorkerContext};
use crate::vu::{NothingSent, send_request};

/// A VU of the open model: its connection and, in a scenario, its variables.
struct Vu {
    client: Client,
    flow: FlowState,
    nothing_sent: NothingSent,
}

/// The VUs of one worker and the arrivals waiting for one.
struct Pool {
    idle: Vec<Vu>,
    created: usize,
    cap: usize,
    backlog: VecDeque<Instant>,
}

impl Pool {
    fn take(&mut self, ctx: &WorkerContext, worker: u64, workers: u64) -> Option<Vu> {
        self.idle.pop().or_else(|| {
            (self.created < self.cap).then(|| {
                // VU numbers unique across workers, as in the closed model.
                let id = ctx.plan.segment.global(self.created as u64 * workers + worker);
                self.created += 1;
                Vu { client: ctx.client(), flow: FlowState::new(id), nothing_sent: NothingSent::default() }
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
/// The due times come from a pacer thread that sleeps with the OS's sub-millisecond
/// precision: the event loop's timer ticks in whole milliseconds, which alone would send
/// every arrival up to a millisecond late.
pub(crate) async fn run_arrivals(ctx: Rc<WorkerContext>, rate: RateShape, worker: u64, workers: u64, cap: usize, t0: Instant) {
    let pool = Rc::new(RefCell::new(Pool { idle: Vec::new(), created: 0, cap: cap.max(1), backlog: VecDeque::new() }));
    let mut tasks = tokio::task::JoinSet::new();
    let seg = ctx.plan.segment;
    let mut arrivals = pace(rate, seg.global(worker), seg.count * workers, t0, ctx.shared.clone());
    let mut stopping = false;
    loop {
        let due = tokio::select! {
            biased;
            _ = ctx.shared.stop.cancelled(), if !stopping => {
                // The pacer still hands over the arrivals that were due before the stop
                // (then ends): they are sent, or counted as dropped, never lost.
                stopping = true;
                continue;
            }
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
            due = arrivals.recv() => match due { Some(d) => d, None => break },
        };
        ctx.recorder.borrow_mut().record_sched_lag(due, Instant::now().saturating_duration_since(due));
        let vu = pool.borrow_mut().take(&ctx, worker, workers);
        match vu {
            Some(vu) => {
                tasks.spawn_local(serve(ctx.clone(), pool.clone(), vu, due));
            }
            None => pool.borrow_mut().backlog.push_back(due),
        }
    }
    while tasks.join_next().await.is_some() {}
    // Arrivals still waiting when the run stopped were never sent.
    let left: Vec<Instant> = pool.borrow_mut().backlog.drain(..).collect();
    let mut rec = ctx.recorder.borrow_mut();
    for due in left {
        rec.record_arrival_outcome(due, false, true);
    }
}

/// A thread that hands over arrivals `first`, `first + step`, … each at its due time. Once
/// the run stops it hands over those due before the stop ([`Shared::stopped_at`]) and ends.
fn pace(rate: RateShape, first: u64, step: u64, t0: Instant, shared: Arc<Shared>) -> tokio::sync::mpsc::UnboundedReceiver<Instant> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let spawned = std::thread::Builder::new().name(format!("volley-pacer-{first}")).spawn(move || {
        let mut n = first;
        let after_stop = |due: Instant| shared.stop.is_cancelled() && shared.stopped_at.get().is_none_or(|at| due >= *at);
        while let Some(offset) = rate.due(n) {
            let due = t0 + offset;
            if after_stop(due) {
                return;
            }
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            if after_stop(due) || tx.send(due).is_err() {
                return;
            }
            n += step;
        }
    });
    if let Err(e) = spawned {
        eprintln!("volley: cannot start the arrival pacer: {e}");
    }
    rx
}

/// Sends the arrival due at `due` on `client`, then keeps serving the backlog with the
/// same VU; gives the VU back when the backlog is empty.
async fn serve(ctx: Rc<WorkerContext>, pool: Rc<RefCell<Pool>>, mut vu: Vu, mut due: Instant) {
    let mut late = false;
    loop {
        ctx.shared.active_vus.fetch_add(1, Ordering::Relaxed);
        let queued_us = Instant::now().saturating_duration_since(due).as_micros() as u64;
        if let Some(scenario) = &ctx.plan.scenario {
            match crate::flow::iteration(&ctx, scenario, &mut vu.client, &mut vu.flow, queued_us, None).await {
                Err(halt) => ctx.shared.halt(halt),
                Ok(it) => {
                    if let Some(why) = vu.nothing_sent.observe(&it) {
                        ctx.shared.halt(why);
                    }
                    if it.sent == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            }
        } else {
            send_request(&ctx, &mut vu.client, queued_us).await;
        }
        ctx.shared.active_vus.fetch_sub(1, Ordering::Relaxed);
        if late {
            ctx.recorder.borrow_mut().record_arrival_outcome(due, true, false);
        }
        // Next: the oldest waiting arrival that has not outlived the timeout.
        let next = loop {
            if ctx.shared.stop.is_cancelled() {
                break None;
            }
            let Some(d) = pool.borrow_mut().backlog.pop_front() else { break None };
            if d.elapsed() > ctx.plan.timeout {
                ctx.recorder.borrow_mut().record_arrival_outcome(d, false, true);
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
    //! The pacers of several workers, run side by side as in a run, hand over together
    //! exactly the arrivals of [`RateShape::due`]: each at its due time, none twice, none
    //! missing.

    use std::time::Duration;

    use volley_scenario::RateStage;

    use super::*;

    /// Starts `workers` pacers on one schedule and collects what each hands over, to its end.
    fn paced(rate: &RateShape, workers: u64, t0: Instant, shared: &Arc<Shared>) -> Vec<Vec<Instant>> {
        let receivers: Vec<_> = (0..workers).map(|w| pace(rate.clone(), w, workers, t0, shared.clone())).collect();
        receivers
            .into_iter()
            .map(|mut rx| std::iter::from_fn(|| rx.blocking_recv()).collect())
            .collect()
    }

    #[test]
    fn workers_share_the_schedule_without_gap_or_duplicate() {
        // A ramp from 0 to 3000/s over 100 ms, then 3000/s for 100 ms: 150 + 300 arrivals.
        let ms = Duration::from_millis;
        let rate = RateShape { start_rate: 0.0, stages: vec![RateStage { duration: ms(100), rate: 3000.0 }, RateStage { duration: ms(100), rate: 3000.0 }] };
        let schedule: Vec<Duration> = (0..).map_while(|n| rate.due(n)).collect();
        assert_eq!(schedule.len(), 450);
        for workers in [1, 3, 4] {
            let t0 = Instant::now();
            let got = paced(&rate, workers, t0, &Arc::new(Shared::new(0, 0)));
            let done = Instant::now();
            for (w, dues) in got.iter().enumerate() {
                let share: Vec<Instant> = schedule.iter().skip(w).step_by(workers as usize).map(|d| t0 + *d).collect();
                assert_eq!(dues, &share, "worker {w} of {workers}: its share, in order");
            }
            let mut all: Vec<Instant> = got.into_iter().flatten().collect();
            all.sort();
            let whole: Vec<Instant> = schedule.iter().map(|d| t0 + *d).collect();
            assert_eq!(all, whole, "{workers} workers: every arrival once");
            assert!(done >= t0 + schedule[schedule.len() - 1], "the last arrival is not handed over before it is due");
        }
    }

    #[test]
    fn a_stopped_pacer_hands_over_nothing_more_and_ends() {
        let rate = RateShape::constant(200.0, Duration::from_secs(60));
        let shared = Arc::new(Shared::new(0, 0));
        let t0 = Instant::now();
        let canceller = {
            let shared = shared.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                let _ = shared.stopped_at.set(t0 + Duration::from_millis(50));
                shared.stop.cancel();
            })
        };
        let got = paced(&rate, 2, t0, &shared);
        canceller.join().unwrap();
        assert!(t0.elapsed() < Duration::from_secs(2), "the pacers ended soon after the stop");
        for (w, dues) in got.iter().enumerate() {
            // Every arrival due before the stop (0, 5, … 45 ms: five per worker) was handed over.
            assert!(dues.len() >= 5 && dues.len() < 30, "worker {w}: {} arrivals in ~50 ms at 100/s each", dues.len());
            let share: Vec<Instant> = (w as u64..).step_by(2).take(dues.len()).map(|n| t0 + rate.due(n).unwrap()).collect();
            assert_eq!(dues, &share, "worker {w}: a prefix of its share");
        }
    }
}
