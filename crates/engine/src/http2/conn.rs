//! The client side of an HTTP/2 connection without I/O: bytes read from the socket go in
//! through [`Conn::recv`], requests through [`Conn::open`], and everything to send
//! (requests, SETTINGS and PING acknowledgements, WINDOW_UPDATEs, RST_STREAMs, GOAWAY)
//! collects in [`Conn::out`] for the driver to write in one go.
//!
//! Only what a load generator reads is kept from a response: its status, body length,
//! and — for a stream that asks — its headers and body. Every header block is still
//! HPACK-decoded, a cancelled stream's too, since the table is shared by the connection.

use std::time::Instant;

use bytes::Bytes;
use volley_stats::ErrorKind;

use super::frame::{self, Head, Reason, flag, kind, setting};
use super::hpack::{Decoder, Encoder};
use super::{StreamFailed, fail};
use crate::failure::Failure;
use crate::h1::CAPTURE_LIMIT;

/// Stream receive window we announce: a response body never waits on loopback.
pub(crate) const STREAM_WINDOW: u32 = 1 << 24;
/// Connection receive window (announced by a WINDOW_UPDATE after the preface).
pub(crate) const CONNECTION_WINDOW: u32 = 1 << 30;
/// Largest frame we accept.
pub(crate) const MAX_FRAME: u32 = 1 << 20;
/// Streams opened before the server's first SETTINGS arrive: one (a server allowing fewer
/// than we guessed would refuse the excess). Its SETTINGS come before the first response.
pub(crate) const INITIAL_STREAMS: u32 = 1;
/// Largest header block (HEADERS and its CONTINUATIONs) accepted.
pub(crate) const MAX_BLOCK: usize = 256 * 1024;
/// The default SETTINGS_INITIAL_WINDOW_SIZE and connection window (RFC 9113 §6.9.2).
const DEFAULT_WINDOW: i64 = 65_535;
/// The largest window (RFC 9113 §6.9.1).
const MAX_WINDOW: i64 = (1 << 31) - 1;

/// A header field: name and value bytes.
pub(crate) type Field = (Box<[u8]>, Box<[u8]>);

/// A request's head as HTTP/2 sends it: pseudo-headers first, then the other fields with
/// names in lower case. Built once per prepared request; `id` names it for the encoder's
/// cache of the last block.
#[derive(Debug, Clone, Default)]
pub(crate) struct H2Head {
    pub(crate) id: u64,
    pub(crate) fields: Vec<Field>,
}

impl H2Head {
    /// A head of `fields` (pseudo-headers first, names in lower case) with a new id.
    pub(crate) fn new(fields: Vec<Field>) -> H2Head {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(1);
        H2Head {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            fields,
        }
    }

    /// The value of `name`, if the head has it.
    #[cfg(test)]
    pub(crate) fn get(&self, name: &str) -> Option<&[u8]> {
        self.fields
            .iter()
            .find(|(n, _)| &n[..] == name.as_bytes())
            .map(|(_, v)| &v[..])
    }
}

/// Where a stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Sent; no final response head yet.
    Head,
    /// The head came; the body is arriving.
    Body,
    /// The response is complete.
    Done,
    /// The stream failed (see [`Slot::failed`]).
    Failed,
}

/// One open stream's state and what it has received.
#[derive(Debug)]
pub(crate) struct Slot {
    /// Stream id; 0 marks a free slot.
    pub(crate) id: u32,
    pub(crate) phase: Phase,
    pub(crate) status: u16,
    /// When the read that brought the final head ended (stamped by the driver).
    pub(crate) first: Option<Instant>,
    pub(crate) bytes: u64,
    pub(crate) want_headers: bool,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) want_body: bool,
    pub(crate) body: Vec<u8>,
    pub(crate) failed: Option<StreamFailed>,
    pub(crate) waker: Option<std::task::Waker>,
    /// Body bytes still to send, from `sent` on.
    pending: Option<(Bytes, usize)>,
    send_window: i64,
    /// Bytes the server may still send before our next WINDOW_UPDATE.
    recv_window: i64,
    /// Bytes received since our last WINDOW_UPDATE.
    recv_unacked: u32,
}

