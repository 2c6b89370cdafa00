//! Open-model load: arrivals per second over time, and the exact time each arrival is due.
//!
//! Arrivals are scheduled at absolute times computed from the rate curve (never from the
//! previous arrival), so a late arrival does not push the ones after it: the schedule
//! cannot drift.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::PlanError;
use crate::duration::parse_duration;

/// Ramp linearly to `rate` arrivals per second over `duration`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RateStage {
    /// How long the stage lasts.
    #[serde(with = "crate::secs")]
    pub duration: Duration,
    /// Arrivals per second at the end of the stage.
    pub rate: f64,
}

/// Parses a rate: `500` or `500/s` per second, `30000/m` per minute.
pub fn parse_rate(s: &str) -> Result<f64, PlanError> {
    let t = s.trim();
    let (num, per) = match t.split_once('/') {
        Some((n, unit)) => (
            n,
            match unit.trim() {
                "s" | "1s" | "sec" | "second" => 1.0,
                "m" | "1m" | "min" | "minute" => 60.0,
                "h" | "1h" | "hour" => 3600.0,
                u => {
                    return Err(PlanError(format!(
                        "rate `{s}`: unknown unit `/{u}`; write 500, 500/s or 30000/m"
                    )));
                }
            },
        ),
        None => (t, 1.0),
    };
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| PlanError(format!("rate `{s}`: write it like 500, 500/s or 30000/m")))?;
    if !n.is_finite() || n < 0.0 {
        return Err(PlanError(format!("rate `{s}` must be zero or more")));
    }
    Ok(n / per)
}

/// The arrival-rate curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateShape {
    /// Rate at time zero.
    pub start_rate: f64,
    /// Stages in order.
    pub stages: Vec<RateStage>,
}

impl RateShape {
    /// A constant `rate` for `duration`.
    pub fn constant(rate: f64, duration: Duration) -> RateShape {
        RateShape {
            start_rate: rate,
            stages: vec![RateStage { duration, rate }],
        }
    }

    /// Parses `"1m:100,5m:300"` (DURATION:RATE, linear from 0 or from a leading `0s:R`).
    pub fn parse(s: &str) -> Result<RateShape, PlanError> {
        let mut stages = Vec::new();
        for (i, part) in s.split(',').map(str::trim).enumerate() {
            let bad = |why: &str| {
                PlanError(format!(
                    "rate stage {} `{part}`: {why}; write stages like 1m:100,5m:300",
                    i + 1
                ))
            };
            let (d, r) = part
                .split_once(':')
                .ok_or_else(|| bad("expected DURATION:RATE"))?;
            let duration = parse_duration(d).map_err(|e| bad(&e.0))?;
            let rate = parse_rate(r).map_err(|e| bad(&e.0))?;
            stages.push(RateStage { duration, rate });
        }
        let shape = RateShape {
            start_rate: 0.0,
            stages,
        };
        if shape.duration().is_zero() {
            return Err(PlanError(format!("rate stages `{s}` last no time at all")));
        }
        Ok(shape)
    }

    /// Total length.
    pub fn duration(&self) -> Duration {
        self.stages.iter().map(|s| s.duration).sum()
    }

    /// Arrivals per second at `t`.
    pub fn rate_at(&self, t: Duration) -> f64 {
        let mut from = self.start_rate;
        let mut start = Duration::ZERO;
        for s in &self.stages {
            let end = start + s.duration;
            if t < end {
                let frac = (t - start).as_secs_f64() / s.duration.as_secs_f64();
                return from + (s.rate - from) * frac;
            }
            from = s.rate;
            start = end;
        }
        0.0
    }

    /// Expected arrivals over the whole shape.
    pub fn total_arrivals(&self) -> f64 {
        let mut from = self.start_rate;
        let mut n = 0.0;
        for s in &self.stages {
            n += (from + s.rate) / 2.0 * s.duration.as_secs_f64();
            from = s.rate;
        }
        n
    }

    /// When arrival `n` (0-based) is due, from the start: the time at which the integral of
    /// the rate reaches `n`. `None` when it falls after the end.
    pub fn due(&self, n: u64) -> Option<Duration> {
        let mut remaining = n as f64;
        let mut from = self.start_rate;
        let mut start = 0.0;
        for s in &self.stages {
            let d = s.duration.as_secs_f64();
            let in_stage = (from + s.rate) / 2.0 * d;
            if remaining < in_stage || (d == 0.0 && remaining == 0.0 && in_stage > 0.0) {
                // Solve from·τ + (r1 − from)·τ²/(2d) = remaining for τ in [0, d).
                let a = (s.rate - from) / (2.0 * d);
                let tau = if a.abs() < 1e-12 {
                    remaining / from
                } else {
                    (-from + (from * from + 4.0 * a * remaining).max(0.0).sqrt()) / (2.0 * a)
                };
                return Some(Duration::from_secs_f64(start + tau.clamp(0.0, d)));
            }
            remaining -= in_stage;
            from = s.rate;
            start += d;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("500").unwrap(), 500.0);
        assert_eq!(parse_rate("500/s").unwrap(), 500.0);
        assert_eq!(parse_rate("600/m").unwrap(), 10.0);
        assert!(parse_rate("5/fortnight").is_err());
        assert!(parse_rate("-1").is_err());
    }

    #[test]
    fn constant_schedule_is_exact() {
        let r = RateShape::constant(500.0, Duration::from_secs(2));
        assert_eq!(r.due(0), Some(Duration::ZERO));
        assert_eq!(r.due(1), Some(Duration::from_millis(2)));
        assert_eq!(r.due(999), Some(Duration::from_millis(1998)));
        assert_eq!(r.due(1000), None);
        assert_eq!(r.total_arrivals(), 1000.0);
    }

    #[test]
    fn ramp_schedule_follows_the_integral() {
        // 0 -> 100/s over 10 s: N(t) = 5 t², so arrival 125 is due at t = 5 s.
        let r = RateShape::parse("10s:100").unwrap();
        let t = r.due(125).unwrap().as_secs_f64();
        assert!((t - 5.0).abs() < 1e-9, "{t}");
        assert_eq!(r.total_arrivals(), 500.0);
        assert!(r.due(499).is_some() && r.due(500).is_none());
        // Then a hold: 100/s for 10 s more.
        let r = RateShape::parse("10s:100,10s:100").unwrap();
        assert!((r.due(600).unwrap().as_secs_f64() - 11.0).abs() < 1e-9);
        assert_eq!(r.rate_at(Duration::from_secs(5)), 50.0);
        // Due times never go backwards.
        let mut last = Duration::ZERO;
        for n in 0..1500 {
            let d = r.due(n).unwrap();
            assert!(d >= last);
            last = d;
        }
    }

    #[test]
    fn bad_stages() {
        assert!(
            RateShape::parse("1m")
                .unwrap_err()
                .0
                .contains("expected DURATION:RATE")
        );
        assert!(RateShape::parse("0s:5").is_err());
    }
}
