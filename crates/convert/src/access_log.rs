//! `volley convert access-log`: a web server's access log (nginx's and Apache's `combined`
//! format, or `common` without the referer and user agent) as the traffic it records — the
//! peak rate per second and per minute, from the timestamps, and the mix of endpoints, ids in
//! paths folded into templates (`GET /rooms/{id}`) — written as a scenario that replays that
//! mix: one `one_of` whose branches are the endpoints, weighted by their request counts, so
//! that each iteration is one request and the iteration rate is the request rate (`volley run`
//! and `volley capacity` take the peak as `--target`).
//!
//! The log is read one line at a time ([`Tally::read`]), whatever its length: a line longer
//! than [`MAX_LINE`] is counted as not read, and what is kept is bounded — at most
//! [`MAX_ENDPOINTS`] endpoints, [`MAX_SECONDS`] distinct seconds, [`MAX_IDS`] ids per
//! resource. A line that is not an entry is counted and reported with the first examples,
//! never dropped silently.

use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;

use serde_json::Value;

use crate::text::{Names, literal, singular};
use crate::yaml::{Entry, Node, json, render};
use crate::{Converted, Error, Kind};

fn err(msg: String) -> Error {
    Error::new(Kind::AccessLog, msg)
}

/// The longest line read; a longer one is counted as not read (a request line is at most
/// 8 KiB in nginx's default `large_client_header_buffers`, Apache's `LimitRequestLine`).
pub const MAX_LINE: usize = 64 << 10;
/// The largest log read, per file (a busy server's day is a few GiB; split a longer one).
pub const MAX_LOG_BYTES: u64 = 8 << 30;
/// Most distinct endpoints (method and path template) counted one by one; requests to
/// further ones are counted together and said.
pub const MAX_ENDPOINTS: usize = 10_000;
/// Most distinct seconds the log may span (about 46 days of continuous traffic): the peak
/// is a day's, so a longer log is refused with a hint to give less.
pub const MAX_SECONDS: usize = 4_000_000;
/// Most distinct ids kept per resource (their counts; the most requested are written).
pub const MAX_IDS: usize = 1_000;
/// Ids written per resource: the scenario picks one of them at random per request.
pub const IDS_WRITTEN: usize = 20;
/// Most endpoints written as branches by default (`--max-endpoints`), and at most.
pub const DEFAULT_BRANCHES: usize = 50;
pub const MAX_BRANCHES: usize = 1_000;

/// What to write.
#[derive(Debug, Clone)]
pub struct AccessLogOptions {
    /// The base URL (default `http://127.0.0.1:8080`, with a comment: a log has no host).
    pub target: Option<String>,
    /// Most endpoints written (the busiest); the rest are said with their share.
    pub max_endpoints: usize,
    /// The scenario's name (default `traffic`).
    pub name: Option<String>,
    /// How the command was invoked, for the header comment.
    pub command: String,
}

impl Default for AccessLogOptions {
    fn default() -> Self {
        AccessLogOptions {
            target: None,
            max_endpoints: DEFAULT_BRANCHES,
            name: None,
            command: "volley convert access-log".into(),
        }
    }
}

/// One endpoint: a method and a path with its ids folded (`/rooms/{id}`).
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    pub method: String,
    /// The path with `{id}` for each id.
    pub path: String,
    /// Requests in the log.
    pub requests: u64,
    /// Requests per status.
    pub statuses: BTreeMap<u16, u64>,
    /// Requests that had a query string (left out of the scenario).
    pub with_query: u64,
    /// The resource of each `{id}`, in order (`room` for `/rooms/{id}`).
    resources: Vec<String>,
}

