//! Sending payloads to a receiver off the run's thread: a bounded queue and one sender
//! thread with its own I/O runtime, so the run never waits on the network.
//!
//! Every payload ends up counted once: `sent`, `failed` (the receiver refused it, or could
//! not be reached, after one retry) or `dropped` (the queue was full — the newest payload
//! is the one dropped — or the run ended before it could go out). The first failure and the
//! first drop are printed as warnings; the counts go to run.json.

use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use volley_record::OutputNote;

use crate::error::{Error, Repr};

/// Payloads waiting to be sent at most (a minute of 1 s intervals).
pub const QUEUE: usize = 60;
/// How long one POST may take.
const TIMEOUT: Duration = Duration::from_secs(5);
/// How long the end of a run waits for the queue to drain.
pub const FLUSH_WAIT: Duration = Duration::from_secs(10);

/// One POST's body and content headers.
pub struct Payload {
    pub body: Vec<u8>,
    pub headers: Vec<(&'static str, &'static str)>,
}

enum Msg {
    /// A payload of run `generation` (a run's payloads not sent by its flush are counted
    /// dropped, and are not sent during the next run).
    Send(Payload, u64),
    Flush(std::sync::mpsc::Sender<()>),
}

/// A flush under way: its deadline, and its message until the queue takes it.
struct Flush {
    deadline: Instant,
    waiting: Option<Msg>,
    done: Receiver<()>,
}

#[derive(Default)]
struct Stats {
    sent: u64,
    failed: u64,
    dropped: u64,
    /// Enqueued, not yet sent or failed.
    queued: u64,
    last_error: Option<String>,
    warned_failure: bool,
    warned_drop: bool,
    /// The run whose payloads are sent now.
    generation: u64,
}

/// A receiver's queue and sender thread.
pub struct Sender {
    kind: &'static str,
    /// The URL as notes and warnings show it (no password).
    shown: String,
    tx: SyncSender<Msg>,
    stats: Arc<Mutex<Stats>>,
    flush: Mutex<Option<Flush>>,
}

