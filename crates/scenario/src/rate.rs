//! Open-model load: arrivals per second over time, and the exact time each arrival is due.
//!
//! Arrivals are scheduled at absolute times computed from the rate curve (never from the
//! previous arrival), so a late arrival does not push the ones after it: the schedule
//! cannot drift.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::Error;
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
pub fn parse_rate(s: &str) -> Result<f64, Error> {
    let t = s.trim();
    let (num, per) = match t.split_once('/') {
        Some((n, unit)) => (
            n,
            match unit.trim() {
                "s" | "1s" | "sec" | "second" => 1.0,
                "m" | "1m" | "min" | "minute" => 60.0,
                "h" | "1h" | "hour" => 3600.0,
                "d" | "1d" | "day" => 86400.0,
                u => {
                    return Err(Error::value(format!(
                        "rate `{s}`: unknown unit `/{u}`; write 500, 500/s, 30000/m, 1800000/h or 19080000/day"
                    )));
                }
            },
        ),
        None => (t, 1.0),
    };
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| Error::value(format!("rate `{s}`: write it like 500, 500/s or 30000/m")))?;
    if !n.is_finite() {
        return Err(Error::value(format!(
            "rate `{s}` is not a finite number; write one like 500, 500/s or 30000/m"
        )));
    }
    if n < 0.0 {
        return Err(Error::value(format!(
            "rate `{s}` is below zero; write zero or more, like 500, 500/s or 30000/m"
        )));
    }
    crate::limits::rate_at_most(n / per, s)
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
    pub fn parse(s: &str) -> Result<RateShape, Error> {
        let mut stages = Vec::new();
        for (i, part) in s.split(',').map(str::trim).enumerate() {
            let bad = |why: &str| {
                Error::value(format!(
                    "rate stage {} `{part}`: {why}; write stages like 1m:100,5m:300",
                    i + 1
                ))
            };
            let (d, r) = part
                .split_once(':')
                .ok_or_else(|| bad("expected DURATION:RATE"))?;
            let duration = parse_duration(d).map_err(|e| bad(&e.to_string()))?;
            let rate = parse_rate(r).map_err(|e| bad(&e.to_string()))?;
            stages.push(RateStage { duration, rate });
        }
        let shape = RateShape {
            start_rate: 0.0,
            stages,
        };
        if shape.duration().is_zero() {
            return Err(Error::value(format!(
                "rate stages `{s}` last no time at all: a 0s stage only jumps to its rate; follow it with a stage that lasts, e.g. 0s:100,1m:100"
            )));
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

    /// When arrival `n` (0-based) of an even schedule is due, from the start: the time at
    /// which the integral of the rate reaches `n`. `None` when it falls after the end.
    pub fn due(&self, n: u64) -> Option<Duration> {
        self.due_at(n as f64)
    }

    /// The time at which the integral of the rate reaches `x` (an arrival's operational
    /// time, [`ArrivalClock`]); `None` when it falls after the end.
    pub fn due_at(&self, x: f64) -> Option<Duration> {
        let mut remaining = x;
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

/// How arrivals are spaced along the rate curve.
///
/// `Even`: arrival `n` is due when the curve's integral reaches `n` (wrk2, k6's
/// arrival-rate executors). `Poisson`: the gaps between arrivals are exponential with the
/// curve's rate, as independent users arrive; a target then sees the bursts real traffic has,
/// and queues form below its limit as they do in production. The gaps come from a seeded
/// generator, so a run's schedule is the same every time and in every segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "process", rename_all = "lowercase")]
pub enum Arrivals {
    /// Evenly spaced.
    #[default]
    Even,
    /// Exponential gaps from a seeded generator.
    Poisson {
        /// The generator's seed.
        seed: u64,
    },
}

/// Open model: how a worker waits for its next arrival.
///
/// `sleep` waits on the kernel's high-resolution timer beside the sockets: a thread that sleeps
/// is woken late by however long the machine takes (on a 2-vCPU VM, p99 0.2–1.5 ms and up to
/// 4–9 ms; bench/timer-floor.sh). `spin` never sleeps: the worker polls its sockets and the
/// clock in turn until the due time, so its core stays awake and an arrival leaves within
/// microseconds of its time more often — for a whole core per worker thread, for the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ArrivalWait {
    /// On the high-resolution timer.
    #[default]
    Sleep,
    /// Polling, never asleep.
    Spin,
}

impl ArrivalWait {
    /// Parses `sleep` or `spin`.
    pub fn parse(s: &str) -> Result<ArrivalWait, Error> {
        match s.trim() {
            "sleep" => Ok(ArrivalWait::Sleep),
            "spin" => Ok(ArrivalWait::Spin),
            _ => Err(Error::value(format!(
                "arrival wait `{s}`: write sleep (on the kernel's timer, the default) or spin (poll without sleeping: a whole core per worker thread, for less schedule lag)"
            ))),
        }
    }

    /// Whether it is the default, left out of run.json.
    pub fn is_sleep(&self) -> bool {
        *self == ArrivalWait::Sleep
    }
}

impl Arrivals {
    /// The seed of `poisson` without one.
    pub const DEFAULT_SEED: u64 = 1;

    /// Parses `even`, `poisson` or `poisson:SEED`.
    pub fn parse(s: &str) -> Result<Arrivals, Error> {
        let t = s.trim();
        let bad = || {
            Error::value(format!(
                "arrivals `{s}`: write even (evenly spaced, the default), poisson (exponential gaps, seed {}) or poisson:SEED (e.g. poisson:7)",
                Arrivals::DEFAULT_SEED
            ))
        };
        match t.split_once(':') {
            None if t == "even" => Ok(Arrivals::Even),
            None if t == "poisson" => Ok(Arrivals::Poisson {
                seed: Arrivals::DEFAULT_SEED,
            }),
            Some(("poisson", seed)) => Ok(Arrivals::Poisson {
                seed: seed.trim().parse().map_err(|_| bad())?,
            }),
            _ => Err(bad()),
        }
    }

    /// Whether arrivals are evenly spaced (the default, left out of run.json).
    pub fn is_even(&self) -> bool {
        *self == Arrivals::Even
    }

    /// How reports name it: `even` or `poisson (seed 1)`.
    pub fn label(&self) -> String {
        match self {
            Arrivals::Even => "even".into(),
            Arrivals::Poisson { seed } => format!("poisson (seed {seed})"),
        }
    }

    /// The clock that gives each arrival its operational time.
    pub fn clock(&self) -> ArrivalClock {
        ArrivalClock {
            arrivals: *self,
            rng: match self {
                Arrivals::Even => fastrand::Rng::with_seed(0),
                Arrivals::Poisson { seed } => fastrand::Rng::with_seed(*seed),
            },
            n: 0,
            x: 0.0,
        }
    }
}

/// The operational times of a schedule's arrivals in order: arrival `n` is due when the rate
/// curve's integral reaches its operational time ([`RateShape::due_at`]). Evenly spaced, that
/// is `n`; Poisson, the sum of `n + 1` exponential gaps of mean 1, drawn in order, so every
/// worker and segment that walks the schedule sees the same arrivals.
#[derive(Debug, Clone)]
pub struct ArrivalClock {
    arrivals: Arrivals,
    rng: fastrand::Rng,
    /// The next arrival not yet drawn.
    n: u64,
    /// The operational time of arrival `n - 1` (0 before the first).
    x: f64,
}

impl ArrivalClock {
    /// The operational time of arrival `n`. Arrivals are drawn in order: `n` must not be
    /// below the last one asked for.
    pub fn at(&mut self, n: u64) -> f64 {
        match self.arrivals {
            Arrivals::Even => n as f64,
            Arrivals::Poisson { .. } => {
                debug_assert!(n + 1 >= self.n, "arrivals are drawn in order");
                while self.n <= n {
                    // 1 − U is in (0, 1], so the logarithm is finite.
                    self.x += -(1.0 - self.rng.f64()).ln();
                    self.n += 1;
                }
                self.x
            }
        }
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
        assert!((parse_rate("19068000/day").unwrap() - 220.694_444).abs() < 1e-5);
        assert!(parse_rate("5/fortnight").is_err());
        assert!(
            parse_rate("-1")
                .unwrap_err()
                .to_string()
                .contains("below zero")
        );
        for endless in ["inf", "-inf", "NaN", "infinity/s", "1e400"] {
            let e = parse_rate(endless).unwrap_err().to_string();
            assert!(
                e.contains("not a finite number") && e.contains("500/s"),
                "{e}"
            );
        }
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
                .to_string()
                .contains("expected DURATION:RATE")
        );
        assert!(RateShape::parse("0s:5").is_err());
    }

    #[test]
    fn arrivals_parse_and_name_themselves() {
        assert_eq!(Arrivals::parse("even").unwrap(), Arrivals::Even);
        assert_eq!(
            Arrivals::parse("poisson").unwrap(),
            Arrivals::Poisson { seed: 1 }
        );
        assert_eq!(
            Arrivals::parse("poisson:42").unwrap(),
            Arrivals::Poisson { seed: 42 }
        );
        for bad in ["bursty", "poisson:x", "even:3", ""] {
            let e = Arrivals::parse(bad).unwrap_err().to_string();
            assert!(e.contains("poisson:SEED"), "{bad}: {e}");
        }
        assert_eq!(Arrivals::Poisson { seed: 3 }.label(), "poisson (seed 3)");
    }

    #[test]
    fn poisson_arrivals_have_the_rate_and_the_spread_of_a_poisson_process() {
        // 1,000/s for 100 s: the count is Poisson (mean 100,000, sd 316), the gaps are
        // exponential (mean 1 ms, coefficient of variation 1), and the counts per 100 ms
        // window vary like a Poisson's (variance / mean = 1). Evenly spaced, all three are
        // exact and the variance is 0.
        let rate = RateShape::constant(1000.0, Duration::from_secs(100));
        let mut clock = Arrivals::Poisson { seed: 9 }.clock();
        let dues: Vec<f64> = (0..)
            .map_while(|n| rate.due_at(clock.at(n)))
            .map(|d| d.as_secs_f64())
            .collect();
        let n = dues.len() as f64;
        assert!((n - 100_000.0).abs() < 4.0 * 316.0, "{n} arrivals");
        let gaps: Vec<f64> = dues.windows(2).map(|w| w[1] - w[0]).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        assert!((mean - 0.001).abs() < 0.00002, "mean gap {mean}");
        assert!(
            (var.sqrt() / mean - 1.0).abs() < 0.02,
            "cv {}",
            var.sqrt() / mean
        );
        let mut windows = vec![0f64; 1000];
        for d in &dues {
            windows[((d * 10.0) as usize).min(999)] += 1.0;
        }
        let wm = windows.iter().sum::<f64>() / 1000.0;
        let wv = windows.iter().map(|c| (c - wm).powi(2)).sum::<f64>() / 999.0;
        assert!((wv / wm - 1.0).abs() < 0.15, "dispersion {}", wv / wm);
        // The same seed gives the same schedule; another seed another.
        let mut again = Arrivals::Poisson { seed: 9 }.clock();
        let mut other = Arrivals::Poisson { seed: 10 }.clock();
        assert_eq!(again.at(500), clock_at(9, 500));
        assert_ne!(other.at(500), clock_at(9, 500));
        // Even: the old schedule, exactly.
        let mut even = Arrivals::Even.clock();
        assert_eq!(rate.due_at(even.at(1234)), rate.due(1234));
    }

    fn clock_at(seed: u64, n: u64) -> f64 {
        Arrivals::Poisson { seed }.clock().at(n)
    }
}