impl Endpoint {
    /// `GET /rooms/{id}`.
    pub fn name(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

/// The busiest stretch of the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peak {
    /// Requests in it.
    pub requests: u64,
    /// Its first second (Unix seconds).
    pub start: i64,
}

/// What the log says: the figures the scenario is made from.
#[derive(Debug, Clone)]
pub struct Traffic {
    /// Lines read (every line, whatever it held).
    pub lines: u64,
    /// Requests (lines that are entries with a request line): the peaks count these.
    pub requests: u64,
    /// Lines that are not access-log entries, with the first few (`source:line: why`).
    pub unread: u64,
    pub unread_examples: Vec<String>,
    /// Entries without a request (`"-"`, a TLS handshake sent to a plain port): not requests.
    pub no_request: u64,
    /// Requests without a path volley can send (`CONNECT host:443`, `OPTIONS *`): in the
    /// peaks, not in the mix.
    pub no_path: u64,
    /// Requests to endpoints beyond [`MAX_ENDPOINTS`]: in the peaks, not in the mix.
    pub untracked: u64,
    /// Every endpoint, busiest first.
    pub endpoints: Vec<Endpoint>,
    /// The busiest second.
    pub peak_second: Peak,
    /// The busiest 60 seconds (a window starting at any second).
    pub peak_minute: Peak,
    /// The first and last second of the log (Unix seconds).
    pub first: i64,
    pub last: i64,
    /// The first entry's UTC offset in seconds (times are shown in it).
    pub offset: i32,
}

impl Traffic {
    /// Requests per second over the log's span (first second to last, both included).
    pub fn mean_rate(&self) -> f64 {
        self.requests as f64 / ((self.last - self.first + 1) as f64)
    }
}

/// Ids seen for one resource (values that looked like credentials are folded, never kept).
#[derive(Debug, Default)]
struct Pool {
    counts: HashMap<String, u64>,
}

/// The log as it is read, one line at a time, over one or more files.
#[derive(Debug, Default)]
pub struct Tally {
    lines: u64,
    requests: u64,
    unread: u64,
    unread_examples: Vec<String>,
    no_request: u64,
    no_path: u64,
    untracked: u64,
    per_second: HashMap<i64, u64>,
    endpoints: HashMap<(String, String), Endpoint>,
    pools: HashMap<String, Pool>,
    offset: Option<i32>,
    /// The last time text read and its second: lines of one second share it.
    last_time: Option<(String, i64, i32)>,
}

/// How many unread lines are quoted.
const EXAMPLES: usize = 3;

impl Tally {
    /// Reads one log (`source` names it in messages), one line at a time.
    pub fn read(&mut self, mut input: impl BufRead, source: &str) -> Result<(), Error> {
        let mut buf = Vec::with_capacity(512);
        let mut line_no = 0u64;
        loop {
            buf.clear();
            let (n, whole) = read_line(&mut input, &mut buf, MAX_LINE)
                .map_err(|e| err(format!("cannot read {source}: {e}")))?;
            if n == 0 {
                break;
            }
            line_no += 1;
            if line_no == 1 && buf.starts_with(&[0x1f, 0x8b]) {
                return Err(err(format!(
                    "{source} is gzip-compressed: give it uncompressed, e.g. `zcat {source} | volley convert access-log -`"
                )));
            }
            self.lines += 1;
            if !whole {
                self.unread(source, line_no, "longer than 64 KiB".into());
                continue;
            }
            let text = String::from_utf8_lossy(&buf);
            let text = text.trim_end_matches(['\n', '\r']);
            if text.trim().is_empty() {
                self.lines -= 1;
                continue;
            }
            match parse_line(text) {
                Ok(entry) => self.take(entry, source, line_no)?,
                Err(why) => self.unread(source, line_no, format!("{why}: `{}`", shorten(text))),
            }
        }
        Ok(())
    }

    fn unread(&mut self, source: &str, line: u64, why: String) {
        self.unread += 1;
        if self.unread_examples.len() < EXAMPLES {
            self.unread_examples.push(format!("{source}:{line}: {why}"));
        }
    }

    fn take(&mut self, e: Line<'_>, source: &str, line: u64) -> Result<(), Error> {
        let (second, offset) = match &self.last_time {
            Some((t, s, o)) if t == e.time => (*s, *o),
            _ => match parse_time(e.time) {
                Some((s, o)) => {
                    self.last_time = Some((e.time.to_string(), s, o));
                    (s, o)
                }
                None => {
                    self.unread(
                        source,
                        line,
                        format!(
                            "the time `[{}]` is not like `[10/Oct/2000:13:55:36 -0700]`",
                            shorten(e.time)
                        ),
                    );
                    return Ok(());
                }
            },
        };
        let Some((method, target)) = e.request else {
            self.no_request += 1;
            return Ok(());
        };
        self.requests += 1;
        self.offset.get_or_insert(offset);
        if !self.per_second.contains_key(&second) && self.per_second.len() >= MAX_SECONDS {
            return Err(err(format!(
                "the log spans more than {MAX_SECONDS} distinct seconds (about {} days of traffic); give the day or the week that holds the peak (e.g. one rotated file)",
                MAX_SECONDS / 86_400
            )));
        }
        *self.per_second.entry(second).or_insert(0) += 1;
        let Some((path, query)) = path_of(target) else {
            self.no_path += 1;
            return Ok(());
        };
        let (template, ids) = fold(path);
        let key = (method.to_string(), template);
        if !self.endpoints.contains_key(&key) && self.endpoints.len() >= MAX_ENDPOINTS {
            self.untracked += 1;
            return Ok(());
        }
        let ep = self
            .endpoints
            .entry(key)
            .or_insert_with_key(|(m, p)| Endpoint {
                method: m.clone(),
                path: p.clone(),
                requests: 0,
                statuses: BTreeMap::new(),
                with_query: 0,
                resources: ids.iter().map(|(r, _)| r.clone()).collect(),
            });
        ep.requests += 1;
        *ep.statuses.entry(e.status).or_insert(0) += 1;
        if query {
            ep.with_query += 1;
        }
        for (resource, id) in ids {
            let pool = self.pools.entry(resource).or_default();
            if volley_scenario::secret::secret_value(id) {
                continue;
            }
            if let Some(n) = pool.counts.get_mut(id) {
                *n += 1;
            } else if pool.counts.len() < MAX_IDS {
                pool.counts.insert(id.to_string(), 1);
            }
        }
        Ok(())
    }

