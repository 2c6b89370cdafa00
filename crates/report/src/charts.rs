//! Charts as SVG and PNG (plotters, with an embedded DejaVu Sans so that no system font
//! library is needed): for a run, TPS with VUs, TTFB mean and p99, errors, and the latency
//! percentile plot; for a comparison, the seeds' grouped bars of TPS and MTTFB per phase and
//! the percentile plots of all runs overlaid.

use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::prelude::*;
use volley_formats::Source;
use volley_formats::hlog::{TAG_TOTAL, TAG_TTFB};

use crate::model::{ReportOptions, warmup_seconds};

/// Size of every chart, pixels.
pub const SIZE: (u32, u32) = (960, 480);

const FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
const PALETTE: [RGBColor; 6] =
    [RGBColor(31, 119, 180), RGBColor(255, 127, 14), RGBColor(44, 160, 44), RGBColor(214, 39, 40), RGBColor(148, 103, 189), RGBColor(140, 86, 75)];

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
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
}

impl Timeline {
    /// The timeline of `src` after its warm-up.
    pub fn of(src: &Source, opts: ReportOptions) -> Timeline {
        let warmup = warmup_seconds(src, opts.warmup);
        let series = src.series.after_warmup(warmup);
        let hists = src.per_interval(TAG_TTFB, warmup);
        let mut out = Timeline::default();
        for (i, row) in series.intervals.iter().enumerate() {
            out.t.push(row.start_s + row.period_s);
            out.tps.push(row.tps);
            out.vusers.push(row.vusers);
            out.mttfb.push(row.mttfb_ms);
            out.errors.push(row.errors as f64);
            out.ttfb_p99.push(hists.as_ref().and_then(|h| h.get(i)).filter(|h| !h.is_empty()).map(|h| h.value_at_percentile(99.0) as f64 / 1000.0));
        }
        out
    }
}

/// Each test id's or scenario step's MTTFB per interval, as (name, [(elapsed s, ms)]),
/// after warm-up; intervals without a successful request are left out.
pub fn step_lines(src: &Source, warmup_s: f64) -> Vec<(String, Vec<(f64, f64)>)> {
    src.per_test
        .iter()
        .map(|(name, series)| {
            let pts = series.after_warmup(warmup_s).intervals.iter().filter(|i| i.tests > 0).map(|i| (i.start_s + i.period_s, i.mttfb_ms)).collect();
            (name.clone(), pts)
        })
        .collect()
}

/// Scraped count series worth drawing over time (pool queue and use, busy worker
/// threads), as (series, [(elapsed s, value)]), after warm-up.
pub fn server_lines(src: &Source, warmup_s: f64) -> Vec<(String, Vec<(f64, f64)>)> {
    const DRAWN: [&str; 3] = ["hikaricp_connections_pending", "hikaricp_connections_active", "tomcat_threads_busy_threads"];
    let mut lines: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for p in src.server.iter().filter(|p| p.elapsed_s > warmup_s + 1e-9 && DRAWN.iter().any(|d| p.series.starts_with(d))) {
        let t = p.elapsed_s - warmup_s;
        match lines.iter_mut().find(|(s, _)| *s == p.series) {
            Some((_, pts)) => pts.push((t, p.value)),
            None => lines.push((p.series.clone(), vec![(t, p.value)])),
        }
    }
    lines
}

/// A percentile curve: (x = −log10(1 − q), latency ms).
pub fn percentile_curve(src: &Source, tag: &str, warmup_s: f64) -> Vec<(f64, f64)> {
    let h = src.merged(tag, warmup_s);
    if h.is_empty() {
        return Vec::new();
    }
    (0..=80)
        .map(|i| {
            let x = i as f64 * 0.05; // up to 99.99 %
            let q = 1.0 - 10f64.powf(-x);
            (x, h.value_at_quantile(q) as f64 / 1000.0)
        })
        .collect()
}

fn percent_label(x: &f64) -> String {
    let q = 100.0 * (1.0 - 10f64.powf(-x));
    if q < 99.0 { format!("{q:.0}%") } else { format!("{}%", (q * 100.0).round() / 100.0) }
}

macro_rules! render_both {
    ($dir:expr, $name:expr, |$root:ident| $body:block) => {{
        register_font();
        let svg_path = $dir.join(format!("{}.svg", $name));
        let png_path = $dir.join(format!("{}.png", $name));
        {
            let $root = SVGBackend::new(&svg_path, SIZE).into_drawing_area();
            $body
            $root.present().map_err(|e| e.to_string())?;
        }
        {
            let $root = BitMapBackend::new(&png_path, SIZE).into_drawing_area();
            $body
            $root.present().map_err(|e| e.to_string())?;
        }
        vec![svg_path, png_path]
    }};
}

