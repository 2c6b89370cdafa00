//! Every file in `fixtures/imports/` that holds results is read; the counts
//! pinned here were checked by hand against the raw files (see each comment).

use std::path::PathBuf;

use volley_formats::open;

mod common;

fn fixture(name: &str) -> PathBuf {
    common::fixtures().join("imports").join(name)
}

/// (file, format, successes, errors, intervals or None, has per-request histograms)
type Case = (&'static str, &'static str, u64, u64, Option<usize>, bool);

const CASES: &[Case] = &[
    // 312 `http_reqs` rows, 109 of them expected_response=false (HTTP 500 and refused).
    (
        "generated_k6-v1.2.3_out.csv",
        "k6-csv",
        203,
        109,
        Some(7),
        true,
    ),
    // (7 calendar seconds; the last holds under half a second of traffic and is folded.)
    (
        "generated_k6-v1.2.3_out.json",
        "k6-json",
        203,
        109,
        Some(6),
        true,
    ),
    // metrics.http_reqs.count 312, http_req_failed.passes 109.
    (
        "generated_k6-v1.2.3_summary-export.json",
        "k6-summary",
        203,
        109,
        Some(1),
        false,
    ),
    // http_reqs count 1, http_req_failed passes 1.
    (
        "k6_summary-export_legacy_sirhcc_k6-results.json",
        "k6-summary",
        0,
        1,
        Some(1),
        false,
    ),
    // 61 http_reqs points, none failed.
    (
        "k6_json_kirilly_k6-results.json",
        "k6-json",
        61,
        0,
        None,
        true,
    ),
    // 10,400 rows: 200 are loginpage-0/-1 sub-results of 100 loginpage samples.
    (
        "jmeter_abdulkuddus_results_subsamples.jtl",
        "jmeter-jtl",
        10_200,
        0,
        None,
        true,
    ),
    // 2,746 samples, `success` false in 1,119.
    (
        "jmeter_felipesuarezB_resultados_with_errors.jtl",
        "jmeter-jtl",
        1_627,
        1_119,
        None,
        true,
    ),
    // Written here (issue 53 §5): 9 rows; 2 Transaction Controller rows with their message
    // and 1 without (thread 1-3 stopped inside the controller) left out; 1 of the 6 counted
    // failed (HTTP 500).
    (
        "jmeter_written_tc_thread_stopped.jtl",
        "jmeter-jtl",
        5,
        1,
        None,
        true,
    ),
    (
        "jmeter_sunjida_results_small.jtl",
        "jmeter-jtl",
        20,
        0,
        None,
        true,
    ),
    // Last Aggregated row: Total Request Count 718, Total Failure Count 51.
    (
        "generated_locust2.47.0_fullhistory_stats_history.csv",
        "locust-history",
        667,
        51,
        Some(14),
        false,
    ),
    (
        "generated_locust2.47.0_fullhistory_stats.csv",
        "locust-stats",
        667,
        51,
        Some(1),
        false,
    ),
    // `\r\r\n` line ends; last Aggregated row: 235 requests, 0 failures (stats.csv says 255: written later).
    (
        "locust_motiur12_results_stats_history.csv",
        "locust-history",
        235,
        0,
        Some(50),
        false,
    ),
    (
        "locust_motiur12_results_stats.csv",
        "locust-stats",
        255,
        0,
        Some(1),
        false,
    ),
    // 6,329 REQUEST records, 2,147 of them KO.
    (
        "gatling_3.8.3_nelson_flujoreusocheckoutcorregido_simulation.log",
        "gatling-log",
        4_182,
        2_147,
        None,
        true,
    ),
    (
        "gatling_3.8.3_nelson_closemodel_simulation.log",
        "gatling-log",
        24,
        0,
        None,
        true,
    ),
];

