//! Per-request latency figures from HdrHistograms (values in microseconds).

use hdrhistogram::Histogram;
use serde::Serialize;

/// Highest value a latency histogram tracks exactly: one hour, in µs.
pub const MAX_TRACKED_US: u64 = 3_600_000_000;

/// A latency histogram in µs with 3 significant digits, the precision every run uses so
/// that histograms from any interval, worker or machine merge losslessly.
///
/// It starts covering 10 ms and grows as larger values arrive (HdrHistogram's auto-resize):
/// a histogram covering the whole hour up front is ~190 KB, and a run keeps two per interval,
/// worker and scenario step. Record through [`record_us`], which keeps values in 1 µs – 1 h.
pub fn new_histogram() -> Histogram<u64> {
    let mut h =
        Histogram::new_with_bounds(1, INITIAL_TRACKED_US, 3).expect("static bounds are valid");
    h.auto(true);
    h
}

/// What a new histogram covers before it grows, µs.
const INITIAL_TRACKED_US: u64 = 10_000;

/// Records `count` latencies of `us` µs, clamped to 1 µs – 1 h.
pub fn record_us(h: &mut Histogram<u64>, us: u64, count: u64) {
    // Cannot fail: the value is in range and the histogram grows as needed.
    let _ = h.record_n(us.clamp(1, MAX_TRACKED_US), count);
}

/// The percentiles a report shows, in the order it shows them.
pub const REPORTED_PERCENTILES: [f64; 6] = [50.0, 90.0, 95.0, 99.0, 99.9, 99.99];

/// Per-request latency figures in milliseconds.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LatencySummary {
    /// Requests counted.
    pub count: u64,
    /// Fastest, ms.
    pub min_ms: f64,
    /// Arithmetic mean, ms.
    pub mean_ms: f64,
    /// Median, ms.
    pub p50_ms: f64,
    /// 90th percentile, ms.
    pub p90_ms: f64,
    /// 95th percentile, ms.
    pub p95_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// 99.9th percentile, ms.
    pub p99_9_ms: f64,
    /// 99.99th percentile, ms.
    pub p99_99_ms: f64,
    /// Slowest, ms.
    pub max_ms: f64,
}

impl LatencySummary {
    /// Summarises a µs histogram; `None` when it is empty.
    pub fn from_histogram(h: &Histogram<u64>) -> Option<Self> {
        if h.is_empty() {
            return None;
        }
        let ms = |us: u64| us as f64 / 1000.0;
        let [p50, p90, p95, p99, p99_9, p99_99] =
            crate::rank::in_histogram(h, REPORTED_PERCENTILES).map(ms);
        Some(LatencySummary {
            count: h.len(),
            min_ms: ms(h.min()),
            mean_ms: h.mean() / 1000.0,
            p50_ms: p50,
            p90_ms: p90,
            p95_ms: p95,
            p99_ms: p99,
            p99_9_ms: p99_9,
            p99_99_ms: p99_99,
            max_ms: ms(h.max()),
        })
    }

    /// `(label, value)` pairs in display order.
    pub fn rows(&self) -> [(&'static str, f64); 9] {
        [
            ("min", self.min_ms),
            ("mean", self.mean_ms),
            ("p50", self.p50_ms),
            ("p90", self.p90_ms),
            ("p95", self.p95_ms),
            ("p99", self.p99_ms),
            ("p99.9", self.p99_9_ms),
            ("p99.99", self.p99_99_ms),
            ("max", self.max_ms),
        ]
    }
}

/// A histogram kept as its non-empty buckets only: (highest equivalent value, count).
///
/// A dense 3-digit histogram spanning 1 µs to an hour holds ~23,000 counters (~190 KB);
/// one interval of real traffic fills a few hundred. Runs keep one per interval and
/// metric, so they are kept compact and made dense only to merge.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompactHistogram {
    /// (value, count), ascending by value.
    pub entries: Vec<(u64, u64)>,
}

