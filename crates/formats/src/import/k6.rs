//! k6: `--out csv`, `--out json` (NDJSON) and `--summary-export`.
//!
//! k6 writes one sample per metric per request (`http_reqs`, `http_req_duration`,
//! `http_req_blocked`, `_connecting`, `_tls_handshaking`, `_sending`, `_waiting`,
//! `_receiving`, `http_req_failed`), consecutively, all stamped with the time the request
//! **ended**; a request is rebuilt from the run of samples that starts at its `http_reqs`,
//! and placed at its start (end − blocked − duration). Figures keep k6's definitions:
//! TTFB is `http_req_waiting` (request written → first byte; no connection set-up) and
//! total is `http_req_duration` (sending + waiting + receiving; no connection set-up);
//! `connecting` + `tls_handshaking` are the connection time. Requests are broken down by
//! their `name` tag (k6 sets it to the URL unless the script names the request).

use std::io::BufRead;
use std::path::Path;

use volley_stats::{ErrorKind, Interval, LatencySummary, Series};

use crate::bucket::{Bucketer, RequestRecord};
use crate::error::{Error, Result};
use crate::import::parts::{self, How, Outcome, Parts, Plan};
use crate::import::point;
use crate::import::rows::{self, Dialect, Fields};
use crate::import::{BUCKET_S, bad_duration, bad_stamp, ms_to_us, source};
use crate::note::{Figure, InputNote, Locator, NoteBook, Unit};
use crate::source::{Format, Source};

/// A request being rebuilt from its samples.
#[derive(Default)]
struct Pending {
    at_ms: f64,
    /// Line of its `http_reqs` sample.
    line: u64,
    status: Option<u16>,
    expected: Option<bool>,
    error_code: Option<u32>,
    /// The `name` tag (else the URL).
    label: Option<String>,
    blocked: Option<f64>,
    connecting: Option<f64>,
    tls: Option<f64>,
    sending: Option<f64>,
    waiting: Option<f64>,
    receiving: Option<f64>,
    duration: Option<f64>,
    failed: Option<bool>,
    /// Why the request cannot be used (a sample with a value no time can have).
    bad: Option<String>,
}

impl Pending {
    /// The request, and whether k6 said nothing about its failure (neither
    /// `http_req_failed` nor `expected_response`: k6 before 0.31); `Err` with why it cannot
    /// be used.
    /// `whole_seconds`: the file's time stamps are whole seconds, too coarse to place the
    /// start by subtracting a duration, so the request is placed at its stamp.
    fn record(&self, whole_seconds: bool) -> std::result::Result<(RequestRecord, bool), String> {
        if let Some(why) = &self.bad {
            return Err(why.clone());
        }
        let z = |v: Option<f64>| v.unwrap_or(0.0);
        let total = self
            .duration
            .or(match (self.sending, self.waiting, self.receiving) {
                (s, Some(w), Some(r)) => Some(z(s) + w + r),
                _ => None,
            });
        let unknown = self.failed.is_none() && self.expected.is_none();
        // Without either, a request with no response at all (status 0) failed for sure.
        let failed = self
            .failed
            .or(self.expected.map(|e| !e))
            .unwrap_or(self.status == Some(0));
        let error = failed.then(|| classify(self.status, self.error_code));
        let total = match total {
            Some(t) => t,
            None if failed => 0.0,
            None => return Err("no http_req_duration, nor http_req_waiting and http_req_receiving: the time it took is unknown".to_string()),
        };
        Ok((
            RequestRecord {
                // The samples are stamped when the request ended.
                start_ms: if whole_seconds {
                    self.at_ms
                } else {
                    self.at_ms - z(self.blocked) - total
                },
                ttfb_us: self.waiting.map(ms_to_us),
                total_us: ms_to_us(total),
                connect_us: ms_to_us(z(self.connecting) + z(self.tls)),
                bytes: 0,
                error,
                status: self.status.filter(|s| *s > 0),
                vusers: None,
                place: self.line,
                end_ms: (!whole_seconds).then_some(self.at_ms),
            },
            unknown,
        ))
    }
}

/// k6's error codes (`lib/netext/httpext/error_codes.go`) as volley's kinds.
fn classify(status: Option<u16>, code: Option<u32>) -> ErrorKind {
    match (status, code) {
        (Some(s), _) if s >= 100 => ErrorKind::Status,
        (_, Some(1050)) => ErrorKind::Timeout,
        (_, Some(c)) if (1100..1300).contains(&c) => ErrorKind::Connect,
        (_, Some(c)) if (1300..1400).contains(&c) => ErrorKind::Tls,
        (_, Some(c)) if (1000..1100).contains(&c) => ErrorKind::Reset,
        _ => ErrorKind::Protocol,
    }
}

/// One metric sample as read from a line.
struct Sample<'a> {
    metric: &'a str,
    at_ms: f64,
    /// `None` when the line has no value.
    value: Option<f64>,
    status: Option<u16>,
    expected: Option<bool>,
    code: Option<u32>,
    /// The `name` tag, else the `url` tag.
    label: Option<&'a str>,
    line: u64,
}

/// Rebuilds requests from metric samples and buckets them.
struct Assembler {
    bucketer: Bucketer,
    pending: Option<Pending>,
    book: NoteBook,
    /// Requests for which k6 said nothing about failure.
    unknown_failure: u64,
    /// The time stamps are whole seconds (k6's default CSV).
    whole_seconds: bool,
}

impl Assembler {
    fn new() -> Self {
        Assembler::with(Bucketer::new(BUCKET_S))
    }

    /// An assembler bucketing into `bucketer` (the whole file's, or a part's).
    fn with(bucketer: Bucketer) -> Self {
        Assembler {
            bucketer: bucketer.counting(Unit::Request),
            pending: None,
            book: NoteBook::new(Locator::Line),
            unknown_failure: 0,
            whole_seconds: false,
        }
    }

    /// The file's time stamps are whole seconds (k6's default CSV).
    fn whole_second_stamps(&mut self) {
        self.whole_seconds = true;
        self.bucketer.whole_second_stamps();
    }

