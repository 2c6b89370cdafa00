//! `volley merge`: the segments' run directories made into one (`volley-merge`), then its
//! report written and printed as after a run, thresholds included.

use std::process::ExitCode;

use anyhow::Result;
use volley_formats::RunStatus;
use volley_merge::MergeOptions;

use crate::args::MergeArgs;

pub(crate) fn merge(a: MergeArgs) -> Result<ExitCode> {
    let start_tolerance = a.start_tolerance;
    merge_and_report(&a.inputs, &a.output, &MergeOptions { start_tolerance })
}

/// Merges the segments under `inputs` into `out`, then writes and prints its report; the
/// exit code is 1 when segments are missing, one was aborted, no request succeeded, or a threshold failed.
pub(crate) fn merge_and_report(
    inputs: &[std::path::PathBuf],
    out: &std::path::Path,
    opts: &MergeOptions,
) -> Result<ExitCode> {
    let merged = volley_merge::merge(inputs, out, opts)?;
    let segments: Vec<String> = merged.segments.iter().map(|i| i.to_string()).collect();
    eprintln!(
        "volley: merged segments {} of run {} ({} intervals) into {}",
        segments.join(", "),
        merged.run_id,
        merged.intervals,
        merged.dir.display()
    );
    let count = merged.segments.len() + merged.missing.len();
    if merged.status == RunStatus::Partial {
        let missing: Vec<String> = merged
            .missing
            .iter()
            .map(|i| format!("{i}/{count}"))
            .collect();
        let (noun, verb) = if missing.len() == 1 {
            ("segment", "is")
        } else {
            ("segments", "are")
        };
        eprintln!(
            "volley: PARTIAL: {noun} {} {verb} missing; the figures cover only the segments merged",
            missing.join(", ")
        );
    }
    for (index, status) in &merged.unfinished {
        // A pod sent SIGTERM (kubectl delete pod, a drain, an eviction) stops its segment
        // gracefully and uploads it: its share is missing from where it stopped.
        eprintln!(
            "volley: INCOMPLETE: segment {index}/{count} is {}: from where it stopped, the figures lack its share",
            status.name()
        );
    }
    let report = crate::run_cmd::write_reports(&merged.dir)?;
    let failures = report.failures();
    for why in &failures {
        eprintln!("volley: FAILED: {}", volley_report::terminal_safe(why));
    }
    // Missing or unfinished segments fail the run as surely as a threshold.
    let failed = merged.status == RunStatus::Partial
        || !merged.unfinished.is_empty()
        || !failures.is_empty();
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
