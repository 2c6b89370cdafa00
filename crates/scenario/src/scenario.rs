//! A scenario as the engine runs it: compiled templates, parsed extractors and checks,
//! every step numbered for its own row of metrics.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::data::Feeder;
use crate::extract::{Check, Extract};
use crate::json::JsonTemplate;
use crate::plan::Settings;
use crate::template::{Template, Templates};

/// A loaded, validated scenario file.
#[derive(Debug)]
pub struct Scenario {
    /// The file it came from.
    pub file: PathBuf,
    /// Its run settings: `target` (the base URL every relative step URL is joined to),
    /// `name`, `load`, `timeout`, `warmup`, `expect_status` and `thresholds` (overall or per
    /// step); the command line may override them ([`Settings::merge`]).
    pub settings: Settings,
    /// Headers of every request.
    pub headers: Vec<(String, Template)>,
    /// VU variables set at the start of every VU.
    pub variables: Vec<(String, Template)>,
    /// CSV feeders; each iteration takes a row of each.
    pub data: Vec<Arc<Feeder>>,
    /// The flow of one iteration.
    pub steps: Vec<Node>,
    /// Every metric-bearing step, by id (its position here).
    pub step_info: Vec<StepInfo>,
    /// The compiled templates.
    pub templates: Templates,
    /// Environment variables the templates read (`env.NAME`), with their values.
    pub env: Vec<(String, String)>,
    /// [`Scenario::secrets`], worked out on first use.
    pub(crate) masks: std::sync::OnceLock<Vec<String>>,
    /// The file's `scenarios:`: populations run side by side, each a scenario of its own
    /// (empty for a file with one flow). With populations, this scenario has no steps of its
    /// own: its settings are the run's (target, name, warm-up, the total's thresholds) and
    /// its `step_info` lists every population's steps, qualified (`readers/read messages`).
    pub populations: Vec<Population>,
    /// The file's `slo:`: the service level `volley capacity` searches under.
    pub slo: Vec<crate::Threshold>,
    /// The file's `kube:`: the Kubernetes workloads watched beside the load, each as `--kube`
    /// takes it (checked by the command that runs it: `--kube` given replaces them).
    pub kube: Vec<String>,
    /// The file's `kube_context:` (`--kube-context` given wins).
    pub kube_context: Option<String>,
}

/// One named scenario of a file's `scenarios:`: a population of users with its own load,
/// start offset and flow, run beside the others.
#[derive(Debug)]
pub struct Population {
    /// Its name (letters, digits, `_`, `-`).
    pub name: String,
    /// When it starts, from the start of the run.
    pub start: Duration,
    /// Its flow and settings: `settings.load` (over the file's `load` defaults),
    /// `settings.thresholds` (its own, each with `population` set), headers, variables
    /// and data (the file's, with its own added).
    pub scenario: Arc<Scenario>,
}

/// How a population's step is named among the run's steps: `readers/read messages`.
pub fn qualified_step(population: &str, step: &str) -> String {
    format!("{population}/{step}")
}

impl Scenario {
    /// The base URL every relative step URL is joined to.
    pub fn target(&self) -> &str {
        self.settings.target.as_deref().unwrap_or_default()
    }

    /// Values that must never appear in output: those of the environment variables read,
    /// and every form a template filter turns them into (case changes, URL, JSON and HTML
    /// encoding, reversal), longest first.
    pub fn secrets(&self) -> &[String] {
        self.masks
            .get_or_init(|| secret_forms(self.env.iter().map(|(_, v)| v.as_str())))
    }

    /// Narrows the CSV feeders to segment `seg`'s rows ([`Feeder::for_segment`]).
    pub fn for_segment(&mut self, seg: crate::Segment) -> Result<(), crate::Error> {
        for d in &mut self.data {
            *d = Arc::new(d.for_segment(seg)?);
        }
        for p in &mut self.populations {
            let name = p.name.clone();
            Arc::get_mut(&mut p.scenario)
                .ok_or_else(|| {
                    crate::Error::value(format!(
                        "scenario `{name}` is already running; narrow it to a segment before"
                    ))
                })?
                .for_segment(seg)?;
        }
        Ok(())
    }

