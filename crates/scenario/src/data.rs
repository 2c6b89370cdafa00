//! CSV feeders: rows of test data handed to VUs each iteration, as `{{ name.column }}`.
//!
//! The orders are the ones JMeter and Gatling users know: `per_vu` (every VU reads the
//! file from the top, in order — JMeter's "current thread"), `shared` (one cursor for all
//! VUs — Gatling's `circular`), `random`, and `unique` rows that are never reused
//! (Gatling's `queue`): when they run out, the run stops and says so.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use minijinja::Value;

use crate::PlanError;

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
    pub fn load(name: &str, file: &Path, order: Order, unique: bool) -> Result<Feeder, PlanError> {
        let mut reader = csv::ReaderBuilder::new()
            .trim(csv::Trim::All)
            .from_path(file)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let columns: Vec<String> = reader
            .headers()
            .map_err(|e| format!("{}: {e}", file.display()))?
            .iter()
            .map(str::to_string)
            .collect();
        let mut rows = Vec::new();
        for (i, rec) in reader.records().enumerate() {
            let rec = rec.map_err(|e| match e.kind() {
                csv::ErrorKind::UnequalLengths { expected_len, len, .. } => format!(
                    "{} line {}: {len} fields, the header has {expected_len}",
                    file.display(),
                    i + 2
                ),
                _ => format!("{} line {}: {e}", file.display(), i + 2),
            })?;
            let row: std::collections::BTreeMap<String, String> =
                columns.iter().cloned().zip(rec.iter().map(str::to_string)).collect();
            rows.push(Value::from(row));
        }
        if rows.is_empty() {
            return Err(PlanError(format!("{} has no rows below its header", file.display())));
        }
        Ok(Feeder { name: name.to_string(), file: file.to_path_buf(), columns, rows, order, unique, cursor: AtomicUsize::new(0) })
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
        let seq: Vec<String> = (0..4).map(|_| email(per_vu.next(&mut a).unwrap())).collect();
        assert_eq!(seq, ["a@x", "b@x", "c@x", "a@x"]);
        assert_eq!(email(per_vu.next(&mut b).unwrap()), "a@x", "every VU starts at the top");
        let shared = feeder(Order::Shared, false);
        let seq: Vec<String> = (0..4).map(|k| email(shared.next(&mut [a, b][k % 2].clone()).unwrap())).collect();
        assert_eq!(seq, ["a@x", "b@x", "c@x", "a@x"]);
        let unique = feeder(Order::Shared, true);
        for _ in 0..3 {
            unique.next(&mut a).unwrap();
        }
        let e = unique.next(&mut a).unwrap_err();
        assert!(e.0.contains("ran out: all 3 unique rows were used"), "{}", e.0);
        let random = feeder(Order::Random, false);
        assert!((0..20).all(|_| ["a@x", "b@x", "c@x"].contains(&email(random.next(&mut a).unwrap()).as_str())));
    }

    #[test]
    fn a_ragged_row_names_its_line() {
        let dir = std::env::temp_dir().join(format!("volley-feeder-{}", fastrand::u64(..)));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("bad.csv");
        std::fs::write(&f, "email,name\na@x,A\nb@x\n").unwrap();
        let e = Feeder::load("bad", &f, Order::Shared, false).unwrap_err();
        assert!(e.ends_with("line 3: 1 fields, the header has 2"), "{e}");
    }
}
