//! `volley convert har`: a browser recording (HAR 1.2, as Chrome, Firefox and Playwright
//! write it) as a scenario — one step per request, in order, with static assets and other
//! hosts left out, browser noise dropped from the headers, credentials replaced by
//! environment variables, and values carried from responses to later requests
//! ([`crate::correlate`]).

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;
use volley_scenario::words::counted;

use crate::correlate::{Subs, correlate};
use crate::exchange::{Exchange, ReqBody, decode_path, template_json};
use crate::secrets::Secrets;
use crate::step::{Body, Doc, Step};
use crate::text::literal;
use crate::{Converted, Error, Kind};

/// What to keep and add.
#[derive(Debug, Clone, Default)]
pub struct HarOptions {
    /// The host to load (`host` or `host:port`); default: the host that served the most
    /// HTML documents (else the most requests).
    pub host: Option<String>,
    /// Keep static assets (stylesheets, scripts, images, fonts, media).
    pub keep_static: bool,
    /// Pause after each step as long as the recording paused before the next request.
    pub think_times: bool,
    /// Headers to keep although they are browser noise (case-insensitive names).
    pub keep_headers: Vec<String>,
    /// The scenario's name (default: the file's).
    pub name: Option<String>,
    /// How the command was invoked, for the header comment.
    pub command: String,
}

#[derive(Deserialize)]
struct Har {
    log: Log,
}

#[derive(Deserialize)]
struct Log {
    #[serde(default)]
    creator: Option<Creator>,
    #[serde(default)]
    browser: Option<Creator>,
    entries: Vec<Entry>,
}

#[derive(Deserialize)]
struct Creator {
    name: String,
    #[serde(default)]
    version: String,
}

#[derive(Deserialize)]
struct Entry {
    #[serde(rename = "startedDateTime")]
    started: String,
    #[serde(default)]
    time: f64,
    request: Request,
    response: Response,
    #[serde(rename = "_resourceType", default)]
    resource_type: Option<String>,
}

#[derive(Deserialize)]
struct Request {
    method: String,
    url: String,
    #[serde(default)]
    headers: Vec<NameValue>,
    #[serde(rename = "postData", default)]
    post_data: Option<PostData>,
}

#[derive(Deserialize)]
struct PostData {
    #[serde(rename = "mimeType", default)]
    mime_type: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    params: Vec<Param>,
}

#[derive(Deserialize)]
struct Param {
    name: String,
    #[serde(default)]
    value: Option<String>,
    #[serde(rename = "fileName", default)]
    file_name: Option<String>,
}

#[derive(Deserialize)]
struct Response {
    status: i64,
    #[serde(default)]
    headers: Vec<NameValue>,
    #[serde(default)]
    content: Option<Content>,
}

#[derive(Deserialize, Default)]
struct Content {
    #[serde(rename = "mimeType", default)]
    mime_type: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    encoding: Option<String>,
}

#[derive(Deserialize)]
struct NameValue {
    name: String,
    value: String,
}

const STATIC_TYPES: [&str; 6] = ["stylesheet", "script", "image", "font", "media", "manifest"];
const STATIC_MIME: [&str; 9] = [
    "text/css",
    "javascript",
    "ecmascript",
    "image/",
    "font/",
    "audio/",
    "video/",
    "application/wasm",
    "font-",
];
const STATIC_EXT: [&str; 20] = [
    "css", "js", "mjs", "map", "png", "jpg", "jpeg", "gif", "svg", "ico", "webp", "avif", "woff",
    "woff2", "ttf", "otf", "eot", "mp4", "webm", "wasm",
];

/// Browser headers that say nothing about the request's meaning.
fn noise(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.starts_with("sec-")
        || n.starts_with(':')
        || matches!(
            n.as_str(),
            "user-agent"
                | "accept-encoding"
                | "accept-language"
                | "connection"
                | "host"
                | "content-length"
                | "origin"
                | "referer"
                | "cache-control"
                | "pragma"
                | "dnt"
                | "upgrade-insecure-requests"
                | "priority"
                | "if-none-match"
                | "if-modified-since"
                | "te"
                | "keep-alive"
                | "purpose"
        )
}

