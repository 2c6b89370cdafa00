//! The HPACK encoder for requests (RFC 7541 §6). A field in the static table with its
//! value is indexed; one already in our dynamic table is indexed; anything else is a raw
//! literal with incremental indexing (Huffman would shorten only the first request of a
//! connection), so from the second request on a repeated head is a few index bytes.
//! Short credentials are never indexed (nghttp2's rule: a table probe could guess them).

use super::static_table;
use super::table::{ENTRY_OVERHEAD, Table};

/// The largest table we keep, whatever larger size the server allows.
pub(crate) const MAX_TABLE: usize = 4096;

/// The encoder's state: its table, mirrored by the server's decoder.
pub(crate) struct Encoder {
    table: Table,
    /// The smallest size the table went to since the last block, to signal at the start
    /// of the next (§4.2), with the size it has then.
    low: Option<usize>,
    /// The size the server's decoder was last told.
    signalled: usize,
}

impl Default for Encoder {
    fn default() -> Self {
        Encoder::new()
    }
}

/// Appends an integer with an `n`-bit prefix whose other bits are `flags` (§5.1).
pub(crate) fn put_integer(out: &mut Vec<u8>, mut v: usize, n: u32, flags: u8) {
    let mask = (1usize << n) - 1;
    if v < mask {
        out.push(flags | v as u8);
        return;
    }
    out.push(flags | mask as u8);
    v -= mask;
    while v >= 0x80 {
        out.push(0x80 | (v & 0x7f) as u8);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a raw (not Huffman-coded) string literal.
fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    put_integer(out, s.len(), 7, 0);
    out.extend_from_slice(s);
}

impl Encoder {
    /// An encoder at the default table size, 4,096 bytes (§4.2, RFC 9113 §6.5.2).
    pub(crate) fn new() -> Encoder {
        Encoder {
            table: Table::new(MAX_TABLE),
            low: None,
            signalled: MAX_TABLE,
        }
    }

    /// Changes with every change to the table: a block encoded without touching the table
    /// encodes the same while it stays.
    pub(crate) fn epoch(&self) -> u64 {
        self.table.epoch()
    }

    /// The server's SETTINGS_HEADER_TABLE_SIZE: our table keeps to it (and to
    /// [`MAX_TABLE`]); the change is signalled at the start of the next block.
    pub(crate) fn set_peer_max(&mut self, peer: usize) {
        let max = peer.min(MAX_TABLE);
        self.table.set_max(max);
        self.low = Some(self.low.map_or(max, |low| low.min(max)));
    }

    /// Appends the header block for `fields` (pseudo-headers first, names in lower case).
    pub(crate) fn encode<'a>(
        &mut self,
        fields: impl Iterator<Item = (&'a [u8], &'a [u8])>,
        out: &mut Vec<u8>,
    ) {
        if let Some(low) = self.low.take() {
            let now = self.table.max();
            if low < now && low < self.signalled {
                put_integer(out, low, 5, 0x20);
            }
            if now != self.signalled || low < self.signalled {
                put_integer(out, now, 5, 0x20);
            }
            self.signalled = now;
        }
        for (name, value) in fields {
            self.field(name, value, out);
        }
    }

    fn field(&mut self, name: &[u8], value: &[u8], out: &mut Vec<u8>) {
        let stat = static_table::find(name, value);
        if let Some((i, true)) = stat {
            put_integer(out, i, 7, 0x80);
            return;
        }
        let dynamic = self.table.find(name, value);
        if let Some((i, true)) = dynamic {
            put_integer(out, i + 62, 7, 0x80);
            return;
        }
        let name_index = stat
            .map(|(i, _)| i)
            .or(dynamic.map(|(i, _)| i + 62))
            .unwrap_or(0);
        let sensitive = (name == b"authorization" || name == b"cookie") && value.len() < 20;
        let size = name.len() + value.len() + ENTRY_OVERHEAD;
        if sensitive || size > self.table.max() / 2 {
            // Never indexed / without indexing: a 4-bit name index.
            put_integer(out, name_index, 4, if sensitive { 0x10 } else { 0 });
        } else {
            put_integer(out, name_index, 6, 0x40);
            let mut entry = self.table.buffer();
            entry.extend_from_slice(name);
            entry.extend_from_slice(value);
            self.table.insert(entry, name.len());
        }
        if name_index == 0 {
            put_string(out, name);
        }
        put_string(out, value);
    }
}