impl Slot {
    fn new() -> Slot {
        Slot {
            id: 0,
            phase: Phase::Done,
            status: 0,
            first: None,
            bytes: 0,
            want_headers: false,
            headers: Vec::new(),
            want_body: false,
            body: Vec::new(),
            failed: None,
            waker: None,
            pending: None,
            send_window: 0,
            recv_window: 0,
            recv_unacked: 0,
        }
    }

    /// Whether the stream has ended, one way or the other.
    pub(crate) fn finished(&self) -> bool {
        matches!(self.phase, Phase::Done | Phase::Failed)
    }
}

/// A header block being gathered from HEADERS and CONTINUATION frames.
struct Block {
    stream: u32,
    end_stream: bool,
}

/// Why a stream may not be opened now.
#[derive(Debug)]
pub(crate) enum Refused {
    /// The connection has gone (or is going away): open the stream on another.
    Gone,
}

/// A connection's state.
pub(crate) struct Conn {
    /// Bytes to write, in order.
    pub(crate) out: Vec<u8>,
    enc: Encoder,
    dec: Decoder,
    /// The last request block encoded: (head id, encoder epoch after it, bytes), reused
    /// while neither changes.
    cache: Option<(u64, u64, Vec<u8>)>,
    peer_max_streams: u32,
    peer_initial_window: i64,
    peer_max_frame: usize,
    settings_seen: bool,
    send_window: i64,
    recv_window: i64,
    recv_unacked: u32,
    next_id: u32,
    /// Streams open (sent and not finished).
    active: u32,
    slots: Vec<Slot>,
    block: Option<Block>,
    block_buf: Vec<u8>,
    /// The server's GOAWAY: the last stream it will process, and its code.
    goaway: Option<(u32, Reason)>,
    /// The connection failed: why, for every stream still on it.
    dead: Option<Failure>,
    /// Slots whose stream finished since the driver last looked.
    pub(crate) finished: Vec<usize>,
    /// Slots whose final head came since the driver last looked.
    pub(crate) headed: Vec<usize>,
    /// The stream limit may have risen (SETTINGS): waiters should look again.
    pub(crate) limit_changed: bool,
}

impl Default for Conn {
    fn default() -> Self {
        Conn::new()
    }
}

impl Conn {
    /// A connection whose preface, SETTINGS and connection WINDOW_UPDATE are in `out`.
    pub(crate) fn new() -> Conn {
        let mut out = Vec::with_capacity(4096);
        out.extend_from_slice(frame::PREFACE);
        frame::put_settings(
            &mut out,
            &[
                (setting::ENABLE_PUSH, 0),
                (setting::INITIAL_WINDOW_SIZE, STREAM_WINDOW),
                (setting::MAX_FRAME_SIZE, MAX_FRAME),
            ],
        );
        frame::put_window_update(&mut out, 0, CONNECTION_WINDOW - DEFAULT_WINDOW as u32);
        Conn {
            out,
            enc: Encoder::new(),
            dec: Decoder::new(4096),
            cache: None,
            peer_max_streams: INITIAL_STREAMS,
            peer_initial_window: DEFAULT_WINDOW,
            peer_max_frame: 16_384,
            settings_seen: false,
            send_window: DEFAULT_WINDOW,
            recv_window: i64::from(CONNECTION_WINDOW),
            recv_unacked: 0,
            next_id: 1,
            active: 0,
            slots: Vec::new(),
            block: None,
            block_buf: Vec::new(),
            goaway: None,
            dead: None,
            finished: Vec::new(),
            headed: Vec::new(),
            limit_changed: false,
        }
    }

