//! The connection state machine on byte scripts: what the server sends goes in through
//! `recv`, and what the client queues is read back frame by frame.

use bytes::Bytes;
use volley_stats::ErrorKind;

use super::conn::{Conn, H2Head, INITIAL_STREAMS, Phase, STREAM_WINDOW};
use super::frame::{self, Head, Reason, flag, kind, setting};
use super::hpack::{Decoder, Encoder};

fn frame(k: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    frame::put_head(&mut out, payload.len(), k, flags, stream);
    out.extend_from_slice(payload);
    out
}

fn settings(pairs: &[(u16, u32)]) -> Vec<u8> {
    let mut out = Vec::new();
    frame::put_settings(&mut out, pairs);
    out
}

/// The frames in `out` (after the preface, if any), emptying it.
fn frames(out: &mut Vec<u8>) -> Vec<(Head, Vec<u8>)> {
    let mut b = &out[..];
    if b.starts_with(frame::PREFACE) {
        b = &b[frame::PREFACE.len()..];
    }
    let mut v = Vec::new();
    while !b.is_empty() {
        let h = Head::parse(b);
        v.push((h, b[9..9 + h.len].to_vec()));
        b = &b[9 + h.len..];
    }
    out.clear();
    v
}

fn head(path: &str) -> H2Head {
    H2Head::new(
        [
            (":method", "GET"),
            (":scheme", "http"),
            (":authority", "example.test"),
            (":path", path),
            ("user-agent", "volley/test"),
        ]
        .iter()
        .map(|(n, v)| (n.as_bytes().into(), v.as_bytes().into()))
        .collect(),
    )
}

/// The server's side of HPACK, to write response heads.
struct Server {
    enc: Encoder,
}

impl Server {
    fn new() -> Server {
        Server {
            enc: Encoder::new(),
        }
    }

    fn block(&mut self, fields: &[(&str, &str)]) -> Vec<u8> {
        let mut b = Vec::new();
        self.enc.encode(
            fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())),
            &mut b,
        );
        b
    }

    fn headers(&mut self, stream: u32, fields: &[(&str, &str)], end: bool) -> Vec<u8> {
        let b = self.block(fields);
        let flags = flag::END_HEADERS | if end { flag::END_STREAM } else { 0 };
        frame(kind::HEADERS, flags, stream, &b)
    }
}

/// A connection past its handshake: the server's SETTINGS (with `pairs`) read and acked.
fn ready(pairs: &[(u16, u32)]) -> Conn {
    let mut c = Conn::new();
    let s = settings(pairs);
    assert_eq!(c.recv(&s), s.len());
    c.out.clear();
    c
}

fn open(c: &mut Conn, path: &str, capture: bool) -> usize {
    c.open(&head(path), &Bytes::new(), capture, capture)
        .unwrap()
}

#[test]
fn the_preface_settings_and_window_go_first_and_settings_are_acked() {
    let mut c = Conn::new();
    assert!(c.out.starts_with(frame::PREFACE));
    let f = frames(&mut c.out);
    assert_eq!(f[0].0.kind, kind::SETTINGS);
    assert_eq!(
        f[0].1,
        [0, 2, 0, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0, 5, 0, 0x10, 0, 0]
    );
    assert_eq!(f[1].0.kind, kind::WINDOW_UPDATE);
    // Before the server's SETTINGS: one stream.
    assert_eq!(INITIAL_STREAMS, 1);
    open(&mut c, "/", false);
    assert!(!c.can_open());
    let s = settings(&[(setting::MAX_CONCURRENT_STREAMS, 2)]);
    c.recv(&s);
    assert!(c.can_open());
    let f = frames(&mut c.out);
    assert!(
        f.iter()
            .any(|(h, p)| h.kind == kind::SETTINGS && h.has(flag::ACK) && p.is_empty())
    );
    open(&mut c, "/", false);
    assert!(!c.can_open(), "at the server's limit of 2");
    // A SETTINGS that names no limit leaves the one named before.
    c.recv(&settings(&[]));
    assert!(!c.can_open());
}

