//! Turns per-request records (k6, JMeter, Gatling) into per-interval rows and histograms,
//! in one streaming pass with bounded memory.
//!
//! Records arrive roughly in time order (a few seconds of disorder: JMeter writes a row
//! when a sample ends but stamps its start). Intervals more than [`OPEN_INTERVALS`] behind
//! the newest record are sealed: their raw values become a compact histogram. A record for
//! a sealed interval (a clock that stepped back) is still counted in the interval of its own
//! time stamp, never dropped, and [`Bucketed::input_notes`] says how many and where.
//!
//! Memory stays in proportion to the file: late raw values are sealed in batches, a sparse
//! file is not padded with more empty rows than [`ROWS_PER_OCCUPIED`] per interval that
//! holds a request (beyond a day), and labels are kept only while their rows are too.
//!
//! Records may carry a label (a JMeter sampler, a Gatling request name): each label gets
//! buckets of its own on the same interval grid, read back as per-test series the way
//! nGrinder's test ids are, with histograms tagged `ttfb.N` / `total.N`.

use std::collections::{BTreeMap, BTreeSet};

use volley_stats::{CompactHistogram, Counts, ErrorKind, Series};

use crate::hlog::{HistKey, HistMetric, LoggedHistogram};
use crate::note::{InputNote, Locator, Rows, Unit};

/// Intervals kept open behind the newest record before they are sealed.
const OPEN_INTERVALS: i64 = 30;
/// A stretch without any request longer than this (in intervals) is not filled with empty
/// rows: the file holds separate runs (one JMeter file appended to over days, say).
const MAX_FILLED_GAP: i64 = 300;
/// Labels broken down at most; beyond this the labels are probably URLs with ids in them,
/// and only the total is kept.
const MAX_LABELS: usize = 50;
/// Raw values of late records (for intervals already sealed) held before they are sealed
/// too: a clock that stepped back an hour makes every record late for an hour.
const LATE_RAW_LIMIT: usize = 1 << 16;
/// Rows of the series at most: a day of seconds, or 60 per interval that holds a request,
/// whichever is more. A sparse file spread over weeks would otherwise be padded with
/// millions of empty rows; beyond this the longest gaps are left out like separate runs.
const ROWS_FLOOR: usize = 86_400;
/// Rows per interval that holds a request, at most (see [`ROWS_FLOOR`]).
const ROWS_PER_OCCUPIED: usize = 60;
/// Per-label rows at most (labels × rows): a label gets a row in every interval of the
/// grid, so a sparse file with many labels would otherwise take memory out of proportion
/// to its size. Beyond this, at least this many per record.
const LABEL_ROWS_FLOOR: usize = 200_000;
/// Per-label rows allowed per record read (see [`LABEL_ROWS_FLOOR`]).
const LABEL_ROWS_PER_RECORD: usize = 50;

/// `us as f64 / 1000.0`, without a division when `us` is whole milliseconds below 2^53 (then
/// `us` is exact as an `f64` and the quotient is that whole number, exactly).
#[inline]
fn us_as_ms(us: u64) -> f64 {
    if us < 1 << 53 && us.is_multiple_of(1000) {
        (us / 1000) as f64
    } else {
        ms_of(us)
    }
}

/// `us as f64 / 1000.0`. Not inlined: inlined, the division is done ahead of the test that
/// skips it, and its latency is paid on every record.
#[inline(never)]
fn ms_of(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// `floor(ms / interval_ms)`, not inlined for the same reason as [`ms_of`].
#[inline(never)]
fn divided(ms: f64, interval_ms: f64) -> i64 {
    floor(ms / interval_ms)
}

/// `x.floor() as i64`, without a call to the C library's `floor` on a target without SSE4.1
/// (once per record). Saturates the same way; NaN gives 0.
#[inline]
fn floor(x: f64) -> i64 {
    let t = x as i64;
    if (t as f64) > x {
        t.saturating_sub(1)
    } else {
        t
    }
}

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
    /// Where the record is in its file (a line, or a byte offset for binary files), for notes.
    pub place: u64,
    /// When it ended, ms since the epoch, when the tool says so and it is not
    /// `start_ms + total` (k6 also waits for a connection before its duration starts).
    pub end_ms: Option<f64>,
}

#[derive(Default)]
struct Slot {
    counts: Counts,
    /// Sum of squares of successes' total time, µs², exact (an f64 running sum would
    /// depend on the order of the records, and parts of a file read in parallel must add
    /// up to the very figure one pass gives).
    total_sumsq: u128,
    /// Successes with a time to first byte (the others count in `counts` with 0).
    ttfb_n: u64,
    vusers: f64,
    ttfb_raw: Vec<u64>,
    total_raw: Vec<u64>,
    ttfb: CompactHistogram,
    total: CompactHistogram,
}

impl Slot {
    /// Adds `other`'s figures and histograms into this slot's (both sealed).
    fn merge(&mut self, other: &Slot) {
        self.counts.merge(&other.counts);
        self.total_sumsq += other.total_sumsq;
        self.ttfb_n += other.ttfb_n;
        self.vusers = self.vusers.max(other.vusers);
        for (x, y) in [
            (&other.ttfb, &mut self.ttfb),
            (&other.total, &mut self.total),
        ] {
            if !x.is_empty() {
                *y = if y.is_empty() { x.clone() } else { y.merged(x) };
            }
        }
    }
}

/// Raw-value buffers emptied by sealing, kept for the same thread's next intervals.
///
/// Sealing an interval frees its two buffers, and the next interval grows new ones by
/// doubling. Read in parts, a part's buffers were freed by the thread adding the parts up,
/// into the reader thread's heap, which the allocator then trimmed (`madvise`), so the
/// reader's next part faulted the same memory in again: half the page faults of a JTL read.
/// Parts are sealed by the thread that read them ([`Bucketer::seal`]), and the buffers stay
/// with it, up to [`spare::KEPT_BYTES`].
mod spare {
    use std::cell::RefCell;

    /// Bytes of emptied buffers a thread keeps, at most.
    pub(super) const KEPT_BYTES: usize = 4 << 20;

    thread_local! {
        /// The buffers, and the bytes they hold.
        static SPARE: RefCell<(Vec<Vec<u64>>, usize)> = const { RefCell::new((Vec::new(), 0)) };
    }

