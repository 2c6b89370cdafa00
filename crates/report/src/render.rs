//! Text layouts: the terminal table and Markdown in the seeds' layout.

use std::fmt::Write;

use volley_stats::{LatencySummary, METRICS, SeedSuite, TpsTail};

use volley_formats::Figure;

use crate::model::RunReport;

pub use volley_formats::numfmt::group_thousands;

fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.2}")
    } else {
        "n/a".to_string()
    }
}

/// `v` with its unit, or `n/a` alone.
fn with_unit(v: f64, unit: &str) -> String {
    if v.is_finite() {
        format!("{v:.2}{unit}")
    } else {
        "n/a".to_string()
    }
}

/// The seed suite as (label, value) rows, in the seeds' order and wording.
pub(crate) fn suite_rows(r: &RunReport) -> Vec<(String, String)> {
    suite_rows_of(&r.seed_suite)
}

/// The suite's rows of the metric table, labelled as the seeds label them: TPS percentiles
/// say when the high tail is meant, the error rate carries its count.
fn suite_rows_of(s: &SeedSuite) -> Vec<(String, String)> {
    let tail = match s.tps_tail {
        TpsTail::Low => "",
        TpsTail::High => " (high tail)",
    };
    METRICS
        .iter()
        .filter(|m| m.in_suite())
        .map(|m| {
            let v = (m.value)(s, None);
            let label = if m.tps_tail {
                format!("{}{tail}", m.label)
            } else {
                m.label.to_string()
            };
            let text = if m.count {
                group_thousands(v as u64)
            } else if m.key == ERROR_RATE {
                if v.is_finite() {
                    format!("{}% ({})", num(v), group_thousands(s.errors))
                } else {
                    "n/a".to_string()
                }
            } else {
                match m.unit {
                    "" => num(v),
                    "%" => with_unit(v, "%"),
                    unit => with_unit(v, &format!(" {unit}")),
                }
            };
            (label, text)
        })
        .collect()
}

/// The metric whose row also gives the count of errors.
const ERROR_RATE: &str = "error_rate_pct";

/// Columns the CSV has beside the metric table's, each after the metric named first: the
/// error count after the total, which TPS tail the percentiles read after TPS p99.9.
type ExtraColumn = (&'static str, &'static str, fn(&SeedSuite) -> String);
const CSV_EXTRA: [ExtraColumn; 2] = [
    ("total_tests", "errors", |s| s.errors.to_string()),
    ("tps_p99_9", "tps_tail", |s| {
        match s.tps_tail {
            TpsTail::Low => "low",
            TpsTail::High => "high",
        }
        .to_string()
    }),
];

pub(crate) fn latency_rows(r: &RunReport) -> Vec<(&'static str, &LatencySummary)> {
    let p = &r.per_request;
    let open = p.ttfb_actual_ms.is_some();
    let named: [(&'static str, &'static str, &Option<LatencySummary>); 6] = [
        ("TTFB", "TTFB (from due time)", &p.ttfb_ms),
        ("Total time", "Total (from due time)", &p.total_ms),
        ("", "TTFB (actual send)", &p.ttfb_actual_ms),
        ("", "Total (actual send)", &p.total_actual_ms),
        (
            "Iteration (whole flow)",
            "Iteration (whole flow)",
            &p.iteration_ms,
        ),
        (
            "Unfinished (waited)",
            "Unfinished (waited)",
            &p.unfinished_ms,
        ),
    ];
    named
        .iter()
        .filter_map(|(closed, open_name, v)| {
            v.as_ref()
                .map(|v| (if open { *open_name } else { *closed }, v))
        })
        .collect()
}

fn headline(r: &RunReport) -> String {
    let mut h = format!(
        "{} — {} ({} s measured, interval {} s)",
        terminal_safe(&r.name),
        r.status,
        num(r.measured_s),
        r.interval_s
    );
    if let Some(reason) = &r.reason {
        let _ = write!(h, "\nstopped: {}", terminal_safe(reason));
    }
    if r.completed() == 0 {
        let _ = write!(h, "\n{NOTHING_COMPLETED}");
    }
    h
}

/// Said at the top of a report in which no request completed.
const NOTHING_COMPLETED: &str =
    "NO REQUEST COMPLETED: no figure below describes a response; see the errors.";

pub(crate) const STEP_HEADER: [&str; 11] = [
    "step",
    "kind",
    "tests",
    "errors",
    "error %",
    "TPS avg",
    "TTFB p50",
    "TTFB p95",
    "TTFB p99",
    "total p99",
    "events",
];