fn max_of(v: impl Iterator<Item = f64>) -> f64 {
    v.filter(|x| x.is_finite()).fold(0.0, f64::max)
}

/// A run's charts into `dir`: tps, ttfb, errors, percentiles (.svg and .png each).
pub fn run_charts(src: &Source, opts: ReportOptions, dir: &Path) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let tl = Timeline::of(src, opts);
    let warmup = warmup_seconds(src, opts.warmup);
    let title = &src.name;
    let xmax = max_of(tl.t.iter().copied()).max(1.0);
    let mut files = Vec::new();

    let tps_max = max_of(tl.tps.iter().copied()).max(1.0) * 1.1;
    let vu_max = max_of(tl.vusers.iter().copied()).max(1.0) * 1.1;
    files.extend(render_both!(dir, "tps", |root| {
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{title}: TPS and VUs"), ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .right_y_label_area_size(60)
            .build_cartesian_2d(0f64..xmax, 0f64..tps_max)
            .map_err(|e| e.to_string())?
            .set_secondary_coord(0f64..xmax, 0f64..vu_max);
        chart.configure_mesh().x_desc("elapsed (s)").y_desc("TPS").draw().map_err(|e| e.to_string())?;
        chart.configure_secondary_axes().y_desc("VUs").draw().map_err(|e| e.to_string())?;
        chart
            .draw_series(LineSeries::new(tl.t.iter().copied().zip(tl.tps.iter().copied()), PALETTE[0].stroke_width(2)))
            .map_err(|e| e.to_string())?
            .label("TPS")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], PALETTE[0].stroke_width(2)));
        chart
            .draw_secondary_series(LineSeries::new(tl.t.iter().copied().zip(tl.vusers.iter().copied()), PALETTE[1].stroke_width(2)))
            .map_err(|e| e.to_string())?
            .label("VUs")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], PALETTE[1].stroke_width(2)));
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(|e| e.to_string())?;
    }));

    let p99: Vec<(f64, f64)> = tl.t.iter().zip(&tl.ttfb_p99).filter_map(|(t, p)| p.map(|p| (*t, p))).collect();
    let mut ttfb_lines = vec![("MTTFB (interval mean)".to_string(), tl.t.iter().copied().zip(tl.mttfb.iter().copied()).collect())];
    if !p99.is_empty() {
        ttfb_lines.push(("TTFB p99 (per request)".to_string(), p99));
    }
    files.extend(line_chart(dir, "ttfb", &format!("{title}: time to first byte"), "ms", xmax, &ttfb_lines, false)?);
    let errors = vec![("errors".to_string(), tl.t.iter().copied().zip(tl.errors.iter().copied()).collect())];
    files.extend(line_chart(dir, "errors", &format!("{title}: errors per interval"), "errors", xmax, &errors, false)?);

    let steps = step_lines(src, warmup);
    if !steps.is_empty() {
        files.extend(line_chart(dir, "steps", &format!("{title}: MTTFB per step"), "ms", xmax, &steps, false)?);
    }
    let server = server_lines(src, warmup);
    if !server.is_empty() {
        files.extend(line_chart(dir, "server", &format!("{title}: server (scraped)"), "count", xmax, &server, false)?);
    }
    let curves: Vec<(String, Vec<(f64, f64)>)> = [("TTFB", TAG_TTFB), ("Total time", TAG_TOTAL)]
        .iter()
        .map(|(label, tag)| (label.to_string(), percentile_curve(src, tag, warmup)))
        .filter(|(_, c)| !c.is_empty())
        .collect();
    if !curves.is_empty() {
        files.extend(percentile_chart(dir, "percentiles", &format!("{title}: latency by percentile"), &curves)?);
    }
    Ok(files)
}

fn percentile_chart(dir: &Path, name: &str, caption: &str, curves: &[(String, Vec<(f64, f64)>)]) -> Result<Vec<PathBuf>, String> {
    line_chart(dir, name, caption, "ms", 4.0, curves, true)
}