    /// The figures, once every log is read; refused when no line was a request.
    pub fn traffic(&self) -> Result<Traffic, Error> {
        if self.requests == 0 {
            let first = self
                .unread_examples
                .first()
                .map(|e| format!(" (first: {e})"))
                .unwrap_or_default();
            return Err(err(format!(
                "no line is a request in nginx's or Apache's combined or common log format{first}; each line must read like `203.0.113.7 - - [10/Oct/2000:13:55:36 -0700] \"GET /rooms HTTP/1.1\" 200 2326 \"-\" \"curl/8.0\"` ({} lines read, {} not entries, {} without a request)",
                self.lines, self.unread, self.no_request
            )));
        }
        let mut seconds: Vec<(i64, u64)> = self.per_second.iter().map(|(s, n)| (*s, *n)).collect();
        seconds.sort_unstable();
        let peak_second = seconds
            .iter()
            .map(|&(start, requests)| Peak { requests, start })
            .min_by_key(|p| (std::cmp::Reverse(p.requests), p.start))
            .expect("at least one request");
        let peak_minute = busiest_window(&seconds, 60);
        let mut endpoints: Vec<Endpoint> = self.endpoints.values().cloned().collect();
        endpoints.sort_by(|a, b| {
            b.requests
                .cmp(&a.requests)
                .then_with(|| a.path.cmp(&b.path))
                .then_with(|| a.method.cmp(&b.method))
        });
        Ok(Traffic {
            lines: self.lines,
            requests: self.requests,
            unread: self.unread,
            unread_examples: self.unread_examples.clone(),
            no_request: self.no_request,
            no_path: self.no_path,
            untracked: self.untracked,
            endpoints,
            peak_second,
            peak_minute,
            first: seconds[0].0,
            last: seconds[seconds.len() - 1].0,
            offset: self.offset.unwrap_or(0),
        })
    }

    /// The most requested ids of `resource` (most first; those that looked like
    /// credentials are not among them).
    fn ids(&self, resource: &str) -> Vec<String> {
        let Some(pool) = self.pools.get(resource) else {
            return Vec::new();
        };
        let mut ids: Vec<(&String, &u64)> = pool.counts.iter().collect();
        ids.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        ids.into_iter()
            .take(IDS_WRITTEN)
            .map(|(id, _)| id.clone())
            .collect()
    }
}

/// Reads up to and including the next `\n`, keeping at most `max` bytes of it; returns the
/// bytes consumed and whether the line was kept whole.
fn read_line(
    input: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<(usize, bool)> {
    let mut consumed = 0;
    let mut whole = true;
    loop {
        let available = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok((consumed, whole));
        }
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..=i], true),
            None => (available, false),
        };
        let len = chunk.len();
        if whole && buf.len() + len <= max + 1 {
            buf.extend_from_slice(chunk);
        } else {
            whole = false;
            buf.clear();
        }
        input.consume(len);
        consumed += len;
        if done {
            return Ok((consumed, whole));
        }
    }
}

/// The busiest `width` seconds: the window `[s, s + width)` (starting at a second of the
/// log) holding the most requests; the earliest of equals.
fn busiest_window(seconds: &[(i64, u64)], width: i64) -> Peak {
    let mut best = Peak {
        requests: 0,
        start: seconds[0].0,
    };
    let (mut end, mut sum) = (0usize, 0u64);
    for (i, &(start, _)) in seconds.iter().enumerate() {
        while end < seconds.len() && seconds[end].0 < start + width {
            sum += seconds[end].1;
            end += 1;
        }
        if sum > best.requests {
            best = Peak {
                requests: sum,
                start,
            };
        }
        sum -= seconds[i].1;
    }
    best
}

/// One entry of the log, as far as the scenario needs it.
#[derive(Debug, PartialEq)]
struct Line<'a> {
    /// `10/Oct/2000:13:55:36 -0700`.
    time: &'a str,
    /// Method and request target; `None` for an entry without a request (`"-"`, bytes that
    /// were no HTTP request line).
    request: Option<(&'a str, &'a str)>,
    status: u16,
}

