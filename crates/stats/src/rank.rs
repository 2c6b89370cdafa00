//! Which recorded latency a percentile is: HdrHistogram's rule, the one every per-request
//! percentile volley shows is read by (report, compact histograms, series.csv, charts, the
//! live page, progress lines, the early stop, the comparison's bootstrap).
//!
//! Java HdrHistogram 2.2.2's `AbstractHistogram.getValueAtPercentile(p)`:
//!
//! ```text
//! requestedPercentile = min(max(nextAfter(p, -inf), 0), 100)
//! countAtPercentile   = max(1, (long) ceil(requestedPercentile * totalCount / 100))
//! ```
//!
//! then the value of the first bucket at which the running count reaches `countAtPercentile`
//! (the bucket's highest equivalent value; its lowest when `p` is exactly 0). The step back of
//! one ulp matters: 99.9 / 100 is 0.9990000000000001 in floating point, so without it
//! p99.9 of 5,000 values is the 4,996th instead of the 4,995th (the Rust `hdrhistogram`
//! crate's `value_at_quantile` takes that extra rank at such counts). Python's
//! `hdrh` rounds the count to the nearest instead of up, and so agrees with this only when the
//! fraction of `p·N/100` is 0 or at least ½.

use hdrhistogram::Histogram;

/// How many of `total` values percentile `p` (0–100) reaches: the 1-based rank of the value it
/// reads, HdrHistogram's `countAtPercentile`. At least 1 (an empty set's is 1 too, and reaches
/// nothing); a `p` above 100 is 100, below 0 (or NaN) is 0.
pub fn count_at_percentile(p: f64, total: u64) -> u64 {
    let requested = p.next_down().clamp(0.0, 100.0);
    // `as` saturates and makes a NaN 0, as Java's (long) does.
    let count = (requested * total as f64 / 100.0).ceil() as u64;
    count.max(1)
}

/// The values at percentiles `ps` (0–100, in any order) of `total` values counted in `buckets`
/// — (value, count), ascending by value, as a histogram's recorded buckets at their highest
/// equivalent values — each the value of the bucket in which the running count reaches
/// [`count_at_percentile`], in one pass. A count the buckets do not reach (they hold fewer
/// than `total`) reads the last bucket's value; with no buckets, 0.
pub fn in_buckets<const N: usize>(
    buckets: impl IntoIterator<Item = (u64, u64)>,
    total: u64,
    ps: [f64; N],
) -> [u64; N] {
    let counts = ps.map(|p| count_at_percentile(p, total));
    let mut order: [usize; N] = std::array::from_fn(|i| i);
    order.sort_unstable_by_key(|&i| counts[i]);
    let mut out = [0; N];
    let (mut next, mut seen, mut last) = (0, 0u64, 0);
    for (value, count) in buckets {
        if next == N {
            break;
        }
        seen = seen.saturating_add(count);
        last = value;
        while next < N && counts[order[next]] <= seen {
            out[order[next]] = value;
            next += 1;
        }
    }
    for &i in &order[next..] {
        out[i] = last;
    }
    out
}

/// The values of `h` at percentiles `ps` (0–100, in any order), µs, as HdrHistogram's
/// `getValueAtPercentile` gives each (a `p` of exactly 0: the lowest value equivalent to the
/// smallest recorded); all 0 when `h` is empty. One pass over `h`'s recorded buckets.
pub fn in_histogram<const N: usize>(h: &Histogram<u64>, ps: [f64; N]) -> [u64; N] {
    if h.is_empty() {
        return [0; N];
    }
    let buckets = h
        .iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()));
    let values = in_buckets(buckets, h.len(), ps);
    std::array::from_fn(|i| lowest_at_zero(ps[i], values[i], |v| h.lowest_equivalent(v)))
}

/// The value of `h` at percentile `p` (0–100), as [`in_histogram`] gives it; 0 when empty.
pub fn value_at_percentile(h: &Histogram<u64>, p: f64) -> u64 {
    in_histogram(h, [p])[0]
}

