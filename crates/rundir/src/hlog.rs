//! `latency.hlog`: per-interval histograms in the standard HdrHistogram interval-log text
//! format, so HdrHistogram's own tools (HistogramLogProcessor, HdrHistogram plotters)
//! read our runs too.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::interval_log::{
    IntervalLogIterator, IntervalLogWriterBuilder, LogEntry, Tag,
};
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer, V2Serializer};
use volley_stats::CompactHistogram;

use crate::error::{Error, Result};

/// What a logged histogram measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HistMetric {
    /// Time to first byte, connection set-up included (from the arrival's due time in
    /// open-model runs).
    Ttfb,
    /// Total time to the end of the body (from the due time in open-model runs).
    Total,
    /// Open model: time to first byte from the actual send (uncorrected).
    TtfbActual,
    /// Open model: total time from the actual send (uncorrected).
    TotalActual,
    /// Scenario iterations: the whole flow, from its first step to the end of its last.
    Iteration,
    /// Requests with no response when the run's grace period ended: how long they waited.
    Unfinished,
    /// Open model: the generator's delay in dispatching each arrival (due time to dispatch).
    SchedLag,
    /// Failed requests: how long each took until it failed.
    Failed,
    /// Shared connections: each request's wait for a connection or stream.
    PoolWait,
}

impl HistMetric {
    /// Every metric.
    pub const ALL: [HistMetric; 9] = [
        HistMetric::Ttfb,
        HistMetric::Total,
        HistMetric::TtfbActual,
        HistMetric::TotalActual,
        HistMetric::Iteration,
        HistMetric::Unfinished,
        HistMetric::SchedLag,
        HistMetric::Failed,
        HistMetric::PoolWait,
    ];

    /// Its tag in the log, for the whole run.
    pub fn tag(self) -> &'static str {
        match self {
            HistMetric::Ttfb => "ttfb",
            HistMetric::Total => "total",
            HistMetric::TtfbActual => "ttfb_actual",
            HistMetric::TotalActual => "total_actual",
            HistMetric::Iteration => "iteration",
            HistMetric::Unfinished => "unfinished",
            HistMetric::SchedLag => "sched_lag",
            HistMetric::Failed => "failed",
            HistMetric::PoolWait => "pool_wait",
        }
    }
}

/// Which histograms of a log: a metric of the whole run, or of one scenario step (or
/// imported label, or nGrinder test id). The tag is written `ttfb`, `total`, … for the run
/// and `ttfb.1`, `total.1`, … (1-based) for a step; [`HistKey::to_tag`] and
/// [`HistKey::parse`] are the only code that knows that spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HistKey {
    /// What is measured.
    pub metric: HistMetric,
    /// The step, 0-based; `None` for the whole run.
    pub step: Option<usize>,
}

impl HistKey {
    /// The run's time to first byte.
    pub const TTFB: HistKey = HistKey::run(HistMetric::Ttfb);
    /// The run's total time.
    pub const TOTAL: HistKey = HistKey::run(HistMetric::Total);
    /// Open model: the run's time to first byte from the actual send.
    pub const TTFB_ACTUAL: HistKey = HistKey::run(HistMetric::TtfbActual);
    /// Open model: the run's total time from the actual send.
    pub const TOTAL_ACTUAL: HistKey = HistKey::run(HistMetric::TotalActual);
    /// Scenario iterations.
    pub const ITERATION: HistKey = HistKey::run(HistMetric::Iteration);
    /// Requests with no response at the end of the run, how long they waited.
    pub const UNFINISHED: HistKey = HistKey::run(HistMetric::Unfinished);
    /// Open model: the generator's delay in dispatching each arrival.
    pub const SCHED_LAG: HistKey = HistKey::run(HistMetric::SchedLag);
    /// Failed requests, how long each took until it failed.
    pub const FAILED: HistKey = HistKey::run(HistMetric::Failed);
    /// Shared connections: each request's wait for one.
    pub const POOL_WAIT: HistKey = HistKey::run(HistMetric::PoolWait);

    /// `metric` of the whole run.
    pub const fn run(metric: HistMetric) -> HistKey {
        HistKey { metric, step: None }
    }

    /// `metric` of step `index` (0-based).
    pub const fn step(metric: HistMetric, index: usize) -> HistKey {
        HistKey {
            metric,
            step: Some(index),
        }
    }

    /// The tag as written in the log: `ttfb`, `ttfb.1`, …
    pub fn to_tag(self) -> String {
        match self.step {
            None => self.metric.tag().to_string(),
            Some(i) => format!("{}.{}", self.metric.tag(), i + 1),
        }
    }

