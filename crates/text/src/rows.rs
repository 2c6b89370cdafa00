//! The rows of a CSV result file (JMeter's JTL, k6's `--out csv`, nGrinder's `output.csv`),
//! read fast: plain lines are split into fields in one pass, 32 bytes at a time, and only the
//! rare line that needs it goes through the csv crate's reader. nGrinder's files are read
//! without quoting ([`Dialect::unquoted`]): a quote there is a byte of a description.
//!
//! Most rows of a load tool's CSV hold no quotes and no stray carriage returns; looking for
//! the line end, then for quotes, then finding each separator by a call of its own read every
//! byte three times and cost more than everything else a row needs. Here one pass finds the
//! separators and the line end and notes, on the side, whether the line holds anything that
//! needs the full CSV reader (a quote, a carriage return other than the one before the line
//! end); a line that does not is split exactly as the csv crate splits it, and checked to be
//! UTF-8 once (not at all when the pass saw only ASCII). Where the CPU has AVX2 the whole
//! record loop is compiled for it ([`records_from`] chooses once per buffer), so the split
//! is inlined into the loop and compares a block in one instruction instead of three.

use std::path::Path;

use crate::block::{self, Block, Lanes};
use crate::error::{Error, Result};

/// How a file's fields are separated and quoted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dialect {
    /// The byte between fields.
    pub delimiter: u8,
    /// Whether `"` quotes a field (JTL, k6) or is a byte like any other (nGrinder writes
    /// its descriptions as they are, and reads them back that way).
    pub quoting: bool,
}

impl Dialect {
    /// RFC 4180's CSV with `delimiter` between fields.
    pub const fn csv(delimiter: u8) -> Dialect {
        Dialect {
            delimiter,
            quoting: true,
        }
    }

    /// Fields between `delimiter`s, with no quoting.
    pub const fn unquoted(delimiter: u8) -> Dialect {
        Dialect {
            delimiter,
            quoting: false,
        }
    }
}

/// One row's fields: `text` cut before each of `ends`; field `i` starts where field `i - 1`
/// ends, past `gap` bytes (1 for a line split at its delimiters, 0 for a csv record's text,
/// which holds the fields alone).
pub struct Fields<'a> {
    text: &'a str,
    ends: &'a [usize],
    gap: usize,
}

impl<'a> Fields<'a> {
    /// How many fields.
    #[inline]
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether the row has no field at all.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Where field `i` starts and ends in the text, when there is one.
    #[inline]
    fn span(&self, i: usize) -> Option<(usize, usize)> {
        let end = *self.ends.get(i)?;
        Some((
            if i == 0 {
                0
            } else {
                self.ends[i - 1] + self.gap
            },
            end,
        ))
    }

    /// Field `i`'s bytes; empty when there is no such field.
    #[inline]
    pub fn bytes(&self, i: usize) -> &'a [u8] {
        self.span(i)
            .map_or(&[], |(a, b)| &self.text.as_bytes()[a..b])
    }

    /// Field `i`, when there is one.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&'a str> {
        self.span(i).map(|(a, b)| &self.text[a..b])
    }

    /// Field `i`; empty when there is no such field.
    #[inline]
    pub fn at(&self, i: usize) -> &'a str {
        self.get(i).unwrap_or("")
    }

    /// The fields of a csv record (`ends` is reused).
    pub fn of_record(record: &'a csv::StringRecord, ends: &'a mut Vec<usize>) -> Fields<'a> {
        ends.clear();
        ends.extend(
            (0..record.len())
                .filter_map(|i| record.range(i))
                .map(|r| r.end),
        );
        Fields {
            text: record.as_slice(),
            ends,
            gap: 0,
        }
    }
}

