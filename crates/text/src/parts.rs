//! Reading one large text file on every core: the file is cut into parts at line ends, the
//! parts are read at once by a few threads, and their results are added up in file order
//! into what one pass over the file gives — exactly, or the reader falls back to one pass.
//!
//! A part read ahead of the ones before it does not know what they hold, so it guesses (no
//! record before it made any of its own late, no request of its threads is still open, the
//! line end it starts at is not inside a quoted field); the format says after the fact
//! whether the guess held ([`Parts::exact`]), and when it did not the part is read again,
//! in order, after the ones before it. A quoted field holding a line end is caught that way:
//! the part before it reads its last record to its true end, past the cut, and the next
//! part is read again from there. Nothing a part reads on a guess is kept unless checked.
//!
//! Memory: each thread holds its part's bytes (the part size, plus the record running past
//! its end) and at most [`WINDOW`] parts' results wait to be added up; the sum holds what
//! one pass holds.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, mpsc};

/// Parts read but not yet added up, at most (in parts ahead of the next one to add).
pub const WINDOW: usize = 4;
/// Bytes read past a part's end for its last record, and looked through for a place to cut,
/// at first (doubled while too few). Small: a record is a line or a few, and every byte of
/// a margin is read twice (a 64 KB margin and cut window added an eighth to the bytes a 1 MB
/// part copies from the kernel).
const MARGIN: usize = 1 << 12;
/// Bytes looked through for a place to cut, at most, from where a part should end: a file
/// without one there (a k6 NDJSON file written with another key order, a record many MB
/// long) is read in one pass, streamed, rather than as one part held whole.
const CUT_SEARCH: usize = 16 << 20;

/// How a part is read.
pub enum How<'a, S, A> {
    /// Ahead of the parts before it, on the grid `S` the first parts placed.
    Guess(&'a S),
    /// Right after the parts added up in `A`: exactly what one pass reads.
    After(&'a A),
}

/// What reading a part gave.
pub enum Outcome<P> {
    /// The part; `consumed` bytes of the buffer hold its records (its last one may run past
    /// the part's own end), `newlines` line ends in them.
    Read {
        part: P,
        consumed: usize,
        newlines: u64,
    },
    /// A record starting in the part runs past the end of the buffer: read more.
    NeedMore,
    /// The file is wrong here (the error's line counted from the buffer's start): read
    /// in order, it is the error to report; read on a guess, the part is read again.
    Failed(crate::Error),
}

/// A format read in parts.
pub trait Parts: Sync {
    /// What the parts added up so far hold.
    type Acc;
    /// What a part read ahead needs from the first parts (the interval grid's origin).
    type Seed: Sync;
    /// One part's result.
    type Part: Send;

    /// Where, in `window` (bytes from the middle of the file), a part may start: just
    /// after a line end, at a line the format can be cut before. `None` when there is none.
    fn cut(&self, window: &[u8]) -> Option<usize> {
        memchr::memchr(b'\n', window).map(|i| i + 1)
    }

    /// Reads the records that start in `buf[..own]` (`buf` runs on past them, to the end of
    /// what is read when `at_end`); lines are counted from 1 at `buf`'s start.
    fn read(
        &self,
        buf: &[u8],
        own: usize,
        at_end: bool,
        how: How<'_, Self::Seed, Self::Acc>,
    ) -> Outcome<Self::Part>;

    /// The seed for parts read ahead, once `acc` has placed the grid.
    fn seed(&self, acc: &Self::Acc) -> Option<Self::Seed>;

    /// Whether `part`, read on a guess, is what one pass reads after `acc`.
    fn exact(&self, part: &Self::Part, acc: &Self::Acc) -> bool;

    /// Adds `part`, whose lines are counted from its own start, after `line_base` lines.
    fn absorb(&self, acc: &mut Self::Acc, part: Self::Part, line_base: u64);
}

/// Where and how to read.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Byte where the records start (after the header).
    pub start: u64,
    /// Byte where they end (the file's length, or where its cut-off last line starts).
    pub limit: u64,
    /// Bytes per part.
    pub part: u64,
    /// Threads reading parts.
    pub threads: usize,
}

impl Plan {
    /// Parts of `part` bytes, read by `VOLLEY_IMPORT_THREADS` threads (default: one per core).
    pub fn new(start: u64, limit: u64, part: u64) -> Plan {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = std::env::var("VOLLEY_IMPORT_THREADS")
            .ok()
            .and_then(|t| t.parse().ok())
            .filter(|&t| t > 0)
            .unwrap_or(cores);
        Plan {
            start,
            limit,
            part,
            threads,
        }
    }
}

