//! gRPC calls for `grpc:` steps: tonic's client over HTTP/2 connections the engine dials
//! itself (so TCP and TLS are set up — and certificates trusted — as for every other
//! connection: rustls with ring, ALPN h2), messages built at run time from the step's JSON
//! with prost-reflect ([`codec`]), descriptors from the step's .proto files or from the
//! server's reflection service when the run starts ([`reflect`]).
//!
//! Connections: without `connections` (on the step or the run), each VU has its own (as its
//! HTTP connection); with `connections: N`, the run's N HTTP/2 connections are split over the worker threads
//! (at least one each) and the VUs of a thread share its connections, many calls in flight
//! on each — the way gRPC clients are meant to be used, and how ghz loads a server.

mod codec;
pub(crate) mod reflect;

use std::cell::RefCell;
use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::Uri;
use http::uri::PathAndQuery;
use hyper_util::rt::TokioIo;
use prost_reflect::{DynamicMessage, MethodDescriptor, SerializeOptions};
use rustls::ClientConfig;
use tonic::transport::{Channel, Endpoint};
use volley_scenario::Segment;
use volley_scenario::scenario::{GrpcStep, Node};
use volley_stats::ErrorKind;

use crate::client::Exchange;
use crate::dial::{dial, micros};
use crate::failure::Failure;
use crate::target::Target;

/// A worker thread's gRPC connections.
pub(crate) struct Channels {
    target: Target,
    /// The engine's TLS trust, offering only h2.
    tls: Option<Arc<ClientConfig>>,
    /// Shared connections on this thread (`None`: one per VU).
    shared: Option<u64>,
    open: RefCell<HashMap<u64, Channel>>,
}

impl Channels {
    /// The connections of worker `worker` of `workers` for the steps in `nodes`: as many as
    /// the steps ask for (`connections:`), else the run's `--connections`, of which this
    /// segment has `segment.share(n)`.
    pub(crate) fn new(
        target: &Target,
        tls: &Option<Arc<ClientConfig>>,
        nodes: &[Node],
        run_connections: Option<u64>,
        segment: Segment,
        worker: u64,
        workers: u64,
    ) -> Self {
        let tls = tls.as_ref().map(|c| {
            let mut c = (**c).clone();
            c.alpn_protocols = vec![b"h2".to_vec()];
            Arc::new(c)
        });
        let mut wanted = None;
        visit(nodes, &mut |s| wanted = wanted.max(s.connections));
        let wanted = wanted.or(run_connections).map(|n| segment.share(n).max(1));
        let workers = workers.max(1);
        let shared = wanted.map(|n| (n / workers + u64::from(worker < n % workers)).max(1));
        Channels {
            target: target.clone(),
            tls,
            shared,
            open: RefCell::new(HashMap::new()),
        }
    }

    /// The connection VU `vu` calls on (opened lazily, on first use, by tonic).
    pub(crate) fn channel(&self, vu: u64) -> Channel {
        let slot = self.shared.map_or(vu, |n| vu % n);
        self.open
            .borrow_mut()
            .entry(slot)
            .or_insert_with(|| connect_lazy(&self.target, self.tls.clone()))
            .clone()
    }
}

/// Every gRPC step in `nodes`, groups and branches included.
pub(crate) fn visit<'a>(nodes: &'a [Node], f: &mut dyn FnMut(&'a GrpcStep)) {
    for n in nodes {
        match n {
            Node::Grpc(s) => f(s),
            Node::Group(g) => visit(&g.steps, f),
            Node::OneOf(bs) => bs.iter().for_each(|b| visit(&b.steps, f)),
            _ => {}
        }
    }
}

/// A channel whose connection is dialled by the engine (TCP, then TLS with ALPN h2 on an
/// https target) and speaks HTTP/2 over it.
pub(crate) fn connect_lazy(target: &Target, tls: Option<Arc<ClientConfig>>) -> Channel {
    // tonic is given an http:// URI (the engine does TLS); requests carry the real origin.
    let endpoint = Endpoint::from_shared(format!("http://{}", target.authority))
        .expect("an authority is a valid URI");
    let scheme = if target.tls { "https" } else { "http" };
    let endpoint = match Uri::from_str(&format!("{scheme}://{}", target.authority)) {
        Ok(origin) => endpoint.origin(origin),
        Err(_) => endpoint,
    };
    let target = target.clone();
    let connector = tower::service_fn(move |_: Uri| {
        let (target, tls) = (target.clone(), tls.clone());
        async move {
            dial(&target, tls.as_ref())
                .await
                .map(|(stream, _)| TokioIo::new(stream))
        }
    });
    endpoint.connect_with_connector_lazy(connector)
}

/// How the response is shown to checks, extraction and traces: proto3's JSON mapping with
/// every field present (defaults too) and 64-bit integers as numbers, so `$.id` is `5`.
fn json_options() -> SerializeOptions {
    SerializeOptions::new()
        .skip_default_fields(false)
        .stringify_64_bit_integers(false)
}

