//! `latency.hlog` read by HdrHistogram's own readers: Java HdrHistogram 2.2.2's
//! `HistogramLogProcessor` (Maven Central) and Python's `hdrh` (PyPI `hdrhistogram`), which
//! scripts/test.sh installs under target/tools. A real run of exactly 5,000 requests, where
//! p50, p90, p99 and p99.9 fall on whole ranks (p99.9 is the 4,995th: issue 53), must read
//! the same in both as in volley's report.json, to the bucket, and series.csv's per-interval
//! TTFB p50 as the Java tool's per-interval one. A missing reader is skipped, saying why, or
//! fails the test under `VOLLEY_TEST_ALL=1` (tests/it/parts.rs).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use volley_stats::rank::count_at_percentile;

use crate::support::{TestServer, need, only_run, out_dir, report_json, serial, text, volley};

/// The percentiles both readers are held to, with report.json's field for each.
const PERCENTILES: [(f64, &str); 5] = [
    (50.0, "p50_ms"),
    (90.0, "p90_ms"),
    (99.0, "p99_ms"),
    (99.9, "p99_9_ms"),
    (99.99, "p99_99_ms"),
];

/// 5 VUs × 1,000 iterations.
const REQUESTS: u64 = 5_000;

fn tools() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/tools")
}

/// A report.json figure in ms as µs (report figures are a bucket's value in µs / 1000).
fn us(ms: &Value) -> u64 {
    (ms.as_f64().unwrap_or_else(|| panic!("not a number: {ms}")) * 1000.0).round() as u64
}

/// One figure of a reader's output, µs.
fn figure(cell: &str) -> u64 {
    let v: f64 = cell
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("{cell:?}: {e}"));
    v.round() as u64
}

#[test]
fn java_hdrhistogram_and_python_hdrh_read_latency_hlog_as_the_report_does() {
    let (java, python) = (need("hdrhistogram-java"), need("hdrh"));
    if !java && !python {
        return;
    }
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let o = volley(&[
        "run",
        "--url",
        &server.url("/ok"),
        "--vus",
        "5",
        "--iterations",
        "1000",
        "--progress",
        "none",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let run = only_run(out.path());
    let log = run.join("latency.hlog");
    let report = report_json(&run);
    let ttfb = &report["per_request"]["ttfb_ms"];
    assert_eq!(ttfb["count"], REQUESTS, "{ttfb}");
    // p50 to p99.9 on whole ranks (p99.99 is 4,999.5: the 5,000th, in Java and hdrh alike).
    for (p, rank) in [
        (50.0, 2_500),
        (90.0, 4_500),
        (99.0, 4_950),
        (99.9, 4_995),
        (99.99, 5_000),
    ] {
        assert_eq!(count_at_percentile(p, REQUESTS), rank, "p{p}");
    }
    if java {
        java_reads(&log, &run, ttfb);
    }
    if python {
        hdrh_reads(&log, ttfb);
    }
}

/// `HistogramLogProcessor -i latency.hlog -tag ttfb -csv -outputValueUnitRatio 1 -o FILE`:
/// its last line's totals against report.json, its intervals' p50 against series.csv.
fn java_reads(log: &Path, run: &Path, ttfb: &Value) {
    let jar = tools().join("hdrhistogram/HdrHistogram-2.2.2.jar");
    let dir = out_dir();
    let csv = dir.path().join("intervals.csv");
    let o = Command::new("java")
        .arg("-cp")
        .arg(&jar)
        .args(["org.HdrHistogram.HistogramLogProcessor", "-i"])
        .arg(log)
        .args(["-tag", "ttfb", "-csv", "-outputValueUnitRatio", "1", "-o"])
        .arg(&csv)
        .output()
        .unwrap();
    assert!(o.status.success(), "HistogramLogProcessor: {}", text(&o));
    let written = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<Vec<&str>> = written
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split(',').collect())
        .collect();
    let (header, rows) = lines.split_first().expect("a header");
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h.trim_matches('"') == name)
            .unwrap_or_else(|| panic!("no {name} in {header:?}"))
    };
    let last = rows.last().expect("an interval");
    assert_eq!(figure(last[col("Total_Count")]), REQUESTS, "{written}");
    let mut java = Vec::new();
    for (p, field) in PERCENTILES {
        let name = format!("Total_{p}%");
        java.push((name.clone(), figure(last[col(&name)]), us(&ttfb[field])));
    }
    java.push((
        "Total_Max".into(),
        figure(last[col("Total_Max")]),
        us(&ttfb["max_ms"]),
    ));
    for (name, theirs, ours) in &java {
        assert_eq!(
            theirs, ours,
            "{name}: HdrHistogram {theirs} µs, report.json {ours} µs\n{written}"
        );
    }
    eprintln!("HistogramLogProcessor agrees with report.json: {java:?}");
    // series.csv's TTFB p50 of each interval, in the log's order.
    let series = std::fs::read_to_string(run.join("series.csv")).unwrap();
    let mut series = series.lines();
    let head: Vec<&str> = series.next().unwrap().split(',').collect();
    let p50 = head.iter().position(|h| *h == "TTFB_p50_(ms)").unwrap();
    let ours: Vec<u64> = series
        .map(|l| l.split(',').nth(p50).unwrap().parse::<f64>().unwrap())
        .map(|ms| (ms * 1000.0).round() as u64)
        .collect();
    let theirs: Vec<u64> = rows.iter().map(|r| figure(r[col("Int_50%")])).collect();
    assert_eq!(ours, theirs, "series.csv TTFB p50 by interval\n{written}");
}

/// hdrh's accumulated `ttfb` histogram against report.json, at the percentiles where hdrh's
/// rank (rounded to the nearest) is Java's (rounded up): all of them at 5,000 requests.
fn hdrh_reads(log: &Path, ttfb: &Value) {
    let python = tools().join("venv/bin/python3");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/hdrh_read.py");
    let mut cmd = Command::new(&python);
    cmd.arg(&script).arg(log).arg("ttfb");
    // And the 4,996th, which the rank before this rule read as p99.9: said, not judged.
    cmd.args(PERCENTILES.iter().map(|(p, _)| p.to_string()))
        .arg("99.92");
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "hdrh_read.py: {}", text(&o));
    let read: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(read["count"], REQUESTS, "{read}");
    assert_eq!(
        read["max"].as_u64(),
        Some(us(&ttfb["max_ms"])),
        "max: {read}"
    );
    let at = read["percentiles"].as_array().unwrap();
    for ((p, field), got) in PERCENTILES.iter().zip(at) {
        assert_eq!(got["p"].as_f64(), Some(*p), "{read}");
        assert_eq!(
            got["rank"].as_u64(),
            Some(count_at_percentile(*p, REQUESTS)),
            "hdrh ranks p{p} as Java does at {REQUESTS}: {read}"
        );
        assert_eq!(
            got["value"].as_u64(),
            Some(us(&ttfb[*field])),
            "p{p}: hdrh against report.json {field} ({ttfb})"
        );
    }
    let (p99_9, next) = (&at[3]["value"], &at[5]["value"]);
    eprintln!(
        "hdrh agrees with report.json; the 4,995th value {p99_9} µs, the 4,996th {next} µs ({})",
        if p99_9 == next {
            "one bucket: this run does not tell the two ranks apart"
        } else {
            "two buckets: the rank before this rule would have failed here"
        }
    );
}
