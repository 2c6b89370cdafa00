//! A WebSocket step: connect (on our own TCP/TLS stream, so connect, TLS and the upgrade
//! are timed by us), send text messages, wait for a message containing the expected
//! text, close. Time to first byte is the completed upgrade; the total runs to the
//! matching message, so `total − ttfb` is the message round trip.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::client::generate_key;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use volley_stats::ErrorKind;

use crate::client::{Exchange, check_headers, each_header, last_value};
use crate::context::WorkerContext;
use crate::dial::{ConnectTimes, dial, micros};
use crate::error::{Error, Repr};
use crate::failure::Failure;
use crate::h1::{self, NameCase, RequestWriter, Stream};
use crate::target::Target;

/// A finished exchange.
pub(crate) struct WsDone {
    pub(crate) exchange: Exchange,
    /// Messages received, the matching one included.
    pub(crate) messages: u64,
    /// The matching message.
    pub(crate) matched: String,
}

/// A WebSocket step as rendered for one iteration.
pub(crate) struct WsCall {
    /// The path on the target.
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
    /// Text messages sent once the socket is open.
    pub(crate) send: Vec<String>,
    /// The text the awaited message contains (any message without it).
    pub(crate) expect: Option<String>,
    pub(crate) timeout: Duration,
}

/// Runs one WebSocket exchange within the call's timeout; on failure, also how many
/// messages came.
///
/// A socket held open waiting is this future for as long as it waits, so it keeps only what
/// waiting needs: connecting, the upgrade and sending run in a box freed once the messages are
/// sent (the path, headers and messages go into it), and the call is taken apart into the
/// future's own fields (an `async fn` would keep each argument twice: as argument and local).
pub(crate) fn exchange<'a>(
    ctx: &'a Rc<WorkerContext>,
    call: WsCall,
) -> impl Future<Output = Result<WsDone, (Failure, u64)>> + 'a {
    let WsCall {
        path,
        headers,
        send,
        expect,
        timeout,
    } = call;
    let opening = Box::pin(open(ctx, path, headers, send));
    async move {
        let start = Instant::now();
        let mut messages = 0u64;
        // Waiting for the message is all the timeout covers: the close below has its own.
        let waiting = async {
            let (mut ws, times, upgraded) = opening.await?;
            loop {
                let Some(next) = ws.next().await else {
                    return Err(Failure::new(
                        ErrorKind::Reset,
                        "websocket closed before the expected message",
                    ));
                };
                let msg =
                    next.map_err(|e| Failure::new(ErrorKind::Reset, format!("websocket: {e}")))?;
                let text = match msg {
                    Message::Text(t) => t.as_str().to_string(),
                    Message::Binary(b) => String::from_utf8_lossy(&b).into_owned(),
                    Message::Close(_) => {
                        return Err(Failure::new(
                            ErrorKind::Reset,
                            "websocket closed by the server before the expected message",
                        ));
                    }
                    _ => continue,
                };
                messages += 1;
                if expect.as_ref().is_none_or(|e| text.contains(e.as_str())) {
                    return Ok((ws, times, upgraded, text, Instant::now()));
                }
            }
        };
        let (mut ws, times, upgraded, matched, end) =
            match tokio::time::timeout(timeout, waiting).await {
                Ok(Ok(got)) => got,
                Ok(Err(f)) => return Err((f, messages)),
                Err(_) => {
                    let what = expect.as_ref().map_or("a message".to_string(), |e| {
                        format!("a message containing `{e}`")
                    });
                    return Err((
                        Failure::new(
                            ErrorKind::Timeout,
                            format!("no {what} within {}s", timeout.as_secs_f64()),
                        ),
                        messages,
                    ));
                }
            };
        // A polite close, not waited on for long: the measurement is done. Boxed: inline, its
        // timer would size this future, and so the state of every socket held open.
        let _ = Box::pin(tokio::time::timeout(
            Duration::from_millis(200),
            ws.close(None),
        ))
        .await;
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
        Ok(WsDone {
            exchange,
            messages,
            matched,
        })
    }
}