/// `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent`, and
/// anything after (`"$http_referer" "$http_user_agent"` and further fields).
fn parse_line(line: &str) -> Result<Line<'_>, &'static str> {
    let open = line
        .find(" [")
        .ok_or("no `[time]` after the client's address")?;
    let rest = &line[open + 2..];
    let close = rest.find(']').ok_or("the `[time` is not closed")?;
    let time = &rest[..close];
    let rest = rest[close + 1..]
        .strip_prefix(" \"")
        .ok_or("no quoted request (`\"GET /path HTTP/1.1\"`) after the time")?;
    // The request ends at the first quote not escaped (nginx writes `\x22`, Apache `\"`).
    let mut end = None;
    let mut escaped = false;
    for (i, c) in rest.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            '"' if !escaped => {
                end = Some(i);
                break;
            }
            _ => escaped = false,
        }
    }
    let end = end.ok_or("the quoted request is not closed")?;
    let request = &rest[..end];
    let mut fields = rest[end + 1..].split_ascii_whitespace();
    let status = fields
        .next()
        .and_then(|s| s.parse::<u16>().ok())
        .filter(|s| (100..=999).contains(s))
        .ok_or("no status (three digits) after the request")?;
    let bytes = fields
        .next()
        .ok_or("no size (bytes or `-`) after the status")?;
    if bytes != "-" && bytes.parse::<u64>().is_err() {
        return Err("the size after the status is neither a number nor `-`");
    }
    Ok(Line {
        time,
        request: request_line(request),
        status,
    })
}

/// `GET /rooms HTTP/1.1` (or `GET /rooms`, HTTP/0.9): method and target.
fn request_line(request: &str) -> Option<(&str, &str)> {
    let mut words = request.split(' ');
    let method = words.next()?;
    let target = words.next()?;
    let proto_ok = match words.next() {
        None => true,
        Some(p) => p.starts_with("HTTP/") && words.next().is_none(),
    };
    let method_ok = !method.is_empty()
        && method.len() <= 20
        && method
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b == b'-' || b == b'_');
    (method_ok && proto_ok && !target.is_empty()).then_some((method, target))
}

/// The path of a request target (an absolute URL's too) and whether it had a query;
/// `None` for `*` and `host:port` (`OPTIONS *`, `CONNECT`).
fn path_of(target: &str) -> Option<(&str, bool)> {
    let path = if target.starts_with('/') {
        target
    } else {
        let rest = target
            .strip_prefix("http://")
            .or_else(|| target.strip_prefix("https://"))?;
        match rest.find('/') {
            Some(i) => &rest[i..],
            None => "/",
        }
    };
    let (path, query) = match path.find(['?', '#']) {
        Some(i) => (&path[..i], path[i..].starts_with('?') && path.len() > i + 1),
        None => (path, false),
    };
    Some((if path.is_empty() { "/" } else { path }, query))
}

/// Whether a path segment is an id: a number, a UUID, or hex of 16 digits or more (with at
/// least one digit, so that a word such as `deadbeefcafebabe` is rare enough to be one too).
pub fn is_id(segment: &str) -> bool {
    let b = segment.as_bytes();
    let number = !b.is_empty() && b.iter().all(u8::is_ascii_digit);
    let uuid = b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        });
    let hex =
        b.len() >= 16 && b.iter().all(u8::is_ascii_hexdigit) && b.iter().any(u8::is_ascii_digit);
    number || uuid || hex
}

/// The path with each id segment as `{id}`, and each id with its resource (the segment
/// before it, singular: `room` for `/rooms/17`; `id` when there is none).
fn fold(path: &str) -> (String, Vec<(String, &str)>) {
    let mut out = String::with_capacity(path.len());
    let mut ids = Vec::new();
    let mut previous: Option<&str> = None;
    for (i, segment) in path.split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        if is_id(segment) {
            out.push_str("{id}");
            let resource = previous
                .filter(|p| !p.is_empty() && p.bytes().any(|b| b.is_ascii_alphabetic()))
                .map_or_else(|| "id".to_string(), singular);
            ids.push((resource, segment));
            previous = None;
        } else {
            out.push_str(segment);
            previous = Some(segment);
        }
    }
    (out, ids)
}

/// `[10/Oct/2000:13:55:36 -0700]`'s inside as Unix seconds and its UTC offset in seconds.
fn parse_time(text: &str) -> Option<(i64, i32)> {
    let t = jiff::fmt::strtime::parse("%d/%b/%Y:%H:%M:%S %z", text)
        .ok()?
        .to_zoned()
        .ok()?;
    Some((t.timestamp().as_second(), t.offset().seconds()))
}

/// A line as quoted in a message: at most 120 characters.
fn shorten(s: &str) -> String {
    if s.chars().count() <= 120 {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(120).collect::<String>())
    }
}

/// A rate as written in a scenario or on the command line: at most 3 decimals, no trailing
/// zeros (`150`, `2.5`, `0.333`).
pub fn rate_text(rate: f64) -> String {
    let s = format!("{rate:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "0" || s.is_empty() {
        // A rate that rounds to zero: shown with its digits.
        format!("{rate:.3e}")
    } else {
        s.to_string()
    }
}

