//! A sweep's summary: one row per value, and the best by an objective with its margin
//! over the runner-up against the noise (the same tests as `compare`: within-run for single
//! runs, between runs when each value was repeated as a run group).

use std::fmt::Write;

use serde::Serialize;
use volley_formats::RunSet;
use volley_stats::compare::{compare_groups, metric_values};

use crate::model::ReportOptions;

/// What "best" means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Objective {
    /// Highest TPS average.
    Tps,
    /// Lowest TTFB p99 (per request when known, else per-interval MTTFB p99).
    TtfbP99,
    /// Lowest error rate.
    ErrorRate,
}

/// One value of the sweep.
#[derive(Debug, Clone, Serialize)]
pub struct SweepRow {
    /// `NAME=value`.
    pub label: String,
    /// TPS average.
    pub tps_avg: f64,
    /// TTFB p99, ms (per request when known).
    pub ttfb_p99_ms: f64,
    /// Error rate, %.
    pub error_rate_pct: f64,
    /// Runs behind the row (a value repeated as a group: its means).
    pub runs: usize,
}

/// The summary.
#[derive(Debug, Clone, Serialize)]
pub struct SweepSummary {
    /// The objective.
    pub objective: Objective,
    /// One row per value, in sweep order.
    pub rows: Vec<SweepRow>,
    /// Label of the best value.
    pub best: String,
    /// The runner-up.
    pub runner_up: String,
    /// Best vs runner-up on the objective, % (positive = better).
    pub margin_pct: f64,
    /// The change noise alone could explain, % of the runner-up's value.
    pub noise_pct: f64,
    /// Whether the margin exceeds the noise.
    pub beyond_noise: bool,
    /// Which test judged the margin, with how many runs.
    pub judged_by: String,
}

/// Summarises a sweep: one run or run group per value; a group's figures are its runs' means.
pub fn summarize(
    sets: &[RunSet],
    labels: &[String],
    objective: Objective,
    opts: ReportOptions,
) -> SweepSummary {
    let samples: Vec<Vec<volley_stats::compare::RunSample>> = sets
        .iter()
        .map(|s| crate::compare::samples(&s.runs, opts))
        .collect();
    // A group's figure is that of the runs it keeps (a run whose generator stalled is left out).
    let mean_of = |runs: &[volley_stats::compare::RunSample], key: &str| {
        let v: Vec<f64> = volley_stats::compare::kept(runs)
            .into_iter()
            .filter_map(|i| {
                let r = &runs[i];
                metric_values(r)
                    .into_iter()
                    .find(|m| m.key == key)
                    .map(|m| m.value)
            })
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    let rows: Vec<SweepRow> = samples
        .iter()
        .zip(labels)
        .map(|(runs, label)| {
            let ttfb = mean_of(runs, "ttfb_p99_ms");
            SweepRow {
                label: label.clone(),
                tps_avg: mean_of(runs, "tps_avg"),
                ttfb_p99_ms: if ttfb.is_finite() {
                    ttfb
                } else {
                    mean_of(runs, "mttfb_p99_ms")
                },
                error_rate_pct: mean_of(runs, "error_rate_pct"),
                runs: runs.len(),
            }
        })
        .collect();
    let score = |r: &SweepRow| match objective {
        Objective::Tps => r.tps_avg,
        Objective::TtfbP99 => -r.ttfb_p99_ms,
        Objective::ErrorRate => -r.error_rate_pct,
    };
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&a, &b| score(&rows[b]).total_cmp(&score(&rows[a])));
    let (best, second) = (order[0], order.get(1).copied().unwrap_or(order[0]));
    let key = match objective {
        Objective::Tps => "tps_avg",
        Objective::TtfbP99 => {
            if samples[best][0].ttfb.is_some() {
                "ttfb_p99_ms"
            } else {
                "mttfb_p99_ms"
            }
        }
        Objective::ErrorRate => "error_rate_pct",
    };
    let step = compare_groups(&samples[second], &samples[best]);
    let row = step.iter().find(|r| r.key == key);
    let (change, noise) = row.map_or((0.0, f64::NAN), |r| (r.change_pct, r.noise_pct));
    let margin = if objective == Objective::Tps {
        change
    } else {
        -change
    };
    SweepSummary {
        objective,
        best: rows[best].label.clone(),
        runner_up: rows[second].label.clone(),
        margin_pct: margin,
        noise_pct: noise,
        beyond_noise: row.is_some_and(|r| r.verdict == volley_stats::compare::Verdict::Better),
        judged_by: row.map(crate::compare::judged_by).unwrap_or_default(),
        rows,
    }
}

impl SweepSummary {
    fn verdict(&self) -> String {
        let how = if self.beyond_noise {
            "beyond the noise"
        } else {
            "within the noise: the two are not distinguishable"
        };
        format!(
            "Best by {}: {} — {:+.1} % over {} (noise ±{:.1} %, {how}; judged by {}).",
            serde_json::to_value(self.objective)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            self.best,
            self.margin_pct,
            self.runner_up,
            self.noise_pct,
            self.judged_by
        )
    }

    /// A terminal table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let w = self
            .rows
            .iter()
            .map(|r| r.label.len())
            .max()
            .unwrap_or(5)
            .max(5);
        let _ = writeln!(
            out,
            "  {:<w$}  {:>12}  {:>14}  {:>12}  {:>4}",
            "value", "TPS avg", "TTFB p99 ms", "error rate", "runs"
        );
        for r in &self.rows {
            let mark = if r.label == self.best {
                "  ← best"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "  {:<w$}  {:>12.2}  {:>14.2}  {:>11.2}%  {:>4}{mark}",
                r.label, r.tps_avg, r.ttfb_p99_ms, r.error_rate_pct, r.runs
            );
        }
        let _ = writeln!(out, "{}", self.verdict());
        out
    }

    /// Markdown.
    pub fn markdown(&self) -> String {
        let mut out = String::from(
            "## Sweep\n\n| Value | TPS avg | TTFB p99 (ms) | Error rate | Runs |\n|---|---|---|---|---|\n",
        );
        for r in &self.rows {
            let best = if r.label == self.best {
                " **best**"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "| {}{best} | {:.2} | {:.2} | {:.2}% | {} |",
                r.label, r.tps_avg, r.ttfb_p99_ms, r.error_rate_pct, r.runs
            );
        }
        let _ = writeln!(out, "\n{}", self.verdict());
        out
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("sweeps serialize")
    }
}