    /// Whether no new stream may open on this connection (failed, or the server is going
    /// away).
    pub(crate) fn is_gone(&self) -> bool {
        self.dead.is_some() || self.goaway.is_some() || self.next_id > (1 << 31) - 1
    }

    /// Whether the connection failed.
    pub(crate) fn dead(&self) -> Option<&Failure> {
        self.dead.as_ref()
    }

    /// Streams open.
    pub(crate) fn active(&self) -> u32 {
        self.active
    }

    /// Whether one more stream may open now (under the server's limit).
    pub(crate) fn can_open(&self) -> bool {
        self.active < self.peer_max_streams.max(1)
    }

    pub(crate) fn slot(&self, i: usize) -> &Slot {
        &self.slots[i]
    }

    pub(crate) fn slot_mut(&mut self, i: usize) -> &mut Slot {
        &mut self.slots[i]
    }

    /// Opens a stream for `head` with `body`, writing it into [`Conn::out`]; returns its
    /// slot. The caller keeps to [`Conn::can_open`].
    pub(crate) fn open(
        &mut self,
        head: &H2Head,
        body: &Bytes,
        want_headers: bool,
        want_body: bool,
    ) -> Result<usize, Refused> {
        if self.is_gone() {
            return Err(Refused::Gone);
        }
        let id = self.next_id;
        self.next_id += 2;
        let i = match self.slots.iter().position(|s| s.id == 0) {
            Some(i) => i,
            None => {
                self.slots.push(Slot::new());
                self.slots.len() - 1
            }
        };
        let s = &mut self.slots[i];
        s.id = id;
        s.phase = Phase::Head;
        s.status = 0;
        s.first = None;
        s.bytes = 0;
        s.want_headers = want_headers;
        s.headers.clear();
        s.want_body = want_body;
        s.body.clear();
        s.failed = None;
        s.waker = None;
        s.pending = None;
        s.send_window = self.peer_initial_window;
        s.recv_window = i64::from(STREAM_WINDOW);
        s.recv_unacked = 0;
        self.active += 1;
        self.write_headers(id, head, body.is_empty());
        if !body.is_empty() {
            self.slots[i].pending = Some((body.clone(), 0));
            self.send_body(i);
        }
        Ok(i)
    }

    fn write_headers(&mut self, id: u32, head: &H2Head, end_stream: bool) {
        let epoch = self.enc.epoch();
        // Id 0 (a head not made by `H2Head::new`) is never cached.
        let hit = head.id != 0
            && matches!(&self.cache, Some((hid, e, _)) if *hid == head.id && *e == epoch);
        if !hit {
            let mut block = self.cache.take().map(|c| c.2).unwrap_or_default();
            block.clear();
            self.enc.encode(
                head.fields.iter().map(|(n, v)| (&n[..], &v[..])),
                &mut block,
            );
            // Reused only if encoding it changed nothing: a block that inserted into the
            // table would insert again.
            let id = if self.enc.epoch() == epoch {
                head.id
            } else {
                0
            };
            self.cache = Some((id, self.enc.epoch(), block));
        }
        let bytes = &self.cache.as_ref().expect("just cached").2;
        let max = self.peer_max_frame;
        let mut chunks = bytes.chunks(max).peekable();
        let first = chunks.next().unwrap_or(&[]);
        let mut flags = if end_stream { flag::END_STREAM } else { 0 };
        if chunks.peek().is_none() {
            flags |= flag::END_HEADERS;
        }
        frame::put_head(&mut self.out, first.len(), kind::HEADERS, flags, id);
        self.out.extend_from_slice(first);
        while let Some(c) = chunks.next() {
            let last = chunks.peek().is_none();
            let f = if last { flag::END_HEADERS } else { 0 };
            frame::put_head(&mut self.out, c.len(), kind::CONTINUATION, f, id);
            self.out.extend_from_slice(c);
        }
    }

