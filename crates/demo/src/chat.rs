//! The chat service of seeds 000, 002 and 004: rooms, messages with paging, and a live
//! stream of a room's new messages.

use std::convert::Infallible;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::Stream;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::App;
use crate::db::{IdType, Val, now_ms};
use crate::error::Error;

/// How long a cached room list is served.
const CACHE_TTL: Duration = Duration::from_secs(1);

/// The look-aside cache.
#[derive(Default)]
pub(crate) struct Cache {
    rooms: Mutex<Option<(Instant, Value)>>,
    pub(crate) pair_rooms: Mutex<std::collections::HashMap<String, Value>>,
}

pub(crate) fn routes() -> Router<App> {
    Router::new()
        .route("/rooms", get(list_rooms).post(create_room))
        .route("/rooms/{id}/messages", get(messages))
        .route("/rooms/{id}/stream", get(stream))
        .route("/api-chat/chat", post(post_message))
        .route("/ws/echo", get(echo))
}

/// A failure as the service answers it.
pub(crate) enum ApiError {
    Db(Error),
    NotFound(&'static str),
    Bad(String),
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        ApiError::Db(e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, message) = match self {
            ApiError::Db(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
            ApiError::NotFound(what) => (StatusCode::NOT_FOUND, format!("{what} not found")),
            ApiError::Bad(why) => (StatusCode::BAD_REQUEST, why),
        };
        (status, Json(json!({ "error": message }))).into_response()
    }
}

pub(crate) type ApiResult<T> = Result<T, ApiError>;

/// Rows as JSON objects with the given column names.
pub(crate) fn objects(rows: &[Vec<Val>], cols: &[&str]) -> Value {
    Value::Array(
        rows.iter()
            .map(|r| {
                Value::Object(
                    cols.iter()
                        .zip(r)
                        .map(|(c, v)| (c.to_string(), v.json()))
                        .collect(),
                )
            })
            .collect(),
    )
}

/// A room in the list.
#[derive(Serialize, ToSchema)]
pub(crate) struct RoomSummary {
    id: i64,
    name: String,
    messages: i64,
}

/// A new room's id.
#[derive(Serialize, ToSchema)]
pub(crate) struct Created {
    #[schema(example = 21)]
    id: i64,
}

/// A stored message.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Message {
    /// A number, or a 32-character string with `--id-type random`.
    id: String,
    room_id: i64,
    user_id: i64,
    content: String,
}

/// One page of a room's messages, newest first.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MessagePage {
    room_id: i64,
    page: i64,
    size: i64,
    messages: Vec<Message>,
}

#[utoipa::path(get, path = "/rooms", tag = "chat", operation_id = "listRooms", responses((status = 200, description = "Every room with its message count", body = [RoomSummary])))]
pub(crate) async fn list_rooms(State(app): State<App>) -> ApiResult<Json<Value>> {
    if let Some(cache) = &app.cache
        && let Some((at, v)) = cache.rooms.lock().expect("cache").as_ref()
        && at.elapsed() < CACHE_TTL
    {
        return Ok(Json(v.clone()));
    }
    let rows = app
        .db
        .query(
            "SELECT r.id, r.name, (SELECT count(*) FROM messages_seq m WHERE m.room_id = r.id)
                  + (SELECT count(*) FROM messages_rand m WHERE m.room_id = r.id)
             FROM rooms r ORDER BY r.id",
            vec![],
        )
        .await?;
    let v = objects(&rows, &["id", "name", "messages"]);
    if let Some(cache) = &app.cache {
        *cache.rooms.lock().expect("cache") = Some((Instant::now(), v.clone()));
    }
    Ok(Json(v))
}

#[derive(Deserialize, ToSchema)]
pub(crate) struct NewRoom {
    #[schema(example = "lobby")]
    name: String,
}

#[utoipa::path(post, path = "/rooms", tag = "chat", operation_id = "createRoom", request_body = NewRoom, responses((status = 201, description = "Created", body = Created)))]
pub(crate) async fn create_room(
    State(app): State<App>,
    Json(body): Json<NewRoom>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let rows = app
        .db
        .execute(
            "INSERT INTO rooms (name, created_at) VALUES ($1, $2) RETURNING id",
            vec![Val::Text(body.name), Val::Int(now_ms())],
        )
        .await?;
    if let Some(cache) = &app.cache {
        *cache.rooms.lock().expect("cache") = None;
    }
    Ok((
        StatusCode::CREATED,
        Json(json!({ "id": rows[0][0].json() })),
    ))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NewMessage {
    #[schema(example = 1)]
    room_id: i64,
    #[schema(example = 7)]
    user_id: i64,
    #[schema(example = "hello", min_length = 1)]
    content: String,
}

#[utoipa::path(post, path = "/api-chat/chat", tag = "chat", operation_id = "postMessage", request_body = NewMessage,
    responses((status = 201, description = "Stored", body = Message), (status = 400, description = "Empty content"), (status = 404, description = "No such room")))]