    /// Replaces every secret, in any of its forms, in `text` by `***`.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in self.secrets() {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), "***");
            }
        }
        out
    }
}

/// Filters whose output still carries a value recognisably (so it is masked too).
const MASKED_FILTERS: [&str; 9] = [
    "upper",
    "lower",
    "title",
    "capitalize",
    "reverse",
    "urlencode",
    "tojson",
    "escape",
    "trim",
];

/// `values` and what each [`MASKED_FILTERS`] filter makes of them, as a template would
/// render them; values shorter than 3 characters are not masked (they would mask noise).
fn secret_forms<'a>(values: impl Iterator<Item = &'a str>) -> Vec<String> {
    let env = minijinja::Environment::new();
    let mut forms = std::collections::BTreeSet::new();
    for v in values.filter(|v| v.len() >= 3) {
        forms.insert(v.to_string());
        for f in MASKED_FILTERS {
            let Ok(out) = env.render_str(
                &format!("{{{{ s | {f} }}}}"),
                minijinja::context! { s => v },
            ) else {
                continue;
            };
            let out = if f == "tojson" {
                out.trim_matches('"').to_string()
            } else {
                out
            };
            if out.len() >= 3 {
                forms.insert(out);
            }
        }
        // `application/x-www-form-urlencoded`, as form bodies are sent.
        forms.insert(form_urlencoded::byte_serialize(v.as_bytes()).collect());
    }
    let mut forms: Vec<String> = forms.into_iter().collect();
    forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
    forms
}

/// What kind of step produced a row of metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepKind {
    /// An HTTP request.
    Http,
    /// A server-sent event stream.
    Sse,
    /// A WebSocket exchange.
    WebSocket,
    /// A gRPC call.
    Grpc,
}

impl StepKind {
    /// The word for it in run.json and reports (as serialized).
    pub fn name(self) -> &'static str {
        match self {
            StepKind::Http => "http",
            StepKind::Sse => "sse",
            StepKind::WebSocket => "websocket",
            StepKind::Grpc => "grpc",
        }
    }
}

/// A step's name and kind, for run.json and reports.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct StepInfo {
    /// Unique within the scenario.
    pub name: String,
    /// Its kind.
    pub kind: StepKind,
}

/// One node of the flow.
#[derive(Debug)]
pub enum Node {
    /// An HTTP request.
    Http(HttpStep),
    /// Open an event stream.
    Sse(SseStep),
    /// Talk over a WebSocket.
    WebSocket(WsStep),
    /// Call a gRPC method.
    Grpc(GrpcStep),
    /// Steps run `repeat` times.
    Group(Group),
    /// One branch, picked at random by weight each time the flow reaches it.
    OneOf(Vec<Branch>),
}

/// A weighted branch of [`Node::OneOf`].
#[derive(Debug)]
pub struct Branch {
    /// Its name (for messages).
    pub name: Option<String>,
    /// Relative weight (at least 1).
    pub weight: u32,
    /// The steps.
    pub steps: Vec<Node>,
}

/// Picks a branch index by weight, given a uniform number in `0..total weight`.
pub fn pick_branch(branches: &[Branch], mut roll: u64) -> usize {
    for (i, b) in branches.iter().enumerate() {
        if roll < u64::from(b.weight) {
            return i;
        }
        roll -= u64::from(b.weight);
    }
    branches.len().saturating_sub(1)
}

/// A group of steps, possibly repeated.
#[derive(Debug)]
pub struct Group {
    /// Its name (for messages).
    pub name: Option<String>,
    /// How many times its steps run per iteration.
    pub repeat: u64,
    /// The steps.
    pub steps: Vec<Node>,
}

/// Request parts every kind of step shares.
#[derive(Debug)]
pub struct Call {
    /// Index into [`Scenario::step_info`].
    pub id: usize,
    /// URL, relative to the target or absolute on the target's origin.
    pub url: Template,
    /// Headers of this step (added to the scenario's).
    pub headers: Vec<(String, Template)>,
    /// Pause after the step.
    pub think_time: Pause,
    /// Overrides the scenario's timeout.
    pub timeout: Option<Duration>,
}

