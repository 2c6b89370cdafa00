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
    let h = (n - 1) as f64 * p / 100.0;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    Some(sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo]))
}

#[cfg(test)]
mod tests {
    use super::*;

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
