//! The schema side of `grpc:` steps: `.proto` files compiled when the scenario is loaded
//! (protox, a protobuf compiler in Rust: no `protoc`, no generated code), the called method
//! looked up in them, and the request message checked field by field against its type, so a
//! misspelt service, method or field is a line-numbered error before anything is sent.
//!
//! Without `proto`, the engine asks the server by reflection when the run starts and checks
//! the same way ([`find_method`], [`check_message`]).

use std::path::{Path, PathBuf};

pub use prost_reflect::{DescriptorPool, MessageDescriptor, MethodDescriptor};
use prost_reflect::{Kind, ServiceDescriptor};

use crate::Error;
use crate::json::JsonTemplate;
use crate::suggest::suggest;

/// The nearest of `names` to `word`, case aside (protobuf names are mixed case).
fn nearest<'a>(word: &str, names: &[&'a str]) -> Option<&'a str> {
    let lower: Vec<String> = names.iter().map(|n| n.to_ascii_lowercase()).collect();
    let refs: Vec<&str> = lower.iter().map(String::as_str).collect();
    let hit = suggest(word, &refs)?;
    names
        .iter()
        .zip(&refs)
        .find(|(_, l)| **l == hit)
        .map(|(n, _)| *n)
}

/// Compiles `files` (imports resolved next to each file and in `dir`, the scenario's folder;
/// Google's well-known types are built in).
pub fn compile_protos(files: &[PathBuf], dir: &Path) -> Result<DescriptorPool, Error> {
    let mut includes: Vec<PathBuf> = Vec::new();
    let mut canonical = Vec::new();
    for f in files {
        let Some(f) = f.canonicalize().ok().filter(|f| f.is_file()) else {
            return Err(Error::value(format!(
                "`{}` is not a file: give the path of a .proto file, relative to the scenario's folder (or leave `proto` out to ask the server by reflection)",
                f.display()
            )));
        };
        let parent = f.parent().map(Path::to_path_buf).unwrap_or_default();
        if !includes.contains(&parent) {
            includes.push(parent);
        }
        canonical.push(f);
    }
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    if !includes.contains(&dir) {
        includes.push(dir);
    }
    let mut compiler = protox::Compiler::new(&includes).map_err(|e| Error::value(e.to_string()))?;
    compiler.include_imports(true);
    compiler
        .open_files(&canonical)
        .map_err(|e| Error::value(format!("cannot compile the .proto files: {e}")))?;
    Ok(compiler.descriptor_pool())
}

/// Splits `package.Service/Method` (a leading `/` is allowed).
pub fn split_method(text: &str) -> Option<(String, String)> {
    let t = text.trim().trim_start_matches('/');
    let (service, method) = t.rsplit_once('/')?;
    let ok = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    };
    (ok(service) && ok(method) && !method.contains('.'))
        .then(|| (service.to_string(), method.to_string()))
}

/// The method `service/method` in `pool`, or what is there instead.
pub fn find_method(
    pool: &DescriptorPool,
    service: &str,
    method: &str,
    source: &str,
) -> Result<MethodDescriptor, Error> {
    let services: Vec<ServiceDescriptor> = pool.services().collect();
    let Some(s) = services.iter().find(|s| s.full_name() == service) else {
        let names: Vec<&str> = services.iter().map(|s| s.full_name()).collect();
        let hint = nearest(service, &names)
            .or_else(|| {
                names
                    .iter()
                    .find(|n| n.rsplit('.').next() == Some(service))
                    .copied()
            })
            .map(|s| format!("did you mean `{s}`? "))
            .unwrap_or_default();
        let list = if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        };
        return Err(Error::value(format!(
            "{source} has no service `{service}`; {hint}its services are {list} (write the full name, with the package)"
        )));
    };
    let Some(m) = s.methods().find(|m| m.name() == method) else {
        let names: Vec<String> = s.methods().map(|m| m.name().to_string()).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let hint = nearest(method, &refs)
            .map(|s| format!("did you mean `{s}`? "))
            .unwrap_or_default();
        return Err(Error::value(format!(
            "service `{service}` has no method `{method}`; {hint}its methods are {}",
            names.join(", ")
        )));
    };
    if m.is_client_streaming() {
        return Err(Error::value(format!(
            "`{service}/{method}` streams requests from the client; a `grpc` step calls unary and server-streaming methods"
        )));
    }
    Ok(m)
}

/// Problems of a request message written in the file: fields its type does not have
/// (named as in the .proto or in JSON camelCase), at any depth; values are checked when
/// the message is built, after templates are rendered.
pub fn check_message(desc: &MessageDescriptor, message: &JsonTemplate) -> Vec<String> {
    let mut out = Vec::new();
    walk(desc, message, "", &mut out);
    out
}

