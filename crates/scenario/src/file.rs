//! Reading a scenario file: YAML into the raw model (serde-saphyr, which reports line and
//! column), then validation and compilation into a [`Scenario`], collecting every error
//! with the line and column of the value at fault.
//!
//! All YAML goes through [`parse_scenario`], so swapping the YAML crate is a one-file change.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::data::{Feeder, Order};
use crate::extract::{Check, Expected, Extract, Source, parse_json_path};
use crate::load::{LoadSpec, OPTIONS};
use crate::plan::{RequestSpec, Settings, StatusSet};
use crate::scenario::*;
use crate::template::{BUILTINS, Template, Templates, has_syntax};
use crate::threshold::parse_threshold;
use crate::parse_duration;

/// One problem in a scenario file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file.
    pub file: PathBuf,
    /// 1-based line (0 when unknown).
    pub line: u64,
    /// 1-based column (0 when unknown).
    pub column: u64,
    /// What is wrong and what to write instead.
    pub message: String,
}

impl std::fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}: {}", self.file.display(), self.line, self.column, self.message)
    }
}

/// Every problem found in a scenario file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioErrors(pub Vec<ScenarioError>);

impl std::fmt::Display for ScenarioErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ScenarioErrors {}

/// Reads and validates the scenario at `path`.
pub fn load_scenario(path: &Path) -> Result<Scenario, ScenarioErrors> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        ScenarioErrors(vec![ScenarioError { file: path.to_path_buf(), line: 0, column: 0, message: format!("cannot read it: {e}") }])
    })?;
    parse_scenario(path, &text, &|name| std::env::var(name).ok())
}

/// Parses and validates scenario text; `path` names it in errors and anchors relative
/// data files; `env` looks up environment variables.
pub fn parse_scenario(path: &Path, text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Scenario, ScenarioErrors> {
    if text.lines().all(|l| l.trim().is_empty() || l.trim_start().starts_with('#')) {
        let message = "the file is empty: a scenario needs at least `target` and `steps` (see examples/)".to_string();
        return Err(ScenarioErrors(vec![ScenarioError { file: path.to_path_buf(), line: 1, column: 1, message }]));
    }
    let raw: RawScenario = serde_saphyr::from_str(text).map_err(|e| {
        let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
        ScenarioErrors(vec![ScenarioError { file: path.to_path_buf(), line, column, message: plain_message(&e) }])
    })?;
    let mut c = Compiler { file: path.to_path_buf(), errors: Vec::new(), templates: Templates::new(), env_names: BTreeSet::new(), names: BTreeMap::new(), steps: Vec::new() };
    let scenario = c.scenario(raw, env);
    if c.errors.is_empty() { Ok(scenario) } else { Err(ScenarioErrors(c.errors)) }
}

/// serde-saphyr's message without its snippet and location suffix (we print our own).
fn plain_message(e: &serde_saphyr::Error) -> String {
    let text = e.render_with_options(serde_saphyr::render_options! { snippets: serde_saphyr::SnippetMode::Off });
    let first = text.lines().next().unwrap_or_default().trim();
    let cut = first.find(" at line ").map_or(first, |i| &first[..i]).trim_end_matches('.');
    let friendlier = [
        ("untagged enum RawThreshold", "a threshold is an expression such as `error_rate < 1%`, or `step name: expression`"),
        ("untagged enum RawExtract", "an extract is a JSONPath such as `$.id`, or one of `{ json: $.id }`, `{ header: Location }`, `{ regex: 'id=(\\d+)' }`"),
        ("untagged enum StatusValue", "a status is a code such as 201 or a list such as \"200-299,404\""),
        ("untagged enum OneOrMany", "expected a string or a list of strings"),
        ("invalid u64", "expected a whole number (0 or more)"),
        ("expected sequence start", "expected a list (lines starting with `- `)"),
        ("expected mapping start", "expected a mapping (`key: value` lines)"),
    ];
    friendlier.iter().find(|(k, _)| cut.contains(k)).map_or_else(|| cut.to_string(), |(_, v)| v.to_string())
}

type S<T> = Spanned<T>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Option<String>,
    target: S<String>,
    #[serde(default)]
    headers: BTreeMap<String, S<String>>,
    #[serde(default)]
    load: Option<S<BTreeMap<String, S<Scalar>>>>,
    timeout: Option<S<String>>,
    warmup: Option<S<String>>,
    expect_status: Option<S<StatusValue>>,
    #[serde(default)]
    variables: BTreeMap<String, S<String>>,
    #[serde(default)]
    data: BTreeMap<String, S<RawData>>,
    #[serde(default)]
    thresholds: Vec<S<RawThreshold>>,
    steps: S<Vec<S<RawStep>>>,
}

