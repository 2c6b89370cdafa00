//! Server-sent event streams: a scenario step opens one on a connection of its own and
//! reads it while the flow goes on. Events are counted as they arrive by a sans-IO parser:
//! an event is dispatched at the blank line that ends it, when it carried a field (comments —
//! `:` lines, heartbeats — are not events), as the HTML standard's event-stream parser does.

use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;
use volley_scenario::Scenario;
use volley_stats::ErrorKind;

use crate::client::{Exchange, PreparedRequest};
use crate::context::WorkerContext;
use crate::dial::{ConnectTimes, dial, micros};
use crate::failure::Failure;
use crate::h1::{self, Head, Stream};

/// Splits a byte stream into lines and counts dispatched events.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    line: Vec<u8>,
    /// The event being read has a field.
    pending: bool,
    /// The previous chunk ended with `\r` (a `\r\n` may straddle chunks).
    after_cr: bool,
}

impl SseParser {
    /// Feeds bytes; returns how many events they completed.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> u64 {
        let mut events = 0;
        for &b in bytes {
            if std::mem::take(&mut self.after_cr) && b == b'\n' {
                continue;
            }
            match b {
                b'\r' | b'\n' => {
                    self.after_cr = b == b'\r';
                    events += u64::from(self.end_line());
                }
                _ if self.line.len() < 1 << 20 => self.line.push(b),
                _ => {}
            }
        }
        events
    }

    /// Ends the current line; true when it dispatched an event.
    fn end_line(&mut self) -> bool {
        if self.line.is_empty() {
            return std::mem::take(&mut self.pending);
        }
        if self.line[0] != b':' {
            self.pending = true;
        }
        self.line.clear();
        false
    }
}

/// One open event stream of one iteration.
pub(crate) struct SseStream {
    pub(crate) ctx: Rc<WorkerContext>,
    /// The step.
    pub(crate) id: usize,
    /// Close after this many events.
    pub(crate) want: Option<u64>,
    /// Close after this long.
    pub(crate) limit: Option<Duration>,
    /// For the connection and the response head.
    pub(crate) open_timeout: Duration,
    /// Cancelled when the iteration ends or the run is aborted (a child of its abort).
    pub(crate) stop: CancellationToken,
    /// Masks secrets in messages.
    pub(crate) redact: Arc<Scenario>,
}

/// An open stream: the connection, its set-up times and the response head, with the
/// bytes read past the head.
struct Opened {
    stream: Stream,
    times: ConnectTimes,
    head: Head,
    buf: Vec<u8>,
    /// The response says `Content-Type: text/event-stream`.
    is_stream: bool,
}

/// Connects, sends `req` and reads the response head, within `timeout`.
async fn open(
    ctx: Rc<WorkerContext>,
    req: PreparedRequest,
    timeout: Duration,
) -> Result<Opened, Failure> {
    let opening = async {
        let (mut stream, times) = dial(&ctx.target, ctx.stream_tls.as_ref())
            .await
            .map_err(Failure::dial)?;
        stream
            .write_all(req.h1_bytes())
            .await
            .map_err(|e| Failure::io("write", &e))?;
        let mut buf = Vec::new();
        let mut headers = Vec::new();
        let head = h1::read_head(&mut stream, &mut buf, Some(&mut headers))
            .await
            .map_err(Failure::h1)?;
        let is_stream = headers.iter().any(|(k, v)| {
            k.eq_ignore_ascii_case("content-type") && v.contains("text/event-stream")
        });
        Ok(Opened {
            stream,
            times,
            head,
            buf,
            is_stream,
        })
    };
    tokio::time::timeout(timeout, opening)
        .await
        .unwrap_or_else(|_| {
            Err(Failure::new(
                ErrorKind::Timeout,
                format!("no response within {}s", timeout.as_secs_f64()),
            ))
        })
}

