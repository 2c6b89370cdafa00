//! A WebSocket step: connect (on our own TCP/TLS stream, so connect, TLS and the upgrade
//! are timed by us), send text messages, wait for a message containing the expected
//! text, close. Time to first byte is the completed upgrade; the total runs to the
//! matching message, so `total − ttfb` is the message round trip.

use std::rc::Rc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use volley_stats::ErrorKind;

use crate::client::Exchange;
use crate::failure::Failure;
use crate::context::WorkerContext;
use crate::dial::{dial, micros};

/// A finished exchange.
pub(crate) struct WsDone {
    pub(crate) exchange: Exchange,
    /// Messages received, the matching one included.
    pub(crate) messages: u64,
    /// The matching message.
    pub(crate) matched: String,
}

/// Runs one WebSocket exchange within `timeout`; on failure, also how many messages came.
pub(crate) async fn exchange(
    ctx: &Rc<WorkerContext>,
    path: &str,
    headers: &[(String, String)],
    send: &[String],
    expect: Option<&str>,
    timeout: Duration,
) -> Result<WsDone, (Failure, u64)> {
    let start = Instant::now();
    let mut messages = 0u64;
    let work = run(ctx, path, headers, send, expect, start, &mut messages);
    match tokio::time::timeout(timeout, work).await {
        Ok(Ok(done)) => Ok(done),
        Ok(Err(f)) => Err((f, messages)),
        Err(_) => {
            let what = expect.map_or("a message".to_string(), |e| format!("a message containing `{e}`"));
            Err((Failure::new(ErrorKind::Timeout, format!("no {what} within {}s", timeout.as_secs_f64())), messages))
        }
    }
}

async fn run(
    ctx: &Rc<WorkerContext>,
    path: &str,
    headers: &[(String, String)],
    send: &[String],
    expect: Option<&str>,
    start: Instant,
    messages: &mut u64,
) -> Result<WsDone, Failure> {
    let target = &ctx.target;
    let url = target.url_of(path, true);
    let mut request = url.as_str().into_client_request().map_err(|e| Failure::new(ErrorKind::Protocol, format!("websocket request: {e}")))?;
    for (n, v) in headers {
        let name = http::HeaderName::from_bytes(n.as_bytes()).map_err(|_| Failure::new(ErrorKind::Protocol, format!("bad header name `{n}`")))?;
        let value = http::HeaderValue::from_str(v).map_err(|_| Failure::new(ErrorKind::Protocol, format!("bad value for header `{n}`")))?;
        request.headers_mut().insert(name, value);
    }
    // The connection and the upgrade in a box of their own, freed once done: inline, their
    // state would make this future the largest of any step's, and every scenario VU's future
    // is as large as its largest step's (the socket held afterwards is a fraction of it).
    let (mut ws, times) = Box::pin(async {
        let (stream, times) = dial(target, ctx.stream_tls.as_ref()).await.map_err(Failure::dial)?;
        let (ws, _response) = tokio_tungstenite::client_async_with_config(request, stream, Some(config())).await.map_err(|e| upgrade_failure(&e))?;
        Ok::<_, Failure>((ws, times))
    })
    .await?;
    let upgraded = Instant::now();
    for m in send {
        ws.send(Message::text(m.as_str())).await.map_err(|e| Failure::new(ErrorKind::Reset, format!("websocket send: {e}")))?;
    }
    let matched = loop {
        let Some(next) = ws.next().await else {
            return Err(Failure::new(ErrorKind::Reset, "websocket closed before the expected message"));
        };
        let msg = next.map_err(|e| Failure::new(ErrorKind::Reset, format!("websocket: {e}")))?;
        let text = match msg {
            Message::Text(t) => t.as_str().to_string(),
            Message::Binary(b) => String::from_utf8_lossy(&b).into_owned(),
            Message::Close(_) => return Err(Failure::new(ErrorKind::Reset, "websocket closed by the server before the expected message")),
            _ => continue,
        };
        *messages += 1;
        if expect.is_none_or(|e| text.contains(e)) {
            break text;
        }
    };
    let end = Instant::now();
    // A polite close, not waited on for long: the measurement is done.
    let _ = tokio::time::timeout(Duration::from_millis(200), ws.close(None)).await;
    let exchange = Exchange {
        status: 101,
        ttfb_us: micros(upgraded - start),
        total_us: micros(end - start),
        connect_us: times.tcp_us + times.tls_us,
        tls_us: times.tls_us,
        queued_us: 0,
        bytes: matched.len() as u64,
        reconnected: false,
        wait_us: 0,
    };
    Ok(WsDone { exchange, messages: *messages, matched })
}

/// tungstenite reads through a buffer it zero-fills to its full size (128 KiB by default)
/// and keeps for the socket's life: a VU holding a socket open would cost that much. 4 KiB
/// (the HTTP/1.1 reader's chunk) is read at a time instead; longer messages still grow it
/// as they need. Frames are written as they are sent (the flow sends few, and waits).
fn config() -> tokio_tungstenite::tungstenite::protocol::WebSocketConfig {
    tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default().read_buffer_size(4 * 1024).write_buffer_size(0)
}

fn upgrade_failure(e: &tokio_tungstenite::tungstenite::Error) -> Failure {
    use tokio_tungstenite::tungstenite::Error as E;
    match e {
        E::Http(resp) => Failure::new(ErrorKind::Status, format!("websocket upgrade refused: HTTP {}", resp.status().as_u16())),
        E::Io(io) => Failure::io("websocket upgrade", io),
        other => Failure::new(ErrorKind::Protocol, format!("websocket upgrade: {other}")),
    }
}
