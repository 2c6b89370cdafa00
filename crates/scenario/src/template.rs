//! Templated strings: every string of a scenario may use minijinja (`{{ code }}`,
//! `{{ env.TOKEN }}`, `{{ uuid() }}`), compiled once when the file loads.
//!
//! Undefined variables are errors (strict mode), so a typo fails `volley check`, not the
//! run. A JSON body value that is a single `{{ expression }}` keeps the expression's type
//! (`"{{ iteration }}"` sends a number), as users of k6 and Artillery expect.

use std::collections::BTreeSet;
use std::sync::Arc;

use minijinja::{Environment, UndefinedBehavior, Value};

use crate::PlanError;

/// The functions every template may call, for documentation and validation.
pub const FUNCTIONS: [&str; 4] = ["uuid", "random", "random_string", "timestamp_ms"];

/// Names every template may use without a step defining them.
pub const BUILTINS: [&str; 3] = ["vu", "iteration", "env"];

/// The compiled templates of one scenario.
pub struct Templates {
    env: Environment<'static>,
    count: usize,
}

impl std::fmt::Debug for Templates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Templates({})", self.count)
    }
}

/// One string of the scenario: literal, or the name of a compiled template.
#[derive(Debug, Clone, PartialEq)]
pub enum Template {
    /// No template syntax: sent as written.
    Literal(String),
    /// A compiled template (its source kept for messages and `volley check`).
    Compiled { name: String, source: String },
    /// A whole `{{ expression }}` in a JSON body: renders as JSON, keeping the type.
    Value { name: String, source: String },
}

impl Template {
    /// The text as written in the file.
    pub fn source(&self) -> &str {
        match self {
            Template::Literal(s) => s,
            Template::Compiled { source, .. } | Template::Value { source, .. } => source,
        }
    }
}

/// Whether `s` has minijinja syntax (expressions, statements or comments).
pub fn has_syntax(s: &str) -> bool {
    s.contains("{{") || s.contains("{%") || s.contains("{#")
}

impl Default for Templates {
    fn default() -> Self {
        Self::new()
    }
}

impl Templates {
    /// An environment with volley's functions, strict about undefined variables.
    pub fn new() -> Self {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.add_function("uuid", || uuid::Uuid::new_v4().to_string());
        env.add_function("random", |lo: i64, hi: i64| if hi <= lo { lo } else { fastrand::i64(lo..=hi) });
        env.add_function("random_string", |n: usize| {
            (0..n.min(4096)).map(|_| fastrand::alphanumeric()).collect::<String>()
        });
        env.add_function("timestamp_ms", || {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
        });
        Templates { env, count: 0 }
    }

    /// Compiles `source`; returns the template and the variables it reads, as dotted
    /// paths (`code`, `user.email`, `env.TOKEN`).
    pub fn compile(&mut self, source: &str) -> Result<(Template, BTreeSet<String>), PlanError> {
        if !has_syntax(source) {
            return Ok((Template::Literal(source.to_string()), BTreeSet::new()));
        }
        self.add(source.to_string(), source).map(|(name, vars)| (Template::Compiled { name, source: source.to_string() }, vars))
    }

    /// Compiles a JSON body string: a lone `{{ expr }}` keeps its type.
    pub fn compile_value(&mut self, source: &str) -> Result<(Template, BTreeSet<String>), PlanError> {
        let t = source.trim();
        let lone = t.starts_with("{{") && t.ends_with("}}") && t[2..].find("{{").is_none() && t[..t.len() - 2].rfind("}}").is_none();
        if !lone {
            return self.compile(source);
        }
        let expr = t[2..t.len() - 2].trim().trim_start_matches('-').trim_end_matches('-');
        let (name, vars) = self.add(format!("{{{{ ({expr}) | tojson }}}}"), source)?;
        Ok((Template::Value { name, source: source.to_string() }, vars))
    }

