//! Which charts a run and a comparison have — their titles, lines, units and axes — as
//! data. [`crate::charts`] draws them into PNG and SVG files (plotters) and [`crate::html`]
//! onto the page (uPlot), so a chart added here shows in both.

use std::collections::{BTreeMap, HashMap};

use volley_formats::{HistKey, Source};
use volley_stats::{SeedSuite, SuiteOptions};

use crate::inputs::{ReportOptions, warmup_seconds};

/// What an axis counts; its label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Transactions per second.
    Tps,
    /// Virtual users.
    Vus,
    /// Virtual users, and the watched workload's ready pods (`--kube`) on the same axis.
    VusPods,
    /// Milliseconds.
    Ms,
    /// Failed requests.
    Errors,
    /// Scraped counts.
    Count,
    /// A share, in % (an error rate).
    Pct,
}

impl Unit {
    /// The axis label.
    pub fn label(self) -> &'static str {
        match self {
            Unit::Tps => "TPS (requests/s)",
            Unit::Vus => "VUs",
            Unit::VusPods => "VUs, ready pods",
            Unit::Ms => "ms",
            Unit::Errors => "errors per interval",
            Unit::Count => "count",
            Unit::Pct => "%",
        }
    }
}

/// The x axis of a chart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum XAxis {
    /// Seconds from the start, from 0 to `max_s`.
    Elapsed {
        /// The end of the axis.
        max_s: f64,
    },
    /// Percentiles, placed at −log10(1 − q): 0 is p0, 4 is p99.99.
    Percentile,
    /// The load offered (a capacity search's probes), from 0 to `max`, in `label`'s unit.
    Load {
        /// The end of the axis.
        max: f64,
        /// `offered load (req/s)` or `virtual users`.
        label: &'static str,
    },
    /// When each run started, seconds since the Unix epoch (UTC), from `from` to `to` (a
    /// figure's trend across the run history).
    Time {
        /// The start of the axis.
        from: f64,
        /// The end of the axis.
        to: f64,
    },
}

impl XAxis {
    /// The axis label.
    pub fn label(self) -> &'static str {
        match self {
            XAxis::Elapsed { .. } => "elapsed (s)",
            XAxis::Percentile => "percentile",
            XAxis::Load { label, .. } => label,
            XAxis::Time { .. } => "run start (UTC)",
        }
    }

    /// Where the axis starts and ends.
    pub fn range(self) -> (f64, f64) {
        match self {
            XAxis::Elapsed { max_s } => (0.0, max_s),
            XAxis::Percentile => (0.0, 4.0),
            XAxis::Load { max, .. } => (0.0, max),
            XAxis::Time { from, to } => (from, to),
        }
    }
}

/// How a line's values are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Style {
    /// Joined points.
    #[default]
    Line,
    /// A limit (an SLO, a target): a dashed line.
    Limit,
    /// Points alone, not joined (probes that failed).
    Dots,
    /// A count that holds until it changes (ready pods): a step line, level between points.
    Step,
    /// The x range from its first point to its last, shaded over the whole height (a
    /// capacity's bracket); the values' y is not drawn.
    Span,
}

impl Style {
    /// Its name on the page (`assets/charts.js`).
    pub fn name(self) -> &'static str {
        match self {
            Style::Line => "line",
            Style::Limit => "limit",
            Style::Dots => "dots",
            Style::Step => "step",
            Style::Span => "span",
        }
    }
}

/// One line of a chart: a value, or a gap, per x of the chart.
#[derive(Debug, Clone)]
pub struct Line {
    /// Legend.
    pub label: String,
    /// Aligned with [`Chart::x`].
    pub values: Vec<Option<f64>>,
    /// Drawn against the right axis ([`Chart::y2`]).
    pub right: bool,
    /// How it is drawn.
    pub style: Style,
}

impl Line {
    /// A line of `values` (`None`: a gap).
    pub fn new(label: &str, values: impl IntoIterator<Item = Option<f64>>) -> Line {
        Line {
            label: label.to_string(),
            values: values.into_iter().collect(),
            right: false,
            style: Style::Line,
        }
    }