    /// An empty buffer, with room when one was given back.
    pub(super) fn take() -> Vec<u64> {
        SPARE.with_borrow_mut(|(kept, bytes)| {
            let v = kept.pop().unwrap_or_default();
            *bytes -= v.capacity() * size_of::<u64>();
            v
        })
    }

    /// Keeps `v`'s room for [`take`], while the thread keeps at most [`KEPT_BYTES`].
    pub(super) fn give(mut v: Vec<u64>) {
        let size = v.capacity() * size_of::<u64>();
        if size == 0 {
            return;
        }
        v.clear();
        SPARE.with_borrow_mut(|(kept, bytes)| {
            if *bytes + size <= KEPT_BYTES {
                *bytes += size;
                kept.push(v);
            }
        });
    }
}

/// One series' intervals (the total's, or a label's), by interval index. A record is added to
/// one series only: a labelled record to its label's, and the total is the labels' sum, made
/// when they are reported (or dropped). Every figure of a slot is an exact sum, so adding the
/// labels' slots gives the very total that adding every record to it would.
#[derive(Default)]
struct Slots {
    map: BTreeMap<i64, Slot>,
    /// Intervals holding raw values not yet sealed.
    dirty: BTreeSet<i64>,
    /// Some record carried a time to first byte.
    has_ttfb: bool,
}

impl Slots {
    /// Adds one record to interval `idx`.
    #[inline]
    fn add(&mut self, idx: i64, r: &RequestRecord) {
        // Most records fall in the newest interval: reached down the tree's right edge,
        // without a comparison a level.
        let slot = match self.map.last_entry() {
            Some(last) if *last.key() == idx => last.into_mut(),
            _ => self.map.entry(idx).or_default(),
        };
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
                slot.total_sumsq += u128::from(r.total_us) * u128::from(r.total_us);
                if slot.total_raw.is_empty() {
                    // The slot's first raw value since it was made or sealed (both buffers
                    // are empty then): room from this thread's spares.
                    if slot.total_raw.capacity() == 0 {
                        (slot.total_raw, slot.ttfb_raw) = (spare::take(), spare::take());
                    }
                    self.dirty.insert(idx);
                }
                if let Some(t) = r.ttfb_us {
                    slot.ttfb_raw.push(t.max(1));
                    slot.ttfb_n += 1;
                    self.has_ttfb = true;
                }
                slot.total_raw.push(r.total_us.max(1));
            }
        }
    }

    /// Seals every interval before `limit` that holds raw values.
    fn seal_before(&mut self, limit: i64) {
        let keep = self.dirty.split_off(&limit);
        for k in std::mem::replace(&mut self.dirty, keep) {
            if let Some(slot) = self.map.get_mut(&k) {
                for (raw, compact) in [
                    (&mut slot.ttfb_raw, &mut slot.ttfb),
                    (&mut slot.total_raw, &mut slot.total),
                ] {
                    compact.add_values(raw);
                    spare::give(std::mem::take(raw));
                }
            }
        }
    }

    /// Adds `other`'s slots into these (both sealed).
    fn merge(&mut self, other: &Slots) {
        self.has_ttfb |= other.has_ttfb;
        for (&idx, b) in &other.map {
            self.map.entry(idx).or_default().merge(b);
        }
    }

    /// Moves interval `from` into interval `into` (both sealed).
    fn fold(&mut self, from: i64, into: i64) {
        if let Some(a) = self.map.remove(&from) {
            self.map.entry(into).or_default().merge(&a);
        }
    }
}

/// The streaming bucketer.
pub struct Bucketer {
    interval_ms: f64,
    origin_ms: Option<f64>,
    /// The records added without a label (and, once labels are dropped or reported, every
    /// label's too).
    slots: Slots,
    newest: i64,
    /// Raw values held by late records since the last sealing of them.
    late_raw: usize,
    records: u64,
    /// Successful records without a time to first byte.
    ttfb_missing: u64,
    /// Records stamped more than [`OPEN_INTERVALS`] before the newest one.
    late: Rows,
    /// The largest such step back, intervals.
    late_by: i64,
    /// What a record is called in notes.
    unit: Unit,
    /// A gauge of active users: (ms since the epoch, value), in arrival order.
    vus_gauge: Vec<(f64, f64)>,
    /// Per-label intervals, in order of first appearance.
    labels: Vec<(String, Slots)>,
    label_index: std::collections::HashMap<String, usize, foldhash::fast::RandomState>,
    /// More than [`MAX_LABELS`] labels were seen.
    too_many_labels: usize,
    /// The earliest start and the latest end of any record, ms since the epoch: the time
    /// the file's traffic really covers (its first and last intervals hold only part).
    span_ms: Option<(f64, f64)>,
    /// Edge intervals folded into their neighbours: (from, into).
    folds: Vec<(i64, i64)>,
    /// Each rise of `newest`: (the new newest, the lowest interval of any record up to and
    /// including the one that raised it). A part of a file read on its own checks with it
    /// that the records before it would not have made any of its records late
    /// ([`Bucketer::exact_after`]).
    rises: Vec<(i64, i64)>,
    /// The lowest interval of any record so far.
    lowest: i64,
    /// Index into `labels` of the last label seen (most files repeat it row after row).
    last_label: usize,
    /// The file's time stamps are whole seconds: how much of the first and last second
    /// the requests fill is unknown.
    whole_seconds: bool,
}

impl Bucketer {
    /// Buckets of `interval_s` seconds, for a file whose places are lines.
    pub fn new(interval_s: f64) -> Self {
        Bucketer::located(interval_s, Locator::Line)
    }

    /// Buckets of `interval_s` seconds, for a file whose places are `locator`s.
    pub fn located(interval_s: f64, locator: Locator) -> Self {
        Bucketer {
            interval_ms: interval_s * 1000.0,
            origin_ms: None,
            slots: Slots::default(),
            newest: i64::MIN,
            late_raw: 0,
            records: 0,
            ttfb_missing: 0,
            late: Rows::new(locator),
            late_by: 0,
            unit: Unit::Row,
            vus_gauge: Vec::new(),
            labels: Vec::new(),
            label_index: Default::default(),
            too_many_labels: 0,
            span_ms: None,
            folds: Vec::new(),
            whole_seconds: false,
            rises: Vec::new(),
            lowest: i64::MAX,
            last_label: usize::MAX,
        }
    }

