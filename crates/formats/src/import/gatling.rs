//! Gatling's `simulation.log`, text (tab-separated, Gatling 3.4–3.12). Gatling records a
//! request's start and end only: total time is end − start; there is no time to first
//! byte, so MTTFB figures are response times and the report says so.

use std::io::BufRead;
use std::path::Path;

use volley_stats::ErrorKind;

use crate::bucket::{Bucketer, RequestRecord};
use crate::error::{FormatError, Result};
use crate::import::{BUCKET_S, source};
use crate::source::Source;

/// Whether the first line is a text simulation log's RUN record.
pub fn sniff_text(first_line: &str) -> bool {
    first_line.starts_with("RUN\t")
}

/// Whether the bytes look like a binary (3.13+) simulation log: a RUN record (0) with a
/// length-prefixed version string.
pub fn sniff_binary(head: &[u8]) -> bool {
    head.len() > 6 && head[0] == 0 && head[1..5] == [0, 0, 0, head[4]] && head[4] > 0 && head[4] < 32 && head[5].is_ascii_digit()
}

/// Reads a text simulation log.
pub fn read_text(path: &Path, reader: impl BufRead) -> Result<Source> {
    let mut bucketer = Bucketer::new(BUCKET_S);
    let mut active = 0f64;
    let mut version = String::new();
    for (i, line) in reader.lines().enumerate() {
        let line_no = i as u64 + 1;
        let line = line.map_err(|e| FormatError::io(path, e))?;
        let f: Vec<&str> = line.split('\t').collect();
        let ms = |c: usize| -> Result<u64> {
            f.get(c).and_then(|s| s.trim().parse().ok()).ok_or_else(|| {
                FormatError::malformed(path, line_no, Some(c as u64 + 1), format!("expected epoch milliseconds, found `{}`", f.get(c).unwrap_or(&"")))
            })
        };
        match f[0] {
            "RUN" => version = f.get(5).unwrap_or(&"").to_string(),
            "USER" => match f.get(2) {
                Some(&"START") => active += 1.0,
                Some(&"END") => active = (active - 1.0).max(0.0),
                _ => {}
            },
            "REQUEST" => {
                // 3.4+: REQUEST, groups, name, start, end, status, message (pre-3.4 has a user id first).
                let shift = usize::from(f.len() >= 8);
                let (start, end) = (ms(3 + shift)?, ms(4 + shift)?);
                let ok = f.get(5 + shift).is_some_and(|s| *s == "OK");
                let message = f.get(6 + shift).copied().unwrap_or("");
                let status = message.rsplit("found ").next().and_then(|s| s.trim().parse::<u16>().ok());
                let error = (!ok).then(|| {
                    if message.contains("imeout") {
                        ErrorKind::Timeout
                    } else if message.contains("onnect") {
                        ErrorKind::Connect
                    } else if status.is_some() || message.contains("status") {
                        ErrorKind::Status
                    } else {
                        ErrorKind::Protocol
                    }
                });
                bucketer.add(&RequestRecord {
                    start_ms: start as f64,
                    ttfb_us: None,
                    total_us: end.saturating_sub(start) * 1000,
                    error,
                    status,
                    vusers: Some(active),
                    ..Default::default()
                });
            }
            "GROUP" | "ERROR" | "ASSERTION" | "" => {}
            other => {
                return Err(FormatError::malformed(path, line_no, Some(1), format!("unknown record type `{other}` (expected RUN, USER, REQUEST, GROUP, ERROR)")));
            }
        }
    }
    let mut src = source(path, "gatling-log");
    let requests = bucketer.records();
    let mut out = bucketer.finish();
    // Gatling has no first-byte time: show response time in the MTTFB columns, labelled.
    for row in &mut out.series.intervals {
        row.mttfb_ms = row.mean_test_time_ms;
    }
    out.into_source(&mut src);
    src.notes.push(format!(
        "{requests} Gatling requests (simulation.log of Gatling {version}) bucketed by start second. Gatling records no time to first byte: MTTFB here is the response time (end − start), and per-request percentiles are of total time."
    ));
    Ok(src)
}
