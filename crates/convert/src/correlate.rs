//! Correlation: a value the server sent (a JSON field, a `Location` header, a cookie from
//! `Set-Cookie`) that a later request sends back (in its path, query, body, a header or a
//! cookie) becomes an `extract` on the step that received it and a template where it is
//! sent, so that each virtual user carries its own ids instead of the recorded ones.
//!
//! Which values count: a value the client had already sent before the response came is the
//! user's input, not the server's (a room's name echoed back), and is never correlated. A
//! distinctive value (text of 6+ characters that is not a plain lowercase word, a number of 5+
//! digits) is correlated wherever it is sent; a short one (`7`, `21`) only where the names
//! agree — `roomId` in a body or `/rooms/21` in a path with the `id` that `POST /rooms`
//! returned — so that `userId: 7` is not tied to the 7th room of a list. The first response
//! that carried the value is the one it is extracted from.

use std::collections::{HashMap, HashSet};

use crate::exchange::{Exchange, ReqBody, decode_path, leaves, url_safe};
use crate::step::Source;
use crate::text::{Names, singular, snake};

/// Where a request gets templates instead of recorded text.
#[derive(Debug, Default, Clone)]
pub(crate) struct Subs {
    /// Path segment index → expression.
    pub path: HashMap<usize, String>,
    /// Query pair index → expression.
    pub query: HashMap<usize, String>,
    /// JSON pointer → expression.
    pub json: HashMap<String, String>,
    /// Form field index → expression.
    pub form: HashMap<usize, String>,
    /// Header index → (recorded text, expression) to replace in its value.
    pub header: HashMap<usize, (String, String)>,
    /// Cookie name → the whole `name=value` pair as an expression.
    pub cookie: HashMap<String, String>,
    /// A path prefix (bytes of the raw path) that a `Location` gave → expression.
    pub prefix: Option<(usize, String)>,
}

/// A value a response carried.
#[derive(Debug, Clone)]
struct Produced {
    text: String,
    source: Source,
    /// The name it goes by (`room_id` for the `id` of `POST /rooms`).
    name: String,
    /// Another name it may go by (the key as it is, `id`).
    key: String,
    kind: Kind,
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Json,
    Location,
    /// A cookie; `first` when it is the response's first Set-Cookie header (the one
    /// `extract: { header: Set-Cookie }` reads).
    Cookie {
        name: String,
        first: bool,
    },
}

/// A value a request sends.
#[derive(Debug)]
struct Sent {
    text: String,
    /// The name it goes under (`room_id` for the segment after `/rooms/`).
    name: String,
    at: At,
}

#[derive(Debug, Clone)]
enum At {
    Path(usize),
    Query(usize, bool),
    Json(String),
    Form(usize),
    Header(usize),
    Cookie(String),
}

/// Whether `text` is unlikely to appear by chance.
fn distinctive(text: &str, number: bool) -> bool {
    if number {
        return text.trim_start_matches('-').len() >= 5;
    }
    text.chars().count() >= 6
        && !text.chars().any(char::is_whitespace)
        && !text.chars().all(|c| c.is_ascii_lowercase())
}

fn names_agree(a: &str, b: &str) -> bool {
    let (a, b) = (snake(a), snake(b));
    a == b && a != "value"
}

/// The last path segment that names a resource (not a number, not an id we know of).
fn resource(x: &Exchange) -> String {
    x.segments()
        .iter()
        .rev()
        .find(|s| !s.is_empty() && !s.chars().all(|c| c.is_ascii_digit()))
        .map(|s| singular(&decode_path(s)))
        .unwrap_or_else(|| "item".into())
}

fn produced(x: &Exchange) -> Vec<Produced> {
    let mut out = Vec::new();
    if let Some(doc) = &x.resp_json {
        for l in leaves(doc) {
            let key = l.key.clone().unwrap_or_else(|| {
                l.parent_key
                    .clone()
                    .map(|p| singular(&p))
                    .unwrap_or_else(|| "value".into())
            });
            let name = if snake(&key) == "id" {
                let owner = l
                    .parent_key
                    .as_deref()
                    .map(singular)
                    .unwrap_or_else(|| resource(x));
                format!("{owner}_id")
            } else {
                snake(&key)
            };
            let _ = l.number;
            out.push(Produced {
                text: l.text,
                source: Source::Json(l.path),
                name,
                key: snake(&key),
                kind: Kind::Json,
            });
        }
    }
    let mut first_cookie = true;
    for (n, v) in &x.resp_headers {
        if n.eq_ignore_ascii_case("location") && !v.is_empty() {
            out.push(Produced {
                text: v.clone(),
                source: Source::Header("Location".into()),
                name: "location".into(),
                key: "location".into(),
                kind: Kind::Location,
            });
        }
        if n.eq_ignore_ascii_case("set-cookie") {
            let pair = v.split(';').next().unwrap_or("");
            if let Some((cn, cv)) = pair.split_once('=') {
                let cn = cn.trim().to_string();
                out.push(Produced {
                    text: cv.trim().to_string(),
                    source: Source::Header("Set-Cookie".into()),
                    name: format!("{}_cookie", snake(&cn)),
                    key: snake(&cn),
                    kind: Kind::Cookie {
                        name: cn,
                        first: first_cookie,
                    },
                });
            }
            first_cookie = false;
        }
    }
    out
}