    /// Sends as much of slot `i`'s pending body as the windows allow.
    fn send_body(&mut self, i: usize) {
        let s = &mut self.slots[i];
        let Some((body, mut sent)) = s.pending.take() else {
            return;
        };
        while sent < body.len() {
            let room = s
                .send_window
                .min(self.send_window)
                .min(self.peer_max_frame as i64);
            if room <= 0 {
                break;
            }
            let n = (body.len() - sent).min(room as usize);
            let end = sent + n == body.len();
            let flags = if end { flag::END_STREAM } else { 0 };
            frame::put_head(&mut self.out, n, kind::DATA, flags, s.id);
            self.out.extend_from_slice(&body[sent..sent + n]);
            sent += n;
            s.send_window -= n as i64;
            self.send_window -= n as i64;
        }
        if sent < body.len() {
            s.pending = Some((body, sent));
        }
    }

    /// Sends what bodies the windows now allow.
    fn send_bodies(&mut self) {
        for i in 0..self.slots.len() {
            if self.slots[i].pending.is_some() && !self.slots[i].finished() {
                self.send_body(i);
            }
        }
    }

    /// The caller is done with slot `i` (it read the result, or gave up): a stream still
    /// open is reset with CANCEL; the slot is free again.
    pub(crate) fn release(&mut self, i: usize) {
        let s = &mut self.slots[i];
        if s.id == 0 {
            return;
        }
        if !s.finished() {
            self.active -= 1;
            if self.dead.is_none() {
                frame::put_rst_stream(&mut self.out, s.id, Reason::CANCEL);
            }
            self.limit_changed = true;
        }
        s.id = 0;
        s.phase = Phase::Done;
        s.pending = None;
        s.waker = None;
        if s.body.capacity() > 64 * 1024 {
            s.body = Vec::new();
        }
    }

    /// Ends stream `i` with `phase` (and failure).
    fn finish(&mut self, i: usize, failed: Option<StreamFailed>) {
        let s = &mut self.slots[i];
        if s.finished() {
            return;
        }
        s.phase = if failed.is_some() {
            Phase::Failed
        } else {
            Phase::Done
        };
        s.failed = failed;
        s.pending = None;
        self.active -= 1;
        self.finished.push(i);
    }

    /// Resets stream `i` for a malformed response: it fails with `message`.
    fn malformed(&mut self, i: usize, message: &str) {
        let id = self.slots[i].id;
        frame::put_rst_stream(&mut self.out, id, Reason::PROTOCOL_ERROR);
        self.finish(
            i,
            Some(StreamFailed {
                failure: Failure::new(
                    ErrorKind::Protocol,
                    format!("response: malformed response ({message})"),
                ),
                retry: false,
            }),
        );
    }

    /// The connection failed: GOAWAY to the server when we found the fault, and every
    /// open stream fails.
    fn die(&mut self, reason: Option<Reason>, failure: Failure) {
        if self.dead.is_some() {
            return;
        }
        if let Some(r) = reason {
            frame::put_goaway(&mut self.out, 0, r);
        }
        for i in 0..self.slots.len() {
            if self.slots[i].id != 0 {
                let failed = StreamFailed {
                    failure: failure.clone(),
                    retry: false,
                };
                self.finish(i, Some(failed));
            }
        }
        self.dead = Some(failure);
        self.limit_changed = true;
    }

    /// A connection error we detected (RFC 9113 §5.4.1).
    fn error(&mut self, reason: Reason, why: impl std::fmt::Display) {
        let f = Failure::new(
            ErrorKind::Protocol,
            format!("response: HTTP/2 connection error {reason}: {why}"),
        );
        self.die(Some(reason), f);
    }

    /// The socket ended or failed: every open stream fails with `failure` (after a
    /// GOAWAY, as the GOAWAY's).
    pub(crate) fn closed(&mut self, failure: Failure) {
        let failure = match self.goaway {
            Some((_, reason)) => Failure::new(
                ErrorKind::GoAway,
                format!("response: the server sent GOAWAY ({reason}) and closed the connection"),
            ),
            None => failure,
        };
        self.die(None, failure);
    }

