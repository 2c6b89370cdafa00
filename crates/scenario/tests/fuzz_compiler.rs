//! A property test of the scenario compiler: whatever the bytes, `parse_scenario` returns
//! (a scenario or errors) without panicking, within a time bound per input, and without
//! unbounded allocation (the process's peak resident memory is measured per input).
//!
//! Inputs are arbitrary bytes and mutations of the example files (truncation, flipped
//! bytes, duplicated, shuffled and dropped lines, deep nesting, long strings, alias bombs),
//! from a seeded PRNG so that a failure repeats. `VOLLEY_FUZZ_ROUNDS` runs more rounds
//! (default 60 per mutation), `VOLLEY_FUZZ_SEED` another seed.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use volley_scenario::parse_scenario;

/// The slowest an input may take (a debug build on a shared, busy machine).
const TIME_BOUND: Duration = Duration::from_secs(5);
/// The most the peak resident memory may grow for one input.
const MEMORY_BOUND_KB: u64 = 300 * 1024;

/// Memory is measured per process: one test at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn examples() -> Vec<(PathBuf, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    ["pair-room.yaml", "chat.yaml"]
        .iter()
        .map(|n| {
            let p = dir.join(n);
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect()
}

fn rounds() -> usize {
    std::env::var("VOLLEY_FUZZ_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60)
}

fn rng(salt: u64) -> fastrand::Rng {
    let seed = std::env::var("VOLLEY_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5ce4_a710);
    fastrand::Rng::with_seed(seed ^ salt)
}

/// Peak resident memory since the last reset, KB (`None` where /proc does not tell).
fn peak_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn current_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Resets the peak to the current size (Linux: `5` to clear_refs); false where it cannot.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Parses `text` as the file at `path`; fails the test on a panic, a slow input or a
/// memory peak beyond the bound, showing the input.
fn check(what: &str, path: &Path, text: &str) {
    let measured = reset_peak();
    let before = current_kb();
    let started = Instant::now();
    let result =
        std::panic::catch_unwind(|| parse_scenario(path, text, &|_| Some("x".into())).map(|_| ()));
    let took = started.elapsed();
    let shown: String = text.chars().take(400).collect();
    assert!(result.is_ok(), "{what}: panicked on\n{shown}");
    assert!(took < TIME_BOUND, "{what}: took {took:?} on\n{shown}");
    if let Ok(Err(errors)) = &result {
        assert!(
            !errors.problems().is_empty(),
            "{what}: an error without problems"
        );
        for e in errors.problems() {
            assert!(!e.message.is_empty(), "{what}: an empty message");
        }
    }
    if measured && let (Some(b), Some(peak)) = (before, peak_kb()) {
        let grew = peak.saturating_sub(b);
        assert!(
            grew < MEMORY_BOUND_KB,
            "{what}: peak memory grew by {grew} KB on\n{shown}"
        );
    }
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn arbitrary_bytes() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut r = rng(1);
    let path = Path::new("/nonexistent/fuzz.yaml");
    for i in 0..rounds() * 4 {
        let len = r.usize(0..2048);
        // Half the time from YAML's own alphabet, so that the parser gets past the first byte.
        let alphabet = b"-:{}[],&*!|>'\"#%@` \n\t\r abcxyz019.$~?<";
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                if i % 2 == 0 {
                    r.u8(..)
                } else {
                    alphabet[r.usize(..alphabet.len())]
                }
            })
            .collect();
        check(&format!("bytes #{i}"), path, &lossy(&bytes));
        // As a file, bytes as they are: not UTF-8 is a problem with a line, not a panic.
        if i % 8 == 0 {
            let file =
                std::env::temp_dir().join(format!("volley-fuzz-{}-{i}.yaml", std::process::id()));
            std::fs::write(&file, &bytes).unwrap();
            let loaded =
                std::panic::catch_unwind(|| volley_scenario::load_scenario(&file).map(|_| ()));
            let _ = std::fs::remove_file(&file);
            assert!(
                matches!(loaded, Ok(Err(_)) | Ok(Ok(()))),
                "bytes #{i} as a file: panicked"
            );
        }
    }
}

#[test]
fn mutated_examples() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut r = rng(2);
    for (path, text) in examples() {
        let lines: Vec<&str> = text.lines().collect();
        for i in 0..rounds() {
            // Truncated anywhere.
            let cut = r.usize(0..=text.len());
            check("truncated", &path, &lossy(&text.as_bytes()[..cut]));
            // Bytes flipped.
            let mut bytes = text.clone().into_bytes();
            for _ in 0..r.usize(1..8) {
                let k = r.usize(..bytes.len());
                bytes[k] ^= 1 << r.u8(0..8);
            }
            check("flipped", &path, &lossy(&bytes));
            // Lines duplicated, dropped, shuffled.
            let mut ls: Vec<&str> = lines.clone();
            match i % 3 {
                0 => {
                    for _ in 0..r.usize(1..6) {
                        let k = r.usize(..lines.len());
                        ls.insert(r.usize(..=ls.len()), lines[k]);
                    }
                }
                1 => {
                    for _ in 0..r.usize(1..6) {
                        if !ls.is_empty() {
                            ls.remove(r.usize(..ls.len()));
                        }
                    }
                }
                _ => {
                    let a = r.usize(..ls.len());
                    let b = r.usize(..ls.len());
                    ls.swap(a, b);
                    r.shuffle(&mut ls[a.min(b)..a.max(b)]);
                }
            }
            check("lines", &path, &ls.join("\n"));
            // Indentation shifted on one line.
            let mut ls: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            let k = r.usize(..ls.len());
            ls[k] = format!("{}{}", " ".repeat(r.usize(0..6)), ls[k].trim_start());
            check("indent", &path, &ls.join("\n"));
        }
    }
}

