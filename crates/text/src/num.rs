//! Numbers read from a file's text: the common plain forms by hand, anything else by the
//! standard library — the same value either way. Result files hold a few numbers a row and
//! millions of rows; the standard parser's generality costs more than the rest of a row.

/// `s` as `str::parse::<f64>` reads it.
pub fn f64(s: &str) -> Result<f64, std::num::ParseFloatError> {
    plain(s.as_bytes()).map_or_else(|| s.parse(), Ok)
}

/// Exact powers of ten as `f64` (every one up to 10^22 is).
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// A plain decimal (`123`, `-12.5`, `.25`, `7.`) of at most 19 digits, as the standard parser
/// reads it; `None` for anything else. A whole number converts with one correctly rounded
/// cast; a fraction whose digits make an integer below 2^53 is that exact integer divided by
/// an exact power of ten, one correctly rounded division (Clinger's fast path, which the
/// standard parser takes for the same inputs).
#[inline]
pub fn plain(s: &[u8]) -> Option<f64> {
    // Most fields are a few digits with a point: one pass, inlined where it is called.
    if s.len() <= 8 {
        let (negative, body) = match s.first()? {
            b'-' => (true, &s[1..]),
            _ => (false, s),
        };
        let (mut m, mut point) = (0u64, None);
        for (i, &b) in body.iter().enumerate() {
            let d = b.wrapping_sub(b'0');
            if d <= 9 {
                m = m * 10 + u64::from(d);
            } else if b == b'.' && point.is_none() {
                point = Some(i);
            } else {
                return None;
            }
        }
        if body.len() == usize::from(point.is_some()) {
            return None; // no digit
        }
        // At most eight digits: `m` is exact, below 2^53.
        let v = match point {
            Some(p) if p + 1 < body.len() => m as f64 / POW10[body.len() - p - 1],
            _ => m as f64,
        };
        return Some(if negative { -v } else { v });
    }
    long_plain(s)
}

