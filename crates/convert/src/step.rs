//! What every converter produces: a scenario of request (and event-stream) steps, with the
//! comments that explain where each value came from, rendered as a scenario file.

use serde_json::Value;

use crate::yaml::{Entry, Node, json, render, scalar};

/// A request body; every string in it is template text already.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// No body.
    None,
    /// `json:` (sets Content-Type).
    Json(Value),
    /// `form:` fields (application/x-www-form-urlencoded).
    Form(Vec<(String, String)>),
    /// `body:` raw text.
    Text(String),
}

/// Where an extracted variable comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A JSONPath query on the JSON body.
    Json(String),
    /// A response header.
    Header(String),
}

/// One step of the flow.
#[derive(Debug, Clone)]
pub struct Step {
    /// Unique name (a row of metrics).
    pub name: String,
    /// Comment lines above the step.
    pub comments: Vec<String>,
    /// An event stream (`sse:`) instead of a request.
    pub sse: bool,
    /// HTTP method.
    pub method: String,
    /// URL template: a path on the target or an absolute URL.
    pub url: String,
    /// Headers: name, template value, a comment for the line.
    pub headers: Vec<(String, String, Option<String>)>,
    /// The body.
    pub body: Body,
    /// Variables set from the response, each with a comment.
    pub extract: Vec<(String, Source, Option<String>)>,
    /// `check: { status }`.
    pub status: Option<String>,
    /// Pause after the step.
    pub think_time: Option<String>,
}

impl Step {
    pub(crate) fn new(method: &str, url: String) -> Step {
        Step {
            name: String::new(),
            comments: Vec::new(),
            sse: false,
            method: method.to_ascii_uppercase(),
            url,
            headers: Vec::new(),
            body: Body::None,
            extract: Vec::new(),
            status: None,
            think_time: None,
        }
    }

    fn node(&self) -> Node {
        let mut e = vec![Entry::text("name", &self.name)];
        if self.sse {
            e.push(Entry::text("sse", &self.url));
            e.push(Entry::new("events", Node::Scalar("1".into())));
        } else {
            e.push(Entry::text(
                "request",
                &format!("{} {}", self.method, self.url),
            ));
        }
        if !self.headers.is_empty() {
            let h = self
                .headers
                .iter()
                .map(|(k, v, c)| Entry::text(k, v).trailing(c.clone()))
                .collect();
            e.push(Entry::new("headers", Node::Map(h)));
        }
        match &self.body {
            Body::None => {}
            Body::Json(v) => e.push(Entry::new("json", json(v))),
            Body::Form(f) => e.push(Entry::new(
                "form",
                Node::Map(f.iter().map(|(k, v)| Entry::text(k, v)).collect()),
            )),
            Body::Text(t) => e.push(Entry::text("body", t)),
        }
        if !self.extract.is_empty() {
            let x = self
                .extract
                .iter()
                .map(|(var, src, c)| {
                    let value = match src {
                        Source::Json(q) => Node::Scalar(scalar(q)),
                        Source::Header(h) => Node::Map(vec![Entry::text("header", h)]),
                    };
                    Entry::new(var, value).trailing(c.clone())
                })
                .collect();
            e.push(Entry::new("extract", Node::Map(x)));
        }
        if let Some(s) = &self.status {
            let v = if s.parse::<u16>().is_ok() {
                s.clone()
            } else {
                scalar(s)
            };
            e.push(Entry::new(
                "check",
                Node::Map(vec![Entry::new("status", Node::Scalar(v))]),
            ));
        }
        if let Some(t) = &self.think_time {
            e.push(Entry::text("think_time", t));
        }
        Node::Map(e)
    }
}

/// A whole scenario file.
#[derive(Debug, Clone, Default)]
pub struct Doc {
    /// Comment lines at the top.
    pub header: Vec<String>,
    /// `name:`.
    pub name: String,
    /// `target:` base URL.
    pub target: String,
    /// `variables:`, each with a comment.
    pub variables: Vec<(String, Value, Option<String>)>,
    /// The steps.
    pub steps: Vec<Step>,
}

impl Doc {
    /// Step names made unique (`GET /rooms`, `GET /rooms (2)`).
    pub(crate) fn unique_names(&mut self) {
        let mut seen = std::collections::HashMap::<String, usize>::new();
        for s in &mut self.steps {
            let n = seen.entry(s.name.clone()).or_insert(0);
            *n += 1;
            if *n > 1 {
                s.name = format!("{} ({n})", s.name);
            }
        }
    }

    /// The scenario file's text.
    pub fn render(&self) -> String {
        let mut root = vec![
            Entry::text("name", &self.name),
            Entry::text("target", &self.target),
        ];
        root.push(
            Entry::new("load", Node::Map(vec![Entry::new("vus", Node::Scalar("1".into())), Entry::new("iterations", Node::Scalar("1".into()))]))
                .above(vec!["One user, one pass through the flow: give the load here or on the command line (--vus 50 --duration 5m).".into()]),
        );
        if !self.variables.is_empty() {
            let v = self
                .variables
                .iter()
                .map(|(k, v, c)| Entry::new(k, json(v)).trailing(c.clone()))
                .collect();
            root.push(Entry::new("variables", Node::Map(v)));
        }
        let steps = self
            .steps
            .iter()
            .map(|s| (s.comments.clone(), s.node()))
            .collect();
        root.push(Entry::new("steps", Node::Seq(steps)));
        render(&self.header, &root)
    }
}
