//! `latency.hlog`: per-interval histograms in the standard HdrHistogram interval-log text
//! format, so HdrHistogram's own tools (HistogramLogProcessor, HdrHistogram plotters)
//! read our runs too.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use volley_stats::CompactHistogram;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, IntervalLogWriterBuilder, LogEntry, Tag};
use hdrhistogram::serialization::{Deserializer, V2DeflateSerializer};

use crate::error::{FormatError, Result};

/// Tag of time-to-first-byte histograms.
pub const TAG_TTFB: &str = "ttfb";
/// Tag of total-time histograms.
pub const TAG_TOTAL: &str = "total";
/// Open model: time to first byte from the actual send (uncorrected).
pub const TAG_TTFB_ACTUAL: &str = "ttfb_actual";
/// Open model: total time from the actual send (uncorrected).
pub const TAG_TOTAL_ACTUAL: &str = "total_actual";
/// Tag of scenario iterations: the whole flow, from its first step to the end of its last.
pub const TAG_ITERATION: &str = "iteration";

/// Writes the log's header (start time, base time) to `out`.
pub fn write_header(out: &mut impl Write, start: SystemTime) -> std::io::Result<()> {
    let mut ser = V2DeflateSerializer::new();
    IntervalLogWriterBuilder::new()
        .add_comment("volley latency log: values in microseconds; tags ttfb (time to first byte) and total; open-model runs measure them from each arrival's due time and add ttfb_actual and total_actual, from the actual send")
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
    tag: &str,
) -> std::io::Result<()> {
    let mut ser = V2DeflateSerializer::new();
    let mut w = IntervalLogWriterBuilder::new().begin_log_with(out, &mut ser)?;
    w.write_histogram(h, start, length, Tag::new(tag))
        .map_err(|e| std::io::Error::other(format!("{e:?}")))
}

/// One interval histogram read back.
#[derive(Debug, Clone)]
pub struct LoggedHistogram {
    /// Its tag.
    pub tag: String,
    /// Offset of the interval from the base time, s.
    pub start_s: f64,
    /// The histogram, compact.
    pub histogram: CompactHistogram,
}

/// Reads every tagged interval histogram in `bytes`.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Vec<LoggedHistogram>> {
    let mut out = Vec::new();
    let mut de = Deserializer::new();
    for entry in IntervalLogIterator::new(bytes) {
        let entry = entry.map_err(|e| {
            let offset = match e {
                hdrhistogram::serialization::interval_log::LogIteratorError::ParseError { offset } => offset,
            };
            let line = bytes[..offset.min(bytes.len())].iter().filter(|&&b| b == b'\n').count() as u64 + 1;
            FormatError::malformed(path, line, None, "not an HdrHistogram interval-log line")
        })?;
        if let LogEntry::Interval(ih) = entry {
            let raw = base64::engine::general_purpose::STANDARD
                .decode(ih.encoded_histogram())
                .map_err(|e| FormatError::malformed(path, 0, None, format!("bad base64 histogram: {e}")))?;
            let histogram: Histogram<u64> = de
                .deserialize(&mut raw.as_slice())
                .map_err(|e| FormatError::malformed(path, 0, None, format!("bad histogram: {e:?}")))?;
            out.push(LoggedHistogram {
                tag: ih.tag().map(|t| t.as_str().to_string()).unwrap_or_default(),
                start_s: ih.start_timestamp().as_secs_f64(),
                histogram: CompactHistogram::from_histogram(&histogram),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_stats::new_histogram;

    #[test]
    fn round_trip() {
        let mut buf = Vec::new();
        write_header(&mut buf, SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000)).unwrap();
        let mut h = new_histogram();
        h.record(1500).unwrap();
        h.record(250_000).unwrap();
        write_interval(&mut buf, &h, Duration::from_secs(2), Duration::from_secs(1), TAG_TTFB).unwrap();
        let text = String::from_utf8(buf.clone()).unwrap();
        assert!(text.contains("#[StartTime: 1700000000.000"), "{text}");
        assert!(text.contains("Tag=ttfb,2.000,1.000,"), "{text}");
        let back = parse(Path::new("l"), &buf).unwrap();
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].histogram.len(), 2);
        assert_eq!(back[0].start_s, 2.0);
        assert_eq!(back[0].tag, "ttfb");
    }
}
