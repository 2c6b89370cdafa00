//! A large file read in parts on every core gives exactly what one pass gives: the same
//! rows, histograms, per-label series and notes, bit for bit, whatever the part size (tiny
//! parts put cuts in every awkward place: inside a quoted field holding a line end, between
//! a JMeter sample and its sub-results, across a clock that stepped back, between a k6
//! request's samples).

use std::io::Write;
use std::path::Path;

use volley_formats::import::{jmeter, k6};
use volley_formats::{Result, Source};

mod common;

/// The first line as `open` hands it to the readers.
fn first_line(path: &Path) -> String {
    let text = std::fs::read(path).unwrap();
    let head = String::from_utf8_lossy(&text[..text.len().min(1 << 16)]).into_owned();
    head.trim_start_matches('\u{feff}')
        .lines()
        .next()
        .unwrap_or("")
        .trim_end_matches('\r')
        .to_string()
}

/// One pass and parts of each size give the same source, or the same error (`None`).
fn same_in_parts(path: &Path, sizes: &[u64]) -> Option<String> {
    let first = first_line(path);
    same_in_parts_of(
        path,
        sizes,
        |p| jmeter::read(p, std::fs::File::open(p).unwrap(), &first),
        |p, len, size| jmeter::read_parts(p, len, &first, size),
    )
}

/// The same for a k6 CSV.
fn k6_same_in_parts(path: &Path, sizes: &[u64]) -> Option<String> {
    same_in_parts_of(
        path,
        sizes,
        |p| k6::read_csv(p, std::fs::File::open(p).unwrap()),
        k6::read_csv_parts,
    )
}

/// The same for a k6 NDJSON file.
fn k6_json_same_in_parts(path: &Path, sizes: &[u64]) -> Option<String> {
    same_in_parts_of(
        path,
        sizes,
        |p| k6::read_json(p, std::io::BufReader::new(std::fs::File::open(p).unwrap())),
        k6::read_json_parts,
    )
}

