//! Templated strings: every string of a scenario may use minijinja (`{{ code }}`,
//! `{{ env.TOKEN }}`, `{{ uuid() }}`), compiled once when the file loads.
//!
//! Undefined variables are errors (strict mode), so a typo fails `volley check`, not the
//! run. A JSON body value that is a single `{{ expression }}` keeps the expression's type
//! (`"{{ iteration }}"` sends a number), as users of k6 and Artillery expect.
//!
//! A compiled minijinja template costs about 8 KB however short it is (its instruction
//! buffers start that large), and a scenario may have tens of thousands of templated
//! strings. So a string that is only text and `{{ expressions }}` — nearly all of them — is
//! kept as its pieces, and each distinct expression is compiled once for the whole
//! scenario: `/rooms/{{ code }}/todos` in 10,000 steps costs one compiled `{{ code }}`
//! and 10,000 short lists of text. Strings with statements (`{% if %}`) are compiled
//! whole, once per distinct string.
//!
//! Rendering is on every request's path, so what a template needs is worked out once: an
//! expression that only names a variable (`{{ token }}`, `{{ user.id }}`) — nearly all of
//! them — is looked up and written directly, as minijinja would print it, without starting
//! minijinja or building its context; the text between expressions is copied as it is; and
//! a request renders into buffers the caller keeps ([`Templates::render_into`]). Anything
//! else, or a name that is not set (for the error), goes through minijinja.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use minijinja::{Environment, UndefinedBehavior, Value};

use crate::Error;

/// The functions every template may call, for documentation and validation.
pub const FUNCTIONS: [&str; 4] = ["uuid", "random", "random_string", "timestamp_ms"];

/// Names every template may use without a step defining them.
pub const BUILTINS: [&str; 3] = ["vu", "iteration", "env"];

/// The most minijinja templates one scenario compiles: distinct expressions, and distinct
/// strings with statements (each costs about 8 KB).
pub const MAX_TEMPLATES: usize = 20_000;

/// The compiled templates of one scenario.
pub struct Templates {
    env: Environment<'static>,
    /// Each distinct code compiled, with its name and the variables it reads.
    compiled: HashMap<String, (Arc<str>, BTreeSet<String>)>,
    /// The compiled expressions that only name a variable, with its path (`user.id`:
    /// `["user", "id"]`), rendered without minijinja.
    lookups: HashMap<Arc<str>, Box<[String]>>,
}

/// Where a render finds the variables: by name for the expressions that only name one,
/// and as a whole minijinja context for the rest (built only when one needs it).
pub trait Vars {
    /// The variable `name`, if set.
    fn get(&self, name: &str) -> Option<Value>;
    /// Every variable, as minijinja's context.
    fn context(&self) -> Value;
}

impl Vars for Value {
    fn get(&self, name: &str) -> Option<Value> {
        self.get_attr(name).ok().filter(|v| !v.is_undefined())
    }

    fn context(&self) -> Value {
        self.clone()
    }
}

impl std::fmt::Debug for Templates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Templates({})", self.compiled.len())
    }
}

/// One string of the scenario: literal, or made of compiled templates.
#[derive(Debug, Clone, PartialEq)]
pub enum Template {
    /// No template syntax: sent as written.
    Literal(String),
    /// Text and `{{ expressions }}`, each expression compiled once per scenario (its source
    /// kept for messages and `volley check`).
    Pieces { pieces: Vec<Piece>, source: String },
    /// A template compiled whole (it has statements such as `{% if %}`).
    Compiled { name: String, source: String },
    /// A whole `{{ expression }}` in a JSON body: renders as JSON, keeping the type.
    Value { name: String, source: String },
}

/// A part of a [`Template::Pieces`].
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    /// Text as written.
    Text(String),
    /// The name of a compiled `{{ expression }}`.
    Expr(Arc<str>),
}

