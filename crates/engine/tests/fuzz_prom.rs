//! A property test of the Prometheus text parser and of what the scraper keeps from a page
//! (`scrape::Readings::take`): whatever the text, neither panics, each input is read within
//! a time bound, and the process's peak resident memory (VmHWM) grows by a bounded amount
//! per input, however many series the page lists; over many scrapes of pages whose series
//! are new every time, the peak does not keep growing.
//!
//! Inputs are arbitrary text from the format's own alphabet, mutations of the real pages in
//! `crates/prom/tests/fixtures` (cut, bytes flipped, lines duplicated, shuffled and dropped, values
//! replaced by NaN, ±Inf, 1e308, 309 digits, negatives, HTML put in front) and hostile pages
//! (30,000 new series, one line of megabytes, 60,000 `# TYPE` lines, thousands of labels),
//! from a seeded PRNG so that a failure repeats. `VOLLEY_FUZZ_ROUNDS` runs more rounds
//! (default 40 per kind), `VOLLEY_FUZZ_SEED` another seed.

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use volley_engine::scrape::{MAX_SERIES, Readings};
use volley_prom as prom;

/// The slowest an input may take (a debug build on a shared, busy machine).
const TIME_BOUND: Duration = Duration::from_secs(10);
/// The most the peak resident memory may grow while one input is read, beyond the input.
const MEMORY_BOUND_KB: u64 = 96 * 1024;

/// Memory is measured per process: one test at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn rounds() -> usize {
    std::env::var("VOLLEY_FUZZ_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40)
}

fn rng(salt: u64) -> fastrand::Rng {
    let seed = std::env::var("VOLLEY_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x9e37_79b9);
    fastrand::Rng::with_seed(seed ^ salt)
}

fn status_kb(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Resets the peak to the current size (Linux: `5` to clear_refs); false where it cannot.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn fixtures() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../prom/tests/fixtures");
    [
        "node_exporter.prom",
        "demo_target.prom",
        "spring_boot_2.7.18_actuator.prom",
    ]
    .iter()
    .map(|n| std::fs::read_to_string(dir.join(n)).unwrap())
    .collect()
}

/// Reads `text` as the parser and as two scrapes; fails on a panic, a slow input or a
/// memory peak beyond the bound, showing the input's start.
fn check(what: &str, text: &str) {
    let measured = reset_peak();
    let before = status_kb("VmRSS:");
    let started = Instant::now();
    let result = std::panic::catch_unwind(|| {
        // The whole-page parse keeps every sample: only for small pages, as its callers do.
        if text.len() <= 64 << 10 {
            let e = prom::parse(text);
            assert!(e.samples.len() + e.errors.len() <= text.lines().count());
        }
        let mut r = Readings::default();
        let t0 = Instant::now();
        for k in 0..2u64 {
            if let Ok((values, notes)) = r.take(text, t0 + Duration::from_secs(k + 1)) {
                assert!(values.len() <= MAX_SERIES, "{} values", values.len());
                for (series, value, _) in &values {
                    assert!(
                        value.is_finite() && value.abs() <= 1.9e19,
                        "{series} {value}"
                    );
                }
                for n in &notes {
                    assert!(n.count > 0 && !n.why.is_empty());
                    assert!(n.first.chars().count() <= 201, "{}", n.first.len());
                }
            }
        }
    });
    let took = started.elapsed();
    let shown: String = text.chars().take(300).collect();
    assert!(result.is_ok(), "{what}: panicked on\n{shown}");
    assert!(took < TIME_BOUND, "{what}: took {took:?} on\n{shown}");
    if measured && let (Some(b), Some(peak)) = (before, status_kb("VmHWM:")) {
        let grew = peak.saturating_sub(b);
        assert!(
            grew < MEMORY_BOUND_KB,
            "{what}: peak memory grew by {grew} KB on a page of {} bytes:\n{shown}",
            text.len()
        );
    }
}

#[test]
fn arbitrary_text() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut r = rng(1);
    let alphabet: Vec<char> = "m_:{}=\",\\# \n\t0123456789.eE+-InfNaTYPEHELPcountergauge<>é"
        .chars()
        .collect();
    for i in 0..rounds() * 2 {
        let len = r.usize(0..2048);
        let text: String = (0..len)
            .map(|_| alphabet[r.usize(..alphabet.len())])
            .collect();
        check(&format!("text #{i}"), &text);
    }
}