    /// Buckets for one part of a file read on its own, on the grid of the whole file: its
    /// first interval starts at `origin_ms` (the whole second of the file's first record),
    /// and `newest` is the latest interval of any record before the part (when known: a
    /// part read ahead of the ones before it assumes none, and [`Bucketer::exact_after`]
    /// says whether that was right).
    pub fn part(
        interval_s: f64,
        locator: Locator,
        origin_ms: Option<f64>,
        newest: Option<i64>,
    ) -> Self {
        let mut b = Bucketer::located(interval_s, locator);
        b.origin_ms = origin_ms;
        if let Some(n) = newest {
            b.newest = n;
        }
        b
    }

    /// The grid's origin, ms since the epoch, once the first record has set it.
    pub fn origin_ms(&self) -> Option<f64> {
        self.origin_ms
    }

    /// The latest interval of any record so far (`None` before the first).
    pub fn newest(&self) -> Option<i64> {
        (self.newest != i64::MIN).then_some(self.newest)
    }

    /// Whether this part, read with no record before it, counted exactly what it would have
    /// counted after records whose latest interval was `before`: none of its records would
    /// have been late (more than [`OPEN_INTERVALS`] behind) for `before` other than those it
    /// found late itself.
    pub fn exact_after(&self, before: Option<i64>) -> bool {
        let Some(p) = before else { return true };
        // Records while this part's own newest was below `p` saw `p` as the newest in one
        // pass: the first rise to `p` or beyond ends them.
        let lowest = match self.rises.iter().find(|&&(n, _)| n >= p) {
            Some(&(_, low)) => low,
            None => self.lowest,
        };
        self.records == 0 || lowest >= p.saturating_sub(OPEN_INTERVALS)
    }

    /// Adds a later part of the same file (read with [`Bucketer::part`] on the same grid):
    /// the result is what one pass over both gives. `line_base` is added to the later
    /// part's places when they are lines counted from its own start.
    pub fn absorb(&mut self, later: Bucketer, line_base: u64) {
        let mut later = later;
        later.seal_before(i64::MAX);
        self.seal_before(i64::MAX);
        self.slots.merge(&later.slots);
        self.records += later.records;
        self.ttfb_missing += later.ttfb_missing;
        self.whole_seconds |= later.whole_seconds;
        if self.origin_ms.is_none() {
            self.origin_ms = later.origin_ms;
        }
        self.span_ms = match (self.span_ms, later.span_ms) {
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
            (x, y) => x.or(y),
        };
        if self.late.locator == Locator::Line {
            for at in &mut later.late.at {
                *at += line_base;
            }
        }
        self.late.count += later.late.count;
        let room = crate::note::PLACES_SHOWN.saturating_sub(self.late.at.len());
        self.late.at.extend(later.late.at.iter().take(room));
        self.late_by = self.late_by.max(later.late_by);
        for (n, low) in later.rises {
            if n > self.newest {
                self.rises.push((n, low.min(self.lowest)));
            }
        }
        self.newest = self.newest.max(later.newest);
        self.lowest = self.lowest.min(later.lowest);
        self.vus_gauge.extend(later.vus_gauge);
        // Labels in the order of their first record over both parts.
        let new = later
            .labels
            .iter()
            .filter(|(name, _)| !self.label_index.contains_key(name))
            .count();
        if self.too_many_labels == 0
            && later.too_many_labels == 0
            && self.labels.len() + new > MAX_LABELS
        {
            self.too_many_labels = self.labels.len() + new;
        }
        if self.too_many_labels > 0 || later.too_many_labels > 0 {
            self.too_many_labels = self.too_many_labels.max(later.too_many_labels);
            self.drop_labels();
            for (_, label) in later.labels {
                self.slots.merge(&label);
            }
            return;
        }
        for (name, b) in later.labels {
            match self.label_index.get(&name) {
                Some(&i) => self.labels[i].1.merge(&b),
                None => {
                    self.label_index.insert(name.clone(), self.labels.len());
                    self.labels.push((name, b));
                }
            }
        }
    }

    /// Adds every label's intervals into the total's (all sealed) and keeps only the total:
    /// there are too many labels to break down.
    fn drop_labels(&mut self) {
        for (_, label) in std::mem::take(&mut self.labels) {
            self.slots.merge(&label);
        }
        self.label_index.clear();
        self.last_label = usize::MAX;
    }

    /// Calls the records `unit`s in notes (rows by default).
    pub fn counting(mut self, unit: Unit) -> Self {
        self.unit = unit;
        self
    }

    /// Adds one request that carries a label (counted in its label's intervals, which add
    /// up to the total's).
    pub fn add_labelled(&mut self, r: &RequestRecord, label: &str) {
        if self.too_many_labels > 0 {
            return self.add(r);
        }
        if let Some((name, _)) = self.labels.get(self.last_label)
            && same_name(name, label)
        {
            return self.add_to(r, Some(self.last_label));
        }
        let i = match self.label_index.get(label) {
            Some(&i) => i,
            None if self.labels.len() >= MAX_LABELS => {
                self.too_many_labels = self.labels.len() + 1;
                self.seal_before(i64::MAX);
                self.drop_labels();
                return self.add(r);
            }
            None => {
                self.labels.push((label.to_string(), Slots::default()));
                self.label_index
                    .insert(label.to_string(), self.labels.len() - 1);
                self.labels.len() - 1
            }
        };
        self.last_label = i;
        self.add_to(r, Some(i));
    }

    /// Says the file's time stamps are whole seconds (k6's default CSV): the edge
    /// intervals' coverage is unknown, so they are left out of TPS instead of cut.
    pub fn whole_second_stamps(&mut self) {
        self.whole_seconds = true;
    }

    /// Records counted so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Successful records counted so far that carried no time to first byte.
    pub fn ttfb_missing(&self) -> u64 {
        self.ttfb_missing
    }

    /// Sets the active users at `at_ms` (ms since the epoch): the last value given in an
    /// interval is that interval's VU count.
    pub fn vusers_at(&mut self, at_ms: f64, value: f64) {
        self.vus_gauge.push((at_ms, value));
    }

    /// Adds one request.
    pub fn add(&mut self, r: &RequestRecord) {
        self.add_to(r, None);
    }

