//! What the engine records for one interval: raw sums and histograms, mergeable across
//! workers, from which the interval's [`Interval`] row is derived.

use hdrhistogram::Histogram;

use crate::latencies::Latencies;
use crate::latency::{new_histogram, record_us};
use crate::series::Interval;

/// Why a request failed. Transport kinds first, then the ones decided on a response.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The connection could not be made (refused, unreachable, DNS).
    Connect,
    /// The request did not finish within its timeout.
    Timeout,
    /// The connection was reset or closed mid-request.
    Reset,
    /// The TLS handshake failed.
    Tls,
    /// The response had an unexpected HTTP status.
    Status,
    /// Anything else on the wire (malformed response, HTTP/2 protocol errors).
    Protocol,
    /// HTTP/2: the server sent GOAWAY and the request could not be carried (on a new
    /// connection either).
    #[serde(rename = "goaway")]
    GoAway,
    /// HTTP/2: the server reset the request's stream (RST_STREAM).
    #[serde(rename = "rst_stream")]
    StreamReset,
    /// A scenario's check on the response failed (JSONPath condition, body text, events).
    Check,
    /// The request was still waiting for its response when the run's grace period ended.
    Unfinished,
    /// A scenario step could not be built (a template, URL or header failed), so nothing
    /// was sent: counted here, but neither as a test nor as an error.
    NotSent,
    // A gRPC call that ended with a status other than OK: one kind per status code, named
    // `grpc_` and the code in lower case (`grpc_unavailable`), in code order.
    /// gRPC status CANCELLED (1): the call was cancelled.
    GrpcCancelled,
    /// gRPC status UNKNOWN (2).
    GrpcUnknown,
    /// gRPC status INVALID_ARGUMENT (3).
    GrpcInvalidArgument,
    /// gRPC status DEADLINE_EXCEEDED (4).
    GrpcDeadlineExceeded,
    /// gRPC status NOT_FOUND (5).
    GrpcNotFound,
    /// gRPC status ALREADY_EXISTS (6).
    GrpcAlreadyExists,
    /// gRPC status PERMISSION_DENIED (7).
    GrpcPermissionDenied,
    /// gRPC status RESOURCE_EXHAUSTED (8).
    GrpcResourceExhausted,
    /// gRPC status FAILED_PRECONDITION (9).
    GrpcFailedPrecondition,
    /// gRPC status ABORTED (10).
    GrpcAborted,
    /// gRPC status OUT_OF_RANGE (11).
    GrpcOutOfRange,
    /// gRPC status UNIMPLEMENTED (12).
    GrpcUnimplemented,
    /// gRPC status INTERNAL (13).
    GrpcInternal,
    /// gRPC status UNAVAILABLE (14).
    GrpcUnavailable,
    /// gRPC status DATA_LOSS (15).
    GrpcDataLoss,
    /// gRPC status UNAUTHENTICATED (16).
    GrpcUnauthenticated,
}

/// How many [`ErrorKind`]s there are.
pub const KINDS: usize = 27;

impl ErrorKind {
    /// Every kind, in column order.
    pub const ALL: [ErrorKind; KINDS] = [
        ErrorKind::Connect,
        ErrorKind::Timeout,
        ErrorKind::Reset,
        ErrorKind::Tls,
        ErrorKind::Status,
        ErrorKind::Protocol,
        ErrorKind::GoAway,
        ErrorKind::StreamReset,
        ErrorKind::Check,
        ErrorKind::Unfinished,
        ErrorKind::NotSent,
        ErrorKind::GrpcCancelled,
        ErrorKind::GrpcUnknown,
        ErrorKind::GrpcInvalidArgument,
        ErrorKind::GrpcDeadlineExceeded,
        ErrorKind::GrpcNotFound,
        ErrorKind::GrpcAlreadyExists,
        ErrorKind::GrpcPermissionDenied,
        ErrorKind::GrpcResourceExhausted,
        ErrorKind::GrpcFailedPrecondition,
        ErrorKind::GrpcAborted,
        ErrorKind::GrpcOutOfRange,
        ErrorKind::GrpcUnimplemented,
        ErrorKind::GrpcInternal,
        ErrorKind::GrpcUnavailable,
        ErrorKind::GrpcDataLoss,
        ErrorKind::GrpcUnauthenticated,
    ];

