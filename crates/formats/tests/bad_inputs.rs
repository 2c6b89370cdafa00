//! Every reader on bad input (`fixtures/bad/`, described in its README): a row that cannot
//! be used is either an error naming the file, the line and why, or skipped with a note
//! that says how many rows, which lines and why; rows out of order are used; a record cut
//! off at the end leaves everything before it; and the counts are exactly those of the good
//! rows — nothing lost, nothing invented.

use std::path::PathBuf;

use volley_formats::{Figure, HistKey, InputNote, RunStatus, open};

mod common;

fn bad(name: &str) -> PathBuf {
    common::fixtures().join("bad").join(name)
}

/// What a bad file is wrong with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Rows out of time order: a clock stepped back.
    OutOfOrder,
    /// NaN, infinite or negative values.
    BadValue,
    /// More or fewer fields than the header.
    Fields,
    /// Time stamps that are not times.
    Timestamp,
    /// A column a metric needs is missing.
    MissingColumn,
    /// The last record was cut off while it was being written.
    CutOff,
    /// Other contradictions (more failures than requests, a reset, a bad status).
    Other,
}

/// What reading it must give.
#[derive(Debug)]
enum Want {
    /// An error: `<path>` followed by this (`:line[:column]: why`).
    Error(&'static str),
    /// Successes and failures counted, and exactly these input notes.
    Read {
        tests: u64,
        errors: u64,
        notes: &'static [&'static str],
    },
}

use Class::*;
use Want::*;

const CUT_LINE: &str = "has no line end: the file was cut off while it was being written, so that line is left out and everything before it is reported.";
const CLOCK_BACK: &str = "stamped more than 30 s (up to 3599 s) before a record above (the clock stepped back?): counted in the interval of its own time stamp.";