    fn find(&self, id: u32) -> Option<usize> {
        self.slots.iter().position(|s| s.id == id)
    }

    /// Whether `id` names a stream we never opened.
    fn idle(&self, id: u32) -> bool {
        id.is_multiple_of(2) || id >= self.next_id
    }

    /// Reads the whole frames at the start of `input`; returns how many bytes it used (the
    /// rest is an incomplete frame). After a connection error it reads nothing more.
    pub(crate) fn recv(&mut self, input: &[u8]) -> usize {
        let mut at = 0;
        while self.dead.is_none() && input.len() - at >= frame::HEADER_LEN {
            let head = Head::parse(&input[at..]);
            if head.len > MAX_FRAME as usize {
                self.error(
                    Reason::FRAME_SIZE_ERROR,
                    format!("a frame of {} bytes", head.len),
                );
                break;
            }
            let end = at + frame::HEADER_LEN + head.len;
            if input.len() < end {
                break;
            }
            self.frame(&head, &input[at + frame::HEADER_LEN..end]);
            at = end;
        }
        at
    }

    fn frame(&mut self, h: &Head, p: &[u8]) {
        if let Some(b) = &self.block
            && (h.kind != kind::CONTINUATION || h.stream != b.stream)
        {
            self.error(Reason::PROTOCOL_ERROR, "a header block was interrupted");
            return;
        }
        match h.kind {
            kind::DATA => self.data(h, p),
            kind::HEADERS => self.headers(h, p),
            kind::CONTINUATION => self.continuation(h, p),
            kind::RST_STREAM => self.rst_stream(h, p),
            kind::SETTINGS => self.settings(h, p),
            kind::PING => self.ping(h, p),
            kind::GOAWAY => self.goaway(h, p),
            kind::WINDOW_UPDATE => self.window_update(h, p),
            kind::PUSH_PROMISE => self.error(Reason::PROTOCOL_ERROR, "PUSH_PROMISE with push off"),
            kind::PRIORITY => {
                if h.stream == 0 {
                    self.error(Reason::PROTOCOL_ERROR, "PRIORITY on stream 0");
                } else if p.len() != 5 {
                    self.error(Reason::FRAME_SIZE_ERROR, "PRIORITY of a wrong length");
                }
            }
            _ => {}
        }
    }

    fn data(&mut self, h: &Head, p: &[u8]) {
        if h.stream == 0 {
            return self.error(Reason::PROTOCOL_ERROR, "DATA on stream 0");
        }
        if self.idle(h.stream) {
            return self.error(Reason::PROTOCOL_ERROR, "DATA on an idle stream");
        }
        // Flow control counts the whole payload, padding included.
        let len = p.len() as u32;
        self.recv_window -= i64::from(len);
        if self.recv_window < 0 {
            return self.error(
                Reason::FLOW_CONTROL_ERROR,
                "DATA past the connection window",
            );
        }
        self.recv_unacked += len;
        if self.recv_unacked >= CONNECTION_WINDOW / 2 {
            frame::put_window_update(&mut self.out, 0, self.recv_unacked);
            self.recv_window += i64::from(self.recv_unacked);
            self.recv_unacked = 0;
        }
        let Some(data) = frame::unpad(h, p) else {
            return self.error(Reason::PROTOCOL_ERROR, "DATA padding longer than the frame");
        };
        let Some(i) = self.find(h.stream) else {
            // A stream we reset or that ended: ignored (its bytes still counted above).
            return;
        };
        let s = &mut self.slots[i];
        if s.finished() {
            return;
        }
        s.recv_window -= i64::from(len);
        if s.recv_window < 0 {
            frame::put_rst_stream(&mut self.out, s.id, Reason::FLOW_CONTROL_ERROR);
            let f = Failure::new(
                ErrorKind::Protocol,
                "response body: DATA past the stream's window",
            );
            return self.finish(
                i,
                Some(StreamFailed {
                    failure: f,
                    retry: false,
                }),
            );
        }
        if s.phase != Phase::Body {
            return self.malformed(i, "DATA before the response head");
        }
        s.bytes += data.len() as u64;
        if s.want_body {
            let room = CAPTURE_LIMIT.saturating_sub(s.body.len());
            s.body.extend_from_slice(&data[..data.len().min(room)]);
        }
        if h.has(flag::END_STREAM) {
            return self.finish(i, None);
        }
        s.recv_unacked += len;
        if s.recv_unacked >= STREAM_WINDOW / 2 {
            frame::put_window_update(&mut self.out, s.id, s.recv_unacked);
            s.recv_window += i64::from(s.recv_unacked);
            s.recv_unacked = 0;
        }
    }

