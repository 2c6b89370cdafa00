//! `--target 'http://prometheus:9090 QUERY'`: the target rate read from Prometheus — an
//! instant query (`/api/v1/query`) whose answer must be one finite sample, read as requests
//! per second, e.g. the day's peak of the server's request rate:
//! `max_over_time(sum(rate(http_server_requests_seconds_count[1m]))[1d:1m])`.
//!
//! The query is one HTTP/1.1 GET on a plain `std` TCP stream (`connection: close`, the answer
//! read to its end, at most [`MAX_ANSWER`] bytes, within [`TIMEOUT`]); Prometheus' API is
//! plain JSON, so no HTTP client library is needed. Plain `http://` only: an `https://` or
//! authenticated Prometheus is refused with what to do instead.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// The whole query: connecting, asking, reading the answer.
const TIMEOUT: Duration = Duration::from_secs(30);
/// The largest answer read (an instant query's answer of one sample is a few hundred bytes;
/// one of many series, which is refused anyway, may be large).
const MAX_ANSWER: usize = 8 << 20;

/// A Prometheus server and an instant query.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PromQuery {
    /// `host:port`.
    authority: String,
    host: String,
    port: u16,
    /// The path of the query API: `/api/v1/query`, under the server's route prefix if any.
    api: String,
    /// The server as given, for messages (`http://127.0.0.1:9090`).
    server: String,
    pub(crate) query: String,
}

/// `--target` as given: a rate (`220.69/s`) or a Prometheus server and query.
pub(crate) fn target(text: &str) -> Result<(f64, String)> {
    match parse(text)? {
        None => {
            let rate =
                volley_scenario::parse_rate(text).map_err(|e| anyhow::anyhow!("--target: {e}"))?;
            Ok((rate, text.to_string()))
        }
        Some(q) => {
            // `run` and `capacity` resolve the flags more than once: one query per process.
            static READ: Mutex<Option<HashMap<String, f64>>> = Mutex::new(None);
            let mut read = READ.lock().unwrap_or_else(|e| e.into_inner());
            let known = read.get_or_insert_with(HashMap::new).get(text).copied();
            let rate = match known {
                Some(rate) => rate,
                None => {
                    let rate = q.read().with_context(|| {
                        format!(
                            "--target: reading `{}` from Prometheus at {}",
                            q.query, q.server
                        )
                    })?;
                    eprintln!(
                        "volley: --target: {} req/s read from Prometheus at {} (query {})",
                        shown(rate),
                        q.server,
                        q.query
                    );
                    read.get_or_insert_with(HashMap::new)
                        .insert(text.to_string(), rate);
                    rate
                }
            };
            Ok((
                rate,
                format!(
                    "{}/s read from Prometheus at {}: {}",
                    shown(rate),
                    q.server,
                    q.query
                ),
            ))
        }
    }
}

/// A rate as said: at most 3 decimals, no trailing zeros.
fn shown(rate: f64) -> String {
    let s = format!("{rate:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "0" || s == "-0" {
        format!("{rate:e}")
    } else {
        s.to_string()
    }
}

