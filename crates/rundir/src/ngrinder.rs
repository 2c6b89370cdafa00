//! nGrinder's `output.csv`: the per-interval CSV users already have years of, and the
//! first columns of our own `series.csv`.
//!
//! Read: comma, tab or semicolon separators; any sampling interval; the 7-column variant
//! of scripts without the HTTP plugin; `Description` blocks of several test ids; all-zero
//! rows; timestamp gaps. Written: the 13-column header and number format exactly.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use volley_stats::{Interval, Series};

use crate::error::{Error, Result};
use crate::note::{InputNote, Locator, NoteBook, Unit};
use crate::numfmt::ngrinder_number;
use volley_text::civil::Dates;
use volley_text::parts::{self, How, Outcome, Parts, Plan};
use volley_text::rows::{self, Dialect, Fields};

/// Most requests a row may count (a trillion): more is no count a tool wrote, and sums of
/// such rows would overflow.
const MAX_COUNT: f64 = 1e12;

/// nGrinder's header for an HTTP script with one test, verbatim.
pub const HEADER: [&str; 13] = [
    "DateTime",
    "vuser",
    "Tests",
    "Errors",
    "Mean_Test_Time_(ms)",
    "Test_Time_Standard_Deviation_(ms)",
    "TPS",
    "Mean_response_length",
    "Response_bytes_per_second",
    "Response_errors",
    "Mean_time_to_resolve_host",
    "Mean_time_to_establish_connection",
    "Mean_time_to_first_byte",
];

/// Extra columns volley may append after nGrinder's; read back by name.
pub const ELAPSED: &str = "Elapsed_(s)";
/// Length of the interval, s.
pub const PERIOD: &str = "Period_(s)";
/// Arrivals dropped for lack of a free VU.
pub const DROPPED: &str = "Dropped";

/// An `output.csv` (or a `series.csv`) read into series.
#[derive(Debug, Clone)]
pub struct NgrinderFile {
    /// The totals (all tests).
    pub total: Series,
    /// One series per test id, with its description, when the file has `Description` blocks.
    pub tests: Vec<(String, Series)>,
    /// Whether the file had a time-to-first-byte column (the 7-column variant has not).
    pub has_ttfb: bool,
    /// The header's column names.
    pub header: Vec<String>,
    /// Every column outside nGrinder's blocks (`vuser`, `DateTime` and `Description` aside),
    /// by name, one number per row of the series: what volley appends to `series.csv`. A
    /// field that is empty or no number reads as 0.
    pub extras: Vec<(String, Vec<f64>)>,
    /// Rows skipped, or placed in time other than by their own `DateTime`.
    pub notes: Vec<InputNote>,
}

impl NgrinderFile {
    /// The extra column `name`, one number per row of the series.
    pub fn extra(&self, name: &str) -> Option<&[f64]> {
        self.extras
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_slice())
    }
}

/// Whether `text` looks like an nGrinder `output.csv` (its header starts with `DateTime`
/// and `vuser`, in any of the separators nGrinder writes).
pub fn sniff(text: &str) -> bool {
    let first = text
        .trim_start_matches('\u{feff}')
        .lines()
        .next()
        .unwrap_or("");
    separator_of(first).is_some_and(|sep| {
        let mut it = first.split(sep as char);
        it.next() == Some("DateTime") && it.next() == Some("vuser")
    })
}

fn separator_of(header: &str) -> Option<u8> {
    [b',', b'\t', b';']
        .into_iter()
        .find(|&s| header.starts_with(&format!("DateTime{}", s as char)))
}

/// Reads an nGrinder-format CSV from `text`; `path` is used in error messages.
pub fn parse(path: &Path, text: &str) -> Result<NgrinderFile> {
    read_from(path, text.as_bytes())
}

/// Reads the file at `path`.
pub fn read(path: &Path) -> Result<NgrinderFile> {
    read_from(
        path,
        std::fs::File::open(path).map_err(|e| Error::io(path, e))?,
    )
}