/// A pause: fixed, or uniformly random between two bounds (`1s..3s`, as Locust's
/// `between`, JMeter's uniform random timer and Gatling's `pause(min, max)`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Pause {
    /// Shortest.
    pub min: Duration,
    /// Longest.
    pub max: Duration,
}

impl Pause {
    /// Parses `500ms` or `1s..3s`.
    pub fn parse(s: &str) -> Result<Pause, crate::Error> {
        let (a, b) = s.split_once("..").unwrap_or((s, s));
        let min = crate::parse_duration(a)?;
        let max = crate::parse_duration(b)?;
        if max < min {
            return Err(crate::Error::value(format!(
                "`{s}`: the longer pause comes second, e.g. 1s..3s"
            )));
        }
        Ok(Pause { min, max })
    }

    /// One pause.
    pub fn sample(&self) -> Duration {
        if self.max <= self.min {
            return self.min;
        }
        let span = (self.max - self.min).as_nanos() as u64;
        self.min + Duration::from_nanos(fastrand::u64(..=span))
    }
}

/// An HTTP request step.
#[derive(Debug)]
pub struct HttpStep {
    /// URL, headers and timings.
    pub call: Call,
    /// Upper-case method.
    pub method: String,
    /// The body.
    pub body: Body,
    /// VU variables set from the response.
    pub extract: Vec<Extract>,
    /// What the response must satisfy.
    pub check: Check,
}

impl HttpStep {
    /// Whether the body must be kept for extraction or checks.
    pub fn reads_body(&self) -> bool {
        !self.extract.is_empty() || self.check.reads_body()
    }

    /// Whether a response header is read (an `extract` from a header).
    pub fn reads_headers(&self) -> bool {
        self.extract
            .iter()
            .any(|e| matches!(e.source, crate::extract::Source::Header(_)))
    }
}

/// A request body.
#[derive(Debug)]
pub enum Body {
    /// None.
    Empty,
    /// Text as written (templated).
    Raw(Template),
    /// JSON, every string templated; sent with `Content-Type: application/json`.
    Json(JsonTemplate),
    /// `application/x-www-form-urlencoded` fields.
    Form(Vec<(String, Template)>),
}

/// Open a server-sent event stream: it is read in the background while later steps run,
/// until `events` arrived, `timeout` passed, or the iteration ends.
#[derive(Debug)]
pub struct SseStep {
    /// URL, headers and timings.
    pub call: Call,
    /// Close after this many events.
    pub events: Option<u64>,
    /// Wait for the stream to close before the next step.
    pub wait: bool,
}

/// Connect a WebSocket, send messages, wait for a matching one, close.
#[derive(Debug)]
pub struct WsStep {
    /// URL (`ws://`, `wss://`, or relative to the target), headers and timings.
    pub call: Call,
    /// Text messages sent after connecting, in order.
    pub send: Vec<Template>,
    /// Text the awaited message must contain (any message when absent).
    pub expect: Option<Template>,
}

/// Call a gRPC method, unary or server-streaming, over HTTP/2 to the target (h2c on
/// http://, TLS with ALPN h2 on https://). The request is written as JSON (every string a
/// template); the response is read as JSON for `extract` and `check` (a stream's messages
/// as a JSON array). A status other than OK fails the step with the code as its error kind.
#[derive(Debug)]
pub struct GrpcStep {
    /// Its id, `/package.Service/Method` as the URL, metadata as headers, and timings.
    pub call: Call,
    /// `package.Service`.
    pub service: String,
    /// `Method`.
    pub method: String,
    /// The .proto files given (resolved paths), empty to ask the server by reflection.
    pub protos: Vec<PathBuf>,
    /// The method's descriptor: from `protos` when the file is loaded, or set once by
    /// reflection when the run starts.
    pub schema: std::sync::OnceLock<crate::grpc::MethodDescriptor>,
    /// The request message.
    pub message: JsonTemplate,
    /// Server streaming: close after this many messages.
    pub messages: Option<u64>,
    /// HTTP/2 connections shared by all VUs for gRPC calls (per run; `None`: one per VU).
    pub connections: Option<u64>,
    /// VU variables set from the response.
    pub extract: Vec<Extract>,
    /// What the response must satisfy (JSON and metadata; not an HTTP status).
    pub check: Check,
}