    fn headers(&mut self, h: &Head, p: &[u8]) {
        if h.stream == 0 {
            return self.error(Reason::PROTOCOL_ERROR, "HEADERS on stream 0");
        }
        let Some(fragment) = frame::unpad(h, p) else {
            return self.error(
                Reason::PROTOCOL_ERROR,
                "HEADERS padding longer than the frame",
            );
        };
        self.block_buf.clear();
        self.block_buf.extend_from_slice(fragment);
        let block = Block {
            stream: h.stream,
            end_stream: h.has(flag::END_STREAM),
        };
        if h.has(flag::END_HEADERS) {
            self.head_block(block);
        } else {
            self.block = Some(block);
        }
    }

    fn continuation(&mut self, h: &Head, p: &[u8]) {
        let Some(block) = self.block.take() else {
            return self.error(Reason::PROTOCOL_ERROR, "CONTINUATION without HEADERS");
        };
        if self.block_buf.len() + p.len() > MAX_BLOCK {
            return self.error(
                Reason::ENHANCE_YOUR_CALM,
                format!("a header block over {MAX_BLOCK} bytes"),
            );
        }
        self.block_buf.extend_from_slice(p);
        if h.has(flag::END_HEADERS) {
            self.head_block(block);
        } else {
            self.block = Some(block);
        }
    }

    /// A whole header block for `block.stream`: decoded (always: the table is shared),
    /// then a response head, a 1xx head, or trailers.
    fn head_block(&mut self, block: Block) {
        let slot = self
            .find(block.stream)
            .filter(|&i| !self.slots[i].finished());
        let phase = slot.map(|i| self.slots[i].phase);
        let want = slot.is_some_and(|i| self.slots[i].want_headers) && phase == Some(Phase::Head);
        let mut status: Option<u16> = None;
        let mut bad: Option<&'static str> = None;
        let mut regular = false;
        let mut headers = slot
            .map(|i| std::mem::take(&mut self.slots[i].headers))
            .unwrap_or_default();
        let kept = headers.len();
        let buf = std::mem::take(&mut self.block_buf);
        let decoded = self.dec.decode(&buf, &mut |n, v| {
            if n.first() == Some(&b':') {
                if regular {
                    bad.get_or_insert("a pseudo-header after a regular one");
                } else if n != b":status" || status.is_some() || phase == Some(Phase::Body) {
                    bad.get_or_insert("an unexpected pseudo-header");
                } else {
                    status = parse_status(v);
                    if status.is_none() {
                        bad.get_or_insert("a status that is not three digits");
                    }
                }
            } else {
                regular = true;
                if n.iter().any(u8::is_ascii_uppercase) {
                    bad.get_or_insert("an upper-case header name");
                }
                if want {
                    headers.push((
                        String::from_utf8_lossy(n).into_owned(),
                        String::from_utf8_lossy(v).into_owned(),
                    ));
                }
            }
        });
        self.block_buf = buf;
        if let Err(e) = decoded {
            return self.error(Reason::COMPRESSION_ERROR, e);
        }
        if self.idle(block.stream) {
            return self.error(
                Reason::PROTOCOL_ERROR,
                "HEADERS on a stream we did not open",
            );
        }
        let Some(i) = slot else {
            return;
        };
        self.slots[i].headers = headers;
        if let Some(why) = bad {
            return self.malformed(i, why);
        }
        match phase {
            Some(Phase::Head) => {
                let Some(status) = status else {
                    return self.malformed(i, "no :status");
                };
                if (100..200).contains(&status) {
                    // An interim head: its fields are not the response's.
                    self.slots[i].headers.truncate(kept);
                    if block.end_stream {
                        return self.malformed(i, "an interim head ends the stream");
                    }
                    return;
                }
                let s = &mut self.slots[i];
                s.status = status;
                s.phase = Phase::Body;
                self.headed.push(i);
                if block.end_stream {
                    self.finish(i, None);
                }
            }
            _ => {
                // Trailers: they must end the stream.
                if !block.end_stream {
                    return self.malformed(i, "a second head that does not end the stream");
                }
                self.finish(i, None);
            }
        }
    }