/// Reads an nGrinder-format CSV from `reader` in one pass, row by row: what it keeps is the
/// series (and the extra columns), never the text; `path` is used in error messages.
pub fn read_from(path: &Path, reader: impl Read) -> Result<NgrinderFile> {
    let mut reader = BufReader::with_capacity(1 << 16, reader);
    let mut first = Vec::new();
    reader
        .read_until(b'\n', &mut first)
        .map_err(|e| Error::io(path, e))?;
    if first.starts_with("\u{feff}".as_bytes()) {
        first.drain(..3);
    }
    let sep = separator_of(&String::from_utf8_lossy(&first)).ok_or_else(|| {
        Error::malformed(
            path,
            1,
            Some(1),
            "expected an nGrinder header starting with `DateTime,vuser,`",
        )
    })?;
    // The header is the first record; every other is a row.
    let mut read: Option<(Rows<'_>, Table)> = None;
    rows::stream(
        path,
        std::io::Cursor::new(first).chain(reader),
        Dialect::unquoted(sep),
        1,
        |f, line| match &mut read {
            Some((rows, table)) => rows.row(table, f, line),
            None => {
                let rows = Rows::new(path, header_of(f))?;
                let table = Table::new(&rows);
                read = Some((rows, table));
                Ok(())
            }
        },
    )?;
    let (rows, table) = read.ok_or_else(|| Error::malformed(path, 1, None, "empty file"))?;
    Ok(rows.finish(table))
}

/// Reads the nGrinder file at `path` (its rows end at `limit`) in parts of `part` bytes on
/// every core, exactly as [`read_from`] does in one pass (its rows are independent of each
/// other, and no field is quoted, so a part may start at any line). Returns the file and the
/// line ends read; `None` when it is to be read in one pass (a header longer than the first
/// 64 KB, or one the csv reader must read).
pub fn read_parts(path: &Path, limit: u64, part: u64) -> Result<Option<(NgrinderFile, u64)>> {
    let (file, head) = parts::head(path, limit)?;
    let bom = if head.starts_with("\u{feff}".as_bytes()) {
        3
    } else {
        0
    };
    let Some(end) = memchr::memchr(b'\n', &head) else {
        return Ok(None);
    };
    let Some(sep) = separator_of(&String::from_utf8_lossy(&head[bom..end])) else {
        return Ok(None);
    };
    // A header the csv reader must read (a stray CR makes it two records) is the one pass's.
    let first = &head[bom..=end];
    if rows::split(first, sep, &mut Vec::new())
        .is_none_or(|line| line.needs_csv(Dialect::unquoted(sep)))
    {
        return Ok(None);
    }
    let mut header = Vec::new();
    rows::records(
        path,
        first,
        first.len(),
        true,
        Dialect::unquoted(sep),
        |f, _| {
            header = header_of(f);
            Ok(())
        },
    )?;
    let rows = Rows::new(path, header)?;
    let mut acc = Table::new(&rows);
    let reader = NgrinderParts {
        rows: &rows,
        sep,
        spare: Default::default(),
    };
    let lines = parts::read(
        &file,
        Plan::new(end as u64 + 1, limit, part),
        &reader,
        &mut acc,
        1,
    )?;
    Ok(lines.map(|lines| (rows.finish(acc), lines)))
}

/// The header's column names, from its fields.
fn header_of(f: &Fields<'_>) -> Vec<String> {
    (0..f.len()).map(|i| f.at(i).trim().to_string()).collect()
}

/// An nGrinder file read in parts.
struct NgrinderParts<'a> {
    rows: &'a Rows<'a>,
    sep: u8,
    /// Parts' tables already added up, emptied, for the next parts to fill: a part's rows
    /// are written into memory already touched rather than fresh pages.
    spare: std::sync::Mutex<Vec<Table>>,
}

