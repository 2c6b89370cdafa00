//! The demo target: an HTTP service modelled on the systems in the seeds — a chat server
//! (rooms, messages, a live stream) and a pair-programming room service (access codes,
//! todos, links, categories, a timer, an SSE stream) — on a real SQLite database, with
//! the knobs the seeds turned: a worker limit with an accept queue (Tomcat's
//! `max-threads` / `accept-count`), a DB connection pool with an acquire timeout and a
//! queue of pending acquirers (HikariCP), a look-aside cache, and the message key type.
//!
//! It exposes `/metrics` (and `/actuator/prometheus`) with Spring Boot / Micrometer names,
//! so what volley learns to read here it reads from a real Spring service too.
//!
//! The chat API is also served over gRPC on the same port ([`grpc`], proto/chat.proto,
//! with server reflection): HTTP/1.1 and HTTP/2 (h2c prior knowledge) are both accepted.

mod chat;
mod connections;
mod cpu;
mod db;
mod error;
mod grpc;
mod http3;
mod knobs;
mod limit;
mod metrics;
mod openapi;
mod pair;
mod web;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::routing::get;
use tokio::net::TcpListener;

pub use db::{Db, IdType, Val};
use error::Repr;
pub use error::{Error, Kind};
pub use http3::Http3;
pub use knobs::{KNOBS, KnobInfo, Knobs, MAX_CPU_WORK};

/// Shared state of the service.
#[derive(Clone)]
pub(crate) struct App {
    pub(crate) db: Arc<Db>,
    pub(crate) metrics: Arc<metrics::Metrics>,
    pub(crate) cache: Option<Arc<chat::Cache>>,
    pub(crate) events: Arc<pair::Events>,
    pub(crate) grpc: Arc<grpc::GrpcMetrics>,
}

/// A running demo target.
pub struct Target {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its database (for tests that count what was stored).
    pub db: Arc<Db>,
    /// The same routes over HTTP/3, when asked ([`start_with_http3`]).
    pub http3: Option<Http3>,
    events: Arc<pair::Events>,
    shutdown: tokio::sync::oneshot::Sender<()>,
    handle: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Target {
    /// Stops accepting, lets in-flight requests finish, and waits.
    pub async fn stop(self) -> std::io::Result<()> {
        let _ = self.shutdown.send(());
        self.events.close();
        if let Some(h3) = self.http3 {
            h3.stop().await;
        }
        self.handle.await.unwrap_or(Ok(()))
    }
}

/// The service's routes over `knobs`.
#[allow(private_interfaces)]
pub async fn router(knobs: &Knobs) -> Result<(Router, Arc<Db>, Arc<pair::Events>), Error> {
    let db = Arc::new(Db::open(knobs).await?);
    let metrics = Arc::new(metrics::Metrics::new(knobs.max_threads, knobs.db_pool));
    let app = App {
        db: db.clone(),
        metrics: metrics.clone(),
        cache: knobs.cache.then(|| Arc::new(chat::Cache::default())),
        events: Arc::new(pair::Events::default()),
        grpc: Arc::new(grpc::GrpcMetrics::default()),
    };
    let events = app.events.clone();
    let api = Router::new()
        .merge(chat::routes())
        .merge(pair::routes())
        .merge(web::routes());
    let api = cpu::apply(api, knobs.cpu_work);
    // A probe that shares the workers waits for one like any request (no CPU work: it only
    // answers), so a saturated target misses it; by default it is answered beside them.
    let health = Router::new().route("/health", get(|| async { "ok" }));
    let (api, health) = if knobs.health_shares_workers {
        (api.merge(health), Router::new())
    } else {
        (api, health)
    };
    let api = limit::apply(api, knobs.max_threads, knobs.accept_count, metrics.clone());
    let router = api
        .merge(health)
        .route("/metrics", get(metrics::expose))
        .route("/actuator/prometheus", get(metrics::expose))
        .route("/openapi.json", get(openapi::document))
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            metrics::record,
        ))
        .with_state(app.clone())
        .merge(grpc::routes(app))
        .fallback(not_found);
    Ok((router, db, events))
}

/// An unknown path: gRPC's "unimplemented" to a gRPC call (as tonic answers one, in a 200
/// with `grpc-status: 12`), a 404 to anything else. The gRPC router's own catch-all answered
/// 200 to every path, so a mistyped URL (`/roms`) "scored" tens of thousands of TPS at 0 %
/// errors, and requests sent to the wrong path went unnoticed.
async fn not_found(req: axum::extract::Request) -> axum::response::Response {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;
    let grpc = req
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
    if grpc {
        (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, "application/grpc"),
                (header::HeaderName::from_static("grpc-status"), "12"),
            ],
        )
            .into_response()
    } else {
        (
            StatusCode::NOT_FOUND,
            format!(
                "no such path: {} {}; the demo target serves /rooms, /rooms/{{id}}/messages, /api-chat/chat, /api/pair-room/..., /app/, /health, /metrics and /openapi.json (every route: /openapi.json)\n",
                req.method(),
                req.uri().path()
            ),
        )
            .into_response()
    }
}

/// Starts the service on `addr` (port 0 picks a free one) on the current runtime.
pub async fn start(addr: SocketAddr, knobs: &Knobs) -> Result<Target, Error> {
    start_with_http3(addr, knobs, None).await
}

/// [`start`], and with `http3` (a UDP address, and the file to write its self-signed
/// certificate to) the same routes over HTTP/3 there too.
pub async fn start_with_http3(
    addr: SocketAddr,
    knobs: &Knobs,
    http3: Option<(SocketAddr, &std::path::Path)>,
) -> Result<Target, Error> {
    let (router, db, events) = router(knobs).await?;
    let http3 = match http3 {
        Some((udp, cert)) => Some(http3::serve(udp, cert, router.clone()).await?),
        None => None,
    };
    let inner = TcpListener::bind(addr).await.map_err(Repr::Listen)?;
    let addr = inner.local_addr().map_err(Repr::Listen)?;
    let listener = connections::LimitedListener {
        inner,
        permits: Arc::new(tokio::sync::Semaphore::new(knobs.max_connections.max(1))),
    };
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let handle = tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                let _ = rx.await;
            })
            .await
    });
    Ok(Target {
        addr,
        db,
        http3,
        events,
        shutdown: tx,
        handle,
    })
}
