//! Durations as people write them: `30s`, `2m`, `1h30m`, `250ms`, or bare seconds.

use std::time::Duration;

use crate::PlanError;

/// Parses `30s`, `2m`, `1h30m`, `250ms` or a bare number of seconds (`1.5`), at most
/// [`MAX_DURATION`](crate::limits::MAX_DURATION).
pub fn parse_duration(s: &str) -> Result<Duration, PlanError> {
    let t = s.trim();
    if let Ok(secs) = t.parse::<f64>()
        && secs.is_finite()
        && secs >= 0.0
    {
        let max = crate::limits::MAX_DURATION;
        let d = Duration::try_from_secs_f64(secs).unwrap_or(max + Duration::from_secs(1));
        return crate::limits::duration_at_most(d, s);
    }
    let max = crate::limits::MAX_DURATION;
    let d = match humantime::parse_duration(t) {
        Ok(d) => d,
        // Beyond what a Duration holds is beyond the bound too.
        Err(humantime::DurationError::NumberOverflow) => max + Duration::from_secs(1),
        Err(_) => {
            return Err(PlanError(format!(
                "`{s}` is not a duration; write it like 30s, 2m, 1h30m or 250ms"
            )));
        }
    };
    crate::limits::duration_at_most(d, s)
}

/// Durations in run.json and other JSON: seconds as a number.
pub(crate) mod secs {
    use std::time::Duration;

    use serde::Deserialize;

    pub(crate) fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub(crate) fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(d)?;
        Duration::try_from_secs_f64(secs).map_err(|_| {
            serde::de::Error::custom(format!("{secs} is not a length of time in seconds"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        let e = parse_duration("soon").unwrap_err();
        assert!(e.0.contains("`soon` is not a duration"));
        assert!(parse_duration("-1").is_err());
        // Huge values are refused, never a panic or an overflow.
        for huge in ["1e20", "1e300", "100000h", "8d", "18446744073709551615s"] {
            let e = parse_duration(huge).unwrap_err();
            assert!(e.0.contains("longer than 7 days"), "{huge}: {e}");
        }
        assert_eq!(parse_duration("7d").unwrap(), crate::limits::MAX_DURATION);
    }
}
