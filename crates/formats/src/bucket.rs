//! Turns per-request records (k6, JMeter, Gatling) into per-interval rows and histograms,
//! in one streaming pass with bounded memory.
//!
//! Records arrive roughly in time order (a few seconds of disorder: JMeter writes a row
//! when a sample ends but stamps its start). Intervals more than [`OPEN_INTERVALS`] behind
//! the newest record are sealed: their raw values become a compact histogram. A straggler
//! for a sealed interval is still counted, never dropped.
//!
//! Records may carry a label (a JMeter sampler, a Gatling request name): each label gets
//! buckets of its own on the same interval grid, read back as per-test series the way
//! nGrinder's test ids are, with histograms tagged `ttfb.N` / `total.N`.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use volley_stats::{CompactHistogram, Counts, ErrorKind, Series, new_histogram};

use crate::hlog::{HistKey, HistMetric, LoggedHistogram};

/// Intervals kept open behind the newest record before they are sealed.
const OPEN_INTERVALS: i64 = 30;
/// A stretch without any request longer than this (in intervals) is not filled with empty
/// rows: the file holds separate runs (one JMeter file appended to over days, say).
const MAX_FILLED_GAP: i64 = 300;
/// Labels broken down at most; beyond this the labels are probably URLs with ids in them,
/// and only the total is kept.
const MAX_LABELS: usize = 50;

/// One request as another tool recorded it.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestRecord {
    /// When it started, ms since the epoch.
    pub start_ms: f64,
    /// Time to first byte, µs, when the tool measures it.
    pub ttfb_us: Option<u64>,
    /// Total time, µs.
    pub total_us: u64,
    /// Connection set-up time, µs, where known.
    pub connect_us: u64,
    /// Response bytes.
    pub bytes: u64,
    /// `None` for a success, else the kind of failure.
    pub error: Option<ErrorKind>,
    /// HTTP status where known (counts toward nGrinder's `Response_errors` when >= 400).
    pub status: Option<u16>,
    /// Active users at the time, where the tool records it.
    pub vusers: Option<f64>,
}

#[derive(Default)]
struct Slot {
    counts: Counts,
    vusers: f64,
    ttfb_raw: Vec<u64>,
    total_raw: Vec<u64>,
    ttfb: CompactHistogram,
    total: CompactHistogram,
}

/// The streaming bucketer.
pub struct Bucketer {
    interval_ms: f64,
    origin_ms: Option<f64>,
    slots: BTreeMap<i64, Slot>,
    newest: i64,
    sealed_below: i64,
    scratch: Histogram<u64>,
    has_ttfb: bool,
    records: u64,
    /// Per-label buckets, in order of first appearance.
    labels: Vec<(String, Bucketer)>,
    label_index: std::collections::HashMap<String, usize>,
    /// More than [`MAX_LABELS`] labels were seen.
    too_many_labels: usize,
}

impl Bucketer {
    /// Buckets of `interval_s` seconds.
    pub fn new(interval_s: f64) -> Self {
        Bucketer {
            interval_ms: interval_s * 1000.0,
            origin_ms: None,
            slots: BTreeMap::new(),
            newest: 0,
            sealed_below: i64::MIN,
            scratch: new_histogram(),
            has_ttfb: false,
            records: 0,
            labels: Vec::new(),
            label_index: std::collections::HashMap::new(),
            too_many_labels: 0,
        }
    }

    /// Adds one request that carries a label (counted in the total and in its label's buckets).
    pub fn add_labelled(&mut self, r: &RequestRecord, label: &str) {
        self.add(r);
        if self.too_many_labels > 0 {
            return;
        }
        let i = match self.label_index.get(label) {
            Some(&i) => i,
            None if self.labels.len() >= MAX_LABELS => {
                self.too_many_labels = self.labels.len() + 1;
                self.labels.clear();
                self.label_index.clear();
                return;
            }
            None => {
                let mut b = Bucketer::new(self.interval_ms / 1000.0);
                b.origin_ms = self.origin_ms; // the same grid as the total
                self.labels.push((label.to_string(), b));
                self.label_index.insert(label.to_string(), self.labels.len() - 1);
                self.labels.len() - 1
            }
        };
        self.labels[i].1.add(r);
    }