    /// The same values drawn in `style`.
    pub fn styled(self, style: Style) -> Line {
        Line { style, ..self }
    }

    /// A line of `values`; a value that is not a number (a figure the interval cannot give,
    /// such as the TPS of an imported file's edge second) is no point.
    fn of(label: &str, values: &[f64]) -> Line {
        Line::new(label, values.iter().map(|v| v.is_finite().then_some(*v)))
    }
}

/// One chart with lines over a shared x.
#[derive(Debug, Clone)]
pub struct Chart {
    /// Its image files' stem (`tps` → `tps.png`, `tps.svg`).
    pub name: &'static str,
    /// Caption.
    pub title: String,
    /// The x axis.
    pub x_axis: XAxis,
    /// The left axis.
    pub y: Unit,
    /// The right axis, for lines marked `right`.
    pub y2: Option<Unit>,
    /// Whether it is also drawn into image files (the HTML page draws every chart).
    pub image: bool,
    /// The x of every point.
    pub x: Vec<f64>,
    /// The lines, each in the next palette colour.
    pub lines: Vec<Line>,
}

impl Chart {
    /// The points of `line`, gaps left out.
    pub fn points<'a>(&'a self, line: &'a Line) -> impl Iterator<Item = (f64, f64)> + 'a {
        self.x
            .iter()
            .zip(&line.values)
            .filter_map(|(x, v)| v.map(|v| (*x, v)))
    }
}

/// Grouped bars, one group per figure and one bar per run; drawn into image files only
/// (the comparison page shows their SVG).
#[derive(Debug, Clone)]
pub struct Bars {
    /// Its image files' stem.
    pub name: &'static str,
    /// Caption.
    pub title: String,
    /// The y axis.
    pub unit: Unit,
    /// The groups along x.
    pub groups: Vec<&'static str>,
    /// Each run's label and one value per group.
    pub runs: Vec<(String, Vec<f64>)>,
}

/// The per-interval series a run's charts draw.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Timeline {
    /// Seconds from the start (after warm-up) of each interval.
    pub t: Vec<f64>,
    /// TPS.
    pub tps: Vec<f64>,
    /// VUs.
    pub vusers: Vec<f64>,
    /// Mean TTFB, ms.
    pub mttfb: Vec<f64>,
    /// TTFB p99 per interval, ms (`None` where the source has no per-request data).
    pub ttfb_p99: Vec<Option<f64>>,
    /// Errors per interval.
    pub errors: Vec<f64>,
    /// The watched workload's ready pods at each interval's start (`--kube`: kube.csv's
    /// `kube_pods_ready`, the workloads summed); empty without.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ready_pods: Vec<Option<f64>>,
}

impl Timeline {
    /// Adds one interval's point: its row and the p99 TTFB of its requests, ms.
    pub fn push(&mut self, row: &volley_stats::Interval, ttfb_p99: Option<f64>) {
        self.t.push(row.start_s + row.period_s);
        self.tps.push(row.tps);
        self.vusers.push(row.vusers);
        self.mttfb.push(row.mttfb_ms);
        self.errors.push(row.errors as f64);
        self.ttfb_p99.push(ttfb_p99);
    }

    /// The timeline of `src` after its warm-up.
    pub fn of(src: &Source, opts: ReportOptions) -> Timeline {
        let warmup = warmup_seconds(src, opts.warmup);
        let rows = &src.series.intervals;
        // Each row's p99 in one pass over the log, rows by their index in the whole series.
        let mut p99 = vec![None; rows.len()];
        src.each_interval(HistKey::TTFB, |i, h| {
            if !h.is_empty() {
                p99[i] = Some(h.value_at_percentile(99.0) as f64 / 1000.0);
            }
        });
        // Ready pods per row: the gauge sampled at the row's start, summed over workloads
        // (the first instant credited to the row: the last row also takes the end's).
        let mut at: Vec<Option<(f64, f64)>> = vec![None; rows.len()];
        for p in src
            .kube
            .iter()
            .filter(|p| p.series == "kube_pods_ready" && p.value.is_finite())
        {
            let Some(i) = p.row(rows) else { continue };
            match &mut at[i] {
                Some((t, v)) if (*t - p.elapsed_s).abs() < 1e-6 => *v += p.value,
                Some((t, _)) if *t < p.elapsed_s => {}
                slot => *slot = Some((p.elapsed_s, p.value)),
            }
        }
        let ready: Vec<Option<f64>> = at.iter().map(|a| a.map(|(_, v)| v)).collect();
        let mut out = Timeline::default();
        for (i, (row, p99)) in rows.iter().zip(p99).enumerate() {
            // The drain after the stop has no length and so no TPS: it is not a point in time.
            if row.start_s + 1e-9 < warmup || row.period_s <= 0.0 {
                continue;
            }
            out.push(row, p99);
            if !src.kube.is_empty() {
                out.ready_pods.push(ready[i]);
            }
        }
        out
    }
}

