//! CSV feeders: rows of test data handed to VUs each iteration, as `{{ name.column }}`.
//!
//! The orders are the ones JMeter and Gatling users know: `per_vu` (every VU reads the
//! file from the top, in order — JMeter's "current thread"), `shared` (one cursor for all
//! VUs — Gatling's `circular`), `random`, and `unique` rows that are never reused
//! (Gatling's `queue`): when they run out, the run stops and says so.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use minijinja::Value;

use crate::Error;

/// How rows are handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Each VU reads the rows in order from the first, wrapping around.
    PerVu,
    /// All VUs take the next row from one cursor, wrapping around (or not, when unique).
    Shared,
    /// A random row each iteration.
    Random,
}

impl Order {
    /// The YAML word for it.
    pub fn name(self) -> &'static str {
        match self {
            Order::PerVu => "per_vu",
            Order::Shared => "shared",
            Order::Random => "random",
        }
    }

    /// Parses the YAML value.
    pub fn parse(s: &str) -> Option<Order> {
        match s {
            "per_vu" => Some(Order::PerVu),
            "shared" => Some(Order::Shared),
            "random" => Some(Order::Random),
            _ => None,
        }
    }
}

/// One CSV file of test data.
#[derive(Debug)]
pub struct Feeder {
    /// The name templates use (`{{ users.email }}`).
    pub name: String,
    /// The file, resolved against the scenario's directory.
    pub file: PathBuf,
    /// Column names, from the header row.
    pub columns: Vec<String>,
    /// Each row as a map from column to value.
    pub rows: Vec<Value>,
    /// How rows are handed out.
    pub order: Order,
    /// Rows are used once; the run stops when they run out.
    pub unique: bool,
    cursor: AtomicUsize,
}

/// The unique rows of a feeder are used up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exhausted(pub String);

impl Feeder {
    /// Reads `file` (a CSV with a header row).
    pub fn load(name: &str, file: &Path, order: Order, unique: bool) -> Result<Feeder, Error> {
        let input = crate::limits::open_bounded(file, crate::limits::MAX_DATA_FILE)?;
        let mut reader = csv::ReaderBuilder::new()
            .trim(csv::Trim::All)
            .from_reader(input);
        let columns: Vec<String> = reader
            .headers()
            .map_err(|e| format!("{}: {e}", file.display()))?
            .iter()
            .map(str::to_string)
            .collect();
        let mut rows = Vec::new();
        for (i, rec) in reader.records().enumerate() {
            let rec = rec.map_err(|e| match e.kind() {
                csv::ErrorKind::UnequalLengths {
                    expected_len, len, ..
                } => format!(
                    "{} line {}: {len} fields, the header has {expected_len}",
                    file.display(),
                    i + 2
                ),
                _ => format!("{} line {}: {e}", file.display(), i + 2),
            })?;
            let row: std::collections::BTreeMap<String, String> = columns
                .iter()
                .cloned()
                .zip(rec.iter().map(str::to_string))
                .collect();
            rows.push(Value::from(row));
        }
        if rows.is_empty() {
            return Err(Error::value(format!(
                "{} has no rows below its header",
                file.display()
            )));
        }
        Ok(Feeder {
            name: name.to_string(),
            file: file.to_path_buf(),
            columns,
            rows,
            order,
            unique,
            cursor: AtomicUsize::new(0),
        })
    }

    /// The row for a VU's next iteration; `per_vu_next` is that VU's own position.
    pub fn next(&self, per_vu_next: &mut usize) -> Result<Value, Exhausted> {
        let n = self.rows.len();
        let i = match self.order {
            Order::PerVu => {
                let i = *per_vu_next;
                *per_vu_next += 1;
                if self.unique && i >= n {
                    return Err(self.exhausted());
                }
                i % n
            }
            Order::Shared => {
                let i = self.cursor.fetch_add(1, Ordering::Relaxed);
                if self.unique && i >= n {
                    return Err(self.exhausted());
                }
                i % n
            }
            Order::Random => fastrand::usize(..n),
        };
        Ok(self.rows[i].clone())
    }

    /// This feeder as segment `seg` of a split run sees it: a `shared` feeder (one cursor for
    /// all VUs) keeps rows `i`, `i + N`, `i + 2N`, … of its file, so the segments' cursors
    /// together walk the file once and `unique` rows are never used by two segments.
    /// `per_vu` and `random` feeders give each VU the whole file, so they stay whole.
    pub fn for_segment(&self, seg: crate::Segment) -> Result<Feeder, Error> {
        let rows: Vec<Value> = match self.order {
            Order::Shared => self
                .rows
                .iter()
                .enumerate()
                .filter(|(r, _)| seg.owns(*r as u64))
                .map(|(_, v)| v.clone())
                .collect(),
            Order::PerVu | Order::Random => self.rows.clone(),
        };
        if rows.is_empty() {
            return Err(Error::value(format!(
                "data `{}` ({}) has {} rows, too few to give each of {} segments one; add rows or run fewer segments",
                self.name,
                self.file.display(),
                self.rows.len(),
                seg.count
            )));
        }
        Ok(Feeder {
            name: self.name.clone(),
            file: self.file.clone(),
            columns: self.columns.clone(),
            rows,
            order: self.order,
            unique: self.unique,
            cursor: AtomicUsize::new(0),
        })
    }

