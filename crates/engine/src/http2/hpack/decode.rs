//! The HPACK decoder (RFC 7541 §6): indexed fields, literals with and without indexing,
//! never-indexed literals and table size updates, over the static and dynamic tables, with
//! Huffman-coded strings. Fields go to a callback as byte slices; nothing is built per
//! field beyond the scratch buffers reused from block to block.

use super::huffman;
use super::static_table::STATIC;
use super::table::Table;

/// A header block could not be decoded: the connection fails with COMPRESSION_ERROR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DecodeError {
    /// The block ended inside a field.
    Truncated,
    /// An integer too large to be an index or a length.
    Overflow,
    /// An index outside the static and dynamic tables.
    BadIndex(usize),
    /// A Huffman string with EOS or bad padding.
    Huffman,
    /// A size update after the block's first field, or above the allowed maximum.
    BadSizeUpdate(usize),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Truncated => f.write_str("a header block ends inside a field"),
            DecodeError::Overflow => f.write_str("an HPACK integer is too large"),
            DecodeError::BadIndex(i) => write!(f, "HPACK index {i} is not in the table"),
            DecodeError::Huffman => f.write_str("a Huffman string is not valid"),
            DecodeError::BadSizeUpdate(n) => write!(f, "a table size update to {n} is not allowed"),
        }
    }
}

/// Reads an integer with an `n`-bit prefix from `b` at `*at` (RFC 7541 §5.1); values
/// above 2^28 are refused (no index or string length that large is accepted).
pub(crate) fn integer(b: &[u8], at: &mut usize, n: u32) -> Result<usize, DecodeError> {
    let mask = (1usize << n) - 1;
    let first = *b.get(*at).ok_or(DecodeError::Truncated)?;
    *at += 1;
    let mut v = usize::from(first) & mask;
    if v < mask {
        return Ok(v);
    }
    let mut shift = 0;
    loop {
        let byte = *b.get(*at).ok_or(DecodeError::Truncated)?;
        *at += 1;
        v += usize::from(byte & 0x7f) << shift;
        if v > 1 << 28 {
            return Err(DecodeError::Overflow);
        }
        if byte & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
    }
}

/// The decoder's state: its dynamic table and scratch buffers.
pub(crate) struct Decoder {
    table: Table,
    /// The largest size a size update may ask for (our SETTINGS_HEADER_TABLE_SIZE).
    allowed: usize,
    name: Vec<u8>,
    value: Vec<u8>,
}

/// Where a string's bytes are after [`Decoder::string`]: in the block itself (raw) or in
/// a scratch buffer (Huffman).
enum Str {
    Raw(usize, usize),
    Scratch,
}

impl Decoder {
    /// A decoder whose table may grow to `allowed` bytes (it starts there, §4.2).
    pub(crate) fn new(allowed: usize) -> Decoder {
        Decoder {
            table: Table::new(allowed),
            allowed,
            name: Vec::new(),
            value: Vec::new(),
        }
    }

    #[cfg(test)]
    pub(crate) fn table(&self) -> &Table {
        &self.table
    }

    /// Decodes one header block, handing each field to `field` in order.
    pub(crate) fn decode(
        &mut self,
        b: &[u8],
        field: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<(), DecodeError> {
        let mut at = 0;
        let mut first = true;
        while at < b.len() {
            let byte = b[at];
            if byte & 0x80 != 0 {
                let i = integer(b, &mut at, 7)?;
                let (n, v) = self.lookup(i)?;
                field(n, v);
            } else if byte & 0xe0 == 0x20 {
                let size = integer(b, &mut at, 5)?;
                if !first || size > self.allowed {
                    return Err(DecodeError::BadSizeUpdate(size));
                }
                self.table.set_max(size);
                continue;
            } else {
                // 01: with incremental indexing (6-bit index); 0000 / 0001: without / never
                // (4-bit index).
                let indexing = byte & 0x40 != 0;
                let i = integer(b, &mut at, if indexing { 6 } else { 4 })?;
                if indexing {
                    let mut entry = self.table.buffer();
                    let name_len = if i == 0 {
                        self.string_into(b, &mut at, &mut entry)?
                    } else {
                        let n = self.lookup(i)?.0;
                        entry.extend_from_slice(n);
                        n.len()
                    };
                    self.string_into(b, &mut at, &mut entry)?;
                    field(&entry[..name_len], &entry[name_len..]);
                    self.table.insert(entry, name_len);
                } else {
                    let mut name = std::mem::take(&mut self.name);
                    let mut value = std::mem::take(&mut self.value);
                    name.clear();
                    value.clear();
                    let r = self.literal(b, &mut at, i, &mut name, &mut value, field);
                    self.name = name;
                    self.value = value;
                    r?;
                }
            }
            first = false;
        }
        Ok(())
    }

    /// A literal without indexing (or never indexed) whose name is index `i` or, with 0,
    /// the next string.
    fn literal(
        &self,
        b: &[u8],
        at: &mut usize,
        i: usize,
        name: &mut Vec<u8>,
        value: &mut Vec<u8>,
        field: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<(), DecodeError> {
        let n = if i == 0 {
            Some(self.string(b, at, name)?)
        } else {
            None
        };
        let v = match self.string(b, at, value)? {
            Str::Raw(s, e) => &b[s..e],
            Str::Scratch => &value[..],
        };
        match n {
            None => field(self.lookup(i)?.0, v),
            Some(Str::Raw(s, e)) => field(&b[s..e], v),
            Some(Str::Scratch) => field(name, v),
        }
        Ok(())
    }

    /// Index `i` of the static (1-61) and dynamic (62-) tables.
    fn lookup(&self, i: usize) -> Result<(&[u8], &[u8]), DecodeError> {
        match i {
            0 => Err(DecodeError::BadIndex(0)),
            1..=61 => {
                let (n, v) = STATIC[i - 1];
                Ok((n.as_bytes(), v.as_bytes()))
            }
            _ => self.table.get(i - 62).ok_or(DecodeError::BadIndex(i)),
        }
    }

    /// Reads a string literal: raw strings are left in the block, Huffman ones decoded
    /// into `scratch`.
    fn string(&self, b: &[u8], at: &mut usize, scratch: &mut Vec<u8>) -> Result<Str, DecodeError> {
        let huff = *b.get(*at).ok_or(DecodeError::Truncated)? & 0x80 != 0;
        let len = integer(b, at, 7)?;
        let start = *at;
        let end = start.checked_add(len).filter(|&e| e <= b.len());
        let end = end.ok_or(DecodeError::Truncated)?;
        *at = end;
        if huff {
            huffman::decode(&b[start..end], scratch).map_err(|_| DecodeError::Huffman)?;
            Ok(Str::Scratch)
        } else {
            Ok(Str::Raw(start, end))
        }
    }

    /// Reads a string literal onto the end of `out`; returns its decoded length.
    fn string_into(
        &self,
        b: &[u8],
        at: &mut usize,
        out: &mut Vec<u8>,
    ) -> Result<usize, DecodeError> {
        let before = out.len();
        if let Str::Raw(s, e) = self.string(b, at, out)? {
            out.extend_from_slice(&b[s..e]);
        }
        Ok(out.len() - before)
    }
}
