//! Reading values out of a response (`extract`) and judging it (`check`), without I/O:
//! the engine hands over the status, headers and body it received.

use regex::Regex;
use serde_json_path::JsonPath;

use crate::Error;
use crate::plan::StatusSet;

/// A response as extraction and checks see it.
#[derive(Debug, Clone, Copy)]
pub struct ResponseView<'a> {
    /// HTTP status.
    pub status: u16,
    /// Headers as received (names in any case).
    pub headers: &'a [(String, String)],
    /// The body (possibly cut at the engine's capture limit).
    pub body: &'a [u8],
}

impl ResponseView<'_> {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Result<serde_json::Value, String> {
        serde_json::from_slice(self.body).map_err(|e| format!("the body is not JSON ({e})"))
    }
}

/// Where an extracted value comes from.
#[derive(Debug, Clone)]
pub enum Source {
    /// The first match of a JSONPath query on the JSON body.
    Json(JsonPath, String),
    /// A response header.
    Header(String),
    /// The first capture group (or the whole match) of a regex on the body.
    Regex(Regex),
}

/// One `extract` entry: a VU variable and where its value comes from.
#[derive(Debug, Clone)]
pub struct Extract {
    /// The variable.
    pub var: String,
    /// Where from.
    pub source: Source,
    /// Used when nothing matches; without it, no match is a failed check.
    pub default: Option<serde_json::Value>,
}

/// Parses a JSONPath query, saying what is wrong.
pub fn parse_json_path(q: &str) -> Result<JsonPath, Error> {
    JsonPath::parse(q).map_err(|e| {
        Error::value(format!(
            "`{q}` is not a JSONPath query ({e}); write it like $.accessCode or $.items[0].id"
        ))
    })
}

impl Extract {
    /// The extracted value, as JSON (strings for headers and regex captures).
    pub fn apply(
        &self,
        r: &ResponseView<'_>,
        json: &mut Option<serde_json::Value>,
    ) -> Result<serde_json::Value, Error> {
        let found = match &self.source {
            Source::Json(path, q) => {
                let doc = cached_json(r, json)?;
                path.query(doc)
                    .first()
                    .cloned()
                    .ok_or_else(|| format!("`{q}` matched nothing"))
            }
            Source::Header(name) => r
                .header(name)
                .map(|v| serde_json::Value::String(v.to_string()))
                .ok_or_else(|| format!("no `{name}` header")),
            Source::Regex(re) => {
                let text = String::from_utf8_lossy(r.body);
                re.captures(&text)
                    .map(|c| {
                        c.get(1)
                            .or_else(|| c.get(0))
                            .map_or("", |m| m.as_str())
                            .to_string()
                    })
                    .map(serde_json::Value::String)
                    .ok_or_else(|| format!("regex `{}` matched nothing", re.as_str()))
            }
        };
        match (found, &self.default) {
            (Ok(v), _) => Ok(v),
            (Err(_), Some(d)) => Ok(d.clone()),
            (Err(e), None) => Err(Error::value(format!("extract `{}`: {e}", self.var))),
        }
    }
}

fn cached_json<'j>(
    r: &ResponseView<'_>,
    json: &'j mut Option<serde_json::Value>,
) -> Result<&'j serde_json::Value, String> {
    if json.is_none() {
        *json = Some(r.json()?);
    }
    Ok(json.as_ref().expect("just parsed"))
}

/// The value a JSONPath check expects.
#[derive(Debug, Clone)]
pub enum Expected {
    /// As written.
    Value(serde_json::Value),
    /// A template (`"{{ code }}"`), rendered for each response and compared as text.
    Template(crate::template::Template),
}

/// What a response must satisfy beyond its status.
#[derive(Debug, Clone, Default)]
pub struct Check {
    /// Statuses that count as success (the scenario's default when `None`).
    pub status: Option<StatusSet>,
    /// JSONPath queries and the value each must equal.
    pub json_equals: Vec<(JsonPath, String, Expected)>,
    /// JSONPath queries that must match something.
    pub json_exists: Vec<(JsonPath, String)>,
    /// Text the body must contain.
    pub body_contains: Vec<String>,
}

impl Check {
    /// Whether there is anything to check beyond the status.
    pub fn reads_body(&self) -> bool {
        !self.json_equals.is_empty()
            || !self.json_exists.is_empty()
            || !self.body_contains.is_empty()
    }

    /// `Err` with the first failed condition; `render` renders expected templates.
    pub fn judge(
        &self,
        r: &ResponseView<'_>,
        json: &mut Option<serde_json::Value>,
        render: &dyn Fn(&crate::template::Template) -> Result<String, Error>,
    ) -> Result<(), Error> {
        for (path, q, expected) in &self.json_equals {
            let want = match expected {
                Expected::Value(v) => v.clone(),
                Expected::Template(t) => serde_json::Value::String(render(t)?),
            };
            let want = &want;
            let doc = cached_json(r, json)?;
            match path.query(doc).first() {
                Some(got) if loosely_equal(got, want) => {}
                Some(got) => return Err(Error::value(format!("`{q}` is {got}, expected {want}"))),
                None => {
                    return Err(Error::value(format!(
                        "`{q}` matched nothing, expected {want}"
                    )));
                }
            }
        }
        for (path, q) in &self.json_exists {
            if path.query(cached_json(r, json)?).is_empty() {
                return Err(Error::value(format!("`{q}` matched nothing")));
            }
        }
        for text in &self.body_contains {
            if !contains(r.body, text.as_bytes()) {
                return Err(Error::value(format!("the body does not contain `{text}`")));
            }
        }
        Ok(())
    }
}