impl Parts for NgrinderParts<'_> {
    type Acc = Table;
    type Seed = ();
    type Part = Table;

    fn read(
        &self,
        buf: &[u8],
        own: usize,
        at_end: bool,
        how: How<'_, (), Table>,
    ) -> Outcome<Table> {
        let mut table = self
            .spare
            .lock()
            .map(|mut s| s.pop())
            .ok()
            .flatten()
            .unwrap_or_else(|| Table::new(self.rows));
        // Rows are numbered in messages from the part's start, or, read in order, on from
        // those before; the part's count is its own.
        let before = match how {
            How::After(acc) => acc.row,
            How::Guess(()) => 0,
        };
        table.row = before;
        // Room for every line the part holds, made once rather than by doubling.
        table.reserve(
            self.rows,
            memchr::memchr_iter(b'\n', &buf[..own]).count() + 1,
        );
        match rows::records(
            self.rows.path,
            buf,
            own,
            at_end,
            Dialect::unquoted(self.sep),
            |f, line| self.rows.row(&mut table, f, line),
        ) {
            Ok(Some((consumed, newlines))) => {
                table.row -= before;
                Outcome::Read {
                    part: table,
                    consumed,
                    newlines,
                }
            }
            Ok(None) => Outcome::NeedMore,
            Err(e) => Outcome::Failed(e),
        }
    }

    fn seed(&self, _: &Table) -> Option<()> {
        Some(())
    }

    fn exact(&self, _: &Table, _: &Table) -> bool {
        true
    }

    fn absorb(&self, acc: &mut Table, mut part: Table, line_base: u64) {
        acc.row += part.row;
        acc.stamps.extend(
            part.stamps
                .drain(..)
                .map(|(line, stamp)| (line + line_base, stamp)),
        );
        acc.total.append(&mut part.total);
        for ((name, series), (part_name, part_series)) in acc.tests.iter_mut().zip(&mut part.tests)
        {
            if name.is_empty() {
                *name = std::mem::take(part_name);
            }
            series.append(part_series);
            part_name.clear();
        }
        for (column, part_column) in acc.extras.iter_mut().zip(&mut part.extras) {
            column.append(part_column);
        }
        acc.book.absorb(
            std::mem::replace(&mut part.book, NoteBook::new(Locator::Line)),
            line_base,
        );
        part.row = 0;
        if let Ok(mut spare) = self.spare.lock() {
            spare.push(part);
        }
    }
}

/// A file's columns, and how each row is read into them.
struct Rows<'a> {
    path: &'a Path,
    header: Vec<String>,
    layout: Layout,
    /// Every column read as a number, and whether it counts requests.
    numeric: Vec<(usize, bool)>,
    extra_cols: Vec<usize>,
    /// The `Elapsed_(s)` and `Period_(s)` columns volley writes, when there are both.
    timed: Option<(usize, usize)>,
}

/// What the rows read so far hold (the whole file's, or a part's).
struct Table {
    /// Rows read (kept or not; blank lines aside).
    row: usize,
    /// Each kept row's line and `DateTime` (without volley's time columns, which place the
    /// rows as they are read).
    stamps: Vec<Stamp>,
    total: Vec<Interval>,
    tests: Vec<(String, Vec<Interval>)>,
    extras: Vec<Vec<f64>>,
    book: NoteBook,
    /// The row being read, by column.
    vals: Vec<f64>,
    /// The last `DateTime`'s date.
    dates: Dates,
}

impl Table {
    /// Room for `n` more rows of `rows`' file.
    fn reserve(&mut self, rows: &Rows<'_>, n: usize) {
        if rows.timed.is_none() {
            self.stamps.reserve(n);
        }
        self.total.reserve(n);
        self.tests
            .iter_mut()
            .for_each(|(_, series)| series.reserve(n));
        self.extras.iter_mut().for_each(|column| column.reserve(n));
    }

    fn new(rows: &Rows<'_>) -> Table {
        Table {
            row: 0,
            stamps: Vec::new(),
            total: Vec::new(),
            tests: rows
                .layout
                .tests
                .iter()
                .map(|_| (String::new(), Vec::new()))
                .collect(),
            extras: vec![Vec::new(); rows.extra_cols.len()],
            book: NoteBook::new(Locator::Line),
            vals: vec![0.0; rows.header.len()],
            dates: Dates::default(),
        }
    }
}

