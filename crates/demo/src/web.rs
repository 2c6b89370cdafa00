//! A small browser front end for the chat and pair-room APIs (`/app/`): an HTML page whose
//! script creates a room, posts and reads messages, and walks a pair room through its life —
//! each id taken from one response and sent back in a later request. It exists so that a real
//! browser can be recorded against the demo target (HAR files for `volley convert har`, see
//! fixtures/har/); its assets are compiled into the binary.

use axum::Router;
use axum::http::header;
use axum::response::{IntoResponse, Redirect};
use axum::routing::get;

use crate::App;

const INDEX: &str = include_str!("../assets/index.html");
const SCRIPT: &str = include_str!("../assets/app.js");
const STYLE: &str = include_str!("../assets/app.css");
const LOGO: &str = include_str!("../assets/logo.svg");

pub(crate) fn routes() -> Router<App> {
    let asset = |mime: &'static str, body: &'static str| {
        get(move || async move { ([(header::CONTENT_TYPE, mime)], body).into_response() })
    };
    Router::new()
        .route("/app", get(|| async { Redirect::permanent("/app/") }))
        .route("/app/", asset("text/html; charset=utf-8", INDEX))
        .route(
            "/app/app.js",
            asset("text/javascript; charset=utf-8", SCRIPT),
        )
        .route("/app/app.css", asset("text/css; charset=utf-8", STYLE))
        .route("/app/logo.svg", asset("image/svg+xml", LOGO))
}
