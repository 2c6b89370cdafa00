//! Example values from an OpenAPI document: a schema's own `example`/`examples`/`default`/
//! `const`/first `enum` value when it has one, else a value generated from its type, format,
//! bounds and properties (3.0's `nullable` and 3.1's type lists alike).

use serde_json::{Map, Value, json};

/// Resolves a local `$ref` (`#/components/schemas/Pet`); `None` for other documents.
pub(crate) fn resolve<'a>(doc: &'a Value, v: &'a Value) -> Option<&'a Value> {
    let mut v = v;
    for _ in 0..32 {
        match v.get("$ref").and_then(Value::as_str) {
            Some(r) => v = doc.pointer(r.strip_prefix('#')?)?,
            None => return Some(v),
        }
    }
    None
}

/// An example for `schema`; `writing` leaves out `readOnly` properties (a request body).
pub(crate) fn example(doc: &Value, schema: &Value, writing: bool) -> Value {
    let mut walk = Walk::default();
    walk.make(doc, schema, writing, 0, "")
}

/// Longest string example generated to meet a `minLength`.
const MAX_EXAMPLE_LEN: u64 = 4096;

/// Most schema nodes one example is built from: a document whose schemas refer to each
/// other many times over (12 properties, each a `$ref` to its own schema, is 12⁸ nodes at
/// depth 8) gets `null` beyond this, instead of exhausting memory.
pub(crate) const NODE_BUDGET: usize = 10_000;

/// A walk through a schema: the `$ref`s being expanded (one met again is a recursion, and
/// stops there) and the nodes it may still visit.
#[derive(Default)]
pub(crate) struct Walk {
    refs: Vec<String>,
    visited: usize,
}

impl Walk {
    /// Enters `schema`: `None` when it recurses into a `$ref` being expanded or the budget
    /// is spent; else whether a `$ref` was pushed (to pop with [`Walk::leave`]).
    pub(crate) fn enter(&mut self, schema: &Value) -> Option<bool> {
        self.visited += 1;
        if self.visited > NODE_BUDGET {
            return None;
        }
        match schema.get("$ref").and_then(Value::as_str) {
            Some(r) if self.refs.iter().any(|x| x == r) => None,
            Some(r) => {
                self.refs.push(r.to_string());
                Some(true)
            }
            None => Some(false),
        }
    }

    pub(crate) fn leave(&mut self, pushed: bool) {
        if pushed {
            self.refs.pop();
        }
    }

    fn make(
        &mut self,
        doc: &Value,
        schema: &Value,
        writing: bool,
        depth: usize,
        name: &str,
    ) -> Value {
        let Some(pushed) = self.enter(schema) else {
            return Value::Null;
        };
        let v = self.make_in(doc, schema, writing, depth, name);
        self.leave(pushed);
        v
    }

