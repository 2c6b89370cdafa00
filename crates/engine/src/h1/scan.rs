//! A lean reader of response heads: the status line, then of each header line only what the
//! framing needs (`Content-Length`, `Transfer-Encoding`, `Connection`), told apart by length
//! and a case-insensitive compare. It accepts only a strict subset of what `httparse` accepts
//! — `HTTP/1.0` or `HTTP/1.1`, one space, three digits, CRLF line ends, token names followed
//! at once by `:`, value bytes that are tab, visible ASCII, space or obs-text, at most 64
//! headers, the whole head in the buffer — and returns `None` for anything else (a bare LF, a
//! leading empty line, obs-fold, a bad byte, a head not yet complete), which the caller then
//! hands to `httparse`: it falls back, it never guesses. So every head it reads, `httparse`
//! reads the same way (`h1::tests::the_scanner_reads_what_httparse_reads` holds that over
//! generated and mutated heads, cut at every length).
//!
//! Why not only `httparse`: this is the hot path of every HTTP/1.1 request, and `httparse`
//! fills a header table the framing then walks again; under callgrind that was about 1,900 of
//! the worker thread's 5,634 instructions per request (bench/README.md).

use super::Framing;

/// Headers read before the head is handed to `httparse` (which refuses more than its table).
const MAX_HEADERS: usize = 64;

/// `tchar` (RFC 9110 §5.6.2): the bytes `httparse` accepts in a header name.
static TOKEN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'!' | b'#'
                    | b'$'
                    | b'%'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'.'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'|'
                    | b'~'
            );
        b += 1;
    }
    t
};

/// A high bit in each byte of `w` below 0x20 or equal to 0x7F (the bytes not allowed in a
/// reason phrase or field value, tab and the line end among them). Bytes above the lowest
/// flagged one may be flagged wrongly (a borrow runs upward), so only the lowest is read.
#[inline]
fn control_bytes(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
    let d = w ^ (ONES * 0x7F);
    let del = d.wrapping_sub(ONES) & !d & HIGH;
    below | del
}

/// The index of the first control byte (below 0x20, or 0x7F) at or after `i`, or `buf.len()`.
#[inline]
fn find_control(buf: &[u8], mut i: usize) -> usize {
    while let Some(word) = buf.get(i..i + 8) {
        let m = control_bytes(u64::from_le_bytes(word.try_into().unwrap()));
        if m != 0 {
            return i + (m.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < buf.len() && buf[i] >= 0x20 && buf[i] != 0x7F {
        i += 1;
    }
    i
}

/// The index of the `\r` that ends the line whose text starts at `i`, if the text holds only
/// tab, space, visible ASCII and obs-text and a `\r\n` ends it within `buf`.
#[inline]
fn line_end(buf: &[u8], mut i: usize) -> Option<usize> {
    loop {
        let j = find_control(buf, i);
        match buf.get(j)? {
            b'\t' => i = j + 1,
            b'\r' if buf.get(j + 1) == Some(&b'\n') => return Some(j),
            _ => return None,
        }
    }
}

/// What [`scan`] made of a head it read: (status, head length, framing, keep-alive), or the
/// framing error of a head that is otherwise well formed.
pub(super) type Scanned = Result<(u16, usize, Framing, bool), &'static str>;

/// Reads a complete head at the start of `buf`, or `None` when the head is not (yet) one this
/// reader handles: then `httparse` decides.
pub(super) fn scan(buf: &[u8]) -> Option<Scanned> {
    let mut keep_alive = match buf.get(..8)? {
        b"HTTP/1.1" => true,
        b"HTTP/1.0" => false,
        _ => return None,
    };
    let &[b' ', h, t, o] = buf.get(8..12)? else {
        return None;
    };
    let (h, t, o) = (
        h.wrapping_sub(b'0'),
        t.wrapping_sub(b'0'),
        o.wrapping_sub(b'0'),
    );
    if h > 9 || t > 9 || o > 9 {
        return None;
    }
    let status = u16::from(h) * 100 + u16::from(t) * 10 + u16::from(o);
    let mut i = match buf.get(12)? {
        b' ' => line_end(buf, 13)?,
        b'\r' if buf.get(13) == Some(&b'\n') => 12,
        _ => return None,
    } + 2;
    let mut framing = Framing::UntilClose;
    let mut error = None;
    let mut count = 0;
    loop {
        if *buf.get(i)? == b'\r' {
            if *buf.get(i + 1)? != b'\n' {
                return None;
            }
            return Some(match error {
                Some(e) => Err(e),
                None => Ok((status, i + 2, framing, keep_alive)),
            });
        }
        let start = i;
        while TOKEN[usize::from(*buf.get(i)?)] {
            i += 1;
        }
        if i == start || buf[i] != b':' {
            return None;
        }
        let name = &buf[start..i];
        i += 1;
        while matches!(buf.get(i), Some(b' ' | b'\t')) {
            i += 1;
        }
        let end = line_end(buf, i)?;
        count += 1;
        if count > MAX_HEADERS {
            return None;
        }
        if error.is_none() {
            let value = buf[i..end].trim_ascii_end();
            error = super::frame(name, value, &mut framing, &mut keep_alive).err();
        }
        i = end + 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_bytes_are_found_where_a_byte_loop_finds_them() {
        let alphabet = [
            b'a', b' ', b'\t', b'\r', b'\n', 0x00, 0x1F, 0x20, 0x7E, 0x7F, 0x80, 0xFF, 0x9F,
        ];
        let mut x = 0x1234_5678_9ABC_DEF1u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 20) as usize;
            let mut y = x;
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    y = y.rotate_left(5) ^ 0x9E37_79B9_7F4A_7C15;
                    alphabet[(y % alphabet.len() as u64) as usize]
                })
                .collect();
            let start = if len == 0 {
                0
            } else {
                (x >> 40) as usize % len
            };
            let by_loop = (start..len)
                .find(|&k| bytes[k] < 0x20 || bytes[k] == 0x7F)
                .unwrap_or(len);
            assert_eq!(
                find_control(&bytes, start),
                by_loop,
                "{bytes:?} from {start}"
            );
        }
    }

    #[test]
    fn the_token_table_is_httparse_s() {
        for b in (0..=255u8).filter(|&b| b != b':') {
            let mut head = b"HTTP/1.1 200 OK\r\nx".to_vec();
            head.extend_from_slice(&[b, b'y', b':', b' ', b'v', b'\r', b'\n', b'\r', b'\n']);
            let mut headers = [httparse::EMPTY_HEADER; 4];
            let by_httparse = httparse::Response::new(&mut headers).parse(&head).is_ok();
            assert_eq!(TOKEN[usize::from(b)], by_httparse, "byte {b:#x}");
        }
        assert!(!TOKEN[usize::from(b':')]);
    }
}
