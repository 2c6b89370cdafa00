//! The raw model compiled into a [`Scenario`]: templates compiled once and inspected for
//! what only rendering would find, JSONPath queries and regexes parsed, CSV feeders read,
//! every variable checked to be defined by an earlier step (and every feeder column to
//! exist), URLs and headers checked for what can never be sent. Every problem is collected.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::shape::{
    RawBranch, RawCheck, RawExtract, RawLoad, RawPopulation, RawScenario, RawStep, RawThreshold,
};
use super::yaml::{Typed, Value as YamlValue};
use super::{At, S, suggest};
use crate::Error;
use crate::data::{Feeder, Order};
use crate::duration::parse_timeout;
use crate::extract::{Check, Expected, Extract, Source, parse_json_path};
use crate::json::JsonTemplate;
use crate::load::{LoadSpec, OPTIONS};
use crate::parse_duration;
use crate::plan::{RequestSpec, Settings, StatusSet};
use crate::scenario::*;
use crate::template::{BUILTINS, FUNCTIONS, MAX_TEMPLATES, Template, Templates, has_syntax};
use crate::threshold::parse_threshold;

/// The most metric-bearing steps (requests, streams, WebSockets) a scenario may have.
pub const MAX_STEPS: usize = 20_000;

pub(super) struct Compiler {
    file: PathBuf,
    pub errors: Vec<(At, String)>,
    templates: Templates,
    /// `env.NAME`s the file reads, each with where it first does.
    env_names: BTreeMap<String, At>,
    /// Step names already taken, with the line that took them.
    names: BTreeMap<String, u64>,
    steps: Vec<StepInfo>,
    /// Feeder columns, by feeder name.
    columns: BTreeMap<String, Vec<String>>,
    /// The target's `host:port` as written, to check absolute step URLs against.
    authority: Option<String>,
    /// An `extract` that is not a mapping hid the names it meant: undefined variables
    /// are not reported after it.
    lost_names: bool,
    limit_reported: bool,
    /// The population being compiled, in a file with `scenarios:`.
    population: Option<String>,
    /// .proto file sets compiled so far (each set once, however many steps name it).
    protos: BTreeMap<Vec<PathBuf>, Result<crate::grpc::DescriptorPool, crate::Error>>,
}

fn at<T>(s: &S<T>) -> At {
    s.at
}

impl Compiler {
    pub fn new(file: PathBuf) -> Self {
        Compiler {
            file,
            errors: Vec::new(),
            templates: Templates::new(),
            env_names: BTreeMap::new(),
            names: BTreeMap::new(),
            steps: Vec::new(),
            columns: BTreeMap::new(),
            authority: None,
            lost_names: false,
            limit_reported: false,
            population: None,
            protos: BTreeMap::new(),
        }
    }

    fn error(&mut self, at: At, message: impl Into<String>) {
        self.errors.push((at, message.into()));
    }

