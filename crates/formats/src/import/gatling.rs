//! Gatling's `simulation.log`, text (tab-separated, Gatling 3.4–3.12). Gatling records a
//! request's start and end only: total time is end − start; there is no time to first
//! byte, so MTTFB figures are response times and the report says so.

use std::io::BufRead;
use std::path::Path;

use volley_stats::ErrorKind;

use crate::bucket::{Bucketer, RequestRecord};
use crate::error::{Error, Result};
use crate::import::{BUCKET_S, bad_duration, bad_stamp, source};
use crate::note::{InputNote, Locator, NoteBook, Place, Unit};
use crate::source::{Format, Source};

/// Whether the first line is a text simulation log's record that can open one: RUN, or the
/// ASSERTION records a simulation with assertions writes first.
pub fn sniff_text(first_line: &str) -> bool {
    first_line.starts_with("RUN\t") || first_line.starts_with("ASSERTION\t")
}

/// A request's label: its name under its groups (`A/same`), so that requests of one name in
/// different groups stay apart, as Gatling's own report keeps them.
fn label(groups: impl IntoIterator<Item = impl AsRef<str>>, name: &str) -> String {
    let mut out = String::new();
    for g in groups {
        let g = g.as_ref();
        if !g.is_empty() {
            out.push_str(g);
            out.push('/');
        }
    }
    out.push_str(name);
    out
}

/// Volley's kind for a failed request, from Gatling's message (the text and binary logs
/// carry the same messages, so both read them here).
fn classify(message: &str, status: Option<u16>) -> ErrorKind {
    if message.contains("imeout") {
        ErrorKind::Timeout
    } else if message.contains("onnect") {
        ErrorKind::Connect
    } else if status.is_some() || message.contains("status") {
        ErrorKind::Status
    } else {
        ErrorKind::Protocol
    }
}

/// The HTTP status a check message names (`status.find.in(200), but actually found 500`).
fn status_of(message: &str) -> Option<u16> {
    message
        .rsplit("found ")
        .next()
        .and_then(|s| s.trim().parse::<u16>().ok())
}

/// Whether the bytes look like a binary (3.13+) simulation log: a RUN record (0) with a
/// length-prefixed version string.
pub fn sniff_binary(head: &[u8]) -> bool {
    head.len() > 6
        && head[0] == 0
        && head[1..5] == [0, 0, 0, head[4]]
        && head[4] > 0
        && head[4] < 32
        && head[5].is_ascii_digit()
}

/// Reads a text simulation log.
pub fn read_text(path: &Path, reader: impl BufRead) -> Result<Source> {
    let mut bucketer = Bucketer::new(BUCKET_S);
    let mut book = NoteBook::new(Locator::Line);
    let mut active = 0f64;
    let mut version = String::new();
    for (i, line) in reader.lines().enumerate() {
        let line_no = i as u64 + 1;
        let line = line.map_err(|e| Error::io(path, e))?;
        let line = line.strip_suffix('\r').unwrap_or(&line);
        let f: Vec<&str> = line.split('\t').collect();
        match f[0] {
            "RUN" => version = f.get(5).unwrap_or(&"").to_string(),
            "USER" => match f.get(2) {
                Some(&"START") => active += 1.0,
                Some(&"END") => active = (active - 1.0).max(0.0),
                _ => {}
            },
            "REQUEST" => {
                // 3.4+: REQUEST, groups, name, start, end, status, message (pre-3.4 has a user id first).
                if !(7..=8).contains(&f.len()) {
                    return Err(Error::malformed(
                        path,
                        line_no,
                        Some(f.len().min(7) as u64 + 1),
                        format!(
                            "a REQUEST record with {} fields: expected 7 (REQUEST, groups, name, start, end, status, message), or 8 before Gatling 3.4",
                            f.len()
                        ),
                    ));
                }
                let shift = usize::from(f.len() >= 8);
                let ms = |c: usize| -> Result<std::result::Result<i64, &'static str>> {
                    let raw = f.get(c).copied().unwrap_or("").trim();
                    if let Ok(v) = raw.parse::<i64>() {
                        return Ok(Ok(v));
                    }
                    match raw.parse::<f64>() {
                        Ok(v) if v.is_nan() => Ok(Err("NaN")),
                        Ok(v) if v.is_infinite() => Ok(Err("infinite")),
                        _ => Err(Error::malformed(
                            path,
                            line_no,
                            Some(c as u64 + 1),
                            format!("expected epoch milliseconds, found `{raw}`"),
                        )),
                    }
                };
                let (start, end) = match (ms(3 + shift)?, ms(4 + shift)?) {
                    (Ok(s), Ok(e)) => (s, e),
                    (Err(why), _) => {
                        book.skip(Unit::Row, line_no, &format!("the start time is {why}"));
                        continue;
                    }
                    (_, Err(why)) => {
                        book.skip(Unit::Row, line_no, &format!("the end time is {why}"));
                        continue;
                    }
                };
                if let Some(why) = bad_stamp(start as f64) {
                    book.skip(Unit::Row, line_no, &format!("the start time is {why}"));
                    continue;
                }
                let took = end.saturating_sub(start);
                if took < 0 {
                    book.skip(Unit::Row, line_no, "the request ends before it starts");
                    continue;
                }
                if let Some(why) = bad_duration(took as f64) {
                    book.skip(Unit::Row, line_no, &format!("the request took {why}"));
                    continue;
                }
                let ok = match f[5 + shift].trim() {
                    "OK" => true,
                    "KO" => false,
                    other => {
                        return Err(Error::malformed(
                            path,
                            line_no,
                            Some(6 + shift as u64),
                            format!("expected the status OK or KO, found `{other}`"),
                        ));
                    }
                };
                let message = f.get(6 + shift).copied().unwrap_or("");
                let status = status_of(message);
                let error = (!ok).then(|| classify(message, status));
                // The groups field holds the group path, comma-separated.
                let name = label(f[1 + shift].split(','), f[2 + shift]);
                let record = RequestRecord {
                    start_ms: start as f64,
                    ttfb_us: None,
                    total_us: took as u64 * 1000,
                    error,
                    status,
                    vusers: Some(active),
                    place: line_no,
                    end_ms: None,
                    ..Default::default()
                };
                bucketer.add_labelled(&record, &name);
            }
            "GROUP" | "ERROR" | "ASSERTION" | "" => {}
            other => {
                return Err(Error::malformed(
                    path,
                    line_no,
                    Some(1),
                    format!(
                        "unknown record type `{other}` (expected RUN, USER, REQUEST, GROUP, ERROR)"
                    ),
                ));
            }
        }
    }
    let requests = bucketer.records();
    Ok(finish(
        path,
        Format::Gatling,
        bucketer,
        book,
        format!("{requests} Gatling requests (simulation.log of Gatling {version})"),
    ))
}

