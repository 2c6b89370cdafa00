//! The step-up as the seeds read it: one row per level of VUs the run held (`--stages
//! "0s:5,15s:5,0s:10,15s:10"`), each with its TPS, MTTFB, TTFB percentiles, error rate and the
//! server's peaks while it held.
//!
//! A level is two or more consecutive intervals (after the warm-up) at the same number of
//! VUs; a run has levels when it held at least two of them.

use hdrhistogram::Histogram;
use serde::Serialize;
use volley_formats::{HistKey, Source};
use volley_stats::latency::{LatencySummary, new_histogram};

use crate::inputs::{ReportOptions, warmup_seconds};

/// One held level.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Level {
    /// VUs held.
    pub vusers: f64,
    /// From and to, s from the start.
    pub from_s: f64,
    pub to_s: f64,
    /// Mean of the intervals' TPS.
    pub tps_avg: f64,
    /// Mean of the intervals' MTTFB, ms.
    pub mttfb_avg_ms: f64,
    /// Per-request TTFB over the level, ms (`None` without histograms).
    pub ttfb_p50_ms: Option<f64>,
    pub ttfb_p99_ms: Option<f64>,
    /// Failed requests, % of the level's.
    pub error_rate_pct: f64,
    /// Intervals the level held.
    pub intervals: usize,
    /// The key server series at their peak within the level: `name peak`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub server: Vec<(String, f64)>,
    /// Shared connections (`--connections`): the 99th percentile of the wait for one over
    /// the level, ms (kept out of its TTFB).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_wait_p99_ms: Option<f64>,
    /// The watched workload's ready pods over the level, fewest and most (`--kube`: kube.csv's
    /// `kube_pods_ready`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_pods: Option<(f64, f64)>,
    /// Its replicas at the level's end: the HPA's desired replicas, or without an HPA the
    /// Deployment's (`--kube`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<f64>,
}

impl Level {
    /// The level as the knee reads it.
    pub fn load_level(&self) -> volley_stats::knee::LoadLevel {
        volley_stats::knee::LoadLevel {
            load: self.vusers,
            tps: self.tps_avg,
            mttfb_ms: self.mttfb_avg_ms,
            intervals: self.intervals,
        }
    }
}

/// Server series worth a column: queues and pools that run out.
const LEVEL_SERIES: &[(&str, &str)] = &[
    ("hikaricp_connections_pending", "pool pending"),
    ("hikaricp_connections_active", "pool active"),
    ("tomcat_threads_busy_threads", "busy threads"),
    ("tomcat_connections_current_connections", "connections"),
    ("process_cpu_usage", "CPU"),
];

/// Whether `src`'s VUs were the load it put on, to be read level by level and for a knee: not
/// in an open model, where the rate is the load and the VUs are what it took (busy VUs rise
/// and fall with the latency), so that levels of VUs would read an effect as a cause.
pub(crate) fn vus_are_the_load(src: &Source) -> bool {
    !src.meta.as_ref().is_some_and(|m| m.plan.load.is_open())
}