impl CompactHistogram {
    /// The non-empty buckets of `h`.
    pub fn from_histogram(h: &Histogram<u64>) -> Self {
        CompactHistogram {
            entries: h
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect(),
        }
    }

    /// Adds every count into `h` (which must use [`new_histogram`]'s precision).
    pub fn add_to(&self, h: &mut Histogram<u64>) {
        for &(v, c) in &self.entries {
            record_us(h, v, c);
        }
    }

    /// Number of values recorded.
    pub fn len(&self) -> u64 {
        self.entries.iter().map(|e| e.1).sum()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The value at percentile `p` (0–100), µs, as HdrHistogram's `getValueAtPercentile`
    /// reads the histogram these entries came from ([`crate::rank`]); 0 when empty.
    pub fn value_at_percentile(&self, p: f64) -> u64 {
        if self.is_empty() {
            return 0;
        }
        let [v] = crate::rank::in_buckets(self.entries.iter().copied(), self.len(), [p]);
        crate::rank::lowest_at_zero(p, v, |v| SHAPE.with(|s| s.lowest_equivalent(v)))
    }

    /// Adds `values` (µs, clamped as [`record_us`] clamps them): the same entries as adding
    /// them and these into a histogram and compacting it, without a histogram per call. The
    /// values are counted by bucket in a scratch array kept per thread, only the buckets they
    /// fill are read back (at their top value, as the histogram's iteration reports it) and
    /// cleared, and the counts are merged into the entries. A histogram's counts array is as
    /// long as the largest value's bucket index, so clearing and walking it for every interval
    /// cost more than the values themselves.
    pub fn add_values(&mut self, values: &[u64]) {
        if values.is_empty() {
            return;
        }
        let mut runs = Vec::new();
        SCRATCH.with_borrow_mut(|(counts, touched)| {
            for &v in values {
                let v = v.clamp(1, MAX_TRACKED_US);
                let i = bucket_index(v);
                if counts[i] == 0 {
                    touched.push((i, v));
                }
                counts[i] += 1;
            }
            touched.sort_unstable_by_key(|&(i, _)| i);
            SHAPE.with(|shape| {
                for &(i, v) in touched.iter() {
                    runs.push((shape.highest_equivalent(v), counts[i]));
                    counts[i] = 0;
                }
            });
            touched.clear();
        });
        self.entries = merge_entries(&self.entries, &runs);
    }

    /// This histogram's and `other`'s counts together.
    pub fn merged(&self, other: &CompactHistogram) -> CompactHistogram {
        CompactHistogram {
            entries: merge_entries(&self.entries, &other.entries),
        }
    }

    /// Merges `items` into one dense histogram.
    pub fn merge_all<'a>(items: impl IntoIterator<Item = &'a CompactHistogram>) -> Histogram<u64> {
        let mut h = new_histogram();
        for c in items {
            c.add_to(&mut h);
        }
        h
    }
}

thread_local! {
    /// A histogram of the shared precision, for its bucket arithmetic only.
    static SHAPE: Histogram<u64> = new_histogram();
    /// Counts by bucket index (every one 0 between calls) and the buckets a call touched, with
    /// a value of each.
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new((vec![0; bucket_index(MAX_TRACKED_US) + 1], Vec::new()));
}

/// Counts by bucket index, and the (bucket, a value in it) pairs touched.
type Scratch = (Vec<u64>, Vec<(usize, u64)>);

/// The bucket of `v` (1 ≤ v ≤ [`MAX_TRACKED_US`]) in [`new_histogram`]'s layout, as
/// HdrHistogram numbers them: 3 significant digits make 2,048 sub-buckets (half of them new in
/// each bucket after the first), and a lowest value of 1 makes the unit 1.
const fn bucket_index(v: u64) -> usize {
    const HALF_MAGNITUDE: u32 = 10;
    const SUB_BUCKET_MASK: u64 = (1 << (HALF_MAGNITUDE + 1)) - 1;
    let bucket = 64 - HALF_MAGNITUDE - 1 - (v | SUB_BUCKET_MASK).leading_zeros();
    let sub_bucket = v >> bucket;
    (((bucket + 1) as u64) << HALF_MAGNITUDE) as usize + sub_bucket as usize - (1 << HALF_MAGNITUDE)
}

