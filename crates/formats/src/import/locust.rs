//! Locust's `--csv` files: `_stats_history.csv` (per second, cumulative totals) and
//! `_stats.csv` (totals only). Locust measures no time to first byte: the MTTFB figures
//! of a Locust file are its response times, and the report says so.

use std::path::Path;

use volley_stats::{Interval, Series};

use crate::error::{FormatError, Result};
use crate::import::source;
use crate::source::{Format, Source};

/// Whether the first line is a stats-history header.
pub fn sniff_history(first_line: &str) -> bool {
    first_line.starts_with("Timestamp,User Count,Type,Name,Requests/s")
}

/// Whether the first line is a stats header.
pub fn sniff_stats(first_line: &str) -> bool {
    first_line.starts_with("Type,Name,Request Count,Failure Count")
}

fn records(path: &Path, text: &str) -> Result<(Vec<String>, Vec<(u64, Vec<String>)>)> {
    let mut csv = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(text.as_bytes());
    let mut rows = Vec::new();
    let mut header = Vec::new();
    for (i, rec) in csv.records().enumerate() {
        let rec = rec.map_err(|e| FormatError::malformed(path, i as u64 + 1, None, e.to_string()))?;
        let fields: Vec<String> = rec.iter().map(|s| s.trim().to_string()).collect();
        if fields.iter().all(|f| f.is_empty()) {
            continue; // Windows writes `\r\r\n`: blank rows between the real ones
        }
        if header.is_empty() {
            header = fields;
        } else {
            rows.push((i as u64 + 1, fields));
        }
    }
    Ok((header, rows))
}

fn column(path: &Path, header: &[String], name: &str) -> Result<usize> {
    header
        .iter()
        .position(|h| h == name)
        .ok_or_else(|| FormatError::malformed(path, 1, None, format!("Locust header has no `{name}` column")))
}

fn number(path: &Path, line: u64, fields: &[String], c: usize, header: &[String]) -> Result<f64> {
    let raw = fields.get(c).map(String::as_str).unwrap_or("");
    if raw == "N/A" || raw.is_empty() {
        return Ok(0.0);
    }
    raw.parse().map_err(|_| FormatError::malformed(path, line, Some(c as u64 + 1), format!("`{}`: expected a number, found `{raw}`", header[c])))
}

/// Reads `_stats_history.csv`: the `Aggregated` rows, differenced into intervals.
pub fn read_history(path: &Path, text: &str) -> Result<Source> {
    let (header, rows) = records(path, text)?;
    let c = |n: &str| column(path, &header, n);
    let (ts_c, users_c, name_c) = (c("Timestamp")?, c("User Count")?, c("Name")?);
    let (count_c, fail_c, avg_c) = (c("Total Request Count")?, c("Total Failure Count")?, c("Total Average Response Time")?);
    let mut series = Series::default();
    let (mut prev_ts, mut prev_count, mut prev_fail, mut prev_sum) = (None::<f64>, 0.0, 0.0, 0.0);
    let mut first_ts = None;
    for (line, f) in &rows {
        if f.get(name_c).map(String::as_str) != Some("Aggregated") {
            continue;
        }
        let n = |col| number(path, *line, f, col, &header);
        let (ts, count, fail, avg) = (n(ts_c)?, n(count_c)?, n(fail_c)?, n(avg_c)?);
        let sum = avg * count;
        let first = *first_ts.get_or_insert(ts);
        if let Some(p) = prev_ts {
            let period = (ts - p).max(1.0);
            let requests = (count - prev_count).max(0.0);
            let errors = (fail - prev_fail).max(0.0);
            let tests = (requests - errors).max(0.0);
            // Mean response time of this interval's requests, from the cumulative averages.
            let mean = if requests > 0.0 { ((sum - prev_sum) / requests).max(0.0) } else { 0.0 };
            series.intervals.push(Interval {
                start_s: p - first,
                period_s: period,
                vusers: n(users_c)?,
                tests: tests as u64,
                errors: errors as u64,
                tps: tests / period,
                mttfb_ms: mean,
                mean_test_time_ms: mean,
                ..Default::default()
            });
        }
        (prev_ts, prev_count, prev_fail, prev_sum) = (Some(ts), count, fail, sum);
    }
    if series.intervals.is_empty() {
        return Err(FormatError::malformed(path, 2, None, "no `Aggregated` rows: not a Locust stats history with data"));
    }
    let mut src = source(path, Format::LocustHistory);
    src.series = series;
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
    let n = |col| number(path, *line, agg, col, &header);
    let (count, fail, avg, rps) = (n(count_c)?, n(fail_c)?, n(avg_c)?, n(rps_c)?);
    let duration = if rps > 0.0 { count / rps } else { 0.0 };
    let tests = (count - fail).max(0.0);
    let mut src = source(path, Format::LocustStats);
    src.series = Series {
        intervals: vec![Interval {
            period_s: duration,
            tests: tests as u64,
            errors: fail as u64,
            tps: if duration > 0.0 { tests / duration } else { 0.0 },
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
