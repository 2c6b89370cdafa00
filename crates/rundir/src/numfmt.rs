//! Every way volley writes a number for a person or a file, in one place: the files in
//! nGrinder's layout ([`ngrinder_number`]), counts with thousands separators
//! ([`group_thousands`]), and the reports' figures ([`fixed2`], [`with_unit`], [`grouped`],
//! [`compact`], [`latency_ms`], [`short`]). The report, the importers' notes and the run
//! directory's readers all import them from here (`volley_formats::numfmt` re-exports it).
//!
//! nGrinder's numbers are Java's `DecimalFormat("###.###")`: up to three decimals, trailing
//! zeros dropped, no grouping, HALF_EVEN rounding, and `0` for NaN or infinity, so scripts
//! written for nGrinder's `output.csv` read ours unchanged.

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

/// A figure with two decimals, or `n/a` when it is not a number (`870.20`).
pub fn fixed2(v: f64) -> String {
    with_unit(v, "")
}

/// A figure with two decimals and its unit written straight after it (`12.30 ms` with unit
/// ` ms`, `0.50%`), or `n/a` alone when it is not a number.
pub fn with_unit(v: f64, unit: &str) -> String {
    if v.is_finite() {
        format!("{v:.2}{unit}")
    } else {
        "n/a".to_string()
    }
}

/// A load or a rate as a person reads it: `1480.4` as `1,480`; below 100 with one decimal
/// where it has one (`37.5`); `n/a` when it is not a number.
pub fn grouped(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    if v.abs() < 100.0 && v.fract().abs() > 1e-9 {
        return format!("{v:.1}");
    }
    let s = group_thousands(v.round().abs() as u64);
    if v < 0.0 { format!("-{s}") } else { s }
}

/// Whole from 100 up (either sign), two decimals below; `n/a` when it is not a number.
pub fn compact(v: f64) -> String {
    if !v.is_finite() {
        "n/a".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// A latency in ms with the digits that matter: whole from 100, one decimal from 10, two
/// below; `n/a` when it is not a number.
pub fn latency_ms(v: f64) -> String {
    if !v.is_finite() {
        "n/a".to_string()
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Whole from `whole_from` up, one decimal below (prose: `12 %`, `3.5 ms`).
pub fn short(v: f64, whole_from: f64) -> String {
    if v >= whole_from {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::ngrinder_number as f;
    use super::*;

    #[test]
    fn figures_for_people() {
        assert_eq!(group_thousands(0), "0");
        assert_eq!(group_thousands(999), "999");
        assert_eq!(group_thousands(40228), "40,228");
        assert_eq!(group_thousands(1234567), "1,234,567");
        assert_eq!(
            (fixed2(870.2), fixed2(f64::NAN)),
            ("870.20".into(), "n/a".into())
        );
        assert_eq!(with_unit(12.3, " ms"), "12.30 ms");
        assert_eq!(with_unit(f64::INFINITY, "%"), "n/a");
        assert_eq!(
            [
                grouped(1480.4),
                grouped(37.5),
                grouped(-2500.0),
                grouped(40.0)
            ],
            ["1,480", "37.5", "-2,500", "40"]
        );
        assert_eq!([compact(-150.4), compact(1.234)], ["-150", "1.23"]);
        assert_eq!(
            [latency_ms(123.4), latency_ms(12.34), latency_ms(1.234)],
            ["123", "12.3", "1.23"]
        );
        assert_eq!([short(12.4, 10.0), short(3.45, 10.0)], ["12", "3.5"]);
    }

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