/// Two lists of (value, count), ascending by value, as one: counts of equal values added.
fn merge_entries(a: &[(u64, u64)], b: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let ((va, ca), (vb, cb)) = (a[i], b[j]);
        if va < vb {
            out.push((va, ca));
            i += 1;
        } else if vb < va {
            out.push((vb, cb));
            j += 1;
        } else {
            out.push((va, ca + cb));
            i += 1;
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_merges_give_what_a_histogram_gives() {
        let mut rng = fastrand::Rng::with_seed(11);
        for round in 0..300 {
            let draw = |rng: &mut fastrand::Rng| -> Vec<u64> {
                let n = rng.usize(0..3000);
                (0..n)
                    .map(|_| match rng.u8(0..10) {
                        0 => 0,
                        1 => rng.u64(..),
                        2 => rng.u64(0..100),
                        3 => MAX_TRACKED_US + rng.u64(0..10),
                        _ => {
                            let top = 1u64 << rng.u32(1..34);
                            rng.u64(1..top)
                        }
                    })
                    .collect()
            };
            let (first, second) = (draw(&mut rng), draw(&mut rng));
            let mut h = new_histogram();
            for &v in &first {
                record_us(&mut h, v, 1);
            }
            let by_histogram = CompactHistogram::from_histogram(&h);
            for &v in &second {
                record_us(&mut h, v, 1);
            }
            let both = CompactHistogram::from_histogram(&h);
            let mut compact = CompactHistogram::default();
            compact.add_values(&first);
            assert_eq!(compact.entries, by_histogram.entries, "round {round}");
            let mut grown = compact.clone();
            grown.add_values(&second);
            assert_eq!(grown.entries, both.entries, "round {round}");
            let mut other = CompactHistogram::default();
            other.add_values(&second);
            assert_eq!(
                compact.merged(&other).entries,
                both.entries,
                "round {round}"
            );
        }
    }

    #[test]
    fn histograms_start_small_grow_and_merge() {
        let mut small = new_histogram();
        let empty_len = small.distinct_values();
        record_us(&mut small, 500, 1);
        let mut big = new_histogram();
        record_us(&mut big, 7_200_000_000, 1); // two hours: kept as one hour
        record_us(&mut big, 0, 1); // zero: kept as 1 µs
        assert!(big.distinct_values() > empty_len, "it grew");
        assert_eq!(big.max(), big.highest_equivalent(MAX_TRACKED_US));
        assert_eq!(big.min(), 1);
        small
            .add(&big)
            .expect("a small histogram takes a bigger one's counts");
        assert_eq!(small.len(), 3);
        assert_eq!(small.value_at_quantile(0.5), small.highest_equivalent(500));
    }

    #[test]
    fn summary_of_uniform_values() {
        let mut h = new_histogram();
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap();
        }
        let s = LatencySummary::from_histogram(&h).unwrap();
        assert_eq!(s.count, 1000);
        assert!((s.p50_ms - 500.0).abs() <= 0.5, "{}", s.p50_ms);
        assert!((s.p99_ms - 990.0).abs() <= 1.0, "{}", s.p99_ms);
        assert!((s.max_ms - 1000.0).abs() <= 1.0);
        assert!(LatencySummary::from_histogram(&new_histogram()).is_none());
    }

    #[test]
    fn compact_round_trip_is_lossless() {
        let mut h = new_histogram();
        for v in [1u64, 5, 5, 1234, 98_765, 4_000_000] {
            h.record(v).unwrap();
        }
        let c = CompactHistogram::from_histogram(&h);
        assert_eq!(c.entries.len(), 5);
        assert_eq!(c.len(), 6);
        let back = CompactHistogram::merge_all([&c, &c]);
        assert_eq!(back.len(), 12);
        assert_eq!(back.value_at_percentile(50.0), h.value_at_percentile(50.0));
        assert_eq!(back.max(), h.max());
    }
}