    /// Adds one request to label `label`'s intervals, or to the total's.
    #[inline]
    fn add_to(&mut self, r: &RequestRecord, label: Option<usize>) {
        self.records += 1;
        let end = r
            .end_ms
            .unwrap_or_else(|| r.start_ms + us_as_ms(r.total_us));
        self.span_ms = Some(match self.span_ms {
            Some((a, b)) => (a.min(r.start_ms), b.max(end)),
            None => (r.start_ms, end),
        });
        let origin = *self
            .origin_ms
            .get_or_insert_with(|| (r.start_ms / 1000.0).floor() * 1000.0);
        let idx = self.interval_of(r.start_ms - origin);
        let slots = match label {
            Some(i) => &mut self.labels[i].1,
            None => &mut self.slots,
        };
        slots.add(idx, r);
        if r.error.is_none() && r.ttfb_us.is_none() {
            self.ttfb_missing += 1;
        }
        self.lowest = self.lowest.min(idx);
        if idx > self.newest {
            self.newest = idx;
            self.rises.push((idx, self.lowest));
            self.seal_before(idx.saturating_sub(OPEN_INTERVALS));
        } else if idx < self.newest.saturating_sub(OPEN_INTERVALS) {
            // Late for an interval already sealed: counted in its own interval all the same.
            // Tools write a request when it ends but stamp its start, so a long request (a
            // timeout) arrives late by its own duration; beyond that, a clock stepped back,
            // and the notes say so.
            let end = self.interval_of(r.start_ms + us_as_ms(r.total_us) - origin);
            if end < self.newest.saturating_sub(OPEN_INTERVALS) {
                self.late.push(r.place);
                self.late_by = self.late_by.max(self.newest.saturating_sub(idx));
            }
            if r.error.is_none() {
                self.late_raw += 1;
                if self.late_raw >= LATE_RAW_LIMIT {
                    self.seal_before(self.newest.saturating_sub(OPEN_INTERVALS));
                    self.late_raw = 0;
                }
            }
        }
    }

    /// The interval `ms` after the origin falls in: `floor(ms / interval_ms)`. Whole
    /// milliseconds (most files) on a whole-second grid, below 2^40 either way, are divided as
    /// integers: the float quotient's rounding error is then far below the 1/1000 that separates
    /// it from the next whole number, so the interval is the same — and costs a multiplication
    /// instead of a division's latency on every record.
    #[inline]
    fn interval_of(&self, ms: f64) -> i64 {
        const EXACT: f64 = (1u64 << 40) as f64;
        let whole = ms as i64;
        if self.interval_ms == 1000.0 && whole as f64 == ms && ms.abs() < EXACT {
            whole.div_euclid(1000)
        } else {
            divided(ms, self.interval_ms)
        }
    }

    /// Seals every interval: done by a thread that read a part, before handing it over, so
    /// that the part's raw-value buffers go back to that thread's spares.
    pub fn seal(&mut self) {
        self.seal_before(i64::MAX);
    }

    /// Seals every interval before `limit` that holds raw values, the total's and each
    /// label's.
    fn seal_before(&mut self, limit: i64) {
        self.slots.seal_before(limit);
        for (_, label) in &mut self.labels {
            label.seal_before(limit);
        }
    }

    /// The series (intervals from the earliest to the latest, short gaps filled with
    /// empty rows), the histograms, the errors by kind per interval, and notes; per label too.
    pub fn finish(mut self) -> Bucketed {
        self.seal_before(i64::MAX);
        for (_, label) in &self.labels {
            self.slots.merge(label);
        }
        let edges = self.cut_edges();
        let Some(mut grid) = self.grid() else {
            return Bucketed::default();
        };
        let mut span_note = None;
        if let Some((e, note)) = edges {
            grid.edges = Some(e);
            span_note = note;
        }
        let mut gauge: BTreeMap<i64, f64> = BTreeMap::new();
        if let Some(origin) = self.origin_ms {
            for &(at, v) in &self.vus_gauge {
                let k = ((at - origin) / self.interval_ms).floor() as i64;
                let k = self
                    .folds
                    .iter()
                    .fold(k, |k, &(from, into)| if k == from { into } else { k });
                gauge.insert(k, v);
            }
        }
        let mut total = std::mem::take(&mut self.slots);
        let mut out = self.rows(&mut total, &grid, None, &gauge);
        out.notes.extend(grid.notes.iter().cloned());
        out.input_notes.extend(span_note);
        if self.late.count > 0 {
            let period = self.interval_ms / 1000.0;
            out.input_notes.push(InputNote::Used {
                unit: self.unit,
                rows: self.late.clone(),
                how: format!(
                    "stamped more than {:.0} s (up to {:.0} s) before a record above (the clock stepped back?): counted in the interval of its own time stamp.",
                    OPEN_INTERVALS as f64 * period,
                    self.late_by as f64 * period
                ),
            });
        }
        let label_rows = grid.wanted.len().saturating_mul(self.labels.len());
        let allowed =
            LABEL_ROWS_FLOOR.max((self.records as usize).saturating_mul(LABEL_ROWS_PER_RECORD));
        if label_rows > allowed {
            out.notes.push(format!(
                "{} labels over {} intervals: only the totals are kept (a label series per interval would take memory out of proportion to this file).",
                self.labels.len(),
                grid.wanted.len()
            ));
            self.labels.clear();
        }
        for (i, (name, mut label)) in std::mem::take(&mut self.labels).into_iter().enumerate() {
            let rows = self.rows(&mut label, &grid, Some(i), &BTreeMap::new());
            out.histograms.extend(rows.histograms);
            out.per_label.push((name, rows.series));
        }
        if self.too_many_labels > 0 {
            out.notes.push(format!("More than {MAX_LABELS} distinct labels: only the totals are kept (labels with ids or URLs in them cannot be broken down)."));
        }
        out
    }

