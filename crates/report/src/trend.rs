//! One figure across the run history, over time — how teams watch a service across releases:
//! a PNG and an SVG (plotters, in the style of [`crate::charts`]) and a self-contained HTML
//! page (uPlot, as in [`crate::html`]) with the runs' table under the chart. One line per plan
//! run under a name (runs of one name with different plans are different lines); runs that did not run their course are drawn as separate crosses, not joined to the
//! line, since their figures cover only part of the plan.

use std::path::{Path, PathBuf};

use minijinja::value::Serde;
use minijinja::{Environment, Value, context};
use plotters::prelude::*;
use serde::Serialize;

use crate::error::{ReportError, Result};
use crate::history::Entry;

/// The points of a trend: one series per plan run under a name, and the incomplete runs apart.
#[derive(Debug, Clone, Serialize)]
pub struct Trend {
    /// The metric's key.
    pub key: &'static str,
    /// Its label (`TTFB p99 (per request)`).
    pub label: String,
    /// Its unit (`ms`, `%`, `TPS`, `tests`).
    pub unit: &'static str,
    /// Per plan run under a name (labelled by the name, and by the plan when the name ran
    /// several): (start, s since the epoch; value), in time order.
    pub series: Vec<(String, Vec<(f64, f64)>)>,
    /// Runs that did not complete: (name, start, value).
    pub incomplete: Vec<(String, f64, f64)>,
    /// Runs left out, and why (no start time, no such figure).
    pub left_out: Vec<String>,
}

/// The unit a trend's axis names: the metric table's, `tests` for the count, `TPS` for
/// throughput (which the table writes without a unit).
fn unit_of(key: &str) -> &'static str {
    match volley_stats::metric::metric(key) {
        Some(m) if m.count => "tests",
        Some(m) if !m.unit.is_empty() => m.unit,
        _ => "TPS",
    }
}

impl Trend {
    /// The trend of `key` over `entries` (groups count as one point each, their runs' mean).
    pub fn of(entries: &[Entry], key: &'static str) -> Trend {
        let label = volley_stats::compare::metrics()
            .find(|(k, _)| *k == key)
            .map_or(key, |(_, l)| l)
            .to_string();
        let mut t = Trend {
            key,
            label,
            unit: unit_of(key),
            series: Vec::new(),
            incomplete: Vec::new(),
            left_out: Vec::new(),
        };
        // Each line is one plan's runs: (name, plan hash), and the plan in words.
        let mut plans: Vec<(String, String)> = Vec::new();
        let mut summaries: Vec<String> = Vec::new();
        for e in entries {
            let (Some(at), Some(v)) = (e.started_s(), e.figure(key)) else {
                let why = if e.started_s().is_none() {
                    "no start time"
                } else {
                    "no such figure"
                };
                t.left_out
                    .push(format!("{} ({}): {why}", e.path.display(), e.status));
                continue;
            };
            if e.status != volley_formats::RunStatus::Complete.name() {
                t.incomplete.push((e.name.clone(), at, v));
                continue;
            }
            let key = (e.name.clone(), e.plan_hash.clone());
            match plans.iter().position(|k| *k == key) {
                Some(i) => t.series[i].1.push((at, v)),
                None => {
                    plans.push(key);
                    summaries.push(e.plan.clone());
                    t.series.push((e.name.clone(), vec![(at, v)]));
                }
            }
        }
        // A name run with several plans: each line is one plan's, named by what it ran (and
        // by its hash when two plans read alike).
        for i in 0..t.series.len() {
            let name = &plans[i].0;
            if plans.iter().filter(|(n, _)| n == name).count() < 2 {
                continue;
            }
            let alike = (0..plans.len())
                .filter(|&j| plans[j].0 == *name && summaries[j] == summaries[i])
                .count();
            let hash: String = plans[i].1.chars().take(8).collect();
            t.series[i].0 = match (summaries[i].is_empty(), alike > 1) {
                (false, false) => format!("{name} · {}", summaries[i]),
                (false, true) => format!("{name} · {} · plan {hash}", summaries[i]),
                (true, _) => format!("{name} · plan {hash}"),
            };
        }
        t
    }

