//! A percentage as a user writes it: `5%`. One parser for every flag that takes one
//! (`compare --tolerance`, `capacity --precision`), so `0.05` means the same everywhere: it is
//! refused, with the `%` form to write instead (5 % or 0.05 %?), as thresholds refuse an error
//! rate without its sign.

use crate::Error;

/// Parses `text`, given to `flag`, as a percentage from `min` to `max`: `5%` (or `5`, a whole
/// number of percent) is 5.0. A bare fraction (`0.05`) is refused, saying both readings.
pub fn parse_percent(flag: &str, text: &str, min: f64, max: f64) -> Result<f64, Error> {
    let t = text.trim();
    let has_sign = t.ends_with('%');
    let n = t.trim_end_matches('%').trim();
    let out_of_range = || {
        Error::value(format!(
            "{flag} {text}: give a percentage from {} to {}, e.g. {flag} 5%",
            show(min),
            show(max)
        ))
    };
    match n.parse::<f64>() {
        Ok(v) if !has_sign && v > 0.0 && v < 1.0 => {
            let pct = (v * 100.0 * 1e6).round() / 1e6;
            Err(Error::value(format!(
                "{flag} {t}: a percentage, so {t} would be {t} %; did you mean {pct}%? Write it with its sign ({flag} {pct}%, or {flag} {t}% if you meant {t} %)"
            )))
        }
        Ok(v) if v.is_finite() && (min..=max).contains(&v) => Ok(v),
        _ => Err(out_of_range()),
    }
}

fn show(v: f64) -> String {
    format!("{v}%")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_percentage_is_written_with_its_sign_and_a_fraction_is_refused() {
        assert_eq!(parse_percent("--precision", "5%", 0.5, 100.0).unwrap(), 5.0);
        assert_eq!(
            parse_percent("--precision", " 5 ", 0.5, 100.0).unwrap(),
            5.0
        );
        let e = parse_percent("--precision", "0.05", 0.5, 100.0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("did you mean 5%?"), "{e}");
        assert!(e.contains("--precision 5%"), "{e}");
        let e = parse_percent("--precision", "0%", 0.5, 100.0)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "--precision 0%: give a percentage from 0.5% to 100%, e.g. --precision 5%"
        );
        assert!(parse_percent("--tolerance", "lots", 0.0, 1000.0).is_err());
        assert!(parse_percent("--tolerance", "inf%", 0.0, 1000.0).is_err());
        assert!(parse_percent("--tolerance", "NaN", 0.0, 1000.0).is_err());
    }
}
