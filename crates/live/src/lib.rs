//! The live dashboard: `volley run --dashboard` serves a web page that shows the run as it
//! goes — TPS and VUs, MTTFB and per-request TTFB percentiles per interval, errors by kind,
//! the scenario's steps, the scraped server series, the generator's health and the
//! thresholds' live state — with the HTML report's own uPlot charts, pushed to the browser
//! with Server-Sent Events. The page can stop the run (as Ctrl-C does) and change its VU
//! target or arrival rate. When the report is written the page becomes the report.
//! `volley report --serve` serves a finished run's page the same way.
//!
//! [`Dashboard`] is a [`volley_record::Observer`]: it sees what the recorder wrote, interval
//! by interval, and nothing else. It runs its own small runtime (one thread), so the
//! recorder thread only hands it each interval; the snapshot sent to browsers is built on
//! the dashboard's thread, and only while a browser is watching.
//!
//! Extra routes (volley's `/metrics` for Prometheus) are mounted by the caller: every
//! `start` takes an [`axum::Router`] merged into the dashboard's, behind the same access rule.

mod access;
mod live;
mod page;
mod server;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use access::Access;
pub use axum::Router;
use volley_engine::scrape::ScrapeSample;
use volley_engine::{RunControl, StopReason};
use volley_record::{IntervalView, Observer, Recorded, RunStart};
use volley_rundir::rundir::PlanChangeNote;

mod error;

use error::Repr;
pub use error::{Error, Kind};

/// Parses `--dashboard`'s address: `HOST:PORT`, `:PORT` (on 127.0.0.1), or nothing (127.0.0.1, a free port).
pub fn parse_addr(text: Option<&str>) -> Result<SocketAddr, Error> {
    let text = text.map(str::trim).filter(|t| !t.is_empty());
    let full = match text {
        None => "127.0.0.1:0".to_string(),
        Some(t) if t.starts_with(':') => format!("127.0.0.1{t}"),
        Some(t) => t.to_string(),
    };
    full.parse()
        .map_err(|_| Repr::BadAddr(text.unwrap_or_default().to_string()).into())
}

/// What the routes and the observer share.
pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
    /// Wakes the snapshot task.
    pub(crate) changed: tokio::sync::Notify,
    pub(crate) snapshots: tokio::sync::watch::Sender<Arc<str>>,
    /// Pages following `/events` now.
    pub(crate) viewers: AtomicUsize,
    /// Times `/report` was served.
    pub(crate) report_loads: AtomicUsize,
    /// Pages that were watching when the report became ready: each will load it.
    pub(crate) report_expected: AtomicUsize,
    /// Stop was pressed: a group does not go on either.
    pub(crate) stopped: AtomicBool,
}

#[derive(Default)]
pub(crate) struct State {
    pub(crate) run: Option<live::LiveRun>,
    pub(crate) control: Option<RunControl>,
    /// The run directory whose report.html the page becomes.
    pub(crate) report: Option<PathBuf>,
    /// Which run of a group is next (1-based) of how many.
    pub(crate) run_of: Option<(usize, usize)>,
}

impl Shared {
    /// Stops the run gracefully, as Ctrl-C does (status `interrupted`).
    pub(crate) fn stop(&self) -> &'static str {
        self.stopped.store(true, Ordering::SeqCst);
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match &state.control {
            Some(c) => {
                c.stop(StopReason::Interrupted);
                "stopping: in-flight requests get the grace period, then the report is written"
            }
            // Between runs of a group, or while a run waits for --start-at: the flag above
            // stops the next run as it begins, so say that, not "no run".
            None => {
                "stopping: no run is going this moment; the next one stops as it begins and no further run starts"
            }
        }
    }
}

/// A running dashboard (a live run's, or a finished run's page).
pub struct Dashboard {
    shared: Arc<Shared>,
    addr: SocketAddr,
    url: String,
    runtime: Option<tokio::runtime::Runtime>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    /// The server's task: ended once responses in flight are written.
    served: Option<tokio::task::JoinHandle<()>>,
}

impl Dashboard {
    /// Serves the live dashboard on `addr` (port 0: a free one) with `extra` routes merged
    /// in (e.g. `/metrics`), all behind `access`. Refuses [`Access::Open`] on an address
    /// other than loopback.
    pub fn start(addr: SocketAddr, access: Access, extra: Router) -> Result<Dashboard, Error> {
        Self::serve(addr, access, extra, None)
    }

    /// Serves `html` (a finished run's, group's or comparison's page) at `/`, with `extra`
    /// routes, behind `access`; no events, no controls.
    pub fn serve_page(
        addr: SocketAddr,
        access: Access,
        html: String,
        extra: Router,
    ) -> Result<Dashboard, Error> {
        Self::serve(addr, access, extra, Some(html))
    }

