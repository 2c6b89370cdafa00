//! What the VUs of a run share: the run-wide state the conductor steers them with
//! ([`Shared`], across threads) and what every VU on one worker thread reads
//! ([`WorkerContext`], on that thread only). Both live here, below every module that uses
//! them, so the conductor, the worker loop, the VU loop and the flow never import each other
//! in a circle.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rustls::ClientConfig;
use tokio_util::sync::CancellationToken;
use volley_scenario::Plan;

use crate::client::{BufferPool, Client, PreparedRequest};
use crate::pool::Pool;
use crate::recorder::Recorder;
use crate::steps::StepCache;
use crate::target::Target;

/// State shared by the conductor and every VU.
pub(crate) struct Shared {
    pub(crate) target_vus: AtomicU64,
    pub(crate) active_vus: AtomicU64,
    /// Closed model: one flag per VU the conductor may start. Grown (by the conductor only)
    /// when the VU target is raised live above the plan's; read once when a VU leaves.
    pub(crate) running: RwLock<Vec<AtomicBool>>,
    /// Open model: the rate set live ([`crate::RunControl::set_rate`]), if any; the pacers
    /// look at `rate_generation` before each arrival and switch schedules when it moves.
    pub(crate) rate_change: Mutex<Option<RateChange>>,
    pub(crate) rate_generation: AtomicU64,
    /// No new iterations; sleeping VUs wake and leave.
    pub(crate) stop: CancellationToken,
    /// Where the run stopped (set just before `stop` is cancelled): open-model arrivals due
    /// before it are still sent, so a schedule's last arrivals are not lost to a pacer
    /// thread that woke a moment late.
    pub(crate) stopped_at: std::sync::OnceLock<std::time::Instant>,
    /// In-flight requests are dropped.
    pub(crate) abort: CancellationToken,
    /// Set by a VU when the run cannot go on (test data ran out); the conductor stops it.
    pub(crate) halted: std::sync::Mutex<Option<String>>,
    /// VUs that ran all their iterations (`Plan::iterations`); they are not started again.
    pub(crate) finished_vus: AtomicU64,
    /// Worker threads that panicked (a bug): the conductor no longer waits for their parts.
    pub(crate) dead_workers: AtomicU64,
}

impl Shared {
    /// State for a run that may start `max_vus` closed-model VUs, `target_vus` of them now.
    pub(crate) fn new(max_vus: usize, target_vus: u64) -> Self {
        Shared {
            target_vus: AtomicU64::new(target_vus),
            active_vus: AtomicU64::new(target_vus),
            running: RwLock::new((0..max_vus).map(|_| AtomicBool::new(false)).collect()),
            rate_change: Mutex::new(None),
            rate_generation: AtomicU64::new(0),
            stop: CancellationToken::new(),
            stopped_at: std::sync::OnceLock::new(),
            abort: CancellationToken::new(),
            halted: std::sync::Mutex::new(None),
            finished_vus: AtomicU64::new(0),
            dead_workers: AtomicU64::new(0),
        }
    }

    /// Looks at how a VU's task ended: a panic (a bug) stops the run as aborted, saying so,
    /// instead of leaving a run that looks complete with that VU's requests missing.
    pub(crate) fn task_ended<T>(&self, ended: Result<T, tokio::task::JoinError>) {
        if let Err(e) = ended
            && e.is_panic()
        {
            self.halt(
                "a virtual user's task failed (a bug in volley: please report the command); its requests are missing from the counts"
                    .into(),
            );
        }
    }

    /// Asks the conductor to stop the run, saying why (the first reason wins).
    pub(crate) fn halt(&self, why: String) {
        let mut h = self.halted.lock().unwrap_or_else(|p| p.into_inner());
        h.get_or_insert(why);
    }

    pub(crate) fn halted(&self) -> Option<String> {
        self.halted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// A constant arrival rate from `at` (since the run's start) to the end of the plan,
/// replacing the planned rate curve from then on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RateChange {
    pub(crate) at: Duration,
    pub(crate) rate: f64,
}

/// What every VU on one worker thread shares.
pub(crate) struct WorkerContext {
    pub(crate) shared: Arc<Shared>,
    pub(crate) plan: Arc<Plan>,
    pub(crate) target: Rc<Target>,
    pub(crate) tls: Option<Arc<ClientConfig>>,
    /// TLS offering only HTTP/1.1, for event streams and WebSockets.
    pub(crate) stream_tls: Option<Arc<ClientConfig>>,
    pub(crate) force_h2: bool,
    /// The plan's single request, prepared once (`None` for a scenario, whose steps build
    /// their own).
    pub(crate) request: Option<PreparedRequest>,
    pub(crate) recorder: Rc<RefCell<Recorder>>,
    pub(crate) buffers: BufferPool,
    /// Scenario steps' requests built once, and buffers to render the others into.
    pub(crate) steps: StepCache,
    /// `--connections`: this worker's share of the connections its VUs share.
    pub(crate) pool: Option<Rc<Pool>>,
    /// gRPC connections of this thread.
    pub(crate) grpc: crate::grpc::Channels,
}

impl WorkerContext {
    /// A new VU's client: on the shared connections, or with a connection of its own.
    pub(crate) fn client(&self) -> Client {
        match &self.pool {
            Some(pool) => Client::pooled(pool),
            None => Client::new(self.target.clone(), self.tls.clone(), self.force_h2),
        }
    }
}