/// Why reading in parts stopped.
#[derive(Debug)]
enum Stop {
    /// The file cannot be read apart (it could not be read at some offset): read it in
    /// one pass.
    Fallback,
    /// The file is wrong: the error one pass reports, with its place in the file.
    Failed(crate::Error),
}
use Stop::Fallback;

/// `e` with its line counted from the file's start rather than a part's.
pub fn rebase(e: crate::Error, base: u64) -> crate::Error {
    e.rebased(base)
}

/// Opens the file at `path` and reads its first bytes (64 KB at most, none past `limit`),
/// where a format read in parts finds its header.
pub fn head(path: &std::path::Path, limit: u64) -> crate::Result<(File, Vec<u8>)> {
    let io = |e| crate::Error::io(path, e);
    let file = File::open(path).map_err(io)?;
    let mut head = vec![0u8; limit.min(1 << 16) as usize];
    file.read_exact_at(&mut head, 0).map_err(io)?;
    Ok((file, head))
}

/// Reads `file`'s records in parts, adding them up into `acc` (which holds the header's
/// lines: `line_base`). Returns the line ends read up to `plan.limit`, or `None` when the file
/// must be read in one pass instead.
pub fn read<P: Parts>(
    file: &File,
    plan: Plan,
    p: &P,
    acc: &mut P::Acc,
    line_base: u64,
) -> crate::Result<Option<u64>> {
    match read_stopping(file, plan, p, acc, line_base) {
        Ok(lines) => Ok(Some(lines)),
        Err(Stop::Failed(e)) => Err(e),
        Err(Fallback) => Ok(None),
    }
}

