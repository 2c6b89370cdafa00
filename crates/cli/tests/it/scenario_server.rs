//! A loopback server for scenario tests, recording what it was sent so tests can assert
//! that extracted values, feeder rows and loops arrived as the scenario says.
//!
//! Routes: `POST /login` issues a new token (JSON `token`, header `X-Session`, and an
//! `href` for regex extraction); `GET /items/{token}` answers 200 only for an issued token
//! whose session header matches; `POST /user` records the `email` it is sent; `GET /count`
//! counts; `GET /room` answers `{"status":"CLOSED"}`; `GET /events?delay_ms=D` is an
//! event stream whose first event comes after D ms; `GET /ws?delay_ms=D` a WebSocket that
//! echoes each message after D ms; `GET /slow?ms=N` answers after N ms.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::ws::{Message, WebSocketUpgrade};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};

#[derive(Default)]
pub struct Seen {
    /// Issued token → session.
    pub issued: HashMap<String, String>,
    /// Tokens `/items` accepted, in order.
    pub accepted: Vec<String>,
    /// `/items` requests refused.
    pub refused: u64,
    /// Emails `/user` received, in order.
    pub emails: Vec<String>,
    /// `/count` requests.
    pub counted: u64,
    /// `/login` requests.
    pub logins: u64,
    /// Authorization headers received.
    pub authorizations: Vec<String>,
}

pub struct ScenarioServer {
    pub port: u16,
    pub seen: Arc<Mutex<Seen>>,
}

impl ScenarioServer {
    pub fn start() -> ScenarioServer {
        crate::support::assert_serial("a test that starts a ScenarioServer");
        let seen = Arc::new(Mutex::new(Seen::default()));
        let state = seen.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let app = Router::new()
                    .route("/login", post(login))
                    .route("/items/{token}", get(items))
                    .route("/user", post(user))
                    .route("/count", get(count))
                    .route(
                        "/room",
                        get(|| async { Json(serde_json::json!({ "status": "CLOSED" })) }),
                    )
                    .route("/events", get(events))
                    .route("/ws", get(ws))
                    .route("/slow", get(slow))
                    .with_state(state);
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap().port()).unwrap();
                axum::serve(listener, app).await.unwrap();
            });
        });
        ScenarioServer {
            port: rx.recv().unwrap(),
            seen,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap()
    }
}

type S = State<Arc<Mutex<Seen>>>;

async fn login(State(seen): S) -> Response {
    let mut s = seen.lock().unwrap();
    s.logins += 1;
    let token = format!("tok{}x{}", s.logins, fastrand_u32());
    let session = format!("sess-{}", s.logins);
    s.issued.insert(token.clone(), session.clone());
    let body = serde_json::json!({ "token": token, "user": { "id": s.logins }, "href": format!("<a href='/items/{token}'>") });
    ([("x-session", session)], Json(body)).into_response()
}

fn fastrand_u32() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos()
}

async fn items(State(seen): S, Path(token): Path<String>, headers: HeaderMap) -> Response {
    let mut s = seen.lock().unwrap();
    if let Some(a) = headers.get("authorization") {
        s.authorizations
            .push(a.to_str().unwrap_or_default().to_string());
    }
    let session = headers
        .get("x-session")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    if s.issued.get(&token) == Some(&session) {
        s.accepted.push(token.clone());
        Json(serde_json::json!({ "token": token })).into_response()
    } else {
        s.refused += 1;
        StatusCode::NOT_FOUND.into_response()
    }
}

async fn user(State(seen): S, Json(body): Json<serde_json::Value>) -> StatusCode {
    seen.lock()
        .unwrap()
        .emails
        .push(body["email"].as_str().unwrap_or_default().to_string());
    StatusCode::CREATED
}

async fn count(State(seen): S) -> &'static str {
    seen.lock().unwrap().counted += 1;
    "counted"
}

async fn slow(Query(q): Query<HashMap<String, u64>>) -> &'static str {
    tokio::time::sleep(Duration::from_millis(q.get("ms").copied().unwrap_or(0))).await;
    "slow"
}

async fn events(Query(q): Query<HashMap<String, u64>>) -> impl IntoResponse {
    let delay = Duration::from_millis(q.get("delay_ms").copied().unwrap_or(0));
    let stream = futures_util::stream::unfold(0u32, move |n| async move {
        tokio::time::sleep(if n == 0 {
            delay
        } else {
            Duration::from_millis(10)
        })
        .await;
        Some((
            Ok::<_, std::convert::Infallible>(Event::default().data(format!("event {n}"))),
            n + 1,
        ))
    });
    Sse::new(stream)
}

async fn ws(ws: WebSocketUpgrade, Query(q): Query<HashMap<String, u64>>) -> Response {
    let delay = Duration::from_millis(q.get("delay_ms").copied().unwrap_or(0));
    ws.on_upgrade(move |mut socket| async move {
        while let Some(Ok(msg)) = socket.recv().await {
            if let Message::Text(t) = msg {
                tokio::time::sleep(delay).await;
                if socket
                    .send(Message::Text(format!("echo: {}", t.as_str()).into()))
                    .await
                    .is_err()
                {
                    break;
                }
            }
        }
    })
}