    /// A short stable name, used in column headers and JSON.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Reset => "reset",
            ErrorKind::Tls => "tls",
            ErrorKind::Status => "status",
            ErrorKind::Protocol => "protocol",
            ErrorKind::GoAway => "goaway",
            ErrorKind::StreamReset => "rst_stream",
            ErrorKind::Check => "check",
            ErrorKind::Unfinished => "unfinished",
            ErrorKind::NotSent => "not_sent",
            ErrorKind::GrpcCancelled => "grpc_cancelled",
            ErrorKind::GrpcUnknown => "grpc_unknown",
            ErrorKind::GrpcInvalidArgument => "grpc_invalid_argument",
            ErrorKind::GrpcDeadlineExceeded => "grpc_deadline_exceeded",
            ErrorKind::GrpcNotFound => "grpc_not_found",
            ErrorKind::GrpcAlreadyExists => "grpc_already_exists",
            ErrorKind::GrpcPermissionDenied => "grpc_permission_denied",
            ErrorKind::GrpcResourceExhausted => "grpc_resource_exhausted",
            ErrorKind::GrpcFailedPrecondition => "grpc_failed_precondition",
            ErrorKind::GrpcAborted => "grpc_aborted",
            ErrorKind::GrpcOutOfRange => "grpc_out_of_range",
            ErrorKind::GrpcUnimplemented => "grpc_unimplemented",
            ErrorKind::GrpcInternal => "grpc_internal",
            ErrorKind::GrpcUnavailable => "grpc_unavailable",
            ErrorKind::GrpcDataLoss => "grpc_data_loss",
            ErrorKind::GrpcUnauthenticated => "grpc_unauthenticated",
        }
    }

    /// The kind of a gRPC status code (1..=16); `None` for OK (0) and unknown numbers.
    pub fn grpc(code: i32) -> Option<ErrorKind> {
        usize::try_from(code)
            .ok()
            .filter(|c| (1..=16).contains(c))
            .map(|c| ErrorKind::ALL[ErrorKind::NotSent.index() + c])
    }

    /// Position in [`ErrorKind::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Distinct error messages kept per scenario step and kind (per kind in a single-request
/// run): by each worker as it records, and by the run directory over the whole run.
pub const MESSAGES_PER_STEP: usize = 5;

/// One error message as a VU saw it: its kind, the scenario step it happened in (if any),
/// and the text. Kept as a record so nothing downstream parses a step back out of text.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ErrorMessage {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// The scenario step's name; `None` for a single-request run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// What happened.
    pub text: String,
}

impl std::fmt::Display for ErrorMessage {
    /// `[step] text`, as reports show it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.step {
            Some(step) => write!(f, "[{step}] {}", self.text),
            None => f.write_str(&self.text),
        }
    }
}

/// Raw per-interval sums, mergeable across workers. Times in microseconds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    /// Successful requests.
    pub tests: u64,
    /// Failed requests, all kinds.
    pub errors: u64,
    /// Failed requests by [`ErrorKind::index`].
    pub errors_by_kind: [u64; KINDS],
    /// Responses with status >= 400 (counted even when the status was expected).
    pub response_errors: u64,
    /// Sum of successful requests' total time, µs.
    pub total_sum_us: u64,
    /// Sum of squares of total time, for the standard deviation.
    pub total_sumsq_us: f64,
    /// Sum of successful requests' time to first byte, µs.
    pub ttfb_sum_us: u64,
    /// Sum of connection set-up time (TCP + TLS) of successful requests, µs.
    pub connect_sum_us: u64,
    /// Sum of the TLS handshake part of that, µs.
    pub tls_sum_us: u64,
    /// Response bytes received (headers excluded) by successful requests.
    pub bytes: u64,
    /// New connections opened after a failure (keep-alive broken).
    pub reconnects: u64,
    /// Open-model arrivals with no free VU.
    pub dropped: u64,
    /// Open-model arrivals that waited for a free VU and were sent late.
    pub late: u64,
    /// Largest delay between an arrival's due time and its dispatch, µs (the generator's
    /// own lag; large values mean it fell behind schedule).
    pub sched_lag_max_us: u64,
    /// The load generator's CPU use over the interval, % of the cores it runs on.
    pub generator_cpu_pct: f64,
    /// Server-sent events and WebSocket messages received (scenario stream steps).
    pub events: u64,
    /// Shared connections (`--connections`): time successful requests waited for a
    /// connection or an HTTP/2 stream before they could be sent, µs; no part of their
    /// TTFB or total.
    pub pool_wait_sum_us: u64,
}

