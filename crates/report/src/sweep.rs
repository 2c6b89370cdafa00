//! A sweep's summary: one row per value, and the best by an objective with its margin
//! over the runner-up against the noise (the same tests as `compare`: within-run for single
//! runs, between runs when each value was repeated as a run group). A value whose run was
//! cut short (interrupted, or never ended) is shown, marked, and never judged: the best is
//! named from the values that ran their whole plan, and from none when fewer than two did.

use serde::Serialize;
use volley_formats::{RunSet, RunStatus};
use volley_stats::compare::{RunSample, compare_groups, metric_values};

use crate::doc::{Answer, Block, Doc, Figure as Quoted, Section, cells};
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
    /// Why the value is not judged: its run was cut short (`interrupted`, `did not finish`,
    /// `interrupted after 1 of 3 runs`), so its figures cover less than its plan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

/// The summary.
#[derive(Debug, Clone, Serialize)]
pub struct SweepSummary {
    /// The objective.
    pub objective: Objective,
    /// One row per value, in sweep order (whole runs).
    pub rows: Vec<SweepRow>,
    /// Label of the best value; `None` when fewer than two values ran their whole plan.
    pub best: Option<String>,
    /// The runner-up.
    pub runner_up: Option<String>,
    /// Best vs runner-up on the objective, % (positive = better); `null` without a best.
    pub margin_pct: f64,
    /// The change noise alone could explain, % of the runner-up's value; `null` without a best.
    pub noise_pct: f64,
    /// Whether the margin exceeds the noise.
    pub beyond_noise: bool,
    /// Which test judged the margin, with how many runs.
    pub judged_by: String,
    /// When every run held the same levels of VUs (a step-up): each level judged on its own
    /// intervals, in the plan's order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<SweepLevel>,
    /// The level the verdict is given at: the highest level every value sustained (errors
    /// under [`SUSTAINED_ERROR_PCT`]), or the lowest when none did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deciding_level: Option<String>,
    /// No level was sustained by every value: the verdict is at the lowest level.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub every_level_failed: bool,
    /// Why the sweep ended before its last value (a signal), when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// The values never run because the sweep was stopped first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_run: Vec<String>,
    /// Why no level is judged on its own although the plan held several: they were too short
    /// to judge, or the values' runs held different levels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub levels_not_judged: Option<String>,
}

/// One held level of a step-up sweep.
#[derive(Debug, Clone, Serialize)]
pub struct SweepLevel {
    /// `20 VUs`.
    pub level: String,
    /// VUs held.
    pub vusers: f64,
    /// One row per value, in sweep order, at this level.
    pub rows: Vec<SweepRow>,
    /// The best at this level, with its margin over the runner-up against the noise.
    pub best: String,
    pub runner_up: String,
    pub margin_pct: f64,
    pub noise_pct: f64,
    pub beyond_noise: bool,
    pub judged_by: String,
}

/// One table of a sweep's summary.
struct SweepTable<'a> {
    heading: Option<String>,
    rows: &'a [SweepRow],
    /// The best's label ("" for none).
    best: &'a str,
    /// The level's verdict.
    verdict: Option<String>,
}

/// A level counts as sustained by a value while its error rate stays under this, %.
pub const SUSTAINED_ERROR_PCT: f64 = 1.0;

/// The best of `samples` (one run or group per value) by `objective`, and its margin.
struct Judged {
    rows: Vec<SweepRow>,
    /// `None` when fewer than two values can be judged.
    best: Option<usize>,
    runner_up: Option<usize>,
    margin_pct: f64,
    noise_pct: f64,
    beyond_noise: bool,
    judged_by: String,
}