#[test]
fn a_response_is_read_with_its_head_and_body_when_asked() {
    let mut c = ready(&[]);
    let mut srv = Server::new();
    let a = open(&mut c, "/a", true);
    let b = open(&mut c, "/b", false);
    let f = frames(&mut c.out);
    assert_eq!((f[0].0.kind, f[0].0.stream), (kind::HEADERS, 1));
    assert!(f[0].0.has(flag::END_STREAM) && f[0].0.has(flag::END_HEADERS));
    assert_eq!(f[1].0.stream, 3);
    // The requests decode to what was asked.
    let mut d = Decoder::new(4096);
    d.decode(&f[0].1, &mut |_, _| {}).unwrap();
    let mut got = Vec::new();
    d.decode(&f[1].1, &mut |n, v| got.push((n.to_vec(), v.to_vec())))
        .unwrap();
    assert_eq!(got[3], (b":path".to_vec(), b"/b".to_vec()));
    let mut input = srv.headers(1, &[(":status", "201"), ("x-id", "7")], false);
    input.extend(srv.headers(3, &[(":status", "404"), ("x-id", "8")], false));
    input.extend(frame(kind::DATA, 0, 1, b"hel"));
    input.extend(frame(kind::DATA, flag::END_STREAM, 1, b"lo"));
    input.extend(frame(kind::DATA, flag::END_STREAM, 3, b"nope"));
    // Split anywhere: only whole frames are read.
    let cut = 20;
    let used = c.recv(&input[..cut]);
    assert!(used <= cut);
    let rest = [&input[used..cut], &input[cut..]].concat();
    assert_eq!(c.recv(&rest), rest.len());
    let s = c.slot(a);
    assert_eq!((s.phase, s.status, s.bytes), (Phase::Done, 201, 5));
    assert_eq!(s.body, b"hello");
    assert_eq!(s.headers, vec![("x-id".to_string(), "7".to_string())]);
    let s = c.slot(b);
    assert_eq!((s.phase, s.status, s.bytes), (Phase::Done, 404, 4));
    assert!(s.body.is_empty() && s.headers.is_empty(), "not asked for");
    assert_eq!(c.headed, vec![a, b]);
    assert_eq!(c.finished, vec![a, b]);
    assert_eq!(c.active(), 0);
    // Small responses earn no WINDOW_UPDATE.
    assert!(frames(&mut c.out).is_empty());
}

#[test]
fn a_ping_is_acked_with_its_data() {
    let mut c = ready(&[]);
    c.recv(&frame(kind::PING, 0, 0, b"12345678"));
    c.recv(&frame(kind::PING, flag::ACK, 0, b"abcdefgh"));
    let f = frames(&mut c.out);
    assert_eq!(f.len(), 1);
    assert!(f[0].0.has(flag::ACK));
    assert_eq!(f[0].1, b"12345678");
    c.recv(&frame(kind::PING, 0, 0, b"1234567"));
    assert_eq!(c.dead().unwrap().kind, ErrorKind::Protocol);
    let f = frames(&mut c.out);
    assert_eq!(f[0].0.kind, kind::GOAWAY);
    assert_eq!(f[0].1[4..], Reason::FRAME_SIZE_ERROR.0.to_be_bytes());
}

#[test]
fn goaway_fails_the_streams_past_its_last_for_a_retry_and_lets_the_rest_finish() {
    let mut c = ready(&[]);
    let mut srv = Server::new();
    let a = open(&mut c, "/", false);
    let b = open(&mut c, "/", false);
    let mut p = 1u32.to_be_bytes().to_vec();
    p.extend(0u32.to_be_bytes());
    c.recv(&frame(kind::GOAWAY, 0, 0, &p));
    assert!(c.is_gone());
    assert!(c.open(&head("/"), &Bytes::new(), false, false).is_err());
    let s = c.slot(b);
    assert_eq!(s.phase, Phase::Failed);
    let failed = s.failed.as_ref().unwrap();
    assert!(failed.retry);
    assert_eq!(failed.failure.kind, ErrorKind::GoAway);
    assert_eq!(c.slot(a).phase, Phase::Head);
    c.recv(&srv.headers(1, &[(":status", "200")], true));
    assert_eq!(c.slot(a).phase, Phase::Done);
}

#[test]
fn rst_stream_fails_its_stream_and_refused_may_be_retried() {
    let mut c = ready(&[]);
    let a = open(&mut c, "/", false);
    let b = open(&mut c, "/", false);
    c.recv(&frame(
        kind::RST_STREAM,
        0,
        1,
        &Reason::REFUSED_STREAM.0.to_be_bytes(),
    ));
    c.recv(&frame(
        kind::RST_STREAM,
        0,
        3,
        &Reason::INTERNAL_ERROR.0.to_be_bytes(),
    ));
    let fa = c.slot(a).failed.as_ref().unwrap();
    assert!(fa.retry);
    assert_eq!(fa.failure.kind, ErrorKind::StreamReset);
    let fb = c.slot(b).failed.as_ref().unwrap();
    assert!(!fb.retry);
    assert!(
        fb.failure.message.contains("INTERNAL_ERROR"),
        "{}",
        fb.failure.message
    );
    assert!(c.dead().is_none());
    // On a stream never opened: a connection error.
    c.recv(&frame(kind::RST_STREAM, 0, 5, &[0, 0, 0, 8]));
    assert!(c.dead().is_some());
}