    /// The key a log's tag stands for; `None` for a tag volley does not write.
    pub fn parse(tag: &str) -> Option<HistKey> {
        let (name, step) = match tag.split_once('.') {
            None => (tag, None),
            Some((name, n)) if n.bytes().all(|b| b.is_ascii_digit()) => {
                (name, Some(n.parse::<usize>().ok()?.checked_sub(1)?))
            }
            Some(_) => return None,
        };
        let metric = HistMetric::ALL.into_iter().find(|m| m.tag() == name)?;
        Some(HistKey { metric, step })
    }
}

impl std::fmt::Display for HistKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_tag())
    }
}

/// Writes the log's header (start time, base time) to `out`.
pub fn write_header(out: &mut impl Write, start: SystemTime) -> std::io::Result<()> {
    let mut ser = V2DeflateSerializer::new();
    IntervalLogWriterBuilder::new()
        .add_comment("volley latency log: values in microseconds; tags ttfb (time to first byte) and total; open-model runs measure them from each arrival's due time and add ttfb_actual and total_actual, from the actual send, and sched_lag, each arrival's dispatch delay; failed holds how long failed requests took to fail, pool_wait the wait for a shared connection (--connections)")
        .with_start_time(start)
        .with_base_time(start)
        .begin_log_with(out, &mut ser)?;
    Ok(())
}

/// Appends one interval histogram; `start` is the offset from the log's base time.
pub fn write_interval(
    out: &mut impl Write,
    h: &Histogram<u64>,
    start: Duration,
    length: Duration,
    key: HistKey,
) -> std::io::Result<()> {
    // One serializer per writing thread, its deflate state reused for every histogram: a new
    // `V2DeflateSerializer` per histogram made (and zeroed) a new deflate state each time,
    // several per interval on the thread that writes the run.
    thread_local! {
        static SERIALIZER: std::cell::RefCell<ReusedDeflate> =
            std::cell::RefCell::new(ReusedDeflate::new());
    }
    SERIALIZER.with(|ser| {
        let mut ser = ser.borrow_mut();
        let mut w = IntervalLogWriterBuilder::new().begin_log_with(out, &mut *ser)?;
        w.write_histogram(h, start, length, Tag::new(&key.to_tag()))
            .map_err(|e| std::io::Error::other(format!("{e:?}")))
    })
}

/// HdrHistogram's compressed V2 encoding, byte for byte what `V2DeflateSerializer` writes
/// (the V2 encoding, zlib-compressed at the default level, after a cookie and its length),
/// with one deflate state kept and reset between histograms instead of made anew.
pub struct ReusedDeflate {
    v2: V2Serializer,
    raw: Vec<u8>,
    out: Vec<u8>,
    deflate: flate2::Compress,
}

impl ReusedDeflate {
    /// A serializer with its own deflate state.
    pub fn new() -> Self {
        ReusedDeflate {
            v2: V2Serializer::new(),
            raw: Vec::new(),
            out: Vec::new(),
            deflate: flate2::Compress::new(flate2::Compression::default(), true),
        }
    }
}

impl Default for ReusedDeflate {
    fn default() -> Self {
        Self::new()
    }
}

impl Serializer for ReusedDeflate {
    type SerializeError = std::io::Error;

    fn serialize<T: hdrhistogram::Counter, W: Write>(
        &mut self,
        h: &Histogram<T>,
        writer: &mut W,
    ) -> std::io::Result<usize> {
        self.raw.clear();
        self.v2
            .serialize(h, &mut self.raw)
            .map_err(|e| std::io::Error::other(format!("{e:?}")))?;
        self.out.clear();
        self.out
            .extend_from_slice(&V2_COMPRESSED_COOKIE.to_be_bytes());
        self.out.extend_from_slice(&[0; 4]);
        self.deflate.reset();
        loop {
            let consumed = self.deflate.total_in() as usize;
            self.out.reserve(self.raw.len() / 2 + 64);
            let status = self
                .deflate
                .compress_vec(
                    &self.raw[consumed..],
                    &mut self.out,
                    flate2::FlushCompress::Finish,
                )
                .map_err(std::io::Error::other)?;
            if status == flate2::Status::StreamEnd {
                break;
            }
        }
        let len = u32::try_from(self.out.len() - 8)
            .map_err(|_| std::io::Error::other("a histogram over 4 GB compressed"))?;
        self.out[4..8].copy_from_slice(&len.to_be_bytes());
        writer.write_all(&self.out)?;
        Ok(self.out.len())
    }
}

/// One interval histogram read back.
#[derive(Debug, Clone)]
pub struct LoggedHistogram {
    /// What it measures, and of which step.
    pub key: HistKey,
    /// Offset of the interval from the base time, s.
    pub start_s: f64,
    /// The histogram, compact.
    pub histogram: CompactHistogram,
}

/// Reads every interval histogram in `bytes` tagged with a [`HistKey`]; histograms with
/// other tags (or none) are skipped, as no report looks them up.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Vec<LoggedHistogram>> {
    Reader::new(path, bytes).collect()
}

