//! The per-thread recorder. Every VU on a worker thread records into the same
//! accumulators without locks (they share one thread): per interval, one sample for the
//! whole run and one per scenario step. The worker does not flush on its own: at each
//! interval boundary the conductor sends every worker `Flush(k)` on the command channel,
//! the worker answers with its part of interval `k` (`Recorder::take`, a `WorkerPart`),
//! and the conductor merges the parts. At `Finish(last)` everything completed so far goes
//! over as interval `last` (`take_rest`), and what completes in the grace period as one more
//! part, the drain (`drain_into`).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use volley_stats::{ErrorKind, ErrorMessage, IntervalSample, MESSAGES_PER_STEP};

use crate::client::Exchange;
use crate::failure::Failure;

/// One worker's part of one interval.
#[derive(Debug)]
pub(crate) struct WorkerPart {
    pub(crate) sample: IntervalSample,
    /// The same, per scenario step (empty for single-request runs).
    pub(crate) steps: Vec<IntervalSample>,
    /// New error messages seen by this worker.
    pub(crate) messages: Vec<ErrorMessage>,
}

/// A request on the wire. If it is dropped before [`InFlight::done`] — the run's grace
/// period ended and its VU was aborted — the request is recorded as `unfinished`, so a
/// server that never answers cannot make a run look error-free.
pub(crate) struct InFlight<'a> {
    recorder: &'a std::cell::RefCell<Recorder>,
    step: Option<usize>,
    sent: Instant,
    armed: bool,
}

impl<'a> InFlight<'a> {
    pub(crate) fn new(recorder: &'a std::cell::RefCell<Recorder>, step: Option<usize>) -> Self {
        Self::sent_at(recorder, step, Instant::now())
    }

    /// A request sent at `sent`, a clock reading its caller has taken anyway (the request's
    /// start): one clock read per request fewer.
    pub(crate) fn sent_at(
        recorder: &'a std::cell::RefCell<Recorder>,
        step: Option<usize>,
        sent: Instant,
    ) -> Self {
        InFlight {
            recorder,
            step,
            sent,
            armed: true,
        }
    }

    /// The request ended (answered or failed) and is recorded as such: how long it took.
    pub(crate) fn done(self) -> Duration {
        self.done_at(Instant::now())
    }

    /// [`InFlight::done`] with the end read by the caller.
    pub(crate) fn done_at(mut self, end: Instant) -> Duration {
        self.armed = false;
        end.saturating_duration_since(self.sent)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.armed
            && let Ok(mut rec) = self.recorder.try_borrow_mut()
        {
            let waited = self.sent.elapsed();
            rec.record_unfinished(self.step, waited);
        }
    }
}

/// Accumulators of the intervals a worker has not yet handed over.
#[derive(Debug)]
pub(crate) struct Recorder {
    t0: Instant,
    interval: Duration,
    /// Completions after this index are counted in it (the run's last interval).
    last_index: Option<u64>,
    /// Pending intervals, oldest first; `pending[0].all.index == first_index`.
    pending: VecDeque<Slot>,
    /// Scenario step names, by step id (for error messages); empty without a scenario.
    step_names: std::sync::Arc<[String]>,
    first_index: u64,
    /// The interval the last completion fell in, `[start, end)`, so that the next one in
    /// the same interval finds its index without a 128-bit division.
    cached: (u64, Instant, Instant),
    messages: Vec<ErrorMessage>,
    /// Messages kept so far, by (step, kind); the run as a whole is step `usize::MAX`.
    seen: std::collections::HashMap<(usize, usize), usize>,
    open_model: bool,
    /// The VUs share connections (`--connections`): each request's wait for one is kept.
    pooled: bool,
}

/// One interval: the whole run and each step.
#[derive(Debug)]
struct Slot {
    all: IntervalSample,
    steps: Vec<IntervalSample>,
}

impl Recorder {
    pub(crate) fn new(
        t0: Instant,
        interval: Duration,
        open_model: bool,
        step_names: std::sync::Arc<[String]>,
    ) -> Self {
        Recorder {
            step_names,
            open_model,
            pooled: false,
            t0,
            interval,
            last_index: None,
            pending: VecDeque::new(),
            first_index: 0,
            cached: (0, t0, t0),
            messages: Vec::new(),
            seen: std::collections::HashMap::new(),
        }
    }

