//! HTTP/2 frames (RFC 9113 §4, §6): the 9-byte header, types, flags, settings and error
//! codes, and writers for the frames a client sends. No I/O: frames are parsed from and
//! written into byte buffers.

/// The connection preface a client sends first (RFC 9113 §3.4).
pub(crate) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Length of a frame header.
pub(crate) const HEADER_LEN: usize = 9;

/// Frame types.
pub(crate) mod kind {
    pub(crate) const DATA: u8 = 0x0;
    pub(crate) const HEADERS: u8 = 0x1;
    pub(crate) const PRIORITY: u8 = 0x2;
    pub(crate) const RST_STREAM: u8 = 0x3;
    pub(crate) const SETTINGS: u8 = 0x4;
    pub(crate) const PUSH_PROMISE: u8 = 0x5;
    pub(crate) const PING: u8 = 0x6;
    pub(crate) const GOAWAY: u8 = 0x7;
    pub(crate) const WINDOW_UPDATE: u8 = 0x8;
    pub(crate) const CONTINUATION: u8 = 0x9;
}

/// Frame flags.
pub(crate) mod flag {
    pub(crate) const END_STREAM: u8 = 0x1;
    pub(crate) const ACK: u8 = 0x1;
    pub(crate) const END_HEADERS: u8 = 0x4;
    pub(crate) const PADDED: u8 = 0x8;
    pub(crate) const PRIORITY: u8 = 0x20;
}

/// Settings identifiers (RFC 9113 §6.5.2).
pub(crate) mod setting {
    pub(crate) const HEADER_TABLE_SIZE: u16 = 0x1;
    pub(crate) const ENABLE_PUSH: u16 = 0x2;
    pub(crate) const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    pub(crate) const INITIAL_WINDOW_SIZE: u16 = 0x4;
    pub(crate) const MAX_FRAME_SIZE: u16 = 0x5;
}

/// Error codes (RFC 9113 §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reason(pub(crate) u32);

// The RFC's whole list, though the client sends and matches only some of them.
#[allow(dead_code)]
impl Reason {
    pub(crate) const NO_ERROR: Reason = Reason(0x0);
    pub(crate) const PROTOCOL_ERROR: Reason = Reason(0x1);
    pub(crate) const INTERNAL_ERROR: Reason = Reason(0x2);
    pub(crate) const FLOW_CONTROL_ERROR: Reason = Reason(0x3);
    pub(crate) const SETTINGS_TIMEOUT: Reason = Reason(0x4);
    pub(crate) const STREAM_CLOSED: Reason = Reason(0x5);
    pub(crate) const FRAME_SIZE_ERROR: Reason = Reason(0x6);
    pub(crate) const REFUSED_STREAM: Reason = Reason(0x7);
    pub(crate) const CANCEL: Reason = Reason(0x8);
    pub(crate) const COMPRESSION_ERROR: Reason = Reason(0x9);
    pub(crate) const CONNECT_ERROR: Reason = Reason(0xa);
    pub(crate) const ENHANCE_YOUR_CALM: Reason = Reason(0xb);
    pub(crate) const INADEQUATE_SECURITY: Reason = Reason(0xc);
    pub(crate) const HTTP_1_1_REQUIRED: Reason = Reason(0xd);
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const NAMES: [&str; 14] = [
            "NO_ERROR",
            "PROTOCOL_ERROR",
            "INTERNAL_ERROR",
            "FLOW_CONTROL_ERROR",
            "SETTINGS_TIMEOUT",
            "STREAM_CLOSED",
            "FRAME_SIZE_ERROR",
            "REFUSED_STREAM",
            "CANCEL",
            "COMPRESSION_ERROR",
            "CONNECT_ERROR",
            "ENHANCE_YOUR_CALM",
            "INADEQUATE_SECURITY",
            "HTTP_1_1_REQUIRED",
        ];
        match NAMES.get(self.0 as usize) {
            Some(n) => f.write_str(n),
            None => write!(f, "unknown error 0x{:x}", self.0),
        }
    }
}

/// A frame's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) len: usize,
    pub(crate) kind: u8,
    pub(crate) flags: u8,
    pub(crate) stream: u32,
}

impl Head {
    /// Parses the first 9 bytes of `b` (which must hold them); the reserved bit is ignored.
    pub(crate) fn parse(b: &[u8]) -> Head {
        Head {
            len: (usize::from(b[0]) << 16) | (usize::from(b[1]) << 8) | usize::from(b[2]),
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
        }
    }

    /// Whether `flag` is set.
    pub(crate) fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// Appends a frame header to `out`; `len` must be below 2^24.
pub(crate) fn put_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    debug_assert!(len < 1 << 24);
    let l = (len as u32).to_be_bytes();
    out.extend_from_slice(&[l[1], l[2], l[3], kind, flags]);
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
}

