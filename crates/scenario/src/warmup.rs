//! A warm-up: the start of a run left out of every figure, written as a time (`30s`) or as
//! the plan's first stages (`stage:2`). The one parser of `--warmup` (run, capacity, sweep,
//! k8s manifest) and of a scenario file's `warmup:`, and the one check that a warm-up leaves
//! something of the run ([`Warmup::length`]).

use std::fmt;
use std::time::Duration;

use crate::Error;
use crate::duration::parse_duration;
use crate::load::Load;

/// What to leave out of the start of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Warmup {
    /// This long.
    Time(Duration),
    /// The plan's first N stages (`stage:N`).
    Stages(usize),
}

impl Warmup {
    /// Parses `30s` (any duration [`parse_duration`] reads) or `stage:N`.
    pub fn parse(text: &str) -> Result<Warmup, Error> {
        let t = text.trim();
        if let Some(n) = t.strip_prefix("stage:") {
            return n.trim().parse().map(Warmup::Stages).map_err(|_| {
                Error::value(
                    "write stage:N for the plan's first N stages (e.g. stage:1), or a time like 30s"
                        .into(),
                )
            });
        }
        parse_duration(t)
            .map(Warmup::Time)
            .map_err(|e| Error::value(format!("{e}; or stage:N for the plan's first N stages")))
    }

    /// How long the warm-up is in a run of `load`: a time as it is, `stage:N` the length of the
    /// first N stages. Refused when it leaves nothing of the run to report.
    pub fn length(&self, load: &Load) -> Result<Duration, Error> {
        let d = match *self {
            Warmup::Time(d) => d,
            Warmup::Stages(n) => {
                let stages = load.stage_durations();
                if n >= stages.len() {
                    return Err(Error::value(match stages.len() {
                        0 => "the plan has no stages; give the warm-up as a time, e.g. 30s"
                            .to_string(),
                        k => format!(
                            "leaves nothing to report: the plan has {k} stage{}; give at most stage:{}, or a time like 30s",
                            if k == 1 { "" } else { "s" },
                            k - 1
                        ),
                    }));
                }
                stages.iter().take(n).sum()
            }
        };
        if let Some(planned) = load.planned()
            && d >= planned
        {
            return Err(Error::value(format!(
                "leaves nothing of the {}s run to report; give a warm-up shorter than the run",
                planned.as_secs_f64()
            )));
        }
        Ok(d)
    }
}

/// As written: `30s`, `stage:2`.
impl fmt::Display for Warmup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warmup::Time(d) => write!(f, "{}", humantime::format_duration(*d)),
            Warmup::Stages(n) => write!(f, "stage:{n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(pairs: &[(&str, &str)]) -> Load {
        crate::load::tests::spec(pairs).resolve().unwrap()
    }

    #[test]
    fn a_time_or_the_first_stages() {
        assert_eq!(
            Warmup::parse("30s").unwrap(),
            Warmup::Time(Duration::from_secs(30))
        );
        assert_eq!(Warmup::parse(" stage:2 ").unwrap(), Warmup::Stages(2));
        assert_eq!(Warmup::parse("stage:0").unwrap(), Warmup::Stages(0));
        for (w, shown) in [("1m30s", "1m 30s"), ("stage:2", "stage:2")] {
            assert_eq!(Warmup::parse(w).unwrap().to_string(), shown);
        }
    }

    #[test]
    fn bad_input_says_what_to_write() {
        for bad in ["stage:x", "stage:-1", "stage:"] {
            let e = Warmup::parse(bad).unwrap_err();
            assert!(
                e.to_string().contains("write stage:N") && e.to_string().contains("30s"),
                "{bad}: {e}"
            );
        }
        assert_eq!(
            Warmup::parse("5").unwrap_err(),
            "`5` has no unit: write 5s, 5ms or 5m; or stage:N for the plan's first N stages"
        );
        assert!(
            Warmup::parse("soon")
                .unwrap_err()
                .to_string()
                .contains("is not a duration")
        );
        // The bound of every duration holds here too.
        assert!(
            Warmup::parse("8d")
                .unwrap_err()
                .to_string()
                .contains("longer than 7 days")
        );
    }

    #[test]
    fn its_length_leaves_something_of_the_run() {
        let staged = load(&[("stages", "10s:5,20s:5,30s:10")]);
        assert_eq!(
            Warmup::Stages(2).length(&staged).unwrap(),
            Duration::from_secs(30)
        );
        assert_eq!(Warmup::Stages(0).length(&staged).unwrap(), Duration::ZERO);
        let e = Warmup::Stages(3).length(&staged).unwrap_err();
        assert!(
            e.to_string()
                .contains("the plan has 3 stages; give at most stage:2"),
            "{e}"
        );
        let secs = Duration::from_secs;
        assert_eq!(Warmup::Time(secs(59)).length(&staged).unwrap(), secs(59));
        assert_eq!(
            Warmup::Time(secs(60)).length(&staged).unwrap_err(),
            "leaves nothing of the 60s run to report; give a warm-up shorter than the run"
        );
        let held = load(&[("vus", "2"), ("duration", "10s")]);
        assert!(Warmup::Time(secs(10)).length(&held).is_err());
        assert_eq!(Warmup::Time(secs(9)).length(&held).unwrap(), secs(9));
    }
}