/// `2024-05-01 12:00:07 +0200`: a Unix second in the log's own offset.
pub fn local_time(second: i64, offset: i32) -> String {
    let Ok(ts) = jiff::Timestamp::from_second(second) else {
        return second.to_string();
    };
    let Ok(off) = jiff::tz::Offset::from_seconds(offset) else {
        return ts.to_string();
    };
    ts.to_zoned(jiff::tz::TimeZone::fixed(off))
        .strftime("%Y-%m-%d %H:%M:%S %z")
        .to_string()
}

/// `1d 2h 3m 4s`, leaving out the larger units that are zero.
fn span_text(seconds: i64) -> String {
    let (d, h, m, s) = (
        seconds / 86_400,
        seconds % 86_400 / 3600,
        seconds % 3600 / 60,
        seconds % 60,
    );
    let mut out = Vec::new();
    for (n, unit) in [(d, "d"), (h, "h"), (m, "m")] {
        if n > 0 || !out.is_empty() {
            out.push(format!("{n}{unit}"));
        }
    }
    out.push(format!("{s}s"));
    out.join(" ")
}

/// `1 entry`, `2 entries`.
fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A share in per cent with one decimal.
fn pct(part: u64, whole: u64) -> String {
    format!("{:.1} %", part as f64 * 100.0 / whole.max(1) as f64)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The branch weights of `counts`: the counts over their greatest common divisor, so that
/// the mix is exactly the log's; scaled down (rounded, at least 1) in the unlikely case that
/// one is beyond a weight's `u32`.
pub fn weights(counts: &[u64]) -> Vec<u32> {
    let g = counts.iter().copied().fold(0, gcd).max(1);
    let reduced: Vec<u64> = counts.iter().map(|c| c / g).collect();
    let max = reduced.iter().copied().max().unwrap_or(1);
    if max <= u64::from(u32::MAX) {
        return reduced.iter().map(|&w| w as u32).collect();
    }
    let scale = u64::from(u32::MAX) as f64 / max as f64;
    reduced
        .iter()
        .map(|&w| ((w as f64 * scale).round() as u32).max(1))
        .collect()
}

/// What the log says and the scenario made from it.
#[derive(Debug)]
pub struct AccessLogConverted {
    pub converted: Converted,
    pub traffic: Traffic,
    /// The endpoints written, as branches (the busiest `max_endpoints`).
    pub written: usize,
    /// The suggested `--target`: the peak minute, per minute (`9000/m`).
    pub target: String,
}

/// The scenario of the logs `tally` has read.
pub fn convert(tally: &Tally, opts: &AccessLogOptions) -> Result<AccessLogConverted, Error> {
    if opts.max_endpoints == 0 || opts.max_endpoints > MAX_BRANCHES {
        return Err(err(format!(
            "--max-endpoints {}: give 1 to {MAX_BRANCHES} (the busiest endpoints are written; default {DEFAULT_BRANCHES})",
            opts.max_endpoints
        )));
    }
    let t = tally.traffic()?;
    if t.endpoints.is_empty() {
        return Err(err(format!(
            "none of the {} requests has a path volley can send ({} without one: CONNECT, OPTIONS *; {} to endpoints beyond the {MAX_ENDPOINTS} counted)",
            t.requests, t.no_path, t.untracked
        )));
    }
    let kept = &t.endpoints[..t.endpoints.len().min(opts.max_endpoints)];
    let left: &[Endpoint] = &t.endpoints[kept.len()..];
    let in_mix: u64 = t.endpoints.iter().map(|e| e.requests).sum();
    let kept_requests: u64 = kept.iter().map(|e| e.requests).sum();
    let left_requests = in_mix - kept_requests;

    // Ids: one variable per resource, the most requested ids of it.
    let mut names = Names::default();
    let mut variables: Vec<(String, Value, Option<String>)> = Vec::new();
    let mut env = Vec::new();
    let mut var_of: HashMap<String, String> = HashMap::new();
    let mut resources: Vec<&String> = kept.iter().flat_map(|e| e.resources.iter()).collect();
    resources.dedup();
    let mut seen = std::collections::HashSet::new();
    resources.retain(|r| seen.insert(*r));
    for resource in resources {
        let ids = tally.ids(resource);
        let base = if resource == "id" {
            "id".to_string()
        } else {
            format!("{resource}_id")
        };
        let expr = match ids.len() {
            0 => {
                let name = crate::text::env_name(&base);
                env.push(name.clone());
                var_of.insert(resource.clone(), format!("env.{name}"));
                continue;
            }
            1 => {
                let var = names.unique(&base);
                variables.push((
                    var.clone(),
                    Value::String(ids[0].clone()),
                    Some(format!("the only {resource} id the log holds")),
                ));
                var
            }
            n => {
                let var = names.unique(&format!("{base}s"));
                // A variable is text: the ids joined by commas (no id has one).
                variables.push((
                    var.clone(),
                    Value::String(ids.join(",")),
                    Some(format!(
                        "the {n} most requested {resource} ids in the log; each request picks one"
                    )),
                ));
                format!("({var} | split(','))[random(0, {})]", n - 1)
            }
        };
        var_of.insert(resource.clone(), expr);
    }

    // The branches: one request each, weighted by its count.
    let w = weights(&kept.iter().map(|e| e.requests).collect::<Vec<_>>());
    let mut branches = Vec::new();
    for (e, weight) in kept.iter().zip(&w) {
        let mut url = String::new();
        let mut ids = e.resources.iter();
        for (i, segment) in e.path.split('/').enumerate() {
            if i > 0 {
                url.push('/');
            }
            if segment == "{id}" {
                let r = ids.next().expect("one resource per {id}");
                url.push_str(&format!("{{{{ {} }}}}", var_of[r]));
            } else {
                url.push_str(&literal(segment));
            }
        }
        let statuses = e
            .statuses
            .iter()
            .map(|(s, n)| format!("{s} × {n}"))
            .collect::<Vec<_>>()
            .join(", ");
        let mut above = vec![format!(
            "{} of the requests ({} of {in_mix}); statuses: {statuses}",
            pct(e.requests, in_mix),
            e.requests
        )];
        if e.with_query > 0 {
            above.push(format!(
                "{} of its requests had a query string, left out (it may hold credentials): add the query to send",
                e.with_query
            ));
        }
        if !matches!(e.method.as_str(), "GET" | "HEAD" | "DELETE" | "OPTIONS") {
            above.push(format!(
                "a log holds no request bodies: give this {} its body (json: {{ ... }}, form: or body:)",
                e.method
            ));
        }
        let step = Node::Map(vec![
            Entry::text("name", &e.name()),
            Entry::text("request", &format!("{} {url}", e.method)),
        ]);
        let branch = Node::Map(vec![
            Entry::new("weight", Node::Scalar(weight.to_string())),
            Entry::new("steps", Node::Seq(vec![(Vec::new(), step)])),
        ]);
        branches.push((above, branch));
    }

    let per_minute = t.peak_minute.requests;
    let minute_rate = per_minute as f64 / 60.0;
    let target = format!("{per_minute}/m");
    let span = t.last - t.first + 1;
    let mut header = vec![
        format!("Converted by `{}`.", opts.command),
        format!(
            "{} requests from {} to {} ({}); mean {} req/s.",
            t.requests,
            local_time(t.first, t.offset),
            local_time(t.last, t.offset),
            span_text(span),
            rate_text(t.mean_rate()),
        ),
        format!(
            "Peak second: {} requests at {}. Peak minute: {per_minute} requests ({} req/s) from {}.",
            t.peak_second.requests,
            local_time(t.peak_second.start, t.offset),
            rate_text(minute_rate),
            local_time(t.peak_minute.start, t.offset),
        ),
        format!(
            "Each iteration is one request, picked by the log's mix: the iteration rate is the request rate. Judge a run or a capacity search against the peak with --target {target}."
        ),
    ];
    let mut notes = Vec::new();
    if !left.is_empty() {
        let line = format!(
            "{} ({} of the requests, {left_requests}) left out: the busiest {} are written (--max-endpoints N writes more); the weights are the shares among those written",
            counted(left.len() as u64, "more endpoint is", "more endpoints are"),
            pct(left_requests, in_mix),
            kept.len()
        );
        header.push(format!("{line}."));
        notes.push(line);
    }
    for (n, what) in [
        (
            t.untracked,
            format!(
                "to endpoints beyond the first {MAX_ENDPOINTS} counted one by one (in the peaks, not in the mix)"
            ),
        ),
        (
            t.no_path,
            "without a path volley can send (CONNECT, OPTIONS *; in the peaks, not in the mix)"
                .to_string(),
        ),
    ] {
        if n > 0 {
            let line = format!("{} {what}", counted(n, "request", "requests"));
            header.push(format!("{line}."));
            notes.push(line);
        }
    }
    if t.no_request > 0 {
        let line = format!(
            "{} without a request line (`\"-\"`, bytes that are no HTTP request): not requests, left out of the peaks and the mix",
            counted(t.no_request, "entry", "entries")
        );
        header.push(format!("{line}."));
        notes.push(line);
    }
    if t.unread > 0 {
        let line = format!(
            "{} of {} {} (combined or common format) and {} left out; {}",
            t.unread,
            t.lines,
            if t.unread == 1 {
                "lines is not an access-log entry"
            } else {
                "lines are not access-log entries"
            },
            if t.unread == 1 { "is" } else { "are" },
            t.unread_examples.join("; ")
        );
        header.push(format!("{line}."));
        notes.push(line);
    }
    if !env.is_empty() {
        header.push(format!(
            "Ids that looked like credentials were not written: set {} to an id to send.",
            env.join(", ")
        ));
    }
    let target_url = opts.target.clone();
    let mut root = vec![
        Entry::text(
            "name",
            opts.name.as_deref().unwrap_or("traffic"),
        ),
        Entry::text(
            "target",
            target_url.as_deref().unwrap_or("http://127.0.0.1:8080"),
        )
        .trailing(target_url.is_none().then(|| {
            "an access log names no host: give the server's base URL here or with --url".into()
        })),
        Entry::new(
            "load",
            Node::Map(vec![
                Entry::new("rate", Node::Scalar(rate_text(minute_rate))),
                Entry::text("duration", "5m"),
            ]),
        )
        .above(vec![format!(
            "The peak minute's rate ({per_minute} requests a minute); `volley capacity` searches its own loads."
        )]),
    ];
    if !variables.is_empty() {
        root.push(Entry::new(
            "variables",
            Node::Map(
                variables
                    .iter()
                    .map(|(k, v, c)| Entry::new(k, json(v)).trailing(c.clone()))
                    .collect(),
            ),
        ));
    }
    root.push(Entry::new(
        "steps",
        Node::Seq(vec![(
            Vec::new(),
            Node::Map(vec![Entry::new("one_of", Node::Seq(branches))]),
        )]),
    ));
    let yaml = render(&header, &root);

    let mut summary = vec![format!(
        "{} requests in {} lines; peak second {} req/s at {}; peak minute {per_minute} requests ({} req/s) from {}; mean {} req/s",
        t.requests,
        t.lines,
        t.peak_second.requests,
        local_time(t.peak_second.start, t.offset),
        rate_text(minute_rate),
        local_time(t.peak_minute.start, t.offset),
        rate_text(t.mean_rate()),
    )];
    summary.push(format!(
        "mix: {}",
        kept.iter()
            .map(|e| format!("{} {}", e.name(), pct(e.requests, in_mix)))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    summary.extend(notes);
    summary.push(format!(
        "suggested: --target {target} (the peak minute, {} req/s; the peak second was {} req/s)",
        rate_text(minute_rate),
        t.peak_second.requests
    ));
    if !env.is_empty() {
        summary.push(format!(
            "set these environment variables: {}",
            env.join(", ")
        ));
    }
    Ok(AccessLogConverted {
        converted: Converted {
            yaml,
            notes: summary,
            env,
        },
        written: kept.len(),
        target,
        traffic: t,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_in_combined_and_common_format() {
        let l = parse_line(r#"203.0.113.7 - alice [10/Oct/2000:13:55:36 -0700] "GET /rooms/17?x=1 HTTP/1.1" 200 2326 "http://r/" "curl/8.0" 0.003"#).unwrap();
        assert_eq!(
            l,
            Line {
                time: "10/Oct/2000:13:55:36 -0700",
                request: Some(("GET", "/rooms/17?x=1")),
                status: 200
            }
        );
        let l =
            parse_line(r#"::1 - - [10/Oct/2000:13:55:36 +0000] "POST /a HTTP/2.0" 201 -"#).unwrap();
        assert_eq!(l.request, Some(("POST", "/a")));
        // nginx's entry for a connection that sent nothing, and a TLS handshake on port 80.
        let l =
            parse_line(r#"1.2.3.4 - - [10/Oct/2000:13:55:36 +0000] "-" 400 0 "-" "-""#).unwrap();
        assert_eq!(l.request, None);
        let l = parse_line(
            r#"1.2.3.4 - - [10/Oct/2000:13:55:36 +0000] "\x16\x03\x01\x02\x00\x01" 400 157 "-" "-""#,
        )
        .unwrap();
        assert_eq!(l.request, None);
        // An escaped quote inside the request.
        let l =
            parse_line(r#"1.2.3.4 - - [10/Oct/2000:13:55:36 +0000] "GET /a\"b HTTP/1.1" 404 1"#)
                .unwrap();
        assert_eq!(l.request, Some(("GET", r#"/a\"b"#)));
        for bad in [
            "",
            "{\"time\": 1}",
            "1.2.3.4 - - [10/Oct/2000:13:55:36 +0000] GET /a 200 1",
            "1.2.3.4 - - [10/Oct/2000:13:55:36 +0000] \"GET /a HTTP/1.1\" OK 1",
            "1.2.3.4 - - [10/Oct/2000:13:55:36 +0000] \"GET /a HTTP/1.1\" 200",
        ] {
            assert!(parse_line(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn times_with_their_offsets() {
        assert_eq!(
            parse_time("10/Oct/2000:13:55:36 -0700"),
            Some((971_211_336, -7 * 3600))
        );
        assert_eq!(
            parse_time("10/Oct/2000:20:55:36 +0000").unwrap().0,
            971_211_336
        );
        assert_eq!(parse_time("10/Foo/2000:13:55:36 +0000"), None);
        assert_eq!(
            local_time(971_211_336, -7 * 3600),
            "2000-10-10 13:55:36 -0700"
        );
    }

    #[test]
    fn ids_fold_into_templates_named_by_their_resource() {
        for id in [
            "17",
            "0",
            "123e4567-e89b-12d3-a456-426614174000",
            "507f1f77bcf86cd799439011",
        ] {
            assert!(is_id(id), "{id}");
        }
        for not in [
            "rooms",
            "v1",
            "",
            "abc",
            "deadbeef",
            "123e4567-e89b-12d3-a456",
        ] {
            assert!(!is_id(not), "{not}");
        }
        let (t, ids) = fold("/rooms/17/messages/507f1f77bcf86cd799439011");
        assert_eq!(t, "/rooms/{id}/messages/{id}");
        assert_eq!(
            ids,
            vec![
                ("room".to_string(), "17"),
                ("message".to_string(), "507f1f77bcf86cd799439011")
            ]
        );
        assert_eq!(fold("/17/18").0, "/{id}/{id}");
        assert_eq!(path_of("http://h:8080/a/b?c"), Some(("/a/b", true)));
        assert_eq!(path_of("/a?"), Some(("/a", false)));
        assert_eq!(path_of("*"), None);
        assert_eq!(path_of("example.com:443"), None);
    }

    #[test]
    fn peaks_are_the_busiest_second_and_sixty_seconds() {
        // 5 at 0, 1 at 30, 4 at 59, 6 at 61: the second is 61; the minute 0..59 holds 10,
        // 30..89 holds 11.
        let s = [(0, 5), (30, 1), (59, 4), (61, 6)];
        assert_eq!(
            busiest_window(&s, 60),
            Peak {
                requests: 11,
                start: 30
            }
        );
        assert_eq!(
            busiest_window(&s, 1),
            Peak {
                requests: 6,
                start: 61
            }
        );
    }

    #[test]
    fn weights_keep_the_mix_exactly() {
        assert_eq!(weights(&[6000, 3000, 1000]), vec![6, 3, 1]);
        assert_eq!(weights(&[7, 3]), vec![7, 3]);
        let big = weights(&[u64::from(u32::MAX) * 4, 1]);
        assert_eq!(big, vec![u32::MAX, 1]);
    }

    #[test]
    fn long_lines_are_counted_not_read_and_the_next_line_is() {
        let long = "x".repeat(MAX_LINE + 10);
        let text =
            format!("{long}\n1.2.3.4 - - [10/Oct/2000:13:55:36 +0000] \"GET /a HTTP/1.1\" 200 1\n");
        let mut t = Tally::default();
        // A small buffer, so that the long line arrives in many pieces.
        t.read(std::io::BufReader::with_capacity(7, text.as_bytes()), "log")
            .unwrap();
        let traffic = t.traffic().unwrap();
        assert_eq!((traffic.lines, traffic.unread, traffic.requests), (2, 1, 1));
        assert!(traffic.unread_examples[0].contains("log:1: longer than 64 KiB"));
    }

    #[test]
    fn the_busiest_endpoints_are_written_and_ids_like_credentials_never() {
        let line = |path: &str| {
            format!("1.2.3.4 - - [10/Oct/2000:13:55:36 +0000] \"GET {path} HTTP/1.1\" 200 1\n")
        };
        let token = "AbCdEf0123456789aBcDeF0123456789";
        let mut log = String::new();
        for path in ["/a", "/a", "/a", "/b", "/b", "/c"] {
            log.push_str(&line(path));
        }
        log.push_str(&line(&format!("/reset/{token}")));
        log.push_str(&line("/reset/0123456789ABCDEFabcdef0123456789"));
        let mut tally = Tally::default();
        tally.read(log.as_bytes(), "log").unwrap();
        let opts = AccessLogOptions {
            max_endpoints: 3,
            ..Default::default()
        };
        let c = convert(&tally, &opts).unwrap();
        let yaml = &c.converted.yaml;
        assert!(
            !yaml.contains(token) && !yaml.contains("0123456789ABCDEF"),
            "{yaml}"
        );
        assert!(
            yaml.contains("request: GET /reset/{{ env.RESET_ID }}"),
            "{yaml}"
        );
        assert_eq!(c.converted.env, vec!["RESET_ID".to_string()]);
        let weights: Vec<&str> = yaml
            .lines()
            .filter_map(|l| l.trim().strip_prefix("- weight: "))
            .collect();
        assert_eq!(weights, vec!["3", "2", "2"], "{yaml}");
        assert!(
            c.converted.notes.iter().any(|n| n.starts_with(
                "1 more endpoint is (12.5 % of the requests, 1) left out: the busiest 3 are written"
            )),
            "{:?}",
            c.converted.notes
        );
        assert_eq!(
            (
                c.traffic.peak_second.requests,
                c.traffic.peak_minute.requests,
                c.target.as_str()
            ),
            (8, 8, "8/m")
        );
        assert!(
            convert(
                &tally,
                &AccessLogOptions {
                    max_endpoints: 0,
                    ..Default::default()
                }
            )
            .is_err()
        );
    }
}
