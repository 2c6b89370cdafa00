//! Execution segments: one process's exact share of a plan, computed from `i/N` alone.
//!
//! Several volley processes (pods of a Kubernetes Indexed Job, a CI matrix, hosts over SSH)
//! each run segment `i` of `N` of the same plan. As in k6's execution segments
//! (`lib/execution_segment.go`: an `ExecutionSegmentSequence` whose segments take striped
//! shares), every countable thing of the plan is numbered 0, 1, 2, … and thing `k` belongs
//! to segment `k mod N`: k6's striping, for a sequence of `N` equal segments, is exactly
//! this round robin. So, with no coordination between the processes:
//!
//! - VUs: global VU `g` runs in segment `g mod N`. When the plan asks for `T` VUs, segment
//!   `i` runs those of its VUs below `T`: [`Segment::share`]`(T)` of them, and the shares of
//!   all segments add up to `T` at every instant, through every ramp.
//! - Arrivals (open model): arrival `k` of the single-process schedule is sent by segment
//!   `k mod N`, at the same due time; the union of all segments' arrivals is the schedule.
//! - Run counts (`iterations` per VU) follow the VUs, so they add up too.
//! - Shared CSV rows: row `r` belongs to segment `r mod N` ([`crate::data::Feeder`]).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::Error;
use crate::load::{Load, Model};

/// Segment `index` of `count` (0-based: `0/4` … `3/4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Segment {
    /// Which one, `0 ≤ index < count`.
    pub index: u64,
    /// How many segments the plan is split into, at least 1.
    pub count: u64,
}

impl Segment {
    /// The whole plan in one process.
    pub const WHOLE: Segment = Segment { index: 0, count: 1 };

    /// Segment `index` of `count`, checked.
    pub fn new(index: u64, count: u64) -> Result<Segment, Error> {
        if count == 0 {
            return Err(Error::value("a plan is split into at least 1 segment: write the segment as i/N with N ≥ 1, like 0/4".into()));
        }
        if index >= count {
            return Err(Error::value(format!(
                "segment {index}/{count} does not exist: segments are numbered from 0, so of {count} they are 0/{count} … {}/{count}",
                count - 1
            )));
        }
        Ok(Segment { index, count })
    }

    /// Whether this is the whole plan.
    pub fn is_whole(self) -> bool {
        self.count == 1
    }

    /// How many of the things numbered `0..total` belong to this segment: those `k < total`
    /// with `k mod N = i`. Over all segments these add up to `total` for every `total`.
    pub fn share(self, total: u64) -> u64 {
        if total <= self.index {
            0
        } else {
            (total - self.index - 1) / self.count + 1
        }
    }

    /// The global number of this segment's `local`-th thing (VU, arrival, row).
    pub fn global(self, local: u64) -> u64 {
        local * self.count + self.index
    }

    /// Whether thing `k` belongs to this segment.
    pub fn owns(self, k: u64) -> bool {
        k % self.count == self.index
    }

    /// Checks that this segment has something to do under `load`: a closed model whose VUs
    /// are fewer than the segments would leave some segment without any VU at all, and an
    /// open model with fewer VUs (`max_vus`) than segments some segment without a VU to send
    /// its arrivals.
    pub fn check(self, load: &Load) -> Result<(), Error> {
        let (vus, what) = match &load.model {
            Model::Closed { shape } | Model::Iterations { shape, .. } => (shape.max_vus(), "VUs"),
            Model::Open { max_vus, .. } => (*max_vus, "max_vus (the VUs that send the arrivals)"),
        };
        if vus < self.count {
            // VU g runs in segment g mod N: the segments from `vus` on get none, whichever
            // one this process runs.
            let n = self.count;
            let none = if vus + 1 == n {
                format!("segment {vus}/{n} would run none")
            } else {
                format!("segments {vus}/{n} to {}/{n} would run none", n - 1)
            };
            return Err(Error::value(format!(
                "{n} segments cannot share {vus} {what}: {none}; use at most {vus} segments, or raise the VUs to at least {n}"
            )));
        }
        Ok(())
    }
}

impl fmt::Display for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Segment {
    type Err = Error;