impl<'a> Rows<'a> {
    fn new(path: &'a Path, header: Vec<String>) -> Result<Rows<'a>> {
        let layout = Layout::new(path, &header)?;
        let counts = layout.count_columns();
        let numeric = layout
            .numeric_columns()
            .into_iter()
            .map(|c| (c, counts.contains(&c)))
            .collect();
        let extra_cols = layout.extra_columns(header.len());
        let timed = layout.elapsed.zip(layout.period);
        Ok(Rows {
            path,
            header,
            layout,
            numeric,
            extra_cols,
            timed,
        })
    }

    /// Reads the row on `line` into `t`.
    fn row(&self, t: &mut Table, f: &Fields<'_>, line: u64) -> Result<()> {
        let (path, header) = (self.path, &self.header);
        if f.len() == 1 && f.at(0).trim().is_empty() {
            return Ok(()); // a line of blanks
        }
        t.row += 1;
        let row = t.row;
        if f.len() < header.len() {
            return Err(Error::malformed(
                path,
                line,
                Some(f.len() as u64 + 1),
                format!(
                    "row {row} is truncated: {} fields, the header has {} ({} missing)",
                    f.len(),
                    header.len(),
                    header[f.len()]
                ),
            ));
        }
        if f.len() > header.len() {
            return Err(Error::malformed(
                path,
                line,
                Some(header.len() as u64 + 1),
                format!(
                    "row {row} has {} fields, the header has {} (a separator inside a test description?)",
                    f.len(),
                    header.len()
                ),
            ));
        }
        // A row with a value no interval can have is left out of every series. A count that
        // is plain digits up to 10^12, or any other number that is a plain decimal not below
        // 0, is taken at once; anything else is read and checked by `checked`.
        for &(c, count) in &self.numeric {
            let b = f.bytes(c);
            let fast = if count {
                volley_text::num::whole(b)
                    .filter(|&n| n <= MAX_COUNT as u64)
                    .map(|n| n as f64)
            } else {
                // Told by its first byte, not by its value, so that nothing waits for the
                // value's division (`-0` is left to `checked`, which keeps it).
                if b.first() == Some(&b'-') {
                    None
                } else {
                    volley_text::num::plain(b)
                }
            };
            t.vals[c] = match fast {
                Some(v) => v,
                // An empty TPS is unknown, not 0 (volley writes one for the drain after the
                // stop); every TPS figure leaves it out.
                None if b.is_empty() && self.layout.is_tps(c) => f64::NAN,
                None => match checked(path, line, f.at(c), c, count)? {
                    Ok(v) => v,
                    Err(what) => {
                        t.book
                            .skip(Unit::Row, line, &format!("`{}` is {what}", header[c]));
                        return Ok(());
                    }
                },
            };
        }
        let vals = &t.vals;
        // Placed now by volley's own time columns, or once every row is read by `DateTime`.
        let (start, period) = match self.timed {
            Some((e, p)) => (vals[e], vals[p]),
            None => {
                t.stamps.push((
                    line,
                    parse_datetime(&mut t.dates, f.at(0)).unwrap_or(NO_STAMP),
                ));
                (0.0, 0.0)
            }
        };
        t.total.push(
            self.layout
                .interval(&self.layout.total, vals, start, period),
        );
        for ((d, block), (name, series)) in self.layout.tests.iter().zip(&mut t.tests) {
            if name.is_empty() {
                name.push_str(f.at(*d).trim());
            }
            series.push(self.layout.interval(block, vals, start, period));
        }
        for (out, &c) in t.extras.iter_mut().zip(&self.extra_cols) {
            out.push(volley_text::num::f64(f.at(c).trim()).unwrap_or(0.0));
        }
        Ok(())
    }

    /// The file the rows in `t` make.
    fn finish(self, t: Table) -> NgrinderFile {
        let Table {
            stamps,
            mut total,
            mut tests,
            extras,
            mut book,
            ..
        } = t;
        if self.timed.is_none() {
            place(&stamps, &mut book, |i, start, period| {
                (total[i].start_s, total[i].period_s) = (start, period);
                for (_, series) in &mut tests {
                    (series[i].start_s, series[i].period_s) = (start, period);
                }
            });
        }
        drop(stamps);
        let series = |intervals: Vec<Interval>| Series { intervals };
        let has_ttfb = self.layout.total.ttfb.is_some();
        NgrinderFile {
            total: series(total),
            tests: tests
                .into_iter()
                .map(|(name, iv)| (name, series(iv)))
                .collect(),
            has_ttfb,
            extras: self
                .extra_cols
                .iter()
                .map(|&c| self.header[c].clone())
                .zip(extras)
                .collect(),
            header: self.header,
            notes: book.into_notes(),
        }
    }
}

/// `s` without the whitespace around it (looked for only when an end is not plain ASCII).
#[inline]
fn trim(s: &str) -> &str {
    match s.as_bytes() {
        [a, .., b] if a.is_ascii_graphic() && b.is_ascii_graphic() => s,
        [a] if a.is_ascii_graphic() => s,
        _ => s.trim(),
    }
}

/// Where each column is.
struct Layout {
    total: Block,
    tests: Vec<(usize, Block)>,
    elapsed: Option<usize>,
    period: Option<usize>,
    dropped: Option<usize>,
}

/// Column indices of one block (the totals or one test id).
#[derive(Clone)]
struct Block {
    tests: usize,
    errors: usize,
    mean_time: usize,
    sd: usize,
    tps: usize,
    mean_len: Option<usize>,
    bytes_per_s: Option<usize>,
    response_errors: Option<usize>,
    resolve: Option<usize>,
    connect: Option<usize>,
    ttfb: Option<usize>,
}

impl Block {
    fn find(
        path: &Path,
        header: &[String],
        range: std::ops::Range<usize>,
        suffix: &str,
    ) -> Result<Block> {
        let find = |name: &str| {
            let want = format!("{name}{suffix}");
            range.clone().find(|&i| header[i] == want)
        };
        let need = |name: &str| {
            find(name).ok_or_else(|| {
                Error::malformed(
                    path,
                    1,
                    None,
                    format!("missing column `{name}{suffix}` in the nGrinder header"),
                )
            })
        };
        Ok(Block {
            tests: need("Tests")?,
            errors: need("Errors")?,
            mean_time: need("Mean_Test_Time_(ms)")?,
            sd: need("Test_Time_Standard_Deviation_(ms)")?,
            tps: need("TPS")?,
            mean_len: find("Mean_response_length"),
            bytes_per_s: find("Response_bytes_per_second"),
            response_errors: find("Response_errors"),
            resolve: find("Mean_time_to_resolve_host"),
            connect: find("Mean_time_to_establish_connection"),
            ttfb: find("Mean_time_to_first_byte"),
        })
    }