/// `Some` when `text` names a Prometheus server (it starts with `http://` or `https://`):
/// `URL QUERY`, or the query API's own URL with `?query=` (as a browser shows it).
pub(crate) fn parse(text: &str) -> Result<Option<PromQuery>> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    if lower.starts_with("https://") {
        bail!(
            "--target {t}: volley reads Prometheus over plain http only; reach it over http (e.g. `kubectl port-forward svc/prometheus 9090` and --target 'http://127.0.0.1:9090 QUERY'), or give the rate itself (--target 220.69/s)"
        );
    }
    if !lower.starts_with("http://") {
        return Ok(None);
    }
    let (url, query) = match t.split_once(char::is_whitespace) {
        Some((u, q)) => (u, q.trim().to_string()),
        None => (t, String::new()),
    };
    let rest = &url["http://".len()..];
    let (authority, path_query) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if authority.contains('@') {
        bail!(
            "--target {}: volley sends Prometheus no credentials; query it where it needs none (a port-forward, or from inside its network), or give the rate itself (--target 220.69/s)",
            volley_scenario::secret::mask_url(url)
        );
    }
    let (path, url_query) = match path_query.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (path_query, None),
    };
    let query = if query.is_empty() {
        // `http://prometheus:9090/api/v1/query?query=...`, percent-encoded.
        url_query
            .into_iter()
            .flat_map(|q| q.split('&'))
            .find_map(|kv| kv.strip_prefix("query="))
            .map(percent_decode)
            .transpose()?
            .unwrap_or_default()
    } else {
        if url_query.is_some() {
            bail!(
                "--target {t}: give the server's address without a query string, then the query: --target 'http://prometheus:9090 max_over_time(sum(rate(http_server_requests_seconds_count[1m]))[1d:1m])'"
            );
        }
        query
    };
    if query.trim().is_empty() {
        bail!(
            "--target {t}: give the PromQL query after the server's address, e.g. --target 'http://prometheus:9090 max_over_time(sum(rate(http_server_requests_seconds_count[1m]))[1d:1m])' (the day's peak request rate, per second)"
        );
    }
    let (host, port) = split_authority(authority).with_context(|| format!("--target {t}"))?;
    let base = path.trim_end_matches('/');
    let api = if base.ends_with("/api/v1/query") {
        base.to_string()
    } else {
        format!("{base}/api/v1/query")
    };
    let server = format!(
        "http://{authority}{}",
        base.trim_end_matches("/api/v1/query")
    );
    Ok(Some(PromQuery {
        authority: authority.to_string(),
        host,
        port,
        api,
        server,
        query,
    }))
}

/// `host:port`, `[::1]:9090`, `host` (port 80).
fn split_authority(authority: &str) -> Result<(String, u16)> {
    let bad = || {
        anyhow::anyhow!(
            "`{authority}` is not a server's address: write it like http://prometheus:9090"
        )
    };
    if authority.is_empty() {
        return Err(bad());
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, rest) = v6.split_once(']').ok_or_else(bad)?;
        (h, rest.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port = match port {
        None => 80,
        Some(p) => p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(bad)?,
    };
    if host.is_empty() {
        return Err(bad());
    }
    Ok((host.to_string(), port))
}

fn percent_decode(s: &str) -> Result<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = s
                    .get(i + 1..i + 3)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| {
                        anyhow::anyhow!("--target: `{s}` has a `%` not followed by two hex digits")
                    })?;
                out.push(hex);
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8(out).context("--target: the query is not UTF-8 once decoded")
}

fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl PromQuery {
    /// Asks Prometheus and reads the one sample it answers, per second.
    pub(crate) fn read(&self) -> Result<f64> {
        let deadline = Instant::now() + TIMEOUT;
        let (status, body) = self.get(deadline)?;
        let json: serde_json::Value = serde_json::from_slice(&body).map_err(|_| {
            anyhow::anyhow!(
                "the answer (HTTP {status}) is not JSON: `{}`; is {} a Prometheus server (its API at {})?",
                excerpt(&body),
                self.server,
                self.api
            )
        })?;
        if !(200..300).contains(&status) || json["status"] != "success" {
            let why = match (json["errorType"].as_str(), json["error"].as_str()) {
                (Some(t), Some(e)) => format!("{t}: {e}"),
                (None, Some(e)) => e.to_string(),
                _ => excerpt(&body),
            };
            bail!("Prometheus answered HTTP {status}: {why}");
        }
        if let Some(w) = json["warnings"].as_array().filter(|w| !w.is_empty()) {
            for w in w {
                eprintln!(
                    "volley: --target: Prometheus warns: {}",
                    w.as_str().unwrap_or_default()
                );
            }
        }
        let data = &json["data"];
        let kind = data["resultType"].as_str().unwrap_or_default();
        let sample = match kind {
            "scalar" => &data["result"],
            "vector" => {
                let series = data["result"].as_array().map_or(&[][..], Vec::as_slice);
                match series {
                    [] => bail!(
                        "the query returned no series (an empty vector): its metric has no samples in that range, or a name or label is wrong; try it in Prometheus' own page ({}/graph)",
                        self.server
                    ),
                    [one] => &one["value"],
                    many => {
                        let labels: Vec<String> = many
                            .iter()
                            .take(3)
                            .map(|s| s["metric"].to_string())
                            .collect();
                        bail!(
                            "the query returned {} series ({}{}), and a target is one number: aggregate them, e.g. sum(...) or max(...)",
                            many.len(),
                            labels.join(", "),
                            if many.len() > 3 { ", …" } else { "" }
                        )
                    }
                }
            }
            "matrix" => bail!(
                "the query returned a range vector (a matrix); a target is one number: take its peak, e.g. max_over_time(sum(rate(http_server_requests_seconds_count[1m]))[1d:1m])"
            ),
            other => bail!(
                "the query returned a {other}, not a number; give a query whose answer is one sample (a scalar or a vector of one series)"
            ),
        };
        let text = sample[1].as_str().ok_or_else(|| {
            anyhow::anyhow!(
                "the answer's sample is not [time, \"value\"]: `{}`",
                excerpt(&body)
            )
        })?;
        let value: f64 = text
            .parse()
            .map_err(|_| anyhow::anyhow!("the answer's value `{text}` is not a number"))?;
        if !value.is_finite() {
            bail!(
                "the query's value is {text}, not a rate (NaN: a division by zero or a rate over a range without two samples; Inf: a division by zero); give a query whose value is the requests per second"
            );
        }
        if value <= 0.0 {
            bail!(
                "the query's value is {text}: a target is a rate above zero (the requests per second real traffic asks for); check the query's range holds the traffic"
            );
        }
        volley_scenario::limits::rate_at_most(value, text).map_err(|e| anyhow::anyhow!("{e}"))
    }

    /// One GET of the query API: the status and the body.
    fn get(&self, deadline: Instant) -> Result<(u16, Vec<u8>)> {
        let addrs: Vec<_> = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .with_context(|| format!("cannot resolve {}", self.host))?
            .collect();
        let mut stream = None;
        let mut last = None;
        for addr in &addrs {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match TcpStream::connect_timeout(addr, left) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = Some(format!("{addr}: {e}")),
            }
        }
        let mut stream = stream.ok_or_else(|| {
            anyhow::anyhow!(
                "cannot connect to {} ({}); is Prometheus running there?",
                self.server,
                last.unwrap_or_else(|| "no address".into())
            )
        })?;
        let left = |what: &str| {
            let d = deadline.saturating_duration_since(Instant::now());
            if d.is_zero() {
                bail!("no answer within {}s while {what}", TIMEOUT.as_secs());
            }
            Ok(d)
        };
        stream.set_write_timeout(Some(left("sending the query")?))?;
        let request = format!(
            "GET {}?query={} HTTP/1.1\r\nhost: {}\r\naccept: application/json\r\nuser-agent: volley/{}\r\nconnection: close\r\n\r\n",
            self.api,
            percent_encode(&self.query),
            self.authority,
            env!("CARGO_PKG_VERSION")
        );
        stream
            .write_all(request.as_bytes())
            .context("cannot send the query")?;
        let mut answer = Vec::new();
        let mut buf = [0u8; 16 << 10];
        loop {
            stream.set_read_timeout(Some(left("reading the answer")?))?;
            let n = match stream.read(&mut buf) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    bail!("no answer within {}s", TIMEOUT.as_secs())
                }
                Err(e) => return Err(e).context("cannot read the answer"),
            };
            if n == 0 {
                break;
            }
            if answer.len() + n > MAX_ANSWER {
                bail!(
                    "the answer is larger than {} MiB, more than one sample ever is; give a query whose answer is one sample",
                    MAX_ANSWER >> 20
                );
            }
            answer.extend_from_slice(&buf[..n]);
        }
        parse_response(&answer)
    }
}