impl SseStream {
    /// Opens the stream, reads it until it is done, and records the outcome: time to first
    /// byte (the response head) and time to first event; with `events: N`, fewer than N
    /// events is a failed check, and no event at all is a timeout.
    /// Returns what happened, for `volley check`, and whether it succeeded.
    ///
    /// A held stream is this future for as long as it is open, so it keeps only what
    /// reading needs. Opening (connect, TLS, the request, the response head) runs in a box
    /// freed once the stream is open, and the request goes into it: an `async fn` would keep
    /// the request and `self` twice each (as arguments and as locals) for the stream's life.
    pub(crate) fn run(
        self,
        req: PreparedRequest,
    ) -> impl Future<Output = (String, bool)> + 'static {
        let opening = Box::pin(open(self.ctx.clone(), req, self.open_timeout));
        async move {
            let start = Instant::now();
            let Opened {
                mut stream,
                times,
                head,
                mut buf,
                is_stream,
            } = match opening.await {
                Ok(o) => o,
                Err(f) => {
                    let text = f.message.clone();
                    self.ctx
                        .recorder
                        .borrow_mut()
                        .record_failure(Some(self.id), f);
                    return (text, false);
                }
            };
            let head_us = micros(head.first_byte.saturating_duration_since(start));
            let exchange = |first_event_us: u64, bytes: u64| Exchange {
                status: head.status,
                ttfb_us: head_us,
                total_us: first_event_us,
                connect_us: times.tcp_us + times.tls_us,
                tls_us: times.tls_us,
                queued_us: 0,
                bytes,
                reconnected: false,
                wait_us: 0,
            };
            if !(200..300).contains(&head.status) || !is_stream {
                let what = if is_stream {
                    format!("HTTP {}", head.status)
                } else {
                    format!(
                        "HTTP {} without Content-Type: text/event-stream",
                        head.status
                    )
                };
                if (200..300).contains(&head.status) {
                    self.ctx.recorder.borrow_mut().record_failure(
                        Some(self.id),
                        Failure::new(ErrorKind::Check, what.clone()),
                    );
                } else {
                    self.ctx.recorder.borrow_mut().record_exchange(
                        Some(self.id),
                        &exchange(head_us, 0),
                        false,
                    );
                }
                return (what, false);
            }
            let mut parser = SseParser::default();
            let (mut events, mut bytes, mut first_event) = (0u64, 0u64, None::<Instant>);
            let mut sink = |chunk: &[u8]| {
                bytes += chunk.len() as u64;
                let n = parser.feed(chunk);
                if n > 0 {
                    first_event.get_or_insert_with(Instant::now);
                    events += n;
                    self.ctx.recorder.borrow_mut().record_events(self.id, n);
                }
                self.want.is_none_or(|w| events < w)
            };
            let reading = h1::read_body(
                &mut stream,
                &mut buf,
                head.framing,
                h1::Idle::Release,
                &mut sink,
            );
            let limit = self
                .limit
                .map_or(Duration::MAX, |l| l.saturating_sub(start.elapsed()));
            let why = tokio::select! {
                r = reading => match r {
                    Ok(_) if self.want.is_some_and(|w| events >= w) => "enough events",
                    Ok(_) => "the server closed the stream",
                    Err(_) => "the stream failed",
                },
                _ = tokio::time::sleep(limit) => "the step's timeout",
                // The iteration's token is a child of the run's abort: one future for both.
                _ = self.stop.cancelled() => if self.ctx.shared.abort.is_cancelled() { "the run was aborted" } else { "the iteration ended" },
            };
            drop((stream, buf));
            let need = self.want.unwrap_or(1);
            if why == "the iteration ended" && self.ctx.shared.stop.is_cancelled() && events < need
            {
                // The run stopped mid-iteration: the stream was cut short, not failed.
                return (
                    format!("{events} events; cut short by the end of the run"),
                    true,
                );
            }
            let mut rec = self.ctx.recorder.borrow_mut();
            let first = first_event.map_or_else(
                || "none".to_string(),
                |f| format!("first after {:.1} ms", (f - start).as_secs_f64() * 1000.0),
            );
            let text = format!(
                "HTTP {}: {events} events ({first}); closed by {why}",
                head.status
            );
            match first_event {
                Some(f) if events >= need => {
                    rec.record_exchange(Some(self.id), &exchange(micros(f - start), bytes), true);
                    return (text, true);
                }
                Some(_) => rec.record_failure(
                    Some(self.id),
                    Failure::new(
                        ErrorKind::Check,
                        self.redact
                            .redact(&format!("{events} of {need} events before {why}")),
                    ),
                ),
                None => rec.record_failure(
                    Some(self.id),
                    Failure::new(ErrorKind::Timeout, format!("no event before {why}")),
                ),
            }
            (text, false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_events_across_chunks_and_line_endings() {
        let mut p = SseParser::default();
        assert_eq!(p.feed(b"data: a\n\n"), 1);
        assert_eq!(p.feed(b": heartbeat\n\n"), 0, "comments are not events");
        assert_eq!(p.feed(b"event: todo\r\ndata: {\"id\":1}\r"), 0);
        assert_eq!(p.feed(b"\n\r\n"), 1, "CRLF split across chunks");
        assert_eq!(p.feed(b"data: x\n"), 0);
        assert_eq!(p.feed(b"\ndata: y\n\ndata: z\n\n"), 3);
        assert_eq!(p.feed(b"\n\n\n"), 0, "blank lines alone dispatch nothing");
    }
}
