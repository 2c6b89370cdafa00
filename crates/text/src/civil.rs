//! Civil date-times (`YYYY-MM-DD HH:MM:SS`) read by hand: the form the tools write, read
//! the way `jiff` reads it, in a few instructions instead of a general parser's many.
//! Anything else is left to `jiff` by the caller, which also says what is wrong with it.

/// `YYYY-MM-DD?HH:MM:SS` (19 bytes, `sep` in place of `?`) from 1970 through 9998, as
/// seconds since 1970-01-01 00:00:00; `None` for any other text, or a date or time that does
/// not exist (a 31 April, a leap second). jiff's latest instant is in 9999-12-30: later years
/// are jiff's to refuse.
pub fn seconds(s: &[u8], sep: u8) -> Option<i64> {
    if s.len() != 19 || s[10] != sep {
        return None;
    }
    Some(days(&s[..10])? * 86_400 + time_of_day(&s[11..])?)
}

/// [`seconds`] for rows that mostly share a date (a result file's rows, one a second): the
/// last date read is kept with its days, so a row of the same date reads only its time.
#[derive(Default)]
pub struct Dates {
    /// The last date read (zeros, which no date matches, before the first).
    date: [u8; 10],
    days: i64,
}

impl Dates {
    /// `s` as [`seconds`] reads it.
    #[inline]
    pub fn seconds(&mut self, s: &[u8], sep: u8) -> Option<i64> {
        if s.len() != 19 || s[10] != sep {
            return None;
        }
        if s[..10] != self.date {
            self.days = days(&s[..10])?;
            self.date.copy_from_slice(&s[..10]);
        }
        Some(self.days * 86_400 + time_of_day(&s[11..])?)
    }
}

/// Two ASCII digits as their number.
#[inline]
fn two(s: &[u8]) -> Option<i64> {
    let (a, b) = (s[0].wrapping_sub(b'0'), s[1].wrapping_sub(b'0'));
    (a <= 9 && b <= 9).then(|| i64::from(a * 10 + b))
}

/// `YYYY-MM-DD` (10 bytes) from 1970 through 9998 as days since 1970-01-01.
fn days(s: &[u8]) -> Option<i64> {
    if s[4] != b'-' || s[7] != b'-' {
        return None;
    }
    let (year, month, day) = (
        two(&s[0..2])? * 100 + two(&s[2..4])?,
        two(&s[5..7])?,
        two(&s[8..10])?,
    );
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1970..=9998).contains(&year)
        || !(1..=12).contains(&month)
        || day < 1
        || day > month_days[(month - 1) as usize]
    {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let (y, m) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y / 400;
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146_097 + doe - 719_468)
}

/// `HH:MM:SS` (8 bytes) as seconds since midnight; `None` past 23:59:59.
#[inline]
fn time_of_day(s: &[u8]) -> Option<i64> {
    if s[2] != b':' || s[5] != b':' {
        return None;
    }
    let (hour, minute, second) = (two(&s[0..2])?, two(&s[3..5])?, two(&s[6..8])?);
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    Some(hour * 3600 + minute * 60 + second)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by_jiff(s: &str) -> Option<i64> {
        let dt: jiff::civil::DateTime = s.parse().ok()?;
        Some(
            dt.to_zoned(jiff::tz::TimeZone::UTC)
                .ok()?
                .timestamp()
                .as_second(),
        )
    }

    #[test]
    fn reads_what_jiff_reads_or_leaves_it_to_jiff() {
        let mut rng = fastrand::Rng::with_seed(23);
        let mut dates = Dates::default();
        for _ in 0..200_000 {
            let (y, mo, d) = (rng.i64(1960..=10_000), rng.i64(0..=13), rng.i64(0..=32));
            let (h, mi, se) = (rng.i64(0..=25), rng.i64(0..=61), rng.i64(0..=61));
            // Any separator the caller names is read as jiff reads `T` there.
            let sep = [b' ', b'T', b'x'][rng.usize(..3)];
            let s = format!("{y:04}-{mo:02}-{d:02}{}{h:02}:{mi:02}:{se:02}", sep as char);
            let read = seconds(s.as_bytes(), sep);
            // The same through the cache of the last date, read afresh and then kept.
            assert_eq!(dates.seconds(s.as_bytes(), sep), read, "{s}");
            assert_eq!(dates.seconds(s.as_bytes(), sep), read, "{s}");
            assert_eq!(seconds(s.as_bytes(), b'_'), None, "{s}");
            let s = format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{se:02}");
            match read {
                Some(got) => assert_eq!(Some(got), by_jiff(&s), "{s}"),
                // Left to jiff: outside the years read by hand, a leap second, or no date.
                None => assert!(
                    !(1970..=9998).contains(&y) || se == 60 || by_jiff(&s).is_none(),
                    "{s}"
                ),
            }
        }
        for s in [
            "2026-04-13 21:14:09",
            "1970-01-01 00:00:00",
            "2024-02-29 23:59:59",
            "9998-12-31 23:59:59",
        ] {
            assert_eq!(seconds(s.as_bytes(), b' '), by_jiff(s), "{s}");
        }
        // Read one after another (a date again, a new date, a bad one between), the same.
        let mut dates = Dates::default();
        for s in [
            "2026-04-13 21:14:09",
            "2026-04-13 23:59:59",
            "2026-04-13 24:00:00",
            "2026-04-14 00:00:00",
            "2026-04-1x 00:00:01",
            "2026-04-14 00:00:01",
            "2025-02-29 00:00:00",
            "2026-04-14 00:00:02",
        ] {
            assert_eq!(
                dates.seconds(s.as_bytes(), b' '),
                seconds(s.as_bytes(), b' '),
                "{s}"
            );
        }
        for s in [
            "2026-04-13 21:14:0",
            "2026-04-13 21:14:09.5",
            "2025-02-29 00:00:00",
            "2026-4-13 21:14:09x",
            "+026-04-13 21:14:09",
        ] {
            assert_eq!(seconds(s.as_bytes(), b' '), None, "{s}");
        }
    }
}
