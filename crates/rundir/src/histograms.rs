//! A run's per-interval histograms: held in memory (an importer builds them from the
//! requests it reads), or left in the run's `latency.hlog` and read again for each pass.
//!
//! Why not hold a run's log in memory: one interval of busy traffic fills a few thousand
//! buckets, so 8 segments × 1 h at 5,000 requests/s merged held 830 MB of histograms, growing
//! with the run's length. A report needs them only a pass at a time (the whole run merged,
//! each interval's p99, each level merged, the noise bootstrap), so the log is checked once
//! when the run is opened, indexed by key, and each pass reads the lines it needs.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use hdrhistogram::Histogram;
use volley_stats::CompactHistogram;
use volley_stats::latency::new_histogram;

use crate::error::{Error, Result};
use crate::hlog::{self, HistKey, LoggedHistogram};

/// A run's per-interval histograms, however they are kept. Cloning is cheap (shared).
#[derive(Debug, Clone, Default)]
pub enum Histograms {
    /// None: a source without per-request data.
    #[default]
    None,
    /// Built in memory, in order.
    Held(Arc<Held>),
    /// In a log file, read again for each pass.
    Logged(Arc<LogFile>),
}

/// Histograms in memory, with an index by key built on the first look-up (a scenario logs
/// two per step and interval, and a scan of all per key would grow with the square of the
/// steps).
#[derive(Debug, Default)]
pub struct Held {
    all: Vec<LoggedHistogram>,
    by_key: OnceLock<HashMap<HistKey, Vec<usize>>>,
}

impl Histograms {
    /// Histograms built in memory.
    pub fn held(all: Vec<LoggedHistogram>) -> Histograms {
        if all.is_empty() {
            return Histograms::None;
        }
        Histograms::Held(Arc::new(Held {
            all,
            by_key: OnceLock::new(),
        }))
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        match self {
            Histograms::None => true,
            Histograms::Held(h) => h.all.is_empty(),
            Histograms::Logged(l) => l.count == 0,
        }
    }

    /// How many there are, of every key.
    pub fn len(&self) -> usize {
        match self {
            Histograms::None => 0,
            Histograms::Held(h) => h.all.len(),
            Histograms::Logged(l) => l.count,
        }
    }

    /// Visits the histograms of `key` (of every key when `None`) in log order. A log that
    /// changed on disk since it was checked fails here with the line that no longer reads.
    pub fn each(&self, key: Option<HistKey>, mut f: impl FnMut(&LoggedHistogram)) -> Result<()> {
        match self {
            Histograms::None => Ok(()),
            Histograms::Held(h) => {
                match key {
                    None => h.all.iter().for_each(f),
                    Some(key) => {
                        let index = h.by_key.get_or_init(|| {
                            let mut index: HashMap<HistKey, Vec<usize>> = HashMap::new();
                            for (i, l) in h.all.iter().enumerate() {
                                index.entry(l.key).or_default().push(i);
                            }
                            index
                        });
                        for &i in index.get(&key).into_iter().flatten() {
                            f(&h.all[i]);
                        }
                    }
                }
                Ok(())
            }
            Histograms::Logged(l) => l.each(key, &mut f),
        }
    }

    /// Every key's histograms from `warmup_s` on, merged, when they were merged as the log
    /// was checked (for the run's own warm-up): a report's first pass, saved.
    pub fn merged_at_open(&self, warmup_s: f64) -> Option<Arc<HashMap<HistKey, CompactHistogram>>> {
        match self {
            Histograms::Logged(l) if l.merged.0.to_bits() == warmup_s.to_bits() => {
                Some(l.merged.1.clone())
            }
            _ => None,
        }
    }

    /// All of them in memory, in log order (for tests and small tools).
    pub fn collect(&self) -> Result<Vec<LoggedHistogram>> {
        let mut out = Vec::with_capacity(self.len());
        self.each(None, |h| out.push(h.clone()))?;
        Ok(out)
    }
}

/// Every key's histograms from a warm-up on, added up: dense while adding, compact after.
#[derive(Debug, Default)]
pub struct MergedByKey(HashMap<HistKey, Histogram<u64>>);

impl MergedByKey {
    /// Adds `h` when it starts at or after `warmup_s`.
    pub fn add(&mut self, h: &LoggedHistogram, warmup_s: f64) {
        if h.start_s + 1e-9 >= warmup_s {
            h.histogram
                .add_to(self.0.entry(h.key).or_insert_with(new_histogram));
        }
    }

    /// Each key's sum, compact.
    pub fn finish(self) -> Arc<HashMap<HistKey, CompactHistogram>> {
        Arc::new(
            self.0
                .into_iter()
                .map(|(k, h)| (k, CompactHistogram::from_histogram(&h)))
                .collect(),
        )
    }
}

/// A `latency.hlog` checked once, with the place of each line by key.
#[derive(Debug)]
pub struct LogFile {
    path: PathBuf,
    file: File,
    /// Bytes checked (a line a crash cut short is left out).
    len: u64,
    /// Histograms of every key read in the check.
    count: usize,
    /// Where each key's lines are: (offset, length with the newline).
    lines: HashMap<HistKey, Vec<(u64, u32)>>,
    /// Every key's histograms from a warm-up on (the first), merged in the check.
    merged: (f64, Arc<HashMap<HistKey, CompactHistogram>>),
}

