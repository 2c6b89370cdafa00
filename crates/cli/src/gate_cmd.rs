//! `volley compare` as a CI gate: `--baseline`, `--fail-on regression`, `--gate-metrics`,
//! `--tolerance` and `--junit`. The comparison is built as usual; the gate picks the figures
//! that count, adds its verdict to the output and sets the exit code.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use volley_formats::RunSet;
use volley_report::ReportOptions;
use volley_report::compare::Comparison;
use volley_report::gate::{GateResult, GateSpec};

use crate::args::{FailOn, GateFlags, ReportFormat};

/// The gate as the flags set it, checked before any input is read.
pub(crate) struct Gate {
    spec: Option<GateSpec>,
    baseline: Option<PathBuf>,
    fail_on: Option<FailOn>,
    junit: Option<PathBuf>,
    /// Runs compared that did not run their whole plan (aborted, interrupted, partial …):
    /// a gate on them fails, saying which.
    incomplete: Vec<String>,
}

impl Gate {
    /// Checks the flags (metric names, tolerance); a gate is on when any of them is given.
    pub(crate) fn from_flags(f: &GateFlags) -> Result<Gate> {
        let on = f.baseline.is_some()
            || f.fail_on.is_some()
            || f.gate_metrics.is_some()
            || f.tolerance.is_some()
            || f.junit.is_some()
            || f.gate_steps;
        crate::ci::check_junit_path(f.junit.as_deref())?;
        let tolerance_pct = f.tolerance.unwrap_or(0.0);
        let spec = on
            .then(|| GateSpec::parse(f.gate_metrics.as_deref(), tolerance_pct))
            .transpose()
            .map_err(|e| anyhow::anyhow!("--gate-metrics: {e}"))?
            .map(|s| GateSpec {
                steps: f.gate_steps,
                ..s
            });
        Ok(Gate {
            spec,
            baseline: f.baseline.clone(),
            fail_on: f.fail_on,
            junit: f.junit.clone(),
            incomplete: Vec::new(),
        })
    }

    /// The inputs in order: the baseline first.
    pub(crate) fn paths(&self, given: &[PathBuf]) -> Result<Vec<PathBuf>> {
        match &self.baseline {
            Some(b) => Ok(std::iter::once(b.clone())
                .chain(given.iter().cloned())
                .collect()),
            None if given.len() < 2 => anyhow::bail!(
                "volley compare needs two or more runs, or --baseline RUN and one or more runs to compare with it"
            ),
            None => Ok(given.to_vec()),
        }
    }

    /// Refuses a baseline no figure can be judged against: one without a single successful
    /// request (a target that answered 500 to everything), in any of its runs.
    /// Notes the runs that did not complete, which fail a gate.
    pub(crate) fn check_inputs(&mut self, sets: &[RunSet]) -> Result<()> {
        self.incomplete = sets
            .iter()
            .flat_map(|s| &s.runs)
            .filter_map(|r| {
                let m = r.meta.as_ref()?;
                (m.status != volley_formats::RunStatus::Complete).then(|| {
                    format!(
                        "run `{}` is {}{}",
                        r.name,
                        m.status.name(),
                        m.reason
                            .as_deref()
                            .map(|w| format!(" ({w})"))
                            .unwrap_or_default()
                    )
                })
            })
            .collect();
        let (Some(path), Some(base)) = (&self.baseline, sets.first()) else {
            return Ok(());
        };
        for run in &base.runs {
            let ok: u64 = run.series.intervals.iter().map(|i| i.tests).sum();
            if ok == 0 {
                let errors: u64 = run.series.intervals.iter().map(|i| i.errors).sum();
                let notes = if run.input_notes.is_empty() {
                    String::new()
                } else {
                    format!(
                        " (and rows of it were left out: {})",
                        run.input_notes
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join("; ")
                    )
                };
                anyhow::bail!(
                    "--baseline {}: run `{}` has no successful request ({errors} failed){notes}, so there is nothing to compare a candidate with; record the baseline again against a target that answers",
                    path.display(),
                    run.name
                );
            }
        }
        Ok(())
    }

    /// The comparison: each candidate against the baseline, or the chain of runs in order.
    pub(crate) fn build(
        &self,
        sets: &[RunSet],
        labels: &[String],
        opts: ReportOptions,
    ) -> Comparison {
        match self.baseline {
            Some(_) => volley_report::gate::against_baseline(sets, labels, opts),
            None => volley_report::compare::build(sets, labels, opts),
        }
    }

    /// Judges `cmp`, adds the verdict to `text` (the comparison in `format`), writes the JUnit
    /// file and the job summary, and returns the text with the exit code.
    /// The gate's verdict for a page, when a gate judges this comparison: passed, and its
    /// headline. A gate that cannot be evaluated has none here; `finish` says why.
    pub(crate) fn page_verdict(&self, cmp: &Comparison) -> Option<(bool, String)> {
        let spec = self.spec.as_ref()?;
        let gate = GateResult::evaluate(cmp, spec, self.baseline.is_some())
            .ok()?
            .with_incomplete(self.incomplete.clone());
        Some((gate.passed, format!("Gate: {}", gate.headline())))
    }

    pub(crate) fn finish(
        &self,
        cmp: &Comparison,
        text: String,
        format: ReportFormat,
    ) -> Result<(String, ExitCode)> {
        let Some(spec) = &self.spec else {
            crate::ci::append_step_summary(&cmp.markdown());
            return Ok((text, ExitCode::SUCCESS));
        };
        let gate = GateResult::evaluate(cmp, spec, self.baseline.is_some())?
            .with_incomplete(self.incomplete.clone());
        let text = match format {
            ReportFormat::Table => format!("{text}\n{}", gate.table()),
            ReportFormat::Md => format!("{text}\n{}", gate.markdown()),
            ReportFormat::Json => {
                let mut v: serde_json::Value = serde_json::from_str(&text)?;
                v["gate"] = serde_json::to_value(&gate)?;
                serde_json::to_string_pretty(&v)? + "\n"
            }
            ReportFormat::Csv => text,
        };
        if let Some(path) = &self.junit {
            crate::ci::write_junit(
                path,
                &volley_report::junit::gate_suites(&gate, &cmp.table(), &crate::ci::hostname()),
            )?;
        }
        crate::ci::append_step_summary(&format!("{}\n{}", cmp.markdown(), gate.markdown()));
        let failures: Vec<String> = gate
            .failures()
            .map(|(t, c)| {
                // Labels are run names as written: their control characters escaped here.
                let line = format!("{} ({} → {}): {}", c.label, t.before, t.after, c.why);
                volley_report::terminal_safe(&line).into_owned()
            })
            .collect();
        if !failures.is_empty() {
            let n = failures.len();
            eprintln!(
                "volley: gate: {n} figure{} worse beyond the noise or not judgeable:\n  {}",
                if n == 1 { "" } else { "s" },
                failures.join("\n  ")
            );
        }
        for why in &gate.incomplete {
            eprintln!(
                "volley: gate: {why}: it did not run its whole plan, so the gate cannot trust its figures"
            );
        }
        let failed = self.fail_on == Some(FailOn::Regression) && !gate.passed;
        Ok((
            text,
            if failed {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            },
        ))
    }
}