#[test]
fn a_head_in_continuations_with_padding_and_priority_is_read() {
    let mut c = ready(&[]);
    let mut srv = Server::new();
    let a = open(&mut c, "/", true);
    let block = srv.block(&[(":status", "200"), ("x-a", "1"), ("x-b", "2")]);
    let (one, rest) = block.split_at(2);
    let (two, three) = rest.split_at(3);
    // HEADERS: pad length 3, then 5 priority bytes, then the fragment, then the padding.
    let mut p = vec![3, 0, 0, 0, 0, 16];
    p.extend_from_slice(one);
    p.extend_from_slice(&[0, 0, 0]);
    let mut input = frame(kind::HEADERS, flag::PADDED | flag::PRIORITY, 1, &p);
    input.extend(frame(kind::CONTINUATION, 0, 1, two));
    input.extend(frame(kind::CONTINUATION, flag::END_HEADERS, 1, three));
    input.extend(frame(
        kind::DATA,
        flag::PADDED | flag::END_STREAM,
        1,
        &[2, b'x', 0, 0],
    ));
    c.recv(&input);
    let s = c.slot(a);
    assert_eq!((s.phase, s.status, s.bytes), (Phase::Done, 200, 1));
    assert_eq!(s.headers.len(), 2);
}

#[test]
fn an_interrupted_header_block_fails_the_connection() {
    let mut c = ready(&[]);
    let mut srv = Server::new();
    open(&mut c, "/", false);
    let block = srv.block(&[(":status", "200"), ("x-a", "1")]);
    let mut input = frame(kind::HEADERS, 0, 1, &block[..1]);
    input.extend(frame(kind::PING, 0, 0, b"12345678"));
    c.recv(&input);
    let dead = c.dead().unwrap();
    assert_eq!(dead.kind, ErrorKind::Protocol);
    assert!(dead.message.contains("PROTOCOL_ERROR"), "{}", dead.message);
    let f = frames(&mut c.out);
    let goaway = f.iter().find(|(h, _)| h.kind == kind::GOAWAY).unwrap();
    assert_eq!(goaway.1[4..], Reason::PROTOCOL_ERROR.0.to_be_bytes());
    assert_eq!(c.finished.len(), 1, "the open stream fails with it");
}

#[test]
fn interim_heads_are_skipped_and_trailers_end_the_stream() {
    let mut c = ready(&[]);
    let mut srv = Server::new();
    let a = open(&mut c, "/", true);
    let mut input = srv.headers(1, &[(":status", "103"), ("link", "</a>")], false);
    input.extend(srv.headers(1, &[(":status", "200"), ("x-a", "1")], false));
    input.extend(frame(kind::DATA, 0, 1, b"body"));
    input.extend(srv.headers(1, &[("grpc-status", "0")], true));
    c.recv(&input);
    let s = c.slot(a);
    assert_eq!((s.phase, s.status, s.bytes), (Phase::Done, 200, 4));
    assert_eq!(s.headers, vec![("x-a".to_string(), "1".to_string())]);
    // Trailers that do not end the stream, DATA before a head, or a head without
    // :status: the stream is reset as malformed; the connection lives on.
    let b = open(&mut c, "/", false);
    c.recv(&frame(kind::DATA, 0, 3, b"x"));
    assert_eq!(c.slot(b).phase, Phase::Failed);
    let d = open(&mut c, "/", false);
    c.recv(&srv.headers(5, &[("x-a", "1")], true));
    assert_eq!(c.slot(d).phase, Phase::Failed);
    assert!(c.dead().is_none());
    let f = frames(&mut c.out);
    assert!(
        f.iter()
            .filter(|(h, _)| h.kind == kind::RST_STREAM)
            .all(|(_, p)| p[..] == Reason::PROTOCOL_ERROR.0.to_be_bytes())
    );
}