/// Reads the records that start in `buf[..own]` (`buf` runs on past them, to the end of what
/// is read when `at_end`), calling `row` with each one's fields and line (lines counted from 1
/// at `buf`'s start; empty lines are skipped, as the csv crate skips them). Returns where the
/// last record ends (past `own` when a quoted field runs over it) and the line ends read, or
/// `None` when a record runs past the end of `buf`. A row `row` refuses stops the reading
/// with its error; so does a record the csv reader finds wrong.
pub fn records(
    path: &Path,
    buf: &[u8],
    own: usize,
    at_end: bool,
    dialect: Dialect,
    row: impl FnMut(&Fields<'_>, u64) -> Result<()>,
) -> Result<Option<(usize, u64)>> {
    let got = records_from(path, buf, own, at_end, dialect, 1, row)?;
    Ok((!got.short).then_some((got.consumed, got.newlines)))
}

/// How far [`records_from`] got.
struct Got {
    /// Bytes of the records handed over.
    consumed: usize,
    /// Line ends in them.
    newlines: u64,
    /// It stopped at a record running past the end of the buffer, before `own`.
    short: bool,
}

/// Reads every record `reader` holds, a block at a time, as [`records`] reads a buffer (the
/// reader's first line counted as line `first`): one pass over a file of any size in bounded
/// memory.
pub fn stream(
    path: &Path,
    mut reader: impl std::io::Read,
    dialect: Dialect,
    first: u64,
    mut row: impl FnMut(&Fields<'_>, u64) -> Result<()>,
) -> Result<()> {
    const BLOCK: usize = 1 << 20;
    // `buf[..filled]` is read and not yet handed over. The buffer is zeroed once, as it grows,
    // and read into again and again (a reader fills only bytes already initialised).
    let (mut buf, mut filled, mut eof, mut lines, mut want) =
        (vec![0u8; 2 * BLOCK], 0usize, false, 0u64, BLOCK);
    loop {
        while !eof && filled < want {
            if buf.len() < filled + BLOCK {
                buf.resize(filled + BLOCK, 0);
            }
            let n = loop {
                match reader.read(&mut buf[filled..filled + BLOCK]) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    got => break got.map_err(|e| Error::io(path, e))?,
                }
            };
            filled += n;
            eof = n == 0;
        }
        let text = &buf[..filled];
        let own = if eof {
            filled
        } else {
            memchr::memrchr(b'\n', text).map_or(0, |i| i + 1)
        };
        if own == 0 {
            if eof {
                return Ok(());
            }
            want = filled * 2;
            continue;
        }
        // The records handed over are gone from the buffer whatever stopped the reading: a
        // record that runs past what is read (a quoted field holding line ends) is read again,
        // whole, once more is read.
        let got = records_from(path, text, own, eof, dialect, first + lines, &mut row)?;
        lines += got.newlines;
        buf.copy_within(got.consumed..filled, 0);
        filled -= got.consumed;
        want = if got.short {
            (filled * 2).max(BLOCK)
        } else {
            BLOCK
        };
        if eof && filled == 0 {
            return Ok(());
        }
    }
}

/// [`records`], with `buf`'s first line counted as line `first`.
#[allow(unsafe_code)]
fn records_from(
    path: &Path,
    buf: &[u8],
    own: usize,
    at_end: bool,
    dialect: Dialect,
    first: u64,
    row: impl FnMut(&Fields<'_>, u64) -> Result<()>,
) -> Result<Got> {
    #[cfg(target_arch = "x86_64")]
    if block::wide() {
        // SAFETY: the CPU has AVX2 and BMI1.
        return unsafe { records_wide(path, buf, own, at_end, dialect, first, row) };
    }
    // SAFETY: a `Block` needs nothing beyond the target's instructions.
    unsafe { records_in::<Block>(path, buf, own, at_end, dialect, first, row) }
}

/// [`records_from`] with AVX2's comparisons: the whole loop, so that the split is inlined
/// into it (a split called for every line returned its line through memory, and reading it
/// back stalled).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1")]
#[allow(unsafe_code)]
fn records_wide(
    path: &Path,
    buf: &[u8],
    own: usize,
    at_end: bool,
    dialect: Dialect,
    first: u64,
    row: impl FnMut(&Fields<'_>, u64) -> Result<()>,
) -> Result<Got> {
    // SAFETY: this function runs only where the CPU has AVX2 and BMI1.
    unsafe { records_in::<block::Wide>(path, buf, own, at_end, dialect, first, row) }
}

/// [`records_from`], splitting with `L`.
///
/// # Safety
/// The CPU has the instructions `L` uses ([`Lanes::load`]).
#[inline(always)]
#[allow(unsafe_code)]
unsafe fn records_in<L: Lanes>(
    path: &Path,
    buf: &[u8],
    own: usize,
    at_end: bool,
    dialect: Dialect,
    first: u64,
    mut row: impl FnMut(&Fields<'_>, u64) -> Result<()>,
) -> Result<Got> {
    let mut ends = Vec::with_capacity(32);
    let mut record = csv::StringRecord::new();
    let (mut pos, mut line) = (0usize, first);
    while pos < own {
        let rest = &buf[pos..];
        // SAFETY: the caller vouches for `L`'s instructions.
        let cut = match unsafe { split_in::<L>(rest, dialect.delimiter, &mut ends) } {
            Some(cut) => cut,
            None if at_end => split_last(rest, dialect.delimiter, &mut ends),
            None => {
                return Ok(Got {
                    consumed: pos,
                    newlines: line - first,
                    short: true,
                });
            }
        };
        let plain = if cut.needs_csv(dialect) {
            None
        } else {
            text_of(&rest[..cut.end], cut.ascii)
        };
        if let Some(text) = plain {
            // The common row: no quotes, split in one pass.
            if !text.is_empty() {
                ends.push(text.len());
                row(
                    &Fields {
                        text,
                        ends: &ends,
                        gap: 1,
                    },
                    line,
                )?;
            }
            pos += cut.next;
            line += 1;
            continue;
        }
        // Quotes (maybe around line ends), a lone CR or bytes that are not UTF-8: the csv
        // reader reads the record (and says what is wrong with it). It takes a UTF-8 BOM at
        // its start for a file's and drops it; a BOM starting a line is the line's own bytes,
        // so a line end goes before it (and is taken off the reader's positions).
        let lead: &[u8] = if rest.starts_with(BOM) { b"\n" } else { b"" };
        let mut csv = csv::ReaderBuilder::new()
            .delimiter(dialect.delimiter)
            .quoting(dialect.quoting)
            .has_headers(false)
            .flexible(true)
            .from_reader(std::io::Read::chain(lead, rest));
        // The reader goes on while more records start inside this line (after lone CRs: a
        // file whose lines all end in a CR alone is one long line to the splitter, read by
        // one reader, not by one a record); what is left of the line goes back to the
        // splitter.
        let mut done = 0; // bytes of `rest` handed over
        loop {
            match csv.read_record(&mut record) {
                Ok(true) => {}
                Ok(false) if done == 0 => {
                    pos += cut.next;
                    line += 1;
                    break;
                }
                Ok(false) => {
                    pos += done;
                    break;
                }
                Err(e) => return Err(csv_error(path, line, e)),
            }
            let used = (csv.position().byte() as usize).saturating_sub(lead.len());
            if used <= done || (!at_end && used >= rest.len()) {
                return Ok(Got {
                    consumed: pos + done,
                    newlines: line - first,
                    short: true,
                });
            }
            // Lines counted here, not by the csv reader: its fast scan of a quoted field does
            // not count the line ends in it.
            // (Where the record starts: the reader's own position, which is where it began
            // reading it, blank lines before it included.)
            let skipped = record
                .position()
                .map_or(0, |p| p.byte() as usize)
                .saturating_sub(lead.len())
                .max(done);
            let at = line + memchr::memchr_iter(b'\n', &rest[done..skipped]).count() as u64;
            row(&Fields::of_record(&record, &mut ends), at)?;
            line += memchr::memchr_iter(b'\n', &rest[done..used]).count() as u64;
            done = used;
            if done >= cut.next
                || rest[done..cut.next]
                    .iter()
                    .all(|&b| b == b'\r' || b == b'\n')
            {
                pos += done;
                break;
            }
        }
    }
    Ok(Got {
        consumed: pos,
        newlines: line - first,
        short: false,
    })
}

/// `bytes` as text when they are UTF-8; `ascii` says the split saw only ASCII in them, and
/// spares them the check (a tenth of the cost of a JMeter row).
#[inline]
#[allow(unsafe_code)]
fn text_of(bytes: &[u8], ascii: bool) -> Option<&str> {
    if ascii {
        debug_assert!(bytes.is_ascii());
        // SAFETY: `split` found no byte with its high bit set in the line `bytes` is part of
        // (`Line::ascii`), and ASCII is UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(bytes) })
    } else {
        std::str::from_utf8(bytes).ok()
    }
}

/// A UTF-8 byte order mark.
const BOM: &[u8] = b"\xef\xbb\xbf";

/// The csv reader's error on the record at `line`, said without its own positions (counted
/// from where it was started, a line, not the file).
fn csv_error(path: &Path, line: u64, e: csv::Error) -> Error {
    match e.kind() {
        csv::ErrorKind::Utf8 { err, .. } => Error::malformed(
            path,
            line,
            Some(err.field() as u64 + 1),
            format!(
                "field {} is not UTF-8 text past byte {}: save the file as UTF-8",
                err.field() + 1,
                err.valid_up_to()
            ),
        ),
        _ => Error::malformed(path, line, None, e.to_string()),
    }
}

/// What [`split`] found in a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line {
    /// Where the line's text ends: before its `\n` (or the end of the bytes) and the carriage
    /// returns right before it. To the csv reader the first of those ends the row and any
    /// others are blank lines (Windows' `\r\r\n`), so the row is the text before them.
    pub end: usize,
    /// Where the next line starts (past the `\n`; the end of the bytes when there is none).
    pub next: usize,
    /// The line holds a quote.
    pub quotes: bool,
    /// The text holds a carriage return (a line end of its own to the csv reader).
    pub stray_cr: bool,
    /// Every byte of the line is ASCII (so its text is UTF-8 without a check of its own).
    pub ascii: bool,
}

impl Line {
    /// Whether the csv reader must read this line: a stray carriage return, or a quote
    /// where quotes quote.
    #[inline]
    pub fn needs_csv(&self, dialect: Dialect) -> bool {
        self.stray_cr || (dialect.quoting && self.quotes)
    }
}

/// Splits the line at the start of `buf`: `ends` gets the end of each field but the last
/// (the last ends at [`Line::end`]). `None` when `buf` holds no line end (the line may go on
/// past it); [`split_last`] reads a last line without one.
///
/// (With SSE2 only: the record loop, which splits every line, chooses AVX2 itself, in
/// [`records_from`]; this is for a line looked at on its own.)
#[allow(unsafe_code)]
pub fn split(buf: &[u8], delimiter: u8, ends: &mut Vec<usize>) -> Option<Line> {
    // SAFETY: a `Block` needs nothing beyond the target's instructions.
    unsafe { split_in::<Block>(buf, delimiter, ends) }
}

/// [`split`], comparing blocks as `L`.
///
/// # Safety
/// The CPU has the instructions `L` uses ([`Lanes::load`]).
#[inline(always)]
#[allow(unsafe_code)]
unsafe fn split_in<L: Lanes>(buf: &[u8], delimiter: u8, ends: &mut Vec<usize>) -> Option<Line> {
    ends.clear();
    // Quotes and carriage returns seen (one mask for both, as a line rarely holds either but
    // the CR before its line end), and bytes beyond ASCII.
    let (mut at, mut odd, mut high) = (0usize, 0u32, 0u32);
    while at + BLOCK <= buf.len() {
        let block: &[u8; BLOCK] = buf[at..at + BLOCK].try_into().expect("a block");
        // SAFETY: the caller vouches for `L`'s instructions.
        let m = classify(unsafe { L::load(block) }, delimiter);
        if m.newline != 0 {
            let stop = m.newline.trailing_zeros();
            let before = (1u32 << stop) - 1;
            push_bits(ends, at, m.delimiters & before);
            let (newline, ascii) = (at + stop as usize, (high | (m.high & before)) == 0);
            let odd_here = m.odd & before;
            if odd | odd_here == 0 {
                return Some(Line {
                    end: newline,
                    next: newline + 1,
                    quotes: false,
                    stray_cr: false,
                    ascii,
                });
            }
            if odd == 0 && stop > 0 && odd_here == 1 << (stop - 1) && buf[newline - 1] == b'\r' {
                // A CRLF line end, and nothing else.
                return Some(Line {
                    end: newline - 1,
                    next: newline + 1,
                    quotes: false,
                    stray_cr: false,
                    ascii,
                });
            }
            return Some(odd_line(buf, newline, ascii));
        }
        push_bits(ends, at, m.delimiters);
        odd |= m.odd;
        high |= m.high;
        at += BLOCK;
    }
    // The last few bytes one at a time (after the blocks' quotes and carriage returns, when
    // they held any).
    let (mut quoted, mut crs) = match odd {
        0 => (false, 0),
        _ => (
            memchr::memchr(b'"', &buf[..at]).is_some(),
            memchr::memchr_iter(b'\r', &buf[..at]).count() as u32,
        ),
    };
    let mut ascii = high == 0;
    for (i, &b) in buf[at..].iter().enumerate() {
        let i = at + i;
        ascii &= b.is_ascii();
        match b {
            b'\n' => return Some(finish(buf, i, quoted, crs, ascii)),
            b'"' => quoted = true,
            b'\r' => crs += 1,
            b if b == delimiter => ends.push(i),
            _ => {}
        }
    }
    None
}

/// The line whose `\n` is at `newline`, holding a quote or a carriage return other than one
/// right before its line end: which, looked for again.
#[cold]
#[inline(never)]
fn odd_line(buf: &[u8], newline: usize, ascii: bool) -> Line {
    let text = &buf[..newline];
    finish(
        buf,
        newline,
        memchr::memchr(b'"', text).is_some(),
        memchr::memchr_iter(b'\r', text).count() as u32,
        ascii,
    )
}

/// Splits the last line of a file, which has no line end: the whole of `buf`.
pub fn split_last(buf: &[u8], delimiter: u8, ends: &mut Vec<usize>) -> Line {
    ends.clear();
    let (mut quotes, mut stray_cr) = (false, false);
    for (i, &b) in buf.iter().enumerate() {
        match b {
            b'"' => quotes = true,
            b'\r' => stray_cr = true,
            b if b == delimiter => ends.push(i),
            _ => {}
        }
    }
    let mut line = Line {
        end: buf.len(),
        next: buf.len(),
        quotes,
        stray_cr,
        ascii: buf.is_ascii(),
    };
    let trailing = trailing_crs(buf);
    if trailing > 0 {
        line.end -= trailing;
        line.stray_cr = buf[..line.end].contains(&b'\r');
    }
    line
}

/// The line whose `\n` is at `newline`, holding `crs` carriage returns: those right before
/// the `\n` end the text, any other is stray.
fn finish(buf: &[u8], newline: usize, quotes: bool, crs: u32, ascii: bool) -> Line {
    let trailing = if crs == 0 {
        0
    } else {
        trailing_crs(&buf[..newline])
    };
    Line {
        end: newline - trailing,
        next: newline + 1,
        quotes,
        stray_cr: crs as usize > trailing,
        ascii,
    }
}

/// How many carriage returns end `text`.
fn trailing_crs(text: &[u8]) -> usize {
    text.iter().rev().take_while(|&&b| b == b'\r').count()
}

/// Pushes `base + i` for every set bit `i` of `bits`, lowest first.
#[inline]
fn push_bits(ends: &mut Vec<usize>, base: usize, mut bits: u32) {
    while bits != 0 {
        ends.push(base + bits.trailing_zeros() as usize);
        bits &= bits - 1;
    }
}

/// Which bytes of a block are the delimiter, a line end, a quote or a carriage return, and
/// beyond ASCII (bit `i` for byte `i`).
struct Masks {
    delimiters: u32,
    newline: u32,
    odd: u32,
    high: u32,
}

/// Bytes classified at a time.
const BLOCK: usize = block::LEN;

#[inline(always)]
fn classify<L: Lanes>(b: L, delimiter: u8) -> Masks {
    Masks {
        delimiters: b.eq(delimiter),
        newline: b.eq(b'\n'),
        odd: b.eq2(b'"', b'\r'),
        high: b.high(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the csv crate makes of the first record of `text`, as field texts, when the
    /// line is plain.
    fn by_csv(line: &[u8], delimiter: u8) -> Vec<Vec<u8>> {
        let mut r = csv::ReaderBuilder::new()
            .delimiter(delimiter)
            .has_headers(false)
            .flexible(true)
            .from_reader(line);
        let mut rec = csv::ByteRecord::new();
        assert!(r.read_byte_record(&mut rec).expect("plain lines read"));
        rec.iter().map(<[u8]>::to_vec).collect()
    }

    fn fields(buf: &[u8], line: &Line, ends: &[usize]) -> Vec<Vec<u8>> {
        let mut from = 0;
        let mut out = Vec::new();
        for &e in ends.iter().chain(std::iter::once(&line.end)) {
            out.push(buf[from..e].to_vec());
            from = e + 1;
        }
        out
    }

    #[test]
    fn plain_lines_split_as_the_csv_crate_splits_them_at_every_length() {
        let mut ends = Vec::new();
        let mut rng = fastrand::Rng::with_seed(17);
        let alphabet = b"0123456789abc,,,\t-. ";
        for len in 0..80 {
            for _ in 0..40 {
                let mut text: Vec<u8> = (0..len)
                    .map(|_| alphabet[rng.usize(..alphabet.len())])
                    .collect();
                let crlf = rng.bool();
                text.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
                text.extend_from_slice(b"next,line\n");
                for delimiter in [b',', b'\t'] {
                    let line = split(&text, delimiter, &mut ends).expect("a line end");
                    assert!(!line.quotes && !line.stray_cr, "{text:?}");
                    assert_eq!(line.next, len + 1 + usize::from(crlf));
                    assert_eq!(line.end, len);
                    let got = fields(&text, &line, &ends);
                    if len > 0 {
                        assert_eq!(
                            got,
                            by_csv(&text[..line.next], delimiter),
                            "{:?}",
                            String::from_utf8_lossy(&text)
                        );
                    }
                    let last = split_last(&text[..len], delimiter, &mut ends);
                    assert_eq!(fields(&text, &last, &ends), got);
                }
            }
        }
    }

    #[test]
    fn odd_bytes_are_noticed_wherever_they_are() {
        let mut ends = Vec::new();
        for len in 1..70 {
            for at in 0..len {
                for (odd, quoted, unquoted) in [
                    (b'"', true, false),
                    (b'\r', true, true),
                    (0xc3, false, false),
                    (b'\t', false, false),
                ] {
                    let mut text = vec![b'a'; len];
                    text[at] = odd;
                    text.push(b'\n');
                    text.extend_from_slice(b"\"x\"\r\xff\n");
                    // A carriage return right before the line end ends the line's text.
                    let line_end = odd == b'\r' && at == len - 1;
                    let line = split(&text, b',', &mut ends).expect("a line end");
                    assert_eq!(
                        line.ascii,
                        odd != 0xc3,
                        "ASCII? byte {odd:#x} at {at} of {len}"
                    );
                    assert_eq!(
                        line.needs_csv(Dialect::csv(b',')),
                        quoted && !line_end,
                        "byte {odd:#x} at {at} of {len}"
                    );
                    assert_eq!(
                        line.needs_csv(Dialect::unquoted(b',')),
                        unquoted && !line_end,
                        "unquoted: byte {odd:#x} at {at} of {len}"
                    );
                    assert_eq!(
                        (line.end, line.next),
                        (len - usize::from(line_end), len + 1)
                    );
                    let last = split_last(&text[..len], b',', &mut ends);
                    assert_eq!(
                        last.ascii,
                        odd != 0xc3,
                        "last, ASCII? byte {odd:#x} at {at} of {len}"
                    );
                    assert_eq!(
                        (last.needs_csv(Dialect::csv(b',')), last.end),
                        (quoted && !line_end, line.end),
                        "last: byte {odd:#x} at {at} of {len}"
                    );
                    assert_eq!(
                        last.needs_csv(Dialect::unquoted(b',')),
                        unquoted && !line_end,
                        "last, unquoted: byte {odd:#x} at {at} of {len}"
                    );
                }
            }
            let mut crlf = vec![b'a'; len];
            crlf.extend_from_slice(b"\r\n");
            let line = split(&crlf, b',', &mut ends).expect("a line end");
            assert_eq!(
                line,
                Line {
                    end: len,
                    next: len + 2,
                    quotes: false,
                    stray_cr: false,
                    ascii: true
                }
            );
        }
    }

    /// Every record of `text` read by [`records`] as (line, fields).
    fn read_all(text: &[u8], dialect: Dialect) -> Result<Vec<(u64, Vec<String>)>> {
        let mut out = Vec::new();
        records(
            Path::new("t.csv"),
            text,
            text.len(),
            true,
            dialect,
            |f, line| {
                out.push((line, (0..f.len()).map(|i| f.at(i).to_string()).collect()));
                Ok(())
            },
        )?;
        Ok(out)
    }

    #[test]
    fn odd_lines_keep_their_bytes_and_their_line_numbers() {
        for dialect in [Dialect::csv(b','), Dialect::unquoted(b',')] {
            // CR-only lines are blank; a BOM starting a line is the line's (the csv reader
            // would drop it as a file's); `grep -n` numbers every row.
            let text = b"a,b\r\r\n\r\r\n\xef\xbb\xbfc,d\r\r\ne,f\r\n\r\ng,\rh\n";
            let got = read_all(text, dialect).expect("the lines read");
            let want = [
                (1, vec!["a", "b"]),
                (3, vec!["\u{feff}c", "d"]),
                (4, vec!["e", "f"]),
                (6, vec!["g", ""]),
                (6, vec!["h"]),
            ];
            let want: Vec<(u64, Vec<String>)> = want
                .into_iter()
                .map(|(l, f)| (l, f.into_iter().map(str::to_string).collect()))
                .collect();
            assert_eq!(got, want, "{dialect:?}");
        }
    }

    #[test]
    fn a_file_whose_lines_end_in_cr_alone_is_read_in_one_go() {
        // One long line to the splitter: 200,000 records read by one csv reader (a reader a
        // record, each splitting the rest of the file again, took minutes).
        let text: Vec<u8> = (0..200_000)
            .flat_map(|i| format!("{i},x\r").into_bytes())
            .collect();
        for dialect in [Dialect::csv(b','), Dialect::unquoted(b',')] {
            let got = read_all(&text, dialect).expect("the records read");
            assert_eq!(got.len(), 200_000);
            assert!(
                got.iter()
                    .enumerate()
                    .all(|(i, (line, f))| *line == 1 && f[0] == i.to_string() && f[1] == "x")
            );
        }
    }

    #[test]
    fn bytes_that_are_not_utf8_are_named_by_line_and_field() {
        let e = read_all(b"a,b\nc,\"x\xffy\"\n", Dialect::csv(b','))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "t.csv:2:2: field 2 is not UTF-8 text past byte 1: save the file as UTF-8"
        );
    }

    #[test]
    #[allow(unsafe_code)]
    fn the_sse2_and_the_avx2_splits_agree() {
        #[cfg(target_arch = "x86_64")]
        if block::wide() {
            let mut rng = fastrand::Rng::with_seed(29);
            let alphabet = b"ab,,,\t\"\r\r\n\xc3\xa9";
            let (mut narrow, mut wide) = (Vec::new(), Vec::new());
            for _ in 0..50_000 {
                let text: Vec<u8> = (0..rng.usize(0..200))
                    .map(|_| alphabet[rng.usize(..alphabet.len())])
                    .collect();
                for delimiter in [b',', b'\t'] {
                    // SAFETY: every x86_64 has SSE2, and this one has AVX2.
                    let (a, b) = unsafe {
                        (
                            split_in::<Block>(&text, delimiter, &mut narrow),
                            split_in::<block::Wide>(&text, delimiter, &mut wide),
                        )
                    };
                    assert_eq!((a, &narrow), (b, &wide), "{text:?}");
                }
            }
        }
    }

    #[test]
    fn a_line_without_its_end_is_not_split() {
        let mut ends = Vec::new();
        for len in 0..40 {
            assert_eq!(split(&vec![b','; len], b',', &mut ends), None);
        }
    }
}