impl GrpcStep {
    /// `package.Service/Method`.
    pub fn full_method(&self) -> String {
        format!("{}/{}", self.service, self.method)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_masked_in_every_form_a_filter_yields() {
        let forms = secret_forms(["p@ss word/ä\"x", "ab"].into_iter());
        for f in [
            "p@ss word/ä\"x",
            "P@SS WORD/Ä\"X",
            "p@ss word/ä\\\"x",
            "p%40ss%20word/%C3%A4%22x",
            "p%40ss+word%2F%C3%A4%22x",
            "x\"ä/drow ss@p",
            "p@ss word&#x2f;ä&quot;x",
        ] {
            assert!(forms.iter().any(|g| g == f), "{f} not in {forms:?}");
        }
        assert!(!forms.iter().any(|g| g == "ab"), "too short to mask");
        assert!(
            forms.windows(2).all(|w| w[0].len() >= w[1].len()),
            "longest first"
        );
    }

    #[test]
    fn pauses_fixed_and_random() {
        let fixed = Pause::parse("250ms").unwrap();
        assert_eq!(fixed.sample(), Duration::from_millis(250));
        let r = Pause::parse("1s..3s").unwrap();
        let samples: Vec<Duration> = (0..200).map(|_| r.sample()).collect();
        assert!(
            samples
                .iter()
                .all(|d| (Duration::from_secs(1)..=Duration::from_secs(3)).contains(d))
        );
        assert!(
            samples.iter().any(|d| *d < Duration::from_millis(1500))
                && samples.iter().any(|d| *d > Duration::from_millis(2500))
        );
        assert!(
            Pause::parse("3s..1s")
                .unwrap_err()
                .to_string()
                .contains("comes second")
        );
        assert!(Pause::parse("soon..1s").is_err());
    }

    #[test]
    fn a_json_body_is_written_as_serializing_its_value_would() {
        let mut t = Templates::new();
        let mut text = |s: &str| JsonTemplate::Text(t.compile_value(s).unwrap().0);
        let leaf_s = text("user{{ vu }}");
        let leaf_n = text("{{ iteration }}");
        let leaf_m = text("{{ extracted }}");
        let leaf_x = text("{{ vu * 2 }}");
        let (miss_1, miss_2) = (
            text("a {{ first_missing }}"),
            text("b {{ second_missing }}"),
        );
        let body = JsonTemplate::Object(vec![
            ("user".into(), leaf_s),
            (
                "password".into(),
                JsonTemplate::Fixed(serde_json::json!("se\"cret")),
            ),
            ("n".into(), leaf_n),
            (
                "nested".into(),
                JsonTemplate::Array(vec![
                    leaf_m,
                    JsonTemplate::Fixed(serde_json::json!({"b": 1, "a": [1.5, null]})),
                    leaf_x,
                ]),
            ),
            (
                "n".into(),
                JsonTemplate::Fixed(serde_json::json!("the last of a repeated key wins")),
            ),
            (
                "a sorted object".into(),
                JsonTemplate::Object(vec![
                    ("a".into(), JsonTemplate::Fixed(1.into())),
                    ("b".into(), JsonTemplate::Array(vec![])),
                ]),
            ),
            ("empty".into(), JsonTemplate::Object(vec![])),
        ]);
        let extracted = minijinja::Value::from(minijinja::value::Serde(
            serde_json::json!({"z": [1], "id": "x"}),
        ));
        let ctx = minijinja::context! { vu => 3, iteration => 9, extracted => extracted };
        let expected = serde_json::to_vec(&body.value(&t, &ctx).unwrap()).unwrap();
        let (mut scratch, mut out) = (String::new(), Vec::new());
        body.write(&t, &ctx, &mut scratch, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            String::from_utf8(expected).unwrap()
        );
        // A failure names the first failing field in file order, as building the value does.
        let failing = JsonTemplate::Object(vec![("z".into(), miss_1), ("a".into(), miss_2)]);
        let e = failing
            .write(&t, &ctx, &mut scratch, &mut Vec::new())
            .unwrap_err();
        assert_eq!(e, failing.value(&t, &ctx).unwrap_err());
        assert!(e.to_string().contains("first_missing"), "{e}");
    }
}