/// Longest line read: a histogram of volley's precision encodes in well under this.
const MAX_LINE: usize = 16 << 20;

impl LogFile {
    /// Checks the log at `path`: every histogram volley reads is decoded once, the lines are
    /// indexed by key, and each key's histograms from `warmup_s` on are merged (what a report
    /// of the run reads first). Reads the first `len` bytes only (the rest is a line a crash
    /// cut short, which the caller notes). Memory does not grow with the log's length beyond
    /// the index (12 bytes per histogram).
    pub fn open(path: &Path, file: File, len: u64, warmup_s: f64) -> Result<(LogFile, HistCounts)> {
        let io = |e: std::io::Error| Error::io(path, e);
        let mut input = BufReader::with_capacity(1 << 16, (&file).take(len));
        let mut de = hdrhistogram::serialization::Deserializer::new();
        let (mut line, mut ready) = (Vec::new(), std::collections::VecDeque::new());
        let (mut offset, mut line_no) = (0u64, 0u64);
        let mut lines: HashMap<HistKey, Vec<(u64, u32)>> = HashMap::new();
        let mut counts = HistCounts::default();
        let mut merged = MergedByKey::default();
        loop {
            line.clear();
            let n = read_line_bounded(&mut input, &mut line).map_err(io)?;
            if n == 0 {
                break;
            }
            line_no += 1;
            if line.last() != Some(&b'\n') {
                line.push(b'\n');
            }
            hlog::read_line(path, line_no, &line, &mut de, &mut ready, &|_| true)?;
            let mut last = None;
            for h in ready.drain(..) {
                counts.add(h.key);
                merged.add(&h, warmup_s);
                if last != Some(h.key) {
                    let at = lines.entry(h.key).or_default();
                    if at.last().map(|l| l.0) != Some(offset) {
                        at.push((offset, n as u32));
                    }
                    last = Some(h.key);
                }
            }
            offset += n as u64;
        }
        counts.lines = line_no;
        let log = LogFile {
            path: path.to_path_buf(),
            file,
            len,
            count: counts.all,
            lines,
            merged: (warmup_s, merged.finish()),
        };
        Ok((log, counts))
    }

    /// Visits the histograms of `key` (every key when `None`) in log order.
    fn each(&self, key: Option<HistKey>, f: &mut dyn FnMut(&LoggedHistogram)) -> Result<()> {
        let mut de = hdrhistogram::serialization::Deserializer::new();
        let mut ready = std::collections::VecDeque::new();
        let mut line = Vec::new();
        let changed = |what: String| {
            Error::io(
                &self.path,
                std::io::Error::other(format!(
                    "changed since the run was opened ({what}); open the run again"
                )),
            )
        };
        match key {
            None => {
                let mut input = BufReader::with_capacity(
                    1 << 16,
                    ReadAt {
                        file: &self.file,
                        at: 0,
                    }
                    .take(self.len),
                );
                let mut line_no = 0;
                loop {
                    line.clear();
                    let n = read_line_bounded(&mut input, &mut line)
                        .map_err(|e| Error::io(&self.path, e))?;
                    if n == 0 {
                        return Ok(());
                    }
                    line_no += 1;
                    if line.last() != Some(&b'\n') {
                        line.push(b'\n');
                    }
                    hlog::read_line(&self.path, line_no, &line, &mut de, &mut ready, &|_| true)
                        .map_err(|e| changed(e.to_string()))?;
                    for h in ready.drain(..) {
                        f(&h);
                    }
                }
            }
            Some(key) => {
                for &(offset, n) in self.lines.get(&key).into_iter().flatten() {
                    line.resize(n as usize, 0);
                    self.file
                        .read_exact_at(&mut line, offset)
                        .map_err(|e| changed(e.to_string()))?;
                    hlog::read_line(&self.path, 0, &line, &mut de, &mut ready, &|k| k == key)
                        .map_err(|e| changed(e.to_string()))?;
                    for h in ready.drain(..) {
                        f(&h);
                    }
                }
                Ok(())
            }
        }
    }
}

/// How many histograms a log holds: in all, and of the run's total time (one per interval
/// the recorder finished).
#[derive(Debug, Default, Clone, Copy)]
pub struct HistCounts {
    /// Of every key.
    pub all: usize,
    /// Of [`HistKey::TOTAL`].
    pub total: usize,
    /// Lines read.
    pub lines: u64,
}

impl HistCounts {
    fn add(&mut self, key: HistKey) {
        self.all += 1;
        if key == HistKey::TOTAL {
            self.total += 1;
        }
    }
}

