//! The charts of [`crate::chartset`] drawn as SVG and PNG files (plotters, with an embedded
//! DejaVu Sans so that no system font library is needed).

use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;
use volley_formats::Source;

use crate::chartset::{self, Bars, Chart, Style, Unit, XAxis};
use crate::error::{Repr, Result};
use crate::escape::terminal_safe;
use crate::model::ReportOptions;

/// Size of every chart, pixels.
pub const SIZE: (u32, u32) = (960, 480);

const FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
/// Okabe and Ito's colours, which readers with any common colour-vision deficiency tell
/// apart (their yellow left out: it does not show on white). `assets/charts.js` draws the
/// pages' charts in the same colours, in the same order.
pub(crate) const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(213, 94, 0),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
];

/// The shade of a span (a capacity's bracket), in the pages' charts too.
const SPAN: RGBColor = RGBColor(120, 120, 120);

/// The top of a y axis whose data reach `max`: room above the data for a legend of `lines`
/// rows, drawn there (upper right) so that it covers no line or bar.
fn top_with_legend(max: f64, lines: usize) -> f64 {
    let plot_px = f64::from(SIZE.1) - 100.0;
    let legend_px = 20.0 * lines as f64 + 24.0;
    let free = (1.0 - legend_px / plot_px).max(0.5);
    max.max(0.001) * 1.05 / free
}

pub(crate) fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

/// A run's charts into `dir` (.svg and .png each): tps, ttfb, errors, and where the source
/// has them steps, server and percentiles.
pub fn run_charts(src: &Source, opts: ReportOptions, dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|e| Repr::io(dir, e))?;
    let mut files = Vec::new();
    for chart in chartset::run_set(src, opts).iter().filter(|c| c.image) {
        files.extend(save(dir, chart)?);
    }
    Ok(files)
}

/// A comparison's charts into `dir`: tps and mttfb grouped bars per phase, and the
/// overlaid TTFB percentile plots.
pub fn compare_charts(
    sources: &[Source],
    labels: &[String],
    opts: ReportOptions,
    dir: &Path,
) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|e| Repr::io(dir, e))?;
    let mut files = Vec::new();
    for bars in chartset::compare_bars(sources, labels, opts) {
        files.extend(save(dir, &bars)?);
    }
    for chart in chartset::compare_set(sources, labels, opts)
        .iter()
        .filter(|c| c.image)
    {
        files.extend(save(dir, chart)?);
    }
    Ok(files)
}

type Drawn<DB> = std::result::Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// Something plotters draws.
trait Figure {
    /// The files' stem.
    fn name(&self) -> &str;
    /// Draws onto `root`.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB>;
}

/// Draws `fig` into `<dir>/<name>.svg` and `.png`.
/// The PNG files among `files` as Markdown image links from the directory above `charts/`:
/// `(stem, "charts/<name>.png")`.
pub fn png_links(files: &[PathBuf]) -> Vec<(String, String)> {
    files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "png"))
        .filter_map(|p| {
            Some((
                p.file_stem()?.to_string_lossy().into_owned(),
                format!("charts/{}", p.file_name()?.to_string_lossy()),
            ))
        })
        .collect()
}

/// One chart into `dir` as `<name>.svg` and `<name>.png`.
pub fn save_chart(dir: &Path, chart: &Chart) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|e| Repr::io(dir, e))?;
    save(dir, chart)
}

/// One chart as `<stem>.svg` and `<stem>.png` (the directory made when missing).
pub fn save_chart_as(stem: &Path, chart: &Chart) -> Result<Vec<PathBuf>> {
    if let Some(parent) = stem.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| Repr::io(parent, e))?;
    }
    save_as(stem, chart)
}

fn save(dir: &Path, fig: &impl Figure) -> Result<Vec<PathBuf>> {
    save_as(&dir.join(fig.name()), fig)
}

fn save_as(stem: &Path, fig: &impl Figure) -> Result<Vec<PathBuf>> {
    register_font();
    let with = |ext: &str| {
        let mut p = stem.as_os_str().to_owned();
        p.push(format!(".{ext}"));
        PathBuf::from(p)
    };
    let (svg, png) = (with("svg"), with("png"));
    let failed = |path: &Path, message: String| Repr::Draw {
        path: path.to_path_buf(),
        message,
    };
    {
        let root = SVGBackend::new(&svg, SIZE).into_drawing_area();
        fig.draw(&root)
            .and_then(|()| root.present())
            .map_err(|e| failed(&svg, e.to_string()))?;
    }
    {
        let root = BitMapBackend::new(&png, SIZE).into_drawing_area();
        fig.draw(&root)
            .and_then(|()| root.present())
            .map_err(|e| failed(&png, e.to_string()))?;
    }
    Ok(vec![svg, png])
}

