//! k6 NDJSON Point lines read without a general JSON parser when they have exactly the shape
//! k6 writes:
//!
//! `{"metric":"M","type":"Point","data":{"time":"T","value":V,"tags":{"k":"v",…}}}`
//!
//! (or `"tags":null`), no spaces, no escapes, every tag a string. Such a line is most of a k6
//! results file, and a general parser spends most of its time on the tags, which volley reads
//! only on `http_reqs` Points. A line read here gives exactly what the serde reader gives for
//! it; a line of any other shape, or with anything this reader does not check as the JSON
//! grammar does (an escape, a control character, bytes that are not UTF-8, a number with an
//! exponent or more digits than an `f64` holds exactly), is left to the serde reader, which
//! also says what is wrong with a broken one.

use crate::block::{self, Block};

/// What a Point line holds that volley reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Point<'a> {
    pub metric: &'a str,
    pub time: &'a str,
    pub value: f64,
    /// The tags volley reads (`None` unless the metric is `http_reqs`).
    pub tags: Option<Tags<'a>>,
}

/// An `http_reqs` Point's tags that volley reads (the last of a repeated one, as serde keeps).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tags<'a> {
    pub status: Option<&'a str>,
    pub expected_response: Option<&'a str>,
    pub error_code: Option<&'a str>,
    pub name: Option<&'a str>,
    pub url: Option<&'a str>,
}

/// The Point on `line` (without or with its line end), when it has k6's exact shape.
pub fn point(line: &[u8]) -> Option<Point<'_>> {
    // Text as a whole: strings can then be cut out of it without checking them again, and a
    // line that is not UTF-8 is the serde reader's to refuse.
    let text = std::str::from_utf8(line).ok()?;
    let mut c = Cursor { s: text, at: 0 };
    c.lit("{\"metric\":")?;
    let metric = c.string()?;
    c.lit(",\"type\":\"Point\",\"data\":{\"time\":")?;
    let time = c.string()?;
    c.lit(",\"value\":")?;
    let value = c.number()?;
    c.lit(",\"tags\":")?;
    let want = metric == "http_reqs";
    let tags = if c.lit("null").is_some() {
        Tags::default()
    } else {
        c.tags(want)?
    };
    c.lit("}}")?;
    // Only JSON whitespace after the object, as serde allows.
    if !text[c.at..]
        .bytes()
        .all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
    {
        return None;
    }
    Some(Point {
        metric,
        time,
        value,
        tags: want.then_some(tags),
    })
}

/// A place in the line.
struct Cursor<'a> {
    s: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    /// Steps over `lit`, when it comes next.
    fn lit(&mut self, lit: &str) -> Option<()> {
        self.s[self.at..]
            .starts_with(lit)
            .then(|| self.at += lit.len())
    }

    /// A string without escapes or control characters (which the JSON grammar forbids raw):
    /// its quote here, and the next one with none of those before it.
    fn string(&mut self) -> Option<&'a str> {
        let mut quotes = Quotes::new(self.s.as_bytes(), self.at);
        let (open, close) = (quotes.next()?, quotes.next()?);
        if open != self.at {
            return None;
        }
        self.at = close + 1;
        Some(&self.s[open + 1..close])
    }

    /// A JSON number without an exponent (`-?(0|[1-9][0-9]*)(\.[0-9]+)?`), as serde_json reads
    /// it: an integer of up to 19 digits as that integer converted once, a fraction whose
    /// digits make an integer below 2^53 as that exact integer over an exact power of ten (what
    /// serde_json computes then, and what the exact decimal rounds to). Anything else is left
    /// to serde.
    fn number(&mut self) -> Option<f64> {
        let b = &self.s.as_bytes()[self.at..];
        let negative = b.first() == Some(&b'-');
        let mut i = usize::from(negative);
        let int_start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        let int_digits = i - int_start;
        if int_digits == 0 || (int_digits > 1 && b[int_start] == b'0') {
            return None;
        }
        let mut frac_digits = 0;
        if b.get(i) == Some(&b'.') {
            i += 1;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
                frac_digits += 1;
            }
            if frac_digits == 0 {
                return None;
            }
        }
        if matches!(b.get(i), Some(b'e' | b'E')) || int_digits + frac_digits > 19 {
            return None;
        }
        // Within these bounds the standard parser's value is serde_json's (both exact).
        let v = crate::num::plain(&b[..i])?;
        self.at += i;
        Some(v)
    }

    /// A flat object of string tags, keeping the ones volley reads when it `want`s them. The
    /// object's quotes are found a block at a time: with no escape or control character
    /// before its end (else it is serde's to read), every string runs from one quote to the
    /// next, and only the bytes between strings need looking at.
    fn tags(&mut self, want: bool) -> Option<Tags<'a>> {
        self.lit("{")?;
        let mut tags = Tags::default();
        if self.lit("}").is_some() {
            return Some(tags);
        }
        let bytes = self.s.as_bytes();
        let mut quotes = Quotes::new(bytes, self.at);
        loop {
            // `"key":"value"` then `,` or `}`.
            let open = quotes.next()?;
            let close = quotes.next()?;
            if open != self.at
                || bytes.get(close + 1..close + 3)? != b":\""
                || quotes.next()? != close + 2
            {
                return None;
            }
            let end = quotes.next()?;
            if want {
                let value = &self.s[close + 3..end];
                let slot = match &self.s[open + 1..close] {
                    "status" => &mut tags.status,
                    "expected_response" => &mut tags.expected_response,
                    "error_code" => &mut tags.error_code,
                    "name" => &mut tags.name,
                    "url" => &mut tags.url,
                    _ => &mut None,
                };
                *slot = Some(value);
            }
            self.at = end + 2;
            match bytes.get(end + 1)? {
                b'}' => return quotes.clean_before(self.at).then_some(tags),
                b',' => {}
                _ => return None,
            }
        }
    }
}