/// The bytes of `file` up to the end of its last whole line, and whether a line after them
/// was cut short (a crash mid-write: volley ends every line it writes; whitespace after the
/// last newline is no cut line).
pub fn complete_len(path: &Path, file: &File) -> Result<(u64, bool)> {
    let io = |e: std::io::Error| Error::io(path, e);
    let size = file.metadata().map_err(io)?.len();
    let mut end = size;
    let mut chunk = vec![0u8; 1 << 16];
    let mut blank = true;
    while end > 0 && size - end <= MAX_LINE as u64 {
        let from = end.saturating_sub(chunk.len() as u64);
        let part = &mut chunk[..(end - from) as usize];
        file.read_exact_at(part, from).map_err(io)?;
        match part.iter().rposition(|&b| b == b'\n') {
            Some(i) => {
                blank &= part[i + 1..].iter().all(u8::is_ascii_whitespace);
                let len = from + i as u64 + 1;
                return Ok(if blank {
                    (size, false)
                } else {
                    (len, len < size)
                });
            }
            None => {
                blank &= part.iter().all(u8::is_ascii_whitespace);
                end = from;
            }
        }
    }
    // No newline at all: one line, whole unless the file is cut in its only line, which is
    // then read as it stands (as a reader of the whole file would).
    Ok((size, false))
}

/// Reads one line into `line` (with its newline, if any), refusing one longer than
/// [`MAX_LINE`]; returns the bytes read.
fn read_line_bounded(input: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<usize> {
    let n = input.take(MAX_LINE as u64 + 1).read_until(b'\n', line)?;
    if n > MAX_LINE {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a line longer than {} MiB", MAX_LINE >> 20),
        ));
    }
    Ok(n)
}

/// Reads a shared file from an offset of its own, so passes need no `&mut` and no seek.
struct ReadAt<'a> {
    file: &'a File,
    at: u64,
}

impl Read for ReadAt<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read_at(buf, self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hlog::HistMetric;
    use std::time::{Duration, SystemTime};
    use volley_stats::latency::record_us;

    fn write_log(path: &Path, intervals: u64) {
        let mut out = Vec::new();
        hlog::write_header(&mut out, SystemTime::UNIX_EPOCH).unwrap();
        for i in 0..intervals {
            for (key, base) in [(HistKey::TTFB, 100), (HistKey::TOTAL, 200)] {
                let mut h = new_histogram();
                record_us(&mut h, base + i, i + 1);
                let at = Duration::from_secs(i);
                hlog::write_interval(&mut out, &h, at, Duration::from_secs(1), key).unwrap();
            }
        }
        std::fs::write(path, out).unwrap();
    }

    /// A log of `intervals` written at `path`, opened.
    fn written(path: &Path, intervals: u64) -> (LogFile, HistCounts) {
        write_log(path, intervals);
        let file = File::open(path).unwrap();
        let len = file.metadata().unwrap().len();
        LogFile::open(path, file, len, 0.0).unwrap()
    }

    #[test]
    fn a_log_read_by_key_gives_what_reading_it_whole_gives() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("latency.hlog");
        let (log, counts) = written(&path, 50);
        assert_eq!((counts.all, counts.total), (100, 50));
        let logged = Histograms::Logged(Arc::new(log));
        let whole = hlog::parse(&path, &std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(logged.collect().unwrap().len(), whole.len());
        let held = Histograms::held(whole);
        for key in [
            HistKey::TTFB,
            HistKey::TOTAL,
            HistKey::run(HistMetric::SchedLag),
        ] {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            logged
                .each(Some(key), |h| a.push((h.start_s, h.histogram.clone())))
                .unwrap();
            held.each(Some(key), |h| b.push((h.start_s, h.histogram.clone())))
                .unwrap();
            assert_eq!(a, b, "{key}");
        }
        let mut ttfb = Vec::new();
        logged
            .each(Some(HistKey::TTFB), |h| ttfb.push(h.histogram.len()))
            .unwrap();
        assert_eq!(ttfb, (1..=50).collect::<Vec<u64>>());
        // Merged as it was checked, from the warm-up it was opened with only.
        let at_open = logged.merged_at_open(0.0).unwrap();
        assert_eq!(at_open[&HistKey::TTFB].len(), (1..=50).sum::<u64>());
        assert_eq!(at_open[&HistKey::TOTAL].len(), (1..=50).sum::<u64>());
        assert!(logged.merged_at_open(1.0).is_none());
    }

    #[test]
    fn a_cut_last_line_is_left_out_and_a_blank_tail_is_not_a_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        for (text, want) in [
            (&b"a\nb\n"[..], (4, false)),
            (b"a\nbc", (2, true)),
            (b"a\nb\n  \n ", (8, false)),
            (b"only", (4, false)),
            (b"", (0, false)),
        ] {
            std::fs::write(&path, text).unwrap();
            let got = complete_len(&path, &File::open(&path).unwrap()).unwrap();
            assert_eq!(got, want, "{:?}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn a_log_changed_after_the_check_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("latency.hlog");
        let (log, _) = written(&path, 5);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("HISTF", "XXXXX")).unwrap();
        let e = Histograms::Logged(Arc::new(log))
            .each(Some(HistKey::TOTAL), |_| {})
            .unwrap_err()
            .to_string();
        assert!(e.contains("changed since the run was opened"), "{e}");
    }
}
