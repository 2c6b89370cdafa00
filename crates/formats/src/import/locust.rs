//! Locust's `--csv` files: `_stats_history.csv` (per second, cumulative totals) and
//! `_stats.csv` (totals only). Locust measures no time to first byte: the MTTFB figures
//! of a Locust file are its response times, and the report says so. Both files are broken
//! down by their `Name` column (the history only holds names with `--csv-full-history`).
//! Locust writes both files once a second and not at the end, so the requests after the
//! last write are missing from them: when Locust's end-of-run JSON of the same run
//! (`--json-file PREFIX`) lies beside the history, the report says how many.

use std::path::Path;

use volley_stats::{Interval, LatencySummary, Series};

use crate::error::{Error, Result};
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
    let mut csv = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut rows = Vec::new();
    let mut header = Vec::new();
    for rec in csv.records() {
        let rec = rec.map_err(|e| {
            Error::malformed(
                path,
                e.position().map_or(0, |p| p.line()),
                None,
                e.to_string(),
            )
        })?;
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
            let what = if fields.len() < header.len() {
                "truncated row"
            } else {
                "too many fields (a separator in a name?)"
            };
            return Err(Error::malformed(
                path,
                line,
                Some(fields.len().min(header.len()) as u64 + 1),
                format!(
                    "{what}: {} fields, the header has {}",
                    fields.len(),
                    header.len()
                ),
            ));
        }
        rows.push((line, fields));
    }
    Ok((header, rows))
}

fn column(path: &Path, header: &[String], name: &str) -> Result<usize> {
    header.iter().position(|h| h == name).ok_or_else(|| {
        Error::malformed(
            path,
            1,
            None,
            format!("Locust header has no `{name}` column"),
        )
    })
}

/// A field as a number; `None` for Locust's `N/A` and for an empty field.
fn value(
    path: &Path,
    line: u64,
    fields: &[String],
    c: usize,
    header: &[String],
) -> Result<Option<f64>> {
    let raw = fields.get(c).map(String::as_str).unwrap_or("");
    if raw == "N/A" || raw.is_empty() {
        return Ok(None);
    }
    raw.parse().map(Some).map_err(|_| {
        Error::malformed(
            path,
            line,
            Some(c as u64 + 1),
            format!("`{}`: expected a number, found `{raw}`", header[c]),
        )
    })
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
    let (count_c, fail_c, avg_c) = (
        c("Total Request Count")?,
        c("Total Failure Count")?,
        c("Total Average Response Time")?,
    );
    let mut series = Series::default();
    let mut book = NoteBook::new(Locator::Line);
    // The previous row: its time stamp (moved on where the clock stepped back), totals and
    // response-time sum.
    let (mut prev_ts, mut prev_count, mut prev_fail, mut prev_sum) = (None::<f64>, 0.0, 0.0, 0.0);
    let (mut first_ts, mut offset, mut prev_placed) = (None, 0.0, false);
    // Named rows come before the Aggregated row of their time stamp: each group is kept
    // with the interval its Aggregated row closes.
    let mut pending_names: Vec<&(u64, Vec<String>)> = Vec::new();
    let mut groups: Vec<Vec<&(u64, Vec<String>)>> = Vec::new();
    'rows: for row in &rows {
        let (line, f) = row;
        if f.get(name_c).map(String::as_str) != Some("Aggregated") {
            pending_names.push(row);
            continue;
        }
        let names = std::mem::take(&mut pending_names);
        let line = *line;
        let n = |col| value(path, line, f, col, &header);
        let (ts, count, fail, avg, users) =
            (n(ts_c)?, n(count_c)?, n(fail_c)?, n(avg_c)?, n(users_c)?);
        for (col, v) in [
            (count_c, count),
            (fail_c, fail),
            (avg_c, avg),
            (users_c, users),
            (ts_c, ts),
        ] {
            if let Some(why) = v.and_then(odd) {
                book.skip(Unit::Row, line, &format!("`{}` is {why}", header[col]));
                continue 'rows;
            }
        }
        let (mut count, mut fail, avg) = (
            count.unwrap_or(0.0),
            fail.unwrap_or(0.0),
            avg.unwrap_or(0.0),
        );
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
                book.used(
                    Unit::Row,
                    line,
                    "no Timestamp: placed 1 s after the row above.",
                );
                p + 1.0
            }
            (None, None) => {
                book.skip(
                    Unit::Row,
                    line,
                    "the first row has no Timestamp to start the series from",
                );
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
            let mean = if requests > 0.0 {
                ((sum - prev_sum) / requests).max(0.0)
            } else {
                0.0
            };
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
        groups.push(names);
    }
    if series.intervals.is_empty() {
        return Err(Error::malformed(
            path,
            2,
            None,
            "no `Aggregated` rows: not a Locust stats history with data",
        ));
    }
    let mut src = source(path, Format::LocustHistory);
    src.per_test = per_name(
        path,
        &header,
        &groups,
        &series,
        [name_c, count_c, fail_c, avg_c],
    )?;
    src.notes.push("Locust stamps its history rows with whole seconds: TPS here is per stamped second between rows, so it can differ from Locust's own Requests/s (count ÷ first to last request) by up to a second's worth of the run.".to_string());
    src.series = series;
    src.input_notes = book.into_notes();
    src.input_notes.extend(missing_tail(path, prev_count));
    src.notes.push("Locust measures no time to first byte: MTTFB here is Locust's response time, per interval from its cumulative averages (Requests include failures in Locust; Tests here are successes only).".to_string());
    src.notes.push(
        "Per-interval data only: per-request percentiles are not available from this file."
            .to_string(),
    );
    Ok(src)
}

