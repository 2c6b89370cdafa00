//! `--http3` (issue 57 §3): volley's HTTP/3 client (quinn + h3) against the demo target's
//! HTTP/3 (`volley target serve --http3`), on loopback UDP.

use std::time::{Duration, Instant};

use crate::support::{Watched, only_run, out_dir, report_json, serial, text, volley};

/// The demo target serving HTTP/3 too: it, its TCP address, its UDP address and the
/// certificate file it wrote (kept in `dir`).
fn serve(dir: &std::path::Path) -> (Watched, String, String, String) {
    let cert = dir.join("h3-cert.pem");
    let cert = cert.to_str().unwrap().to_string();
    let mut t = Watched::start(&[
        "target",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--http3",
        "127.0.0.1:0",
        "--http3-cert",
        &cert,
        "--db-rtt",
        "0ms",
    ]);
    let after = |line: &str, mark: &str| {
        line.split(mark)
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .unwrap()
            .to_string()
    };
    let tcp = t.wait_for(Duration::from_secs(20), |l| {
        l.contains("demo target on http://")
    });
    let udp = t.wait_for(Duration::from_secs(5), |l| l.contains("HTTP/3 on https://"));
    (t, after(&tcp, "http://"), after(&udp, "https://"), cert)
}

/// The server's own count of `GET uri` answered with `status`, from its /metrics (over
/// HTTP/1.1 on TCP).
fn served(tcp: &str, uri: &str, status: u16) -> u64 {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(tcp).unwrap();
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut m = String::new();
    s.read_to_string(&mut m).unwrap();
    m.lines()
        .filter(|l| {
            l.starts_with("http_server_requests_seconds_count{")
                && l.contains(&format!("uri=\"{uri}\""))
                && l.contains(&format!("status=\"{status}\""))
        })
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum()
}

/// Stops the target (SIGTERM) and waits for it.
fn stop(t: Watched) {
    t.signal("-TERM");
    let o = t.finish();
    assert!(o.status.success(), "{}", text(&o));
}