pub(crate) async fn post_message(
    State(app): State<App>,
    Json(m): Json<NewMessage>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    if m.content.is_empty() {
        return Err(ApiError::Bad("content must not be empty".into()));
    }
    let exists = app
        .db
        .query(
            "SELECT count(*) FROM rooms WHERE id = $1",
            vec![Val::Int(m.room_id)],
        )
        .await?;
    if exists[0][0].int() == 0 {
        return Err(ApiError::NotFound("room"));
    }
    let (room, user, content, now) = (
        Val::Int(m.room_id),
        Val::Int(m.user_id),
        Val::Text(m.content.clone()),
        Val::Int(now_ms()),
    );
    let id = match app.db.id_type {
        IdType::Sequential => {
            let rows = app
                .db
                .execute(
                    "INSERT INTO messages_seq (room_id, user_id, content, created_at) VALUES ($1, $2, $3, $4) RETURNING CAST(id AS TEXT)",
                    vec![room, user, content, now],
                )
                .await?;
            rows[0][0].json()
        }
        IdType::Random => {
            let id: String = (0..32).map(|_| fastrand::alphanumeric()).collect();
            app.db
                .execute(
                    "INSERT INTO messages_rand (id, room_id, user_id, content, created_at) VALUES ($1, $2, $3, $4, $5)",
                    vec![Val::Text(id.clone()), room, user, content, now],
                )
                .await?;
            json!(id)
        }
    };
    let message =
        json!({ "id": id, "roomId": m.room_id, "userId": m.user_id, "content": m.content });
    app.events.chat(m.room_id, message.to_string());
    Ok((StatusCode::CREATED, Json(message)))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct Page {
    /// Messages per page (1-100, default 20).
    size: Option<i64>,
    /// 0-based page.
    page: Option<i64>,
}

#[utoipa::path(get, path = "/rooms/{id}/messages", tag = "chat", operation_id = "listMessages",
    params(("id" = i64, Path, description = "The room", example = 1), Page),
    responses((status = 200, description = "A page of messages", body = MessagePage)))]
pub(crate) async fn messages(
    State(app): State<App>,
    Path(room): Path<i64>,
    Query(p): Query<Page>,
) -> ApiResult<Json<Value>> {
    let size = p.size.unwrap_or(20).clamp(1, 100);
    let offset = p.page.unwrap_or(0).max(0) * size;
    let rows = app
        .db
        .query(
            "SELECT id, user_id, content, created_at FROM (
               SELECT CAST(id AS TEXT) AS id, user_id, content, created_at FROM messages_seq WHERE room_id = $1
               UNION ALL
               SELECT id, user_id, content, created_at FROM messages_rand WHERE room_id = $1) AS m
             ORDER BY created_at DESC LIMIT $2 OFFSET $3",
            vec![Val::Int(room), Val::Int(size), Val::Int(offset)],
        )
        .await?;
    let messages = objects(&rows, &["id", "userId", "content", "createdAt"]);
    Ok(Json(
        json!({ "roomId": room, "page": p.page.unwrap_or(0), "size": size, "messages": messages }),
    ))
}

#[utoipa::path(get, path = "/rooms/{id}/stream", tag = "chat", operation_id = "streamRoom",
    params(("id" = i64, Path, description = "The room", example = 1)),
    responses((status = 200, description = "`connect`, then a `message` event per new message", content_type = "text/event-stream", body = String)))]
pub(crate) async fn stream(
    State(app): State<App>,
    Path(room): Path<i64>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let events = app.events.chat_stream(room);
    Sse::new(events).keep_alive(KeepAlive::default())
}

/// `GET /ws/echo`: a WebSocket that sends every text message back (the round trip of the
/// transport alone, a baseline for chat-over-WebSocket flows).
async fn echo(ws: axum::extract::ws::WebSocketUpgrade) -> Response {
    use axum::extract::ws::Message;
    ws.on_upgrade(|mut socket| async move {
        while let Some(Ok(msg)) = socket.recv().await {
            let reply = match msg {
                Message::Text(t) => Message::Text(t),
                Message::Binary(b) => Message::Binary(b),
                Message::Close(_) => break,
                _ => continue,
            };
            if socket.send(reply).await.is_err() {
                break;
            }
        }
    })
}
