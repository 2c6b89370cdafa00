//! Every file reader on arbitrary bytes and on mutated real files (cut at random points,
//! bytes flipped, lines duplicated, shuffled, deleted, fields replaced by NaN, huge or
//! negative numbers): it never panics, it finishes within a few seconds, and it allocates in
//! proportion to its input (inputs are at most 64 KB; no reader may size an allocation from
//! a length field in the file). The inputs come from a seeded PRNG, so a failure names the
//! reader and case that reproduce it.

// A counting allocator measures what each input costs: the only unsafe code of the crate,
// and only in this test.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use volley_formats::{Format, HistKey, open, open_as};

mod common;

/// Largest input.
const MAX_INPUT: usize = 64 * 1024;
/// Inputs per reader.
const CASES: usize = 300;
/// Longest an input may take to read (a debug build on a shared machine).
const MAX_TIME: Duration = Duration::from_secs(5);
/// Most a reader may allocate at once beyond what it held before, per input.
const MAX_ALLOCATED: usize = 256 << 20;

thread_local! {
    static LIVE: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

/// Counts the bytes each thread holds, and the peak since the last reset.
struct Counting;

// SAFETY: forwards to the system allocator; the counters are plain thread-local cells.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        let _ = LIVE.try_with(|l| l.set(l.get().saturating_sub(layout.size())));
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            let _ = LIVE.try_with(|l| l.set(l.get().saturating_sub(layout.size())));
            grew(new_size);
        }
        p
    }
}

