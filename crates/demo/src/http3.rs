//! The demo target over HTTP/3 (`volley target serve --http3 ADDR`, issue 57 §3): the same
//! router behind an `h3` server on a quinn endpoint (UDP), with a self-signed certificate
//! for `localhost`, 127.0.0.1 and ::1 made at start and written as PEM where a client can
//! trust it (`volley run --http3 --cacert FILE`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use bytes::{Buf, Bytes, BytesMut};
use http_body_util::BodyExt;
use tower::ServiceExt;

use crate::Error;
use crate::error::Repr;

/// Request bodies larger than this are refused (413): the demo's HTTP/1.1 and HTTP/2 limits
/// are axum's, 2 MB.
const MAX_BODY: usize = 2 * 1024 * 1024;

/// The HTTP/3 side of a running demo target.
pub struct Http3 {
    /// Its UDP address.
    pub addr: SocketAddr,
    /// The PEM certificate it presents (self-signed; pass it as `--cacert`).
    pub cert: PathBuf,
    endpoint: quinn::Endpoint,
    task: tokio::task::JoinHandle<()>,
}

impl Http3 {
    /// Stops accepting, closes its connections and waits for the endpoint to go idle.
    pub(crate) async fn stop(self) {
        self.endpoint
            .close(quinn::VarInt::from_u32(0x100), b"stopping");
        self.task.abort();
        self.endpoint.wait_idle().await;
    }
}

/// Serves `router` over HTTP/3 on UDP `addr` (port 0 picks a free one), the certificate
/// written to `cert` (PEM).
pub(crate) async fn serve(addr: SocketAddr, cert: &Path, router: Router) -> Result<Http3, Error> {
    let tls_error = |e: String| Repr::Http3(format!("the TLS configuration: {e}"));
    let made = rcgen::generate_simple_self_signed(vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ])
    .map_err(|e| tls_error(e.to_string()))?;
    std::fs::write(cert, made.cert.pem()).map_err(|e| {
        Repr::Http3(format!(
            "writing the certificate to {}: {e} (give another file with --http3-cert)",
            cert.display()
        ))
    })?;
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(made.signing_key.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| tls_error(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(vec![made.cert.der().clone()], key)
        .map_err(|e| tls_error(e.to_string()))?;
    config.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(config)
        .map_err(|e| tls_error(e.to_string()))?;
    let server = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let endpoint = quinn::Endpoint::server(server, addr)
        .map_err(|e| Repr::Http3(format!("binding UDP {addr}: {e}")))?;
    let addr = endpoint
        .local_addr()
        .map_err(|e| Repr::Http3(format!("the UDP socket's address: {e}")))?;
    let accepting = endpoint.clone();
    let task = tokio::spawn(async move {
        while let Some(incoming) = accepting.accept().await {
            tokio::spawn(connection(incoming, router.clone()));
        }
    });
    Ok(Http3 {
        addr,
        cert: cert.to_path_buf(),
        endpoint,
        task,
    })
}

/// One QUIC connection: its requests, each on a task of its own.
async fn connection(incoming: quinn::Incoming, router: Router) {
    let Ok(conn) = incoming.await else { return };
    let Ok(mut h3) = h3::server::Connection::<_, Bytes>::new(h3_quinn::Connection::new(conn)).await
    else {
        return;
    };
    while let Ok(Some(resolver)) = h3.accept().await {
        let router = router.clone();
        tokio::spawn(async move {
            if let Ok((req, stream)) = resolver.resolve_request().await {
                let _ = request(router, req, stream).await;
            }
        });
    }
}

type Stream = h3::server::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>;

/// One request: its body read whole, the router's answer sent back head, data, trailers.
async fn request(
    router: Router,
    req: http::Request<()>,
    mut stream: Stream,
) -> Result<(), h3::error::StreamError> {
    let mut body = BytesMut::new();
    while let Some(mut chunk) = stream.recv_data().await? {
        if body.len() + chunk.remaining() > MAX_BODY {
            let response = http::Response::builder()
                .status(http::StatusCode::PAYLOAD_TOO_LARGE)
                .body(())
                .expect("a valid response head");
            stream.send_response(response).await?;
            return stream.finish().await;
        }
        while chunk.has_remaining() {
            let part = chunk.chunk();
            body.extend_from_slice(part);
            let n = part.len();
            chunk.advance(n);
        }
    }
    let (parts, ()) = req.into_parts();
    let req = http::Request::from_parts(parts, Body::from(body.freeze()));
    let response = match router.oneshot(req).await {
        Ok(r) => r,
        Err(never) => match never {},
    };
    let (parts, mut body) = response.into_parts();
    stream
        .send_response(http::Response::from_parts(parts, ()))
        .await?;
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            stream.stop_stream(h3::error::Code::H3_INTERNAL_ERROR);
            return Ok(());
        };
        match frame.into_data() {
            Ok(data) => {
                if !data.is_empty() {
                    stream.send_data(data).await?;
                }
            }
            Err(frame) => {
                if let Ok(trailers) = frame.into_trailers() {
                    stream.send_trailers(trailers).await?;
                }
            }
        }
    }
    stream.finish().await
}
