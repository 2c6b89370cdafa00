//! JUnit XML, the test-report format every CI system reads (Jenkins, GitLab, GitHub Actions
//! through test-reporter actions, Azure, CircleCI): a run's thresholds, a gate's figures and
//! `volley check`'s requests as test cases, so a failed performance check shows up in the CI's
//! test view with the figures that failed it.
//!
//! The layout satisfies both schemas CI tools validate against: the Apache Ant schema
//! (windyroad/JUnit-Schema: `package` and `id` on each suite, `properties`, `system-out` and
//! `system-err` always present, a time stamp without zone) and Jenkins' xunit `junit-10.xsd`
//! (times with at most three decimals). Both are fixtures of the tests.

use minijinja::value::Serde;
use minijinja::{Environment, Value, context};
use serde::Serialize;
use volley_formats::numfmt::fixed2;

use crate::gate::{GateResult, Outcome};
use crate::model::RunReport;

/// One test suite: a run, a before/after table of a gate, or a `volley check`.
#[derive(Debug, Clone, Serialize)]
pub struct Suite {
    /// Its name (the run's name, `A → B`, the scenario file).
    pub name: String,
    /// When it ran, RFC 3339 (written without zone and fraction, as the Ant schema requires).
    pub timestamp: String,
    /// The machine it ran on.
    pub hostname: String,
    /// How long it took, s.
    pub time_s: f64,
    /// Name/value pairs shown with the suite (source, status, headline figures).
    pub properties: Vec<(String, String)>,
    /// The test cases.
    pub cases: Vec<Case>,
    /// Text shown as the suite's standard output (the report or comparison table).
    pub system_out: String,
}

/// One test case.
#[derive(Debug, Clone, Serialize)]
pub struct Case {
    /// What was tested (`ttfb p99 < 500ms`, `TTFB p99 (per request)`, a step's name).
    pub name: String,
    /// What it belongs to (the run, the comparison, the scenario).
    pub classname: String,
    /// How long it took, s (0 for criteria judged after the run).
    pub time_s: f64,
    /// How it came out.
    pub outcome: CaseOutcome,
}

/// How a test case came out.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum CaseOutcome {
    /// It held.
    Passed,
    /// It did not; `message` carries the figures, `text` the details.
    Failure {
        /// What kind of check failed (`threshold`, `regression`, `request`, …).
        r#type: String,
        /// One line with the values.
        message: String,
        /// More lines.
        text: String,
    },
    /// It could not be judged.
    Skipped {
        /// Why.
        message: String,
    },
}

const DOCUMENT: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
{%- for s in suites %}
  <testsuite name="{{ s.name }}" package="volley" id="{{ loop.index0 }}" timestamp="{{ s.timestamp }}" hostname="{{ s.hostname }}" tests="{{ s.tests }}" failures="{{ s.failures }}" errors="0" skipped="{{ s.skipped }}" time="{{ s.time }}">
    <properties>
    {%- for p in s.properties %}
      <property name="{{ p[0] }}" value="{{ p[1] }}"/>
    {%- endfor %}
    </properties>
    {%- for c in s.cases %}
    <testcase name="{{ c.name }}" classname="{{ c.classname }}" time="{{ c.time }}">
      {%- if c.outcome.kind == "failure" %}
      <failure type="{{ c.outcome.type }}" message="{{ c.outcome.message }}">{{ c.outcome.text }}</failure>
      {%- elif c.outcome.kind == "skipped" %}
      <skipped message="{{ c.outcome.message }}"/>
      {%- endif %}
    </testcase>
    {%- endfor %}
    <system-out>{{ s.system_out }}</system-out>
    <system-err></system-err>
  </testsuite>
{%- endfor %}
</testsuites>
"#;

/// A character XML 1.0 can hold (control characters other than tab and line ends cannot be
/// written at all, not even escaped).
fn xml_char(c: char) -> char {
    match c {
        '\t' | '\n' | '\r' => c,
        c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => '\u{FFFD}',
        c => c,
    }
}

fn xml_text(s: &str) -> String {
    s.chars().map(xml_char).collect()
}

/// A name for an attribute the schemas type as a non-empty token.
fn token(s: &str) -> String {
    let t = xml_text(s).split_whitespace().collect::<Vec<_>>().join(" ");
    if t.is_empty() { "-".to_string() } else { t }
}

/// Seconds with at most three decimals (Jenkins' pattern) and no exponent.
fn seconds(s: f64) -> String {
    format!("{:.3}", if s.is_finite() && s > 0.0 { s } else { 0.0 })
}

/// `2026-11-23T04:58:52`: RFC 3339 cut to the second, in UTC, without zone (the Ant schema's
/// pattern); now when `rfc3339` is not a time stamp.
fn timestamp(rfc3339: &str) -> String {
    let t = rfc3339
        .parse::<jiff::Timestamp>()
        .unwrap_or_else(|_| jiff::Timestamp::now());
    t.strftime("%Y-%m-%dT%H:%M:%S").to_string()
}