fn max_of(v: impl Iterator<Item = f64>) -> f64 {
    v.filter(|x| x.is_finite()).fold(0.0, f64::max)
}

fn percent_label(x: &f64) -> String {
    let q = 100.0 * (1.0 - 10f64.powf(-x));
    if q < 99.0 {
        format!("{q:.0}%")
    } else {
        format!("{}%", (q * 100.0).round() / 100.0)
    }
}

fn legend_line(color: RGBColor) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
}

impl Figure for Chart {
    fn name(&self) -> &str {
        self.name
    }

    /// Lines from y = 0, each in the next palette colour; a line with no point is left out.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        match self.y2 {
            Some(y2) => two_axes(self, y2, root),
            None => one_axis(self, root),
        }
    }
}

/// A date on a time axis, as much of it as the axis' span needs.
fn date_label(span_s: f64) -> impl Fn(&f64) -> String {
    let format = match span_s {
        s if s > 2.0 * 86_400.0 => "%Y-%m-%d",
        s if s > 3_600.0 => "%m-%d %H:%M",
        _ => "%H:%M:%S",
    };
    move |x: &f64| {
        jiff::Timestamp::from_millisecond((*x * 1000.0) as i64)
            .map(|t| t.strftime(format).to_string())
            .unwrap_or_default()
    }
}

fn one_axis<DB: DrawingBackend>(c: &Chart, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
    root.fill(&WHITE)?;
    let drawn = c
        .lines
        .iter()
        .filter(|l| c.points(l).next().is_some())
        .count();
    let ymax = top_with_legend(
        max_of(
            c.lines
                .iter()
                .filter(|l| l.style != Style::Span)
                .flat_map(|l| c.points(l).map(|p| p.1)),
        ),
        drawn,
    );
    let (x0, x1) = c.x_axis.range();
    let mut chart = ChartBuilder::on(root)
        .caption(terminal_safe(&c.title), ("sans-serif", 20))
        .margin(12)
        // Room for the last x label (`99.99%`) to be drawn whole.
        .margin_right(32)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, 0f64..ymax)?;
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(c.x_axis.label()).y_desc(c.y.label());
    let dates = date_label(x1 - x0);
    match c.x_axis {
        XAxis::Percentile => {
            mesh.x_labels(5).x_label_formatter(&percent_label);
        }
        XAxis::Time { .. } => {
            mesh.x_labels(6).x_label_formatter(&dates);
        }
        _ => {}
    }
    mesh.draw()?;
    // A span is shaded under the lines, whatever its place in the legend.
    let mut order: Vec<(usize, &chartset::Line)> = c
        .lines
        .iter()
        .enumerate()
        .filter(|(_, l)| c.points(l).next().is_some())
        .collect();
    order.sort_by_key(|(_, l)| l.style != Style::Span);
    for (i, line) in order {
        let color = PALETTE[i % PALETTE.len()];
        // Runs on a time axis are far apart: each is marked, so a line of one run shows.
        if matches!(c.x_axis, XAxis::Time { .. }) && line.style == Style::Line {
            chart.draw_series(
                c.points(line)
                    .map(move |p| Circle::new(p, 4, color.filled())),
            )?;
        }
        match line.style {
            Style::Line | Style::Step => chart
                .draw_series(LineSeries::new(
                    drawn_points(c, line),
                    color.stroke_width(2),
                ))?
                .label(terminal_safe(&line.label))
                .legend(legend_line(color)),
            Style::Limit => chart
                .draw_series(DashedLineSeries::new(
                    c.points(line).collect::<Vec<_>>(),
                    8,
                    5,
                    color.stroke_width(2),
                ))?
                .label(terminal_safe(&line.label))
                .legend(legend_line(color)),
            Style::Dots => chart
                .draw_series(
                    c.points(line)
                        .map(move |p| Circle::new(p, 5, color.filled())),
                )?
                .label(terminal_safe(&line.label))
                .legend(move |(x, y)| Circle::new((x + 10, y), 5, color.filled())),
            Style::Span => {
                let xs: Vec<f64> = c.points(line).map(|p| p.0).collect();
                let (x0, x1) = (
                    xs.iter().copied().fold(f64::INFINITY, f64::min),
                    xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                );
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x0, 0.0), (x1, ymax)],
                        SPAN.mix(0.18).filled(),
                    )))?
                    .label(terminal_safe(&line.label))
                    .legend(move |(x, y)| {
                        Rectangle::new([(x, y - 5), (x + 20, y + 5)], SPAN.mix(0.3).filled())
                    })
            }
        };
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
}

