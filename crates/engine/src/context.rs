//! What the VUs of a run share: the run-wide state the conductor steers them with
//! ([`Shared`], across threads) and what every VU on one worker thread reads
//! ([`WorkerContext`], on that thread only). Both live here, below every module that uses
//! them, so the conductor, the worker loop, the VU loop and the flow never import each other
//! in a circle.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};

use rustls::ClientConfig;
use tokio_util::sync::CancellationToken;
use volley_scenario::Plan;

use crate::client::{BufferPool, PreparedRequest};
use crate::recorder::Recorder;
use crate::target::Target;

/// State shared by the conductor and every VU.
pub(crate) struct Shared {
    pub(crate) target_vus: AtomicU64,
    pub(crate) active_vus: AtomicU64,
    pub(crate) running: Vec<AtomicBool>,
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
}

impl Shared {
    /// State for a run that may start `max_vus` closed-model VUs, `target_vus` of them now.
    pub(crate) fn new(max_vus: usize, target_vus: u64) -> Self {
        Shared {
            target_vus: AtomicU64::new(target_vus),
            active_vus: AtomicU64::new(target_vus),
            running: (0..max_vus).map(|_| AtomicBool::new(false)).collect(),
            stop: CancellationToken::new(),
            stopped_at: std::sync::OnceLock::new(),
            abort: CancellationToken::new(),
            halted: std::sync::Mutex::new(None),
            finished_vus: AtomicU64::new(0),
        }
    }

    /// Asks the conductor to stop the run, saying why (the first reason wins).
    pub(crate) fn halt(&self, why: String) {
        let mut h = self.halted.lock().unwrap_or_else(|p| p.into_inner());
        h.get_or_insert(why);
    }

    pub(crate) fn halted(&self) -> Option<String> {
        self.halted.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// What every VU on one worker thread shares.
pub(crate) struct WorkerContext {
    pub(crate) shared: Arc<Shared>,
    pub(crate) plan: Arc<Plan>,
    pub(crate) target: Target,
    pub(crate) tls: Option<Arc<ClientConfig>>,
    /// TLS offering only HTTP/1.1, for event streams and WebSockets.
    pub(crate) stream_tls: Option<Arc<ClientConfig>>,
    pub(crate) force_h2: bool,
    pub(crate) request: PreparedRequest,
    pub(crate) recorder: Rc<RefCell<Recorder>>,
    pub(crate) buffers: BufferPool,
    /// gRPC connections of this thread.
    pub(crate) grpc: crate::grpc::Channels,
}