    /// `i/N`, 0-based: `0/4`.
    fn from_str(s: &str) -> Result<Segment, Error> {
        let bad = || {
            Error::value(format!(
                "segment `{s}`: write it as i/N, the 0-based index of this process and the number of processes, like 0/4"
            ))
        };
        let (i, n) = s.trim().split_once('/').ok_or_else(bad)?;
        let i: u64 = i.trim().parse().map_err(|_| bad())?;
        let n: u64 = n.trim().parse().map_err(|_| bad())?;
        Segment::new(i, n)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::rate::RateShape;
    use crate::stages::{LoadShape, parse_stages};

    #[test]
    fn parses_and_refuses() {
        assert_eq!(
            "2/4".parse::<Segment>().unwrap(),
            Segment { index: 2, count: 4 }
        );
        assert_eq!(" 0 / 1 ".parse::<Segment>().unwrap(), Segment::WHOLE);
        assert!(
            "3/2"
                .parse::<Segment>()
                .unwrap_err()
                .to_string()
                .contains("0/2 … 1/2")
        );
        assert!(
            "4/4"
                .parse::<Segment>()
                .unwrap_err()
                .to_string()
                .contains("numbered from 0")
        );
        assert!(
            "0/0"
                .parse::<Segment>()
                .unwrap_err()
                .to_string()
                .contains("at least 1")
        );
        for bad in ["2", "a/4", "1/b", "-1/4", "1/4/5", ""] {
            assert!(
                bad.parse::<Segment>()
                    .unwrap_err()
                    .to_string()
                    .contains("write it as i/N"),
                "{bad}"
            );
        }
        assert_eq!(Segment { index: 1, count: 3 }.to_string(), "1/3");
    }

    /// Every split of every count adds up, and each thing lands in exactly one segment.
    #[test]
    fn shares_add_up_for_every_count_and_split() {
        for n in 1..=40u64 {
            let segs: Vec<Segment> = (0..n).map(|i| Segment::new(i, n).unwrap()).collect();
            for total in 0..=500u64 {
                let sum: u64 = segs.iter().map(|s| s.share(total)).sum();
                assert_eq!(sum, total, "{total} over {n}");
                // Whole VUs, as even as can be: no two shares differ by more than one.
                let (lo, hi) = (
                    segs.iter().map(|s| s.share(total)).min().unwrap(),
                    segs.iter().map(|s| s.share(total)).max().unwrap(),
                );
                assert!(hi - lo <= 1, "{total} over {n}: {lo}..{hi}");
            }
            for k in 0..300u64 {
                assert_eq!(segs.iter().filter(|s| s.owns(k)).count(), 1);
                let owner = segs.iter().find(|s| s.owns(k)).unwrap();
                // The owner's local numbering maps back to k.
                assert_eq!(owner.global(owner.share(k)), k);
            }
        }
    }

    /// Through ramps up and down, at every millisecond, the segments' VUs add up to the plan's.
    #[test]
    fn stage_shares_add_up_at_every_moment() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        for _ in 0..60 {
            let stages: Vec<String> = (0..1 + rnd(4))
                .map(|_| format!("{}ms:{}", 1 + rnd(900), rnd(70)))
                .collect();
            let shape = LoadShape {
                stages: parse_stages(&stages.join(",")).unwrap(),
            };
            let n = 1 + rnd(12);
            for ms in (0..shape.duration().as_millis() as u64 + 5).step_by(7) {
                let t = Duration::from_millis(ms);
                let whole = shape.vus_at(t);
                let sum: u64 = (0..n)
                    .map(|i| Segment::new(i, n).unwrap().share(whole))
                    .sum();
                assert_eq!(sum, whole, "{stages:?} over {n} at {ms} ms");
            }
        }
    }

    /// Open model: the segments' arrivals, put together, are the single-process schedule.
    #[test]
    fn arrival_shares_rebuild_the_schedule() {
        let rate = RateShape::parse("300ms:2000,200ms:2000,300ms:500").unwrap();
        let whole: Vec<Duration> = (0..).map_while(|k| rate.due(k)).collect();
        for n in [1, 2, 3, 4, 7, 16] {
            let mut union: Vec<(u64, Duration)> = Vec::new();
            for i in 0..n {
                let seg = Segment::new(i, n).unwrap();
                let mine: Vec<(u64, Duration)> = (0..)
                    .map(|l| seg.global(l))
                    .map_while(|k| rate.due(k).map(|d| (k, d)))
                    .collect();
                assert_eq!(mine.len() as u64, seg.share(whole.len() as u64));
                union.extend(mine);
            }
            union.sort();
            assert_eq!(
                union.iter().map(|u| u.1).collect::<Vec<_>>(),
                whole,
                "{n} segments"
            );
        }
    }

    #[test]
    fn too_many_segments_for_the_vus_is_an_error() {
        let closed = Load {
            model: Model::Closed {
                shape: LoadShape::constant(3, Duration::from_secs(1), Duration::ZERO).unwrap(),
            },
            pacing: Duration::ZERO,
            think_time: Duration::ZERO,
            connections: None,
            arrivals: Default::default(),
            arrival_wait: Default::default(),
        };
        assert!(Segment::new(3, 3).is_err());
        assert!(Segment::new(2, 3).unwrap().check(&closed).is_ok());
        // Segment 0/4 runs a VU; the one that would run none is named, whichever runs here.
        for i in 0..4 {
            assert_eq!(
                Segment::new(i, 4)
                    .unwrap()
                    .check(&closed)
                    .unwrap_err()
                    .to_string(),
                "4 segments cannot share 3 VUs: segment 3/4 would run none; use at most 3 segments, or raise the VUs to at least 4"
            );
        }
        let e = Segment::new(0, 8)
            .unwrap()
            .check(&closed)
            .unwrap_err()
            .to_string();
        assert!(e.contains(": segments 3/8 to 7/8 would run none;"), "{e}");
        let open = Load {
            model: Model::Open {
                rate: RateShape::constant(10.0, Duration::from_secs(1)),
                max_vus: 2,
            },
            pacing: Duration::ZERO,
            think_time: Duration::ZERO,
            connections: None,
            arrivals: Default::default(),
            arrival_wait: Default::default(),
        };
        assert!(
            Segment::new(1, 3)
                .unwrap()
                .check(&open)
                .unwrap_err()
                .to_string()
                .contains("max_vus")
        );
        // Run counts follow the VUs: 5 VUs × 7 iterations over 3 segments is 2+2+1 VUs.
        let total: u64 = (0..3)
            .map(|i| Segment::new(i, 3).unwrap().share(5) * 7)
            .sum();
        assert_eq!(total, 35);
    }
}
