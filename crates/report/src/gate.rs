//! CI gates on a comparison: which figures count, and whether any of them got worse beyond
//! the noise. The comparison itself ([`crate::compare`]) judges each figure; a gate only picks
//! the figures that count, applies an optional tolerance and says, row by row, why it passed
//! or failed — so a red CI job names the figure, both values and the noise.

use std::fmt::Write;

use serde::Serialize;
use volley_formats::RunSet;
use volley_stats::compare::{CompareRow, Verdict};

use crate::compare::{Comparison, DEFAULT_METRICS, Step, noise, value};
use crate::doc::{Block, Cell, Doc, Section};
use crate::error::{Repr, Result};
use crate::model::ReportOptions;

/// Fewest degrees of freedom (runs − 2) of a between-run row a gate judges: 3 vs 2 runs.
const MIN_GATE_DF: f64 = 3.0;

/// Which figures count and how much worse they may get.
#[derive(Debug, Clone, Serialize)]
pub struct GateSpec {
    /// Keys of the figures that count, as in the comparison JSON (`tps_avg`, `ttfb_p99_ms`, …).
    pub metrics: Vec<&'static str>,
    /// The metrics were named by the user: one that an input cannot give is an error rather
    /// than a skipped row.
    #[serde(skip)]
    pub explicit: bool,
    /// A figure worse beyond the noise fails only when it is also worse by more than this, % of
    /// the earlier value (0: any change beyond the noise fails).
    pub tolerance_pct: f64,
    /// Also judge each scenario step (or test id) found in both runs, on those of the gated
    /// figures a step has (error rate, TPS, MTTFB, TTFB p50 and p99).
    pub steps: bool,
}

/// Every metric name a gate (and `volley runs --trend`) takes.
pub fn metric_names() -> Vec<&'static str> {
    volley_stats::compare::metrics().map(|(k, _)| k).collect()
}

/// `name` checked against the metric names, with the nearest one when it is a typo.
pub fn metric_name(name: &str) -> Result<&'static str> {
    let valid = metric_names();
    let name = name.trim();
    match valid.iter().find(|k| k.eq_ignore_ascii_case(name)) {
        Some(k) => Ok(k),
        None => Err(Repr::UnknownMetric {
            name: name.to_string(),
            // Names are often written without their unit (`ttfb_p99`, `error_rate`).
            suggestion: ["_ms", "_pct"]
                .iter()
                .find_map(|unit| {
                    valid
                        .iter()
                        .find(|k| k.eq_ignore_ascii_case(&format!("{name}{unit}")))
                        .copied()
                })
                .or_else(|| {
                    valid
                        .iter()
                        .find(|k| k.starts_with(&format!("{}_", name.to_ascii_lowercase())))
                        .copied()
                })
                .or_else(|| volley_scenario::suggest::suggest(name, &valid)),
            valid,
        }
        .into()),
    }
}

impl GateSpec {
    /// The default figures, or a comma-separated list of metric names (`all` for every one).
    pub fn parse(list: Option<&str>, tolerance_pct: f64) -> Result<GateSpec> {
        let metrics = match list.map(str::trim) {
            None => DEFAULT_METRICS.to_vec(),
            Some("all") => metric_names(),
            Some(list) => {
                let mut out: Vec<&'static str> = Vec::new();
                for name in list.split(',').filter(|n| !n.trim().is_empty()) {
                    let key = metric_name(name)?;
                    if !out.contains(&key) {
                        out.push(key);
                    }
                }
                if out.is_empty() {
                    return Err(Repr::UnknownMetric {
                        name: list.to_string(),
                        suggestion: None,
                        valid: metric_names(),
                    }
                    .into());
                }
                out
            }
        };
        Ok(GateSpec {
            metrics,
            explicit: list.is_some(),
            tolerance_pct,
            steps: false,
        })
    }
}

/// How one gated figure came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Not worse beyond the noise (or within the tolerance).
    Pass,
    /// Worse beyond the noise (and the tolerance).
    Fail,
    /// The comparison has the figure but could not judge it (too few intervals or requests,
    /// a value that is not a number, a group too small for its noise): the gate fails.
    NotJudged,
    /// An input cannot give this figure at all (an nGrinder CSV has no per-request
    /// latencies), and the gate was not asked for it by name: left out, and said so.
    Unavailable,
}