/// (file, format label, class, what it must give)
const CASES: &[(&str, &str, Class, Want)] = &[
    // nGrinder output.csv: 4 good rows, 460 tests and 3 errors.
    (
        "ngrinder_clock_back.csv",
        "ngrinder",
        OutOfOrder,
        Read {
            tests: 460,
            errors: 3,
            notes: &[
                "1 row (line 4): stamped earlier than the row above (the clock stepped back?): placed 2 s after the row above; the rows below keep their spacing.",
            ],
        },
    ),
    (
        "ngrinder_nan_inf_negative.csv",
        "ngrinder",
        BadValue,
        Read {
            tests: 360,
            errors: 3,
            notes: &[
                "1 row skipped (line 3): `TPS` is NaN",
                "1 row skipped (line 5): `Errors` is negative",
                "1 row skipped (line 7): `Mean_time_to_first_byte` is infinite",
            ],
        },
    ),
    (
        "ngrinder_extra_field.csv",
        "ngrinder",
        Fields,
        Error(
            ":3:14: row 2 has 14 fields, the header has 13 (a separator inside a test description?)",
        ),
    ),
    (
        "ngrinder_missing_field.csv",
        "ngrinder",
        Fields,
        Error(
            ":3:13: row 2 is truncated: 12 fields, the header has 13 (Mean_time_to_first_byte missing)",
        ),
    ),
    (
        "ngrinder_bad_datetime.csv",
        "ngrinder",
        Timestamp,
        Read {
            tests: 460,
            errors: 3,
            notes: &["1 row (line 4): no valid DateTime: placed 2 s after the row above."],
        },
    ),
    (
        "ngrinder_no_ttfb.csv",
        "ngrinder",
        MissingColumn,
        Read {
            tests: 460,
            errors: 3,
            notes: &[
                "TTFB n/a: this file has no Mean_time_to_first_byte column (a script without nGrinder's HTTP plugin), so MTTFB is unknown.",
            ],
        },
    ),
    (
        "ngrinder_cut.csv",
        "ngrinder",
        CutOff,
        Read {
            tests: 330,
            errors: 3,
            notes: &["ngrinder_cut.csv: the last line (line 5) {CUT}"],
        },
    ),
    // k6 --out csv: 8 samples per request.
    (
        "k6_clock_back.csv",
        "k6-csv",
        OutOfOrder,
        Read {
            tests: 4,
            errors: 0,
            notes: &["2 requests (lines 18, 26): {CLOCK}"],
        },
    ),
    (
        "k6_nan_inf_negative.csv",
        "k6-csv",
        BadValue,
        Read {
            tests: 2,
            errors: 0,
            notes: &[
                "1 request skipped (line 10): http_req_waiting is NaN",
                "1 request skipped (line 18): http_req_receiving is negative",
                "1 request skipped (line 26): http_req_duration is infinite",
            ],
        },
    ),
    (
        "k6_vus_nan.csv",
        "k6-csv",
        BadValue,
        Read {
            tests: 2,
            errors: 0,
            notes: &["1 sample skipped (line 11): the `vus` value is NaN"],
        },
    ),
    (
        "k6_extra_field.csv",
        "k6-csv",
        Fields,
        Error(":11:20: 20 fields, the header has 19"),
    ),
    (
        "k6_missing_field.csv",
        "k6-csv",
        Fields,
        Error(":11:19: 18 fields, the header has 19"),
    ),
    (
        "k6_bad_timestamp.csv",
        "k6-csv",
        Timestamp,
        Read {
            tests: 3,
            errors: 0,
            notes: &["1 request skipped (line 10): the http_reqs time stamp is before 1970"],
        },
    ),
    (
        "k6_garbage_timestamp.csv",
        "k6-csv",
        Timestamp,
        Error(":10:2: expected a timestamp, found `yesterday`"),
    ),
    (
        "k6_no_waiting.csv",
        "k6-csv",
        MissingColumn,
        Read {
            tests: 3,
            errors: 0,
            notes: &[
                "TTFB n/a: this file has no http_req_waiting samples (k6's time to first byte), so TTFB and MTTFB are unknown; total time comes from http_req_duration.",
            ],
        },
    ),
    (
        "k6_cut.csv",
        "k6-csv",
        CutOff,
        Read {
            tests: 3,
            errors: 0,
            notes: &["k6_cut.csv: the last line (line 26) {CUT}"],
        },
    ),
    (
        "k6_cut_mid_request.csv",
        "k6-csv",
        CutOff,
        Read {
            tests: 3,
            errors: 0,
            notes: &[
                "1 request skipped (line 26): no http_req_duration, nor http_req_waiting and http_req_receiving: the time it took is unknown",
                "k6_cut_mid_request.csv: the last line (line 27) {CUT}",
            ],
        },
    ),
    // k6 --out json: one Point per line.
    (
        "k6json_clock_back.json",
        "k6-json",
        OutOfOrder,
        Read {
            tests: 4,
            errors: 0,
            notes: &["2 requests (lines 18, 26): {CLOCK}"],
        },
    ),
    (
        "k6json_negative_and_missing_value.json",
        "k6-json",
        BadValue,
        Read {
            tests: 2,
            errors: 0,
            notes: &[
                "1 request skipped (line 10): http_req_waiting is negative",
                "2 requests skipped (lines 18, 26): http_req_receiving has no value",
            ],
        },
    ),
    (
        "k6json_nan_literal.json",
        "k6-json",
        BadValue,
        Error(":7:98: not a JSON object: expected value at line 1 column 98"),
    ),
    (
        "k6json_extra_fields.json",
        "k6-json",
        Fields,
        Read {
            tests: 2,
            errors: 0,
            notes: &[],
        },
    ),
    (
        "k6json_missing_time.json",
        "k6-json",
        Fields,
        Error(":15: Point without a valid data.time"),
    ),
    (
        "k6json_no_metric.json",
        "k6-json",
        Fields,
        Read {
            tests: 3,
            errors: 0,
            notes: &["1 row skipped (line 14): a Point without a metric name"],
        },
    ),
    (
        "k6json_bad_timestamp.json",
        "k6-json",
        Timestamp,
        Read {
            tests: 2,
            errors: 0,
            notes: &["1 request skipped (line 10): the http_reqs time stamp is before 1970"],
        },
    ),
    (
        "k6json_no_waiting.json",
        "k6-json",
        MissingColumn,
        Read {
            tests: 2,
            errors: 0,
            notes: &[
                "TTFB n/a: this file has no http_req_waiting samples (k6's time to first byte), so TTFB and MTTFB are unknown; total time comes from http_req_duration.",
            ],
        },
    ),
    (
        "k6json_cut.json",
        "k6-json",
        CutOff,
        Read {
            tests: 2,
            errors: 0,
            notes: &["k6json_cut.json: the last line (line 18) {CUT}"],
        },
    ),
    // k6 --summary-export: 10 requests, 2 failed.
    (
        "k6sum_negative_count.json",
        "k6-summary",
        BadValue,
        Error(":10: metrics.http_reqs.count is -10: expected a count of requests"),
    ),
    (
        "k6sum_more_failed_than_requests.json",
        "k6-summary",
        Other,
        Error(
            ":14: metrics.http_req_failed.passes is 12, more failed requests than the 10 of http_reqs.count",
        ),
    ),
    (
        "k6sum_extra_fields.json",
        "k6-summary",
        Fields,
        Read {
            tests: 8,
            errors: 2,
            notes: &[],
        },
    ),
    (
        "k6sum_no_failed.json",
        "k6-summary",
        MissingColumn,
        Read {
            tests: 10,
            errors: 0,
            notes: &[
                "Error rate n/a: this summary has no http_req_failed (k6 before 0.31), so failed requests cannot be told from successful ones; all are counted as tests.",
            ],
        },
    ),
    (
        "k6sum_no_rate.json",
        "k6-summary",
        MissingColumn,
        Read {
            tests: 8,
            errors: 2,
            notes: &[
                "TPS n/a: this summary has no http_reqs rate, so the length of the run, and the throughput, are unknown.",
            ],
        },
    ),
    (
        "k6sum_no_waiting.json",
        "k6-summary",
        MissingColumn,
        Read {
            tests: 8,
            errors: 2,
            notes: &[
                "TTFB n/a: this summary has no http_req_waiting average (k6's time to first byte), so MTTFB is unknown.",
            ],
        },
    ),
    (
        "k6sum_cut.json",
        "k6-summary",
        CutOff,
        Error(
            ":15:9: EOF while parsing an object at line 15 column 9 (the file ends before the JSON does: cut off?)",
        ),
    ),
    // JMeter JTL: 4 good rows, one of them failed.
    (
        "jtl_clock_back.jtl",
        "jmeter-jtl",
        OutOfOrder,
        Read {
            tests: 3,
            errors: 1,
            notes: &["2 rows (lines 4, 5): {CLOCK}"],
        },
    ),
    (
        "jtl_nan_inf_negative.jtl",
        "jmeter-jtl",
        BadValue,
        Read {
            tests: 2,
            errors: 1,
            notes: &[
                "1 row skipped (line 3): `elapsed` is NaN",
                "1 row skipped (line 4): `elapsed` is negative",
                "1 row skipped (line 5): `elapsed` is infinite",
            ],
        },
    ),
    (
        "jtl_extra_field.jtl",
        "jmeter-jtl",
        Fields,
        Error(":3:18: 18 fields, the header has 17 (an unquoted separator in a label or message?)"),
    ),
    (
        "jtl_missing_field.jtl",
        "jmeter-jtl",
        Fields,
        Error(":3:17: truncated row: 16 fields, the header has 17"),
    ),
    (
        "jtl_bad_timestamp.jtl",
        "jmeter-jtl",
        Timestamp,
        Read {
            tests: 2,
            errors: 1,
            notes: &[
                "1 row skipped (line 3): `timeStamp` is before 1970",
                "1 row skipped (line 4): `timeStamp` is after the year 9999",
            ],
        },
    ),
    (
        "jtl_no_latency.jtl",
        "jmeter-jtl",
        MissingColumn,
        Read {
            tests: 3,
            errors: 1,
            notes: &[
                "TTFB n/a: this JTL has no `Latency` column (JMeter's time to first byte, saved when jmeter.save.saveservice.latency is true), so TTFB and MTTFB are unknown.",
            ],
        },
    ),
    (
        "jtl_empty_latency.jtl",
        "jmeter-jtl",
        MissingColumn,
        Read {
            tests: 3,
            errors: 1,
            notes: &[
                "1 row (line 3): no `Latency`: TTFB unknown; counted as requests and in total time, not in TTFB.",
            ],
        },
    ),
    (
        "jtl_bad_success.jtl",
        "jmeter-jtl",
        Other,
        Error(":3:8: `success`: expected true or false, found `maybe`"),
    ),
    (
        "jtl_cut.jtl",
        "jmeter-jtl",
        CutOff,
        Read {
            tests: 3,
            errors: 1,
            notes: &["jtl_cut.jtl: the last line (line 6) {CUT}"],
        },
    ),
    // Locust _stats_history.csv: cumulative totals, 60 requests and 3 failures at the end.
    (
        "locust_clock_back.csv",
        "locust-history",
        OutOfOrder,
        Read {
            tests: 57,
            errors: 3,
            notes: &[
                "1 row (line 5): stamped earlier than the row above (the clock stepped back?): placed 1 s after the row above; the rows below keep their spacing.",
            ],
        },
    ),
    (
        "locust_nan_negative.csv",
        "locust-history",
        BadValue,
        Read {
            tests: 57,
            errors: 3,
            notes: &[
                "1 row skipped (line 4): `Total Request Count` is NaN",
                "1 row skipped (line 5): `Total Average Response Time` is negative",
            ],
        },
    ),
    (
        "locust_extra_field.csv",
        "locust-history",
        Fields,
        Error(":3:25: too many fields (a separator in a name?): 25 fields, the header has 24"),
    ),
    (
        "locust_missing_field.csv",
        "locust-history",
        Fields,
        Error(":3:24: truncated row: 23 fields, the header has 24"),
    ),
    (
        "locust_bad_timestamp.csv",
        "locust-history",
        Timestamp,
        Read {
            tests: 57,
            errors: 3,
            notes: &["1 row (line 4): no Timestamp: placed 1 s after the row above."],
        },
    ),
    (
        "locust_missing_column.csv",
        "locust-history",
        MissingColumn,
        Error(":1: Locust header has no `Total Average Response Time` column"),
    ),
    (
        "locust_cut.csv",
        "locust-history",
        CutOff,
        Read {
            tests: 37,
            errors: 3,
            notes: &["locust_cut.csv: the last line (line 6) {CUT}"],
        },
    ),
    (
        "locust_reset.csv",
        "locust-history",
        Other,
        Read {
            tests: 42,
            errors: 3,
            notes: &[
                "1 row (line 5): lower totals than the row above (Locust's statistics were reset): counted from 0 again; requests made between the row above and the reset are unknown.",
            ],
        },
    ),
    (
        "locust_first_row_counts.csv",
        "locust-history",
        Other,
        Read {
            tests: 46,
            errors: 2,
            notes: &[
                "1 row (line 2): the first row already counts 12 requests (1 failed), made before the file's first time stamp: they are in no interval.",
            ],
        },
    ),
    (
        "locust_more_failures.csv",
        "locust-history",
        Other,
        Read {
            tests: 57,
            errors: 3,
            notes: &["1 row skipped (line 4): more failures than requests"],
        },
    ),
    // Locust _stats.csv: one Aggregated row, so a bad value is an error.
    (
        "locustst_nan.csv",
        "locust-stats",
        BadValue,
        Error(":3:3: `Request Count` is NaN"),
    ),
    (
        "locustst_negative.csv",
        "locust-stats",
        BadValue,
        Error(":3:4: `Failure Count` is negative"),
    ),
    (
        "locustst_extra_field.csv",
        "locust-stats",
        Fields,
        Error(":2:23: too many fields (a separator in a name?): 23 fields, the header has 22"),
    ),
    (
        "locustst_missing_column.csv",
        "locust-stats",
        MissingColumn,
        Error(":1: Locust header has no `Requests/s` column"),
    ),
    (
        "locustst_no_rps.csv",
        "locust-stats",
        MissingColumn,
        Read {
            tests: 38,
            errors: 2,
            notes: &[
                "TPS n/a: the Aggregated row has no Requests/s, so the length of the run, and the throughput, are unknown.",
            ],
        },
    ),
    (
        "locustst_more_failures.csv",
        "locust-stats",
        Other,
        Error(":3:4: 41 failures of 40 requests"),
    ),
    (
        "locustst_cut.csv",
        "locust-stats",
        CutOff,
        Error(
            ":2: no `Aggregated` row (the file's last line has no line end: it was cut off while it was being written and is left out)",
        ),
    ),
    // Gatling simulation.log, text: 4 good requests, one KO.
    (
        "gatling_clock_back.log",
        "gatling-log",
        OutOfOrder,
        Read {
            tests: 3,
            errors: 1,
            notes: &["2 rows (lines 5, 6): {CLOCK}"],
        },
    ),
    (
        "gatling_nan_negative.log",
        "gatling-log",
        BadValue,
        Read {
            tests: 3,
            errors: 1,
            notes: &[
                "1 row skipped (line 5): the request ends before it starts",
                "1 row skipped (line 6): the start time is NaN",
                "1 row skipped (line 7): the end time is infinite",
            ],
        },
    ),
    (
        "gatling_extra_field.log",
        "gatling-log",
        Fields,
        Error(
            ":4:8: a REQUEST record with 9 fields: expected 7 (REQUEST, groups, name, start, end, status, message), or 8 before Gatling 3.4",
        ),
    ),
    (
        "gatling_missing_field.log",
        "gatling-log",
        Fields,
        Error(
            ":4:6: a REQUEST record with 5 fields: expected 7 (REQUEST, groups, name, start, end, status, message), or 8 before Gatling 3.4",
        ),
    ),
    (
        "gatling_bad_timestamp.log",
        "gatling-log",
        Timestamp,
        Read {
            tests: 3,
            errors: 1,
            notes: &["1 row skipped (line 4): the start time is before 1970"],
        },
    ),
    (
        "gatling_garbage_time.log",
        "gatling-log",
        Timestamp,
        Error(":4:4: expected epoch milliseconds, found `soon`"),
    ),
    (
        "gatling_bad_status.log",
        "gatling-log",
        Other,
        Error(":4:6: expected the status OK or KO, found `MAYBE`"),
    ),
    (
        "gatling_cut.log",
        "gatling-log",
        CutOff,
        Read {
            tests: 2,
            errors: 1,
            notes: &["gatling_cut.log: the last line (line 6) {CUT}"],
        },
    ),
    // Gatling simulation.log, binary (3.13+): times relative to the RUN record's start.
    (
        "gatbin_clock_back.log",
        "gatling-log",
        OutOfOrder,
        Read {
            tests: 3,
            errors: 1,
            notes: &["2 records (bytes 161, 183): {CLOCK}"],
        },
    ),
    (
        "gatbin_negative_duration.log",
        "gatling-log",
        BadValue,
        Read {
            tests: 2,
            errors: 0,
            notes: &["1 record skipped (byte 104): the request ends before it starts"],
        },
    ),
    (
        "gatbin_unknown_record.log",
        "gatling-log",
        Fields,
        Error(":1:105: byte offset 105: unknown record type 9"),
    ),
    (
        "gatbin_huge_string.log",
        "gatling-log",
        Fields,
        Error(":1:117: byte offset 117: a string of 2147483647 bytes (0 to 1048576 expected)"),
    ),
    (
        "gatbin_bad_start.log",
        "gatling-log",
        Timestamp,
        Error(":1:39: byte offset 39: the RUN record's start time is before 1970"),
    ),
    (
        "gatbin_cut.log",
        "gatling-log",
        CutOff,
        Read {
            tests: 2,
            errors: 0,
            notes: &[
                "gatbin_cut.log: the file ends inside a record (from byte 126): it was cut off while it was being written, so that record is left out and everything before it is reported.",
            ],
        },
    ),
    // volley run directories (4 intervals of 10 requests), left by a crash.
    (
        "rundir_cut_series",
        "volley",
        CutOff,
        Read {
            tests: 30,
            errors: 0,
            notes: &["series.csv: the last line (line 5) {CUT}"],
        },
    ),
    (
        "rundir_cut_hlog",
        "volley",
        CutOff,
        Read {
            tests: 40,
            errors: 0,
            notes: &[
                "latency.hlog: the last line (line 11) {CUT}",
                "1 row (line 5): in series.csv, without histograms in latency.hlog (the run stopped between writing the two): counted in the per-interval figures, not in the per-request percentiles.",
            ],
        },
    ),
    (
        "rundir_running_elsewhere",
        "volley",
        Other,
        Read {
            tests: 40,
            errors: 0,
            notes: &[],
        },
    ),
];

