//! The dashboard's server over real loopback sockets: extra routes (the `/metrics` hook)
//! are mounted behind the same token rule, a static page is served, and an open dashboard
//! is refused outside loopback.

use std::io::{Read, Write};
use std::net::TcpStream;

use axum::routing::get;
use volley_live::{Access, Dashboard, Kind, Router};

fn get_path(addr: std::net::SocketAddr, path: &str, auth: Option<&str>) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    let auth = auth
        .map(|a| format!("authorization: Bearer {a}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n{auth}\r\n"
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    let status = resp
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (
        status,
        resp.split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default(),
    )
}

#[test]
fn extra_routes_are_served_behind_the_token() {
    let extra = Router::new().route("/metrics", get(|| async { "volley_requests_total 7\n" }));
    let d = Dashboard::start(
        "127.0.0.1:0".parse().unwrap(),
        Access::Token("s3cret".into()),
        extra,
    )
    .unwrap();
    assert!(d.url().ends_with("/?token=s3cret"), "{}", d.url());
    assert_eq!(get_path(d.addr(), "/metrics", None).0, 403);
    assert_eq!(get_path(d.addr(), "/metrics", Some("wrong")).0, 403);
    assert_eq!(
        get_path(d.addr(), "/metrics", Some("s3cret")),
        (200, "volley_requests_total 7\n".to_string())
    );
    assert_eq!(get_path(d.addr(), "/metrics?token=s3cret", None).0, 200);
    let (status, page) = get_path(d.addr(), "/?token=s3cret", None);
    assert_eq!(status, 200);
    assert!(
        page.contains("EventSource(\"/events\"") && page.contains("uPlot"),
        "the live page with its scripts inlined"
    );
    for outside in ["http://", "https://"] {
        assert!(
            !page.contains(&format!("src=\"{outside}"))
                && !page.contains(&format!("href=\"{outside}")),
            "nothing loaded from another host"
        );
    }
}

#[test]
fn a_static_page_is_served_and_an_open_dashboard_stays_on_loopback() {
    let d = Dashboard::serve_page(
        "127.0.0.1:0".parse().unwrap(),
        Access::Open,
        "<p>the report</p>".into(),
        Router::new(),
    )
    .unwrap();
    assert_eq!(d.url(), format!("http://127.0.0.1:{}/", d.addr().port()));
    assert_eq!(
        get_path(d.addr(), "/", None),
        (200, "<p>the report</p>".to_string())
    );
    assert_eq!(
        get_path(d.addr(), "/events", None).0,
        404,
        "no events for a finished page"
    );
    match Dashboard::start("0.0.0.0:0".parse().unwrap(), Access::Open, Router::new()) {
        Err(e) if e.kind() == Kind::OpenOutside => {}
        other => panic!(
            "an open dashboard outside loopback: {:?}",
            other.map(|d| d.url().to_string())
        ),
    }
}