    fn sample(&mut self, s: Sample<'_>) {
        if s.metric == "vus" {
            match (s.value, bad_stamp(s.at_ms)) {
                (_, Some(why)) => self.book.skip(
                    Unit::Sample,
                    s.line,
                    &format!("the `vus` time stamp is {why}"),
                ),
                (Some(v), None) if v.is_finite() && v >= 0.0 => self.bucketer.vusers_at(s.at_ms, v),
                (Some(v), None) => self.book.skip(
                    Unit::Sample,
                    s.line,
                    &format!("the `vus` value is {}", what(v)),
                ),
                (None, None) => {
                    self.book
                        .skip(Unit::Sample, s.line, "the `vus` sample has no value")
                }
            }
            return;
        }
        if s.metric == "http_reqs" {
            self.flush();
            if let Some(why) = bad_stamp(s.at_ms) {
                self.book.skip(
                    Unit::Request,
                    s.line,
                    &format!("the http_reqs time stamp is {why}"),
                );
                return;
            }
            self.pending = Some(Pending {
                at_ms: s.at_ms,
                line: s.line,
                status: s.status,
                expected: s.expected,
                error_code: s.code,
                label: s.label.map(str::to_string),
                ..Default::default()
            });
            return;
        }
        let Some(p) = self.pending.as_mut() else {
            return;
        };
        let slot = match s.metric {
            "http_req_blocked" => &mut p.blocked,
            "http_req_connecting" => &mut p.connecting,
            "http_req_tls_handshaking" => &mut p.tls,
            "http_req_sending" => &mut p.sending,
            "http_req_waiting" => &mut p.waiting,
            "http_req_receiving" => &mut p.receiving,
            "http_req_duration" => &mut p.duration,
            "http_req_failed" => {
                match s.value {
                    Some(v) if v == 0.0 || v == 1.0 => p.failed = Some(v != 0.0),
                    Some(v) => {
                        p.bad = p
                            .bad
                            .take()
                            .or(Some(format!("http_req_failed is {v}, neither 0 nor 1")))
                    }
                    None => {
                        p.bad = p
                            .bad
                            .take()
                            .or(Some("http_req_failed has no value".to_string()))
                    }
                }
                self.flush();
                return;
            }
            _ => return,
        };
        match s.value {
            Some(v) => match bad_duration(v) {
                Some(why) => p.bad = p.bad.take().or(Some(format!("{} is {why}", s.metric))),
                None => *slot = Some(v),
            },
            None => p.bad = p.bad.take().or(Some(format!("{} has no value", s.metric))),
        }
    }

    fn flush(&mut self) {
        if let Some(p) = self.pending.take() {
            match p.record(self.whole_seconds) {
                Ok((r, unknown)) => {
                    self.unknown_failure += u64::from(unknown);
                    match &p.label {
                        Some(label) => self.bucketer.add_labelled(&r, label),
                        None => self.bucketer.add(&r),
                    }
                }
                Err(why) => self.book.skip(Unit::Request, p.line, &why),
            }
        }
    }

    fn finish(mut self, path: &Path, format: Format) -> Source {
        self.flush();
        let mut src = source(path, format);
        let requests = self.bucketer.records();
        let (missing, unknown) = (self.bucketer.ttfb_missing(), self.unknown_failure);
        let out = self.bucketer.finish();
        let successes = out.series.tests();
        out.into_source(&mut src);
        let placed = if self.whole_seconds {
            "the second k6 stamped (when each request ended: whole-second stamps are too coarse to place its start)"
        } else {
            "second of their start (k6 stamps a request's samples when it ended: start = end − blocked − duration)"
        };
        src.notes.push(format!(
            "{requests} requests rebuilt from k6 samples and bucketed by {placed}. k6's definitions are kept: TTFB = http_req_waiting (request written → first response byte, without connection set-up or sending), total = http_req_duration (sending + waiting + receiving, without connection set-up); TTFB, total and their percentiles cover successful requests only (k6's own summary covers all unless it shows `expected_response:true`)."
        ));
        src.input_notes.splice(0..0, self.book.into_notes());
        if missing > 0 && missing == successes {
            src.input_notes.push(InputNote::Unavailable {
                figure: Figure::Ttfb,
                why: "this file has no http_req_waiting samples (k6's time to first byte), so TTFB and MTTFB are unknown; total time comes from http_req_duration.".to_string(),
            });
        } else if missing > 0 {
            src.notes.push(format!(
                "{missing} successful requests have no http_req_waiting sample: they count as requests and in total time, not in TTFB or MTTFB."
            ));
        }
        if unknown > 0 {
            src.notes.push(format!(
                "k6 wrote neither http_req_failed nor expected_response for {unknown} requests (k6 before 0.31): those without a response (status 0) are counted as errors, the others as successes whatever their status."
            ));
        }
        src
    }
}

/// How a number that is no time reads in a note.
fn what(v: f64) -> String {
    match bad_duration(v) {
        Some(w) => w.to_string(),
        None => v.to_string(),
    }
}

/// Whether the first line is a k6 CSV header.
pub fn sniff_csv(first_line: &str) -> bool {
    first_line.starts_with("metric_name,timestamp,metric_value")
}

/// Where a k6 CSV's columns are (`metric_name,timestamp,metric_value` are always first).
struct CsvColumns {
    status: Option<usize>,
    expected: Option<usize>,
    code: Option<usize>,
    name: Option<usize>,
    url: Option<usize>,
    width: usize,
}

impl CsvColumns {
    fn of<'a>(header: impl Iterator<Item = &'a str> + Clone) -> CsvColumns {
        let col = |name: &str| header.clone().position(|h| h == name);
        CsvColumns {
            status: col("status"),
            expected: col("expected_response"),
            code: col("error_code"),
            name: col("name"),
            url: col("url"),
            width: header.count(),
        }
    }
}

/// What the rows read so far hold: the whole file's, or a part's.
struct CsvState {
    asm: Assembler,
    /// No row read yet: the first decides whether the stamps are whole seconds.
    first: bool,
}

impl CsvState {
    /// Reads one row at `line`.
    fn row(
        &mut self,
        path: &Path,
        cols: &CsvColumns,
        record: &Fields<'_>,
        line: u64,
    ) -> Result<()> {
        let (metric_c, ts_c, value_c) = (0, 1, 2);
        if record.len() < 3 {
            return Err(Error::malformed(
                path,
                line,
                Some(record.len() as u64 + 1),
                "truncated row: expected metric_name,timestamp,metric_value",
            ));
        }
        let width = cols.width;
        if width > 3 && record.len() != width {
            return Err(Error::malformed(
                path,
                line,
                Some(record.len().min(width) as u64 + 1),
                format!("{} fields, the header has {width}", record.len()),
            ));
        }
        let bad = |c: usize, what: &str| {
            Error::malformed(
                path,
                line,
                Some(c as u64 + 1),
                format!("expected {what}, found `{}`", record.at(c)),
            )
        };
        let ts = parse_timestamp(record.at(ts_c)).ok_or_else(|| bad(ts_c, "a timestamp"))?;
        if self.first {
            // k6's default `unix` format: whole seconds.
            self.first = false;
            if record.at(ts_c).bytes().all(|b| b.is_ascii_digit()) && ts < 1e14 {
                self.asm.whole_second_stamps();
            }
        }
        let value = match record.at(value_c) {
            "" => None,
            v => Some(crate::num::f64(v).map_err(|_| bad(value_c, "a number"))?),
        };
        let metric = record.at(metric_c);
        // Only a request's `http_reqs` sample is read for its tags.
        let tags = metric == "http_reqs";
        let get = |c: Option<usize>| {
            c.filter(|_| tags)
                .and_then(|c| record.get(c))
                .filter(|s| !s.is_empty())
        };
        self.asm.sample(Sample {
            metric,
            at_ms: ts,
            value,
            status: get(cols.status).and_then(|s| s.parse().ok()),
            expected: get(cols.expected).map(|s| s == "true"),
            code: get(cols.code).and_then(|s| s.parse().ok()),
            label: get(cols.name).or(get(cols.url)),
            line,
        });
        Ok(())
    }
}