    fn columns(&self) -> impl Iterator<Item = usize> {
        [self.tests, self.errors, self.mean_time, self.sd, self.tps]
            .into_iter()
            .chain(
                [
                    self.mean_len,
                    self.bytes_per_s,
                    self.response_errors,
                    self.resolve,
                    self.connect,
                    self.ttfb,
                ]
                .into_iter()
                .flatten(),
            )
    }
}

impl Layout {
    fn new(path: &Path, header: &[String]) -> Result<Layout> {
        let descriptions: Vec<usize> = header
            .iter()
            .enumerate()
            .filter(|(_, h)| *h == "Description")
            .map(|(i, _)| i)
            .collect();
        let extras_start = header.iter().position(|h| h == ELAPSED);
        let total_end = descriptions
            .first()
            .copied()
            .or(extras_start)
            .unwrap_or(header.len());
        let total = Block::find(path, header, 0..total_end, "")?;
        let mut tests = Vec::new();
        for (k, &d) in descriptions.iter().enumerate() {
            let end = descriptions
                .get(k + 1)
                .copied()
                .or(extras_start)
                .unwrap_or(header.len());
            tests.push((
                d,
                Block::find(path, header, d + 1..end, &format!("-{}", k + 1))?,
            ));
        }
        let pos = |name: &str| header.iter().position(|h| h == name);
        Ok(Layout {
            total,
            tests,
            elapsed: pos(ELAPSED),
            period: pos(PERIOD),
            dropped: pos(DROPPED),
        })
    }

    /// Whether column `c` is a TPS column (of the total or of a test).
    fn is_tps(&self, c: usize) -> bool {
        self.blocks().any(|b| b.tps == c)
    }

    fn blocks(&self) -> impl Iterator<Item = &Block> {
        std::iter::once(&self.total).chain(self.tests.iter().map(|(_, b)| b))
    }

    /// Every column read as a count of requests.
    fn count_columns(&self) -> Vec<usize> {
        let mut cols = Vec::new();
        for b in self.blocks() {
            cols.extend(
                [Some(b.tests), Some(b.errors), b.response_errors]
                    .into_iter()
                    .flatten(),
            );
        }
        cols.extend(self.dropped);
        cols
    }

    /// Every column read as a number.
    fn numeric_columns(&self) -> Vec<usize> {
        let mut cols = vec![1];
        for b in self.blocks() {
            cols.extend(b.columns());
        }
        cols.extend(
            [self.elapsed, self.period, self.dropped]
                .into_iter()
                .flatten(),
        );
        cols
    }

    /// Every column outside the blocks, `DateTime`, `vuser` and the descriptions.
    fn extra_columns(&self, width: usize) -> Vec<usize> {
        let taken: Vec<usize> = self
            .blocks()
            .flat_map(Block::columns)
            .chain(self.tests.iter().map(|(d, _)| *d))
            .collect();
        (2..width).filter(|c| !taken.contains(c)).collect()
    }

