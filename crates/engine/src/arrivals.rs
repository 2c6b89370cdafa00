//! The open model on one worker thread: arrivals due at absolute times from the rate
//! curve, each carried out by a free VU (a connection). An arrival that finds every VU
//! busy waits in a backlog and is sent as soon as one frees up — counted as *late*, and
//! its latency still measured from its due time — or, if it has waited longer than the
//! request timeout, is counted as *dropped*. Nothing is silently skipped.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use volley_scenario::RateShape;

use crate::client::Client;
use crate::vu::WorkerContext;

/// The VUs of one worker and the arrivals waiting for one.
struct Pool {
    idle: Vec<Client>,
    created: usize,
    cap: usize,
    backlog: VecDeque<Instant>,
}

impl Pool {
    fn take(&mut self, ctx: &WorkerContext) -> Option<Client> {
        self.idle.pop().or_else(|| {
            (self.created < self.cap).then(|| {
                self.created += 1;
                Client::new(ctx.target.clone(), ctx.tls.clone(), ctx.force_h2)
            })
        })
    }
}

/// Dispatches this worker's share of the arrivals (`worker`, `worker + workers`, ...)
/// until the shape ends or the run stops, then waits for its requests.
///
/// The due times come from a pacer thread that sleeps with the OS's sub-millisecond
/// precision: the event loop's timer ticks in whole milliseconds, which alone would send
/// every arrival up to a millisecond late.
pub(crate) async fn run_arrivals(ctx: Rc<WorkerContext>, rate: RateShape, worker: u64, workers: u64, cap: usize, t0: Instant) {
    let pool = Rc::new(RefCell::new(Pool { idle: Vec::new(), created: 0, cap: cap.max(1), backlog: VecDeque::new() }));
    let mut tasks = tokio::task::JoinSet::new();
    let mut arrivals = pace(rate, worker, workers, t0, ctx.shared.stop.clone());
    loop {
        let due = tokio::select! {
            biased;
            _ = ctx.shared.stop.cancelled() => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
            due = arrivals.recv() => match due { Some(d) => d, None => break },
        };
        ctx.recorder.borrow_mut().record_sched_lag(due, Instant::now().saturating_duration_since(due));
        let client = pool.borrow_mut().take(&ctx);
        match client {
            Some(client) => {
                tasks.spawn_local(serve(ctx.clone(), pool.clone(), client, due));
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

/// A thread that hands over each arrival at its due time.
fn pace(
    rate: RateShape,
    worker: u64,
    workers: u64,
    t0: Instant,
    stop: tokio_util::sync::CancellationToken,
) -> tokio::sync::mpsc::UnboundedReceiver<Instant> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let spawned = std::thread::Builder::new().name(format!("volley-pacer-{worker}")).spawn(move || {
        let mut n = worker;
        while let Some(offset) = rate.due(n) {
            let due = t0 + offset;
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            if stop.is_cancelled() || tx.send(due).is_err() {
                return;
            }
            n += workers;
        }
    });
    if let Err(e) = spawned {
        eprintln!("volley: cannot start the arrival pacer: {e}");
    }
    rx
}

/// Sends the arrival due at `due` on `client`, then keeps serving the backlog with the
/// same VU; gives the VU back when the backlog is empty.
async fn serve(ctx: Rc<WorkerContext>, pool: Rc<RefCell<Pool>>, mut client: Client, mut due: Instant) {
    let mut late = false;
    loop {
        ctx.shared.active_vus.fetch_add(1, Ordering::Relaxed);
        let sent = Instant::now();
        let result = client.send(&ctx.request, ctx.plan.timeout, &ctx.buffers).await;
        ctx.shared.active_vus.fetch_sub(1, Ordering::Relaxed);
        {
            let mut rec = ctx.recorder.borrow_mut();
            match result {
                Ok(mut ex) => {
                    ex.queued_us = sent.saturating_duration_since(due).as_micros() as u64;
                    rec.record_exchange(&ex, ctx.plan.expect_status.contains(ex.status));
                }
                Err(failure) => rec.record_failure(failure),
            }
            if late {
                rec.record_arrival_outcome(due, true, false);
            }
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
                pool.borrow_mut().idle.push(client);
                return;
            }
        }
    }
}