/// Reads `--out csv` in one pass (the same rows, read the same way, as [`read_csv_parts`]).
pub fn read_csv(path: &Path, reader: impl std::io::Read) -> Result<Source> {
    let mut cols = None;
    let mut state = CsvState {
        asm: Assembler::new(),
        first: true,
    };
    rows::stream(path, reader, Dialect::csv(b','), 1, |f, line| match &cols {
        Some(cols) => state.row(path, cols, f, line),
        None => {
            cols = Some(CsvColumns::of((0..f.len()).map(|i| f.at(i))));
            Ok(())
        }
    })?;
    Ok(state.asm.finish(path, Format::K6Csv))
}

/// Reads the k6 CSV at `path` (its records end at `limit`) in parts of `part` bytes on every
/// core, exactly as [`read_csv`] does in one pass. Returns the source and the line ends read;
/// `None` when it must be read in one pass instead.
///
/// Parts are cut only before an `http_reqs` row: a request's samples run from its
/// `http_reqs` row to the next one, so a part ends with its last request whole and none
/// starts inside one. A row that runs past its part's end (a quoted field holding a line
/// end across the cut) sends the whole file to one pass.
pub fn read_csv_parts(path: &Path, limit: u64, part: u64) -> Result<Option<(Source, u64)>> {
    let (file, head) = parts::head(path, limit)?;
    let Some(end) = memchr::memchr(b'\n', &head) else {
        return Ok(None);
    };
    let mut csv = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(&head[..=end]);
    let mut header = csv::StringRecord::new();
    match csv.read_record(&mut header) {
        // A header that is not one line (a quoted line end) is read by the one pass.
        Ok(true) if csv.position().byte() == end as u64 + 1 => {}
        Ok(_) => return Ok(None),
        Err(e) => return Err(Error::malformed(path, 1, None, e.to_string())),
    }
    let cols = CsvColumns::of(header.iter());
    let reader = K6Csv { path, cols: &cols };
    let mut acc = CsvState {
        asm: Assembler::new(),
        first: true,
    };
    let lines = parts::read(
        &file,
        Plan::new(end as u64 + 1, limit, part),
        &reader,
        &mut acc,
        1,
    )?;
    Ok(lines.map(|lines| (acc.asm.finish(path, Format::K6Csv), lines)))
}

/// A k6 CSV read in parts.
struct K6Csv<'a> {
    path: &'a Path,
    cols: &'a CsvColumns,
}

impl Parts for K6Csv<'_> {
    type Acc = CsvState;
    /// The grid's origin and whether the stamps are whole seconds.
    type Seed = (f64, bool);
    type Part = CsvState;

    fn cut(&self, window: &[u8]) -> Option<usize> {
        memchr::memmem::find(window, b"\nhttp_reqs,").map(|i| i + 1)
    }

    fn read(
        &self,
        buf: &[u8],
        own: usize,
        at_end: bool,
        how: How<'_, (f64, bool), CsvState>,
    ) -> Outcome<CsvState> {
        let (origin, newest, whole_seconds, first) = match how {
            How::Guess(&(origin, whole)) => (Some(origin), None, whole, false),
            How::After(acc) => (
                acc.asm.bucketer.origin_ms(),
                acc.asm.bucketer.newest(),
                acc.asm.whole_seconds,
                acc.first,
            ),
        };
        let mut asm = Assembler::with(Bucketer::part(BUCKET_S, Locator::Line, origin, newest));
        if whole_seconds {
            asm.whole_second_stamps();
        }
        let mut state = CsvState { asm, first };
        match rows::records(
            self.path,
            buf,
            own,
            at_end,
            Dialect::csv(b','),
            |f, line| state.row(self.path, self.cols, f, line),
        ) {
            // The row runs past the cut: the file is read in one pass.
            Ok(Some((consumed, _))) if consumed != own => Outcome::NeedMore,
            Ok(Some((_, newlines))) => {
                // The next row starts a request (or the file ends): this part's last one is whole.
                state.asm.flush();
                state.asm.bucketer.seal();
                Outcome::Read {
                    part: state,
                    consumed: own,
                    newlines,
                }
            }
            Ok(None) => Outcome::NeedMore,
            Err(e) => Outcome::Failed(e),
        }
    }

    fn seed(&self, acc: &CsvState) -> Option<(f64, bool)> {
        acc.asm
            .bucketer
            .origin_ms()
            .map(|o| (o, acc.asm.whole_seconds))
    }

    fn exact(&self, part: &CsvState, acc: &CsvState) -> bool {
        part.asm.bucketer.exact_after(acc.asm.bucketer.newest())
    }

    fn absorb(&self, acc: &mut CsvState, part: CsvState, line_base: u64) {
        let CsvState { asm, first } = part;
        acc.first &= first;
        acc.asm.whole_seconds |= asm.whole_seconds;
        acc.asm.unknown_failure += asm.unknown_failure;
        acc.asm.bucketer.absorb(asm.bucketer, line_base);
        acc.asm.book.absorb(asm.book, line_base);
    }
}

/// k6 CSV timestamps: unix seconds (default), milli/micro/nanoseconds, or RFC 3339 → ms.
fn parse_timestamp(s: &str) -> Option<f64> {
    if let Ok(n) = crate::num::f64(s) {
        return Some(match n {
            n if n > 1e17 => n / 1e6,
            n if n > 1e14 => n / 1e3,
            n if n > 1e11 => n,
            n => n * 1000.0,
        });
    }
    s.parse::<jiff::Timestamp>()
        .ok()
        .map(|t| t.as_millisecond() as f64)
}

/// Whether the first line is k6 NDJSON.
pub fn sniff_json(first_line: &str) -> bool {
    let l = first_line.trim_start();
    l.starts_with('{') && (l.contains("\"type\":\"Metric\"") || l.contains("\"type\":\"Point\""))
}

/// Reads `--out json` (one JSON object per line).
pub fn read_json(path: &Path, mut reader: impl BufRead) -> Result<Source> {
    let mut asm = Assembler::new();
    let mut line = Vec::new();
    let mut line_no = 0u64;
    loop {
        line.clear();
        if reader
            .read_until(b'\n', &mut line)
            .map_err(|e| Error::io(path, e))?
            == 0
        {
            break;
        }
        line_no += 1;
        asm.json_line(path, &line, line_no)?;
    }
    Ok(asm.finish(path, Format::K6Json))
}

