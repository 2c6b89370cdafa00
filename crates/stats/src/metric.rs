//! The report's figures, defined once: each metric's key (the name `report.json`, the CSV
//! header and CI gates use), its label as the seeds write it, its unit, which way is better,
//! which figures a source must give for it, and how to read it from a run's suite or its
//! per-request TTFB summary.
//!
//! Every place that lists figures reads this table — the comparison and its noise
//! (`compare`), the report's suite rows and CSV, the figures a source cannot give, the
//! thresholds — so a figure is added here (and computed in [`crate::suite`] when it is a
//! suite figure), not in each of them.

use serde::Serialize;

use crate::latency::LatencySummary;
use crate::suite::SeedSuite;

/// Which way is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Higher is better (throughput).
    Higher,
    /// Lower is better (latency, errors).
    Lower,
}

/// A figure a source may be unable to give.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Figure {
    /// Time to first byte: per request (TTFB) and per interval (MTTFB).
    Ttfb,
    /// Failed requests, so the error rate.
    ErrorRate,
    /// Throughput: the length of the run is unknown.
    Tps,
    /// Percentiles and variability over intervals: the file holds one total for the run.
    PerInterval,
}

impl Figure {
    /// How reports name it.
    pub fn label(self) -> &'static str {
        match self {
            Figure::Ttfb => "TTFB",
            Figure::ErrorRate => "Error rate",
            Figure::Tps => "TPS",
            Figure::PerInterval => "Per-interval percentiles",
        }
    }
}

/// One metric of the report.
pub struct Metric {
    /// Stable key: `report.json`'s field, the CSV column, the name gates take.
    pub key: &'static str,
    /// Label as the seeds write it (`TPS p99`, `MTTFB Average`).
    pub label: &'static str,
    /// Unit shown after values: `ms`, `%`, or none.
    pub unit: &'static str,
    /// Which way is better.
    pub direction: Direction,
    /// The figures a source must give for it (a summary file without intervals cannot give
    /// percentiles over intervals; one without timings, no MTTFB).
    pub needs: &'static [Figure],
    /// A count, shown as a whole number with thousands separated.
    pub count: bool,
    /// A percentile of per-interval TPS: which tail (`--tps-tail`) is meant is said with it.
    pub tps_tail: bool,
    /// The threshold that reads it, as `(figure, statistic)`: `("tps", "p99.9")`.
    pub threshold: Option<(&'static str, &'static str)>,
    /// Its value: from the suite, or from the per-request TTFB summary (NaN without one).
    pub value: fn(&SeedSuite, Option<&LatencySummary>) -> f64,
    /// The suite's field that holds it (set to NaN when a source cannot give it); `None` for
    /// a count, or a per-request figure.
    pub field: Option<fn(&mut SeedSuite) -> &mut f64>,
}

impl Metric {
    /// Whether it is one of the seed suite's figures (not a per-request one).
    pub fn in_suite(&self) -> bool {
        self.count || self.field.is_some()
    }
}

/// A suite figure held in `SeedSuite::$field`.
macro_rules! suite {
    ($key:literal, $label:literal, $unit:literal, $dir:ident, $needs:expr, $field:ident, $threshold:expr, $tail:literal) => {
        Metric {
            key: $key,
            label: $label,
            unit: $unit,
            direction: Direction::$dir,
            needs: $needs,
            count: false,
            tps_tail: $tail,
            threshold: $threshold,
            value: |s, _| s.$field,
            field: Some(|s| &mut s.$field),
        }
    };
}

/// A per-request TTFB percentile, `LatencySummary::$field`.
macro_rules! ttfb {
    ($key:literal, $label:literal, $field:ident, $stat:literal) => {
        Metric {
            key: $key,
            label: $label,
            unit: "ms",
            direction: Direction::Lower,
            needs: &[Figure::Ttfb],
            count: false,
            tps_tail: false,
            threshold: Some(("ttfb", $stat)),
            value: |_, t| t.map_or(f64::NAN, |t| t.$field),
            field: None,
        }
    };
}

use Figure::{ErrorRate, PerInterval, Tps, Ttfb};