/// The levels of VUs `src` held, in order (empty when it held fewer than two, and when its
/// VUs were not the load: [`vus_are_the_load`]).
pub fn of(src: &Source, opts: ReportOptions) -> Vec<Level> {
    if !vus_are_the_load(src) {
        return Vec::new();
    }
    let warmup = warmup_seconds(src, opts.warmup);
    let rows = &src.series.intervals;
    // The spans of rows at one level of VUs, then each span's TTFB merged in one pass.
    let mut spans = Vec::new();
    let mut i = 0;
    while i < rows.len() {
        if rows[i].start_s + 1e-9 < warmup {
            i += 1;
            continue;
        }
        let v = rows[i].vusers.round();
        let mut j = i;
        while j + 1 < rows.len() && rows[j + 1].vusers.round() == v {
            j += 1;
        }
        if j > i && v > 0.0 {
            spans.push((i, j));
        }
        i = j + 1;
    }
    if spans.len() < 2 {
        return Vec::new();
    }
    let mut span_of = vec![None; rows.len()];
    for (k, &(i, j)) in spans.iter().enumerate() {
        span_of[i..=j].fill(Some(k));
    }
    let summaries = span_summaries(src, HistKey::TTFB, &span_of, spans.len());
    let waits = span_summaries(src, HistKey::POOL_WAIT, &span_of, spans.len());
    let mut out = Vec::new();
    for ((&(i, j), ttfb), wait) in spans.iter().zip(summaries).zip(waits) {
        let v = rows[i].vusers.round();
        let span = &rows[i..=j];
        let n = span.len() as f64;
        let tests: u64 = span.iter().map(|r| r.tests).sum();
        let errors: u64 = span.iter().map(|r| r.errors).sum();
        let (from_s, to_s) = (span[0].start_s, span[j - i].start_s + span[j - i].period_s);
        let server = LEVEL_SERIES
            .iter()
            .filter_map(|(prefix, label)| {
                let mut averaged = Vec::new();
                src.server
                    .iter()
                    .filter(|p| p.series.starts_with(prefix) && crate::inputs::readable(p))
                    .filter(|p| !p.reaches_before_the_run(&mut averaged))
                    .filter(|p| p.row(rows).is_some_and(|r| (i..=j).contains(&r)))
                    .map(|p| p.value)
                    .reduce(f64::max)
                    .map(|m| (label.to_string(), m))
            })
            .collect();
        out.push(Level {
            vusers: v,
            from_s,
            to_s,
            tps_avg: span.iter().map(|r| r.tps).sum::<f64>() / n,
            mttfb_avg_ms: span.iter().map(|r| r.mttfb_ms).sum::<f64>() / n,
            ttfb_p50_ms: ttfb.as_ref().map(|t| t.p50_ms),
            ttfb_p99_ms: ttfb.as_ref().map(|t| t.p99_ms),
            intervals: span.len(),
            // Of every request the level sent (its successes are `tests`, nGrinder's way): a
            // level whose every request failed is at 100 %, not at 0 % or 1,600 %.
            error_rate_pct: if tests + errors > 0 {
                errors as f64 / (tests + errors) as f64 * 100.0
            } else {
                0.0
            },
            server,
            pool_wait_p99_ms: wait.map(|w| w.p99_ms),
            ready_pods: kube_in(src, i..=j, |s| s == "kube_pods_ready").map(|v| {
                v.iter()
                    .fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(*x), hi.max(*x)))
            }),
            replicas: kube_in(src, i..=j, |s| s.starts_with("kube_hpa_desired_replicas"))
                .or_else(|| {
                    kube_in(src, i..=j, |s| {
                        s == "kube_deployment_replicas{state=\"spec\"}"
                    })
                })
                .and_then(|v| v.last().copied()),
        });
    }
    out
}

/// The values of the kube.csv series `which` picks credited to rows `span` (several workloads'
/// summed per instant), in time order; `None` when there are none.
fn kube_in(
    src: &Source,
    span: std::ops::RangeInclusive<usize>,
    which: impl Fn(&str) -> bool,
) -> Option<Vec<f64>> {
    let mut at: Vec<(f64, f64)> = Vec::new();
    for p in src
        .kube
        .iter()
        .filter(|p| which(&p.series) && p.value.is_finite())
    {
        if !p
            .row(&src.series.intervals)
            .is_some_and(|r| span.contains(&r))
        {
            continue;
        }
        match at.iter_mut().find(|(t, _)| (*t - p.elapsed_s).abs() < 1e-6) {
            Some((_, v)) => *v += p.value,
            None => at.push((p.elapsed_s, p.value)),
        }
    }
    (!at.is_empty()).then(|| at.into_iter().map(|(_, v)| v).collect())
}

/// Each span's TTFB summary (`span_of`: each row's span), in one pass over the log holding
/// one span's histogram at a time: the log is in row order, so a span is summed up when the
/// next begins. A histogram of a span already summed up (a log out of order) sends that span
/// to a second pass of its own.
fn span_summaries(
    src: &Source,
    key: HistKey,
    span_of: &[Option<usize>],
    spans: usize,
) -> Vec<Option<LatencySummary>> {
    let mut out = vec![None; spans];
    if !src.has_histograms() {
        return out;
    }
    let mut done = vec![false; spans];
    let mut again = std::collections::BTreeSet::new();
    let mut current: Option<(usize, Histogram<u64>)> = None;
    let close = |current: &mut Option<(usize, Histogram<u64>)>, out: &mut [_]| {
        if let Some((k, h)) = current.take() {
            out[k] = LatencySummary::from_histogram(&h);
        }
    };
    src.each_interval(key, |row, h| {
        let Some(k) = span_of[row] else { return };
        if current.as_ref().is_none_or(|c| c.0 != k) {
            if done[k] {
                again.insert(k);
                return;
            }
            close(&mut current, &mut out);
            current = Some((k, new_histogram()));
            done[k] = true;
        }
        h.add_to(&mut current.as_mut().expect("just set").1);
    });
    close(&mut current, &mut out);
    if !again.is_empty() {
        let mut merged: std::collections::BTreeMap<usize, Histogram<u64>> =
            again.iter().map(|&k| (k, new_histogram())).collect();
        src.each_interval(key, |row, h| {
            if let Some(m) = span_of[row].and_then(|k| merged.get_mut(&k)) {
                h.add_to(m);
            }
        });
        for (k, h) in merged {
            out[k] = LatencySummary::from_histogram(&h);
        }
    }
    out
}