/// A scalar under `load:`, read as the text a flag would take (`vus: 50` is `--vus 50`).
#[derive(Deserialize)]
#[serde(untagged)]
enum Scalar {
    Whole(u64),
    Number(f64),
    Text(String),
}

impl Scalar {
    fn text(&self) -> String {
        match self {
            Scalar::Whole(n) => n.to_string(),
            Scalar::Number(x) => x.to_string(),
            Scalar::Text(t) => t.clone(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawData {
    file: String,
    #[serde(default)]
    order: Option<String>,
    #[serde(default)]
    unique: bool,
}

/// `201`, `"200-299,404"`.
#[derive(Deserialize)]
#[serde(untagged)]
enum StatusValue {
    Code(u16),
    Text(String),
}

/// `error_rate < 1%`, or `{ step name: ttfb p99 < 300ms }`.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawThreshold {
    All(String),
    Step(BTreeMap<String, String>),
}

/// `$.accessCode`, or `{ json: $.id, default: 0 }`, `{ header: Location }`, `{ regex: 'id=(\d+)' }`.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawExtract {
    Path(String),
    Full(RawExtractFull),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExtractFull {
    json: Option<String>,
    header: Option<String>,
    regex: Option<String>,
    default: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCheck {
    status: Option<S<StatusValue>>,
    #[serde(default)]
    json: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    exists: Vec<String>,
    body_contains: Option<OneOrMany>,
}

#[derive(Deserialize, Clone)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    name: Option<S<String>>,
    // An HTTP request: `request: POST /path`, or `method` + `url`.
    request: Option<S<String>>,
    method: Option<S<String>>,
    url: Option<S<String>>,
    #[serde(default)]
    headers: BTreeMap<String, S<String>>,
    json: Option<S<serde_json::Value>>,
    form: Option<BTreeMap<String, S<String>>>,
    body: Option<S<String>>,
    #[serde(default)]
    extract: BTreeMap<String, S<RawExtract>>,
    check: Option<S<RawCheck>>,
    think_time: Option<S<String>>,
    timeout: Option<S<String>>,
    // A server-sent event stream.
    sse: Option<S<String>>,
    events: Option<u64>,
    #[serde(default)]
    wait: bool,
    // A WebSocket.
    websocket: Option<S<String>>,
    send: Option<OneOrMany>,
    expect: Option<S<String>>,
    // A group.
    group: Option<S<String>>,
    repeat: Option<S<u64>>,
    steps: Option<Vec<S<RawStep>>>,
    // Weighted branches: one is picked per pass.
    one_of: Option<Vec<S<RawBranch>>>,
}

/// One branch of `one_of`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBranch {
    #[serde(default = "one")]
    weight: S<u32>,
    name: Option<String>,
    steps: Vec<S<RawStep>>,
}

fn one() -> S<u32> {
    S { value: 1, referenced: serde_saphyr::Location::UNKNOWN, defined: serde_saphyr::Location::UNKNOWN }
}

struct Compiler {
    file: PathBuf,
    errors: Vec<ScenarioError>,
    templates: Templates,
    env_names: BTreeSet<String>,
    /// Step names already taken, with the line that took them.
    names: BTreeMap<String, u64>,
    steps: Vec<StepInfo>,
}

/// Line and column of a spanned value.
#[derive(Clone, Copy)]
struct At(u64, u64);

fn at<T>(s: &S<T>) -> At {
    At(s.referenced.line(), s.referenced.column())
}

impl Compiler {
    fn error(&mut self, at: At, message: impl Into<String>) {
        self.errors.push(ScenarioError { file: self.file.clone(), line: at.0, column: at.1, message: message.into() });
    }

    fn duration(&mut self, field: &str, v: &Option<S<String>>) -> Option<Duration> {
        let v = v.as_ref()?;
        match parse_duration(&v.value) {
            Ok(d) if d.is_zero() && field == "timeout" => {
                self.error(at(v), format!("`{field}`: `{}` would fail every request; give a time above zero, like 30s", v.value));
                None
            }
            Ok(d) => Some(d),
            Err(e) => {
                self.error(at(v), format!("`{field}`: {e}"));
                None
            }
        }
    }

    fn pause(&mut self, v: &Option<S<String>>) -> Pause {
        let Some(v) = v else { return Pause::default() };
        Pause::parse(&v.value).unwrap_or_else(|e| {
            self.error(at(v), format!("`think_time`: {e}"));
            Pause::default()
        })
    }

    /// Compiles a template and checks the variables it reads are defined by then.
    fn template(&mut self, field: &str, s: &S<String>, defined: &BTreeSet<String>) -> Template {
        self.template_at(field, &s.value, at(s), defined, false)
    }

    fn template_at(&mut self, field: &str, text: &str, where_: At, defined: &BTreeSet<String>, json: bool) -> Template {
        let compiled = if json { self.templates.compile_value(text) } else { self.templates.compile(text) };
        match compiled {
            Ok((t, vars)) => {
                self.check_vars(field, where_, &vars, defined);
                t
            }
            Err(e) => {
                self.error(where_, format!("`{field}`: {e}"));
                Template::Literal(text.to_string())
            }
        }
    }

    /// `vars` are dotted paths (`env.TOKEN`, `user.email`, `code`).
    fn check_vars(&mut self, field: &str, where_: At, vars: &BTreeSet<String>, defined: &BTreeSet<String>) {
        let mut reported = BTreeSet::new();
        for path in vars {
            let (top, rest) = path.split_once('.').unwrap_or((path, ""));
            if top == "env" && !rest.is_empty() {
                self.env_names.insert(rest.split('.').next().unwrap_or(rest).to_string());
            }
            if crate::template::FUNCTIONS.contains(&top) || defined.contains(top) || !reported.insert(top.to_string()) {
                continue;
            }
            let known: Vec<&str> = defined.iter().map(String::as_str).collect();
            self.error(
                where_,
                format!(
                    "`{field}`: variable `{top}` is used before any step defines it (defined here: {}); extract it in an earlier step, or add it under `variables`",
                    known.join(", ")
                ),
            );
        }
    }

    fn scenario(&mut self, raw: RawScenario, env: &dyn Fn(&str) -> Option<String>) -> Scenario {
        let mut defined: BTreeSet<String> = BUILTINS.iter().map(|s| s.to_string()).collect();
        if let Err(e) = check_target(&raw.target.value) {
            self.error(at(&raw.target), format!("`target`: {e}"));
        }
        let load = raw.load.as_ref().map(|l| self.load(l)).unwrap_or_default();
        let timeout = self.duration("timeout", &raw.timeout);
        let warmup = self.duration("warmup", &raw.warmup);
        let expect_status = raw.expect_status.as_ref().and_then(|s| self.status("expect_status", s));
        let headers = self.headers(&raw.headers, &defined);
        let mut variables = Vec::new();
        for (name, v) in &raw.variables {
            variables.push((name.clone(), self.template("variables", v, &defined)));
        }
        defined.extend(raw.variables.keys().cloned());
        let dir = self.file.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut data = Vec::new();
        for (name, d) in &raw.data {
            let order = match d.value.order.as_deref() {
                None => Some(Order::Shared),
                Some(o) => Order::parse(o),
            };
            let Some(order) = order else {
                self.error(at(d), format!("data `{name}`: order `{}` is not one of per_vu, shared, random", d.value.order.as_deref().unwrap_or_default()));
                continue;
            };
            if d.value.unique && order == Order::Random {
                self.error(at(d), format!("data `{name}`: `unique: true` needs order per_vu or shared"));
                continue;
            }
            match Feeder::load(name, &dir.join(&d.value.file), order, d.value.unique) {
                Ok(f) => data.push(Arc::new(f)),
                Err(e) => self.error(at(d), format!("data `{name}`: {e}")),
            }
            defined.insert(name.clone());
        }
        let steps_at = at(&raw.steps);
        if raw.steps.value.is_empty() {
            self.error(steps_at, "`steps` is empty: add at least one request");
        }
        let steps = self.steps(&raw.steps.value, &mut defined);
        let mut thresholds = Vec::new();
        for t in &raw.thresholds {
            let (step, expr) = match &t.value {
                RawThreshold::All(e) => (None, e.clone()),
                RawThreshold::Step(m) if m.len() == 1 => {
                    let (k, v) = m.iter().next().expect("one entry");
                    (Some(k.clone()), v.clone())
                }
                RawThreshold::Step(_) => {
                    self.error(at(t), "a step threshold is one `step name: expression` entry");
                    continue;
                }
            };
            if let Some(s) = &step
                && !self.steps.iter().any(|i| i.name == *s) {
                    let names: Vec<&str> = self.steps.iter().map(|i| i.name.as_str()).collect();
                    self.error(at(t), format!("threshold for step `{s}`: no step has that name (steps: {})", names.join(", ")));
                    continue;
                }
            match parse_threshold(&expr) {
                Ok(th) if th.metric == crate::threshold::Metric::Iteration && step.is_some() => {
                    self.error(at(t), "`iteration` is the whole flow: give it as a threshold of its own, not under a step");
                }
                Ok(mut th) => {
                    th.step = step;
                    thresholds.push(th);
                }
                Err(e) => self.error(at(t), e.0),
            }
        }
        let mut env_values = Vec::new();
        for name in std::mem::take(&mut self.env_names) {
            match env(&name) {
                Some(v) => env_values.push((name, v)),
                None => self.error(At(0, 0), format!("environment variable `{name}` is not set (the scenario reads `env.{name}`)")),
            }
        }
        Scenario {
            file: self.file.clone(),
            settings: Settings {
                load,
                target: Some(raw.target.value),
                name: raw.name,
                timeout,
                warmup,
                expect_status,
                thresholds,
            },
            headers,
            variables,
            data,
            steps,
            step_info: std::mem::take(&mut self.steps),
            templates: std::mem::take(&mut self.templates),
            env: env_values,
            masks: Default::default(),
        }
    }

    /// The `load` section: the options of `volley run`'s flags, parsed by the same table
    /// ([`crate::load`]), with its conflict rules; a shape given here must be complete.
    fn load(&mut self, section: &S<BTreeMap<String, S<Scalar>>>) -> LoadSpec {
        let mut spec = LoadSpec::default();
        for (key, value) in &section.value {
            if !OPTIONS.iter().any(|o| o.key == key) {
                let keys: Vec<&str> = OPTIONS.iter().map(|o| o.key).collect();
                self.error(at(value), format!("unknown load key `{key}`; the keys are {}", keys.join(", ")));
                continue;
            }
            if let Err(e) = spec.set(key, &value.value.text()) {
                self.error(at(value), format!("load `{key}`: {e}"));
            }
        }
        let conflicts = spec.conflicts();
        for c in &conflicts {
            let where_ = section.value.get(c.other).map_or(at(section), at);
            self.error(where_, format!("load `{}` cannot be combined with `{}`: {}", c.other, c.key, c.why));
        }
        if conflicts.is_empty() && spec.has_shape()
            && let Err(e) = spec.resolve()
        {
            self.error(at(section), format!("`load`: {e}"));
        }
        spec
    }

    fn status(&mut self, field: &str, s: &S<StatusValue>) -> Option<StatusSet> {
        let text = match &s.value {
            StatusValue::Code(c) => c.to_string(),
            StatusValue::Text(t) => t.clone(),
        };
        match StatusSet::parse(&text) {
            Ok(set) => Some(set),
            Err(e) => {
                self.error(at(s), format!("`{field}`: {e}"));
                None
            }
        }
    }

    fn headers(&mut self, raw: &BTreeMap<String, S<String>>, defined: &BTreeSet<String>) -> Vec<(String, Template)> {
        let mut out = Vec::new();
        for (name, v) in raw {
            if let Err(e) = RequestSpec::parse_header(&format!("{name}: x")) {
                self.error(at(v), e.0);
                continue;
            }
            out.push((name.clone(), self.template(&format!("headers.{name}"), v, defined)));
        }
        out
    }

    fn steps(&mut self, raw: &[S<RawStep>], defined: &mut BTreeSet<String>) -> Vec<Node> {
        raw.iter().filter_map(|s| self.step(s, defined)).collect()
    }

    /// Registers a step's metric row; default names are made unique with `#2`, `#3`.
    fn register(&mut self, name: Option<&S<String>>, default: String, kind: StepKind, where_: At) -> usize {
        let name = match name {
            Some(n) => {
                if let Some(line) = self.names.get(&n.value) {
                    let line = *line;
                    self.error(at(n), format!("step name `{}` is already used on line {line}; step names must be unique", n.value));
                }
                n.value.clone()
            }
            None => {
                let mut candidate = default.clone();
                for k in 2.. {
                    if !self.names.contains_key(&candidate) {
                        break;
                    }
                    candidate = format!("{default} #{k}");
                }
                candidate
            }
        };
        self.names.insert(name.clone(), where_.0);
        self.steps.push(StepInfo { name, kind });
        self.steps.len() - 1
    }

    fn step(&mut self, s: &S<RawStep>, defined: &mut BTreeSet<String>) -> Option<Node> {
        let r = &s.value;
        let here = at(s);
        let kinds =
            [r.request.is_some() || r.url.is_some(), r.sse.is_some(), r.websocket.is_some(), r.steps.is_some(), r.one_of.is_some()];
        match kinds.iter().filter(|k| **k).count() {
            0 => {
                self.error(here, "a step needs one of `request` (or `method` + `url`), `sse`, `websocket`, `steps` or `one_of`");
                return None;
            }
            1 => {}
            _ => {
                self.error(here, "a step can be only one of a request, `sse`, `websocket`, a group with `steps` or `one_of`");
                return None;
            }
        }
        if let Some(branches) = &r.one_of {
            return self.one_of(s, branches, defined);
        }
        if let Some(steps) = &r.steps {
            return self.group(s, steps, defined);
        }
        if let Some(g) = &r.group {
            self.error(at(g), "`group` names a group: give it `steps`");
        }
        let node = if let Some(url) = &r.sse {
            self.not_for(r, "an `sse` step", &["json", "form", "body", "extract", "check", "send", "expect", "method"]);
            let call = self.call(r, url, "sse", StepKind::Sse, None, defined);
            Node::Sse(SseStep { call, events: r.events, wait: r.wait })
        } else if let Some(url) = &r.websocket {
            self.not_for(r, "a `websocket` step", &["json", "form", "body", "extract", "check", "events", "method"]);
            let call = self.call(r, url, "websocket", StepKind::WebSocket, None, defined);
            let send = r
                .send
                .clone()
                .map(OneOrMany::into_vec)
                .unwrap_or_default()
                .iter()
                .map(|m| self.template_at("send", m, here, defined, false))
                .collect();
            let expect = r.expect.as_ref().map(|e| self.template("expect", e, defined));
            Node::WebSocket(WsStep { call, send, expect })
        } else {
            self.not_for(r, "a request", &["events", "send", "expect"]);
            if r.wait {
                self.error(here, "`wait` is for `sse` steps");
            }
            self.http(s, defined)?
        };
        if let Some(rep) = &r.repeat {
            return Some(Node::Group(Group { name: None, repeat: self.repeat(rep), steps: vec![node] }));
        }
        Some(node)
    }

    fn repeat(&mut self, rep: &S<u64>) -> u64 {
        if rep.value == 0 {
            self.error(at(rep), "`repeat` must be at least 1");
        }
        rep.value.max(1)
    }

    fn not_for(&mut self, r: &RawStep, what: &str, fields: &[&str]) {
        let present = |f: &str| match f {
            "json" => r.json.is_some(),
            "form" => r.form.is_some(),
            "body" => r.body.is_some(),
            "extract" => !r.extract.is_empty(),
            "check" => r.check.is_some(),
            "send" => r.send.is_some(),
            "expect" => r.expect.is_some(),
            "events" => r.events.is_some(),
            "method" => r.method.is_some(),
            _ => false,
        };
        for f in fields.iter().filter(|f| present(f)) {
            let line = r.name.as_ref().map_or(At(0, 0), at);
            self.error(line, format!("`{f}` does not apply to {what}"));
        }
    }

    fn group(&mut self, s: &S<RawStep>, steps: &[S<RawStep>], defined: &mut BTreeSet<String>) -> Option<Node> {
        let r = &s.value;
        if r.name.is_some() || !r.headers.is_empty() || r.think_time.is_some() || r.timeout.is_some() {
            self.error(at(s), "a group takes `group`, `repeat` and `steps`; put request settings on its steps");
        }
        if steps.is_empty() {
            self.error(at(s), "the group's `steps` is empty");
        }
        let repeat = r.repeat.as_ref().map_or(1, |rep| self.repeat(rep));
        let nodes = self.steps(steps, defined);
        Some(Node::Group(Group { name: r.group.as_ref().map(|g| g.value.clone()), repeat, steps: nodes }))
    }

    /// Weighted branches. A variable is defined after them only when every branch defines it.
    fn one_of(&mut self, s: &S<RawStep>, branches: &[S<RawBranch>], defined: &mut BTreeSet<String>) -> Option<Node> {
        let r = &s.value;
        if r.name.is_some() || r.group.is_some() || !r.headers.is_empty() || r.think_time.is_some() || r.timeout.is_some() {
            self.error(at(s), "`one_of` takes a list of branches (`weight`, `name`, `steps`) and `repeat`");
        }
        if branches.is_empty() {
            self.error(at(s), "`one_of` is empty: give it branches with `steps`");
            return None;
        }
        let mut after: Option<BTreeSet<String>> = None;
        let mut out = Vec::new();
        for b in branches {
            if b.value.weight.value == 0 {
                self.error(at(&b.value.weight), "a branch's `weight` must be at least 1");
            }
            if b.value.steps.is_empty() {
                self.error(at(b), "the branch's `steps` is empty");
            }
            let mut mine = defined.clone();
            let nodes = self.steps(&b.value.steps, &mut mine);
            after = Some(match after {
                None => mine,
                Some(a) => a.intersection(&mine).cloned().collect(),
            });
            out.push(Branch { name: b.value.name.clone(), weight: b.value.weight.value.max(1), steps: nodes });
        }
        *defined = after.unwrap_or_default();
        let node = Node::OneOf(out);
        Some(match &r.repeat {
            Some(rep) => Node::Group(Group { name: None, repeat: self.repeat(rep), steps: vec![node] }),
            None => node,
        })
    }

    fn call(&mut self, r: &RawStep, url: &S<String>, field: &str, kind: StepKind, default_name: Option<String>, defined: &BTreeSet<String>) -> Call {
        let id = self.register(r.name.as_ref(), default_name.unwrap_or_else(|| format!("{} {}", field.to_uppercase(), url.value)), kind, at(url));
        let url_t = self.template(field, url, defined);
        if !has_syntax(&url.value)
            && let Err(e) = check_url(&url.value, kind) {
                self.error(at(url), format!("`{field}`: {e}"));
            }
        Call {
            id,
            url: url_t,
            headers: self.headers(&r.headers, defined),
            think_time: self.pause(&r.think_time),
            timeout: self.duration("timeout", &r.timeout),
        }
    }

    fn http(&mut self, s: &S<RawStep>, defined: &mut BTreeSet<String>) -> Option<Node> {
        let r = &s.value;
        let (method, url) = match (&r.request, &r.method, &r.url) {
            (Some(req), None, None) => {
                let mut parts = req.value.splitn(2, char::is_whitespace);
                let (m, u) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default().trim());
                if u.is_empty() {
                    self.error(at(req), format!("`request`: `{}` should be a method and a URL, e.g. `POST /api/rooms`", req.value));
                    return None;
                }
                (S { value: m.to_string(), referenced: req.referenced, defined: req.defined }, S { value: u.to_string(), referenced: req.referenced, defined: req.defined })
            }
            (None, m, Some(u)) => (m.clone().unwrap_or(S { value: "GET".into(), referenced: u.referenced, defined: u.defined }), u.clone()),
            (Some(req), _, _) => {
                self.error(at(req), "use either `request: METHOD URL` or `method` + `url`, not both");
                return None;
            }
            (None, Some(m), None) => {
                self.error(at(m), "`method` needs a `url`");
                return None;
            }
            (None, None, None) => unreachable!("a request step has request or url"),
        };
        let m = method.value.to_ascii_uppercase();
        if m.is_empty() || !m.bytes().all(|b| b.is_ascii_alphabetic()) {
            self.error(at(&method), format!("`{}` is not an HTTP method (GET, POST, PUT, PATCH, DELETE, …)", method.value));
        }
        let default_name = format!("{m} {}", url.value);
        let call = self.call(r, &url, "url", StepKind::Http, Some(default_name), defined);
        let bodies = [r.json.is_some(), r.form.is_some(), r.body.is_some()].iter().filter(|b| **b).count();
        if bodies > 1 {
            self.error(at(s), "a request has one body: `json`, `form` or `body`");
        }
        let body = if let Some(j) = &r.json {
            Body::Json(self.json(&j.value, at(j), defined))
        } else if let Some(f) = &r.form {
            Body::Form(f.iter().map(|(k, v)| (k.clone(), self.template(&format!("form.{k}"), v, defined))).collect())
        } else if let Some(b) = &r.body {
            Body::Raw(self.template("body", b, defined))
        } else {
            Body::Empty
        };
        let check = r.check.as_ref().map(|c| self.check(c, defined)).unwrap_or_default();
        let mut extract = Vec::new();
        for (var, e) in &r.extract {
            if BUILTINS.contains(&var.as_str()) {
                self.error(at(e), format!("`extract`: `{var}` is built in (vu, iteration, env); choose another name"));
                continue;
            }
            let source = match &e.value {
                RawExtract::Path(q) => self.json_path(at(e), q).map(|p| Source::Json(p, q.clone())),
                RawExtract::Full(f) => match (&f.json, &f.header, &f.regex) {
                    (Some(q), None, None) => self.json_path(at(e), q).map(|p| Source::Json(p, q.clone())),
                    (None, Some(h), None) => Some(Source::Header(h.clone())),
                    (None, None, Some(re)) => match regex::Regex::new(re) {
                        Ok(re) => Some(Source::Regex(re)),
                        Err(err) => {
                            self.error(at(e), format!("extract `{var}`: bad regex: {}", err.to_string().lines().last().unwrap_or_default()));
                            None
                        }
                    },
                    _ => {
                        self.error(at(e), format!("extract `{var}`: give exactly one of `json`, `header`, `regex`"));
                        None
                    }
                },
            };
            let default = match &e.value {
                RawExtract::Full(f) => f.default.clone(),
                RawExtract::Path(_) => None,
            };
            if let Some(source) = source {
                extract.push(Extract { var: var.clone(), source, default });
            }
        }
        // Defined for the steps after this one.
        defined.extend(r.extract.keys().cloned());
        Some(Node::Http(HttpStep { call, method: m, body, extract, check }))
    }

    fn json_path(&mut self, where_: At, q: &str) -> Option<serde_json_path::JsonPath> {
        parse_json_path(q).map_err(|e| self.error(where_, e.0)).ok()
    }

    fn check(&mut self, c: &S<RawCheck>, defined: &BTreeSet<String>) -> Check {
        let r = &c.value;
        let mut out = Check { status: r.status.as_ref().and_then(|s| self.status("check.status", s)), ..Check::default() };
        for (q, want) in &r.json {
            let expected = match want {
                serde_json::Value::String(t) if has_syntax(t) => {
                    Expected::Template(self.template_at(&format!("check.json.{q}"), t, at(c), defined, false))
                }
                other => Expected::Value(other.clone()),
            };
            if let Some(p) = self.json_path(at(c), q) {
                out.json_equals.push((p, q.clone(), expected));
            }
        }
        for q in &r.exists {
            if let Some(p) = self.json_path(at(c), q) {
                out.json_exists.push((p, q.clone()));
            }
        }
        if let Some(b) = &r.body_contains {
            out.body_contains = b.clone().into_vec();
        }
        out
    }

    fn json(&mut self, v: &serde_json::Value, where_: At, defined: &BTreeSet<String>) -> JsonTemplate {
        use serde_json::Value as V;
        match v {
            V::String(s) if has_syntax(s) => JsonTemplate::Text(self.template_at("json", s, where_, defined, true)),
            V::Array(items) => JsonTemplate::Array(items.iter().map(|i| self.json(i, where_, defined)).collect()),
            V::Object(map) => JsonTemplate::Object(map.iter().map(|(k, i)| (k.clone(), self.json(i, where_, defined))).collect()),
            other => JsonTemplate::Fixed(other.clone()),
        }
    }
}

/// The target must be an absolute http(s) URL.
fn check_target(url: &str) -> Result<(), String> {
    let rest = url.strip_prefix("http://").or_else(|| url.strip_prefix("https://"));
    match rest {
        Some(r) if !r.is_empty() && !r.starts_with('/') => Ok(()),
        _ => Err(format!("`{url}` is not a base URL; write it like http://127.0.0.1:8080")),
    }
}

/// A literal step URL must be relative (`/path`) or absolute with the right scheme.
fn check_url(url: &str, kind: StepKind) -> Result<(), String> {
    if url.starts_with('/') {
        return Ok(());
    }
    let schemes: &[&str] = if kind == StepKind::WebSocket { &["ws://", "wss://", "http://", "https://"] } else { &["http://", "https://"] };
    if schemes.iter().any(|s| url.starts_with(s)) {
        return Ok(());
    }
    Err(format!("`{url}` should start with / (relative to the target) or {}", schemes.join(" or ")))
}

#[cfg(test)]
mod tests;
