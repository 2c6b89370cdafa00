//! A large file read in parts on every core gives exactly what one pass gives: the same
//! rows, histograms, per-label series and notes, bit for bit, whatever the part size (tiny
//! parts put cuts in every awkward place: inside a quoted field holding a line end, between
//! a JMeter sample and its sub-results, across a clock that stepped back).

use std::io::Write;
use std::path::Path;

use volley_formats::import::jmeter;

mod common;

/// The first line as `open` hands it to the readers.
fn first_line(path: &Path) -> String {
    let text = std::fs::read(path).unwrap();
    let head = String::from_utf8_lossy(&text[..text.len().min(1 << 16)]).into_owned();
    head.trim_start_matches('\u{feff}').lines().next().unwrap_or("").trim_end_matches('\r').to_string()
}

/// One pass and parts of each size give the same source, or the same error (`None`).
fn same_in_parts(path: &Path, sizes: &[u64]) -> Option<String> {
    let first = first_line(path);
    let len = std::fs::metadata(path).unwrap().len();
    let one = jmeter::read(path, std::fs::File::open(path).unwrap(), &first);
    for &size in sizes {
        let parts = jmeter::read_parts(path, len, &first, size);
        match (&one, parts) {
            (Ok(one), Ok(Some((src, lines)))) => {
                let (a, b) = (format!("{one:?}"), format!("{src:?}"));
                if a != b {
                    let at = a.bytes().zip(b.bytes()).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
                    let from = at.saturating_sub(300);
                    panic!(
                        "{} in parts of {size} bytes differs from one pass at byte {at}:\none pass: …{}…\n   parts: …{}…",
                        path.display(),
                        &a[from..(at + 300).min(a.len())],
                        &b[from..(at + 300).min(b.len())]
                    );
                }
                let newlines = std::fs::read(path).unwrap().iter().filter(|&&b| b == b'\n').count() as u64;
                assert_eq!(lines, newlines, "every line end is counted once");
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{} in parts of {size} bytes: the same error", path.display()),
            (one, parts) => panic!("{} in parts of {size} bytes: one pass gives {one:?}, parts give {parts:?}", path.display()),
        }
    }
    one.ok().map(|s| format!("{s:?}"))
}

#[test]
fn fixture_jtls_read_in_parts_equal_one_pass() {
    let dir = common::fixtures();
    let mut read = 0;
    for sub in ["imports", "bad"] {
        for entry in std::fs::read_dir(dir.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            let small = std::fs::metadata(&path).unwrap().len() < 20_000;
            let sizes: &[u64] = if small { &[37, 500, 4096] } else { &[8192, 100_000, 1 << 20] };
            if path.extension().is_some_and(|e| e == "jtl") && same_in_parts(&path, sizes).is_some() {
                read += 1;
            }
        }
    }
    assert!(read >= 6, "{read} fixtures read");
}

/// A JTL with what makes parts hard: sub-results right after their parents, quoted messages
/// with separators, doubled quotes and line ends, CRLF lines, a clock that steps back 100 s
/// for a while, rows skipped and values left out (notes with places), 12 labels.
fn awkward_jtl(path: &Path, rows: usize) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(out, "timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,failureMessage,bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect").unwrap();
    let mut rng = fastrand::Rng::with_seed(7);
    let t0 = 1_776_337_822_386i64;
    for i in 0..rows {
        let mut ts = t0 + (i as i64) * 1000 / 900 - rng.i64(0..40);
        if (rows / 2..rows / 2 + rows / 20).contains(&i) {
            ts -= 100_000; // the clock stepped back
        }
        let el = 3 + rng.i64(0..60);
        let thread = format!("Thread Group 1-{}", i % 17 + 1);
        let label = format!("step {}", i % 12);
        let end = if i % 7 == 0 { "\r\n" } else { "\n" };
        let (code, msg, ok, failure) = match i % 97 {
            0 => ("500", "\"Server, \"\"oops\"\"\nsecond line\"".to_string(), "false", "\"Test failed: code\nexpected 200\""),
            1 => ("Non HTTP response code: java.net.SocketTimeoutException", "\"Read timed out\"".to_string(), "false", ""),
            _ => ("200", "OK".to_string(), "true", ""),
        };
        let elapsed = if i % 1013 == 5 { "NaN".to_string() } else { el.to_string() };
        let bytes = if i % 511 == 3 { "-4".to_string() } else { "1234".to_string() };
        let latency = if i % 389 == 2 { String::new() } else { (el - 1).to_string() };
        write!(out, "{ts},{elapsed},{label},{code},{msg},{thread},text,{ok},{failure},{bytes},120,17,17,http://127.0.0.1/x,{latency},0,1{end}").unwrap();
        if i % 5 == 0 {
            // Sub-results of the sample above: part of it, not counted again.
            for k in 0..2 {
                write!(out, "{},{},{label}-{k},200,OK,{thread},text,true,,100,10,17,17,http://127.0.0.1/x,1,0,0{end}", ts + k, el / 2).unwrap();
            }
        }
    }
    out.flush().unwrap();
}

#[test]
fn a_large_awkward_jtl_read_in_parts_equals_one_pass() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jtl");
    awkward_jtl(&path, 12_000);
    let one = same_in_parts(&path, &[20_000, 64 << 10, 1 << 20]).expect("the file reads");
    // The file's features reached the result: sub-results, late rows, skipped rows, notes.
    assert!(one.contains("sub-result rows"), "{}", &one[..one.len().min(2000)]);
    for what in ["stepped back", "`elapsed` is NaN", "response size counted as 0", "no `Latency`"] {
        assert!(one.contains(what), "no note saying {what:?}");
    }
}