impl Assembler {
    /// Reads one NDJSON line (with or without its line end) at `line_no`.
    fn json_line(&mut self, path: &Path, text: &[u8], line_no: u64) -> Result<()> {
        if text.first() != Some(&b'{') && String::from_utf8_lossy(text).trim().is_empty() {
            return Ok(());
        }
        if let Some(p) = point::point(text) {
            return self.json_point(
                path,
                line_no,
                p.metric,
                Some(p.time),
                Some(p.value),
                &p.tags.unwrap_or_default(),
            );
        }
        // A line that is not UTF-8 is refused whole, as when lines were read as text (serde
        // checks only the strings it reads).
        if let Err(e) = std::str::from_utf8(text) {
            return Err(Error::malformed(
                path,
                line_no,
                Some(e.valid_up_to() as u64 + 1),
                "not UTF-8 text: save the file as UTF-8",
            ));
        }
        let v: json::Line<'_> = serde_json::from_slice(text).map_err(|e| {
            Error::malformed(
                path,
                line_no,
                Some(e.column() as u64),
                format!("not a JSON object: {e}"),
            )
        })?;
        if v.kind.as_deref() != Some("Point") {
            return Ok(());
        }
        let Some(metric) = v.metric.as_deref() else {
            self.book
                .skip(Unit::Row, line_no, "a Point without a metric name");
            return Ok(());
        };
        let t = &v.data.tags;
        let tags = point::Tags {
            status: t.status.as_deref(),
            expected_response: t.expected_response.as_deref(),
            error_code: t.error_code.as_deref(),
            name: t.name.as_deref(),
            url: t.url.as_deref(),
        };
        self.json_point(
            path,
            line_no,
            metric,
            v.data.time.as_deref(),
            v.data.value,
            &tags,
        )
    }

    /// Takes in one Point of metric `metric`.
    fn json_point(
        &mut self,
        path: &Path,
        line_no: u64,
        metric: &str,
        time: Option<&str>,
        value: Option<f64>,
        tags: &point::Tags<'_>,
    ) -> Result<()> {
        let at_us = time.and_then(rfc3339_us).ok_or_else(|| {
            Error::malformed(path, line_no, None, "Point without a valid data.time")
        })?;
        self.sample(Sample {
            metric,
            at_ms: at_us as f64 / 1000.0,
            value,
            status: tags.status.and_then(|s| s.parse().ok()),
            expected: tags.expected_response.map(|s| s == "true"),
            code: tags.error_code.and_then(|s| s.parse().ok()),
            label: tags
                .name
                .filter(|s| !s.is_empty())
                .or(tags.url.filter(|s| !s.is_empty())),
            line: line_no,
        });
        Ok(())
    }
}

/// Reads the k6 NDJSON at `path` (its lines end at `limit`) in parts of `part` bytes on every
/// core, exactly as [`read_json`] does in one pass. Returns the source and the line ends read;
/// `None` when it must be read in one pass instead.
///
/// Parts are cut only before an `http_reqs` Point, as k6 writes it (`{"metric":"http_reqs",
/// "type":"Point"`): a request's samples run from its `http_reqs` line to the next one. A file
/// written another way has no such line and is read in one pass.
pub fn read_json_parts(path: &Path, limit: u64, part: u64) -> Result<Option<(Source, u64)>> {
    let (file, _) = parts::head(path, limit)?;
    let mut acc = Assembler::new();
    let lines = parts::read(
        &file,
        Plan::new(0, limit, part),
        &K6Json { path },
        &mut acc,
        0,
    )?;
    Ok(lines.map(|lines| (acc.finish(path, Format::K6Json), lines)))
}

/// A k6 NDJSON file read in parts.
struct K6Json<'a> {
    path: &'a Path,
}

impl Parts for K6Json<'_> {
    type Acc = Assembler;
    /// The grid's origin.
    type Seed = f64;
    type Part = Assembler;

    fn cut(&self, window: &[u8]) -> Option<usize> {
        memchr::memmem::find(window, b"\n{\"metric\":\"http_reqs\",\"type\":\"Point\"")
            .map(|i| i + 1)
    }

    fn read(
        &self,
        buf: &[u8],
        own: usize,
        at_end: bool,
        how: How<'_, f64, Assembler>,
    ) -> Outcome<Assembler> {
        let (origin, newest) = match how {
            How::Guess(&origin) => (Some(origin), None),
            How::After(acc) => (acc.bucketer.origin_ms(), acc.bucketer.newest()),
        };
        let mut asm = Assembler::with(Bucketer::part(BUCKET_S, Locator::Line, origin, newest));
        let (mut pos, mut line) = (0usize, 0u64);
        while pos < own {
            let rest = &buf[pos..];
            let next = match memchr::memchr(b'\n', rest) {
                Some(i) => i + 1,
                None if at_end => rest.len(),
                None => return Outcome::NeedMore,
            };
            line += 1;
            // With its line end, as one pass hands it over (serde's errors count from it).
            if let Err(e) = asm.json_line(self.path, &rest[..next], line) {
                return Outcome::Failed(e);
            }
            pos += next;
        }
        // The next line starts a request (or the file ends): this part's last one is whole.
        asm.flush();
        asm.bucketer.seal();
        Outcome::Read {
            part: asm,
            consumed: pos,
            newlines: line,
        }
    }

    fn seed(&self, acc: &Assembler) -> Option<f64> {
        acc.bucketer.origin_ms()
    }

    fn exact(&self, part: &Assembler, acc: &Assembler) -> bool {
        part.bucketer.exact_after(acc.bucketer.newest())
    }

    fn absorb(&self, acc: &mut Assembler, part: Assembler, line_base: u64) {
        acc.unknown_failure += part.unknown_failure;
        acc.bucketer.absorb(part.bucketer, line_base);
        acc.book.absorb(part.book, line_base);
    }
}

/// A `data.time` as µs since the epoch, as `jiff::Timestamp` parses it and counts it: the
/// form k6 writes (`2026-04-16T11:10:22.393886034Z`, or with an offset such as `+09:00`) by
/// hand, anything else by jiff.
fn rfc3339_us(s: &str) -> Option<i64> {
    stamp_us(s.as_bytes()).or_else(|| {
        s.parse::<jiff::Timestamp>()
            .ok()
            .map(|t| t.as_microsecond())
    })
}

/// `YYYY-MM-DDTHH:MM:SS[.f{1,9}](Z|±HH:MM)` from 1970 on, as µs since the epoch; `None`
/// for anything else (left to jiff, which also says what is wrong with it).
fn stamp_us(s: &[u8]) -> Option<i64> {
    let digits = |r: std::ops::Range<usize>| crate::num::whole(s.get(r)?).map(|n| n as i64);
    let civil = crate::civil::seconds(s.get(..19)?, b'T')?;
    let mut at = 19;
    let mut micros = 0;
    if s.get(at) == Some(&b'.') {
        let n = s[at + 1..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if !(1..=9).contains(&n) {
            return None;
        }
        let frac = digits(at + 1..at + 1 + n)?;
        micros = frac * 10i64.pow(9 - n as u32) / 1000;
        at += 1 + n;
    }
    let offset_s = match &s[at..] {
        b"Z" => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (h, m) = (digits(at + 1..at + 3)?, digits(at + 4..at + 6)?);
            if h > 23 || m > 59 {
                return None;
            }
            if *sign == b'+' {
                h * 3600 + m * 60
            } else {
                -(h * 3600 + m * 60)
            }
        }
        _ => return None,
    };
    let secs = civil - offset_s;
    if secs < 0 {
        return None;
    }
    Some(secs * 1_000_000 + micros)
}