/// The JUnit XML document of `suites`.
pub fn document(suites: &[Suite]) -> String {
    #[derive(Serialize)]
    struct SuiteView {
        name: String,
        timestamp: String,
        hostname: String,
        tests: usize,
        failures: usize,
        skipped: usize,
        time: String,
        properties: Vec<(String, String)>,
        cases: Vec<CaseView>,
        system_out: String,
    }
    #[derive(Serialize)]
    struct CaseView {
        name: String,
        classname: String,
        time: String,
        outcome: CaseOutcome,
    }
    let views: Vec<SuiteView> = suites
        .iter()
        .map(|s| SuiteView {
            name: token(&s.name),
            timestamp: timestamp(&s.timestamp),
            hostname: token(if s.hostname.is_empty() {
                "localhost"
            } else {
                &s.hostname
            }),
            tests: s.cases.len(),
            failures: s
                .cases
                .iter()
                .filter(|c| matches!(c.outcome, CaseOutcome::Failure { .. }))
                .count(),
            skipped: s
                .cases
                .iter()
                .filter(|c| matches!(c.outcome, CaseOutcome::Skipped { .. }))
                .count(),
            time: seconds(s.time_s),
            properties: s
                .properties
                .iter()
                .map(|(k, v)| (token(k), xml_text(v)))
                .collect(),
            cases: s
                .cases
                .iter()
                .map(|c| CaseView {
                    name: token(&c.name),
                    classname: token(&c.classname),
                    time: seconds(c.time_s),
                    outcome: match &c.outcome {
                        CaseOutcome::Passed => CaseOutcome::Passed,
                        CaseOutcome::Failure {
                            r#type,
                            message,
                            text,
                        } => CaseOutcome::Failure {
                            r#type: xml_text(r#type),
                            message: xml_text(message),
                            text: xml_text(text),
                        },
                        CaseOutcome::Skipped { message } => CaseOutcome::Skipped {
                            message: xml_text(message),
                        },
                    },
                })
                .collect(),
            system_out: xml_text(&s.system_out),
        })
        .collect();
    let mut env = Environment::new();
    // HTML escaping writes only entities XML knows (&amp; &lt; &gt; &quot; &#x27; &#x2f;).
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::Html);
    env.add_template("junit.xml", DOCUMENT)
        .expect("the JUnit template parses");
    env.get_template("junit.xml")
        .expect("template exists")
        .render(context! { suites => Value::from(Serde(&views)) })
        .expect("the JUnit document renders")
}

/// The unit of a threshold's figure, from its expression (`step: ttfb p99 < 500ms` → ` ms`).
fn threshold_unit(expr: &str) -> &'static str {
    let metric = expr
        .rsplit(": ")
        .next()
        .unwrap_or(expr)
        .split_whitespace()
        .next()
        .unwrap_or("");
    match metric {
        "error_rate" | "errors" => "%",
        "tps" => " TPS",
        _ => " ms",
    }
}

/// A run as a suite: one case per threshold, one saying whether the run ran its course
/// (an aborted run fails, as its exit code does) and one whether any request succeeded.
pub fn run_suite(r: &RunReport, hostname: &str) -> Suite {
    let classname = format!("volley.run.{}", r.name);
    let mut cases: Vec<Case> = r
        .thresholds
        .iter()
        .map(|t| Case {
            name: format!("threshold: {}", t.expr),
            classname: classname.clone(),
            time_s: 0.0,
            outcome: if t.passed {
                CaseOutcome::Passed
            } else {
                let actual = if t.actual.is_finite() {
                    format!(
                        "the run measured {}{}",
                        fixed2(t.actual),
                        threshold_unit(&t.expr)
                    )
                } else {
                    "the run has no such figure".to_string()
                };
                CaseOutcome::Failure {
                    r#type: "threshold".into(),
                    message: format!("{}: {actual}", t.expr),
                    text: format!(
                        "threshold `{}` failed: {actual} (source {})",
                        t.expr, r.source
                    ),
                }
            },
        })
        .collect();
    // Only a run that ran its whole plan completed: aborted, interrupted (Ctrl-C, a stop
    // from the dashboard) and did-not-finish runs are failures of this case.
    let complete = r.status == volley_formats::RunStatus::Complete.name();
    cases.push(Case {
        name: "run completed".to_string(),
        classname: classname.clone(),
        time_s: r.measured_s + r.warmup_s,
        outcome: if complete {
            CaseOutcome::Passed
        } else {
            let why = r
                .reason
                .clone()
                .unwrap_or_else(|| "it did not run its whole plan".to_string());
            CaseOutcome::Failure {
                r#type: r.status.clone(),
                message: format!("the run is {}: {why}", r.status.replace('_', " ")),
                text: why,
            }
        },
    });
    // A run in which nothing succeeded fails whatever its thresholds say (a mistyped path
    // answered 404 throughout).
    cases.push(Case {
        name: "a request succeeded".to_string(),
        classname,
        time_s: r.measured_s + r.warmup_s,
        outcome: match r.nothing_succeeded() {
            None => CaseOutcome::Passed,
            Some(why) => CaseOutcome::Failure {
                r#type: "no_success".into(),
                message: why.clone(),
                text: why,
            },
        },
    });
    let ttfb_p99 = r
        .per_request
        .ttfb_ms
        .as_ref()
        .map_or(f64::NAN, |l| l.p99_ms);
    Suite {
        name: r.name.clone(),
        timestamp: r.started_at.clone(),
        hostname: hostname.to_string(),
        time_s: r.measured_s + r.warmup_s,
        properties: vec![
            ("source".into(), r.source.clone()),
            ("status".into(), r.status.clone()),
            ("tps_avg".into(), fixed2(r.seed_suite.tps_avg)),
            ("error_rate_pct".into(), fixed2(r.seed_suite.error_rate_pct)),
            ("ttfb_p99_ms".into(), fixed2(ttfb_p99)),
        ],
        cases,
        system_out: crate::render::table(r),
    }
}

