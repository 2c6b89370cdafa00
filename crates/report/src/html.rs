//! One self-contained HTML file per report or comparison: the tables, and interactive
//! charts (uPlot, inlined — drag to zoom, double-click to reset, hover for values). No
//! network is needed to open it, and it prints. The charts are the ones of
//! [`crate::chartset`]; a comparison's 🟢 / 🔴 / ⚪ are drawn ([`crate::marks`]), as an
//! emoji font cannot be counted on.

use minijinja::value::Serde;
use minijinja::{Environment, Value, context};
use serde::Serialize;
use volley_formats::Source;

use crate::chartset::{self, Chart, Unit, XAxis};
use crate::compare::Comparison;
use crate::marks;
use crate::model::{ReportOptions, RunReport};

/// uPlot, inlined into every page.
pub const UPLOT_JS: &str = include_str!("../assets/uPlot.iife.min.js");
/// uPlot's stylesheet.
pub const UPLOT_CSS: &str = include_str!("../assets/uPlot.min.css");
/// `volleyCharts.draw(root, drawn, charts)`: draws [`ChartView`]s with uPlot, and redraws
/// them with new data (the live dashboard); report pages and the dashboard share it.
pub const CHARTS_JS: &str = include_str!("../assets/charts.js");
/// The pages' own style (after uPlot's).
pub const PAGE_CSS: &str = r#"body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1100px;padding:16px;color:#222}
h1{font-size:22px;margin:8px 0}h2{font-size:17px;margin:22px 0 8px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:6px 0 14px}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}th:first-child,td:first-child{text-align:left}
.meta{color:#555}.chart{margin:10px 0 22px}.note{color:#555}.better{color:#1a7f37}.worse{color:#cf222e}
svg{max-width:100%;height:auto}svg.mark{vertical-align:-1px}
@media print{.chart{page-break-inside:avoid}body{max-width:none}}"#;

const PAGE: &str = r##"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title><link rel="icon" href="data:,">
<style>{{ uplot_css|safe }}
{{ page_css|safe }}
</style></head><body>
<h1>{{ title }}</h1>
{% for r in reports %}
<h2>{{ r.name }}</h2>
<p class="meta">{{ r.format }} · status <b>{{ r.status }}</b>{% if r.reason %} — {{ r.reason }}{% endif %} · {{ "%.1f"|format(r.measured_s) }} s measured · interval {{ r.interval_s }} s{% if r.warmup_s > 0 %} · first {{ r.warmup_s }} s excluded{% endif %}</p>
<table><tr><th>Metric</th><th>Value</th></tr>
{% for row in r.rows %}<tr><td>{{ row[0] }}</td><td>{{ row[1] }}</td></tr>
{% endfor %}</table>
{% if r.latency %}<table><tr><th>per request, ms</th>{% for h in latency_heads %}<th>{{ h }}</th>{% endfor %}</tr>
{% for l in r.latency %}<tr><td>{{ l.name }}</td>{% for v in l.values %}<td>{{ v }}</td>{% endfor %}</tr>{% endfor %}</table>{% endif %}
{% if r.levels %}<table id="levels"><caption>Levels — each held level of VUs; per-request ms</caption><tr>{% for h in level_heads %}<th>{{ h }}</th>{% endfor %}</tr>
{% for row in r.levels %}<tr>{% for v in row %}<td>{{ v }}</td>{% endfor %}</tr>{% endfor %}</table>{% endif %}
{% if r.populations %}<table><caption>Populations — each over the time it ran; per-request ms; the last row is the run's total</caption><tr>{% for h in population_heads %}<th>{{ h }}</th>{% endfor %}</tr>
{% for row in r.populations %}<tr>{% for v in row %}<td{% if loop.first %} style="text-align:left"{% endif %}>{{ v }}</td>{% endfor %}</tr>{% endfor %}</table>{% endif %}
{% if r.steps %}<table><caption>Steps — per-request ms; total is the time to the first event for SSE steps and to the expected message for WebSocket steps</caption><tr>{% for h in step_heads %}<th>{{ h }}</th>{% endfor %}</tr>
{% for row in r.steps %}<tr>{% for v in row %}<td{% if loop.first %} style="text-align:left"{% endif %}>{{ v }}</td>{% endfor %}</tr>{% endfor %}</table>{% endif %}
{% if r.errors %}<table><tr><th>error kind</th><th>count</th><th>first messages</th></tr>
{% for e in r.errors %}<tr><td>{{ e.kind }}</td><td>{{ e.count }}</td><td style="text-align:left">{{ e.messages|join(" | ") }}</td></tr>{% endfor %}</table>{% endif %}
{% if r.thresholds %}<table><tr><th>threshold</th><th>actual</th><th>result</th></tr>{% for t in r.thresholds %}<tr><td>{{ t.expr }}</td><td>{{ t.actual }}</td><td class="{{ "better" if t.passed else "worse" }}">{{ "pass" if t.passed else "FAIL" }}</td></tr>{% endfor %}</table>{% endif %}
{% if r.findings %}<ul>{% for f in r.findings %}<li>{{ f }}</li>{% endfor %}</ul>{% endif %}
{% for n in r.notes %}<p class="note">{{ n }}</p>{% endfor %}
{% endfor %}
{% for s in steps %}
<h2>{{ s.title }}</h2>
<table><tr><th>Metric</th><th>{{ s.before }}</th><th>{{ s.after }}</th><th>Change</th></tr>
{% for row in s.rows %}<tr><td>{{ row.label }}</td><td>{{ row.before }}</td><td>{{ row.after }}</td><td class="{{ row.verdict }}">{{ row.change|safe }}</td></tr>
{% endfor %}</table>
{% endfor %}
{% if method %}<p class="note">{{ method|safe }}</p>{% endif %}
<div id="charts"></div>
{% for svg in svgs %}<div class="chart">{{ svg|safe }}</div>{% endfor %}
<script type="application/json" id="data">{{ data|safe }}</script>
<script>{{ uplot_js|safe }}</script>
<script>{{ charts_js|safe }}</script>
<script>
(function () {
  var data = JSON.parse(document.getElementById("data").textContent);
  volleyCharts.draw(document.getElementById("charts"), {}, data.charts);
})();
</script>
</body></html>
"##;

/// One chart as the pages' script ([`CHARTS_JS`]) draws it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ChartView {
    name: &'static str,
    title: String,
    xlabel: &'static str,
    ylabel: &'static str,
    y2label: Option<&'static str>,
    percentile: bool,
    x: Vec<f64>,
    series: Vec<LineView>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
struct LineView {
    label: String,
    values: Vec<Option<f64>>,
    scale: Option<&'static str>,
}

/// A chart of the set as the page's script draws it; a title names its unit when that is
/// ms, as hovered values show bare numbers.
pub fn chart_view(c: Chart) -> ChartView {
    ChartView {
        name: c.name,
        title: if c.y == Unit::Ms {
            format!("{} (ms)", c.title)
        } else {
            c.title
        },
        xlabel: c.x_axis.label(),
        ylabel: c.y.label(),
        y2label: c.y2.map(Unit::label),
        percentile: c.x_axis == XAxis::Percentile,
        x: c.x,
        series: c
            .lines
            .into_iter()
            .map(|l| LineView {
                label: l.label,
                values: l.values,
                scale: l.right.then_some("y2"),
            })
            .collect(),
    }
}

#[derive(Serialize)]
struct ReportView {
    name: String,
    format: String,
    status: String,
    reason: Option<String>,
    measured_s: f64,
    interval_s: f64,
    warmup_s: f64,
    rows: Vec<(String, String)>,
    latency: Vec<LatencyView>,
    /// Scenario steps, one row each.
    steps: Vec<Vec<String>>,
    /// Held levels of a step-up, one row each.
    levels: Vec<Vec<String>>,
    /// Populations, one row each, and the total.
    populations: Vec<Vec<String>>,
    errors: Vec<crate::model::ErrorLine>,
    findings: Vec<String>,
    thresholds: Vec<crate::model::ThresholdResult>,
    notes: Vec<String>,
}

#[derive(Serialize)]
struct LatencyView {
    name: String,
    values: Vec<String>,
}

fn view(r: &RunReport) -> ReportView {
    let mut latency: Vec<LatencyView> = crate::render::latency_rows(r)
        .into_iter()
        .map(|(name, s)| LatencyView {
            name: name.to_string(),
            values: s
                .rows()
                .iter()
                .map(|(_, v)| {
                    if v.is_finite() {
                        format!("{v:.2}")
                    } else {
                        "n/a".to_string()
                    }
                })
                .collect(),
        })
        .collect();
    if !latency.is_empty() && r.unavailable(volley_formats::Figure::Ttfb).is_some() {
        latency.push(LatencyView {
            name: "TTFB".to_string(),
            values: vec!["n/a".to_string(); 9],
        });
    }
    ReportView {
        name: r.name.clone(),
        format: r.format.to_string(),
        status: r.status.clone(),
        reason: r.reason.clone(),
        measured_s: r.measured_s,
        interval_s: r.interval_s,
        warmup_s: r.warmup_s,
        rows: crate::render::suite_rows(r),
        latency,
        steps: crate::render::step_rows(r),
        levels: crate::levels::rows(&r.levels),
        populations: crate::render::population_rows(r),
        errors: r.errors.clone(),
        findings: r.findings.clone(),
        thresholds: r.thresholds.clone(),
        notes: r.notes.clone(),
    }
}

/// JSON that is safe inside a `<script>` element.
pub(crate) fn script_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value)
        .expect("chart data serializes")
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