/// Each `Name`'s series on the intervals of the Aggregated rows, from the named rows
/// written with each of them (`groups[k]` with the k-th Aggregated row read). A name is 0
/// until its first row; a drop in its totals is a reset, counted from 0 again.
fn per_name(
    path: &Path,
    header: &[String],
    groups: &[Vec<&(u64, Vec<String>)>],
    total: &Series,
    [name_c, count_c, fail_c, avg_c]: [usize; 4],
) -> Result<Vec<(String, Series)>> {
    let mut names: Vec<String> = Vec::new();
    for (_, f) in groups.iter().flatten() {
        if !names.contains(&f[name_c]) {
            names.push(f[name_c].clone());
        }
    }
    let mut out = Vec::new();
    for name in names {
        // Cumulative (count, failures, response-time sum) at each Aggregated row.
        let mut at: Vec<(f64, f64, f64)> = Vec::with_capacity(groups.len());
        let mut last = (0.0, 0.0, 0.0);
        for g in groups {
            if let Some((line, f)) = g
                .iter()
                .find(|(_, f)| f[name_c] == name)
                .map(|r| (r.0, &r.1))
            {
                let n = |c| {
                    value(path, line, f, c, header)
                        .map(|v| v.filter(|v| odd(*v).is_none()).unwrap_or(0.0))
                };
                let (count, fail, avg) = (n(count_c)?, n(fail_c)?, n(avg_c)?);
                last = (count, fail.min(count), avg * count);
            }
            at.push(last);
        }
        let mut series = Series::default();
        for (k, row) in total.intervals.iter().enumerate() {
            let (Some(&(pc, pf, ps)), Some(&(c, f, s))) = (at.get(k), at.get(k + 1)) else {
                break;
            };
            let (pc, pf, ps) = if c < pc || f < pf {
                (0.0, 0.0, 0.0)
            } else {
                (pc, pf, ps)
            };
            let (requests, errors) = (c - pc, f - pf);
            let tests = (requests - errors).max(0.0);
            let mean = if requests > 0.0 {
                ((s - ps) / requests).max(0.0)
            } else {
                0.0
            };
            series.intervals.push(Interval {
                start_s: row.start_s,
                period_s: row.period_s,
                vusers: row.vusers,
                tests: tests as u64,
                errors: errors as u64,
                tps: tests / row.period_s,
                mttfb_ms: mean,
                mean_test_time_ms: mean,
                ..Default::default()
            });
        }
        out.push((name, series));
    }
    Ok(out)
}