/// `src`'s server readings at the x of the series row each is credited to. A gauge taken at
/// the run's very end opens no row (reports credit it to the last one, which the gauge before
/// it already holds): it is left off the chart rather than drawn twice at one x.
fn on_the_timeline(src: &Source) -> Vec<volley_formats::rundir::ServerPoint> {
    let rows = &src.series.intervals;
    src.server
        .iter()
        .filter(|p| SERVER_DRAWN.iter().any(|d| p.series.starts_with(d)))
        .filter_map(|p| {
            let row = &rows[p.row(rows)?];
            if !p.rate && (p.elapsed_s - row.start_s).abs() > 1e-6 {
                return None;
            }
            Some(volley_formats::rundir::ServerPoint {
                elapsed_s: row.start_s + row.period_s,
                ..p.clone()
            })
        })
        .collect()
}

/// Scraped series drawn over time: the pool's queue and use, busy worker threads.
const SERVER_DRAWN: [&str; 3] = [
    "hikaricp_connections_pending",
    "hikaricp_connections_active",
    "tomcat_threads_busy_threads",
];

/// A percentile curve: (x = −log10(1 − q), latency ms), up to 99.99 %.
pub fn percentile_curve(src: &Source, key: HistKey, warmup_s: f64) -> Vec<(f64, f64)> {
    curve_of(&src.merged(key, warmup_s))
}

/// The percentile curve of one histogram of µs: (x = −log10(1 − q), latency ms), each point
/// read by HdrHistogram's rule ([`volley_stats::rank`]).
pub fn curve_of(h: &hdrhistogram::Histogram<u64>) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    let xs: [f64; 81] = std::array::from_fn(|i| i as f64 * 0.05);
    let values = volley_stats::rank::in_histogram(h, xs.map(|x| 100.0 * (1.0 - 10f64.powf(-x))));
    xs.into_iter()
        .zip(values)
        .map(|(x, us)| (x, us as f64 / 1000.0))
        .collect()
}

/// What a run's charts are drawn from: gathered from a result on disk ([`RunFigures::of`]),
/// or interval by interval while the run goes (the live dashboard), so that both draw the
/// same charts ([`RunFigures::charts`]).
#[derive(Debug, Clone, Default)]
pub struct RunFigures {
    /// The run's name (in every title).
    pub name: String,
    /// The per-interval series.
    pub timeline: Timeline,
    /// Each scenario step's MTTFB per point of the timeline (`None`: no success then).
    pub steps: Vec<(String, Vec<Option<f64>>)>,
    /// Scraped server values, each placed at the end of the series row it is credited to
    /// (`ServerPoint::row`), as the timeline's points are, so that a reading and the load
    /// beside it are drawn at one x; those up to `warmup_s` are left out, the rest shifted by it.
    pub server: Vec<volley_formats::rundir::ServerPoint>,
    /// Seconds excluded from the start.
    pub warmup_s: f64,
    /// Latency by percentile: TTFB and total time over the run, as [`curve_of`] gives them.
    pub curves: Vec<(&'static str, Vec<(f64, f64)>)>,
}

impl RunFigures {
    /// The figures of `src` after its warm-up.
    pub fn of(src: &Source, opts: ReportOptions) -> RunFigures {
        let timeline = Timeline::of(src, opts);
        let warmup = warmup_seconds(src, opts.warmup);
        // Steps share the run's interval grid; a step without successes in an interval is a gap.
        let ms = |t: f64| (t * 1000.0).round() as i64;
        let steps = src
            .per_test
            .iter()
            .map(|(label, series)| {
                let rows = series.after_warmup(warmup);
                let by_t: HashMap<i64, f64> = rows
                    .intervals
                    .iter()
                    .filter(|i| i.tests > 0)
                    .map(|i| (ms(i.start_s + i.period_s), i.mttfb_ms))
                    .collect();
                (
                    label.clone(),
                    timeline
                        .t
                        .iter()
                        .map(|t| by_t.get(&ms(*t)).copied())
                        .collect(),
                )
            })
            .collect();
        let curves = [("TTFB", HistKey::TTFB), ("Total time", HistKey::TOTAL)]
            .into_iter()
            .map(|(l, k)| (l, percentile_curve(src, k, warmup)))
            .collect();
        RunFigures {
            name: src.name.clone(),
            timeline,
            steps,
            server: on_the_timeline(src),
            warmup_s: warmup,
            curves,
        }
    }