    /// Cuts the first and last intervals to the time the requests cover: an edge interval
    /// holding less than half an interval of traffic is folded into its neighbour (its TPS,
    /// per second of a sliver, would be noise), the others keep their own row, shortened.
    /// Returns the edges and the note saying what was done, when an edge was partial.
    fn cut_edges(&mut self) -> Option<(Edges, Option<InputNote>)> {
        let (origin, (start, end)) = (self.origin_ms?, self.span_ms?);
        let (&first0, _) = self.slots.map.first_key_value()?;
        let (&last0, _) = self.slots.map.last_key_value()?;
        if self.whole_seconds {
            let blind = last0 - first0 >= 2;
            let note = blind.then(|| InputNote::EdgesUnknown {
                interval_s: self.interval_ms / 1000.0,
                first: true,
                last: true,
                why: "The time stamps are whole seconds".to_string(),
            });
            return Some((
                Edges {
                    start_ms: f64::NAN,
                    end_ms: f64::NAN,
                    first: first0,
                    last: last0,
                },
                note,
            ));
        }
        let i = self.interval_ms;
        let at = |k: i64| origin + k as f64 * i;
        let end = end.min(at(last0) + i).max(start + 1.0);
        let first_cov = (at(first0) + i - start).min(end - start);
        let last_cov = end - at(last0).max(start);
        let (mut first, mut last) = (first0, last0);
        let (mut first_folded, mut last_folded) = (false, false);
        if first < last && first_cov < i / 2.0 {
            self.fold(first, first + 1);
            first += 1;
            first_folded = true;
        }
        if first < last && last_cov < i / 2.0 {
            self.fold(last, last - 1);
            last -= 1;
            last_folded = true;
        }
        let partial = first_cov < i - 0.5 || last_cov < i - 0.5;
        let note = partial.then(|| InputNote::Span {
            span_s: (end - start) / 1000.0,
            first_s: first_cov / 1000.0,
            last_s: last_cov / 1000.0,
            first_folded,
            last_folded,
            interval_s: i / 1000.0,
        });
        Some((
            Edges {
                start_ms: start,
                end_ms: end,
                first,
                last,
            },
            note,
        ))
    }

    /// Moves interval `from` into interval `into`, for the total and every label.
    fn fold(&mut self, from: i64, into: i64) {
        self.slots.fold(from, into);
        for (_, label) in &mut self.labels {
            label.fold(from, into);
        }
        self.folds.push((from, into));
    }

    /// The intervals to report: the first, and every one up to the last except long gaps
    /// (and, in a sparse file, the longest gaps beyond the row budget).
    fn grid(&self) -> Option<Grid> {
        let (&first, _) = self.slots.map.first_key_value()?;
        let period = self.interval_ms / 1000.0;
        let keys: Vec<i64> = self.slots.map.keys().copied().collect();
        // Empty intervals between consecutive occupied ones.
        let gaps: Vec<i64> = keys
            .windows(2)
            .map(|w| w[1].saturating_sub(w[0]).saturating_sub(1))
            .collect();
        let budget = ROWS_FLOOR
            .max(keys.len().saturating_mul(ROWS_PER_OCCUPIED))
            .saturating_sub(keys.len()) as i64;
        // Fill the short gaps, shortest first, while the budget lasts.
        let mut order: Vec<usize> = (0..gaps.len())
            .filter(|&i| gaps[i] > 0 && gaps[i] < MAX_FILLED_GAP)
            .collect();
        order.sort_by_key(|&i| gaps[i]);
        let mut fill = vec![false; gaps.len()];
        let mut used = 0i64;
        for i in order {
            if used + gaps[i] > budget {
                break;
            }
            used += gaps[i];
            fill[i] = true;
        }
        let (mut wanted, mut notes) = (Vec::with_capacity(keys.len() + used as usize), Vec::new());
        let mut unfilled = Vec::new();
        for (i, &k) in keys.iter().enumerate() {
            if i > 0 {
                let prev = keys[i - 1];
                if fill[i - 1] {
                    wanted.extend(prev + 1..k);
                } else if gaps[i - 1] > 0 {
                    unfilled.push((prev, k));
                }
            }
            wanted.push(k);
        }
        const LISTED: usize = 5;
        for &(prev, k) in unfilled.iter().take(LISTED) {
            let (len, gap) = ((k - prev) as f64 * period, k - prev - 1);
            let what = if gap >= MAX_FILLED_GAP {
                "the file holds separate runs"
            } else {
                "the file is too sparse to fill every gap"
            };
            notes.push(format!(
                "No request for {len:.0} s after {:.0} s: {what}; the gap is left out of the series.",
                (prev - first + 1) as f64 * period
            ));
        }
        if unfilled.len() > LISTED {
            notes.push(format!(
                "{} more gaps without any request are left out of the series.",
                unfilled.len() - LISTED
            ));
        }
        Some(Grid {
            first,
            wanted,
            notes,
            edges: None,
        })
    }

    /// Rows and histograms of `slots` on `grid` (empty slots give zero rows), with the VUs of
    /// `gauge` where it has them; the histograms are keyed to `step` (a label), or to the run.
    fn rows(
        &self,
        slots: &mut Slots,
        grid: &Grid,
        step: Option<usize>,
        gauge: &BTreeMap<i64, f64>,
    ) -> Bucketed {
        let (ttfb_key, total_key) = (
            HistKey {
                metric: HistMetric::Ttfb,
                step,
            },
            HistKey {
                metric: HistMetric::Total,
                step,
            },
        );
        let period = self.interval_ms / 1000.0;
        let mut out = Bucketed::default();
        let mut empty = Slot::default();
        for &idx in &grid.wanted {
            // The histograms are moved out: each interval is reported once, and last.
            let slot = slots.map.get_mut(&idx).unwrap_or(&mut empty);
            let blind = grid.edges.is_some_and(|e| {
                e.start_ms.is_nan() && e.last - e.first >= 2 && (idx == e.first || idx == e.last)
            });
            let (start_s, period) = match (grid.edges, self.origin_ms) {
                (Some(e), Some(origin)) if !e.start_ms.is_nan() => {
                    let from = if idx == e.first {
                        e.start_ms
                    } else {
                        origin + idx as f64 * self.interval_ms
                    };
                    let to = if idx == e.last {
                        e.end_ms
                    } else {
                        origin + (idx + 1) as f64 * self.interval_ms
                    };
                    ((from - e.start_ms) / 1000.0, (to - from) / 1000.0)
                }
                _ => ((idx - grid.first) as f64 * period, period),
            };
            let vusers = gauge.get(&idx).copied().unwrap_or(slot.vusers);
            let mut counts = slot.counts.clone();
            counts.total_sumsq_us = slot.total_sumsq as f64;
            let mut row = counts.to_interval(start_s, period, vusers);
            if blind {
                row.tps = f64::NAN; // how much of the interval the requests fill is unknown
            }
            if slot.ttfb_n < slot.counts.tests {
                // Successes without a first-byte time are not averaged in as 0 ms.
                row.mttfb_ms = if slot.ttfb_n == 0 {
                    f64::NAN
                } else {
                    slot.counts.ttfb_sum_us as f64 / slot.ttfb_n as f64 / 1000.0
                };
            }
            out.series.intervals.push(row);
            out.errors_by_kind.push(slot.counts.errors_by_kind);
            if slots.has_ttfb {
                out.histograms.push(LoggedHistogram {
                    key: ttfb_key,
                    start_s,
                    histogram: std::mem::take(&mut slot.ttfb),
                });
            }
            out.histograms.push(LoggedHistogram {
                key: total_key,
                start_s,
                histogram: std::mem::take(&mut slot.total),
            });
        }
        out
    }
}

