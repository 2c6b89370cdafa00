//! One iteration of a scenario for one VU: steps in order on the VU's keep-alive
//! connection, templates rendered from the VU's variables, values extracted into them,
//! checks judged, event streams read in the background until the iteration ends.
//!
//! A step that fails and was to extract variables ends the iteration (later steps would
//! use values that do not exist); other failures are recorded and the flow goes on.

use std::cell::{OnceCell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use minijinja::Value;
use minijinja::value::Serde;
use tokio_util::sync::CancellationToken;
use volley_scenario::PlanError;
use volley_scenario::Scenario;
use volley_scenario::extract::ResponseView;
use volley_scenario::extract::{Check, Extract};
use volley_scenario::scenario::{Body, Call, GrpcStep, HttpStep, Node, SseStep, WsStep};
use volley_scenario::template::{Template, Vars};
use volley_stats::ErrorKind;

use crate::client::{Capture, Client, PreparedRequest};
use crate::context::WorkerContext;
use crate::failure::Failure;
use crate::recorder::InFlight;
use crate::sse::SseStream;
use crate::steps::Scratch;
use crate::vars::VuVars;

/// What one VU keeps between iterations.
#[derive(Debug, Default)]
pub(crate) struct FlowState {
    vu: u64,
    iteration: u64,
    vars: VuVars,
    feeder_pos: Vec<usize>,
    started: bool,
}

/// A request as `volley check` shows it: built, with the path, headers and body it was
/// built from.
type Shown = (PreparedRequest, String, Vec<(String, String)>, Vec<u8>);
impl FlowState {
    pub(crate) fn new(vu: u64) -> Self {
        FlowState {
            vu,
            ..FlowState::default()
        }
    }
}

/// One request and response as `volley check` prints them.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// The step's name.
    pub step: String,
    /// `GET http://…` (or `SSE …`, `WS …`).
    pub request: String,
    /// Request headers sent by the step (secrets masked).
    pub request_headers: Vec<(String, String)>,
    /// The request body, cut short.
    pub request_body: String,
    /// Status, or 0 when no response came.
    pub status: u16,
    /// Response headers.
    pub response_headers: Vec<(String, String)>,
    /// The response body (or received messages), cut short.
    pub response_body: String,
    /// Time to first byte and total, ms.
    pub ttfb_ms: f64,
    /// Total time, ms.
    pub total_ms: f64,
    /// `ok`, or what failed (for event streams: what was received).
    pub outcome: String,
    /// Whether the step succeeded.
    pub passed: bool,
    /// Variables set by this step.
    pub extracted: Vec<(String, String)>,
}

/// The run must stop: the text says why.
pub(crate) type Halt = String;

/// Whether the flow goes on after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    Go,
    EndIteration,
}

/// Runs one iteration; `queued_us` is how late an open-model arrival was sent (added to
/// the first request's latency, which waited that long).
pub(crate) async fn iteration(
    ctx: &Rc<WorkerContext>,
    scenario: &Arc<Scenario>,
    client: &mut Client,
    state: &mut FlowState,
    queued_us: u64,
    trace: Option<&RefCell<Vec<Trace>>>,
) -> Result<Iteration, Halt> {
    if !state.started {
        state.started = true;
        state.feeder_pos = vec![0; scenario.data.len()];
        state.vars.set_static("vu", Value::from(state.vu));
        state.vars.set_static("env", ctx.steps.env(scenario));
        state.vars.set_static("iteration", Value::from(0));
        for (name, t) in &scenario.variables {
            let ctx_value = context(&state.vars);
            let v = scenario
                .templates
                .render(t, &ctx_value)
                .unwrap_or_else(String::from);
            state.vars.set(name, Value::from(v));
        }
    }
    state
        .vars
        .set_static("iteration", Value::from(state.iteration));
    state.iteration += 1;
    for (i, feeder) in scenario.data.iter().enumerate() {
        let row = feeder.next(&mut state.feeder_pos[i]).map_err(|e| e.0)?;
        state.vars.set(&feeder.name, row);
    }
    let started = Instant::now();
    // Made by the first event stream of the iteration: most iterations open none.
    let streams = OnceCell::new();
    let mut exec = Exec {
        ctx,
        scenario,
        client,
        state,
        queued_us,
        streams: &streams,
        background: Vec::new(),
        trace,
        sent: 0,
        not_sent: None,
    };
    let finished = exec.nodes(&scenario.steps).await == Next::Go && !ctx.shared.stop.is_cancelled();
    if finished {
        // Iterations cut short by a failure or by the end of the run would pull the figure down.
        ctx.recorder
            .borrow_mut()
            .record_iteration(started.elapsed());
    }
    if let Some(streams) = streams.get() {
        streams.cancel();
    }
    for (task, entry) in std::mem::take(&mut exec.background) {
        let result = task.await;
        if let (Some(trace), Some(i), Ok((text, passed))) = (trace, entry, result) {
            let mut t = trace.borrow_mut();
            t[i].outcome = scenario.redact(&text);
            t[i].passed = passed;
        }
    }
    Ok(Iteration {
        sent: exec.sent,
        not_sent: exec.not_sent,
    })
}