fn render(
    title: &str,
    reports: &[ReportView],
    steps: Vec<StepView>,
    method: Option<String>,
    charts: Vec<Chart>,
    svgs: Vec<String>,
) -> String {
    let charts: Vec<ChartView> = charts.into_iter().map(chart_view).collect();
    let mut env = Environment::new();
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::Html);
    env.add_template("page.html", PAGE)
        .expect("the page template parses");
    let heads: Vec<&str> = [
        "min", "mean", "p50", "p90", "p95", "p99", "p99.9", "p99.99", "max",
    ]
    .to_vec();
    env.get_template("page.html")
        .expect("template exists")
        .render(context! {
            title => title,
            reports => Value::from(Serde(reports)),
            steps => Value::from(Serde(&steps)),
            method => method,
            latency_heads => Value::from(Serde(&heads)),
            step_heads => Value::from(Serde(&crate::render::STEP_HEADER)),
            level_heads => Value::from(Serde(&crate::levels::HEADER)),
            population_heads => Value::from(Serde(&crate::render::POPULATION_HEADER)),
            svgs => Value::from(Serde(&svgs)),
            data => script_json(&serde_json::json!({ "charts": charts })),
            uplot_js => UPLOT_JS,
            uplot_css => UPLOT_CSS,
            page_css => PAGE_CSS,
            charts_js => CHARTS_JS,
        })
        .expect("the page renders")
}

