//! The pair-programming room service of seed 003: a room is created with an access code
//! that every later URL carries; it has todos, reference links, categories, a timer, a
//! status, roles that swap, and an SSE stream of what changes.

use std::convert::Infallible;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::routing::{get, patch, post};
use axum::{Json, Router};
use futures_util::{Stream, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_stream::wrappers::BroadcastStream;
use utoipa::ToSchema;

use crate::App;
use crate::chat::{ApiError, ApiResult, objects};
use crate::db::{Val, now_ms};

/// Live events of chat rooms and pair rooms, and the signal that ends every stream at
/// shutdown (so a graceful stop does not wait for open streams).
pub(crate) struct Events {
    chat: broadcast::Sender<(i64, String)>,
    pair: broadcast::Sender<(String, &'static str, String)>,
    closed: tokio::sync::watch::Sender<bool>,
}

impl Default for Events {
    fn default() -> Self {
        Events {
            chat: broadcast::channel(1024).0,
            pair: broadcast::channel(1024).0,
            closed: tokio::sync::watch::channel(false).0,
        }
    }
}

impl Events {
    pub(crate) fn chat(&self, room: i64, json: String) {
        let _ = self.chat.send((room, json));
    }

    fn pair(&self, code: &str, kind: &'static str, json: String) {
        let _ = self.pair.send((code.to_string(), kind, json));
    }

    /// Ends every open stream.
    pub(crate) fn close(&self) {
        let _ = self.closed.send(true);
    }

    fn until_closed<S: Stream + Send + 'static>(
        &self,
        s: S,
    ) -> impl Stream<Item = S::Item> + Send + use<S> {
        let mut rx = self.closed.subscribe();
        s.take_until(async move {
            let _ = rx.wait_for(|c| *c).await;
        })
    }

    pub(crate) fn chat_stream(
        &self,
        room: i64,
    ) -> impl Stream<Item = Result<Event, Infallible>> + Send + use<> {
        let hello = futures_util::stream::once(async {
            Ok(Event::default().event("connect").data("connected"))
        });
        let live = BroadcastStream::new(self.chat.subscribe()).filter_map(move |m| async move {
            match m {
                Ok((r, json)) if r == room => {
                    Some(Ok(Event::default().event("message").data(json)))
                }
                _ => None,
            }
        });
        self.until_closed(hello.chain(live))
    }

    /// A room's new chat messages as posted (JSON text), for the gRPC stream.
    pub(crate) fn chat_live(&self, room: i64) -> impl Stream<Item = String> + Send + use<> {
        let live = BroadcastStream::new(self.chat.subscribe()).filter_map(move |m| async move {
            match m {
                Ok((r, json)) if r == room => Some(json),
                _ => None,
            }
        });
        self.until_closed(live)
    }

    fn pair_stream(
        &self,
        code: String,
    ) -> impl Stream<Item = Result<Event, Infallible>> + Send + use<> {
        let hello = futures_util::stream::once(async {
            Ok(Event::default().event("connect").data("connected"))
        });
        let live = BroadcastStream::new(self.pair.subscribe()).filter_map(move |m| {
            let code = code.clone();
            async move {
                match m {
                    Ok((c, kind, json)) if c == code => {
                        Some(Ok(Event::default().event(kind).data(json)))
                    }
                    _ => None,
                }
            }
        });
        self.until_closed(hello.chain(live))
    }
}

pub(crate) fn routes() -> Router<App> {
    Router::new()
        .route("/api/pair-room", post(create))
        .route("/api/pair-room/{code}", get(read))
        .route("/api/pair-room/{code}/status", patch(set_status))
        .route("/api/pair-room/{code}/swap", patch(swap_roles))
        .route(
            "/api/pair-room/{code}/todos",
            get(list_todos).post(add_todo),
        )
        .route(
            "/api/pair-room/{code}/reference-link",
            get(list_links).post(add_link),
        )
        .route(
            "/api/pair-room/{code}/category",
            get(list_categories).post(add_category),
        )
        .route("/api/pair-room/{code}/timer", get(timer))
        .route("/api/pair-room/{code}/timer/start", patch(timer_start))
        .route("/api/pair-room/{code}/timer/stop", patch(timer_stop))
        .route("/api/pair-room/{code}/connect", get(connect))
}

#[derive(Deserialize, ToSchema)]
#[schema(as = NewPairRoom)]
pub(crate) struct NewRoom {
    #[schema(example = "ana")]
    driver: String,
    #[schema(example = "ben")]
    navigator: String,
    #[serde(default)]
    #[schema(example = 600000)]
    timer_duration_ms: Option<i64>,
}

/// A new pair room's access code, which every later URL carries.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreatedRoom {
    #[schema(example = "QWERTY")]
    access_code: String,
}

