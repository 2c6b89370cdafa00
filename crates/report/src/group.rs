//! A run group's summary: every compared figure across the group's runs — each run's
//! value, their mean, standard deviation and coefficient of variation — so the run-to-run
//! spread that a single run cannot show is in plain sight.

use serde::Serialize;
use volley_formats::RunSet;
use volley_stats::compare::metric_values;

use crate::doc::{Answer, Block, Doc, Figure as Quoted, Section, cells};
use crate::model::ReportOptions;

/// One figure across the runs.
#[derive(Debug, Clone, Serialize)]
pub struct GroupRow {
    /// Stable key (as in comparisons).
    pub key: &'static str,
    /// Label.
    pub label: &'static str,
    /// Unit.
    pub unit: &'static str,
    /// Each run's value, in run order.
    pub values: Vec<f64>,
    /// Mean across the runs kept (all but those in the summary's `left_out`).
    pub mean: f64,
    /// Sample standard deviation across runs (NaN for one run).
    pub sd: f64,
    /// `sd / mean · 100`.
    pub cv_pct: f64,
    /// Smallest run value.
    pub min: f64,
    /// Largest run value.
    pub max: f64,
}

/// The summary of a group.
#[derive(Debug, Clone, Serialize)]
pub struct GroupSummary {
    /// The group's name.
    pub name: String,
    /// Where it is.
    pub path: String,
    /// The runs summarized (their directory names), in order.
    pub runs: Vec<String>,
    /// Runs (1-based) listed but left out of the mean, SD and CV: their generator stalled.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<usize>,
    /// Runs left out and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// One row per figure the runs give.
    pub rows: Vec<GroupRow>,
}

/// Summarizes `set`'s runs (after each run's warm-up).
pub fn summarize(set: &RunSet, opts: ReportOptions) -> GroupSummary {
    let samples = crate::compare::samples(&set.runs, opts);
    let per_run: Vec<Vec<volley_stats::compare::MetricValue>> =
        samples.iter().map(metric_values).collect();
    // The group's figures are those of the runs it keeps: a run whose generator stalled is
    // listed, and left out of the mean and spread, as comparisons leave it out.
    let kept = volley_stats::compare::kept(&samples);
    let mut notes = set.notes.clone();
    notes.extend(crate::compare::stalled_but_kept(&samples, &kept, "Runs"));
    notes.extend(
        samples
            .iter()
            .enumerate()
            .filter(|(i, _)| !kept.contains(i))
            .map(|(i, r)| {
                format!(
                    "Run {} is left out of the mean, SD and CV: volley's own loop stalled for {:.0} ms (more than {:.0} ms), so its latencies hold volley's delay and its throughput the gap.",
                    i + 1,
                    r.generator_lag_ms,
                    volley_stats::compare::STALL_MS
                )
            }),
    );
    let rows = per_run
        .first()
        .map(|first| {
            first
                .iter()
                .enumerate()
                .filter_map(|(i, m)| {
                    let values: Vec<f64> = per_run.iter().map(|r| r[i].value).collect();
                    if !values.iter().all(|v| v.is_finite()) {
                        return None;
                    }
                    let judged: Vec<f64> = kept.iter().map(|&k| values[k]).collect();
                    let n = judged.len() as f64;
                    let mean = judged.iter().sum::<f64>() / n;
                    let sd = if judged.len() < 2 {
                        f64::NAN
                    } else {
                        (judged.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
                    };
                    Some(GroupRow {
                        key: m.key,
                        label: m.label,
                        unit: m.unit,
                        mean,
                        sd,
                        cv_pct: if mean == 0.0 {
                            f64::NAN
                        } else {
                            sd / mean.abs() * 100.0
                        },
                        min: judged.iter().copied().fold(f64::INFINITY, f64::min),
                        max: judged.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                        values,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    GroupSummary {
        name: set.name.clone(),
        path: set.path.display().to_string(),
        runs: set
            .runs
            .iter()
            .map(|s| {
                s.path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            })
            .collect(),
        left_out: (0..samples.len())
            .filter(|i| !kept.contains(i))
            .map(|i| i + 1)
            .collect(),
        notes,
        rows,
    }
}

fn cv(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.1}%")
    } else {
        "n/a".to_string()
    }
}

impl GroupSummary {
    /// The summary as a document: the quoted figures' means and spreads first, then one
    /// column per run, the mean, SD, CV and range.
    pub fn doc(&self) -> Doc {
        let v = |r: &GroupRow, x: f64| {
            if x.is_finite() {
                crate::compare::value(x, r.unit, r.key)
            } else {
                "n/a".into()
            }
        };
        let figures = ["tps_avg", "ttfb_p99_ms", "error_rate_pct"]
            .iter()
            .filter_map(|k| self.rows.iter().find(|r| r.key == *k))
            .map(|r| {
                Quoted::new(
                    &format!("{} (mean)", r.label),
                    format!("{} (CV {})", v(r, r.mean), cv(r.cv_pct)),
                )
            })
            .collect();
        let mut header = vec!["Metric".to_string()];
        header.extend((1..=self.runs.len()).map(|i| {
            if self.left_out.contains(&i) {
                format!("Run {i} (left out)")
            } else {
                format!("Run {i}")
            }
        }));
        header.extend(["mean", "sd", "CV", "min", "max"].map(String::from));
        let rows = self
            .rows
            .iter()
            .map(|r| {
                let mut row = vec![r.label.to_string()];
                row.extend(r.values.iter().map(|x| v(r, *x)));
                row.extend([
                    v(r, r.mean),
                    v(r, r.sd),
                    cv(r.cv_pct),
                    v(r, r.min),
                    v(r, r.max),
                ]);
                cells(row)
            })
            .collect();
        let mut sections = vec![
            Section::new(
                "rows",
                "Across the runs",
                "each run's value, then the mean, standard deviation and spread between runs",
                Block::Table { header, rows },
            ),
            Section::new(
                "runs",
                "Runs",
                "",
                Block::List(
                    self.runs
                        .iter()
                        .enumerate()
                        .map(|(i, run)| format!("Run {}: {run}", i + 1))
                        .collect(),
                ),
            ),
        ];
        if !self.notes.is_empty() {
            sections.push(Section::new(
                "notes",
                "Notes",
                "",
                Block::Notes(self.notes.clone()),
            ));
        }
        Doc {
            title: format!("Group {}", self.name),
            meta: vec![format!(
                "{} runs: mean across runs, spread between runs · {}",
                self.runs.len(),
                self.path
            )],
            answer: Answer {
                figures,
                ..Answer::default()
            },
            sections,
        }
    }

    /// A terminal table.
    pub fn table(&self) -> String {
        self.doc().terminal()
    }

    /// Markdown: one column per run, then mean, sd and CV.
    pub fn markdown(&self) -> String {
        self.doc().markdown()
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("group summaries serialize")
    }
}