/// Reads a log one line at a time, so that a long run's histograms need not all be held at
/// once (`volley merge` walks several logs side by side this way).
pub struct Reader<R> {
    path: std::path::PathBuf,
    input: R,
    line_no: u64,
    de: Deserializer,
    line: Vec<u8>,
    ready: std::collections::VecDeque<LoggedHistogram>,
    stop_at_cut: bool,
}

impl<R: std::io::BufRead> Reader<R> {
    /// A reader of the log `input` (named `path` in errors).
    pub fn new(path: &Path, input: R) -> Self {
        Reader {
            path: path.to_path_buf(),
            input,
            line_no: 0,
            de: Deserializer::new(),
            line: Vec::new(),
            ready: Default::default(),
            stop_at_cut: false,
        }
    }

    /// Ends quietly at a last line without its newline — one a crash cut short, as volley
    /// ends every line it writes — instead of reading it.
    pub fn stopping_at_a_cut_line(mut self) -> Self {
        self.stop_at_cut = true;
        self
    }
}

impl<R: std::io::BufRead> Iterator for Reader<R> {
    type Item = Result<LoggedHistogram>;

    fn next(&mut self) -> Option<Result<LoggedHistogram>> {
        loop {
            if let Some(h) = self.ready.pop_front() {
                return Some(Ok(h));
            }
            self.line.clear();
            match self.input.read_until(b'\n', &mut self.line) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => return Some(Err(Error::io(&self.path, e))),
            }
            self.line_no += 1;
            if self.line.last() != Some(&b'\n') {
                if self.stop_at_cut {
                    return None;
                }
                self.line.push(b'\n');
            }
            if let Err(e) = read_line(
                &self.path,
                self.line_no,
                &self.line,
                &mut self.de,
                &mut self.ready,
                &|_| true,
            ) {
                return Some(Err(e));
            }
        }
    }
}

/// Reads the histograms of one line (ending in a newline) whose key `keep` takes into `out`
/// (the others are not decoded).
pub(crate) fn read_line(
    path: &Path,
    line_no: u64,
    line_buf: &[u8],
    de: &mut Deserializer,
    out: &mut std::collections::VecDeque<LoggedHistogram>,
    keep: &dyn Fn(HistKey) -> bool,
) -> Result<()> {
    {
        if line_buf.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let bad = |what: String| Error::malformed(path, line_no, None, what);
        for entry in IntervalLogIterator::new(line_buf) {
            let entry =
                entry.map_err(|_| bad("not an HdrHistogram interval-log line".to_string()))?;
            if let LogEntry::Interval(ih) = entry {
                let Some(key) = ih.tag().and_then(|t| HistKey::parse(t.as_str())) else {
                    continue;
                };
                if !keep(key) {
                    continue;
                }
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(ih.encoded_histogram())
                    .map_err(|e| bad(format!("bad base64 histogram: {e}")))?;
                check_encoded(&raw).map_err(|e| bad(format!("bad histogram: {e}")))?;
                let histogram: Histogram<u64> = de
                    .deserialize(&mut raw.as_slice())
                    .map_err(|e| bad(format!("bad histogram: {e:?}")))?;
                out.push_back(LoggedHistogram {
                    key,
                    start_s: ih.start_timestamp().as_secs_f64(),
                    histogram: CompactHistogram::from_histogram(&histogram),
                });
            }
        }
    }
    Ok(())
}

/// HdrHistogram's cookies: V2 encoding, plain and deflated.
const V2_COOKIE: u32 = 0x1c84_9303 | 0x10;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9304 | 0x10;
/// Significant digits a logged histogram may have (volley writes 3): each more multiplies
/// the counts array the decoder allocates by about 8.
const MAX_DIGITS: u32 = 4;
/// Largest decoded payload accepted, bytes (a 4-digit histogram spanning every u64 needs
/// under 10 MB at 9 bytes per count).
const MAX_PAYLOAD: u32 = 10 << 20;

