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
use crate::import::{BUCKET_S, source};
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

/// Reads a JTL CSV.
pub fn read(path: &Path, reader: impl std::io::Read, first_line: &str) -> Result<Source> {
    let delimiter = if first_line.starts_with("timeStamp\t") { b'\t' } else { b',' };
    let has_header = first_line.starts_with("timeStamp");
    let mut csv = csv::ReaderBuilder::new().delimiter(delimiter).has_headers(false).flexible(true).from_reader(reader);
    let mut record = csv::StringRecord::new();
    let mut columns: Vec<String> = DEFAULT_COLUMNS.iter().map(|s| s.to_string()).collect();
    let mut line = 0u64;
    if has_header {
        csv.read_record(&mut record).map_err(|e| FormatError::malformed(path, 1, None, e.to_string()))?;
        columns = record.iter().map(str::to_string).collect();
        line = 1;
    }
    let col = |name: &str| columns.iter().position(|c| c == name);
    let need = |name: &str| col(name).ok_or_else(|| FormatError::malformed(path, 1, None, format!("JTL header has no `{name}` column")));
    let (ts_c, elapsed_c, label_c, code_c, msg_c, thread_c, success_c) =
        (need("timeStamp")?, need("elapsed")?, need("label")?, need("responseCode")?, col("responseMessage"), col("threadName"), need("success")?);
    let (bytes_c, latency_c, connect_c, threads_c) = (col("bytes"), col("Latency"), col("Connect"), col("allThreads"));
    let mut bucketer = Bucketer::new(BUCKET_S);
    // The last parent sample of each thread: (label, start, end).
    let mut parents: HashMap<String, (String, u64, u64)> = HashMap::new();
    let (mut sub_results, mut rows) = (0u64, 0u64);
    loop {
        match csv.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return Err(FormatError::malformed(path, line + 1, None, e.to_string())),
        }
        line += 1;
        if record.len() == 1 && record[0].is_empty() {
            continue;
        }
        if record.len() <= success_c.max(elapsed_c) {
            return Err(FormatError::malformed(
                path,
                line,
                Some(record.len() as u64 + 1),
                format!("truncated row: {} fields, the header has {}", record.len(), columns.len()),
            ));
        }
        let num = |c: usize| -> Result<u64> {
            record[c].parse::<u64>().map_err(|_| {
                FormatError::malformed(path, line, Some(c as u64 + 1), format!("`{}`: expected a whole number, found `{}`", columns[c], &record[c]))
            })
        };
        let opt = |c: Option<usize>| c.and_then(|c| record.get(c)).and_then(|s| s.parse::<u64>().ok());
        let start = num(ts_c)?;
        let elapsed = num(elapsed_c)?;
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
        rows += 1;
        let ok = &record[success_c] == "true";
        let code = &record[code_c];
        let record_of = RequestRecord {
            start_ms: start as f64,
            ttfb_us: opt(latency_c).map(|l| l * 1000),
            total_us: elapsed * 1000,
            connect_us: opt(connect_c).unwrap_or(0) * 1000,
            bytes: opt(bytes_c).unwrap_or(0),
            error: (!ok).then(|| classify(code, msg_c.and_then(|c| record.get(c)).unwrap_or(""))),
            status: code.parse().ok(),
            vusers: opt(threads_c).map(|v| v as f64),
        };
        bucketer.add_labelled(&record_of, label);
    }
    let mut src = source(path, Format::Jtl);
    bucketer.finish().into_source(&mut src);
    src.notes.push(format!(
        "{rows} JMeter samples bucketed by start second; {sub_results} sub-result rows (redirects, embedded resources) are part of their parent samples and not counted again. TTFB = JMeter's Latency."
    ));
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
