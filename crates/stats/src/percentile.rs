//! numpy's default percentile (`linear` interpolation between order statistics).
//!
//! The published tables were computed with `np.percentile`, so ours must interpolate the
//! same way to match them to 0.01.

/// Percentile `p` (0–100) of `values` with numpy's `linear` method. `None` when empty.
pub fn numpy_percentile(values: &[f64], p: f64) -> Option<f64> {
    let mut sorted: Vec<f64> = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    percentile_of_sorted(&sorted, p)
}

/// Like [`numpy_percentile`] on values already sorted ascending.
pub fn percentile_of_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let h = rank(n, p);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    Some(between(sorted[lo], sorted[hi], h, lo))
}

/// Where percentile `p` falls among `n` sorted values: a fractional rank from 0.
#[inline]
fn rank(n: usize, p: f64) -> f64 {
    (n - 1) as f64 * p / 100.0
}

/// The value at fractional rank `h`, from `low` at rank `lo` (its floor) and `high`, the
/// value at the next rank (or `low` again at the last).
#[inline]
fn between(low: f64, high: f64, h: f64, lo: usize) -> f64 {
    low + (h - lo as f64) * (high - low)
}

/// [`numpy_percentile`] at each of `ps` (in any order), bit for bit, with `values` reordered
/// in place: the two order statistics each percentile interpolates between are selected, not
/// the whole slice sorted (a long imported series has millions of values and wants four
/// percentiles). A selection puts the very value a sort would at its place (two values equal
/// under `total_cmp` have the same bits), so the result is the sort's.
pub fn numpy_percentiles<const N: usize>(values: &mut [f64], ps: [f64; N]) -> [Option<f64>; N] {
    let n = values.len();
    if n == 0 {
        return [None; N];
    }
    // Each percentile's rank, and the ranks of the two values it falls between.
    let at = ps.map(|p| {
        let h = rank(n, p);
        let lo = (h.floor() as usize).min(n - 1);
        (h, lo, (lo + 1).min(n - 1))
    });
    let mut ranks: Vec<usize> = at.iter().flat_map(|&(_, lo, hi)| [lo, hi]).collect();
    ranks.sort_unstable();
    ranks.dedup();
    select_ranks(values, &ranks, 0);
    at.map(|(h, lo, hi)| Some(between(values[lo], values[hi], h, lo)))
}

/// Puts at each of `ranks` (ascending, counted from `values`' start as `offset`) the value a
/// sort would put there: the middle rank is selected first, then the ranks below it among the
/// values on its left and those above among the values on its right, so that each level of
/// selections reads the slice once (the low tail's four percentiles, selected one after the
/// other among the values above the last, read it eight times).
fn select_ranks(values: &mut [f64], ranks: &[usize], offset: usize) {
    if ranks.is_empty() {
        return;
    }
    let mid = ranks.len() / 2;
    let at = ranks[mid] - offset;
    let (left, _, right) = values.select_nth_unstable_by(at, f64::total_cmp);
    select_ranks(left, &ranks[..mid], offset);
    select_ranks(right, &ranks[mid + 1..], offset + at + 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selected_percentiles_are_the_sorted_ones_bit_for_bit() {
        let mut rng = fastrand::Rng::with_seed(31);
        let specials = [
            0.0,
            -0.0,
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1.0,
            1.0,
        ];
        for round in 0..2_000 {
            let n = rng.usize(0..if round % 10 == 0 { 5_000 } else { 40 });
            let values: Vec<f64> = (0..n)
                .map(|_| match rng.u8(..10) {
                    0 => specials[rng.usize(..specials.len())],
                    1..=3 => f64::from(rng.u8(..4)),
                    _ => rng.f64() * 1e3 - 100.0,
                })
                .collect();
            let ps = [
                50.0,
                95.0,
                99.0,
                99.9,
                5.0,
                1.0,
                0.1,
                0.0,
                100.0,
                rng.f64() * 100.0,
            ];
            let mut work = values.clone();
            let got = numpy_percentiles(&mut work, ps);
            for (p, got) in ps.iter().zip(got) {
                let want = numpy_percentile(&values, *p);
                assert_eq!(
                    got.map(f64::to_bits),
                    want.map(f64::to_bits),
                    "p{p} of {values:?}"
                );
            }
        }
    }

    #[test]
    fn matches_numpy_linear() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(numpy_percentile(&v, 50.0), Some(2.5));
        assert_eq!(numpy_percentile(&v, 0.0), Some(1.0));
        assert_eq!(numpy_percentile(&v, 100.0), Some(4.0));
        // np.percentile([1,2,3,4], 99) == 3.97
        assert!((numpy_percentile(&v, 99.0).unwrap() - 3.97).abs() < 1e-12);
        assert_eq!(numpy_percentile(&[], 50.0), None);
    }
}
