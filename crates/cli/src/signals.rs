//! Ctrl-C and SIGTERM: the first stops the run gracefully (and a run group before its next
//! run), the second aborts in-flight requests, and if the process still has not ended
//! shortly after, it exits anyway — everything flushed so far still reports.
//!
//! One listener serves the whole process: a group's runs each hand it their control in
//! turn ([`install`]), and the group asks it whether to go on ([`stop_requested`]). A command
//! volley waits on in a process group of its own (a sweep's `--setup`, [`watch_group`]) is
//! stopped with the run: the first signal sends its group SIGTERM, and SIGKILL when it has
//! not ended [`GROUP_GRACE`] later; a second signal sends SIGKILL at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use volley_engine::{RunControl, StopReason};

/// How long after a second signal the process waits before exiting regardless.
const HARD_EXIT_AFTER: Duration = Duration::from_secs(3);

/// How long a watched command's process group has after SIGTERM before it gets SIGKILL.
pub(crate) const GROUP_GRACE: Duration = Duration::from_secs(5);

struct Interrupt {
    current: Mutex<Option<RunControl>>,
    stopped: AtomicBool,
    /// The process group of the command volley waits on, and what it is (for the messages).
    group: Mutex<Option<(u32, String)>>,
}

fn state() -> &'static Interrupt {
    static STATE: OnceLock<Interrupt> = OnceLock::new();
    STATE.get_or_init(|| {
        std::thread::spawn(listen);
        Interrupt {
            current: Mutex::new(None),
            stopped: AtomicBool::new(false),
            group: Mutex::new(None),
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

fn group() -> Option<(u32, String)> {
    state()
        .group
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
        if let Some((pgid, what)) = group() {
            eprintln!(
                "volley: stopping {what}: SIGTERM to its process group, SIGKILL if it has not ended in {} s",
                GROUP_GRACE.as_secs()
            );
            signal_group(pgid, "TERM");
        }
        // A watched command that outlives the grace is killed; a second signal does not wait.
        let second = tokio::select! {
            _ = next_signal(&mut term) => true,
            _ = tokio::time::sleep(GROUP_GRACE) => false,
        };
        if !second {
            if let Some((pgid, what)) = group() {
                eprintln!(
                    "volley: {what} did not end {} s after SIGTERM: SIGKILL",
                    GROUP_GRACE.as_secs()
                );
                signal_group(pgid, "KILL");
            }
            next_signal(&mut term).await;
        }
        eprintln!("\nvolley: aborting");
        if let Some((pgid, _)) = group() {
            signal_group(pgid, "KILL");
        }
        if let Some(c) = current() {
            c.abort();
        }
        tokio::time::sleep(HARD_EXIT_AFTER).await;
        std::process::exit(130);
    });
}

/// Sends `signal` (`TERM`, `KILL`) to every process of group `pgid`. Through the shell's own
/// `kill`, which takes a group (`-PGID`): the standard library signals single processes only,
/// and the commands watched are shell commands, so `sh` is there.
fn signal_group(pgid: u32, signal: &str) {
    let _ = std::process::Command::new("sh")
        .args(["-c", &format!("kill -s {signal} -- -{pgid} 2>/dev/null")])
        .stdin(std::process::Stdio::null())
        .status();
}

/// A command volley waits on, in a process group of its own (spawned with
/// `process_group(0)`, so its group id is its pid): a signal stops it with the run. Dropped
/// once the command has ended; if a stop was asked for meanwhile, whatever is left of its
/// group (a child that ignored SIGTERM) gets SIGKILL then.
pub(crate) struct WatchedGroup {
    pgid: u32,
}

/// Watches process group `pgid`, described as `what` (`--setup `./restart.sh 10``); when a
/// stop was asked for already, the group gets SIGTERM at once.
pub(crate) fn watch_group(pgid: u32, what: String) -> WatchedGroup {
    *state().group.lock().unwrap_or_else(|e| e.into_inner()) = Some((pgid, what));
    if stop_requested() {
        signal_group(pgid, "TERM");
    }
    WatchedGroup { pgid }
}

impl Drop for WatchedGroup {
    fn drop(&mut self) {
        *state().group.lock().unwrap_or_else(|e| e.into_inner()) = None;
        if stop_requested() {
            signal_group(self.pgid, "KILL");
        }
    }
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