    fn rst_stream(&mut self, h: &Head, p: &[u8]) {
        if h.stream == 0 {
            return self.error(Reason::PROTOCOL_ERROR, "RST_STREAM on stream 0");
        }
        if p.len() != 4 {
            return self.error(Reason::FRAME_SIZE_ERROR, "RST_STREAM of a wrong length");
        }
        if self.idle(h.stream) {
            return self.error(Reason::PROTOCOL_ERROR, "RST_STREAM on an idle stream");
        }
        let reason = Reason(u32::from_be_bytes([p[0], p[1], p[2], p[3]]));
        if let Some(i) = self.find(h.stream) {
            let failed = StreamFailed {
                retry: reason == Reason::REFUSED_STREAM,
                failure: Failure::new(
                    ErrorKind::StreamReset,
                    format!("response: the server reset the stream (RST_STREAM {reason})"),
                ),
            };
            self.finish(i, Some(failed));
        }
    }

    fn settings(&mut self, h: &Head, p: &[u8]) {
        if h.stream != 0 {
            return self.error(Reason::PROTOCOL_ERROR, "SETTINGS on a stream");
        }
        if h.has(flag::ACK) {
            if !p.is_empty() {
                self.error(Reason::FRAME_SIZE_ERROR, "a SETTINGS ACK with a payload");
            }
            return;
        }
        if !p.len().is_multiple_of(6) {
            return self.error(Reason::FRAME_SIZE_ERROR, "SETTINGS of a wrong length");
        }
        let mut max_streams = None;
        for pair in p.chunks_exact(6) {
            let id = u16::from_be_bytes([pair[0], pair[1]]);
            let v = u32::from_be_bytes([pair[2], pair[3], pair[4], pair[5]]);
            match id {
                setting::HEADER_TABLE_SIZE => self.enc.set_peer_max(v as usize),
                setting::ENABLE_PUSH if v > 1 => {
                    return self.error(Reason::PROTOCOL_ERROR, "ENABLE_PUSH above 1");
                }
                setting::MAX_CONCURRENT_STREAMS => max_streams = Some(v),
                setting::INITIAL_WINDOW_SIZE => {
                    if i64::from(v) > MAX_WINDOW {
                        return self.error(
                            Reason::FLOW_CONTROL_ERROR,
                            "INITIAL_WINDOW_SIZE above 2^31-1",
                        );
                    }
                    let delta = i64::from(v) - self.peer_initial_window;
                    self.peer_initial_window = i64::from(v);
                    for s in self.slots.iter_mut().filter(|s| s.id != 0) {
                        s.send_window += delta;
                    }
                }
                setting::MAX_FRAME_SIZE => {
                    if !(16_384..=16_777_215).contains(&v) {
                        return self.error(Reason::PROTOCOL_ERROR, "MAX_FRAME_SIZE out of range");
                    }
                    self.peer_max_frame = v as usize;
                }
                _ => {}
            }
        }
        // The server's first SETTINGS replace our guess; with no limit named, there is none.
        match max_streams {
            Some(n) => self.peer_max_streams = n,
            None if !self.settings_seen => self.peer_max_streams = u32::MAX,
            None => {}
        }
        self.settings_seen = true;
        self.limit_changed = true;
        frame::put_settings_ack(&mut self.out);
        self.send_bodies();
    }