impl Template {
    /// The text as written in the file.
    pub fn source(&self) -> &str {
        match self {
            Template::Literal(s) => s,
            Template::Pieces { source, .. }
            | Template::Compiled { source, .. }
            | Template::Value { source, .. } => source,
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
        env.add_function(
            "random",
            |lo: i64, hi: i64| if hi <= lo { lo } else { fastrand::i64(lo..=hi) },
        );
        env.add_function("random_string", |n: usize| {
            (0..n.min(4096))
                .map(|_| fastrand::alphanumeric())
                .collect::<String>()
        });
        env.add_function("timestamp_ms", || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64)
        });
        Templates {
            env,
            compiled: HashMap::new(),
            lookups: HashMap::new(),
        }
    }

    /// How many minijinja templates are compiled (distinct expressions and strings).
    pub fn len(&self) -> usize {
        self.compiled.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.compiled.is_empty()
    }

    /// Compiles `source`; returns the template and the variables it reads, as dotted
    /// paths (`code`, `user.email`, `env.TOKEN`).
    pub fn compile(&mut self, source: &str) -> Result<(Template, BTreeSet<String>), Error> {
        if !has_syntax(source) {
            return Ok((Template::Literal(source.to_string()), BTreeSet::new()));
        }
        let ast = minijinja::machinery::parse(source, "<scenario>", Default::default())
            .map_err(|e| Error::value(describe(&e, source)))?;
        let minijinja::machinery::ast::Stmt::Template(root) = &ast else {
            unreachable!("a parse yields a template")
        };
        use minijinja::machinery::ast::Stmt;
        if root
            .children
            .iter()
            .all(|c| matches!(c, Stmt::EmitRaw(_) | Stmt::EmitExpr(_)))
        {
            let mut pieces = Vec::with_capacity(root.children.len());
            let mut vars = BTreeSet::new();
            for c in &root.children {
                match c {
                    Stmt::EmitRaw(r) => pieces.push(Piece::Text(r.raw.to_string())),
                    Stmt::EmitExpr(e) => {
                        // From `{{` to the expression's last token: the closing `}}` is added.
                        let span = e.span();
                        let open = source
                            .get(span.start_offset as usize..span.end_offset as usize)
                            .unwrap_or_default();
                        let (name, v) = self.add(format!("{open} }}}}"), source)?;
                        vars.extend(v);
                        pieces.push(Piece::Expr(name));
                    }
                    _ => {}
                }
            }
            return Ok((
                Template::Pieces {
                    pieces,
                    source: source.to_string(),
                },
                vars,
            ));
        }
        self.add(source.to_string(), source).map(|(name, vars)| {
            (
                Template::Compiled {
                    name: name.to_string(),
                    source: source.to_string(),
                },
                vars,
            )
        })
    }

    /// Compiles a JSON body string: a lone `{{ expr }}` keeps its type.
    pub fn compile_value(&mut self, source: &str) -> Result<(Template, BTreeSet<String>), Error> {
        let t = source.trim();
        let lone = t.starts_with("{{")
            && t.ends_with("}}")
            && t[2..].find("{{").is_none()
            && t[..t.len() - 2].rfind("}}").is_none();
        if !lone {
            return self.compile(source);
        }
        let expr = t[2..t.len() - 2]
            .trim()
            .trim_start_matches('-')
            .trim_end_matches('-');
        let (name, vars) = self.add(format!("{{{{ ({expr}) | tojson }}}}"), source)?;
        Ok((
            Template::Value {
                name: name.to_string(),
                source: source.to_string(),
            },
            vars,
        ))
    }

    /// Compiles `code` once: the same code again gets the same template.
    fn add(&mut self, code: String, source: &str) -> Result<(Arc<str>, BTreeSet<String>), Error> {
        if let Some((name, vars)) = self.compiled.get(&code) {
            return Ok((name.clone(), vars.clone()));
        }
        if self.compiled.len() >= MAX_TEMPLATES {
            return Err(Error::value(format!(
                "more than {MAX_TEMPLATES} distinct template expressions: a scenario is limited to that — use `repeat` and groups instead of copies"
            )));
        }
        let name: Arc<str> = format!("t{}", self.compiled.len() + 1).into();
        self.env
            .add_template_owned(name.to_string(), code.clone())
            .map_err(|e| Error::value(describe(&e, source)))?;
        let tmpl = self
            .env
            .get_template(&name)
            .map_err(|e| Error::value(describe(&e, source)))?;
        let vars: BTreeSet<String> = tmpl
            .undeclared_variables(true)
            .into_iter()
            .filter(|v| !FUNCTIONS.contains(&v.as_str()))
            .collect();
        if let Some(path) = lookup_path(&code) {
            self.lookups.insert(name.clone(), path);
        }
        self.compiled.insert(code, (name.clone(), vars.clone()));
        Ok((name, vars))
    }

    /// Renders to text.
    pub fn render(&self, t: &Template, ctx: &Value) -> Result<String, Error> {
        let mut out = String::new();
        self.render_into(t, ctx, &mut out)?;
        Ok(out)
    }

    /// Renders, appending to `out` (a buffer the caller reuses).
    pub fn render_into(
        &self,
        t: &Template,
        vars: &dyn Vars,
        out: &mut String,
    ) -> Result<(), Error> {
        match t {
            Template::Literal(s) => out.push_str(s),
            Template::Pieces { pieces, source } => {
                for p in pieces {
                    match p {
                        Piece::Text(text) => out.push_str(text),
                        Piece::Expr(name) => self.expr_into(name, source, vars, out)?,
                    }
                }
            }
            Template::Compiled { name, source } => {
                out.push_str(&self.minijinja(name, source, &vars.context())?)
            }
            Template::Value { name, source } => {
                out.push_str(&self.minijinja(name, source, &vars.context())?)
            }
        }
        Ok(())
    }

    /// One `{{ expression }}`: a variable written directly, anything else by minijinja.
    fn expr_into(
        &self,
        name: &Arc<str>,
        source: &str,
        vars: &dyn Vars,
        out: &mut String,
    ) -> Result<(), Error> {
        if let Some(v) = self.lookup(name, vars) {
            // As minijinja prints a value when nothing is escaped.
            use std::fmt::Write;
            match v.as_str() {
                Some(s) => out.push_str(s),
                None => write!(out, "{v}").expect("writing to a String"),
            }
            return Ok(());
        }
        out.push_str(&self.minijinja(name, source, &vars.context())?);
        Ok(())
    }

    /// The value of an expression that only names a variable, when it is set.
    fn lookup(&self, name: &str, vars: &dyn Vars) -> Option<Value> {
        let path = self.lookups.get(name)?;
        let mut v = vars.get(&path[0])?;
        for attr in &path[1..] {
            v = v.get_attr(attr).ok().filter(|v| !v.is_undefined())?;
        }
        Some(v)
    }

    fn minijinja(&self, name: &str, source: &str, ctx: &Value) -> Result<String, Error> {
        self.env
            .get_template(name)
            .and_then(|tmpl| tmpl.render(ctx))
            .map_err(|e| Error::value(describe(&e, source)))
    }

    /// Renders a JSON body leaf.
    pub fn render_json(&self, t: &Template, ctx: &Value) -> Result<serde_json::Value, Error> {
        if let Template::Value { name, source } = t {
            let text = self.minijinja(name, source, ctx)?;
            return serde_json::from_str(&text)
                .map_err(|e| Error::value(format!("`{source}` did not render to JSON: {e}")));
        }
        Ok(serde_json::Value::String(self.render(t, ctx)?))
    }

    /// Writes a JSON body leaf as JSON text, appending to `out`: the bytes
    /// `serde_json::to_vec(&render_json(t, ctx))` gives, with what is scratch in `text`.
    pub fn write_json(
        &self,
        t: &Template,
        vars: &dyn Vars,
        text: &mut String,
        out: &mut Vec<u8>,
    ) -> Result<(), Error> {
        text.clear();
        let json = |e: serde_json::Error| {
            Error::value(format!(
                "`{}` could not be written as JSON: {e}",
                t.source()
            ))
        };
        match t {
            Template::Value { name, source } => {
                // A string, a whole number or a truth value is written as such; any other
                // value goes through `tojson` and back, which orders object keys.
                if let Some(v) = self.lookup(name, vars) {
                    use minijinja::value::ValueKind;
                    match v.kind() {
                        ValueKind::String => {
                            return serde_json::to_writer(out, v.as_str().unwrap_or_default())
                                .map_err(json);
                        }
                        ValueKind::Bool => {
                            out.extend_from_slice(if v.is_true() { b"true" } else { b"false" });
                            return Ok(());
                        }
                        ValueKind::Number if v.is_integer() => {
                            if let Some(n) = v.as_i64() {
                                return serde_json::to_writer(out, &n).map_err(json);
                            }
                        }
                        _ => {}
                    }
                }
                let text = self.minijinja(name, source, &vars.context())?;
                let value: serde_json::Value = serde_json::from_str(&text)
                    .map_err(|e| Error::value(format!("`{source}` did not render to JSON: {e}")))?;
                serde_json::to_writer(out, &value).map_err(json)
            }
            _ => {
                self.render_into(t, vars, text)?;
                serde_json::to_writer(out, text.as_str()).map_err(json)
            }
        }
    }
}

