//! `volley convert openapi`: an OpenAPI 3.0 or 3.1 document (JSON or YAML) as a scenario
//! skeleton — one step per operation, in an order that creates before it reads and deletes
//! last, with example bodies, path parameters as variables (or taken from the response of the
//! operation that created the resource), and a check on the documented success status.
//!
//! The document is read as plain JSON (serde_json / serde-saphyr) rather than with a typed
//! model: the typed crates each read one version (openapiv3: 3.0, oas3: 3.1), and what the
//! converter needs — paths, operations, parameters, request bodies, responses and schemas —
//! is laid out the same in both; the differences (3.0 `nullable`/`example`, 3.1 type lists
//! and `examples`) are handled in [`crate::schema`].

use std::collections::HashMap;

use serde_json::Value;

use crate::exchange::{template_json, url_safe};
use crate::schema::{example, resolve};
use crate::secrets::Secrets;
use crate::step::{Body, Doc, Source, Step};
use crate::text::{Names, literal, singular, snake};
use crate::{Converted, Error, Kind};

/// Which operations, and where.
#[derive(Debug, Clone, Default)]
pub struct OpenApiOptions {
    /// Only operations with one of these tags.
    pub tags: Vec<String>,
    /// Only these operationIds.
    pub operations: Vec<String>,
    /// The base URL (default: the document's first absolute server, else http://127.0.0.1:8080).
    pub target: Option<String>,
    /// How the command was invoked, for the header comment.
    pub command: String,
}

const METHODS: [&str; 6] = ["post", "get", "put", "patch", "head", "delete"];

fn err(msg: String) -> Error {
    Error::new(Kind::OpenApi, msg)
}

struct Op<'a> {
    path: String,
    method: &'static str,
    op: &'a Value,
    params: Vec<&'a Value>,
    order: usize,
}