/// One gated figure of one before/after table.
#[derive(Debug, Clone, Serialize)]
pub struct GateCheck {
    /// Stable key.
    pub key: &'static str,
    /// As the tables label it.
    pub label: String,
    /// The comparison's row (absent when the comparison has no such row).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row: Option<CompareRow>,
    /// Pass, fail or not judged.
    pub outcome: Outcome,
    /// Why, in words, with the values.
    pub why: String,
}

/// The gated figures of one before/after table.
#[derive(Debug, Clone, Serialize)]
pub struct GateTable {
    /// Label of the earlier run (the baseline).
    pub before: String,
    /// Label of the later run.
    pub after: String,
    /// One check per gated figure.
    pub checks: Vec<GateCheck>,
}

/// A gate's verdict on a comparison; serialized under `gate` in the comparison JSON.
#[derive(Debug, Clone, Serialize)]
pub struct GateResult {
    /// What was gated.
    pub spec: GateSpec,
    /// The tables judged: each candidate against the baseline, or the first run against the last.
    pub tables: Vec<GateTable>,
    /// No gated figure failed, every one was judged, and every run compared completed.
    pub passed: bool,
    /// Runs compared that did not run their whole plan (aborted, interrupted, partial …),
    /// each with why: the gate cannot trust their figures, so it fails.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub incomplete: Vec<String>,
}

/// A comparison of each of `sets[1..]` (runs or run groups) against `sets[0]`, the baseline
/// (not a chain): one before/after table per candidate, and no overall table.
pub fn against_baseline(sets: &[RunSet], labels: &[String], opts: ReportOptions) -> Comparison {
    let label = |i: usize| {
        labels
            .get(i)
            .cloned()
            .unwrap_or_else(|| sets[i].name.clone())
    };
    let mut all = crate::compare::build(
        &sets[..sets.len().min(2)],
        &labels[..labels.len().min(2)],
        opts,
    );
    for i in 2..sets.len() {
        let pair = [sets[0].clone(), sets[i].clone()];
        let cmp = crate::compare::build(&pair, &[label(0), label(i)], opts);
        all.runs.extend(cmp.runs.into_iter().skip(1));
        all.steps.extend(cmp.steps);
    }
    all
}

impl GateResult {
    /// Judges `cmp` by `spec`: every table when `baseline` (each candidate against the
    /// baseline), otherwise the last one (the only one of two runs; first against last of more).
    pub fn evaluate(cmp: &Comparison, spec: &GateSpec, baseline: bool) -> Result<GateResult> {
        let steps: Vec<&Step> = match (&cmp.overall, baseline) {
            (_, true) => cmp.steps.iter().collect(),
            (Some(overall), false) => vec![overall],
            (None, false) => cmp.steps.last().into_iter().collect(),
        };
        let labels: std::collections::HashMap<&str, &str> =
            volley_stats::compare::metrics().collect();
        let mut tables = Vec::new();
        for step in steps {
            let mut checks = Vec::new();
            for &key in &spec.metrics {
                let label = labels.get(key).copied().unwrap_or(key).to_string();
                let Some(row) = step.rows.iter().find(|r| r.key == key) else {
                    let why = format!(
                        "{label} is not in the comparison of {} and {}: one of them cannot give it (see its notes)",
                        step.before, step.after
                    );
                    if spec.explicit {
                        return Err(Repr::GateUnavailable {
                            metric: key.to_string(),
                            why,
                        }
                        .into());
                    }
                    checks.push(GateCheck {
                        key,
                        label,
                        row: None,
                        outcome: Outcome::Unavailable,
                        why,
                    });
                    continue;
                };
                let (outcome, why) = judge(row, spec.tolerance_pct);
                checks.push(GateCheck {
                    key,
                    label,
                    row: Some(row.clone()),
                    outcome,
                    why,
                });
            }
            // A step-up is judged at each level too (the whole-run rows mix the levels, so a
            // change at one of them can hide among the plan's own steps there), every population
            // as the total is, and the steps when asked: each on the gated figures it has.
            let parts = step
                .per_level
                .iter()
                .map(|s| (format!("level {}", s.name), s, true))
                .chain(
                    step.per_population
                        .iter()
                        .map(|s| (format!("population `{}`", s.name), s, false)),
                )
                .chain(
                    step.per_step
                        .iter()
                        .filter(|_| spec.steps)
                        .map(|s| (format!("step `{}`", s.name), s, false)),
                );
            // A level's row too short to judge (a percentile with too few requests beyond it
            // in a level) is left out: the whole-run row judges that figure.
            for (name, s, level) in parts {
                for row in s.rows.iter().filter(|r| {
                    spec.metrics.contains(&r.key) && !(level && (r.too_few || r.too_few_intervals))
                }) {
                    let (outcome, why) = judge(row, spec.tolerance_pct);
                    checks.push(GateCheck {
                        key: row.key,
                        label: format!("{name}: {}", row.label),
                        row: Some(row.clone()),
                        outcome,
                        why,
                    });
                }
            }
            tables.push(GateTable {
                before: step.before.clone(),
                after: step.after.clone(),
                checks,
            });
        }
        // A figure the gate has and could not judge is no pass: the gate fails and says why,
        // rather than pass on data it cannot trust. So does a gate left with nothing judged.
        let checks = || tables.iter().flat_map(|t| &t.checks);
        let passed = checks().all(|c| matches!(c.outcome, Outcome::Pass | Outcome::Unavailable))
            && checks().any(|c| c.outcome == Outcome::Pass);
        Ok(GateResult {
            spec: spec.clone(),
            tables,
            passed,
            incomplete: Vec::new(),
        })
    }

