//! Durations as people write them: `30s`, `2m`, `1h30m`, `250ms`, or bare seconds.

use std::time::Duration;

use crate::PlanError;

/// Parses `30s`, `2m`, `1h30m`, `250ms` or a bare number of seconds (`1.5`).
pub fn parse_duration(s: &str) -> Result<Duration, PlanError> {
    let t = s.trim();
    if let Ok(secs) = t.parse::<f64>()
        && secs.is_finite()
        && secs >= 0.0
    {
        return Ok(Duration::from_secs_f64(secs));
    }
    humantime::parse_duration(t).map_err(|_| {
        PlanError(format!(
            "`{s}` is not a duration; write it like 30s, 2m, 1h30m or 250ms"
        ))
    })
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
    }
}
