//! Ctrl-C and SIGTERM: the first stops the run gracefully (and a run group before its next
//! run), the second aborts in-flight requests, and if the process still has not ended
//! shortly after, it exits anyway — everything flushed so far still reports.
//!
//! One listener serves the whole process: a group's runs each hand it their control in
//! turn ([`install`]), and the group asks it whether to go on ([`stop_requested`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use volley_engine::{RunControl, StopReason};

/// How long after a second signal the process waits before exiting regardless.
const HARD_EXIT_AFTER: Duration = Duration::from_secs(3);

struct Interrupt {
    current: Mutex<Option<RunControl>>,
    stopped: AtomicBool,
}

fn state() -> &'static Interrupt {
    static STATE: OnceLock<Interrupt> = OnceLock::new();
    STATE.get_or_init(|| {
        std::thread::spawn(listen);
        Interrupt {
            current: Mutex::new(None),
            stopped: AtomicBool::new(false),
        }
    })
}

fn current() -> Option<RunControl> {
    state()
        .current
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

fn listen() {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    rt.block_on(async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let first = next_signal(&mut term).await;
        eprintln!("\nvolley: stopping (in-flight requests may finish; interrupt again to abort)");
        state().stopped.store(true, Ordering::SeqCst);
        if let Some(c) = current() {
            c.stop(first);
        }
        next_signal(&mut term).await;
        eprintln!("\nvolley: aborting");
        if let Some(c) = current() {
            c.abort();
        }
        tokio::time::sleep(HARD_EXIT_AFTER).await;
        std::process::exit(130);
    });
}

/// The run now recording is `control`: a signal stops it.
pub(crate) fn install(control: RunControl) {
    *state().current.lock().unwrap_or_else(|e| e.into_inner()) = Some(control);
}

/// Whether the user asked to stop (a run group then starts no further run).
pub(crate) fn stop_requested() -> bool {
    state().stopped.load(Ordering::SeqCst)
}

/// Waits for Ctrl-C or SIGTERM; says which, as the reason a run stops for.
async fn next_signal(term: &mut Option<tokio::signal::unix::Signal>) -> StopReason {
    match term.as_mut() {
        Some(t) => tokio::select! {
            _ = tokio::signal::ctrl_c() => StopReason::Interrupted,
            _ = t.recv() => StopReason::Terminated,
        },
        None => {
            let _ = tokio::signal::ctrl_c().await;
            StopReason::Interrupted
        }
    }
}
