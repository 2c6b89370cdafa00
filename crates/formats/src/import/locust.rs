//! Locust's `--csv` files: `_stats_history.csv` (per second, cumulative totals) and
//! `_stats.csv` (totals only). Locust measures no time to first byte: the MTTFB figures
//! of a Locust file are its response times, and the report says so.

use std::path::Path;

use volley_stats::{Interval, Series};

use crate::error::{FormatError, Result};
use crate::import::source;
use crate::note::{Figure, InputNote, Locator, NoteBook, Unit};
use crate::source::{Format, Source};

/// Most requests a row may count (a trillion): more is no count Locust wrote, and sums of
/// such rows would overflow.
const MAX_COUNT: f64 = 1e12;

/// Whether the first line is a stats-history header.
pub fn sniff_history(first_line: &str) -> bool {
    first_line.starts_with("Timestamp,User Count,Type,Name,Requests/s")
}

/// Whether the first line is a stats header.
pub fn sniff_stats(first_line: &str) -> bool {
    first_line.starts_with("Type,Name,Request Count,Failure Count")
}

/// A file's rows after its header: (line, fields).
type Lines = Vec<(u64, Vec<String>)>;

/// The header and the rows of a Locust CSV.
fn records(path: &Path, text: &str) -> Result<(Vec<String>, Lines)> {
    let mut csv = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(text.as_bytes());
    let mut rows = Vec::new();
    let mut header = Vec::new();
    for rec in csv.records() {
        let rec = rec.map_err(|e| FormatError::malformed(path, e.position().map_or(0, |p| p.line()), None, e.to_string()))?;
        let line = rec.position().map_or(0, |p| p.line());
        let fields: Vec<String> = rec.iter().map(|s| s.trim().to_string()).collect();
        if fields.iter().all(|f| f.is_empty()) {
            continue; // Windows writes `\r\r\n`: blank rows between the real ones
        }
        if header.is_empty() {
            header = fields;
            continue;
        }
        if fields.len() != header.len() {
            let what = if fields.len() < header.len() { "truncated row" } else { "too many fields (a separator in a name?)" };
            return Err(FormatError::malformed(
                path,
                line,
                Some(fields.len().min(header.len()) as u64 + 1),
                format!("{what}: {} fields, the header has {}", fields.len(), header.len()),
            ));
        }
        rows.push((line, fields));
    }
    Ok((header, rows))
}

fn column(path: &Path, header: &[String], name: &str) -> Result<usize> {
    header
        .iter()
        .position(|h| h == name)
        .ok_or_else(|| FormatError::malformed(path, 1, None, format!("Locust header has no `{name}` column")))
}

/// A field as a number; `None` for Locust's `N/A` and for an empty field.
fn value(path: &Path, line: u64, fields: &[String], c: usize, header: &[String]) -> Result<Option<f64>> {
    let raw = fields.get(c).map(String::as_str).unwrap_or("");
    if raw == "N/A" || raw.is_empty() {
        return Ok(None);
    }
    raw.parse()
        .map(Some)
        .map_err(|_| FormatError::malformed(path, line, Some(c as u64 + 1), format!("`{}`: expected a number, found `{raw}`", header[c])))
}

/// Why `v` cannot be a count or a time, if it cannot.
fn odd(v: f64) -> Option<&'static str> {
    crate::import::out_of_range(v, f64::MAX, "negative", "too large")
}