    /// Records counted so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Adds one request.
    pub fn add(&mut self, r: &RequestRecord) {
        self.records += 1;
        let origin = *self.origin_ms.get_or_insert((r.start_ms / 1000.0).floor() * 1000.0);
        let idx = ((r.start_ms - origin) / self.interval_ms).floor() as i64;
        let slot = self.slots.entry(idx).or_default();
        if let Some(v) = r.vusers {
            slot.vusers = slot.vusers.max(v);
        }
        if r.status.is_some_and(|s| s >= 400) {
            slot.counts.response_errors += 1;
        }
        match r.error {
            Some(kind) => slot.counts.error(kind),
            None => {
                let ttfb = r.ttfb_us.unwrap_or(0);
                slot.counts.success(ttfb, r.total_us, r.connect_us, r.bytes);
                if let Some(t) = r.ttfb_us {
                    slot.ttfb_raw.push(t.max(1));
                    self.has_ttfb = true;
                }
                slot.total_raw.push(r.total_us.max(1));
            }
        }
        let straggler = idx < self.sealed_below;
        if idx > self.newest {
            self.newest = idx;
            self.seal_before(idx - OPEN_INTERVALS);
        } else if straggler {
            self.seal(idx);
        }
    }

    fn seal_before(&mut self, limit: i64) {
        let keys: Vec<i64> = self.slots.range(..limit).filter(|(_, s)| !s.total_raw.is_empty() || !s.ttfb_raw.is_empty()).map(|(k, _)| *k).collect();
        for k in keys {
            self.seal(k);
        }
        self.sealed_below = self.sealed_below.max(limit);
    }

    /// Folds an interval's raw values into its compact histograms.
    fn seal(&mut self, idx: i64) {
        let Some(slot) = self.slots.get_mut(&idx) else { return };
        for (raw, compact) in [(&mut slot.ttfb_raw, &mut slot.ttfb), (&mut slot.total_raw, &mut slot.total)] {
            if raw.is_empty() {
                continue;
            }
            self.scratch.reset();
            compact.add_to(&mut self.scratch);
            for &v in raw.iter() {
                volley_stats::latency::record_us(&mut self.scratch, v, 1);
            }
            *compact = CompactHistogram::from_histogram(&self.scratch);
            *raw = Vec::new();
        }
    }

    /// The series (intervals from the earliest to the latest, short gaps filled with
    /// empty rows), the histograms, the errors by kind per interval, and notes; per label too.
    pub fn finish(mut self) -> Bucketed {
        self.seal_before(i64::MAX);
        let Some(grid) = self.grid() else { return Bucketed::default() };
        let mut out = self.rows(&grid, None);
        out.notes.extend(grid.notes.iter().cloned());
        for (i, (name, mut b)) in std::mem::take(&mut self.labels).into_iter().enumerate() {
            b.seal_before(i64::MAX);
            let rows = b.rows(&grid, Some(i));
            out.histograms.extend(rows.histograms);
            out.per_label.push((name, rows.series));
        }
        if self.too_many_labels > 0 {
            out.notes.push(format!("More than {MAX_LABELS} distinct labels: only the totals are kept (labels with ids or URLs in them cannot be broken down)."));
        }
        out
    }

    /// The intervals to report: the first, and every one up to the last except long gaps.
    fn grid(&self) -> Option<Grid> {
        let (&first, _) = self.slots.first_key_value()?;
        let period = self.interval_ms / 1000.0;
        let keys: Vec<i64> = self.slots.keys().copied().collect();
        let (mut wanted, mut notes) = (Vec::new(), Vec::new());
        for (i, &k) in keys.iter().enumerate() {
            if let Some(&prev) = i.checked_sub(1).and_then(|p| keys.get(p)) {
                if k - prev > MAX_FILLED_GAP {
                    notes.push(format!(
                        "No request for {:.0} s after {:.0} s: the file holds separate runs; the gap is left out of the series.",
                        (k - prev) as f64 * period,
                        (prev - first + 1) as f64 * period
                    ));
                } else {
                    wanted.extend(prev + 1..k);
                }
            }
            wanted.push(k);
        }
        Some(Grid { first, wanted, notes })
    }