/// The request message from its rendered JSON; a field it does not have, or a value of the
/// wrong type, is named.
pub(crate) fn request(
    method: &MethodDescriptor,
    json: &serde_json::Value,
) -> Result<DynamicMessage, String> {
    DynamicMessage::deserialize(method.input(), json).map_err(|e| {
        format!(
            "the request is no `{}` message: {e}",
            method.input().full_name()
        )
    })
}

/// A finished call.
pub(crate) struct Called {
    pub(crate) exchange: Exchange,
    /// The response as JSON text (a stream's messages as an array); empty unless kept.
    pub(crate) body: Vec<u8>,
    /// The response metadata (ASCII values).
    pub(crate) headers: Vec<(String, String)>,
    /// Messages received.
    pub(crate) messages: u64,
}

/// What a call is sent with.
pub(crate) struct CallSpec<'a> {
    pub(crate) method: &'a MethodDescriptor,
    pub(crate) message: DynamicMessage,
    pub(crate) metadata: &'a [(String, String)],
    /// Server streaming: stop after this many messages.
    pub(crate) want: Option<u64>,
    pub(crate) timeout: Duration,
    /// Keep the response for checks, extraction or a trace.
    pub(crate) keep: bool,
}

/// Headers the gRPC protocol itself sets; a scenario's headers never override them.
fn reserved(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    matches!(
        n.as_str(),
        "content-type"
            | "te"
            | "host"
            | "connection"
            | "transfer-encoding"
            | "content-length"
            | "accept-encoding"
    ) || n.starts_with("grpc-")
        || n.starts_with(':')
}

/// The failure of a call that ended with a status other than OK: the code is the kind.
fn status_failure(s: &tonic::Status) -> Failure {
    let kind = ErrorKind::grpc(s.code() as i32).unwrap_or(ErrorKind::Protocol);
    let message = if s.message().is_empty() {
        format!("{:?}", s.code())
    } else {
        format!("{:?}: {}", s.code(), s.message())
    };
    Failure::new(kind, message)
}

/// Calls the method; unary: one message, time to first byte at the response headers;
/// server streaming: time to first byte at the first message, `want` messages (or at least
/// one) before the stream ends or `timeout` passes. On failure, how many messages came.
pub(crate) async fn call(
    channel: Channel,
    spec: CallSpec<'_>,
    on_message: &mut dyn FnMut(),
) -> Result<Called, (Failure, u64)> {
    let start = Instant::now();
    let deadline = tokio::time::Instant::from_std(start + spec.timeout);
    let streaming = spec.method.is_server_streaming();
    let path = format!(
        "/{}/{}",
        spec.method.parent_service().full_name(),
        spec.method.name()
    );
    let path = PathAndQuery::from_str(&path).map_err(|e| {
        (
            Failure::new(ErrorKind::Protocol, format!("bad method path {path}: {e}")),
            0,
        )
    })?;
    let mut request = tonic::Request::new(spec.message);
    for (k, v) in spec.metadata {
        if reserved(k) {
            continue;
        }
        let key = tonic::metadata::MetadataKey::from_str(&k.to_ascii_lowercase());
        let value = tonic::metadata::MetadataValue::try_from(v.as_str());
        match (key, value) {
            (Ok(key), Ok(value)) => {
                request.metadata_mut().insert(key, value);
            }
            _ => {
                return Err((
                    Failure::new(
                        ErrorKind::Protocol,
                        format!(
                            "metadata `{k}` cannot be sent (names are lower-case ASCII, values printable ASCII)"
                        ),
                    ),
                    0,
                ));
            }
        }
    }
    if !streaming {
        request.set_timeout(spec.timeout);
    }
    let mut grpc = tonic::client::Grpc::new(channel);
    let timeout = || {
        Failure::new(
            ErrorKind::Timeout,
            format!("no answer within {}s", spec.timeout.as_secs_f64()),
        )
    };
    let ready = tokio::time::timeout_at(deadline, grpc.ready()).await;
    match ready {
        Err(_) => return Err((timeout(), 0)),
        Ok(Err(e)) => {
            return Err((
                Failure::new(ErrorKind::Connect, format!("connection: {e}")),
                0,
            ));
        }
        Ok(Ok(())) => {}
    }
    let codec = codec::DynamicCodec::new(spec.method.output());
    let response = match tokio::time::timeout_at(
        deadline,
        grpc.server_streaming(request, path, codec),
    )
    .await
    {
        Err(_) => return Err((timeout(), 0)),
        Ok(Err(status)) => return Err((status_failure(&status), 0)),
        Ok(Ok(r)) => r,
    };
    let head = Instant::now();
    let (meta, mut stream, _) = response.into_parts();
    let headers: Vec<(String, String)> = meta
        .into_headers()
        .iter()
        .filter_map(|(k, v)| {
            v.to_str()
                .ok()
                .map(|v| (k.as_str().to_string(), v.to_string()))
        })
        .collect();
    let (mut count, mut bytes, mut first) = (0u64, 0u64, None::<Instant>);
    let mut kept = Vec::new();
    let need = if streaming { spec.want.unwrap_or(1) } else { 1 };
    let closed_by = loop {
        let next = tokio::select! {
            m = stream.message() => m,
            _ = tokio::time::sleep_until(deadline) => break "the step's timeout",
        };
        match next {
            Ok(Some(m)) => {
                count += 1;
                first.get_or_insert_with(Instant::now);
                bytes += prost::Message::encoded_len(&m) as u64;
                if streaming {
                    on_message();
                }
                if spec.keep {
                    kept.push(
                        m.serialize_with_options(serde_json::value::Serializer, &json_options())
                            .unwrap_or(serde_json::Value::Null),
                    );
                }
                if streaming && spec.want.is_some_and(|w| count >= w) {
                    break "enough messages";
                }
            }
            Ok(None) => break "the end of the stream",
            Err(status) => return Err((status_failure(&status), count)),
        }
    };
    let end = Instant::now();
    if count < need {
        return Err(match (streaming, count) {
            (_, 0) if closed_by == "the step's timeout" => (timeout(), 0),
            (false, _) => (
                Failure::new(
                    ErrorKind::Protocol,
                    "the call ended OK without a response message",
                ),
                0,
            ),
            (true, n) => (
                Failure::new(
                    ErrorKind::Check,
                    format!("{n} of {need} messages before {closed_by}"),
                ),
                n,
            ),
        });
    }
    if !streaming && closed_by == "the step's timeout" {
        // The message came, the status did not.
        return Err((timeout(), count));
    }
    let body = if !spec.keep {
        Vec::new()
    } else if streaming {
        serde_json::to_vec(&kept).unwrap_or_default()
    } else {
        serde_json::to_vec(&kept[0]).unwrap_or_default()
    };
    let ttfb = if streaming {
        first.unwrap_or(end)
    } else {
        head
    };
    let exchange = Exchange {
        status: 200,
        ttfb_us: micros(ttfb - start),
        total_us: micros(end - start),
        connect_us: 0,
        tls_us: 0,
        queued_us: 0,
        bytes,
        reconnected: false,
        // A stream on a tonic channel: the wait for it is tonic's own, not measured apart.
        wait_us: 0,
    };
    Ok(Called {
        exchange,
        body,
        headers,
        messages: count,
    })
}