/// Connects, upgrades and sends `send`: the socket, its set-up times and when the upgrade
/// completed (the step's time to first byte).
async fn open(
    ctx: &Rc<WorkerContext>,
    path: String,
    headers: Vec<(String, String)>,
    send: Vec<String>,
) -> Result<(WebSocketStream<IdleFree>, ConnectTimes, Instant), Failure> {
    let (mut ws, times) = upgrade(ctx, &path, &headers).await?;
    let upgraded = Instant::now();
    for m in send {
        ws.send(Message::text(m))
            .await
            .map_err(|e| Failure::new(ErrorKind::Reset, format!("websocket send: {e}")))?;
    }
    Ok((ws, times, upgraded))
}

/// tungstenite keeps its read buffer for the socket's life (128 KiB by default, zero-filled)
/// and reads at most that much per call. Here it is 64 bytes, and its reads are served by
/// [`IdleFree`], which reads the socket 4 KiB at a time: a held socket keeps 64 bytes, and a
/// long message still takes one system call per 4 KiB (its 64-byte reads are copies from that
/// buffer: ~6 µs more per 64 KB message than at 256, for 192 bytes less per socket).
/// (tungstenite reserves a whole frame before reading it, and that allocation stays with the
/// socket: one that received a large message keeps its size.) Frames are written as they are
/// sent (the flow sends few, and waits).
fn config() -> tokio_tungstenite::tungstenite::protocol::WebSocketConfig {
    tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .read_buffer_size(TUNGSTENITE_READ)
        .write_buffer_size(0)
}

/// What tungstenite asks for at a time.
const TUNGSTENITE_READ: usize = 64;

/// How much [`IdleFree`] reads from the socket at a time (the HTTP/1.1 reader's chunk).
const SOCKET_READ: usize = h1::READ_CHUNK;

/// A connection whose read buffer exists only while it holds bytes: allocated when the
/// socket has some ([`h1::Idle::Release`], as a held event stream reads), freed once they are
/// all handed on. A WebSocket VU waiting minutes for a message then holds no read buffer at all.
///
/// [`h1::Idle::Release`]: crate::h1::Idle::Release
pub(crate) struct IdleFree {
    stream: Stream,
    buf: Vec<u8>,
    /// How much of `buf` was handed on.
    pos: usize,
}

impl IdleFree {
    pub(crate) fn new(stream: Stream) -> Self {
        IdleFree {
            stream,
            buf: Vec::new(),
            pos: 0,
        }
    }
}

