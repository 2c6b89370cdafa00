//! The chat API over gRPC (proto/chat.proto, package `volley.chat.v1`): the same rooms and
//! messages as the HTTP routes, on the same database and live feed, served on the same port
//! (HTTP/2; h2c when plain) with server reflection, so a client needs no .proto file.
//!
//! Its metrics follow Micrometer's gRPC server instrumentation, as a Spring service with
//! grpc-spring-boot-starter exposes them: `grpc_server_processing_duration_seconds`
//! (count, sum, max by service, method, methodType, statusCode) and
//! `grpc_server_responses_sent_messages_total`. A server stream is timed until it closes.
//! gRPC calls are not counted in `http_server_requests_seconds`, and the worker limit of
//! the HTTP routes (Tomcat's threads) does not apply to them: Spring runs gRPC on its own
//! executor too.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures_util::{Stream, StreamExt};
use tonic::{Request, Response, Status};

use crate::App;
use crate::db::{IdType, Val, now_ms};
use crate::error::Error;

/// The code generated from proto/chat.proto at build time.
#[allow(missing_docs, clippy::all, unreachable_pub)]
pub mod pb {
    tonic::include_proto!("volley.chat.v1");
}

use pb::chat_server::{Chat, ChatServer};

/// The compiled descriptor set of proto/chat.proto, for server reflection.
const DESCRIPTOR: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/chat_descriptor.bin"));

/// The service name as clients call it.
const SERVICE: &str = "volley.chat.v1.Chat";

/// The gRPC routes (the chat service and reflection v1 and v1alpha) as an axum router, to
/// be merged with the HTTP routes.
pub(crate) fn routes(app: App) -> axum::Router {
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(DESCRIPTOR)
        .build_v1()
        .expect("the descriptor set compiled at build time is valid");
    let reflection_alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(DESCRIPTOR)
        .build_v1alpha()
        .expect("the descriptor set compiled at build time is valid");
    tonic::service::Routes::new(ChatServer::new(ChatService { app }))
        .add_service(reflection)
        .add_service(reflection_alpha)
        .prepare()
        .into_axum_router()
}

