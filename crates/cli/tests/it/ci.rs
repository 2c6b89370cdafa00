//! What CI sees: `volley compare --baseline … --fail-on regression` and its exit code, JUnit XML
//! from `run`, `compare` and `check` validated against the schemas CI tools use (with
//! `xmllint`, Debian's libxml2-utils, which scripts/test.sh installs), and the job summary
//! appended to `$GITHUB_STEP_SUMMARY`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::*;

fn fixture(rel: &str) -> PathBuf {
    let dir = std::env::var_os("VOLLEY_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures"));
    dir.join(rel)
}

const SCHEMAS: [&str; 2] = [
    "junit/windyroad-JUnit.xsd",
    "junit/jenkins-xunit-junit-10.xsd",
];

/// `xmllint --schema` on `file` with `schema`: (valid, what xmllint said).
fn xmllint(schema: &Path, file: &Path) -> (bool, String) {
    let o = Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(schema)
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("xmllint is needed for this test ({e}): apt-get install libxml2-utils (scripts/test.sh installs it)"));
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Validates `file` against both JUnit schemas (where xmllint is: [`need`]) and returns its
/// text.
fn valid_junit(file: &Path) -> String {
    let schemas: &[&str] = if need("xmllint") { &SCHEMAS } else { &[] };
    for schema in schemas {
        let (ok, said) = xmllint(&fixture(schema), file);
        assert!(
            ok,
            "{} does not validate against {schema}:\n{said}\n{}",
            file.display(),
            std::fs::read_to_string(file).unwrap_or_default()
        );
    }
    std::fs::read_to_string(file).unwrap()
}

#[test]
fn the_validator_rejects_broken_junit() {
    if !need("xmllint") {
        return;
    }
    let dir = out_dir();
    let broken = dir.path().join("broken.xml");
    // A suite without its required attributes, and a failure without its type.
    std::fs::write(&broken, "<?xml version=\"1.0\"?>\n<testsuites><testsuite name=\"x\"><testcase name=\"a\"><failure message=\"m\"/></testcase></testsuite></testsuites>\n").unwrap();
    for schema in SCHEMAS {
        let (ok, said) = xmllint(&fixture(schema), &broken);
        assert!(!ok, "{schema} accepted a broken document");
        assert!(
            said.contains("fails to validate") || said.contains("is not"),
            "{said}"
        );
    }
    let (ok, said) = xmllint(&fixture(SCHEMAS[0]), &fixture(SCHEMAS[1]));
    assert!(!ok, "a schema is not a test report: {said}");
}

/// A run of 3 s (12 intervals) against `/delay?ms=…`, named `name`, under `out`; its directory.
fn delayed_run(server: &TestServer, out: &Path, ms: u64, name: &str, extra: &[&str]) -> PathBuf {
    let url = server.url(&format!("/delay?ms={ms}"));
    let root = out.join(name);
    let mut args = vec![
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
        root.to_str().unwrap(),
        "--progress",
        "none",
    ];
    args.extend(extra);
    let o = volley(&args);
    assert!(o.status.success(), "{}", text(&o));
    only_run(&root)
}