/// Converts an OpenAPI document's text.
pub fn convert(text: &str, opts: &OpenApiOptions) -> Result<Converted, Error> {
    let doc: Value = if text.trim_start().starts_with('{') {
        serde_json::from_str(text).map_err(|e| err(format!("not JSON: {e}; an OpenAPI document is JSON or YAML with `openapi: 3.x`, `info` and `paths`")))?
    } else {
        serde_saphyr::from_str(text).map_err(|e| err(format!("not YAML: {e}; an OpenAPI document is JSON or YAML with `openapi: 3.x`, `info` and `paths`")))?
    };
    if doc.get("swagger").is_some() {
        return Err(err("this is a Swagger 2.0 document; volley reads OpenAPI 3.0 and 3.1: convert it first (e.g. `npx swagger2openapi swagger.json -o openapi.json`)".into()));
    }
    let version = match doc.get("openapi") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => return Err(err("no `openapi:` version field: an OpenAPI document starts with `openapi: 3.0.3` or `openapi: 3.1.0`".into())),
    };
    if !(version.starts_with("3.0") || version.starts_with("3.1")) {
        return Err(err(format!(
            "`openapi: {version}`: volley reads OpenAPI 3.0 and 3.1"
        )));
    }
    let paths = doc.get("paths").and_then(Value::as_object).ok_or_else(|| {
        err("`paths` is missing or not a mapping: the document has no operations to convert".into())
    })?;

    // Servers: an absolute URL is the target; a relative one (`/v3`) prefixes every path.
    let server = server_url(&doc);
    let server = server.as_str();
    let (server_target, base) = match url::Url::parse(server) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => (
            Some(u.origin().ascii_serialization()),
            u.path().trim_end_matches('/').to_string(),
        ),
        _ => (None, server.trim_end_matches('/').to_string()),
    };
    let target = opts
        .target
        .clone()
        .or(server_target)
        .unwrap_or_else(|| "http://127.0.0.1:8080".into());

    let mut ops = Vec::new();
    for (path, item) in paths {
        let item = resolve(&doc, item).ok_or_else(|| err(format!("`{path}`: its `$ref` points outside this document; bundle the document first (e.g. `npx @redocly/cli bundle`)")))?;
        let shared: Vec<&Value> = item
            .get("parameters")
            .and_then(Value::as_array)
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        for m in METHODS {
            let Some(op) = item.get(m) else { continue };
            let mut params: Vec<&Value> = op
                .get("parameters")
                .and_then(Value::as_array)
                .map(|a| a.iter().collect())
                .unwrap_or_default();
            for p in &shared {
                let name = |v: &Value| resolve(&doc, v).and_then(|r| r.get("name")).cloned();
                if !params.iter().any(|q| name(q) == name(p)) {
                    params.push(p);
                }
            }
            let order = ops.len();
            ops.push(Op {
                path: path.clone(),
                method: m,
                op,
                params,
                order,
            });
        }
    }
    let tags_of = |o: &Op<'_>| {
        o.op.get("tags")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    let id_of = |o: &Op<'_>| {
        o.op.get("operationId")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    for t in &opts.tags {
        if !ops.iter().any(|o| tags_of(o).contains(t)) {
            let mut all: Vec<String> = ops.iter().flat_map(tags_of).collect();
            all.sort();
            all.dedup();
            return Err(err(format!(
                "no operation has tag `{t}`; the tags are: {}",
                all.join(", ")
            )));
        }
    }
    for id in &opts.operations {
        if !ops.iter().any(|o| id_of(o) == *id) {
            let all: Vec<String> = ops.iter().map(id_of).filter(|i| !i.is_empty()).collect();
            return Err(err(format!(
                "no operation has operationId `{id}`; the operationIds are: {}",
                all.join(", ")
            )));
        }
    }
    ops.retain(|o| {
        (opts.tags.is_empty() || tags_of(o).iter().any(|t| opts.tags.contains(t)))
            && (opts.operations.is_empty() || opts.operations.contains(&id_of(o)))
    });
    if ops.is_empty() {
        return Err(err(
            "the document has no operations (get, post, put, patch, delete) under `paths`".into(),
        ));
    }
    // Order: creates before reads and updates, shallow paths before deep ones; deletes last,
    // deep before shallow (a room's todos go before the room).
    let depth = |p: &str| p.split('/').filter(|s| !s.is_empty()).count();
    let rank = |m: &str| METHODS.iter().position(|x| *x == m).unwrap_or(9);
    ops.sort_by_key(|o| {
        if o.method == "delete" {
            (1, usize::MAX - depth(&o.path), 0, o.order)
        } else {
            (0, depth(&o.path), rank(o.method), o.order)
        }
    });

    let mut secrets = Secrets::default();
    let mut names = Names::default();
    let mut variables: Vec<(String, Value, Option<String>)> = Vec::new();
    // A path parameter's variable name (`account_sid`) → the variable it is.
    let mut path_vars: HashMap<String, String> = HashMap::new();
    // Collection path → the step that creates its items and the properties its response has;
    // a property becomes an `extract` the first time a later step needs it.
    let mut created: HashMap<String, (usize, String, Vec<String>)> = HashMap::new();
    // Resource name (`room`) → the collection path that creates it.
    let mut resources: HashMap<String, String> = HashMap::new();
    let mut extracted: HashMap<(usize, String), String> = HashMap::new();
    let mut steps = Vec::new();
    let mut left_out = Vec::new();
    for o in &ops {
        let label = if id_of(o).is_empty() {
            format!("{} {}", o.method.to_uppercase(), o.path)
        } else {
            id_of(o)
        };
        let mut comments = Vec::new();
        if let Some(s) = o.op.get("summary").and_then(Value::as_str) {
            comments.push(format!("{label}: {}", s.lines().next().unwrap_or("")));
        }
        // The path, each `{param}` a variable — a whole segment (`/calls/{id}`) or part of
        // one (`/Calls/{Sid}.json`, `/files/{name}.{ext}`).
        let mut url = String::new();
        let segs: Vec<&str> = o.path.split('/').collect();
        for (i, seg) in segs.iter().enumerate() {
            if i > 0 {
                url.push('/');
            }
            let parts = segment_parts(seg);
            // `{Sid}.json` names an item of the collection `Calls.json`.
            let suffix = match parts.as_slice() {
                [Part::Param(_), Part::Text(s)] if s.starts_with('.') => Some(*s),
                _ => None,
            };
            for part in parts {
                let p = match part {
                    Part::Text(t) => {
                        url.push_str(&literal(t));
                        continue;
                    }
                    Part::Param(p) => p,
                };
                let collection = segs[..i].join("/");
                // The create of `/Calls/{Sid}.json` and `/Calls/{CallSid}/…` is
                // `POST /Calls.json`.
                let creator = created
                    .get(&collection)
                    .or_else(|| suffix.and_then(|s| created.get(&format!("{collection}{s}"))))
                    .or_else(|| {
                        created
                            .iter()
                            .filter(|(k, _)| {
                                k.strip_prefix(collection.as_str())
                                    .and_then(|ext| ext.strip_prefix('.'))
                                    .is_some_and(|ext| {
                                        (1..=5).contains(&ext.len())
                                            && ext.chars().all(|c| c.is_ascii_alphabetic())
                                    })
                            })
                            .min_by_key(|(k, _)| k.as_str())
                            .map(|(_, v)| v)
                    });
                let from_create = creator.and_then(|(at, resource, props)| {
                    let pl = p.to_ascii_lowercase();
                    let id_like = pl == "id" || pl.ends_with("id");
                    props
                        .iter()
                        .find(|k| {
                            k.to_ascii_lowercase() == pl
                                || k.replace('_', "").to_ascii_lowercase() == pl
                        })
                        .or_else(|| props.iter().find(|k| id_like && k.as_str() == "id"))
                        .or_else(|| {
                            // `CallSid` is the `sid` of a call.
                            let r = resource.replace('_', "");
                            props.iter().find(|k| {
                                generic_id(k)
                                    && pl.strip_prefix(&r) == Some(&k.to_ascii_lowercase())
                            })
                        })
                        .or_else(|| {
                            props
                                .iter()
                                .find(|k| pl.len() >= 3 && k.to_ascii_lowercase().ends_with(&pl))
                        })
                        .map(|k| {
                            extract_var(&mut steps, &mut extracted, &mut names, *at, resource, k)
                        })
                });
                if let Some(var) = from_create {
                    url.push_str(&format!("{{{{ {var} }}}}"));
                    continue;
                }
                let owner = segs[..i]
                    .iter()
                    .rev()
                    .find(|s| !s.is_empty() && !s.contains('{'))
                    .map(|s| resource_word(s));
                let base_name = if generic_id(p) {
                    format!("{}_{}", owner.unwrap_or_else(|| "item".into()), snake(p))
                } else {
                    snake(p)
                };
                // One variable per parameter name, whatever name it had to take (`account_sid`
                // may be an extracted value already, then this one is `account_sid_2`).
                let var = match path_vars.get(&base_name) {
                    Some(var) => var.clone(),
                    None => {
                        let var = names.unique(&base_name);
                        let param = o.params.iter().filter_map(|q| resolve(&doc, q)).find(|q| {
                            q.get("name").and_then(Value::as_str) == Some(p)
                                && q.get("in").and_then(Value::as_str) == Some("path")
                        });
                        let value =
                            param.map_or(Value::String("1".into()), |q| param_example(&doc, q));
                        let value = template_json(&value, "", &HashMap::new(), &literal);
                        variables.push((var.clone(), value, Some(format!("path parameter `{p}` (documented example or one made from its schema): set an existing one"))));
                        path_vars.insert(base_name, var.clone());
                        var
                    }
                };
                url.push_str(&format!("{{{{ {var} }}}}"));
            }
        }
        // Required query and header parameters with examples; credentials from the environment.
        let mut query = Vec::new();
        let mut headers = Vec::new();
        for q in o.params.iter().filter_map(|q| resolve(&doc, q)) {
            let (Some(name), Some(place)) = (
                q.get("name").and_then(Value::as_str),
                q.get("in").and_then(Value::as_str),
            ) else {
                continue;
            };
            let required = q.get("required").and_then(Value::as_bool).unwrap_or(false);
            if !required {
                continue;
            }
            let v = param_example(&doc, q);
            let text = match &v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            match place {
                "query" if crate::secrets::secret_name(name) => {
                    let var = secrets.var(
                        name,
                        &format!("query:{name}"),
                        &format!("query parameter `{name}`"),
                    );
                    query.push(format!("{}={{{{ env.{var} | urlencode }}}}", literal(name)));
                }
                "query" => {
                    let enc = if url_safe(&text) {
                        literal(&text)
                    } else {
                        literal(
                            &form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>(),
                        )
                    };
                    query.push(format!("{}={enc}", literal(name)));
                }
                "header" if crate::secrets::secret_name(name) => {
                    let var =
                        secrets.var(name, &format!("header:{name}"), &format!("header `{name}`"));
                    headers.push((
                        name.to_string(),
                        format!("{{{{ env.{var} }}}}"),
                        Some(format!("set env.{var}")),
                    ));
                }
                "header" => headers.push((name.to_string(), literal(&text), None)),
                _ => {}
            }
        }
        // Security: the first requirement of the operation (else the document's).
        let security =
            o.op.get("security")
                .or_else(|| doc.get("security"))
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .and_then(Value::as_object);
        if let Some(req) = security {
            for scheme_name in req.keys() {
                let Some(scheme) = doc
                    .pointer(&format!(
                        "/components/securitySchemes/{}",
                        scheme_name.replace('~', "~0").replace('/', "~1")
                    ))
                    .and_then(|s| resolve(&doc, s))
                else {
                    continue;
                };
                match (
                    scheme.get("type").and_then(Value::as_str),
                    scheme.get("in").and_then(Value::as_str),
                ) {
                    (Some("apiKey"), Some("header")) => {
                        let h = scheme
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("X-API-Key");
                        let var = secrets.var(
                            scheme_name,
                            &format!("scheme:{scheme_name}"),
                            &format!("API key `{scheme_name}` (header {h})"),
                        );
                        headers.push((
                            h.to_string(),
                            format!("{{{{ env.{var} }}}}"),
                            Some(format!("security scheme `{scheme_name}`: set env.{var}")),
                        ));
                    }
                    (Some("apiKey"), Some("query")) => {
                        let n = scheme
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("api_key");
                        let var = secrets.var(
                            scheme_name,
                            &format!("scheme:{scheme_name}"),
                            &format!("API key `{scheme_name}` (query {n})"),
                        );
                        query.push(format!("{}={{{{ env.{var} | urlencode }}}}", literal(n)));
                    }
                    (Some("http"), _)
                        if scheme
                            .get("scheme")
                            .and_then(Value::as_str)
                            .is_some_and(|s| s.eq_ignore_ascii_case("basic")) =>
                    {
                        let var =
                            secrets.var("basic_auth", "scheme:basic", "base64 of user:password");
                        headers.push((
                            "Authorization".into(),
                            format!("Basic {{{{ env.{var} }}}}"),
                            Some(format!("security scheme `{scheme_name}`: set env.{var}")),
                        ));
                    }
                    (Some("http" | "oauth2" | "openIdConnect"), _) => {
                        let var = secrets.var("token", "scheme:bearer", "a bearer token");
                        headers.push((
                            "Authorization".into(),
                            format!("Bearer {{{{ env.{var} }}}}"),
                            Some(format!("security scheme `{scheme_name}`: set env.{var}")),
                        ));
                    }
                    _ => {}
                }
                if headers.iter().any(|(n, _, _)| n == "Authorization") {
                    break;
                }
            }
        }
        // The body.
        let mut body = Body::None;
        if let Some(rb) = o.op.get("requestBody").and_then(|r| resolve(&doc, r)) {
            let content = rb.get("content").and_then(Value::as_object);
            let pick = content.and_then(|c| {
                c.iter()
                    .find(|(m, _)| m.contains("json"))
                    .or_else(|| {
                        c.iter()
                            .find(|(m, _)| m.starts_with("application/x-www-form-urlencoded"))
                    })
                    .or_else(|| c.iter().find(|(m, _)| m.starts_with("text/")))
            });
            match pick {
                None => {
                    let types: Vec<&String> =
                        content.map(|c| c.keys().collect()).unwrap_or_default();
                    left_out.push(format!(
                        "{label} (its body is {}, which a scenario does not send)",
                        types
                            .iter()
                            .map(|s| s.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                    continue;
                }
                Some((mime, media)) => {
                    let value = media
                        .get("example")
                        .cloned()
                        .or_else(|| {
                            media
                                .get("examples")
                                .and_then(Value::as_object)
                                .and_then(|e| e.values().next())
                                .and_then(|e| resolve(&doc, e))
                                .and_then(|e| e.get("value"))
                                .cloned()
                        })
                        .or_else(|| media.get("schema").map(|s| example(&doc, s, true)))
                        .unwrap_or(Value::Null);
                    let mut subs = HashMap::new();
                    if let Value::Object(m) = &value {
                        for k in m.keys() {
                            let sk = snake(k);
                            if let Some(res) = sk.strip_suffix("_id")
                                && let Some((at, resource, props)) =
                                    resources.get(res).and_then(|c| created.get(c))
                                && props.iter().any(|p| p == "id")
                            {
                                let var = extract_var(
                                    &mut steps,
                                    &mut extracted,
                                    &mut names,
                                    *at,
                                    resource,
                                    "id",
                                );
                                subs.insert(
                                    format!("/{}", k.replace('~', "~0").replace('/', "~1")),
                                    format!("{{{{ {var} }}}}"),
                                );
                            }
                        }
                    }
                    body = if mime.contains("json") {
                        Body::Json(template_json(&value, "", &subs, &literal))
                    } else if mime.starts_with("application/x-www-form-urlencoded") {
                        let fields = value
                            .as_object()
                            .map(|m| {
                                m.iter()
                                    .map(|(k, v)| {
                                        (
                                            literal(k),
                                            literal(
                                                &v.as_str()
                                                    .map_or_else(|| v.to_string(), str::to_string),
                                            ),
                                        )
                                    })
                                    .collect()
                            })
                            .unwrap_or_default();
                        Body::Form(fields)
                    } else {
                        headers.push(("Content-Type".into(), mime.clone(), None));
                        Body::Text(literal(
                            &value
                                .as_str()
                                .map_or_else(|| value.to_string(), str::to_string),
                        ))
                    };
                }
            }
        }
        // The documented success status and what the response holds.
        let responses = o.op.get("responses").and_then(Value::as_object);
        let success = responses.and_then(|r| {
            let mut codes: Vec<&String> = r.keys().filter(|k| k.starts_with('2')).collect();
            codes.sort();
            codes.first().map(|c| ((*c).clone(), resolve(&doc, &r[*c])))
        });
        let mut full = format!("{base}{url}");
        if !query.is_empty() {
            full = format!("{full}?{}", query.join("&"));
        }
        let mut step = Step::new(o.method, full);
        step.name = if id_of(o).is_empty() {
            format!("{} {}", o.method.to_uppercase(), o.path)
        } else {
            id_of(o)
        };
        step.headers = headers;
        step.body = body;
        match &success {
            Some((code, _)) if code.len() == 3 && code.chars().all(|c| c.is_ascii_digit()) => {
                step.status = Some(code.clone())
            }
            Some(_) => step.status = Some("200-299".into()),
            None => comments.push(
                "no 2xx response is documented: the default (below 400) counts as success".into(),
            ),
        }
        let response = success
            .as_ref()
            .and_then(|(_, r)| *r)
            .and_then(|r| r.get("content"))
            .and_then(Value::as_object);
        // An event stream: an `sse:` step reads it, but that step is a GET without a body and
        // without `extract`/`check`. So only a GET whose success response is nothing but an
        // event stream becomes one; an operation that also answers with JSON (OpenAI's
        // `POST /chat/completions`, streaming only when the body asks) is a plain request for
        // the JSON answer, and a POST that only streams is a request that reads the stream
        // to its end.
        let is_stream = |m: &str| m.starts_with("text/event-stream");
        if let Some(c) = response.filter(|c| c.keys().any(|m| is_stream(m))) {
            let others: Vec<&String> = c.keys().filter(|m| !is_stream(m)).collect();
            if others.is_empty() && o.method == "get" && step.body == Body::None {
                step.sse = true;
                step.status = None;
            } else if others.is_empty() {
                comments.push(format!("the response is an event stream (text/event-stream): this request reads it to its end (an `sse:` step is a GET without a body, and this is {} with one)", o.method.to_uppercase()));
            } else {
                let offered = others
                    .iter()
                    .map(|m| m.as_str())
                    .collect::<Vec<_>>()
                    .join(" or ");
                match others.iter().find(|m| m.contains("json")) {
                    Some(json)
                        if !step
                            .headers
                            .iter()
                            .any(|(n, _, _)| n.eq_ignore_ascii_case("accept")) =>
                    {
                        step.headers.push((
                            "Accept".into(),
                            literal(json),
                            Some("not the event stream it also offers".into()),
                        ));
                        comments.push(format!("the response can also be an event stream (text/event-stream): this step asks for {json}"));
                    }
                    _ => comments.push(format!("the response can also be an event stream (text/event-stream): this step reads whichever the server sends ({offered} or the stream) to its end")),
                }
            }
        }
        // A create on a collection: remember what its response names, for later paths and bodies.
        if o.method == "post" && !o.path.rsplit('/').next().unwrap_or("").contains('{') {
            let schema = response
                .and_then(|c| c.iter().find(|(m, _)| m.contains("json")))
                .and_then(|(_, m)| m.get("schema"))
                .and_then(|s| resolve(&doc, s));
            let props = schema
                .map(|s| properties(&doc, s, &mut crate::schema::Walk::default(), 0))
                .unwrap_or_default();
            let resource = o
                .path
                .split('/')
                .rev()
                .find(|s| !s.is_empty() && !s.contains('{'))
                .map(resource_word)
                .unwrap_or_else(|| "item".into());
            if !props.is_empty() && !created.contains_key(&o.path) {
                created.insert(o.path.clone(), (steps.len(), resource.clone(), props));
                resources.entry(resource).or_insert_with(|| o.path.clone());
            }
        }
        step.comments = comments;
        steps.push(step);
    }
    if steps.is_empty() {
        return Err(err(format!(
            "no operation could be converted: {}",
            left_out.join("; ")
        )));
    }
    let title = doc
        .pointer("/info/title")
        .and_then(Value::as_str)
        .unwrap_or("api");
    let mut header = vec![format!(
        "Converted by `{}` from {title} (OpenAPI {version}).",
        opts.command
    )];
    header.push("Order: creates before reads and updates, shallow paths before deep ones; deletes last, deepest first.".into());
    if opts.target.is_none() && url::Url::parse(server).is_err() {
        header.push(
            "The document names no absolute server: `target` is a placeholder, or run with --url."
                .into(),
        );
    }
    let mut notes = Vec::new();
    if !left_out.is_empty() {
        let line = format!("left out: {}", left_out.join("; "));
        header.push(format!("{line}."));
        notes.push(line);
    }
    header.extend(secrets.header());
    let env: Vec<String> = secrets.needed.iter().map(|(n, _)| n.clone()).collect();
    if !env.is_empty() {
        notes.push(format!(
            "set these environment variables: {}",
            env.join(", ")
        ));
    }
    let mut d = Doc {
        header,
        name: snake(title).replace('_', "-"),
        target,
        variables,
        steps,
    };
    d.unique_names();
    Ok(Converted {
        yaml: d.render(),
        notes,
        env,
    })
}

/// The variable holding property `prop` of step `at`'s response, added to its `extract`
/// the first time it is asked for.
fn extract_var(
    steps: &mut [Step],
    extracted: &mut HashMap<(usize, String), String>,
    names: &mut Names,
    at: usize,
    resource: &str,
    prop: &str,
) -> String {
    extracted
        .entry((at, prop.to_string()))
        .or_insert_with(|| {
            let var = names.unique(&if generic_id(prop) {
                format!("{resource}_{}", snake(prop))
            } else {
                snake(prop)
            });
            let q = if prop.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                format!("$.{prop}")
            } else {
                format!("$['{prop}']")
            };
            steps[at].extract.push((
                var.clone(),
                Source::Json(q),
                Some(format!("the new {resource}, for the steps that use it")),
            ));
            var
        })
        .clone()
}

/// The property names of an object schema, through `allOf`/`oneOf`/`anyOf` and `$ref`s
/// (a `$ref` met again inside itself is not followed again, and the walk is bounded).
fn properties(
    doc: &Value,
    schema: &Value,
    walk: &mut crate::schema::Walk,
    depth: usize,
) -> Vec<String> {
    let Some(pushed) = walk.enter(schema) else {
        return Vec::new();
    };
    let out = properties_in(doc, schema, walk, depth);
    walk.leave(pushed);
    out
}

fn properties_in(
    doc: &Value,
    schema: &Value,
    walk: &mut crate::schema::Walk,
    depth: usize,
) -> Vec<String> {
    let Some(s) = resolve(doc, schema) else {
        return Vec::new();
    };
    let mut out: Vec<String> = s
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    if depth < 8 {
        for k in ["allOf", "oneOf", "anyOf"] {
            for part in s.get(k).and_then(Value::as_array).into_iter().flatten() {
                for p in properties(doc, part, walk, depth + 1) {
                    if !out.contains(&p) {
                        out.push(p);
                    }
                }
            }
        }
    }
    out
}

/// A parameter's example: its own, else its schema's.
fn param_example(doc: &Value, p: &Value) -> Value {
    if let Some(e) = p.get("example") {
        return e.clone();
    }
    if let Some(e) = p
        .get("examples")
        .and_then(Value::as_object)
        .and_then(|e| e.values().next())
        .and_then(|e| resolve(doc, e))
        .and_then(|e| e.get("value"))
    {
        return e.clone();
    }
    p.get("schema")
        .map_or(Value::String("1".into()), |s| example(doc, s, false))
}

/// The first server's URL, each `{variable}` replaced by its `default` (OpenAPI requires
/// one: `https://{region}.example.com` with `region: {default: eu}`).
fn server_url(doc: &Value) -> String {
    let url = doc
        .pointer("/servers/0/url")
        .and_then(Value::as_str)
        .unwrap_or("");
    let vars = doc.pointer("/servers/0/variables");
    let mut out = String::new();
    for part in segment_parts(url) {
        match part {
            Part::Text(t) => out.push_str(t),
            Part::Param(name) => match vars
                .and_then(|v| v.get(name))
                .and_then(|v| v.get("default"))
            {
                Some(Value::String(d)) => out.push_str(d),
                Some(d @ Value::Number(_)) => out.push_str(&d.to_string()),
                _ => {
                    out.push('{');
                    out.push_str(name);
                    out.push('}');
                }
            },
        }
    }
    out
}

/// A piece of a path segment: literal text or a `{param}`.
#[derive(Debug, PartialEq)]
enum Part<'a> {
    Text(&'a str),
    Param(&'a str),
}

/// `{Sid}.json` → `{Sid}`, `.json`; a `{` without its `}` is text.
fn segment_parts(seg: &str) -> Vec<Part<'_>> {
    let mut out = Vec::new();
    let mut rest = seg;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|c| open + c) else {
            break;
        };
        if open > 0 {
            out.push(Part::Text(&rest[..open]));
        }
        out.push(Part::Param(&rest[open + 1..close]));
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        out.push(Part::Text(rest));
    }
    out
}

/// The resource a collection segment names: `rooms` → `room`, `Calls.json` → `call`.
fn resource_word(seg: &str) -> String {
    let stem = match seg.rsplit_once('.') {
        Some((stem, ext))
            if !stem.is_empty()
                && (1..=5).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphabetic()) =>
        {
            stem
        }
        _ => seg,
    };
    singular(stem)
}

/// A name that says "the id" without saying of what (`id`, `Sid`, `uuid`): the variable is
/// named after its resource (`call_sid`).
fn generic_id(name: &str) -> bool {
    let s = snake(name);
    s.len() <= 4 && !s.contains('_') && s.ends_with("id")
}