/// Every metric, in the order the seeds' tables and the comparisons list them.
pub const METRICS: &[Metric] = &[
    Metric {
        key: "total_tests",
        label: "Total Tests",
        unit: "",
        direction: Direction::Higher,
        needs: &[],
        count: true,
        tps_tail: false,
        threshold: None,
        value: |s, _| s.total_tests as f64,
        field: None,
    },
    suite!(
        "error_rate_pct",
        "Error Rate",
        "%",
        Lower,
        &[ErrorRate],
        error_rate_pct,
        Some(("error_rate", "value")),
        false
    ),
    suite!(
        "tps_avg",
        "TPS Average",
        "",
        Higher,
        &[Tps],
        tps_avg,
        Some(("tps", "avg")),
        false
    ),
    suite!(
        "tps_p50",
        "TPS p50",
        "",
        Higher,
        &[Tps, PerInterval],
        tps_p50,
        Some(("tps", "p50")),
        true
    ),
    suite!(
        "tps_p95",
        "TPS p95",
        "",
        Higher,
        &[Tps, PerInterval],
        tps_p95,
        Some(("tps", "p95")),
        true
    ),
    suite!(
        "tps_p99",
        "TPS p99",
        "",
        Higher,
        &[Tps, PerInterval],
        tps_p99,
        Some(("tps", "p99")),
        true
    ),
    suite!(
        "tps_p99_9",
        "TPS p99.9",
        "",
        Higher,
        &[Tps, PerInterval],
        tps_p99_9,
        Some(("tps", "p99.9")),
        true
    ),
    suite!(
        "mttfb_avg_ms",
        "MTTFB Average",
        "ms",
        Lower,
        &[Ttfb],
        mttfb_avg_ms,
        Some(("mttfb", "avg")),
        false
    ),
    suite!(
        "mttfb_p50_ms",
        "MTTFB p50",
        "ms",
        Lower,
        &[Ttfb, PerInterval],
        mttfb_p50_ms,
        Some(("mttfb", "p50")),
        false
    ),
    suite!(
        "mttfb_p95_ms",
        "MTTFB p95",
        "ms",
        Lower,
        &[Ttfb, PerInterval],
        mttfb_p95_ms,
        Some(("mttfb", "p95")),
        false
    ),
    suite!(
        "mttfb_p99_ms",
        "MTTFB p99",
        "ms",
        Lower,
        &[Ttfb, PerInterval],
        mttfb_p99_ms,
        Some(("mttfb", "p99")),
        false
    ),
    suite!(
        "mttfb_p99_9_ms",
        "MTTFB p99.9",
        "ms",
        Lower,
        &[Ttfb, PerInterval],
        mttfb_p99_9_ms,
        Some(("mttfb", "p99.9")),
        false
    ),
    suite!(
        "mttfb_avg_diff_ms",
        "MTTFB Average Difference",
        "ms",
        Lower,
        &[Ttfb, PerInterval],
        mttfb_avg_diff_ms,
        None,
        false
    ),
    suite!(
        "mttfb_variability_pct",
        "MTTFB Average Variability",
        "%",
        Lower,
        &[Ttfb, PerInterval],
        mttfb_variability_pct,
        None,
        false
    ),
    ttfb!("ttfb_p50_ms", "TTFB p50 (per request)", p50_ms, "p50"),
    ttfb!("ttfb_p95_ms", "TTFB p95 (per request)", p95_ms, "p95"),
    ttfb!("ttfb_p99_ms", "TTFB p99 (per request)", p99_ms, "p99"),
    ttfb!(
        "ttfb_p99_9_ms",
        "TTFB p99.9 (per request)",
        p99_9_ms,
        "p99.9"
    ),
];

/// The metric of `key`.
pub fn metric(key: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|m| m.key == key)
}

/// The metric a threshold on `figure`'s `stat` reads (`("tps", "p99.9")`), if a suite
/// figure; per-request figures are read from their summaries.
pub fn for_threshold(figure: &str, stat: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|m| m.threshold == Some((figure, stat)))
}

/// `suite` with every figure that needs one of `missing` set to n/a (NaN), not to what a
/// missing column would read as (0).
pub fn without(mut suite: SeedSuite, missing: impl Fn(Figure) -> bool) -> SeedSuite {
    for m in METRICS {
        if let Some(field) = m.field
            && m.needs.iter().any(|f| missing(*f))
        {
            *field(&mut suite) = f64::NAN;
        }
    }
    suite
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_and_per_request_figures_come_last() {
        for (i, m) in METRICS.iter().enumerate() {
            assert!(
                METRICS[..i].iter().all(|o| o.key != m.key),
                "{} twice",
                m.key
            );
        }
        let first_request = METRICS.iter().position(|m| !m.in_suite()).unwrap();
        assert!(METRICS[first_request..].iter().all(|m| !m.in_suite()));
    }

    #[test]
    fn a_field_is_read_and_blanked_by_the_same_metric() {
        let empty = crate::series::Series {
            intervals: Vec::new(),
        };
        let mut suite = SeedSuite::compute(&empty, crate::suite::SuiteOptions::default());
        for (i, m) in METRICS.iter().enumerate() {
            if let Some(field) = m.field {
                *field(&mut suite) = i as f64 + 0.5;
            }
        }
        for (i, m) in METRICS.iter().enumerate() {
            if m.field.is_some() {
                assert_eq!((m.value)(&suite, None), i as f64 + 0.5, "{}", m.key);
            }
        }
        let blank = without(suite, |f| f == Figure::PerInterval);
        for m in METRICS.iter().filter(|m| m.field.is_some()) {
            let v = (m.value)(&blank, None);
            assert_eq!(
                v.is_nan(),
                m.needs.contains(&Figure::PerInterval),
                "{}",
                m.key
            );
        }
    }
}