fn grew(size: usize) {
    let _ = LIVE.try_with(|l| {
        let now = l.get() + size;
        l.set(now);
        let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
    });
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f`, returning what it allocated at its peak beyond what the thread held before.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(before));
    let out = f();
    (out, PEAK.with(Cell::get).saturating_sub(before))
}

/// Values that break readers: not numbers, NaN, infinities, negatives, integer limits.
const TOKENS: &[&str] = &[
    "",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "Infinity",
    "-1",
    "-0",
    "0",
    "1.5",
    "1e308",
    "-1e308",
    "99999999999999999999",
    "18446744073709551615",
    "-9223372036854775808",
    "2147483647",
    "-2147483648",
    "N/A",
    "null",
    "\"",
    "\t",
    ",",
    "true",
    "1969-12-31T23:59:59Z",
    "9999-12-31T23:59:59Z",
    "{",
    "}",
];

/// A mutation of `seed`.
fn mutate(rng: &mut fastrand::Rng, seed: &[u8], binary: bool) -> Vec<u8> {
    let mut data = seed.to_vec();
    for _ in 0..rng.usize(1..=4) {
        let lines = |d: &[u8]| -> Vec<Vec<u8>> {
            d.split_inclusive(|&b| b == b'\n')
                .map(<[u8]>::to_vec)
                .collect()
        };
        // Bad values in fields (text) and in length, count and time fields (binary) find the
        // most: they are drawn more often.
        let kind = match rng.u8(0..10) {
            0..=3 if binary => 2,
            0..=3 => 5,
            k => k - 2,
        };
        match kind {
            0 => data.truncate(rng.usize(0..=data.len())),
            1 => {
                for _ in 0..rng.usize(1..=8) {
                    if !data.is_empty() {
                        let i = rng.usize(0..data.len());
                        data[i] ^= rng.u8(1..=255);
                    }
                }
            }
            2 if binary => {
                // Overwrite 4 bytes with an extreme i32 (length and count fields).
                for _ in 0..rng.usize(1..=4) {
                    if data.len() >= 4 {
                        let i = rng.usize(0..=data.len() - 4);
                        let v: i32 = *rng
                            .choice(&[
                                i32::MAX,
                                i32::MIN,
                                i32::MIN + 1,
                                -1,
                                0,
                                1 << 20,
                                1 << 30,
                                -(1 << 30),
                                7,
                            ])
                            .unwrap();
                        data[i..i + 4].copy_from_slice(&v.to_be_bytes());
                    }
                }
            }
            3 if binary => {
                // Duplicate a chunk.
                if !data.is_empty() {
                    let a = rng.usize(0..data.len());
                    let b = rng.usize(a..=data.len().min(a + 64));
                    let chunk = data[a..b].to_vec();
                    let at = rng.usize(0..=data.len());
                    data.splice(at..at, chunk);
                }
            }
            2 | 3 => {
                let mut ls = lines(&data);
                if !ls.is_empty() {
                    let i = rng.usize(0..ls.len());
                    if rng.bool() {
                        let l = ls[i].clone();
                        ls.insert(rng.usize(0..=ls.len()), l);
                    } else {
                        ls.remove(i);
                    }
                }
                data = ls.concat();
            }
            4 => {
                // Shuffle the lines after the first (the header) or all of them.
                let mut ls = lines(&data);
                let from = usize::from(rng.bool() && !ls.is_empty());
                rng.shuffle(&mut ls[from..]);
                data = ls.concat();
            }
            5 => {
                // Replace a field of a line by a bad value.
                let mut ls = lines(&data);
                if !ls.is_empty() {
                    let i = rng.usize(0..ls.len());
                    let line = String::from_utf8_lossy(&ls[i]).into_owned();
                    let sep = if line.contains('\t') { '\t' } else { ',' };
                    let mut fields: Vec<&str> = line.trim_end_matches('\n').split(sep).collect();
                    // Mostly a field that holds a number.
                    let numeric: Vec<usize> = (0..fields.len())
                        .filter(|&i| fields[i].trim().parse::<f64>().is_ok())
                        .collect();
                    let f = match rng.choice(&numeric) {
                        Some(&i) if rng.u8(0..4) > 0 => i,
                        _ => rng.usize(0..fields.len()),
                    };
                    fields[f] = rng.choice(TOKENS).unwrap();
                    ls[i] = format!("{}\n", fields.join(&sep.to_string())).into_bytes();
                }
                data = ls.concat();
            }
            6 => {
                let at = rng.usize(0..=data.len());
                let junk: Vec<u8> = (0..rng.usize(1..32)).map(|_| rng.u8(..)).collect();
                data.splice(at..at, junk);
            }
            _ => {
                // Swap two lines.
                let mut ls = lines(&data);
                if ls.len() >= 2 {
                    let (a, b) = (rng.usize(0..ls.len()), rng.usize(0..ls.len()));
                    ls.swap(a, b);
                }
                data = ls.concat();
            }
        }
    }
    data.truncate(MAX_INPUT);
    data
}

/// The first 64 KB of a file, cut at a line end (a binary file as it is).
fn seed(path: &Path, binary: bool) -> Vec<u8> {
    let mut bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if bytes.len() > MAX_INPUT {
        bytes.truncate(MAX_INPUT);
        if !binary {
            let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
            bytes.truncate(end);
        }
    }
    bytes
}

/// One input for a reader of `seeds`: arbitrary bytes (after the format's first line, half
/// of the time), or a mutated seed.
fn input(rng: &mut fastrand::Rng, seeds: &[Vec<u8>], binary: bool) -> Vec<u8> {
    let seed = rng.choice(seeds).unwrap();
    if rng.u8(0..5) == 0 {
        let mut out = Vec::new();
        if rng.bool() {
            let first = seed
                .iter()
                .position(|&b| b == b'\n')
                .map_or(seed.len().min(64), |p| p + 1);
            out.extend_from_slice(&seed[..first]);
        }
        out.extend((0..rng.usize(0..4096)).map(|_| rng.u8(..)));
        out
    } else {
        mutate(rng, seed, binary)
    }
}

/// Reads `path` as `format` (and by detection), checking time and memory; `Err` says what
/// went wrong.
fn check(path: &Path, format: Option<Format>) -> Result<(), String> {
    let started = Instant::now();
    let (result, allocated) = peak_of(|| {
        std::panic::catch_unwind(|| {
            for forced in [format, None] {
                if let Ok(src) = open_as(path, forced) {
                    // Use what was read: the totals, the notes, the merged histograms.
                    // The metric suite over it, as a report computes it (sums must not overflow).
                    for series in
                        std::iter::once(&src.series).chain(src.per_test.iter().map(|(_, s)| s))
                    {
                        let _ = volley_stats::SeedSuite::compute(
                            series,
                            volley_stats::SuiteOptions::default(),
                        );
                    }
                    let _: Vec<String> = src.input_notes.iter().map(ToString::to_string).collect();
                    let _ = src.latency(HistKey::TOTAL, 0.0);
                    let _ = src.latency(HistKey::TTFB, 0.0);
                    assert!(
                        src.series
                            .intervals
                            .iter()
                            .all(|i| i.period_s.is_finite() && i.start_s.is_finite()),
                        "a non-finite interval"
                    );
                }
            }
        })
    });
    let took = started.elapsed();
    if let Err(panic) = result {
        let what = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        return Err(format!("panicked: {what}"));
    }
    if took > MAX_TIME {
        return Err(format!("took {took:?}"));
    }
    if allocated > MAX_ALLOCATED {
        return Err(format!("allocated {} MB at its peak", allocated >> 20));
    }
    Ok(())
}

/// Fuzzes the reader of `format` with seeds from `files` (relative to `fixtures/`).
fn fuzz(name: &str, format: Format, files: &[&str], seed: u64) {
    let binary = format == Format::GatlingBinary;
    let seeds: Vec<Vec<u8>> = files
        .iter()
        .map(|f| self::seed(&common::fixtures().join(f), binary))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut failures = Vec::new();
    for case in 0..CASES {
        let data = input(&mut rng, &seeds, binary);
        let path = dir.path().join(format!("input-{case}"));
        std::fs::write(&path, &data).unwrap();
        if let Err(why) = check(&path, Some(format)) {
            let keep = std::env::temp_dir().join(format!("volley-fuzz-{name}-{case}"));
            let _ = std::fs::write(&keep, &data);
            failures.push(format!(
                "case {case} ({} bytes, kept at {}): {why}",
                data.len(),
                keep.display()
            ));
        }
        let _ = std::fs::remove_file(&path);
    }
    assert!(
        failures.is_empty(),
        "{name}: {} of {CASES} inputs failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn ngrinder() {
    fuzz(
        "ngrinder",
        Format::Ngrinder,
        &[
            "ngrinder/ngrinder_neven7_output.csv",
            "ngrinder/ngrinder_hkoikoi_zookeeper-lock-1000-3-result.csv",
            "bad/ngrinder_cut.csv",
        ],
        1,
    );
}

#[test]
fn k6_csv() {
    fuzz(
        "k6-csv",
        Format::K6Csv,
        &[
            "imports/generated_k6-v1.2.3_out.csv",
            "bad/k6_clock_back.csv",
            "bad/k6_vus_nan.csv",
        ],
        2,
    );
}

#[test]
fn k6_json() {
    fuzz(
        "k6-json",
        Format::K6Json,
        &[
            "imports/generated_k6-v1.2.3_out.json",
            "imports/k6_json_kirilly_k6-results.json",
            "bad/k6json_clock_back.json",
        ],
        3,
    );
}

#[test]
fn k6_summary() {
    fuzz(
        "k6-summary",
        Format::K6Summary,
        &[
            "imports/generated_k6-v1.2.3_summary-export.json",
            "imports/k6_summary-export_legacy_sirhcc_k6-results.json",
        ],
        4,
    );
}

#[test]
fn jmeter() {
    fuzz(
        "jtl",
        Format::Jtl,
        &[
            "imports/jmeter_sunjida_results_small.jtl",
            "imports/jmeter_felipesuarezB_resultados_with_errors.jtl",
            "imports/jmeter_abdulkuddus_results_subsamples.jtl",
        ],
        5,
    );
}

#[test]
fn locust_history() {
    fuzz(
        "locust-history",
        Format::LocustHistory,
        &[
            "imports/generated_locust2.47.0_fullhistory_stats_history.csv",
            "imports/locust_motiur12_results_stats_history.csv",
        ],
        6,
    );
}

#[test]
fn locust_stats() {
    fuzz(
        "locust-stats",
        Format::LocustStats,
        &[
            "imports/generated_locust2.47.0_fullhistory_stats.csv",
            "imports/locust_motiur12_results_stats.csv",
        ],
        7,
    );
}

#[test]
fn gatling_text() {
    fuzz(
        "gatling",
        Format::Gatling,
        &[
            "imports/gatling_3.8.3_nelson_closemodel_simulation.log",
            "imports/gatling_3.8.3_nelson_flujoreusocheckoutcorregido_simulation.log",
        ],
        8,
    );
}

#[test]
fn gatling_binary() {
    fuzz(
        "gatling-binary",
        Format::GatlingBinary,
        &[
            "imports/gatling_binary_3.13plus_gatling-repo_known_stats_simulation.log",
            "bad/gatbin_clock_back.log",
        ],
        9,
    );
}

/// A run directory with its files mutated one at a time (series.csv, latency.hlog, run.json).
#[test]
fn run_directory() {
    let good = common::fixtures()
        .join("bad")
        .join("rundir_running_elsewhere");
    let files = ["series.csv", "latency.hlog", "run.json"];
    let seeds: Vec<Vec<u8>> = files.iter().map(|f| seed(&good.join(f), false)).collect();
    let dir = tempfile::tempdir().unwrap();
    let mut rng = fastrand::Rng::with_seed(10);
    let mut failures = Vec::new();
    for case in 0..CASES {
        let run: PathBuf = dir.path().join(format!("run-{case}"));
        std::fs::create_dir(&run).unwrap();
        let which = rng.usize(0..files.len());
        for (i, f) in files.iter().enumerate() {
            let data = if i == which {
                input(&mut rng, &seeds[i..=i], false)
            } else {
                seeds[i].clone()
            };
            std::fs::write(run.join(f), data).unwrap();
        }
        if let Err(why) = check(&run, Some(Format::Volley)) {
            failures.push(format!(
                "case {case} ({} mutated, kept at {}): {why}",
                files[which],
                run.display()
            ));
            continue;
        }
        let _ = std::fs::remove_dir_all(&run);
    }
    if !failures.is_empty() {
        let kept = dir.keep();
        panic!(
            "run directory: {} of {CASES} inputs failed (kept in {}):\n{}",
            failures.len(),
            kept.display(),
            failures.join("\n")
        );
    }
    // The untouched directory reads.
    assert_eq!(open(&good).unwrap().series.tests(), 40);
}