/// Gives every `grpc:` step without a .proto file its method descriptor, asked from the
/// server by reflection (once per service), and checks its request message against it, as
/// the scenario's loader does for steps with a .proto file. Runs before any VU starts.
pub(crate) fn resolve(
    nodes: &[Node],
    names: &[volley_scenario::StepInfo],
    target: &Target,
    tls: &Option<Arc<ClientConfig>>,
    timeout: Duration,
) -> Result<(), crate::Error> {
    let mut pending: Vec<&GrpcStep> = Vec::new();
    visit(nodes, &mut |s| {
        if s.schema.get().is_none() {
            pending.push(s);
        }
    });
    if pending.is_empty() {
        return Ok(());
    }
    let mut services: Vec<String> = pending.iter().map(|s| s.service.clone()).collect();
    services.sort();
    services.dedup();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| crate::error::Repr::Start {
            what: "a runtime",
            error,
        })?;
    let tls = tls.as_ref().map(|c| {
        let mut c = (**c).clone();
        c.alpn_protocols = vec![b"h2".to_vec()];
        Arc::new(c)
    });
    let pool = rt.block_on(async {
        let channel = connect_lazy(target, tls);
        match tokio::time::timeout(timeout, reflect::services(&channel, &services)).await {
            Ok(r) => r,
            Err(_) => Err(format!(
                "the server did not answer the reflection request within {}s",
                timeout.as_secs_f64()
            )),
        }
    });
    let step_name = |s: &GrpcStep| {
        names
            .get(s.call.id)
            .map_or_else(|| s.full_method(), |i| i.name.clone())
    };
    let pool = pool.map_err(|e| {
        crate::error::Repr::Grpc(format!("gRPC step `{}`: {e}", step_name(pending[0])))
    })?;
    let mut problems = Vec::new();
    for s in pending {
        match volley_scenario::grpc::find_method(
            &pool,
            &s.service,
            &s.method,
            "the server (by reflection)",
        ) {
            Ok(m) => {
                for p in volley_scenario::grpc::check_message(&m.input(), &s.message) {
                    problems.push(format!("gRPC step `{}`: `message`: {p}", step_name(s)));
                }
                if s.messages.is_some() && !m.is_server_streaming() {
                    problems.push(format!("gRPC step `{}`: `messages` counts a server stream's messages; `{}` is unary (leave `messages` out)", step_name(s), s.full_method()));
                }
                let _ = s.schema.set(m);
            }
            Err(e) => problems.push(format!("gRPC step `{}`: {e}", step_name(s))),
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(crate::error::Repr::Grpc(problems.join("\n")).into())
    }
}