/// The points a line is drawn through: a step line draws each value level over its
/// interval, from the previous point's x to its own (a value sampled at an interval's start,
/// drawn at its end), rising or falling at the previous x.
fn drawn_points(c: &Chart, line: &chartset::Line) -> Vec<(f64, f64)> {
    let points: Vec<(f64, f64)> = c.points(line).collect();
    if line.style != Style::Step {
        return points;
    }
    let mut out = Vec::with_capacity(points.len() * 2);
    for (k, p) in points.iter().enumerate() {
        if k > 0 {
            out.push((points[k - 1].0, p.1));
        }
        out.push(*p);
    }
    out
}

/// Lines against a left and a right axis; each axis spans at least 1.
fn two_axes<DB: DrawingBackend>(c: &Chart, y2: Unit, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
    root.fill(&WHITE)?;
    let drawn = c
        .lines
        .iter()
        .filter(|l| c.points(l).next().is_some())
        .count();
    let top = |right: bool| {
        top_with_legend(
            max_of(
                c.lines
                    .iter()
                    .filter(|l| l.right == right)
                    .flat_map(|l| c.points(l).map(|p| p.1)),
            )
            .max(1.0),
            drawn,
        )
    };
    let (x0, x1) = c.x_axis.range();
    let mut chart = ChartBuilder::on(root)
        .caption(terminal_safe(&c.title), ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .right_y_label_area_size(60)
        .build_cartesian_2d(x0..x1, 0f64..top(false))?
        .set_secondary_coord(x0..x1, 0f64..top(true));
    chart
        .configure_mesh()
        .x_desc(c.x_axis.label())
        .y_desc(c.y.label())
        .draw()?;
    chart.configure_secondary_axes().y_desc(y2.label()).draw()?;
    for (i, line) in c
        .lines
        .iter()
        .enumerate()
        .filter(|(_, l)| c.points(l).next().is_some())
    {
        let color = PALETTE[i % PALETTE.len()];
        let series = LineSeries::new(drawn_points(c, line), color.stroke_width(2));
        let drawn = if line.right {
            chart.draw_secondary_series(series)?
        } else {
            chart.draw_series(series)?
        };
        drawn
            .label(terminal_safe(&line.label))
            .legend(legend_line(color));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
}

impl Figure for Bars {
    fn name(&self) -> &str {
        self.name
    }

    /// For each group along x, one bar per run.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        let ymax = top_with_legend(
            max_of(self.runs.iter().flat_map(|(_, v)| v.iter().copied())),
            self.runs.len(),
        );
        let n = self.runs.len().max(1) as f64;
        let groups = self.groups.len();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(root)
            .caption(terminal_safe(&self.title), ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..groups as f64, 0f64..ymax)?;
        let labels = &self.groups;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(groups * 2 + 1)
            .x_label_formatter(&move |x| {
                let i = x.floor() as usize;
                if (x - x.floor() - 0.5).abs() < 0.26 {
                    labels.get(i).map(|s| s.to_string()).unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc(self.unit.label())
            .draw()?;
        for (j, (label, values)) in self.runs.iter().enumerate() {
            let color = PALETTE[j % PALETTE.len()];
            let bars = values.iter().enumerate().map(move |(i, v)| {
                let x0 = i as f64 + 0.1 + 0.8 * j as f64 / n;
                Rectangle::new([(x0, 0.0), (x0 + 0.8 / n, *v)], color.filled())
            });
            chart
                .draw_series(bars)?
                .label(terminal_safe(label))
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 15, y + 5)], color.filled())
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_and_images_share_one_palette_in_one_order() {
        let js = include_str!("../assets/charts.js");
        let hex: Vec<String> = PALETTE
            .iter()
            .map(|c| format!("\"#{:02x}{:02x}{:02x}\"", c.0, c.1, c.2))
            .collect();
        assert!(js.contains(&hex.join(", ")), "charts.js: {hex:?}");
    }

    #[test]
    fn the_legend_has_a_band_above_the_data() {
        let plot_px = f64::from(SIZE.1) - 100.0;
        for lines in 1..=6 {
            let top = top_with_legend(870.0, lines);
            let legend_px = 20.0 * lines as f64 + 24.0;
            // The data stay below the band the legend takes at the top of the plot.
            assert!(870.0 / top <= 1.0 - legend_px / plot_px, "{lines} lines");
        }
    }
}