#[test]
fn hostile_shapes() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut r = rng(3);
    let (path, text) = examples().remove(0);
    let steps_at = text.find("steps:").unwrap();
    for i in 0..rounds() / 4 + 1 {
        let depth = r.usize(10..20_000);
        // Deep flow and block nesting, at the top and inside a step.
        check(
            "deep flow",
            &path,
            &format!(
                "{}steps: {}{}\n",
                &text[..steps_at],
                "[".repeat(depth),
                "]".repeat(depth)
            ),
        );
        check(
            "deep open",
            &path,
            &format!("{}x: {}\n", &text, "{a: ".repeat(depth)),
        );
        let block: String = (0..depth.min(3000))
            .map(|d| format!("{}- \n", " ".repeat(d * 2)))
            .collect();
        check("deep block", &path, &format!("{text}\nx:\n{block}"));
        // Long strings in values, keys and templates.
        let long = "x".repeat(r.usize(1_000..2_000_000));
        check(
            "long value",
            &path,
            &text.replacen(
                "request: POST /api/pair-room",
                &format!("request: POST /{long}"),
                1,
            ),
        );
        check("long key", &path, &format!("{text}\n{long}: 1\n"));
        check(
            "long template",
            &path,
            &text.replacen("{{ vu }}", &format!("{{{{ vu ~ '{long}' }}}}"), 1),
        );
        check(
            "many braces",
            &path,
            &text.replacen("driver-", &"{{".repeat(r.usize(1..50_000)), 1),
        );
        // Alias bombs: each level repeats the one before.
        let fan = r.usize(2..12);
        let mut bomb = format!("{text}\nb0: &b0 [{}]\n", vec!["lol"; fan].join(", "));
        for k in 1..r.usize(5..30) {
            bomb.push_str(&format!(
                "b{k}: &b{k} [{}]\n",
                vec![format!("*b{}", k - 1); fan].join(", ")
            ));
        }
        check(&format!("alias bomb #{i}"), &path, &bomb);
        // Many distinct expressions in one string.
        let distinct: String = (0..r.usize(1_000..30_000))
            .map(|k| format!("{{{{ {k} }}}}"))
            .collect();
        check(
            "distinct expressions",
            &path,
            &format!("target: http://x\nsteps:\n  - request: GET /{distinct}\n"),
        );
        // Many steps, and many templates.
        let n = r.usize(100..25_000);
        let mut many = String::from("target: http://x\nsteps:\n");
        for k in 0..n {
            many.push_str(&format!("  - request: GET /{k}/{{{{ vu }}}}\n"));
        }
        check("many steps", &path, &many);
    }
}