/// Judges the values whose `stopped` is `None`; the others are rows, marked, and no more.
fn judge(
    samples: &[Vec<RunSample>],
    labels: &[String],
    stopped: &[Option<String>],
    objective: Objective,
) -> Judged {
    // A group's figure is that of the runs it keeps (a run whose generator stalled is left out).
    let mean_of = |runs: &[RunSample], key: &str| {
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
        .zip(stopped)
        .map(|((runs, label), stopped)| {
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
                stopped: stopped.clone(),
            }
        })
        .collect();
    let score = |r: &SweepRow| match objective {
        Objective::Tps => r.tps_avg,
        Objective::TtfbP99 => -r.ttfb_p99_ms,
        Objective::ErrorRate => -r.error_rate_pct,
    };
    // Only values that ran their whole plan, with a figure to rank them by, are candidates.
    let mut order: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].stopped.is_none() && score(&rows[i]).is_finite())
        .collect();
    order.sort_by(|&a, &b| score(&rows[b]).total_cmp(&score(&rows[a])));
    let (best, second) = match order[..] {
        [best, second, ..] => (best, second),
        _ => {
            return Judged {
                rows,
                best: None,
                runner_up: None,
                margin_pct: f64::NAN,
                noise_pct: f64::NAN,
                beyond_noise: false,
                judged_by: String::new(),
            };
        }
    };
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
    Judged {
        best: Some(best),
        runner_up: Some(second),
        margin_pct: margin,
        noise_pct: noise,
        beyond_noise: row.is_some_and(|r| r.verdict == volley_stats::compare::Verdict::Better),
        judged_by: row.map(crate::compare::judged_by).unwrap_or_default(),
        rows,
    }
}

/// Summarises a sweep: one run or run group per value; a group's figures are its runs' means.
/// A step-up sweep (every run held the same levels) is also judged level by level, and its
/// verdict is given at the highest level every value sustained.
pub fn summarize(
    sets: &[RunSet],
    labels: &[String],
    objective: Objective,
    opts: ReportOptions,
) -> SweepSummary {
    let samples: Vec<Vec<RunSample>> = sets
        .iter()
        .map(|s| crate::compare::samples(&s.runs, opts))
        .collect();
    let stopped: Vec<Option<String>> = sets.iter().map(cut_short).collect();
    let whole = judge(&samples, labels, &stopped, objective);
    // Levels are judged among the values that ran their whole plan, when two did.
    let levels = if whole.best.is_some() {
        sweep_levels(sets, labels, &stopped, objective, opts)
    } else {
        Vec::new()
    };
    // The highest level every value sustained; when none did, the lightest, said as such.
    let sustained = |l: &&SweepLevel| {
        l.rows
            .iter()
            .all(|r| r.error_rate_pct < SUSTAINED_ERROR_PCT)
    };
    let by_load = |a: &&SweepLevel, b: &&SweepLevel| a.vusers.total_cmp(&b.vusers);
    let deciding = levels
        .iter()
        .filter(sustained)
        .max_by(by_load)
        .map(|l| (l, true))
        .or_else(|| levels.iter().min_by(by_load).map(|l| (l, false)));
    let label = |i: Option<usize>| i.map(|i| whole.rows[i].label.clone());
    let mut out = SweepSummary {
        objective,
        best: label(whole.best),
        runner_up: label(whole.runner_up),
        margin_pct: whole.margin_pct,
        noise_pct: whole.noise_pct,
        beyond_noise: whole.beyond_noise,
        judged_by: whole.judged_by,
        rows: whole.rows,
        deciding_level: deciding.map(|(l, _)| l.level.clone()),
        every_level_failed: deciding.is_some_and(|(_, sustained)| !sustained),
        levels: Vec::new(),
        stopped: None,
        not_run: Vec::new(),
        levels_not_judged: None,
    };
    if let Some((l, _)) = deciding {
        out.best = Some(l.best.clone());
        out.runner_up = Some(l.runner_up.clone());
        out.margin_pct = l.margin_pct;
        out.noise_pct = l.noise_pct;
        out.beyond_noise = l.beyond_noise;
        out.judged_by = l.judged_by.clone();
    }
    if whole.best.is_some() && levels.is_empty() {
        out.levels_not_judged = sets
            .first()
            .and_then(|s| s.runs.first())
            .and_then(|first| levels_not_judged(first, opts));
    }
    out.levels = levels;
    out
}

