//! A sweep's summary: one row per value, and the best by an objective with its margin
//! over the runner-up against the two runs' noise (the same bootstrap as `compare`).

use std::fmt::Write;

use serde::Serialize;
use volley_formats::{HistKey, Source};
use volley_stats::compare::compare;
use volley_stats::SeedSuite;

use crate::model::{ReportOptions, warmup_seconds};

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
}

/// Summarises a sweep.
pub fn summarize(sources: &[Source], labels: &[String], objective: Objective, opts: ReportOptions) -> SweepSummary {
    let samples = crate::compare::samples(sources, opts);
    let rows: Vec<SweepRow> = samples
        .iter()
        .zip(sources)
        .zip(labels)
        .map(|((sample, src), label)| {
            let suite = SeedSuite::compute(&sample.series, sample.options);
            let w = warmup_seconds(src, opts.warmup);
            let ttfb = src.latency(HistKey::TTFB, w).map_or(suite.mttfb_p99_ms, |l| l.p99_ms);
            SweepRow { label: label.clone(), tps_avg: suite.tps_avg, ttfb_p99_ms: ttfb, error_rate_pct: suite.error_rate_pct }
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
        Objective::TtfbP99 => if samples[best].ttfb.is_some() { "ttfb_p99_ms" } else { "mttfb_p99_ms" },
        Objective::ErrorRate => "error_rate_pct",
    };
    let step = compare(&samples[second], &samples[best]);
    let row = step.iter().find(|r| r.key == key);
    let (change, noise) = row.map_or((0.0, f64::NAN), |r| (r.change_pct, r.noise_pct));
    let margin = if objective == Objective::Tps { change } else { -change };
    SweepSummary {
        objective,
        best: rows[best].label.clone(),
        runner_up: rows[second].label.clone(),
        margin_pct: margin,
        noise_pct: noise,
        beyond_noise: row.is_some_and(|r| r.verdict == volley_stats::compare::Verdict::Better),
        rows,
    }
}

impl SweepSummary {
    fn verdict(&self) -> String {
        let how = if self.beyond_noise { "beyond the noise" } else { "within the noise: the two are not distinguishable" };
        format!(
            "Best by {}: {} — {:+.1} % over {} (noise ±{:.1} %, {how}).",
            serde_json::to_value(self.objective).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default(),
            self.best,
            self.margin_pct,
            self.runner_up,
            self.noise_pct
        )
    }

    /// A terminal table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let w = self.rows.iter().map(|r| r.label.len()).max().unwrap_or(5).max(5);
        let _ = writeln!(out, "  {:<w$}  {:>12}  {:>14}  {:>12}", "value", "TPS avg", "TTFB p99 ms", "error rate");
        for r in &self.rows {
            let mark = if r.label == self.best { "  ← best" } else { "" };
            let _ = writeln!(out, "  {:<w$}  {:>12.2}  {:>14.2}  {:>11.2}%{mark}", r.label, r.tps_avg, r.ttfb_p99_ms, r.error_rate_pct);
        }
        let _ = writeln!(out, "{}", self.verdict());
        out
    }

    /// Markdown.
    pub fn markdown(&self) -> String {
        let mut out = String::from("## Sweep\n\n| Value | TPS avg | TTFB p99 (ms) | Error rate |\n|---|---|---|---|\n");
        for r in &self.rows {
            let best = if r.label == self.best { " **best**" } else { "" };
            let _ = writeln!(out, "| {}{best} | {:.2} | {:.2} | {:.2}% |", r.label, r.tps_avg, r.ttfb_p99_ms, r.error_rate_pct);
        }
        let _ = writeln!(out, "\n{}", self.verdict());
        out
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("sweeps serialize")
    }
}