/// A gate as suites: one per before/after table, one case per gated figure; a figure worse
/// beyond the noise is a failure, and so is one the comparison could not judge.
pub fn gate_suites(gate: &GateResult, comparison_text: &str, hostname: &str) -> Vec<Suite> {
    let now = jiff::Timestamp::now().to_string();
    let incomplete = gate.incomplete.iter().map(|why| Case {
        name: format!("run completed: {why}"),
        classname: "volley.compare".to_string(),
        time_s: 0.0,
        outcome: CaseOutcome::Failure {
            r#type: "incomplete".into(),
            message: why.clone(),
            text: format!(
                "{why}: the gate cannot trust the figures of a run that did not run its whole plan"
            ),
        },
    });
    let incomplete: Vec<Case> = incomplete.collect();
    let mut suites: Vec<Suite> = gate.tables
        .iter()
        .map(|t| {
            let name = format!("compare {} → {}", t.before, t.after);
            Suite {
                name: name.clone(),
                timestamp: now.clone(),
                hostname: hostname.to_string(),
                time_s: 0.0,
                properties: vec![
                    ("baseline".into(), t.before.clone()),
                    ("candidate".into(), t.after.clone()),
                    ("tolerance_pct".into(), gate.spec.tolerance_pct.to_string()),
                ],
                cases: t
                    .checks
                    .iter()
                    .map(|c| Case {
                        name: format!("{} ({})", c.label, c.key),
                        classname: format!("volley.compare.{} → {}", t.before, t.after),
                        time_s: 0.0,
                        outcome: match c.outcome {
                            Outcome::Pass => CaseOutcome::Passed,
                            Outcome::Fail => CaseOutcome::Failure {
                                r#type: "regression".into(),
                                message: format!("{}: {}", c.label, c.why),
                                text: format!(
                                    "{} got worse from {} to {}: {}",
                                    c.label, t.before, t.after, c.why
                                ),
                            },
                            Outcome::Unavailable => CaseOutcome::Skipped {
                                message: format!("{}: {}", c.label, c.why),
                            },
                            Outcome::NotJudged => CaseOutcome::Failure {
                                r#type: "not judged".into(),
                                message: format!("{}: {}", c.label, c.why),
                                text: format!(
                                    "{} could not be judged from {} to {}, which fails the gate: {}",
                                    c.label, t.before, t.after, c.why
                                ),
                            },
                        },
                    })
                    .collect(),
                system_out: comparison_text.to_string(),
            }
        })
        .collect();
    if let Some(first) = suites.first_mut() {
        first.cases.extend(incomplete);
    }
    suites
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_control_characters_replaced() {
        let suite = Suite {
            name: "a <b> & \"c\"".into(),
            timestamp: "2026-11-23T04:58:52.123456Z".into(),
            hostname: String::new(),
            time_s: 12.34567,
            properties: vec![("k".into(), "v\u{1b}[31m".into())],
            cases: vec![Case {
                name: "  ".into(),
                classname: "x".into(),
                time_s: f64::NAN,
                outcome: CaseOutcome::Failure {
                    r#type: "t".into(),
                    message: "1 < 2 & 3 > 2".into(),
                    text: "]]> \u{0}".into(),
                },
            }],
            system_out: "out\u{7}".into(),
        };
        let xml = document(&[suite]);
        assert!(
            xml.contains(r#"name="a &lt;b&gt; &amp; &quot;c&quot;""#),
            "{xml}"
        );
        assert!(
            xml.contains(r#"timestamp="2026-11-23T04:58:52""#)
                && xml.contains(r#"hostname="localhost""#)
                && xml.contains(r#"time="12.346""#),
            "{xml}"
        );
        assert!(
            xml.contains(r#"<testcase name="-" classname="x" time="0.000">"#),
            "{xml}"
        );
        assert!(
            xml.contains("message=\"1 &lt; 2 &amp; 3 &gt; 2\"") && xml.contains("]]&gt; \u{FFFD}"),
            "{xml}"
        );
        assert!(
            !xml.chars()
                .any(|c| (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r')),
            "{xml}"
        );
        assert!(
            xml.contains(r#"tests="1" failures="1" errors="0" skipped="0""#),
            "{xml}"
        );
    }
}
