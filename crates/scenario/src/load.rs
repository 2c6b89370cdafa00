//! The load options, defined once.
//!
//! `volley run`'s flags and a scenario file's `load:` keys are the same options under the same
//! words (`ramp_up` is `--ramp-up`), parsed by the same functions into a typed [`LoadSpec`].
//! [`LoadSpec::merge`] lays the command line over the file with the override rules written
//! once, [`CONFLICTS`] says which options exclude each other (clap and the file reader both
//! read it), and [`LoadSpec::resolve`] turns the result into the [`Load`] the engine runs.
//! Adding an option is a line in the table below and its use in `resolve`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::duration::parse_duration;
use crate::rate::{ArrivalWait, Arrivals, RateShape, RateStage, parse_rate};
use crate::stages::{LoadShape, Stage, parse_stages};
use crate::{Error, limits};

/// What an option is about, which decides how the command line overrides a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Part of the load's shape: a shape given on the command line replaces the file's whole
    /// shape, so the two never mix.
    Shape,
    /// Timing of a closed-model iteration; the file's is dropped when the run is open.
    Closed,
    /// How often the whole plan runs (`repeat`, `repeat_pause`): not part of one run's load,
    /// so a scenario's populations and a capacity search's probes cannot take it. The command
    /// line wins, key by key.
    Runs,
    /// Anything else: the command line wins, key by key.
    Other,
}

/// One load option.
#[derive(Debug, Clone, Copy)]
pub struct LoadOption {
    /// The scenario key (`ramp_up`); the flag is the same with dashes (`--ramp-up`).
    pub key: &'static str,
    /// One line of help.
    pub help: &'static str,
    /// The placeholder in usage lines.
    pub value_name: &'static str,
    /// How it merges.
    pub role: Role,
}

impl LoadOption {
    /// The flag that sets it: `--ramp-up`.
    pub fn flag(&self) -> String {
        format!("--{}", self.key.replace('_', "-"))
    }
}

macro_rules! load_options {
    ($( $field:ident: $ty:ty = $parse:expr, $value:literal, $role:ident, $help:literal; )*) => {
        /// The load as a user gives it, every value parsed; `None` where nothing was said.
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct LoadSpec {
            $( #[doc = $help] pub $field: Option<$ty>, )*
        }

        /// Every load option, in the order `volley run --help` shows them.
        pub const OPTIONS: &[LoadOption] = &[
            $( LoadOption { key: stringify!($field), help: $help, value_name: $value, role: Role::$role }, )*
        ];

        impl LoadSpec {
            /// Sets option `key` from its text, as written after the flag or the key.
            pub fn set(&mut self, key: &str, text: &str) -> Result<(), Error> {
                match key {
                    $( stringify!($field) => self.$field = Some($parse(text)?), )*
                    _ => return Err(Error::value(format!("`{key}` is not a load option; the options are {}", option_list()))),
                }
                Ok(())
            }

            /// The options that are set, in table order.
            pub fn given(&self) -> Vec<&'static str> {
                let mut keys = Vec::new();
                $( if self.$field.is_some() { keys.push(stringify!($field)); } )*
                keys
            }

            /// Copies option `key` from `other`: always, or only where this spec leaves it unset.
            fn copy(&mut self, other: &LoadSpec, key: &str, only_unset: bool) {
                match key {
                    $( stringify!($field) => if !only_unset || self.$field.is_none() { self.$field = other.$field.clone(); }, )*
                    _ => {}
                }
            }
        }
    };
}

