//! HPACK's dynamic table (RFC 7541 §2.3.2, §4): newest entry first, evicted from the oldest
//! end to stay within its size, where an entry counts its name and value lengths plus 32.
//! An evicted entry's buffer is kept for the next insert, so a table that churns at a
//! steady size allocates nothing.

use std::collections::VecDeque;

/// The per-entry overhead counted in a table's size.
pub(crate) const ENTRY_OVERHEAD: usize = 32;

struct Entry {
    /// The name's bytes, then the value's.
    bytes: Vec<u8>,
    name_len: usize,
}

/// A dynamic table.
pub(crate) struct Table {
    entries: VecDeque<Entry>,
    spare: Vec<Vec<u8>>,
    size: usize,
    max: usize,
    /// Changes on every insert or eviction: a block encoded against one epoch is the same
    /// block while the epoch stays.
    epoch: u64,
}

impl Table {
    pub(crate) fn new(max: usize) -> Table {
        Table {
            entries: VecDeque::new(),
            spare: Vec::new(),
            size: 0,
            max,
            epoch: 0,
        }
    }

    /// Entry `i` (0: the newest) as (name, value).
    pub(crate) fn get(&self, i: usize) -> Option<(&[u8], &[u8])> {
        self.entries
            .get(i)
            .map(|e| (&e.bytes[..e.name_len], &e.bytes[e.name_len..]))
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The table's size as RFC 7541 §4.1 counts it.
    #[cfg(test)]
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    pub(crate) fn max(&self) -> usize {
        self.max
    }

    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Sets the table's maximum size, evicting what no longer fits.
    pub(crate) fn set_max(&mut self, max: usize) {
        self.max = max;
        self.epoch += 1;
        self.evict_to(max);
    }

    fn evict_to(&mut self, room: usize) {
        while self.size > room {
            let e = self
                .entries
                .pop_back()
                .expect("a non-empty table has entries");
            self.size -= e.name_len + (e.bytes.len() - e.name_len) + ENTRY_OVERHEAD;
            self.recycle(e.bytes);
            self.epoch += 1;
        }
    }

    fn recycle(&mut self, mut bytes: Vec<u8>) {
        if self.spare.len() < 8 && bytes.capacity() <= 4096 {
            bytes.clear();
            self.spare.push(bytes);
        }
    }

    /// A buffer to write a new entry's name and then value into, for [`Table::insert`].
    pub(crate) fn buffer(&mut self) -> Vec<u8> {
        self.spare.pop().unwrap_or_default()
    }

    /// Inserts an entry whose name is `bytes[..name_len]` and value the rest, evicting as
    /// needed; an entry larger than the whole table empties it and is not kept (§4.4).
    pub(crate) fn insert(&mut self, bytes: Vec<u8>, name_len: usize) {
        let size = bytes.len() + ENTRY_OVERHEAD;
        self.epoch += 1;
        if size > self.max {
            self.evict_to(0);
            self.recycle(bytes);
            return;
        }
        self.evict_to(self.max - size);
        self.size += size;
        self.entries.push_front(Entry { bytes, name_len });
    }

    /// The index (0: newest) of an entry of `name` with `value`, else of `name` alone:
    /// `(index, exact)`.
    pub(crate) fn find(&self, name: &[u8], value: &[u8]) -> Option<(usize, bool)> {
        let mut by_name = None;
        for (i, e) in self.entries.iter().enumerate() {
            if &e.bytes[..e.name_len] == name {
                if &e.bytes[e.name_len..] == value {
                    return Some((i, true));
                }
                by_name.get_or_insert(i);
            }
        }
        by_name.map(|i| (i, false))
    }
}