    fn serve(
        addr: SocketAddr,
        access: Access,
        extra: Router,
        page: Option<String>,
    ) -> Result<Dashboard, Error> {
        if access == Access::Open && !addr.ip().is_loopback() {
            return Err(Repr::OpenOutside(addr).into());
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("volley-dashboard")
            .enable_all()
            .build()
            .map_err(Repr::Runtime)?;
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(addr))
            .and_then(|l| Ok((l.local_addr()?, l)))
            .map_err(|error| Repr::Bind { addr, error });
        let (bound, listener) = listener?;
        let (snapshots, _) = tokio::sync::watch::channel(Arc::<str>::from(""));
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: tokio::sync::Notify::new(),
            snapshots,
            viewers: AtomicUsize::new(0),
            report_loads: AtomicUsize::new(0),
            report_expected: AtomicUsize::new(0),
            stopped: AtomicBool::new(false),
        });
        let app = match page {
            Some(html) => server::static_routes(html),
            None => server::live_routes(shared.clone()),
        };
        let app = app.merge(extra).layer(axum::middleware::from_fn_with_state(
            access::Guard::new(access.clone(), bound),
            access::guard,
        ));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let served = runtime.spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = rx.await;
                })
                .await;
        });
        runtime.spawn(server::publish(shared.clone()));
        let host = if bound.ip().is_unspecified() {
            volley_rundir::rundir::host_name()
        } else {
            bound.ip().to_string()
        };
        let host = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]")
        } else {
            host
        };
        let url = format!("http://{host}:{}/{}", bound.port(), access.query());
        Ok(Dashboard {
            shared,
            addr: bound,
            url,
            runtime: Some(runtime),
            shutdown: Some(tx),
            served: Some(served),
        })
    }

    /// The page's URL, with the token when there is one.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The run's report is written in `dir` (report.html): open pages load it.
    pub fn report_ready(&self, dir: &Path) {
        // Counted before any page hears of the report (and closes its event stream).
        self.shared
            .report_expected
            .store(self.shared.viewers.load(Ordering::SeqCst), Ordering::SeqCst);
        let mut state = self.shared.state.lock().unwrap_or_else(|p| p.into_inner());
        state.report = Some(dir.to_path_buf());
        if let Some(run) = &mut state.run {
            run.set_phase("recorded");
        }
        drop(state);
        self.shared.changed.notify_one();
    }

    /// Waits until every page that was watching has loaded the report, `max` at most, so
    /// that ending volley does not leave a page without it.
    /// Waits (after [`Dashboard::report_ready`]) until every page that was watching has
    /// loaded the report, `max` at most, so that ending volley does not leave a page
    /// without it. A page closed meanwhile costs the whole wait.
    pub fn wait_for_viewers(&self, max: Duration) {
        let until = Instant::now() + max;
        let expected = self.shared.report_expected.load(Ordering::SeqCst);
        while Instant::now() < until && self.shared.report_loads.load(Ordering::SeqCst) < expected {
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Serves until the process is interrupted (`volley report --serve`).
    pub fn serve_until_interrupted(mut self) {
        if let Some(rt) = &self.runtime {
            let _ = rt.block_on(tokio::signal::ctrl_c());
        }
        self.close();
    }

    /// Stops listening, lets responses in flight finish (a second at most: open event
    /// streams end with the runtime), and ends the runtime.
    fn close(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let (Some(rt), Some(served)) = (&self.runtime, self.served.take()) {
            let _ =
                rt.block_on(async { tokio::time::timeout(Duration::from_secs(1), served).await });
        }
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_timeout(Duration::from_secs(1));
        }
    }
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        self.close();
    }
}

impl Observer for Dashboard {
    fn started(&mut self, run: &RunStart<'_>) {
        let mut state = self.shared.state.lock().unwrap_or_else(|p| p.into_inner());
        state.run = Some(live::LiveRun::new(
            run.meta,
            run.dir,
            run.control.model(),
            state.run_of,
        ));
        state.control = Some(run.control.clone());
        state.report = None;
        drop(state);
        // A stop pressed while the run was starting stops it at once.
        if self.shared.stopped.load(Ordering::SeqCst) {
            run.control.stop(StopReason::Interrupted);
        }
        self.shared.changed.notify_one();
    }

    fn interval(&mut self, iv: &IntervalView<'_>) {
        if let Some(run) = &mut self
            .shared
            .state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .run
        {
            run.interval(iv);
        }
        self.shared.changed.notify_one();
    }

    fn server(&mut self, scrape: &ScrapeSample) {
        if let Some(run) = &mut self
            .shared
            .state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .run
        {
            run.server(scrape);
        }
    }

    fn plan_changed(&mut self, change: &PlanChangeNote) {
        if let Some(run) = &mut self
            .shared
            .state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .run
        {
            run.plan_changed(change);
        }
        self.shared.changed.notify_one();
    }

    fn finished(&mut self) {
        let mut state = self.shared.state.lock().unwrap_or_else(|p| p.into_inner());
        state.control = None;
        if let Some(run) = &mut state.run {
            run.set_phase("finished");
        }
        drop(state);
        self.shared.changed.notify_one();
    }

    fn run_starting(&mut self, index: usize, of: usize) {
        self.shared
            .state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .run_of = Some((index + 1, of));
    }

    fn run_recorded(&mut self, _run: &Recorded) {}

    fn keep_going(&mut self) -> bool {
        !self.shared.stopped.load(Ordering::SeqCst)
    }
}
