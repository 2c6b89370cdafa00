//! Latencies recorded in one interval: the first few kept as values, more in an HdrHistogram.
//!
//! A 3-digit HdrHistogram costs 40 KB from its first value (it starts covering 10 ms), and
//! a run keeps two per interval, worker and scenario step, most of them holding a handful of
//! values or none: a 10,000-step scenario at one VU peaked at 5 GB. Up to [`FEW`] values are
//! kept as a list instead (a few hundred bytes at most), and the histogram is made when
//! they are more, or when one is asked for. Either way the histogram is the one recording
//! the values directly would have made, bucket for bucket.

use std::borrow::Cow;
use std::sync::LazyLock;

use hdrhistogram::Histogram;

use crate::latency::{MAX_TRACKED_US, new_histogram, record_us};

/// Values kept as a list before a histogram is made.
pub const FEW: usize = 32;

/// Latencies in µs, clamped to 1 µs – 1 h as [`record_us`] clamps them.
#[derive(Debug, Clone, Default)]
pub struct Latencies(Repr);

#[derive(Debug, Clone)]
enum Repr {
    Few(Vec<u64>),
    Many(Box<Histogram<u64>>),
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Few(Vec::new())
    }
}

/// What an empty `Latencies` shows as a histogram (written to interval logs as it is).
static EMPTY: LazyLock<Histogram<u64>> = LazyLock::new(new_histogram);

impl Latencies {
    /// None yet; allocates nothing.
    pub fn new() -> Self {
        Latencies::default()
    }

    /// The latencies of `h` (a histogram of [`new_histogram`]'s precision, as run
    /// directories log them), bucket for bucket.
    pub fn from_histogram(h: Histogram<u64>) -> Self {
        if h.is_empty() {
            Latencies::new()
        } else {
            Latencies(Repr::Many(Box::new(h)))
        }
    }

    /// Records one latency, µs.
    pub fn record(&mut self, us: u64) {
        match &mut self.0 {
            Repr::Few(values) if values.len() < FEW => values.push(us),
            Repr::Few(_) => {
                let mut h = self.to_histogram();
                record_us(&mut h, us, 1);
                self.0 = Repr::Many(Box::new(h));
            }
            Repr::Many(h) => record_us(h, us, 1),
        }
    }

    /// Adds another's latencies.
    pub fn add(&mut self, other: &Latencies) {
        match (&mut self.0, &other.0) {
            (_, Repr::Few(values)) => {
                for v in values {
                    self.record(*v);
                }
            }
            (Repr::Many(h), Repr::Many(o)) => {
                // Both grow as needed, so adding cannot fail.
                let _ = h.add(o.as_ref());
            }
            (Repr::Few(_), Repr::Many(o)) => {
                let mut h = o.as_ref().clone();
                if let Repr::Few(values) = &self.0 {
                    for v in values {
                        record_us(&mut h, *v, 1);
                    }
                }
                self.0 = Repr::Many(Box::new(h));
            }
        }
    }

    /// How many were recorded.
    pub fn len(&self) -> u64 {
        match &self.0 {
            Repr::Few(values) => values.len() as u64,
            Repr::Many(h) => h.len(),
        }
    }

    /// Whether none was.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// As an HdrHistogram ([`new_histogram`]'s precision): borrowed when there is one,
    /// made for the few values otherwise.
    pub fn histogram(&self) -> Cow<'_, Histogram<u64>> {
        match &self.0 {
            Repr::Few(values) if values.is_empty() => Cow::Borrowed(&*EMPTY),
            Repr::Few(_) => Cow::Owned(self.to_histogram()),
            Repr::Many(h) => Cow::Borrowed(h.as_ref()),
        }
    }

    /// The value at percentile `p` (0–100), µs, as HdrHistogram's `getValueAtPercentile` reads
    /// the histogram ([`crate::rank`]); 0 when empty. A few values are ranked as a list, without
    /// making their histogram.
    pub fn value_at_percentile(&self, p: f64) -> u64 {
        match &self.0 {
            Repr::Few(values) => {
                let mut sorted: Vec<u64> =
                    values.iter().map(|&v| v.clamp(1, MAX_TRACKED_US)).collect();
                sorted.sort_unstable();
                let buckets = sorted.iter().map(|&v| (EMPTY.highest_equivalent(v), 1));
                let [v] = crate::rank::in_buckets(buckets, sorted.len() as u64, [p]);
                crate::rank::lowest_at_zero(p, v, |v| EMPTY.lowest_equivalent(v))
            }
            Repr::Many(h) => crate::rank::value_at_percentile(h, p),
        }
    }

    /// The largest, as the histogram gives it, µs; 0 when empty.
    pub fn max(&self) -> u64 {
        self.histogram().max()
    }

    fn to_histogram(&self) -> Histogram<u64> {
        let mut h = new_histogram();
        if let Repr::Few(values) = &self.0 {
            for v in values {
                record_us(&mut h, *v, 1);
            }
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn direct(values: &[u64]) -> Histogram<u64> {
        let mut h = new_histogram();
        for v in values {
            record_us(&mut h, *v, 1);
        }
        h
    }

    #[test]
    fn few_or_many_the_histogram_is_the_same() {
        let mut r = fastrand::Rng::with_seed(7);
        for n in [0, 1, FEW - 1, FEW, FEW + 1, 5 * FEW] {
            let values: Vec<u64> = (0..n).map(|_| r.u64(0..10_000_000_000)).collect();
            let mut l = Latencies::new();
            for v in &values {
                l.record(*v);
            }
            assert_eq!(*l.histogram(), direct(&values), "{n} values");
            assert_eq!(l.len(), n as u64);
            for p in [0.0, 50.0, 99.0, 99.9, 100.0] {
                assert_eq!(
                    l.value_at_percentile(p),
                    crate::rank::value_at_percentile(&direct(&values), p),
                    "p{p} of {n} values"
                );
            }
        }
    }

    #[test]
    fn adding_any_two_is_adding_their_values() {
        let mut r = fastrand::Rng::with_seed(9);
        for (a, b) in [
            (0, 0),
            (3, 4),
            (FEW, 1),
            (2, 3 * FEW),
            (3 * FEW, 2),
            (2 * FEW, 2 * FEW),
        ] {
            let va: Vec<u64> = (0..a).map(|_| r.u64(1..100_000)).collect();
            let vb: Vec<u64> = (0..b).map(|_| r.u64(1..100_000)).collect();
            let (mut la, mut lb) = (Latencies::new(), Latencies::new());
            va.iter().for_each(|v| la.record(*v));
            vb.iter().for_each(|v| lb.record(*v));
            la.add(&lb);
            let all: Vec<u64> = va.iter().chain(&vb).copied().collect();
            assert_eq!(*la.histogram(), direct(&all), "{a} + {b}");
        }
    }

    #[test]
    fn an_empty_one_costs_nothing() {
        assert_eq!(std::mem::size_of::<Latencies>(), 24);
        assert!(Latencies::new().histogram().is_empty());
    }
}