/// Why a sweep whose plan held several levels of VUs judges none on its own (`None` when the
/// plan held fewer than two): the levels were shorter than a judgement needs, or the values'
/// runs did not hold the same ones.
fn levels_not_judged(first: &volley_formats::Source, opts: ReportOptions) -> Option<String> {
    let meta = first.meta.as_ref().filter(|m| !m.plan.load.is_open())?;
    let spans = meta.plan.load.held_spans();
    let mut vus: Vec<u64> = spans.iter().map(|s| s.2).collect();
    vus.dedup();
    if vus.len() < 2 || !first.populations.is_empty() {
        return None;
    }
    let min = volley_stats::compare::MIN_INTERVALS;
    let held: Vec<crate::levels::Level> = crate::levels::of(first, opts)
        .into_iter()
        .filter(|l| {
            spans.iter().any(|&(from, to, v)| {
                v as f64 == l.vusers && l.from_s + 1e-6 >= from && l.to_s <= to + 1e-6
            })
        })
        .collect();
    let short = held.iter().filter(|l| l.intervals < min).count();
    Some(if short > 0 || held.len() < 2 {
        format!(
            "No level is judged on its own: {} of the {} levels the plan held lasted fewer than {min} intervals after the warm-up, too few to tell a difference from noise; hold each stage for at least {min} intervals.",
            short.max(vus.len().saturating_sub(held.len())),
            vus.len()
        )
    } else {
        "No level is judged on its own: the values' runs did not hold the same levels of VUs."
            .to_string()
    })
}

/// Why a value's run or group is not judged: it was cut short (stopped by a signal, or its
/// recorder died), so its figures cover less than its plan; `None` when it ran its course
/// (an aborted run included: volley's own verdict on the value, still compared).
fn cut_short(set: &RunSet) -> Option<String> {
    let cut = |s: RunStatus| {
        matches!(
            s,
            RunStatus::Interrupted | RunStatus::Running | RunStatus::DidNotFinish
        )
    };
    if let Some(g) = &set.group {
        return cut(g.status).then(|| {
            format!(
                "{} after {} of {} runs",
                g.status.name(),
                set.runs.len(),
                g.repeat
            )
        });
    }
    set.runs
        .iter()
        .filter_map(|r| r.meta.as_ref())
        .map(|m| m.status)
        .find(|s| cut(*s))
        .map(|s| s.name().to_string())
}

/// Each level every run of the sweep held, judged on its own.
fn sweep_levels(
    sets: &[RunSet],
    labels: &[String],
    stopped: &[Option<String>],
    objective: Objective,
    opts: ReportOptions,
) -> Vec<SweepLevel> {
    let sources: Vec<&volley_formats::Source> = sets.iter().flat_map(|s| &s.runs).collect();
    let Some(first) = sources.first() else {
        return Vec::new();
    };
    // Every run's levels, the same VUs in the same order as the first run's.
    let per_set: Option<Vec<Vec<Vec<crate::levels::Level>>>> = sets
        .iter()
        .map(|s| {
            crate::compare::shared_levels(std::slice::from_ref(first), &s.runs, opts)
                .map(|(_, l)| l)
        })
        .collect();
    let Some(per_set) = per_set else {
        return Vec::new();
    };
    let reference = crate::levels::planned(first, opts);
    (0..reference.len())
        .map(|k| {
            let samples: Vec<Vec<RunSample>> = sets
                .iter()
                .zip(&per_set)
                .map(|(s, l)| crate::compare::level_samples(&s.runs, l, k, opts))
                .collect();
            let j = judge(&samples, labels, stopped, objective);
            let label = |i: Option<usize>| i.map(|i| j.rows[i].label.clone()).unwrap_or_default();
            SweepLevel {
                level: crate::compare::level_name(&reference, k),
                vusers: reference[k].vusers,
                best: label(j.best),
                runner_up: label(j.runner_up),
                margin_pct: j.margin_pct,
                noise_pct: j.noise_pct,
                beyond_noise: j.beyond_noise,
                judged_by: j.judged_by,
                rows: j.rows,
            }
        })
        .collect()
}

