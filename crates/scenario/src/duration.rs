//! Durations as people write them: `30s`, `2m`, `1h30m`, `250ms`, `1.5s` — always with a
//! unit. The one parser of every duration and time volley reads (flags, scenario files,
//! stages, threshold limits), so one rule holds everywhere: a bare number (`5`) is refused,
//! since it could mean seconds or milliseconds.

use std::time::Duration;

use crate::Error;

/// Parses `30s`, `2m`, `1h30m`, `250ms`, `1.5s` (units ns, us/µs, ms, s, m, h, d and their
/// long names), at most [`MAX_DURATION`](crate::limits::MAX_DURATION). A number without a
/// unit is refused, with what to write instead.
pub fn parse_duration(s: &str) -> Result<Duration, Error> {
    let t = s.trim();
    if !t.is_empty()
        && t.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && t.parse::<f64>().is_ok()
    {
        return Err(Error::value(format!(
            "`{t}` has no unit: write {t}s, {t}ms or {t}m"
        )));
    }
    let max = crate::limits::MAX_DURATION;
    let d = match humantime::parse_duration(t) {
        Ok(d) => d,
        // Beyond what a Duration holds is beyond the bound too.
        Err(humantime::DurationError::NumberOverflow) => max + Duration::from_secs(1),
        Err(_) => {
            return Err(Error::value(format!(
                "`{s}` is not a duration; write it like 30s, 2m, 1h30m or 250ms"
            )));
        }
    };
    crate::limits::duration_at_most(d, s)
}

/// `d` if it lies from `min` to `max`, else what to give instead: `give between 1s and 1h`
/// (the caller names the flag or key and the value written).
pub fn within(d: Duration, min: Duration, max: Duration) -> Result<Duration, Error> {
    if (min..=max).contains(&d) {
        return Ok(d);
    }
    Err(Error::value(format!(
        "give between {} and {}",
        humantime::format_duration(min),
        humantime::format_duration(max)
    )))
}

/// [`parse_duration`], then [`within`] `min` and `max`.
pub fn parse_within(text: &str, min: Duration, max: Duration) -> Result<Duration, Error> {
    within(parse_duration(text)?, min, max)
}

/// A request timeout (`--timeout`, a scenario's or a step's `timeout`): at least
/// [`MIN_TIMEOUT`](crate::limits::MIN_TIMEOUT), shorter than which a timer cannot tell a
/// response in time from one too late.
pub fn parse_timeout(text: &str) -> Result<Duration, Error> {
    let d = parse_duration(text)?;
    if d < crate::limits::MIN_TIMEOUT {
        return Err(Error::value(format!(
            "`{}` is shorter than the 1 ms a timer can tell apart, so requests would pass or fail by chance; give a time like 30s",
            text.trim()
        )));
    }
    Ok(d)
}

/// A sampling interval (`--interval`): one row of series.csv each, from
/// [`MIN_INTERVAL`](crate::limits::MIN_INTERVAL) to [`MAX_INTERVAL`](crate::limits::MAX_INTERVAL).
pub fn parse_interval(text: &str) -> Result<Duration, Error> {
    use crate::limits::{MAX_INTERVAL, MIN_INTERVAL};
    parse_within(text, MIN_INTERVAL, MAX_INTERVAL)
        .map_err(|e| Error::value(format!("{e} (one row of series.csv per interval)")))
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
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("2us").unwrap(), Duration::from_micros(2));
        let e = parse_duration("soon").unwrap_err();
        assert!(e.to_string().contains("`soon` is not a duration"));
        assert!(parse_duration("-1").is_err());
        // Huge values are refused, never a panic or an overflow.
        for huge in ["100000h", "8d", "18446744073709551615s"] {
            let e = parse_duration(huge).unwrap_err();
            assert!(e.to_string().contains("longer than 7 days"), "{huge}: {e}");
        }
        assert_eq!(parse_duration("7d").unwrap(), crate::limits::MAX_DURATION);
    }

    #[test]
    fn bounds_say_what_to_give() {
        let (s, h) = (Duration::from_secs(1), Duration::from_secs(3600));
        assert_eq!(parse_within("1s", s, h).unwrap(), s);
        assert_eq!(parse_within("1h", s, h).unwrap(), h);
        assert_eq!(
            parse_within("0s", s, h).unwrap_err(),
            "give between 1s and 1h"
        );
        assert_eq!(
            parse_within("2h", Duration::ZERO, h).unwrap_err(),
            "give between 0s and 1h"
        );
        // A value that is no duration says so, not the bounds.
        assert!(
            parse_within("5", s, h)
                .unwrap_err()
                .to_string()
                .contains("has no unit")
        );
        assert_eq!(parse_timeout("1ms").unwrap(), Duration::from_millis(1));
        assert_eq!(
            parse_timeout(" 0s ").unwrap_err(),
            "`0s` is shorter than the 1 ms a timer can tell apart, so requests would pass or fail by chance; give a time like 30s"
        );
        assert_eq!(parse_interval("250ms").unwrap(), Duration::from_millis(250));
        for bad in ["10ms", "2h"] {
            assert_eq!(
                parse_interval(bad).unwrap_err(),
                "give between 100ms and 1h (one row of series.csv per interval)"
            );
        }
    }

    /// One rule everywhere: a number without a unit is refused, with what to write.
    #[test]
    fn a_bare_number_is_refused_with_what_to_write() {
        for (bare, says) in [
            ("5", "`5` has no unit: write 5s, 5ms or 5m"),
            (" 0 ", "`0` has no unit: write 0s, 0ms or 0m"),
            ("1.5", "`1.5` has no unit: write 1.5s, 1.5ms or 1.5m"),
        ] {
            assert_eq!(parse_duration(bare).unwrap_err().to_string(), says);
        }
        // Exponents and signs are not durations in any unit.
        for odd in ["1e20", "1e300", "-1", "+5"] {
            assert!(
                parse_duration(odd)
                    .unwrap_err()
                    .to_string()
                    .contains("is not a duration"),
                "{odd}"
            );
        }
    }
}