    fn index_of(&mut self, at: Instant) -> u64 {
        let (cached, start, end) = self.cached;
        let i = if start <= at && at < end {
            cached
        } else {
            let i = (at.saturating_duration_since(self.t0).as_nanos() / self.interval.as_nanos())
                as u64;
            let start = u32::try_from(i)
                .ok()
                .and_then(|k| self.interval.checked_mul(k))
                .and_then(|d| self.t0.checked_add(d));
            if let Some(start) = start
                && let Some(end) = start.checked_add(self.interval)
            {
                self.cached = (i, start, end);
            }
            i
        };
        self.last_index
            .map_or(i, |l| i.min(l))
            .max(self.first_index)
    }

    fn new_sample(&self, index: u64) -> IntervalSample {
        if self.open_model {
            IntervalSample::new_open(index)
        } else {
            IntervalSample::new(index)
        }
    }

    fn new_slot(&self, index: u64) -> Slot {
        Slot {
            all: self.new_sample(index),
            steps: (0..self.step_names.len())
                .map(|_| self.new_sample(index))
                .collect(),
        }
    }

    fn slot(&mut self, at: Instant) -> &mut Slot {
        let idx = self.index_of(at);
        while self.first_index + (self.pending.len() as u64) <= idx {
            let next = self.first_index + self.pending.len() as u64;
            let slot = self.new_slot(next);
            self.pending.push_back(slot);
        }
        &mut self.pending[(idx - self.first_index) as usize]
    }

    /// Applies `f` to the run's sample of the current interval and to the step's.
    fn apply(&mut self, step: Option<usize>, f: impl Fn(&mut IntervalSample)) {
        self.apply_at(Instant::now(), step, f);
    }

    /// Applies `f` to the run's sample of the interval of `at` and to the step's.
    fn apply_at(&mut self, at: Instant, step: Option<usize>, f: impl Fn(&mut IntervalSample)) {
        let slot = self.slot(at);
        f(&mut slot.all);
        if let Some(s) = step.and_then(|i| slot.steps.get_mut(i)) {
            f(s);
        }
    }

    /// Records a completed exchange; `ok` says whether its status was expected.
    pub(crate) fn record_exchange(&mut self, step: Option<usize>, ex: &Exchange, ok: bool) {
        self.record_exchange_at(Instant::now(), step, ex, ok);
    }

    /// [`Recorder::record_exchange`] in the interval of `end`, the exchange's end as its
    /// client read it (no clock read of its own).
    pub(crate) fn record_exchange_at(
        &mut self,
        end: Instant,
        step: Option<usize>,
        ex: &Exchange,
        ok: bool,
    ) {
        let pooled = self.pooled;
        self.apply_at(end, step, |s| {
            if ex.status >= 400 {
                s.counts.response_errors += 1;
            }
            if ex.reconnected {
                s.counts.reconnects += 1;
            }
            if ok {
                // Open model: from the due time; the actual-send figures are kept beside.
                s.record_success(
                    ex.ttfb_us + ex.queued_us,
                    ex.total_us + ex.queued_us,
                    ex.connect_us,
                    ex.bytes,
                );
                s.record_actual(ex.ttfb_us, ex.total_us);
                s.counts.tls_sum_us += ex.tls_us;
                s.counts.pool_wait_sum_us += ex.wait_us;
                if pooled {
                    s.record_pool_wait(ex.wait_us);
                }
            } else {
                s.record_error_after(ErrorKind::Status, ex.total_us + ex.queued_us);
            }
        });
        if !ok {
            self.note(step, ErrorKind::Status, format!("HTTP {}", ex.status));
        }
    }

    /// Records a failed request (or a failed check on a response).
    pub(crate) fn record_failure(&mut self, step: Option<usize>, f: Failure) {
        self.apply(step, |s| s.record_error(f.kind));
        self.note(step, f.kind, f.message);
    }

    /// Records a request that failed after `took_us` (from its due time in an open model).
    pub(crate) fn record_failure_after(&mut self, step: Option<usize>, f: Failure, took_us: u64) {
        self.apply(step, |s| s.record_error_after(f.kind, took_us));
        self.note(step, f.kind, f.message);
    }

    /// Keeps each request's wait for a shared connection (`--connections`).
    pub(crate) fn set_pooled(&mut self, pooled: bool) {
        self.pooled = pooled;
    }

    /// Records a request that had no response when the grace period ended, after `waited`:
    /// an error of kind `unfinished`, its wait in the run's `unfinished` histogram.
    pub(crate) fn record_unfinished(&mut self, step: Option<usize>, waited: Duration) {
        let us = waited.as_micros() as u64;
        let slot = self.slot(Instant::now());
        slot.all.record_unfinished(us);
        if let Some(s) = step.and_then(|i| slot.steps.get_mut(i)) {
            s.record_error(ErrorKind::Unfinished);
        }
        self.note(
            step,
            ErrorKind::Unfinished,
            "no response before the run's grace period ended".to_string(),
        );
    }