impl Counts {
    /// Counts one successful request.
    pub fn success(&mut self, ttfb_us: u64, total_us: u64, connect_us: u64, bytes: u64) {
        self.tests += 1;
        self.total_sum_us += total_us;
        self.total_sumsq_us += (total_us as f64) * (total_us as f64);
        self.ttfb_sum_us += ttfb_us;
        self.connect_sum_us += connect_us;
        self.bytes += bytes;
    }

    /// Counts one failed request.
    pub fn error(&mut self, kind: ErrorKind) {
        self.errors += 1;
        self.errors_by_kind[kind.index()] += 1;
    }

    /// Adds another sample's sums.
    pub fn merge(&mut self, o: &Counts) {
        self.tests += o.tests;
        self.errors += o.errors;
        for (a, b) in self.errors_by_kind.iter_mut().zip(o.errors_by_kind) {
            *a += b;
        }
        self.response_errors += o.response_errors;
        self.total_sum_us += o.total_sum_us;
        self.total_sumsq_us += o.total_sumsq_us;
        self.ttfb_sum_us += o.ttfb_sum_us;
        self.connect_sum_us += o.connect_sum_us;
        self.tls_sum_us += o.tls_sum_us;
        self.bytes += o.bytes;
        self.reconnects += o.reconnects;
        self.dropped += o.dropped;
        self.late += o.late;
        self.events += o.events;
        self.pool_wait_sum_us += o.pool_wait_sum_us;
        self.sched_lag_max_us = self.sched_lag_max_us.max(o.sched_lag_max_us);
        self.generator_cpu_pct = self.generator_cpu_pct.max(o.generator_cpu_pct);
    }

    /// Mean phase times of successful requests, ms: (TLS handshake, waiting — from the
    /// end of connection set-up to the first byte, receiving — first byte to end of body).
    pub fn phase_means_ms(&self) -> (f64, f64, f64) {
        if self.tests == 0 {
            return (0.0, 0.0, 0.0);
        }
        let n = self.tests as f64 * 1000.0;
        (
            self.tls_sum_us as f64 / n,
            self.ttfb_sum_us.saturating_sub(self.connect_sum_us) as f64 / n,
            self.total_sum_us.saturating_sub(self.ttfb_sum_us) as f64 / n,
        )
    }

    /// Mean wait of successful requests for a shared connection or stream, ms.
    pub fn pool_wait_mean_ms(&self) -> f64 {
        if self.tests == 0 {
            0.0
        } else {
            self.pool_wait_sum_us as f64 / self.tests as f64 / 1000.0
        }
    }

    /// The nGrinder-shaped row for these sums.
    pub fn to_interval(&self, start_s: f64, period_s: f64, vusers: f64) -> Interval {
        let n = self.tests as f64;
        let per_test = |sum_us: u64| {
            if self.tests == 0 {
                0.0
            } else {
                sum_us as f64 / n / 1000.0
            }
        };
        let mean_us = if self.tests == 0 {
            0.0
        } else {
            self.total_sum_us as f64 / n
        };
        let var_us = if self.tests == 0 {
            0.0
        } else {
            (self.total_sumsq_us / n - mean_us * mean_us).max(0.0)
        };
        Interval {
            start_s,
            period_s,
            vusers,
            tests: self.tests,
            errors: self.errors,
            // A row of no length (the drain after a run's stop) has no rate: unknown, which
            // every TPS figure leaves out.
            tps: if period_s > 0.0 {
                n / period_s
            } else {
                f64::NAN
            },
            mean_test_time_ms: mean_us / 1000.0,
            test_time_sd_ms: var_us.sqrt() / 1000.0,
            mttfb_ms: per_test(self.ttfb_sum_us),
            mean_response_length: if self.tests == 0 {
                0.0
            } else {
                self.bytes as f64 / n
            },
            response_bytes_per_second: if period_s > 0.0 {
                self.bytes as f64 / period_s
            } else {
                f64::NAN
            },
            response_errors: self.response_errors,
            mean_resolve_ms: 0.0,
            mean_connect_ms: per_test(self.connect_sum_us),
            dropped: self.dropped,
        }
    }
}

