//! Server-sent events, counted as they arrive (sans-IO): an event is dispatched at the
//! blank line that ends it, when it carried a field (comments — `:` lines, heartbeats —
//! are not events), as the HTML standard's event-stream parser does.

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
