//! Gatling's `simulation.log`, text (tab-separated, Gatling 3.4–3.12). Gatling records a
//! request's start and end only: total time is end − start; there is no time to first
//! byte, so MTTFB figures are response times and the report says so.

use std::io::BufRead;
use std::path::Path;

use volley_stats::ErrorKind;

use crate::bucket::{Bucketer, RequestRecord};
use crate::error::{FormatError, Result};
use crate::import::{BUCKET_S, source};
use crate::source::{Format, Source};

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
                let name = f.get(2 + shift).copied().unwrap_or_default();
                let record = RequestRecord {
                    start_ms: start as f64,
                    ttfb_us: None,
                    total_us: end.saturating_sub(start) * 1000,
                    error,
                    status,
                    vusers: Some(active),
                    ..Default::default()
                };
                bucketer.add_labelled(&record, name);
            }
            "GROUP" | "ERROR" | "ASSERTION" | "" => {}
            other => {
                return Err(FormatError::malformed(path, line_no, Some(1), format!("unknown record type `{other}` (expected RUN, USER, REQUEST, GROUP, ERROR)")));
            }
        }
    }
    let requests = bucketer.records();
    Ok(finish(path, Format::Gatling, bucketer, format!("{requests} Gatling requests (simulation.log of Gatling {version})")))
}

/// The source of a bucketed Gatling log. Gatling has no first-byte time, so the MTTFB
/// columns show the response time, and the note says so.
fn finish(path: &Path, format: Format, bucketer: Bucketer, what: String) -> Source {
    let mut src = source(path, format);
    let mut out = bucketer.finish();
    for row in &mut out.series.intervals {
        row.mttfb_ms = row.mean_test_time_ms;
    }
    out.into_source(&mut src);
    src.notes.push(format!(
        "{what} bucketed by start second. Gatling records no time to first byte: MTTFB here is the response time (end − start), and per-request percentiles are of total time."
    ));
    src
}

/// Reads a binary simulation log (Gatling 3.13+, big-endian).
///
/// Records: a type byte (0 RUN, 1 REQUEST, 2 USER, 3 GROUP, 4 ERROR), then fields.
/// Strings are an i32 byte length, the bytes and a coder byte (0 Latin-1, 1 UTF-16), with
/// nothing after a zero length. Request names, messages and groups go through a string
/// cache: a positive id introduces a new string, a negative one refers back to it. Times
/// after the RUN record are i32 milliseconds from the run's start.
pub fn read_binary(path: &Path, bytes: &[u8]) -> Result<Source> {
    let mut r = BinReader { path, bytes, pos: 0, cache: std::collections::HashMap::new() };
    let mut bucketer = Bucketer::new(BUCKET_S);
    let (mut active, mut users) = (0f64, 0u64);
    if r.u8()? != 0 {
        return Err(r.error("a binary simulation.log starts with a RUN record"));
    }
    let version = r.string()?;
    let _class = r.string()?;
    let start = r.i64()? as f64;
    let _description = r.string()?;
    for _ in 0..r.count()? {
        r.string()?; // scenario names
    }
    let assertions = r.count()?;
    r.skip(assertions)?;
    while r.pos < bytes.len() {
        match r.u8()? {
            1 => {
                for _ in 0..r.count()? {
                    r.cached()?; // groups
                }
                let name = r.cached()?;
                let (t0, t1) = (r.i32()?, r.i32()?);
                let ok = r.u8()? != 0;
                let message = r.cached()?;
                let status = message.rsplit("found ").next().and_then(|s| s.trim().parse::<u16>().ok());
                let record = RequestRecord {
                    start_ms: start + t0 as f64,
                    total_us: (t1 - t0).max(0) as u64 * 1000,
                    error: (!ok).then(|| if status.is_some() { ErrorKind::Status } else { ErrorKind::Protocol }),
                    status,
                    vusers: Some(active),
                    ..Default::default()
                };
                bucketer.add_labelled(&record, &name);
            }
            2 => {
                let _scenario = r.i32()?;
                let starting = r.u8()? != 0;
                let _ts = r.i32()?;
                users += u64::from(starting);
                active = if starting { active + 1.0 } else { (active - 1.0).max(0.0) };
            }
            3 => {
                for _ in 0..r.count()? {
                    r.cached()?;
                }
                let (_start, _end, _cumulated) = (r.i32()?, r.i32()?, r.i32()?);
                r.u8()?;
            }
            4 => {
                r.cached()?;
                r.i32()?;
            }
            other => return Err(r.error(&format!("unknown record type {other}"))),
        }
    }
    let requests = bucketer.records();
    Ok(finish(path, Format::GatlingBinary, bucketer, format!("{requests} Gatling requests and {users} users (binary simulation.log, RUN record says Gatling {version})")))
}

struct BinReader<'a> {
    path: &'a Path,
    bytes: &'a [u8],
    pos: usize,
    cache: std::collections::HashMap<i32, String>,
}

impl BinReader<'_> {
    fn error(&self, what: &str) -> FormatError {
        FormatError::malformed(self.path, 1, Some(self.pos as u64), format!("byte offset {}: {what}", self.pos))
    }

    fn take(&mut self, n: usize) -> Result<&[u8]> {
        if self.pos + n > self.bytes.len() {
            return Err(self.error("the file ends inside a record (truncated?)"));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn skip(&mut self, n: usize) -> Result<()> {
        self.take(n).map(|_| ())
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn i32(&mut self) -> Result<i32> {
        Ok(i32::from_be_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }

    fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_be_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }

    fn count(&mut self) -> Result<usize> {
        let n = self.i32()?;
        usize::try_from(n).map_err(|_| self.error(&format!("negative count {n}")))
    }

    fn string(&mut self) -> Result<String> {
        let len = self.count()?;
        if len == 0 {
            return Ok(String::new());
        }
        let raw = self.take(len)?.to_vec();
        Ok(match self.u8()? {
            0 => raw.iter().map(|&b| b as char).collect(),
            1 => {
                let units: Vec<u16> = raw.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
                String::from_utf16_lossy(&units)
            }
            c => return Err(self.error(&format!("unknown string coder {c}"))),
        })
    }

    fn cached(&mut self) -> Result<String> {
        let id = self.i32()?;
        if id >= 0 {
            let s = self.string()?;
            self.cache.insert(id, s.clone());
            Ok(s)
        } else {
            self.cache.get(&-id).cloned().ok_or_else(|| self.error(&format!("reference to unknown cached string {}", -id)))
        }
    }
}