fn read_stopping<P: Parts>(
    file: &File,
    plan: Plan,
    p: &P,
    acc: &mut P::Acc,
    line_base: u64,
) -> Result<u64, Stop> {
    let starts = cuts(file, plan, p)?;
    let end_of = |i: usize| starts.get(i + 1).copied().unwrap_or(plan.limit);
    let (mut pos, mut lines) = (plan.start, line_base);
    let mut next = 0;
    // The first parts one after the other, until one places the grid.
    let mut buf = Vec::new();
    let seed = loop {
        if let Some(seed) = p.seed(acc) {
            break seed;
        }
        if next == starts.len() {
            return Ok(lines);
        }
        (pos, lines) = read_after(file, plan, p, acc, &mut buf, pos, end_of(next), lines)?;
        next += 1;
    };
    if next == starts.len() {
        return Ok(lines);
    }
    let first = next;
    let state = Mutex::new(first); // parts added up so far
    let (wake, abort) = (Condvar::new(), AtomicBool::new(false));
    let taken = Mutex::new(first);
    let (tx, rx) = mpsc::channel::<(usize, Result<Outcome<P::Part>, Stop>)>();
    std::thread::scope(|scope| -> Result<u64, Stop> {
        for _ in 0..plan.threads.max(1) {
            let tx = tx.clone();
            let (state, wake, abort, taken, starts, seed) =
                (&state, &wake, &abort, &taken, &starts, &seed);
            scope.spawn(move || {
                let mut buf = Vec::new();
                loop {
                    let i = {
                        let mut t = taken.lock().unwrap_or_else(|e| e.into_inner());
                        let i = *t;
                        *t += 1;
                        i
                    };
                    if i >= starts.len() {
                        return;
                    }
                    {
                        let mut done = state.lock().unwrap_or_else(|e| e.into_inner());
                        while i >= *done + WINDOW && !abort.load(Ordering::Relaxed) {
                            done = wake.wait(done).unwrap_or_else(|e| e.into_inner());
                        }
                    }
                    if abort.load(Ordering::Relaxed) {
                        return;
                    }
                    let end = starts.get(i + 1).copied().unwrap_or(plan.limit);
                    let got = read_part(file, plan, p, &mut buf, starts[i], end, How::Guess(seed));
                    if tx.send((i, got)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        let stop = |r| {
            abort.store(true, Ordering::Relaxed);
            wake.notify_all();
            r
        };
        let mut waiting = BTreeMap::new();
        for (i, &start) in starts.iter().enumerate().skip(first) {
            let got = loop {
                if let Some(got) = waiting.remove(&i) {
                    break got;
                }
                match rx.recv() {
                    Ok((j, got)) => {
                        waiting.insert(j, got);
                    }
                    Err(_) => return stop(Err(Fallback)),
                }
            };
            let guessed = match got {
                Ok(Outcome::Read {
                    part,
                    consumed,
                    newlines,
                }) if start == pos && p.exact(&part, acc) => Some((part, consumed, newlines)),
                _ => None, // read again, in order
            };
            match guessed {
                Some((part, consumed, newlines)) => {
                    p.absorb(acc, part, lines);
                    pos = start + consumed as u64;
                    lines += newlines;
                }
                None => match read_after(file, plan, p, acc, &mut buf, pos, end_of(i), lines) {
                    Ok(at) => (pos, lines) = at,
                    Err(f) => return stop(Err(f)),
                },
            }
            *state.lock().unwrap_or_else(|e| e.into_inner()) = i + 1;
            wake.notify_all();
        }
        Ok(lines)
    })
}

/// Reads the records from `pos` (where the parts added up end) that start before `end`,
/// exactly, and adds them up. Returns where they end and the lines read so far.
#[allow(clippy::too_many_arguments)]
fn read_after<P: Parts>(
    file: &File,
    plan: Plan,
    p: &P,
    acc: &mut P::Acc,
    buf: &mut Vec<u8>,
    pos: u64,
    end: u64,
    lines: u64,
) -> Result<(u64, u64), Stop> {
    if pos >= end {
        return Ok((pos, lines)); // the part's records all belong to a record before it
    }
    match read_part(file, plan, p, buf, pos, end, How::After(acc))? {
        Outcome::Read {
            part,
            consumed,
            newlines,
        } => {
            p.absorb(acc, part, lines);
            Ok((pos + consumed as u64, lines + newlines))
        }
        Outcome::Failed(e) => Err(Stop::Failed(rebase(e, lines))),
        Outcome::NeedMore => Err(Fallback),
    }
}

/// Reads the part `[start, end)` into `buf` (with a margin past `end` for its last record,
/// grown while a record runs past it) and reads its records.
fn read_part<P: Parts>(
    file: &File,
    plan: Plan,
    p: &P,
    buf: &mut Vec<u8>,
    start: u64,
    end: u64,
    how: How<'_, P::Seed, P::Acc>,
) -> Result<Outcome<P::Part>, Stop> {
    let own = (end - start) as usize;
    let mut margin = MARGIN;
    loop {
        let to = (end + margin as u64).min(plan.limit);
        let len = (to - start) as usize;
        buf.resize(len, 0);
        file.read_exact_at(buf, start).map_err(|_| Fallback)?;
        let at_end = to == plan.limit;
        let how = match &how {
            How::Guess(s) => How::Guess(*s),
            How::After(a) => How::After(*a),
        };
        match p.read(buf, own, at_end, how) {
            Outcome::NeedMore if !at_end => margin *= 2,
            Outcome::NeedMore => return Err(Fallback),
            got => return Ok(got),
        }
    }
}

/// Where each part starts: `plan.start`, then the first cut at or after every `plan.part`
/// bytes (parts left empty by a long line dropped). A stretch of [`CUT_SEARCH`] bytes without
/// a cut sends the file to one pass.
fn cuts<P: Parts>(file: &File, plan: Plan, p: &P) -> Result<Vec<u64>, Stop> {
    let mut starts = vec![plan.start];
    let mut window = Vec::new();
    let mut at = plan.start + plan.part.max(1);
    while at < plan.limit {
        let mut size = MARGIN;
        let found = loop {
            let to = (at + size as u64).min(plan.limit);
            window.resize((to - at) as usize, 0);
            file.read_exact_at(&mut window, at).map_err(|_| Fallback)?;
            // A cut right at `at` needs the byte before it to be a line end: look from one
            // byte back.
            let back = if at > plan.start { 1 } else { 0 };
            let mut with_prev = vec![0u8; back];
            if back == 1 {
                file.read_exact_at(&mut with_prev, at - 1)
                    .map_err(|_| Fallback)?;
            }
            with_prev.extend_from_slice(&window);
            match p.cut(&with_prev) {
                Some(off) => break Some(at - back as u64 + off as u64),
                None if to == plan.limit => break None,
                None if size >= CUT_SEARCH => return Err(Fallback),
                None => size *= 2,
            }
        };
        let Some(s) = found else { break };
        if s >= plan.limit {
            break;
        }
        if s > *starts.last().unwrap_or(&0) {
            starts.push(s);
        }
        at = at.max(s) + plan.part.max(1);
    }
    Ok(starts)
}