/// A call's labels: (method, type, code).
type CallKey = (&'static str, &'static str, &'static str);

/// Count, sum and max of processing time, by (method, type, code), and messages sent.
#[derive(Default)]
pub(crate) struct GrpcMetrics {
    calls: Mutex<BTreeMap<CallKey, (u64, f64, f64)>>,
    sent: Mutex<BTreeMap<(&'static str, &'static str), u64>>,
}

impl GrpcMetrics {
    fn observe(&self, method: &'static str, kind: &'static str, code: tonic::Code, seconds: f64) {
        let mut map = self.calls.lock().expect("grpc metrics");
        let e = map.entry((method, kind, code_name(code))).or_default();
        e.0 += 1;
        e.1 += seconds;
        e.2 = e.2.max(seconds);
    }

    fn sent(&self, method: &'static str, kind: &'static str, n: u64) {
        *self
            .sent
            .lock()
            .expect("grpc metrics")
            .entry((method, kind))
            .or_default() += n;
    }

    /// Appends the Prometheus text of the gRPC series.
    pub(crate) fn render(&self, out: &mut String) {
        let calls = self.calls.lock().expect("grpc metrics");
        if calls.is_empty() {
            return;
        }
        let labels =
            |m: &str, k: &str| format!("method=\"{m}\",methodType=\"{k}\",service=\"{SERVICE}\",");
        let _ = writeln!(
            out,
            "# HELP grpc_server_processing_duration_seconds The total time taken for the server to complete the call\n# TYPE grpc_server_processing_duration_seconds summary"
        );
        for ((m, k, code), (count, sum, _)) in calls.iter() {
            let l = labels(m, k);
            let _ = writeln!(
                out,
                "grpc_server_processing_duration_seconds_count{{{l}statusCode=\"{code}\",}} {count}"
            );
            let _ = writeln!(
                out,
                "grpc_server_processing_duration_seconds_sum{{{l}statusCode=\"{code}\",}} {sum}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP grpc_server_processing_duration_seconds_max The total time taken for the server to complete the call\n# TYPE grpc_server_processing_duration_seconds_max gauge"
        );
        for ((m, k, code), (_, _, max)) in calls.iter() {
            let _ = writeln!(
                out,
                "grpc_server_processing_duration_seconds_max{{{}statusCode=\"{code}\",}} {max}",
                labels(m, k)
            );
        }
        let _ = writeln!(
            out,
            "# HELP grpc_server_responses_sent_messages_total The total number of responses sent\n# TYPE grpc_server_responses_sent_messages_total counter"
        );
        for ((m, k), n) in self.sent.lock().expect("grpc metrics").iter() {
            let _ = writeln!(
                out,
                "grpc_server_responses_sent_messages_total{{{}}} {n}",
                labels(m, k)
            );
        }
    }
}

/// The status code's name as gRPC (and Micrometer's `statusCode` tag) spells it.
fn code_name(code: tonic::Code) -> &'static str {
    use tonic::Code as C;
    match code {
        C::Ok => "OK",
        C::Cancelled => "CANCELLED",
        C::Unknown => "UNKNOWN",
        C::InvalidArgument => "INVALID_ARGUMENT",
        C::DeadlineExceeded => "DEADLINE_EXCEEDED",
        C::NotFound => "NOT_FOUND",
        C::AlreadyExists => "ALREADY_EXISTS",
        C::PermissionDenied => "PERMISSION_DENIED",
        C::ResourceExhausted => "RESOURCE_EXHAUSTED",
        C::FailedPrecondition => "FAILED_PRECONDITION",
        C::Aborted => "ABORTED",
        C::OutOfRange => "OUT_OF_RANGE",
        C::Unimplemented => "UNIMPLEMENTED",
        C::Internal => "INTERNAL",
        C::Unavailable => "UNAVAILABLE",
        C::DataLoss => "DATA_LOSS",
        C::Unauthenticated => "UNAUTHENTICATED",
    }
}

struct ChatService {
    app: App,
}

fn db_status(e: Error) -> Status {
    // A pool that could not hand out a connection in time is the server being overloaded.
    if e.is_pool_timeout() {
        Status::resource_exhausted(e.to_string())
    } else {
        Status::internal(e.to_string())
    }
}

impl ChatService {
    /// Runs one unary call, timing it into the metrics.
    async fn timed<T>(
        &self,
        method: &'static str,
        work: impl Future<Output = Result<T, Status>>,
    ) -> Result<Response<T>, Status> {
        let start = Instant::now();
        let result = work.await;
        let code = result
            .as_ref()
            .map_or_else(|s| s.code(), |_| tonic::Code::Ok);
        self.app
            .grpc
            .observe(method, "UNARY", code, start.elapsed().as_secs_f64());
        if result.is_ok() {
            self.app.grpc.sent(method, "UNARY", 1);
        }
        result.map(Response::new)
    }

    async fn room_exists(&self, room: i64) -> Result<(), Status> {
        let rows = self
            .app
            .db
            .query(
                "SELECT count(*) FROM rooms WHERE id = $1",
                vec![Val::Int(room)],
            )
            .await
            .map_err(db_status)?;
        if rows[0][0].int() == 0 {
            return Err(Status::not_found(format!("room {room} not found")));
        }
        Ok(())
    }

    async fn recent(&self, room: i64, size: i64, offset: i64) -> Result<Vec<pb::Message>, Status> {
        let rows = self
            .app
            .db
            .query(
                "SELECT id, user_id, content, created_at FROM (
                   SELECT CAST(id AS TEXT) AS id, user_id, content, created_at FROM messages_seq WHERE room_id = $1
                   UNION ALL
                   SELECT id, user_id, content, created_at FROM messages_rand WHERE room_id = $1) AS m
                 ORDER BY created_at DESC LIMIT $2 OFFSET $3",
                vec![Val::Int(room), Val::Int(size), Val::Int(offset)],
            )
            .await
            .map_err(db_status)?;
        Ok(rows
            .iter()
            .map(|r| pb::Message {
                id: match &r[0] {
                    Val::Text(t) => t.clone(),
                    v => v.json().to_string(),
                },
                room_id: room,
                user_id: r[1].int(),
                content: match &r[2] {
                    Val::Text(t) => t.clone(),
                    v => v.json().to_string(),
                },
                created_at: r[3].int(),
            })
            .collect())
    }
}

type MessageStream = Pin<Box<dyn Stream<Item = Result<pb::Message, Status>> + Send>>;

#[tonic::async_trait]
impl Chat for ChatService {
    async fn create_room(
        &self,
        req: Request<pb::CreateRoomRequest>,
    ) -> Result<Response<pb::Room>, Status> {
        self.timed("CreateRoom", async {
            let name = req.into_inner().name;
            let rows = self
                .app
                .db
                .execute(
                    "INSERT INTO rooms (name, created_at) VALUES ($1, $2) RETURNING id",
                    vec![Val::Text(name.clone()), Val::Int(now_ms())],
                )
                .await
                .map_err(db_status)?;
            Ok(pb::Room {
                id: rows[0][0].int(),
                name,
                messages: 0,
            })
        })
        .await
    }

    async fn list_rooms(
        &self,
        _req: Request<pb::ListRoomsRequest>,
    ) -> Result<Response<pb::ListRoomsResponse>, Status> {
        self.timed("ListRooms", async {
            let rows = self
                .app
                .db
                .query(
                    "SELECT r.id, r.name, (SELECT count(*) FROM messages_seq m WHERE m.room_id = r.id)
                          + (SELECT count(*) FROM messages_rand m WHERE m.room_id = r.id)
                     FROM rooms r ORDER BY r.id",
                    vec![],
                )
                .await
                .map_err(db_status)?;
            let rooms = rows
                .iter()
                .map(|r| pb::Room {
                    id: r[0].int(),
                    name: match &r[1] {
                        Val::Text(t) => t.clone(),
                        v => v.json().to_string(),
                    },
                    messages: r[2].int(),
                })
                .collect();
            Ok(pb::ListRoomsResponse { rooms })
        })
        .await
    }