/// What the history leaves out at its end, with the count when Locust's end-of-run JSON of
/// the same run (`--json-file PREFIX`, so `PREFIX.json`) lies beside `PREFIX_stats_history.csv`;
/// `None` when that JSON shows nothing is missing.
fn missing_tail(path: &Path, history_count: f64) -> Option<InputNote> {
    let file = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let json = file
        .strip_suffix("_stats_history.csv")
        .map(|prefix| path.with_file_name(format!("{prefix}.json")));
    let habit = "Locust writes this file (and _stats.csv) once a second, not when the run ends, so the requests made after its last write are in neither";
    let total = json
        .as_ref()
        .and_then(|p| end_of_run_count(&std::fs::read_to_string(p).ok()?));
    let shown = history_count as u64;
    let name = json
        .as_ref()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Some(match total {
        Some(t) if t == shown => return None,
        Some(t) if t > shown => InputNote::NotInFile {
            requests: Some(t - shown),
            why: format!(
                "{habit}: Locust's end-of-run {name} counts {} requests, this file's last row {}. TPS and counts here stop at the last row.",
                crate::numfmt::group_thousands(t),
                crate::numfmt::group_thousands(shown)
            ),
        },
        _ => InputNote::NotInFile {
            requests: None,
            why: format!(
                "{habit}; how many is known only from Locust's end-of-run JSON (`--json-file PREFIX`, read from PREFIX.json beside this file when present)."
            ),
        },
    })
}

/// Requests counted in Locust's end-of-run JSON (`--json` / `--json-file`: one object per
/// name, each with `num_requests`); `None` when `text` is not that.
fn end_of_run_count(text: &str) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    v.as_array()?
        .iter()
        .map(|e| e.get("num_requests")?.as_u64())
        .sum()
}

/// Reads `_stats.csv`: totals only, one interval, per `Name` too.
pub fn read_stats(path: &Path, text: &str) -> Result<Source> {
    let (header, rows) = records(path, text)?;
    let c = |n: &str| column(path, &header, n);
    let cols = Cols {
        name: c("Name")?,
        count: c("Request Count")?,
        fail: c("Failure Count")?,
        avg: c("Average Response Time")?,
        rps: c("Requests/s")?,
    };
    let (line, agg) = rows
        .iter()
        .find(|(_, f)| f.get(cols.name).map(String::as_str) == Some("Aggregated"))
        .ok_or_else(|| Error::malformed(path, 2, None, "no `Aggregated` row"))?;
    let total = totals(path, &header, *line, agg, &cols)?;
    let mut src = source(path, Format::LocustStats);
    if total.count > 0.0 && total.interval.tps.is_nan() {
        src.input_notes.push(InputNote::Unavailable {
            figure: Figure::Tps,
            why: "the Aggregated row has no Requests/s, so the length of the run, and the throughput, are unknown.".to_string(),
        });
    }
    src.input_notes.push(InputNote::Unavailable {
        figure: Figure::PerInterval,
        why: "Locust's _stats.csv holds one total for the run: TPS and MTTFB percentiles over intervals, and MTTFB difference and variability, cannot be computed from it (the per-request percentiles shown are Locust's own).".to_string(),
    });
    for (line, f) in rows
        .iter()
        .filter(|(_, f)| f.get(cols.name).map(String::as_str) != Some("Aggregated"))
    {
        let t = totals(path, &header, *line, f, &cols)?;
        src.per_test.push((
            f[cols.name].clone(),
            Series {
                intervals: vec![t.interval],
            },
        ));
    }
    src.series = Series {
        intervals: vec![total.interval],
    };
    src.tool_latency.total = total.latency;
    src.notes.push("Locust totals only: one interval spanning the run; TPS = successful requests ÷ the run's length (Request Count ÷ Requests/s).".to_string());
    src.notes.push(format!(
        "Total per request = Locust's own response time (every request, failed ones included; Locust rounds values above 100 ms to 2 significant digits for its percentiles), ms: {}.",
        total.text
    ));
    Ok(src)
}