/// A pair room.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PairRoom {
    access_code: String,
    driver: String,
    navigator: String,
    status: String,
}

/// A todo, link or category as stored: its id and the values given.
#[derive(Serialize, ToSchema)]
pub(crate) struct Added {
    id: i64,
    values: Vec<String>,
}

/// A room's timer.
#[derive(Serialize, ToSchema)]
pub(crate) struct Timer {
    duration: i64,
    remaining: i64,
    running: bool,
}

#[utoipa::path(post, path = "/api/pair-room", tag = "pair-room", operation_id = "createPairRoom", request_body = NewRoom,
    responses((status = 201, description = "Created", body = CreatedRoom), (status = 400, description = "Driver or navigator missing")))]
pub(crate) async fn create(
    State(app): State<App>,
    Json(b): Json<NewRoom>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    if b.driver.is_empty() || b.navigator.is_empty() {
        return Err(ApiError::Bad("driver and navigator are required".into()));
    }
    let code: String = (0..6).map(|_| fastrand::uppercase()).collect();
    let rows = app
        .db
        .execute(
            "INSERT INTO pair_rooms (access_code, driver, navigator, status, created_at) VALUES ($1, $2, $3, 'IN_PROGRESS', $4) RETURNING id",
            vec![Val::Text(code.clone()), Val::Text(b.driver), Val::Text(b.navigator), Val::Int(now_ms())],
        )
        .await?;
    let d = b.timer_duration_ms.unwrap_or(600_000);
    app.db
        .execute(
            "INSERT INTO timers (pair_room_id, duration_ms, remaining_ms) VALUES ($1, $2, $2)",
            vec![rows[0][0].clone(), Val::Int(d)],
        )
        .await?;
    Ok((StatusCode::CREATED, Json(json!({ "accessCode": code }))))
}

/// The room's id, or 404.
async fn room_id(app: &App, code: &str) -> ApiResult<i64> {
    let rows = app
        .db
        .query(
            "SELECT id FROM pair_rooms WHERE access_code = $1",
            vec![Val::Text(code.to_string())],
        )
        .await?;
    rows.first()
        .map(|r| r[0].int())
        .ok_or(ApiError::NotFound("pair room"))
}

#[utoipa::path(get, path = "/api/pair-room/{code}", tag = "pair-room", operation_id = "readPairRoom", params(CodeParam),
    responses((status = 200, description = "The room", body = PairRoom), (status = 404, description = "No such room")))]
pub(crate) async fn read(
    State(app): State<App>,
    Path(code): Path<String>,
) -> ApiResult<Json<Value>> {
    if let Some(cache) = &app.cache
        && let Some(v) = cache.pair_rooms.lock().expect("cache").get(&code)
    {
        return Ok(Json(v.clone()));
    }
    let rows = app
        .db
        .query(
            "SELECT access_code, driver, navigator, status FROM pair_rooms WHERE access_code = $1",
            vec![Val::Text(code.clone())],
        )
        .await?;
    let room = objects(&rows, &["accessCode", "driver", "navigator", "status"])
        .as_array()
        .and_then(|a| a.first().cloned())
        .ok_or(ApiError::NotFound("pair room"))?;
    if let Some(cache) = &app.cache {
        cache
            .pair_rooms
            .lock()
            .expect("cache")
            .insert(code, room.clone());
    }
    Ok(Json(room))
}

fn forget(app: &App, code: &str) {
    if let Some(cache) = &app.cache {
        cache.pair_rooms.lock().expect("cache").remove(code);
    }
}

/// The access code in the path.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
pub(crate) struct CodeParam {
    /// The room's access code, from `POST /api/pair-room`.
    #[param(example = "QWERTY")]
    code: String,
}

#[derive(Deserialize, ToSchema)]
pub(crate) struct Status {
    #[schema(example = "IN_PROGRESS", pattern = "^(IN_PROGRESS|COMPLETED|DELETED)$")]
    status: String,
}

#[utoipa::path(patch, path = "/api/pair-room/{code}/status", tag = "pair-room", operation_id = "setPairRoomStatus", params(CodeParam), request_body = Status,
    responses((status = 204, description = "Set"), (status = 400, description = "Not a status"), (status = 404, description = "No such room")))]
