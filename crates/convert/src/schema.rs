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
    make(doc, schema, writing, 0, "")
}

fn make(doc: &Value, schema: &Value, writing: bool, depth: usize, name: &str) -> Value {
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
            if let Value::Object(m) = make(doc, part, writing, depth + 1, name) {
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
            return make(doc, first, writing, depth + 1, name);
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
                    out.insert(k.clone(), make(doc, p, writing, depth + 1, k));
                }
            }
            Value::Object(out)
        }
        "array" => {
            let item = s
                .get("items")
                .map_or(json!("string"), |i| make(doc, i, writing, depth + 1, name));
            Value::Array(vec![item])
        }
        "integer" => json!(
            num("minimum")
                .map_or(1, |m| m.ceil() as i64)
                .max(num("exclusiveMinimum").map_or(i64::MIN, |m| m as i64 + 1))
        ),
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
            let min = s.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
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
}
