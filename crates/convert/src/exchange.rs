//! One recorded request and its response, in the shape correlation and step building need:
//! the URL's path segments and query pairs (raw and decoded), the body as JSON, form fields
//! or text, and every leaf of a JSON document with the query that finds it.

use serde_json::Value;

/// A request body as recorded.
#[derive(Debug, Clone)]
pub(crate) enum ReqBody {
    None,
    Json(Value),
    Form(Vec<(String, String)>),
    Text(String),
}

/// One request/response pair.
#[derive(Debug, Clone)]
pub(crate) struct Exchange {
    pub method: String,
    pub url: url::Url,
    pub headers: Vec<(String, String)>,
    pub body: ReqBody,
    pub status: u16,
    pub resp_headers: Vec<(String, String)>,
    pub resp_json: Option<Value>,
    /// The response is an event stream.
    pub sse: bool,
    //// Start, ms since the first request.
    pub start_ms: f64,
    /// Duration, ms.
    pub time_ms: f64,
}

impl Exchange {
    /// Raw (still percent-encoded) path segments; index 0 is the one after the first `/`.
    pub(crate) fn segments(&self) -> Vec<String> {
        self.url
            .path()
            .trim_start_matches('/')
            .split('/')
            .map(str::to_string)
            .collect()
    }

    /// Raw query pairs `(name, value)` as written, and decoded.
    pub(crate) fn query(&self) -> Vec<(String, String, String, String)> {
        let Some(q) = self.url.query() else {
            return Vec::new();
        };
        q.split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (n, v) = p.split_once('=').unwrap_or((p, ""));
                (
                    n.to_string(),
                    v.to_string(),
                    decode_query(n),
                    decode_query(v),
                )
            })
            .collect()
    }
}

pub(crate) fn decode_query(s: &str) -> String {
    form_urlencoded::parse(format!("x={s}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

pub(crate) fn decode_path(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// Whether a decoded value can go into a URL as it is.
pub(crate) fn url_safe(s: &str) -> bool {
    s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "-._~".contains(c))
}

/// A leaf of a JSON document.
#[derive(Debug, Clone)]
pub(crate) struct Leaf {
    /// RFC 6901 pointer (to substitute in a request body).
    pub pointer: String,
    /// JSONPath query (to extract from a response).
    pub path: String,
    /// The key holding it (none for array items and the root).
    pub key: Option<String>,
    /// The key of the object or array holding it.
    pub parent_key: Option<String>,
    /// The value as text (strings as they are, numbers as written).
    pub text: String,
    /// A number (not a string).
    pub number: bool,
}

/// Every string and integer leaf of `v`.
pub(crate) fn leaves(v: &Value) -> Vec<Leaf> {
    let mut out = Vec::new();
    walk(v, String::new(), "$".into(), None, None, &mut out);
    out
}

fn walk(
    v: &Value,
    pointer: String,
    path: String,
    key: Option<String>,
    parent: Option<String>,
    out: &mut Vec<Leaf>,
) {
    match v {
        Value::String(s) => out.push(Leaf {
            pointer,
            path,
            key,
            parent_key: parent,
            text: s.clone(),
            number: false,
        }),
        Value::Number(n) if n.is_i64() || n.is_u64() => out.push(Leaf {
            pointer,
            path,
            key,
            parent_key: parent,
            text: n.to_string(),
            number: true,
        }),
        Value::Object(m) => {
            for (k, child) in m {
                let p = format!("{pointer}/{}", k.replace('~', "~0").replace('/', "~1"));
                let q = if k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && k.chars().next().is_some_and(|c| !c.is_ascii_digit())
                {
                    format!("{path}.{k}")
                } else {
                    format!(
                        "{path}[{}]",
                        serde_json::to_string(k).expect("string").replace('"', "'")
                    )
                };
                walk(
                    child,
                    p,
                    q,
                    Some(k.clone()),
                    key.clone().or_else(|| parent.clone()),
                    out,
                );
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                walk(
                    child,
                    format!("{pointer}/{i}"),
                    format!("{path}[{i}]"),
                    None,
                    key.clone(),
                    out,
                );
            }
        }
        _ => {}
    }
}

/// Replaces the leaves at `subs` (pointer → template text) and makes every other string
/// literal text.
pub(crate) fn template_json(
    v: &Value,
    pointer: &str,
    subs: &std::collections::HashMap<String, String>,
    lit: &dyn Fn(&str) -> String,
) -> Value {
    if let Some(t) = subs.get(pointer) {
        return Value::String(t.clone());
    }
    match v {
        Value::String(s) => Value::String(lit(s)),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, c)| {
                    (
                        k.clone(),
                        template_json(
                            c,
                            &format!("{pointer}/{}", k.replace('~', "~0").replace('/', "~1")),
                            subs,
                            lit,
                        ),
                    )
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, c)| template_json(c, &format!("{pointer}/{i}"), subs, lit))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_with_paths() {
        let v = serde_json::json!({"id": 21, "room": {"accessCode": "ABC"}, "items": [{"id": "x"}], "a-b": "y", "f": 1.5});
        let l = leaves(&v);
        let by = |p: &str| {
            l.iter()
                .find(|x| x.path == p)
                .unwrap_or_else(|| panic!("{p} in {l:?}"))
        };
        assert_eq!(by("$.id").text, "21");
        assert_eq!(by("$.room.accessCode").parent_key.as_deref(), Some("room"));
        assert_eq!(by("$.items[0].id").parent_key.as_deref(), Some("items"));
        assert_eq!(by("$['a-b']").pointer, "/a-b");
        assert!(!l.iter().any(|x| x.text == "1.5"));
        let mut subs = std::collections::HashMap::new();
        subs.insert("/room/accessCode".to_string(), "{{ code }}".to_string());
        let t = template_json(
            &serde_json::json!({"room": {"accessCode": "ABC"}, "t": "{{x}}"}),
            "",
            &subs,
            &crate::text::literal,
        );
        assert_eq!(
            t,
            serde_json::json!({"room": {"accessCode": "{{ code }}"}, "t": "{{ \"{{\" }}x}}"})
        );
    }
}