fn context(vars: &VuVars) -> Value {
    Value::from_pairs(vars.iter().map(|(k, v)| (k, v.clone())))
}

/// A VU's variables as its templates see them: looked up in place, and as one minijinja
/// context only when a template needs the whole (built at most once per step).
struct StepVars<'a> {
    vars: &'a VuVars,
    context: OnceCell<Value>,
}

impl<'a> StepVars<'a> {
    fn new(vars: &'a VuVars) -> Self {
        StepVars {
            vars,
            context: OnceCell::new(),
        }
    }
}

impl Vars for StepVars<'_> {
    fn get(&self, name: &str) -> Option<Value> {
        self.vars.get(name).cloned()
    }

    fn context(&self) -> Value {
        self.context.get_or_init(|| context(self.vars)).clone()
    }
}

struct Exec<'a> {
    ctx: &'a Rc<WorkerContext>,
    scenario: &'a Arc<Scenario>,
    client: &'a mut Client,
    state: &'a mut FlowState,
    queued_us: u64,
    /// Cancelled when the iteration ends, which closes its event streams.
    streams: &'a OnceCell<CancellationToken>,
    /// Event streams still open, with the trace entry each fills in when it closes.
    background: Vec<(OpenStream, Option<usize>)>,
    trace: Option<&'a RefCell<Vec<Trace>>>,
    /// Steps that went to the wire in this iteration.
    sent: u64,
    /// Why a step could not be built, when one could not.
    not_sent: Option<String>,
}

/// How an iteration went, for the loop that runs the next one.
#[derive(Debug, Default)]
pub(crate) struct Iteration {
    /// Steps that went to the wire.
    pub(crate) sent: u64,
    /// Why a step could not be built (`[step] why`), when one could not.
    pub(crate) not_sent: Option<String>,
}

/// Iterations in a row that send nothing before a VU gives up and stops the run: a step
/// that can never be built would otherwise spin the event loop, counting nothing.
pub(crate) const NOTHING_SENT_LIMIT: u32 = 100;

/// A stream read in the background; it answers what it received and whether that passed.
type OpenStream = tokio::task::JoinHandle<(String, bool)>;

type Boxed<'a> = Pin<Box<dyn Future<Output = Next> + 'a>>;

impl<'a> Exec<'a> {
    fn nodes<'b>(&'b mut self, nodes: &'b [Node]) -> Boxed<'b> {
        Box::pin(async move {
            for node in nodes {
                if self.ctx.shared.stop.is_cancelled() {
                    return Next::EndIteration;
                }
                // Each step in a box of its own size: inline, every step would hold as much
                // as the flow's largest kind (4.4 KB), a held event stream or a think time too.
                let next = match node {
                    Node::Http(step) => Box::pin(self.http(step)).await,
                    Node::Sse(step) => Box::pin(self.sse(step)).await,
                    Node::WebSocket(step) => Box::pin(self.websocket(step)).await,
                    Node::Grpc(step) => Box::pin(self.grpc(step)).await,
                    Node::OneOf(branches) => {
                        let total: u64 = branches.iter().map(|b| u64::from(b.weight)).sum();
                        let i = volley_scenario::scenario::pick_branch(
                            branches,
                            fastrand::u64(..total.max(1)),
                        );
                        self.nodes(&branches[i].steps).await
                    }
                    Node::Group(g) => {
                        let mut next = Next::Go;
                        for _ in 0..g.repeat {
                            next = self.nodes(&g.steps).await;
                            if next == Next::EndIteration {
                                break;
                            }
                        }
                        next
                    }
                };
                if next == Next::EndIteration {
                    return next;
                }
            }
            Next::Go
        })
    }

    fn render(&self, t: &Template, vars: &dyn Vars) -> Result<String, String> {
        let mut out = String::new();
        self.scenario
            .templates
            .render_into(t, vars, &mut out)
            .map_err(String::from)?;
        Ok(out)
    }

    fn timeout(&self, call: &Call) -> Duration {
        call.timeout.unwrap_or(self.ctx.plan.timeout)
    }

    fn fail(&self, id: usize, kind: ErrorKind, message: String) {
        let message = self.scenario.redact(&message);
        self.ctx
            .recorder
            .borrow_mut()
            .record_failure(Some(id), Failure::new(kind, message));
    }

