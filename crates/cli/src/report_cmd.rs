//! `volley report`: the metric suite of run directories and result files.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use volley_formats::{RunSet, Source};
use volley_report::{ReportOptions, RunReport};

use crate::args::{CompareArgs, OutputArgs, ReportArgs, ReportFormat};

/// Opens every input — a run directory, a result file (as `from`, or detected) or a run
/// group — with [`volley_formats::open_run_or_group`], and checks the warm-up leaves
/// something of every run.
pub(crate) fn open_all(
    paths: &[std::path::PathBuf],
    from: Option<volley_formats::Format>,
    opts: ReportOptions,
) -> Result<Vec<RunSet>> {
    let sets = paths
        .iter()
        .map(|p| volley_formats::open_run_or_group(p, from))
        .collect::<Result<Vec<_>, _>>()?;
    for s in sets.iter().flat_map(|s| &s.runs) {
        volley_report::check_warmup(s, opts.warmup)?;
    }
    Ok(sets)
}

fn emit(output: &Option<std::path::PathBuf>, text: &str) -> Result<()> {
    match output {
        Some(p) => std::fs::write(p, text).map_err(|e| anyhow::anyhow!("{}: {e}", p.display())),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

/// Where the rest of a report printed in part is: its other forms.
const REST: &str = "the Markdown form (--format md)";

/// How much a table shows: everything with --verbose or when it goes to a file (-o).
fn detail(out: &OutputArgs) -> volley_report::Detail {
    crate::run_cmd::detail_of(out.verbose || out.output.is_some())
}

fn options(out: &OutputArgs) -> Result<ReportOptions> {
    Ok(ReportOptions {
        warmup: out.warmup,
        tps_tail: out.tps_tail.into(),
    })
}

/// `--serve ADDR` written with a space: --serve takes its address after `=` (alone, it serves
/// on a free loopback port), so ADDR became an input. An input that does not exist and reads
/// as an address is refused with the spelling that works, rather than as a missing file.
fn check_serve_address(out: &OutputArgs, paths: &[PathBuf]) -> Result<()> {
    if out.serve.as_deref() != Some("") {
        return Ok(());
    }
    let looks_like_address = |s: &str| {
        volley_live::parse_addr(Some(s)).is_ok()
            || s.rsplit_once(':').is_some_and(|(host, port)| {
                port.parse::<u16>().is_ok()
                    && !host.is_empty()
                    && host
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
            })
    };
    if let Some(addr) = paths
        .iter()
        .map(|p| p.to_string_lossy())
        .find(|p| !std::path::Path::new(p.as_ref()).exists() && looks_like_address(p))
    {
        anyhow::bail!(
            "`{addr}` is taken as an input, and there is no such file: --serve takes its address after `=`; write --serve={addr} (--serve alone serves on 127.0.0.1 and a free port)"
        );
    }
    Ok(())
}

pub(crate) fn report(a: ReportArgs) -> Result<ExitCode> {
    check_serve_address(&a.out, &a.paths)?;
    // A capacity directory's report is its answer (each probe is a run directory inside it).
    if let Some(caps) = crate::capacity_cmd::read_all(&a.paths)? {
        // Its page, drawn anew from capacity.json (as the search wrote capacity.html).
        if a.out.serve.is_some() || a.out.html.is_some() {
            let [c] = caps.as_slice() else {
                anyhow::bail!("--serve and --html take one capacity directory at a time");
            };
            let page = c.page();
            if let Some(html) = &a.out.html {
                std::fs::write(html, &page)
                    .with_context(|| format!("cannot write {}", html.display()))?;
            }
            if let Some(addr) = &a.out.serve {
                crate::live_cmd::serve(addr, page)?;
            }
            return Ok(ExitCode::SUCCESS);
        }
        if a.out.format == ReportFormat::Csv {
            anyhow::bail!(
                "a capacity result has no CSV form; its probes are in capacity.json (--format json), or report a probe's run directory inside it as CSV"
            );
        }
        let mut text = String::new();
        for c in caps {
            let one = match a.out.format {
                ReportFormat::Json => c.to_json(),
                ReportFormat::Md => c.markdown(&[]),
                _ => c.table(),
            };
            text.push_str(&one);
            text.push('\n');
        }
        emit(&a.out.output, &text)?;
        return Ok(ExitCode::SUCCESS);
    }
    let opts = options(&a.out)?;
    let mut out = String::new();
    let sets = open_all(&a.paths, a.from, opts)?;
    // A group's runs are reported one by one, then the group: each figure across its runs.
    let summaries: Vec<_> = sets
        .iter()
        .filter(|s| s.is_group() && a.out.format != ReportFormat::Csv)
        .map(|set| volley_report::group::summarize(set, opts))
        .collect();
    // The runs are moved out, not copied: an imported file's series can be most of the memory.
    let sources: Vec<Source> = sets.into_iter().flat_map(|s| s.runs).collect();
    let reports: Vec<RunReport> = sources
        .iter()
        .map(|s| RunReport::from_source(s, opts))
        .collect();
    if let Some(addr) = &a.out.serve {
        crate::live_cmd::serve(
            addr,
            volley_report::html::report_page(&sources, &reports, &summaries, opts),
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(html) = &a.out.html {
        std::fs::write(
            html,
            volley_report::html::report_page(&sources, &reports, &summaries, opts),
        )
        .map_err(|e| anyhow::anyhow!("{}: {e}", html.display()))?;
        eprintln!("volley: wrote {}", html.display());
    }
    if a.out.format == ReportFormat::Csv {
        out.push_str(&volley_report::csv(&reports));
    }
    for report in reports.iter().filter(|_| a.out.format != ReportFormat::Csv) {
        out.push_str(&match a.out.format {
            ReportFormat::Table => {
                volley_report::doc(report, &[]).terminal_as(detail(&a.out), REST)
            }
            ReportFormat::Md => volley_report::markdown(report),
            _ => report.to_json() + "\n",
        });
    }
    for summary in &summaries {
        out.push_str(&match a.out.format {
            ReportFormat::Table => summary.doc().terminal_as(detail(&a.out), REST),
            ReportFormat::Md => summary.markdown(),
            _ => summary.to_json() + "\n",
        });
    }
    emit(&a.out.output, &out)?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn compare(a: CompareArgs) -> Result<ExitCode> {
    check_serve_address(&a.out, &a.paths)?;
    // Two capacity results compare as capacities, their brackets the uncertainty.
    let all_paths: Vec<PathBuf> = a.gate.baseline.iter().chain(&a.paths).cloned().collect();
    if let Some(caps) = crate::capacity_cmd::read_all(&all_paths)? {
        if caps.len() != 2 {
            anyhow::bail!(
                "capacity results compare two at a time ({} given); give two capacity directories, or --baseline CAPACITY_DIR and one more",
                caps.len()
            );
        }
        // What a capacity comparison does not have, refused rather than ignored.
        let unsupported = [
            (a.gate.junit.is_some(), "--junit"),
            (a.gate.gate_metrics.is_some(), "--gate-metrics"),
            (a.gate.tolerance.is_some(), "--tolerance"),
            (a.gate.gate_steps, "--gate-steps"),
            (a.out.serve.is_some(), "--serve"),
            (
                !matches!(a.out.format, ReportFormat::Table | ReportFormat::Md),
                "--format json/csv",
            ),
        ];
        if let Some((_, flag)) = unsupported.iter().find(|(given, _)| *given) {
            anyhow::bail!(
                "{flag} is not available for a comparison of capacity results; it is a table (--format table or md, -o FILE) or a page (--html FILE) that --fail-on regression can gate; each capacity.json has the figures"
            );
        }
        let labels: Vec<String> = match a.labels.as_deref() {
            Some(l) => l.split(',').map(|s| s.trim().to_string()).collect(),
            // Two searches of one name are told apart by their directories, never "rooms → rooms".
            None if caps.len() == 2 && caps[0].name == caps[1].name => all_paths
                .iter()
                .map(|p| {
                    let dir = p.file_name().map(|n| n.to_string_lossy().into_owned());
                    format!("{} ({})", caps[0].name, dir.unwrap_or_default())
                })
                .collect(),
            None => caps.iter().map(|c| c.name.clone()).collect(),
        };
        if labels.len() != 2 {
            anyhow::bail!(
                "--labels has {} labels for 2 capacity results",
                labels.len()
            );
        }
        let verdict = volley_report::capacity::regression(&caps[0], &caps[1]);
        // A gate on searches that answer different questions is refused, not passed.
        if a.gate.fail_on.is_some()
            && let volley_report::capacity::CapacityChange::Unlike(_) = verdict
        {
            anyhow::bail!(
                "--fail-on regression cannot judge these capacity results: {}",
                volley_report::capacity::unlike(
                    &caps[0],
                    &caps[1],
                    [&labels[0], &labels[1]].map(|l| l.as_str())
                )
                .join("; ")
            );
        }
        let doc = volley_report::capacity::compare_doc(
            &caps[0],
            &caps[1],
            [&labels[0], &labels[1]],
            a.gate.fail_on.is_some().then_some(&verdict),
        );
        let text = match a.out.format {
            ReportFormat::Md => doc.markdown(),
            _ => doc.terminal_as(detail(&a.out), REST),
        };
        emit(&a.out.output, &text)?;
        if let Some(page) = &a.out.html {
            let html = volley_report::capacity::compare_html(
                &caps[0],
                &caps[1],
                [&labels[0], &labels[1]],
                a.gate.fail_on.is_some().then_some(&verdict),
            );
            std::fs::write(page, html)
                .with_context(|| format!("cannot write {}", page.display()))?;
            eprintln!("volley: wrote {}", page.display());
        }
        if a.gate.fail_on.is_some() && !verdict.passed() {
            eprintln!("volley: gate: {}", verdict.describe());
            return Ok(ExitCode::from(1));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let opts = options(&a.out)?;
    let mut gate = crate::gate_cmd::Gate::from_flags(&a.gate)?;
    let paths = gate.paths(&a.paths)?;
    let labels: Vec<String> = a
        .labels
        .as_deref()
        .map(|l| l.split(',').map(|s| s.trim().to_string()).collect())
        .unwrap_or_default();
    if !labels.is_empty() && labels.len() != paths.len() {
        anyhow::bail!(
            "--labels has {} labels for {} runs",
            labels.len(),
            paths.len()
        );
    }
    let sets = open_all(&paths, None, opts)?;
    gate.check_inputs(&sets)?;
    let cmp = gate.build(&sets, &labels, opts);
    if let Some(addr) = &a.out.serve {
        // The page as --html writes it; its bar charts are drawn in a scratch directory.
        let scratch = std::env::temp_dir().join(format!("volley-serve-{}", std::process::id()));
        std::fs::create_dir_all(&scratch)?;
        let page = scratch.join("compare.html");
        let verdict = gate.page_verdict(&cmp);
        let written = write_compare_html(&cmp, &sets, opts, &page, |sources, svgs| {
            volley_report::html::compare_page(&cmp, sources, opts, svgs, verdict)
        })
        .and_then(|()| Ok(std::fs::read_to_string(&page)?));
        let _ = std::fs::remove_dir_all(&scratch);
        crate::live_cmd::serve(addr, written?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(html) = &a.out.html {
        let verdict = gate.page_verdict(&cmp);
        write_compare_html(&cmp, &sets, opts, html, |sources, svgs| {
            volley_report::html::compare_page(&cmp, sources, opts, svgs, verdict)
        })?;
    }
    let text = match a.out.format {
        ReportFormat::Table => cmp.doc().terminal_as(detail(&a.out), REST),
        ReportFormat::Md => cmp.markdown(),
        ReportFormat::Json => cmp.to_json() + "\n",
        ReportFormat::Csv => cmp.csv(),
    };
    let (text, code) = gate.finish(&cmp, text, a.out.format)?;
    emit(&a.out.output, &text)?;
    Ok(code)
}

/// Writes a comparison's page (`page` draws it from the sources and the bar charts' SVG),
/// with its bar charts as PNG and SVG in `<stem>_charts/`; the charts of a group show its
/// first run (the tables judge every run).
pub(crate) fn write_compare_html(
    cmp: &volley_report::compare::Comparison,
    sets: &[RunSet],
    opts: ReportOptions,
    html: &std::path::Path,
    page: impl FnOnce(&[Source], Vec<String>) -> String,
) -> Result<()> {
    let sources: Vec<Source> = sets.iter().map(|s| s.first().clone()).collect();
    let sources = &sources[..];
    let stem = html
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "compare".into());
    let dir = html.with_file_name(format!("{stem}_charts"));
    let labels: Vec<String> = cmp.runs.iter().map(|r| r.label.clone()).collect();
    let files = volley_report::charts::compare_charts(sources, &labels, opts, &dir)?;
    let svgs = files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "svg") && !p.ends_with("percentiles.svg"))
        .map(std::fs::read_to_string)
        .collect::<std::io::Result<Vec<_>>>()?;
    std::fs::write(html, page(sources, svgs))
        .map_err(|e| anyhow::anyhow!("{}: {e}", html.display()))?;
    eprintln!(
        "volley: wrote {} (charts in {})",
        html.display(),
        dir.display()
    );
    Ok(())
}