/// The interval grid of a file: the first interval and the ones reported.
struct Grid {
    first: i64,
    wanted: Vec<i64>,
    notes: Vec<String>,
    /// Where the traffic starts and ends, when the edge intervals are cut to it.
    edges: Option<Edges>,
}

/// The time the file's traffic covers, on the interval grid: the first row starts at
/// `start_ms` (the earliest request's start) and the last ends at `end_ms` (the latest
/// request's end, at most a whole interval after the last row's grid start). Both are NaN
/// for whole-second time stamps: the rows stay whole and the edge rows' TPS is unknown.
#[derive(Debug, Clone, Copy)]
struct Edges {
    start_ms: f64,
    end_ms: f64,
    first: i64,
    last: i64,
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
    /// What was done with records out of order.
    pub input_notes: Vec<InputNote>,
    /// Each label's series, when the records carried labels.
    pub per_label: Vec<(String, Series)>,
}

impl Bucketed {
    /// Moves everything into `src`.
    pub fn into_source(self, src: &mut crate::Source) {
        src.series = self.series;
        src.histograms = crate::histograms::Histograms::held(self.histograms);
        src.errors_by_kind = self.errors_by_kind;
        src.notes.extend(self.notes);
        src.input_notes.extend(self.input_notes);
        src.per_test = self.per_label;
    }
}