/// The variable path of a compiled expression (`{{ user.id }}`: `user`, `id`), when the
/// expression only names a variable.
fn lookup_path(code: &str) -> Option<Box<[String]>> {
    use minijinja::machinery::ast::{Expr, Stmt};
    let ast = minijinja::machinery::parse(code, "<lookup>", Default::default()).ok()?;
    let Stmt::Template(root) = &ast else {
        return None;
    };
    let [Stmt::EmitExpr(e)] = root.children.as_slice() else {
        return None;
    };
    let mut expr = &e.expr;
    // A lone JSON expression is compiled as `(expr) | tojson`.
    if let Expr::Filter(f) = expr
        && f.name == "tojson"
        && f.args.is_empty()
    {
        expr = f.expr.as_ref()?;
    }
    let mut path = Vec::new();
    loop {
        match expr {
            Expr::Var(v) => {
                path.push(v.id.to_string());
                break;
            }
            Expr::GetAttr(g) => {
                path.push(g.name.to_string());
                expr = &g.expr;
            }
            _ => return None,
        }
    }
    path.reverse();
    Some(path.into_boxed_slice())
}

/// What a template's syntax tree shows that compiling it does not: calls the environment
/// cannot make, and the literal text between its expressions.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Inspection {
    /// Each problem in plain words: an unknown filter, test or function, a function called
    /// with the wrong number of arguments or an impossible constant, a method call, an
    /// `include`.
    pub problems: Vec<Error>,
    /// Names called as functions that are not functions (already in `problems`), so that
    /// they are not reported again as undefined variables.
    pub not_functions: BTreeSet<String>,
    /// The text outside `{{ }}` and `{% %}`, piece by piece.
    pub literals: Vec<String>,
}

