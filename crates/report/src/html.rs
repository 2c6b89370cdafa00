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
use crate::group::GroupSummary;
use crate::model::{ReportOptions, RunReport};
use crate::sweep::SweepSummary;

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
section.report{margin:0 0 28px}h2.title{border:none;font-size:20px}h3{font-size:15px;margin:18px 0 6px}
.answer{border:1px solid #d0d7de;border-radius:6px;background:#f6f8fa;padding:10px 16px;margin:8px 0 16px}
.figures{display:flex;flex-wrap:wrap;gap:10px 36px;margin:8px 0}.figure .value{display:block;font-size:30px;font-weight:600;line-height:1.2}
.figure .change{display:block;font-size:14px}.figure .label{display:block;color:#555;font-size:13px}
.verdict{font-size:17px;margin:4px 0}.verdict.pass b{color:#1a7f37}.verdict.fail b{color:#cf222e}
.banner{background:#ffebe9;border:1px solid #cf222e;color:#a40e26;font-weight:700;padding:6px 10px;margin:4px 0}
.summary{font-size:15px}.caption{color:#555;margin:0 0 4px}ul.findings{margin:4px 0}
@media print{.chart{page-break-inside:avoid}body{max-width:none}}"#;

const PAGE: &str = r##"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title><link rel="icon" href="data:,">
<style>{{ uplot_css|safe }}
{{ page_css|safe }}
</style></head><body>
<h1>{{ title }}</h1>
{% for body in bodies %}{{ body|safe }}{% endfor %}
<h2 id="charts-heading">Charts</h2>
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
    /// The x are times (seconds since the epoch): drawn as dates.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    time: bool,
    x: Vec<f64>,
    series: Vec<LineView>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
struct LineView {
    label: String,
    values: Vec<Option<f64>>,
    scale: Option<&'static str>,
    /// `limit` (dashed), `dots` (points alone) or `span` (an x range shaded); a line when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    style: Option<&'static str>,
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
        time: matches!(c.x_axis, XAxis::Time { .. }),
        x: c.x,
        series: c
            .lines
            .into_iter()
            .map(|l| LineView {
                label: l.label,
                values: l.values,
                scale: l.right.then_some("y2"),
                style: (l.style != chartset::Style::Line).then(|| l.style.name()),
            })
            .collect(),
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

/// A page: `bodies` (each a report's HTML, [`Doc::html`]) in order, then the charts.
pub(crate) fn render(
    title: &str,
    bodies: &[String],
    charts: Vec<Chart>,
    svgs: Vec<String>,
) -> String {
    let charts: Vec<ChartView> = charts.into_iter().map(chart_view).collect();
    let mut env = Environment::new();
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::Html);
    env.add_template("page.html", PAGE)
        .expect("the page template parses");
    env.get_template("page.html")
        .expect("template exists")
        .render(context! {
            title => title,
            bodies => Value::from(Serde(bodies)),
            svgs => Value::from(Serde(&svgs)),
            data => script_json(&serde_json::json!({ "charts": charts })),
            uplot_js => UPLOT_JS,
            uplot_css => UPLOT_CSS,
            page_css => PAGE_CSS,
            charts_js => CHARTS_JS,
        })
        .expect("the page renders")
}

/// The HTML page of one or more runs or files (`sources[i]` goes with `reports[i]`), with
/// the summaries of the run groups among them first: a group's answer is its summary.
pub fn report_page(
    sources: &[Source],
    reports: &[RunReport],
    groups: &[GroupSummary],
    opts: ReportOptions,
) -> String {
    let title = match (reports, groups) {
        (_, [g]) => format!("volley report: group {}", g.name),
        ([one], []) => format!("volley report: {}", one.name),
        _ => "volley report".to_string(),
    };
    let bodies: Vec<String> = groups
        .iter()
        .map(|g| g.doc().html())
        .chain(reports.iter().map(|r| crate::render::doc(r, &[]).html()))
        .collect();
    let charts = sources
        .iter()
        .flat_map(|s| chartset::run_set(s, opts))
        .collect();
    render(&title, &bodies, charts, Vec::new())
}

/// The HTML page of a comparison; `bar_svgs` are the grouped-bar charts to inline; `gate`
/// is the gate's verdict, when one judged it (`--fail-on`), shown first.
pub fn compare_page(
    cmp: &Comparison,
    sources: &[Source],
    opts: ReportOptions,
    bar_svgs: Vec<String>,
    gate: Option<(bool, String)>,
) -> String {
    let mut doc = cmp.doc();
    doc.answer.verdict = gate;
    let labels: Vec<String> = cmp.runs.iter().map(|r| r.label.clone()).collect();
    let charts = chartset::compare_set(sources, &labels, opts);
    render("volley compare", &[doc.html()], charts, bar_svgs)
}

/// The HTML page of a sweep: its verdict and per-value table, then the comparison of its
/// values in order.
pub fn sweep_page(
    sweep: &SweepSummary,
    cmp: &Comparison,
    sources: &[Source],
    opts: ReportOptions,
    bar_svgs: Vec<String>,
) -> String {
    let labels: Vec<String> = cmp.runs.iter().map(|r| r.label.clone()).collect();
    let charts = chartset::compare_set(sources, &labels, opts);
    render(
        "volley sweep",
        &[sweep.doc().html(), cmp.doc().html()],
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
        let page = compare_page(&cmp, &sources, opts, Vec::new(), None);
        assert!(
            !page.contains(['🟢', '🔴', '⚪']),
            "an emoji needs an emoji font, which headless Chromium on Debian lacks"
        );
        assert!(
            page.contains(crate::marks::svg(volley_stats::compare::Verdict::Worse)),
            "slower TTFB is marked worse"
        );
        assert!(
            page.contains(crate::marks::svg(volley_stats::compare::Verdict::Noise)),
            "the method names the within-the-noise mark"
        );
        assert!(
            cmp.markdown().contains("🔴") && cmp.table().contains("🔴"),
            "text reports keep their emoji"
        );
    }
}