/// The source of a bucketed Gatling log. Gatling has no first-byte time, so the MTTFB
/// columns show the response time, and the note says so.
fn finish(path: &Path, format: Format, bucketer: Bucketer, book: NoteBook, what: String) -> Source {
    let mut src = source(path, format);
    let mut out = bucketer.finish();
    for row in out.series.intervals.iter_mut().chain(
        out.per_label
            .iter_mut()
            .flat_map(|(_, s)| s.intervals.iter_mut()),
    ) {
        row.mttfb_ms = row.mean_test_time_ms;
    }
    out.into_source(&mut src);
    src.input_notes.splice(0..0, book.into_notes());
    src.notes.push(format!(
        "{what} bucketed by start second. Gatling records no time to first byte: MTTFB here is the response time (end − start), and per-request percentiles are of total time."
    ));
    src
}

/// Longest string a binary log may hold, bytes: its length field is read from the file,
/// and a damaged one must not ask for more.
const MAX_STRING: usize = 1 << 20;
/// Most items a count field of a binary log may announce (scenarios, groups, assertions
/// and each one's bytes), for the same reason.
const MAX_COUNT: usize = 1 << 16;

/// Reads a binary simulation log (Gatling 3.13+, big-endian).
///
/// Records: a type byte (0 RUN, 1 REQUEST, 2 USER, 3 GROUP, 4 ERROR), then fields.
/// Strings are an i32 byte length, the bytes and a coder byte (0 Latin-1, 1 UTF-16), with
/// nothing after a zero length. Request names, messages and groups go through a string
/// cache: a positive id introduces a new string, a negative one refers back to it. Times
/// after the RUN record are i32 milliseconds from the run's start. A file that ends inside
/// a record (cut off while it was written) gives every record before it, and a note.
pub fn read_binary(path: &Path, bytes: &[u8]) -> Result<Source> {
    let mut r = BinReader {
        path,
        bytes,
        pos: 0,
        cache: std::collections::HashMap::new(),
        eof: false,
    };
    let mut bucketer = Bucketer::located(BUCKET_S, Locator::Byte).counting(Unit::Record);
    let mut book = NoteBook::new(Locator::Byte);
    let (mut active, mut users) = (0f64, 0u64);
    if r.u8()? != 0 {
        return Err(r.error("a binary simulation.log starts with a RUN record"));
    }
    let version = r.string()?;
    let _class = r.string()?;
    let start = r.i64()? as f64;
    if let Some(why) = bad_stamp(start) {
        return Err(r.error(&format!("the RUN record's start time is {why}")));
    }
    let _description = r.string()?;
    for _ in 0..r.count()? {
        r.string()?; // scenario names
    }
    // Each assertion is its length and that many bytes (boopickle's encoding, which volley
    // does not read); Gatling's own LogFileDataWriter writes them so since 3.13.1.
    for _ in 0..r.count()? {
        let len = r.count()?;
        r.skip(len)?;
    }
    while r.pos < bytes.len() {
        let at = r.pos;
        match read_record(&mut r, start, active) {
            Ok(Record::Request(record, name)) => {
                let record = RequestRecord {
                    place: at as u64,
                    ..record
                };
                bucketer.add_labelled(&record, &name);
            }
            Ok(Record::User(starting)) => {
                users += u64::from(starting);
                active = if starting {
                    active + 1.0
                } else {
                    (active - 1.0).max(0.0)
                };
            }
            Ok(Record::Skip(why)) => book.skip(Unit::Record, at as u64, why),
            Ok(Record::Other) => {}
            Err(_) if r.eof => {
                let file = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                book.push(InputNote::CutOff {
                    file,
                    at: Place::Byte(at as u64),
                });
                break;
            }
            Err(e) => return Err(e),
        }
    }
    let requests = bucketer.records();
    Ok(finish(
        path,
        Format::GatlingBinary,
        bucketer,
        book,
        format!(
            "{requests} Gatling requests and {users} users (binary simulation.log, RUN record says Gatling {version})"
        ),
    ))
}

