//! Thresholds: pass/fail criteria on a run's figures, as CI pipelines need them —
//! `error_rate < 1%`, `ttfb p99 < 500ms`, `tps avg >= 220`, `mttfb p95 <= 0.3s`.

use serde::{Deserialize, Serialize};

use crate::Error;

/// Which figure a threshold reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Error rate, %.
    ErrorRate,
    /// Per-interval TPS (avg, p50, p95, p99, p99.9 — the seed suite's low tail).
    Tps,
    /// Per-interval mean time to first byte, ms (avg, p50 … p99.9).
    Mttfb,
    /// Per-request time to first byte, ms (mean, p50, p90, p95, p99, p99.9, p99.99, max).
    Ttfb,
    /// Per-request total time, ms.
    Total,
    /// Scenario iterations: the whole flow, ms.
    Iteration,
}

/// Which statistic of its figure a threshold reads; written (and serialised) as users write
/// it, by the one table of names, [`Stat::ALL`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "&'static str", try_from = "String")]
pub enum Stat {
    /// The error rate's one value.
    Value,
    /// The mean, written `avg` (the only spelling for TPS and MTTFB).
    Avg,
    /// The mean, written `mean`.
    Mean,
    P50,
    P90,
    P95,
    P99,
    P99_9,
    P99_99,
    Max,
}

impl From<Stat> for &'static str {
    fn from(s: Stat) -> &'static str {
        s.name()
    }
}

impl TryFrom<String> for Stat {
    type Error = String;

    fn try_from(name: String) -> Result<Stat, String> {
        Stat::from_name(&name).ok_or_else(|| format!("`{name}` is not a threshold statistic"))
    }
}

impl Stat {
    /// Every statistic with its name, as thresholds write it.
    pub const ALL: [(Stat, &'static str); 10] = [
        (Stat::Value, "value"),
        (Stat::Avg, "avg"),
        (Stat::Mean, "mean"),
        (Stat::P50, "p50"),
        (Stat::P90, "p90"),
        (Stat::P95, "p95"),
        (Stat::P99, "p99"),
        (Stat::P99_9, "p99.9"),
        (Stat::P99_99, "p99.99"),
        (Stat::Max, "max"),
    ];

    /// Its name, as written (`p99.9`).
    pub fn name(self) -> &'static str {
        Stat::ALL
            .iter()
            .find(|(s, _)| *s == self)
            .map_or("", |(_, n)| n)
    }

    fn from_name(name: &str) -> Option<Stat> {
        Stat::ALL.iter().find(|(_, n)| *n == name).map(|(s, _)| *s)
    }

    /// The percentile it reads (`p99` → 99, `max` → 100); `None` for a mean or a value.
    pub fn percentile(self) -> Option<f64> {
        match self {
            Stat::P50 => Some(50.0),
            Stat::P90 => Some(90.0),
            Stat::P95 => Some(95.0),
            Stat::P99 => Some(99.0),
            Stat::P99_9 => Some(99.9),
            Stat::P99_99 => Some(99.99),
            Stat::Max => Some(100.0),
            Stat::Value | Stat::Avg | Stat::Mean => None,
        }
    }
}

impl std::fmt::Display for Stat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Metric {
    /// Its name in a threshold (`error_rate`, `tps`, `mttfb`, `ttfb`, `total`, `iteration`).
    pub fn name(self) -> &'static str {
        match self {
            Metric::ErrorRate => "error_rate",
            Metric::Tps => "tps",
            Metric::Mttfb => "mttfb",
            Metric::Ttfb => "ttfb",
            Metric::Total => "total",
            Metric::Iteration => "iteration",
        }
    }

    /// The unit its figures are read in, as a report writes it after a number: ` %`, ` ms`,
    /// `/s`.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::ErrorRate => " %",
            Metric::Tps => "/s",
            Metric::Mttfb | Metric::Ttfb | Metric::Total | Metric::Iteration => " ms",
        }
    }

    /// The statistics a threshold may read of this figure. A suite figure's (the error rate,
    /// TPS, MTTFB) are the rows of the metric table ([`volley_stats::METRICS`]) that name it,
    /// so a statistic is added there, with its computation, and nowhere else; a per-request
    /// figure has every statistic of its summary.
    pub fn stats(self) -> Vec<Stat> {
        use Stat::*;
        match self {
            Metric::Ttfb | Metric::Total | Metric::Iteration => {
                vec![Mean, Avg, P50, P90, P95, P99, P99_9, P99_99, Max]
            }
            Metric::ErrorRate | Metric::Tps | Metric::Mttfb => volley_stats::METRICS
                .iter()
                .filter_map(|m| m.threshold)
                .filter(|(figure, _)| *figure == self.name())
                .filter_map(|(_, stat)| Stat::from_name(stat))
                .collect(),
        }
    }
}

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// One parsed threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    /// As written.
    pub expr: String,
    /// The figure.
    pub metric: Metric,
    /// `avg`, `mean`, `p99`, `max`, … (`value` for the error rate): one of `metric.stats()`.
    pub stat: Stat,
    /// The comparison.
    pub op: Op,
    /// The limit, in the metric's unit (ms for times, % for the error rate).
    pub limit: f64,
    /// The scenario step it applies to (`None`: the whole run, or the whole population).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// The population (a named scenario of a file's `scenarios:`) it applies to, written
    /// `writers.ttfb p99 < 200ms` (`None`: the run's total).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub population: Option<String>,
}