    /// The step's URL as a path on the target, and its headers, rendered.
    fn prepare(
        &self,
        call: &Call,
        vars: &dyn Vars,
        ws: bool,
    ) -> Result<(String, Vec<(String, String)>), String> {
        let url = self.render(&call.url, vars)?;
        let path = self.path_on_target(&url, ws)?;
        let mut headers = Vec::with_capacity(self.scenario.headers.len() + call.headers.len());
        for (n, t) in self.scenario.headers.iter().chain(&call.headers) {
            let v = self.render(t, vars)?;
            headers.retain(|(k, _): &(String, String)| !k.eq_ignore_ascii_case(n));
            headers.push((n.clone(), v));
        }
        Ok((path, headers))
    }

    fn path_on_target(&self, url: &str, ws: bool) -> Result<String, String> {
        let mut path = String::new();
        Ok(self.path_into(url, ws, &mut path)?.to_string())
    }

    /// [`Exec::path_on_target`] without copying a path that is the URL itself: the path
    /// is `url` or its tail, or is written into `scratch`.
    fn path_into<'s>(
        &self,
        url: &'s str,
        ws: bool,
        scratch: &'s mut String,
    ) -> Result<&'s str, String> {
        let target = &self.ctx.target;
        if url.starts_with('/') {
            let base = target.path.path().trim_end_matches('/');
            if base.is_empty() {
                return Ok(url);
            }
            scratch.clear();
            scratch.push_str(base);
            scratch.push_str(url);
            return Ok(scratch);
        }
        let rest = ["http://", "https://"]
            .iter()
            .chain(if ws { &["ws://", "wss://"][..] } else { &[] })
            .find_map(|s| url.strip_prefix(s))
            .ok_or_else(|| format!("`{url}` is not a URL on the target"))?;
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        if authority != target.authority.as_str() {
            return Err(format!(
                "`{url}` is on another host than the target ({}); one scenario loads one target",
                target.authority
            ));
        }
        Ok(if path.is_empty() { "/" } else { path })
    }

    async fn http(&mut self, step: &HttpStep) -> Next {
        let id = step.call.id;
        let vars = StepVars::new(&self.state.vars);
        let built = if self.trace.is_some() {
            // `volley check` shows what was sent: keep the parts.
            self.build_shown(step, &vars)
                .map(|(req, path, headers, body)| (Rc::new(req), path, headers, body))
        } else {
            self.build(step, &vars)
                .map(|req| (req, String::new(), Vec::new(), Vec::new()))
        };
        let (req, path, headers, body) = match built {
            Ok(b) => b,
            Err(e) => {
                return self.abandon(id, format!("{} {}", step.method, step.call.url.source()), e);
            }
        };
        self.sent += 1;
        let keep = step.reads_body() || self.trace.is_some();
        let mut capture = Capture::new(step.reads_headers() || self.trace.is_some());
        let timeout = self.timeout(&step.call);
        let in_flight = InFlight::new(&self.ctx.recorder, Some(id));
        let result = self
            .client
            .send_capture(
                &req,
                timeout,
                &self.ctx.buffers,
                keep.then_some(&mut capture),
            )
            .await;
        drop(req);
        in_flight.done();
        let queued = std::mem::take(&mut self.queued_us);
        let must_extract = !step.extract.is_empty();
        let (outcome, extracted, exchange) = match result {
            Err(f) => {
                let msg = f.message.clone();
                self.fail(id, f.kind, f.message);
                (Err(msg), Vec::new(), None)
            }
            Ok(mut ex) => {
                ex.queued_us = queued;
                let statuses = step
                    .check
                    .status
                    .as_ref()
                    .unwrap_or(&self.ctx.plan.expect_status);
                if !statuses.contains(ex.status) {
                    self.ctx
                        .recorder
                        .borrow_mut()
                        .record_exchange(Some(id), &ex, false);
                    (Err(format!("HTTP {}", ex.status)), Vec::new(), Some(ex))
                } else {
                    let view = ResponseView {
                        status: ex.status,
                        headers: &capture.headers,
                        body: &capture.body,
                    };
                    let render = |t: &Template| self.render(t, &vars);
                    match judge(&step.check, &step.extract, &view, &render) {
                        Ok(values) => {
                            self.ctx
                                .recorder
                                .borrow_mut()
                                .record_exchange(Some(id), &ex, true);
                            (Ok(()), values, Some(ex))
                        }
                        Err(e) => {
                            self.fail(id, ErrorKind::Check, e.clone());
                            (Err(e), Vec::new(), Some(ex))
                        }
                    }
                }
            }
        };
        let failed = outcome.is_err();
        if self.trace.is_some() {
            let shown: Vec<(String, String)> = extracted
                .iter()
                .map(|(k, v)| (k.clone(), v.to_string()))
                .collect();
            self.push_trace(Trace {
                step: self.step_name(id),
                request: format!("{} {}", step.method, self.ctx.target.url_of(&path, false)),
                request_headers: headers.clone(),
                request_body: excerpt(&body),
                status: exchange.map_or(0, |e| e.status),
                response_headers: capture.headers.clone(),
                response_body: excerpt(&capture.body),
                ttfb_ms: exchange.map_or(0.0, |e| e.ttfb_us as f64 / 1000.0),
                total_ms: exchange.map_or(0.0, |e| e.total_us as f64 / 1000.0),
                passed: !failed,
                outcome: outcome.err().unwrap_or_else(|| "ok".to_string()),
                extracted: shown,
            });
        }
        for (k, v) in extracted {
            self.state.vars.set(&k, v);
        }
        if failed && must_extract {
            return Next::EndIteration;
        }
        self.think(step.call.think_time.sample()).await;
        Next::Go
    }

    /// Step `step`'s request: built once for a step without templates, otherwise rendered
    /// into the worker's scratch buffers — the same bytes as [`Exec::build_shown`].
    fn build(&self, step: &HttpStep, vars: &StepVars<'_>) -> Result<Rc<PreparedRequest>, String> {
        let steps = &self.ctx.steps;
        if let Some(req) = steps.literal(step.call.id) {
            return Ok(req);
        }
        let templates = &self.scenario.templates;
        let mut scratch = steps.scratch();
        let Scratch {
            url, path, text, ..
        } = &mut *scratch;
        url.clear();
        templates
            .render_into(&step.call.url, vars, url)
            .map_err(String::from)?;
        let path = self.path_into(url, false, path)?;
        let mut headers: Vec<(String, String)> =
            Vec::with_capacity(self.scenario.headers.len() + step.call.headers.len() + 1);
        for (n, t) in self.scenario.headers.iter().chain(&step.call.headers) {
            let mut v = String::new();
            templates
                .render_into(t, vars, &mut v)
                .map_err(String::from)?;
            headers.retain(|(k, _)| !k.eq_ignore_ascii_case(n));
            headers.push((n.clone(), v));
        }
        let mut content_type = |ct: &str| {
            if !headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
            {
                headers.push(("Content-Type".into(), ct.into()));
            }
        };
        let body = match &step.body {
            Body::Empty => Vec::new(),
            Body::Raw(t) => {
                let mut out = String::new();
                templates
                    .render_into(t, vars, &mut out)
                    .map_err(String::from)?;
                out.into_bytes()
            }
            Body::Json(j) => {
                content_type("application/json");
                let mut out = Vec::with_capacity(128);
                j.write(templates, vars, text, &mut out)
                    .map_err(String::from)?;
                out
            }
            Body::Form(fields) => {
                content_type("application/x-www-form-urlencoded");
                let mut out = form_urlencoded::Serializer::new(String::new());
                for (k, t) in fields {
                    text.clear();
                    templates.render_into(t, vars, text).map_err(String::from)?;
                    out.append_pair(k, text);
                }
                out.finish().into_bytes()
            }
        };
        let req = if self.client.may_speak_h2() {
            PreparedRequest::build(&self.ctx.target, &step.method, path, &headers, body)?
        } else {
            PreparedRequest::build_h1(&self.ctx.target, &step.method, path, &headers, body)?
        };
        let req = Rc::new(req);
        if crate::steps::is_literal(step, &self.scenario.headers) {
            steps.keep(step.call.id, req.clone());
        }
        Ok(req)
    }

    /// Step `step`'s request with the path, headers and body it was built from.
    fn build_shown(&self, step: &HttpStep, vars: &dyn Vars) -> Result<Shown, String> {
        let (path, mut headers) = self.prepare(&step.call, vars, false)?;
        let body = self.body(&step.body, vars, &mut headers)?;
        let req = PreparedRequest::build(
            &self.ctx.target,
            &step.method,
            &path,
            &headers,
            body.clone(),
        )?;
        Ok((req, path, headers, body))
    }

    fn step_name(&self, id: usize) -> String {
        self.scenario
            .step_info
            .get(id)
            .map(|s| s.name.clone())
            .unwrap_or_default()
    }

    /// A step that could not be built (a template failed, a bad URL or header): nothing is
    /// sent, so it is no test — counted as `not_sent` — and the iteration ends.
    fn abandon(&mut self, id: usize, request: String, why: String) -> Next {
        let why = self.scenario.redact(&why);
        self.ctx
            .recorder
            .borrow_mut()
            .record_not_sent(id, why.clone());
        if self.not_sent.is_none() {
            self.not_sent = Some(format!("[{}] {why}", self.step_name(id)));
        }
        self.push_trace(Trace {
            step: self.step_name(id),
            request,
            outcome: why,
            ..Trace::default()
        });
        Next::EndIteration
    }

    /// Keeps `t` for `volley check`, with every secret masked.
    fn push_trace(&self, mut t: Trace) {
        let Some(trace) = self.trace else { return };
        let r = |s: &mut String| *s = self.scenario.redact(s);
        for s in [
            &mut t.request,
            &mut t.request_body,
            &mut t.response_body,
            &mut t.outcome,
        ] {
            r(s);
        }
        for (_, v) in t
            .request_headers
            .iter_mut()
            .chain(t.response_headers.iter_mut())
            .chain(t.extracted.iter_mut())
        {
            r(v);
        }
        trace.borrow_mut().push(t);
    }

    fn body(
        &self,
        body: &Body,
        vars: &dyn Vars,
        headers: &mut Vec<(String, String)>,
    ) -> Result<Vec<u8>, String> {
        let mut content_type = |ct: &str| {
            if !headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
            {
                headers.push(("Content-Type".into(), ct.into()));
            }
        };
        Ok(match body {
            Body::Empty => Vec::new(),
            Body::Raw(t) => self.render(t, vars)?.into_bytes(),
            Body::Json(j) => {
                content_type("application/json");
                serde_json::to_vec(&j.value(&self.scenario.templates, &vars.context())?)
                    .map_err(|e| e.to_string())?
            }
            Body::Form(fields) => {
                content_type("application/x-www-form-urlencoded");
                let mut out = form_urlencoded::Serializer::new(String::new());
                for (k, t) in fields {
                    out.append_pair(k, &self.render(t, vars)?);
                }
                out.finish().into_bytes()
            }
        })
    }

    async fn think(&self, pause: Duration) {
        if pause.is_zero() {
            return;
        }
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = self.ctx.shared.stop.cancelled() => {}
        }
    }

    /// Opens the stream and reads it in the background (or to its end with `wait`).
    async fn sse(&mut self, step: &SseStep) -> Next {
        let id = step.call.id;
        let shown;
        // The stream is made inside the expression that awaits or spawns it: what only
        // making it needs, and a future held in a local first (kept twice: the local and the
        // awaited copy), are then no part of this step's state while the stream is open.
        let (text, passed) = if step.wait {
            {
                let (stream, req);
                (stream, req, shown) = match self.sse_stream(step) {
                    Ok(made) => made,
                    Err(abandoned) => return abandoned,
                };
                stream.run(req)
            }
            .await
        } else {
            let (stream, req);
            (stream, req, shown) = match self.sse_stream(step) {
                Ok(made) => made,
                Err(abandoned) => return abandoned,
            };
            let pending = tokio::task::spawn_local(stream.run(req));
            self.background
                .push((pending, self.trace.map(|t| t.borrow().len())));
            (String::from("still open"), true)
        };
        if let Some((request, request_headers)) = shown {
            self.push_trace(Trace {
                step: self.step_name(id),
                request,
                request_headers,
                outcome: text,
                passed,
                ..Trace::default()
            });
        }
        self.think(step.call.think_time.sample()).await;
        Next::Go
    }

    /// The SSE step rendered for this iteration: the stream, its request, and what `volley
    /// check` shows of it (made only when shown: a held stream keeps nothing it does not read
    /// with). When it cannot be rendered, the step is abandoned: the error is what comes next.
    #[allow(clippy::type_complexity)]
    fn sse_stream(
        &mut self,
        step: &SseStep,
    ) -> Result<
        (
            SseStream,
            PreparedRequest,
            Option<(String, Vec<(String, String)>)>,
        ),
        Next,
    > {
        let vars = StepVars::new(&self.state.vars);
        let rendered = self
            .prepare(&step.call, &vars, false)
            .and_then(|(path, mut headers)| {
                headers.retain(|(k, _)| {
                    !k.eq_ignore_ascii_case("accept") && !k.eq_ignore_ascii_case("cache-control")
                });
                headers.push(("Accept".into(), "text/event-stream".into()));
                headers.push(("Cache-Control".into(), "no-cache".into()));
                // Only the HTTP/1.1 bytes: the stream has a connection of its own, which speaks 1.1.
                let req =
                    PreparedRequest::build_h1(&self.ctx.target, "GET", &path, &headers, Vec::new())
                        .map_err(String::from)?;
                Ok((path, headers, req))
            });
        let (path, headers, req) = match rendered {
            Ok(r) => r,
            Err(e) => {
                return Err(self.abandon(
                    step.call.id,
                    format!("SSE {}", step.call.url.source()),
                    e,
                ));
            }
        };
        self.sent += 1;
        let shown = self.trace.map(|_| {
            (
                format!("SSE {}", self.ctx.target.url_of(&path, false)),
                headers,
            )
        });
        let stream = SseStream {
            ctx: self.ctx.clone(),
            id: step.call.id,
            want: step.events,
            limit: step.call.timeout,
            open_timeout: self.timeout(&step.call),
            stop: self
                .streams
                .get_or_init(|| self.ctx.shared.abort.child_token())
                .clone(),
            redact: self.scenario.clone(),
        };
        Ok((stream, req, shown))
    }

    async fn websocket(&mut self, step: &WsStep) -> Next {
        let id = step.call.id;
        let shown;
        // The call is rendered in a function of its own and made inside the argument: what
        // only rendering needs, and the call itself once moved, are then no part of this
        // step's state while the socket is held.
        let (outcome, status, received, ttfb_ms, total_ms) = match crate::ws::exchange(self.ctx, {
            let call = match self.ws_call(step) {
                Ok(call) => call,
                Err(e) => return self.abandon(id, format!("WS {}", step.call.url.source()), e),
            };
            self.sent += 1;
            // What `volley check` shows of the request, made only when shown: the path,
            // headers and messages go into the exchange, which frees them once they are sent.
            shown = self.trace.map(|_| {
                (
                    format!("WS {}", self.ctx.target.url_of(&call.path, true)),
                    call.send.join(" | "),
                    call.headers.clone(),
                )
            });
            call
        })
        .await
        {
            Ok(done) => {
                let mut rec = self.ctx.recorder.borrow_mut();
                rec.record_events(id, done.messages);
                rec.record_exchange(Some(id), &done.exchange, true);
                (
                    "ok".to_string(),
                    101,
                    done.matched,
                    done.exchange.ttfb_us as f64 / 1000.0,
                    done.exchange.total_us as f64 / 1000.0,
                )
            }
            Err((f, messages)) => {
                self.ctx.recorder.borrow_mut().record_events(id, messages);
                let msg = f.message.clone();
                self.fail(id, f.kind, f.message);
                (msg, 0, String::new(), 0.0, 0.0)
            }
        };
        if let Some((request, request_body, request_headers)) = shown {
            self.push_trace(Trace {
                step: self.step_name(id),
                request,
                request_body,
                request_headers,
                status,
                response_body: excerpt(received.as_bytes()),
                ttfb_ms,
                total_ms,
                passed: outcome == "ok",
                outcome,
                ..Trace::default()
            });
        }
        self.think(step.call.think_time.sample()).await;
        Next::Go
    }

    /// The WebSocket step rendered for this iteration.
    fn ws_call(&self, step: &WsStep) -> Result<crate::ws::WsCall, String> {
        let vars = StepVars::new(&self.state.vars);
        let (path, headers) = self.prepare(&step.call, &vars, true)?;
        let send = step
            .send
            .iter()
            .map(|t| self.render(t, &vars))
            .collect::<Result<Vec<_>, _>>()?;
        let expect = step
            .expect
            .as_ref()
            .map(|t| self.render(t, &vars))
            .transpose()?;
        Ok(crate::ws::WsCall {
            path,
            headers,
            send,
            expect,
            timeout: self.timeout(&step.call),
        })
    }
}