/// The quotes of a line from some place on, in order, found a block at a time; none past an
/// escape or a control character.
struct Quotes<'a> {
    bytes: &'a [u8],
    /// Where the block `mask` is of starts.
    base: usize,
    /// The block's quotes not yet handed out.
    mask: u32,
    /// Where the next block starts.
    next: usize,
    /// The first escape or control character seen (`usize::MAX` while none).
    odd_at: usize,
}

impl<'a> Quotes<'a> {
    fn new(bytes: &'a [u8], from: usize) -> Quotes<'a> {
        Quotes {
            bytes,
            base: from,
            mask: 0,
            next: from,
            odd_at: usize::MAX,
        }
    }

    /// The next quote's place.
    fn next(&mut self) -> Option<usize> {
        while self.mask == 0 {
            if self.next >= self.bytes.len() {
                return None;
            }
            self.base = self.next;
            let rest = &self.bytes[self.base..];
            // The last bytes of the line padded with spaces (neither quote nor odd).
            let mut tail = [b' '; block::LEN];
            let chunk: &[u8; block::LEN] = match rest.get(..block::LEN) {
                Some(c) => c.try_into().expect("a block"),
                None => {
                    tail[..rest.len()].copy_from_slice(rest);
                    &tail
                }
            };
            let b = Block::load(chunk);
            let odd = b.eq(b'\\') | b.at_most(0x1f);
            if odd != 0 && self.odd_at == usize::MAX {
                self.odd_at = self.base + odd.trailing_zeros() as usize;
            }
            self.mask = b.eq(b'"');
            self.next = self.base + block::LEN;
        }
        let at = self.base + self.mask.trailing_zeros() as usize;
        self.mask &= self.mask - 1;
        (at < self.odd_at).then_some(at)
    }

    /// Whether no escape or control character was seen before `end`.
    fn clean_before(&self, end: usize) -> bool {
        self.odd_at >= end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_of_k6s_shape_is_read() {
        let line = br#"{"metric":"http_reqs","type":"Point","data":{"time":"2026-04-16T11:10:22.393886034Z","value":1,"tags":{"expected_response":"false","group":"","method":"GET","name":"/rooms","status":"500","url":"http://127.0.0.1:8080/rooms"}}}"#;
        let p = point(line).expect("k6's shape");
        assert_eq!(
            (p.metric, p.time, p.value),
            ("http_reqs", "2026-04-16T11:10:22.393886034Z", 1.0)
        );
        let tags = p.tags.expect("an http_reqs Point's tags are read");
        assert_eq!(
            (
                tags.status,
                tags.expected_response,
                tags.name,
                tags.url,
                tags.error_code
            ),
            (
                Some("500"),
                Some("false"),
                Some("/rooms"),
                Some("http://127.0.0.1:8080/rooms"),
                None
            )
        );
        let other = br#"{"metric":"http_req_duration","type":"Point","data":{"time":"T","value":-0.25,"tags":null}}"#;
        assert_eq!(
            point(other),
            Some(Point {
                metric: "http_req_duration",
                time: "T",
                value: -0.25,
                tags: None
            })
        );
        for odd in [
            &br#"{"metric":"m","type":"Point","data":{"time":"T","value":1e3,"tags":null}}"#[..],
            br#"{"metric":"m","type":"Point","data":{"time":"T","value":01,"tags":null}}"#,
            br#"{"metric":"m","type":"Point","data":{"time":"T","value":1.,"tags":null}}"#,
            br#"{"metric":"m","type":"Point","data":{"time":"T","value":1,"tags":{"a":1}}}"#,
            br#"{"metric":"m\n","type":"Point","data":{"time":"T","value":1,"tags":null}}"#,
            br#"{"metric":"m","type":"Point","data":{"time":"T","value":1,"tags":null}} x"#,
            br#"{"type":"Point","metric":"m","data":{"time":"T","value":1,"tags":null}}"#,
        ] {
            assert_eq!(point(odd), None, "{}", String::from_utf8_lossy(odd));
        }
    }
}