/// One row per scenario step.
pub(crate) fn step_rows(r: &RunReport) -> Vec<Vec<String>> {
    let ms = |l: &Option<LatencySummary>, pick: fn(&LatencySummary) -> f64| {
        l.as_ref()
            .map_or("-".to_string(), |l| format!("{:.2}", pick(l)))
    };
    r.per_test
        .iter()
        .filter(|t| t.kind.is_some() || t.total_ms.is_some())
        .map(|t| {
            let s = &t.seed_suite;
            vec![
                terminal_safe(&t.name).into_owned(),
                t.kind.clone().unwrap_or_else(|| "-".to_string()),
                s.total_tests.to_string(),
                s.errors.to_string(),
                format!("{:.2}", s.error_rate_pct),
                format!("{:.2}", s.tps_avg),
                ms(&t.ttfb_ms, |l| l.p50_ms),
                ms(&t.ttfb_ms, |l| l.p95_ms),
                ms(&t.ttfb_ms, |l| l.p99_ms),
                ms(&t.total_ms, |l| l.p99_ms),
                t.events.to_string(),
            ]
        })
        .collect()
}

pub(crate) const POPULATION_HEADER: [&str; 12] = [
    "population",
    "model",
    "start s",
    "tests",
    "errors",
    "error %",
    "TPS avg",
    "MTTFB avg",
    "TTFB p50",
    "TTFB p95",
    "TTFB p99",
    "total p99",
];

/// One row per population and a last row for the run's total (none without populations).
pub(crate) fn population_rows(r: &RunReport) -> Vec<Vec<String>> {
    if r.populations.is_empty() {
        return Vec::new();
    }
    let ms = |l: &Option<LatencySummary>, pick: fn(&LatencySummary) -> f64| {
        l.as_ref()
            .map_or("-".to_string(), |l| format!("{:.2}", pick(l)))
    };
    let row = |name: &str, model: &str, start: String, x: &RunReport| {
        let s = &x.seed_suite;
        vec![
            terminal_safe(name).into_owned(),
            model.to_string(),
            start,
            s.total_tests.to_string(),
            s.errors.to_string(),
            num(s.error_rate_pct),
            num(s.tps_avg),
            num(s.mttfb_avg_ms),
            ms(&x.per_request.ttfb_ms, |l| l.p50_ms),
            ms(&x.per_request.ttfb_ms, |l| l.p95_ms),
            ms(&x.per_request.ttfb_ms, |l| l.p99_ms),
            ms(&x.per_request.total_ms, |l| l.p99_ms),
        ]
    };
    let mut rows: Vec<Vec<String>> = r
        .populations
        .iter()
        .map(|p| row(&p.name, &p.model, format!("{}", p.start_s), &p.report))
        .collect();
    rows.push(row("total", &r.model, "-".into(), r));
    rows
}

