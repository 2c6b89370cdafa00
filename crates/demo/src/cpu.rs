//! CPU work per request (`cpu-work`): each API request spends that much CPU time on a thread of
//! its own while it holds its worker, as a Tomcat thread does that computes. The time is read
//! from the thread's own CPU clock, not the wall clock: under a CPU limit the kernel throttles
//! the pod and the request waits for its share, so its latency grows and the limit (and an
//! autoscaler that reads the CPU) matter, as they did in the seeds' cluster.

use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::middleware::Next;

use crate::App;

/// Wraps `api` so every request first spends `work` of CPU (nothing when zero).
pub(crate) fn apply(api: Router<App>, work: Duration) -> Router<App> {
    if work.is_zero() {
        return api;
    }
    api.layer(axum::middleware::from_fn(
        move |req: Request, next: Next| async move {
            // A blocking thread, as a servlet thread would be: the runtime's own workers keep
            // accepting and answering probes that do not share the workers.
            let _ = tokio::task::spawn_blocking(move || spin(work)).await;
            next.run(req).await
        },
    ))
}

/// Busy-loops until this thread has used `work` of CPU time.
pub(crate) fn spin(work: Duration) {
    let start = thread_cpu();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    while thread_cpu().saturating_sub(start) < work {
        // A little arithmetic between clock reads (about a microsecond).
        for _ in 0..200 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        std::hint::black_box(x);
    }
}

/// CPU time this thread has used.
fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spin_uses_the_cpu_it_is_asked_for() {
        let before = thread_cpu();
        spin(Duration::from_millis(30));
        let used = thread_cpu() - before;
        assert!(used >= Duration::from_millis(30), "{used:?}");
        assert!(used < Duration::from_millis(300), "{used:?}");
    }
}