#[test]
fn a_body_waits_for_the_servers_windows() {
    let mut c = ready(&[(setting::INITIAL_WINDOW_SIZE, 100)]);
    let body = Bytes::from(vec![7u8; 250]);
    let a = c.open(&head("/up"), &body, false, false).unwrap();
    let f = frames(&mut c.out);
    assert_eq!(f[0].0.kind, kind::HEADERS);
    assert!(!f[0].0.has(flag::END_STREAM));
    let sent: usize = f[1..].iter().map(|(_, p)| p.len()).sum();
    assert_eq!(sent, 100, "the stream's window");
    // The stream's window opens; then the initial window rises by SETTINGS.
    c.recv(&frame(kind::WINDOW_UPDATE, 0, 1, &100u32.to_be_bytes()));
    let f = frames(&mut c.out);
    assert_eq!(f.iter().map(|(_, p)| p.len()).sum::<usize>(), 100);
    c.recv(&settings(&[(setting::INITIAL_WINDOW_SIZE, 200)]));
    let f = frames(&mut c.out);
    let data: Vec<_> = f.iter().filter(|(h, _)| h.kind == kind::DATA).collect();
    assert_eq!(data.iter().map(|(_, p)| p.len()).sum::<usize>(), 50);
    assert!(data.last().unwrap().0.has(flag::END_STREAM));
    assert_eq!(c.slot(a).phase, Phase::Head);
}

#[test]
fn the_connection_window_bounds_a_body_too() {
    let mut c = ready(&[(setting::INITIAL_WINDOW_SIZE, 1 << 20)]);
    let body = Bytes::from(vec![1u8; 100_000]);
    c.open(&head("/up"), &body, false, false).unwrap();
    let f = frames(&mut c.out);
    let sent: usize = f[1..].iter().map(|(_, p)| p.len()).sum();
    assert_eq!(sent, 65_535);
    assert!(
        f[1..].iter().all(|(h, _)| h.len <= 16_384),
        "the default frame size"
    );
    c.recv(&frame(kind::WINDOW_UPDATE, 0, 0, &50_000u32.to_be_bytes()));
    let f = frames(&mut c.out);
    assert_eq!(
        f.iter().map(|(_, p)| p.len()).sum::<usize>(),
        100_000 - 65_535
    );
    // Past 2^31-1: a flow control error.
    c.recv(&frame(
        kind::WINDOW_UPDATE,
        0,
        0,
        &0x7fff_ffffu32.to_be_bytes(),
    ));
    assert!(c.dead().unwrap().message.contains("FLOW_CONTROL_ERROR"));
}

#[test]
fn received_data_is_acked_past_half_the_window_and_refused_past_it() {
    let mut c = ready(&[]);
    let mut srv = Server::new();
    open(&mut c, "/big", false);
    c.recv(&srv.headers(1, &[(":status", "200")], false));
    let chunk = vec![0u8; 1 << 20];
    let half = (STREAM_WINDOW / 2) as usize >> 20;
    for _ in 0..half {
        c.recv(&frame(kind::DATA, 0, 1, &chunk));
    }
    let f = frames(&mut c.out);
    let updates: Vec<_> = f
        .iter()
        .filter(|(h, _)| h.kind == kind::WINDOW_UPDATE)
        .collect();
    assert_eq!(updates.len(), 1, "the stream's, at half its window");
    assert_eq!(updates[0].0.stream, 1);
    assert_eq!(updates[0].1, (STREAM_WINDOW / 2).to_be_bytes());
    // And again after the next half.
    for _ in 0..half {
        c.recv(&frame(kind::DATA, 0, 1, &chunk));
    }
    let f = frames(&mut c.out);
    assert_eq!(
        f.iter()
            .filter(|(h, _)| h.kind == kind::WINDOW_UPDATE)
            .count(),
        1
    );
    c.recv(&frame(kind::DATA, flag::END_STREAM, 1, b""));
    assert_eq!(c.slot(0).bytes, 2 * (STREAM_WINDOW as u64 / 2));
    assert!(c.dead().is_none());
}