impl SweepSummary {
    /// The summary of a sweep ended early by a signal (`why`), with the values it never ran.
    pub fn stopped(mut self, why: String, not_run: Vec<String>) -> SweepSummary {
        self.stopped = Some(why);
        self.not_run = not_run;
        self
    }

    /// What was left out of the judging, and why the sweep ended early: one sentence each.
    fn left_out(&self) -> String {
        let mut out = String::new();
        let cut: Vec<String> = self
            .rows
            .iter()
            .filter_map(|r| r.stopped.as_ref().map(|s| format!("{} ({s})", r.label)))
            .collect();
        if !cut.is_empty() {
            out.push_str(&format!(
                " Not judged, cut short before the end of its plan: {}.",
                cut.join(", ")
            ));
        }
        if let Some(why) = &self.stopped {
            out.push_str(&format!(" The sweep was {why}"));
            if !self.not_run.is_empty() {
                out.push_str(&format!("; not run: {}", self.not_run.join(", ")));
            }
            out.push('.');
        }
        out
    }

    fn verdict(&self) -> String {
        let (Some(best), Some(runner_up)) = (&self.best, &self.runner_up) else {
            let whole = self.rows.iter().filter(|r| r.stopped.is_none()).count();
            return format!(
                "No best by {}: {whole} of {} values ran their whole plan, and a best needs two.{}",
                self.objective_name(),
                self.rows.len(),
                self.left_out()
            );
        };
        let how = if self.beyond_noise {
            "beyond the noise"
        } else {
            "within the noise: the two are not distinguishable"
        };
        let at = match &self.deciding_level {
            Some(l) if self.every_level_failed => format!(
                " at {l} (the lowest level: at no level did every value keep its errors under {SUSTAINED_ERROR_PCT} %)"
            ),
            Some(l) => format!(
                " at {l} (the highest level every value sustained with errors under {SUSTAINED_ERROR_PCT} %)"
            ),
            None => String::new(),
        };
        format!(
            "Best by {}{at}: {best} — {:+.1} % over {runner_up} (noise ±{:.1} %, {how}; judged by {}).{}",
            self.objective_name(),
            self.margin_pct,
            self.noise_pct,
            self.judged_by,
            self.left_out()
        )
    }

    fn objective_name(&self) -> String {
        serde_json::to_value(self.objective)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }

    /// One line per level: its best and margin.
    fn level_verdict(&self, l: &SweepLevel) -> String {
        format!(
            "{}: best {} — {:+.1} % over {} (noise ±{:.1} %{}).",
            l.level,
            l.best,
            l.margin_pct,
            l.runner_up,
            l.noise_pct,
            if l.beyond_noise {
                ", beyond the noise"
            } else {
                ", within the noise"
            }
        )
    }