    /// The run's charts, in page order.
    pub fn charts(&self) -> Vec<Chart> {
        let tl = &self.timeline;
        let name = &self.name;
        let elapsed = XAxis::Elapsed {
            max_s: tl
                .t
                .iter()
                .copied()
                .filter(|t| t.is_finite())
                .fold(0.0, f64::max)
                .max(1.0),
        };
        let over_time = |file, title: &str, y, lines| Chart {
            name: file,
            title: format!("{name}: {title}"),
            x_axis: elapsed,
            y,
            y2: None,
            image: true,
            x: tl.t.clone(),
            lines,
        };
        let mut tps_lines = vec![
            Line::of("TPS", &tl.tps),
            Line {
                right: true,
                ..Line::of("VUs", &tl.vusers)
            },
        ];
        let pods = tl.ready_pods.iter().any(Option::is_some);
        if pods {
            tps_lines.push(Line {
                right: true,
                ..Line::new("ready pods", tl.ready_pods.iter().copied()).styled(Style::Step)
            });
        }
        let mut charts = vec![
            Chart {
                y2: Some(if pods { Unit::VusPods } else { Unit::Vus }),
                ..over_time(
                    "tps",
                    if pods {
                        "TPS, VUs and ready pods"
                    } else {
                        "TPS and VUs"
                    },
                    Unit::Tps,
                    tps_lines,
                )
            },
            over_time(
                "ttfb",
                "time to first byte",
                Unit::Ms,
                vec![
                    Line::of("MTTFB (interval mean)", &tl.mttfb),
                    Line::new("TTFB p99 (per request)", tl.ttfb_p99.iter().copied()),
                ],
            ),
            over_time(
                "errors",
                "errors per interval",
                Unit::Errors,
                vec![Line::of("errors", &tl.errors)],
            ),
        ];
        if !self.steps.is_empty() {
            let lines = self
                .steps
                .iter()
                .map(|(label, v)| Line::new(label, v.iter().copied()))
                .collect();
            charts.push(over_time("steps", "MTTFB per step", Unit::Ms, lines));
        }
        let (x, lines) = server_lines(&self.server, self.warmup_s);
        if !lines.is_empty() {
            charts.push(Chart {
                x,
                ..over_time("server", "server (scraped)", Unit::Count, lines)
            });
        }
        charts.extend(percentiles(
            "percentiles",
            format!("{name}: latency by percentile"),
            &self.curves,
        ));
        charts
    }
}

/// The charts of one run (or result file), in page order.
pub fn run_set(src: &Source, opts: ReportOptions) -> Vec<Chart> {
    RunFigures::of(src, opts).charts()
}

/// The lines of a comparison, in page order: TPS and MTTFB over time (on the page only) and
/// the TTFB percentile curves of all runs.
pub fn compare_set(sources: &[Source], labels: &[String], opts: ReportOptions) -> Vec<Chart> {
    let mut charts = Vec::new();
    let timelines: Vec<Timeline> = sources.iter().map(|s| Timeline::of(s, opts)).collect();
    if let Some(longest) = timelines.iter().max_by_key(|t| t.t.len()) {
        let x = longest.t.clone();
        let x_axis = XAxis::Elapsed {
            max_s: x.iter().copied().fold(0.0, f64::max).max(1.0),
        };
        let pad =
            |v: &[f64]| -> Vec<Option<f64>> { (0..x.len()).map(|i| v.get(i).copied()).collect() };
        let per_run = |pick: fn(&Timeline) -> &Vec<f64>| {
            timelines
                .iter()
                .zip(labels)
                .map(|(t, l)| Line::new(l, pad(pick(t))))
                .collect()
        };
        let over_time = |name, title: &str, y, lines| Chart {
            name,
            title: title.to_string(),
            x_axis,
            y,
            y2: None,
            image: false,
            x: x.clone(),
            lines,
        };
        charts.push(over_time(
            "tps-over-time",
            "TPS over time, per phase",
            Unit::Tps,
            per_run(|t| &t.tps),
        ));
        charts.push(over_time(
            "mttfb-over-time",
            "MTTFB over time, per phase",
            Unit::Ms,
            per_run(|t| &t.mttfb),
        ));
    }
    let curves: Vec<(&str, Vec<(f64, f64)>)> = sources
        .iter()
        .zip(labels)
        .map(|(s, l)| {
            (
                l.as_str(),
                percentile_curve(s, HistKey::TTFB, warmup_seconds(s, opts.warmup)),
            )
        })
        .collect();
    charts.extend(percentiles(
        "percentiles",
        "TTFB by percentile, per phase".to_string(),
        &curves,
    ));
    charts
}

/// The grouped bars of a comparison: TPS and MTTFB by phase.
pub fn compare_bars(sources: &[Source], labels: &[String], opts: ReportOptions) -> Vec<Bars> {
    let suites: Vec<(String, SeedSuite)> = sources
        .iter()
        .zip(labels)
        .map(|(s, l)| {
            (
                l.clone(),
                SeedSuite::compute(
                    &s.series.after_warmup(warmup_seconds(s, opts.warmup)),
                    SuiteOptions {
                        tps_tail: opts.tps_tail,
                    },
                ),
            )
        })
        .collect();
    let groups = vec!["avg", "p50", "p95", "p99", "p99.9"];
    let bars = |name, title: &str, unit, pick: fn(&SeedSuite) -> Vec<f64>| Bars {
        name,
        title: title.to_string(),
        unit,
        groups: groups.clone(),
        runs: suites.iter().map(|(l, s)| (l.clone(), pick(s))).collect(),
    };
    vec![
        bars("tps", "TPS by phase (higher is better)", Unit::Tps, |s| {
            vec![s.tps_avg, s.tps_p50, s.tps_p95, s.tps_p99, s.tps_p99_9]
        }),
        bars("mttfb", "MTTFB by phase (lower is better)", Unit::Ms, |s| {
            vec![
                s.mttfb_avg_ms,
                s.mttfb_p50_ms,
                s.mttfb_p95_ms,
                s.mttfb_p99_ms,
                s.mttfb_p99_9_ms,
            ]
        }),
    ]
}

/// Percentile curves sharing one x; the empty ones are left out, and with them all, the chart.
fn percentiles(
    name: &'static str,
    title: String,
    curves: &[(&str, Vec<(f64, f64)>)],
) -> Option<Chart> {
    let drawn: Vec<&(&str, Vec<(f64, f64)>)> =
        curves.iter().filter(|(_, c)| !c.is_empty()).collect();
    let (_, first) = drawn.first()?;
    Some(Chart {
        name,
        title,
        x_axis: XAxis::Percentile,
        y: Unit::Ms,
        y2: None,
        image: true,
        x: first.iter().map(|p| p.0).collect(),
        lines: drawn
            .iter()
            .map(|(l, c)| Line::new(l, c.iter().map(|p| Some(p.1))))
            .collect(),
    })
}

/// The drawn server series after warm-up on one x: every scrape time, as often as a series
/// has values at it (several targets may expose the same series), so that each line keeps
/// its points in order and a series missing from a scrape is a gap.
fn server_lines(
    points: &[volley_formats::rundir::ServerPoint],
    warmup_s: f64,
) -> (Vec<f64>, Vec<Line>) {
    let ms = |t: f64| (t * 1000.0).round() as i64;
    let mut series: Vec<(&str, BTreeMap<i64, Vec<f64>>)> = Vec::new();
    let mut times: BTreeMap<i64, f64> = BTreeMap::new();
    for p in points.iter().filter(|p| {
        p.elapsed_s > warmup_s + 1e-9 && SERVER_DRAWN.iter().any(|d| p.series.starts_with(d))
    }) {
        let t = p.elapsed_s - warmup_s;
        times.entry(ms(t)).or_insert(t);
        let at = match series.iter().position(|(s, _)| *s == p.series) {
            Some(i) => &mut series[i].1,
            None => {
                series.push((&p.series, BTreeMap::new()));
                &mut series.last_mut().expect("just pushed").1
            }
        };
        at.entry(ms(t)).or_default().push(p.value);
    }
    let slots: Vec<(i64, usize)> = times
        .keys()
        .flat_map(|k| {
            (0..series
                .iter()
                .map(|(_, v)| v.get(k).map_or(0, Vec::len))
                .max()
                .unwrap_or(0))
                .map(move |j| (*k, j))
        })
        .collect();
    let x = slots.iter().map(|(k, _)| times[k]).collect();
    let lines = series
        .iter()
        .map(|(label, v)| {
            Line::new(
                label,
                slots
                    .iter()
                    .map(|(k, j)| v.get(k).and_then(|vals| vals.get(*j)).copied()),
            )
        })
        .collect();
    (x, lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_has_its_charts_in_page_order() {
        let dir = tempfile::tempdir().unwrap();
        let src = crate::testrun::run(dir.path(), "r", 3, 20, 5, &[]);
        let set = run_set(&src, ReportOptions::default());
        let names: Vec<&str> = set.iter().map(|c| c.name).collect();
        assert_eq!(names, ["tps", "ttfb", "errors", "percentiles"]);
        assert_eq!(set[0].title, "r: TPS and VUs");
        assert_eq!((set[0].y, set[0].y2), (Unit::Tps, Some(Unit::Vus)));
        assert!(set[0].lines[1].right);
        for c in &set {
            assert!(
                c.lines.iter().all(|l| l.values.len() == c.x.len()),
                "{}",
                c.name
            );
        }
        assert_eq!(set[3].x_axis, XAxis::Percentile);
        assert_eq!(
            set[3]
                .lines
                .iter()
                .map(|l| l.label.as_str())
                .collect::<Vec<_>>(),
            ["TTFB", "Total time"]
        );
    }

    #[test]
    fn server_lines_keep_their_points_when_targets_and_scrapes_differ() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, pending) = (
            "http://a/metrics",
            "http://b/metrics",
            "hikaricp_connections_pending",
        );
        let scrapes = [
            (1.0, a, pending, 1.0),
            (1.0, b, pending, 2.0),
            (2.0, a, pending, 3.0),
            (2.0, a, "tomcat_threads_busy_threads", 7.0),
        ];
        let src = crate::testrun::run(dir.path(), "r", 3, 1, 5, &scrapes);
        let server = run_set(&src, ReportOptions::default())
            .into_iter()
            .find(|c| c.name == "server")
            .unwrap();
        // Each gauge is drawn with the interval it opens, as the load beside it is: the scrape
        // at 1 s with the interval 1–2 s, drawn at 2 s like that interval's VUs and TPS.
        assert_eq!(server.x, [2.0, 2.0, 3.0]);
        let points = |i: usize| server.points(&server.lines[i]).collect::<Vec<_>>();
        assert_eq!(points(0), [(2.0, 1.0), (2.0, 2.0), (3.0, 3.0)]);
        assert_eq!(points(1), [(3.0, 7.0)]);
    }
}
