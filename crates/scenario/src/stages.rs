//! Load shapes: how many virtual users should run at each instant.
//!
//! A shape is a list of stages, each ramping linearly from the previous target to its own
//! over its duration (the first starts from 0), as k6's `ramping-vus` and the seeds' tests
//! ("200 users, +50 every 2 minutes") describe load.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::Error;
use crate::duration::parse_duration;

/// Ramp to `target` VUs over `duration`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    /// How long the stage lasts.
    #[serde(with = "crate::secs")]
    pub duration: Duration,
    /// VUs at the end of the stage.
    pub target: u64,
}

/// Parses `"2m:50,2m:100,30s:0"` (DURATION:VUS, comma-separated).
pub fn parse_stages(s: &str) -> Result<Vec<Stage>, Error> {
    let mut out = Vec::new();
    for (i, part) in s.split(',').map(str::trim).enumerate() {
        let bad = |why: &str| {
            Error::value(format!(
                "stage {} `{part}`: {why}; write stages like 2m:50,2m:100",
                i + 1
            ))
        };
        let (d, t) = part
            .split_once(':')
            .ok_or_else(|| bad("expected DURATION:VUS"))?;
        let duration = parse_duration(d).map_err(|e| bad(&e.to_string()))?;
        let target = t
            .trim()
            .parse::<u64>()
            .map_err(|_| bad(&format!("`{t}` is not a whole number of VUs")))?;
        let target = crate::limits::at_most(target, crate::limits::MAX_VUS, "VUs")
            .map_err(|e| bad(&e.to_string()))?;
        out.push(Stage { duration, target });
    }
    if out.iter().all(|s| s.duration.is_zero()) {
        return Err(Error::value(format!(
            "stages `{s}` last no time at all: a 0s stage only jumps to its VUs; follow it with a stage that lasts, e.g. 0s:10,30s:10"
        )));
    }
    Ok(out)
}

/// The closed-model load shape: VUs over time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadShape {
    /// The stages in order.
    pub stages: Vec<Stage>,
}

impl LoadShape {
    /// `vus` users for `duration`, reached linearly over `ramp_up` (part of the duration).
    pub fn constant(vus: u64, duration: Duration, ramp_up: Duration) -> Result<LoadShape, Error> {
        if ramp_up > duration {
            return Err(Error::value(format!(
                "ramp-up ({}s) is longer than the duration ({}s)",
                ramp_up.as_secs_f64(),
                duration.as_secs_f64()
            )));
        }
        Ok(LoadShape {
            stages: vec![
                Stage {
                    duration: ramp_up,
                    target: vus,
                },
                Stage {
                    duration: duration - ramp_up,
                    target: vus,
                },
            ],
        })
    }

    /// Total planned length.
    pub fn duration(&self) -> Duration {
        self.stages.iter().map(|s| s.duration).sum()
    }

    /// The most VUs the shape ever asks for.
    pub fn max_vus(&self) -> u64 {
        self.stages.iter().map(|s| s.target).max().unwrap_or(0)
    }

    /// VUs that should be running `elapsed` after the start (0 after the end).
    ///
    /// While ramping up the count is rounded down and while ramping down rounded up, so a
    /// stage reaches its target exactly at its end and never overshoots on the way.
    pub fn vus_at(&self, elapsed: Duration) -> u64 {
        let mut from = 0u64;
        let mut start = Duration::ZERO;
        for s in &self.stages {
            let end = start + s.duration;
            if elapsed < end {
                let frac = (elapsed - start).as_secs_f64() / s.duration.as_secs_f64();
                let v = from as f64 + (s.target as f64 - from as f64) * frac;
                return if s.target >= from {
                    v.floor() as u64
                } else {
                    v.ceil() as u64
                };
            }
            from = s.target;
            start = end;
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_interpolates() {
        let shape = LoadShape {
            stages: parse_stages("2m:50,2m:100,1m:100,1m:0").unwrap(),
        };
        assert_eq!(shape.duration(), Duration::from_secs(360));
        assert_eq!(shape.max_vus(), 100);
        assert_eq!(shape.vus_at(Duration::ZERO), 0);
        assert_eq!(shape.vus_at(Duration::from_secs(60)), 25);
        assert_eq!(shape.vus_at(Duration::from_secs(120)), 50);
        assert_eq!(shape.vus_at(Duration::from_secs(180)), 75);
        assert_eq!(shape.vus_at(Duration::from_secs(299)), 100);
        assert_eq!(shape.vus_at(Duration::from_secs(330)), 50);
        assert_eq!(shape.vus_at(Duration::from_secs(359)), 2);
        assert_eq!(shape.vus_at(Duration::from_secs(360)), 0);
    }

    #[test]
    fn steps_with_zero_length_stages() {
        // The seeds' "0-4 min 50 users, 4-8 min 100 users".
        let shape = LoadShape {
            stages: parse_stages("0s:50,4m:50,0s:100,4m:100").unwrap(),
        };
        assert_eq!(shape.vus_at(Duration::ZERO), 50);
        assert_eq!(shape.vus_at(Duration::from_secs(239)), 50);
        assert_eq!(shape.vus_at(Duration::from_secs(240)), 100);
    }

    #[test]
    fn constant_with_ramp_up() {
        let shape =
            LoadShape::constant(10, Duration::from_secs(10), Duration::from_secs(5)).unwrap();
        assert_eq!(shape.vus_at(Duration::from_millis(2500)), 5);
        assert_eq!(shape.vus_at(Duration::from_secs(7)), 10);
        let flat = LoadShape::constant(10, Duration::from_secs(10), Duration::ZERO).unwrap();
        assert_eq!(flat.vus_at(Duration::ZERO), 10);
        assert!(LoadShape::constant(1, Duration::from_secs(1), Duration::from_secs(2)).is_err());
    }

    #[test]
    fn bad_stages_say_what_to_write() {
        let e = parse_stages("2m:50,abc").unwrap_err().to_string();
        assert_eq!(
            e,
            "stage 2 `abc`: expected DURATION:VUS; write stages like 2m:50,2m:100"
        );
        let e = parse_stages("2m:x").unwrap_err().to_string();
        assert!(e.contains("`x` is not a whole number of VUs"), "{e}");
        assert!(parse_stages("0s:5").is_err());
    }
}