    fn ping(&mut self, h: &Head, p: &[u8]) {
        if h.stream != 0 {
            return self.error(Reason::PROTOCOL_ERROR, "PING on a stream");
        }
        let Ok(data) = <&[u8; 8]>::try_from(p) else {
            return self.error(Reason::FRAME_SIZE_ERROR, "PING of a wrong length");
        };
        if !h.has(flag::ACK) {
            frame::put_ping_ack(&mut self.out, data);
        }
    }

    fn goaway(&mut self, h: &Head, p: &[u8]) {
        if h.stream != 0 {
            return self.error(Reason::PROTOCOL_ERROR, "GOAWAY on a stream");
        }
        if p.len() < 8 {
            return self.error(Reason::FRAME_SIZE_ERROR, "GOAWAY too short");
        }
        let last = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff;
        let reason = Reason(u32::from_be_bytes([p[4], p[5], p[6], p[7]]));
        let last = self.goaway.map_or(last, |(l, _)| l.min(last));
        self.goaway = Some((last, reason));
        self.limit_changed = true;
        for i in 0..self.slots.len() {
            let s = &self.slots[i];
            if s.id > last && !s.finished() {
                let failed = StreamFailed {
                    retry: true,
                    failure: Failure::new(
                        ErrorKind::GoAway,
                        format!("request: the server sent GOAWAY ({reason})"),
                    ),
                };
                self.finish(i, Some(failed));
            }
        }
    }

    fn window_update(&mut self, h: &Head, p: &[u8]) {
        if p.len() != 4 {
            return self.error(Reason::FRAME_SIZE_ERROR, "WINDOW_UPDATE of a wrong length");
        }
        let inc = i64::from(u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff);
        if h.stream == 0 {
            if inc == 0 {
                return self.error(Reason::PROTOCOL_ERROR, "a WINDOW_UPDATE of 0");
            }
            self.send_window += inc;
            if self.send_window > MAX_WINDOW {
                return self.error(
                    Reason::FLOW_CONTROL_ERROR,
                    "the connection window overflowed",
                );
            }
            return self.send_bodies();
        }
        if self.idle(h.stream) {
            return self.error(Reason::PROTOCOL_ERROR, "WINDOW_UPDATE on an idle stream");
        }
        let Some(i) = self.find(h.stream).filter(|&i| !self.slots[i].finished()) else {
            return;
        };
        let id = self.slots[i].id;
        if inc == 0 {
            frame::put_rst_stream(&mut self.out, id, Reason::PROTOCOL_ERROR);
            return self.finish(
                i,
                Some(fail(
                    ErrorKind::Protocol,
                    "request body: a WINDOW_UPDATE of 0",
                )),
            );
        }
        self.slots[i].send_window += inc;
        if self.slots[i].send_window > MAX_WINDOW {
            frame::put_rst_stream(&mut self.out, id, Reason::FLOW_CONTROL_ERROR);
            return self.finish(
                i,
                Some(fail(
                    ErrorKind::Protocol,
                    "request body: the stream window overflowed",
                )),
            );
        }
        self.send_body(i);
    }
}

/// `:status` as a number: exactly three digits.
fn parse_status(v: &[u8]) -> Option<u16> {
    match v {
        [a, b, c] if v.iter().all(u8::is_ascii_digit) => {
            Some(u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0'))
        }
        _ => None,
    }
}