/// Whether `value` is written as `text` (its `Display`), compared as it is written, without
/// building the string.
fn writes_as(value: &impl std::fmt::Display, text: &str) -> bool {
    struct Rest<'a>(Option<&'a str>);
    impl std::fmt::Write for Rest<'_> {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0 = self.0.and_then(|rest| rest.strip_prefix(s));
            Ok(())
        }
    }
    let mut rest = Rest(Some(text));
    let _ = std::fmt::write(&mut rest, format_args!("{value}"));
    rest.0 == Some("")
}

/// Equal as JSON, or as text when one side is a string (`"42"` matches `42`).
fn loosely_equal(got: &serde_json::Value, want: &serde_json::Value) -> bool {
    use serde_json::Value as V;
    match (got, want) {
        (V::String(text), other) | (other, V::String(text)) if !other.is_string() => {
            writes_as(other, text)
        }
        (V::Number(a), V::Number(b)) => a.as_f64() == b.as_f64(),
        (a, b) => a == b,
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view<'a>(headers: &'a [(String, String)], body: &'a [u8]) -> ResponseView<'a> {
        ResponseView {
            status: 200,
            headers,
            body,
        }
    }

    #[test]
    fn extracts_from_json_headers_and_regex() {
        let headers = vec![("X-Token".to_string(), "t0k".to_string())];
        let body = br#"{"accessCode":"AB12","items":[{"id":7}],"html":"id=99"}"#;
        let r = view(&headers, body);
        let mut cache = None;
        let j = Extract {
            var: "code".into(),
            source: Source::Json(
                parse_json_path("$.accessCode").unwrap(),
                "$.accessCode".into(),
            ),
            default: None,
        };
        assert_eq!(j.apply(&r, &mut cache).unwrap(), serde_json::json!("AB12"));
        let n = Extract {
            var: "id".into(),
            source: Source::Json(
                parse_json_path("$.items[0].id").unwrap(),
                "$.items[0].id".into(),
            ),
            default: None,
        };
        assert_eq!(n.apply(&r, &mut cache).unwrap(), serde_json::json!(7));
        let h = Extract {
            var: "tok".into(),
            source: Source::Header("x-token".into()),
            default: None,
        };
        assert_eq!(h.apply(&r, &mut cache).unwrap(), serde_json::json!("t0k"));
        let re = Extract {
            var: "n".into(),
            source: Source::Regex(Regex::new(r"id=(\d+)").unwrap()),
            default: None,
        };
        assert_eq!(re.apply(&r, &mut cache).unwrap(), serde_json::json!("99"));
        let miss = Extract {
            var: "x".into(),
            source: Source::Json(parse_json_path("$.nope").unwrap(), "$.nope".into()),
            default: None,
        };
        assert_eq!(
            miss.apply(&r, &mut cache).unwrap_err(),
            "extract `x`: `$.nope` matched nothing"
        );
        let dflt = Extract {
            default: Some(serde_json::json!("none")),
            ..miss
        };
        assert_eq!(
            dflt.apply(&r, &mut cache).unwrap(),
            serde_json::json!("none")
        );
    }

    #[test]
    fn checks_fail_with_the_reason() {
        let body = br#"{"status":"OPEN","count":"3"}"#;
        let r = view(&[], body);
        let q = |s: &str| (parse_json_path(s).unwrap(), s.to_string());
        let mut c = Check::default();
        let (p, s) = q("$.status");
        c.json_equals
            .push((p, s, Expected::Value(serde_json::json!("OPEN"))));
        let (p, s) = q("$.count");
        c.json_equals
            .push((p, s, Expected::Value(serde_json::json!(3))));
        let (p, s) = q("$.status");
        c.json_equals.push((
            p,
            s,
            Expected::Template(crate::template::Template::Literal("{{ status }}".into())),
        ));
        c.body_contains.push("OPEN".into());
        let render = |_: &crate::template::Template| Ok::<_, Error>("OPEN".to_string());
        assert!(c.judge(&r, &mut None, &render).is_ok());
        c.json_exists.push(q("$.owner"));
        assert_eq!(
            c.judge(&r, &mut None, &render).unwrap_err(),
            "`$.owner` matched nothing"
        );
        let mut c2 = Check::default();
        c2.body_contains.push("CLOSED".into());
        assert_eq!(
            c2.judge(&r, &mut None, &render).unwrap_err(),
            "the body does not contain `CLOSED`"
        );
        let bad = view(&[], b"<html>");
        c2.json_exists.push(q("$.x"));
        c2.body_contains.clear();
        assert!(
            c2.judge(&bad, &mut None, &render)
                .unwrap_err()
                .to_string()
                .starts_with("the body is not JSON")
        );
        assert!(
            parse_json_path("accessCode")
                .unwrap_err()
                .to_string()
                .contains("is not a JSONPath query")
        );
    }
}
