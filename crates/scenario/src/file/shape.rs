//! The file's structure and types: the YAML tree walked into the raw model, every key and
//! value checked against what it may be, every problem collected with its position and
//! what to write instead. The raw model keeps only what was usable, so the compiler that
//! follows reports the next layer of problems (templates, queries, names) in the same pass.

use std::collections::BTreeMap;

use super::yaml::{Key, Node, Typed, Value};
use super::{At, S};
use crate::suggest::suggest;

/// The keys at the top of a scenario file.
pub(super) const TOP_KEYS: &[&str] = &[
    "name",
    "target",
    "headers",
    "load",
    "timeout",
    "warmup",
    "expect_status",
    "variables",
    "data",
    "thresholds",
    "slo",
    "steps",
    "scenarios",
    "kube",
    "kube_context",
];

/// The keys of one named scenario (a population) under `scenarios:`.
pub(super) const POPULATION_KEYS: &[&str] = &[
    "load",
    "start",
    "steps",
    "thresholds",
    "headers",
    "variables",
    "timeout",
    "expect_status",
];

/// The keys of a step (request, `sse`, `websocket`, group, `one_of`).
pub(super) const STEP_KEYS: &[&str] = &[
    "name",
    "request",
    "method",
    "url",
    "headers",
    "json",
    "form",
    "body",
    "extract",
    "check",
    "think_time",
    "timeout",
    "sse",
    "events",
    "wait",
    "websocket",
    "send",
    "expect",
    "group",
    "repeat",
    "steps",
    "one_of",
    "grpc",
    "proto",
    "message",
    "messages",
    "connections",
];

/// Keys that decide what kind of step it is.
const KIND_KEYS: &[&str] = &[
    "request",
    "method",
    "url",
    "sse",
    "websocket",
    "grpc",
    "steps",
    "one_of",
];

/// `load:` entries in file order: key and value, as a flag would take it.
pub(super) type RawLoad = S<Vec<(String, S<String>)>>;

#[derive(Clone)]
pub(super) struct RawScenario {
    pub at: At,
    pub name: Option<String>,
    pub target: Option<S<String>>,
    pub headers: BTreeMap<String, S<String>>,
    pub load: Option<RawLoad>,
    pub timeout: Option<S<String>>,
    pub warmup: Option<S<String>>,
    pub expect_status: Option<S<String>>,
    pub variables: BTreeMap<String, S<String>>,
    pub data: BTreeMap<String, S<RawData>>,
    pub thresholds: Vec<S<RawThreshold>>,
    /// `slo:`: the service level `volley capacity` searches under (a run judges it as
    /// thresholds), in the same syntax.
    pub slo: Vec<S<RawThreshold>>,
    pub steps: Option<S<Vec<RawStep>>>,
    /// `scenarios:`: populations run side by side, each with its own load and flow.
    pub populations: Vec<RawPopulation>,
    /// `kube:`: the workloads watched beside the load, as `--kube` takes them.
    pub kube: Vec<S<String>>,
    /// `kube_context:`, as `--kube-context`.
    pub kube_context: Option<S<String>>,
}

/// One named scenario of `scenarios:`: a population with its own load, start and flow;
/// `headers` and `variables` add to (and override) the file's, `timeout` and
/// `expect_status` replace them.
#[derive(Clone)]
pub(super) struct RawPopulation {
    pub name: S<String>,
    pub load: Option<RawLoad>,
    pub start: Option<S<String>>,
    pub steps: Option<S<Vec<RawStep>>>,
    pub thresholds: Vec<S<RawThreshold>>,
    pub headers: BTreeMap<String, S<String>>,
    pub variables: BTreeMap<String, S<String>>,
    pub timeout: Option<S<String>>,
    pub expect_status: Option<S<String>>,
}

#[derive(Clone)]
pub(super) struct RawData {
    pub file: String,
    pub order: Option<S<String>>,
    pub unique: bool,
}

/// `error_rate < 1%`, or `{ step name: ttfb p99 < 300ms }`.
#[derive(Clone)]
pub(super) enum RawThreshold {
    All(String),
    Step(Vec<(String, String)>),
}