load_options! {
    vus: u64 = vus, "N", Shape, "Virtual users (closed model).";
    duration: Duration = positive_duration, "DURATION", Shape, "Test length (with --vus or --rate); e.g. 30s, 10m.";
    ramp_up: Duration = parse_duration, "DURATION", Shape, "Ramp from 0 to --vus over this time, part of --duration.";
    ramp_down: Duration = parse_duration, "DURATION", Shape, "Ramp from --vus down to 0 over this time at the end of --duration (part of it).";
    stages: Vec<Stage> = parse_stages, "STAGES", Shape, "Ramping stages DURATION:VUS,..., linear between targets; e.g. \"2m:50,2m:100,1m:0\".";
    rate: f64 = positive_rate, "RATE", Shape, "Open model: arrivals per second (500, 500/s, 30000/m), for --duration; latency is measured from each arrival's due time.";
    rate_stages: RateShape = RateShape::parse, "STAGES", Shape, "Open model: ramping arrival rate DURATION:RATE,..., linear from 0; e.g. \"1m:100,5m:300\".";
    iterations: u64 = iterations, "N", Shape, "Each VU runs this many iterations, then stops; the run ends when all have (nGrinder's run count). --duration, if given, caps it [default cap: 24h].";
    arrivals: Arrivals = Arrivals::parse, "PROCESS", Other, "Open model: how arrivals are spaced: even (the default), or poisson[:SEED] for the exponential gaps of independent users (seeded, so the schedule repeats); reports say which.";
    arrival_wait: ArrivalWait = ArrivalWait::parse, "HOW", Other, "Open model: how a worker thread waits for its next arrival: sleep (on the kernel's high-resolution timer, the default) or spin (polls its sockets and the clock without sleeping: less schedule lag than the machine's timer wake-up delay, for a whole core per --threads for the run). Reports say which.";
    max_vus: u64 = vus, "N", Other, "Open model: VUs (connections) that carry out arrivals, opened as needed [default: 1000].";
    connections: u64 = connections, "N", Other, "Share N connections among the VUs instead of one per VU: HTTP/2 carries the VUs' requests as streams on them (h2load's -c; at most the server's SETTINGS_MAX_CONCURRENT_STREAMS at once per connection), HTTP/1.1 makes them a pool the VUs take turns on. The wait for a connection or stream is not part of a request's times.";
    pacing: Duration = parse_duration, "DURATION", Closed, "Start an iteration at most once per this time per VU (e.g. 1s: one call per second per user).";
    think_time: Duration = parse_duration, "DURATION", Closed, "Pause after every iteration.";
    repeat: u64 = repeat, "N", Runs, "Run the whole plan N times as one run group (a directory of N runs and group.json), so `volley compare` can judge changes against run-to-run variation.";
    repeat_pause: Duration = parse_duration, "DURATION", Runs, "With --repeat: pause between the runs (e.g. 10s), to let the target settle.";
}

/// Options that cannot be given together: (option, the options it excludes, why).
pub const CONFLICTS: &[(&str, &[&str], &str)] = &[
    (
        "rate",
        &[
            "vus",
            "stages",
            "ramp_up",
            "ramp_down",
            "iterations",
            "pacing",
            "think_time",
            "rate_stages",
        ],
        "an arrival rate (open model) takes `duration` and `max_vus`",
    ),
    (
        "rate_stages",
        &[
            "vus",
            "stages",
            "ramp_up",
            "ramp_down",
            "iterations",
            "pacing",
            "think_time",
            "duration",
        ],
        "rate stages carry their own rates and lengths",
    ),
    (
        "stages",
        &["vus", "duration", "ramp_up", "ramp_down"],
        "stages carry their own VUs and lengths",
    ),
];

/// Open model: VUs when nobody said.
pub const DEFAULT_MAX_VUS: u64 = 1000;

/// A run count with nothing else to end it ends after a day at most.
pub const ITERATIONS_CAP: Duration = Duration::from_secs(24 * 3600);

fn option_list() -> String {
    OPTIONS.iter().map(|o| o.key).collect::<Vec<_>>().join(", ")
}

/// A whole number, at least 1.
fn count(s: &str) -> Result<u64, Error> {
    match s.trim().parse::<u64>() {
        Ok(0) => Err(Error::value("must be at least 1".into())),
        Ok(n) => Ok(n),
        Err(_) => Err(Error::value(format!(
            "`{s}` is not a whole number; write it like 50"
        ))),
    }
}

/// A number of VUs, at least 1 and at most [`limits::MAX_VUS`].
fn vus(s: &str) -> Result<u64, Error> {
    limits::at_most(count(s)?, limits::MAX_VUS, "VUs")
}

/// Shared connections, at least 1 and at most [`limits::MAX_CONNECTIONS`].
fn connections(s: &str) -> Result<u64, Error> {
    limits::at_most(count(s)?, limits::MAX_CONNECTIONS, "connections")
}