    /// Fails the gate for runs that did not run their whole plan (`why`, one per run).
    pub fn with_incomplete(mut self, why: Vec<String>) -> GateResult {
        self.passed &= why.is_empty();
        self.incomplete = why;
        self
    }

    /// The checks that fail the gate (worse, or not judgeable), with their table.
    pub fn failures(&self) -> impl Iterator<Item = (&GateTable, &GateCheck)> {
        self.tables.iter().flat_map(|t| {
            t.checks
                .iter()
                .filter(|c| c.outcome == Outcome::Fail || c.outcome == Outcome::NotJudged)
                .map(move |c| (t, c))
        })
    }

    fn count(&self, outcome: Outcome) -> usize {
        self.tables
            .iter()
            .flat_map(|t| &t.checks)
            .filter(|c| c.outcome == outcome)
            .count()
    }

    /// One line: `PASSED: 6 metrics judged …` or `FAILED: 2 of 6 metrics …`.
    pub fn headline(&self) -> String {
        let total: usize = self.tables.iter().map(|t| t.checks.len()).sum();
        let (failed, unjudged) = (self.count(Outcome::Fail), self.count(Outcome::NotJudged));
        let tolerance = if self.spec.tolerance_pct > 0.0 {
            format!(" and the {}% tolerance", self.spec.tolerance_pct)
        } else {
            String::new()
        };
        let unavailable = self.count(Outcome::Unavailable);
        let mut h = if failed > 0 {
            format!("FAILED: {failed} of {total} gated figures worse beyond the noise{tolerance}")
        } else if unjudged > 0 {
            format!("FAILED: none of {total} gated figures worse beyond the noise{tolerance}")
        } else if !self.incomplete.is_empty() {
            format!(
                "FAILED: {} of the runs compared did not run their whole plan ({})",
                self.incomplete.len(),
                self.incomplete.join("; ")
            )
        } else if !self.passed {
            format!("FAILED: none of {total} gated figures could be judged")
        } else {
            format!("PASSED: none of {total} gated figures worse beyond the noise{tolerance}")
        };
        if unjudged > 0 {
            let _ = write!(
                h,
                "; {unjudged} could not be judged, which fails the gate (see why in each row)"
            );
        }
        if unavailable > 0 {
            let _ = write!(h, "; {unavailable} not in the inputs, left out");
        }
        h
    }

    /// The gate as a document: its headline, then per before/after table every gated figure
    /// with its values, change, noise and why it passed or failed.
    pub fn doc(&self) -> Doc {
        let sections = self
            .tables
            .iter()
            .map(|t| {
                let mut header = vec!["Gate".to_string(), "Metric".to_string()];
                header.extend(crate::compare::row_heads(&t.before, &t.after));
                header.push("Why".to_string());
                let rows = t
                    .checks
                    .iter()
                    .map(|c| {
                        let mut row = vec![
                            Cell {
                                text: c.outcome.word().to_string(),
                                strong: matches!(c.outcome, Outcome::Fail | Outcome::NotJudged),
                                ..Cell::default()
                            },
                            Cell::prose(c.label.as_str()),
                        ];
                        match &c.row {
                            Some(r) => row.extend(crate::compare::row_cells(r)),
                            None => row.extend((0..5).map(|_| Cell::from("n/a"))),
                        }
                        row.push(Cell::prose(c.reason()));
                        row
                    })
                    .collect();
                Section::new(
                    "gate",
                    &format!("{} → {}", t.before, t.after),
                    "",
                    Block::Table { header, rows },
                )
            })
            .collect();
        Doc {
            title: format!(
                "Gate ({}): {}",
                self.spec.metrics.join(", "),
                self.headline()
            ),
            sections,
            ..Doc::default()
        }
    }