/// Lines over elapsed time (or, with `percentile_axis`, over −log10(1 − q) labelled as
/// percentiles), y from 0, each line in the next palette colour.
fn line_chart(
    dir: &Path,
    name: &str,
    caption: &str,
    ydesc: &str,
    xmax: f64,
    lines: &[(String, Vec<(f64, f64)>)],
    percentile_axis: bool,
) -> Result<Vec<PathBuf>, String> {
    let ymax = max_of(lines.iter().flat_map(|(_, c)| c.iter().map(|p| p.1))).max(0.001) * 1.1;
    let xdesc = if percentile_axis { "percentile" } else { "elapsed (s)" };
    Ok(render_both!(dir, name, |root| {
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..xmax, 0f64..ymax)
            .map_err(|e| e.to_string())?;
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(xdesc).y_desc(ydesc);
        if percentile_axis {
            mesh.x_labels(5).x_label_formatter(&percent_label);
        }
        mesh.draw().map_err(|e| e.to_string())?;
        for (i, (label, points)) in lines.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            chart
                .draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2)))
                .map_err(|e| e.to_string())?
                .label(label.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        }
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(|e| e.to_string())?;
    }))
}

/// Grouped bars: for each metric (x groups) one bar per run.
fn grouped_bars(dir: &Path, name: &str, caption: &str, unit: &str, metrics: &[&str], runs: &[(String, Vec<f64>)]) -> Result<Vec<PathBuf>, String> {
    let ymax = max_of(runs.iter().flat_map(|(_, v)| v.iter().copied())).max(0.001) * 1.15;
    let n = runs.len().max(1) as f64;
    let names: Vec<String> = metrics.iter().map(|s| s.to_string()).collect();
    Ok(render_both!(dir, name, |root| {
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..metrics.len() as f64, 0f64..ymax)
            .map_err(|e| e.to_string())?;
        let labels = names.clone();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(metrics.len() * 2 + 1)
            .x_label_formatter(&move |x| {
                let i = x.floor() as usize;
                if (x - x.floor() - 0.5).abs() < 0.26 { labels.get(i).cloned().unwrap_or_default() } else { String::new() }
            })
            .y_desc(unit)
            .draw()
            .map_err(|e| e.to_string())?;
        for (j, (label, values)) in runs.iter().enumerate() {
            let color = PALETTE[j % PALETTE.len()];
            let bars = values.iter().enumerate().map(move |(i, v)| {
                let x0 = i as f64 + 0.1 + 0.8 * j as f64 / n;
                Rectangle::new([(x0, 0.0), (x0 + 0.8 / n, *v)], color.filled())
            });
            chart
                .draw_series(bars)
                .map_err(|e| e.to_string())?
                .label(label.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 15, y + 5)], color.filled()));
        }
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(|e| e.to_string())?;
    }))
}

/// A comparison's charts into `dir`: tps and mttfb grouped bars per phase, and the
/// overlaid TTFB percentile plots.
pub fn compare_charts(sources: &[Source], labels: &[String], opts: ReportOptions, dir: &Path) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let suites: Vec<(String, volley_stats::SeedSuite)> = sources
        .iter()
        .zip(labels)
        .map(|(s, l)| {
            let series = s.series.after_warmup(warmup_seconds(s, opts.warmup));
            (l.clone(), volley_stats::SeedSuite::compute(&series, volley_stats::SuiteOptions { tps_tail: opts.tps_tail }))
        })
        .collect();
    let metrics = ["avg", "p50", "p95", "p99", "p99.9"];
    let tps: Vec<(String, Vec<f64>)> =
        suites.iter().map(|(l, s)| (l.clone(), vec![s.tps_avg, s.tps_p50, s.tps_p95, s.tps_p99, s.tps_p99_9])).collect();
    let mttfb: Vec<(String, Vec<f64>)> = suites
        .iter()
        .map(|(l, s)| (l.clone(), vec![s.mttfb_avg_ms, s.mttfb_p50_ms, s.mttfb_p95_ms, s.mttfb_p99_ms, s.mttfb_p99_9_ms]))
        .collect();
    let mut files = grouped_bars(dir, "tps", "TPS by phase (higher is better)", "TPS", &metrics, &tps)?;
    files.extend(grouped_bars(dir, "mttfb", "MTTFB by phase (lower is better)", "ms", &metrics, &mttfb)?);
    let curves: Vec<(String, Vec<(f64, f64)>)> = sources
        .iter()
        .zip(labels)
        .map(|(s, l)| (l.clone(), percentile_curve(s, TAG_TTFB, warmup_seconds(s, opts.warmup))))
        .filter(|(_, c)| !c.is_empty())
        .collect();
    if !curves.is_empty() {
        files.extend(percentile_chart(dir, "percentiles", "TTFB by percentile, per phase", &curves)?);
    }
    Ok(files)
}