/// `url` as a receiver's URL: absolute, http or https. `--out` is checked with this when it
/// is parsed, so a bad one fails before any load, here or in `volley k8s manifest`.
pub(crate) fn checked_url(kind: &'static str, url: &str) -> Result<reqwest::Url, Error> {
    let parsed = reqwest::Url::parse(url).map_err(|e| Repr::Url {
        kind,
        url: url.to_string(),
        why: e.to_string(),
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(Repr::Url {
            kind,
            url: url.to_string(),
            why: "only http:// and https:// URLs are supported".into(),
        }
        .into());
    }
    Ok(parsed)
}

impl Sender {
    /// Starts the sender thread for `url`.
    pub fn start(kind: &'static str, url: &str) -> Result<Sender, Error> {
        let parsed = checked_url(kind, url)?;
        let shown = shown_url(&parsed);
        // reqwest is built without a default provider (that would be aws-lc): ring is ours.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .timeout(TIMEOUT)
            // A redirect would turn the POST into a GET without its body (and count it
            // sent); a 3xx is a failure that names the URL to give instead.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Repr::Client(e.to_string()))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Repr::Client(e.to_string()))?;
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
        let stats = Arc::new(Mutex::new(Stats::default()));
        let (s, label) = (stats.clone(), format!("{kind}={shown}"));
        std::thread::Builder::new()
            .name(format!("volley-out-{kind}"))
            .spawn(move || runtime.block_on(run(client, parsed, rx, s, label)))
            .map_err(|e| Repr::Client(e.to_string()))?;
        Ok(Sender {
            kind,
            shown,
            tx,
            stats,
            flush: Mutex::new(None),
        })
    }

    /// Queues a payload; never waits. A full queue drops it (counted, warned once).
    pub fn send(&self, payload: Payload) {
        let generation = self.stats.lock().unwrap().generation;
        match self.tx.try_send(Msg::Send(payload, generation)) {
            Ok(()) => self.stats.lock().unwrap().queued += 1,
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                let mut st = self.stats.lock().unwrap();
                st.dropped += 1;
                if !std::mem::replace(&mut st.warned_drop, true) {
                    eprintln!(
                        "volley: warning: --out {}={}: {QUEUE} payloads waiting, the receiver is too slow: this interval's is dropped (counted in run.json; the run goes on)",
                        self.kind, self.shown
                    );
                }
            }
        }
    }

    /// Starts waiting for what is queued to be sent, without blocking: the run's end starts
    /// every receiver's flush at once ([`Observer::finished`](volley_record::Observer::finished)),
    /// so several slow receivers share one [`FLUSH_WAIT`] instead of adding theirs up.
    pub fn begin_flush(&self) {
        let mut flush = self.flush.lock().unwrap();
        if flush.is_some() {
            return;
        }
        let (done_tx, done) = std::sync::mpsc::channel();
        let msg = Msg::Flush(done_tx);
        let waiting = match self.tx.try_send(msg) {
            Ok(()) => None,
            Err(TrySendError::Full(m)) => Some(m),
            Err(TrySendError::Disconnected(_)) => None,
        };
        *flush = Some(Flush {
            deadline: Instant::now() + FLUSH_WAIT,
            waiting,
            done,
        });
    }

    /// Waits until the flush begun by [`Sender::begin_flush`] (begun here if it was not)
    /// is done or its deadline passes, then returns how sending went since the last note
    /// and starts counting afresh. Payloads still queued after the wait count as dropped,
    /// and are not sent later.
    pub fn flush_note(&self) -> OutputNote {
        self.begin_flush();
        let Flush {
            deadline,
            mut waiting,
            done,
        } = self.flush.lock().unwrap().take().expect("begun above");
        while let Some(m) = waiting.take() {
            match self.tx.try_send(m) {
                Ok(()) => {}
                Err(TrySendError::Full(m)) if Instant::now() < deadline => {
                    waiting = Some(m);
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(_) => break,
            }
        }
        let flushed = done
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .is_ok();
        let mut st = self.stats.lock().unwrap();
        if !flushed && st.queued > 0 {
            st.generation += 1;
            st.dropped += st.queued;
            st.last_error = Some(format!(
                "{} payloads were still waiting {} s after the run ended",
                st.queued,
                FLUSH_WAIT.as_secs()
            ));
            eprintln!(
                "volley: warning: --out {}={}: {}",
                self.kind,
                self.shown,
                st.last_error.as_deref().unwrap_or_default()
            );
            st.queued = 0;
        }
        let note = OutputNote {
            kind: self.kind.to_string(),
            url: self.shown.clone(),
            sent: st.sent,
            failed: st.failed,
            dropped: st.dropped,
            last_error: st.last_error.take(),
        };
        if note.failed + note.dropped > 0 {
            eprintln!(
                "volley: --out {}={}: {} of {} payloads sent, {} failed, {} dropped (run.json `outputs`)",
                self.kind,
                self.shown,
                note.sent,
                note.sent + note.failed + note.dropped,
                note.failed,
                note.dropped
            );
        }
        *st = Stats {
            warned_failure: st.warned_failure,
            warned_drop: st.warned_drop,
            generation: st.generation,
            ..Stats::default()
        };
        note
    }
}

/// The sender thread: POSTs each payload (one retry on a transport error, 429 or 5xx).
async fn run(
    client: reqwest::Client,
    url: reqwest::Url,
    rx: Receiver<Msg>,
    stats: Arc<Mutex<Stats>>,
    label: String,
) {
    loop {
        // Blocking receive on this thread is fine: the runtime has nothing else to do.
        let msg = match rx.recv_timeout(Duration::from_secs(3600)) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let (payload, generation) = match msg {
            // A payload of a run whose flush gave up on it: counted dropped there.
            Msg::Send(_, g) if g != stats.lock().unwrap().generation => continue,
            Msg::Send(p, g) => (p, g),
            Msg::Flush(done) => {
                let _ = done.send(());
                continue;
            }
        };
        let mut outcome = post(&client, &url, &payload).await;
        if let Err((true, _)) = &outcome {
            tokio::time::sleep(Duration::from_millis(250)).await;
            outcome = post(&client, &url, &payload).await;
        }
        let mut st = stats.lock().unwrap();
        if st.generation != generation {
            // Its run's flush gave up while it was being sent, and counted it dropped.
            continue;
        }
        st.queued = st.queued.saturating_sub(1);
        match outcome {
            Ok(()) => st.sent += 1,
            Err((_, why)) => {
                st.failed += 1;
                if !std::mem::replace(&mut st.warned_failure, true) {
                    eprintln!(
                        "volley: warning: --out {label}: {why} (failures are counted in run.json; the run goes on)"
                    );
                }
                st.last_error = Some(why);
            }
        }
    }
}

/// One POST; `Err((retry, why))`.
async fn post(
    client: &reqwest::Client,
    url: &reqwest::Url,
    payload: &Payload,
) -> Result<(), (bool, String)> {
    let mut req = client.post(url.clone()).body(payload.body.clone());
    for (k, v) in &payload.headers {
        req = req.header(*k, *v);
    }
    match req.send().await {
        Ok(resp) if resp.status().is_success() => Ok(()),
        Ok(resp) => {
            let status = resp.status();
            let resp_location = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let text = resp.text().await.unwrap_or_default();
            let retry = status.is_server_error() || status.as_u16() == 429;
            Err((
                retry,
                if status.is_redirection() {
                    format!(
                        "the receiver answered HTTP {status} (to {}): volley does not follow a redirect, which would resend the POST as a GET without its body; give the URL it points to",
                        plain(resp_location.as_deref().unwrap_or("?"))
                    )
                } else {
                    format!("the receiver answered HTTP {status}: {}", plain(&text))
                },
            ))
        }
        Err(e) => Err((true, format!("cannot send: {}", error_chain(&e)))),
    }
}

/// A receiver's text as a terminal may show it: its first 300 characters, on one line,
/// with control characters (an ESC sequence could rewrite the screen) shown escaped.
fn plain(text: &str) -> String {
    text.trim()
        .chars()
        .take(300)
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

/// The URL without its password or credential parameters (one rule: volley_scenario::secret).
fn shown_url(url: &reqwest::Url) -> String {
    volley_scenario::secret::mask_url(url.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_stay_out_of_notes() {
        let u = reqwest::Url::parse("https://me:secret@prom.example/api/v1/write").unwrap();
        assert_eq!(shown_url(&u), "https://me:***@prom.example/api/v1/write");
    }

    #[test]
    fn an_unreachable_receiver_is_counted_as_failed_not_lost() {
        // A port nothing listens on (bound, then closed).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let s = Sender::start(
            "prometheus",
            &format!("http://127.0.0.1:{port}/api/v1/write"),
        )
        .unwrap();
        for _ in 0..3 {
            s.send(Payload {
                body: vec![1, 2, 3],
                headers: vec![],
            });
        }
        let note = s.flush_note();
        assert_eq!(
            (note.sent, note.failed, note.dropped),
            (0, 3, 0),
            "{note:?}"
        );
        assert!(
            note.last_error.as_deref().unwrap().contains("cannot send"),
            "{note:?}"
        );
    }
}