fn expand(note: &str) -> String {
    note.replace("{CUT}", CUT_LINE)
        .replace("{CLOCK}", CLOCK_BACK)
}

#[test]
fn every_bad_file_gives_an_error_or_notes_and_exactly_the_good_rows() {
    let mut failures = Vec::new();
    for (file, format, class, want) in CASES {
        let path = bad(file);
        let got = open(&path);
        let problem = match (want, got) {
            (Error(suffix), Err(e)) => {
                let want = format!("{}{suffix}", path.display());
                (e.to_string() != want).then(|| format!("error\n     got: {e}\n    want: {want}"))
            }
            (Error(suffix), Ok(src)) => Some(format!(
                "read without error ({} tests), want the error {suffix}",
                src.series.tests()
            )),
            (Read { .. }, Err(e)) => Some(format!("error {e}")),
            (
                Read {
                    tests,
                    errors,
                    notes,
                },
                Ok(src),
            ) => {
                // Notes every file of a format has (how the edge intervals were cut, what a
                // summary or Locust's history cannot hold) are not about bad input:
                // `bucket.rs` and peer_agreement.rs test them.
                let got_notes: Vec<String> = src
                    .input_notes
                    .iter()
                    .filter(|n| {
                        !matches!(
                            n,
                            InputNote::Span { .. }
                                | InputNote::EdgesUnknown { .. }
                                | InputNote::NotInFile { .. }
                                | InputNote::Unavailable {
                                    figure: Figure::PerInterval,
                                    ..
                                }
                        )
                    })
                    .map(ToString::to_string)
                    .collect();
                let want_notes: Vec<String> = notes.iter().map(|n| expand(n)).collect();
                if src.format != *format {
                    Some(format!("read as {}, want {format}", src.format))
                } else if (src.series.tests(), src.series.errors()) != (*tests, *errors) {
                    Some(format!(
                        "{} tests and {} errors, want {tests} and {errors}",
                        src.series.tests(),
                        src.series.errors()
                    ))
                } else if got_notes != want_notes {
                    Some(format!(
                        "notes\n     got: {got_notes:#?}\n    want: {want_notes:#?}"
                    ))
                } else if src.has_histograms()
                    && *format != "volley"
                    && src.merged(HistKey::TOTAL, 0.0).len() != *tests
                {
                    Some(format!(
                        "{} per-request times for {tests} successful requests",
                        src.merged(HistKey::TOTAL, 0.0).len()
                    ))
                } else {
                    None
                }
            }
        };
        if let Some(p) = problem {
            failures.push(format!("{file} ({class:?}): {p}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
}

#[test]
fn every_importer_has_a_case_of_every_class_that_applies_and_every_file_is_listed() {
    assert!(CASES.len() >= 40, "{} cases", CASES.len());
    // Per-request and per-interval files meet every class; a summary has no time order.
    for (format, classes) in [
        (
            "ngrinder",
            &[
                OutOfOrder,
                BadValue,
                Fields,
                Timestamp,
                MissingColumn,
                CutOff,
            ][..],
        ),
        (
            "k6-csv",
            &[
                OutOfOrder,
                BadValue,
                Fields,
                Timestamp,
                MissingColumn,
                CutOff,
            ],
        ),
        (
            "k6-json",
            &[
                OutOfOrder,
                BadValue,
                Fields,
                Timestamp,
                MissingColumn,
                CutOff,
            ],
        ),
        ("k6-summary", &[BadValue, Fields, MissingColumn, CutOff]),
        (
            "jmeter-jtl",
            &[
                OutOfOrder,
                BadValue,
                Fields,
                Timestamp,
                MissingColumn,
                CutOff,
            ],
        ),
        (
            "locust-history",
            &[
                OutOfOrder,
                BadValue,
                Fields,
                Timestamp,
                MissingColumn,
                CutOff,
            ],
        ),
        ("locust-stats", &[BadValue, Fields, MissingColumn, CutOff]),
        (
            "gatling-log",
            &[OutOfOrder, BadValue, Fields, Timestamp, CutOff],
        ),
        ("volley", &[CutOff]),
    ] {
        for class in classes {
            assert!(
                CASES.iter().any(|(_, f, c, _)| f == &format && c == class),
                "{format}: no {class:?} case"
            );
        }
    }
    let readme = std::fs::read_to_string(bad("README.md")).unwrap();
    for entry in std::fs::read_dir(bad("")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name == "README.md" {
            continue;
        }
        assert!(
            CASES.iter().any(|(f, ..)| *f == name),
            "{name} is in fixtures/bad but has no case"
        );
        assert!(
            readme.contains(&format!("`{name}`")),
            "{name} is not described in fixtures/bad/README.md"
        );
    }
}

#[test]
fn rows_out_of_order_are_counted_in_their_own_intervals() {
    // k6, JTL and Gatling: two requests an hour early go into their own intervals, an
    // hour before the others (the gap between is left out, and said so).
    for file in [
        "k6_clock_back.csv",
        "k6json_clock_back.json",
        "jtl_clock_back.jtl",
        "gatling_clock_back.log",
        "gatbin_clock_back.log",
    ] {
        let src = open(&bad(file)).unwrap();
        // (Edge intervals holding under half a second of traffic are folded into their
        // neighbours, so the two at each end may share a row.)
        let starts: Vec<f64> = src.series.intervals.iter().map(|i| i.start_s).collect();
        assert!(
            (2..=4).contains(&starts.len())
                && starts[0] == 0.0
                && starts[starts.len() - 1] > 3590.0,
            "{file}: {starts:?}"
        );
        let per_interval: Vec<u64> = src
            .series
            .intervals
            .iter()
            .map(|i| i.tests + i.errors)
            .collect();
        assert_eq!(per_interval.iter().sum::<u64>(), 4, "{file}");
        assert!(
            per_interval[0] >= 1 && per_interval[per_interval.len() - 1] >= 1,
            "{file}: {per_interval:?}"
        );
        assert!(
            src.notes.iter().any(|n| n.contains("separate runs")),
            "{file}: {:?}",
            src.notes
        );
    }
    // nGrinder and Locust rows are intervals: they stay in file order, on a clock that does
    // not step back.
    let ng = open(&bad("ngrinder_clock_back.csv")).unwrap();
    assert_eq!(
        ng.series
            .intervals
            .iter()
            .map(|i| i.start_s)
            .collect::<Vec<_>>(),
        [0.0, 2.0, 4.0, 6.0]
    );
    let lo = open(&bad("locust_clock_back.csv")).unwrap();
    assert_eq!(
        lo.series
            .intervals
            .iter()
            .map(|i| i.start_s)
            .collect::<Vec<_>>(),
        [0.0, 1.0, 2.0, 3.0]
    );
}

#[test]
fn a_missing_ttfb_is_not_available_rather_than_zero() {
    for file in [
        "jtl_no_latency.jtl",
        "k6_no_waiting.csv",
        "k6json_no_waiting.json",
        "ngrinder_no_ttfb.csv",
        "k6sum_no_waiting.json",
    ] {
        let src = open(&bad(file)).unwrap();
        assert!(src.unavailable(Figure::Ttfb).is_some(), "{file}");
        assert!(
            src.series
                .intervals
                .iter()
                .filter(|i| i.tests > 0)
                .all(|i| i.mttfb_ms.is_nan()),
            "{file}: MTTFB must be unknown, not 0"
        );
        assert!(
            src.latency(HistKey::TTFB, 0.0).is_none(),
            "{file}: no TTFB histogram"
        );
    }
    // One row without Latency among rows with it: its interval's MTTFB comes from the others.
    let src = open(&bad("jtl_empty_latency.jtl")).unwrap();
    assert_eq!(src.series.intervals[0].tests, 2);
    assert_eq!(src.series.intervals[0].mttfb_ms, 100.0);
    assert_eq!(src.latency(HistKey::TTFB, 0.0).unwrap().count, 2);
}

#[test]
fn a_run_whose_recorder_died_did_not_finish() {
    let dir = tempfile::tempdir().unwrap();
    let copy = |to: &str, edit: &dyn Fn(&mut serde_json::Value)| {
        let d = dir.path().join(to);
        std::fs::create_dir(&d).unwrap();
        for f in ["series.csv", "latency.hlog"] {
            std::fs::copy(bad("rundir_running_elsewhere").join(f), d.join(f)).unwrap();
        }
        let mut meta: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(bad("rundir_running_elsewhere").join("run.json")).unwrap(),
        )
        .unwrap();
        meta["host"] = volley_formats::rundir::host_name().into();
        edit(&mut meta);
        std::fs::write(d.join("run.json"), meta.to_string()).unwrap();
        d
    };
    // No process has this pid (above Linux's pid_max).
    let dead = copy("dead", &|m| m["pid"] = 99_999_999u32.into());
    let src = open(&dead).unwrap();
    let meta = src.meta.unwrap();
    assert_eq!(meta.status, RunStatus::DidNotFinish);
    assert_eq!(meta.status.name(), "did not finish");
    assert!(meta.reason.unwrap().contains("pid 99999999"));
    assert_eq!(src.series.tests(), 40, "everything flushed is reported");
    // This process is alive and started before the run did: still running.
    let alive = copy("alive", &|m| {
        m["pid"] = std::process::id().into();
        m["started_at"] = jiff::Timestamp::now()
            .checked_add(jiff::SignedDuration::from_secs(60))
            .unwrap()
            .to_string()
            .into();
    });
    assert_eq!(
        open(&alive).unwrap().meta.unwrap().status,
        RunStatus::Running
    );
    // A live process that started after the run: the pid was reused, the recorder is gone.
    let reused = copy("reused", &|m| {
        m["pid"] = std::process::id().into();
        m["started_at"] = "2001-01-01T00:00:00Z".into();
    });
    assert_eq!(
        open(&reused).unwrap().meta.unwrap().status,
        RunStatus::DidNotFinish
    );
    // Another host, or no pid: volley cannot tell, and says what run.json says.
    assert_eq!(
        open(&bad("rundir_running_elsewhere"))
            .unwrap()
            .meta
            .unwrap()
            .status,
        RunStatus::Running
    );
    let no_pid = copy("no-pid", &|m| {
        m.as_object_mut().unwrap().remove("pid");
    });
    assert_eq!(
        open(&no_pid).unwrap().meta.unwrap().status,
        RunStatus::Running
    );
}

#[test]
fn notes_are_typed_for_the_report() {
    let src = open(&bad("jtl_nan_inf_negative.jtl")).unwrap();
    match &src.input_notes[0] {
        InputNote::Skipped { rows, why, .. } => {
            assert_eq!(
                (rows.count, rows.at.as_slice(), why.as_str()),
                (1, &[3u64][..], "`elapsed` is NaN")
            );
        }
        other => panic!("{other:?}"),
    }
    let json = serde_json::to_value(&src.input_notes).unwrap();
    assert_eq!(json[1]["kind"], "skipped");
    assert_eq!(json[1]["rows"]["at"][0], 4);
}