/// Everything a request sends, with the name each value goes under.
fn sent(x: &Exchange) -> Vec<Sent> {
    let mut out = Vec::new();
    let segs = x.segments();
    for (i, s) in segs.iter().enumerate() {
        if s.is_empty() {
            continue;
        }
        let name = match i.checked_sub(1).map(|p| &segs[p]) {
            Some(prev) if !prev.is_empty() => format!("{}_id", singular(&decode_path(prev))),
            _ => "value".into(),
        };
        out.push(Sent {
            text: decode_path(s),
            name,
            at: At::Path(i),
        });
    }
    for (i, (_, _, n, v)) in x.query().into_iter().enumerate() {
        let safe = url_safe(&v);
        out.push(Sent {
            text: v,
            name: snake(&n),
            at: At::Query(i, safe),
        });
    }
    match &x.body {
        ReqBody::Json(v) => {
            for l in leaves(v) {
                let name = l
                    .key
                    .clone()
                    .map(|k| snake(&k))
                    .unwrap_or_else(|| "value".into());
                out.push(Sent {
                    text: l.text,
                    name,
                    at: At::Json(l.pointer),
                });
            }
        }
        ReqBody::Form(fields) => {
            for (i, (n, v)) in fields.iter().enumerate() {
                out.push(Sent {
                    text: v.clone(),
                    name: snake(n),
                    at: At::Form(i),
                });
            }
        }
        _ => {}
    }
    for (i, (n, v)) in x.headers.iter().enumerate() {
        if n.eq_ignore_ascii_case("cookie") {
            for pair in v.split(';') {
                if let Some((cn, cv)) = pair.split_once('=') {
                    out.push(Sent {
                        text: cv.trim().to_string(),
                        name: snake(cn.trim()),
                        at: At::Cookie(cn.trim().to_string()),
                    });
                }
            }
        } else {
            let value = v
                .split_once(' ')
                .filter(|(s, _)| s.eq_ignore_ascii_case("bearer"))
                .map_or(v.as_str(), |(_, t)| t);
            out.push(Sent {
                text: value.to_string(),
                name: snake(n),
                at: At::Header(i),
            });
        }
    }
    out
}

/// The extracts per exchange and the substitutions per request.
pub(crate) struct Correlation {
    pub subs: Vec<Subs>,
    pub extracts: Vec<Vec<(String, Source, Option<String>)>>,
}

