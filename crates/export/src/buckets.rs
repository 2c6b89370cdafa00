//! The one bucket layout every exported latency histogram uses, and the folding of volley's
//! HdrHistograms into it.
//!
//! Prometheus' classic histograms need the same `le` bounds on every series that is summed,
//! so the layout is fixed: 10 bounds a decade (1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8) from
//! 100 µs to 60 s, then `+Inf` — at most 33 % wide, so `histogram_quantile` lands within one
//! bucket of the exact figure, at 60 series per histogram and label set.

use hdrhistogram::Histogram;

/// How many finite bounds there are.
pub const FINITE: usize = 59;

/// The finite upper bounds, µs, ascending.
pub const BOUNDS_US: [u64; FINITE] = bounds();

const fn bounds() -> [u64; FINITE] {
    const MANTISSA: [u64; 10] = [100, 125, 150, 200, 250, 300, 400, 500, 600, 800];
    let mut out = [0u64; FINITE];
    let mut i = 0;
    let mut scale = 1u64;
    while i < FINITE {
        let mut m = 0;
        while m < MANTISSA.len() && i < FINITE {
            out[i] = MANTISSA[m] * scale;
            i += 1;
            m += 1;
        }
        scale *= 10;
    }
    out
}

/// The `le` label of bucket `i` (`+Inf` for the last), in seconds as Prometheus writes them.
pub fn le(i: usize) -> String {
    match BOUNDS_US.get(i) {
        Some(us) => format!("{}", *us as f64 / 1e6),
        None => "+Inf".to_string(),
    }
}

/// Which bucket a latency of `us` falls in (`FINITE` for `+Inf`).
pub fn index_of(us: u64) -> usize {
    BOUNDS_US.partition_point(|&b| b < us)
}

/// Per-bucket counts (not cumulative), the last for `+Inf`.
pub type Counts = [u64; FINITE + 1];

/// Adds the values of `h` (µs) to `counts`. A value counts in the bucket of the highest
/// value its HdrHistogram bucket stands for, as volley's own percentiles report it.
pub fn fold(h: &Histogram<u64>, counts: &mut Counts) {
    for v in h.iter_recorded() {
        counts[index_of(h.highest_equivalent(v.value_iterated_to()))] += v.count_at_value();
    }
}

/// Cumulative counts, as `_bucket{le=..}` series carry them.
pub fn cumulative(counts: &Counts) -> Counts {
    let mut out = *counts;
    for i in 1..out.len() {
        out[i] += out[i - 1];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_runs_from_100us_to_60s_at_most_a_third_wide() {
        assert_eq!(BOUNDS_US[0], 100);
        assert_eq!(BOUNDS_US[FINITE - 1], 60_000_000);
        for w in BOUNDS_US.windows(2) {
            assert!(w[1] > w[0] && w[1] as f64 / w[0] as f64 <= 1.34, "{w:?}");
        }
        assert_eq!(le(0), "0.0001");
        assert_eq!(le(1), "0.000125");
        assert_eq!(le(FINITE), "+Inf");
    }

    #[test]
    fn values_fold_into_the_bucket_that_holds_them() {
        let mut h = volley_stats::new_histogram();
        h.record_n(100, 2).unwrap();
        h.record_n(101, 1).unwrap();
        h.record_n(5_000_000_000, 1).unwrap();
        let mut c = [0; FINITE + 1];
        fold(&h, &mut c);
        assert_eq!((c[0], c[1], c[FINITE]), (2, 1, 1));
        assert_eq!(cumulative(&c)[FINITE], 4);
    }
}