    fn add(&mut self, code: String, source: &str) -> Result<(String, BTreeSet<String>), PlanError> {
        self.count += 1;
        let name = format!("t{}", self.count);
        self.env.add_template_owned(name.clone(), code).map_err(|e| PlanError(describe(&e, source)))?;
        let tmpl = self.env.get_template(&name).map_err(|e| PlanError(describe(&e, source)))?;
        let vars: BTreeSet<String> =
            tmpl.undeclared_variables(true).into_iter().filter(|v| !FUNCTIONS.contains(&v.as_str())).collect();
        Ok((name, vars))
    }

    /// Renders to text.
    pub fn render(&self, t: &Template, ctx: &Value) -> Result<String, PlanError> {
        match t {
            Template::Literal(s) => Ok(s.clone()),
            Template::Compiled { name, source } | Template::Value { name, source } => self
                .env
                .get_template(name)
                .and_then(|tmpl| tmpl.render(ctx))
                .map_err(|e| PlanError(describe(&e, source))),
        }
    }

    /// Renders a JSON body leaf.
    pub fn render_json(&self, t: &Template, ctx: &Value) -> Result<serde_json::Value, PlanError> {
        let text = self.render(t, ctx)?;
        match t {
            Template::Value { source, .. } => {
                serde_json::from_str(&text).map_err(|e| PlanError(format!("`{source}` did not render to JSON: {e}")))
            }
            _ => Ok(serde_json::Value::String(text)),
        }
    }
}

/// A template error in one line, naming the template.
fn describe(e: &minijinja::Error, source: &str) -> String {
    let detail = e.detail().map(|d| format!(": {d}")).unwrap_or_default();
    format!("template `{source}`: {}{detail}", e.kind())
}

/// Shared, immutable after loading.
pub type SharedTemplates = Arc<Templates>;

#[cfg(test)]
mod tests {
    use super::*;
    use minijinja::context;

    #[test]
    fn literals_are_not_compiled_and_variables_are_found() {
        let mut t = Templates::new();
        let (lit, vars) = t.compile("/api/rooms").unwrap();
        assert_eq!(lit, Template::Literal("/api/rooms".into()));
        assert!(vars.is_empty());
        let (tm, vars) = t.compile("/api/rooms/{{ code }}/todos?u={{ user.name }}&t={{ uuid() }}").unwrap();
        assert_eq!(vars.into_iter().collect::<Vec<_>>(), vec!["code".to_string(), "user.name".to_string()]);
        let out = t.render(&tm, &context! { code => "AB12", user => context! { name => "kim" } }).unwrap();
        assert!(out.starts_with("/api/rooms/AB12/todos?u=kim&t="), "{out}");
        assert_eq!(out.len(), "/api/rooms/AB12/todos?u=kim&t=".len() + 36);
    }

    #[test]
    fn undefined_variables_fail_at_render_and_syntax_at_compile() {
        let mut t = Templates::new();
        let (tm, _) = t.compile("{{ missing }}").unwrap();
        let e = t.render(&tm, &context! {}).unwrap_err();
        assert!(e.contains("undefined"), "{e}");
        let e = t.compile("{{ unclosed").unwrap_err();
        assert!(e.contains("template `{{ unclosed`"), "{e}");
    }

    #[test]
    fn a_lone_expression_in_json_keeps_its_type() {
        let mut t = Templates::new();
        let (v, _) = t.compile_value("{{ iteration + 1 }}").unwrap();
        assert_eq!(t.render_json(&v, &context! { iteration => 4 }).unwrap(), serde_json::json!(5));
        let (s, _) = t.compile_value("todo {{ iteration }}").unwrap();
        assert_eq!(t.render_json(&s, &context! { iteration => 4 }).unwrap(), serde_json::json!("todo 4"));
        let (r, _) = t.compile("{{ random(3, 3) }}-{{ random_string(5) | length }}").unwrap();
        assert_eq!(t.render(&r, &context! {}).unwrap(), "3-5");
    }
}