fn walk(desc: &MessageDescriptor, t: &JsonTemplate, at: &str, out: &mut Vec<String>) {
    // Well-known types have JSON forms of their own (a Timestamp is a string, a Struct any object).
    if desc.full_name().starts_with("google.protobuf.") {
        return;
    }
    let fields = match t {
        JsonTemplate::Object(fields) => fields,
        JsonTemplate::Fixed(serde_json::Value::Null) => return,
        JsonTemplate::Fixed(serde_json::Value::Object(_)) | JsonTemplate::Text(_) => return,
        _ => {
            let what = if at.is_empty() {
                "the message".to_string()
            } else {
                format!("`{at}`")
            };
            out.push(format!(
                "{what} is a `{}` message: write it as a mapping of its fields",
                desc.name()
            ));
            return;
        }
    };
    for (key, value) in fields {
        let path = if at.is_empty() {
            key.clone()
        } else {
            format!("{at}.{key}")
        };
        let Some(field) = desc
            .get_field_by_name(key)
            .or_else(|| desc.get_field_by_json_name(key))
        else {
            let names: Vec<String> = desc.fields().map(|f| f.name().to_string()).collect();
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let hint = nearest(key, &refs)
                .map(|s| format!("did you mean `{s}`? "))
                .unwrap_or_default();
            let list = if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            };
            out.push(format!(
                "`{path}`: message `{}` has no field `{key}`; {hint}its fields are {list}",
                desc.full_name()
            ));
            continue;
        };
        let Kind::Message(inner) = field.kind() else {
            continue;
        };
        if field.is_map() {
            continue;
        }
        match (field.is_list(), value) {
            (true, JsonTemplate::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    walk(&inner, item, &format!("{path}[{i}]"), out);
                }
            }
            (false, v) => walk(&inner, v, &path, out),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(dir: &Path) -> DescriptorPool {
        std::fs::write(
            dir.join("t.proto"),
            "syntax = \"proto3\"; package t.v1; import \"google/protobuf/timestamp.proto\";\n\
             message Inner { string code = 1; }\n\
             message Req { int64 room_id = 1; Inner inner = 2; repeated Inner items = 3; map<string, string> tags = 4; google.protobuf.Timestamp at = 5; }\n\
             message Res { string id = 1; }\n\
             service Svc { rpc Call(Req) returns (Res); rpc Watch(Req) returns (stream Res); rpc Up(stream Req) returns (Res); }",
        )
        .unwrap();
        compile_protos(&[dir.join("t.proto")], dir).unwrap()
    }

    #[test]
    fn methods_are_found_or_named_with_what_exists() {
        let d = tempfile::tempdir().unwrap();
        let p = pool(d.path());
        let m = find_method(&p, "t.v1.Svc", "Call", "t.proto").unwrap();
        assert!(!m.is_server_streaming());
        assert!(
            find_method(&p, "t.v1.Svc", "Watch", "t.proto")
                .unwrap()
                .is_server_streaming()
        );
        let e = find_method(&p, "Svc", "Call", "t.proto").unwrap_err();
        assert!(e.to_string().contains("did you mean `t.v1.Svc`"), "{e}");
        let e = find_method(&p, "t.v1.Svc", "Cal", "t.proto").unwrap_err();
        assert!(
            e.to_string().contains("did you mean `Call`")
                && e.to_string().contains("Call, Watch, Up"),
            "{e}"
        );
        assert!(
            find_method(&p, "t.v1.Svc", "Up", "t.proto")
                .unwrap_err()
                .to_string()
                .contains("client")
        );
        assert_eq!(
            split_method("/t.v1.Svc/Call"),
            Some(("t.v1.Svc".into(), "Call".into()))
        );
        assert_eq!(split_method("t.v1.Svc.Call"), None);
    }

    #[test]
    fn unknown_fields_are_reported_at_any_depth() {
        let d = tempfile::tempdir().unwrap();
        let p = pool(d.path());
        let m = find_method(&p, "t.v1.Svc", "Call", "t.proto").unwrap();
        let obj = |f: Vec<(&str, JsonTemplate)>| {
            JsonTemplate::Object(f.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
        };
        let fixed = |v: serde_json::Value| JsonTemplate::Fixed(v);
        let good = obj(vec![
            ("roomId", fixed(1.into())),
            ("inner", obj(vec![("code", fixed("x".into()))])),
            ("tags", obj(vec![("anything", fixed("y".into()))])),
            ("at", fixed("2024-01-01T00:00:00Z".into())),
        ]);
        assert!(check_message(&m.input(), &good).is_empty());
        let bad = obj(vec![
            ("room", fixed(1.into())),
            (
                "items",
                JsonTemplate::Array(vec![obj(vec![("cod", fixed("x".into()))])]),
            ),
        ]);
        let problems = check_message(&m.input(), &bad);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].contains("has no field `room`") && problems[0].contains("room_id"),
            "{}",
            problems[0]
        );
        assert!(
            problems[1].starts_with("`items[0].cod`")
                && problems[1].contains("did you mean `code`"),
            "{}",
            problems[1]
        );
    }

    #[test]
    fn a_missing_or_broken_proto_says_so() {
        let d = tempfile::tempdir().unwrap();
        let e = compile_protos(&[d.path().join("nope.proto")], d.path()).unwrap_err();
        assert!(e.to_string().contains("is not a file"), "{e}");
        std::fs::write(
            d.path().join("b.proto"),
            "syntax = \"proto3\"; message A { strin x = 1; }",
        )
        .unwrap();
        let e = compile_protos(&[d.path().join("b.proto")], d.path()).unwrap_err();
        assert!(e.to_string().contains("strin"), "{e}");
    }
}