    /// The tables a sweep shows, in order: whole runs alone; or, for a step-up, whole runs (no
    /// best: they mix the levels) and then each level with its verdict.
    fn tables(&self) -> Vec<SweepTable<'_>> {
        if self.levels.is_empty() {
            return vec![SweepTable {
                heading: None,
                rows: &self.rows,
                best: self.best.as_deref().unwrap_or_default(),
                verdict: None,
            }];
        }
        std::iter::once(SweepTable {
            heading: Some("Whole runs (mixing the levels)".to_string()),
            rows: &self.rows,
            best: "",
            verdict: None,
        })
        .chain(self.levels.iter().map(|l| SweepTable {
            heading: Some(format!("At {}", l.level)),
            rows: &l.rows,
            best: &l.best,
            verdict: Some(self.level_verdict(l)),
        }))
        .collect()
    }

    /// The sweep as a document: its verdict (the best value, by how much, against the
    /// noise) first, then the table of every value — for a step-up, whole runs and then each
    /// level with its own best.
    pub fn doc(&self) -> Doc {
        let best = self
            .rows
            .iter()
            .find(|r| Some(&r.label) == self.best.as_ref());
        let figures = best
            .map(|r| {
                vec![
                    Quoted::new("best", r.label.clone()),
                    Quoted::new("TPS avg", format!("{:.2}", r.tps_avg)),
                    Quoted::new("TTFB p99", format!("{:.2} ms", r.ttfb_p99_ms)),
                    Quoted::new("error rate", format!("{:.2}%", r.error_rate_pct)),
                ]
            })
            .unwrap_or_default();
        let sections = self
            .tables()
            .into_iter()
            .map(|t| {
                let rows = t
                    .rows
                    .iter()
                    .map(|r| {
                        cells(vec![
                            match &r.stopped {
                                Some(why) => format!("{} ({why}: not judged)", r.label),
                                None if r.label == t.best => format!("{} ← best", r.label),
                                None => r.label.clone(),
                            },
                            format!("{:.2}", r.tps_avg),
                            format!("{:.2}", r.ttfb_p99_ms),
                            format!("{:.2}%", r.error_rate_pct),
                            r.runs.to_string(),
                        ])
                    })
                    .collect();
                let mut blocks = vec![Block::Table {
                    header: ["Value", "TPS avg", "TTFB p99 (ms)", "Error rate", "Runs"]
                        .map(String::from)
                        .to_vec(),
                    rows,
                }];
                blocks.extend(t.verdict.map(|v| Block::List(vec![v])));
                Section {
                    id: "rows".into(),
                    title: t.heading.unwrap_or_else(|| "Values".into()),
                    caption: String::new(),
                    blocks,
                }
            })
            .collect();
        Doc {
            title: format!("Sweep by {}", self.objective_name()),
            meta: vec![format!("{} values", self.rows.len())],
            answer: Answer {
                summary: Some(self.verdict()),
                figures,
                findings: self.levels_not_judged.iter().cloned().collect(),
                ..Answer::default()
            },
            sections,
        }
    }

    /// A terminal table.
    pub fn table(&self) -> String {
        self.doc().terminal()
    }

    /// Markdown.
    pub fn markdown(&self) -> String {
        self.doc().markdown()
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("sweeps serialize")
    }
}

#[cfg(test)]
mod tests {
    use volley_formats::RunSet;

    use super::*;
    use crate::testrun::stepped;

    /// A sweep of three pools over one step-up (5, 10, 20 VUs): pool 2 tops out at 100 TPS,
    /// pool 10 at 150, pool 20 never. Whole runs mix the levels; at 20 VUs, the highest every
    /// value sustained, pool 20 is best by a third over pool 10.
    #[test]
    fn a_step_up_sweep_is_judged_at_each_level_and_decided_at_the_highest() {
        let dir = tempfile::tempdir().unwrap();
        let vus = crate::findings::tests::step_up();
        let sets: Vec<RunSet> = [100u64, 150, 1000]
            .iter()
            .enumerate()
            .map(|(i, cap)| {
                let d = dir.path().join(i.to_string());
                RunSet::single(stepped(
                    &d,
                    &vus,
                    |v| (10 * u64::from(v)).min(*cap),
                    20,
                    &[],
                ))
            })
            .collect();
        let labels: Vec<String> = ["pool=2", "pool=10", "pool=20"].map(String::from).to_vec();
        let s = summarize(&sets, &labels, Objective::Tps, ReportOptions::default());
        let names: Vec<&str> = s.levels.iter().map(|l| l.level.as_str()).collect();
        assert_eq!(names, ["5 VUs", "10 VUs", "20 VUs"]);
        assert_eq!(s.deciding_level.as_deref(), Some("20 VUs"));
        assert_eq!(
            (s.best.as_deref(), s.runner_up.as_deref()),
            (Some("pool=20"), Some("pool=10"))
        );
        assert!((s.margin_pct - 100.0 / 3.0).abs() < 0.5, "{}", s.margin_pct);
        assert!(s.beyond_noise, "{}", s.table());
        // At 5 VUs (50 TPS each) no value is better than another.
        assert!(!s.levels[0].beyond_noise, "{}", s.table());
        let table = s.table();
        assert!(table.contains("\nAt 20 VUs\n"), "{table}");
        assert!(
            table.contains("Best by tps at 20 VUs (the highest level every value sustained"),
            "{table}"
        );
        assert!(s.markdown().contains("## At 20 VUs"));
        assert_eq!(s.levels_not_judged, None);
    }