impl Op {
    /// Whether `actual op limit` holds.
    pub fn holds(self, actual: f64, limit: f64) -> bool {
        match self {
            Op::Lt => actual < limit,
            Op::Le => actual <= limit,
            Op::Gt => actual > limit,
            Op::Ge => actual >= limit,
        }
    }
}

const USAGE: &str = "write thresholds like `error_rate < 1%`, `ttfb p99 < 500ms`, `tps avg >= 220`, `total p95 <= 1s`";

/// Parses one threshold expression.
pub fn parse_threshold(expr: &str) -> Result<Threshold, Error> {
    let bad = |why: &str| Error::value(format!("threshold `{expr}`: {why}; {USAGE}"));
    let op_at = expr
        .find(['<', '>'])
        .ok_or_else(|| bad("no comparison (<, <=, >, >=)"))?;
    let (left, right) = expr.split_at(op_at);
    let (op, right) = match right {
        r if r.starts_with("<=") => (Op::Le, &r[2..]),
        r if r.starts_with(">=") => (Op::Ge, &r[2..]),
        r if r.starts_with('<') => (Op::Lt, &r[1..]),
        r => (Op::Gt, &r[1..]),
    };
    let mut words = left.split_whitespace();
    let first = words.next().unwrap_or("");
    // `writers.ttfb`: the figure of one population.
    let (population, figure) = match first.split_once('.') {
        Some((p, f)) if is_population_name(p) => (Some(p.to_string()), f),
        Some(_) => {
            return Err(bad(&format!(
                "`{first}`: a population's figure is written `name.figure`, the name in letters, digits, `_` and `-` (e.g. `writers.ttfb p99 < 200ms`)"
            )));
        }
        None => (None, first),
    };
    let metric = match figure {
        "error_rate" | "errors" => Metric::ErrorRate,
        "tps" => Metric::Tps,
        "mttfb" => Metric::Mttfb,
        "ttfb" => Metric::Ttfb,
        "total" | "duration" => Metric::Total,
        "iteration" => Metric::Iteration,
        other => {
            return Err(bad(&format!(
                "unknown figure `{other}` (error_rate, tps, mttfb, ttfb, total, iteration)"
            )));
        }
    };
    let written = words.next();
    if words.next().is_some() {
        return Err(bad("too many words before the comparison"));
    }
    let allowed = metric.stats();
    let stat = match written {
        None if metric == Metric::ErrorRate => Some(Stat::Value),
        None => None,
        Some(w) => Stat::from_name(w),
    }
    .filter(|s| allowed.contains(s))
    .ok_or_else(|| {
        let names: Vec<&str> = allowed.iter().map(|s| s.name()).collect();
        bad(&format!(
            "`{}` is not a statistic of this figure ({})",
            written.unwrap_or(""),
            names.join(", ")
        ))
    })?;
    let limit = parse_limit(right.trim(), metric).map_err(|why| bad(&why))?;
    if metric == Metric::ErrorRate && limit > 100.0 {
        return Err(bad(&format!(
            "`{}`: an error rate is a percentage from 0% to 100%",
            right.trim()
        )));
    }
    let t = Threshold {
        expr: expr.trim().to_string(),
        metric,
        stat,
        op,
        limit,
        step: None,
        population,
    };
    match t.impossible() {
        Some(why) => Err(Error::value(format!("threshold {why}"))),
        None => Ok(t),
    }
}

