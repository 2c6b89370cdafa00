//! The dashboard's routes: the page, its event stream, the controls, and the final report;
//! and the task that turns the live state into the snapshot the event stream carries.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::{Stream, StreamExt};
use serde::Deserialize;

use crate::Shared;

/// The routes of a live run.
pub(crate) fn live_routes(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/", get(|| async { Html(crate::page::live_page()) }))
        .route("/events", get(events))
        .route("/stop", post(stop))
        .route("/target", post(target))
        .route("/report", get(report))
        .with_state(shared)
}

/// The routes of a finished run's page.
pub(crate) fn static_routes(html: String) -> Router {
    let html = Arc::new(html);
    Router::new().route(
        "/",
        get(move || {
            let html = html.clone();
            async move { Html(html.as_str().to_string()) }
        }),
    )
}

/// Counts a page following the events while its stream lives.
struct Viewer(Arc<Shared>);

impl Drop for Viewer {
    fn drop(&mut self) {
        self.0.viewers.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn events(
    State(shared): State<Arc<Shared>>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    shared.viewers.fetch_add(1, Ordering::SeqCst);
    let viewer = Viewer(shared.clone());
    // A fresh snapshot for the newcomer; until it is built, the last one.
    shared.changed.notify_one();
    let stream = tokio_stream::wrappers::WatchStream::new(shared.snapshots.subscribe())
        .filter(|s| std::future::ready(!s.is_empty()))
        .map(move |s| {
            let _ = &viewer;
            Ok::<Event, Infallible>(Event::default().data(&*s))
        });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

async fn stop(State(shared): State<Arc<Shared>>) -> Response {
    (StatusCode::OK, shared.stop()).into_response()
}

/// `{"vus": N}` (closed model) or `{"rate": R}` (open model).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Target {
    vus: Option<u64>,
    rate: Option<f64>,
}

async fn target(
    State(shared): State<Arc<Shared>>,
    body: Result<Json<Target>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let Ok(Json(t)) = body else {
        return (
            StatusCode::BAD_REQUEST,
            "send {\"vus\": N} (closed model) or {\"rate\": R} (open model) as JSON",
        )
            .into_response();
    };
    let control = shared
        .state
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .control
        .clone();
    let Some(control) = control else {
        return (StatusCode::CONFLICT, "no run is going").into_response();
    };
    let done = match (t.vus, t.rate) {
        (Some(v), None) => control
            .set_vus(v, "dashboard")
            .map(|()| format!("VU target set to {v}")),
        (None, Some(r)) => control
            .set_rate(r, "dashboard")
            .map(|()| format!("arrival rate set to {r}/s")),
        _ => return (StatusCode::BAD_REQUEST, "give one of vus or rate").into_response(),
    };
    match done {
        Ok(said) => (StatusCode::OK, said).into_response(),
        Err(e) => (StatusCode::CONFLICT, e.to_string()).into_response(),
    }
}

/// The run's report.html, once written.
async fn report(State(shared): State<Arc<Shared>>) -> Response {
    let dir = shared
        .state
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .report
        .clone();
    let Some(dir) = dir else {
        return (
            StatusCode::NOT_FOUND,
            "the report is written when the run ends",
        )
            .into_response();
    };
    match tokio::fs::read_to_string(dir.join("report.html")).await {
        Ok(html) => {
            shared.report_loads.fetch_add(1, Ordering::SeqCst);
            ([(header::CACHE_CONTROL, "no-store")], Html(html)).into_response()
        }
        Err(e) => (
            StatusCode::NOT_FOUND,
            format!("{}: {e}", dir.join("report.html").display()),
        )
            .into_response(),
    }
}

/// Builds and publishes a snapshot whenever the run changed and a page is watching; on
/// this thread, not the recorder's.
pub(crate) async fn publish(shared: Arc<Shared>) {
    loop {
        shared.changed.notified().await;
        if shared.snapshots.receiver_count() == 0 {
            continue;
        }
        let json = {
            let state = shared.state.lock().unwrap_or_else(|p| p.into_inner());
            let Some(run) = &state.run else { continue };
            let mut snap = run.snapshot();
            snap.report = state.report.is_some();
            serde_json::to_string(&snap).expect("a snapshot serializes")
        };
        shared.snapshots.send_replace(Arc::from(json));
    }
}