/// [`plain`] of more than eight bytes.
#[inline(never)]
fn long_plain(s: &[u8]) -> Option<f64> {
    let (negative, body) = match s.first()? {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    // Digits before and after the point; `m` wraps past 19 digits, when it is not used.
    let (mut m, mut i) = (0u64, 0);
    digits(body, &mut i, &mut m);
    let int_digits = i;
    let mut frac_digits = 0;
    if i < body.len() {
        if body[i] != b'.' {
            return None;
        }
        i += 1;
        digits(body, &mut i, &mut m);
        frac_digits = i - int_digits - 1;
        if i < body.len() {
            return None;
        }
    }
    let digits = int_digits + frac_digits;
    if digits == 0 || digits > 19 {
        return None;
    }
    let v = if frac_digits == 0 {
        m as f64
    } else if m < 1 << 53 {
        m as f64 / POW10[frac_digits]
    } else {
        return None;
    };
    Some(if negative { -v } else { v })
}

/// `s` when it is 1 to 18 ASCII digits and nothing else, as a number (below 10^18, so no
/// step can overflow).
#[inline(always)]
pub fn whole(s: &[u8]) -> Option<u64> {
    // A count or a duration: a few digits, one at a time (no registers to save for the
    // longer path, so this part is inlined where it is called).
    if s.len() < 8 {
        if s.is_empty() {
            return None;
        }
        let mut m = 0u64;
        for &b in s {
            let d = b.wrapping_sub(b'0');
            if d > 9 {
                return None;
            }
            m = m * 10 + u64::from(d);
        }
        return Some(m);
    }
    long_whole(s)
}

/// [`whole`] of eight bytes or more: eight digits at a time, then one at a time.
#[inline(never)]
fn long_whole(s: &[u8]) -> Option<u64> {
    let n = s.len();
    if let 9..=16 = n {
        // Two words, the first eight bytes and the last eight, overlapping: the first one's
        // bytes past the first `n - 8` shifted out, ASCII zeros shifted in before them (a time
        // stamp in ms: 13 digits, as 00017763 and 37822386).
        const ZEROS: u64 = 0x3030_3030_3030_3030;
        let word = |i: usize| u64::from_le_bytes(s[i..i + 8].try_into().expect("8 bytes"));
        let high = (word(0) << (8 * (16 - n))) | ZEROS.checked_shr(8 * (n - 8) as u32).unwrap_or(0);
        return Some(eight_digits(high)? * 100_000_000 + eight_digits(word(n - 8))?);
    }
    if n > 18 {
        return None;
    }
    let (mut m, mut rest) = (0u64, s);
    while let Some((eight, tail)) = rest.split_first_chunk::<8>() {
        m = m * 100_000_000 + eight_digits(u64::from_le_bytes(*eight))?;
        rest = tail;
    }
    for &b in rest {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        m = m * 10 + u64::from(d);
    }
    Some(m)
}

/// Eight bytes (little-endian, the first in the lowest byte) as the number they spell, when
/// every one is an ASCII digit.
#[inline]
fn eight_digits(w: u64) -> Option<u64> {
    // Every byte 0x30..=0x39: its high half is 3, and still 3 with 6 added.
    const HIGH: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    const THREES: u64 = 0x3030_3030_3030_3030;
    if w & HIGH != THREES || w.wrapping_add(0x0606_0606_0606_0606) & HIGH != THREES {
        return None;
    }
    // Pairs, then quads, then the whole (the first digit highest).
    let v = w - THREES;
    let v = (v.wrapping_mul(10) + (v >> 8)) & 0x00FF_00FF_00FF_00FF;
    let v = (v.wrapping_mul(100) + (v >> 16)) & 0x0000_FFFF_0000_FFFF;
    Some((v.wrapping_mul(10_000) + (v >> 32)) & 0xFFFF_FFFF)
}

/// Reads the digits of `s` from `at` on into `m` (wrapping), eight at a time while there are
/// eight, and leaves `at` after the last one.
#[inline]
fn digits(s: &[u8], at: &mut usize, m: &mut u64) {
    while let Some(eight) = s.get(*at..*at + 8) {
        let Some(v) = eight_digits(u64::from_le_bytes(eight.try_into().expect("8 bytes"))) else {
            break;
        };
        *m = m.wrapping_mul(100_000_000).wrapping_add(v);
        *at += 8;
    }
    while let Some(&b) = s.get(*at).filter(|b| b.is_ascii_digit()) {
        *m = m.wrapping_mul(10).wrapping_add(u64::from(b - b'0'));
        *at += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_decimals_read_as_the_standard_parser_reads_them() {
        let fixed = [
            "0",
            "-0",
            "-0.0",
            "7.",
            ".25",
            "-.5",
            "00012.500",
            "1776337822393885",
            "1776337822393885123",
            "9007199254740993",
            "9007199254740993.5",
            "0.1",
            "0.3",
            "123456789012345.6",
            "1.7976931348623157",
            "20.569",
            "4983",
            "0.012",
            "99999999999999999999",
        ];
        let odd = [
            "",
            ".",
            "-",
            "+1",
            "1e5",
            "1.2.3",
            "inf",
            "NaN",
            "1,5",
            " 1",
            "--1",
            "0x10",
            "1_000",
            "12345678:",
            "1234567/8",
            "12345678 ",
            "1234567\u{663}",
        ];
        let mut rng = fastrand::Rng::with_seed(7);
        let random = (0..200_000).map(|_| {
            let int: String = (0..rng.usize(0..12))
                .map(|_| char::from(b'0' + rng.u8(0..10)))
                .collect();
            let frac: String = (0..rng.usize(0..12))
                .map(|_| char::from(b'0' + rng.u8(0..10)))
                .collect();
            let sign = if rng.bool() { "-" } else { "" };
            match rng.u8(0..3) {
                0 => format!("{sign}{int}"),
                _ => format!("{sign}{int}.{frac}"),
            }
        });
        for s in fixed
            .iter()
            .chain(&odd)
            .map(|s| s.to_string())
            .chain(random)
        {
            match (f64(&s), s.parse::<f64>()) {
                (Ok(a), Ok(b)) => assert_eq!(a.to_bits(), b.to_bits(), "`{s}`"),
                (Err(_), Err(_)) => {}
                (a, b) => panic!("`{s}`: {a:?} against {b:?}"),
            }
        }
        for s in odd {
            assert_eq!(
                plain(s.as_bytes()),
                None,
                "`{s}` is left to the standard parser"
            );
        }
        for s in [
            "0",
            "7",
            "12345678",
            "123456789",
            "1776337822386",
            "123456789012345678",
            "1234567812345678",
        ] {
            assert_eq!(whole(s.as_bytes()), Some(s.parse().unwrap()), "`{s}`");
        }
        for s in [
            "",
            "1234567890123456789",
            "12345678:",
            "-1",
            "1.0",
            "1234567/",
            "12345678 ",
            "+1",
            "12345678123456789/",
        ] {
            assert_eq!(whole(s.as_bytes()), None, "`{s}`");
        }
        // Digits with, now and then, one byte that is not (or a sign), at every length.
        let alphabet = b"0123456789/:+- .\xff";
        for _ in 0..200_000 {
            let len = rng.usize(0..21);
            let s: Vec<u8> = (0..len)
                .map(|_| {
                    if rng.u8(0..20) == 0 {
                        alphabet[rng.usize(10..alphabet.len())]
                    } else {
                        b'0' + rng.u8(0..10)
                    }
                })
                .collect();
            let expected = (1..=18)
                .contains(&len)
                .then(|| std::str::from_utf8(&s).ok()?.parse::<u64>().ok())
                .flatten()
                .filter(|_| s.iter().all(u8::is_ascii_digit));
            assert_eq!(whole(&s), expected, "{:?}", String::from_utf8_lossy(&s));
        }
    }
}