    /// Whether there is anything to draw.
    pub fn is_empty(&self) -> bool {
        self.series.is_empty() && self.incomplete.is_empty()
    }

    fn x_range(&self) -> (f64, f64) {
        let xs = self
            .series
            .iter()
            .flat_map(|(_, p)| p.iter().map(|p| p.0))
            .chain(self.incomplete.iter().map(|p| p.1));
        let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(x), hi.max(x))
        });
        // A little room either side, and at least a minute in all.
        let pad = ((hi - lo) * 0.05).max(30.0);
        (lo - pad, hi + pad)
    }

    fn y_max(&self) -> f64 {
        let ys = self
            .series
            .iter()
            .flat_map(|(_, p)| p.iter().map(|p| p.1))
            .chain(self.incomplete.iter().map(|p| p.2));
        ys.fold(0.0, f64::max).max(0.001) * 1.1
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, plotters::coord::Shift>,
    ) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
        root.fill(&WHITE)?;
        let (x0, x1) = self.x_range();
        let span = x1 - x0;
        let mut chart = ChartBuilder::on(root)
            .caption(format!("{} across runs", self.label), ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1, 0f64..self.y_max())?;
        let format = match span {
            s if s > 2.0 * 86_400.0 => "%Y-%m-%d",
            s if s > 3_600.0 => "%m-%d %H:%M",
            _ => "%H:%M:%S",
        };
        let when = move |x: &f64| {
            jiff::Timestamp::from_millisecond((*x * 1000.0) as i64)
                .map(|t| t.strftime(format).to_string())
                .unwrap_or_default()
        };
        chart
            .configure_mesh()
            .x_labels(6)
            .x_label_formatter(&when)
            .x_desc("run start (UTC)")
            .y_desc(self.unit)
            .draw()?;
        for (i, (name, points)) in self.series.iter().enumerate() {
            let color = crate::charts::PALETTE[i % crate::charts::PALETTE.len()];
            chart
                .draw_series(LineSeries::new(
                    points.iter().copied(),
                    color.stroke_width(2),
                ))?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
            chart.draw_series(points.iter().map(|p| Circle::new(*p, 4, color.filled())))?;
        }
        if !self.incomplete.is_empty() {
            let red = RGBColor(214, 39, 40);
            chart
                .draw_series(
                    self.incomplete
                        .iter()
                        .map(|(_, x, y)| Cross::new((*x, *y), 6, red.stroke_width(2))),
                )?
                .label("did not complete")
                .legend(move |(x, y)| Cross::new((x + 10, y), 5, red.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
    }

    /// Draws the trend into `<stem>.svg` and `<stem>.png`.
    pub fn save_images(&self, stem: &Path) -> Result<Vec<PathBuf>> {
        crate::charts::register_font();
        let with = |ext: &str| {
            let mut p = stem.as_os_str().to_owned();
            p.push(format!(".{ext}"));
            PathBuf::from(p)
        };
        let (svg, png) = (with("svg"), with("png"));
        if let Some(parent) = stem.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| ReportError::io(parent, e))?;
        }
        let failed = |path: &Path, message: String| ReportError::Draw {
            path: path.to_path_buf(),
            message,
        };
        {
            let root = SVGBackend::new(&svg, crate::charts::SIZE).into_drawing_area();
            self.draw(&root)
                .and_then(|()| root.present())
                .map_err(|e| failed(&svg, e.to_string()))?;
        }
        {
            let root = BitMapBackend::new(&png, crate::charts::SIZE).into_drawing_area();
            self.draw(&root)
                .and_then(|()| root.present())
                .map_err(|e| failed(&png, e.to_string()))?;
        }
        Ok(vec![svg, png])
    }

    /// The self-contained HTML page: the interactive chart and the table of the runs drawn.
    pub fn html(&self, entries: &[Entry]) -> String {
        // uPlot wants one x for all series: every point's time, each series null elsewhere.
        let mut xs: Vec<f64> = self
            .series
            .iter()
            .flat_map(|(_, p)| p.iter().map(|p| p.0))
            .chain(self.incomplete.iter().map(|p| p.1))
            .collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        let at = |points: &[(f64, f64)]| -> Vec<Option<f64>> {
            xs.iter()
                .map(|x| points.iter().find(|p| p.0 == *x).map(|p| p.1))
                .collect()
        };
        #[derive(Serialize)]
        struct SeriesView {
            label: String,
            values: Vec<Option<f64>>,
            points_only: bool,
        }
        let mut series: Vec<SeriesView> = self
            .series
            .iter()
            .map(|(n, p)| SeriesView {
                label: n.clone(),
                values: at(p),
                points_only: false,
            })
            .collect();
        if !self.incomplete.is_empty() {
            let points: Vec<(f64, f64)> =
                self.incomplete.iter().map(|(_, x, y)| (*x, *y)).collect();
            series.push(SeriesView {
                label: "did not complete".into(),
                values: at(&points),
                points_only: true,
            });
        }
        #[derive(Serialize)]
        struct RowView {
            time: String,
            name: String,
            status: String,
            value: String,
            path: String,
        }
        let rows: Vec<RowView> = entries
            .iter()
            .map(|e| RowView {
                time: e
                    .started_at
                    .parse::<jiff::Timestamp>()
                    .map(|t| t.strftime("%Y-%m-%d %H:%M:%S").to_string())
                    .unwrap_or_else(|_| "-".into()),
                name: e.name.clone(),
                status: e.status.clone(),
                value: e
                    .figure(self.key)
                    .map_or("n/a".to_string(), |v| format!("{v:.2}")),
                path: e.path.display().to_string(),
            })
            .collect();
        let data = serde_json::json!({ "x": xs, "series": series, "unit": self.unit, "title": format!("{} across runs", self.label) });
        let mut env = Environment::new();
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::Html);
        env.add_template("trend.html", PAGE)
            .expect("the trend page parses");
        env.get_template("trend.html")
            .expect("template exists")
            .render(context! {
                title => format!("volley trend: {}", self.label),
                key => self.key,
                unit => self.unit,
                rows => Value::from(Serde(&rows)),
                left_out => Value::from(Serde(&self.left_out)),
                data => crate::html::script_json(&data),
                uplot_js => crate::html::UPLOT_JS,
                uplot_css => crate::html::UPLOT_CSS,
            })
            .expect("the trend page renders")
    }
}