impl<'a> Exec<'a> {
    /// Calls a gRPC method on the VU's (or the shared) HTTP/2 connection.
    async fn grpc(&mut self, step: &GrpcStep) -> Next {
        let id = step.call.id;
        let vars = StepVars::new(&self.state.vars);
        let what = format!("GRPC {}", step.full_method());
        let Some(method) = step.schema.get() else {
            return self.abandon(
                id,
                what,
                "the method's descriptor is unknown (no `proto`, and reflection was not asked)"
                    .into(),
            );
        };
        let built = (|| {
            let mut headers: Vec<(String, String)> = Vec::new();
            for (n, t) in self.scenario.headers.iter().chain(&step.call.headers) {
                let v = self.render(t, &vars)?;
                headers.retain(|(k, _)| !k.eq_ignore_ascii_case(n));
                headers.push((n.clone(), v));
            }
            let json = step
                .message
                .value(&self.scenario.templates, &vars.context())?;
            let message = crate::grpc::request(method, &json)?;
            Ok::<_, String>((headers, json, message))
        })();
        let (headers, json, message) = match built {
            Ok(b) => b,
            Err(e) => return self.abandon(id, what, e),
        };
        self.sent += 1;
        let keep = !step.extract.is_empty() || step.check.reads_body() || self.trace.is_some();
        let spec = crate::grpc::CallSpec {
            method,
            message,
            metadata: &headers,
            want: step.messages,
            timeout: self.timeout(&step.call),
            keep,
        };
        let channel = self.ctx.grpc.channel(self.state.vu);
        let in_flight = InFlight::new(&self.ctx.recorder, Some(id));
        let recorder = self.ctx.recorder.clone();
        let result = crate::grpc::call(channel, spec, &mut || {
            recorder.borrow_mut().record_events(id, 1)
        })
        .await;
        in_flight.done();
        let queued = std::mem::take(&mut self.queued_us);
        let (outcome, extracted, called) = match result {
            Err((f, _)) => {
                let msg = f.message.clone();
                self.fail(id, f.kind, f.message);
                (Err(msg), Vec::new(), None)
            }
            Ok(mut done) => {
                done.exchange.queued_us = queued;
                let view = ResponseView {
                    status: 200,
                    headers: &done.headers,
                    body: &done.body,
                };
                let render = |t: &Template| self.render(t, &vars);
                match judge(&step.check, &step.extract, &view, &render) {
                    Ok(values) => {
                        self.ctx.recorder.borrow_mut().record_exchange(
                            Some(id),
                            &done.exchange,
                            true,
                        );
                        (Ok(()), values, Some(done))
                    }
                    Err(e) => {
                        self.fail(id, ErrorKind::Check, e.clone());
                        (Err(e), Vec::new(), Some(done))
                    }
                }
            }
        };
        let failed = outcome.is_err();
        if self.trace.is_some() {
            let shown: Vec<(String, String)> = extracted
                .iter()
                .map(|(k, v)| (k.clone(), v.to_string()))
                .collect();
            let scheme = if self.ctx.target.tls { "https" } else { "http" };
            self.push_trace(Trace {
                step: self.step_name(id),
                request: format!(
                    "GRPC {scheme}://{}/{}",
                    self.ctx.target.authority,
                    step.full_method()
                ),
                request_headers: headers,
                request_body: excerpt(json.to_string().as_bytes()),
                status: called.as_ref().map_or(0, |c| c.exchange.status),
                response_headers: called
                    .as_ref()
                    .map(|c| c.headers.clone())
                    .unwrap_or_default(),
                response_body: called
                    .as_ref()
                    .map(|c| excerpt(&c.body))
                    .unwrap_or_default(),
                ttfb_ms: called
                    .as_ref()
                    .map_or(0.0, |c| c.exchange.ttfb_us as f64 / 1000.0),
                total_ms: called
                    .as_ref()
                    .map_or(0.0, |c| c.exchange.total_us as f64 / 1000.0),
                passed: !failed,
                outcome: match (&outcome, &called) {
                    (Ok(()), Some(c)) if method.is_server_streaming() => {
                        format!("OK: {} messages", c.messages)
                    }
                    (Ok(()), _) => "OK".to_string(),
                    (Err(e), _) => e.clone(),
                },
                extracted: shown,
            });
        }
        for (k, v) in extracted {
            self.state.vars.set(&k, v);
        }
        if failed && !step.extract.is_empty() {
            return Next::EndIteration;
        }
        self.think(step.call.think_time.sample()).await;
        Next::Go
    }
}

