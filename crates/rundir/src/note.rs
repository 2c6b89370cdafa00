//! What a reader says about input it could not take as it stood: rows it skipped (how
//! many, which lines, why), rows it used although they were out of order, a record cut off
//! at the end of the file, figures the file cannot give. Nothing is dropped or invented in
//! silence: every such case becomes an [`InputNote`], which the report renders among its
//! notes and serializes as it is.

use serde::Serialize;

use crate::numfmt::group_thousands;

/// Places listed in a note; the rest are counted.
pub const PLACES_SHOWN: usize = 10;

/// What the rows of a file are called in a note.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// A line or CSV row.
    Row,
    /// A request rebuilt from several rows (k6 samples).
    Request,
    /// A sample of a k6 metric that is not a request (the `vus` gauge).
    Sample,
    /// A record of a binary file.
    Record,
}

impl Unit {
    fn name(self, n: u64) -> &'static str {
        match (self, n == 1) {
            (Unit::Row, true) => "row",
            (Unit::Row, false) => "rows",
            (Unit::Request, true) => "request",
            (Unit::Request, false) => "requests",
            (Unit::Sample, true) => "sample",
            (Unit::Sample, false) => "samples",
            (Unit::Record, true) => "record",
            (Unit::Record, false) => "records",
        }
    }
}

/// How places in a file are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Locator {
    /// 1-based lines.
    #[default]
    Line,
    /// 0-based byte offsets (binary files).
    Byte,
}

/// Where in a file: a line, or a byte offset in a binary file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Place {
    /// A 1-based line.
    Line(u64),
    /// A 0-based byte offset.
    Byte(u64),
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Line(n) => write!(f, "line {n}"),
            Place::Byte(n) => write!(f, "byte {n}"),
        }
    }
}

/// Some rows of a file: how many, and where the first [`PLACES_SHOWN`] are.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Rows {
    /// How many.
    pub count: u64,
    /// Where the first few are.
    pub at: Vec<u64>,
    /// Whether `at` holds lines or byte offsets.
    pub locator: Locator,
}

impl Rows {
    /// No rows yet, located by `locator`.
    pub fn new(locator: Locator) -> Rows {
        Rows {
            count: 0,
            at: Vec::new(),
            locator,
        }
    }

    /// Adds the row at `place` (a line, or a byte offset).
    pub fn push(&mut self, place: u64) {
        self.count += 1;
        if self.at.len() < PLACES_SHOWN {
            self.at.push(place);
        }
    }
}

impl std::fmt::Display for Rows {
    /// `line 17`, `lines 17, 90, 1022`, `lines 1, 2, …, 10 and 5 more`, `bytes 40, 96`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let word = match (self.locator, self.count == 1) {
            (Locator::Line, true) => "line",
            (Locator::Line, false) => "lines",
            (Locator::Byte, true) => "byte",
            (Locator::Byte, false) => "bytes",
        };
        let list: Vec<String> = self.at.iter().map(u64::to_string).collect();
        write!(f, "{word} {}", list.join(", "))?;
        let more = self.count.saturating_sub(self.at.len() as u64);
        if more > 0 {
            write!(f, " and {} more", group_thousands(more))?;
        }
        Ok(())
    }
}

/// A figure a source may be unable to give: the metric table's ([`volley_stats::metric`]).
pub use volley_stats::Figure;

/// Something a reader did with input it could not take as it stood.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum InputNote {
    /// Something `volley merge` found in one of the segments it merged (run.json's
    /// `merged.notes`), as it said it.
    Merged {
        /// The note, naming its segment.
        note: String,
    },
    /// Rows left out of every figure.
    Skipped {
        /// What the rows are.
        unit: Unit,
        /// Which.
        rows: Rows,
        /// Why they could not be used.
        why: String,
    },
    /// Rows used, with something a reader must know about them and what was done.
    Used {
        /// What the rows are.
        unit: Unit,
        /// Which.
        rows: Rows,
        /// What was special about them and what was done, as a clause without a subject
        /// (`stamped earlier than the row above …: placed 2 s after it`).
        how: String,
    },
    /// The file ends inside a record (the writer stopped while writing it): the record is
    /// left out, everything before it is reported.
    CutOff {
        /// The file's name.
        file: String,
        /// Where the cut record starts.
        at: Place,
    },
    /// The requests do not fill the file's first and last intervals (a run starts and
    /// stops inside a second): those intervals are cut to the time the requests cover, so
    /// each interval's TPS is its successes per second of traffic; an edge holding less
    /// than half an interval is folded into its neighbour.
    Span {
        /// From the earliest request's start to the latest one's end, s.
        span_s: f64,
        /// Traffic in the first interval, s.
        first_s: f64,
        /// Traffic in the last interval, s.
        last_s: f64,
        /// Whether the first interval was folded into the second.
        first_folded: bool,
        /// Whether the last interval was folded into the one before it.
        last_folded: bool,
        /// The interval, s.
        interval_s: f64,
    },
    /// The file's time stamps are whole seconds, so how much of its first and last
    /// intervals the requests fill is unknown: they count in every total but are left out
    /// of TPS (average and percentiles).
    EdgesUnknown {
        /// The interval, s.
        interval_s: f64,
        /// Whether the first interval is left out of TPS.
        first: bool,
        /// Whether the last interval is left out of TPS.
        last: bool,
        /// Why their coverage is unknown.
        why: String,
    },
    /// Requests the tool made but did not write to this file.
    NotInFile {
        /// How many, when another file of the same run tells.
        requests: Option<u64>,
        /// Why they are missing and where the count comes from.
        why: String,
    },
    /// A figure this source cannot give: reports show it as n/a.
    Unavailable {
        /// Which.
        figure: Figure,
        /// Why.
        why: String,
    },
}