/// Iterations per VU, at least 1 and at most [`limits::MAX_ITERATIONS`].
fn iterations(s: &str) -> Result<u64, Error> {
    limits::at_most(count(s)?, limits::MAX_ITERATIONS, "iterations")
}

/// Runs in a group, at least 1 and at most [`limits::MAX_REPEAT`].
fn repeat(s: &str) -> Result<u64, Error> {
    limits::at_most(count(s)?, limits::MAX_REPEAT, "runs")
}

/// An arrival rate above zero.
fn positive_rate(s: &str) -> Result<f64, Error> {
    let r = parse_rate(s)?;
    if r <= 0.0 {
        return Err(Error::value(format!(
            "`{s}` sends nothing; give a rate above zero, like 500 or 500/s"
        )));
    }
    Ok(r)
}

/// A duration above zero.
fn positive_duration(s: &str) -> Result<Duration, Error> {
    let d = parse_duration(s)?;
    if d.is_zero() {
        return Err(Error::value(format!(
            "`{s}` lasts no time at all; write it like 30s or 10m"
        )));
    }
    Ok(d)
}

/// Two options given together that exclude each other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The option whose rule it is.
    pub key: &'static str,
    /// The option it excludes.
    pub other: &'static str,
    /// Why.
    pub why: &'static str,
}

impl LoadSpec {
    /// Every pair of options given here that excludes each other.
    pub fn conflicts(&self) -> Vec<Conflict> {
        let given = self.given();
        let mut out = Vec::new();
        for (key, others, why) in CONFLICTS {
            if !given.contains(key) {
                continue;
            }
            for other in others.iter().filter(|o| given.contains(o)) {
                out.push(Conflict { key, other, why });
            }
        }
        out
    }

    /// How often to run the plan, and the pause between runs: `(1, 0)` when not repeated.
    /// A pause without repeats is an error that says what to write.
    pub fn repeat(&self) -> Result<(usize, Duration), Error> {
        match (self.repeat, self.repeat_pause) {
            (None, Some(_)) => Err(Error::value("`repeat_pause` is the pause between repeated runs; give `repeat` too (e.g. --repeat 3 --repeat-pause 10s)".into())),
            (n, pause) => Ok((n.unwrap_or(1) as usize, pause.unwrap_or_default())),
        }
    }

    /// Whether any option of the load's shape is given.
    pub fn has_shape(&self) -> bool {
        self.given().iter().any(|k| role_of(k) == Role::Shape)
    }

    /// Whether the options describe an open model.
    pub fn is_open(&self) -> bool {
        self.rate.is_some() || self.rate_stages.is_some()
    }

    /// The command line (`self`) laid over a scenario file's `load` section: a shape on the
    /// command line replaces the file's whole shape; other options override key by key;
    /// the file's closed-model timings are dropped when the result is an open model.
    pub fn merge(self, file: &LoadSpec) -> LoadSpec {
        let shape_given = self.has_shape();
        let mut out = self.clone();
        for o in OPTIONS
            .iter()
            .filter(|o| o.role != Role::Shape || !shape_given)
        {
            out.copy(file, o.key, true);
        }
        if out.is_open() {
            for o in OPTIONS.iter().filter(|o| o.role == Role::Closed) {
                out.copy(&self, o.key, false);
            }
        }
        out
    }

    /// The load the engine runs, within [`limits`]. Errors say what to write instead.
    pub fn resolve(&self) -> Result<Load, Error> {
        let load = self.resolve_shape()?;
        load.check()?;
        Ok(load)
    }