    /// One row's interval of block `b` from the row's numbers, starting `start_s` seconds
    /// into the run and `period_s` long.
    fn interval(&self, b: &Block, vals: &[f64], start_s: f64, period_s: f64) -> Interval {
        let opt = |c: Option<usize>| c.map_or(0.0, |c| vals[c]);
        Interval {
            start_s,
            period_s,
            vusers: vals[1],
            tests: vals[b.tests] as u64,
            errors: vals[b.errors] as u64,
            tps: vals[b.tps],
            mean_test_time_ms: vals[b.mean_time],
            test_time_sd_ms: vals[b.sd],
            // Unknown without the column, not 0 ms.
            mttfb_ms: b.ttfb.map_or(f64::NAN, |c| vals[c]),
            mean_response_length: opt(b.mean_len),
            response_bytes_per_second: opt(b.bytes_per_s),
            response_errors: opt(b.response_errors) as u64,
            mean_resolve_ms: opt(b.resolve),
            mean_connect_ms: opt(b.connect),
            dropped: opt(self.dropped) as u64,
        }
    }
}

/// A kept row's line and its `DateTime` as seconds, [`NO_STAMP`] when it has no valid one:
/// 16 bytes a row, where `Option<i64>` would make it 24 (a long file holds millions).
type Stamp = (u64, i64);

/// The seconds of a row without a valid `DateTime` (no date-time reads as this).
const NO_STAMP: i64 = i64::MIN;

/// Places every row by its `DateTime` (without our extra columns): `set(row, start, period)`.
/// A row without a valid `DateTime`, or stamped earlier than the row above it (a clock stepped
/// back), is placed one interval after the row above, and the rows after it keep their
/// spacing; the notes say which.
fn place(stamps: &[Stamp], book: &mut NoteBook, mut set: impl FnMut(usize, f64, f64)) {
    let second = |s: i64| (s != NO_STAMP).then_some(s);
    let first = stamps.iter().find_map(|&(_, s)| second(s)).unwrap_or(0);
    let gaps = stamps
        .windows(2)
        .filter_map(|w| Some(second(w[1].1)? - second(w[0].1)?))
        .filter(|g| *g > 0);
    let nominal = median_gap(gaps).map_or(1.0, |g| g as f64);
    let (mut offset, mut prev, mut prev_placed) = (0.0, None::<f64>, false);
    for (row, &(line, stamp)) in stamps.iter().enumerate() {
        let (stamp, line) = (second(stamp), &line);
        let start = match (stamp, prev) {
            (Some(t), None) => (t - first) as f64,
            (Some(t), Some(p)) => {
                let own = (t - first) as f64 + offset;
                if own < p || (prev_placed && own <= p) {
                    if own < p && !prev_placed {
                        book.used(Unit::Row, *line, &format!("stamped earlier than the row above (the clock stepped back?): placed {nominal} s after the row above; the rows below keep their spacing."));
                    }
                    offset += p + nominal - own;
                    p + nominal
                } else {
                    own
                }
            }
            (None, p) => {
                book.used(
                    Unit::Row,
                    *line,
                    &format!("no valid DateTime: placed {nominal} s after the row above."),
                );
                p.map_or(0.0, |p| p + nominal)
            }
        };
        prev_placed = stamp.is_none();
        prev = Some(start);
        set(row, start, nominal);
    }
}

/// Field `raw` of column `col` read as [`num`] reads it (an error when it is no number), and
/// checked: `Err(what it is)` when no interval can have it, a count (`count`) or not.
#[cold]
#[inline(never)]
fn checked(
    path: &Path,
    line: u64,
    raw: &str,
    col: usize,
    count: bool,
) -> Result<std::result::Result<f64, &'static str>> {
    let v = num(path, line, trim(raw), col)?;
    Ok(Err(if v.is_nan() {
        "NaN"
    } else if v.is_infinite() {
        "infinite"
    } else if v < 0.0 {
        "negative"
    } else if count && v.fract() != 0.0 {
        "not a whole number"
    } else if count && v > MAX_COUNT {
        "more than 10^12"
    } else {
        return Ok(Ok(v));
    }))
}

/// The median (the upper one of an even count) of `gaps`, `None` when there are none. Nearly
/// every gap of a result file is its sampling period: those are counted, and only the others
/// kept (a file of millions of rows would otherwise hold all its gaps once more).
fn median_gap(gaps: impl Iterator<Item = i64>) -> Option<i64> {
    let (mut common, mut n_common, mut others) = (None, 0usize, Vec::new());
    for g in gaps {
        match common {
            Some(c) if c == g => n_common += 1,
            Some(_) => others.push(g),
            None => (common, n_common) = (Some(g), 1),
        }
    }
    let common = common?;
    let half = (n_common + others.len()) / 2;
    // In order: the others below the common gap, the common gap `n_common` times, the rest.
    others.sort_unstable();
    let below = others.partition_point(|&g| g < common);
    Some(match half {
        h if h < below => others[h],
        h if h < below + n_common => common,
        h => others[h - n_common],
    })
}

