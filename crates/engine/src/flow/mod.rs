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
use volley_scenario::Scenario;
use volley_scenario::extract::ResponseView;
use volley_scenario::extract::{Check, Extract};
use volley_scenario::scenario::{Body, Call, GrpcStep, HttpStep, Node, SseStep, WsStep};
use volley_scenario::template::{Template, Vars};
use volley_stats::ErrorKind;

use crate::client::{Capture, Client, PreparedRequest};
use crate::connection::Speaks;
use crate::context::WorkerContext;
use crate::failure::Failure;
use crate::recorder::InFlight;
use crate::sse::SseStream;
use crate::steps::Scratch;
use crate::vars::VuVars;

mod grpc;
mod http;
mod sse;
mod ws;

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

    async fn think(&self, pause: Duration) {
        if pause.is_zero() {
            return;
        }
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = self.ctx.shared.stop.cancelled() => {}
        }
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
    let render = |t: &Template| render(t).map_err(volley_scenario::Error::from);
    check.judge(view, &mut json, &render)?;
    let values = extract.iter().map(|e| {
        e.apply(view, &mut json)
            .map(|v| (e.var.clone(), Value::from(Serde(v))))
    });
    Ok(values.collect::<Result<_, volley_scenario::Error>>()?)
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

    /// The reference the renderer is held to: every template through minijinja alone, a JSON
    /// body as serde_json writes minijinja's value of it.
    fn reference_request(exec: &Exec<'_>, step: &HttpStep, vars: &dyn Vars) -> PreparedRequest {
        let (path, mut headers) = exec.prepare(&step.call, vars, false).unwrap();
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
            Body::Raw(t) => exec.render(t, vars).unwrap().into_bytes(),
            Body::Json(j) => {
                content_type("application/json");
                let value = j.value(&exec.scenario.templates, &vars.context()).unwrap();
                serde_json::to_vec(&value).unwrap()
            }
            Body::Form(fields) => {
                content_type("application/x-www-form-urlencoded");
                let mut out = form_urlencoded::Serializer::new(String::new());
                for (k, t) in fields {
                    out.append_pair(k, &exec.render(t, vars).unwrap());
                }
                out.finish().into_bytes()
            }
        };
        let speaks = crate::connection::Speaks::Either;
        PreparedRequest::build(
            &exec.ctx.target,
            speaks,
            &step.method,
            &path,
            &headers,
            body,
        )
        .unwrap()
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
                let slow = reference_request(&exec, step, &reference);
                assert_eq!(
                    String::from_utf8_lossy(fast.h1_bytes()),
                    String::from_utf8_lossy(slow.h1_bytes()),
                    "round {round}, step {:?}",
                    step.call.url.source()
                );
                // `volley check` shows what the one renderer renders.
                let (shown, ..) = exec.build_shown(step, &vars).unwrap();
                assert_eq!(fast.h1_bytes(), shown.h1_bytes());
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