impl std::fmt::Display for InputNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputNote::Skipped { unit, rows, why } => {
                write!(
                    f,
                    "{} {} skipped ({rows}): {why}",
                    group_thousands(rows.count),
                    unit.name(rows.count)
                )
            }
            InputNote::Merged { note } => write!(f, "merged segments: {note}"),
            InputNote::Used { unit, rows, how } => write!(
                f,
                "{} {} ({rows}): {how}",
                group_thousands(rows.count),
                unit.name(rows.count)
            ),
            InputNote::CutOff {
                file,
                at: Place::Line(n),
            } => write!(
                f,
                "{file}: the last line (line {n}) has no line end: the file was cut off while it was being written, so that line is left out and everything before it is reported."
            ),
            InputNote::CutOff {
                file,
                at: Place::Byte(n),
            } => write!(
                f,
                "{file}: the file ends inside a record (from byte {n}): it was cut off while it was being written, so that record is left out and everything before it is reported."
            ),
            InputNote::Unavailable { figure, why } => write!(f, "{} n/a: {why}", figure.label()),
            InputNote::Span {
                span_s,
                first_s,
                last_s,
                first_folded,
                last_folded,
                interval_s,
            } => {
                let edge = |name: &str, s: f64, folded: bool, into: &str| {
                    if s >= interval_s - 5e-4 {
                        format!("the {name} interval is full")
                    } else if folded {
                        format!(
                            "the {name} holds {s:.3} s of traffic and is folded into the interval {into}"
                        )
                    } else {
                        format!("the {name} holds {s:.3} s of traffic and is cut to it")
                    }
                };
                write!(
                    f,
                    "The requests span {span_s:.3} s (earliest start to latest end), not whole {interval_s} s intervals: {}; {}. Each interval's TPS is its successes per second of the traffic it holds (an edge under half an interval is folded, so no TPS rests on a sliver).",
                    edge("first", *first_s, *first_folded, "after it"),
                    edge("last", *last_s, *last_folded, "before it"),
                )
            }
            InputNote::EdgesUnknown {
                interval_s,
                first,
                last,
                why,
            } => {
                let which = match (first, last) {
                    (true, true) => "the first and the last",
                    (true, false) => "the first",
                    _ => "the last",
                };
                let (them, rows) = if *first && *last {
                    ("both count", "those rows")
                } else {
                    ("it counts", "that row")
                };
                write!(
                    f,
                    "{why}, so how much of {which} {interval_s} s interval the requests fill is unknown: {them} in every total but not in the TPS average and percentiles (TPS n/a in {rows})."
                )
            }
            InputNote::NotInFile {
                requests: Some(n),
                why,
            } => write!(
                f,
                "{} {} not in this file: {why}",
                volley_scenario::words::counted(group_thousands(*n), "request"),
                if *n == 1 { "is" } else { "are" }
            ),
            InputNote::NotInFile {
                requests: None,
                why,
            } => write!(f, "Some requests are not in this file: {why}"),
        }
    }
}

/// Collects row notes while a file is read, one note per reason, in order of first use.
#[derive(Debug, Clone, Default)]
pub struct NoteBook {
    notes: Vec<InputNote>,
    locator: Locator,
}

impl NoteBook {
    /// A note book for a file whose places are `locator`s.
    pub fn new(locator: Locator) -> NoteBook {
        NoteBook {
            notes: Vec::new(),
            locator,
        }
    }

    /// Skips the `unit` at `place` because of `why`.
    pub fn skip(&mut self, unit: Unit, place: u64, why: &str) {
        self.add(
            place,
            |n| matches!(n, InputNote::Skipped { unit: u, why: w, .. } if *u == unit && w == why),
            |rows| InputNote::Skipped {
                unit,
                rows,
                why: why.to_string(),
            },
        );
    }

    /// Uses the `unit` at `place`, saying `how`.
    pub fn used(&mut self, unit: Unit, place: u64, how: &str) {
        self.add(
            place,
            |n| matches!(n, InputNote::Used { unit: u, how: h, .. } if *u == unit && h == how),
            |rows| InputNote::Used {
                unit,
                rows,
                how: how.to_string(),
            },
        );
    }