#[test]
fn mutated_real_pages() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut r = rng(2);
    let pages = fixtures();
    let odd = [
        "NaN",
        "+Inf",
        "-Inf",
        "1e308",
        "-1",
        "5.0",
        "1e-320",
        "0x10",
        "",
        "9".repeat(309).leak(),
    ];
    for i in 0..rounds() * 2 {
        let page = &pages[i % pages.len()];
        let mut lines: Vec<String> = page.lines().map(String::from).collect();
        let text = match i % 7 {
            0 => {
                let mut cut = r.usize(0..=page.len());
                while !page.is_char_boundary(cut) {
                    cut -= 1;
                }
                page[..cut].to_string()
            }
            1 => {
                let mut b = page.clone().into_bytes();
                for _ in 0..r.usize(1..40) {
                    let at = r.usize(..b.len());
                    b[at] = r.u8(..);
                }
                String::from_utf8_lossy(&b).into_owned()
            }
            2 => {
                for _ in 0..r.usize(1..50) {
                    let at = r.usize(..lines.len());
                    lines.insert(r.usize(..lines.len()), lines[at].clone());
                }
                lines.join("\n")
            }
            3 => {
                r.shuffle(&mut lines);
                lines.join("\n")
            }
            4 => {
                lines.retain(|_| r.bool());
                lines.join("\n")
            }
            5 => {
                for l in lines.iter_mut().filter(|l| !l.starts_with('#')) {
                    if r.bool()
                        && let Some(sp) = l.rfind(' ')
                    {
                        l.replace_range(sp + 1.., odd[r.usize(..odd.len())]);
                    }
                }
                lines.join("\n")
            }
            _ => format!("<!DOCTYPE html>\n<html>\n{page}"),
        };
        check(&format!("mutation #{i} ({})", i % 7), &text);
    }
}

/// Pages built to exhaust a reader: each is read within the memory bound.
#[test]
fn hostile_pages() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut churn = String::from("# TYPE c counter\n");
    for i in 0..3 * MAX_SERIES {
        churn.push_str(&format!("c_total{{id=\"{i}\",path=\"/a/b/{i}\"}} {i}\n"));
    }
    check("30,000 series", &churn);
    let findings: String = (0..3 * MAX_SERIES)
        .map(|i| format!("hikaricp_connections_pending{{pool=\"{i}\"}} 1\n"))
        .collect();
    check("30,000 series of a family the findings read", &findings);
    check(
        "one line of 12 MB",
        &format!("m{{a=\"{}\"}} 1\n", "x\\\\".repeat(4 << 20)),
    );
    check(
        "an unterminated label value of 8 MB",
        &format!("m{{a=\"{}", "\\\"".repeat(4 << 20)),
    );
    let types: String = (0..60_000)
        .map(|i| format!("# TYPE family_{i} counter\nfamily_{i}_total {i}\n"))
        .collect();
    check("60,000 families", &types);
    let labels: String = (0..20_000).map(|i| format!("l{i}=\"v\",")).collect();
    check("20,000 labels on one series", &format!("m{{{labels}}} 1\n"));
    check("a name of 4 MB", &format!("{} 1\n", "n".repeat(4 << 20)));
    check("4 MB of newlines", &"\n".repeat(4 << 20));
}

/// Scrape after scrape of a page whose 30,000 series are new every time, the scraper's
/// memory stays where it was after the first scrapes (it grew by ~25 MB a scrape when it
/// remembered every counter it had seen).
#[test]
fn churning_pages_do_not_grow_memory_scrape_after_scrape() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let page = |k: usize| {
        let mut p = String::from("# TYPE c counter\n");
        for i in 0..3 * MAX_SERIES {
            p.push_str(&format!("c_total{{id=\"{k}-{i}\"}} {i}\n"));
        }
        p
    };
    let mut r = Readings::default();
    let t0 = Instant::now();
    let mut after = Vec::new();
    for k in 0..6 {
        let text = page(k);
        r.take(&text, t0 + Duration::from_secs(k as u64 + 1))
            .unwrap();
        drop(text);
        after.push(status_kb("VmHWM:").unwrap_or(0));
    }
    let grew = after[5].saturating_sub(after[1]);
    assert!(
        grew < 8 * 1024,
        "peak memory grew by {grew} KB over 4 scrapes: {after:?}"
    );
}
