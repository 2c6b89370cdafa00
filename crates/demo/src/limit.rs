//! The worker limit: at most `max_threads` requests are handled at once (Tomcat's
//! `max-threads`); up to `accept_count` more wait in a queue (`accept-count`); beyond that
//! a request is refused with 503 at once, as a full accept queue refuses connections.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use axum::Router;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::Semaphore;

use crate::App;
use crate::metrics::Metrics;

struct Limiter {
    workers: Semaphore,
    accept_count: i64,
    metrics: Arc<Metrics>,
}

/// Wraps `api` in the worker limit (`max_threads == 0`: no limit).
pub(crate) fn apply(
    api: Router<App>,
    max_threads: usize,
    accept_count: usize,
    metrics: Arc<Metrics>,
) -> Router<App> {
    if max_threads == 0 {
        return api;
    }
    let limiter = Arc::new(Limiter {
        workers: Semaphore::new(max_threads),
        accept_count: accept_count as i64,
        metrics,
    });
    api.layer(axum::middleware::from_fn(
        move |req: Request, next: Next| {
            let limiter = limiter.clone();
            async move { limited(&limiter, req, next).await }
        },
    ))
}

async fn limited(limiter: &Limiter, req: Request, next: Next) -> Response {
    let m = &limiter.metrics;
    let permit = match limiter.workers.try_acquire() {
        Ok(p) => p,
        Err(_) => {
            if m.queued.fetch_add(1, Ordering::Relaxed) >= limiter.accept_count {
                m.queued.fetch_sub(1, Ordering::Relaxed);
                m.rejected.fetch_add(1, Ordering::Relaxed);
                return (StatusCode::SERVICE_UNAVAILABLE, "accept queue full\n").into_response();
            }
            // Counted until this wait ends, also when hyper drops the request because its
            // client went away (a proxy's timeout): an abandoned wait must leave the queue.
            let waiting = Counted(&m.queued);
            let p = limiter.workers.acquire().await;
            drop(waiting);
            match p {
                Ok(p) => p,
                Err(_) => return StatusCode::SERVICE_UNAVAILABLE.into_response(),
            }
        }
    };
    m.busy.fetch_add(1, Ordering::Relaxed);
    let busy = Counted(&m.busy);
    let response = next.run(req).await;
    drop(busy);
    drop(permit);
    response
}

/// A gauge already raised by one, lowered when this is dropped, however the future ends.
struct Counted<'a>(&'a AtomicI64);

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}