#[test]
fn every_import_fixture_reads_with_the_counts_checked_by_hand() {
    for &(file, format, tests, errors, intervals, hist) in CASES {
        let src = open(&fixture(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(src.format, format, "{file}");
        assert_eq!(
            (src.series.tests(), src.series.errors()),
            (tests, errors),
            "{file}"
        );
        if let Some(n) = intervals {
            assert_eq!(src.series.intervals.len(), n, "{file}");
        }
        assert_eq!(src.has_histograms(), hist, "{file}");
        assert!(
            !src.notes.is_empty(),
            "{file}: an import always says how it was read"
        );
    }
}

#[test]
fn jmeter_sub_results_are_not_double_counted_and_runs_days_apart_are_not_padded() {
    let src = open(&fixture("jmeter_abdulkuddus_results_subsamples.jtl")).unwrap();
    assert_eq!(src.series.tests(), 10_200);
    assert!(
        src.series.intervals.len() < 2_000,
        "{} intervals",
        src.series.intervals.len()
    );
    assert!(
        src.notes.iter().any(|n| n.contains("separate runs")),
        "{:?}",
        src.notes
    );
    assert!(
        src.notes.iter().any(|n| n.contains("200 sub-result rows")),
        "{:?}",
        src.notes
    );
}

/// Issue 53 §5: when a thread stops inside a Transaction Controller, JMeter writes the
/// controller's sample with an empty responseMessage, so the message prefix does not tell it
/// from a request; its label (a controller's, by the rows with the message), its URL `null`
/// and its empty dataType do. A sample with no URL or message under another label counts.
#[test]
fn a_transaction_controller_row_of_a_stopped_thread_is_not_a_request() {
    let src = open(&fixture("jmeter_written_tc_thread_stopped.jtl")).unwrap();
    let names: Vec<&str> = src.per_test.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["GET /fast", "GET /slow", "JSR223 Sampler"]);
    let counts: Vec<u64> = src
        .per_test
        .iter()
        .map(|(_, s)| s.tests() + s.errors())
        .collect();
    assert_eq!(counts, [3, 2, 1]);
    for note in [
        "2 Transaction Controller rows",
        "1 more Transaction Controller rows are left out: written with an empty responseMessage when a thread stopped inside the controller",
    ] {
        assert!(
            src.notes.iter().any(|n| n.starts_with(note)),
            "{note:?} in {:?}",
            src.notes
        );
    }

    // The same row before any row with the message: counted (nothing said yet that its label
    // is a controller's), and the notes say so.
    let text = std::fs::read_to_string(fixture("jmeter_written_tc_thread_stopped.jtl")).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let stopped = lines.pop().unwrap();
    lines.insert(1, stopped);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("early.jtl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let src = open(&path).unwrap();
    assert_eq!((src.series.tests(), src.series.errors()), (6, 1));
    assert!(
        src.notes.iter().any(|n| n.starts_with(
            "1 rows with no responseMessage, URL or dataType (the first at line 2, `TX fast+slow`) are counted"
        )),
        "{:?}",
        src.notes
    );
    // Without the URL and dataType columns nothing tells it from a request: counted.
    let cut: Vec<String> = text
        .lines()
        .map(|l| {
            let mut f: Vec<&str> = Vec::new();
            let mut rest = l;
            // Fields up to responseMessage may be quoted; cut the last four (URL, Latency,
            // IdleTime, Connect) from the end, where nothing is quoted.
            for _ in 0..4 {
                let (head, last) = rest.rsplit_once(',').unwrap();
                f.push(last);
                rest = head;
            }
            format!("{rest},{},{},{}", f[2], f[1], f[0])
        })
        .collect();
    let path = dir.path().join("no-url.jtl");
    std::fs::write(&path, cut.join("\n") + "\n").unwrap();
    let src = open(&path).unwrap();
    assert_eq!((src.series.tests(), src.series.errors()), (6, 1));
}

#[test]
fn per_interval_formats_say_percentiles_are_unavailable() {
    let src = open(&fixture(
        "generated_locust2.47.0_fullhistory_stats_history.csv",
    ))
    .unwrap();
    assert!(
        src.notes.iter().any(|n| n.contains("not available")),
        "{:?}",
        src.notes
    );
    for file in [
        "generated_k6-v1.2.3_summary-export.json",
        "generated_locust2.47.0_fullhistory_stats.csv",
    ] {
        let src = open(&fixture(file)).unwrap();
        assert!(
            src.unavailable(volley_formats::Figure::PerInterval)
                .is_some(),
            "{file}: {:?}",
            src.input_notes
        );
    }
}

#[test]
fn the_binary_gatling_log_decodes() {
    // Gatling's own fixture: 105 REQUEST records, 24 USER records (12 users, start and end).
    let src = open(&fixture(
        "gatling_binary_3.13plus_gatling-repo_known_stats_simulation.log",
    ))
    .unwrap();
    assert_eq!(src.format, "gatling-log");
    assert_eq!(src.series.tests() + src.series.errors(), 105);
    assert!(
        src.notes[0].contains("105 Gatling requests and 12 users"),
        "{:?}",
        src.notes
    );
    assert!(src.has_histograms());
}

#[test]
fn malformed_files_name_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let jtl = dir.path().join("bad.jtl");
    std::fs::write(
        &jtl,
        "timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,failureMessage,bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect\n1776337822386,12x,home,200,OK,T 1-1,text,true,,1,1,1,1,u,1,0,0\n",
    )
    .unwrap();
    let e = open(&jtl).unwrap_err().to_string();
    assert!(
        e.ends_with("bad.jtl:2:2: `elapsed`: expected a whole number, found `12x`"),
        "{e}"
    );
    let k6 = dir.path().join("cut.csv");
    std::fs::write(
        &k6,
        "metric_name,timestamp,metric_value,check\nhttp_reqs,1795315819,1.0,\nhttp_req_duration\n",
    )
    .unwrap();
    let e = open(&k6).unwrap_err().to_string();
    assert!(
        e.contains("cut.csv:3:") && e.contains("truncated row"),
        "{e}"
    );
    let unknown = dir.path().join("notes.txt");
    std::fs::write(&unknown, "hello").unwrap();
    let e = open(&unknown).unwrap_err().to_string();
    assert!(
        e.contains("k6 --out csv") && e.contains("JMeter JTL"),
        "{e}"
    );
}

#[test]
fn labels_become_per_test_series_on_the_total_grid() {
    let src = open(&fixture("jmeter_felipesuarezB_resultados_with_errors.jtl")).unwrap();
    let names: Vec<&str> = src.per_test.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["Login", "Upload Video"]);
    for (_, s) in &src.per_test {
        assert_eq!(
            s.intervals.len(),
            src.series.intervals.len(),
            "same interval grid as the total"
        );
    }
    for (i, row) in src.series.intervals.iter().enumerate() {
        let tests: u64 = src.per_test.iter().map(|(_, s)| s.intervals[i].tests).sum();
        let errors: u64 = src
            .per_test
            .iter()
            .map(|(_, s)| s.intervals[i].errors)
            .sum();
        assert_eq!(
            (tests, errors),
            (row.tests, row.errors),
            "interval {i}: the labels add up to the total"
        );
        assert!(
            src.per_test
                .iter()
                .all(|(_, s)| s.intervals[i].start_s == row.start_s)
        );
    }
    let login = src.merged(
        volley_formats::HistKey::step(volley_formats::HistMetric::Total, 0),
        0.0,
    );
    assert_eq!(
        login.len(),
        src.per_test[0].1.tests(),
        "a histogram per label, one value per successful sample"
    );
}
