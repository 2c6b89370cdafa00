//! nGrinder's `output.csv`: the per-interval CSV users already have years of, and the
//! first columns of our own `series.csv`.
//!
//! Read: comma, tab or semicolon separators; any sampling interval; the 7-column variant
//! of scripts without the HTTP plugin; `Description` blocks of several test ids; all-zero
//! rows; timestamp gaps. Written: the 13-column header and number format exactly.

use std::path::Path;

use volley_stats::{Interval, Series};

use crate::error::{FormatError, Result};
use crate::note::{InputNote, Locator, NoteBook, Unit};
use crate::numfmt::ngrinder_number;

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
    /// The header's column names, for extras callers want to read.
    pub header: Vec<String>,
    /// Every row's fields, for extras callers want to read (the rows of the series: rows
    /// skipped are not here).
    pub rows: Vec<Vec<String>>,
    /// Rows skipped, or placed in time other than by their own `DateTime`.
    pub notes: Vec<InputNote>,
}

/// Whether `text` looks like an nGrinder `output.csv` (its header starts with `DateTime`
/// and `vuser`, in any of the separators nGrinder writes).
pub fn sniff(text: &str) -> bool {
    let first = text.trim_start_matches('\u{feff}').lines().next().unwrap_or("");
    separator_of(first).is_some_and(|sep| {
        let mut it = first.split(sep as char);
        it.next() == Some("DateTime") && it.next() == Some("vuser")
    })
}

fn separator_of(header: &str) -> Option<u8> {
    [b',', b'\t', b';'].into_iter().find(|&s| header.starts_with(&format!("DateTime{}", s as char)))
}

/// Reads an nGrinder-format CSV from `text`; `path` is used in error messages.
pub fn parse(path: &Path, text: &str) -> Result<NgrinderFile> {
    let text = text.trim_start_matches('\u{feff}');
    let header_line = text.lines().next().unwrap_or("");
    let sep = separator_of(header_line).ok_or_else(|| {
        FormatError::malformed(path, 1, Some(1), "expected an nGrinder header starting with `DateTime,vuser,`")
    })?;
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(sep)
        .has_headers(false)
        .flexible(true)
        .quoting(false)
        .from_reader(text.as_bytes());
    let mut records = reader.records();
    let header: Vec<String> = match records.next() {
        Some(Ok(r)) => r.iter().map(|s| s.trim().to_string()).collect(),
        _ => return Err(FormatError::malformed(path, 1, None, "empty file")),
    };
    let layout = Layout::new(path, &header)?;
    let mut rows = Vec::new();
    for rec in records {
        let rec = rec.map_err(|e| FormatError::malformed(path, e.position().map_or(0, |p| p.line()), None, e.to_string()))?;
        let line = rec.position().map_or(0, |p| p.line());
        let fields: Vec<String> = rec.iter().map(|s| s.trim().to_string()).collect();
        if fields.len() == 1 && fields[0].is_empty() {
            continue; // blank line, e.g. Windows `\r\r\n` endings
        }
        let row = rows.len() + 1;
        if fields.len() < header.len() {
            return Err(FormatError::malformed(
                path,
                line,
                Some(fields.len() as u64 + 1),
                format!(
                    "row {row} is truncated: {} fields, the header has {} ({} missing)",
                    fields.len(),
                    header.len(),
                    header[fields.len()]
                ),
            ));
        }
        if fields.len() > header.len() {
            return Err(FormatError::malformed(
                path,
                line,
                Some(header.len() as u64 + 1),
                format!(
                    "row {row} has {} fields, the header has {} (a separator inside a test description?)",
                    fields.len(),
                    header.len()
                ),
            ));
        }
        rows.push((line, fields));
    }
    layout.build(path, header, rows)
}

