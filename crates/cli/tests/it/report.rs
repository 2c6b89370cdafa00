//! `volley report` on foreign files.

use std::path::PathBuf;

use crate::support::*;

/// A fixture: `fixtures/` at the root of the repository, or `VOLLEY_FIXTURES`.
fn fixture(rel: &str) -> PathBuf {
    let dir = std::env::var_os("VOLLEY_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures"));
    assert!(
        dir.is_dir(),
        "the fixtures are not at {}: they live in `fixtures/` at the repository root (or set VOLLEY_FIXTURES)",
        dir.display()
    );
    dir.join(rel)
}

#[test]
fn ngrinder_output_csv_matches_the_published_script() {
    let path = fixture("ngrinder/ngrinder_neven7_output.csv");
    let o = volley(&["report", "--format", "json", path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let got: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let want: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(path.with_extension("expected.json")).unwrap(),
    )
    .unwrap();
    for (k, v) in want.as_object().unwrap() {
        let (a, b) = (v.as_f64().unwrap(), got["seed_suite"][k].as_f64().unwrap());
        assert!((a - b).abs() <= 0.01, "{k}: {a} vs {b}");
    }
    assert!(
        got["notes"][0]
            .as_str()
            .unwrap()
            .contains("per-request percentiles are not available")
    );
}

#[test]
fn unknown_file_lists_what_volley_reads() {
    let dir = out_dir();
    let p = dir.path().join("x.txt");
    std::fs::write(&p, "hello\n").unwrap();
    let o = volley(&["report", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("nGrinder output.csv"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_missing_path_is_named_once_with_what_to_give() {
    let dir = out_dir();
    let p = dir.path().join("runs/nothing");
    let path = p.to_str().unwrap();
    for args in [&["report", path][..], &["compare", path, path][..]] {
        let o = volley(args);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(
            err.trim_end(),
            format!(
                "volley: error: {}: no such file or directory; give a run directory (`volley runs` lists those under runs/) or a result file: volley reads nGrinder, k6, JMeter, Locust and Gatling results",
                p.display()
            ),
            "{}",
            text(&o)
        );
    }
}

fn delayed_run(server: &TestServer, out: &std::path::Path, ms: u64, name: &str) {
    let url = server.url(&format!("/delay?ms={ms}"));
    let o = volley(&[
        "run",
        "--url",
        &url,
        "--vus",
        "4",
        "--duration",
        "3s",
        "--interval",
        "250ms",
        "--name",
        name,
        "-o",
        out.to_str().unwrap(),
        "--progress",
        "none",
    ]);
    assert!(o.status.success(), "{}", text(&o));
}

fn compare_json(out: &std::path::Path) -> serde_json::Value {
    let mut runs: Vec<_> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    runs.sort();
    let args: Vec<&str> = ["compare", "--format", "json"]
        .into_iter()
        .chain(runs.iter().map(|p| p.to_str().unwrap()))
        .collect();
    let o = volley(&args);
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Identical load, compared as run groups of 3 (`--repeat 3`): judged between runs, nothing
/// is marked. (Two single runs of identical load are not asserted to be all ⚪: their
/// within-run estimate cannot see run-to-run variation — on a loaded machine MTTFB moved 5 %
/// against an estimated 4 % — which is why that comparison says so and suggests `--repeat`;
/// see `groups::...` for that caveat and docs/ARCHITECTURE.md for the measured spread.)
#[test]
fn compare_identical_load_is_within_noise() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    delayed_group(&server, out.path(), 20, "a");
    delayed_group(&server, out.path(), 20, "b");
    let cmp = compare_json(out.path());
    let rows = cmp["steps"][0]["rows"].as_array().unwrap();
    assert!(rows.len() >= 14);
    for r in rows {
        let key = r["key"].as_str().unwrap();
        assert_eq!(
            (r["test"].as_str(), r["runs_before"].as_u64()),
            (Some("pooled_t"), Some(3)),
            "{key}"
        );
        if key.starts_with("tps") || key.contains("ttfb") || key == "total_tests" {
            assert_eq!(r["verdict"], "noise", "{key}: {r}");
        }
    }
}

fn delayed_group(server: &TestServer, out: &std::path::Path, ms: u64, name: &str) {
    let url = server.url(&format!("/delay?ms={ms}"));
    let o = volley(&[
        "run",
        "--url",
        &url,
        "--vus",
        "4",
        "--duration",
        "3s",
        "--interval",
        "250ms",
        "--repeat",
        "3",
        "--name",
        name,
        "-o",
        out.to_str().unwrap(),
        "--progress",
        "none",
    ]);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn compare_doubled_latency_is_red_and_the_reverse_green() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    delayed_run(&server, out.path(), 20, "a");
    delayed_run(&server, out.path(), 40, "b");
    delayed_run(&server, out.path(), 20, "c");
    let cmp = compare_json(out.path());
    let find = |step: &serde_json::Value, key: &str| {
        step["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["key"] == key)
            .unwrap()
            .clone()
    };
    for key in ["mttfb_avg_ms", "mttfb_p50_ms", "ttfb_p50_ms", "ttfb_p95_ms"] {
        assert_eq!(find(&cmp["steps"][0], key)["verdict"], "worse", "{key}");
        assert_eq!(find(&cmp["steps"][1], key)["verdict"], "better", "{key}");
    }
    // A few hundred requests say nothing about p99.9: it is left unjudged, and says why.
    assert_eq!(find(&cmp["steps"][0], "ttfb_p99_9_ms")["too_few"], true);
    // Half the throughput with the same VUs is worse too.
    assert_eq!(find(&cmp["steps"][0], "tps_avg")["verdict"], "worse");
    assert!(cmp["overall"].is_object());
}

#[test]
fn from_forces_a_format_and_csv_lists_every_test() {
    let dir = out_dir();
    let multi = dir.path().join("multi.csv");
    std::fs::write(
        &multi,
        "DateTime,vuser,Tests,Errors,Mean_Test_Time_(ms),Test_Time_Standard_Deviation_(ms),TPS,Description,Tests-1,Errors-1,Mean_Test_Time_(ms)-1,Test_Time_Standard_Deviation_(ms)-1,TPS-1,Description,Tests-2,Errors-2,Mean_Test_Time_(ms)-2,Test_Time_Standard_Deviation_(ms)-2,TPS-2\n\
         2020-01-01 00:00:00,2,30,1,5,1,15,login,10,0,4,1,5,search,20,1,6,1,10\n\
         2020-01-01 00:00:02,2,32,1,5,1,16,login,12,0,4,1,6,search,20,1,6,1,10\n",
    )
    .unwrap();
    let o = volley(&["report", "--format", "csv", multi.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let csv = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 4, "{csv}");
    assert!(lines[2].contains(",login,22,0,"), "{csv}");
    assert!(lines[3].contains(",search,42,2,"), "{csv}");
    // Forcing a wrong format names the line and column where it fails.
    let o = volley(&["report", "--from", "jtl", multi.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("multi.csv:"),
        "{}",
        text(&o)
    );
    let o = volley(&["report", "--from", "nope", multi.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("k6-csv"),
        "{}",
        text(&o)
    );
}

#[test]
fn warmup_by_seconds_or_by_stage() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let url = server.url("/ok");
    let o = volley(&[
        "run",
        "--url",
        &url,
        "--stages",
        "1s:2,2s:2",
        "--pacing",
        "100ms",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let dir = only_run(out.path());
    let report = |w: &str| -> serde_json::Value {
        let o = volley(&[
            "report",
            "--format",
            "json",
            "--warmup",
            w,
            dir.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let by_stage = report("stage:1");
    assert_eq!(by_stage["warmup_s"], 1.0);
    assert_eq!(by_stage["seed_suite"]["intervals"], 2);
    assert_eq!(report("2s")["seed_suite"]["intervals"], 1);
    assert!(
        by_stage["notes"][0].as_str().unwrap().contains("excluded"),
        "{by_stage}"
    );
}

/// `fixtures/bad/…`: the files `crates/formats/tests/bad_inputs.rs` checks one by one.
fn bad(name: &str) -> PathBuf {
    fixture(&format!("bad/{name}"))
}

#[test]
fn a_row_that_cannot_be_used_is_an_input_error_naming_file_and_line() {
    for (file, at) in [
        (
            "jtl_extra_field.jtl",
            "jtl_extra_field.jtl:3:18: 18 fields, the header has 17",
        ),
        (
            "k6_garbage_timestamp.csv",
            "k6_garbage_timestamp.csv:10:2: expected a timestamp, found `yesterday`",
        ),
        (
            "gatling_bad_status.log",
            "gatling_bad_status.log:4:6: expected the status OK or KO",
        ),
        (
            "locustst_nan.csv",
            "locustst_nan.csv:3:3: `Request Count` is NaN",
        ),
        (
            "gatbin_huge_string.log",
            "gatbin_huge_string.log:1:117: byte offset 117: a string of 2147483647 bytes",
        ),
    ] {
        let o = volley(&["report", bad(file).to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{file}: {}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(at),
            "{file}: {}",
            text(&o)
        );
        assert!(
            o.stdout.is_empty(),
            "{file}: no report for a file that is not read"
        );
    }
}

#[test]
fn skipped_rows_and_a_missing_ttfb_reach_every_output() {
    let dir = out_dir();
    let (skipped, no_ttfb) = (bad("jtl_nan_inf_negative.jtl"), bad("jtl_no_latency.jtl"));
    let run = |format: &str, path: &std::path::Path| {
        let o = volley(&[
            "report",
            "--verbose",
            "--format",
            format,
            path.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o));
        String::from_utf8(o.stdout).unwrap()
    };
    let note = "1 row skipped (line 3): `elapsed` is NaN";
    for format in ["table", "md", "json"] {
        assert!(run(format, &skipped).contains(note), "{format}");
    }
    let json: serde_json::Value = serde_json::from_str(&run("json", &skipped)).unwrap();
    assert_eq!(
        json["seed_suite"]["total_tests"], 3,
        "the three good rows, nothing more"
    );
    assert_eq!(json["input_notes"][0]["kind"], "skipped");
    assert_eq!(json["input_notes"][1]["rows"]["at"], serde_json::json!([4]));
    // No Latency column: TTFB and MTTFB are n/a with the reason, never 0.00 ms.
    let table = run("table", &no_ttfb);
    assert!(
        table
            .lines()
            .any(|l| l.trim_start().starts_with("MTTFB Average") && l.trim_end().ends_with("n/a")),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.trim_start().starts_with("TTFB") && l.contains("n/a")),
        "{table}"
    );
    assert!(
        table.contains("note: TTFB n/a: this JTL has no `Latency` column"),
        "{table}"
    );
    assert!(!table.contains("0.00 ms"), "{table}");
    let md = run("md", &no_ttfb);
    assert!(
        md.contains("| MTTFB Average | n/a |") && md.contains("| TTFB | n/a |"),
        "{md}"
    );
    let json: serde_json::Value = serde_json::from_str(&run("json", &no_ttfb)).unwrap();
    assert!(json["seed_suite"]["mttfb_avg_ms"].is_null(), "{json}");
    assert!(json["per_request"]["ttfb_ms"].is_null());
    let unavailable: Vec<&serde_json::Value> = json["input_notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["kind"] == "unavailable")
        .collect();
    assert_eq!(unavailable.len(), 1, "{json}");
    assert_eq!(unavailable[0]["figure"], "ttfb");
    let html = dir.path().join("r.html");
    let o = volley(&[
        "report",
        no_ttfb.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    // minijinja escapes `/` as `&#x2f;`.
    let page = std::fs::read_to_string(&html)
        .unwrap()
        .replace("&#x2f;", "/");
    assert!(
        page.contains("TTFB n/a: this JTL has no `Latency` column"),
        "the note is on the page"
    );
    assert!(
        page.contains("<td>TTFB</td><td>n/a</td>"),
        "the TTFB row says n/a"
    );
}

#[test]
fn a_cut_run_directory_reports_what_was_flushed_and_a_dead_one_did_not_finish() {
    let o = volley(&[
        "report",
        "--format",
        "json",
        bad("rundir_cut_series").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["seed_suite"]["total_tests"], 30);
    assert!(json["notes"].as_array().unwrap().iter().any(|n| {
        n.as_str()
            .unwrap()
            .starts_with("series.csv: the last line (line 5) has no line end")
    }));
    // The same run recorded on this host by a process that no longer exists.
    let dir = out_dir();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let from = bad("rundir_running_elsewhere");
    for f in ["series.csv", "latency.hlog"] {
        std::fs::copy(from.join(f), run.join(f)).unwrap();
    }
    let mut meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(from.join("run.json")).unwrap()).unwrap();
    meta["host"] = volley_formats::rundir::host_name().into();
    meta["pid"] = 99_999_999u32.into();
    std::fs::write(run.join("run.json"), meta.to_string()).unwrap();
    let o = volley(&["report", run.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.lines().nth(1).unwrap().contains("did not finish"),
        "{table}"
    );
    assert!(
        table.contains("stopped: run.json still says running, but its recorder (pid 99999999"),
        "{table}"
    );
}

#[test]
fn a_comparison_carries_what_the_readers_noted_about_their_inputs() {
    let bad = "../../fixtures/bad/jtl_clock_back.jtl";
    let good = "../../fixtures/imports/jmeter_sunjida_results_small.jtl";
    let o = volley(&["compare", "--verbose", bad, good]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout)
            .contains("note: jtl_clock_back.jtl: 2 rows (lines 4, 5)"),
        "{}",
        text(&o)
    );
    let o = volley(&["compare", "--format", "json", bad, good]);
    let cmp: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // Besides how the edge intervals were cut to the traffic (every per-request import says
    // so), the bad file has its note and the clean one none.
    let defects = |run: &serde_json::Value| -> Vec<String> {
        run["input_notes"].as_array().map_or(vec![], |n| {
            n.iter()
                .map(|n| n.as_str().unwrap().to_string())
                .filter(|n| !n.starts_with("The requests span"))
                .collect()
        })
    };
    assert_eq!(defects(&cmp["runs"][0]).len(), 1, "{cmp}");
    assert!(
        defects(&cmp["runs"][1]).is_empty(),
        "a clean file has no notes about its rows: {cmp}"
    );
    assert!(
        cmp["runs"][1]["input_notes"][0]
            .as_str()
            .unwrap()
            .starts_with("The requests span 6.645 s"),
        "{cmp}"
    );
    // A figure a file cannot give is left out of the comparison, not compared as 0.
    let o = volley(&[
        "compare",
        "--format",
        "json",
        "../../fixtures/bad/k6sum_no_failed.json",
        "../../fixtures/imports/generated_k6-v1.2.3_summary-export.json",
    ]);
    let cmp: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let keys: Vec<&str> = cmp["steps"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["key"].as_str().unwrap())
        .collect();
    assert!(
        !keys.contains(&"error_rate_pct") && keys.contains(&"tps_avg"),
        "{keys:?}"
    );
    // A summary holds one total: no percentiles or spreads over intervals to compare.
    for per_interval in [
        "tps_p50",
        "tps_p95",
        "mttfb_p50_ms",
        "mttfb_p99_ms",
        "mttfb_variability_pct",
        "mttfb_avg_diff_ms",
    ] {
        assert!(!keys.contains(&per_interval), "{per_interval} in {keys:?}");
    }
    assert!(keys.contains(&"mttfb_avg_ms"), "{keys:?}");
}

/// Two runs of one name, one closed (VUs) and one open (arrivals per second): labelled apart
/// by their directories, never `rooms → rooms`, and their unlike load models said before any
/// figure.
#[test]
fn runs_of_one_name_are_labelled_apart_and_unlike_models_said() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let url = server.url("/delay?ms=2");
    for load in [["--vus", "2"], ["--rate", "40"]] {
        let o = volley(&[
            "run",
            "--url",
            &url,
            load[0],
            load[1],
            "--duration",
            "2s",
            "--interval",
            "250ms",
            "--name",
            "rooms",
            "-o",
            out.path().to_str().unwrap(),
            "--progress",
            "none",
        ]);
        assert!(o.status.success(), "{}", text(&o));
    }
    let mut runs: Vec<_> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    runs.sort();
    let starts: Vec<String> = runs
        .iter()
        .map(|r| {
            let dir = r.file_name().unwrap().to_string_lossy().into_owned();
            dir.strip_suffix("_rooms").unwrap().to_string()
        })
        .collect();
    let o = volley(&[
        "compare",
        runs[0].to_str().unwrap(),
        runs[1].to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let t = String::from_utf8_lossy(&o.stdout);
    let step = format!("rooms ({}) → rooms ({})", starts[0], starts[1]);
    assert!(t.contains(&step) && !t.contains("rooms → rooms"), "{t}");
    let said = t.find("Unlike load models:").expect("the models are said");
    assert!(said < t.find("TPS Average").unwrap(), "{t}");
    assert!(
        t.contains(&format!("rooms ({}) ran an open model", starts[1])),
        "{t}"
    );
}