    /// The gate on a terminal, after the comparison.
    pub fn table(&self) -> String {
        self.doc().terminal()
    }

    /// The gate in Markdown, for a pull request or `$GITHUB_STEP_SUMMARY`.
    pub fn markdown(&self) -> String {
        self.doc().markdown()
    }
}

impl Outcome {
    /// The gate's column: `pass`, `FAIL`, `not judged`, `not in inputs`.
    fn word(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "FAIL",
            Outcome::NotJudged => "not judged",
            Outcome::Unavailable => "not in inputs",
        }
    }
}

impl GateCheck {
    /// Why it passed or failed, without the values its row's columns show.
    fn reason(&self) -> &str {
        match &self.row {
            Some(r) => {
                let values = values_of(r);
                self.why
                    .strip_prefix(values.as_str())
                    .map_or(self.why.as_str(), |w| w.trim_start_matches(": "))
            }
            None => &self.why,
        }
    }
}

/// A row's values as a check's `why` opens: `10.00 ms → 12.00 ms (+20.00%, noise ±3.1%)`.
fn values_of(r: &CompareRow) -> String {
    format!(
        "{} → {} ({}, noise ±{})",
        value(r.before, r.unit, r.key),
        value(r.after, r.unit, r.key),
        crate::compare::change_parts(r).0,
        noise(r.noise_pct)
    )
}