    async fn post_message(
        &self,
        req: Request<pb::PostMessageRequest>,
    ) -> Result<Response<pb::Message>, Status> {
        self.timed("PostMessage", async {
            let m = req.into_inner();
            if m.content.is_empty() {
                return Err(Status::invalid_argument("content must not be empty"));
            }
            self.room_exists(m.room_id).await?;
            let now = now_ms();
            let (room, user, content) = (Val::Int(m.room_id), Val::Int(m.user_id), Val::Text(m.content.clone()));
            let id = match self.app.db.id_type {
                IdType::Sequential => {
                    let rows = self
                        .app
                        .db
                        .execute(
                            "INSERT INTO messages_seq (room_id, user_id, content, created_at) VALUES ($1, $2, $3, $4) RETURNING CAST(id AS TEXT)",
                            vec![room, user, content, Val::Int(now)],
                        )
                        .await
                        .map_err(db_status)?;
                    match &rows[0][0] {
                        Val::Text(t) => t.clone(),
                        v => v.json().to_string(),
                    }
                }
                IdType::Random => {
                    let id: String = (0..32).map(|_| fastrand::alphanumeric()).collect();
                    self.app
                        .db
                        .execute(
                            "INSERT INTO messages_rand (id, room_id, user_id, content, created_at) VALUES ($1, $2, $3, $4, $5)",
                            vec![Val::Text(id.clone()), room, user, content, Val::Int(now)],
                        )
                        .await
                        .map_err(db_status)?;
                    id
                }
            };
            // The same live feed as the HTTP route's, so SSE readers see gRPC posts and back.
            let json = serde_json::json!({ "id": id, "roomId": m.room_id, "userId": m.user_id, "content": m.content, "createdAt": now });
            self.app.events.chat(m.room_id, json.to_string());
            Ok(pb::Message { id, room_id: m.room_id, user_id: m.user_id, content: m.content, created_at: now })
        })
        .await
    }

    async fn list_messages(
        &self,
        req: Request<pb::ListMessagesRequest>,
    ) -> Result<Response<pb::ListMessagesResponse>, Status> {
        self.timed("ListMessages", async {
            let r = req.into_inner();
            let size = if r.size == 0 {
                20
            } else {
                i64::from(r.size).clamp(1, 100)
            };
            let offset = i64::from(r.page.max(0)) * size;
            let messages = self.recent(r.room_id, size, offset).await?;
            Ok(pb::ListMessagesResponse {
                room_id: r.room_id,
                messages,
            })
        })
        .await
    }

    type StreamMessagesStream = MessageStream;

    async fn stream_messages(
        &self,
        req: Request<pb::StreamMessagesRequest>,
    ) -> Result<Response<MessageStream>, Status> {
        let start = Instant::now();
        let r = req.into_inner();
        let opened = async {
            self.room_exists(r.room_id).await?;
            let recent = i64::from(r.recent).clamp(0, 100);
            let mut first = if recent > 0 {
                self.recent(r.room_id, recent, 0).await?
            } else {
                Vec::new()
            };
            first.reverse();
            Ok::<_, Status>(first)
        }
        .await;
        let first = match opened {
            Ok(f) => f,
            Err(s) => {
                self.app.grpc.observe(
                    "StreamMessages",
                    "SERVER_STREAMING",
                    s.code(),
                    start.elapsed().as_secs_f64(),
                );
                return Err(s);
            }
        };
        let room = r.room_id;
        let live = self
            .app
            .events
            .chat_live(room)
            .filter_map(move |json| async move {
                let v: serde_json::Value = serde_json::from_str(&json).ok()?;
                Some(pb::Message {
                    id: match &v["id"] {
                        serde_json::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    },
                    room_id: room,
                    user_id: v["userId"].as_i64().unwrap_or(0),
                    content: v["content"].as_str().unwrap_or_default().to_string(),
                    created_at: v["createdAt"].as_i64().unwrap_or(0),
                })
            });
        let done = StreamDone {
            metrics: self.app.grpc.clone(),
            start,
            sent: 0,
        };
        let stream = futures_util::stream::iter(first)
            .chain(live)
            .scan(done, |done, m| {
                done.sent += 1;
                std::future::ready(Some(Ok(m)))
            });
        Ok(Response::new(Box::pin(stream)))
    }
}

/// Records a server stream when it closes (the client went away or the server stopped).
struct StreamDone {
    metrics: Arc<GrpcMetrics>,
    start: Instant,
    sent: u64,
}

impl Drop for StreamDone {
    fn drop(&mut self) {
        self.metrics.observe(
            "StreamMessages",
            "SERVER_STREAMING",
            tonic::Code::Ok,
            self.start.elapsed().as_secs_f64(),
        );
        self.metrics
            .sent("StreamMessages", "SERVER_STREAMING", self.sent);
    }
}