/// What the engine records for one interval: sums and the latencies.
///
/// In an open-model run `ttfb` and `total` are measured from each request's *intended*
/// start (its arrival's due time), and `actual` holds the same from the actual send, so
/// that the coordinated-omission error can be shown beside the honest figure.
///
/// An empty sample allocates nothing, and one with a few requests little ([`Latencies`]):
/// a run keeps one per interval, worker and scenario step.
#[derive(Debug, Clone)]
pub struct IntervalSample {
    /// Index of the interval from the start of the run.
    pub index: u64,
    /// The sums.
    pub counts: Counts,
    /// Time to first byte of successful requests, µs.
    pub ttfb: Latencies,
    /// Total time of successful requests, µs.
    pub total: Latencies,
    /// Open model: (TTFB, total) from the actual send, µs.
    pub actual: Option<Box<(Latencies, Latencies)>>,
    /// Scenarios: how long whole iterations (every step, think times included) took, µs.
    pub iteration: Option<Box<Histogram<u64>>>,
    /// Requests still waiting for their response when the run's grace period ended: how
    /// long each had waited, µs (a lower bound of its latency).
    pub unfinished: Option<Box<Histogram<u64>>>,
    /// Open model: the generator's own delay in dispatching each arrival due in the
    /// interval (from its due time to the moment the worker took it up), µs.
    pub sched_lag: Option<Box<Histogram<u64>>>,
    /// How long each failed request took until it failed, µs (from its due time in an open
    /// model): refusals fail in milliseconds, a wait that timed out at its timeout.
    pub failed: Option<Box<Histogram<u64>>>,
    /// With shared connections (`--connections`): each request's wait for a connection or a
    /// stream, µs (kept out of its TTFB).
    pub pool_wait: Option<Box<Histogram<u64>>>,
}

impl IntervalSample {
    /// An empty sample for interval `index`.
    pub fn new(index: u64) -> Self {
        IntervalSample {
            index,
            counts: Counts::default(),
            ttfb: Latencies::new(),
            total: Latencies::new(),
            actual: None,
            iteration: None,
            unfinished: None,
            sched_lag: None,
            failed: None,
            pool_wait: None,
        }
    }

    /// An empty open-model sample (with the actual-send latencies).
    pub fn new_open(index: u64) -> Self {
        IntervalSample {
            actual: Some(Box::default()),
            ..IntervalSample::new(index)
        }
    }

    /// Records one scenario iteration that ran to its end.
    pub fn record_iteration(&mut self, us: u64) {
        record_us(made(&mut self.iteration), us, 1);
    }

    /// Records a request that had no response when the run's grace period ended, after
    /// waiting `us` (an error of kind `unfinished`).
    pub fn record_unfinished(&mut self, us: u64) {
        self.counts.error(ErrorKind::Unfinished);
        record_us(made(&mut self.unfinished), us, 1);
    }

    /// Records the generator's delay in dispatching one open-model arrival.
    pub fn record_sched_lag(&mut self, us: u64) {
        self.counts.sched_lag_max_us = self.counts.sched_lag_max_us.max(us);
        record_us(made(&mut self.sched_lag), us, 1);
    }

    /// Records the actual-send times of an open-model request.
    pub fn record_actual(&mut self, ttfb_us: u64, total_us: u64) {
        if let Some(a) = self.actual.as_mut() {
            a.0.record(ttfb_us);
            a.1.record(total_us);
        }
    }

    /// Records one successful request.
    pub fn record_success(&mut self, ttfb_us: u64, total_us: u64, connect_us: u64, bytes: u64) {
        self.counts.success(ttfb_us, total_us, connect_us, bytes);
        // Values beyond the histogram's bounds saturate rather than being lost.
        self.ttfb.record(ttfb_us);
        self.total.record(total_us);
    }

    /// Records one failed request.
    pub fn record_error(&mut self, kind: ErrorKind) {
        self.counts.error(kind);
    }

