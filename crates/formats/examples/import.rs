//! Imports result files the way `volley report` does, and prints what was read: for
//! `bench/import.sh` on a machine without a release build of the whole CLI (this builds in
//! a fraction of the time) and for profiling the readers alone.
//!
//!     cargo run --release -p volley-formats --example import -- FILE...

fn main() {
    let mut failed = false;
    for path in std::env::args().skip(1) {
        match volley_formats::open(std::path::Path::new(&path)) {
            Ok(src) => {
                let tests: u64 = src.series.intervals.iter().map(|i| i.tests).sum();
                let errors: u64 = src.series.intervals.iter().map(|i| i.errors).sum();
                println!(
                    "{path}: {:?}, {} intervals, {tests} tests, {errors} errors, {} histograms",
                    src.format,
                    src.series.intervals.len(),
                    src.histograms.len()
                );
            }
            Err(e) => {
                eprintln!("{path}: {e}");
                failed = true;
            }
        }
    }
    std::process::exit(i32::from(failed) * 2);
}