/// A field as a number: empty and `null` are 0; a decimal comma reads as a point.
fn num(path: &Path, line: u64, raw: &str, col: usize) -> Result<f64> {
    if raw.is_empty() || raw == "null" {
        return Ok(0.0);
    }
    let parsed = if raw.contains(',') {
        volley_text::num::f64(&raw.replace(',', "."))
    } else {
        volley_text::num::f64(raw)
    };
    parsed.map_err(|_| {
        Error::malformed(
            path,
            line,
            Some(col as u64 + 1),
            format!("expected a number, found `{raw}`"),
        )
    })
}

/// `yyyy-MM-dd HH:mm:ss` as seconds (the zone is unknown, so only differences mean anything).
fn parse_datetime(dates: &mut Dates, s: &str) -> Option<i64> {
    let s = trim(s);
    if let Some(t) = dates.seconds(s.as_bytes(), b' ') {
        return Some(t);
    }
    let dt: jiff::civil::DateTime = s.parse().ok()?;
    Some(
        dt.to_zoned(jiff::tz::TimeZone::UTC)
            .ok()?
            .timestamp()
            .as_second(),
    )
}

/// The 13 nGrinder fields of one row, formatted as nGrinder formats them.
pub fn format_row(datetime: &str, row: &Interval) -> [String; 13] {
    let n = ngrinder_number;
    [
        datetime.to_string(),
        n(row.vusers),
        row.tests.to_string(),
        row.errors.to_string(),
        n(row.mean_test_time_ms),
        n(row.test_time_sd_ms),
        // Unknown (the drain after the stop, which has no length): an empty field, which
        // pandas reads as NaN and leaves out of the TPS mean and percentiles, as volley does.
        if row.tps.is_nan() {
            String::new()
        } else {
            n(row.tps)
        },
        n(row.mean_response_length),
        n(row.response_bytes_per_second),
        row.response_errors.to_string(),
        n(row.mean_resolve_ms),
        n(row.mean_connect_ms),
        n(row.mttfb_ms),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "DateTime,vuser,Tests,Errors,Mean_Test_Time_(ms),Test_Time_Standard_Deviation_(ms),TPS,Mean_response_length,Response_bytes_per_second,Response_errors,Mean_time_to_resolve_host,Mean_time_to_establish_connection,Mean_time_to_first_byte
2016-02-15 16:10:52,2,176,0,23.312,31.182,88,7336.335,645597.5,0,0.307,1.403,22.409
2016-02-15 16:10:54,4,337,1,22.733,38.204,168.5,6335.273,1067493.5,0,0.142,1.19,22.045
";

    #[test]
    fn reads_the_standard_header() {
        let f = parse(Path::new("x.csv"), SAMPLE).unwrap();
        assert!(f.has_ttfb);
        assert_eq!(f.total.intervals.len(), 2);
        let r = &f.total.intervals[1];
        assert_eq!(
            (r.tests, r.errors, r.tps, r.mttfb_ms),
            (337, 1, 168.5, 22.045)
        );
        assert_eq!((r.start_s, r.period_s), (2.0, 2.0));
    }

    #[test]
    fn reads_tabs_semicolons_and_the_seven_column_variant() {
        let tab = SAMPLE.replace(',', "\t");
        assert_eq!(parse(Path::new("t"), &tab).unwrap().total.tests(), 513);
        let seven = "DateTime;vuser;Tests;Errors;Mean_Test_Time_(ms);Test_Time_Standard_Deviation_(ms);TPS\n2020-01-01 00:00:00;1;10;0;5;1;5\n";
        let f = parse(Path::new("s"), seven).unwrap();
        assert!(!f.has_ttfb);
        assert_eq!(f.total.tests(), 10);
    }

    #[test]
    fn the_median_gap_is_what_a_selection_of_every_gap_gives() {
        let mut rng = fastrand::Rng::with_seed(41);
        for round in 0..3_000 {
            let n = rng.usize(0..if round % 10 == 0 { 2_000 } else { 12 });
            let common = rng.i64(1..4);
            let mut gaps: Vec<i64> = (0..n)
                .map(|_| {
                    if rng.u8(..4) == 0 {
                        rng.i64(1..8)
                    } else {
                        common
                    }
                })
                .collect();
            let got = median_gap(gaps.iter().copied());
            let half = gaps.len() / 2;
            let want = (!gaps.is_empty()).then(|| *gaps.select_nth_unstable(half).1);
            assert_eq!(got, want, "{gaps:?}");
        }
    }

    #[test]
    fn reads_description_blocks() {
        let text = "DateTime,vuser,Tests,Errors,Mean_Test_Time_(ms),Test_Time_Standard_Deviation_(ms),TPS,Description,Tests-1,Errors-1,Mean_Test_Time_(ms)-1,Test_Time_Standard_Deviation_(ms)-1,TPS-1,Description,Tests-2,Errors-2,Mean_Test_Time_(ms)-2,Test_Time_Standard_Deviation_(ms)-2,TPS-2
2020-01-01 00:00:00,2,30,1,5,1,15,login,10,0,4,1,5,search,20,1,6,1,10
";
        let f = parse(Path::new("d"), text).unwrap();
        assert_eq!(f.tests.len(), 2);
        assert_eq!(f.tests[0].0, "login");
        assert_eq!(f.tests[1].1.tests(), 20);
        assert_eq!(f.total.tests(), 30);
    }

    #[test]
    fn truncated_row_names_the_line() {
        let text = format!("{SAMPLE}2016-02-15 16:10:56,5,476,0\n");
        let err = parse(Path::new("cut.csv"), &text).unwrap_err().to_string();
        assert!(err.starts_with("cut.csv:4:5: row 3 is truncated"), "{err}");
        assert!(err.contains("Mean_Test_Time_(ms) missing"), "{err}");
    }

    #[test]
    fn bad_number_names_line_and_column() {
        let text = SAMPLE.replace("168.5", "lots");
        let err = parse(Path::new("b.csv"), &text).unwrap_err().to_string();
        assert_eq!(err, "b.csv:3:7: expected a number, found `lots`");
    }

    #[test]
    fn extra_columns_are_kept_by_name_one_number_per_kept_row() {
        let text = "\u{feff}DateTime;vuser;Tests;Errors;Mean_Test_Time_(ms);Test_Time_Standard_Deviation_(ms);TPS;Elapsed_(s);Period_(s);Errors_timeout;Late
2020-01-01 00:00:00;1;10;0;5,5;1;5;0;2;3;
2020-01-01 00:00:02;1;-4;0;5;1;5;2;2;9;1
2020-01-01 00:00:04;1;12;1;6;1;6;4;2;1;x
";
        let f = parse(Path::new("e"), text).unwrap();
        assert_eq!(
            f.total.intervals.len(),
            2,
            "the row with -4 tests is skipped"
        );
        assert_eq!(f.total.intervals[0].mean_test_time_ms, 5.5);
        assert_eq!(
            (f.total.intervals[1].start_s, f.total.intervals[1].period_s),
            (4.0, 2.0)
        );
        assert_eq!(f.extra("Errors_timeout"), Some(&[3.0, 1.0][..]));
        assert_eq!(
            f.extra("Late"),
            Some(&[0.0, 0.0][..]),
            "empty and non-numbers read as 0"
        );
        assert_eq!(f.extra("Elapsed_(s)"), Some(&[0.0, 4.0][..]));
        assert_eq!(
            f.extra("Tests"),
            None,
            "nGrinder's own columns are in the series"
        );
    }

    #[test]
    fn bytes_that_are_not_utf8_name_their_line() {
        let mut bytes = SAMPLE.as_bytes().to_vec();
        let at = bytes.iter().rposition(|&b| b == b'2').unwrap();
        bytes[at] = 0xff;
        let err = read_from(Path::new("u.csv"), &bytes[..])
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("u.csv:3"), "{err}");
    }

    #[test]
    fn written_rows_read_back() {
        let row = Interval {
            vusers: 3.0,
            tests: 10,
            tps: 5.0,
            mttfb_ms: 1.23456,
            ..Default::default()
        };
        let fields = format_row("2020-01-01 00:00:00", &row);
        assert_eq!(fields[12], "1.235");
        let text = format!("{}\n{}\n", HEADER.join(","), fields.join(","));
        let back = parse(Path::new("w"), &text).unwrap();
        assert_eq!(back.total.intervals[0].mttfb_ms, 1.235);
    }
}