/// Reads the file at `path`.
pub fn read(path: &Path) -> Result<NgrinderFile> {
    let text = std::fs::read_to_string(path).map_err(|e| FormatError::io(path, e))?;
    parse(path, &text)
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
    fn find(path: &Path, header: &[String], range: std::ops::Range<usize>, suffix: &str) -> Result<Block> {
        let find = |name: &str| {
            let want = format!("{name}{suffix}");
            range.clone().find(|&i| header[i] == want)
        };
        let need = |name: &str| {
            find(name).ok_or_else(|| {
                FormatError::malformed(path, 1, None, format!("missing column `{name}{suffix}` in the nGrinder header"))
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
}

impl Layout {
    fn new(path: &Path, header: &[String]) -> Result<Layout> {
        let descriptions: Vec<usize> =
            header.iter().enumerate().filter(|(_, h)| *h == "Description").map(|(i, _)| i).collect();
        let extras_start = header.iter().position(|h| h == ELAPSED);
        let total_end = descriptions.first().copied().or(extras_start).unwrap_or(header.len());
        let total = Block::find(path, header, 0..total_end, "")?;
        let mut tests = Vec::new();
        for (k, &d) in descriptions.iter().enumerate() {
            let end = descriptions.get(k + 1).copied().or(extras_start).unwrap_or(header.len());
            tests.push((d, Block::find(path, header, d + 1..end, &format!("-{}", k + 1))?));
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

    fn build(self, path: &Path, header: Vec<String>, rows: Vec<(u64, Vec<String>)>) -> Result<NgrinderFile> {
        let mut book = NoteBook::new(Locator::Line);
        // A row with a value no interval can have is left out of every series.
        let columns = self.numeric_columns();
        let counts = self.count_columns();
        let mut kept: Vec<(u64, Vec<String>)> = Vec::with_capacity(rows.len());
        for (line, r) in rows {
            let mut bad = None;
            for &c in &columns {
                let v = num(path, line, &r, c)?;
                let what = if v.is_nan() {
                    "NaN"
                } else if v.is_infinite() {
                    "infinite"
                } else if v < 0.0 {
                    "negative"
                } else if counts.contains(&c) && v.fract() != 0.0 {
                    "not a whole number"
                } else if counts.contains(&c) && v > MAX_COUNT {
                    "more than 10^12"
                } else {
                    continue;
                };
                bad = Some(format!("`{}` is {what}", header[c]));
                break;
            }
            match bad {
                Some(why) => book.skip(Unit::Row, line, &why),
                None => kept.push((line, r)),
            }
        }
        let times = self.times(path, &kept, &mut book)?;
        let total = self.series(path, &kept, &self.total, &times)?;
        let mut tests = Vec::new();
        for (d, block) in &self.tests {
            let name = kept.iter().find_map(|(_, r)| r.get(*d).filter(|s| !s.is_empty()).cloned()).unwrap_or_default();
            tests.push((name, self.series(path, &kept, block, &times)?));
        }
        Ok(NgrinderFile {
            total,
            tests,
            has_ttfb: self.total.ttfb.is_some(),
            header,
            rows: kept.into_iter().map(|(_, r)| r).collect(),
            notes: book.into_notes(),
        })
    }

    /// Every column read as a count of requests.
    fn count_columns(&self) -> Vec<usize> {
        let mut cols = Vec::new();
        for b in std::iter::once(&self.total).chain(self.tests.iter().map(|(_, b)| b)) {
            cols.extend([Some(b.tests), Some(b.errors), b.response_errors].into_iter().flatten());
        }
        cols.extend(self.dropped);
        cols
    }

    /// Every column read as a number.
    fn numeric_columns(&self) -> Vec<usize> {
        let mut cols = vec![1];
        for b in std::iter::once(&self.total).chain(self.tests.iter().map(|(_, b)| b)) {
            cols.extend([b.tests, b.errors, b.mean_time, b.sd, b.tps]);
            cols.extend([b.mean_len, b.bytes_per_s, b.response_errors, b.resolve, b.connect, b.ttfb].into_iter().flatten());
        }
        cols.extend([self.elapsed, self.period, self.dropped].into_iter().flatten());
        cols
    }

    /// Start and length of every interval, from our extra columns or else from `DateTime`.
    /// A row without a valid `DateTime`, or stamped earlier than the row above it (a clock
    /// stepped back), is placed one interval after the row above, and the rows after it
    /// keep their spacing; the notes say which.
    fn times(&self, path: &Path, rows: &[(u64, Vec<String>)], book: &mut NoteBook) -> Result<Vec<(f64, f64)>> {
        if let (Some(e), Some(p)) = (self.elapsed, self.period) {
            return rows.iter().map(|(line, r)| Ok((num(path, *line, r, e)?, num(path, *line, r, p)?))).collect();
        }
        let stamps: Vec<Option<i64>> = rows.iter().map(|(_, r)| parse_datetime(&r[0])).collect();
        let first = stamps.iter().flatten().next().copied().unwrap_or(0);
        let mut gaps: Vec<i64> = stamps.windows(2).filter_map(|w| Some(w[1]? - w[0]?)).filter(|g| *g > 0).collect();
        gaps.sort_unstable();
        let nominal = gaps.get(gaps.len() / 2).copied().unwrap_or(1) as f64;
        let (mut out, mut offset, mut prev, mut prev_placed) = (Vec::with_capacity(rows.len()), 0.0, None::<f64>, false);
        for ((line, _), stamp) in rows.iter().zip(&stamps) {
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
                    book.used(Unit::Row, *line, &format!("no valid DateTime: placed {nominal} s after the row above."));
                    p.map_or(0.0, |p| p + nominal)
                }
            };
            prev_placed = stamp.is_none();
            prev = Some(start);
            out.push((start, nominal));
        }
        Ok(out)
    }

    fn series(&self, path: &Path, rows: &[(u64, Vec<String>)], b: &Block, times: &[(f64, f64)]) -> Result<Series> {
        let mut intervals = Vec::with_capacity(rows.len());
        for (i, (line, r)) in rows.iter().enumerate() {
            let line = *line;
            let opt = |c: Option<usize>| -> Result<f64> {
                match c {
                    Some(c) if c < r.len() => num(path, line, r, c),
                    _ => Ok(0.0),
                }
            };
            let (start_s, period_s) = times[i];
            intervals.push(Interval {
                start_s,
                period_s,
                vusers: num(path, line, r, 1)?,
                tests: num(path, line, r, b.tests)? as u64,
                errors: num(path, line, r, b.errors)? as u64,
                tps: num(path, line, r, b.tps)?,
                mean_test_time_ms: num(path, line, r, b.mean_time)?,
                test_time_sd_ms: num(path, line, r, b.sd)?,
                // Unknown without the column, not 0 ms.
                mttfb_ms: if b.ttfb.is_some() { opt(b.ttfb)? } else { f64::NAN },
                mean_response_length: opt(b.mean_len)?,
                response_bytes_per_second: opt(b.bytes_per_s)?,
                response_errors: opt(b.response_errors)? as u64,
                mean_resolve_ms: opt(b.resolve)?,
                mean_connect_ms: opt(b.connect)?,
                dropped: opt(self.dropped)? as u64,
            });
        }
        Ok(Series { intervals })
    }
}

fn num(path: &Path, line: u64, r: &[String], col: usize) -> Result<f64> {
    let raw = r.get(col).map(String::as_str).unwrap_or("");
    let cleaned = raw.replace(',', ".");
    if raw.is_empty() || raw == "null" {
        return Ok(0.0);
    }
    cleaned.parse::<f64>().map_err(|_| FormatError::malformed(path, line, Some(col as u64 + 1), format!("expected a number, found `{raw}`")))
}

/// `yyyy-MM-dd HH:mm:ss` as seconds (the zone is unknown, so only differences mean anything).
fn parse_datetime(s: &str) -> Option<i64> {
    let dt: jiff::civil::DateTime = s.trim().parse().ok()?;
    Some(dt.to_zoned(jiff::tz::TimeZone::UTC).ok()?.timestamp().as_second())
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
        n(row.tps),
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
        assert_eq!((r.tests, r.errors, r.tps, r.mttfb_ms), (337, 1, 168.5, 22.045));
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
    fn written_rows_read_back() {
        let row = Interval { vusers: 3.0, tests: 10, tps: 5.0, mttfb_ms: 1.23456, ..Default::default() };
        let fields = format_row("2020-01-01 00:00:00", &row);
        assert_eq!(fields[12], "1.235");
        let text = format!("{}\n{}\n", HEADER.join(","), fields.join(","));
        let back = parse(Path::new("w"), &text).unwrap();
        assert_eq!(back.total.intervals[0].mttfb_ms, 1.235);
    }
}