/// One record of a binary log, as far as volley reads it.
enum Record {
    /// A request, with its name.
    Request(RequestRecord, String),
    /// A user started (`true`) or ended.
    User(bool),
    /// A request that cannot be used, and why.
    Skip(&'static str),
    /// A record volley does not read (groups, errors).
    Other,
}

fn read_record(r: &mut BinReader<'_>, start: f64, active: f64) -> Result<Record> {
    Ok(match r.u8()? {
        1 => {
            let mut groups = Vec::new();
            for _ in 0..r.count()? {
                groups.push(r.cached()?);
            }
            let name = label(&groups, &r.cached()?);
            let (t0, t1) = (r.i32()?, r.i32()?);
            let ok = r.u8()? != 0;
            let message = r.cached()?;
            let took = i64::from(t1) - i64::from(t0);
            if took < 0 {
                return Ok(Record::Skip("the request ends before it starts"));
            }
            if bad_duration(took as f64).is_some() {
                return Ok(Record::Skip("the request took longer than a week"));
            }
            if bad_stamp(start + f64::from(t0)).is_some() {
                return Ok(Record::Skip("the start time is outside 1970 to 9999"));
            }
            let status = status_of(&message);
            Record::Request(
                RequestRecord {
                    start_ms: start + f64::from(t0),
                    total_us: took as u64 * 1000,
                    error: (!ok).then(|| classify(&message, status)),
                    status,
                    vusers: Some(active),
                    ..Default::default()
                },
                name,
            )
        }
        2 => {
            let _scenario = r.i32()?;
            let starting = r.u8()? != 0;
            let _ts = r.i32()?;
            Record::User(starting)
        }
        3 => {
            for _ in 0..r.count()? {
                r.cached()?;
            }
            let (_start, _end, _cumulated) = (r.i32()?, r.i32()?, r.i32()?);
            r.u8()?;
            Record::Other
        }
        4 => {
            r.cached()?;
            r.i32()?;
            Record::Other
        }
        other => return Err(r.error(&format!("unknown record type {other}"))),
    })
}

struct BinReader<'a> {
    path: &'a Path,
    bytes: &'a [u8],
    pos: usize,
    cache: std::collections::HashMap<i32, String>,
    /// The file ended inside a record.
    eof: bool,
}

impl BinReader<'_> {
    fn error(&self, what: &str) -> Error {
        Error::malformed(
            self.path,
            1,
            Some(self.pos as u64),
            format!("byte offset {}: {what}", self.pos),
        )
    }

    fn take(&mut self, n: usize) -> Result<&[u8]> {
        if n > self.bytes.len() - self.pos {
            self.eof = true;
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
        Ok(i32::from_be_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }

    fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_be_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    /// A count of items that follow (scenario names, groups): at most [`MAX_COUNT`], as
    /// the field is read from the file.
    fn count(&mut self) -> Result<usize> {
        let n = self.i32()?;
        match usize::try_from(n) {
            Ok(n) if n <= MAX_COUNT => Ok(n),
            _ => Err(self.error(&format!("a count of {n} (0 to {MAX_COUNT} expected)"))),
        }
    }

    fn string(&mut self) -> Result<String> {
        let len = self.i32()?;
        let len = match usize::try_from(len) {
            Ok(n) if n <= MAX_STRING => n,
            _ => {
                return Err(self.error(&format!(
                    "a string of {len} bytes (0 to {MAX_STRING} expected)"
                )));
            }
        };
        if len == 0 {
            return Ok(String::new());
        }
        let raw = self.take(len)?.to_vec();
        Ok(match self.u8()? {
            0 => raw.iter().map(|&b| b as char).collect(),
            1 => {
                let units: Vec<u16> = raw
                    .chunks_exact(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]))
                    .collect();
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
            let key = id.checked_neg().unwrap_or(i32::MAX);
            self.cache
                .get(&key)
                .cloned()
                .ok_or_else(|| self.error(&format!("reference to unknown cached string {key}")))
        }
    }
}