    fn make_in(
        &mut self,
        doc: &Value,
        schema: &Value,
        writing: bool,
        depth: usize,
        name: &str,
    ) -> Value {
        let Some(s) = resolve(doc, schema) else {
            return Value::Null;
        };
        if depth > 8 {
            return Value::Null;
        }
        if let Some(e) = s.get("example") {
            return e.clone();
        }
        if let Some(e) = s
            .get("examples")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
        {
            return e.clone();
        }
        for k in ["const", "default"] {
            if let Some(v) = s.get(k) {
                return v.clone();
            }
        }
        if let Some(v) = s
            .get("enum")
            .and_then(Value::as_array)
            .and_then(|a| a.iter().find(|v| !v.is_null()))
        {
            return v.clone();
        }
        if let Some(all) = s.get("allOf").and_then(Value::as_array) {
            let mut merged = Map::new();
            for part in all {
                if let Value::Object(m) = self.make(doc, part, writing, depth + 1, name) {
                    merged.extend(m);
                }
            }
            return Value::Object(merged);
        }
        for k in ["oneOf", "anyOf"] {
            if let Some(first) = s.get(k).and_then(Value::as_array).and_then(|a| {
                a.iter()
                    .find(|v| resolve(doc, v).and_then(|r| r.get("type")) != Some(&json!("null")))
            }) {
                return self.make(doc, first, writing, depth + 1, name);
            }
        }
        let ty = match s.get("type") {
            Some(Value::String(t)) => t.clone(),
            Some(Value::Array(ts)) => ts
                .iter()
                .filter_map(Value::as_str)
                .find(|t| *t != "null")
                .unwrap_or("null")
                .to_string(),
            _ if s.get("properties").is_some() => "object".into(),
            _ if s.get("items").is_some() => "array".into(),
            _ => "string".into(),
        };
        let num = |k: &str| s.get(k).and_then(Value::as_f64);
        match ty.as_str() {
            "object" => {
                let mut out = Map::new();
                if let Some(props) = s.get("properties").and_then(Value::as_object) {
                    for (k, p) in props {
                        let read_only = resolve(doc, p)
                            .and_then(|p| p.get("readOnly"))
                            .and_then(Value::as_bool)
                            .unwrap_or(false);
                        if writing && read_only {
                            continue;
                        }
                        out.insert(k.clone(), self.make(doc, p, writing, depth + 1, k));
                    }
                }
                Value::Object(out)
            }
            "array" => {
                let item = s.get("items").map_or(json!("string"), |i| {
                    self.make(doc, i, writing, depth + 1, name)
                });
                Value::Array(vec![item])
            }
            "integer" => {
                json!(num("minimum").map_or(1, |m| m.ceil() as i64).max(
                    num("exclusiveMinimum").map_or(i64::MIN, |m| (m as i64).saturating_add(1))
                ))
            }
            "number" => json!(num("minimum").unwrap_or(1.5)),
            "boolean" => json!(true),
            "null" => Value::Null,
            _ => {
                let text = match s.get("format").and_then(Value::as_str) {
                    Some("date-time") => "2026-01-01T12:00:00Z".to_string(),
                    Some("date") => "2026-01-01".into(),
                    Some("time") => "12:00:00".into(),
                    Some("email") => "user@example.com".into(),
                    Some("uuid") => "3fa85f64-5717-4562-b3fc-2c963f66afa6".into(),
                    Some("uri" | "url") => "https://example.com/".into(),
                    Some("hostname") => "example.com".into(),
                    Some("ipv4") => "127.0.0.1".into(),
                    Some("ipv6") => "::1".into(),
                    Some("byte") => "ZXhhbXBsZQ==".into(),
                    _ => {
                        if name.is_empty() {
                            "example".into()
                        } else {
                            format!("example {name}")
                        }
                    }
                };
                // A generated example is at most MAX_EXAMPLE_LEN long, whatever minLength asks:
                // a `minLength: 1e12` must not fill memory (the server may then refuse the
                // example, and `volley check` shows it).
                let min = s
                    .get("minLength")
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
                    .min(MAX_EXAMPLE_LEN) as usize;
                let max = s
                    .get("maxLength")
                    .and_then(Value::as_u64)
                    .map_or(usize::MAX, |m| m as usize);
                let mut t = text;
                while t.len() < min {
                    t.push('x');
                }
                t.truncate(max.max(1));
                json!(t)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_from_types_formats_and_refs() {
        let doc = json!({"components": {"schemas": {
            "Status": {"type": "string", "enum": ["OPEN", "CLOSED"]},
            "Room": {"type": "object", "required": ["name"], "properties": {
                "id": {"type": "integer", "readOnly": true},
                "name": {"type": "string", "minLength": 3},
                "status": {"$ref": "#/components/schemas/Status"},
                "at": {"type": "string", "format": "date-time"},
                "owner": {"type": ["string", "null"], "format": "email"},
                "tags": {"type": "array", "items": {"type": "string", "examples": ["red"]}},
                "size": {"type": "integer", "minimum": 10}
            }}
        }}});
        let room = json!({"$ref": "#/components/schemas/Room"});
        let v = example(&doc, &room, true);
        assert_eq!(
            v,
            json!({"name": "example name", "status": "OPEN", "at": "2026-01-01T12:00:00Z", "owner": "user@example.com", "tags": ["red"], "size": 10})
        );
        assert_eq!(example(&doc, &room, false)["id"], json!(1));
        assert_eq!(
            example(&doc, &json!({"type": "string", "example": "given"}), true),
            json!("given")
        );
    }

    #[test]
    fn recursive_and_fanned_out_schemas_stay_bounded() {
        // 12 properties, each a $ref to its own schema: 12^8 nodes without the guard.
        let props: serde_json::Map<String, Value> = (0..12)
            .map(|i| {
                (
                    format!("p{i}"),
                    json!({"$ref": "#/components/schemas/Node"}),
                )
            })
            .collect();
        let doc =
            json!({"components": {"schemas": {"Node": {"type": "object", "properties": props}}}});
        let node = json!({"$ref": "#/components/schemas/Node"});
        let v = example(&doc, &node, true);
        // The recursion stops at the first repeat: each property of the node is null.
        assert_eq!(v.as_object().unwrap().len(), 12);
        assert!(v.as_object().unwrap().values().all(Value::is_null), "{v}");
        // Two schemas that refer to each other many times over: bounded by the budget.
        let a: serde_json::Map<String, Value> = (0..12)
            .map(|i| (format!("b{i}"), json!({"$ref": "#/components/schemas/B"})))
            .collect();
        let b: serde_json::Map<String, Value> = (0..12)
            .map(|i| (format!("a{i}"), json!({"$ref": "#/components/schemas/A"})))
            .collect();
        let doc = json!({"components": {"schemas": {
            "A": {"type": "object", "properties": a},
            "B": {"type": "object", "properties": b}
        }}});
        let mut walk = Walk::default();
        walk.make(
            &doc,
            &json!({"$ref": "#/components/schemas/A"}),
            true,
            0,
            "",
        );
        assert!(walk.visited <= NODE_BUDGET + 1, "{}", walk.visited);
        // allOf of 30 self-references.
        let all: Vec<Value> = (0..30)
            .map(|_| json!({"$ref": "#/components/schemas/S"}))
            .collect();
        let doc = json!({"components": {"schemas": {"S": {"allOf": all}}}});
        assert_eq!(
            example(&doc, &json!({"$ref": "#/components/schemas/S"}), true),
            json!({})
        );
        // minLength beyond reason is capped.
        let long = example(
            &doc,
            &json!({"type": "string", "minLength": 1_000_000_000_000u64}),
            true,
        );
        assert_eq!(long.as_str().unwrap().len(), MAX_EXAMPLE_LEN as usize);
    }
}