/// An HTTP/1.1 response read to the connection's end: status and body (chunks joined).
fn parse_response(answer: &[u8]) -> Result<(u16, Vec<u8>)> {
    let not_http = || {
        anyhow::anyhow!(
            "the answer is not HTTP: `{}`; is this a Prometheus server?",
            excerpt(answer)
        )
    };
    let end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(not_http)?;
    let head = std::str::from_utf8(&answer[..end]).map_err(|_| not_http())?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .strip_prefix("HTTP/1.")
        .and_then(|r| r.get(2..5))
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(not_http)?;
    let mut chunked = false;
    let mut length = None;
    for line in lines {
        if let Some((k, v)) = line.split_once(':') {
            let (k, v) = (k.trim(), v.trim());
            if k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked") {
                chunked = true;
            } else if k.eq_ignore_ascii_case("content-length") {
                length = v.parse::<usize>().ok();
            }
        }
    }
    let body = &answer[end + 4..];
    let body = if chunked {
        dechunk(body).ok_or_else(|| anyhow::anyhow!("the answer's chunked body is cut short"))?
    } else if let Some(n) = length {
        body.get(..n)
            .ok_or_else(|| {
                anyhow::anyhow!("the answer is cut short ({} of {n} bytes)", body.len())
            })?
            .to_vec()
    } else {
        body.to_vec()
    };
    Ok((status, body))
}

/// A chunked body's data; `None` when it ends before its last chunk.
fn dechunk(mut body: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = body.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&body[..eol]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        body = &body[eol + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(body.get(..size)?);
        body = body.get(size..)?.strip_prefix(b"\r\n")?;
    }
}

/// At most 200 characters of a body, for a message.
fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.chars().count() > 200 {
        format!("{}…", text.chars().take(200).collect::<String>())
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_is_no_server_and_a_url_is_one() {
        assert_eq!(parse("220.69/s").unwrap(), None);
        assert_eq!(parse("19080000/day").unwrap(), None);
        let q = parse("http://127.0.0.1:9090 max_over_time(sum(rate(x[1m]))[1d:1m])")
            .unwrap()
            .unwrap();
        assert_eq!(
            (q.host.as_str(), q.port, q.api.as_str(), q.server.as_str()),
            ("127.0.0.1", 9090, "/api/v1/query", "http://127.0.0.1:9090")
        );
        assert_eq!(q.query, "max_over_time(sum(rate(x[1m]))[1d:1m])");
        // A route prefix, and the API's own URL as a browser shows it.
        let q = parse("http://prom/prometheus/ up").unwrap().unwrap();
        assert_eq!((q.port, q.api.as_str()), (80, "/prometheus/api/v1/query"));
        let q = parse("http://[::1]:9090/api/v1/query?query=sum%28rate%28x%5B1m%5D%29%29+%2F+2")
            .unwrap()
            .unwrap();
        assert_eq!(
            (q.host.as_str(), q.query.as_str()),
            ("::1", "sum(rate(x[1m])) / 2")
        );
        assert_eq!(q.server, "http://[::1]:9090");
        for bad in [
            "http://127.0.0.1:9090",
            "https://prom:9090 up",
            "http://user:pw@prom:9090 up",
            "http://prom:99999 up",
            "http:// up",
            "http://prom:9090/?x=1 up",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert!(!format!("{:#}", parse("http://user:pw@prom:9090 up").unwrap_err()).contains("pw"));
    }

    #[test]
    fn queries_are_encoded_whole() {
        assert_eq!(
            percent_encode("sum(rate(a{b=\"c d\"}[1m]))+1&x"),
            "sum%28rate%28a%7Bb%3D%22c%20d%22%7D%5B1m%5D%29%29%2B1%26x"
        );
    }

    #[test]
    fn responses_by_length_chunks_or_close() {
        let by_length = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(parse_response(by_length).unwrap(), (200, b"{}".to_vec()));
        let chunked =
            b"HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n3;x=y\r\n\":1\r\n1\r\n}\r\n0\r\n\r\n";
        assert_eq!(
            parse_response(chunked).unwrap(),
            (400, b"{\"a\":1}".to_vec())
        );
        let closed = b"HTTP/1.0 200 OK\r\n\r\n[1]";
        assert_eq!(parse_response(closed).unwrap(), (200, b"[1]".to_vec()));
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{}").is_err());
        assert!(parse_response(b"SSH-2.0-OpenSSH\r\n").is_err());
        assert!(
            parse_response(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab")
                .is_err()
        );
    }
}
