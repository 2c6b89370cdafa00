//! The per-thread recorder. Every VU on a worker thread records into the same
//! accumulators without locks (they share one thread); at each interval boundary the
//! worker's ticker hands its finished interval to the collector.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use volley_stats::{ErrorKind, IntervalSample};

use crate::client::{Exchange, Failure};

/// Distinct messages kept per error kind.
const MESSAGES_PER_KIND: usize = 5;

/// One worker's part of one interval.
#[derive(Debug)]
pub(crate) struct WorkerPart {
    pub(crate) sample: IntervalSample,
    /// New error messages seen by this worker, (kind, message).
    pub(crate) messages: Vec<(ErrorKind, String)>,
}

/// Accumulators of the intervals a worker has not yet handed over.
#[derive(Debug)]
pub(crate) struct Recorder {
    t0: Instant,
    interval: Duration,
    /// Completions after this index are counted in it (the run's last interval).
    last_index: Option<u64>,
    /// Pending intervals, oldest first; `pending[0].index == first_index`.
    pending: VecDeque<IntervalSample>,
    first_index: u64,
    messages: Vec<(ErrorKind, String)>,
    seen_per_kind: [usize; volley_stats::KINDS],
    open_model: bool,
}

impl Recorder {
    pub(crate) fn new(t0: Instant, interval: Duration, open_model: bool) -> Self {
        Recorder {
            open_model,
            t0,
            interval,
            last_index: None,
            pending: VecDeque::new(),
            first_index: 0,
            messages: Vec::new(),
            seen_per_kind: [0; volley_stats::KINDS],
        }
    }

    fn index_of(&self, at: Instant) -> u64 {
        let i = (at.saturating_duration_since(self.t0).as_nanos() / self.interval.as_nanos()) as u64;
        self.last_index.map_or(i, |l| i.min(l)).max(self.first_index)
    }

    fn new_sample(&self, index: u64) -> IntervalSample {
        if self.open_model { IntervalSample::new_open(index) } else { IntervalSample::new(index) }
    }

    fn slot(&mut self, at: Instant) -> &mut IntervalSample {
        let idx = self.index_of(at);
        while self.first_index + (self.pending.len() as u64) <= idx {
            let next = self.first_index + self.pending.len() as u64;
            let sample = self.new_sample(next);
            self.pending.push_back(sample);
        }
        &mut self.pending[(idx - self.first_index) as usize]
    }

    /// Records a completed exchange; `ok` says whether its status was expected.
    pub(crate) fn record_exchange(&mut self, ex: &Exchange, ok: bool) {
        let s = self.slot(Instant::now());
        if ex.status >= 400 {
            s.counts.response_errors += 1;
        }
        if ex.reconnected {
            s.counts.reconnects += 1;
        }
        if ok {
            // Open model: from the due time; the actual-send figures are kept beside.
            s.record_success(ex.ttfb_us + ex.queued_us, ex.total_us + ex.queued_us, ex.connect_us, ex.bytes);
            s.record_actual(ex.ttfb_us, ex.total_us);
            s.counts.tls_sum_us += ex.tls_us;
        } else {
            s.record_error(ErrorKind::Status);
            self.note(ErrorKind::Status, format!("HTTP {}", ex.status));
        }
    }

    /// Records a failed request.
    pub(crate) fn record_failure(&mut self, f: Failure) {
        self.slot(Instant::now()).record_error(f.kind);
        self.note(f.kind, f.message);
    }

    fn note(&mut self, kind: ErrorKind, message: String) {
        let seen = &mut self.seen_per_kind[kind.index()];
        if *seen < MESSAGES_PER_KIND && !self.messages.iter().any(|(k, m)| *k == kind && *m == message) {
            *seen += 1;
            self.messages.push((kind, message));
        }
    }

    /// Counts an arrival that waited for a free VU (`late`) or was never sent (`dropped`),
    /// in the interval it was due.
    pub(crate) fn record_arrival_outcome(&mut self, due: Instant, late: bool, dropped: bool) {
        let s = self.slot(due);
        s.counts.late += u64::from(late);
        s.counts.dropped += u64::from(dropped);
    }

    /// Notes the generator's own delay in dispatching an arrival.
    pub(crate) fn record_sched_lag(&mut self, due: Instant, lag: Duration) {
        let s = self.slot(due);
        s.counts.sched_lag_max_us = s.counts.sched_lag_max_us.max(lag.as_micros() as u64);
    }

    /// From now on, completions later than interval `last` count in `last`.
    pub(crate) fn clamp_to(&mut self, last: u64) {
        self.last_index = Some(last);
    }

    /// Hands over interval `index` (empty if nothing completed in it). Intervals must be
    /// taken in order.
    pub(crate) fn take(&mut self, index: u64) -> WorkerPart {
        debug_assert_eq!(index, self.first_index);
        let sample = match self.pending.front() {
            Some(s) if s.index == index => self.pending.pop_front().expect("front exists"),
            _ => self.new_sample(index),
        };
        self.first_index = index + 1;
        WorkerPart { sample, messages: std::mem::take(&mut self.messages) }
    }
}

impl Recorder {
    /// Hands over everything not yet taken, from interval `from` on, as one part (the
    /// run's last interval, with what completed in its grace period).
    pub(crate) fn take_rest(&mut self, from: u64) -> WorkerPart {
        let mut merged = self.take(from);
        while let Some(s) = self.pending.pop_front() {
            merged.sample.merge(&s);
        }
        merged
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex() -> Exchange {
        Exchange { status: 200, ttfb_us: 100, total_us: 200, connect_us: 0, tls_us: 0, queued_us: 0, bytes: 5, reconnected: false }
    }

    #[test]
    fn intervals_are_handed_over_in_order_and_clamped() {
        let t0 = Instant::now() - Duration::from_millis(2500);
        let mut r = Recorder::new(t0, Duration::from_secs(1), false);
        r.record_exchange(&ex(), true); // lands in interval 2
        assert_eq!(r.take(0).sample.counts.tests, 0);
        assert_eq!(r.take(1).sample.counts.tests, 0);
        r.clamp_to(2);
        r.record_failure(Failure { kind: ErrorKind::Reset, message: "reset".into() });
        let p = r.take(2);
        assert_eq!((p.sample.counts.tests, p.sample.counts.errors), (1, 1));
        assert_eq!(p.messages, vec![(ErrorKind::Reset, "reset".to_string())]);
    }

    #[test]
    fn keeps_a_few_distinct_messages() {
        let mut r = Recorder::new(Instant::now(), Duration::from_secs(1), false);
        for i in 0..20 {
            r.record_failure(Failure { kind: ErrorKind::Connect, message: format!("m{}", i % 7) });
        }
        let p = r.take(0);
        assert_eq!(p.sample.counts.errors, 20);
        assert_eq!(p.messages.len(), MESSAGES_PER_KIND);
    }
}