    fn resolve_shape(&self) -> Result<Load, Error> {
        if let Some(c) = self.conflicts().first() {
            return Err(Error::value(format!(
                "`{}` cannot be combined with `{}`: {}",
                c.other, c.key, c.why
            )));
        }
        let max_vus = self.max_vus.unwrap_or(DEFAULT_MAX_VUS);
        let connections = self.connections;
        // The options of an open model's arrivals, which mean nothing without a rate.
        for (given, key, what, leave) in [
            (
                self.arrival_wait.is_some(),
                "arrival_wait",
                "says how a worker waits for",
                "it",
            ),
            (self.arrivals.is_some(), "arrivals", "spaces", "arrivals"),
        ] {
            if given && !self.is_open() {
                return Err(Error::value(format!(
                    "`{key}` {what} the arrivals of an arrival rate (open model); give a rate too (--rate 100 --duration 30s, or --rate-stages) or leave {leave} out"
                )));
            }
        }
        let closed = |model| Load {
            model,
            pacing: self.pacing.unwrap_or_default(),
            think_time: self.think_time.unwrap_or_default(),
            connections,
            arrivals: Arrivals::Even,
            arrival_wait: ArrivalWait::Sleep,
        };
        let open = |rate| Load {
            model: Model::Open { rate, max_vus },
            pacing: Duration::ZERO,
            think_time: Duration::ZERO,
            connections,
            arrivals: self.arrivals.unwrap_or_default(),
            arrival_wait: self.arrival_wait.unwrap_or_default(),
        };
        if let Some(rate) = &self.rate_stages {
            return Ok(open(rate.clone()));
        }
        if let Some(rate) = self.rate {
            let Some(duration) = self.duration else {
                return Err(Error::value(format!(
                    "say how long to run: --rate {rate} --duration 30s"
                )));
            };
            return Ok(open(RateShape::constant(rate, duration)));
        }
        let with_count = |shape: LoadShape, open_ended: bool| match self.iterations {
            Some(per_vu) => Model::Iterations {
                shape,
                per_vu,
                open_ended,
            },
            None => Model::Closed { shape },
        };
        if let Some(stages) = &self.stages {
            return Ok(closed(with_count(
                LoadShape {
                    stages: stages.clone(),
                },
                false,
            )));
        }
        // A run count needs no duration: the run ends when every VU is done.
        let Some(duration) = self.duration.or(self.iterations.map(|_| ITERATIONS_CAP)) else {
            return Err(Error::value(
                "say how long to run: --duration 30s (with --vus N), --iterations 10 (with --vus N), --stages \"1m:50,2m:50\", or --rate 100 --duration 30s"
                    .into(),
            ));
        };
        let mut shape = LoadShape::constant(
            self.vus.unwrap_or(1),
            duration,
            self.ramp_up.unwrap_or_default(),
        )?;
        if let Some(down) = self.ramp_down {
            let hold = &mut shape.stages[1];
            hold.duration = hold.duration.checked_sub(down).ok_or_else(|| {
                Error::value(format!(
                    "ramp-up and ramp-down ({}s) are longer than the duration ({}s)",
                    (duration - hold.duration + down).as_secs_f64(),
                    duration.as_secs_f64()
                ))
            })?;
            shape.stages.push(Stage {
                duration: down,
                target: 0,
            });
        }
        Ok(closed(with_count(shape, self.duration.is_none())))
    }
}

fn delay_shape(shape: &LoadShape, by: Duration) -> LoadShape {
    let mut stages = vec![Stage {
        duration: by,
        target: 0,
    }];
    stages.extend(shape.stages.iter().cloned());
    LoadShape { stages }
}

/// The role of option `key` ([`Role::Other`] for a key that is no option).
pub fn role_of(key: &str) -> Role {
    OPTIONS
        .iter()
        .find(|o| o.key == key)
        .map_or(Role::Other, |o| o.role)
}

/// How load is applied, resolved: what the engine runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Load {
    /// The model and its shape.
    #[serde(flatten)]
    pub model: Model,
    /// Closed model: an iteration starts at most once per this (0: no pacing).
    #[serde(with = "crate::secs", default)]
    pub pacing: Duration,
    /// Closed model: pause after each iteration.
    #[serde(with = "crate::secs", default)]
    pub think_time: Duration,
    /// Connections the VUs share (`None`: one per VU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<u64>,
    /// Open model: how the arrivals are spaced (even when run.json says nothing).
    #[serde(default, skip_serializing_if = "Arrivals::is_even")]
    pub arrivals: Arrivals,
    /// Open model: how a worker waits for its next arrival (sleep when run.json says nothing).
    #[serde(default, skip_serializing_if = "ArrivalWait::is_sleep")]
    pub arrival_wait: ArrivalWait,
}

