//! The socket side of a connection: one task per connection on the worker's event loop
//! owns the stream, writes what [`Conn`] queued and feeds it what it reads. VUs open
//! streams on the shared [`Conn`] and wait for their slot to finish; a read that completes
//! several responses stamps them all with one clock read and wakes each VU once.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use bytes::Bytes;
use tokio::io::AsyncWrite;
use volley_stats::ErrorKind;

use super::conn::{Conn, H2Head};
use super::{StreamDone, StreamFailed};
use crate::failure::Failure;
use crate::h1::{self, Capture, Idle, Stream};

/// What the driver and the VUs share.
struct Shared {
    conn: Conn,
    /// The driver's waker: VUs wake it when they queued bytes.
    driver: Option<Waker>,
    /// VUs waiting for a stream slot under the server's limit.
    waiters: VecDeque<Waker>,
    /// Taken out of use: no new streams; the driver ends after the last one.
    retired: bool,
    /// Every handle was dropped: the driver ends after the last stream.
    abandoned: bool,
    /// The driver ended.
    ended: bool,
}

impl Shared {
    fn wake_driver(&self) {
        if let Some(w) = &self.driver {
            w.wake_by_ref();
        }
    }

    /// Wakes the VUs waiting for a slot, when one was freed or the limit or the
    /// connection changed. All of them: a waiter whose VU gave up (a timeout) would
    /// otherwise take a wake meant for one still waiting. There are waiters only while the
    /// server's limit is reached.
    fn wake_waiters(&mut self, freed: usize) {
        if freed > 0 || self.conn.limit_changed || self.retired || self.ended {
            self.conn.limit_changed = false;
            for w in self.waiters.drain(..) {
                w.wake();
            }
        }
    }
}

/// The handles' common part; when the last handle goes, the driver is told.
struct Inner(Rc<RefCell<Shared>>);

impl Drop for Inner {
    fn drop(&mut self) {
        let mut sh = self.0.borrow_mut();
        sh.abandoned = true;
        sh.wake_driver();
    }
}

/// An HTTP/2 connection: a handle to open streams on, cloned among the VUs sharing it.
#[derive(Clone)]
pub(crate) struct Handle(Rc<Inner>);

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sh = self.shared().borrow();
        f.debug_struct("H2Conn")
            .field("open_streams", &sh.conn.active())
            .field("closed", &(sh.ended || sh.retired || sh.conn.is_gone()))
            .finish()
    }
}

impl Handle {
    fn shared(&self) -> &Rc<RefCell<Shared>> {
        &(self.0).0
    }

    /// The connection ended or is going away: open another.
    pub(crate) fn is_closed(&self) -> bool {
        let sh = self.shared().borrow();
        sh.ended || sh.retired || sh.conn.is_gone()
    }

    /// Takes the connection out of use: streams on it finish, new requests open another.
    pub(crate) fn retire(&self) {
        let mut sh = self.shared().borrow_mut();
        sh.retired = true;
        sh.wake_waiters(0);
        sh.wake_driver();
    }
}

/// Starts a connection on `stream` (h2c prior knowledge, or TLS that chose h2): the
/// preface and SETTINGS go out with the first write; the driver runs on this thread's
/// event loop until the connection ends.
pub(crate) fn start(stream: Stream) -> Handle {
    let shared = Rc::new(RefCell::new(Shared {
        conn: Conn::new(),
        driver: None,
        waiters: VecDeque::new(),
        retired: false,
        abandoned: false,
        ended: false,
    }));
    tokio::task::spawn_local(drive(stream, shared.clone()));
    Handle(Rc::new(Inner(shared)))
}

async fn drive(mut stream: Stream, shared: Rc<RefCell<Shared>>) {
    let mut rbuf: Vec<u8> = Vec::new();
    let mut wbuf: Vec<u8> = Vec::new();
    let mut wpos = 0usize;
    let mut flushing = false;
    std::future::poll_fn(|cx| {
        poll_drive(
            cx,
            &mut stream,
            &shared,
            &mut rbuf,
            &mut wbuf,
            &mut wpos,
            &mut flushing,
        )
    })
    .await;
    let mut sh = shared.borrow_mut();
    sh.ended = true;
    sh.wake_waiters(0);
}