/// `one` (one pass) and `parts` (in parts of each size) give the same source, or the same error.
fn same_in_parts_of(
    path: &Path,
    sizes: &[u64],
    one: impl Fn(&Path) -> Result<Source>,
    parts: impl Fn(&Path, u64, u64) -> Result<Option<(Source, u64)>>,
) -> Option<String> {
    let len = std::fs::metadata(path).unwrap().len();
    let one = one(path);
    for &size in sizes {
        let parts = parts(path, len, size);
        match (&one, parts) {
            (Ok(one), Ok(Some((src, lines)))) => {
                let (a, b) = (format!("{one:?}"), format!("{src:?}"));
                if a != b {
                    let at = a
                        .bytes()
                        .zip(b.bytes())
                        .position(|(x, y)| x != y)
                        .unwrap_or(a.len().min(b.len()));
                    let from = at.saturating_sub(300);
                    panic!(
                        "{} in parts of {size} bytes differs from one pass at byte {at}:\none pass: …{}…\n   parts: …{}…",
                        path.display(),
                        &a[from..(at + 300).min(a.len())],
                        &b[from..(at + 300).min(b.len())]
                    );
                }
                let newlines = std::fs::read(path)
                    .unwrap()
                    .iter()
                    .filter(|&&b| b == b'\n')
                    .count() as u64;
                assert_eq!(lines, newlines, "every line end is counted once");
            }
            (Err(a), Err(b)) => assert_eq!(
                a.to_string(),
                b.to_string(),
                "{} in parts of {size} bytes: the same error",
                path.display()
            ),
            (one, parts) => panic!(
                "{} in parts of {size} bytes: one pass gives {one:?}, parts give {parts:?}",
                path.display()
            ),
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
            let sizes: &[u64] = if small {
                &[37, 500, 4096]
            } else {
                &[8192, 100_000, 1 << 20]
            };
            if path.extension().is_some_and(|e| e == "jtl") && same_in_parts(&path, sizes).is_some()
            {
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
            0 => (
                "500",
                "\"Server, \"\"oops\"\"\nsecond line\"".to_string(),
                "false",
                "\"Test failed: code\nexpected 200\"",
            ),
            1 => (
                "Non HTTP response code: java.net.SocketTimeoutException",
                "\"Read timed out\"".to_string(),
                "false",
                "",
            ),
            _ => ("200", "OK".to_string(), "true", ""),
        };
        let elapsed = if i % 1013 == 5 {
            "NaN".to_string()
        } else {
            el.to_string()
        };
        let bytes = if i % 511 == 3 {
            "-4".to_string()
        } else {
            "1234".to_string()
        };
        let latency = if i % 389 == 2 {
            String::new()
        } else {
            (el - 1).to_string()
        };
        write!(out, "{ts},{elapsed},{label},{code},{msg},{thread},text,{ok},{failure},{bytes},120,17,17,http://127.0.0.1/x,{latency},0,1{end}").unwrap();
        if i % 50 == 0 {
            // A Transaction Controller's own row, and (now and then) one written without its
            // message when a thread stopped inside it: the first of those, `tx 1` at row 7,
            // comes before any row says `tx 1` is a controller.
            write!(out, "{ts},{el},tx {},200,\"Number of samples in transaction : 1, number of failing samples : 0\",{thread},,true,,1234,120,17,17,null,1,0,1{end}", i % 3).unwrap();
        }
        if i % 331 == 7 {
            write!(
                out,
                "{ts},{el},tx {},,,{thread},,true,,1234,120,17,17,null,1,0,1{end}",
                i % 3
            )
            .unwrap();
        }
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
    assert!(
        one.contains("sub-result rows"),
        "{}",
        &one[..one.len().min(2000)]
    );
    for what in [
        "stepped back",
        "`elapsed` is NaN",
        "response size counted as 0",
        "no `Latency`",
        "more Transaction Controller rows are left out",
        "are counted, though a later Transaction Controller row",
    ] {
        assert!(one.contains(what), "no note saying {what:?}");
    }
}

#[test]
fn fixture_k6_csvs_read_in_parts_equal_one_pass() {
    let dir = common::fixtures();
    let mut read = 0;
    for sub in ["imports", "bad"] {
        for entry in std::fs::read_dir(dir.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            // Files cut off mid-line are handed to the readers without their last line by `open`.
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !(name.starts_with("k6") && name.ends_with(".csv")) || name.contains("cut") {
                continue;
            }
            let small = std::fs::metadata(&path).unwrap().len() < 20_000;
            let sizes: &[u64] = if small {
                &[37, 500, 4096]
            } else {
                &[8192, 100_000, 1 << 20]
            };
            read += usize::from(k6_same_in_parts(&path, sizes).is_some());
        }
    }
    assert!(read >= 5, "{read} fixtures read");
}

/// The 16 columns after `metric_value` of k6's CSV header.
fn tags_of(check: &str, code: &str, expected: &str, name: &str, status: &str, url: &str) -> String {
    let method = if url.is_empty() { "" } else { "GET" };
    format!(",{check},,{code},{expected},,{method},{name},HTTP/1.1,main,,{status},,,{url},,")
}

/// A k6 CSV with what makes parts hard: nine samples per request (cuts fall between them),
/// `vus` and check samples between requests, named and unnamed requests (a quoted URL with
/// a comma), failures with error codes, requests without `http_req_waiting`, a bad value
/// (skipped, with its line), and a clock that steps back 100 s for a while.
fn awkward_k6_csv(path: &Path, requests: usize, whole_seconds: bool) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(out, "metric_name,timestamp,metric_value,check,error,error_code,expected_response,group,method,name,proto,scenario,service,status,subproto,tls_version,url,extra_tags,metadata").unwrap();
    let mut rng = fastrand::Rng::with_seed(11);
    let t0 = 1_795_315_819_000i64;
    for i in 0..requests {
        let mut ms = t0 + (i as i64) * 1000 / 700 + rng.i64(0..30);
        if (requests / 2..requests / 2 + requests / 20).contains(&i) {
            ms -= 100_000;
        }
        let ts = if whole_seconds {
            (ms / 1000).to_string()
        } else {
            format!("{ms}000")
        };
        if i % 50 == 0 {
            writeln!(
                out,
                "vus,{ts},{}{}",
                10 + i % 7,
                tags_of("", "", "", "", "", "")
            )
            .unwrap();
        }
        let (name, url) = match i % 3 {
            0 => (
                "list rooms".to_string(),
                "http://127.0.0.1:18090/rooms".to_string(),
            ),
            1 => (
                String::new(),
                "\"http://127.0.0.1:18090/q?a=1,b=2\"".to_string(),
            ),
            _ => (
                format!("room {}", i % 9),
                "http://127.0.0.1:18090/rooms/x".to_string(),
            ),
        };
        let (status, expected, code, failed) = match i % 61 {
            0 => ("0", "false", "1211", "1"),
            1 => ("503", "false", "1503", "1"),
            _ => ("200", "true", "", "0"),
        };
        let tags = tags_of("", code, expected, &name, status, &url);
        let d = 2.0 + rng.f64() * 40.0;
        writeln!(out, "http_reqs,{ts},1{tags}").unwrap();
        let duration = if i % 997 == 7 {
            "NaN".to_string()
        } else {
            format!("{d:.6}")
        };
        writeln!(out, "http_req_duration,{ts},{duration}{tags}").unwrap();
        for (m, v) in [
            ("blocked", 0.01),
            ("connecting", 0.0),
            ("tls_handshaking", 0.0),
            ("sending", 0.02),
        ] {
            writeln!(out, "http_req_{m},{ts},{v:.6}{tags}").unwrap();
        }
        if i % 401 != 3 {
            writeln!(out, "http_req_waiting,{ts},{:.6}{tags}", d * 0.9).unwrap();
        }
        writeln!(out, "http_req_receiving,{ts},{:.6}{tags}", d * 0.1 - 0.02).unwrap();
        writeln!(out, "http_req_failed,{ts},{failed}{tags}").unwrap();
        if i % 4 == 0 {
            writeln!(
                out,
                "checks,{ts},1{}",
                tags_of("status is 200", "", "", "", "", "")
            )
            .unwrap();
        }
    }
    out.flush().unwrap();
}

#[test]
fn a_large_awkward_k6_csv_read_in_parts_equals_one_pass() {
    let dir = tempfile::tempdir().unwrap();
    for whole_seconds in [false, true] {
        let path = dir.path().join(format!("big-{whole_seconds}.csv"));
        awkward_k6_csv(&path, 6_000, whole_seconds);
        let one = k6_same_in_parts(&path, &[5_000, 64 << 10, 1 << 20]).expect("the file reads");
        for what in [
            "stepped back",
            "http_req_duration is NaN",
            "no http_req_waiting",
        ] {
            assert!(
                one.contains(what),
                "no note saying {what:?}: {}",
                &one[..one.len().min(3000)]
            );
        }
    }
}

/// A k6 CSV with a garbage timestamp deep in the file, on the row `edit` picks (after changing
/// the lines as it likes): refused in parts and in one pass alike, at that row's line.
fn k6_bad_stamp_is_reported_at_its_line(name: &str, edit: impl FnOnce(&mut Vec<String>) -> usize) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    awkward_k6_csv(&path, 3_000, false);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let at = edit(&mut lines);
    let mut fields: Vec<String> = lines[at].split(',').map(str::to_string).collect();
    fields[1] = "noon".into();
    lines[at] = fields.join(",");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    assert!(
        k6_same_in_parts(&path, &[5_000, 64 << 10]).is_none(),
        "the file is refused"
    );
    let e = k6::read_csv(&path, std::fs::File::open(&path).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&format!("{name}:{}:2: expected a timestamp", at + 1)),
        "{e}"
    );
}