/// `$.accessCode`, or `{ json: $.id, default: 0 }`, `{ header: Location }`, `{ regex: 'id=(\d+)' }`.
#[derive(Clone)]
pub(super) enum RawExtract {
    Path(String),
    Full {
        json: Option<String>,
        header: Option<String>,
        regex: Option<String>,
        default: Option<serde_json::Value>,
    },
}

#[derive(Default, Clone)]
pub(super) struct RawCheck {
    pub status: Option<S<String>>,
    pub json: Vec<(S<String>, Node)>,
    pub exists: Vec<S<String>>,
    pub body_contains: Vec<String>,
}

#[derive(Default, Clone)]
pub(super) struct RawStep {
    pub at: At,
    /// A key that decides the step's kind has an unusable value (reported): nothing more is
    /// said about this step, as it would only repeat that.
    pub broken: bool,
    /// Where each key given is.
    pub keys: Vec<(String, At)>,
    pub name: Option<S<String>>,
    pub request: Option<S<String>>,
    pub method: Option<S<String>>,
    pub url: Option<S<String>>,
    pub headers: BTreeMap<String, S<String>>,
    pub json: Option<Node>,
    pub form: Option<BTreeMap<String, S<String>>>,
    pub body: Option<S<String>>,
    pub extract: Vec<(String, S<RawExtract>)>,
    /// Every variable `extract` names, those with unusable values too.
    pub extract_names: Vec<String>,
    /// `extract` is not a mapping: the variables it meant are unknown.
    pub extract_lost: bool,
    pub check: Option<S<RawCheck>>,
    pub think_time: Option<S<String>>,
    pub timeout: Option<S<String>>,
    pub sse: Option<S<String>>,
    pub events: Option<S<u64>>,
    pub wait: bool,
    pub websocket: Option<S<String>>,
    pub send: Option<Vec<S<String>>>,
    pub expect: Option<S<String>>,
    pub group: Option<S<String>>,
    pub repeat: Option<S<u64>>,
    pub steps: Option<Vec<RawStep>>,
    pub one_of: Option<Vec<S<RawBranch>>>,
    pub grpc: Option<S<String>>,
    pub proto: Vec<S<String>>,
    pub message: Option<Node>,
    pub messages: Option<S<u64>>,
    pub connections: Option<S<u64>>,
}

impl RawStep {
    /// Where key `k` is, if given.
    pub fn key_at(&self, k: &str) -> Option<At> {
        self.keys.iter().find(|(n, _)| n == k).map(|(_, a)| *a)
    }
}

#[derive(Clone)]
pub(super) struct RawBranch {
    pub weight: S<u32>,
    pub name: Option<String>,
    pub steps: Vec<RawStep>,
}

/// Walks the tree, collecting problems.
#[derive(Default)]
pub(super) struct Shape {
    pub problems: Vec<(At, String)>,
}

/// A mapping's entries, looked up by key.
struct Fields<'n> {
    entries: &'n [(Key, Node)],
}

impl<'n> Fields<'n> {
    fn get(&self, key: &str) -> Option<&'n Node> {
        self.entries
            .iter()
            .find(|(k, _)| k.text == key)
            .map(|(_, v)| v)
    }

    /// A section that may be left empty (`headers:` with nothing under it is no headers).
    fn section(&self, key: &str) -> Option<&'n Node> {
        self.get(key).filter(|n| n.typed() != Some(Typed::Null))
    }
}

/// `, e.g. `x``.
fn eg(example: &str) -> String {
    if example.is_empty() {
        String::new()
    } else {
        format!("; write it like `{example}`")
    }
}

/// What the value was, for messages: `a mapping`, `text (`lots`)`.
fn found(node: &Node) -> String {
    match &node.value {
        Value::Scalar { text, .. } if !text.is_empty() => {
            let shown: String = text.chars().take(40).collect();
            format!("{} (`{shown}`)", node.kind())
        }
        _ => node.kind().to_string(),
    }
}

impl Shape {
    fn error(&mut self, at: At, message: impl Into<String>) {
        self.problems.push((at, message.into()));
    }

