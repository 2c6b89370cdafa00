//! What a worker keeps of its scenario's HTTP steps between requests, so that a step costs
//! little more than a fixed URL: the request of a step without any template, built once
//! and shared by every VU of the worker, and the scratch buffers a templated step renders
//! into (one set per worker, not per VU: rendering never waits, so VUs take turns); and
//! the scenario's `env` as templates see it, made once instead of once per VU.

use std::cell::{OnceCell, RefCell};
use std::rc::Rc;

use minijinja::Value;
use volley_scenario::Scenario;
use volley_scenario::json::JsonTemplate;
use volley_scenario::scenario::{Body, HttpStep};
use volley_scenario::template::Template;

use crate::client::PreparedRequest;

/// Per step id: its request, when the step has no template and was built once.
#[derive(Default)]
pub(crate) struct StepCache {
    literal: RefCell<Vec<Option<Rc<PreparedRequest>>>>,
    scratch: RefCell<Scratch>,
    env: OnceCell<Value>,
}

/// Buffers a request is rendered into.
#[derive(Default)]
pub(crate) struct Scratch {
    /// The URL as rendered.
    pub(crate) url: String,
    /// The path on the target, when the URL needs rewriting.
    pub(crate) path: String,
    /// One rendered string at a time (JSON leaves, form fields).
    pub(crate) text: String,
}

impl StepCache {
    /// The request of step `id` if it was cached as having no template.
    pub(crate) fn literal(&self, id: usize) -> Option<Rc<PreparedRequest>> {
        self.literal.borrow().get(id).cloned().flatten()
    }

    /// Keeps `req` as step `id`'s request for every later iteration.
    pub(crate) fn keep(&self, id: usize, req: Rc<PreparedRequest>) {
        let mut v = self.literal.borrow_mut();
        if v.len() <= id {
            v.resize(id + 1, None);
        }
        v[id] = Some(req);
    }

    /// The scenario's `env` as templates see it: made once, shared by every VU of the worker
    /// (a minijinja map is reference-counted).
    pub(crate) fn env(&self, scenario: &Scenario) -> Value {
        self.env
            .get_or_init(|| {
                Value::from_pairs(
                    scenario
                        .env
                        .iter()
                        .map(|(k, v)| (k.as_str(), Value::from(v.as_str()))),
                )
            })
            .clone()
    }

    /// The scratch buffers, for the time of one (synchronous) render.
    pub(crate) fn scratch(&self) -> std::cell::RefMut<'_, Scratch> {
        self.scratch.borrow_mut()
    }
}

/// Whether a step sends the same bytes every time: no template in its URL, its headers
/// (with the scenario's) or its body.
pub(crate) fn is_literal(step: &HttpStep, scenario_headers: &[(String, Template)]) -> bool {
    let lit = |t: &Template| matches!(t, Template::Literal(_));
    fn json_lit(j: &JsonTemplate) -> bool {
        match j {
            JsonTemplate::Fixed(_) => true,
            JsonTemplate::Text(t) => matches!(t, Template::Literal(_)),
            JsonTemplate::Array(items) => items.iter().all(json_lit),
            JsonTemplate::Object(fields) => fields.iter().all(|(_, v)| json_lit(v)),
        }
    }
    lit(&step.call.url)
        && scenario_headers
            .iter()
            .chain(&step.call.headers)
            .all(|(_, t)| lit(t))
        && match &step.body {
            Body::Empty => true,
            Body::Raw(t) => lit(t),
            Body::Json(j) => json_lit(j),
            Body::Form(fields) => fields.iter().all(|(_, t)| lit(t)),
        }
}