#[test]
fn a_k6_csv_in_parts_reports_a_bad_row_at_its_line() {
    k6_bad_stamp_is_reported_at_its_line("bad.csv", |lines| lines.len() * 3 / 4);
}

#[test]
fn a_k6_csv_with_blank_lines_and_crlf_rows_counts_lines_alike_either_way() {
    // A blank line and CRLF endings before the bad row.
    k6_bad_stamp_is_reported_at_its_line("blank.csv", |lines| {
        let at = lines.len() * 3 / 4;
        for l in &mut lines[at - 40..at - 20] {
            l.push('\r');
        }
        lines.insert(at - 10, String::new());
        at + 1
    });
}

#[test]
fn a_k6_csv_row_running_past_the_read_buffer_is_read_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plain.csv");
    awkward_k6_csv(&path, 4_000, false);
    let tests = |p: &Path| {
        let src = k6::read_csv(p, std::fs::File::open(p).unwrap()).unwrap();
        (
            src.series.intervals.iter().map(|i| i.tests).sum::<u64>(),
            src.series.intervals.iter().map(|i| i.errors).sum::<u64>(),
        )
    };
    let plain = tests(&path);
    // A check whose quoted name holds line ends, starting just before the first MiB the one
    // pass reads and ending after it.
    let mut text = std::fs::read(&path).unwrap();
    let at = text[..(1 << 20) - 50]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    let long: String = (0..400).map(|i| format!("part {i}\n")).collect();
    let row = format!(
        "checks,1795315819000000,1{}\n",
        tags_of(&format!("\"{long}\""), "", "", "", "", "")
    );
    text.splice(at..at, row.bytes());
    let quoted = dir.path().join("quoted.csv");
    std::fs::write(&quoted, &text).unwrap();
    assert!(plain.0 > 3_000);
    assert_eq!(tests(&quoted), plain, "every request once");
}

