//! Numbers written the way nGrinder writes them: Java's `DecimalFormat("###.###")`.
//!
//! Up to three decimals, trailing zeros dropped, no grouping, HALF_EVEN rounding, and
//! `0` for NaN or infinity, so scripts written for nGrinder's `output.csv` read ours unchanged.

/// Formats `v` as `DecimalFormat("###.###")` would.
pub fn ngrinder_number(v: f64) -> String {
    if !v.is_finite() {
        return "0".to_string();
    }
    // Rust formats the exact binary value and breaks exact ties to even, as Java does.
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

/// `1234567` as `1,234,567`.
pub fn group_thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::ngrinder_number as f;

    #[test]
    fn like_decimal_format() {
        assert_eq!(f(88.0), "88");
        assert_eq!(f(37.5), "37.5");
        assert_eq!(f(23.3124), "23.312");
        assert_eq!(f(0.0), "0");
        assert_eq!(f(-0.0), "0");
        assert_eq!(f(f64::NAN), "0");
        assert_eq!(f(1234567.0), "1234567");
        assert_eq!(f(0.0004), "0");
        assert_eq!(f(0.0625), "0.062"); // an exact tie goes to even
        assert_eq!(f(0.1875), "0.188");
        assert_eq!(f(-0.0001), "0");
    }
}