    /// Records a step that could not be built: nothing was sent, so it is neither a test
    /// nor an error; it is counted as `not_sent` and its message kept.
    pub(crate) fn record_not_sent(&mut self, step: usize, why: String) {
        self.apply(Some(step), |s| s.record_not_sent());
        self.note(Some(step), ErrorKind::NotSent, why);
    }

    /// Records a scenario iteration that ran through every step.
    pub(crate) fn record_iteration(&mut self, took: Duration) {
        self.slot(Instant::now())
            .all
            .record_iteration(took.as_micros() as u64);
    }

    /// Counts stream events (SSE events, WebSocket messages) received by a step.
    pub(crate) fn record_events(&mut self, step: usize, n: u64) {
        self.apply(Some(step), |s| s.counts.events += n);
    }

    fn note(&mut self, step: Option<usize>, kind: ErrorKind, text: String) {
        let message = ErrorMessage {
            kind,
            step: step.and_then(|i| self.step_names.get(i)).cloned(),
            text,
        };
        let seen = self
            .seen
            .entry((step.unwrap_or(usize::MAX), kind.index()))
            .or_default();
        if *seen < MESSAGES_PER_STEP && !self.messages.contains(&message) {
            *seen += 1;
            self.messages.push(message);
        }
    }

    /// Counts an arrival that waited for a free VU (`late`) or was never sent (`dropped`),
    /// in the interval it was due.
    pub(crate) fn record_arrival_outcome(&mut self, due: Instant, late: bool, dropped: bool) {
        let s = &mut self.slot(due).all;
        s.counts.late += u64::from(late);
        s.counts.dropped += u64::from(dropped);
    }

    /// Notes the generator's own delay in dispatching an arrival.
    pub(crate) fn record_sched_lag(&mut self, due: Instant, lag: Duration) {
        self.slot(due).all.record_sched_lag(lag.as_micros() as u64);
    }

    /// Notes how late the worker's event loop woke (closed model), in the histogram and the
    /// interval's largest delay that an open model's dispatch delays fill: every run's
    /// generator health has its own delay's p50 / p99 / max.
    pub(crate) fn record_loop_lag(&mut self, due: Instant, lag: Duration) {
        self.record_sched_lag(due, lag);
    }

    /// From now on, completions later than interval `last` count in `last`.
    #[cfg(test)]
    pub(crate) fn clamp_to(&mut self, last: u64) {
        self.last_index = Some(last);
    }

    /// From now on (the run stopped and everything before was taken), every completion
    /// counts in interval `drain`, the run's drain after its last interval.
    pub(crate) fn drain_into(&mut self, drain: u64) {
        debug_assert!(self.pending.is_empty(), "take the stop's part first");
        self.first_index = drain;
        self.last_index = Some(drain);
    }

    /// Hands over interval `index` (empty if nothing completed in it). Intervals must be
    /// taken in order.
    pub(crate) fn take(&mut self, index: u64) -> WorkerPart {
        debug_assert_eq!(index, self.first_index);
        let slot = match self.pending.front() {
            Some(s) if s.all.index == index => self.pending.pop_front().expect("front exists"),
            _ => self.new_slot(index),
        };
        self.first_index = index + 1;
        WorkerPart {
            sample: slot.all,
            steps: slot.steps,
            messages: std::mem::take(&mut self.messages),
        }
    }
}

impl WorkerPart {
    /// Counts the part (and its steps) as interval `index`.
    pub(crate) fn set_index(&mut self, index: u64) {
        self.sample.index = index;
        for s in &mut self.steps {
            s.index = index;
        }
    }
}

