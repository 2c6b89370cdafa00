//! Ctrl-C and SIGTERM: the first stops the run gracefully, the second aborts in-flight
//! requests, and if the process still has not ended shortly after, it exits anyway —
//! everything flushed so far still reports.

use std::time::Duration;

use volley_engine::{RunControl, StopReason};

/// How long after a second signal the process waits before exiting regardless.
const HARD_EXIT_AFTER: Duration = Duration::from_secs(3);

pub(crate) fn install(control: RunControl) {
    std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
        rt.block_on(async move {
            let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            next_signal(&mut term).await;
            eprintln!("\nvolley: stopping (in-flight requests may finish; interrupt again to abort)");
            control.stop(StopReason::Interrupted);
            next_signal(&mut term).await;
            eprintln!("\nvolley: aborting");
            control.abort();
            tokio::time::sleep(HARD_EXIT_AFTER).await;
            std::process::exit(130);
        });
    });
}

async fn next_signal(term: &mut Option<tokio::signal::unix::Signal>) {
    match term.as_mut() {
        Some(t) => tokio::select! { _ = tokio::signal::ctrl_c() => {}, _ = t.recv() => {} },
        None => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