    /// The entries of a mapping; unknown keys are reported, with the nearest known one.
    fn map<'n>(
        &mut self,
        node: &'n Node,
        what: &str,
        example: &str,
        allowed: &[&str],
    ) -> Option<Fields<'n>> {
        let Value::Map(entries) = &node.value else {
            self.error(
                node.at,
                format!(
                    "{what}: expected a mapping (`key: value` lines), not {}{}",
                    found(node),
                    eg(example)
                ),
            );
            return None;
        };
        for (k, _) in entries {
            if !allowed.contains(&k.text.as_str()) {
                let message = self.unknown_key(&k.text, what, allowed);
                self.error(k.at, message);
            }
        }
        Some(Fields { entries })
    }

    fn unknown_key(&self, key: &str, what: &str, allowed: &[&str]) -> String {
        let in_step = allowed == STEP_KEYS;
        if in_step && TOP_KEYS.contains(&key) && key != "name" {
            return format!(
                "unknown key `{key}` in a step: `{key}` belongs at the top level of the file, not under `steps`"
            );
        }
        if allowed == TOP_KEYS && STEP_KEYS.contains(&key) {
            return format!(
                "unknown key `{key}` at the top level: `{key}` belongs in a step, under `steps:` as `- {key}: …`"
            );
        }
        if allowed == POPULATION_KEYS && suggest(key, allowed).is_none() {
            if TOP_KEYS.contains(&key) {
                return format!(
                    "unknown key `{key}` in {what}: `{key}` is set once for the whole run, at the top level of the file; a scenario takes {}",
                    allowed.join(", ")
                );
            }
            if STEP_KEYS.contains(&key) {
                return format!(
                    "unknown key `{key}` in {what}: `{key}` belongs in a step, under the scenario's `steps:` as `- {key}: …`"
                );
            }
        }
        let hint = suggest(key, allowed)
            .map(|s| format!("did you mean `{s}`? "))
            .unwrap_or_default();
        format!(
            "unknown key `{key}` in {what}; {hint}the keys are {}",
            allowed.join(", ")
        )
    }

    /// Text: any scalar but nothing (`10` is the text `10`).
    fn text(&mut self, field: &str, node: &Node, example: &str) -> Option<S<String>> {
        match (&node.value, node.typed()) {
            (_, Some(Typed::Null)) => {
                self.error(node.at, format!("`{field}` has no value{}", eg(example)));
                None
            }
            (Value::Scalar { text, .. }, _) => Some(S {
                value: text.clone(),
                at: node.at,
            }),
            _ => {
                self.error(
                    node.at,
                    format!(
                        "`{field}`: expected text, not {}{}",
                        found(node),
                        eg(example)
                    ),
                );
                None
            }
        }
    }

    /// A whole number, 0 or more (`"10"` quoted and `1_000` are accepted too).
    fn whole(&mut self, field: &str, node: &Node, example: &str) -> Option<S<u64>> {
        let n = match node.typed() {
            Some(Typed::Int(i)) => u64::try_from(i).ok(),
            Some(Typed::UInt(u)) => Some(u),
            Some(Typed::Str(s)) => {
                let s = s.trim();
                let grouped = !s.starts_with('_') && !s.ends_with('_') && !s.contains("__");
                s.replace('_', "").parse().ok().filter(|_| grouped)
            }
            _ => None,
        };
        if n.is_none() {
            self.error(
                node.at,
                format!(
                    "`{field}`: expected a whole number (0 or more), not {}{}",
                    found(node),
                    eg(example)
                ),
            );
        }
        n.map(|value| S { value, at: node.at })
    }

    /// true or false (and, where only a flag can be meant, YAML 1.1's yes/no/on/off).
    fn flag(&mut self, field: &str, node: &Node) -> Option<bool> {
        let word = |w: &[&str]| matches!(node.typed(), Some(Typed::Str(s)) if w.iter().any(|x| s.eq_ignore_ascii_case(x)));
        match node.typed() {
            Some(Typed::Bool(b)) => Some(b),
            _ if word(&["yes", "y", "on"]) => Some(true),
            _ if word(&["no", "n", "off"]) => Some(false),
            _ => {
                self.error(
                    node.at,
                    format!(
                        "`{field}`: expected true or false, not {}; write it like `{field}: true`",
                        found(node)
                    ),
                );
                None
            }
        }
    }

    fn list<'n>(
        &mut self,
        field: &str,
        node: &'n Node,
        what: &str,
        example: &str,
    ) -> Option<&'n [Node]> {
        match &node.value {
            Value::Seq(items) => Some(items),
            _ => {
                self.error(
                    node.at,
                    format!(
                        "`{field}`: expected a list of {what} (lines starting with `- `), not {}{}",
                        found(node),
                        eg(example)
                    ),
                );
                None
            }
        }
    }

    /// One text or a list of them.
    fn texts(&mut self, field: &str, node: &Node, example: &str) -> Vec<S<String>> {
        match &node.value {
            Value::Seq(items) => items
                .iter()
                .filter_map(|i| self.text(field, i, example))
                .collect(),
            Value::Map(_) => {
                self.error(
                    node.at,
                    format!(
                        "`{field}`: expected text or a list of texts, not {}{}",
                        found(node),
                        eg(example)
                    ),
                );
                Vec::new()
            }
            Value::Scalar { .. } => self.text(field, node, example).into_iter().collect(),
        }
    }

    /// A mapping of names to text (`headers`, `variables`, `form`).
    fn text_map(
        &mut self,
        field: &str,
        node: &Node,
        example: &str,
    ) -> Option<BTreeMap<String, S<String>>> {
        let Value::Map(entries) = &node.value else {
            self.error(
                node.at,
                format!(
                    "`{field}`: expected a mapping of names to values, not {}{}",
                    found(node),
                    eg(example)
                ),
            );
            return None;
        };
        let mut out = BTreeMap::new();
        for (k, v) in entries {
            if let Some(t) = self.text(&format!("{field}.{}", k.text), v, example) {
                out.insert(k.text.clone(), t);
            }
        }
        Some(out)
    }

    /// The whole file.
    pub fn scenario(&mut self, root: &Node) -> Option<RawScenario> {
        let f = self.map(root, "a scenario file", "", TOP_KEYS)?;
        let text = |s: &mut Self, key: &str, example: &str| {
            f.get(key).and_then(|n| s.text(key, n, example))
        };
        let target = text(self, "target", "target: http://127.0.0.1:8080");
        if f.get("target").is_none() {
            self.error(root.at, "`target` is missing: add the base URL the steps' paths are joined to, e.g. `target: http://127.0.0.1:8080`");
        }
        let populations = f.section("scenarios").map(|n| self.populations(n));
        let steps = match (f.get("steps"), &populations) {
            (None, None) => {
                self.error(root.at, "`steps` is missing: add the flow of one iteration, e.g. `steps: [ { request: GET / } ]`");
                None
            }
            (Some(n), Some(_)) => {
                self.error(n.at, "`steps` at the top level and `scenarios` do not go together: each scenario under `scenarios:` has its own `steps`; move these under one of them");
                None
            }
            (None, Some(_)) => None,
            (Some(n), None) => self
                .list("steps", n, "steps", "steps: [ { request: GET / } ]")
                .map(|items| S {
                    value: self.steps(items),
                    at: n.at,
                }),
        };
        Some(RawScenario {
            at: root.at,
            name: text(self, "name", "name: checkout flow").map(|s| s.value),
            target,
            headers: f
                .section("headers")
                .and_then(|n| self.text_map("headers", n, "headers: { Accept: application/json }"))
                .unwrap_or_default(),
            load: f.section("load").and_then(|n| self.load(n)),
            timeout: text(self, "timeout", "timeout: 10s"),
            warmup: text(self, "warmup", "warmup: 30s"),
            expect_status: f
                .get("expect_status")
                .and_then(|n| self.status("expect_status", n)),
            variables: f
                .section("variables")
                .and_then(|n| self.text_map("variables", n, "variables: { room: demo }"))
                .unwrap_or_default(),
            data: f.section("data").map(|n| self.data(n)).unwrap_or_default(),
            thresholds: f
                .section("thresholds")
                .map(|n| self.thresholds(n))
                .unwrap_or_default(),
            slo: f
                .section("slo")
                .map(|n| self.thresholds(n))
                .unwrap_or_default(),
            steps,
            populations: populations.unwrap_or_default(),
            kube: f
                .get("kube")
                .map(|n| self.texts("kube", n, "kube: [deployment/chat, shop/pods/app=cart]"))
                .unwrap_or_default(),
            kube_context: text(self, "kube_context", "kube_context: prod-eu"),
        })
    }

    /// `scenarios:`, a mapping of names to populations.
    fn populations(&mut self, node: &Node) -> Vec<RawPopulation> {
        let example = "scenarios: { readers: { load: { rate: 300, duration: 1m }, steps: [ { request: GET / } ] } }";
        let Value::Map(entries) = &node.value else {
            self.error(node.at, format!("`scenarios`: expected a mapping of scenario names to scenarios, not {}; write it like `{example}`", found(node)));
            return Vec::new();
        };
        if entries.is_empty() {
            self.error(
                node.at,
                format!("`scenarios` is empty: name at least one, like `{example}`"),
            );
        }
        if entries.len() > crate::limits::MAX_POPULATIONS {
            self.error(
                node.at,
                format!(
                    "`scenarios` has {} scenarios; a run takes at most {} (each runs on worker threads of its own): merge those that share a flow, or split the run with --segment",
                    entries.len(),
                    crate::limits::MAX_POPULATIONS
                ),
            );
            return Vec::new();
        }
        let mut out = Vec::new();
        for (k, v) in entries {
            if !crate::threshold::is_population_name(&k.text) {
                self.error(k.at, format!("scenario name `{}`: use letters, digits, `_` and `-` only (it names a directory of the run and prefixes thresholds, e.g. `writers.ttfb p99 < 200ms`)", k.text));
            } else if k.text.len() > crate::limits::MAX_NAME_LEN {
                self.error(k.at, format!("scenario name `{}…`: at most {} characters (it names a directory of the run)", &k.text[..32], crate::limits::MAX_NAME_LEN));
            }
            let what = format!("scenario `{}`", k.text);
            let Some(f) = self.map(
                v,
                &what,
                "readers: { load: { rate: 300, duration: 1m }, steps: [ { request: GET / } ] }",
                POPULATION_KEYS,
            ) else {
                continue;
            };
            let steps = match f.get("steps") {
                None => {
                    self.error(v.at, format!("{what}: `steps` is missing: add its flow, e.g. `steps: [ {{ request: GET / }} ]`"));
                    None
                }
                Some(n) => self
                    .list("steps", n, "steps", "steps: [ { request: GET / } ]")
                    .map(|items| S {
                        value: self.steps(items),
                        at: n.at,
                    }),
            };
            let text = |s: &mut Self, key: &str, example: &str| {
                f.get(key).and_then(|n| s.text(key, n, example))
            };
            out.push(RawPopulation {
                name: S {
                    value: k.text.clone(),
                    at: k.at,
                },
                load: f.section("load").and_then(|n| self.load(n)),
                start: text(self, "start", "start: 30s"),
                steps,
                thresholds: f
                    .section("thresholds")
                    .map(|n| self.thresholds(n))
                    .unwrap_or_default(),
                headers: f
                    .section("headers")
                    .and_then(|n| {
                        self.text_map("headers", n, "headers: { Accept: application/json }")
                    })
                    .unwrap_or_default(),
                variables: f
                    .section("variables")
                    .and_then(|n| self.text_map("variables", n, "variables: { room: demo }"))
                    .unwrap_or_default(),
                timeout: text(self, "timeout", "timeout: 10s"),
                expect_status: f
                    .get("expect_status")
                    .and_then(|n| self.status("expect_status", n)),
            });
        }
        out
    }

    /// `load:` keys with their values as a flag would take them (`vus: 50` is `--vus 50`).
    fn load(&mut self, node: &Node) -> Option<RawLoad> {
        let Value::Map(entries) = &node.value else {
            self.error(node.at, format!("`load`: expected a mapping of load keys, not {}; write it like `load: {{ vus: 10, duration: 1m }}`", found(node)));
            return None;
        };
        let mut out = Vec::new();
        for (k, v) in entries {
            let text = match v.typed() {
                Some(Typed::Int(i)) => i.to_string(),
                Some(Typed::UInt(u)) => u.to_string(),
                Some(Typed::Float(x)) => x.to_string(),
                Some(Typed::Str(s)) => s.to_string(),
                Some(Typed::Bool(b)) => b.to_string(),
                Some(Typed::Null) => {
                    self.error(v.at, format!("load `{}` has no value; give it the value `--{}` would take, e.g. `vus: 10` or `duration: 1m`", k.text, k.text.replace('_', "-")));
                    continue;
                }
                None => {
                    self.error(v.at, format!("load `{}`: expected a single value, not {}; write it like `stages: \"1m:50,2m:50\"`", k.text, found(v)));
                    continue;
                }
            };
            out.push((
                k.text.clone(),
                S {
                    value: text,
                    at: v.at,
                },
            ));
        }
        Some(S {
            value: out,
            at: node.at,
        })
    }

    /// A status set as text: `201`, `"200-299,404"`.
    fn status(&mut self, field: &str, node: &Node) -> Option<S<String>> {
        match node.typed() {
            Some(Typed::Int(i)) => Some(S {
                value: i.to_string(),
                at: node.at,
            }),
            Some(Typed::UInt(u)) => Some(S {
                value: u.to_string(),
                at: node.at,
            }),
            Some(Typed::Str(s)) => Some(S {
                value: s.to_string(),
                at: node.at,
            }),
            _ => {
                let example = format!("{field}: 201");
                self.error(node.at, format!("`{field}`: a status is a code such as 201 or a list such as \"200-299,404\", not {}{}", found(node), eg(&example)));
                None
            }
        }
    }

    fn data(&mut self, node: &Node) -> BTreeMap<String, S<RawData>> {
        let mut out = BTreeMap::new();
        let Value::Map(entries) = &node.value else {
            self.error(node.at, format!("`data`: expected a mapping of feeder names, not {}; write it like `data: {{ users: {{ file: users.csv }} }}`", found(node)));
            return out;
        };
        for (k, v) in entries {
            let what = format!("data `{}`", k.text);
            let Some(f) = self.map(
                v,
                &what,
                &format!("{}: {{ file: users.csv, order: shared }}", k.text),
                &["file", "order", "unique"],
            ) else {
                continue;
            };
            let file = match f.get("file") {
                Some(n) => self.text(&format!("data.{}.file", k.text), n, "file: users.csv"),
                None => {
                    self.error(
                        v.at,
                        format!(
                            "{what}: `file` is missing; write it like `{}: {{ file: users.csv }}`",
                            k.text
                        ),
                    );
                    None
                }
            };
            let order = f
                .get("order")
                .and_then(|n| self.text(&format!("data.{}.order", k.text), n, "order: shared"));
            let unique = f
                .get("unique")
                .and_then(|n| self.flag(&format!("data.{}.unique", k.text), n))
                .unwrap_or(false);
            if let Some(file) = file {
                out.insert(
                    k.text.clone(),
                    S {
                        value: RawData {
                            file: file.value,
                            order,
                            unique,
                        },
                        at: v.at,
                    },
                );
            }
        }
        out
    }

    fn thresholds(&mut self, node: &Node) -> Vec<S<RawThreshold>> {
        let Some(items) = self.list(
            "thresholds",
            node,
            "expressions",
            "thresholds: [\"error_rate < 1%\"]",
        ) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let bad =
            "a threshold is an expression such as `error_rate < 1%`, or `step name: expression`";
        for t in items {
            match (&t.value, t.typed()) {
                (Value::Scalar { text, .. }, Some(ty)) if ty != Typed::Null => out.push(S {
                    value: RawThreshold::All(text.clone()),
                    at: t.at,
                }),
                (Value::Map(entries), _) => {
                    let mut pairs = Vec::new();
                    for (k, v) in entries {
                        match v.typed() {
                            Some(Typed::Str(s)) => pairs.push((k.text.clone(), s.to_string())),
                            _ => self.error(
                                v.at,
                                format!("{bad}; `{}:` needs an expression after it", k.text),
                            ),
                        }
                    }
                    out.push(S {
                        value: RawThreshold::Step(pairs),
                        at: t.at,
                    });
                }
                _ => self.error(t.at, format!("{bad}, not {}", found(t))),
            }
        }
        out
    }

    fn steps(&mut self, items: &[Node]) -> Vec<RawStep> {
        items.iter().filter_map(|n| self.step(n)).collect()
    }

    fn step(&mut self, node: &Node) -> Option<RawStep> {
        let f = self.map(node, "a step", "- request: GET /path", STEP_KEYS)?;
        let mut s = RawStep {
            at: node.at,
            keys: f
                .entries
                .iter()
                .map(|(k, _)| (k.text.clone(), k.at))
                .collect(),
            ..RawStep::default()
        };
        let text = |sh: &mut Self, key: &str, example: &str| {
            f.get(key).and_then(|n| sh.text(key, n, example))
        };
        s.name = text(self, "name", "name: create room");
        if let Some(n) = f.get("request") {
            s.request = match &n.value {
                Value::Map(_) => {
                    self.error(
                        n.at,
                        "`request`: expected text such as `request: POST /path`, not a mapping; or give the step `method: POST` and `url: /path` as keys of its own",
                    );
                    None
                }
                _ => self.text("request", n, "request: POST /path"),
            };
        }
        s.method = text(self, "method", "method: POST");
        s.url = text(self, "url", "url: /api/rooms");
        s.sse = text(self, "sse", "sse: /events");
        s.websocket = text(self, "websocket", "websocket: /ws");
        s.grpc = text(self, "grpc", "grpc: volley.chat.v1.Chat/CreateRoom");
        s.group = text(self, "group", "group: todos");
        if let Some(n) = f.get("steps") {
            s.steps = self
                .list("steps", n, "steps", "steps: [ { request: GET / } ]")
                .map(|items| self.steps(items));
        }
        if let Some(n) = f.get("one_of") {
            s.one_of = self
                .list(
                    "one_of",
                    n,
                    "branches",
                    "one_of: [ { weight: 3, steps: [...] } ]",
                )
                .map(|items| self.branches(items));
        }
        // A kind key with an unusable value: the step is reported once, not again as kindless.
        let usable = |k: &str| match k {
            "request" => s.request.is_some(),
            "method" => s.method.is_some(),
            "url" => s.url.is_some(),
            "sse" => s.sse.is_some(),
            "websocket" => s.websocket.is_some(),
            "grpc" => s.grpc.is_some(),
            "steps" => s.steps.is_some(),
            _ => s.one_of.is_some(),
        };
        s.broken = KIND_KEYS.iter().any(|k| f.get(k).is_some() && !usable(k))
            // `requets:` alone: its unknown key is the problem, not a missing kind.
            || (!KIND_KEYS.iter().any(|k| f.get(k).is_some()) && s.keys.iter().any(|(k, _)| !STEP_KEYS.contains(&k.as_str())));
        if let Some(n) = f.section("headers") {
            s.headers = self
                .text_map("headers", n, "headers: { Accept: application/json }")
                .unwrap_or_default();
        }
        s.json = f.section("json").cloned();
        if let Some(n) = f.section("form") {
            s.form = self.text_map("form", n, "form: { user: kim }");
        }
        s.body = text(self, "body", "body: raw text");
        if let Some(n) = f.section("extract") {
            self.extract(n, &mut s);
        }
        if let Some(n) = f.section("check") {
            s.check = self.check(n);
        }
        s.think_time = text(self, "think_time", "think_time: 1s..3s");
        s.timeout = text(self, "timeout", "timeout: 10s");
        s.events = f
            .get("events")
            .and_then(|n| self.whole("events", n, "events: 3"));
        s.wait = f
            .get("wait")
            .and_then(|n| self.flag("wait", n))
            .unwrap_or(false);
        if let Some(n) = f.get("send") {
            s.send = Some(self.texts("send", n, "send: hello"));
        }
        s.expect = text(self, "expect", "expect: hello");
        s.repeat = f
            .get("repeat")
            .and_then(|n| self.whole("repeat", n, "repeat: 10"));
        if let Some(n) = f.section("proto") {
            s.proto = self.texts("proto", n, "proto: protos/chat.proto");
        }
        s.message = f.section("message").cloned();
        s.messages = f
            .get("messages")
            .and_then(|n| self.whole("messages", n, "messages: 3"));
        s.connections = f
            .get("connections")
            .and_then(|n| self.whole("connections", n, "connections: 4"));
        Some(s)
    }

    fn extract(&mut self, node: &Node, s: &mut RawStep) {
        let Value::Map(entries) = &node.value else {
            self.error(node.at, format!("`extract`: expected a mapping of variable names to queries, not {}; write it like `extract: {{ code: $.accessCode }}`", found(node)));
            s.extract_lost = true;
            return;
        };
        let how = "an extract is a JSONPath such as `$.id`, or one of `{ json: $.id }`, `{ header: Location }`, `{ regex: 'id=(\\d+)' }`";
        for (k, v) in entries {
            s.extract_names.push(k.text.clone());
            let raw = match (&v.value, v.typed()) {
                (Value::Map(_), _) => {
                    let Some(f) = self.map(
                        v,
                        &format!("extract `{}`", k.text),
                        "",
                        &["json", "header", "regex", "default"],
                    ) else {
                        continue;
                    };
                    let mut get = |key: &str| {
                        f.get(key)
                            .and_then(|n| self.text(&format!("extract.{}.{key}", k.text), n, ""))
                    };
                    let (json, header, regex) = (get("json"), get("header"), get("regex"));
                    RawExtract::Full {
                        json: json.map(|s| s.value),
                        header: header.map(|s| s.value),
                        regex: regex.map(|s| s.value),
                        default: f.get("default").map(Node::to_json),
                    }
                }
                (Value::Scalar { text, .. }, Some(t)) if t != Typed::Null => {
                    RawExtract::Path(text.clone())
                }
                _ => {
                    self.error(
                        v.at,
                        format!("extract `{}`: {how}, not {}", k.text, found(v)),
                    );
                    continue;
                }
            };
            s.extract.push((
                k.text.clone(),
                S {
                    value: raw,
                    at: v.at,
                },
            ));
        }
    }

    fn check(&mut self, node: &Node) -> Option<S<RawCheck>> {
        let f = self.map(
            node,
            "`check`",
            "check: { status: 201, exists: [$.id] }",
            &["status", "json", "exists", "body_contains"],
        )?;
        let mut c = RawCheck {
            status: f.get("status").and_then(|n| self.status("check.status", n)),
            ..RawCheck::default()
        };
        if let Some(n) = f.get("json") {
            match &n.value {
                Value::Map(entries) => c.json = entries.iter().map(|(k, v)| (S { value: k.text.clone(), at: k.at }, v.clone())).collect(),
                _ => self.error(n.at, format!("`check.json`: expected a mapping of JSONPath queries to values, not {}; write it like `json: {{ \"$.status\": OPEN }}`", found(n))),
            }
        }
        if let Some(n) = f.get("exists") {
            c.exists = self.texts("check.exists", n, "exists: [$.id]");
        }
        if let Some(n) = f.get("body_contains") {
            c.body_contains = self
                .texts("check.body_contains", n, "body_contains: OPEN")
                .into_iter()
                .map(|s| s.value)
                .collect();
        }
        Some(S {
            value: c,
            at: node.at,
        })
    }

    fn branches(&mut self, items: &[Node]) -> Vec<S<RawBranch>> {
        let mut out = Vec::new();
        for b in items {
            let Some(f) = self.map(
                b,
                "a branch of `one_of`",
                "- { weight: 3, steps: [...] }",
                &["weight", "name", "steps"],
            ) else {
                continue;
            };
            let weight = match f.get("weight") {
                None => S { value: 1, at: b.at },
                Some(n) => match self.whole("weight", n, "weight: 3") {
                    Some(w) => S {
                        value: u32::try_from(w.value).unwrap_or(u32::MAX),
                        at: w.at,
                    },
                    None => S { value: 1, at: n.at },
                },
            };
            let name = f
                .get("name")
                .and_then(|n| self.text("name", n, "name: browse"))
                .map(|s| s.value);
            let steps = match f.get("steps") {
                Some(n) => self
                    .list("steps", n, "steps", "steps: [ { request: GET / } ]")
                    .map(|items| self.steps(items))
                    .unwrap_or_default(),
                None => {
                    self.error(b.at, "a branch of `one_of` needs `steps`; write it like `- { weight: 3, steps: [ { request: GET / } ] }`");
                    continue;
                }
            };
            out.push(S {
                value: RawBranch {
                    weight,
                    name,
                    steps,
                },
                at: b.at,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_are_typos_only() {
        assert_eq!(suggest("requets", STEP_KEYS), Some("request"));
        assert_eq!(suggest("step", TOP_KEYS), Some("steps"));
        assert_eq!(suggest("thinktime", STEP_KEYS), Some("think_time"));
        assert_eq!(suggest("xyz", STEP_KEYS), None);
    }
}