#[test]
fn bad_settings_and_frames_fail_the_connection() {
    let cases: Vec<(Vec<u8>, Reason)> = vec![
        (
            settings(&[(setting::INITIAL_WINDOW_SIZE, 1 << 31)]),
            Reason::FLOW_CONTROL_ERROR,
        ),
        (
            settings(&[(setting::ENABLE_PUSH, 2)]),
            Reason::PROTOCOL_ERROR,
        ),
        (
            settings(&[(setting::MAX_FRAME_SIZE, 100)]),
            Reason::PROTOCOL_ERROR,
        ),
        (
            frame(kind::SETTINGS, 0, 0, &[0, 1, 0]),
            Reason::FRAME_SIZE_ERROR,
        ),
        (
            frame(kind::SETTINGS, flag::ACK, 0, &[0; 6]),
            Reason::FRAME_SIZE_ERROR,
        ),
        (frame(kind::DATA, 0, 0, b"x"), Reason::PROTOCOL_ERROR),
        (
            frame(kind::HEADERS, flag::END_HEADERS, 2, &[0x88]),
            Reason::PROTOCOL_ERROR,
        ),
        (
            frame(
                kind::PUSH_PROMISE,
                flag::END_HEADERS,
                1,
                &[0, 0, 0, 2, 0x82],
            ),
            Reason::PROTOCOL_ERROR,
        ),
        (
            frame(kind::HEADERS, flag::END_HEADERS, 1, &[0xff, 0x7f]),
            Reason::COMPRESSION_ERROR,
        ),
        (
            frame(kind::CONTINUATION, flag::END_HEADERS, 1, &[0x88]),
            Reason::PROTOCOL_ERROR,
        ),
        (
            frame(kind::WINDOW_UPDATE, 0, 0, &[0, 0, 0, 0]),
            Reason::PROTOCOL_ERROR,
        ),
        (
            frame(kind::DATA, 0, 1, &vec![0; (1 << 20) + 1]),
            Reason::FRAME_SIZE_ERROR,
        ),
    ];
    for (i, (input, reason)) in cases.into_iter().enumerate() {
        let mut c = ready(&[]);
        open(&mut c, "/", false);
        c.recv(&input);
        assert!(c.dead().is_some(), "case {i}");
        let f = frames(&mut c.out);
        let goaway = f
            .iter()
            .find(|(h, _)| h.kind == kind::GOAWAY)
            .expect("GOAWAY");
        assert_eq!(goaway.1[4..], reason.0.to_be_bytes(), "case {i}");
        assert_eq!(c.finished.len(), 1, "case {i}");
    }
    // Unknown frame types and PRIORITY are ignored.
    let mut c = ready(&[]);
    c.recv(&frame(0x42, 0, 1, b"whatever"));
    c.recv(&frame(kind::PRIORITY, 0, 1, &[0, 0, 0, 0, 9]));
    assert!(c.dead().is_none());
}

#[test]
fn a_cancelled_streams_head_is_still_decoded_for_the_shared_table() {
    let mut c = ready(&[]);
    let mut srv = Server::new();
    let a = open(&mut c, "/", false);
    let b = open(&mut c, "/", true);
    c.release(a);
    let f = frames(&mut c.out);
    let rst = f.iter().find(|(h, _)| h.kind == kind::RST_STREAM).unwrap();
    assert_eq!(
        (rst.0.stream, &rst.1[..]),
        (1, &Reason::CANCEL.0.to_be_bytes()[..])
    );
    // Stream 1's head inserts x-token into the table; stream 3's refers to it by index.
    let mut input = srv.headers(1, &[(":status", "200"), ("x-token", "abc")], true);
    input.extend(srv.headers(3, &[(":status", "200"), ("x-token", "abc")], true));
    c.recv(&input);
    let s = c.slot(b);
    assert_eq!(s.phase, Phase::Done);
    assert_eq!(s.headers, vec![("x-token".to_string(), "abc".to_string())]);
    assert!(c.dead().is_none());
}

/// The block of the one HEADERS frame in `out`, emptying it.
fn headers_block(out: &mut Vec<u8>) -> Vec<u8> {
    let mut h: Vec<_> = frames(out)
        .into_iter()
        .filter(|(h, _)| h.kind == kind::HEADERS)
        .collect();
    assert_eq!(h.len(), 1);
    h.remove(0).1
}

#[test]
fn a_repeated_request_reuses_its_encoded_block() {
    let mut c = ready(&[]);
    let h = head("/same");
    let first = c.open(&h, &Bytes::new(), false, false).unwrap();
    let one = frames(&mut c.out);
    c.release(first);
    let mut blocks = Vec::new();
    for _ in 0..3 {
        let i = c.open(&h, &Bytes::new(), false, false).unwrap();
        blocks.push(headers_block(&mut c.out));
        c.release(i);
    }
    assert!(blocks[0].len() < one[0].1.len() / 3, "{:02x?}", blocks[0]);
    assert_eq!(blocks[0], blocks[1]);
    assert_eq!(blocks[1], blocks[2]);
    // The server's decoder reads them all as the head.
    let mut d = Decoder::new(4096);
    for b in std::iter::once(&one[0].1).chain(&blocks) {
        let mut n = 0;
        d.decode(b, &mut |_, _| n += 1).unwrap();
        assert_eq!(n, h.fields.len());
    }
    // A smaller table from the server: the next block starts with the size update.
    c.recv(&settings(&[(setting::HEADER_TABLE_SIZE, 0)]));
    frames(&mut c.out);
    c.open(&h, &Bytes::new(), false, false).unwrap();
    let b = headers_block(&mut c.out);
    assert_eq!(b[0], 0x20);
    d.decode(&b, &mut |_, _| {}).unwrap();
}