/// volley's functions and their arguments (as the docs write them).
pub const FUNCTION_ARGS: [(&str, &[&str]); 4] = [
    ("uuid", &[]),
    ("random", &["lo", "hi"]),
    ("random_string", &["n"]),
    ("timestamp_ms", &[]),
];

/// minijinja's own functions and how many arguments they take.
const BUILTIN_FUNCTIONS: [(&str, usize, usize); 4] = [
    ("range", 1, 3),
    ("dict", 0, usize::MAX),
    ("namespace", 0, usize::MAX),
    ("debug", 0, usize::MAX),
];

/// Filters offered when one is misspelled (each is checked to exist before it is offered).
const COMMON_FILTERS: &[&str] = &[
    "upper",
    "lower",
    "title",
    "capitalize",
    "trim",
    "replace",
    "length",
    "int",
    "float",
    "string",
    "default",
    "first",
    "last",
    "join",
    "urlencode",
    "tojson",
    "abs",
    "round",
    "list",
    "sort",
    "unique",
    "reverse",
    "escape",
    "items",
    "split",
    "lines",
    "min",
    "max",
    "sum",
    "map",
    "select",
    "reject",
    "batch",
    "slice",
    "indent",
    "bool",
    "format",
    "attr",
    "dictsort",
];

/// Other template languages' names for filters, and minijinja's.
const FILTER_ALIASES: &[(&str, &str)] = &[
    ("upcase", "upper"),
    ("uppercase", "upper"),
    ("downcase", "lower"),
    ("lowercase", "lower"),
    ("to_json", "tojson"),
    ("json", "tojson"),
    ("url_encode", "urlencode"),
    ("escape_uri", "urlencode"),
    ("strip", "trim"),
    ("len", "length"),
    ("size", "length"),
    ("to_int", "int"),
    ("integer", "int"),
    ("str", "string"),
];

impl Templates {
    /// Walks the syntax tree of `source` (already compiled, so it parses) for what only
    /// rendering would find: filters and tests the environment lacks, calls of functions
    /// that do not exist or with the wrong arguments, method calls, template loading.
    /// `unbound` are the names the template reads without setting them.
    pub fn inspect(&self, source: &str, unbound: &BTreeSet<String>) -> Inspection {
        let mut out = Inspection::default();
        if !has_syntax(source) {
            out.literals.push(source.to_string());
            return out;
        }
        let Ok(ast) = minijinja::machinery::parse(source, "<scenario>", Default::default()) else {
            return out;
        };
        let mut v = Inspector {
            templates: self,
            unbound,
            out: &mut out,
        };
        v.stmt(&ast);
        out
    }

    fn has_filter(&self, name: &str) -> bool {
        let mut state = self.env.empty_state();
        !matches!(state.apply_filter(name, &[Value::UNDEFINED]), Err(e) if e.kind() == minijinja::ErrorKind::UnknownFilter)
    }

    fn has_test(&self, name: &str) -> bool {
        let mut state = self.env.empty_state();
        !matches!(state.perform_test(name, &[Value::UNDEFINED]), Err(e) if e.kind() == minijinja::ErrorKind::UnknownTest)
    }
}

struct Inspector<'a> {
    templates: &'a Templates,
    unbound: &'a BTreeSet<String>,
    out: &'a mut Inspection,
}

use minijinja::machinery::ast::{CallArg, Expr, Stmt};