/// Appends a SETTINGS frame with `pairs`.
pub(crate) fn put_settings(out: &mut Vec<u8>, pairs: &[(u16, u32)]) {
    put_head(out, pairs.len() * 6, kind::SETTINGS, 0, 0);
    for &(id, value) in pairs {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
}

/// Appends a SETTINGS ACK.
pub(crate) fn put_settings_ack(out: &mut Vec<u8>) {
    put_head(out, 0, kind::SETTINGS, flag::ACK, 0);
}

/// Appends a WINDOW_UPDATE of `increment` (1..2^31) for `stream` (0: the connection).
pub(crate) fn put_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    put_head(out, 4, kind::WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&(increment & 0x7fff_ffff).to_be_bytes());
}

/// Appends a PING ACK echoing `data`.
pub(crate) fn put_ping_ack(out: &mut Vec<u8>, data: &[u8; 8]) {
    put_head(out, 8, kind::PING, flag::ACK, 0);
    out.extend_from_slice(data);
}

/// Appends an RST_STREAM.
pub(crate) fn put_rst_stream(out: &mut Vec<u8>, stream: u32, reason: Reason) {
    put_head(out, 4, kind::RST_STREAM, 0, stream);
    out.extend_from_slice(&reason.0.to_be_bytes());
}

/// Appends a GOAWAY naming the last stream we processed (a client processes no
/// server-initiated streams: 0) and `reason`.
pub(crate) fn put_goaway(out: &mut Vec<u8>, last: u32, reason: Reason) {
    put_head(out, 8, kind::GOAWAY, 0, 0);
    out.extend_from_slice(&(last & 0x7fff_ffff).to_be_bytes());
    out.extend_from_slice(&reason.0.to_be_bytes());
}

/// The payload of a HEADERS or DATA frame without its padding (and, for HEADERS, its
/// priority fields): `None` when the padding is longer than the payload (PROTOCOL_ERROR,
/// RFC 9113 §6.1).
pub(crate) fn unpad<'a>(head: &Head, payload: &'a [u8]) -> Option<&'a [u8]> {
    let mut p = payload;
    let mut pad = 0usize;
    if head.has(flag::PADDED) {
        pad = usize::from(*p.first()?);
        p = &p[1..];
    }
    if head.kind == kind::HEADERS && head.has(flag::PRIORITY) {
        p = p.get(5..)?;
    }
    p.get(..p.len().checked_sub(pad)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_round_trips_and_ignores_the_reserved_bit() {
        let mut out = Vec::new();
        put_head(&mut out, 0x01_02_03, kind::HEADERS, flag::END_HEADERS, 7);
        assert_eq!(out, [1, 2, 3, 1, 4, 0, 0, 0, 7]);
        let h = Head::parse(&out);
        assert_eq!(
            h,
            Head {
                len: 0x010203,
                kind: kind::HEADERS,
                flags: flag::END_HEADERS,
                stream: 7
            }
        );
        out[5] |= 0x80;
        assert_eq!(Head::parse(&out).stream, 7);
    }

    #[test]
    fn padding_and_priority_are_stripped_and_overlong_padding_refused() {
        let h = Head {
            len: 0,
            kind: kind::HEADERS,
            flags: flag::PADDED | flag::PRIORITY,
            stream: 1,
        };
        let payload = [2, 0, 0, 0, 3, 9, 0x88, 0, 0];
        assert_eq!(unpad(&h, &payload), Some(&[0x88][..]));
        let data = Head {
            kind: kind::DATA,
            flags: flag::PADDED,
            ..h
        };
        assert_eq!(unpad(&data, &[4, b'a', 0, 0]), None);
        assert_eq!(unpad(&data, &[3, b'a', 0, 0]), Some(&b""[..]));
        assert_eq!(unpad(&data, &[2, b'a', 0, 0]), Some(&b"a"[..]));
        assert_eq!(unpad(&data, &[]), None);
    }

    #[test]
    fn control_frames_are_written_as_the_rfc_lays_them_out() {
        let mut out = Vec::new();
        put_settings(&mut out, &[(setting::ENABLE_PUSH, 0)]);
        put_settings_ack(&mut out);
        put_window_update(&mut out, 0, 0x1234);
        put_rst_stream(&mut out, 3, Reason::CANCEL);
        assert_eq!(
            out,
            [
                0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, //
                0, 0, 0, 4, 1, 0, 0, 0, 0, //
                0, 0, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34, //
                0, 0, 4, 3, 0, 0, 0, 0, 3, 0, 0, 0, 8,
            ]
        );
        assert_eq!(Reason::REFUSED_STREAM.to_string(), "REFUSED_STREAM");
        assert_eq!(Reason(0x42).to_string(), "unknown error 0x42");
    }
}