/// The load model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "lowercase")]
pub enum Model {
    /// A number of virtual users over time, each looping (nGrinder, JMeter, Locust).
    Closed {
        /// VUs over time.
        shape: LoadShape,
    },
    /// Closed, and each VU runs `per_vu` iterations, then stops; the run ends when every VU
    /// has (nGrinder's run count, k6's per-vu-iterations). The shape's length caps it.
    Iterations {
        /// VUs over time.
        shape: LoadShape,
        /// Iterations per VU.
        per_vu: u64,
        /// No length was given: the run ends when the VUs are done, not at a planned time.
        #[serde(default)]
        open_ended: bool,
    },
    /// Arrivals at a rate over time, each carried out by a free VU (k6's arrival-rate
    /// executors, wrk2); latency is measured from each arrival's due time.
    Open {
        /// Arrivals per second over time.
        rate: RateShape,
        /// VUs (connections) that carry out arrivals, created as needed up to this many.
        max_vus: u64,
    },
}

impl Load {
    /// Refuses a load beyond [`limits`] as a whole: a plan longer than
    /// [`limits::MAX_DURATION`], or one that sends nothing. (More shared connections than VUs
    /// is allowed: VUs can be raised live, a capacity search by users grows them, and a
    /// scenario's shared `connections` applies to every population; the bound on connections
    /// keeps the pool's memory bounded.)
    pub fn check(&self) -> Result<(), Error> {
        let length = match &self.model {
            Model::Closed { shape } | Model::Iterations { shape, .. } => shape
                .stages
                .iter()
                .try_fold(Duration::ZERO, |a, s| a.checked_add(s.duration)),
            Model::Open { rate, .. } => rate
                .stages
                .iter()
                .try_fold(Duration::ZERO, |a, s| a.checked_add(s.duration)),
        };
        let open_ended = matches!(
            self.model,
            Model::Iterations {
                open_ended: true,
                ..
            }
        );
        if !open_ended && length.is_none_or(|l| l > limits::MAX_DURATION) {
            return Err(Error::value(
                "the load lasts longer than 7 days, the longest plan volley runs; shorten its duration or stages (e.g. --duration 24h)"
                    .into(),
            ));
        }
        let sends_nothing = match &self.model {
            Model::Closed { shape } | Model::Iterations { shape, .. } => shape.max_vus() == 0,
            Model::Open { rate, .. } => {
                rate.start_rate <= 0.0 && rate.stages.iter().all(|s| s.rate <= 0.0)
            }
        };
        if sends_nothing {
            return Err(Error::value(
                if self.is_open() {
                    "every stage's rate is 0, so the run would send nothing; give a stage with a rate, e.g. --rate-stages 30s:100"
                } else {
                    "no stage has any VUs, so the run would send nothing; give a stage with VUs, e.g. --stages 30s:10"
                }
                .into(),
            ));
        }
        Ok(())
    }

    /// Planned length (for a run count, its cap).
    pub fn duration(&self) -> Duration {
        match &self.model {
            Model::Closed { shape } | Model::Iterations { shape, .. } => shape.duration(),
            Model::Open { rate, .. } => rate.duration(),
        }
    }

    /// The length to show as planned: `None` for a run count that ends when its VUs are done.
    pub fn planned(&self) -> Option<Duration> {
        match &self.model {
            Model::Iterations {
                open_ended: true, ..
            } => None,
            _ => Some(self.duration()),
        }
    }

    /// The most VUs the run may use.
    pub fn max_vus(&self) -> u64 {
        match &self.model {
            Model::Closed { shape } | Model::Iterations { shape, .. } => shape.max_vus(),
            Model::Open { max_vus, .. } => *max_vus,
        }
    }

    /// Whether arrivals are scheduled (open model).
    pub fn is_open(&self) -> bool {
        matches!(self.model, Model::Open { .. })
    }

    /// The closed model's VU shape (`None` for an open model).
    pub fn shape(&self) -> Option<&LoadShape> {
        match &self.model {
            Model::Closed { shape } | Model::Iterations { shape, .. } => Some(shape),
            Model::Open { .. } => None,
        }
    }

    /// Iterations per VU, for a run count.
    pub fn iterations(&self) -> Option<u64> {
        match self.model {
            Model::Iterations { per_vu, .. } => Some(per_vu),
            _ => None,
        }
    }