/// series.csv's column `name`, summed over the intervals.
fn column(run: &std::path::Path, name: &str) -> f64 {
    let csv = std::fs::read_to_string(run.join("series.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let i = header.iter().position(|h| *h == name).unwrap();
    lines
        .map(|l| l.split(',').nth(i).unwrap().parse::<f64>().unwrap())
        .sum()
}

#[test]
fn a_run_over_http3_sends_every_request_on_one_kept_connection_per_vu() {
    let _g = serial();
    let dir = out_dir();
    let (t, tcp, udp, cert) = serve(dir.path());
    let out = dir.path().join("runs");
    let o = volley(&[
        "run",
        "--http3",
        "--cacert",
        &cert,
        "--url",
        &format!("https://{udp}/health"),
        "--vus",
        "4",
        "--iterations",
        "50",
        "-o",
        out.to_str().unwrap(),
        "--progress",
        "none",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let run = only_run(&out);
    let suite = &report_json(&run)["seed_suite"];
    assert_eq!(suite["total_tests"], 200, "{suite}");
    assert_eq!(suite["errors"], 0, "{suite}");
    // The server counted them too: all 200 answered, on its HTTP/3 side.
    assert_eq!(served(&tcp, "/health", 200), 200);
    // Every body read to its end ("ok"), and no VU opened a second connection.
    let bytes = column(&run, "Response_bytes_per_second") * column(&run, "Period_(s)");
    assert!(bytes > 0.0);
    let intervals = std::fs::read_to_string(run.join("series.csv"))
        .unwrap()
        .lines()
        .count()
        - 1;
    assert_eq!(
        column(&run, "Mean_response_length"),
        2.0 * intervals as f64,
        "each response's body is `ok`"
    );
    assert_eq!(column(&run, "Reconnects"), 0.0);
    // run.json says which protocol ran; a TCP run's run.json has no such key.
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    assert_eq!(meta["plan"]["http3"], true, "{}", meta["plan"]);
    stop(t);
}

#[test]
fn shared_http3_connections_carry_every_vu_s_requests_as_streams() {
    let _g = serial();
    let dir = out_dir();
    let (t, tcp, udp, cert) = serve(dir.path());
    let out = dir.path().join("runs");
    let o = volley(&[
        "run",
        "--http3",
        "--cacert",
        &cert,
        "--url",
        &format!("https://{udp}/health"),
        "--vus",
        "12",
        "--connections",
        "2",
        "--iterations",
        "20",
        "-o",
        out.to_str().unwrap(),
        "--progress",
        "none",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let run = only_run(&out);
    let suite = &report_json(&run)["seed_suite"];
    assert_eq!(suite["total_tests"], 240, "{suite}");
    assert_eq!(suite["errors"], 0, "{suite}");
    assert_eq!(served(&tcp, "/health", 200), 240);
    assert_eq!(column(&run, "Reconnects"), 0.0);
    stop(t);
}

#[test]
fn a_scenario_over_http3_posts_extracts_and_checks() {
    let _g = serial();
    let dir = out_dir();
    let (t, tcp, udp, cert) = serve(dir.path());
    let file = dir.path().join("h3.yaml");
    std::fs::write(
        &file,
        format!(
            "target: https://{udp}
steps:
  - name: create
    request: POST /rooms
    headers: {{ Content-Type: application/json }}
    body: '{{\"name\": \"h3-room\"}}'
    extract:
      room: $.id
    check: {{ status: 201, exists: [$.id] }}
  - name: messages
    request: GET /rooms/{{{{ room }}}}/messages
    check: {{ status: 200 }}
  - name: missing
    request: GET /no-such-path
    check: {{ status: 404, body_contains: no such path }}
"
        ),
    )
    .unwrap();
    let out = dir.path().join("runs");
    let o = volley(&[
        "run",
        file.to_str().unwrap(),
        "--http3",
        "--cacert",
        &cert,
        "--vus",
        "2",
        "--iterations",
        "3",
        "-o",
        out.to_str().unwrap(),
        "--progress",
        "none",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let suite = &report_json(&only_run(&out))["seed_suite"];
    assert_eq!(suite["errors"], 0, "{suite}\n{}", text(&o));
    assert_eq!(suite["total_tests"], 18, "{suite}");
    // The room ids extracted from HTTP/3 bodies went into the next paths.
    assert_eq!(served(&tcp, "/rooms/{id}/messages", 200), 6, "{}", text(&o));
    stop(t);
}

#[test]
fn a_server_that_is_not_there_fails_before_the_run_in_bounded_time() {
    let _g = serial();
    // A UDP port that is bound and silent: no ICMP, no answer, as a firewalled port.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let out = out_dir();
    let started = Instant::now();
    let o = volley(&[
        "run",
        "--http3",
        "--insecure",
        "--url",
        &format!("https://127.0.0.1:{port}/"),
        "--vus",
        "1",
        "--iterations",
        "1",
        "--timeout",
        "1s",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    let took = started.elapsed();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no QUIC handshake answer within 1s")
            && err.contains(&format!("UDP port {port}")),
        "{err}"
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn http3_refuses_plain_http_and_http2() {
    let out = out_dir();
    let o_str = out.path().to_str().unwrap();
    let cases: [(&[&str], &str); 2] = [
        (
            &["--url", "http://127.0.0.1:1/"],
            "--http3 needs an https:// URL",
        ),
        (
            &["--url", "https://127.0.0.1:1/", "--http2"],
            "'--http3' cannot be used with '--http2'",
        ),
    ];
    for (args, says) in cases {
        let mut all = vec![
            "run",
            "--http3",
            "--vus",
            "1",
            "--iterations",
            "1",
            "-o",
            o_str,
        ];
        all.extend_from_slice(args);
        let o = volley(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
