//! The driver over a real socket, against the `h2` crate's server: a VU that gives up on a
//! stream (its future dropped, as a timeout drops it) resets it with CANCEL, and the
//! connection carries the next request.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use tokio::net::{TcpListener, TcpStream};

use super::conn::H2Head;
use super::driver;
use crate::h1::Stream;

fn head(path: &str) -> H2Head {
    H2Head::new(
        [
            (":method", "GET"),
            (":scheme", "http"),
            (":authority", "127.0.0.1"),
            (":path", path),
        ]
        .iter()
        .map(|(n, v)| (n.as_bytes().into(), v.as_bytes().into()))
        .collect(),
    )
}

#[test]
fn a_dropped_stream_is_reset_and_the_connection_carries_on() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    let resets: Rc<RefCell<Vec<String>>> = Rc::default();
    let seen = resets.clone();
    local.block_on(&rt, async move {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::task::spawn_local(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let mut conn = h2::server::handshake(tcp).await.unwrap();
            while let Some(Ok((req, mut respond))) = conn.accept().await {
                let seen = seen.clone();
                if req.uri().path() == "/slow" {
                    tokio::task::spawn_local(async move {
                        let reason = std::future::poll_fn(|cx| respond.poll_reset(cx)).await;
                        seen.borrow_mut().push(format!("{reason:?}"));
                    });
                } else {
                    let response = http::Response::builder().status(200).body(()).unwrap();
                    let mut body = respond.send_response(response, false).unwrap();
                    body.send_data(Bytes::from_static(b"ok"), true).unwrap();
                }
            }
        });
        let tcp = TcpStream::connect(addr).await.unwrap();
        let conn = driver::start(Stream::Plain(tcp));
        let none = Bytes::new();
        let slow = head("/slow");
        let gave_up = tokio::time::timeout(
            Duration::from_millis(100),
            driver::exchange(&conn, &slow, &none, None),
        )
        .await;
        assert!(gave_up.is_err(), "the slow stream never answers");
        let fast = head("/fast");
        let done = driver::exchange(&conn, &fast, &none, None).await.unwrap();
        assert_eq!((done.status, done.bytes), (200, 2));
        assert!(!conn.is_closed());
        for _ in 0..100 {
            if !resets.borrow().is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(*resets.borrow(), vec!["Ok(CANCEL)".to_string()]);
    });
}