/// k6's NDJSON lines read in place: strings borrowed from the line (copied only when they
/// hold escapes), the fields volley reads picked out and the rest skipped, no
/// `serde_json::Value` built (building and dropping one took ~90 % of the reader's time).
/// As leniently as a `Value` would be read: a field of another JSON type than expected
/// reads as absent, and so does `data` or `tags` that is not an object.
mod json {
    use std::borrow::Cow;
    use std::fmt;

    use serde::de::{
        Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
    };

    /// One line: `{"type": …, "metric": …, "data": {…}}`.
    #[derive(Default)]
    pub(super) struct Line<'a> {
        pub kind: Option<Cow<'a, str>>,
        pub metric: Option<Cow<'a, str>>,
        pub data: Data<'a>,
    }

    /// A Point's `data`.
    #[derive(Default)]
    pub(super) struct Data<'a> {
        pub time: Option<Cow<'a, str>>,
        pub value: Option<f64>,
        pub tags: Tags<'a>,
        /// The line's metric is known not to be `http_reqs`, whose tags alone volley reads:
        /// the tags are skipped, not read.
        no_tags: bool,
    }

    /// The tags volley reads.
    #[derive(Default)]
    pub(super) struct Tags<'a> {
        pub status: Option<Cow<'a, str>>,
        pub expected_response: Option<Cow<'a, str>>,
        pub error_code: Option<Cow<'a, str>>,
        pub name: Option<Cow<'a, str>>,
        pub url: Option<Cow<'a, str>>,
    }

    /// An object read field by field (a repeated field: the last one, as in a `Value`).
    trait Fields<'de>: Default {
        /// Reads the value of field `key` from `map` (skipping it when volley does not read it).
        fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error>;
    }

    impl<'de> Fields<'de> for Line<'de> {
        fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
            match key {
                "type" => self.kind = map.next_value::<Any<'de>>()?.text(),
                "metric" => self.metric = map.next_value::<Any<'de>>()?.text(),
                "data" => {
                    let no_tags = self.metric.as_deref().is_some_and(|m| m != "http_reqs");
                    self.data = map.next_value_seed(Object(Data {
                        no_tags,
                        ..Data::default()
                    }))?;
                }
                _ => skip(map)?,
            }
            Ok(())
        }
    }

    impl<'de> Fields<'de> for Data<'de> {
        fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
            match key {
                "time" => self.time = map.next_value::<Any<'de>>()?.text(),
                "value" => self.value = map.next_value::<Any<'de>>()?.number(),
                "tags" if self.no_tags => skip(map)?,
                "tags" => self.tags = map.next_value()?,
                _ => skip(map)?,
            }
            Ok(())
        }
    }

    impl<'de> Fields<'de> for Tags<'de> {
        fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
            let slot = match key {
                "status" => &mut self.status,
                "expected_response" => &mut self.expected_response,
                "error_code" => &mut self.error_code,
                "name" => &mut self.name,
                "url" => &mut self.url,
                _ => return skip(map),
            };
            *slot = map.next_value::<Any<'de>>()?.text();
            Ok(())
        }
    }

    fn skip<'de, A: MapAccess<'de>>(map: &mut A) -> Result<(), A::Error> {
        map.next_value::<IgnoredAny>().map(|_| ())
    }

    macro_rules! object {
        ($($t:ident),*) => {$(
            impl<'de> Deserialize<'de> for $t<'de> {
                fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                    d.deserialize_any(Object($t::default()))
                }
            }
        )*};
    }
    object!(Line, Data, Tags);

    /// Reads an object into `T` through [`Fields`], starting from the `T` it holds; any other
    /// JSON value reads as `T::default()`.
    struct Object<T>(T);

    impl<'de, T: Fields<'de>> DeserializeSeed<'de> for Object<T> {
        type Value = T;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de, T: Fields<'de>> Visitor<'de> for Object<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
            let mut out = self.0;
            while let Some(key) = map.next_key::<Any<'de>>()? {
                match key {
                    Any::Text(k) => out.field(&k, &mut map)?,
                    _ => skip(&mut map)?,
                }
            }
            Ok(out)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<T, A::Error> {
            while s.next_element::<IgnoredAny>()?.is_some() {}
            Ok(T::default())
        }
        fn visit_str<E>(self, _: &str) -> Result<T, E> {
            Ok(T::default())
        }
        fn visit_f64<E>(self, _: f64) -> Result<T, E> {
            Ok(T::default())
        }
        fn visit_i64<E>(self, _: i64) -> Result<T, E> {
            Ok(T::default())
        }
        fn visit_u64<E>(self, _: u64) -> Result<T, E> {
            Ok(T::default())
        }
        fn visit_bool<E>(self, _: bool) -> Result<T, E> {
            Ok(T::default())
        }
        fn visit_unit<E>(self) -> Result<T, E> {
            Ok(T::default())
        }
    }

    /// A JSON value as volley reads a field: a string, a number, or something else.
    pub(super) enum Any<'a> {
        Text(Cow<'a, str>),
        Number(f64),
        Other,
    }

    impl<'a> Any<'a> {
        fn text(self) -> Option<Cow<'a, str>> {
            match self {
                Any::Text(t) => Some(t),
                _ => None,
            }
        }

        fn number(self) -> Option<f64> {
            match self {
                Any::Number(n) => Some(n),
                _ => None,
            }
        }
    }

    impl<'de> Deserialize<'de> for Any<'de> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Any<'de>;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("any JSON value")
                }
                fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Any<'de>, E> {
                    Ok(Any::Text(Cow::Borrowed(v)))
                }
                fn visit_str<E>(self, v: &str) -> Result<Any<'de>, E> {
                    Ok(Any::Text(Cow::Owned(v.to_string())))
                }
                fn visit_string<E>(self, v: String) -> Result<Any<'de>, E> {
                    Ok(Any::Text(Cow::Owned(v)))
                }
                fn visit_f64<E>(self, v: f64) -> Result<Any<'de>, E> {
                    Ok(Any::Number(v))
                }
                fn visit_i64<E>(self, v: i64) -> Result<Any<'de>, E> {
                    Ok(Any::Number(v as f64))
                }
                fn visit_u64<E>(self, v: u64) -> Result<Any<'de>, E> {
                    Ok(Any::Number(v as f64))
                }
                fn visit_bool<E>(self, _: bool) -> Result<Any<'de>, E> {
                    Ok(Any::Other)
                }
                fn visit_unit<E>(self) -> Result<Any<'de>, E> {
                    Ok(Any::Other)
                }
                fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Any<'de>, A::Error> {
                    while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                    Ok(Any::Other)
                }
                fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Any<'de>, A::Error> {
                    while s.next_element::<IgnoredAny>()?.is_some() {}
                    Ok(Any::Other)
                }
            }
            d.deserialize_any(V)
        }
    }
}