pub(crate) async fn set_status(
    State(app): State<App>,
    Path(code): Path<String>,
    Json(s): Json<Status>,
) -> ApiResult<StatusCode> {
    if !["IN_PROGRESS", "COMPLETED", "DELETED"].contains(&s.status.as_str()) {
        return Err(ApiError::Bad(format!(
            "status must be IN_PROGRESS, COMPLETED or DELETED, not {}",
            s.status
        )));
    }
    let rows = app
        .db
        .execute(
            "UPDATE pair_rooms SET status = $1 WHERE access_code = $2 RETURNING id",
            vec![Val::Text(s.status.clone()), Val::Text(code.clone())],
        )
        .await?;
    if rows.is_empty() {
        return Err(ApiError::NotFound("pair room"));
    }
    forget(&app, &code);
    app.events
        .pair(&code, "status", json!({ "status": s.status }).to_string());
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(patch, path = "/api/pair-room/{code}/swap", tag = "pair-room", operation_id = "swapRoles", params(CodeParam), responses((status = 204, description = "Swapped")))]
pub(crate) async fn swap_roles(
    State(app): State<App>,
    Path(code): Path<String>,
) -> ApiResult<StatusCode> {
    let rows = app
        .db
        .execute(
            "UPDATE pair_rooms SET driver = navigator, navigator = driver WHERE access_code = $1 RETURNING id",
            vec![Val::Text(code.clone())],
        )
        .await?;
    if rows.is_empty() {
        return Err(ApiError::NotFound("pair room"));
    }
    forget(&app, &code);
    app.events.pair(&code, "roles", "{}".to_string());
    Ok(StatusCode::NO_CONTENT)
}

/// Lists rows of a per-room table as JSON objects of the given columns.
async fn list(
    app: &App,
    code: &str,
    sql: &'static str,
    cols: &'static [&'static str],
) -> ApiResult<Json<Value>> {
    let id = room_id(app, code).await?;
    let rows = app.db.query(sql, vec![Val::Int(id)]).await?;
    Ok(Json(objects(&rows, cols)))
}

/// Inserts one row into a per-room table (`$1` is the room) and announces it.
async fn add(
    app: &App,
    code: &str,
    sql: &'static str,
    values: Vec<Val>,
    kind: &'static str,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let id = room_id(app, code).await?;
    let mut params = vec![Val::Int(id)];
    params.extend(values.iter().cloned());
    let rows = app.db.execute(sql, params).await?;
    let body = json!({ "id": rows[0][0].json(), "values": values.iter().map(Val::json).collect::<Vec<_>>() });
    app.events.pair(code, kind, body.to_string());
    Ok((StatusCode::CREATED, Json(body)))
}

#[derive(Deserialize, ToSchema)]
pub(crate) struct Content {
    #[schema(example = "write the load test")]
    content: String,
}

#[utoipa::path(get, path = "/api/pair-room/{code}/todos", tag = "pair-room", operation_id = "listTodos", params(CodeParam), responses((status = 200, description = "The todos", body = [Added])))]
pub(crate) async fn list_todos(
    State(app): State<App>,
    Path(code): Path<String>,
) -> ApiResult<Json<Value>> {
    list(
        &app,
        &code,
        "SELECT id, content, checked FROM todos WHERE pair_room_id = $1 ORDER BY id",
        &["id", "content", "checked"],
    )
    .await
}

#[utoipa::path(post, path = "/api/pair-room/{code}/todos", tag = "pair-room", operation_id = "addTodo", params(CodeParam), request_body = Content, responses((status = 201, description = "Added", body = Added)))]
pub(crate) async fn add_todo(
    State(app): State<App>,
    Path(code): Path<String>,
    Json(b): Json<Content>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    add(
        &app,
        &code,
        "INSERT INTO todos (pair_room_id, content) VALUES ($1, $2) RETURNING id",
        vec![Val::Text(b.content)],
        "todo",
    )
    .await
}

#[derive(Deserialize, ToSchema)]
pub(crate) struct Link {
    #[schema(example = "https://docs.rs/tokio")]
    url: String,
    #[serde(default)]
    category: Option<String>,
}

#[utoipa::path(get, path = "/api/pair-room/{code}/reference-link", tag = "pair-room", operation_id = "listLinks", params(CodeParam), responses((status = 200, description = "The links", body = [Added])))]
pub(crate) async fn list_links(
    State(app): State<App>,
    Path(code): Path<String>,
) -> ApiResult<Json<Value>> {
    list(
        &app,
        &code,
        "SELECT id, url, category FROM reference_links WHERE pair_room_id = $1 ORDER BY id",
        &["id", "url", "category"],
    )
    .await
}