/// Whether `name` may name a population: letters, digits, `_` and `-` (it names a directory
/// of the run and prefixes thresholds, `writers.ttfb p99 < 200ms`).
pub fn is_population_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl Threshold {
    /// Why no run can meet this limit, when none can: every figure is zero or more (`< 0ms`,
    /// `< 0%`), no request takes no time at all (`<= 0ms`) nor under a microsecond (volley's
    /// finest time), and no error rate is above 100 %.
    pub fn impossible(&self) -> Option<String> {
        let times = !matches!(self.metric, Metric::ErrorRate | Metric::Tps);
        let why = match self.op {
            Op::Lt if self.limit <= 0.0 => "no figure is below zero",
            Op::Le if self.limit <= 0.0 && times => "no request takes no time at all",
            // Times are recorded in whole microseconds.
            Op::Lt | Op::Le if self.limit < 0.001 && times => {
                "no request takes less than a microsecond, the finest time volley records"
            }
            Op::Gt if self.metric == Metric::ErrorRate && self.limit >= 100.0 => {
                "no error rate is above 100%"
            }
            _ => return None,
        };
        let instead = match self.metric {
            Metric::ErrorRate => "a limit like `error_rate < 1%`",
            Metric::Tps => "a limit like `tps avg >= 220`",
            _ => "a limit above zero, like `ttfb p99 < 200ms`",
        };
        Some(format!(
            "`{}` can never be met: {why}; write {instead}",
            self.expr
        ))
    }

    /// The expression without its population prefix (`ttfb p99 < 200ms` of `writers.ttfb p99 < 200ms`).
    pub fn local_expr(&self) -> &str {
        match &self.population {
            Some(p) => self
                .expr
                .strip_prefix(p.as_str())
                .and_then(|e| e.strip_prefix('.'))
                .unwrap_or(&self.expr),
            None => &self.expr,
        }
    }
}

/// Why no run can pass `thresholds` together, when none can: a limit no figure can meet
/// ([`Threshold::impossible`]), or two limits on one figure (of the same step and population)
/// that leave no value between them — `ttfb p99 < 50ms` with `ttfb p99 > 100ms`, and also
/// `ttfb p50 > 100ms` with `ttfb p99 < 50ms`, since a percentile is never above a higher one
/// (for TPS, whose p95 … p99.9 are its low tail, never above a lower one).
pub fn unmeetable(thresholds: &[Threshold]) -> Option<String> {
    if let Some(why) = thresholds.iter().find_map(Threshold::impossible) {
        return Some(why);
    }
    // Where a statistic stands among its figure's percentiles: `a` never above `b` when
    // `rank(a) <= rank(b)` (the mean stands alone, but is its own equal).
    let rank = |t: &Threshold| -> Option<i32> {
        let r = match t.stat {
            Stat::Value => 0,
            Stat::Avg | Stat::Mean => return None,
            Stat::P50 => 50,
            Stat::P90 => 90,
            Stat::P95 => 95,
            Stat::P99 => 99,
            Stat::P99_9 => 999,
            Stat::P99_99 => 9999,
            Stat::Max => 10_000,
        };
        Some(if t.metric == Metric::Tps { -r } else { r })
    };
    let never_above = |a: &Threshold, b: &Threshold| match (rank(a), rank(b)) {
        (Some(x), Some(y)) => x <= y,
        (None, None) => true,
        _ => false,
    };
    for low in thresholds
        .iter()
        .filter(|t| matches!(t.op, Op::Gt | Op::Ge))
    {
        for high in thresholds.iter().filter(|t| {
            matches!(t.op, Op::Lt | Op::Le)
                && t.metric == low.metric
                && t.step == low.step
                && t.population == low.population
        }) {
            let strict = low.op == Op::Gt || high.op == Op::Lt;
            let empty = low.limit > high.limit || (strict && low.limit == high.limit);
            if empty && never_above(low, high) {
                let how = if low.stat == high.stat
                    || matches!(
                        (low.stat, high.stat),
                        (Stat::Avg | Stat::Mean, Stat::Avg | Stat::Mean)
                    ) {
                    "no value is both".to_string()
                } else if low.metric == Metric::Tps {
                    format!(
                        "TPS's {} is never above its {} (p95 … p99.9 are its low tail), so no run meets both",
                        low.stat, high.stat
                    )
                } else {
                    format!(
                        "a {} is never above the {}, so no run meets both",
                        low.stat, high.stat
                    )
                };
                return Some(format!(
                    "`{}` and `{}` can never both be met: {how}; correct or drop one of them",
                    low.expr, high.expr
                ));
            }
        }
    }
    None
}