/// Checks an encoded histogram's header before it is decoded: the decoder allocates its
/// counts array from the header's precision and its payload buffer from the header's
/// length, both read from the file, so a damaged line could ask for gigabytes.
fn check_encoded(raw: &[u8]) -> std::result::Result<(), String> {
    let u32_at = |b: &[u8], at: usize| {
        b.get(at..at + 4)
            .map(|s| u32::from_be_bytes(s.try_into().expect("4 bytes")))
    };
    let header = |h: &[u8], available: usize| -> std::result::Result<(), String> {
        let (len, digits) = (
            u32_at(h, 4).ok_or("header cut short")?,
            u32_at(h, 12).ok_or("header cut short")?,
        );
        if digits > MAX_DIGITS {
            return Err(format!(
                "{digits} significant digits (at most {MAX_DIGITS})"
            ));
        }
        if len > MAX_PAYLOAD || len as usize > available {
            return Err(format!(
                "payload of {len} bytes where {} are left",
                available.min(MAX_PAYLOAD as usize)
            ));
        }
        Ok(())
    };
    match u32_at(raw, 0) {
        Some(V2_COOKIE) => header(raw, raw.len().saturating_sub(40)),
        Some(V2_COMPRESSED_COOKIE) => {
            let len = u32_at(raw, 4).ok_or("header cut short")? as usize;
            if len > raw.len() - 8 {
                return Err(format!(
                    "compressed payload of {len} bytes where {} are left",
                    raw.len() - 8
                ));
            }
            let mut inner = [0u8; 40];
            std::io::Read::read_exact(
                &mut flate2::read::ZlibDecoder::new(&raw[8..8 + len]),
                &mut inner,
            )
            .map_err(|e| format!("compressed header: {e}"))?;
            if u32_at(&inner, 0) != Some(V2_COOKIE) {
                return Err("not a V2 histogram inside the compressed one".to_string());
            }
            header(&inner, MAX_PAYLOAD as usize)
        }
        _ => Err("not an HdrHistogram V2 encoding".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_stats::new_histogram;

    #[test]
    fn round_trip() {
        let mut buf = Vec::new();
        write_header(
            &mut buf,
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000),
        )
        .unwrap();
        let mut h = new_histogram();
        h.record(1500).unwrap();
        h.record(250_000).unwrap();
        write_interval(
            &mut buf,
            &h,
            Duration::from_secs(2),
            Duration::from_secs(1),
            HistKey::TTFB,
        )
        .unwrap();
        let text = String::from_utf8(buf.clone()).unwrap();
        assert!(text.contains("#[StartTime: 1700000000.000"), "{text}");
        assert!(text.contains("Tag=ttfb,2.000,1.000,"), "{text}");
        let back = parse(Path::new("l"), &buf).unwrap();
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].histogram.len(), 2);
        assert_eq!(back[0].start_s, 2.0);
        assert_eq!(back[0].key, HistKey::TTFB);
    }

    #[test]
    fn the_reused_deflate_state_writes_what_v2_deflate_serializer_writes() {
        let mut ours = ReusedDeflate::new();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        // Empty, a few values, many spread over the whole range, and each again after a
        // larger one (the reused state must not carry anything over).
        let sizes = [0usize, 1, 3, 40, 1_000, 100_000, 2, 0, 50_000, 7];
        for (i, &n) in sizes.iter().enumerate() {
            let mut h = new_histogram();
            for _ in 0..n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let us = 1 + x % [100, 10_000, 3_600_000_000][i % 3];
                h.record_n(us, 1 + x % 3).unwrap();
            }
            let mut theirs = Vec::new();
            V2DeflateSerializer::new()
                .serialize(&h, &mut theirs)
                .unwrap();
            let mut mine = Vec::new();
            let n_written = ours.serialize(&h, &mut mine).unwrap();
            assert_eq!(n_written, mine.len());
            assert_eq!(mine, theirs, "histogram {i} ({n} values)");
        }
        // And in a log, line for line.
        let mut h = new_histogram();
        h.record(1500).unwrap();
        let mut a = Vec::new();
        let mut ser = V2DeflateSerializer::new();
        IntervalLogWriterBuilder::new()
            .begin_log_with(&mut a, &mut ser)
            .unwrap()
            .write_histogram(
                &h,
                Duration::from_secs(1),
                Duration::from_secs(1),
                Tag::new("ttfb"),
            )
            .unwrap();
        let mut b = Vec::new();
        write_interval(
            &mut b,
            &h,
            Duration::from_secs(1),
            Duration::from_secs(1),
            HistKey::TTFB,
        )
        .unwrap();
        assert_eq!(String::from_utf8(b).unwrap(), String::from_utf8(a).unwrap());
    }

    #[test]
    fn tags_are_spelled_as_before() {
        let cases = [
            (HistKey::TTFB, "ttfb"),
            (HistKey::TOTAL, "total"),
            (HistKey::TTFB_ACTUAL, "ttfb_actual"),
            (HistKey::TOTAL_ACTUAL, "total_actual"),
            (HistKey::ITERATION, "iteration"),
            (HistKey::step(HistMetric::Ttfb, 0), "ttfb.1"),
            (HistKey::step(HistMetric::Total, 11), "total.12"),
        ];
        for (key, tag) in cases {
            assert_eq!(key.to_tag(), tag);
            assert_eq!(HistKey::parse(tag), Some(key), "{tag}");
        }
        for bad in [
            "",
            "ttfb.0",
            "ttfb.",
            "ttfb.x",
            "ttfb.-1",
            "latency",
            "total.1.2",
        ] {
            assert_eq!(HistKey::parse(bad), None, "{bad}");
        }
    }
}