#[utoipa::path(post, path = "/api/pair-room/{code}/reference-link", tag = "pair-room", operation_id = "addLink", params(CodeParam), request_body = Link, responses((status = 201, description = "Added", body = Added)))]
pub(crate) async fn add_link(
    State(app): State<App>,
    Path(code): Path<String>,
    Json(b): Json<Link>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let category = b.category.map_or(Val::Null, Val::Text);
    add(&app, &code, "INSERT INTO reference_links (pair_room_id, url, category) VALUES ($1, $2, $3) RETURNING id", vec![Val::Text(b.url), category], "link")
        .await
}

#[derive(Deserialize, ToSchema)]
pub(crate) struct Category {
    #[schema(example = "docs")]
    name: String,
}

#[utoipa::path(get, path = "/api/pair-room/{code}/category", tag = "pair-room", operation_id = "listCategories", params(CodeParam), responses((status = 200, description = "The categories", body = [Added])))]
pub(crate) async fn list_categories(
    State(app): State<App>,
    Path(code): Path<String>,
) -> ApiResult<Json<Value>> {
    list(
        &app,
        &code,
        "SELECT id, name FROM categories WHERE pair_room_id = $1 ORDER BY id",
        &["id", "name"],
    )
    .await
}

#[utoipa::path(post, path = "/api/pair-room/{code}/category", tag = "pair-room", operation_id = "addCategory", params(CodeParam), request_body = Category, responses((status = 201, description = "Added", body = Added)))]
pub(crate) async fn add_category(
    State(app): State<App>,
    Path(code): Path<String>,
    Json(b): Json<Category>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    add(
        &app,
        &code,
        "INSERT INTO categories (pair_room_id, name) VALUES ($1, $2) RETURNING id",
        vec![Val::Text(b.name)],
        "category",
    )
    .await
}

#[utoipa::path(get, path = "/api/pair-room/{code}/timer", tag = "pair-room", operation_id = "readTimer", params(CodeParam), responses((status = 200, description = "The timer", body = Timer)))]
pub(crate) async fn timer(
    State(app): State<App>,
    Path(code): Path<String>,
) -> ApiResult<Json<Value>> {
    let id = room_id(&app, &code).await?;
    let rows = app
        .db
        .query(
            "SELECT duration_ms, remaining_ms, started_at FROM timers WHERE pair_room_id = $1",
            vec![Val::Int(id)],
        )
        .await?;
    let r = rows.first().ok_or(ApiError::NotFound("timer"))?;
    let remaining = r[1].int();
    let (left, running) = match &r[2] {
        Val::Int(started) => ((remaining - (now_ms() - started)).max(0), true),
        _ => (remaining, false),
    };
    Ok(Json(
        json!({ "duration": r[0].int(), "remaining": left, "running": running }),
    ))
}

#[utoipa::path(patch, path = "/api/pair-room/{code}/timer/start", tag = "pair-room", operation_id = "startTimer", params(CodeParam), responses((status = 204, description = "Running")))]
pub(crate) async fn timer_start(
    State(app): State<App>,
    Path(code): Path<String>,
) -> ApiResult<StatusCode> {
    let id = room_id(&app, &code).await?;
    app.db
        .execute(
            "UPDATE timers SET started_at = coalesce(started_at, $1) WHERE pair_room_id = $2",
            vec![Val::Int(now_ms()), Val::Int(id)],
        )
        .await?;
    app.events
        .pair(&code, "timer", json!({ "running": true }).to_string());
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(patch, path = "/api/pair-room/{code}/timer/stop", tag = "pair-room", operation_id = "stopTimer", params(CodeParam), responses((status = 204, description = "Stopped")))]
pub(crate) async fn timer_stop(
    State(app): State<App>,
    Path(code): Path<String>,
) -> ApiResult<StatusCode> {
    let id = room_id(&app, &code).await?;
    app.db
        .execute(
            "UPDATE timers SET remaining_ms = CASE WHEN remaining_ms - ($1 - started_at) < 0 THEN 0 ELSE remaining_ms - ($1 - started_at) END,
                               started_at = NULL
             WHERE pair_room_id = $2 AND started_at IS NOT NULL",
            vec![Val::Int(now_ms()), Val::Int(id)],
        )
        .await?;
    app.events
        .pair(&code, "timer", json!({ "running": false }).to_string());
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/api/pair-room/{code}/connect", tag = "pair-room", operation_id = "connectPairRoom", params(CodeParam),
    responses((status = 200, description = "`connect`, then an event per change", content_type = "text/event-stream", body = String)))]
pub(crate) async fn connect(
    State(app): State<App>,
    Path(code): Path<String>,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    room_id(&app, &code).await?;
    Ok(Sse::new(app.events.pair_stream(code)).keep_alive(KeepAlive::default()))
}