fn is_static(e: &Entry, url: &url::Url) -> bool {
    if e.resource_type
        .as_deref()
        .is_some_and(|t| STATIC_TYPES.contains(&t))
    {
        return true;
    }
    let mime = e
        .response
        .content
        .as_ref()
        .and_then(|c| c.mime_type.clone())
        .unwrap_or_default()
        .to_ascii_lowercase();
    if STATIC_MIME.iter().any(|m| mime.contains(m)) {
        return true;
    }
    let last = url.path().rsplit('/').next().unwrap_or("");
    last.rsplit_once('.')
        .is_some_and(|(_, ext)| STATIC_EXT.contains(&ext.to_ascii_lowercase().as_str()))
}

fn authority(u: &url::Url) -> String {
    match u.port() {
        Some(p) => format!("{}:{p}", u.host_str().unwrap_or("")),
        None => u.host_str().unwrap_or("").to_string(),
    }
}

fn err(msg: String) -> Error {
    Error::new(Kind::Har, msg)
}

/// Converts HAR text.
pub fn convert(text: &str, opts: &HarOptions) -> Result<Converted, Error> {
    let har: Har = serde_json::from_str(text).map_err(|e| {
        err(format!(
            "not a HAR file: {e}. A HAR file is JSON with `log.entries` (save one from the browser's developer tools: Network → \"Save all as HAR\", or record one with Playwright's `recordHar`)"
        ))
    })?;
    if har.log.entries.is_empty() {
        return Err(err("the recording has no requests (`log.entries` is empty): record the flow with the Network panel open".into()));
    }
    let mut entries: Vec<(usize, Entry, url::Url, jiff::Timestamp)> = Vec::new();
    for (i, e) in har.log.entries.into_iter().enumerate() {
        let url = url::Url::parse(&e.request.url)
            .map_err(|x| err(format!("entry {i}: `{}` is not a URL ({x})", e.request.url)))?;
        let at = e.started.parse::<jiff::Timestamp>().map_err(|x| {
            err(format!(
                "entry {i}: startedDateTime `{}` is not an ISO 8601 time ({x})",
                e.started
            ))
        })?;
        entries.push((i, e, url, at));
    }
    entries.sort_by_key(|(i, _, _, at)| (*at, *i));
    let total = entries.len();
    let web: Vec<_> = entries
        .into_iter()
        .filter(|(_, _, u, _)| matches!(u.scheme(), "http" | "https"))
        .collect();
    let not_http = total - web.len();

    // The main host.
    let host = match &opts.host {
        Some(h) => h.clone(),
        None => {
            let mut docs: HashMap<String, usize> = HashMap::new();
            let mut all: HashMap<String, usize> = HashMap::new();
            for (_, e, u, _) in &web {
                let mime = e
                    .response
                    .content
                    .as_ref()
                    .and_then(|c| c.mime_type.clone())
                    .unwrap_or_default();
                if mime.contains("text/html") || e.resource_type.as_deref() == Some("document") {
                    *docs.entry(authority(u)).or_default() += 1;
                }
                *all.entry(authority(u)).or_default() += 1;
            }
            let pick = |m: &HashMap<String, usize>| {
                m.iter()
                    .max_by_key(|(h, n)| (**n, std::cmp::Reverse((*h).clone())))
                    .map(|(h, _)| h.clone())
            };
            pick(&docs)
                .or_else(|| pick(&all))
                .ok_or_else(|| err("the recording has no http(s) requests".into()))?
        }
    };
    let on_host = |u: &url::Url| {
        authority(u).eq_ignore_ascii_case(&host)
            || u.host_str().is_some_and(|h| h.eq_ignore_ascii_case(&host))
    };
    let mut other_hosts: Vec<(String, usize)> = Vec::new();
    let mut other_index: HashMap<String, usize> = HashMap::new();
    let (mut statics, mut preflights) = (0, 0);
    let mut kept = Vec::new();
    let mut scheme_port = None;
    for (_, e, u, at) in web {
        if !on_host(&u) {
            let a = authority(&u);
            match other_index.get(&a) {
                Some(&k) => other_hosts[k].1 += 1,
                None => {
                    other_index.insert(a.clone(), other_hosts.len());
                    other_hosts.push((a, 1));
                }
            }
            continue;
        }
        if e.request.method.eq_ignore_ascii_case("OPTIONS")
            && e.request
                .headers
                .iter()
                .any(|h| h.name.eq_ignore_ascii_case("access-control-request-method"))
        {
            preflights += 1;
            continue;
        }
        if !opts.keep_static && is_static(&e, &u) {
            statics += 1;
            continue;
        }
        scheme_port.get_or_insert_with(|| format!("{}://{}", u.scheme(), authority(&u)));
        kept.push((exchange(e, u, at)?, ()));
    }
    let Some(target) = scheme_port else {
        let hosts: Vec<String> = other_hosts
            .iter()
            .map(|(h, n)| format!("{h} ({n})"))
            .collect();
        return Err(err(format!(
            "no request to keep on host `{host}` ({} left out); the recording's hosts are: {}. Pick one with --host, or keep static assets with --keep-static",
            counted(statics, "static asset"),
            hosts.join(", ")
        )));
    };
    let first = kept.first().map_or(0.0, |(x, _)| x.start_ms);
    let mut xs: Vec<Exchange> = kept.into_iter().map(|(x, _)| x).collect();
    for x in &mut xs {
        x.start_ms -= first;
    }

    let corr = correlate(&xs);
    // Two passes: the first finds every credential, so that the second can scrub them
    // wherever they appear (a token inside another header's text, too).
    let mut secrets = Secrets::default();
    for (x, subs) in xs.iter().zip(&corr.subs) {
        build(x, subs, &mut secrets, opts);
    }
    let mut steps: Vec<Step> = xs
        .iter()
        .zip(&corr.subs)
        .map(|(x, s)| build(x, s, &mut secrets, opts))
        .collect();
    for (i, step) in steps.iter_mut().enumerate() {
        step.extract = corr.extracts[i].clone();
        if opts.think_times
            && let Some(next) = xs.get(i + 1)
        {
            let gap = next.start_ms - (xs[i].start_ms + xs[i].time_ms);
            // A pause longer than an hour is the recording left open, not a user thinking:
            // left out with a comment (it would also be beyond the 7 days volley takes).
            if gap > 3_600_000.0 {
                step.comments.push(format!(
                    "the recording paused {:.1} h after this request; that pause is left out",
                    gap / 3_600_000.0
                ));
            } else if gap >= 10.0 {
                step.think_time = Some(format!("{}ms", gap.round() as u64));
            }
        }
    }

    let mut header = vec![format!("Converted by `{}`", opts.command)];
    let who = [har.log.creator.as_ref(), har.log.browser.as_ref()]
        .iter()
        .flatten()
        .map(|c| format!("{} {}", c.name, c.version).trim().to_string())
        .collect::<Vec<_>>();
    if !who.is_empty() {
        header[0].push_str(&format!(" from a recording by {}", who.join(" / ")));
    }
    header[0].push('.');
    let mut notes = vec![format!(
        "{} recorded; {} kept, on {host}",
        counted(total, "request"),
        steps.len()
    )];
    if statics > 0 {
        notes.push(format!(
            "{} left out (--keep-static keeps them)",
            counted(statics, "static asset")
        ));
    }
    if preflights > 0 {
        notes.push(format!(
            "{} left out (the browser's, not the app's)",
            counted(preflights, "CORS preflight")
        ));
    }
    if not_http > 0 {
        notes.push(format!(
            "{not_http} non-HTTP entries (data:, blob:, extensions) left out"
        ));
    }
    for (h, n) in &other_hosts {
        notes.push(format!(
            "{} to {h} left out: one scenario loads one host (convert them with --host {h})",
            counted(*n, "request")
        ));
    }
    header.push(format!("{}.", notes.join("; ")));
    let vars: Vec<&str> = corr
        .extracts
        .iter()
        .flatten()
        .map(|(v, _, _)| v.as_str())
        .collect();
    if !vars.is_empty() {
        header.push(format!(
            "Values the server sent and the flow sends back are extracted and templated: {}.",
            vars.join(", ")
        ));
    }
    header.extend(secrets.header());
    let mut doc = Doc {
        header,
        name: opts.name.clone().unwrap_or_else(|| "recording".into()),
        target,
        variables: Vec::new(),
        steps,
    };
    doc.unique_names();
    let mut summary = notes;
    if !secrets.needed.is_empty() {
        summary.push(format!(
            "set these environment variables: {}",
            secrets
                .needed
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(Converted {
        yaml: doc.render(),
        notes: summary,
        env: secrets.needed.iter().map(|(n, _)| n.clone()).collect(),
    })
}

fn exchange(e: Entry, url: url::Url, at: jiff::Timestamp) -> Result<Exchange, Error> {
    let headers: Vec<(String, String)> = e
        .request
        .headers
        .into_iter()
        .map(|h| (h.name, h.value))
        .collect();
    let body = match e.request.post_data {
        None => ReqBody::None,
        Some(p) => {
            let mime = p.mime_type.to_ascii_lowercase();
            if let Some(f) = p.params.iter().find(|f| f.file_name.is_some()) {
                return Err(err(format!(
                    "{} {}: a multipart upload (field `{}` is a file); volley sends JSON, form and text bodies — leave this request out of the recording",
                    e.request.method, url, f.name
                )));
            }
            match p.text {
                Some(t) if mime.contains("json") => match serde_json::from_str::<Value>(&t) {
                    Ok(v) => ReqBody::Json(v),
                    Err(_) => ReqBody::Text(t),
                },
                Some(t) if mime.starts_with("application/x-www-form-urlencoded") => ReqBody::Form(
                    form_urlencoded::parse(t.as_bytes())
                        .map(|(k, v)| (k.into_owned(), v.into_owned()))
                        .collect(),
                ),
                Some(t) => ReqBody::Text(t),
                None if !p.params.is_empty() => ReqBody::Form(
                    p.params
                        .into_iter()
                        .map(|f| (f.name, f.value.unwrap_or_default()))
                        .collect(),
                ),
                None => ReqBody::None,
            }
        }
    };
    let content = e.response.content.unwrap_or_default();
    let text = match (content.text, content.encoding.as_deref()) {
        (Some(t), Some("base64")) => {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .decode(t.as_bytes())
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
        }
        (t, _) => t,
    };
    let resp_json = match (&text, content.mime_type.as_deref()) {
        (Some(t), Some(m)) if m.contains("json") => serde_json::from_str(t).ok(),
        _ => None,
    };
    let resp_headers: Vec<(String, String)> = e
        .response
        .headers
        .into_iter()
        .map(|h| (h.name, h.value))
        .collect();
    let sse = content
        .mime_type
        .as_deref()
        .is_some_and(|m| m.contains("text/event-stream"));
    Ok(Exchange {
        method: e.request.method,
        url,
        headers,
        body,
        status: u16::try_from(e.response.status).unwrap_or(0),
        resp_headers,
        resp_json,
        sse,
        start_ms: at.as_nanosecond() as f64 / 1e6,
        time_ms: e.time.max(0.0),
    })
}

/// The step for one exchange.
fn build(x: &Exchange, subs: &Subs, secrets: &mut Secrets, opts: &HarOptions) -> Step {
    // URL: path segments, then the query.
    let (path, mut name_path) = match &subs.prefix {
        Some((len, expr)) => {
            let rest = &x.url.path()[*len..];
            (
                format!("{expr}{}", literal(rest)),
                format!("{{{}}}{rest}", var_of(expr)),
            )
        }
        None => {
            let mut p = String::new();
            let mut n = String::new();
            for (i, s) in x.segments().iter().enumerate() {
                p.push('/');
                n.push('/');
                match subs.path.get(&i) {
                    Some(e) => {
                        p.push_str(e);
                        n.push_str(&format!("{{{}}}", var_of(e)));
                    }
                    None => {
                        p.push_str(&literal(s));
                        n.push_str(&decode_path(s));
                    }
                }
            }
            (p, n)
        }
    };
    let mut url = path;
    let query = x.query();
    let mut comments = Vec::new();
    if !query.is_empty() {
        let parts: Vec<String> = query
            .iter()
            .enumerate()
            .map(|(i, (rn, rv, n, v))| match subs.query.get(&i) {
                Some(e) => format!("{}={e}", literal(rn)),
                None => match secrets.query_param(n, v, &mut comments, "the recording") {
                    Some(e) => format!("{}={e}", literal(rn)),
                    None => format!("{}={}", literal(rn), scrub(secrets, rv)),
                },
            })
            .collect();
        url = format!("{url}?{}", parts.join("&"));
    }
    if name_path.is_empty() {
        name_path.push('/');
    }
    let mut step = Step::new(&x.method, url);
    step.name = format!("{} {name_path}", x.method);
    step.sse = x.sse;
    // Body.
    step.body = match &x.body {
        ReqBody::None => Body::None,
        ReqBody::Json(v) => {
            let mut subs_json = subs.json.clone();
            secrets.json_fields(v, &mut subs_json, &mut comments, "the recording");
            let s: &Secrets = secrets;
            Body::Json(template_json(v, "", &subs_json, &|t| scrub(s, t)))
        }
        ReqBody::Form(fields) => Body::Form(
            fields
                .iter()
                .enumerate()
                .map(|(i, (k, v))| {
                    let value = match subs.form.get(&i) {
                        Some(e) => e.clone(),
                        None => secrets
                            .form_field(k, v, &mut comments, "the recording")
                            .unwrap_or_else(|| scrub(secrets, v)),
                    };
                    (literal(k), value)
                })
                .collect(),
        ),
        ReqBody::Text(text) => {
            // XML (SOAP, form posts as XML): an element named as a credential.
            for (name, value) in crate::secrets::xml_secrets(text) {
                let var = secrets.var(&name, &value, &format!("XML element <{name}>"));
                comments.push(format!("<{name}> came from the recording; set env.{var}"));
            }
            Body::Text(scrub(secrets, text))
        }
    };
    // Headers.
    let keep = |n: &str| opts.keep_headers.iter().any(|k| k.eq_ignore_ascii_case(n));
    for (i, (n, v)) in x.headers.iter().enumerate() {
        let lower = n.to_ascii_lowercase();
        if (noise(n) && !keep(n)) || lower == "cookie" {
            continue;
        }
        if lower == "content-type"
            && matches!(step.body, Body::Json(_) | Body::Form(_))
            && (v.contains("json") || v.contains("x-www-form-urlencoded"))
        {
            continue;
        }
        if lower == "accept"
            && !keep(n)
            && (v == "*/*" || v.starts_with("text/html") || v.starts_with("image/"))
        {
            continue;
        }
        let (value, comment) = match subs.header.get(&i) {
            Some((text, e)) => (
                v.split(text.as_str())
                    .map(|p| scrub(secrets, p))
                    .collect::<Vec<_>>()
                    .join(e),
                None,
            ),
            None if lower == "authorization" => {
                let (t, c) = secrets.authorization(v);
                (t, Some(c))
            }
            None => match secrets.header_value(n, v, "the recording") {
                Some((t, c)) => (t, Some(c)),
                None => (scrub(secrets, v), None),
            },
        };
        step.headers.push((n.clone(), value, comment));
    }
    // Cookies: one Cookie header, each cookie a variable or an environment variable.
    let cookies: Vec<(String, String)> = x
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("cookie"))
        .flat_map(|(_, v)| {
            v.split(';')
                .filter_map(|p| p.split_once('='))
                .map(|(a, b)| (a.trim().to_string(), b.trim().to_string()))
                .collect::<Vec<_>>()
        })
        .collect();
    if !cookies.is_empty() {
        let mut from_env = Vec::new();
        let parts: Vec<String> = cookies
            .iter()
            .map(|(n, v)| match subs.cookie.get(n) {
                Some(e) => e.clone(),
                None => {
                    let var = secrets.var(n, v, &format!("cookie `{n}`"));
                    from_env.push(format!(
                        "cookie `{n}` came from the recording; set env.{var}"
                    ));
                    format!("{}={{{{ env.{var} }}}}", literal(n))
                }
            })
            .collect();
        let comment = (!from_env.is_empty()).then(|| from_env.join("; "));
        step.headers
            .push(("Cookie".into(), parts.join("; "), comment));
    }
    step.comments = comments;
    if (200..400).contains(&x.status) && !step.sse {
        step.status = Some(x.status.to_string());
    } else if !step.sse {
        step.comments.push(format!(
            "recorded status {}: not a success, so no status check",
            x.status
        ));
    }
    step
}

/// The variable in `{{ var ... }}`.
fn var_of(expr: &str) -> &str {
    expr.trim_start_matches("{{")
        .trim()
        .split([' ', '|', '}'])
        .next()
        .unwrap_or("")
}

/// `text` as literal template text with every known credential replaced by its variable.
fn scrub(secrets: &Secrets, text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    'outer: while !rest.is_empty() {
        let mut best: Option<(usize, &str, &str)> = None;
        for (value, var) in secrets.values() {
            if value.len() >= 4
                && let Some(at) = rest.find(value)
                && best.is_none_or(|(b, _, _)| at < b)
            {
                best = Some((at, value, var));
            }
        }
        match best {
            Some((at, value, var)) => {
                out.push_str(&literal(&rest[..at]));
                // A `{` just before would make `{{{`, which opens the expression one brace
                // early: write that brace as text of its own.
                if out.ends_with('{') {
                    out.pop();
                    out.push_str("{{ \"{\" }}");
                }
                out.push_str(&format!("{{{{ env.{var} }}}}"));
                rest = &rest[at + value.len()..];
            }
            None => {
                out.push_str(&literal(rest));
                break 'outer;
            }
        }
    }
    out
}
