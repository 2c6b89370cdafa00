//! An I/O wrapper that notes when the first response byte arrives after a request was
//! written: the true time to first byte, before any header parsing.

use std::cell::Cell;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Shared between the wrapper (inside the connection task) and the VU.
#[derive(Debug, Default)]
pub(crate) struct FirstByte {
    armed: Cell<bool>,
    at: Cell<Option<Instant>>,
}

impl FirstByte {
    /// Takes the time the first byte arrived since the last request was written.
    pub(crate) fn take(&self) -> Option<Instant> {
        self.at.take()
    }
}

/// Wraps a stream; every write arms the clock, the next successful read stops it.
#[derive(Debug)]
pub(crate) struct TimedIo<S> {
    inner: S,
    first: Rc<FirstByte>,
}

impl<S> TimedIo<S> {
    pub(crate) fn new(inner: S) -> (Self, Rc<FirstByte>) {
        let first = Rc::new(FirstByte::default());
        (TimedIo { inner, first: first.clone() }, first)
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for TimedIo<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let res = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(res, Poll::Ready(Ok(()))) && buf.filled().len() > before && self.first.armed.get() {
            self.first.armed.set(false);
            self.first.at.set(Some(Instant::now()));
        }
        res
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for TimedIo<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let res = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(res, Poll::Ready(Ok(n)) if n > 0) {
            self.first.armed.set(true);
            self.first.at.set(None);
        }
        res
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let res = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(res, Poll::Ready(Ok(n)) if n > 0) {
            self.first.armed.set(true);
            self.first.at.set(None);
        }
        res
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