    /// `field`'s value read by `parse`, the parser of the flag of the same name.
    fn value<T>(
        &mut self,
        field: &str,
        v: &Option<S<String>>,
        parse: fn(&str) -> Result<T, Error>,
    ) -> Option<T> {
        let v = v.as_ref()?;
        match parse(&v.value) {
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
        self.template_at(field, &s.value, at(s), defined, false).0
    }

    /// The template, and its literal text outside `{{ }}` (for checks of URLs and headers).
    fn template_at(
        &mut self,
        field: &str,
        text: &str,
        where_: At,
        defined: &BTreeSet<String>,
        json: bool,
    ) -> (Template, Vec<String>) {
        if has_syntax(text) && self.templates.len() >= MAX_TEMPLATES {
            if !self.limit_reported {
                self.limit_reported = true;
                self.error(where_, format!("more than {MAX_TEMPLATES} distinct template expressions: a scenario is limited to that — use `repeat` and groups instead of copies"));
            }
            return (Template::Literal(text.to_string()), Vec::new());
        }
        let compiled = if json {
            self.templates.compile_value(text)
        } else {
            self.templates.compile(text)
        };
        match compiled {
            Ok((t, vars)) => {
                let tops: BTreeSet<String> = vars
                    .iter()
                    .map(|v| v.split('.').next().unwrap_or(v).to_string())
                    .collect();
                let inspection = self.templates.inspect(text, &tops);
                let shown = if text.chars().count() > 60 {
                    format!("{}…", text.chars().take(60).collect::<String>())
                } else {
                    text.to_string()
                };
                for p in &inspection.problems {
                    self.error(where_, format!("`{field}`: {p} (in `{shown}`)"));
                }
                self.check_vars(field, where_, &vars, defined, &inspection.not_functions);
                (t, inspection.literals)
            }
            Err(e) => {
                if self.templates.len() < MAX_TEMPLATES
                    || !std::mem::replace(&mut self.limit_reported, true)
                {
                    self.error(where_, format!("`{field}`: {e}"));
                }
                (Template::Literal(text.to_string()), Vec::new())
            }
        }
    }

    /// `vars` are dotted paths (`env.TOKEN`, `user.email`, `code`).
    fn check_vars(
        &mut self,
        field: &str,
        where_: At,
        vars: &BTreeSet<String>,
        defined: &BTreeSet<String>,
        skip: &BTreeSet<String>,
    ) {
        let mut reported = BTreeSet::new();
        for path in vars {
            let (top, rest) = path.split_once('.').unwrap_or((path, ""));
            let first = rest.split('.').next().unwrap_or(rest);
            if top == "env" && !rest.is_empty() {
                self.env_names.entry(first.to_string()).or_insert(where_);
            }
            if (top == "vu" || top == "iteration")
                && !rest.is_empty()
                && reported.insert(path.clone())
            {
                self.error(where_, format!("`{field}`: `{top}` is a number and has no `.{first}`; write `{{{{ {top} }}}}`"));
                continue;
            }
            if !rest.is_empty()
                && defined.contains(top)
                && let Some(columns) = self.columns.get(top)
                && !columns.iter().any(|c| c == first)
                && reported.insert(path.clone())
            {
                let cols: Vec<&str> = columns.iter().map(String::as_str).collect();
                let hint = suggest(first, &cols)
                    .map(|s| format!("did you mean `{top}.{s}`? "))
                    .unwrap_or_default();
                self.error(
                    where_,
                    format!(
                        "`{field}`: data `{top}` has no column `{first}`; {hint}its columns are {}",
                        cols.join(", ")
                    ),
                );
                continue;
            }
            if FUNCTIONS.contains(&top)
                || skip.contains(top)
                || defined.contains(top)
                || self.lost_names
                || !reported.insert(top.to_string())
            {
                continue;
            }
            let known: Vec<&str> = defined.iter().map(String::as_str).collect();
            let hint = suggest(top, &known)
                .map(|s| format!(" — did you mean `{s}`?"))
                .unwrap_or_default();
            self.error(
                where_,
                format!(
                    "`{field}`: variable `{top}` is used before any step defines it{hint} (defined here: {}); extract it in an earlier step, or add it under `variables`",
                    known.join(", ")
                ),
            );
        }
    }

    pub fn scenario(
        &mut self,
        mut raw: RawScenario,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Scenario {
        if !raw.populations.is_empty() {
            let populations = std::mem::take(&mut raw.populations);
            return self.with_populations(raw, populations, env);
        }
        let mut defined: BTreeSet<String> = BUILTINS.iter().map(|s| s.to_string()).collect();
        if let Some(target) = &raw.target {
            match check_target(&target.value) {
                Ok(authority) => self.authority = Some(authority),
                Err(e) => self.error(at(target), format!("`target`: {e}")),
            }
        }
        let load = raw.load.as_ref().map(|l| self.load(l)).unwrap_or_default();
        let timeout = self.value("timeout", &raw.timeout, parse_timeout);
        let warmup = self.value("warmup", &raw.warmup, crate::Warmup::parse);
        let expect_status = raw
            .expect_status
            .as_ref()
            .and_then(|s| self.status("expect_status", s));
        let headers = self.headers(&raw.headers, &defined);
        let mut variables = Vec::new();
        for (name, v) in &raw.variables {
            variables.push((name.clone(), self.template("variables", v, &defined)));
        }
        defined.extend(raw.variables.keys().cloned());
        let dir = self
            .file
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let mut data = Vec::new();
        for (name, d) in &raw.data {
            let order = match &d.value.order {
                None => Some(Order::Shared),
                Some(o) => Order::parse(&o.value),
            };
            let Some(order) = order else {
                let o = d
                    .value
                    .order
                    .as_ref()
                    .map(|o| o.value.as_str())
                    .unwrap_or_default();
                let hint = suggest(o, &["per_vu", "shared", "random"])
                    .map(|s| format!("; did you mean `{s}`?"))
                    .unwrap_or_default();
                self.error(
                    d.value.order.as_ref().map_or(at(d), at),
                    format!(
                        "data `{name}`: order `{o}` is not one of per_vu, shared, random{hint}"
                    ),
                );
                defined.insert(name.clone());
                continue;
            };
            if d.value.unique && order == Order::Random {
                self.error(
                    at(d),
                    format!("data `{name}`: `unique: true` needs order per_vu or shared"),
                );
                defined.insert(name.clone());
                continue;
            }
            match Feeder::load(name, &dir.join(&d.value.file), order, d.value.unique) {
                Ok(f) => {
                    let mut seen = BTreeSet::new();
                    for c in &f.columns {
                        if c.is_empty() {
                            self.error(at(d), format!("data `{name}`: {} has a column without a name in its header row; name every column", d.value.file));
                        } else if !seen.insert(c) {
                            self.error(at(d), format!("data `{name}`: {} names the column `{c}` twice in its header row; each column needs a name of its own", d.value.file));
                        }
                    }
                    self.columns.insert(name.clone(), f.columns.clone());
                    data.push(Arc::new(f));
                }
                Err(e) => self.error(at(d), format!("data `{name}`: {e}")),
            }
            defined.insert(name.clone());
        }
        let steps = match &raw.steps {
            Some(list) => {
                if list.value.is_empty() {
                    self.error(at(list), "`steps` is empty: add at least one request");
                }
                self.steps(&list.value, &mut defined)
            }
            None => Vec::new(),
        };
        if self.steps.len() > MAX_STEPS {
            self.error(raw.at, format!("the scenario has {} steps; a scenario is limited to {MAX_STEPS} — use `repeat` and groups instead of copies", self.steps.len()));
        }
        let thresholds = self.thresholds(&raw.thresholds);
        let slo = self.thresholds(&raw.slo);
        let mut env_values = Vec::new();
        for (name, first) in std::mem::take(&mut self.env_names) {
            match env(&name) {
                Some(v) => env_values.push((name, v)),
                None => self.error(
                    first,
                    format!(
                        "environment variable `{name}` is not set (the scenario reads `env.{name}`)"
                    ),
                ),
            }
        }
        Scenario {
            file: self.file.clone(),
            settings: Settings {
                load,
                target: raw.target.map(|t| t.value),
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
            populations: Vec::new(),
            slo,
            kube: raw.kube.iter().map(|k| k.value.clone()).collect(),
            kube_context: raw.kube_context.map(|k| k.value),
        }
    }

    /// A file with `scenarios:`: each population compiled as a scenario of its own (the
    /// file's shared parts with its own laid over them), the run's settings from the top.
    /// Problems in the shared parts are found once per population and reported once
    /// ([`super::parse_scenario`] drops repeats).
    fn with_populations(
        &mut self,
        mut raw: RawScenario,
        raws: Vec<RawPopulation>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Scenario {
        let defaults = raw.load.as_ref().map(|l| self.load(l)).unwrap_or_default();
        let top_thresholds = std::mem::take(&mut raw.thresholds);
        let mut populations = Vec::new();
        for p in raws {
            let name = p.name.value.clone();
            let mut r = raw.clone();
            r.name = Some(name.clone());
            r.load = None;
            r.warmup = None;
            r.steps = p.steps.clone();
            r.thresholds = p.thresholds.clone();
            r.slo = Vec::new();
            r.headers.extend(p.headers.clone());
            r.variables.extend(p.variables.clone());
            if p.timeout.is_some() {
                r.timeout = p.timeout.clone();
            }
            if p.expect_status.is_some() {
                r.expect_status = p.expect_status.clone();
            }
            let mut c = Compiler::new(self.file.clone());
            c.population = Some(name.clone());
            let mut sc = c.scenario(r, env);
            self.errors.append(&mut c.errors);
            let own = p.load.as_ref().map(|l| self.load(l)).unwrap_or_default();
            if let Some(l) = &p.load {
                for key in ["repeat", "repeat_pause"] {
                    if let Some((_, v)) = l.value.iter().find(|(k, _)| k == key) {
                        self.error(at(v), format!("scenario `{name}`: `{key}` repeats the whole run; put it in the top-level `load`"));
                    }
                }
            }
            let load = own.merge(&defaults);
            if !load.has_shape() {
                self.error(
                    at(&p.name),
                    format!("scenario `{name}` has no load: give it `load:` with `vus` and `duration`, `stages`, or `rate` and `duration` — e.g. `load: {{ rate: 300, duration: 1m }}` or `load: {{ stages: \"30s:50,1m:50\" }}`"),
                );
            } else if let Err(e) = load.resolve() {
                self.error(
                    p.load.as_ref().map_or(at(&p.name), at),
                    format!("scenario `{name}`: `load`: {e}"),
                );
            }
            sc.settings.load = load;
            for t in &mut sc.settings.thresholds {
                t.population = Some(name.clone());
                t.expr = format!("{name}.{}", t.expr);
            }
            let start = match &p.start {
                None => Duration::ZERO,
                Some(s) => match parse_duration(&s.value) {
                    Ok(d) => d,
                    Err(e) => {
                        self.error(
                            at(s),
                            format!("scenario `{name}`: `start`: {e}; write it like `start: 30s`"),
                        );
                        Duration::ZERO
                    }
                },
            };
            populations.push(Population {
                name,
                start,
                scenario: Arc::new(sc),
            });
        }
        // The run's own settings: target, name, warm-up, defaults; no steps of its own.
        let mut top = self.scenario(raw, env);
        top.settings.load = defaults;
        self.steps = populations
            .iter()
            .flat_map(|p| {
                p.scenario.step_info.iter().map(|s| StepInfo {
                    name: qualified_step(&p.name, &s.name),
                    kind: s.kind,
                })
            })
            .collect();
        top.settings.thresholds = self.total_thresholds(&top_thresholds, &populations);
        top.step_info = std::mem::take(&mut self.steps);
        top.populations = populations;
        top
    }

    /// The top-level thresholds of a file with populations: of the total (a step named as
    /// `readers/read messages`), or of one population (`writers.ttfb p99 < 200ms`, a step
    /// under it by its own name).
    fn total_thresholds(
        &mut self,
        raw: &[S<RawThreshold>],
        populations: &[Population],
    ) -> Vec<crate::Threshold> {
        let mut out = Vec::new();
        let pop_names: Vec<&str> = populations.iter().map(|p| p.name.as_str()).collect();
        for t in raw {
            let (step, expr) = match &t.value {
                RawThreshold::All(e) => (None, e.clone()),
                RawThreshold::Step(m) if m.len() == 1 => (Some(m[0].0.clone()), m[0].1.clone()),
                RawThreshold::Step(_) => {
                    self.error(at(t), "a step threshold is one `step name: expression` entry; give each its own `- ` line");
                    continue;
                }
            };
            let mut th = match parse_threshold(&expr) {
                Ok(th) => th,
                Err(e) => {
                    self.error(at(t), e.to_string());
                    continue;
                }
            };
            let steps: Vec<String> = match &th.population {
                Some(p) => match populations.iter().find(|x| x.name == *p) {
                    Some(x) => x
                        .scenario
                        .step_info
                        .iter()
                        .map(|s| s.name.clone())
                        .collect(),
                    None => {
                        let hint = suggest(p, &pop_names)
                            .map(|s| format!("did you mean `{s}`? "))
                            .unwrap_or_default();
                        self.error(at(t), format!("threshold `{expr}`: no scenario is named `{p}`; {hint}(scenarios: {})", pop_names.join(", ")));
                        continue;
                    }
                },
                None => self.steps.iter().map(|s| s.name.clone()).collect(),
            };
            if let Some(s) = &step
                && !steps.iter().any(|n| n == s)
            {
                let names: Vec<&str> = steps.iter().map(String::as_str).collect();
                let hint = suggest(s, &names)
                    .map(|n| format!("did you mean `{n}`? "))
                    .unwrap_or_default();
                let shown: Vec<&str> = names.iter().take(20).copied().collect();
                let more = if names.len() > shown.len() {
                    ", …"
                } else {
                    ""
                };
                let qualify = if th.population.is_none() {
                    " — a population's step is named `scenario/step`"
                } else {
                    ""
                };
                self.error(at(t), format!("threshold for step `{s}`: no step has that name{qualify}; {hint}(steps: {}{more})", shown.join(", ")));
                continue;
            }
            if th.metric == crate::threshold::Metric::Iteration && step.is_some() {
                self.error(at(t), "`iteration` is the whole flow: give it as a threshold of its own, not under a step");
                continue;
            }
            th.step = step;
            out.push(th);
        }
        out
    }

    fn thresholds(&mut self, raw: &[S<RawThreshold>]) -> Vec<crate::Threshold> {
        let mut thresholds = Vec::new();
        for t in raw {
            let (step, expr) = match &t.value {
                RawThreshold::All(e) => (None, e.clone()),
                RawThreshold::Step(m) if m.len() == 1 => (Some(m[0].0.clone()), m[0].1.clone()),
                RawThreshold::Step(_) => {
                    self.error(at(t), "a step threshold is one `step name: expression` entry; give each its own `- ` line");
                    continue;
                }
            };
            if let Some(s) = &step
                && !self.steps.iter().any(|i| i.name == *s)
            {
                let names: Vec<&str> = self.steps.iter().map(|i| i.name.as_str()).collect();
                let hint = suggest(s, &names)
                    .map(|n| format!("did you mean `{n}`? "))
                    .unwrap_or_default();
                let shown: Vec<&str> = names.iter().take(20).copied().collect();
                let more = if names.len() > shown.len() {
                    ", …"
                } else {
                    ""
                };
                self.error(
                    at(t),
                    format!(
                        "threshold for step `{s}`: no step has that name; {hint}(steps: {}{more})",
                        shown.join(", ")
                    ),
                );
                continue;
            }
            match parse_threshold(&expr) {
                Ok(th) if th.population.is_some() => {
                    let other = th.population.as_deref().unwrap_or_default();
                    match &self.population {
                        Some(me) => self.error(at(t), format!("scenario `{me}`: threshold `{expr}` names scenario `{other}`; thresholds inside a scenario are its own — write `{}`, or move it to the top-level `thresholds`", th.local_expr())),
                        None => self.error(at(t), format!("threshold `{expr}`: `{other}.` names a scenario, but this file has no `scenarios:`; write `{}`", th.local_expr())),
                    }
                }
                Ok(th) if th.metric == crate::threshold::Metric::Iteration && step.is_some() => {
                    self.error(at(t), "`iteration` is the whole flow: give it as a threshold of its own, not under a step");
                }
                Ok(mut th) => {
                    th.step = step;
                    thresholds.push(th);
                }
                Err(e) => self.error(at(t), e.to_string()),
            }
        }
        thresholds
    }

    /// The `load` section: the options of `volley run`'s flags, parsed by the same table
    /// ([`crate::load`]), with its conflict rules; a shape given here must be complete.
    fn load(&mut self, section: &RawLoad) -> LoadSpec {
        let mut spec = LoadSpec::default();
        for (key, value) in &section.value {
            if !OPTIONS.iter().any(|o| o.key == key) {
                let keys: Vec<&str> = OPTIONS.iter().map(|o| o.key).collect();
                let hint = suggest(key, &keys)
                    .map(|s| format!("did you mean `{s}`? "))
                    .unwrap_or_default();
                self.error(
                    at(value),
                    format!(
                        "unknown load key `{key}`; {hint}the keys are {}",
                        keys.join(", ")
                    ),
                );
                continue;
            }
            if let Err(e) = spec.set(key, &value.value) {
                self.error(at(value), format!("load `{key}`: {e}"));
            }
        }
        let conflicts = spec.conflicts();
        for c in &conflicts {
            let where_ = section
                .value
                .iter()
                .find(|(k, _)| k == c.other)
                .map_or(at(section), |(_, v)| at(v));
            self.error(
                where_,
                format!(
                    "load `{}` cannot be combined with `{}`: {}",
                    c.other, c.key, c.why
                ),
            );
        }
        if conflicts.is_empty()
            && spec.has_shape()
            && let Err(e) = spec.resolve()
        {
            self.error(at(section), format!("`load`: {e}"));
        }
        spec
    }

    fn status(&mut self, field: &str, s: &S<String>) -> Option<StatusSet> {
        match StatusSet::parse(&s.value) {
            Ok(set) => Some(set),
            Err(e) => {
                self.error(at(s), format!("`{field}`: {e}"));
                None
            }
        }
    }

    fn headers(
        &mut self,
        raw: &BTreeMap<String, S<String>>,
        defined: &BTreeSet<String>,
    ) -> Vec<(String, Template)> {
        let mut out = Vec::new();
        for (name, v) in raw {
            if let Err(e) = RequestSpec::parse_header(&format!("{name}: x")) {
                self.error(at(v), e.to_string());
                continue;
            }
            let field = format!("headers.{name}");
            let (t, literals) = self.template_at(&field, &v.value, at(v), defined, false);
            if let Some(bad) = literals
                .iter()
                .flat_map(|l| l.chars())
                .find(|c| (c.is_control() && *c != '\t') || *c == '\u{7f}')
            {
                let shown = match bad {
                    '\r' => "a carriage return (\\r)".to_string(),
                    '\n' => "a line break (\\n)".to_string(),
                    c => format!("the control character U+{:04X}", c as u32),
                };
                self.error(at(v), format!("`{field}`: a header value cannot hold {shown}; write it on one line (a `|` block adds a line break: use `>-` or a quoted string)"));
            }
            out.push((name.clone(), t));
        }
        out
    }

    fn steps(&mut self, raw: &[RawStep], defined: &mut BTreeSet<String>) -> Vec<Node> {
        raw.iter().filter_map(|s| self.step(s, defined)).collect()
    }

    /// Registers a step's metric row; default names are made unique with `#2`, `#3`.
    fn register(
        &mut self,
        name: Option<&S<String>>,
        default: String,
        kind: StepKind,
        where_: At,
    ) -> usize {
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

    fn step(&mut self, r: &RawStep, defined: &mut BTreeSet<String>) -> Option<Node> {
        let here = r.at;
        if r.broken {
            // Reported where the value is; what it would define is still defined.
            defined.extend(r.extract_names.iter().cloned());
            if let Some(n) = &r.name {
                self.names.insert(n.value.clone(), n.at.0);
                self.steps.push(StepInfo {
                    name: n.value.clone(),
                    kind: StepKind::Http,
                });
            }
            return None;
        }
        let kinds = [
            r.request.is_some() || r.url.is_some(),
            r.sse.is_some(),
            r.websocket.is_some(),
            r.grpc.is_some(),
            r.steps.is_some(),
            r.one_of.is_some(),
        ];
        match kinds.iter().filter(|k| **k).count() {
            0 if r.method.is_some() => {}
            0 => {
                self.error(here, "a step needs one of `request` (or `method` + `url`), `sse`, `websocket`, `grpc`, `steps` or `one_of`");
                return None;
            }
            1 => {}
            _ => {
                self.error(here, "a step can be only one of a request, `sse`, `websocket`, `grpc`, a group with `steps` or `one_of`");
                return None;
            }
        }
        if let Some(branches) = &r.one_of {
            return self.one_of(r, branches, defined);
        }
        if let Some(steps) = &r.steps {
            return self.group(r, steps, defined);
        }
        if let Some(g) = &r.group {
            self.error(at(g), "`group` names a group: give it `steps`");
        }
        let node = if let Some(url) = &r.sse {
            self.not_for(
                r,
                "an `sse` step",
                &[
                    "json",
                    "form",
                    "body",
                    "extract",
                    "check",
                    "send",
                    "expect",
                    "method",
                    "proto",
                    "message",
                    "messages",
                    "connections",
                ],
            );
            if let Some(e) = &r.events
                && e.value == 0
            {
                self.error(at(e), "`events: 0` would close the stream before it is read; give 1 or more, or leave `events` out to read until `timeout`");
            }
            let call = self.call(r, url, "sse", StepKind::Sse, None, defined);
            Node::Sse(SseStep {
                call,
                events: r.events.as_ref().map(|e| e.value),
                wait: r.wait,
            })
        } else if let Some(url) = &r.websocket {
            self.not_for(
                r,
                "a `websocket` step",
                &[
                    "json",
                    "form",
                    "body",
                    "extract",
                    "check",
                    "events",
                    "method",
                    "proto",
                    "message",
                    "messages",
                    "connections",
                ],
            );
            let call = self.call(r, url, "websocket", StepKind::WebSocket, None, defined);
            let send = r
                .send
                .iter()
                .flatten()
                .map(|m| self.template("send", m, defined))
                .collect();
            let expect = r
                .expect
                .as_ref()
                .map(|e| self.template("expect", e, defined));
            Node::WebSocket(WsStep { call, send, expect })
        } else if let Some(method) = &r.grpc {
            self.grpc(r, method, defined)?
        } else {
            self.not_for(
                r,
                "a request",
                &[
                    "events",
                    "send",
                    "expect",
                    "proto",
                    "message",
                    "messages",
                    "connections",
                ],
            );
            if r.wait {
                self.error(
                    r.key_at("wait").unwrap_or(here),
                    "`wait` is for `sse` steps",
                );
            }
            self.http(r, defined)?
        };
        if let Some(rep) = &r.repeat {
            return Some(Node::Group(Group {
                name: None,
                repeat: self.repeat(rep),
                steps: vec![node],
            }));
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
        for f in fields {
            let Some(key) = r.key_at(f) else { continue };
            let line = r.name.as_ref().map_or(key, at);
            self.error(line, format!("`{f}` does not apply to {what}"));
        }
    }

    fn group(
        &mut self,
        r: &RawStep,
        steps: &[RawStep],
        defined: &mut BTreeSet<String>,
    ) -> Option<Node> {
        if r.name.is_some()
            || !r.headers.is_empty()
            || r.think_time.is_some()
            || r.timeout.is_some()
        {
            self.error(
                r.at,
                "a group takes `group`, `repeat` and `steps`; put request settings on its steps",
            );
        }
        if steps.is_empty() && r.key_at("steps").is_some() {
            self.error(r.at, "the group's `steps` is empty");
        }
        let repeat = r.repeat.as_ref().map_or(1, |rep| self.repeat(rep));
        let nodes = self.steps(steps, defined);
        Some(Node::Group(Group {
            name: r.group.as_ref().map(|g| g.value.clone()),
            repeat,
            steps: nodes,
        }))
    }

    /// Weighted branches. A variable is defined after them only when every branch defines it.
    fn one_of(
        &mut self,
        r: &RawStep,
        branches: &[S<RawBranch>],
        defined: &mut BTreeSet<String>,
    ) -> Option<Node> {
        if r.name.is_some()
            || r.group.is_some()
            || !r.headers.is_empty()
            || r.think_time.is_some()
            || r.timeout.is_some()
        {
            self.error(
                r.at,
                "`one_of` takes a list of branches (`weight`, `name`, `steps`) and `repeat`",
            );
        }
        if branches.is_empty() {
            self.error(r.at, "`one_of` is empty: give it branches with `steps`");
            return None;
        }
        let mut after: Option<BTreeSet<String>> = None;
        let mut out = Vec::new();
        for b in branches {
            if b.value.weight.value == 0 {
                self.error(
                    at(&b.value.weight),
                    "a branch's `weight` must be at least 1",
                );
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
            out.push(Branch {
                name: b.value.name.clone(),
                weight: b.value.weight.value.max(1),
                steps: nodes,
            });
        }
        *defined = after.unwrap_or_default();
        let node = Node::OneOf(out);
        Some(match &r.repeat {
            Some(rep) => Node::Group(Group {
                name: None,
                repeat: self.repeat(rep),
                steps: vec![node],
            }),
            None => node,
        })
    }

    fn call(
        &mut self,
        r: &RawStep,
        url: &S<String>,
        field: &str,
        kind: StepKind,
        default_name: Option<String>,
        defined: &BTreeSet<String>,
    ) -> Call {
        let id = self.register(
            r.name.as_ref(),
            default_name.unwrap_or_else(|| format!("{} {}", field.to_uppercase(), url.value)),
            kind,
            at(url),
        );
        let (url_t, literals) = self.template_at(field, &url.value, at(url), defined, false);
        if let Err(e) = check_url(&url.value, kind, self.authority.as_deref(), &literals) {
            self.error(at(url), format!("`{field}`: {e}"));
        }
        Call {
            id,
            url: url_t,
            headers: self.headers(&r.headers, defined),
            think_time: self.pause(&r.think_time),
            timeout: self.value("timeout", &r.timeout, parse_timeout),
        }
    }

    fn http(&mut self, r: &RawStep, defined: &mut BTreeSet<String>) -> Option<Node> {
        let (method, url) = match (&r.request, &r.method, &r.url) {
            (Some(req), None, None) => {
                let mut parts = req.value.trim().splitn(2, char::is_whitespace);
                let (m, u) = (
                    parts.next().unwrap_or_default(),
                    parts.next().unwrap_or_default().trim(),
                );
                if u.is_empty() {
                    let hint = if m.starts_with('/') || m.contains("://") {
                        format!("; write it like `request: GET {m}`")
                    } else {
                        ", e.g. `POST /api/rooms`".into()
                    };
                    self.error(
                        at(req),
                        format!(
                            "`request`: `{}` should be a method and a URL{hint}",
                            req.value
                        ),
                    );
                    return None;
                }
                (
                    S {
                        value: m.to_string(),
                        at: req.at,
                    },
                    S {
                        value: u.to_string(),
                        at: req.at,
                    },
                )
            }
            (None, m, Some(u)) => (
                m.clone().unwrap_or(S {
                    value: "GET".into(),
                    at: u.at,
                }),
                u.clone(),
            ),
            (Some(req), _, _) => {
                self.error(
                    at(req),
                    "use either `request: METHOD URL` or `method` + `url`, not both",
                );
                return None;
            }
            (None, Some(m), None) => {
                self.error(at(m), "`method` needs a `url`: add `url: /path`, or write `request: METHOD /path` instead of both");
                return None;
            }
            (None, None, None) => unreachable!("a request step has request or url"),
        };
        let m = method.value.to_ascii_uppercase();
        if m.is_empty() || !m.bytes().all(|b| b.is_ascii_alphabetic()) {
            self.error(
                at(&method),
                format!(
                    "`{}` is not an HTTP method (GET, POST, PUT, PATCH, DELETE, …)",
                    method.value
                ),
            );
        }
        let default_name = format!("{m} {}", url.value);
        let call = self.call(r, &url, "url", StepKind::Http, Some(default_name), defined);
        let bodies = [r.json.is_some(), r.form.is_some(), r.body.is_some()]
            .iter()
            .filter(|b| **b)
            .count();
        if bodies > 1 {
            self.error(r.at, "a request has one body: `json`, `form` or `body`");
        }
        let body = if let Some(j) = &r.json {
            Body::Json(self.json(j, defined))
        } else if let Some(f) = &r.form {
            Body::Form(
                f.iter()
                    .map(|(k, v)| (k.clone(), self.template(&format!("form.{k}"), v, defined)))
                    .collect(),
            )
        } else if let Some(b) = &r.body {
            Body::Raw(self.template("body", b, defined))
        } else {
            Body::Empty
        };
        let check = r
            .check
            .as_ref()
            .map(|c| self.check(c, defined))
            .unwrap_or_default();
        let extract = self.extracts(r, defined);
        Some(Node::Http(HttpStep {
            call,
            method: m,
            body,
            extract,
            check,
        }))
    }

    /// The step's `extract`s; the variables they name are defined for the steps after it.
    fn extracts(&mut self, r: &RawStep, defined: &mut BTreeSet<String>) -> Vec<Extract> {
        let mut extract = Vec::new();
        for (var, e) in &r.extract {
            if BUILTINS.contains(&var.as_str()) {
                self.error(
                    at(e),
                    format!(
                        "`extract`: `{var}` is built in (vu, iteration, env); choose another name"
                    ),
                );
                continue;
            }
            let source = match &e.value {
                RawExtract::Path(q) => self.json_path(at(e), q).map(|p| Source::Json(p, q.clone())),
                RawExtract::Full {
                    json,
                    header,
                    regex,
                    ..
                } => match (json, header, regex) {
                    (Some(q), None, None) => {
                        self.json_path(at(e), q).map(|p| Source::Json(p, q.clone()))
                    }
                    (None, Some(h), None) => {
                        if !crate::plan::is_header_name(h.trim()) {
                            self.error(at(e), format!("extract `{var}`: `{h}` is not a header name; write it like `{{ header: Location }}`"));
                        }
                        Some(Source::Header(h.clone()))
                    }
                    (None, None, Some(re)) => match regex::Regex::new(re) {
                        Ok(re) => Some(Source::Regex(re)),
                        Err(err) => {
                            self.error(
                                at(e),
                                format!(
                                    "extract `{var}`: bad regex: {}",
                                    err.to_string().lines().last().unwrap_or_default()
                                ),
                            );
                            None
                        }
                    },
                    _ => {
                        self.error(
                            at(e),
                            format!(
                                "extract `{var}`: give exactly one of `json`, `header`, `regex`"
                            ),
                        );
                        None
                    }
                },
            };
            let default = match &e.value {
                RawExtract::Full { default, .. } => default.clone(),
                RawExtract::Path(_) => None,
            };
            if let Some(source) = source {
                extract.push(Extract {
                    var: var.clone(),
                    source,
                    default,
                });
            }
        }
        // Defined for the steps after this one.
        defined.extend(r.extract_names.iter().cloned());
        if r.extract_lost {
            self.lost_names = true;
        }
        extract
    }

    /// A `grpc:` step: the method looked up in its `proto` files (or left to reflection),
    /// the request message checked against its type.
    fn grpc(
        &mut self,
        r: &RawStep,
        text: &S<String>,
        defined: &mut BTreeSet<String>,
    ) -> Option<Node> {
        self.not_for(
            r,
            "a `grpc` step (metadata goes under `headers`, the request under `message`)",
            &[
                "json", "form", "body", "events", "send", "expect", "method", "wait",
            ],
        );
        let Some((service, method)) = crate::grpc::split_method(&text.value) else {
            self.error(at(text), format!("`grpc`: `{}` should be a service and a method, like `grpc: volley.chat.v1.Chat/CreateRoom` (package.Service/Method)", text.value));
            return None;
        };
        let path = format!("/{service}/{method}");
        let id = self.register(
            r.name.as_ref(),
            format!("GRPC {service}/{method}"),
            StepKind::Grpc,
            at(text),
        );
        let call = Call {
            id,
            url: Template::Literal(path),
            headers: self.headers(&r.headers, defined),
            think_time: self.pause(&r.think_time),
            timeout: self.value("timeout", &r.timeout, parse_timeout),
        };
        if let Some(st) = r.check.as_ref().and_then(|c| c.value.status.as_ref()) {
            self.error(at(st), "`check.status` is an HTTP status; a gRPC call passes when it ends with status OK, and any other code is counted as its error kind (grpc_not_found, …)");
        }
        let message = r
            .message
            .as_ref()
            .map_or(JsonTemplate::Object(Vec::new()), |m| self.json(m, defined));
        let check = r
            .check
            .as_ref()
            .map(|c| self.check(c, defined))
            .unwrap_or_default();
        let extract = self.extracts(r, defined);
        let mut protos = Vec::new();
        let dir = self
            .file
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        for p in &r.proto {
            protos.push(dir.join(&p.value));
        }
        let schema = std::sync::OnceLock::new();
        for (p, path) in r.proto.iter().zip(&protos) {
            if !path.is_file() {
                self.error(at(p), format!("`proto`: `{}` is not a file (looked for {}); give the path of the .proto file relative to the scenario's folder, or leave `proto` out to ask the server by reflection", p.value, path.display()));
            }
        }
        if let Some(first) = r.proto.first()
            && protos.iter().all(|p| p.is_file())
        {
            let pool = self
                .protos
                .entry(protos.clone())
                .or_insert_with(|| crate::grpc::compile_protos(&protos, &dir))
                .clone();
            let names: Vec<&str> = r.proto.iter().map(|p| p.value.as_str()).collect();
            match pool.and_then(|pool| {
                crate::grpc::find_method(&pool, &service, &method, &names.join(", "))
            }) {
                Ok(m) => {
                    let where_ = r.message.as_ref().map_or(at(text), |m| m.at);
                    for problem in crate::grpc::check_message(&m.input(), &message) {
                        self.error(where_, format!("`message`: {problem}"));
                    }
                    if let Some(n) = &r.messages
                        && !m.is_server_streaming()
                    {
                        self.error(at(n), format!("`messages` counts a server stream's messages; `{service}/{method}` is unary (leave `messages` out)"));
                    }
                    let _ = schema.set(m);
                }
                Err(e) => self.error(at(first), format!("`proto`: {e}")),
            }
        }
        if let Some(n) = &r.messages
            && n.value == 0
        {
            self.error(at(n), "`messages: 0` would close the stream before it is read; give 1 or more, or leave `messages` out to read until the stream ends");
        }
        if let Some(c) = &r.connections
            && c.value == 0
        {
            self.error(at(c), "`connections` must be at least 1 (HTTP/2 connections the VUs share for gRPC calls)");
        }
        Some(Node::Grpc(GrpcStep {
            call,
            service,
            method,
            protos,
            schema,
            message,
            messages: r.messages.as_ref().map(|n| n.value),
            connections: r.connections.as_ref().map(|n| n.value),
            extract,
            check,
        }))
    }

    fn json_path(&mut self, where_: At, q: &str) -> Option<serde_json_path::JsonPath> {
        parse_json_path(q)
            .map_err(|e| self.error(where_, e.to_string()))
            .ok()
    }

    fn check(&mut self, c: &S<RawCheck>, defined: &BTreeSet<String>) -> Check {
        let r = &c.value;
        let mut out = Check {
            status: r
                .status
                .as_ref()
                .and_then(|s| self.status("check.status", s)),
            ..Check::default()
        };
        for (q, want) in &r.json {
            let expected = match want.typed() {
                Some(Typed::Str(t)) if has_syntax(t) => Expected::Template(
                    self.template_at(
                        &format!("check.json.{}", q.value),
                        t,
                        want.at,
                        defined,
                        false,
                    )
                    .0,
                ),
                _ => Expected::Value(want.to_json()),
            };
            if let Some(p) = self.json_path(at(q), &q.value) {
                out.json_equals.push((p, q.value.clone(), expected));
            }
        }
        for q in &r.exists {
            if let Some(p) = self.json_path(at(q), &q.value) {
                out.json_exists.push((p, q.value.clone()));
            }
        }
        out.body_contains = r.body_contains.clone();
        out
    }

    /// A JSON body; every string is a template, at its own line and column.
    fn json(&mut self, v: &super::yaml::Node, defined: &BTreeSet<String>) -> JsonTemplate {
        match &v.value {
            YamlValue::Scalar { text, .. } if has_syntax(text) => {
                JsonTemplate::Text(self.template_at("json", text, v.at, defined, true).0)
            }
            YamlValue::Seq(items) => {
                JsonTemplate::Array(items.iter().map(|i| self.json(i, defined)).collect())
            }
            YamlValue::Map(entries) => JsonTemplate::Object(
                entries
                    .iter()
                    .map(|(k, i)| (k.text.clone(), self.json(i, defined)))
                    .collect(),
            ),
            YamlValue::Scalar { .. } => JsonTemplate::Fixed(v.to_json()),
        }
    }
}

/// The target must be an absolute http(s) URL; its `host:port` as written.
fn check_target(url: &str) -> Result<String, String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    let bad = || {
        let scheme = url.split_once("://").map(|(s, _)| s);
        match scheme {
            _ if has_syntax(url) => format!(
                "`{url}`: the target cannot be a template; write the base URL, like http://127.0.0.1:8080 (`--url` overrides it)"
            ),
            Some(s) => format!(
                "`{url}` is a `{s}` URL; the target is where HTTP requests go: write it like http://127.0.0.1:8080 (WebSocket steps use ws:// URLs of their own)"
            ),
            None => format!("`{url}` is not a base URL; write it like http://127.0.0.1:8080"),
        }
    };
    match rest {
        Some(r) if !r.is_empty() && !r.starts_with('/') => {
            let authority = r.split(['/', '?', '#']).next().unwrap_or(r);
            if authority.contains(char::is_whitespace) || has_syntax(authority) {
                return Err(bad());
            }
            Ok(authority.to_string())
        }
        _ => Err(bad()),
    }
}

/// The first `{name}` (an OpenAPI or RFC 6570 URI-template parameter, such as `{AccountSid}`
/// or `{+path}`) in the path part of a URL's literal text: a parameter nobody replaced.
fn path_parameter(literals: &[String]) -> Option<String> {
    for piece in literals {
        let (path, ended) = match piece.find(['?', '#']) {
            Some(i) => (&piece[..i], true),
            None => (piece.as_str(), false),
        };
        let mut rest = path;
        while let Some(open) = rest.find('{') {
            let after = &rest[open + 1..];
            let Some(close) = after.find('}') else { break };
            let inner = after[..close]
                .strip_prefix(['+', '#', '.', '/', ';', '?', '&'])
                .unwrap_or(&after[..close]);
            if inner
                .chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
                && inner
                    .chars()
                    .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ',' | '*'))
            {
                return Some(rest[open..open + close + 2].to_string());
            }
            rest = after;
        }
        if ended {
            break;
        }
    }
    None
}

/// A step URL must be relative (`/path`) or absolute on the target, with a scheme its step
/// can use; the text outside templates must be sendable (no spaces or control characters).
/// Templated URLs are checked as far as their literal start shows.
fn check_url(
    url: &str,
    kind: StepKind,
    target: Option<&str>,
    literals: &[String],
) -> Result<(), String> {
    if let Some(bad) = literals
        .iter()
        .flat_map(|l| l.chars())
        .find(|c| c.is_whitespace() || c.is_control())
    {
        let what = if bad == ' ' {
            "a space".to_string()
        } else {
            format!("the character {:?}", bad)
        };
        let fix = if bad == ' ' { "; write it as %20" } else { "" };
        return Err(format!("`{url}` holds {what}, which a URL cannot{fix}"));
    }
    if let Some(param) = path_parameter(literals) {
        let name = param.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_'));
        return Err(format!(
            "`{url}` still holds `{param}`, a path parameter that would be sent as it is: write the value, or a variable (`{{{{ {} }}}}`) defined under `variables` or extracted by an earlier step",
            crate::secret::snake(name)
        ));
    }
    // What the URL starts with before any template.
    let lead = match url.find("{{").or_else(|| url.find("{%")) {
        Some(i) => &url[..i],
        None => url,
    };
    if lead.starts_with('/') || (lead.is_empty() && url != lead) {
        return Ok(());
    }
    let schemes: &[&str] = match kind {
        StepKind::WebSocket => &["ws://", "wss://", "http://", "https://"],
        _ => &["http://", "https://"],
    };
    let Some(scheme) = schemes.iter().find(|s| lead.starts_with(**s)) else {
        // `http{{ s }}://…`: the scheme is only known when rendered.
        if url != lead && !lead.contains("://") && schemes.iter().any(|s| s.starts_with(lead)) {
            return Ok(());
        }
        {
            let given = lead.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
            let why = match (kind, given) {
                (StepKind::Sse, Some(g)) if g.starts_with("ws") => format!(
                    " — `{g}://` is a WebSocket: make it a `websocket:` step, or use http(s) for an event stream"
                ),
                (_, Some(g)) => format!(
                    " — `{g}://` URLs cannot be sent by {} step",
                    if kind == StepKind::WebSocket {
                        "a `websocket`"
                    } else if kind == StepKind::Sse {
                        "an `sse`"
                    } else {
                        "a request"
                    }
                ),
                (_, None) => String::new(),
            };
            return Err(format!(
                "`{url}` should start with / (relative to the target) or {}{why}",
                schemes.join(" or ")
            ));
        }
    };
    let rest = &lead[scheme.len()..];
    let authority_end = rest.find(['/', '?', '#']);
    if let (Some(target), Some(end)) = (
        target,
        authority_end.or((url == lead).then_some(rest.len())),
    ) {
        let authority = &rest[..end];
        if !authority.eq_ignore_ascii_case(target) {
            let path = if end < rest.len() { &rest[end..] } else { "/" };
            return Err(format!(
                "`{url}` is on another host than the target ({target}); one scenario loads one target: write the path, `{path}`"
            ));
        }
    }
    Ok(())
}