    /// Rows and histograms of this bucketer's slots on `grid` (empty slots give zero rows);
    /// the histograms are keyed to `step` (a label), or to the run.
    fn rows(&self, grid: &Grid, step: Option<usize>) -> Bucketed {
        let (ttfb_key, total_key) = (HistKey { metric: HistMetric::Ttfb, step }, HistKey { metric: HistMetric::Total, step });
        let period = self.interval_ms / 1000.0;
        let empty = Slot::default();
        let mut out = Bucketed::default();
        for &idx in &grid.wanted {
            let slot = self.slots.get(&idx).unwrap_or(&empty);
            let start_s = (idx - grid.first) as f64 * period;
            out.series.intervals.push(slot.counts.to_interval(start_s, period, slot.vusers));
            out.errors_by_kind.push(slot.counts.errors_by_kind);
            if self.has_ttfb {
                out.histograms.push(LoggedHistogram { key: ttfb_key, start_s, histogram: slot.ttfb.clone() });
            }
            out.histograms.push(LoggedHistogram { key: total_key, start_s, histogram: slot.total.clone() });
        }
        out
    }
}

/// The interval grid of a file: the first interval and the ones reported.
struct Grid {
    first: i64,
    wanted: Vec<i64>,
    notes: Vec<String>,
}

/// What [`Bucketer::finish`] returns.
#[derive(Debug, Default)]
pub struct Bucketed {
    /// One row per interval.
    pub series: Series,
    /// Per-interval histograms.
    pub histograms: Vec<LoggedHistogram>,
    /// Errors by kind per interval.
    pub errors_by_kind: Vec<[u64; volley_stats::KINDS]>,
    /// What a reader must know.
    pub notes: Vec<String>,
    /// Each label's series, when the records carried labels.
    pub per_label: Vec<(String, Series)>,
}

impl Bucketed {
    /// Moves everything into `src`.
    pub fn into_source(self, src: &mut crate::Source) {
        src.series = self.series;
        src.histograms = self.histograms;
        src.errors_by_kind = self.errors_by_kind;
        src.notes.extend(self.notes);
        src.per_test = self.per_label;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(start_ms: f64, ms: u64, error: Option<ErrorKind>) -> RequestRecord {
        RequestRecord { start_ms, ttfb_us: Some(ms * 1000), total_us: ms * 1000, error, ..Default::default() }
    }

    #[test]
    fn buckets_by_start_time_and_fills_gaps() {
        let mut b = Bucketer::new(1.0);
        b.add(&rec(10_500.0, 5, None));
        b.add(&rec(10_900.0, 7, None));
        b.add(&rec(13_100.0, 9, Some(ErrorKind::Status)));
        b.add(&rec(10_100.0, 3, None)); // out of order, same interval
        let Bucketed { series, histograms: hists, errors_by_kind: kinds, .. } = b.finish();
        assert_eq!(series.intervals.len(), 4);
        assert_eq!(series.intervals[0].tests, 3);
        assert!((series.intervals[0].mttfb_ms - 5.0).abs() < 1e-9);
        assert_eq!(series.intervals[1].tests, 0);
        assert_eq!(series.intervals[3].errors, 1);
        assert_eq!(kinds[3][ErrorKind::Status.index()], 1);
        assert_eq!(hists.iter().filter(|h| h.key == HistKey::TTFB).count(), 4);
        assert_eq!(hists[0].histogram.len(), 3);
    }

    #[test]
    fn stragglers_after_sealing_are_still_counted() {
        let mut b = Bucketer::new(1.0);
        b.add(&rec(0.0, 1, None));
        b.add(&rec(100_000.0, 1, None)); // seals interval 0 (a gap of 100 s is still filled)
        b.add(&rec(200.0, 2, None)); // a straggler for the sealed interval
        let out = b.finish();
        let (series, hists) = (out.series, out.histograms);
        assert_eq!(series.intervals[0].tests, 2);
        assert_eq!(hists.iter().find(|h| h.key == HistKey::TOTAL && h.start_s == 0.0).unwrap().histogram.len(), 2);
        assert_eq!(series.tests(), 3);
    }
}