#[test]
fn a_regression_beyond_the_noise_fails_the_gate_and_says_which_figures() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let base = delayed_run(&server, out.path(), 10, "base", &[]);
    let same = delayed_run(&server, out.path(), 10, "same", &[]);
    let slow = delayed_run(&server, out.path(), 30, "slow", &[]);
    let (b, s, w) = (
        base.to_str().unwrap(),
        same.to_str().unwrap(),
        slow.to_str().unwrap(),
    );

    // No change: the gate passes, and says so. (A run against itself: two runs of the same load
    // on a machine shared with other work can differ beyond their within-run noise.)
    let o = volley(&["compare", "--baseline", b, b, "--fail-on", "regression"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("Gate (error_rate_pct, tps_avg, mttfb_avg_ms, ttfb_p50_ms, ttfb_p95_ms, ttfb_p99_ms): PASSED"), "{stdout}");

    // Three times the latency: exit 1, and the failing rows are named with their values.
    let junit = out.path().join("gate.xml");
    let o = volley(&[
        "compare",
        "--baseline",
        b,
        w,
        "--fail-on",
        "regression",
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("Gate (") && stdout.contains("FAILED"),
        "{stdout}"
    );
    for label in ["TPS Average", "MTTFB Average", "TTFB p50 (per request)"] {
        let line = stdout
            .lines()
            .find(|l| l.contains("FAIL ") && l.contains(label))
            .unwrap_or_else(|| panic!("no failed {label} row:\n{stdout}"));
        assert!(
            line.contains("worse beyond the noise") && line.contains('%'),
            "{line}"
        );
    }
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("volley: gate:"),
        "{}",
        text(&o)
    );
    let xml = valid_junit(&junit);
    assert!(
        xml.contains("<testsuite name=\"compare base → slow\""),
        "{xml}"
    );
    assert!(
        xml.contains("<failure type=\"regression\" message=\"TTFB p50 (per request): "),
        "{xml}"
    );
    assert_eq!(
        xml.matches("<testcase ").count(),
        6,
        "one case per gated figure:\n{xml}"
    );

    // Without --fail-on the same comparison reports the gate but exits 0.
    let o = volley(&["compare", "--baseline", b, w, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["gate"]["passed"], false);
    assert_eq!(
        json["gate"]["tables"][0]["checks"]
            .as_array()
            .unwrap()
            .len(),
        6
    );

    // Only the figures named count: the error rate did not change, so the gate passes.
    let o = volley(&[
        "compare",
        "--baseline",
        b,
        w,
        "--fail-on",
        "regression",
        "--gate-metrics",
        "error_rate_pct",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // A tolerance larger than the change lets it through, and says so.
    let o = volley(&[
        "compare",
        "--baseline",
        b,
        w,
        "--fail-on",
        "regression",
        "--gate-metrics",
        "ttfb_p50_ms",
        "--tolerance",
        "500%",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("within the 500% tolerance"),
        "{}",
        text(&o)
    );

    // With two candidates, each is compared against the baseline; the slow one fails.
    let o = volley(&[
        "compare",
        "--baseline",
        b,
        s,
        w,
        "--fail-on",
        "regression",
        "--gate-metrics",
        "ttfb_p50_ms",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("base → same")
            && stdout.contains("base → slow")
            && !stdout.contains("same → slow"),
        "{stdout}"
    );
}

#[test]
fn bad_gate_flags_are_input_errors_with_the_valid_names() {
    // Its bootstraps take CPU: not while a timing test runs.
    let _g = serial();
    let dir = out_dir();
    let run = fixture("bad/rundir_running_elsewhere");
    let r = run.to_str().unwrap();
    let o = volley(&[
        "compare",
        "--baseline",
        r,
        r,
        "--fail-on",
        "regression",
        "--gate-metrics",
        "tps_avg,ttfb_p99",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("unknown metric `ttfb_p99` (did you mean `ttfb_p99_ms`?)")
            && err.contains("error_rate_pct, tps_avg"),
        "{err}"
    );
    let o = volley(&["compare", "--baseline", r, r, "--gate-metrics", "tsp_avg"]);
    assert!(
        o.status.code() == Some(2)
            && String::from_utf8_lossy(&o.stderr).contains("did you mean `tps_avg`"),
        "{}",
        text(&o)
    );
    let o = volley(&["compare", "--baseline", r, r, "--tolerance", "lots"]);
    assert!(
        o.status.code() == Some(2) && String::from_utf8_lossy(&o.stderr).contains("--tolerance 5%"),
        "{}",
        text(&o)
    );
    let o = volley(&["compare", "--fail-on", "sometimes", r, r]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = volley(&["compare", r]);
    assert!(
        o.status.code() == Some(2) && String::from_utf8_lossy(&o.stderr).contains("--baseline"),
        "{}",
        text(&o)
    );
    // A figure named for the gate that an input cannot give is an error, not a silent pass.
    let ngrinder = fixture("ngrinder/ngrinder_neven7_output.csv");
    let n = ngrinder.to_str().unwrap();
    let o = volley(&[
        "compare",
        "--baseline",
        n,
        n,
        "--gate-metrics",
        "ttfb_p99_ms",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("leave `ttfb_p99_ms` out"),
        "{}",
        text(&o)
    );
    // The default figures it lacks are listed as not judged.
    let junit = dir.path().join("n.xml");
    let o = volley(&[
        "compare",
        "--baseline",
        n,
        n,
        "--fail-on",
        "regression",
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let xml = valid_junit(&junit);
    assert_eq!(xml.matches("<skipped message=\"TTFB p").count(), 3, "{xml}");
}

#[test]
fn run_junit_carries_each_threshold_with_its_value_and_the_summary_is_appended() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let junit = out.path().join("run.xml");
    let summary = out.path().join("summary.md");
    std::fs::write(&summary, "# earlier step\n").unwrap();
    let url = server.url("/delay?ms=5");
    let o = Command::new(env!("CARGO_BIN_EXE_volley"))
        .args([
            "run",
            "--url",
            &url,
            "--vus",
            "2",
            "--duration",
            "2s",
            "--interval",
            "250ms",
            "--name",
            "gated",
            "--progress",
            "none",
        ])
        .args([
            "--threshold",
            "ttfb p99 < 1ms",
            "--threshold",
            "error_rate < 1%",
        ])
        .args([
            "-o",
            out.path().join("runs").to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
        ])
        .env("NO_COLOR", "1")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let xml = valid_junit(&junit);
    assert!(
        xml.contains(r#"tests="4" failures="1" errors="0""#),
        "{xml}"
    );
    assert!(
        xml.contains("<failure type=\"threshold\" message=\"ttfb p99 &lt; 1ms: the run measured "),
        "{xml}"
    );
    assert!(xml.contains("<testcase name=\"threshold: error_rate &lt; 1%\" classname=\"volley.run.gated\" time=\"0.000\">\n    </testcase>"), "{xml}");
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(
        md.starts_with("# earlier step\n"),
        "appended, not truncated:\n{md}"
    );
    assert!(
        md.contains("gated") && md.contains("| TPS Average |"),
        "{md}"
    );

    // compare appends its tables (and the gate) after it.
    let run = only_run(&out.path().join("runs"));
    let o = Command::new(env!("CARGO_BIN_EXE_volley"))
        .args([
            "compare",
            "--baseline",
            run.to_str().unwrap(),
            run.to_str().unwrap(),
        ])
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let after = std::fs::read_to_string(&summary).unwrap();
    assert!(after.starts_with(&md), "the run's summary is kept");
    assert!(
        after[md.len()..].contains("| Metric | gated | gated | Change |")
            // 749 requests cannot judge a p99: the gate says so, and fails, rather than pass it.
            && after.contains("\n# Gate (")
            && after.contains("): FAILED")
            && after.contains("could not be judged"),
        "{after}"
    );
    // A summary that cannot be written is a warning, not a failure.
    let o = Command::new(env!("CARGO_BIN_EXE_volley"))
        .args(["compare", run.to_str().unwrap(), run.to_str().unwrap()])
        .env(
            "GITHUB_STEP_SUMMARY",
            out.path().join("no/such/dir/summary.md"),
        )
        .output()
        .unwrap();
    assert!(
        o.status.success() && String::from_utf8_lossy(&o.stderr).contains("warning: cannot append"),
        "{}",
        text(&o)
    );
}

#[test]
fn check_junit_has_a_case_per_request_and_one_for_an_invalid_file() {
    let _g = serial();
    let server = TestServer::start();
    let dir = out_dir();
    let file = dir.path().join("flow.yaml");
    std::fs::write(
        &file,
        format!("target: {}\nsteps:\n  - name: fine\n    request: GET /ok\n  - name: broken <&>\n    request: GET /status?code=503\n", server.url("")),
    )
    .unwrap();
    let junit = dir.path().join("check.xml");
    let o = volley(&[
        "check",
        file.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let xml = valid_junit(&junit);
    assert!(xml.contains(r#"tests="3" failures="1""#), "{xml}");
    assert!(
        xml.contains("<testcase name=\"scenario is valid\""),
        "{xml}"
    );
    assert!(
        xml.contains("message=\"broken &lt;&amp;&gt;: ") && xml.contains("status 503"),
        "{xml}"
    );

    std::fs::write(
        &file,
        "target: http://127.0.0.1:1\nsteps:\n  - name: a\n    requets: GET /\n",
    )
    .unwrap();
    let o = volley(&[
        "check",
        file.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let xml = valid_junit(&junit);
    assert!(
        xml.contains("<failure type=\"invalid scenario\"") && xml.contains("requets"),
        "{xml}"
    );
}

#[test]
fn gate_steps_judges_each_scenario_step() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let mut runs = Vec::new();
    for (name, ms) in [("before", 5), ("after", 25)] {
        let file = out.path().join(format!("{name}.yaml"));
        std::fs::write(&file, format!("target: {}\nsteps:\n  - name: quick\n    request: GET /ok\n  - name: slow\n    request: GET /delay?ms={ms}\n", server.url(""))).unwrap();
        let root = out.path().join(name);
        let o = volley(&[
            "run",
            file.to_str().unwrap(),
            "--vus",
            "4",
            "--duration",
            "3s",
            "--interval",
            "250ms",
            "-o",
            root.to_str().unwrap(),
            "--progress",
            "none",
        ]);
        assert!(o.status.success(), "{}", text(&o));
        runs.push(only_run(&root));
    }
    let (b, a) = (runs[0].to_str().unwrap(), runs[1].to_str().unwrap());
    let o = volley(&[
        "compare",
        "--baseline",
        b,
        a,
        "--fail-on",
        "regression",
        "--gate-metrics",
        "ttfb_p50_ms",
        "--gate-steps",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let line = |step: &str| {
        stdout
            .lines()
            .find(|l| l.contains(&format!("step `{step}`: TTFB p50")))
            .unwrap_or_else(|| panic!("no {step} row:\n{stdout}"))
            .to_string()
    };
    assert!(line("slow").trim_start().starts_with("FAIL"), "{stdout}");
    // The quick step is judged too (whatever a loaded machine made of its sub-millisecond times).
    assert!(
        line("quick").contains("/ok") || line("quick").contains(" ms "),
        "{stdout}"
    );
}