/// `1%` (the `%` required), `220` (TPS), or a time with its unit (`500ms`, `0.5s`: [`crate::parse_duration`],
/// so a bare `500` is refused as everywhere else) in ms.
fn parse_limit(s: &str, metric: Metric) -> Result<f64, String> {
    if s.starts_with('-') {
        return Err(format!("`{s}` is below zero, which no figure can be"));
    }
    let number = |num: &str| {
        num.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| format!("`{s}` is not a limit"))
    };
    match metric {
        // A bare rate could be a percentage or a fraction (k6 writes `rate<0.01` for 1 %):
        // refused like a bare time, with what to write.
        Metric::ErrorRate => match s.trim_end().strip_suffix('%') {
            Some(pct) => number(pct),
            None => Err(format!(
                "`{s}` has no unit: write {s}% (an error rate is a percentage: 1% is one request in a hundred, k6's `rate<0.01`)"
            )),
        },
        Metric::Tps => number(s),
        _ => crate::parse_duration(s)
            .map(|d| d.as_secs_f64() * 1000.0)
            .map_err(|e| e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_beyond_any_duration_is_refused() {
        assert!(parse_threshold("ttfb p99 < 1e308s").is_err());
        assert!(parse_threshold("ttfb p99 < 8d").is_err());
        assert_eq!(
            parse_threshold("ttfb p99 < 7d").unwrap().limit,
            7.0 * 86_400_000.0
        );
    }

    /// An error rate needs its `%`: `0.01` could be a fraction (1 %) or 0.01 %.
    #[test]
    fn an_error_rate_without_its_percent_sign_is_refused() {
        assert_eq!(
            parse_threshold("error_rate < 0.01")
                .unwrap_err()
                .to_string(),
            "threshold `error_rate < 0.01`: `0.01` has no unit: write 0.01% (an error rate is a percentage: 1% is one request in a hundred, k6's `rate<0.01`); write thresholds like `error_rate < 1%`, `ttfb p99 < 500ms`, `tps avg >= 220`, `total p95 <= 1s`"
        );
        assert_eq!(parse_threshold("error_rate < 1 %").unwrap().limit, 1.0);
    }

    /// A time limit needs its unit, as every duration does (`500` could be ms or s).
    #[test]
    fn a_time_limit_without_a_unit_is_refused() {
        assert_eq!(
            parse_threshold("ttfb p99 < 500").unwrap_err().to_string(),
            "threshold `ttfb p99 < 500`: `500` has no unit: write 500s, 500ms or 500m; write thresholds like `error_rate < 1%`, `ttfb p99 < 500ms`, `tps avg >= 220`, `total p95 <= 1s`"
        );
        for bare in ["total p95 <= 1", "iteration max < 2.5", "mttfb avg < 30"] {
            assert!(
                parse_threshold(bare)
                    .unwrap_err()
                    .to_string()
                    .contains("has no unit"),
                "{bare}"
            );
        }
        assert_eq!(parse_threshold("ttfb p99 < 250us").unwrap().limit, 0.25);
    }

    #[test]
    fn the_forms_users_write() {
        let t = parse_threshold("error_rate < 1%").unwrap();
        assert_eq!(
            (t.metric, t.stat, t.op, t.limit),
            (Metric::ErrorRate, Stat::Value, Op::Lt, 1.0)
        );
        let t = parse_threshold("ttfb p99 < 500ms").unwrap();
        assert_eq!(
            (t.metric, t.stat, t.limit),
            (Metric::Ttfb, Stat::P99, 500.0)
        );
        let t = parse_threshold("tps avg >= 220").unwrap();
        assert_eq!((t.op, t.limit), (Op::Ge, 220.0));
        assert_eq!(parse_threshold("total p95 <= 1.5s").unwrap().limit, 1500.0);
        let t = parse_threshold("iteration p95 < 2s").unwrap();
        assert_eq!((t.metric, t.limit), (Metric::Iteration, 2000.0));
        assert!(Op::Lt.holds(1.0, 2.0) && !Op::Ge.holds(1.0, 2.0));
        let t = parse_threshold("writers.ttfb p99 < 200ms").unwrap();
        assert_eq!(
            (t.metric, t.limit, t.population.as_deref(), t.local_expr()),
            (Metric::Ttfb, 200.0, Some("writers"), "ttfb p99 < 200ms")
        );
        assert_eq!(
            parse_threshold("readers.error_rate < 1%")
                .unwrap()
                .population
                .as_deref(),
            Some("readers")
        );
        assert_eq!(parse_threshold("ttfb p99.9 < 1s").unwrap().population, None);
        assert!(parse_threshold("a b.ttfb p99 < 1s").is_err());
        assert!(
            parse_threshold("wri/ters.ttfb p99 < 1s")
                .unwrap_err()
                .to_string()
                .contains("`name.figure`")
        );
    }

    #[test]
    fn limits_that_leave_no_value_between_them_are_unmeetable() {
        let set = |exprs: &[&str]| -> Vec<Threshold> {
            exprs.iter().map(|e| parse_threshold(e).unwrap()).collect()
        };
        for (exprs, needle) in [
            (
                &["ttfb p99 < 50ms", "ttfb p99 > 100ms"][..],
                "no value is both",
            ),
            (&["ttfb p99 < 50ms", "ttfb p99 >= 50ms"], "no value is both"),
            (
                &["ttfb p50 > 100ms", "ttfb p99 < 50ms"],
                "a p50 is never above the p99",
            ),
            (
                &["total max < 1s", "total p99.9 >= 2s"],
                "never above the max",
            ),
            (&["ttfb avg > 1s", "ttfb mean < 1s"], "no value is both"),
            (&["tps p99 > 300", "tps p50 < 200"], "low tail"),
            (&["error_rate > 5%", "error_rate <= 1%"], "no value is both"),
        ] {
            let why = unmeetable(&set(exprs)).unwrap_or_default();
            assert!(
                why.contains(needle)
                    && why.contains(exprs[0].split(' ').next().unwrap())
                    && why.contains("correct or drop one"),
                "{exprs:?}: {why}"
            );
        }
        // Ranges that meet, other figures, a mean beside a percentile, other populations.
        for exprs in [
            &["ttfb p99 < 100ms", "ttfb p99 > 50ms"][..],
            &["ttfb p99 <= 50ms", "ttfb p99 >= 50ms"],
            &["ttfb p99 < 50ms", "total p99 > 100ms"],
            &["ttfb p99 < 50ms", "ttfb p50 > 40ms"],
            &["ttfb mean > 100ms", "ttfb p99 < 50ms"],
            &["tps p50 > 300", "tps p99 < 200"],
            &["readers.ttfb p99 < 50ms", "writers.ttfb p99 > 100ms"],
            &["error_rate <= 0%", "ttfb p99 < 1s"],
        ] {
            assert_eq!(unmeetable(&set(exprs)), None, "{exprs:?}");
        }
    }

    #[test]
    fn a_statistic_is_serialised_by_its_name() {
        for (stat, name) in Stat::ALL {
            let json = serde_json::to_string(&stat).unwrap();
            assert_eq!(json, format!("\"{name}\""));
            assert_eq!(serde_json::from_str::<Stat>(&json).unwrap(), stat);
        }
        assert!(serde_json::from_str::<Stat>("\"p42\"").is_err());
    }

    #[test]
    fn mistakes_say_what_to_write() {
        for (bad, needle) in [
            ("latency p99 < 5ms", "unknown figure `latency`"),
            ("ttfb p42 < 5ms", "`p42` is not a statistic"),
            ("ttfb p99 = 5ms", "no comparison"),
            ("tps avg > lots", "`lots` is not a limit"),
            ("error_rate < 150%", "from 0% to 100%"),
            ("ttfb p99 < -5ms", "below zero"),
            (
                "ttfb p99 < 0ms",
                "can never be met: no figure is below zero",
            ),
            ("error_rate < 0%", "can never be met"),
            ("tps avg < 0", "can never be met"),
            ("total max <= 0s", "no request takes no time at all"),
            ("ttfb p99 < 0.0001ms", "less than a microsecond"),
            ("error_rate > 100%", "no error rate is above 100%"),
        ] {
            let e = parse_threshold(bad).unwrap_err().to_string();
            assert!(
                e.contains(needle)
                    && (e.contains("write thresholds like") || e.contains("; write")),
                "{bad}: {e}"
            );
        }
    }
}
