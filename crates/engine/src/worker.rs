//! One worker thread: a single-threaded event loop running its share of the VUs (and, in
//! the open model, its share of the arrivals), recording into its own recorder, and
//! answering the conductor's commands in order.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use tokio::sync::mpsc as tmpsc;
use volley_scenario::{Model, Plan};

use crate::arrivals::run_arrivals;
use crate::client::PreparedRequest;
use crate::context::{Shared, WorkerContext};
use crate::pool::Pool;
use crate::recorder::{Recorder, WorkerPart};
use crate::target::Target;
use crate::vu::spawn_vu;

/// What the conductor tells a worker, in order on one channel.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Command {
    /// Start closed-model VU `id`.
    Spawn(u64),
    /// Hand over interval `k`.
    Flush(u64),
    /// The run stopped; `k` is its last interval.
    Finish(u64),
}

/// What a worker thread starts with.
pub(crate) struct WorkerSeed {
    pub(crate) shared: Arc<Shared>,
    pub(crate) plan: Arc<Plan>,
    pub(crate) target: Target,
    pub(crate) tls: Option<Arc<rustls::ClientConfig>>,
    pub(crate) force_h2: bool,
    /// The plan's single request, prepared once (`None` for a scenario).
    pub(crate) request: Option<PreparedRequest>,
    pub(crate) t0: Instant,
    pub(crate) interval: Duration,
    pub(crate) grace: Duration,
    pub(crate) parts: mpsc::Sender<WorkerPart>,
    pub(crate) worker: u64,
    pub(crate) workers: u64,
}

/// One worker thread: a single-threaded event loop running its share of the VUs.
pub(crate) fn worker_main(seed: WorkerSeed, mut commands: tmpsc::UnboundedReceiver<Command>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("worker runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let step_names: Arc<[String]> = seed
            .plan
            .scenario()
            .map_or_else(Vec::new, |s| {
                s.step_info.iter().map(|i| i.name.clone()).collect()
            })
            .into();
        let recorder = Rc::new(RefCell::new(Recorder::new(
            seed.t0,
            seed.interval,
            seed.plan.load.is_open(),
            step_names,
        )));
        recorder
            .borrow_mut()
            .set_pooled(seed.plan.load.connections.is_some());
        // One target per worker, shared by its clients (each VU's would otherwise copy 248 bytes).
        let target = Rc::new(seed.target);
        // This segment's share of the shared connections, and this worker's of that.
        let pool = seed.plan.load.connections.map(|n| {
            let n = seed.plan.segment.share(n);
            let mine = n / seed.workers + u64::from(seed.worker < n % seed.workers);
            Pool::new(
                target.clone(),
                seed.tls.clone(),
                seed.force_h2,
                mine as usize,
            )
        });
        let nodes = seed.plan.scenario().map_or(&[][..], |s| &s.steps[..]);
        let grpc = crate::grpc::Channels::new(
            &target,
            &seed.tls,
            nodes,
            seed.plan.load.connections,
            seed.plan.segment,
            seed.worker,
            seed.workers,
        );
        let ctx = Rc::new(WorkerContext {
            shared: seed.shared.clone(),
            plan: seed.plan,
            target,
            stream_tls: crate::tls::http1_only(&seed.tls),
            tls: seed.tls,
            force_h2: seed.force_h2,
            request: seed.request,
            recorder: recorder.clone(),
            buffers: Default::default(),
            steps: Default::default(),
            pool,
            grpc,
        });
        let mut vus = tokio::task::JoinSet::new();
        if let Model::Open { rate, max_vus } = &ctx.plan.load.model {
            // This segment's share of the VUs, and this worker's of that, the first workers
            // taking the remainder.
            let max_vus = ctx.plan.segment.share(*max_vus);
            let cap =
                (max_vus / seed.workers + u64::from(seed.worker < max_vus % seed.workers)) as usize;
            vus.spawn_local(run_arrivals(
                ctx.clone(),
                rate.clone(),
                seed.worker,
                seed.workers,
                cap,
                seed.t0,
            ));
        }
        // A closed model has no schedule to be late on; its loop's wake-ups stand for it.
        let heartbeat = (!ctx.plan.load.is_open())
            .then(|| tokio::task::spawn_local(heartbeat(recorder.clone())));
        let mut next = 0u64;
        let last = loop {
            match commands.recv().await {
                Some(Command::Spawn(id)) => {
                    spawn_vu(&mut vus, ctx.clone(), id);
                }
                Some(Command::Flush(i)) => {
                    let part = recorder.borrow_mut().take(i);
                    next = i + 1;
                    let _ = seed.parts.send(part);
                }
                Some(Command::Finish(i)) => break Some(i),
                None => break None,
            }
        };
        if let Some(h) = heartbeat {
            h.abort();
        }
        let Some(last) = last else { return };
        // What completed up to the stop is interval `last` (intervals between the last flushed
        // one and `last`, normally none, fold into it), handed over at once; what completes
        // in the grace period is the drain, an interval of its own after it, so that the
        // requests queued at the stop do not raise the last interval's TPS.
        let mut part = recorder.borrow_mut().take_rest(next);
        part.set_index(last);
        let _ = seed.parts.send(part);
        recorder.borrow_mut().drain_into(last + 1);
        let shared = seed.shared.clone();
        let drained = async {
            while let Some(r) = vus.join_next().await {
                shared.task_ended(r);
            }
        };
        tokio::select! {
            _ = drained => {}
            _ = tokio::time::sleep(seed.grace) => {}
            _ = seed.shared.abort.cancelled() => {}
        }
        vus.abort_all();
        // Let the aborted VUs drop their requests, so those still in flight are recorded
        // (as `unfinished`) before the last part is taken.
        while let Some(r) = vus.join_next().await {
            seed.shared.task_ended(r);
        }
        let _ = seed.parts.send(recorder.borrow_mut().take_rest(last + 1));
    });
}

/// How often a closed model's worker checks that its event loop runs on time.
const HEARTBEAT: Duration = Duration::from_millis(10);

/// Closed model: how late this worker's event loop wakes from a short sleep, recorded as the
/// generator's own delay (an open model measures it on every arrival instead). A loop that
/// cannot run (the process descheduled on a loaded machine, a paused VM) holds every
/// response it has not read yet, so that delay is in the latencies of the moment; a run
/// group leaves a run that stalled out of its figures by it.
async fn heartbeat(recorder: Rc<RefCell<Recorder>>) {
    // The high-resolution alarm the open model's arrivals use: tokio's own timer rounds a
    // wake-up to the next millisecond, which would read as ~1 ms of lag on every check.
    let mut alarm = crate::alarm::Alarm::new();
    let mut due = Instant::now() + HEARTBEAT;
    loop {
        alarm.until(due).await;
        let now = Instant::now();
        recorder
            .borrow_mut()
            .record_loop_lag(due, now.saturating_duration_since(due));
        // After a stall, the next check is one period from now, not a burst of missed ones.
        due = (due + HEARTBEAT).max(now + HEARTBEAT / 2);
    }
}