    /// Adds `place` to the note `same` picks out, or starts one with `new`.
    fn add(
        &mut self,
        place: u64,
        same: impl Fn(&InputNote) -> bool,
        new: impl FnOnce(Rows) -> InputNote,
    ) {
        fn rows_of(n: &mut InputNote) -> Option<&mut Rows> {
            match n {
                InputNote::Skipped { rows, .. } | InputNote::Used { rows, .. } => Some(rows),
                _ => None,
            }
        }
        if let Some(rows) = self.notes.iter_mut().filter(|n| same(n)).find_map(rows_of) {
            rows.push(place);
            return;
        }
        let mut rows = Rows::new(self.locator);
        rows.push(place);
        self.notes.push(new(rows));
    }

    /// Adds the notes of a later part of the same file, as if one book had seen both:
    /// places of notes about the same thing join (the first [`PLACES_SHOWN`] kept), the
    /// others follow. `line_base` is added to the later part's places when they are lines
    /// counted from its own start.
    pub fn absorb(&mut self, later: NoteBook, line_base: u64) {
        fn rows_of(n: &mut InputNote) -> Option<&mut Rows> {
            match n {
                InputNote::Skipped { rows, .. } | InputNote::Used { rows, .. } => Some(rows),
                _ => None,
            }
        }
        for mut note in later.notes {
            if let Some(rows) = rows_of(&mut note)
                && rows.locator == Locator::Line
            {
                rows.at.iter_mut().for_each(|at| *at += line_base);
            }
            let same = |n: &InputNote, note: &InputNote| match (n, note) {
                (
                    InputNote::Skipped {
                        unit: a, why: x, ..
                    },
                    InputNote::Skipped {
                        unit: b, why: y, ..
                    },
                ) => a == b && x == y,
                (
                    InputNote::Used {
                        unit: a, how: x, ..
                    },
                    InputNote::Used {
                        unit: b, how: y, ..
                    },
                ) => a == b && x == y,
                _ => false,
            };
            let joined = match self.notes.iter_mut().find(|n| same(n, &note)) {
                Some(mine) => match (rows_of(mine), rows_of(&mut note)) {
                    (Some(a), Some(b)) => {
                        a.count += b.count;
                        let room = PLACES_SHOWN.saturating_sub(a.at.len());
                        a.at.extend(b.at.iter().take(room));
                        true
                    }
                    _ => false,
                },
                None => false,
            };
            if !joined {
                self.notes.push(note);
            }
        }
    }

    /// Adds a note as it is.
    pub fn push(&mut self, note: InputNote) {
        self.notes.push(note);
    }

    /// Rows skipped so far, of any reason.
    pub fn skipped(&self) -> u64 {
        self.notes
            .iter()
            .map(|n| {
                if let InputNote::Skipped { rows, .. } = n {
                    rows.count
                } else {
                    0
                }
            })
            .sum()
    }

    /// The notes.
    pub fn into_notes(self) -> Vec<InputNote> {
        self.notes
    }
}

/// Where a text file was cut off: the byte offset and 1-based line of its last line, when
/// that line has no line end and is not the file's only line. Tools end every line they
/// write, so a last line without an end was cut off while it was being written.
pub fn cut_last_line(text: &[u8]) -> Option<(usize, u64)> {
    if text.is_empty() || text.ends_with(b"\n") {
        return None;
    }
    let start = text.iter().rposition(|&b| b == b'\n')? + 1;
    if text[start..].iter().all(|b| b.is_ascii_whitespace()) {
        return None;
    }
    let line = text[..start].iter().filter(|&&b| b == b'\n').count() as u64 + 1;
    Some((start, line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_read_as_sentences() {
        let mut book = NoteBook::new(Locator::Line);
        for line in [17, 90, 1022] {
            book.skip(Unit::Row, line, "the elapsed time is NaN");
        }
        book.skip(Unit::Row, 5, "the time stamp is negative");
        let notes = book.into_notes();
        assert_eq!(
            notes[0].to_string(),
            "3 rows skipped (lines 17, 90, 1022): the elapsed time is NaN"
        );
        assert_eq!(
            notes[1].to_string(),
            "1 row skipped (line 5): the time stamp is negative"
        );
        let mut rows = Rows::new(Locator::Line);
        for l in 1..=1234 {
            rows.push(l);
        }
        assert_eq!(
            rows.to_string(),
            "lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 1,224 more"
        );
    }

    #[test]
    fn cut_last_lines() {
        assert_eq!(cut_last_line(b"a\nb\n"), None);
        assert_eq!(cut_last_line(b"a\nb"), Some((2, 2)));
        assert_eq!(
            cut_last_line(b"only"),
            None,
            "a file's only line is not cut off"
        );
        assert_eq!(cut_last_line(b"a\r\nb\r\nc,"), Some((6, 3)));
        assert_eq!(cut_last_line(b"a\n  "), None);
    }
}
