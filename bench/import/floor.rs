//! The least a reader of nGrinder's output.csv can do, as a yardstick for `volley report` on
//! the same file: read the file, split each line at its commas and parse every field after the
//! `DateTime` with the standard library's `str::parse::<f64>` (Eisel–Lemire, the fast_float
//! algorithm), on one core, without checks or notes. With `store`, each row's numbers are also
//! kept, 15 `f64` a row in a vector reserved once (the size of volley's per-second interval);
//! nothing is computed from them.
//!   rustc -O -o floor floor.rs && ./floor FILE [store]
use std::hint::black_box;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: floor FILE [store]");
    let store = args.next().as_deref() == Some("store");
    let text = std::fs::read(&path).expect("read the file");
    let mut rows: Vec<[f64; 15]> = if store {
        Vec::with_capacity(text.len() / 70)
    } else {
        Vec::new()
    };
    let mut sum = 0.0;
    for line in text
        .split(|&b| b == b'\n')
        .skip(1)
        .filter(|l| !l.is_empty())
    {
        let mut row = [0.0; 15];
        for (i, field) in line.split(|&b| b == b',').enumerate().skip(1) {
            let v: f64 = std::str::from_utf8(field)
                .expect("UTF-8")
                .parse()
                .expect("a number");
            sum += v;
            row[i.min(14)] = v;
        }
        if store {
            rows.push(row);
        }
    }
    black_box(&rows);
    println!("{} rows kept, sum {sum}", rows.len());
}