/// The levels of `src` that its plan held (a stage whose VUs stay what they start at, e.g. the
/// `15s:10` of `"0s:10,15s:10"`) for at least [`MIN_INTERVALS`] intervals, when there are two or
/// more: what comparisons, sweeps and the knee judge level by level. A ramp slow enough to hold
/// each VU count a few intervals has levels in its table, but none planned; so has an import
/// (no plan) and a run of populations.
///
/// [`MIN_INTERVALS`]: volley_stats::compare::MIN_INTERVALS
pub fn planned(src: &Source, opts: ReportOptions) -> Vec<Level> {
    let Some(meta) = src.meta.as_ref().filter(|_| src.populations.is_empty()) else {
        return Vec::new();
    };
    let spans = meta.plan.load.held_spans();
    let out: Vec<Level> = of(src, opts)
        .into_iter()
        .filter(|l| l.intervals >= volley_stats::compare::MIN_INTERVALS)
        .filter(|l| {
            spans.iter().any(|&(from, to, vus)| {
                vus as f64 == l.vusers && l.from_s + 1e-6 >= from && l.to_s <= to + 1e-6
            })
        })
        .collect();
    if out.len() < 2 { Vec::new() } else { out }
}

/// The levels as table rows: VUs, TPS, MTTFB, TTFB p50, TTFB p99, errors %, and the wait for a
/// shared connection (with `--connections`) with the server's peaks.
pub fn rows(levels: &[Level]) -> Vec<Vec<String>> {
    let ms = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.2}"));
    levels
        .iter()
        .map(|l| {
            vec![
                format!("{:.0}", l.vusers),
                format!("{:.1}", l.tps_avg),
                format!("{:.2}", l.mttfb_avg_ms),
                ms(l.ttfb_p50_ms),
                ms(l.ttfb_p99_ms),
                format!("{:.2}", l.error_rate_pct),
                l.ready_pods
                    .map(|(lo, hi)| {
                        if lo == hi {
                            format!("ready pods {lo:.0}")
                        } else {
                            format!("ready pods {lo:.0}–{hi:.0}")
                        }
                    })
                    .into_iter()
                    .chain(l.replicas.map(|r| format!("replicas {r:.0}")))
                    .chain(
                        l.pool_wait_p99_ms
                            .map(|w| format!("connection wait p99 {w:.1} ms")),
                    )
                    .chain(l.server.iter().map(|(k, v)| {
                        if k == "CPU" {
                            format!("{k} {:.0} %", v * 100.0)
                        } else {
                            format!("{k} {v:.0}")
                        }
                    }))
                    .collect::<Vec<_>>()
                    .join(", "),
            ]
        })
        .collect()
}

/// The header of [`rows`].
pub const HEADER: [&str; 7] = [
    "VUs",
    "TPS",
    "MTTFB ms",
    "TTFB p50 ms",
    "TTFB p99 ms",
    "errors %",
    "server peaks",
];

#[cfg(test)]
mod tests {
    use super::*;
    use volley_formats::histograms::Histograms;

    fn step_up(dir: &std::path::Path) -> Source {
        let vus: Vec<u32> = [5; 6].into_iter().chain([10; 6]).chain([20; 6]).collect();
        crate::testrun::stepped(dir, &vus, |v| 10 * u64::from(v), 20, &[])
    }

    #[test]
    fn a_log_out_of_order_gives_the_same_levels() {
        let dir = tempfile::tempdir().unwrap();
        let src = step_up(dir.path());
        assert_eq!(of(&src, ReportOptions::default()).len(), 3);
        let span_of: Vec<Option<usize>> = (0..18).map(|r| Some(r / 6)).collect();
        let counts = |src: &Source| {
            span_summaries(src, HistKey::TTFB, &span_of, 3)
                .into_iter()
                .map(|s| s.map(|s| s.count))
                .collect::<Vec<_>>()
        };
        assert_eq!(counts(&src), [Some(300), Some(600), Some(1200)]);
        // Every other interval first: each span is left and come back to.
        let mut shuffled = src.clone();
        let mut all = src.histograms.collect().unwrap();
        all.sort_by_key(|h| ((h.start_s as i64) % 2, h.start_s as i64));
        shuffled.histograms = Histograms::held(all);
        assert_eq!(counts(&shuffled), counts(&src));
    }

    #[test]
    fn an_open_model_run_has_no_levels_of_vus() {
        let dir = tempfile::tempdir().unwrap();
        let mut src = step_up(dir.path());
        let meta = src.meta.as_mut().unwrap();
        meta.plan.load.model = volley_scenario::Model::Open {
            rate: volley_scenario::RateShape::constant(100.0, std::time::Duration::from_secs(18)),
            max_vus: 50,
        };
        assert!(of(&src, ReportOptions::default()).is_empty());
        let report = crate::RunReport::from_source(&src, ReportOptions::default());
        assert!(report.saturation.is_none(), "{:?}", report.saturation);
    }
}