impl Inspector<'_> {
    fn problem(&mut self, message: String) {
        let p = Error::value(message);
        if !self.out.problems.contains(&p) {
            self.out.problems.push(p);
        }
    }

    fn stmts(&mut self, body: &[Stmt<'_>]) {
        for s in body {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &Stmt<'_>) {
        match s {
            Stmt::Template(t) => self.stmts(&t.children),
            Stmt::EmitExpr(e) => self.expr(&e.expr),
            Stmt::EmitRaw(r) => self.out.literals.push(r.raw.to_string()),
            Stmt::ForLoop(f) => {
                self.expr(&f.iter);
                if let Some(e) = &f.filter_expr {
                    self.expr(e);
                }
                self.stmts(&f.body);
                self.stmts(&f.else_body);
            }
            Stmt::IfCond(i) => {
                self.expr(&i.expr);
                self.stmts(&i.true_body);
                self.stmts(&i.false_body);
            }
            Stmt::WithBlock(w) => {
                for (_, e) in &w.assignments {
                    self.expr(e);
                }
                self.stmts(&w.body);
            }
            Stmt::Set(s) => self.expr(&s.expr),
            Stmt::SetBlock(s) => {
                if let Some(f) = &s.filter {
                    self.expr(f);
                }
                self.stmts(&s.body);
            }
            Stmt::AutoEscape(a) => self.stmts(&a.body),
            Stmt::FilterBlock(f) => {
                self.expr(&f.filter);
                self.stmts(&f.body);
            }
            Stmt::Macro(m) => self.stmts(&m.body),
            Stmt::CallBlock(c) => self.stmts(&c.macro_decl.body),
            Stmt::Do(d) => self.call(&d.call),
            Stmt::Include(_)
            | Stmt::Import(_)
            | Stmt::FromImport(_)
            | Stmt::Extends(_)
            | Stmt::Block(_) => {
                self.problem("a scenario's templates cannot load other templates (`include`, `import`, `extends`, `block`): write the text in place".into());
            }
            #[allow(unreachable_patterns)]
            _ => {}
        }
    }

    fn args(&mut self, args: &[CallArg<'_>]) {
        for a in args {
            match a {
                CallArg::Pos(e)
                | CallArg::Kwarg(_, e)
                | CallArg::PosSplat(e)
                | CallArg::KwargSplat(e) => self.expr(e),
            }
        }
    }

    fn expr(&mut self, e: &Expr<'_>) {
        match e {
            Expr::Var(_) | Expr::Const(_) => {}
            Expr::Slice(s) => {
                self.expr(&s.expr);
                for part in [&s.start, &s.stop, &s.step].into_iter().flatten() {
                    self.expr(part);
                }
            }
            Expr::UnaryOp(u) => self.expr(&u.expr),
            Expr::BinOp(b) => {
                self.expr(&b.left);
                self.expr(&b.right);
            }
            Expr::Compare(c) => {
                self.expr(&c.expr);
                for op in &c.ops {
                    self.expr(&op.expr);
                }
            }
            Expr::IfExpr(i) => {
                self.expr(&i.test_expr);
                self.expr(&i.true_expr);
                if let Some(f) = &i.false_expr {
                    self.expr(f);
                }
            }
            Expr::Filter(f) => {
                if let Some(inner) = &f.expr {
                    self.expr(inner);
                }
                self.args(&f.args);
                if !self.templates.has_filter(f.name) {
                    let known: Vec<&str> = COMMON_FILTERS
                        .iter()
                        .copied()
                        .filter(|c| self.templates.has_filter(c))
                        .collect();
                    let alias = FILTER_ALIASES
                        .iter()
                        .find(|(other, _)| *other == f.name)
                        .map(|(_, ours)| *ours)
                        .filter(|ours| self.templates.has_filter(ours));
                    let hint = alias
                        .or_else(|| crate::suggest::suggest(f.name, &known))
                        .map(|s| format!("did you mean `{s}`? "))
                        .unwrap_or_default();
                    self.problem(format!("unknown filter `{}`; {hint}filters such as {} are listed at https://docs.rs/minijinja/latest/minijinja/filters/", f.name, known[..6.min(known.len())].join(", ")));
                }
            }
            Expr::Test(t) => {
                self.expr(&t.expr);
                self.args(&t.args);
                if !self.templates.has_test(t.name) {
                    self.problem(format!("unknown test `is {}`; tests such as `is defined`, `is number`, `is string` are listed at https://docs.rs/minijinja/latest/minijinja/tests/", t.name));
                }
            }
            Expr::GetAttr(g) => self.expr(&g.expr),
            Expr::GetItem(g) => {
                self.expr(&g.expr);
                self.expr(&g.subscript_expr);
            }
            Expr::Call(c) => self.call(c),
            Expr::List(l) => {
                for i in &l.items {
                    self.expr(i);
                }
            }
            Expr::Tuple(t) => {
                for i in &t.items {
                    self.expr(i);
                }
            }
            Expr::Map(m) => {
                for i in m.keys.iter().chain(&m.values) {
                    self.expr(i);
                }
            }
        }
    }

    fn call(&mut self, c: &minijinja::machinery::ast::Call<'_>) {
        use minijinja::machinery::ast::CallType;
        self.args(&c.args);
        match c.identify_call() {
            CallType::Function(name) => self.function(name, &c.args),
            CallType::Method(on, name) => {
                self.expr(on);
                let filter = if self.templates.has_filter(name) {
                    name
                } else {
                    "upper"
                };
                self.problem(format!("`.{name}()`: values have no methods in a scenario's templates; use a filter instead, e.g. `value | {filter}`"));
            }
            #[allow(unreachable_patterns)]
            CallType::Object(on) => self.expr(on),
            #[allow(unreachable_patterns)]
            _ => {}
        }
    }

    fn function(&mut self, name: &str, args: &[CallArg<'_>]) {
        let list = || {
            FUNCTION_ARGS
                .iter()
                .map(|(n, a)| format!("{n}({})", a.join(", ")))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let positional = args.iter().filter(|a| matches!(a, CallArg::Pos(_))).count();
        if let Some((_, params)) = FUNCTION_ARGS.iter().find(|(n, _)| *n == name) {
            let usage = format!("{name}({})", params.join(", "));
            if positional != args.len() {
                self.problem(format!(
                    "`{name}` takes its arguments in order, without names: {usage}"
                ));
            } else if positional != params.len() {
                let takes = match params.len() {
                    0 => "no arguments".to_string(),
                    1 => "1 argument".to_string(),
                    n => format!("{n} arguments"),
                };
                self.problem(format!("`{name}` takes {takes}, not {positional}: {usage}"));
            } else {
                self.constants(name, &usage, args);
            }
            return;
        }
        if let Some((_, lo, hi)) = BUILTIN_FUNCTIONS.iter().find(|(n, ..)| *n == name) {
            if !(*lo..=*hi).contains(&args.len()) {
                self.problem(format!(
                    "`{name}` takes {lo} to {hi} arguments, not {}",
                    args.len()
                ));
            }
            return;
        }
        if self.unbound.contains(name) {
            self.out.not_functions.insert(name.to_string());
            let names: Vec<&str> = FUNCTION_ARGS.iter().map(|(n, _)| *n).collect();
            let hint = crate::suggest::suggest(name, &names)
                .map(|s| format!("did you mean `{s}`? "))
                .unwrap_or_default();
            self.problem(format!(
                "`{name}()` is not a function; {hint}the functions are {}",
                list()
            ));
        }
    }

    /// Constant arguments that can never work: `random_string(-1)`, `random(10, 1)`.
    fn constants(&mut self, name: &str, usage: &str, args: &[CallArg<'_>]) {
        let consts: Vec<Option<Value>> = args
            .iter()
            .map(|a| match a {
                CallArg::Pos(Expr::Const(c)) => Some(c.value.clone()),
                CallArg::Pos(Expr::UnaryOp(u)) => match &u.expr {
                    Expr::Const(c) => i64::try_from(c.value.clone()).ok().map(|n| Value::from(-n)),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        let int = |v: &Value| {
            i64::try_from(v.clone()).ok().filter(|_| {
                v.kind() == minijinja::value::ValueKind::Number && !v.to_string().contains('.')
            })
        };
        for (v, param) in consts.iter().zip(
            FUNCTION_ARGS
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(&[][..], |(_, p)| p),
        ) {
            if let Some(v) = v
                && int(v).is_none()
            {
                let shown = if v.kind() == minijinja::value::ValueKind::String {
                    format!("\"{v}\"")
                } else {
                    v.to_string()
                };
                self.problem(format!(
                    "`{name}`: `{param}` must be a whole number, not `{shown}`: {usage}"
                ));
                return;
            }
        }
        match (name, consts.as_slice()) {
            ("random_string", [Some(n)]) if int(n).is_some_and(|n| n < 0) => {
                self.problem(format!(
                    "`random_string`: the length must be 0 or more, not {n}"
                ));
            }
            ("random", [Some(lo), Some(hi)])
                if int(lo).zip(int(hi)).is_some_and(|(lo, hi)| lo > hi) =>
            {
                self.problem(format!(
                    "`random({lo}, {hi})`: the lower bound comes first, e.g. random({hi}, {lo})"
                ));
            }
            _ => {}
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
        let (tm, vars) = t
            .compile("/api/rooms/{{ code }}/todos?u={{ user.name }}&t={{ uuid() }}")
            .unwrap();
        assert_eq!(
            vars.into_iter().collect::<Vec<_>>(),
            vec!["code".to_string(), "user.name".to_string()]
        );
        let out = t
            .render(
                &tm,
                &context! { code => "AB12", user => context! { name => "kim" } },
            )
            .unwrap();
        assert!(out.starts_with("/api/rooms/AB12/todos?u=kim&t="), "{out}");
        assert_eq!(out.len(), "/api/rooms/AB12/todos?u=kim&t=".len() + 36);
    }

    #[test]
    fn undefined_variables_fail_at_render_and_syntax_at_compile() {
        let mut t = Templates::new();
        let (tm, _) = t.compile("{{ missing }}").unwrap();
        let e = t.render(&tm, &context! {}).unwrap_err();
        assert!(e.to_string().contains("undefined"), "{e}");
        let e = t.compile("{{ unclosed").unwrap_err();
        assert!(e.to_string().contains("template `{{ unclosed`"), "{e}");
    }

    #[test]
    fn pieces_render_as_the_whole_template_would() {
        let mut t = Templates::new();
        let ctx = context! { code => "AB12", n => 3, user => context! { name => "Kim Lee" }, items => vec![1, 2] };
        for source in [
            "/rooms/{{ code }}/todos",
            "{{ code }}",
            "a {{ n + 1 }} b {{ user.name | lower | urlencode }} c",
            "  {{- code -}}  x  {{- n }}\n",
            "line one\n{{ code }}\nline two\n",
            "{# note #}{{ code ~ '-' ~ n }}{{ items | join(',') }}",
            "{{ 'a' if n > 2 else 'b' }}{{ items[1] }}{{ code[:2] }}",
            "{% if n > 2 %}big{% else %}small{% endif %} {{ code }}",
            "{% for i in items %}{{ i }};{% endfor %}",
            "{{ '{{' }} literal braces {{ '}}' }}",
        ] {
            let (tm, _) = t.compile(source).unwrap();
            let whole = t.env.render_str(source, ctx.clone()).unwrap();
            assert_eq!(t.render(&tm, &ctx).unwrap(), whole, "{source:?} as {tm:?}");
        }
        // The same expression anywhere is compiled once.
        let before = t.len();
        for i in 0..100 {
            t.compile(&format!("/rooms/{{{{ code }}}}/items/{i}"))
                .unwrap();
        }
        assert_eq!(t.len(), before);
        let (whole, _) = t.compile("{% if n %}x{% endif %}").unwrap();
        assert!(matches!(whole, Template::Compiled { .. }));
    }

    #[test]
    fn inspection_finds_what_only_rendering_would() {
        let t = Templates::new();
        let unbound = |names: &[&str]| {
            names
                .iter()
                .map(|s| s.to_string())
                .collect::<BTreeSet<String>>()
        };
        let ok = t.inspect("/a/{{ code | urlencode }}/{{ random(1, 9) }}-{{ uuid() }}{% if vu is odd %}x{% endif %}", &unbound(&["code"]));
        assert!(ok.problems.is_empty(), "{:?}", ok.problems);
        assert_eq!(ok.literals, ["/a/", "/", "-", "x"]);
        let bad = t.inspect(
            "{{ x | upcase }}{{ timestamp_ms(1) }}{{ nope(2) }}{{ y is nothing_like_it }}",
            &unbound(&["x", "nope", "y"]),
        );
        let text: Vec<String> = bad.problems.iter().map(|p| p.to_string().clone()).collect();
        assert_eq!(text.len(), 4, "{text:?}");
        assert!(
            text[0].starts_with("unknown filter `upcase`; did you mean `upper`?"),
            "{text:?}"
        );
        assert!(
            text[1].starts_with("`timestamp_ms` takes no arguments, not 1"),
            "{text:?}"
        );
        assert!(
            text[2].starts_with("`nope()` is not a function"),
            "{text:?}"
        );
        assert!(
            text[3].starts_with("unknown test `is nothing_like_it`"),
            "{text:?}"
        );
        assert_eq!(bad.not_functions.into_iter().collect::<Vec<_>>(), ["nope"]);
        // A macro defined in the template is callable; a literal is all literal.
        assert!(
            t.inspect("{% macro m() %}a{% endmacro %}{{ m() }}", &unbound(&[]))
                .problems
                .is_empty()
        );
        assert_eq!(t.inspect("/plain", &unbound(&[])).literals, ["/plain"]);
    }

    /// Values of every kind a VU's variables hold: text with characters JSON and HTML
    /// escape, numbers, truth values, none, lists, maps (an extracted JSON object) and
    /// nested attributes.
    fn every_kind() -> Value {
        context! {
            s => "a<b & \"c\" 'd' \\ é\n", n => 42, neg => -7, f => 1.5, big => u64::MAX, yes => true, no => false,
            nothing => (), list => vec![1, 2], empty => "",
            map => Value::from(minijinja::value::Serde(serde_json::json!({"z": 1, "a": [true, null], "k": "v", "inner": {"x": 1}}))),
            user => context! { name => "Kim Lee", id => 7 },
        }
    }

    #[test]
    fn variables_written_directly_render_as_minijinja_does() {
        let mut t = Templates::new();
        let ctx = every_kind();
        let mut direct = 0;
        for source in [
            "{{ s }}",
            "{{ n }}",
            "{{ neg }}",
            "{{ f }}",
            "{{ big }}",
            "{{ yes }}",
            "{{ no }}",
            "{{ nothing }}",
            "{{ list }}",
            "{{ map }}",
            "{{ map.inner }}",
            "{{ map.inner.x }}",
            "{{ map.a }}",
            "{{ user.name }}",
            "{{ empty }}",
            "{{user.id}}",
            "x{{ n }}y{{ s }}z",
            "  {{- s -}}  ",
            "/items/{{ user.id }}?q={{ s | urlencode }}",
            "{{ s|upper }}",
            "{{ n + 1 }}",
            "{{ map['k'] }}",
            "{{ (n) }}",
            "{{ random(1, 1) }}{{ n }}",
            "{% if yes %}{{ s }}{% endif %}",
        ] {
            let (tm, _) = t.compile(source).unwrap();
            let whole = t.env.render_str(source, ctx.clone()).unwrap();
            assert_eq!(t.render(&tm, &ctx).unwrap(), whole, "{source:?}");
            let mut out = String::from("kept ");
            t.render_into(&tm, &ctx, &mut out).unwrap();
            assert_eq!(
                out,
                format!("kept {whole}"),
                "{source:?}: appended to the buffer"
            );
            if let Template::Pieces { pieces, .. } = &tm {
                direct += pieces
                    .iter()
                    .filter(|p| matches!(p, Piece::Expr(name) if t.lookups.contains_key(name)))
                    .count();
            }
        }
        // Every plain name and attribute path above (in parentheses too) is written without
        // minijinja: 22 of them; filters, operators, subscripts, calls and statements are not.
        assert_eq!(direct, 22);
        // A name that is not set fails as minijinja fails.
        let (tm, _) = t.compile("/a/{{ missing }}").unwrap();
        let e = t.render(&tm, &ctx).unwrap_err();
        assert!(e.to_string().contains("undefined"), "{e}");
        let (tm, _) = t.compile("{{ user.missing }}").unwrap();
        assert!(t.render(&tm, &ctx).is_err());
    }

    #[test]
    fn json_leaves_are_written_as_serializing_the_rendered_value_would() {
        let mut t = Templates::new();
        let ctx = every_kind();
        for source in [
            "{{ s }}",
            "{{ n }}",
            "{{ neg }}",
            "{{ f }}",
            "{{ big }}",
            "{{ yes }}",
            "{{ no }}",
            "{{ nothing }}",
            "{{ list }}",
            "{{ map }}",
            "{{ map.inner }}",
            "{{ user.name }}",
            "{{ n + 1 }}",
            "item {{ n }}",
            "{{ s }} and {{ user.id }}",
            "{{ empty }}",
        ] {
            let (tm, _) = t.compile_value(source).unwrap();
            let expected = serde_json::to_vec(&t.render_json(&tm, &ctx).unwrap()).unwrap();
            let (mut text, mut out) = (String::from("stale"), b"[".to_vec());
            t.write_json(&tm, &ctx, &mut text, &mut out).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&out[1..]),
                String::from_utf8_lossy(&expected),
                "{source:?}"
            );
        }
    }

    #[test]
    fn a_lone_expression_in_json_keeps_its_type() {
        let mut t = Templates::new();
        let (v, _) = t.compile_value("{{ iteration + 1 }}").unwrap();
        assert_eq!(
            t.render_json(&v, &context! { iteration => 4 }).unwrap(),
            serde_json::json!(5)
        );
        let (s, _) = t.compile_value("todo {{ iteration }}").unwrap();
        assert_eq!(
            t.render_json(&s, &context! { iteration => 4 }).unwrap(),
            serde_json::json!("todo 4")
        );
        let (r, _) = t
            .compile("{{ random(3, 3) }}-{{ random_string(5) | length }}")
            .unwrap();
        assert_eq!(t.render(&r, &context! {}).unwrap(), "3-5");
    }
}