/// Checks, then extractions; the values to set, or what failed.
fn judge(
    check: &Check,
    extract: &[Extract],
    view: &ResponseView<'_>,
    render: &dyn Fn(&Template) -> Result<String, String>,
) -> Result<Vec<(String, Value)>, String> {
    let mut json = None;
    let render = |t: &Template| render(t).map_err(PlanError);
    check.judge(view, &mut json, &render)?;
    let values = extract.iter().map(|e| {
        e.apply(view, &mut json)
            .map(|v| (e.var.clone(), Value::from(Serde(v))))
    });
    Ok(values.collect::<Result<_, PlanError>>()?)
}

/// The start of a body, as text.
fn excerpt(body: &[u8]) -> String {
    const MAX: usize = 400;
    let text = String::from_utf8_lossy(&body[..body.len().min(MAX)]).into_owned();
    if body.len() > MAX {
        format!("{text}… ({} bytes)", body.len())
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    //! A step's request rendered into the worker's buffers (and, without templates, built
    //! once) is byte for byte the request built from the step's rendered parts — with every
    //! expression rendered by minijinja itself, as every request was before.

    use std::path::Path;

    use volley_scenario::Settings;

    use super::*;
    use crate::context::Shared;
    use crate::recorder::Recorder;
    use crate::target::Target;

    const SCENARIO: &str = r#"
target: http://127.0.0.1:9/base/
headers:
  Accept: "*/*"
  X-Fixed: same
variables:
  who: "user{{ vu }}"
steps:
  - name: literal
    request: GET /health
    extract:
      token: $.token
      obj: $.obj
  - name: literal json
    request: POST /items
    json: { b: [1, 2.5, null, { y: "z" }], a: "x\"y", c: true }
  - name: login
    request: POST /login
    json: { user: "user{{ vu }}", password: secret, n: "{{ iteration }}", m: "{{ obj }}", s: "{{ obj.name | upper }}", e: "{{ obj.list }}" }
  - name: items
    request: GET http://127.0.0.1:9/items/{{ token }}?q={{ who | urlencode }}&i={{ iteration + 1 }}
    headers:
      Authorization: "Token {{ token }}"
      accept: application/json
  - name: form
    request: PUT /form/{{ obj.id }}
    form: { a: "{{ who }} & co", b: plain, c: "{{ obj.name }}" }
  - name: raw
    request: PATCH /raw
    headers: { Content-Type: text/plain }
    body: "{% if iteration > 1 %}late{% else %}early{% endif %} {{ token }} {{ obj }}"
"#;

    /// A context as the run gives a VU, a scenario step table and one VU's variables.
    fn setup() -> (Rc<WorkerContext>, Arc<Scenario>, FlowState) {
        let scenario =
            volley_scenario::parse_scenario(Path::new("t.yaml"), SCENARIO, &|_| None).unwrap();
        let url = "http://127.0.0.1:9/base/";
        let target = Target::resolve(url).unwrap();
        let scenario = Arc::new(scenario);
        let mut load = volley_scenario::LoadSpec::default();
        load.set("vus", "1").unwrap();
        load.set("duration", "1s").unwrap();
        let plan = Settings {
            load,
            ..Settings::default()
        }
        .plan(volley_scenario::Work::Scenario(scenario.clone()))
        .unwrap();
        let grpc = crate::grpc::Channels::new(
            &target,
            &None,
            &scenario.steps,
            None,
            volley_scenario::Segment::WHOLE,
            0,
            1,
        );
        let ctx = Rc::new(WorkerContext {
            shared: Arc::new(Shared::new(0, 1)),
            request: None,
            plan: Arc::new(plan),
            target: Rc::new(target),
            tls: None,
            stream_tls: None,
            force_h2: false,
            recorder: Rc::new(RefCell::new(Recorder::new(
                Instant::now(),
                Duration::from_secs(3600),
                false,
                Arc::from(Vec::new()),
            ))),
            buffers: Default::default(),
            steps: Default::default(),
            pool: None,
            grpc,
        });
        let mut state = FlowState::new(7);
        state.vars.set("vu", Value::from(7));
        state.vars.set("iteration", Value::from(3));
        state.vars.set("token", Value::from("t0k3n-42"));
        state.vars.set("who", Value::from("user7"));
        let obj =
            serde_json::json!({"id": 42, "name": "Kim <Lee>", "list": [1, "two", {"k": null}]});
        state.vars.set("obj", Value::from(Serde(obj)));
        (ctx, scenario, state)
    }

    /// Variables that minijinja renders every expression of, as before direct look-ups.
    struct MinijinjaOnly(Value);

    impl Vars for MinijinjaOnly {
        fn get(&self, _: &str) -> Option<Value> {
            None
        }

        fn context(&self) -> Value {
            self.0.clone()
        }
    }

    #[test]
    fn rendered_requests_are_the_bytes_minijinja_renders() {
        let (ctx, scenario, mut state) = setup();
        let mut client = Client::new(ctx.target.clone(), None, false);
        let streams = OnceCell::new();
        let steps: Vec<&HttpStep> = scenario
            .steps
            .iter()
            .map(|n| match n {
                Node::Http(s) => s,
                _ => unreachable!("the scenario has HTTP steps only"),
            })
            .collect();
        assert_eq!(steps.len(), 6);
        let exec = Exec {
            ctx: &ctx,
            scenario: &scenario,
            client: &mut client,
            state: &mut state,
            queued_us: 0,
            streams: &streams,
            background: Vec::new(),
            trace: None,
            sent: 0,
            not_sent: None,
        };
        let reference = MinijinjaOnly(context(&exec.state.vars));
        for round in 0..2 {
            for step in &steps {
                let vars = StepVars::new(&exec.state.vars);
                let fast = exec.build(step, &vars).unwrap();
                let (shown, ..) = exec.build_shown(step, &reference).unwrap();
                assert_eq!(
                    String::from_utf8_lossy(fast.h1_bytes()),
                    String::from_utf8_lossy(shown.h1_bytes()),
                    "round {round}, step {:?}",
                    step.call.url.source()
                );
            }
        }
        // The two steps without a template were built once and shared; the others never.
        let cached: Vec<bool> = steps
            .iter()
            .map(|s| exec.ctx.steps.literal(s.call.id).is_some())
            .collect();
        assert_eq!(cached, [true, true, false, false, false, false]);
        let vars = StepVars::new(&exec.state.vars);
        assert!(Rc::ptr_eq(
            &exec.build(steps[0], &vars).unwrap(),
            &exec.build(steps[0], &vars).unwrap()
        ));
        // The request line and a header show what was rendered.
        let items =
            String::from_utf8(exec.build(steps[3], &vars).unwrap().h1_bytes().to_vec()).unwrap();
        assert!(
            items.starts_with("GET /items/t0k3n-42?q=user7&i=4 HTTP/1.1\r\n"),
            "{items}"
        );
        assert!(
            items.contains("\r\nauthorization: Token t0k3n-42\r\n"),
            "{items}"
        );
        assert!(
            items.contains("\r\naccept: application/json\r\n") && !items.contains("*/*"),
            "a step's header replaces the scenario's: {items}"
        );
    }
}