/// The HTML page of one or more runs or files (`sources[i]` goes with `reports[i]`).
pub fn report_page(sources: &[Source], reports: &[RunReport], opts: ReportOptions) -> String {
    let title = match reports {
        [one] => format!("volley report: {}", one.name),
        _ => "volley report".to_string(),
    };
    let views: Vec<ReportView> = reports.iter().map(view).collect();
    let charts = sources
        .iter()
        .flat_map(|s| chartset::run_set(s, opts))
        .collect();
    render(&title, &views, Vec::new(), None, charts, Vec::new())
}

#[derive(Serialize)]
struct StepView {
    title: String,
    before: String,
    after: String,
    rows: Vec<StepRow>,
}

#[derive(Serialize)]
struct StepRow {
    label: String,
    before: String,
    after: String,
    /// HTML: the change with its mark drawn.
    change: String,
    verdict: String,
}

/// A change with its mark drawn (`+3.20% ●`), as HTML.
fn change_html(r: &volley_stats::compare::CompareRow) -> String {
    let (change, after) = crate::compare::change_parts(r);
    format!(
        "{} {}{}",
        minijinja::HtmlEscape(&change),
        marks::svg(r.verdict),
        minijinja::HtmlEscape(after)
    )
}

/// The HTML page of a comparison; `bar_svgs` are the grouped-bar charts to inline.
pub fn compare_page(
    cmp: &Comparison,
    sources: &[Source],
    opts: ReportOptions,
    bar_svgs: Vec<String>,
) -> String {
    let steps = cmp
        .steps
        .iter()
        .map(|s| (format!("{} → {}", s.before, s.after), s))
        .chain(
            cmp.overall
                .iter()
                .map(|s| (format!("Overall: {} → {}", s.before, s.after), s)),
        )
        .map(|(title, s)| StepView {
            title,
            before: s.before.clone(),
            after: s.after.clone(),
            rows: s
                .rows
                .iter()
                .map(|r| (String::new(), r))
                .chain(
                    s.per_level
                        .iter()
                        .flat_map(|p| p.rows.iter().map(move |r| (format!("{} · ", p.name), r))),
                )
                .chain(s.per_population.iter().flat_map(|p| {
                    p.rows
                        .iter()
                        .map(move |r| (format!("population {} · ", p.name), r))
                }))
                .chain(
                    s.per_step
                        .iter()
                        .flat_map(|p| p.rows.iter().map(move |r| (format!("{} · ", p.name), r))),
                )
                .map(|(prefix, r)| StepRow {
                    label: format!("{prefix}{}", r.label),
                    before: crate::compare::value(r.before, r.unit, r.key),
                    after: crate::compare::value(r.after, r.unit, r.key),
                    change: change_html(r),
                    verdict: serde_json::to_value(r.verdict)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default(),
                })
                .collect(),
        })
        .collect();
    let labels: Vec<String> = cmp.runs.iter().map(|r| r.label.clone()).collect();
    let charts = chartset::compare_set(sources, &labels, opts);
    let method = cmp
        .steps
        .iter()
        .chain(&cmp.overall)
        .flat_map(|s| s.notes.iter().map(String::as_str))
        .chain(cmp.caveat.iter().map(String::as_str))
        .chain(std::iter::once(cmp.method.as_str()))
        .collect::<Vec<_>>()
        .join("\n");
    render(
        "volley compare",
        &[],
        steps,
        Some(marks::in_text(&method)),
        charts,
        bar_svgs,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparison_marks_are_drawn_not_emoji() {
        let dir = tempfile::tempdir().unwrap();
        let sources = [
            crate::testrun::run(dir.path(), "before", 6, 50, 5, &[]),
            crate::testrun::run(dir.path(), "after", 6, 50, 9, &[]),
        ];
        let opts = ReportOptions::default();
        let sets: Vec<volley_formats::RunSet> = sources
            .iter()
            .cloned()
            .map(volley_formats::RunSet::single)
            .collect();
        let cmp = crate::compare::build(&sets, &[], opts);
        let page = compare_page(&cmp, &sources, opts, Vec::new());
        assert!(
            !page.contains(['🟢', '🔴', '⚪']),
            "an emoji needs an emoji font, which headless Chromium on Debian lacks"
        );
        assert!(
            page.contains(marks::svg(volley_stats::compare::Verdict::Worse)),
            "slower TTFB is marked worse"
        );
        assert!(
            page.contains(marks::svg(volley_stats::compare::Verdict::Noise)),
            "the method names the within-the-noise mark"
        );
        assert!(
            cmp.markdown().contains("🔴") && cmp.table().contains("🔴"),
            "text reports keep their emoji"
        );
    }
}