/// Reads `_stats_history.csv`: the `Aggregated` rows, differenced into intervals.
pub fn read_history(path: &Path, text: &str) -> Result<Source> {
    let (header, rows) = records(path, text)?;
    let c = |n: &str| column(path, &header, n);
    let (ts_c, users_c, name_c) = (c("Timestamp")?, c("User Count")?, c("Name")?);
    let (count_c, fail_c, avg_c) = (c("Total Request Count")?, c("Total Failure Count")?, c("Total Average Response Time")?);
    let mut series = Series::default();
    let mut book = NoteBook::new(Locator::Line);
    // The previous row: its time stamp (moved on where the clock stepped back), totals and
    // response-time sum.
    let (mut prev_ts, mut prev_count, mut prev_fail, mut prev_sum) = (None::<f64>, 0.0, 0.0, 0.0);
    let (mut first_ts, mut offset, mut prev_placed) = (None, 0.0, false);
    'rows: for (line, f) in &rows {
        if f.get(name_c).map(String::as_str) != Some("Aggregated") {
            continue;
        }
        let line = *line;
        let n = |col| value(path, line, f, col, &header);
        let (ts, count, fail, avg, users) = (n(ts_c)?, n(count_c)?, n(fail_c)?, n(avg_c)?, n(users_c)?);
        for (col, v) in [(count_c, count), (fail_c, fail), (avg_c, avg), (users_c, users), (ts_c, ts)] {
            if let Some(why) = v.and_then(odd) {
                book.skip(Unit::Row, line, &format!("`{}` is {why}", header[col]));
                continue 'rows;
            }
        }
        let (mut count, mut fail, avg) = (count.unwrap_or(0.0), fail.unwrap_or(0.0), avg.unwrap_or(0.0));
        if count > MAX_COUNT {
            book.skip(Unit::Row, line, "`Total Request Count` is more than 10^12");
            continue;
        }
        if fail > count {
            book.skip(Unit::Row, line, "more failures than requests");
            continue;
        }
        // Seconds on a clock that never steps back.
        let ts = match (ts, prev_ts) {
            (Some(t), Some(p)) if t + offset < p || (prev_placed && t + offset <= p) => {
                if !prev_placed {
                    book.used(Unit::Row, line, "stamped earlier than the row above (the clock stepped back?): placed 1 s after the row above; the rows below keep their spacing.");
                }
                offset += p + 1.0 - (t + offset);
                p + 1.0
            }
            (Some(t), _) => t + offset,
            (None, Some(p)) => {
                book.used(Unit::Row, line, "no Timestamp: placed 1 s after the row above.");
                p + 1.0
            }
            (None, None) => {
                book.skip(Unit::Row, line, "the first row has no Timestamp to start the series from");
                continue;
            }
        };
        prev_placed = f.get(ts_c).is_none_or(|t| t.is_empty() || t == "N/A");
        let first = *first_ts.get_or_insert(ts);
        if prev_ts.is_some() && (count < prev_count || fail < prev_fail) {
            book.used(
                Unit::Row,
                line,
                "lower totals than the row above (Locust's statistics were reset): counted from 0 again; requests made between the row above and the reset are unknown.",
            );
            (prev_count, prev_fail, prev_sum) = (0.0, 0.0, 0.0);
        }
        let sum = avg * count;
        if let Some(p) = prev_ts {
            let period = (ts - p).max(1.0);
            let requests = count - prev_count;
            let errors = fail - prev_fail;
            let tests = (requests - errors).max(0.0);
            // Mean response time of this interval's requests, from the cumulative averages.
            let mean = if requests > 0.0 { ((sum - prev_sum) / requests).max(0.0) } else { 0.0 };
            series.intervals.push(Interval {
                start_s: p - first,
                period_s: period,
                vusers: users.unwrap_or(0.0),
                tests: tests as u64,
                errors: errors as u64,
                tps: tests / period,
                mttfb_ms: mean,
                mean_test_time_ms: mean,
                ..Default::default()
            });
        } else if count > 0.0 {
            book.used(
                Unit::Row,
                line,
                &format!("the first row already counts {count} requests ({fail} failed), made before the file's first time stamp: they are in no interval."),
            );
        }
        count = count.max(0.0);
        fail = fail.max(0.0);
        (prev_ts, prev_count, prev_fail, prev_sum) = (Some(ts), count, fail, sum);
    }
    if series.intervals.is_empty() {
        return Err(FormatError::malformed(path, 2, None, "no `Aggregated` rows: not a Locust stats history with data"));
    }
    let mut src = source(path, Format::LocustHistory);
    src.series = series;
    src.input_notes = book.into_notes();
    src.notes.push("Locust measures no time to first byte: MTTFB here is Locust's response time, per interval from its cumulative averages (Requests include failures in Locust; Tests here are successes only).".to_string());
    src.notes.push("Per-interval data only: per-request percentiles are not available from this file.".to_string());
    Ok(src)
}

/// Reads `_stats.csv`: totals only, one interval.
pub fn read_stats(path: &Path, text: &str) -> Result<Source> {
    let (header, rows) = records(path, text)?;
    let c = |n: &str| column(path, &header, n);
    let (name_c, count_c, fail_c, avg_c, rps_c) =
        (c("Name")?, c("Request Count")?, c("Failure Count")?, c("Average Response Time")?, c("Requests/s")?);
    let (line, agg) = rows
        .iter()
        .find(|(_, f)| f.get(name_c).map(String::as_str) == Some("Aggregated"))
        .ok_or_else(|| FormatError::malformed(path, 2, None, "no `Aggregated` row"))?;
    let n = |col: usize| -> Result<f64> {
        let v = value(path, *line, agg, col, &header)?;
        match v.and_then(odd) {
            Some(why) => Err(FormatError::malformed(path, *line, Some(col as u64 + 1), format!("`{}` is {why}", header[col]))),
            None => Ok(v.unwrap_or(0.0)),
        }
    };
    let (count, fail, avg, rps) = (n(count_c)?, n(fail_c)?, n(avg_c)?, n(rps_c)?);
    if count > MAX_COUNT {
        return Err(FormatError::malformed(path, *line, Some(count_c as u64 + 1), format!("{count} requests: more than 10^12")));
    }
    if fail > count {
        return Err(FormatError::malformed(path, *line, Some(fail_c as u64 + 1), format!("{fail} failures of {count} requests")));
    }
    let duration = if rps > 0.0 { count / rps } else { 0.0 };
    let tests = count - fail;
    let mut src = source(path, Format::LocustStats);
    if count > 0.0 && rps == 0.0 {
        src.input_notes.push(InputNote::Unavailable {
            figure: Figure::Tps,
            why: "the Aggregated row has no Requests/s, so the length of the run, and the throughput, are unknown.".to_string(),
        });
    }
    src.series = Series {
        intervals: vec![Interval {
            period_s: duration,
            tests: tests as u64,
            errors: fail as u64,
            tps: if duration > 0.0 {
                tests / duration
            } else if count > 0.0 {
                f64::NAN
            } else {
                0.0
            },
            mttfb_ms: avg,
            mean_test_time_ms: avg,
            ..Default::default()
        }],
    };
    let pcts: Vec<String> = ["50%", "95%", "99%", "99.9%", "100%"]
        .iter()
        .filter_map(|p| header.iter().position(|h| h == p).map(|c| format!("{p} {}", agg.get(c).map_or("", String::as_str))))
        .collect();
    src.notes.push("Locust totals only: one interval spanning the run; interval and per-request percentiles are not available from this file.".to_string());
    src.notes.push(format!("Locust's own response-time percentiles (ms, rounded by Locust): {}", pcts.join(", ")));
    Ok(src)
}