impl AsyncRead for IdleFree {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if out.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        if this.pos == this.buf.len() {
            if out.remaining() >= SOCKET_READ {
                return Pin::new(&mut this.stream).poll_read(cx, out);
            }
            // Drained, so empty and freed: read as a held event stream does, holding no
            // buffer through the wait.
            ready!(h1::poll_fill(
                cx,
                &mut this.stream,
                &mut this.buf,
                h1::Idle::Release
            ))?;
        }
        let n = out.remaining().min(this.buf.len() - this.pos);
        out.put_slice(&this.buf[this.pos..this.pos + n]);
        this.pos += n;
        if this.pos == this.buf.len() {
            this.buf = Vec::new();
            this.pos = 0;
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for IdleFree {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

/// Connects and upgrades the connection to a WebSocket (RFC 6455 §4.1).
///
/// The upgrade is our HTTP/1.1 exchange, not tungstenite's handshake: that one reads the
/// response into a 4 KiB buffer which then becomes the socket's read buffer for good,
/// whatever the configuration says. It checks what tungstenite's client checked — status
/// 101, `Upgrade`, `Connection`, the accept key, the subprotocol — and tungstenite frames the
/// messages from then on, starting with any bytes that came after the head.
async fn upgrade(
    ctx: &Rc<WorkerContext>,
    path: &str,
    headers: &[(String, String)],
) -> Result<(WebSocketStream<IdleFree>, ConnectTimes), Failure> {
    // A scenario may set the key itself (a replayed capture); the answer must then match it,
    // as tungstenite's handshake derived it from the header as sent.
    let key = last_value(headers, "sec-websocket-key").map_or_else(generate_key, str::to_string);
    let request = upgrade_request(&ctx.target, path, &key, headers)
        .map_err(|e| Failure::new(ErrorKind::Protocol, format!("websocket request: {e}")))?;
    let (mut stream, times) = dial(&ctx.target, ctx.stream_tls.as_ref())
        .await
        .map_err(Failure::dial)?;
    let upgrading = |f: Failure| Failure::new(f.kind, format!("websocket upgrade: {}", f.message));
    stream
        .write_all(&request)
        .await
        .map_err(|e| upgrading(Failure::io("write", &e)))?;
    let mut buf = Vec::new();
    let mut got = Vec::new();
    let head = h1::read_head(&mut stream, &mut buf, Some(&mut got))
        .await
        .map_err(|e| upgrading(Failure::h1(e)))?;
    if head.status != 101 {
        return Err(Failure::new(
            ErrorKind::Status,
            format!("websocket upgrade refused: HTTP {}", head.status),
        ));
    }
    let answered = |name: &str| {
        got.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
    };
    let refuse = |why: String| {
        Err(Failure::new(
            ErrorKind::Protocol,
            format!("websocket upgrade: {why}"),
        ))
    };
    if !answered("upgrade").is_some_and(|v| v.eq_ignore_ascii_case("websocket")) {
        return refuse("HTTP 101 without `Upgrade: websocket`".into());
    }
    if !answered("connection").is_some_and(|v| {
        v.split(',')
            .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
    }) {
        return refuse("HTTP 101 without `Connection: Upgrade`".into());
    }
    if answered("sec-websocket-accept") != Some(derive_accept_key(key.as_bytes()).as_str()) {
        return refuse("the server's Sec-WebSocket-Accept does not answer the key sent".into());
    }
    let offered: Vec<&str> =
        last_value(headers, "sec-websocket-protocol").map_or_else(Vec::new, |v| {
            v.split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .collect()
        });
    match answered("sec-websocket-protocol") {
        Some(p) if !offered.contains(&p) => {
            return refuse(format!(
                "the server chose subprotocol `{p}`, which was not offered"
            ));
        }
        None if !offered.is_empty() => {
            return refuse(format!(
                "the server chose none of the subprotocols offered ({})",
                offered.join(", ")
            ));
        }
        _ => {}
    }
    // Only the bytes after the head go on: tungstenite keeps what it is given as its buffer,
    // and `buf` has room for a 4 KiB read.
    let ws = WebSocketStream::from_partially_read(
        IdleFree::new(stream),
        buf.as_slice().to_vec(),
        Role::Client,
        Some(config()),
    )
    .await;
    Ok((ws, times))
}

/// The upgrade request. Its own headers are written with the names tungstenite gives them
/// (some servers match these case-sensitively), a scenario's header of the same name
/// replacing the value; the scenario's other headers follow as written, each name once with
/// the value it was given last.
fn upgrade_request(
    target: &Target,
    path: &str,
    key: &str,
    headers: &[(String, String)],
) -> Result<Vec<u8>, Error> {
    check_headers(headers)?;
    let path: http::uri::PathAndQuery = path.parse().map_err(|_| Repr::Path(path.to_string()))?;
    let ours = [
        ("Host", target.authority.as_str()),
        ("Connection", "Upgrade"),
        ("Upgrade", "websocket"),
        ("Sec-WebSocket-Version", "13"),
        ("Sec-WebSocket-Key", key),
    ];
    let mut w = RequestWriter::new("GET", path.as_str(), NameCase::AsGiven, 0);
    each_header(&ours, headers, |name, value| {
        w.header(name, value.as_bytes())
    });
    Ok(w.finish(None, &[]))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    /// Reads `stream` as tungstenite does, a few bytes at a time, and checks after every read
    /// that the buffer exists only while it holds bytes not yet handed on.
    async fn read_all(mut r: IdleFree) -> Vec<u8> {
        let mut got = Vec::new();
        let mut piece = [0u8; TUNGSTENITE_READ];
        loop {
            let n = r.read(&mut piece).await.unwrap();
            if n == 0 {
                return got;
            }
            assert!(r.buf.len() <= SOCKET_READ);
            assert!(
                r.pos > 0 || r.buf.capacity() == 0,
                "a drained buffer is freed"
            );
            got.extend_from_slice(&piece[..n]);
        }
    }

    /// 100 KB written in uneven pieces with pauses between them.
    fn data() -> Vec<u8> {
        (0..100_000u32).map(|i| (i % 251) as u8).collect()
    }

    async fn write_slowly<S: AsyncWrite + Unpin>(mut s: S) {
        for piece in data().chunks(7_001) {
            s.write_all(piece).await.unwrap();
            s.flush().await.unwrap();
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        s.shutdown().await.unwrap();
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn small_reads_over_tcp_get_every_byte_in_order() {
        runtime().block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server =
                tokio::spawn(async move { write_slowly(listener.accept().await.unwrap().0).await });
            let tcp = TcpStream::connect(addr).await.unwrap();
            assert_eq!(read_all(IdleFree::new(Stream::Plain(tcp))).await, data());
            server.await.unwrap();
        });
    }

    #[test]
    fn the_upgrade_request_names_headers_as_tungstenite_does_and_lets_the_scenario_replace_values()
    {
        let target = Target::resolve("http://127.0.0.1:9/base").unwrap();
        let headers = [
            ("x-trace".to_string(), "a".to_string()),
            ("UPGRADE".to_string(), "WebSocket".to_string()),
            ("Sec-WebSocket-Protocol".to_string(), "chat".to_string()),
            ("X-Trace".to_string(), "b".to_string()),
        ];
        let bytes = upgrade_request(&target, "/base/ws?room=1", "a2V5", &headers).unwrap();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "GET /base/ws?room=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\nConnection: Upgrade\r\nUpgrade: WebSocket\r\n\
             Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: a2V5\r\nx-trace: b\r\nSec-WebSocket-Protocol: chat\r\n\r\n"
        );
        let bad = [("X-Bad".to_string(), "a\nb".to_string())];
        assert!(
            upgrade_request(&target, "/ws", "a2V5", &bad).is_err(),
            "a line break in a value is refused"
        );
        assert!(
            upgrade_request(&target, "/w s", "a2V5", &[]).is_err(),
            "a space in the path is refused"
        );
    }

    /// Over TLS there is no readiness to wait on without a buffer: one is lent to each read
    /// and dropped if nothing came.
    #[test]
    fn small_reads_over_tls_get_every_byte_in_order() {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server_config = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.cert.der().clone()], key)
            .unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert.cert.der().clone()).unwrap();
        let client_config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        runtime().block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server_config));
            let server = tokio::spawn(async move {
                let tls = acceptor
                    .accept(listener.accept().await.unwrap().0)
                    .await
                    .unwrap();
                write_slowly(tls).await;
            });
            let tcp = TcpStream::connect(addr).await.unwrap();
            let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
            let tls = tokio_rustls::TlsConnector::from(Arc::new(client_config))
                .connect(name, tcp)
                .await
                .unwrap();
            assert_eq!(
                read_all(IdleFree::new(Stream::Tls(Box::new(tls)))).await,
                data()
            );
            server.await.unwrap();
        });
    }
}