/// The columns of `_stats.csv` a row is read from.
struct Cols {
    name: usize,
    count: usize,
    fail: usize,
    avg: usize,
    rps: usize,
}

/// One row of `_stats.csv`, read.
struct Totals {
    count: f64,
    interval: Interval,
    latency: Option<LatencySummary>,
    /// Every response-time statistic of the row, as text.
    text: String,
}

fn totals(path: &Path, header: &[String], line: u64, f: &[String], cols: &Cols) -> Result<Totals> {
    let opt = |col: usize| -> Result<Option<f64>> {
        let v = value(path, line, f, col, header)?;
        match v.and_then(odd) {
            Some(why) => Err(Error::malformed(
                path,
                line,
                Some(col as u64 + 1),
                format!("`{}` is {why}", header[col]),
            )),
            None => Ok(v),
        }
    };
    let n = |col: usize| opt(col).map(|v| v.unwrap_or(0.0));
    let (count, fail, avg, rps) = (n(cols.count)?, n(cols.fail)?, n(cols.avg)?, n(cols.rps)?);
    if count > MAX_COUNT {
        return Err(Error::malformed(
            path,
            line,
            Some(cols.count as u64 + 1),
            format!("{count} requests: more than 10^12"),
        ));
    }
    if fail > count {
        return Err(Error::malformed(
            path,
            line,
            Some(cols.fail as u64 + 1),
            format!("{fail} failures of {count} requests"),
        ));
    }
    let duration = if rps > 0.0 { count / rps } else { 0.0 };
    let tests = count - fail;
    let interval = Interval {
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
    };
    // Each statistic from its own column; one the file lacks stays n/a.
    let stat = |name: &str| -> Result<f64> {
        match header.iter().position(|h| h == name) {
            Some(col) => Ok(opt(col)?.unwrap_or(f64::NAN)),
            None => Ok(f64::NAN),
        }
    };
    let named = [
        "Min Response Time",
        "Average Response Time",
        "Median Response Time",
        "Max Response Time",
    ];
    let pcts: Vec<&String> = header
        .iter()
        .filter(|h| h.ends_with('%') && h[..h.len() - 1].parse::<f64>().is_ok())
        .collect();
    let mut text = Vec::new();
    for h in named.iter().copied().chain(pcts.iter().map(|s| s.as_str())) {
        let v = stat(h)?;
        if v.is_finite() {
            text.push(format!(
                "{} {v:.3}",
                h.trim_end_matches(" Response Time").to_lowercase()
            ));
        }
    }
    let latency = (count > 0.0).then(|| -> Result<LatencySummary> {
        let p50 = stat("50%")?;
        Ok(LatencySummary {
            count: count as u64,
            min_ms: stat("Min Response Time")?,
            mean_ms: avg,
            p50_ms: if p50.is_finite() {
                p50
            } else {
                stat("Median Response Time")?
            },
            p90_ms: stat("90%")?,
            p95_ms: stat("95%")?,
            p99_ms: stat("99%")?,
            p99_9_ms: stat("99.9%")?,
            p99_99_ms: stat("99.99%")?,
            max_ms: stat("Max Response Time")?,
        })
    });
    Ok(Totals {
        count,
        interval,
        latency: latency.transpose()?,
        text: text.join(", "),
    })
}