/// Cells laid out in columns under `header`, the first left-aligned.
pub(crate) fn columns(out: &mut String, header: &[&str], rows: Vec<Vec<String>>) {
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            rows.iter()
                .map(|r| r[c].chars().count())
                .chain([header[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in std::iter::once(header.iter().map(|s| s.to_string()).collect::<Vec<_>>()).chain(rows)
    {
        let _ = write!(out, "  {:<w$}", row[0], w = widths[0]);
        for (c, cell) in row.iter().enumerate().skip(1) {
            let _ = write!(out, "  {cell:>w$}", w = widths[c]);
        }
        let _ = writeln!(out);
    }
}

/// The report for a terminal.
pub fn table(r: &RunReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}\n", headline(r));
    let rows = suite_rows(r);
    let width = rows.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
    let _ = writeln!(
        out,
        "Per-interval metric suite (over {} intervals)",
        r.seed_suite.intervals
    );
    for (label, value) in &rows {
        let _ = writeln!(out, "  {label:<width$}  {value:>14}");
    }
    if !r.levels.is_empty() {
        let _ = writeln!(out, "\nLevels (each held level of VUs; per-request ms)");
        columns(
            &mut out,
            &crate::levels::HEADER,
            crate::levels::rows(&r.levels),
        );
    }
    let pops = population_rows(r);
    if !pops.is_empty() {
        let _ = writeln!(
            out,
            "\nPopulations (each over the time it ran; per-request ms; the last row is the run's total)"
        );
        columns(&mut out, &POPULATION_HEADER, pops);
    }
    let steps = step_rows(r);
    if !steps.is_empty() {
        let _ = writeln!(
            out,
            "\nSteps (per-request ms; total = time to first event for SSE, to the expected message for WebSocket)"
        );
        let widths: Vec<usize> = (0..STEP_HEADER.len())
            .map(|c| {
                steps
                    .iter()
                    .map(|r| r[c].chars().count())
                    .chain([STEP_HEADER[c].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for row in std::iter::once(
            STEP_HEADER
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>(),
        )
        .chain(steps)
        {
            let _ = write!(out, "  {:<w$}", row[0], w = widths[0]);
            for (c, cell) in row.iter().enumerate().skip(1) {
                let _ = write!(out, "  {cell:>w$}", w = widths[c]);
            }
            let _ = writeln!(out);
        }
    }
    for t in r.per_test.iter().filter(|t| t.kind.is_none()) {
        let _ = writeln!(out, "\nTest `{}`", terminal_safe(&t.name));
        let width = width.max(t.name.len());
        for (label, value) in suite_rows_of(&t.seed_suite) {
            let _ = writeln!(out, "  {label:<width$}  {value:>14}");
        }
    }
    let lat = latency_rows(r);
    if !lat.is_empty() {
        let _ = writeln!(out, "\nPer-request latency, ms ({})", latency_origin(r));
        let _ = write!(out, "  {:<22}", "");
        for (h, _) in lat[0].1.rows() {
            let _ = write!(out, "{h:>9}");
        }
        let _ = writeln!(out, "{:>11}", "requests");
        for (name, s) in &lat {
            let _ = write!(out, "  {name:<22}");
            for (_, v) in s.rows() {
                let _ = write!(out, "{:>9}", format_ms(v));
            }
            let _ = writeln!(out, "{:>11}", group_thousands(s.count));
        }
        if r.unavailable(Figure::Ttfb).is_some() {
            let _ = writeln!(out, "  {:<22}{:>9}  (see the notes)", "TTFB", "n/a");
        }
    }
    if !r.server.is_empty() {
        let _ = writeln!(out, "\nServer (peaks of scraped metrics)");
        for p in &r.server {
            let first = p
                .first_nonzero_s
                .map(|t| format!(", above 0 from {t:.0} s"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  {:<60} {:>12.3}{} at {:.0} s (VUs {:.0}, TPS {:.1}){first}",
                terminal_safe(&p.series),
                p.peak,
                if p.kind == "rate" { "/s" } else { "" },
                p.at_s,
                p.vusers,
                p.tps
            );
        }
    }
    if !r.thresholds.is_empty() {
        let _ = writeln!(out, "\nThresholds");
        for t in &r.thresholds {
            let _ = writeln!(
                out,
                "  {} {:<30} actual {}",
                if t.passed { "✓" } else { "✗ FAILED" },
                t.expr,
                num(t.actual)
            );
        }
    }
    if !r.findings.is_empty() {
        let _ = writeln!(out, "\nFindings");
        for f in &r.findings {
            let _ = writeln!(out, "  - {f}");
        }
    }
    if !r.errors.is_empty() {
        let _ = writeln!(out, "\nErrors by kind");
        for e in &r.errors {
            let _ = writeln!(
                out,
                "  {:<9} {:>9}  {}",
                e.kind,
                group_thousands(e.count),
                terminal_safe(&e.messages.join(" | "))
            );
        }
    }
    if let Some(g) = &r.generator {
        let lag = match &g.sched_lag_ms {
            Some(l) => format!(
                "schedule lag p50 {:.2} / p99 {:.2} / max {:.1} ms",
                l.p50_ms, l.p99_ms, g.sched_lag_max_ms
            ),
            None => format!("schedule lag max {:.1} ms", g.sched_lag_max_ms),
        };
        let _ = writeln!(
            out,
            "\nGenerator: CPU max {:.0} %, {lag}, late arrivals {}, dropped {}",
            g.cpu_max_pct, g.late, g.dropped
        );
    }
    if r.seed_suite.tps_tail == TpsTail::High {
        let _ = writeln!(out, "\nTPS percentiles: {}", r.seed_suite.tps_tail.label());
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// Where the per-request figures come from.
pub(crate) fn latency_origin(r: &RunReport) -> &'static str {
    match r.format {
        volley_formats::Format::K6Summary | volley_formats::Format::LocustStats => {
            "the tool's own end-of-test statistics; n/a = not in the file"
        }
        _ => "every request, HdrHistogram",
    }
}

fn format_ms(v: f64) -> String {
    if !v.is_finite() {
        "n/a".to_string()
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Reports as CSV: one row per report (and per test id), one column per figure.
pub fn csv(reports: &[RunReport]) -> String {
    let mut out = String::from("source,test");
    for m in METRICS {
        let _ = write!(out, ",{}", m.key);
        if let Some((_, extra, _)) = CSV_EXTRA.iter().find(|(after, ..)| *after == m.key) {
            let _ = write!(out, ",{extra}");
        }
    }
    out.push('\n');
    let q = |s: &str| {
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let f = |v: f64| {
        if v.is_finite() {
            format!("{v}")
        } else {
            String::new()
        }
    };
    for r in reports {
        let mut rows = vec![("", &r.seed_suite)];
        let mut ttfbs = vec![r.per_request.ttfb_ms.as_ref()];
        rows.extend(r.per_test.iter().map(|t| (t.name.as_str(), &t.seed_suite)));
        ttfbs.extend(r.per_test.iter().map(|t| t.ttfb_ms.as_ref()));
        let pop_names: Vec<String> = r
            .populations
            .iter()
            .map(|p| format!("population:{}", p.name))
            .collect();
        rows.extend(
            r.populations
                .iter()
                .zip(&pop_names)
                .map(|(p, n)| (n.as_str(), &p.report.seed_suite)),
        );
        ttfbs.extend(
            r.populations
                .iter()
                .map(|p| p.report.per_request.ttfb_ms.as_ref()),
        );
        for ((test, s), t) in rows.into_iter().zip(ttfbs) {
            let _ = write!(out, "{},{}", q(&r.source), q(test));
            for m in METRICS {
                let v = (m.value)(s, t);
                if m.count {
                    let _ = write!(out, ",{}", v as u64);
                } else {
                    let _ = write!(out, ",{}", f(v));
                }
                if let Some((.., cell)) = CSV_EXTRA.iter().find(|(after, ..)| *after == m.key) {
                    let _ = write!(out, ",{}", cell(s));
                }
            }
            out.push('\n');
        }
    }
    out
}

/// The report as Markdown, in the seeds' `| Metric | Value |` layout.
pub fn markdown(r: &RunReport) -> String {
    markdown_with_charts(r, &[])
}

/// Markdown that also links chart images: (alt text, relative path).
pub fn markdown_with_charts(r: &RunReport, charts: &[(&str, &str)]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", md_text(&r.name));
    let _ = writeln!(out, "Status: **{}**", r.status);
    if let Some(reason) = &r.reason {
        let _ = writeln!(out, " — {}", md_text(reason));
    }
    if r.completed() == 0 {
        let _ = writeln!(out, "\n**{NOTHING_COMPLETED}**");
    }
    let _ = writeln!(
        out,
        "\nStarted {} · {} s measured · interval {} s\n",
        r.started_at,
        num(r.measured_s),
        r.interval_s
    );
    let _ = writeln!(out, "| Metric | Value |\n|---|---|");
    for (label, value) in suite_rows(r) {
        let _ = writeln!(out, "| {label} | {value} |");
    }
    let pops = population_rows(r);
    if !pops.is_empty() {
        let _ = writeln!(
            out,
            "\n## Populations\n\nEach over the time it ran; per-request times in ms. The last row is the run's total.\n"
        );
        let _ = writeln!(
            out,
            "| {} |\n|{}|",
            POPULATION_HEADER.join(" | "),
            "---|".repeat(POPULATION_HEADER.len())
        );
        for mut cells in pops {
            cells[0] = md_text(&cells[0]);
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
    }
    if !r.levels.is_empty() {
        let _ = writeln!(
            out,
            "\n## Levels\n\nEach held level of VUs; per-request times in ms.\n\n| {} |\n|{}",
            crate::levels::HEADER.join(" | "),
            "---|".repeat(crate::levels::HEADER.len())
        );
        for row in crate::levels::rows(&r.levels) {
            let _ = writeln!(out, "| {} |", row.join(" | "));
        }
    }
    let steps = step_rows(r);
    if !steps.is_empty() {
        let _ = writeln!(
            out,
            "\n## Steps\n\nPer-request times in ms. Total is the time to the first event for SSE steps and to the expected message for WebSocket steps.\n"
        );
        let _ = writeln!(
            out,
            "| {} |\n|{}|",
            STEP_HEADER.join(" | "),
            "---|".repeat(STEP_HEADER.len())
        );
        for row in steps {
            let mut cells = row;
            cells[0] = md_text(&cells[0]);
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
    }
    for t in r.per_test.iter().filter(|t| t.kind.is_none()) {
        let _ = writeln!(
            out,
            "\n### Test {}\n\n| Metric | Value |\n|---|---|",
            md_text(&t.name)
        );
        for (label, value) in suite_rows_of(&t.seed_suite) {
            let _ = writeln!(out, "| {label} | {value} |");
        }
    }
    let lat = latency_rows(r);
    if !lat.is_empty() {
        let origin = if latency_origin(r).starts_with("every") {
            "every request"
        } else {
            latency_origin(r)
        };
        let _ = writeln!(out, "\n## Per-request latency (ms, {origin})\n");
        let heads: Vec<&str> = lat[0].1.rows().iter().map(|(h, _)| *h).collect();
        let _ = writeln!(out, "| | {} | requests |", heads.join(" | "));
        let _ = writeln!(out, "|---|{}---|", "---|".repeat(heads.len()));
        for (name, s) in &lat {
            let vals: Vec<String> = s.rows().iter().map(|(_, v)| format_ms(*v)).collect();
            let _ = writeln!(
                out,
                "| {name} | {} | {} |",
                vals.join(" | "),
                group_thousands(s.count)
            );
        }
        if r.unavailable(Figure::Ttfb).is_some() {
            let _ = writeln!(
                out,
                "| TTFB | {}n/a (see the notes) |",
                "n/a | ".repeat(heads.len())
            );
        }
    }
    if !r.server.is_empty() {
        let _ = writeln!(
            out,
            "\n## Server\n\n| Series | Peak | At | VUs | TPS | Above 0 from |\n|---|---|---|---|---|---|"
        );
        for p in &r.server {
            let first = p
                .first_nonzero_s
                .map(|t| format!("{t:.0} s"))
                .unwrap_or_default();
            let unit = if p.kind == "rate" { "/s" } else { "" };
            let code = terminal_safe(&p.series)
                .replace('`', "'")
                .replace('|', "\\|");
            let _ = writeln!(
                out,
                "| `{code}` | {:.3}{unit} | {:.0} s | {:.0} | {:.1} | {first} |",
                p.peak, p.at_s, p.vusers, p.tps
            );
        }
    }
    if !r.thresholds.is_empty() {
        let _ = writeln!(
            out,
            "\n## Thresholds\n\n| Threshold | Actual | Result |\n|---|---|---|"
        );
        for t in &r.thresholds {
            let code = t.expr.replace('`', "'").replace('|', "\\|");
            let _ = writeln!(
                out,
                "| `{code}` | {} | {} |",
                num(t.actual),
                if t.passed { "pass 🟢" } else { "FAIL 🔴" }
            );
        }
    }
    if !r.findings.is_empty() {
        let _ = writeln!(out, "\n## Findings\n");
        for f in &r.findings {
            let _ = writeln!(out, "- {}", escape_md(f));
        }
    }
    if !r.errors.is_empty() {
        let _ = writeln!(
            out,
            "\n## Errors\n\n| Kind | Count | First messages |\n|---|---|---|"
        );
        for e in &r.errors {
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                e.kind,
                group_thousands(e.count),
                md_text(&e.messages.join("; "))
            );
        }
    }
    if !charts.is_empty() {
        let _ = writeln!(out, "\n## Charts\n");
        for (alt, path) in charts {
            let _ = writeln!(out, "![{}]({path})", escape_md(alt));
        }
    }
    if !r.notes.is_empty() {
        let _ = writeln!(out, "\n## Notes\n");
        for n in &r.notes {
            let _ = writeln!(out, "- {}", escape_md(n));
        }
    }
    out
}

fn escape_md(s: &str) -> String {
    s.replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Text from a target or an imported file (names, labels, messages) made safe for a line or
/// a table cell of Markdown: its control characters shown as escapes (a line break cannot
/// end a table row), Markdown's own characters escaped (no code span, link or emphasis
/// opens), and no HTML element can open.
pub fn md_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '#' | '~' | '!' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            c if c.is_control() => out.extend(c.escape_default()),
            c => out.push(c),
        }
    }
    out
}

/// Text from a target or an imported file made safe for a terminal: control characters
/// (escape sequences, carriage returns, bells) are shown as escapes, never sent raw.
pub fn terminal_safe(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_text_cannot_break_a_terminal_or_a_markdown_table() {
        assert_eq!(terminal_safe("ok"), "ok");
        assert_eq!(terminal_safe("a\x1b[2Jb\r\n"), "a\\u{1b}[2Jb\\r\\n");
        assert_eq!(
            md_text("a|b\n<img src=x>`c`"),
            "a\\|b\\n&lt;img src=x&gt;\\`c\\`"
        );
        assert_eq!(md_text("[x](y)"), "\\[x\\](y)");
    }

    #[test]
    fn thousands() {
        assert_eq!(group_thousands(0), "0");
        assert_eq!(group_thousands(999), "999");
        assert_eq!(group_thousands(40228), "40,228");
        assert_eq!(group_thousands(1234567), "1,234,567");
    }
}