    /// A step-up whose levels are shorter than a judgement needs is judged on whole runs only,
    /// and says why its levels are not judged, in the answer and in sweep.json.
    #[test]
    fn a_step_up_too_short_to_judge_by_level_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let vus = [5, 5, 10, 10, 20, 20];
        let sets: Vec<RunSet> = [100u64, 1000]
            .iter()
            .enumerate()
            .map(|(i, cap)| {
                let d = dir.path().join(i.to_string());
                RunSet::single(stepped(
                    &d,
                    &vus,
                    |v| (10 * u64::from(v)).min(*cap),
                    20,
                    &[],
                ))
            })
            .collect();
        let labels: Vec<String> = ["pool=2", "pool=20"].map(String::from).to_vec();
        let s = summarize(&sets, &labels, Objective::Tps, ReportOptions::default());
        assert!(s.levels.is_empty() && s.best.is_some(), "{}", s.table());
        let why = s.levels_not_judged.clone().unwrap_or_default();
        assert!(
            why.contains("3 of the 3 levels the plan held lasted fewer than 4 intervals"),
            "{why}"
        );
        assert!(s.table().contains(&why) && s.to_json().contains("levels_not_judged"));
    }
}

#[cfg(test)]
mod stopped_tests {
    use volley_formats::{RunSet, RunStatus};

    use super::*;
    use crate::testrun::run;

    /// Three values, the last cut short by a signal (its few intervals ran fastest): it is
    /// shown, marked and never named; the best is named from the two that ran their plan.
    /// With one of two cut short, no best is named at all, and no +inf % or NaN is printed.
    #[test]
    fn a_value_cut_short_is_marked_and_never_named_best() {
        let dir = tempfile::tempdir().unwrap();
        let sets: Vec<RunSet> = [("a", 50), ("b", 60), ("c", 90)]
            .iter()
            .map(|&(name, n)| {
                let mut src = run(&dir.path().join(name), name, 8, n, 5, &[]);
                if name == "c" {
                    src.meta.as_mut().unwrap().status = RunStatus::Interrupted;
                }
                RunSet::single(src)
            })
            .collect();
        let labels: Vec<String> = ["p=a", "p=b", "p=c"].map(String::from).to_vec();
        let opts = ReportOptions::default();
        let s = summarize(&sets, &labels, Objective::Tps, opts)
            .stopped("stopped by a signal during p=c".into(), vec!["p=d".into()]);
        assert_eq!(
            (s.best.as_deref(), s.runner_up.as_deref()),
            (Some("p=b"), Some("p=a"))
        );
        assert_eq!(s.rows[2].stopped.as_deref(), Some("interrupted"));
        let table = s.table();
        assert!(
            table.contains("p=c (interrupted: not judged)")
                && table.contains("Not judged, cut short before the end of its plan: p=c")
                && table.contains("not run: p=d"),
            "{table}"
        );
        let json: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
        assert_eq!(json["rows"][2]["stopped"], "interrupted", "{json}");
        assert_eq!(json["not_run"][0], "p=d", "{json}");

        let s = summarize(&sets[1..], &labels[1..], Objective::Tps, opts);
        assert_eq!((s.best.as_deref(), s.runner_up.as_deref()), (None, None));
        let table = s.table();
        assert!(
            table.contains("No best by tps: 1 of 2 values ran their whole plan")
                && !table.contains("← best")
                && !table.contains("inf")
                && !table.contains("NaN"),
            "{table}"
        );
        let json: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
        assert!(
            json["best"].is_null() && json["margin_pct"].is_null(),
            "{json}"
        );
    }
}
