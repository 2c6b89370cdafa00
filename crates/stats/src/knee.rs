//! The saturation point of a ramp: the load at which throughput stops growing while
//! latency climbs — where adding users only adds queueing.

use serde::Serialize;

use crate::series::Series;

/// One load level of the ramp (intervals grouped by VUs).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LoadLevel {
    /// VUs (mean over the level's intervals).
    pub load: f64,
    /// Mean TPS.
    pub tps: f64,
    /// TTFB-weighted mean time to first byte, ms.
    pub mttfb_ms: f64,
    /// Intervals in the level.
    pub intervals: usize,
}

/// What the ramp shows.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Saturation {
    /// The load levels, ascending.
    pub levels: Vec<LoadLevel>,
    /// The level at which throughput stopped growing, if it did (index into `levels`).
    pub saturated_at: Option<usize>,
    /// In words.
    pub finding: String,
}

/// Throughput counts as still growing when it rises by at least this share of the load's rise.
const GROWTH_SHARE: f64 = 0.25;
/// TPS that rose by less than this share did not grow: the finding says it stopped.
const FLAT_SHARE: f64 = 0.1;
/// Latency counts as climbing when it is this many times the lightest level's.
const LATENCY_CLIMB: f64 = 1.5;
/// Levels the ramp is cut into, at most.
const MAX_LEVELS: usize = 10;

/// Finds the saturation point of `series` (a run whose VUs change), on its VUs binned into
/// at most [`MAX_LEVELS`] levels of equal width.
pub fn saturation(series: &Series) -> Saturation {
    saturation_of(levels(series))
}

/// Finds the saturation point on `levels` as they were held, ascending in load (a step-up's
/// own levels).
pub fn saturation_of(mut levels: Vec<LoadLevel>) -> Saturation {
    levels.sort_by(|a, b| a.load.total_cmp(&b.load));
    let finding_none = |why: &str| Saturation {
        levels: levels.clone(),
        saturated_at: None,
        finding: why.to_string(),
    };
    if levels.len() < 3 {
        return finding_none(
            "The load did not change enough to look for a saturation point (fewer than 3 load levels).",
        );
    }
    let base = &levels[0];
    for i in 1..levels.len() {
        let (prev, cur) = (&levels[i - 1], &levels[i]);
        let load_rise = (cur.load - prev.load) / prev.load.max(1e-9);
        let tps_rise = (cur.tps - prev.tps) / prev.tps.max(1e-9);
        let climbing = base.mttfb_ms > 0.0 && cur.mttfb_ms >= base.mttfb_ms * LATENCY_CLIMB;
        if load_rise > 0.0 && tps_rise < load_rise * GROWTH_SHARE && climbing {
            // Said as the numbers show it: "stopped" only when TPS did not grow (within
            // [`FLAT_SHARE`]), else "grew far less than the load".
            let what = if tps_rise < FLAT_SHARE {
                format!("TPS stopped growing at {:.0} VUs", prev.load)
            } else {
                format!("TPS grew far less than the load from {:.0} VUs", prev.load)
            };
            let finding = format!(
                "{what} (≈ {:.1} TPS): from {:.0} to {:.0} VUs ({:+.0} % users) TPS changed {:+.1} % while MTTFB rose from {:.1} ms (at {:.0} VUs) to {:.1} ms.",
                prev.tps,
                prev.load,
                cur.load,
                load_rise * 100.0,
                tps_rise * 100.0,
                base.mttfb_ms,
                base.load,
                cur.mttfb_ms
            );
            return Saturation {
                levels: levels.clone(),
                saturated_at: Some(i - 1),
                finding,
            };
        }
    }
    let last = levels.last().expect("at least 3 levels");
    finding_none(&format!(
        "The run never saturated: TPS kept growing with load up to {:.0} VUs ({:.1} TPS, MTTFB {:.1} ms).",
        last.load, last.tps, last.mttfb_ms
    ))
}

/// Intervals grouped into load levels of similar VUs, ascending.
fn levels(series: &Series) -> Vec<LoadLevel> {
    let mut rows: Vec<_> = series
        .intervals
        .iter()
        .filter(|r| r.vusers > 0.0 && r.period_s > 0.0)
        .collect();
    rows.sort_by(|a, b| a.vusers.total_cmp(&b.vusers));
    let (Some(lo), Some(hi)) = (
        rows.first().map(|r| r.vusers),
        rows.last().map(|r| r.vusers),
    ) else {
        return Vec::new();
    };
    let distinct = {
        let mut v: Vec<i64> = rows.iter().map(|r| r.vusers.round() as i64).collect();
        v.dedup();
        v.len()
    };
    let n = distinct.clamp(1, MAX_LEVELS);
    let width = ((hi - lo) / n as f64).max(1e-9);
    let mut out: Vec<LoadLevel> = Vec::new();
    for b in 0..n {
        let (from, to) = (lo + width * b as f64, lo + width * (b + 1) as f64);
        let group: Vec<_> = rows
            .iter()
            .filter(|r| r.vusers >= from - 1e-9 && (r.vusers < to || b == n - 1))
            .collect();
        if group.is_empty() {
            continue;
        }
        let tests: u64 = group.iter().map(|r| r.tests).sum();
        out.push(LoadLevel {
            load: group.iter().map(|r| r.vusers).sum::<f64>() / group.len() as f64,
            tps: group.iter().map(|r| r.tps).sum::<f64>() / group.len() as f64,
            mttfb_ms: if tests == 0 {
                0.0
            } else {
                group
                    .iter()
                    .map(|r| r.mttfb_ms * r.tests as f64)
                    .sum::<f64>()
                    / tests as f64
            },
            intervals: group.len(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::Interval;

    /// A closed-loop service with a capacity of `cap` TPS and a 10 ms floor: TPS = min(VUs/0.01, cap),
    /// latency = VUs / TPS (Little's law).
    fn ramp(cap: f64, max_vus: u32) -> Series {
        Series {
            intervals: (1..=max_vus)
                .map(|v| {
                    let v = v as f64;
                    let tps = (v / 0.01).min(cap);
                    Interval {
                        start_s: v,
                        period_s: 1.0,
                        vusers: v,
                        tests: tps as u64,
                        tps,
                        mttfb_ms: v / tps * 1000.0,
                        ..Default::default()
                    }
                })
                .collect(),
        }
    }

    #[test]
    fn finds_the_knee_of_a_capped_service() {
        let s = saturation(&ramp(1000.0, 40));
        let at = s.saturated_at.expect("saturates");
        let load = s.levels[at].load;
        assert!(
            (8.0..=16.0).contains(&load),
            "knee at {load} VUs (capacity reached at 10): {}",
            s.finding
        );
        assert!(
            s.finding.starts_with("TPS stopped growing at"),
            "{}",
            s.finding
        );
    }

    #[test]
    fn says_when_it_never_saturated() {
        let s = saturation(&ramp(1e9, 40));
        assert_eq!(s.saturated_at, None);
        assert!(s.finding.contains("never saturated"), "{}", s.finding);
        let flat = Series {
            intervals: vec![
                Interval {
                    vusers: 5.0,
                    period_s: 1.0,
                    tps: 10.0,
                    ..Default::default()
                };
                10
            ],
        };
        assert!(saturation(&flat).finding.contains("did not change enough"));
    }
}
