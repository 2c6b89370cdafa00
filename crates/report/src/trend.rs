//! One figure across the run history, over time — how teams watch a service across releases:
//! a chart of [`crate::chartset`] drawn as PNG and SVG by [`crate::charts`], and a
//! self-contained HTML page of [`crate::html`] with the runs' table (a [`Doc`]) and the chart. One line per plan
//! run under a name (runs of one name with different plans are different lines); runs that did not run their course are drawn as separate dots, not joined to the
//! line, since their figures cover only part of the plan.

use std::path::{Path, PathBuf};

use serde::Serialize;
use volley_formats::numfmt::fixed2;

use crate::chartset::{Chart, Line, Style, Unit, XAxis};
use crate::doc::{Answer, Block, Cell, Doc, Section};
use crate::error::Result;
use crate::history::Entry;
use volley_scenario::words;

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

    /// The trend as a chart of [`crate::chartset`]: one line per plan run under a name, the
    /// runs that did not complete as dots, over the runs' start times; the images and the
    /// page draw it as they draw every other chart.
    pub fn chart(&self) -> Chart {
        // One x for all lines: every point's time, each line a gap elsewhere.
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
        let mut lines: Vec<Line> = self
            .series
            .iter()
            .map(|(name, points)| Line::new(name, at(points)))
            .collect();
        if !self.incomplete.is_empty() {
            let points: Vec<(f64, f64)> =
                self.incomplete.iter().map(|(_, x, y)| (*x, *y)).collect();
            lines.push(Line::new("did not complete", at(&points)).styled(Style::Dots));
        }
        let (from, to) = self.x_range();
        Chart {
            name: "trend",
            title: format!("{} across runs", self.label),
            x_axis: XAxis::Time { from, to },
            y: match self.unit {
                "ms" => Unit::Ms,
                "%" => Unit::Pct,
                "tests" => Unit::Count,
                _ => Unit::Tps,
            },
            y2: None,
            image: true,
            x: xs.clone(),
            lines,
        }
    }

    /// Draws the trend into `<stem>.svg` and `<stem>.png`.
    pub fn save_images(&self, stem: &Path) -> Result<Vec<PathBuf>> {
        crate::charts::save_chart_as(stem, &self.chart())
    }

    /// The trend as a document: what it draws, the runs' table, and the runs not drawn.
    pub fn doc(&self, entries: &[Entry]) -> Doc {
        let rows = entries
            .iter()
            .map(|e| {
                vec![
                    Cell::from(
                        e.started_at
                            .parse::<jiff::Timestamp>()
                            .map(|t| t.strftime("%Y-%m-%d %H:%M:%S").to_string())
                            .unwrap_or_else(|_| "-".into()),
                    ),
                    Cell::prose(e.name.as_str()),
                    Cell::prose(e.status.as_str()),
                    Cell::from(e.figure(self.key).map_or("n/a".to_string(), fixed2)),
                    Cell::prose(e.path.display().to_string()),
                ]
            })
            .collect();
        let mut sections = vec![Section::new(
            "runs",
            "Runs",
            "one point per run (a run group: the mean of its runs), one line per plan run under a name; dots are runs that did not complete",
            Block::Table {
                header: vec![
                    "start (UTC)".into(),
                    "name".into(),
                    "status".into(),
                    format!("{} ({})", self.key, self.unit),
                    "directory".into(),
                ],
                rows,
            },
        )];
        if !self.left_out.is_empty() {
            let notes = self
                .left_out
                .iter()
                .map(|l| format!("Not drawn: {l}"))
                .collect();
            sections.push(Section::new(
                "left_out",
                "Not drawn",
                "",
                Block::Notes(notes),
            ));
        }
        let drawn: usize = self.series.iter().map(|(_, p)| p.len()).sum();
        Doc {
            title: format!("{} across runs", self.label),
            answer: Answer {
                summary: Some(format!(
                    "{} drawn in {}, {} that did not complete apart; {} not drawn.",
                    words::counted(drawn, "run"),
                    words::counted(self.series.len(), "line"),
                    self.incomplete.len(),
                    self.left_out.len()
                )),
                ..Answer::default()
            },
            sections,
            ..Doc::default()
        }
    }

    /// The self-contained HTML page: the runs' table and the interactive chart, drawn as on
    /// every report page.
    pub fn html(&self, entries: &[Entry]) -> String {
        crate::html::render(
            &format!("volley trend: {}", self.label),
            &[self.doc(entries).html()],
            vec![self.chart()],
            Vec::new(),
        )
    }
}

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