/// Whether `text` is a `--summary-export` file (legacy flat shape) or `handleSummary` data.
pub fn sniff_summary(head: &str) -> bool {
    let h = head.trim_start();
    h.starts_with('{')
        && (h.contains("\"root_group\"") || h.contains("\"metrics\""))
        && !sniff_json(h.lines().next().unwrap_or(""))
}

/// k6's trend statistics as a latency summary (a statistic the file lacks is NaN, shown
/// n/a; never another statistic in its place), and every statistic as text, custom
/// percentiles (`summaryTrendStats`) included.
fn trend_summary(node: &serde_json::Value, count: u64) -> (Option<LatencySummary>, String) {
    let Some(map) = node.as_object() else {
        return (None, String::new());
    };
    // A time that no request can have (negative, NaN) is n/a too.
    let time = |k: &str| {
        map.get(k)
            .and_then(serde_json::Value::as_f64)
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    let stat = |k: &str| time(k).unwrap_or(f64::NAN);
    let pct = |p: &str| time(&format!("p({p})"));
    let mut stats: Vec<(f64, String)> = map
        .iter()
        .filter_map(|(k, v)| {
            let v = v.as_f64()?;
            let order = match k.as_str() {
                "min" => -2.0,
                "avg" => -1.0,
                "med" => 50.0,
                "max" => 101.0,
                k => k
                    .strip_prefix("p(")?
                    .strip_suffix(')')?
                    .parse::<f64>()
                    .ok()?,
            };
            Some((order, format!("{k} {v:.3}")))
        })
        .collect();
    stats.sort_by(|a, b| a.0.total_cmp(&b.0));
    let text = stats
        .into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(", ");
    if map
        .keys()
        .all(|k| !["min", "avg", "med", "max"].contains(&k.as_str()) && !k.starts_with("p("))
    {
        return (None, text);
    }
    let summary = LatencySummary {
        count,
        min_ms: stat("min"),
        mean_ms: stat("avg"),
        p50_ms: time("med").or(pct("50")).unwrap_or(f64::NAN),
        p90_ms: pct("90").unwrap_or(f64::NAN),
        p95_ms: pct("95").unwrap_or(f64::NAN),
        p99_ms: pct("99").unwrap_or(f64::NAN),
        p99_9_ms: pct("99.9").unwrap_or(f64::NAN),
        p99_99_ms: pct("99.99").unwrap_or(f64::NAN),
        max_ms: stat("max"),
    };
    (Some(summary), text)
}

/// Line of the first occurrence of `needle` in `text` (1 when absent), for messages about a
/// JSON document.
fn line_of(text: &str, needle: &str) -> u64 {
    text.find(needle)
        .map_or(1, |at| text[..at].matches('\n').count() as u64 + 1)
}

/// Reads `--summary-export`: totals only, one interval spanning the run.
pub fn read_summary(path: &Path, text: &str) -> Result<Source> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        let cut = if e.is_eof() {
            " (the file ends before the JSON does: cut off?)"
        } else {
            ""
        };
        Error::malformed(
            path,
            e.line() as u64,
            Some(e.column() as u64),
            format!("{e}{cut}"),
        )
    })?;
    let m = &v["metrics"];
    // Legacy flat values, or handleSummary's { values: {...} }.
    let get = |metric: &str, field: &str| {
        let node = &m[metric];
        node[field]
            .as_f64()
            .or_else(|| node["values"][field].as_f64())
    };
    // A count must be a whole number, not negative.
    let whole = |metric: &str, field: &str, v: f64| -> Result<f64> {
        if v >= 0.0 && v.fract() == 0.0 && v <= 1e15 {
            Ok(v)
        } else {
            Err(Error::malformed(
                path,
                line_of(text, &format!("\"{metric}\"")),
                None,
                format!("metrics.{metric}.{field} is {v}: expected a count of requests"),
            ))
        }
    };
    let count = get("http_reqs", "count").ok_or_else(|| {
        Error::malformed(
            path,
            1,
            None,
            "no metrics.http_reqs.count: not a k6 summary with HTTP requests",
        )
    })?;
    let count = whole("http_reqs", "count", count)?;
    let mut unavailable = Vec::new();
    let rate = match get("http_reqs", "rate") {
        Some(r) if r > 0.0 => Some(r),
        Some(r) if r < 0.0 => {
            return Err(Error::malformed(
                path,
                line_of(text, "\"http_reqs\""),
                None,
                format!("metrics.http_reqs.rate is {r}: expected requests per second"),
            ));
        }
        _ if count == 0.0 => None,
        _ => {
            unavailable.push(InputNote::Unavailable {
                figure: Figure::Tps,
                why: "this summary has no http_reqs rate, so the length of the run, and the throughput, are unknown.".to_string(),
            });
            None
        }
    };
    // For http_req_failed, "passes" counts failed requests.
    let failed = match get("http_req_failed", "passes") {
        Some(f) => {
            let f = whole("http_req_failed", "passes", f)?;
            if f > count {
                return Err(Error::malformed(
                    path,
                    line_of(text, "\"http_req_failed\""),
                    None,
                    format!(
                        "metrics.http_req_failed.passes is {f}, more failed requests than the {count} of http_reqs.count"
                    ),
                ));
            }
            f
        }
        None => {
            unavailable.push(InputNote::Unavailable {
                figure: Figure::ErrorRate,
                why: "this summary has no http_req_failed (k6 before 0.31), so failed requests cannot be told from successful ones; all are counted as tests.".to_string(),
            });
            0.0
        }
    };
    let duration_s = rate.map_or(0.0, |r| count / r);
    let tests = (count - failed) as u64;
    // Successful requests only, as volley's per-request figures are, when k6 wrote the
    // submetric (it does by default since v0.31); else every request.
    let trend_of = |metric: &str| {
        let ok = format!("{metric}{{expected_response:true}}");
        let node = |name: &str| {
            m.get(name).filter(|n| n.is_object()).map(|n| {
                if n["values"].is_object() {
                    &n["values"]
                } else {
                    n
                }
            })
        };
        match node(&ok) {
            Some(n) => Some((ok, n, true)),
            None => node(metric).map(|n| (metric.to_string(), n, false)),
        }
    };
    let waiting = trend_of("http_req_waiting");
    let duration = trend_of("http_req_duration");
    let mean_of = |t: &Option<(String, &serde_json::Value, bool)>| {
        t.as_ref()
            .and_then(|(_, n, _)| n["avg"].as_f64())
            .filter(|w| w.is_finite() && *w >= 0.0)
    };
    let mttfb = mean_of(&waiting);
    if mttfb.is_none() {
        unavailable.push(InputNote::Unavailable {
            figure: Figure::Ttfb,
            why: "this summary has no http_req_waiting average (k6's time to first byte), so MTTFB is unknown.".to_string(),
        });
    }
    unavailable.push(InputNote::Unavailable {
        figure: Figure::PerInterval,
        why: "a k6 summary holds one total for the run: TPS and MTTFB percentiles over intervals, and MTTFB difference and variability, cannot be computed from it (the per-request percentiles shown are k6's own).".to_string(),
    });
    let mut src = source(path, Format::K6Summary);
    src.series = Series {
        intervals: vec![Interval {
            period_s: duration_s,
            tests,
            errors: failed as u64,
            tps: match rate {
                Some(_) if duration_s > 0.0 => tests as f64 / duration_s,
                Some(_) => 0.0,
                None if count == 0.0 => 0.0,
                None => f64::NAN,
            },
            mttfb_ms: mttfb.unwrap_or(f64::NAN),
            mean_test_time_ms: mean_of(&duration).unwrap_or(f64::NAN),
            vusers: get("vus_max", "max")
                .or_else(|| get("vus_max", "value"))
                .unwrap_or(0.0),
            ..Default::default()
        }],
    };
    src.notes.push("k6 summary: totals only, one interval spanning the run; TPS = successful requests ÷ the run's length (http_reqs.count ÷ rate).".to_string());
    for (t, what) in [(&waiting, "TTFB"), (&duration, "total")] {
        let Some((name, node, ok_only)) = t else {
            continue;
        };
        let (summary, stats) = trend_summary(node, if *ok_only { tests } else { count as u64 });
        let whom = if *ok_only {
            "successful requests"
        } else {
            "every request, failed ones included: the file has no expected_response:true submetric"
        };
        src.notes.push(format!(
            "{what} per request = k6's own {name} ({whom}), ms: {stats}."
        ));
        match what {
            "TTFB" => src.tool_latency.ttfb = summary,
            _ => src.tool_latency.total = summary,
        }
    }
    src.input_notes = unavailable;
    Ok(src)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the serde reader takes from a line: (metric, time, value, an http_reqs Point's tags).
    type Read = (
        String,
        Option<String>,
        Option<f64>,
        Option<[Option<String>; 5]>,
    );

    fn by_serde(line: &[u8]) -> Option<Read> {
        let v: json::Line<'_> = serde_json::from_slice(line).ok()?;
        if v.kind.as_deref() != Some("Point") {
            return None;
        }
        let metric = v.metric?.into_owned();
        let t = &v.data.tags;
        let own = |x: &Option<std::borrow::Cow<'_, str>>| x.as_deref().map(str::to_string);
        let tags = (metric == "http_reqs").then(|| {
            [
                own(&t.status),
                own(&t.expected_response),
                own(&t.error_code),
                own(&t.name),
                own(&t.url),
            ]
        });
        Some((
            metric,
            v.data.time.map(|t| t.into_owned()),
            v.data.value,
            tags,
        ))
    }

    fn by_hand(line: &[u8]) -> Option<Read> {
        let p = point::point(line)?;
        let s = |x: Option<&str>| x.map(str::to_string);
        let tags = p.tags.map(|t| {
            [
                s(t.status),
                s(t.expected_response),
                s(t.error_code),
                s(t.name),
                s(t.url),
            ]
        });
        Some((
            p.metric.to_string(),
            Some(p.time.to_string()),
            Some(p.value),
            tags,
        ))
    }

    #[test]
    fn a_point_read_by_hand_is_what_serde_reads_from_it() {
        let base: [&[u8]; 7] = [
            br#"{"metric":"http_reqs","type":"Point","data":{"time":"2026-04-16T11:10:22.393886034Z","value":1,"tags":{"expected_response":"false","group":"","method":"GET","name":"/rooms","status":"500","url":"http://127.0.0.1:8080/rooms","error_code":"1211"}}}"#,
            br#"{"metric":"http_req_duration","type":"Point","data":{"time":"2026-04-16T20:10:22.393886+09:00","value":7.885821,"tags":{"expected_response":"true","name":"/a","status":"200"}}}"#,
            br#"{"metric":"vus","type":"Point","data":{"time":"2024-08-22T01:13:59.892709931-03:00","value":10,"tags":null}}"#,
            br#"{"metric":"http_reqs","type":"Point","data":{"time":"T","value":-0.5,"tags":{"status":"1","status":"2","name":""}}}"#,
            // Numbers about an f64's exact range: 2^53 ± 1 with a fraction, 19 and 20 digits.
            br#"{"metric":"m","type":"Point","data":{"time":"T","value":9007199254740993.5,"tags":null}}"#,
            br#"{"metric":"m","type":"Point","data":{"time":"T","value":900719925474099.35,"tags":null}}"#,
            br#"{"metric":"m","type":"Point","data":{"time":"T","value":-1234567890123456789,"tags":{}}}"#,
        ];
        let alphabet: &[u8] = b"\"\\{}[],:.-+eE0123456789 \t\r\n\x00\x1fnulltrueaZ\xc3\xa9\xff";
        let mut rng = fastrand::Rng::with_seed(29);
        let (mut by_hand_n, mut both) = (0, 0);
        for round in 0..200_000 {
            let mut line = base[round % base.len()].to_vec();
            for _ in 0..rng.usize(0..4) {
                let at = rng.usize(0..=line.len());
                let b = alphabet[rng.usize(..alphabet.len())];
                match rng.u8(0..3) {
                    0 if at < line.len() => line[at] = b,
                    1 if at < line.len() => {
                        line.remove(at);
                    }
                    _ => line.insert(at, b),
                }
            }
            let (hand, serde) = (by_hand(&line), by_serde(&line));
            if let Some(h) = &hand {
                by_hand_n += 1;
                assert_eq!(
                    Some(h),
                    serde.as_ref(),
                    "{}",
                    String::from_utf8_lossy(&line)
                );
                assert!(
                    h.2.unwrap().to_bits() == serde.as_ref().unwrap().2.unwrap().to_bits(),
                    "the same bits: {}",
                    String::from_utf8_lossy(&line)
                );
                both += 1;
            }
        }
        assert!(
            by_hand_n > 20_000 && both == by_hand_n,
            "{by_hand_n} lines read by hand"
        );
    }

    #[test]
    fn time_stamps_read_as_jiff_reads_them() {
        let jiff_us = |s: &str| {
            s.parse::<jiff::Timestamp>()
                .ok()
                .map(|t| t.as_microsecond())
        };
        let mut rng = fastrand::Rng::with_seed(5);
        let mut fast = 0;
        for i in 0..200_000 {
            let y = if i % 50 == 0 {
                rng.i64(9990..10000)
            } else {
                rng.i64(1965..2200)
            };
            let (mo, d) = (rng.i64(0..14), rng.i64(0..33));
            let (h, mi, sec) = (rng.i64(0..25), rng.i64(0..61), rng.i64(0..61));
            let frac = match rng.u8(0..4) {
                0 => String::new(),
                n => {
                    let digits = rng.usize(if n == 3 { 0..12 } else { 1..10 });
                    format!(
                        ".{}",
                        (0..digits)
                            .map(|_| char::from(b'0' + rng.u8(0..10)))
                            .collect::<String>()
                    )
                }
            };
            let zone = match rng.u8(0..4) {
                0 | 1 => "Z".to_string(),
                2 => format!(
                    "{}{:02}:{:02}",
                    if rng.bool() { '+' } else { '-' },
                    rng.i64(0..25),
                    rng.i64(0..61)
                ),
                _ => ["z", "+0900", "+09", "", " Z", "Z "][rng.usize(0..6)].to_string(),
            };
            let text = format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{sec:02}{frac}{zone}");
            let text = if i % 1000 == 0 {
                text.replace('T', " ")
            } else {
                text
            };
            assert_eq!(rfc3339_us(&text), jiff_us(&text), "`{text}`");
            fast += usize::from(stamp_us(text.as_bytes()).is_some());
        }
        assert!(fast > 50_000, "{fast} read by hand");
        assert_eq!(
            stamp_us(b"2026-04-16T11:10:22.393886034Z"),
            Some(1_776_337_822_393_886)
        );
        assert_eq!(
            stamp_us(b"2026-04-16T20:10:22.393886+09:00"),
            Some(1_776_337_822_393_886)
        );
    }

    #[test]
    fn a_request_keeps_k6s_definitions_and_is_placed_at_its_start() {
        // One request on a new connection: 50 ms to connect, stamped when it ended
        // (RFC 3339 time stamps, so fine enough to place its start).
        let csv = "metric_name,timestamp,metric_value,name,status,expected_response\n\
            http_reqs,2026-11-23T05:00:10.100Z,1,/a,200,true\n\
            http_req_duration,2026-11-23T05:00:10.100Z,30,/a,200,true\n\
            http_req_blocked,2026-11-23T05:00:10.100Z,50.5,/a,200,true\n\
            http_req_connecting,2026-11-23T05:00:10.100Z,50,/a,200,true\n\
            http_req_sending,2026-11-23T05:00:10.100Z,1,/a,200,true\n\
            http_req_waiting,2026-11-23T05:00:10.100Z,25,/a,200,true\n\
            http_req_receiving,2026-11-23T05:00:10.100Z,4,/a,200,true\n\
            http_req_failed,2026-11-23T05:00:10.100Z,0,/a,200,true\n";
        let src = read_csv(Path::new("k6.csv"), csv.as_bytes()).unwrap();
        let ttfb = src.latency(crate::HistKey::TTFB, 0.0).unwrap();
        let total = src.latency(crate::HistKey::TOTAL, 0.0).unwrap();
        assert!(
            (ttfb.max_ms - 25.0).abs() < 0.05,
            "TTFB = http_req_waiting: {ttfb:?}"
        );
        assert!(
            (total.max_ms - 30.0).abs() < 0.05,
            "total = http_req_duration, no connecting: {total:?}"
        );
        assert_eq!(src.per_test[0].0, "/a");
        // Started at 10.100 − 0.0505 − 0.030 = 10.0195 s: in the second that ends at 11 s.
        let row = &src.series.intervals[0];
        assert!(
            (row.period_s - (10.100 - 10.0195)).abs() < 1e-6,
            "the interval is the request's own span: {row:?}"
        );
    }

    /// What a line gives volley, read through a `serde_json::Value` (as the reader once did).
    fn by_value(line: &str) -> Option<[Option<String>; 8]> {
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        let s = |x: &serde_json::Value| x.as_str().map(str::to_string);
        let (data, tags) = (&v["data"], &v["data"]["tags"]);
        Some([
            s(&v["type"]),
            s(&v["metric"]),
            s(&data["time"]),
            data["value"].as_f64().map(|n| n.to_string()),
            s(&tags["status"]),
            s(&tags["expected_response"]),
            s(&tags["name"]),
            s(&tags["url"]),
        ])
    }

    /// The same, read in place.
    fn in_place(line: &str) -> Option<[Option<String>; 8]> {
        let v: json::Line<'_> = serde_json::from_str(line).ok()?;
        let s = |x: &Option<std::borrow::Cow<'_, str>>| x.as_deref().map(str::to_string);
        let (data, tags) = (&v.data, &v.data.tags);
        Some([
            s(&v.kind),
            s(&v.metric),
            s(&data.time),
            data.value.map(|n| n.to_string()),
            s(&tags.status),
            s(&tags.expected_response),
            s(&tags.name),
            s(&tags.url),
        ])
    }

    #[test]
    fn ndjson_lines_read_in_place_give_what_a_value_gives() {
        for line in [
            r#"{"metric":"http_reqs","type":"Point","data":{"time":"2026-04-16T11:10:22.393886034Z","value":1,"tags":{"expected_response":"true","name":"http://x/a","status":"200","url":"http://x/a"}}}"#,
            r#"{"type":"Metric","data":{"name":"http_reqs","type":"trend","contains":"time","thresholds":[],"submetrics":null},"metric":"http_reqs"}"#,
            // Escapes (copied, not borrowed), numbers of every kind, nested values skipped.
            r#"{"type":"Point","metric":"http_req_duration","data":{"time":"2026-04-16T11:10:22Z","value":-1.5e3,"tags":{"name":"a "quoted" é name","group":{"x":[1,2,{"y":null}]}}}}"#,
            r#"{"type":"Point","metric":"vus","data":{"time":"2026-04-16T11:10:22Z","value":18446744073709551615}}"#,
            // Fields of another type than expected read as absent.
            r#"{"type":"Point","metric":7,"data":{"time":5,"value":"12","tags":["status","200"]}}"#,
            r#"{"type":"Point","metric":"x","data":"not an object"}"#,
            r#"{"type":["Point"],"metric":"x","data":[{"time":"t"}]}"#,
            r#"{"type":"Point","metric":"x","data":{"time":"t","value":true,"tags":{"status":200,"url":null}}}"#,
            // A repeated field: the last one counts.
            r#"{"type":"Point","type":"Metric","metric":"a","metric":"b","data":{"value":1,"value":2}}"#,
            r#"5"#,
            r#""Point""#,
            r#"[1,2]"#,
            r#"{}"#,
            r#"{"type":"Point"} trailing"#,
            r#"{"type":"Point","data":{"time":"unterminated}}"#,
        ] {
            assert_eq!(in_place(line), by_value(line), "{line}");
        }
    }
}