/// One turn of the driver: write what is queued, read what came; ready when the
/// connection is over.
fn poll_drive(
    cx: &mut Context<'_>,
    stream: &mut Stream,
    shared: &Rc<RefCell<Shared>>,
    rbuf: &mut Vec<u8>,
    wbuf: &mut Vec<u8>,
    wpos: &mut usize,
    flushing: &mut bool,
) -> Poll<()> {
    let mut sh = shared.borrow_mut();
    if !sh.driver.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
        sh.driver = Some(cx.waker().clone());
    }
    loop {
        // Write everything queued.
        let mut blocked = false;
        loop {
            if *wpos == wbuf.len() {
                wbuf.clear();
                *wpos = 0;
                if sh.conn.out.is_empty() {
                    break;
                }
                std::mem::swap(wbuf, &mut sh.conn.out);
            }
            match Pin::new(&mut *stream).poll_write(cx, &wbuf[*wpos..]) {
                Poll::Ready(Ok(0)) => {
                    return fail(&mut sh, io::ErrorKind::WriteZero.into(), "request");
                }
                Poll::Ready(Ok(n)) => {
                    *wpos += n;
                    *flushing = true;
                }
                Poll::Ready(Err(e)) => return fail(&mut sh, e, "request"),
                Poll::Pending => {
                    blocked = true;
                    break;
                }
            }
        }
        if *flushing && !blocked {
            match Pin::new(&mut *stream).poll_flush(cx) {
                Poll::Ready(Ok(())) => *flushing = false,
                Poll::Ready(Err(e)) => return fail(&mut sh, e, "request"),
                Poll::Pending => {}
            }
        }
        if sh.conn.dead().is_some() && (wbuf.is_empty() || blocked) {
            // A connection error: what we queued (our GOAWAY) went out if it could.
            return Poll::Ready(());
        }
        if (sh.retired || sh.abandoned || sh.conn.is_gone()) && sh.conn.active() == 0 {
            return Poll::Ready(());
        }
        // Read. The buffer is kept between responses (one per connection, as `h2`'s
        // was): releasing it when no stream is open would free and allocate it again for
        // every request of a connection that carries one at a time.
        match h1::poll_fill(cx, stream, rbuf, Idle::Keep) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Err(e)) => return fail(&mut sh, e, "response"),
            Poll::Ready(Ok(0)) => {
                sh.conn.closed(Failure::new(
                    ErrorKind::Reset,
                    "response: the server closed the connection",
                ));
                settle(&mut sh, Instant::now());
                return Poll::Ready(());
            }
            Poll::Ready(Ok(_)) => {
                let used = sh.conn.recv(rbuf);
                rbuf.drain(..used);
                settle(&mut sh, Instant::now());
            }
        }
    }
}

/// The socket failed: every stream on it fails.
fn fail(sh: &mut Shared, e: io::Error, stage: &str) -> Poll<()> {
    sh.conn.closed(Failure::io(stage, &e));
    settle(sh, Instant::now());
    Poll::Ready(())
}

/// After a read: stamps the heads that came and wakes the VUs whose streams finished.
fn settle(sh: &mut Shared, now: Instant) {
    let mut headed = std::mem::take(&mut sh.conn.headed);
    for &i in &headed {
        let s = sh.conn.slot_mut(i);
        if s.first.is_none() {
            s.first = Some(now);
        }
    }
    headed.clear();
    sh.conn.headed = headed;
    let mut finished = std::mem::take(&mut sh.conn.finished);
    let freed = finished.len();
    for &i in &finished {
        if let Some(w) = sh.conn.slot_mut(i).waker.take() {
            w.wake();
        }
    }
    finished.clear();
    sh.conn.finished = finished;
    sh.wake_waiters(freed);
}

/// Releases a stream's slot when the VU's future ends, finished or dropped (a timeout):
/// an open stream is then reset.
struct Guard<'a> {
    shared: &'a Rc<RefCell<Shared>>,
    slot: usize,
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        let mut sh = self.shared.borrow_mut();
        let was_open = !sh.conn.slot(self.slot).finished();
        sh.conn.release(self.slot);
        if was_open {
            sh.wake_waiters(1);
            sh.wake_driver();
        }
    }
}

/// Sends one request as a stream on `conn` and waits for the whole response.
pub(crate) async fn exchange(
    conn: &Handle,
    head: &H2Head,
    body: &Bytes,
    mut capture: Option<&mut Capture>,
) -> Result<StreamDone, StreamFailed> {
    let shared = conn.shared();
    let waited = Instant::now();
    let gone = || super::fail(ErrorKind::GoAway, "request: the connection is closing");
    std::future::poll_fn(|cx| {
        let mut sh = shared.borrow_mut();
        if sh.ended || sh.retired || sh.conn.is_gone() {
            return Poll::Ready(Err(StreamFailed {
                retry: true,
                ..gone()
            }));
        }
        if sh.conn.can_open() {
            return Poll::Ready(Ok(()));
        }
        sh.waiters.push_back(cx.waker().clone());
        Poll::Pending
    })
    .await?;
    let wait_us = crate::dial::micros(waited.elapsed());
    let (want_headers, want_body) = match capture.as_deref_mut() {
        Some(c) => {
            c.clear();
            (c.headers_wanted(), true)
        }
        None => (false, false),
    };
    let slot = {
        let mut sh = shared.borrow_mut();
        let slot = sh
            .conn
            .open(head, body, want_headers, want_body)
            .map_err(|_| StreamFailed {
                retry: true,
                ..gone()
            })?;
        sh.wake_driver();
        slot
    };
    let guard = Guard { shared, slot };
    std::future::poll_fn(|cx| {
        let mut sh = shared.borrow_mut();
        let s = sh.conn.slot_mut(slot);
        if s.finished() {
            return Poll::Ready(());
        }
        if !s.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            s.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    })
    .await;
    let mut sh = shared.borrow_mut();
    let s = sh.conn.slot_mut(slot);
    if let Some(failed) = s.failed.take() {
        drop(sh);
        drop(guard);
        return Err(failed);
    }
    if let Some(c) = capture {
        std::mem::swap(&mut c.headers, &mut s.headers);
        std::mem::swap(&mut c.body, &mut s.body);
    }
    let done = StreamDone {
        status: s.status,
        first: s.first.unwrap_or_else(Instant::now),
        bytes: s.bytes,
        wait_us,
    };
    drop(sh);
    drop(guard);
    Ok(done)
}