    /// Records one failed request that failed after `us`.
    pub fn record_error_after(&mut self, kind: ErrorKind, us: u64) {
        self.counts.error(kind);
        record_us(made(&mut self.failed), us, 1);
    }

    /// Records a request's wait for a shared connection or stream.
    pub fn record_pool_wait(&mut self, us: u64) {
        record_us(made(&mut self.pool_wait), us, 1);
    }

    /// Counts a step that could not be built and was never sent (not a test, not an error).
    pub fn record_not_sent(&mut self) {
        self.counts.errors_by_kind[ErrorKind::NotSent.index()] += 1;
    }

    /// Adds another worker's sample of the same interval.
    pub fn merge(&mut self, other: &IntervalSample) {
        self.counts.merge(&other.counts);
        self.ttfb.add(&other.ttfb);
        self.total.add(&other.total);
        if let Some(o) = &other.actual {
            let a = self.actual.get_or_insert_with(Box::default);
            a.0.add(&o.0);
            a.1.add(&o.1);
        }
        for (mine, theirs) in [
            (&mut self.iteration, &other.iteration),
            (&mut self.unfinished, &other.unfinished),
            (&mut self.sched_lag, &other.sched_lag),
            (&mut self.failed, &other.failed),
            (&mut self.pool_wait, &other.pool_wait),
        ] {
            if let Some(o) = theirs {
                // Both histograms grow as needed, so adding cannot fail.
                let _ = made(mine).add(o.as_ref());
            }
        }
    }

    /// The nGrinder-shaped row for this sample.
    pub fn to_interval(&self, start_s: f64, period_s: f64, vusers: f64) -> Interval {
        self.counts.to_interval(start_s, period_s, vusers)
    }
}

/// An optional histogram of a sample, made empty on first use.
fn made(h: &mut Option<Box<Histogram<u64>>>) -> &mut Histogram<u64> {
    h.get_or_insert_with(|| Box::new(new_histogram()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_codes_are_kinds_named_as_serialized() {
        assert_eq!(ErrorKind::grpc(14), Some(ErrorKind::GrpcUnavailable));
        assert_eq!(ErrorKind::grpc(1), Some(ErrorKind::GrpcCancelled));
        assert_eq!(ErrorKind::grpc(16), Some(ErrorKind::GrpcUnauthenticated));
        assert_eq!(ErrorKind::grpc(0), None);
        assert_eq!(ErrorKind::grpc(17), None);
        for (i, k) in ErrorKind::ALL.iter().enumerate() {
            assert_eq!(k.index(), i);
            assert_eq!(
                serde_json::to_value(k).unwrap(),
                serde_json::json!(k.name())
            );
        }
        assert_eq!(
            ErrorKind::GrpcDeadlineExceeded.name(),
            "grpc_deadline_exceeded"
        );
    }

    #[test]
    fn row_from_sample() {
        let mut s = IntervalSample::new(0);
        s.record_success(1_000, 2_000, 0, 100);
        s.record_success(3_000, 4_000, 500, 300);
        s.record_error(ErrorKind::Timeout);
        let row = s.to_interval(0.0, 2.0, 5.0);
        assert_eq!(row.tests, 2);
        assert_eq!(row.errors, 1);
        assert_eq!(row.tps, 1.0);
        assert!((row.mttfb_ms - 2.0).abs() < 1e-9);
        assert!((row.mean_test_time_ms - 3.0).abs() < 1e-9);
        assert!((row.test_time_sd_ms - 1.0).abs() < 1e-9);
        assert!((row.mean_connect_ms - 0.25).abs() < 1e-9);
        assert_eq!(row.mean_response_length, 200.0);
        assert_eq!(row.response_bytes_per_second, 200.0);
    }

    #[test]
    fn merge_adds_everything() {
        let mut a = IntervalSample::new(3);
        let mut b = IntervalSample::new(3);
        a.record_success(10, 20, 0, 1);
        b.record_success(30, 40, 0, 1);
        b.record_error(ErrorKind::Connect);
        a.merge(&b);
        assert_eq!(
            (a.counts.tests, a.counts.errors, a.counts.errors_by_kind[0]),
            (2, 1, 1)
        );
        assert_eq!(a.ttfb.len(), 2);
        assert_eq!(a.total.max(), 40);
    }
}