pub(crate) fn correlate(xs: &[Exchange]) -> Correlation {
    let mut subs = vec![Subs::default(); xs.len()];
    let mut extracts: Vec<Vec<(String, Source, Option<String>)>> = vec![Vec::new(); xs.len()];
    let mut names = Names::default();
    // (exchange, source) → variable
    let mut vars: HashMap<(usize, String), String> = HashMap::new();
    let mut client_sent: HashSet<String> = HashSet::new();
    // Values the server sent, with the exchange they came from, eligible ones only.
    let mut pool: Vec<(usize, Produced)> = Vec::new();
    // The pool's entries by text, in pool order, and its Locations: every lookup below is
    // by text, so a recording of 20,000 entries is not 20,000 scans of the pool.
    let mut by_text: HashMap<String, Vec<usize>> = HashMap::new();
    let mut locations: Vec<usize> = Vec::new();
    for (j, x) in xs.iter().enumerate() {
        let here = sent(x);
        for s in &here {
            if s.text.is_empty() {
                continue;
            }
            let number = s.text.parse::<i64>().is_ok();
            let candidates = by_text.get(&s.text).map_or(&[][..], Vec::as_slice);
            let hit = candidates.iter().map(|&k| &pool[k]).find(|(_, p)| {
                p.text == s.text
                    && match (&p.kind, &s.at) {
                        // `extract: { header: Set-Cookie }` reads a response's first Set-Cookie only.
                        (Kind::Cookie { first: false, .. }, _) => false,
                        (Kind::Cookie { name, .. }, At::Cookie(c)) => name == c,
                        (Kind::Cookie { .. }, _) => distinctive(&s.text, number),
                        (Kind::Location, _) => false,
                        (Kind::Json, At::Cookie(_)) => distinctive(&s.text, number),
                        (Kind::Json, _) => {
                            distinctive(&s.text, number)
                                || names_agree(&s.name, &p.name)
                                || names_agree(&s.name, &p.key)
                        }
                    }
            });
            let Some((i, p)) = hit.cloned() else { continue };
            let src_key = format!("{:?}", p.source);
            let var = vars
                .entry((i, src_key))
                .or_insert_with(|| {
                    let var = names.unique(&p.name);
                    let comment = Some(format!("sent back by {} {}", x.method, x.url.path()));
                    extracts[i].push((var.clone(), p.source.clone(), comment));
                    var
                })
                .clone();
            let sub = &mut subs[j];
            match (&s.at, &p.kind) {
                (At::Path(k), _) => {
                    sub.path.insert(*k, format!("{{{{ {var} }}}}"));
                }
                (At::Query(k, safe), _) => {
                    let e = if *safe {
                        format!("{{{{ {var} }}}}")
                    } else {
                        format!("{{{{ {var} | urlencode }}}}")
                    };
                    sub.query.insert(*k, e);
                }
                (At::Json(ptr), _) => {
                    sub.json.insert(ptr.clone(), format!("{{{{ {var} }}}}"));
                }
                (At::Form(k), _) => {
                    sub.form.insert(*k, format!("{{{{ {var} }}}}"));
                }
                (At::Header(k), _) => {
                    sub.header
                        .insert(*k, (s.text.clone(), format!("{{{{ {var} }}}}")));
                }
                (At::Cookie(c), Kind::Cookie { .. }) => {
                    sub.cookie
                        .insert(c.clone(), format!("{{{{ {var} | split(';') | first }}}}"));
                }
                (At::Cookie(c), _) => {
                    sub.cookie.insert(c.clone(), format!("{c}={{{{ {var} }}}}"));
                }
            }
        }
        // A Location the server gave, followed by a request under it.
        if subs[j].path.is_empty() {
            let path = x.url.path();
            let hit = locations.iter().map(|&k| &pool[k]).find(|(_, p)| {
                p.kind == Kind::Location && {
                    let loc = location_path(&p.text);
                    loc.len() > 1
                        && (path == loc
                            || path.starts_with(&format!("{}/", loc.trim_end_matches('/'))))
                }
            });
            if let Some((i, p)) = hit.cloned()
                && !p.text.contains('?')
            {
                let var = vars
                    .entry((i, "location".into()))
                    .or_insert_with(|| {
                        let var = names.unique("location");
                        extracts[i].push((
                            var.clone(),
                            p.source.clone(),
                            Some(format!("followed by {} {}", x.method, path)),
                        ));
                        var
                    })
                    .clone();
                let loc = location_path(&p.text);
                let expr = if p.text.starts_with('/') {
                    format!("{{{{ {var} }}}}")
                } else {
                    format!("{{{{ {var} | replace('{}', '') }}}}", origin(&p.text))
                };
                subs[j].prefix = Some((loc.trim_end_matches('/').len(), expr));
            }
        }
        for s in &here {
            client_sent.insert(s.text.clone());
        }
        for p in produced(x) {
            let same = by_text.get(&p.text).map_or(&[][..], Vec::as_slice);
            if !p.text.is_empty()
                && !client_sent.contains(&p.text)
                && !same.iter().any(|&k| pool[k].1.kind == p.kind)
            {
                if p.kind == Kind::Location {
                    locations.push(pool.len());
                }
                by_text.entry(p.text.clone()).or_default().push(pool.len());
                pool.push((j, p));
            }
        }
    }
    Correlation { subs, extracts }
}

/// The path of a Location value (relative or absolute).
fn location_path(loc: &str) -> String {
    match url::Url::parse(loc) {
        Ok(u) => u.path().to_string(),
        Err(_) => loc.split(['?', '#']).next().unwrap_or("").to_string(),
    }
}

fn origin(loc: &str) -> String {
    url::Url::parse(loc)
        .map(|u| u.origin().ascii_serialization())
        .unwrap_or_default()
}