impl Recorder {
    /// Hands over everything not yet taken, from interval `from` on, as one part (the
    /// run's last interval, with what completed in its grace period).
    pub(crate) fn take_rest(&mut self, from: u64) -> WorkerPart {
        let mut merged = self.take(from);
        while let Some(s) = self.pending.pop_front() {
            merged.sample.merge(&s.all);
            for (m, s) in merged.steps.iter_mut().zip(&s.steps) {
                m.merge(s);
            }
        }
        merged
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex() -> Exchange {
        Exchange {
            status: 200,
            ttfb_us: 100,
            total_us: 200,
            connect_us: 0,
            tls_us: 0,
            queued_us: 0,
            bytes: 5,
            reconnected: false,
            wait_us: 0,
        }
    }

    #[test]
    fn intervals_are_handed_over_in_order_and_clamped() {
        let t0 = Instant::now() - Duration::from_millis(2500);
        let mut r = Recorder::new(t0, Duration::from_secs(1), false, Vec::new().into());
        r.record_exchange(None, &ex(), true); // lands in interval 2
        assert_eq!(r.take(0).sample.counts.tests, 0);
        assert_eq!(r.take(1).sample.counts.tests, 0);
        r.clamp_to(2);
        r.record_failure(
            None,
            Failure {
                kind: ErrorKind::Reset,
                message: "reset".into(),
            },
        );
        let p = r.take(2);
        assert_eq!((p.sample.counts.tests, p.sample.counts.errors), (1, 1));
        assert_eq!(
            p.messages,
            vec![ErrorMessage {
                kind: ErrorKind::Reset,
                step: None,
                text: "reset".into()
            }]
        );
    }

    #[test]
    fn the_cached_interval_gives_the_index_the_division_gives() {
        let t0 = Instant::now() + Duration::from_secs(1);
        let interval = Duration::from_millis(100);
        let mut r = Recorder::new(t0, interval, false, Vec::new().into());
        let step = interval.as_nanos() as u64;
        let mut offsets = vec![0, 1, step - 1, step, step + 1, 2 * step - 1, 2 * step, 0];
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for i in 0..4000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Runs of nearby instants (the cache's case) and jumps anywhere, back and forth.
            let base = if i % 8 == 0 {
                x % (50 * step)
            } else {
                offsets[offsets.len() - 1]
            };
            offsets.push(base + x % (step / 4));
        }
        for ns in offsets {
            let at = t0 + Duration::from_nanos(ns);
            assert_eq!(r.index_of(at), ns / step, "{ns} ns after t0");
        }
        // Before t0 (a completion stamped just before the run's start) is interval 0.
        assert_eq!(r.index_of(t0 - Duration::from_millis(1)), 0);
        assert_eq!(r.index_of(t0 + Duration::from_nanos(3 * step)), 3);
    }

    #[test]
    fn keeps_a_few_distinct_messages() {
        let mut r = Recorder::new(
            Instant::now(),
            Duration::from_secs(1),
            false,
            Vec::new().into(),
        );
        for i in 0..20 {
            r.record_failure(
                None,
                Failure {
                    kind: ErrorKind::Connect,
                    message: format!("m{}", i % 7),
                },
            );
        }
        let p = r.take(0);
        assert_eq!(p.sample.counts.errors, 20);
        assert_eq!(p.messages.len(), MESSAGES_PER_STEP);
    }

    #[test]
    fn each_step_keeps_its_own_first_messages() {
        let mut r = Recorder::new(
            Instant::now(),
            Duration::from_secs(1),
            false,
            vec!["a".to_string(), "b".to_string()].into(),
        );
        for i in 0..10 {
            r.record_failure(
                Some(0),
                Failure {
                    kind: ErrorKind::Check,
                    message: format!("a{i}"),
                },
            );
        }
        r.record_failure(
            Some(1),
            Failure {
                kind: ErrorKind::Check,
                message: "b0".into(),
            },
        );
        let p = r.take(0);
        assert_eq!(
            p.messages.len(),
            MESSAGES_PER_STEP + 1,
            "step b's first message is kept after step a's five"
        );
        assert_eq!(p.messages.last().unwrap().to_string(), "[b] b0");
    }

    #[test]
    fn steps_count_in_their_row_and_in_the_total() {
        let mut r = Recorder::new(
            Instant::now(),
            Duration::from_secs(1),
            false,
            vec!["a".to_string(), "b".to_string()].into(),
        );
        r.record_exchange(Some(0), &ex(), true);
        r.record_exchange(Some(1), &ex(), true);
        r.record_failure(
            Some(1),
            Failure {
                kind: ErrorKind::Check,
                message: "`$.x` matched nothing".into(),
            },
        );
        r.record_events(1, 3);
        let p = r.take(0);
        assert_eq!(
            (
                p.sample.counts.tests,
                p.sample.counts.errors,
                p.sample.counts.events
            ),
            (2, 1, 3)
        );
        assert_eq!((p.steps[0].counts.tests, p.steps[0].counts.errors), (1, 0));
        assert_eq!(
            (
                p.steps[1].counts.tests,
                p.steps[1].counts.errors,
                p.steps[1].counts.events
            ),
            (1, 1, 3)
        );
        assert_eq!(
            p.messages,
            vec![ErrorMessage {
                kind: ErrorKind::Check,
                step: Some("b".into()),
                text: "`$.x` matched nothing".into()
            }]
        );
    }
}
