//! JMeter JTL in CSV form (default columns, with or without the header line).
//!
//! Redirects and embedded resources are written as sub-result rows (`label-0`,
//! `label-1`) right after their parent; they are part of the parent's sample and are not
//! counted again. `Latency` is JMeter's time to first byte (connection set-up included).

use std::collections::HashMap;
use std::path::Path;

use volley_stats::ErrorKind;

use crate::bucket::{Bucketer, RequestRecord};
use crate::error::{FormatError, Result};
use crate::import::{BUCKET_S, MAX_DURATION_MS, bad_duration, bad_stamp, source};
use crate::note::{Figure, InputNote, Locator, NoteBook, Unit};
use crate::source::{Format, Source};

/// JMeter's default CSV columns, in order.
const DEFAULT_COLUMNS: [&str; 17] = [
    "timeStamp", "elapsed", "label", "responseCode", "responseMessage", "threadName", "dataType", "success",
    "failureMessage", "bytes", "sentBytes", "grpThreads", "allThreads", "URL", "Latency", "IdleTime", "Connect",
];

/// Whether the first line is a JTL CSV header, or a headerless row of the default columns.
pub fn sniff(first_line: &str) -> bool {
    if first_line.starts_with("timeStamp,elapsed,") || first_line.starts_with("timeStamp\telapsed\t") {
        return true;
    }
    let f: Vec<&str> = first_line.split(',').collect();
    f.len() >= 16 && f[0].len() == 13 && f[0].parse::<u64>().is_ok() && f[1].parse::<u64>().is_ok() && (f[7] == "true" || f[7] == "false")
}

/// Volley's kind for a failed sample.
fn classify(code: &str, message: &str) -> ErrorKind {
    if let Ok(status) = code.parse::<u16>() {
        // A failed sample with a success code failed an assertion.
        return if status >= 400 { ErrorKind::Status } else { ErrorKind::Check };
    }
    let text = format!("{code} {message}");
    if text.contains("Timeout") || text.contains("timed out") {
        ErrorKind::Timeout
    } else if text.contains("ConnectException") || text.contains("refused") || text.contains("UnknownHost") || text.contains("NoRouteToHost") {
        ErrorKind::Connect
    } else if text.contains("SSL") || text.contains("TLS") {
        ErrorKind::Tls
    } else if text.contains("reset") || text.contains("NoHttpResponse") || text.contains("SocketException") {
        ErrorKind::Reset
    } else {
        ErrorKind::Protocol
    }
}