/// Whether two labels are the same, compared inline: labels are short, and a call of the C
/// library's `memcmp` for each row cost more than the comparison (a label is compared with
/// the last one's on every row, here and in JMeter's thread table).
#[inline]
pub(crate) fn same_name(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().expect("8 bytes"));
    match n {
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_name_is_string_equality_at_every_length_and_difference() {
        for n in 0..40usize {
            let a: String = (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
            assert!(same_name(&a, &a.clone()), "{n} bytes");
            for at in 0..n {
                let mut b = a.clone().into_bytes();
                b[at] = b'A' + (b[at] - b'a');
                assert!(
                    !same_name(&a, std::str::from_utf8(&b).unwrap()),
                    "{n} bytes, differing at {at}"
                );
            }
            let longer = format!("{a}a");
            assert!(
                !same_name(&a, &longer) && !same_name(&longer, &a),
                "{n} and {} bytes",
                n + 1
            );
        }
    }

    #[test]
    fn intervals_and_milliseconds_are_what_the_float_division_gives() {
        let b = Bucketer::new(1.0);
        let mut rng = fastrand::Rng::with_seed(19);
        for _ in 0..200_000 {
            let ms = match rng.u8(0..4) {
                0 => rng.i64(-10_000_000..10_000_000) as f64,
                1 => rng.i64(-(1 << 41)..(1 << 41)) as f64,
                2 => rng.i64(-10_000_000..10_000_000) as f64 + rng.f64(),
                _ => rng.i64(i64::MIN / 2..i64::MAX / 2) as f64,
            };
            assert_eq!(b.interval_of(ms), floor(ms / 1000.0), "{ms}");
            let us = match rng.u8(0..3) {
                0 => rng.u64(0..1 << 40) * 1000,
                1 => rng.u64(0..1 << 50),
                _ => rng.u64(..),
            };
            assert_eq!(
                us_as_ms(us).to_bits(),
                (us as f64 / 1000.0).to_bits(),
                "{us}"
            );
        }
        let edge = (1u64 << 40) as f64;
        for ms in [
            999.0,
            1000.0,
            -1.0,
            -1000.0,
            -1001.0,
            0.0,
            -0.0,
            edge - 1.0,
            edge,
            edge + 1.0,
            1.0 - edge,
            -edge,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            assert_eq!(b.interval_of(ms), floor(ms / 1000.0), "{ms}");
        }
        let half = Bucketer::new(0.5);
        for ms in [0.0, 499.0, 500.0, 1999.0, -1.0, 12_345_678.0] {
            assert_eq!(
                half.interval_of(ms),
                floor(ms / 500.0),
                "{ms} on a half-second grid"
            );
        }
    }

    #[test]
    fn floor_is_the_library_floor() {
        for x in [
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.0,
            -1.0,
            1.999,
            -1.999,
            1e15 + 0.5,
            -1e15 - 0.5,
            9.3e18,
            -9.3e18,
            1e300,
            -1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            4503599627370495.5,
            -4503599627370495.5,
        ] {
            assert_eq!(floor(x), x.floor() as i64, "{x}");
        }
    }

    fn rec(start_ms: f64, ms: u64, error: Option<ErrorKind>) -> RequestRecord {
        RequestRecord {
            start_ms,
            ttfb_us: Some(ms * 1000),
            total_us: ms * 1000,
            error,
            ..Default::default()
        }
    }

    #[test]
    fn buckets_by_start_time_and_fills_gaps() {
        let mut b = Bucketer::new(1.0);
        b.add(&rec(10_500.0, 5, None));
        b.add(&rec(10_900.0, 7, None));
        b.add(&rec(13_100.0, 9, Some(ErrorKind::Status)));
        b.add(&rec(10_100.0, 3, None)); // out of order, same interval
        let Bucketed {
            series,
            histograms: hists,
            errors_by_kind: kinds,
            input_notes,
            ..
        } = b.finish();
        // The traffic spans 10.100 s → 13.109 s: the first interval is cut to its 0.9 s, the
        // last (0.109 s) is folded into the empty one before it.
        assert_eq!(series.intervals.len(), 3);
        assert_eq!(series.intervals[0].tests, 3);
        assert!((series.intervals[0].period_s - 0.9).abs() < 1e-9);
        assert!((series.intervals[0].tps - 3.0 / 0.9).abs() < 1e-9);
        assert!((series.intervals[0].mttfb_ms - 5.0).abs() < 1e-9);
        assert_eq!(series.intervals[1].tests, 0);
        assert!((series.intervals[1].start_s - 0.9).abs() < 1e-9);
        assert_eq!(series.intervals[2].errors, 1);
        assert!((series.intervals[2].period_s - 1.109).abs() < 1e-9);
        assert_eq!(kinds[2][ErrorKind::Status.index()], 1);
        assert_eq!(hists.iter().filter(|h| h.key == HistKey::TTFB).count(), 3);
        assert_eq!(hists[0].histogram.len(), 3);
        assert!(
            matches!(
                input_notes[..],
                [InputNote::Span {
                    first_folded: false,
                    last_folded: true,
                    ..
                }]
            ),
            "{input_notes:?}"
        );
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
        assert_eq!(
            hists
                .iter()
                .find(|h| h.key == HistKey::TOTAL && h.start_s == 0.0)
                .unwrap()
                .histogram
                .len(),
            2
        );
        assert_eq!(series.tests(), 3);
    }

    #[test]
    fn records_far_out_of_order_are_counted_in_their_own_interval_and_said_so() {
        let mut b = Bucketer::new(1.0);
        for s in 0..60 {
            b.add(&RequestRecord {
                place: s + 2,
                ..rec(s as f64 * 1000.0, 1, None)
            });
        }
        b.add(&RequestRecord {
            place: 99,
            ..rec(5_500.0, 7, None)
        }); // 54 s late: interval 5 is sealed
        let out = b.finish();
        assert_eq!(out.series.intervals[5].tests, 2);
        assert_eq!(out.series.tests(), 61);
        let five = out
            .histograms
            .iter()
            .find(|h| h.key == HistKey::TOTAL && h.start_s == 5.0)
            .unwrap();
        assert_eq!(
            five.histogram.len(),
            2,
            "the late record is in the histogram too"
        );
        assert_eq!(
            out.input_notes
                .iter()
                .filter(|n| matches!(n, InputNote::Used { .. }))
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            [
                "1 row (line 99): stamped more than 30 s (up to 54 s) before a record above (the clock stepped back?): counted in the interval of its own time stamp."
            ]
        );
    }

    #[test]
    fn an_hour_of_late_records_is_sealed_as_it_goes() {
        // The clock steps back an hour and stays there: every later record is late. Their
        // raw values are sealed in batches, not held until the end.
        let mut b = Bucketer::new(1.0);
        b.add(&rec(3_600_000.0, 1, None));
        let n = LATE_RAW_LIMIT as u64 * 2 + 10;
        for i in 0..n {
            b.add(&rec((i % 3_000) as f64 * 1000.0, 1 + i % 50, None));
        }
        assert!(
            b.slots.dirty.len() <= OPEN_INTERVALS as usize + 3_000,
            "{} dirty slots",
            b.slots.dirty.len()
        );
        assert!(
            b.slots
                .map
                .values()
                .map(|s| s.total_raw.len())
                .sum::<usize>()
                < LATE_RAW_LIMIT,
            "raw values are sealed in batches"
        );
        let out = b.finish();
        assert_eq!(out.series.tests(), n + 1);
        let logged: u64 = out
            .histograms
            .iter()
            .filter(|h| h.key == HistKey::TOTAL)
            .map(|h| h.histogram.len())
            .sum();
        assert_eq!(logged, n + 1);
    }

    #[test]
    fn sealed_buffers_are_kept_for_the_next_intervals_up_to_a_bound() {
        // Each test runs on a thread of its own: this thread's spares start empty.
        assert_eq!(spare::take().capacity(), 0);
        let mut b = Bucketer::new(1.0);
        for i in 0..1_000u64 {
            b.add(&rec(0.0, 1 + i, None));
        }
        b.seal();
        let (ttfb, total) = (spare::take(), spare::take());
        assert!(ttfb.is_empty() && total.is_empty());
        assert!(
            ttfb.capacity() >= 1_000 && total.capacity() >= 1_000,
            "{} {}",
            ttfb.capacity(),
            total.capacity()
        );
        // A new interval takes them (no buffer grows from nothing while spares are kept).
        spare::give(ttfb);
        spare::give(total);
        b.add(&rec(100_000.0, 5, None));
        let slot = b.slots.map.values().last().unwrap();
        assert!(slot.total_raw.capacity() >= 1_000 && slot.ttfb_raw.capacity() >= 1_000);
        assert_eq!(spare::take().capacity(), 0, "both spares taken");
        // Beyond the bound, buffers are freed, not kept.
        let big = spare::KEPT_BYTES / size_of::<u64>();
        spare::give(Vec::with_capacity(big));
        spare::give(Vec::with_capacity(1));
        assert!(spare::take().capacity() >= big);
        assert_eq!(
            spare::take().capacity(),
            0,
            "the second buffer went past the bound"
        );
        // Sealing changed nothing but where the memory came from.
        let out = b.finish();
        assert_eq!(out.series.tests(), 1_001);
    }

    #[test]
    fn a_sparse_file_gets_a_bounded_grid_and_keeps_every_request() {
        // One request every 299 s for 30 days: filling every gap would make 2.6 M rows.
        let mut b = Bucketer::new(1.0);
        let n = 30 * 86_400 / 299;
        for i in 0..n {
            b.add_labelled(&rec(i as f64 * 299_000.0, 1, None), ["a", "b", "c"][i % 3]);
        }
        let out = b.finish();
        assert!(
            out.series.intervals.len() <= ROWS_PER_OCCUPIED * n,
            "{} rows",
            out.series.intervals.len()
        );
        assert_eq!(out.series.tests(), n as u64);
        assert!(
            out.notes
                .iter()
                .any(|m| m.contains("too sparse to fill every gap")),
            "{:?}",
            out.notes
        );
        assert!(
            out.per_label.is_empty(),
            "3 labels × every row would take memory out of proportion"
        );
        assert!(
            out.notes
                .iter()
                .any(|m| m.contains("only the totals are kept")),
            "{:?}",
            out.notes
        );
    }

    #[test]
    fn the_vu_gauge_lands_on_the_interval_of_its_time() {
        let mut b = Bucketer::new(1.0);
        b.vusers_at(9_000.0, 1.0); // before the first request: no row of its own
        b.vusers_at(10_100.0, 2.0);
        b.vusers_at(10_900.0, 3.0); // the last value in an interval wins
        b.add(&rec(10_500.0, 1, None));
        b.add(&rec(12_700.0, 1, None));
        b.vusers_at(12_300.0, 5.0);
        let out = b.finish();
        let vus: Vec<f64> = out.series.intervals.iter().map(|i| i.vusers).collect();
        assert_eq!(vus, [3.0, 0.0, 5.0]);
    }

    #[test]
    fn edges_are_cut_to_the_traffic_so_tps_is_per_second_of_it() {
        // One request after the other, 100 ms each, from 0.70 s to 5.30 s: the calendar
        // seconds 0 and 5 hold 0.3 s of traffic each.
        let mut b = Bucketer::new(1.0);
        for i in 0..46 {
            b.add(&rec(700.0 + i as f64 * 100.0, 100, None));
        }
        let out = b.finish();
        let tps: Vec<f64> = out.series.intervals.iter().map(|r| r.tps).collect();
        assert_eq!(
            out.series.intervals.len(),
            4,
            "both slivers are folded into their neighbours"
        );
        assert_eq!(out.series.tests(), 46);
        for t in &tps {
            assert!((t - 10.0).abs() < 0.1, "{tps:?}");
        }
        let span: f64 = out.series.intervals.iter().map(|r| r.period_s).sum();
        assert!((span - 4.6).abs() < 1e-9, "{span}");
        assert!((out.series.intervals[1].start_s - 1.3).abs() < 1e-9);
    }

    #[test]
    fn whole_second_stamps_leave_the_edges_out_of_tps() {
        let mut b = Bucketer::new(1.0);
        b.whole_second_stamps();
        for s in 0..5 {
            for _ in 0..if s == 0 || s == 4 { 3 } else { 10 } {
                b.add(&rec(s as f64 * 1000.0, 1, None));
            }
        }
        let out = b.finish();
        let tps: Vec<f64> = out.series.intervals.iter().map(|r| r.tps).collect();
        assert!(
            tps[0].is_nan() && tps[4].is_nan() && tps[1..4] == [10.0, 10.0, 10.0],
            "{tps:?}"
        );
        assert_eq!(out.series.tests(), 36, "the edges still count");
        assert!(
            matches!(out.input_notes[..], [InputNote::EdgesUnknown { .. }]),
            "{:?}",
            out.input_notes
        );
    }

    #[test]
    fn successes_without_a_first_byte_time_are_not_averaged_in_as_zero() {
        let mut b = Bucketer::new(1.0);
        b.add(&rec(0.0, 10, None));
        b.add(&RequestRecord {
            ttfb_us: None,
            ..rec(100.0, 30, None)
        });
        b.add(&RequestRecord {
            ttfb_us: None,
            ..rec(1_600.0, 30, None)
        });
        assert_eq!(b.ttfb_missing(), 2);
        let out = b.finish();
        assert_eq!(out.series.intervals[0].mttfb_ms, 10.0);
        assert!(out.series.intervals[1].mttfb_ms.is_nan());
        assert_eq!(out.series.intervals[1].mean_test_time_ms, 30.0);
    }

    /// The rows and the run's histograms of `b`, printed (bit for bit).
    fn total_of(b: Bucketer) -> (String, usize) {
        let out = b.finish();
        let hists: Vec<_> = out
            .histograms
            .iter()
            .filter(|h| h.key.step.is_none())
            .collect();
        (
            format!(
                "{:?}\n{:?}\n{:?}\n{:?}",
                out.series.intervals, hists, out.errors_by_kind, out.input_notes
            ),
            out.per_label.len(),
        )
    }

    #[test]
    fn a_labelled_total_is_what_adding_every_record_to_it_gives() {
        let mut rng = fastrand::Rng::with_seed(23);
        let records: Vec<(RequestRecord, usize)> = (0..40_000)
            .map(|i| {
                // 5 labels at first; from record 30,000 on, more than MAX_LABELS in all.
                let label = if i < 30_000 {
                    rng.usize(0..5)
                } else {
                    rng.usize(0..80)
                };
                let start = i as f64 * 3.0
                    - if i % 5_000 == 7 {
                        200_000.0
                    } else {
                        rng.f64() * 2_000.0
                    };
                let error = (i % 53 == 0).then_some(ErrorKind::Status);
                let mut r = rec(start, rng.u64(1..400), error);
                r.ttfb_us = (label != 3).then(|| rng.u64(1..100_000));
                r.vusers = Some(rng.u32(1..50) as f64);
                r.status = Some(if error.is_some() { 500 } else { 200 });
                (r, label)
            })
            .collect();
        for n in [20_000, 40_000] {
            let mut plain = Bucketer::new(1.0);
            let mut labelled = Bucketer::new(1.0);
            for (r, label) in &records[..n] {
                plain.add(r);
                labelled.add_labelled(r, &format!("label {label}"));
            }
            let (a, _) = total_of(plain);
            let (b, labels) = total_of(labelled);
            assert_eq!(a, b, "the total of {n} labelled records");
            assert_eq!(
                labels,
                if n == 20_000 { 5 } else { 0 },
                "labels broken down"
            );
        }
        // In parts: each part's labels (and one part's overflow) add up the same, and so do
        // two parts of 30 labels each (60 together: too many, in neither part alone).
        let rising: Vec<(RequestRecord, usize)> = records
            .iter()
            .enumerate()
            .map(|(i, (r, _))| (*r, i * 60 / records.len()))
            .collect();
        for (records, cuts) in [
            (&records, [1, 15_000, 35_000]),
            (&rising, [1, 20_000, 39_999]),
        ] {
            let one = {
                let mut b = Bucketer::new(1.0);
                records
                    .iter()
                    .for_each(|(r, l)| b.add_labelled(r, &format!("label {l}")));
                total_of(b)
            };
            assert_eq!(one.1, 0, "more than {MAX_LABELS} labels in all");
            for cut in cuts {
                let mut first = Bucketer::new(1.0);
                records[..cut]
                    .iter()
                    .for_each(|(r, l)| first.add_labelled(r, &format!("label {l}")));
                let mut second =
                    Bucketer::part(1.0, Locator::Line, first.origin_ms(), first.newest());
                records[cut..]
                    .iter()
                    .for_each(|(r, l)| second.add_labelled(r, &format!("label {l}")));
                first.absorb(second, 0);
                assert_eq!(total_of(first), one, "cut at {cut}");
            }
        }
    }
}
