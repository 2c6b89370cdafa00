//! What each command prints on the terminal by default: its answer first and about one screen
//! (issue 56 §1), the rest named in the files; `--verbose` prints everything. The budgets are
//! those docs/metrics.md states: 40 lines for a run, a report and a comparison (the
//! report crate's `SUMMARY_LINES`, plus the blank line after it); a demo or a sweep adds two
//! lines per run it made (its figures and its top finding).

use std::path::Path;

use crate::support::*;

/// The lines a run, a report or a comparison may print.
pub const BUDGET: usize = 41;

/// `stdout` is at most `budget` lines and `answer` is on one of its first `within` lines.
pub fn on_one_screen(stdout: &str, budget: usize, answer: &str, within: usize) {
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines.len() <= budget,
        "{} lines, over the budget of {budget}:\n{stdout}",
        lines.len()
    );
    assert!(
        lines.iter().take(within).any(|l| l.contains(answer)),
        "{answer:?} is not in the first {within} lines:\n{stdout}"
    );
}

fn stdout(o: &std::process::Output) -> String {
    assert!(o.status.success(), "{}", text(o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn run(server: &TestServer, out: &Path, name: &str) -> String {
    let url = format!("http://127.0.0.1:{}/delay?ms=2", server.port);
    stdout(&volley(&[
        "run",
        "--url",
        &url,
        "--vus",
        "2",
        "--duration",
        "1s",
        "--interval",
        "250ms",
        "--threshold",
        "error_rate < 1%",
        "--threshold",
        "ttfb p99 < 5s",
        "--name",
        name,
        "--progress",
        "none",
        "-o",
        out.to_str().unwrap(),
    ]))
}

#[test]
fn run_report_and_compare_lead_with_the_answer_on_one_screen() {
    let _g = serial();
    let server = TestServer::start();
    let (a, b) = (out_dir(), out_dir());
    let shown = run(&server, a.path(), "before");
    on_one_screen(&shown, BUDGET, "✓ 2 of 2 thresholds passed", 6);
    let dir = only_run(a.path());
    // The last line names the file that holds the rest; the file has it all.
    let last = shown.trim_end().lines().last().unwrap().to_string();
    let md = dir.join("report.md");
    assert!(
        last.contains(&md.display().to_string()) && last.contains("--verbose"),
        "{shown}"
    );
    let md = std::fs::read_to_string(md).unwrap();
    assert!(md.contains("Per-interval metric suite") && !shown.contains("TPS p99.9"));

    let report = stdout(&volley(&["report", dir.to_str().unwrap()]));
    on_one_screen(&report, BUDGET, "✓ 2 of 2 thresholds passed", 6);
    let verbose = stdout(&volley(&["report", dir.to_str().unwrap(), "--verbose"]));
    assert!(
        verbose.contains("TPS p99.9") && verbose.lines().count() > report.lines().count(),
        "{verbose}"
    );

    run(&server, b.path(), "after");
    let other = only_run(b.path());
    let paths = [dir.to_str().unwrap(), other.to_str().unwrap()];
    let cmp = stdout(&volley(&[
        "compare",
        paths[0],
        paths[1],
        "--labels",
        "before,after",
    ]));
    on_one_screen(&cmp, BUDGET, "before → after:", 6);
    assert!(
        cmp.contains("or with --verbose: Method") && !cmp.contains("\nMethod\n"),
        "{cmp}"
    );
    let all = stdout(&volley(&["compare", paths[0], paths[1], "--verbose"]));
    assert!(all.contains("\nMethod\n"), "{all}");
}

#[test]
fn examples_are_written_from_the_binary_and_load_where_they_are() {
    let dir = out_dir();
    let ex = dir.path().join("ex");
    let o = volley(&["examples", ex.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    for name in [
        "chat.yaml",
        "users.csv",
        "pair-room.yaml",
        "mixed-populations.yaml",
        "grpc-chat.yaml",
        "chat.proto",
    ] {
        assert!(ex.join(name).is_file(), "{name} missing: {}", text(&o));
    }
    // Each scenario is valid from the directory it was written to: the CSV and the .proto are
    // found beside it (run from elsewhere, so no path leans on the repository).
    for name in [
        "chat.yaml",
        "pair-room.yaml",
        "mixed-populations.yaml",
        "grpc-chat.yaml",
    ] {
        let file = ex.join(name);
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_volley"))
            .args(["check", file.to_str().unwrap(), "--no-request"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{name}: {}", text(&o));
    }
    // A second time it refuses to overwrite them, and says what to give instead.
    let o = volley(&["examples", ex.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("give a new or empty directory"),
        "{}",
        text(&o)
    );
}

/// A JMeter file's labels are steps without event streams: no `events` column, and no caption
/// about SSE or WebSocket steps (issue 56 §5), in the terminal, the Markdown and the page.
#[test]
fn a_jmeter_report_has_no_stream_columns() {
    let jtl = "../../fixtures/imports/jmeter_sunjida_results_small.jtl";
    let out = out_dir();
    let page = out.path().join("r.html");
    let terminal = stdout(&volley(&["report", "--verbose", jtl]));
    let md = stdout(&volley(&["report", "--format", "md", jtl]));
    stdout(&volley(&[
        "report",
        "--html",
        page.to_str().unwrap(),
        "-o",
        "/dev/null",
        jtl,
    ]));
    let html = std::fs::read_to_string(&page).unwrap();
    for (form, text, column) in [
        ("terminal", &terminal, "total p99  events"),
        ("md", &md, "| events |"),
        ("html", &html, "<th>events</th>"),
    ] {
        assert!(text.contains("DarazLoadConfigure"), "{form}: {text}");
        assert!(
            !text.contains(column) && !text.contains("SSE steps"),
            "{form}: {text}"
        );
    }
}