const PAGE: &str = r##"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title>
<style>{{ uplot_css|safe }}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1100px;padding:16px;color:#222}
h1{font-size:22px;margin:8px 0}table{border-collapse:collapse;margin:6px 0 14px}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}
td.num{text-align:right}.note{color:#555}
</style></head><body>
<h1>{{ title }}</h1>
<p class="note">One point per run (a run group: the mean of its runs), one line per plan run under a name; crosses are runs that did not complete. Drag to zoom, double-click to reset.</p>
<div id="chart"></div>
<table><tr><th>start (UTC)</th><th>name</th><th>status</th><th>{{ key }} ({{ unit }})</th><th>directory</th></tr>
{% for r in rows %}<tr><td>{{ r.time }}</td><td>{{ r.name }}</td><td>{{ r.status }}</td><td class="num">{{ r.value }}</td><td>{{ r.path }}</td></tr>
{% endfor %}</table>
{% for l in left_out %}<p class="note">Not drawn: {{ l }}</p>{% endfor %}
<script type="application/json" id="data">{{ data|safe }}</script>
<script>{{ uplot_js|safe }}</script>
<script>
(function () {
  var d = JSON.parse(document.getElementById("data").textContent);
  var el = document.getElementById("chart");
  var colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"];
  var series = [{ label: "start" }];
  d.series.forEach(function (s, i) {
    if (s.points_only) {
      series.push({ label: s.label, stroke: "#d62728", paths: function () { return null; }, points: { show: true, size: 10, fill: "#d62728" } });
    } else {
      series.push({ label: s.label, stroke: colors[i % colors.length], width: 2, spanGaps: true, points: { show: true, size: 7 } });
    }
  });
  var width = Math.max(320, Math.min(el.clientWidth || 1000, 1060));
  // The y axis starts at 0, as in the images; a little room either side of the first and last run.
  var scales = {
    x: { time: true, range: function (u, lo, hi) { var pad = Math.max((hi - lo) * 0.05, 30); return [lo - pad, hi + pad]; } },
    y: { range: function (u, lo, hi) { return [0, Math.max(hi, 0.001) * 1.1]; } }
  };
  new uPlot({ title: d.title, width: width, height: 360, scales: scales, series: series,
              axes: [{ label: "run start" }, { label: d.unit }] },
            [d.x].concat(d.series.map(function (s) { return s.values; })), el);
})();
</script>
</body></html>
"##;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Entry, Kind};

    fn entry(name: &str, at: &str, status: &str, v: Option<f64>) -> Entry {
        Entry {
            kind: Kind::Run,
            split: Some("single".into()),
            path: PathBuf::from(format!("runs/{name}-{at}")),
            name: name.into(),
            started_at: at.into(),
            plan: String::new(),
            plan_hash: "a1b2c3d4e5f60718".into(),
            status: status.into(),
            problem: None,
            thresholds: None,
            figures: v
                .map(|v| [("ttfb_p99_ms".to_string(), v)].into_iter().collect())
                .unwrap_or_default(),
            runs: Vec::new(),
        }
    }

    #[test]
    fn lines_per_name_and_incomplete_runs_apart() {
        let entries = [
            entry("api", "2026-11-01T10:00:00Z", "complete", Some(10.0)),
            entry("web", "2026-11-02T10:00:00Z", "complete", Some(30.0)),
            entry("api", "2026-11-03T10:00:00Z", "aborted", Some(90.0)),
            entry("api", "2026-11-04T10:00:00Z", "complete", Some(12.0)),
            entry("api", "2026-11-05T10:00:00Z", "unreadable", None),
        ];
        let t = Trend::of(&entries, "ttfb_p99_ms");
        assert_eq!(t.series.len(), 2);
        assert_eq!(
            t.series[0].1.iter().map(|p| p.1).collect::<Vec<_>>(),
            [10.0, 12.0]
        );
        assert_eq!(t.incomplete.len(), 1);
        assert_eq!(t.left_out.len(), 1);
        assert!(
            t.left_out[0].contains("unreadable") && t.left_out[0].contains("no such figure"),
            "{:?}",
            t.left_out
        );
        assert_eq!((t.unit, t.label.as_str()), ("ms", "TTFB p99 (per request)"));
        let page = t.html(&entries);
        assert!(
            page.contains("uPlot")
                && page.contains("did not complete")
                && page.contains("Not drawn: runs&#x2f;api-2026-11-05"),
            "{page}"
        );
        let dir = tempfile::tempdir().unwrap();
        let files = t.save_images(&dir.path().join("trend")).unwrap();
        let svg = std::fs::read_to_string(&files[0]).unwrap();
        assert!(
            svg.contains("TTFB p99 (per request) across runs") && svg.contains("11-0"),
            "dates on the x axis"
        );
    }

    #[test]
    fn one_line_per_plan_not_per_name() {
        let mut other = entry("api", "2026-11-02T10:00:00Z", "complete", Some(50.0));
        other.plan = "GET /rooms · 200 VUs · 1m".into();
        other.plan_hash = "ffff000011112222".into();
        let mut first = entry("api", "2026-11-01T10:00:00Z", "complete", Some(10.0));
        first.plan = "GET /rooms · 20 VUs · 1m".into();
        let mut again = entry("api", "2026-11-03T10:00:00Z", "complete", Some(12.0));
        again.plan = first.plan.clone();
        let t = Trend::of(&[first, other, again], "ttfb_p99_ms");
        let lines: Vec<(&str, Vec<f64>)> = t
            .series
            .iter()
            .map(|(l, p)| (l.as_str(), p.iter().map(|p| p.1).collect()))
            .collect();
        assert_eq!(
            lines,
            [
                ("api · GET /rooms · 20 VUs · 1m", vec![10.0, 12.0]),
                ("api · GET /rooms · 200 VUs · 1m", vec![50.0]),
            ]
        );
    }
}