/// A field read as a whole number.
enum Whole {
    /// A whole number.
    Ok(i64),
    /// A number, but not one a count or time can be: NaN, infinite, fractional.
    Odd(&'static str),
    /// Not a number.
    Garbage,
}

fn whole(s: &str) -> Whole {
    if let Ok(n) = s.parse::<i64>() {
        return Whole::Ok(n);
    }
    match s.parse::<f64>() {
        Ok(v) if v.is_nan() => Whole::Odd("NaN"),
        Ok(v) if v.is_infinite() => Whole::Odd("infinite"),
        Ok(_) => Whole::Odd("not a whole number"),
        Err(_) => Whole::Garbage,
    }
}

/// Reads a JTL CSV.
pub fn read(path: &Path, reader: impl std::io::Read, first_line: &str) -> Result<Source> {
    let delimiter = if first_line.starts_with("timeStamp\t") { b'\t' } else { b',' };
    let has_header = first_line.starts_with("timeStamp");
    let mut csv = csv::ReaderBuilder::new().delimiter(delimiter).has_headers(false).flexible(true).from_reader(reader);
    let mut record = csv::StringRecord::new();
    let mut columns: Vec<String> = DEFAULT_COLUMNS.iter().map(|s| s.to_string()).collect();
    if has_header {
        csv.read_record(&mut record).map_err(|e| FormatError::malformed(path, 1, None, e.to_string()))?;
        columns = record.iter().map(str::to_string).collect();
    }
    let col = |name: &str| columns.iter().position(|c| c == name);
    let need = |name: &str| col(name).ok_or_else(|| FormatError::malformed(path, 1, None, format!("JTL header has no `{name}` column")));
    let (ts_c, elapsed_c, label_c, code_c, msg_c, thread_c, success_c) =
        (need("timeStamp")?, need("elapsed")?, need("label")?, need("responseCode")?, col("responseMessage"), col("threadName"), need("success")?);
    let (bytes_c, latency_c, connect_c, threads_c) = (col("bytes"), col("Latency"), col("Connect"), col("allThreads"));
    let needed = [ts_c, elapsed_c, label_c, code_c, success_c].into_iter().max().unwrap_or(0) + 1;
    let mut bucketer = Bucketer::new(BUCKET_S);
    let mut book = NoteBook::new(Locator::Line);
    // The last parent sample of each thread: (label, start, end).
    let mut parents: HashMap<String, (String, i64, i64)> = HashMap::new();
    let (mut sub_results, mut rows) = (0u64, 0u64);
    loop {
        match csv.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return Err(FormatError::malformed(path, e.position().map_or(0, |p| p.line()), None, e.to_string())),
        }
        let line = record.position().map_or(0, |p| p.line());
        if record.len() == 1 && record[0].is_empty() {
            continue;
        }
        if record.len() < needed || (has_header && record.len() < columns.len()) {
            return Err(FormatError::malformed(
                path,
                line,
                Some(record.len() as u64 + 1),
                format!("truncated row: {} fields, the header has {}", record.len(), columns.len()),
            ));
        }
        if has_header && record.len() > columns.len() {
            return Err(FormatError::malformed(
                path,
                line,
                Some(columns.len() as u64 + 1),
                format!("{} fields, the header has {} (an unquoted separator in a label or message?)", record.len(), columns.len()),
            ));
        }
        let garbage = |c: usize| {
            FormatError::malformed(path, line, Some(c as u64 + 1), format!("`{}`: expected a whole number, found `{}`", columns[c], &record[c]))
        };
        // A whole-number field: the value, or why the row is skipped; garbage is an error.
        let field = |c: usize, name: &str, check: fn(f64) -> Option<&'static str>| match whole(&record[c]) {
            Whole::Ok(v) => Ok(check(v as f64).map_or(Ok(v), |why| Err(format!("`{name}` is {why}")))),
            Whole::Odd(why) => Ok(Err(format!("`{name}` is {why}"))),
            Whole::Garbage => Err(garbage(c)),
        };
        let start = match field(ts_c, "timeStamp", bad_stamp)? {
            Ok(t) => t,
            Err(why) => {
                book.skip(Unit::Row, line, &why);
                continue;
            }
        };
        let elapsed = match field(elapsed_c, "elapsed", bad_duration)? {
            Ok(e) => e,
            Err(why) => {
                book.skip(Unit::Row, line, &why);
                continue;
            }
        };
        let ok = match &record[success_c] {
            "true" => true,
            "false" => false,
            other => {
                return Err(FormatError::malformed(path, line, Some(success_c as u64 + 1), format!("`success`: expected true or false, found `{other}`")));
            }
        };
        let label = &record[label_c];
        let thread = thread_c.and_then(|c| record.get(c)).unwrap_or("").to_string();
        if let Some((parent, p_start, p_end)) = parents.get(&thread) {
            let is_sub = label.strip_prefix(parent.as_str()).and_then(|r| r.strip_prefix('-')).is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            if is_sub && start >= *p_start && start <= *p_end {
                sub_results += 1;
                continue;
            }
        }
        parents.insert(thread, (label.to_string(), start, start + elapsed));
        // An optional count: empty is unknown; anything but a whole number ≥ 0 is unknown
        // too, and said so.
        let mut opt = |c: Option<usize>, effect: &str| -> Option<u64> {
            let c = c?;
            let raw = record.get(c).unwrap_or("");
            match whole(raw) {
                _ if raw.is_empty() => None,
                Whole::Ok(v) if v >= 0 => Some(v as u64),
                Whole::Ok(_) => {
                    book.used(Unit::Row, line, &format!("a negative `{}`: {effect}", columns[c]));
                    None
                }
                Whole::Odd(why) => {
                    book.used(Unit::Row, line, &format!("`{}` is {why}: {effect}", columns[c]));
                    None
                }
                Whole::Garbage => {
                    book.used(Unit::Row, line, &format!("`{}` is not a number: {effect}", columns[c]));
                    None
                }
            }
        };
        const NO_TTFB: &str = "TTFB unknown; counted as requests and in total time, not in TTFB.";
        let latency = opt(latency_c, NO_TTFB);
        let connect = opt(connect_c, "connection time counted as 0.");
        let bytes = opt(bytes_c, "response size counted as 0.");
        let threads = opt(threads_c, "the VUs of the interval come from the other rows.");
        if ok && latency.is_none() && latency_c.and_then(|c| record.get(c)).is_some_and(str::is_empty) {
            book.used(Unit::Row, line, &format!("no `Latency`: {NO_TTFB}"));
        }
        rows += 1;
        let code = &record[code_c];
        let record_of = RequestRecord {
            start_ms: start as f64,
            ttfb_us: latency.map(|l| l.min(MAX_DURATION_MS as u64) * 1000),
            total_us: elapsed as u64 * 1000,
            connect_us: connect.unwrap_or(0).min(MAX_DURATION_MS as u64) * 1000,
            bytes: bytes.unwrap_or(0).min(1 << 40),
            error: (!ok).then(|| classify(code, msg_c.and_then(|c| record.get(c)).unwrap_or(""))),
            status: code.parse().ok(),
            vusers: threads.map(|v| v as f64),
            place: line,
            end_ms: None,
        };
        bucketer.add_labelled(&record_of, label);
    }
    let mut src = source(path, Format::Jtl);
    let missing = bucketer.ttfb_missing();
    let out = bucketer.finish();
    let successes = out.series.tests();
    out.into_source(&mut src);
    src.notes.push(format!(
        "{rows} JMeter samples bucketed by start second; {sub_results} sub-result rows (redirects, embedded resources) are part of their parent samples and not counted again. TTFB = JMeter's Latency."
    ));
    src.input_notes.splice(0..0, book.into_notes());
    if latency_c.is_none() && successes > 0 {
        src.input_notes.push(InputNote::Unavailable {
            figure: Figure::Ttfb,
            why: "this JTL has no `Latency` column (JMeter's time to first byte, saved when jmeter.save.saveservice.latency is true), so TTFB and MTTFB are unknown.".to_string(),
        });
    } else if missing > 0 && missing == successes {
        src.input_notes.push(InputNote::Unavailable {
            figure: Figure::Ttfb,
            why: "no successful sample of this JTL has a `Latency` value (JMeter's time to first byte), so TTFB and MTTFB are unknown.".to_string(),
        });
    }
    Ok(src)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_samples_are_classified() {
        assert_eq!(classify("500", "Internal Server Error"), ErrorKind::Status);
        assert_eq!(classify("200", "OK"), ErrorKind::Check, "a success code on a failed sample is a failed assertion");
        assert_eq!(classify("Non HTTP response code: java.net.SocketTimeoutException", "Read timed out"), ErrorKind::Timeout);
    }
}