    /// `closed` or `open`: the word reports use.
    pub fn kind(&self) -> &'static str {
        if self.is_open() { "open" } else { "closed" }
    }

    /// The same load started `by` later, on the clock of a run that starts now: a first
    /// stage of nothing (0 VUs, or no arrivals) for `by`, then this load unchanged. How a
    /// population with a `start` offset runs beside the others, every one on one clock.
    pub fn delayed(&self, by: Duration) -> Load {
        if by.is_zero() {
            return self.clone();
        }
        let model = match &self.model {
            Model::Closed { shape } => Model::Closed {
                shape: delay_shape(shape, by),
            },
            Model::Iterations {
                shape,
                per_vu,
                open_ended,
            } => Model::Iterations {
                shape: delay_shape(shape, by),
                per_vu: *per_vu,
                open_ended: *open_ended,
            },
            Model::Open { rate, max_vus } => {
                let mut stages = vec![
                    RateStage {
                        duration: by,
                        rate: 0.0,
                    },
                    RateStage {
                        duration: Duration::ZERO,
                        rate: rate.start_rate,
                    },
                ];
                stages.extend(rate.stages.iter().copied());
                Model::Open {
                    rate: RateShape {
                        start_rate: 0.0,
                        stages,
                    },
                    max_vus: *max_vus,
                }
            }
        };
        Load {
            model,
            ..self.clone()
        }
    }

    /// The spans in which a closed model's plan holds its VUs steady, in order: `(from s, to s,
    /// VUs)` for each stage whose target is the VUs it starts with (a step-up's
    /// `"0s:5,15s:5,0s:10,15s:10"` holds 5 from 0 to 15 s and 10 from 15 to 30 s); none for an
    /// open model.
    pub fn held_spans(&self) -> Vec<(f64, f64, u64)> {
        let shape = match &self.model {
            Model::Closed { shape } | Model::Iterations { shape, .. } => shape,
            Model::Open { .. } => return Vec::new(),
        };
        let (mut at, mut vus, mut out) = (0.0, 0u64, Vec::new());
        for s in &shape.stages {
            let end = at + s.duration.as_secs_f64();
            if s.target == vus && s.target > 0 && end > at {
                out.push((at, end, vus));
            }
            (at, vus) = (end, s.target);
        }
        out
    }

    /// Stage lengths in order (VU stages, or rate stages), for `--warmup stage:N`.
    pub fn stage_durations(&self) -> Vec<Duration> {
        match &self.model {
            Model::Closed { shape } | Model::Iterations { shape, .. } => {
                shape.stages.iter().map(|s| s.duration).collect()
            }
            Model::Open { rate, .. } => rate.stages.iter().map(|s| s.duration).collect(),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The load options `pairs` set, as a file or the flags set them.
    pub(crate) fn spec(pairs: &[(&str, &str)]) -> LoadSpec {
        let mut s = LoadSpec::default();
        for (k, v) in pairs {
            s.set(k, v).unwrap();
        }
        s
    }

    #[test]
    fn a_step_up_holds_its_levels() {
        let load = spec(&[("stages", "0s:5,15s:5,0s:10,15s:10,30s:40")])
            .resolve()
            .unwrap();
        assert_eq!(load.held_spans(), [(0.0, 15.0, 5), (15.0, 30.0, 10)]);
        let ramp = spec(&[("stages", "1m:50")]).resolve().unwrap();
        assert!(ramp.held_spans().is_empty());
    }

    #[test]
    fn every_option_is_settable_and_listed() {
        for o in OPTIONS {
            let mut s = LoadSpec::default();
            let sample = match o.value_name {
                "N" => "5",
                "DURATION" => "10s",
                "RATE" => "100",
                "PROCESS" => "poisson:3",
                "HOW" => "spin",
                _ if o.key == "stages" => "10s:5",
                _ => "10s:100",
            };
            s.set(o.key, sample)
                .unwrap_or_else(|e| panic!("{}: {e}", o.key));
            assert_eq!(s.given(), vec![o.key]);
        }
        assert!(
            LoadSpec::default()
                .set("users", "5")
                .unwrap_err()
                .to_string()
                .contains("the options are vus, duration")
        );
        assert_eq!(OPTIONS[2].flag(), "--ramp-up");
    }

    #[test]
    fn values_are_checked_where_they_are_parsed() {
        let mut s = LoadSpec::default();
        assert_eq!(
            s.set("vus", "0").unwrap_err().to_string(),
            "must be at least 1"
        );
        assert!(
            s.set("vus", "ten")
                .unwrap_err()
                .to_string()
                .contains("not a whole number")
        );
        assert!(
            s.set("duration", "0s")
                .unwrap_err()
                .to_string()
                .contains("no time at all")
        );
        assert!(s.set("stages", "2m").is_err());
        assert!(
            s.set("rate", "0/s")
                .unwrap_err()
                .to_string()
                .contains("above zero")
        );
    }

    #[test]
    fn resolves_each_model() {
        let closed = spec(&[
            ("vus", "10"),
            ("duration", "30s"),
            ("ramp_up", "10s"),
            ("pacing", "1s"),
        ])
        .resolve()
        .unwrap();
        assert_eq!(
            closed.model,
            Model::Closed {
                shape: LoadShape::constant(10, Duration::from_secs(30), Duration::from_secs(10))
                    .unwrap()
            }
        );
        assert_eq!(closed.pacing, Duration::from_secs(1));
        let open = spec(&[("rate", "500"), ("duration", "1m"), ("max_vus", "50")])
            .resolve()
            .unwrap();
        assert_eq!(
            open.model,
            Model::Open {
                rate: RateShape::constant(500.0, Duration::from_secs(60)),
                max_vus: 50
            }
        );
        let count = spec(&[("vus", "2"), ("iterations", "3")])
            .resolve()
            .unwrap();
        assert_eq!(count.iterations(), Some(3));
        assert_eq!(count.planned(), None);
        assert_eq!(count.duration(), ITERATIONS_CAP);
        let capped = spec(&[("vus", "2"), ("iterations", "3"), ("duration", "10s")])
            .resolve()
            .unwrap();
        assert_eq!(capped.planned(), Some(Duration::from_secs(10)));
        assert!(
            spec(&[("vus", "2")])
                .resolve()
                .unwrap_err()
                .to_string()
                .starts_with("say how long to run")
        );
        assert!(
            spec(&[("rate", "5")])
                .resolve()
                .unwrap_err()
                .to_string()
                .contains("--duration")
        );
        assert!(
            spec(&[("vus", "2"), ("duration", "5s"), ("ramp_up", "10s")])
                .resolve()
                .unwrap_err()
                .to_string()
                .contains("ramp-up")
        );
    }

    #[test]
    fn ramp_down_ends_the_hold_early() {
        let load = spec(&[
            ("vus", "10"),
            ("duration", "30s"),
            ("ramp_up", "10s"),
            ("ramp_down", "5s"),
        ])
        .resolve()
        .unwrap();
        let shape = load.shape().unwrap();
        assert_eq!(shape.duration(), Duration::from_secs(30));
        assert_eq!(shape.vus_at(Duration::from_secs(20)), 10);
        assert_eq!(shape.vus_at(Duration::from_millis(27_500)), 5);
        let e = spec(&[
            ("vus", "10"),
            ("duration", "10s"),
            ("ramp_up", "6s"),
            ("ramp_down", "5s"),
        ])
        .resolve()
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("ramp-up and ramp-down (11s) are longer than the duration (10s)"),
            "{e}"
        );
        assert!(
            !spec(&[("stages", "1m:10"), ("ramp_down", "5s")])
                .conflicts()
                .is_empty()
        );
    }

    #[test]
    fn repeats_are_for_the_caller_and_a_pause_needs_them() {
        let s = spec(&[
            ("vus", "2"),
            ("duration", "5s"),
            ("repeat", "3"),
            ("repeat_pause", "2s"),
        ]);
        assert_eq!(s.repeat().unwrap(), (3, Duration::from_secs(2)));
        assert_eq!(
            s.resolve().unwrap(),
            spec(&[("vus", "2"), ("duration", "5s")]).resolve().unwrap()
        );
        assert_eq!(spec(&[("vus", "2")]).repeat().unwrap(), (1, Duration::ZERO));
        assert!(
            spec(&[("repeat_pause", "2s")])
                .repeat()
                .unwrap_err()
                .to_string()
                .contains("give `repeat` too")
        );
        assert!(LoadSpec::default().set("repeat", "0").is_err());
    }

    #[test]
    fn conflicts_come_from_one_table() {
        let s = spec(&[("vus", "10"), ("rate", "100"), ("duration", "1m")]);
        assert_eq!(
            s.conflicts(),
            vec![Conflict {
                key: "rate",
                other: "vus",
                why: CONFLICTS[0].2
            }]
        );
        assert!(
            s.resolve()
                .unwrap_err()
                .to_string()
                .contains("`vus` cannot be combined with `rate`")
        );
        assert!(
            spec(&[("stages", "1m:10"), ("iterations", "2")])
                .conflicts()
                .is_empty()
        );
    }

    #[test]
    fn command_line_over_file() {
        let file = spec(&[
            ("vus", "10"),
            ("duration", "1m"),
            ("pacing", "1s"),
            ("max_vus", "7"),
        ]);
        // No shape on the command line: the file's shape, the command line's other options.
        let m = spec(&[("think_time", "2s")]).merge(&file);
        assert_eq!(
            m,
            spec(&[
                ("vus", "10"),
                ("duration", "1m"),
                ("pacing", "1s"),
                ("max_vus", "7"),
                ("think_time", "2s")
            ])
        );
        // A shape on the command line replaces the file's whole shape.
        let m = spec(&[("stages", "10s:5")]).merge(&file);
        assert_eq!(
            m,
            spec(&[("stages", "10s:5"), ("pacing", "1s"), ("max_vus", "7")])
        );
        // An open model drops the file's closed-model timings.
        let m = spec(&[("rate", "100"), ("duration", "10s")]).merge(&file);
        assert_eq!(
            m,
            spec(&[("rate", "100"), ("duration", "10s"), ("max_vus", "7")])
        );
        assert!(m.resolve().is_ok());
    }

    #[test]
    fn a_delayed_load_is_nothing_then_the_same() {
        let by = Duration::from_secs(5);
        let closed = spec(&[("stages", "10s:50,10s:50")]).resolve().unwrap();
        let d = closed.delayed(by);
        assert_eq!(d.duration(), Duration::from_secs(25));
        let (a, b) = (closed.shape().unwrap(), d.shape().unwrap());
        assert_eq!(b.vus_at(Duration::from_secs(4)), 0);
        for s in [0u64, 3, 7, 12, 19] {
            assert_eq!(
                b.vus_at(by + Duration::from_secs(s)),
                a.vus_at(Duration::from_secs(s)),
                "{s}"
            );
        }
        let open = spec(&[("rate", "300"), ("duration", "10s")])
            .resolve()
            .unwrap();
        let Model::Open { rate: r, .. } = &open.model else {
            panic!()
        };
        let d = open.delayed(by);
        let Model::Open { rate: dr, .. } = &d.model else {
            panic!()
        };
        assert_eq!(dr.rate_at(Duration::from_secs(4)), 0.0);
        assert_eq!(dr.rate_at(Duration::from_secs(7)), 300.0);
        assert!((dr.total_arrivals() - r.total_arrivals()).abs() < 1e-9);
        // Every arrival is due exactly `by` later.
        for n in [0u64, 1, 299, 2999] {
            assert_eq!(dr.due(n).unwrap(), r.due(n).unwrap() + by, "{n}");
        }
        assert_eq!(dr.due(3000), None);
        assert_eq!(open.delayed(Duration::ZERO), open);
    }

    #[test]
    fn loads_round_trip_through_json() {
        for load in [
            spec(&[("stages", "0s:50,4m:50"), ("pacing", "1s")])
                .resolve()
                .unwrap(),
            spec(&[("vus", "3"), ("iterations", "4")])
                .resolve()
                .unwrap(),
            spec(&[("rate_stages", "1m:100,5m:300"), ("max_vus", "9")])
                .resolve()
                .unwrap(),
        ] {
            let json = serde_json::to_string(&load).unwrap();
            assert_eq!(serde_json::from_str::<Load>(&json).unwrap(), load, "{json}");
        }
        // run.json files written before run counts had a model of their own still read.
        let old = r#"{"model":"closed","shape":{"stages":[{"duration":10.0,"target":5}]}}"#;
        assert_eq!(serde_json::from_str::<Load>(old).unwrap().max_vus(), 5);
    }
}