    fn exhausted(&self) -> Exhausted {
        Exhausted(format!(
            "data `{}` ({}) ran out: all {} unique rows were used; add rows or drop `unique: true`",
            self.name,
            self.file.display(),
            self.rows.len()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feeder(order: Order, unique: bool) -> Feeder {
        let dir = std::env::temp_dir().join(format!("volley-feeder-{}", fastrand::u64(..)));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("users.csv");
        std::fs::write(&f, "email,name\na@x,A\nb@x,B\nc@x,C\n").unwrap();
        Feeder::load("users", &f, order, unique).unwrap()
    }

    fn email(v: Value) -> String {
        v.get_attr("email").unwrap().to_string()
    }

    #[test]
    fn orders_hand_out_rows_as_documented() {
        let per_vu = feeder(Order::PerVu, false);
        let (mut a, mut b) = (0, 0);
        let seq: Vec<String> = (0..4)
            .map(|_| email(per_vu.next(&mut a).unwrap()))
            .collect();
        assert_eq!(seq, ["a@x", "b@x", "c@x", "a@x"]);
        assert_eq!(
            email(per_vu.next(&mut b).unwrap()),
            "a@x",
            "every VU starts at the top"
        );
        let shared = feeder(Order::Shared, false);
        let seq: Vec<String> = (0..4)
            .map(|k| email(shared.next(&mut [a, b][k % 2].clone()).unwrap()))
            .collect();
        assert_eq!(seq, ["a@x", "b@x", "c@x", "a@x"]);
        let unique = feeder(Order::Shared, true);
        for _ in 0..3 {
            unique.next(&mut a).unwrap();
        }
        let e = unique.next(&mut a).unwrap_err();
        assert!(
            e.0.contains("ran out: all 3 unique rows were used"),
            "{}",
            e.0
        );
        let random = feeder(Order::Random, false);
        assert!((0..20).all(|_| {
            ["a@x", "b@x", "c@x"].contains(&email(random.next(&mut a).unwrap()).as_str())
        }));
    }

    #[test]
    fn shared_rows_are_partitioned_between_segments() {
        let dir = std::env::temp_dir().join(format!("volley-feeder-{}", fastrand::u64(..)));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("ids.csv");
        let text: String = std::iter::once("id\n".to_string())
            .chain((0..23).map(|i| format!("{i}\n")))
            .collect();
        std::fs::write(&f, text).unwrap();
        for n in [1u64, 2, 3, 5, 23] {
            let whole = Feeder::load("ids", &f, Order::Shared, true).unwrap();
            let mut used = Vec::new();
            for i in 0..n {
                let part = whole
                    .for_segment(crate::Segment::new(i, n).unwrap())
                    .unwrap();
                let mut pos = 0;
                while let Ok(v) = part.next(&mut pos) {
                    used.push(
                        v.get_attr("id")
                            .unwrap()
                            .to_string()
                            .parse::<u32>()
                            .unwrap(),
                    );
                }
            }
            used.sort();
            assert_eq!(
                used,
                (0..23).collect::<Vec<_>>(),
                "{n} segments: every unique row used exactly once"
            );
        }
        let whole = Feeder::load("ids", &f, Order::Shared, true).unwrap();
        let e = whole
            .for_segment(crate::Segment::new(23, 24).unwrap())
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("too few to give each of 24 segments one"),
            "{e}"
        );
        let per_vu = Feeder::load("ids", &f, Order::PerVu, false).unwrap();
        assert_eq!(
            per_vu
                .for_segment(crate::Segment::new(1, 4).unwrap())
                .unwrap()
                .rows
                .len(),
            23,
            "per-VU files stay whole"
        );
    }

    #[test]
    fn a_ragged_row_names_its_line() {
        let dir = std::env::temp_dir().join(format!("volley-feeder-{}", fastrand::u64(..)));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("bad.csv");
        std::fs::write(&f, "email,name\na@x,A\nb@x\n").unwrap();
        let e = Feeder::load("bad", &f, Order::Shared, false).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("line 3: 1 fields, the header has 2"),
            "{e}"
        );
    }
}