/// Whether one row passes: worse beyond the noise (and beyond the tolerance) fails; a row
/// the comparison could not judge is not judged.
fn judge(r: &CompareRow, tolerance_pct: f64) -> (Outcome, String) {
    let values = values_of(r);
    if r.too_few_intervals {
        return (
            Outcome::NotJudged,
            format!(
                "{values}: a run has fewer than {} intervals, so its noise cannot be estimated",
                volley_stats::compare::MIN_INTERVALS
            ),
        );
    }
    if r.too_few {
        return (
            Outcome::NotJudged,
            format!("{values}: too few requests beyond this percentile to judge it"),
        );
    }
    if !(r.before.is_finite() && r.after.is_finite() && r.before >= 0.0 && r.after >= 0.0) {
        return (
            Outcome::NotJudged,
            format!(
                "{values}: a value is not a number a run can have (NaN, infinite or negative); check the run's series.csv"
            ),
        );
    }
    // Runs − 2 degrees of freedom: 2 against 2 runs (or a group of 2 against a single run)
    // leave 2 or fewer, where t at this confidence is 19 or more and the spread is no
    // estimate of the noise.
    if let Some(df) = r.df.filter(|df| *df < MIN_GATE_DF) {
        return (
            Outcome::NotJudged,
            format!(
                "{values}: {} against {} runs judged leave the between-run spread {df:.0} degree{} of freedom, so its noise is not an estimate; give each group 3 runs or more (--repeat 3), more when a run may be left out for a stall",
                r.runs_before,
                r.runs_after,
                if df == 1.0 { "" } else { "s" }
            ),
        );
    }
    if !r.noise_pct.is_finite() {
        return (
            Outcome::NotJudged,
            format!("{values}: its noise could not be estimated from these runs"),
        );
    }
    let worse_by = r.change_pct.abs();
    match r.verdict {
        Verdict::Worse if worse_by > tolerance_pct => {
            (Outcome::Fail, format!("{values}: worse beyond the noise"))
        }
        Verdict::Worse => (
            Outcome::Pass,
            format!("{values}: worse beyond the noise, within the {tolerance_pct}% tolerance"),
        ),
        Verdict::Better => (Outcome::Pass, format!("{values}: better")),
        Verdict::Noise => (Outcome::Pass, format!("{values}: within the noise")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(dir: &std::path::Path, ms: &[u64]) -> Vec<RunSet> {
        ms.iter()
            .enumerate()
            .map(|(i, ms)| {
                RunSet::single(crate::testrun::run(
                    &dir.join(i.to_string()),
                    &format!("r{i}"),
                    8,
                    50,
                    *ms,
                    &[],
                ))
            })
            .collect()
    }

    #[test]
    fn names_are_checked_with_a_suggestion() {
        let spec = GateSpec::parse(Some("tps_avg, TTFB_P99_MS"), 0.0).unwrap();
        assert_eq!(spec.metrics, ["tps_avg", "ttfb_p99_ms"]);
        assert!(spec.explicit);
        let e = GateSpec::parse(Some("tps_avg,ttfb_p99"), 0.0)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown metric `ttfb_p99`")
                && e.contains("did you mean `ttfb_p99_ms`")
                && e.contains("error_rate_pct"),
            "{e}"
        );
        assert_eq!(
            GateSpec::parse(Some("all"), 0.0).unwrap().metrics.len(),
            metric_names().len()
        );
        assert_eq!(GateSpec::parse(None, 0.0).unwrap().metrics, DEFAULT_METRICS);
        for m in DEFAULT_METRICS {
            assert!(metric_names().contains(&m), "{m}");
        }
    }

    #[test]
    fn slower_latency_fails_the_gate_and_the_same_passes() {
        let dir = tempfile::tempdir().unwrap();
        let opts = ReportOptions::default();
        let sources = runs(dir.path(), &[5, 5, 9]);
        let spec = GateSpec::parse(Some("mttfb_avg_ms,ttfb_p50_ms"), 0.0).unwrap();
        let same = GateResult::evaluate(
            &crate::compare::build(&sources[..2], &[], opts),
            &spec,
            false,
        )
        .unwrap();
        assert!(same.passed, "{}", same.table());
        let slower = GateResult::evaluate(
            &crate::compare::build(&sources[1..], &[], opts),
            &spec,
            false,
        )
        .unwrap();
        assert!(!slower.passed);
        let failed: Vec<&str> = slower.failures().map(|(_, c)| c.key).collect();
        assert_eq!(failed, ["mttfb_avg_ms", "ttfb_p50_ms"]);
        assert!(
            slower.table().contains("FAIL") && slower.markdown().contains("| **FAIL** |"),
            "{}",
            slower.table()
        );
        // An 80 % tolerance lets the +80 % through; the row says why it passed.
        let tolerant = GateSpec {
            tolerance_pct: 81.0,
            ..spec.clone()
        };
        let r = GateResult::evaluate(
            &crate::compare::build(&sources[1..], &[], opts),
            &tolerant,
            false,
        )
        .unwrap();
        assert!(
            r.passed && r.table().contains("within the 81% tolerance"),
            "{}",
            r.table()
        );
    }

    #[test]
    fn a_baseline_is_compared_with_each_candidate() {
        let dir = tempfile::tempdir().unwrap();
        let opts = ReportOptions::default();
        let sources = runs(dir.path(), &[5, 5, 9]);
        let cmp = against_baseline(&sources, &[], opts);
        assert_eq!(cmp.steps.len(), 2);
        assert!(cmp.overall.is_none());
        assert_eq!(
            (cmp.steps[1].before.as_str(), cmp.steps[1].after.as_str()),
            ("r0", "r2")
        );
        let spec = GateSpec::parse(Some("ttfb_p50_ms"), 0.0).unwrap();
        let gate = GateResult::evaluate(&cmp, &spec, true).unwrap();
        let outcomes: Vec<Outcome> = gate.tables.iter().map(|t| t.checks[0].outcome).collect();
        assert_eq!(outcomes, [Outcome::Pass, Outcome::Fail]);
    }

    #[test]
    fn runs_too_short_to_judge_are_not_judged_and_fail_the_gate() {
        let dir = tempfile::tempdir().unwrap();
        let a = RunSet::single(crate::testrun::run(
            &dir.path().join("a"),
            "a",
            3,
            50,
            5,
            &[],
        ));
        let b = RunSet::single(crate::testrun::run(
            &dir.path().join("b"),
            "b",
            3,
            50,
            50,
            &[],
        ));
        let gate = GateResult::evaluate(
            &crate::compare::build(&[a, b], &[], ReportOptions::default()),
            &GateSpec::parse(None, 0.0).unwrap(),
            false,
        )
        .unwrap();
        assert!(!gate.passed, "a gate that judged nothing must not pass");
        assert!(gate.headline().starts_with("FAILED"), "{}", gate.headline());
        assert!(
            gate.tables[0]
                .checks
                .iter()
                .all(|c| c.outcome == Outcome::NotJudged),
            "{}",
            gate.table()
        );
        assert!(
            gate.headline().contains("could not be judged"),
            "{}",
            gate.headline()
        );
    }
}