#[test]
fn fixture_k6_json_files_read_in_parts_equal_one_pass() {
    let dir = common::fixtures();
    let mut read = 0;
    for sub in ["imports", "bad", "peers"] {
        for entry in std::fs::read_dir(dir.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let ndjson = name.starts_with("k6json")
                || name == "k6_out.json"
                || name.ends_with("_out.json")
                || name.starts_with("k6_json");
            if !ndjson || name.contains("cut") {
                continue;
            }
            let small = std::fs::metadata(&path).unwrap().len() < 20_000;
            let sizes: &[u64] = if small {
                &[37, 500, 4096]
            } else {
                &[8192, 100_000, 1 << 20]
            };
            read += usize::from(k6_json_same_in_parts(&path, sizes).is_some());
        }
    }
    assert!(read >= 5, "{read} fixtures read");
}

/// A k6 NDJSON file with what makes parts hard, as k6 writes it: a Metric line when a metric
/// is first seen (some mid-file), nine Points per request, `vus` and check Points between
/// requests, failures, missing `http_req_waiting`, a negative value, time stamps with an
/// offset and with escapes in a name, and a clock that steps back 100 s for a while.
fn awkward_k6_json(path: &Path, requests: usize) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut rng = fastrand::Rng::with_seed(13);
    let t0 = 1_795_315_819_000i64;
    let metric = |out: &mut std::io::BufWriter<std::fs::File>, name: &str| {
        writeln!(out, r#"{{"type":"Metric","data":{{"name":"{name}","type":"trend","contains":"time","thresholds":[],"submetrics":null}},"metric":"{name}"}}"#).unwrap();
    };
    for m in [
        "http_reqs",
        "http_req_duration",
        "http_req_blocked",
        "http_req_connecting",
        "http_req_tls_handshaking",
        "http_req_sending",
        "http_req_receiving",
        "http_req_failed",
        "vus",
    ] {
        metric(&mut out, m);
    }
    for i in 0..requests {
        let mut ms = t0 + (i as i64) * 1000 / 700 + rng.i64(0..30);
        if (requests / 2..requests / 2 + requests / 20).contains(&i) {
            ms -= 100_000;
        }
        let at = jiff::Timestamp::from_millisecond(ms).unwrap();
        let time = if i % 2 == 0 {
            format!("{at:.9}")
        } else {
            at.to_zoned(jiff::tz::TimeZone::fixed(jiff::tz::offset(9)))
                .strftime("%Y-%m-%dT%H:%M:%S%.6f%:z")
                .to_string()
        };
        if i % 50 == 0 {
            writeln!(out, r#"{{"metric":"vus","type":"Point","data":{{"time":"{time}","value":{},"tags":null}}}}"#, 10 + i % 7).unwrap();
        }
        if i == requests / 3 {
            metric(&mut out, "http_req_waiting");
            metric(&mut out, "checks");
        }
        let name = match i % 3 {
            0 => "list rooms".to_string(),
            1 => String::new(),
            _ => format!(r#"room \"{}\" \u00e9"#, i % 9),
        };
        let (status, expected, code, failed) = match i % 61 {
            0 => ("0", "false", r#","error_code":"1211""#, 1),
            1 => ("503", "false", r#","error_code":"1503""#, 1),
            _ => ("200", "true", "", 0),
        };
        let tags = format!(
            r#"{{"expected_response":"{expected}","group":"","method":"GET","name":"{name}","proto":"HTTP/1.1","scenario":"default","status":"{status}","url":"http://127.0.0.1:18090/rooms/{}"{code}}}"#,
            i % 5
        );
        let point = |out: &mut std::io::BufWriter<std::fs::File>, m: &str, v: String| {
            writeln!(out, r#"{{"metric":"{m}","type":"Point","data":{{"time":"{time}","value":{v},"tags":{tags}}}}}"#).unwrap();
        };
        let d = 2.0 + rng.f64() * 40.0;
        point(&mut out, "http_reqs", "1".into());
        point(
            &mut out,
            "http_req_duration",
            if i % 997 == 7 {
                "-3".into()
            } else {
                format!("{d:.6}")
            },
        );
        for m in ["blocked", "connecting", "tls_handshaking", "sending"] {
            point(&mut out, &format!("http_req_{m}"), "0.01".into());
        }
        if i % 401 != 3 && i >= requests / 3 {
            point(&mut out, "http_req_waiting", format!("{:.6}", d * 0.9));
        }
        point(
            &mut out,
            "http_req_receiving",
            format!("{:.6}", d * 0.1 - 0.02),
        );
        point(&mut out, "http_req_failed", failed.to_string());
        if i % 4 == 0 && i >= requests / 3 {
            writeln!(out, r#"{{"metric":"checks","type":"Point","data":{{"time":"{time}","value":1,"tags":{{"check":"status is 200"}}}}}}"#).unwrap();
        }
    }
    out.flush().unwrap();
}

#[test]
fn a_large_awkward_k6_json_read_in_parts_equals_one_pass() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.json");
    awkward_k6_json(&path, 5_000);
    let one = k6_json_same_in_parts(&path, &[5_000, 64 << 10, 1 << 20]).expect("the file reads");
    for what in [
        "stepped back",
        "http_req_duration is negative",
        "no http_req_waiting",
        "room \\\"2\\\" é",
    ] {
        assert!(
            one.contains(what),
            "no {what:?} in: {}",
            &one[..one.len().min(3000)]
        );
    }
}

#[test]
fn a_k6_json_file_in_parts_reports_a_bad_line_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.json");
    awkward_k6_json(&path, 3_000);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    // Broken JSON deep in the file, on a line whose tags would be skipped: the same error, at
    // the same line, either way.
    let at = (lines.len() * 3 / 4..)
        .find(|&i| lines[i].starts_with(r#"{"metric":"http_req_sending""#))
        .unwrap();
    lines[at] = lines[at].replace(r#""scenario":"default""#, r#""scenario":default"#);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    assert!(
        k6_json_same_in_parts(&path, &[5_000, 64 << 10]).is_none(),
        "the file is refused"
    );
    let e = k6::read_json(
        &path,
        std::io::BufReader::new(std::fs::File::open(&path).unwrap()),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains(&format!("bad.json:{}:", at + 1)) && e.contains("not a JSON object"),
        "{e}"
    );
}

#[test]
fn a_large_k6_json_file_in_another_key_order_is_left_to_one_pass() {
    // k6 before v0.41 wrote `type` first: no line starts as a cut needs, so the parts reader
    // gives up after 16 MB without a place to cut instead of holding the file as one part.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.json");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut written = 0;
    let mut i = 0u64;
    while written < 18 << 20 {
        let line = format!(
            r#"{{"type":"Point","data":{{"time":"2026-04-16T11:10:{:02}.{:06}Z","value":{},"tags":{{"name":"/rooms","status":"200","expected_response":"true"}}}},"metric":"{}"}}"#,
            (i / 1000) % 60,
            i % 1000 * 1000,
            if i.is_multiple_of(9) { 1.0 } else { 7.5 },
            if i.is_multiple_of(9) {
                "http_reqs"
            } else {
                "http_req_duration"
            }
        );
        writeln!(out, "{line}").unwrap();
        written += line.len() + 1;
        i += 1;
    }
    out.flush().unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    assert!(
        k6::read_json_parts(&path, len, 1 << 20).unwrap().is_none(),
        "no part of 17 MB held whole"
    );
    let one = k6::read_json(
        &path,
        std::io::BufReader::new(std::fs::File::open(&path).unwrap()),
    )
    .unwrap();
    assert_eq!(
        one.series.intervals.iter().map(|i| i.tests).sum::<u64>(),
        i.div_ceil(9)
    );
}

/// An nGrinder file with what a reader of its rows must get right wherever a part starts: a
/// BOM, CRLF and `\r\r\n` line ends, a carriage return inside a line (a line end of its own),
/// blank, space-only and CR-only lines, descriptions holding quotes (nGrinder does not quote), decimal
/// commas, rows skipped (a negative count), rows without a valid `DateTime`, a clock that
/// steps back, and per-test blocks.
fn awkward_ngrinder(rows: usize) -> String {
    let mut rng = fastrand::Rng::with_seed(41);
    let mut text = String::from(
        "\u{feff}DateTime;vuser;Tests;Errors;Mean_Test_Time_(ms);Test_Time_Standard_Deviation_(ms);TPS;Mean_time_to_first_byte;Description;Tests-1;Errors-1;Mean_Test_Time_(ms)-1;Test_Time_Standard_Deviation_(ms)-1;TPS-1;Errors_timeout\n",
    );
    let mut second = 1_700_000_000i64;
    for i in 0..rows {
        second += if i % 997 == 500 { -40 } else { 1 };
        let stamp = jiff::Timestamp::from_second(second)
            .unwrap()
            .to_zoned(jiff::tz::TimeZone::UTC)
            .strftime("%Y-%m-%d %H:%M:%S")
            .to_string();
        let stamp = if i % 613 == 7 {
            "soon".to_string()
        } else {
            stamp
        };
        let tests = rng.u32(0..500);
        let errors: i64 = if i % 389 == 3 { -1 } else { rng.i64(0..5) };
        let mean = format!("{},{}", rng.u32(1..90), rng.u32(0..1000));
        let desc = if i % 2 == 0 {
            "\"login\" page"
        } else {
            "login \"page\""
        };
        text.push_str(&format!("{stamp};{};{tests};{errors};{mean};1.5;{tests};{}.{};{desc};{tests};{errors};{mean};1.5;{tests};{}", rng.u32(1..50), rng.u32(0..20), rng.u32(0..999), rng.u32(0..3)));
        text.push_str(match i % 11 {
            0 => "\r\n",
            1 => "\r\r\n",
            2 => "\n\n",
            3 => "\n  \n",
            4 => "\n\r\r\n",
            _ => "\n",
        });
    }
    text
}

/// One pass and parts of each size give the same file (or the same error).
fn ngrinder_same_in_parts(path: &Path, sizes: &[u64]) -> Option<String> {
    use volley_formats::ngrinder;
    let len = std::fs::metadata(path).unwrap().len();
    let newlines = std::fs::read(path)
        .unwrap()
        .iter()
        .filter(|&&b| b == b'\n')
        .count() as u64;
    let one = ngrinder::read(path).map(|f| format!("{f:?}"));
    for &size in sizes {
        match (&one, ngrinder::read_parts(path, len, size)) {
            (Ok(one), Ok(Some((file, lines)))) => {
                assert!(
                    *one == format!("{file:?}"),
                    "{} in parts of {size} bytes differs from one pass",
                    path.display()
                );
                assert_eq!(lines, newlines, "every line end is counted once");
            }
            (Err(a), Err(b)) => assert_eq!(
                a.to_string(),
                b.to_string(),
                "parts of {size} bytes: the same error"
            ),
            (one, parts) => {
                panic!("parts of {size} bytes: one pass gives {one:?}, parts give {parts:?}")
            }
        }
    }
    one.ok()
}

#[test]
fn an_awkward_ngrinder_file_read_in_parts_equals_one_pass() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("output.csv");
    std::fs::write(&path, awkward_ngrinder(6_000)).unwrap();
    let one =
        ngrinder_same_in_parts(&path, &[1, 300, 4096, 100_000, 1 << 20]).expect("the file reads");
    // What the file holds was read, not only read alike: skipped rows, placed rows, tests.
    for want in [
        "Errors` is negative",
        "no valid DateTime",
        "stepped back",
        "Errors_timeout",
    ] {
        assert!(
            one.contains(want),
            "{want} missing from {}",
            &one[..one.len().min(2000)]
        );
    }
    let file = volley_formats::ngrinder::read(&path).unwrap();
    assert_eq!(
        file.tests[0].0, "\"login\" page",
        "quotes are a description's own bytes"
    );
    assert_eq!(
        file.total.intervals.len(),
        6_000 - (0..6_000).filter(|i| i % 389 == 3).count(),
        "every row kept but the negative ones"
    );
}

#[test]
fn an_ngrinder_file_in_parts_reports_a_bad_row_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.csv");
    let mut lines: Vec<String> = awkward_ngrinder(3_000)
        .split('\n')
        .map(str::to_string)
        .collect();
    let at = lines.len() * 3 / 4;
    let at = at + lines[at..].iter().position(|l| l.len() > 40).unwrap();
    lines[at] = lines[at].replacen(";1.5;", ";slow;", 1);
    std::fs::write(&path, lines.join("\n")).unwrap();
    assert!(
        ngrinder_same_in_parts(&path, &[1, 5_000, 64 << 10]).is_none(),
        "the file is refused"
    );
    let e = volley_formats::ngrinder::read(&path)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&format!(
            "bad.csv:{}:6: expected a number, found `slow`",
            at + 1
        )),
        "{e}"
    );
    // A truncated row: its number among the rows (blank and CR-only lines are none) is the
    // same in parts, which read ahead on a guess and then in order.
    lines[at] = lines[at].split(';').take(4).collect::<Vec<_>>().join(";");
    std::fs::write(&path, lines.join("\n")).unwrap();
    assert!(
        ngrinder_same_in_parts(&path, &[1, 300, 5_000, 64 << 10]).is_none(),
        "the file is refused"
    );
    let rows_before = lines[1..at]
        .iter()
        .filter(|l| !l.trim_matches(['\r', ' ']).is_empty())
        .count();
    let e = volley_formats::ngrinder::read(&path)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&format!(
            "bad.csv:{}:5: row {} is truncated: 4 fields",
            at + 1,
            rows_before + 1
        )),
        "{e}"
    );
}

#[test]
fn a_large_file_cut_off_while_written_says_so_in_its_error_read_in_parts_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.csv");
    let mut text = awkward_ngrinder(200_000);
    assert!(
        text.len() > 16 << 20,
        "large enough to be read in parts: {} bytes",
        text.len()
    );
    let middle = text.len() / 2 + text[text.len() / 2..].find(";1.5;").unwrap();
    text.replace_range(middle..middle + 5, ";slow;");
    text.push_str("2023-11-15 00:00:00;1;2");
    std::fs::write(&path, text).unwrap();
    let e = volley_formats::open(&path).unwrap_err().to_string();
    assert!(
        e.contains("expected a number, found `slow` (the file's last line has no line end"),
        "{e}"
    );
}