/// `value` (a bucket's highest equivalent) as percentile `p` reads it: the bucket's lowest
/// equivalent (`lowest`) when `p` is exactly 0, as HdrHistogram does.
pub(crate) fn lowest_at_zero(p: f64, value: u64, lowest: impl Fn(u64) -> u64) -> u64 {
    if p == 0.0 { lowest(value) } else { value }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Latencies;
    use crate::latency::{CompactHistogram, MAX_TRACKED_US, new_histogram, record_us};

    /// ⌈p·N/100⌉ (at least 1) in integers, `p` given in hundredths of a percent.
    fn exact_count(p_hundredths: u64, n: u64) -> u64 {
        (p_hundredths * n).div_ceil(10_000).max(1)
    }

    const PS: [(f64, u64); 8] = [
        (0.0, 0),
        (1.0, 100),
        (50.0, 5_000),
        (90.0, 9_000),
        (95.0, 9_500),
        (99.0, 9_900),
        (99.9, 9_990),
        (99.99, 9_999),
    ];

    #[test]
    fn the_rank_is_the_exact_ceiling_where_p_n_is_whole_and_elsewhere() {
        // The case of the issue: p99.9 of 5,000 is the 4,995th value, not the 4,996th.
        assert_eq!(count_at_percentile(99.9, 5_000), 4_995);
        assert_eq!(count_at_percentile(99.0, 5_000), 4_950);
        assert_eq!(count_at_percentile(99.99, 10_000), 9_999);
        assert_eq!(count_at_percentile(50.0, 1), 1);
        assert_eq!(count_at_percentile(0.0, 5_000), 1);
        assert_eq!(count_at_percentile(100.0, 5_000), 5_000);
        assert_eq!(count_at_percentile(250.0, 5_000), 5_000);
        assert_eq!(count_at_percentile(-3.0, 5_000), 1);
        assert_eq!(count_at_percentile(f64::NAN, 5_000), 1);
        assert_eq!(count_at_percentile(99.0, 0), 1);
        // Every N where 0.999·N or 0.99·N is whole, and all the others between, up to 200,000;
        // then whole multiples of 1,000 up to 10^8 (open runs reach such counts).
        let ns = (1..=200_000).chain((1..=100_000).map(|k| k * 1_000));
        for n in ns {
            for (p, hundredths) in PS {
                assert_eq!(
                    count_at_percentile(p, n),
                    exact_count(hundredths, n),
                    "p{p} of {n}"
                );
            }
            assert_eq!(count_at_percentile(100.0, n), n, "p100 of {n}");
        }
    }

    #[test]
    fn p99_9_of_5000_reads_the_4995th_value_where_the_crate_reads_the_4996th() {
        // 4,995 values of 6,383 µs and 5 of 6,399 µs: the bucket boundary is between the
        // 4,995th and the 4,996th.
        let mut h = new_histogram();
        record_us(&mut h, 6_383, 4_995);
        record_us(&mut h, 6_399, 5);
        let low = h.highest_equivalent(6_383);
        let high = h.highest_equivalent(6_399);
        assert_ne!(low, high);
        assert_eq!(value_at_percentile(&h, 99.9), low);
        // The rule this replaces: the hdrhistogram crate's quantile takes one rank too many.
        assert_eq!(h.value_at_percentile(99.9), high);
        // The same through every form volley keeps latencies in.
        let compact = CompactHistogram::from_histogram(&h);
        assert_eq!(compact.value_at_percentile(99.9), low);
        assert_eq!(
            Latencies::from_histogram(h.clone()).value_at_percentile(99.9),
            low
        );
        let s = crate::LatencySummary::from_histogram(&h).unwrap();
        assert_eq!(s.p99_9_ms, low as f64 / 1000.0);
        // 0.99·5,000 and 0.5·5,000 are whole too.
        let mut h = new_histogram();
        record_us(&mut h, 100, 4_950);
        record_us(&mut h, 900, 50);
        assert_eq!(value_at_percentile(&h, 99.0), h.highest_equivalent(100));
        assert_eq!(value_at_percentile(&h, 99.02), h.highest_equivalent(900));
    }

    #[test]
    fn a_few_values_are_ranked_as_their_histogram_is() {
        // 20 values (Latencies keeps up to 32 as a list): p95 is the 19th, p99.9 and p100 the
        // 20th, p50 the 10th, p0 the lowest equivalent of the 1st.
        let values: Vec<u64> = (1..=20).map(|i| i * 1_000 + 7).collect();
        let mut few = Latencies::new();
        let mut h = new_histogram();
        for &v in values.iter().rev() {
            few.record(v);
            record_us(&mut h, v, 1);
        }
        assert_eq!(few.value_at_percentile(95.0), h.highest_equivalent(19_007));
        assert_eq!(few.value_at_percentile(99.9), h.highest_equivalent(20_007));
        assert_eq!(few.value_at_percentile(50.0), h.highest_equivalent(10_007));
        assert_eq!(few.value_at_percentile(0.0), h.lowest_equivalent(1_007));
        for p in [0.0, 5.0, 50.0, 95.0, 99.9, 100.0] {
            assert_eq!(
                few.value_at_percentile(p),
                value_at_percentile(&h, p),
                "p{p}"
            );
        }
    }

    #[test]
    fn every_form_reads_the_sorted_values_rank() {
        let mut rng = fastrand::Rng::with_seed(53);
        for round in 0..80 {
            let n = match round % 4 {
                0 => rng.usize(1..=32),
                1 => rng.usize(33..200),
                2 => 1_000 * rng.usize(1..6),
                _ => rng.usize(1..5_000),
            };
            let values: Vec<u64> = (0..n)
                .map(|_| match rng.u8(0..8) {
                    0 => rng.u64(0..100),
                    1 => rng.u64(..),
                    _ => {
                        let top = 1u64 << rng.u32(1..33);
                        rng.u64(1..top)
                    }
                })
                .collect();
            let mut h = new_histogram();
            let mut l = Latencies::new();
            for &v in &values {
                record_us(&mut h, v, 1);
                l.record(v);
            }
            let compact = CompactHistogram::from_histogram(&h);
            let mut sorted: Vec<u64> = values.iter().map(|&v| v.clamp(1, MAX_TRACKED_US)).collect();
            sorted.sort_unstable();
            let ps = [
                0.0,
                rng.f64() * 100.0,
                50.0,
                90.0,
                95.0,
                99.0,
                99.9,
                99.99,
                100.0,
            ];
            let all = in_histogram(&h, ps);
            for (i, p) in ps.into_iter().enumerate() {
                let nth = sorted[count_at_percentile(p, n as u64) as usize - 1];
                let want = if p == 0.0 {
                    h.lowest_equivalent(nth)
                } else {
                    h.highest_equivalent(nth)
                };
                assert_eq!(
                    value_at_percentile(&h, p),
                    want,
                    "round {round}: p{p} of {n}"
                );
                assert_eq!(all[i], want, "round {round}: p{p} of {n}, all at once");
                assert_eq!(
                    compact.value_at_percentile(p),
                    want,
                    "round {round}: p{p} compact"
                );
                assert_eq!(
                    l.value_at_percentile(p),
                    want,
                    "round {round}: p{p} latencies"
                );
            }
        }
    }

    #[test]
    fn buckets_short_of_the_total_read_the_last_and_none_read_zero() {
        assert_eq!(in_buckets([(5, 1), (9, 1)], 10, [50.0, 100.0]), [9, 9]);
        assert_eq!(in_buckets([], 10, [50.0]), [0]);
        assert_eq!(in_histogram(&new_histogram(), [50.0, 0.0]), [0, 0]);
        assert_eq!(Latencies::new().value_at_percentile(99.0), 0);
        assert_eq!(CompactHistogram::default().value_at_percentile(99.0), 0);
    }
}
