//! What CI reads besides the exit code: JUnit XML files (`--junit`) and GitHub Actions' job
//! summary (`$GITHUB_STEP_SUMMARY`, appended to, never truncated).

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use volley_engine::Trace;
use volley_report::RunReport;
use volley_report::junit::{Case, CaseOutcome, Suite};

/// GitHub Actions' job summary file, set in every step of a job.
pub(crate) const STEP_SUMMARY: &str = "GITHUB_STEP_SUMMARY";

/// The machine the load ran on, for JUnit's `hostname`.
pub(crate) fn hostname() -> String {
    let h = volley_formats::rundir::host_name();
    if h.is_empty() {
        "localhost".to_string()
    } else {
        h
    }
}

/// Fails early, before a run, when `--junit FILE` could not be written at its end.
pub(crate) fn check_junit_path(path: Option<&Path>) -> Result<()> {
    if let Some(p) = path
        && p.is_dir()
    {
        anyhow::bail!(
            "--junit {}: that is a directory; name the file to write, e.g. --junit {}",
            p.display(),
            p.join("volley-junit.xml").display()
        );
    }
    let Some(parent) = path
        .and_then(Path::parent)
        .filter(|p| !p.as_os_str().is_empty())
    else {
        return Ok(());
    };
    if !parent.is_dir() {
        anyhow::bail!(
            "--junit {}: the directory {} does not exist; create it or write the file elsewhere",
            path.unwrap_or(parent).display(),
            parent.display()
        );
    }
    Ok(())
}

/// Writes `suites` as a JUnit XML file.
pub(crate) fn write_junit(path: &Path, suites: &[Suite]) -> Result<()> {
    std::fs::write(path, volley_report::junit::document(suites))
        .with_context(|| format!("--junit {}: cannot write it", path.display()))?;
    eprintln!("volley: wrote {} (JUnit XML)", path.display());
    Ok(())
}

/// Appends `markdown` to the file `$GITHUB_STEP_SUMMARY` names, when it is set. A summary that
/// cannot be written is said on standard error and does not change the outcome of the command.
pub(crate) fn append_step_summary(markdown: &str) {
    let Some(path) = std::env::var_os(STEP_SUMMARY).filter(|p| !p.is_empty()) else {
        return;
    };
    let path = Path::new(&path);
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| {
            f.write_all(markdown.as_bytes())?;
            if !markdown.ends_with('\n') {
                f.write_all(b"\n")?;
            }
            f.write_all(b"\n")
        });
    match written {
        Ok(()) => eprintln!(
            "volley: appended the summary to ${STEP_SUMMARY} ({})",
            path.display()
        ),
        Err(e) => eprintln!(
            "volley: warning: cannot append to ${STEP_SUMMARY} ({}): {e}",
            path.display()
        ),
    }
}

/// What `volley run` hands CI: each run's thresholds as a JUnit suite (one per run of a
/// group), each run's report in the job summary.
/// `target` is `--target` (rate, as given): each run's suite gets a case for it.
pub(crate) fn after_runs(
    junit: Option<&Path>,
    reports: &[RunReport],
    target: Option<&(f64, String)>,
) -> Result<()> {
    if let Some(path) = junit {
        let host = hostname();
        let suites: Vec<Suite> = reports
            .iter()
            .map(|r| {
                let mut suite = volley_report::junit::run_suite(r, &host);
                if let Some((rate, given)) = target {
                    let tps = r.seed_suite.tps_avg;
                    let v = volley_report::capacity::TargetVerdict::of(tps, *rate, given);
                    let said = format!(
                        "TPS {} {} (target {given})",
                        volley_formats::numfmt::grouped(tps),
                        v.describe()
                    );
                    suite.cases.push(Case {
                        name: format!("target: {given}"),
                        classname: format!("volley.run.{}", r.name),
                        time_s: 0.0,
                        outcome: if v.met {
                            CaseOutcome::Passed
                        } else {
                            CaseOutcome::Failure {
                                r#type: "target".into(),
                                message: said.clone(),
                                text: said,
                            }
                        },
                    });
                }
                suite
            })
            .collect();
        write_junit(path, &suites)?;
    }
    for report in reports {
        append_step_summary(&volley_report::markdown(report));
    }
    Ok(())
}

/// `volley check` as a suite: whether the scenario is valid, then one case per request of the
/// iteration (a failed step carries what it sent and what came back).
pub(crate) fn check_suite(scenario: &Path, invalid: Option<&str>, traces: &[Trace]) -> Suite {
    let classname = format!(
        "volley.check.{}",
        scenario
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    );
    let mut cases = vec![Case {
        name: "scenario is valid".to_string(),
        classname: classname.clone(),
        time_s: 0.0,
        outcome: match invalid {
            None => CaseOutcome::Passed,
            Some(errors) => CaseOutcome::Failure {
                r#type: "invalid scenario".into(),
                message: errors.lines().next().unwrap_or(errors).to_string(),
                text: errors.to_string(),
            },
        },
    }];
    cases.extend(traces.iter().map(|t| Case {
        name: format!("{} ({})", t.step, t.request),
        classname: classname.clone(),
        time_s: t.total_ms / 1000.0,
        outcome: if t.passed {
            CaseOutcome::Passed
        } else {
            let status = if t.status > 0 {
                format!("status {}", t.status)
            } else {
                "no response".to_string()
            };
            CaseOutcome::Failure {
                r#type: "request".into(),
                message: format!("{}: {} ({status}, {:.1} ms)", t.step, t.outcome, t.total_ms),
                text: format!(
                    "{}\n{status} after {:.1} ms (first byte {:.1} ms)\n{}\n{}",
                    t.request, t.total_ms, t.ttfb_ms, t.outcome, t.response_body
                ),
            }
        },
    }));
    Suite {
        name: format!("check {}", scenario.display()),
        timestamp: jiff::Timestamp::now().to_string(),
        hostname: hostname(),
        time_s: traces.iter().map(|t| t.total_ms / 1000.0).sum(),
        properties: vec![("scenario".into(), scenario.display().to_string())],
        cases,
        system_out: String::new(),
    }
}
