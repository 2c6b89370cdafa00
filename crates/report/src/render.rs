//! Text layouts: the terminal table and Markdown in the seeds' layout.

use volley_stats::{LatencySummary, METRICS, SeedSuite, TpsTail};

use volley_formats::Figure;

use crate::doc::{Answer, Block, Cell, Doc, Figure as Quoted, Section, cells};
use crate::escape::terminal_safe;
use crate::model::RunReport;

use volley_formats::numfmt::{self, group_thousands, with_unit};

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
                    format!("{}% ({})", numfmt::fixed2(v), group_thousands(s.errors))
                } else {
                    "n/a".to_string()
                }
            } else {
                match m.unit {
                    "" => numfmt::fixed2(v),
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
    let named: [(&'static str, &'static str, &Option<LatencySummary>); 8] = [
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
        (
            "Failed (until it failed)",
            "Failed (from due time)",
            &p.failed_ms,
        ),
        (
            "Connection wait (pool)",
            "Connection wait (pool)",
            &p.pool_wait_ms,
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
            numfmt::fixed2(s.error_rate_pct),
            numfmt::fixed2(s.tps_avg),
            numfmt::fixed2(s.mttfb_avg_ms),
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

/// The report for a terminal.
pub fn table(r: &RunReport) -> String {
    doc(r, &[]).terminal()
}

/// The run's report as a document, the one every form is drawn from; `charts` are
/// (alt text, relative path) of images drawn beside it, which Markdown links.
pub fn doc(r: &RunReport, charts: &[(&str, &str)]) -> Doc {
    let mut meta = vec![meta_line(r)];
    if let Some(reason) = &r.reason {
        meta.push(format!("stopped: {reason}"));
    }
    Doc {
        title: r.name.clone(),
        meta,
        answer: answer(r),
        sections: sections(r, charts),
    }
}

/// `complete · started … · 12.00 s measured · interval 1 s · first 2 s excluded`.
fn meta_line(r: &RunReport) -> String {
    let mut parts = Vec::new();
    if r.format != volley_formats::Format::Volley {
        parts.push(r.format.to_string());
    }
    parts.push(r.status.clone());
    if !r.started_at.is_empty() {
        parts.push(format!("started {}", r.started_at));
    }
    parts.push(format!("{} s measured", numfmt::fixed2(r.measured_s)));
    parts.push(format!("interval {} s", r.interval_s));
    if r.warmup_s > 0.0 {
        parts.push(format!("first {} s excluded", r.warmup_s));
    }
    parts.join(" · ")
}

/// The verdict, the figures people quote, and the findings.
fn answer(r: &RunReport) -> Answer {
    let failed: Vec<String> = r
        .thresholds
        .iter()
        .filter(|t| !t.passed)
        .map(|t| format!("{} (read {})", t.expr, t.read()))
        .collect();
    let verdict = (!r.thresholds.is_empty()).then(|| {
        let n = r.thresholds.len();
        if failed.is_empty() {
            (true, format!("{n} of {n} thresholds passed"))
        } else {
            (
                false,
                format!(
                    "{} of {n} thresholds failed: {}",
                    failed.len(),
                    failed.join(", ")
                ),
            )
        }
    });
    let s = &r.seed_suite;
    let nothing = r.completed() == 0;
    let ttfb_p99 = match &r.per_request.ttfb_ms {
        Some(l) if !nothing => with_unit(l.p99_ms, " ms"),
        _ => "n/a".to_string(),
    };
    let mut figures = vec![
        Quoted::new("TPS avg", numfmt::fixed2(s.tps_avg)),
        Quoted::new("TTFB p99", ttfb_p99),
        Quoted::new(
            "error rate",
            if s.error_rate_pct.is_finite() {
                format!("{:.2}%", s.error_rate_pct)
            } else {
                "n/a".into()
            },
        ),
        Quoted::new("requests", group_thousands(s.total_tests)),
    ];
    if r.per_request.ttfb_ms.is_none() && s.mttfb_avg_ms.is_finite() {
        figures[1] = Quoted::new("MTTFB avg", with_unit(s.mttfb_avg_ms, " ms"));
    }
    Answer {
        banner: nothing.then(|| NOTHING_COMPLETED.to_string()),
        verdict,
        summary: None,
        figures,
        findings: r.findings.clone(),
    }
}

/// The detail of a report, in the order every form shows it.
fn sections(r: &RunReport, charts: &[(&str, &str)]) -> Vec<Section> {
    let mut out = vec![Section::new(
        "seed_suite",
        "Per-interval metric suite",
        &format!(
            "over {}",
            volley_scenario::words::counted(r.seed_suite.intervals, "interval")
        ),
        Block::Pairs(suite_rows(r)),
    )];
    let table = |header: &[&str], rows: Vec<Vec<String>>| Block::Table {
        header: header.iter().map(|h| h.to_string()).collect(),
        rows: rows.into_iter().map(cells).collect(),
    };
    if !r.levels.is_empty() {
        out.push(Section::new(
            "levels",
            "Levels",
            "each held level of VUs; per-request ms",
            table(&crate::levels::HEADER, crate::levels::rows(&r.levels)),
        ));
    }
    let pops = population_rows(r);
    if !pops.is_empty() {
        out.push(Section::new(
            "populations",
            "Populations",
            "each over the time it ran; per-request ms; the last row is the run's total",
            table(&POPULATION_HEADER, pops),
        ));
    }
    let mut steps = step_rows(r);
    if !steps.is_empty() {
        // Events and streams' times are a scenario's event-stream and WebSocket steps'; a
        // run without such a step (a JMeter file's labels) has no column for them.
        let streams = r
            .per_test
            .iter()
            .any(|t| t.events > 0 || matches!(t.kind.as_deref(), Some("sse" | "websocket")));
        let (header, caption): (&[&str], &str) = if streams {
            (
                &STEP_HEADER,
                "per-request ms; total is the time to the first event for SSE steps and to the expected message for WebSocket steps",
            )
        } else {
            steps.iter_mut().for_each(|row| {
                row.pop();
            });
            (&STEP_HEADER[..STEP_HEADER.len() - 1], "per-request ms")
        };
        out.push(Section::new(
            "per_test",
            "Steps",
            caption,
            table(header, steps),
        ));
    }
    for t in r.per_test.iter().filter(|t| t.kind.is_none()) {
        out.push(Section::new(
            "per_test",
            &format!("Test {}", t.name),
            "",
            Block::Pairs(suite_rows_of(&t.seed_suite)),
        ));
    }
    out.extend(latency_section(r));
    if !r.server.is_empty() {
        let rows = r
            .server
            .iter()
            .map(|p| {
                let unit = if p.kind == "rate" { "/s" } else { "" };
                vec![
                    Cell::code(p.series.clone()),
                    format!("{:.3}{unit}", p.peak).into(),
                    format!("{:.0} s", p.at_s).into(),
                    format!("{:.0}", p.vusers).into(),
                    format!("{:.1}", p.tps).into(),
                    p.first_nonzero_s
                        .map(|t| format!("{t:.0} s"))
                        .unwrap_or_default()
                        .into(),
                ]
            })
            .collect();
        out.push(Section::new(
            "server",
            "Server",
            "peaks of scraped metrics; VUs and TPS at the peak",
            Block::Table {
                header: ["Series", "Peak", "At", "VUs", "TPS", "Above 0 from"]
                    .map(String::from)
                    .to_vec(),
                rows,
            },
        ));
    }
    if !r.thresholds.is_empty() {
        let rows = r
            .thresholds
            .iter()
            .map(|t| {
                vec![
                    Cell::code(t.expr.clone()),
                    t.read().into(),
                    Cell {
                        text: if t.passed { "pass" } else { "FAIL" }.into(),
                        mark: Some(if t.passed {
                            volley_stats::compare::Verdict::Better
                        } else {
                            volley_stats::compare::Verdict::Worse
                        }),
                        ..Cell::default()
                    },
                ]
            })
            .collect();
        out.push(Section::new(
            "thresholds",
            "Thresholds",
            "",
            Block::Table {
                header: ["Threshold", "Actual", "Result"].map(String::from).to_vec(),
                rows,
            },
        ));
    }
    if !r.errors.is_empty() {
        let rows = r
            .errors
            .iter()
            .map(|e| {
                cells(vec![
                    e.kind.clone(),
                    group_thousands(e.count),
                    e.messages.join(" | "),
                ])
            })
            .collect();
        out.push(Section::new(
            "errors",
            "Errors by kind",
            "after warm-up, with the first messages",
            Block::Table {
                header: ["Kind", "Count", "First messages"]
                    .map(String::from)
                    .to_vec(),
                rows,
            },
        ));
    }
    if let Some(g) = &r.generator {
        // An open model's delay is each arrival's from its due time to its dispatch; a closed
        // model's, its event loop's from each 10 ms check to its wake-up.
        let what = if r.model == "closed" {
            "event-loop lag"
        } else {
            "schedule lag"
        };
        let lag = match &g.sched_lag_ms {
            Some(l) => format!(
                "{what} p50 {:.2} / p99 {:.2} / max {:.1} ms",
                l.p50_ms, l.p99_ms, g.sched_lag_max_ms
            ),
            None => format!("{what} max {:.1} ms", g.sched_lag_max_ms),
        };
        out.push(Section::new(
            "generator",
            "Generator",
            "volley's own health",
            Block::List(vec![format!(
                "CPU max {:.0} %, {lag}, late arrivals {}, dropped {}",
                g.cpu_max_pct, g.late, g.dropped
            )]),
        ));
    }
    for p in &r.populations {
        let own = doc(&p.report, &[]);
        let mut blocks: Vec<Block> = Vec::new();
        if !own.answer.findings.is_empty() {
            blocks.push(Block::List(own.answer.findings.clone()));
        }
        for s in own.sections {
            if ["seed_suite", "per_request", "errors", "server"].contains(&s.id.as_str()) {
                blocks.extend(s.blocks);
            }
        }
        out.push(Section {
            id: "populations".into(),
            title: format!("Population {}", p.name),
            caption: format!(
                "{} model, from {} s: its own report, over the time it ran",
                p.model, p.start_s
            ),
            blocks,
        });
    }
    if !charts.is_empty() {
        out.push(Section::new(
            "charts",
            "Charts",
            "",
            Block::Images(
                charts
                    .iter()
                    .map(|(a, p)| (a.to_string(), p.to_string()))
                    .collect(),
            ),
        ));
    }
    let mut notes = r.notes.clone();
    if r.seed_suite.tps_tail == TpsTail::High {
        notes.push(format!(
            "TPS percentiles: {}",
            r.seed_suite.tps_tail.label()
        ));
    }
    if !notes.is_empty() {
        out.push(Section::new("notes", "Notes", "", Block::Notes(notes)));
    }
    out
}

/// The per-request latency table (none when the source has no per-request figures).
fn latency_section(r: &RunReport) -> Option<Section> {
    let lat = latency_rows(r);
    let first = lat.first()?;
    let nothing = r.completed() == 0;
    let mut header: Vec<String> = vec![String::new()];
    header.extend(first.1.rows().iter().map(|(h, _)| h.to_string()));
    header.push("requests".into());
    let mut rows: Vec<Vec<Cell>> = lat
        .iter()
        .map(|(name, s)| {
            let mut row = vec![name.to_string()];
            // A summary of no request has no times: its zeros are not figures.
            row.extend(s.rows().iter().map(|(_, v)| {
                if s.count == 0 || (nothing && !name.starts_with("Unfinished")) {
                    "n/a".to_string()
                } else {
                    numfmt::latency_ms(*v)
                }
            }));
            row.push(group_thousands(s.count));
            cells(row)
        })
        .collect();
    if r.unavailable(Figure::Ttfb).is_some() {
        let mut row = vec!["TTFB".to_string()];
        row.extend(std::iter::repeat_n("n/a".to_string(), header.len() - 2));
        row.push("(see the notes)".into());
        rows.push(cells(row));
    }
    Some(Section::new(
        "per_request",
        "Per-request latency",
        &format!("ms, {}", latency_origin(r)),
        Block::Table { header, rows },
    ))
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

/// Reports as CSV: one row per report (and per test id), one column per figure.
pub fn csv(reports: &[RunReport]) -> String {
    let mut header = vec!["source".to_string(), "test".to_string()];
    for m in METRICS {
        header.push(m.key.to_string());
        if let Some((_, extra, _)) = CSV_EXTRA.iter().find(|(after, ..)| *after == m.key) {
            header.push(extra.to_string());
        }
    }
    let mut lines = vec![header];
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
            let mut line = vec![r.source.clone(), test.to_string()];
            for m in METRICS {
                let v = (m.value)(s, t);
                line.push(if m.count {
                    (v as u64).to_string()
                } else {
                    f(v)
                });
                if let Some((.., cell)) = CSV_EXTRA.iter().find(|(after, ..)| *after == m.key) {
                    line.push(cell(s));
                }
            }
            lines.push(line);
        }
    }
    csv_text(lines)
}

/// Records as CSV text, each field quoted where it needs to be (a comma, a quote or a line
/// end in it), by the `csv` crate: the one CSV writer of the reports.
pub(crate) fn csv_text(records: impl IntoIterator<Item = Vec<String>>) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in records {
        w.write_record(&r)
            .expect("a CSV record in memory is written");
    }
    let bytes = w.into_inner().expect("a CSV writer in memory flushes");
    String::from_utf8(bytes).expect("UTF-8 fields make UTF-8 CSV")
}

/// The report as Markdown, in the seeds' `| Metric | Value |` layout.
pub fn markdown(r: &RunReport) -> String {
    markdown_with_charts(r, &[])
}

/// Markdown that also links chart images: (alt text, relative path).
pub fn markdown_with_charts(r: &RunReport, charts: &[(&str, &str)]) -> String {
    doc(r, charts).markdown()
}

#[cfg(test)]
mod tests {
    /// Names with a comma, a quote or a line end come back whole from a CSV reader.
    #[test]
    fn csv_fields_are_quoted_where_they_must_be() {
        let rows = vec![
            vec!["source".to_string(), "test".to_string()],
            vec!["runs/a,b".to_string(), "say \"hi\"\nthere".to_string()],
            vec!["plain".to_string(), String::new()],
        ];
        let text = super::csv_text(rows.clone());
        assert!(text.starts_with("source,test\n\"runs/a,b\","), "{text}");
        assert!(text.ends_with("\nplain,\n"), "{text}");
        let back: Vec<Vec<String>> = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(text.as_bytes())
            .records()
            .map(|r| r.unwrap().iter().map(str::to_string).collect())
            .collect();
        assert_eq!(back, rows);
    }

    #[test]
    fn one_interval_is_singular() {
        assert_eq!(volley_scenario::words::counted(1, "interval"), "1 interval");
        assert_eq!(
            volley_scenario::words::counted(6, "interval"),
            "6 intervals"
        );
    }
}

/// The rule of every form: each part of the report's model is in the terminal table, the
/// Markdown and the HTML page, and each part of `report.json` is in the model.
#[cfg(test)]
mod forms {
    use std::path::Path;

    use minijinja::HtmlEscape;
    use volley_formats::{RunData, Source};

    use crate::doc::{Doc, words};
    use crate::model::{ReportOptions, RunReport, ThresholdResult};

    /// Keys of `report.json` the model shows outside a section of their own: in the lines
    /// under the title, in the answer (findings; the knee is one of them), or in the notes
    /// (input notes and plan changes are each also a note).
    const IN_META: [&str; 12] = [
        "schema",
        "name",
        "source",
        "format",
        "status",
        "reason",
        "started_at",
        "interval_s",
        "warmup_s",
        "measured_s",
        "model",
        "arrivals",
    ];
    const ELSEWHERE: [(&str, &str); 4] = [
        ("findings", "the answer"),
        ("saturation", "a finding"),
        ("input_notes", "the notes"),
        ("plan_changes", "the notes"),
    ];

    fn in_every_form(doc: &Doc, page: &str) {
        let (t, m) = (doc.terminal(), doc.markdown());
        for w in words(doc) {
            assert!(
                t.contains(&*super::terminal_safe(&w)),
                "the terminal lacks {w:?}:\n{t}"
            );
            assert!(
                m.contains(&crate::escape::md_text(&w))
                    || m.contains(&crate::doc::md_prose(&w))
                    || m.contains(&format!("`{}`", w.replace('|', "\\|"))),
                "the Markdown lacks {w:?}:\n{m}"
            );
            assert!(
                page.contains(&crate::marks::in_text(&w)),
                "the page lacks {w:?}"
            );
        }
    }

    fn spring(case: &str) -> Source {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/spring")
            .join(case);
        Source::from_run(RunData::read(&dir).unwrap())
    }

    #[test]
    fn every_section_of_a_report_is_in_every_form() {
        let dir = tempfile::tempdir().unwrap();
        let opts = ReportOptions::default();
        let mut with_errors = crate::testrun::run(dir.path(), "plain", 6, 50, 5, &[]);
        with_errors.series.intervals[2].errors = 7;
        let sources = [spring("pool10"), with_errors];
        for src in &sources {
            let mut r = RunReport::from_source(src, opts);
            r.thresholds = vec![ThresholdResult {
                expr: "ttfb p99 < 500ms".into(),
                actual: 12.0,
                unit: " ms",
                passed: true,
            }];
            let doc = super::doc(&r, &[("tps", "charts/tps.png")]);
            let page = crate::html::report_page(std::slice::from_ref(src), &[r.clone()], &[], opts);
            in_every_form(&doc, &page);
            assert!(doc.markdown().contains("![tps](charts/tps.png)"));
            let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
            for (key, value) in json.as_object().unwrap() {
                let empty = value.is_null()
                    || value.as_array().is_some_and(Vec::is_empty)
                    || value
                        .as_object()
                        .is_some_and(|o| o.values().all(serde_json::Value::is_null));
                if empty || IN_META.contains(&key.as_str()) {
                    continue;
                }
                if let Some((_, where_)) = ELSEWHERE.iter().find(|(k, _)| k == key) {
                    let shown = match key.as_str() {
                        "findings" | "saturation" => !doc.answer.findings.is_empty(),
                        _ => doc.sections.iter().any(|s| s.id == "notes"),
                    };
                    assert!(shown, "`{key}` is said in {where_}, which is missing");
                    continue;
                }
                assert!(
                    doc.sections.iter().any(|s| s.id == *key),
                    "report.json's `{key}` has no section in the model: {:?}",
                    doc.sections.iter().map(|s| &s.id).collect::<Vec<_>>()
                );
            }
        }
    }

    /// An import that records no start says nothing of it (not an empty `Started ·`).
    #[test]
    fn a_report_without_a_start_time_leaves_it_out() {
        let dir = tempfile::tempdir().unwrap();
        let src = crate::testrun::run(dir.path(), "plain", 6, 50, 5, &[]);
        let mut r = RunReport::from_source(&src, ReportOptions::default());
        r.started_at.clear();
        let md = super::markdown(&r);
        let meta = md.lines().nth(2).unwrap();
        assert!(meta.starts_with("complete · 6.00 s measured"), "{md}");
        assert!(!md.to_lowercase().contains("started"), "{md}");
    }

    #[test]
    fn every_section_of_a_comparison_a_group_and_a_sweep_is_in_every_form() {
        let dir = tempfile::tempdir().unwrap();
        let opts = ReportOptions::default();
        let vus = crate::findings::tests::step_up();
        let sets: Vec<volley_formats::RunSet> = [100u64, 1000]
            .iter()
            .enumerate()
            .map(|(i, cap)| {
                volley_formats::RunSet::single(crate::testrun::stepped(
                    &dir.path().join(i.to_string()),
                    &vus,
                    |v| (10 * u64::from(v)).min(*cap),
                    20,
                    &[],
                ))
            })
            .collect();
        let labels: Vec<String> = ["pool=2", "pool=20"].map(String::from).to_vec();
        let cmp = crate::compare::build(&sets, &labels, opts);
        let sources: Vec<Source> = sets.iter().map(|s| s.first().clone()).collect();
        let gate = Some((false, "Gate: FAILED: 1 of 6".to_string()));
        let page = crate::html::compare_page(&cmp, &sources, opts, Vec::new(), gate.clone());
        let mut doc = cmp.doc();
        assert!(doc.sections.iter().any(|s| s.id == "per_level"));
        assert!(page.contains("noise ±") && page.contains("judged by"));
        doc.answer.verdict = gate;
        in_every_form(&doc, &page);

        let sweep = crate::sweep::summarize(&sets, &labels, crate::sweep::Objective::Tps, opts);
        let page = crate::html::sweep_page(&sweep, &cmp, &sources, opts, Vec::new());
        assert!(page.contains("<title>volley sweep</title>"));
        in_every_form(&sweep.doc(), &page);
        assert!(
            page.contains("Best by tps"),
            "the sweep's verdict is on its page"
        );

        // A group of the two runs, as `report --serve` of a group shows it: summary first.
        let group = volley_formats::RunSet {
            runs: sources.clone(),
            ..sets[0].clone()
        };
        let summary = crate::group::summarize(&group, opts);
        let reports: Vec<RunReport> = sources
            .iter()
            .map(|s| RunReport::from_source(s, opts))
            .collect();
        let page =
            crate::html::report_page(&sources, &reports, std::slice::from_ref(&summary), opts);
        in_every_form(&summary.doc(), &page);
        let first_run = page
            .find(&format!(
                "<h2 class=\"title\">{}<",
                HtmlEscape(&reports[0].name)
            ))
            .unwrap();
        assert!(page.find("Across the runs").unwrap() < first_run);
    }
}
