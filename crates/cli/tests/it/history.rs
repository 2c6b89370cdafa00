//! `volley runs`: the run history with its figures and statuses, name filters, JSON, run
//! groups, and `--trend` drawn as PNG, SVG and HTML.

use std::path::{Path, PathBuf};

use crate::support::*;

fn fixture(rel: &str) -> PathBuf {
    let dir = std::env::var_os("VOLLEY_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures"));
    dir.join(rel)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.path().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

fn run(server: &TestServer, out: &Path, ms: u64, name: &str) {
    let url = server.url(&format!("/delay?ms={ms}"));
    let o = volley(&[
        "run",
        "--url",
        &url,
        "--vus",
        "2",
        "--duration",
        "1s",
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

#[test]
fn the_history_lists_every_run_with_its_status_and_draws_a_trend() {
    let _g = serial();
    let server = TestServer::start();
    let dir = out_dir();
    let runs = dir.path().join("runs");
    run(&server, &runs, 2, "api");
    run(&server, &runs, 8, "api");
    run(&server, &runs.join("demo"), 2, "web");
    // A run still marked running (recorded on another host), and one whose run.json is broken.
    copy_dir(
        &fixture("bad/rundir_running_elsewhere"),
        &runs.join("20261101T000000Z_bad-fixture"),
    );
    std::fs::create_dir_all(runs.join("20261102T000000Z_crashed")).unwrap();
    std::fs::write(
        runs.join("20261102T000000Z_crashed/run.json"),
        "{\"schema\": 1, \"name\": ",
    )
    .unwrap();
    // A run whose recorder died: run.json still says running, its process on this host is gone,
    // and it has no report.json, so its figures are read from its data.
    let web = std::fs::read_dir(runs.join("demo"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let dead = runs.join("20261104T000000Z_killed");
    copy_dir(&web, &dead);
    std::fs::remove_file(dead.join("report.json")).unwrap();
    let mut meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dead.join("run.json")).unwrap()).unwrap();
    meta["status"] = "running".into();
    meta["name"] = "killed".into();
    meta["pid"] = 2_147_483_646u32.into(); // above any pid Linux hands out
    std::fs::write(dead.join("run.json"), meta.to_string()).unwrap();
    // A run group: a directory of runs with a group file.
    let group = runs.join("20261103T000000Z_api-x2");
    for d in std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().ends_with("_api"))
    {
        copy_dir(&d, &group.join(d.file_name().unwrap()));
    }
    // The group file as `volley run --repeat` writes it (formats::GroupMeta), with its runs' plan.
    let members: Vec<String> = std::fs::read_dir(&group)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let first: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(group.join(&members[0]).join("run.json")).unwrap(),
    )
    .unwrap();
    let group_json = serde_json::json!({
        "schema": 1, "kind": "group", "id": "20261103T000000Z_api-x2", "name": "api-group", "repeat": 2, "pause_s": 0.0,
        "status": "complete", "started_at": "2026-11-03T00:00:00Z", "plan": first["plan"],
        "runs": members.iter().map(|d| serde_json::json!({"dir": d, "status": "complete"})).collect::<Vec<_>>(),
    });
    std::fs::write(group.join("group.json"), group_json.to_string()).unwrap();

    let o = volley(&["runs", runs.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let table = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with("time")
            && lines[0].contains("  kind  ")
            && lines[0].contains("plan")
            && lines[0].contains("TTFB p99")
            && lines[0].contains("status")
            && lines[0].ends_with("  dir"),
        "{table}"
    );
    // Each line ends with the run's directory.
    let dir_of = |l: &str| l.rsplit("  ").next().unwrap().to_string();
    assert!(
        lines[1].contains("crashed") && lines[1].contains("unreadable"),
        "oldest first:\n{table}"
    );
    assert!(
        lines[2].contains("api-group  ")
            && lines[2].contains("  group  ")
            && lines[2].contains("2 runs of GET /delay?ms=2 · 2 VUs · 1s")
            && dir_of(lines[2]) == group.display().to_string(),
        "{table}"
    );
    assert!(
        lines[3].contains("    api ")
            && lines[4].contains("    api ")
            && lines[3].contains("  single  ")
            && dir_of(lines[3]).starts_with(&group.display().to_string()),
        "the group's runs under it:\n{table}"
    );
    assert!(
        lines[5].contains("bad-fixture") && lines[5].contains("  running  "),
        "{table}"
    );
    assert!(
        lines[6].contains("  api  ")
            && lines[6].contains("  single  ")
            && lines[6].contains("GET /delay?ms=2 · 2 VUs · 1s")
            && lines[6].contains("  complete  ")
            && dir_of(lines[6]).starts_with(&runs.display().to_string()),
        "{table}"
    );
    assert!(lines[7].contains("GET /delay?ms=8"), "{table}");
    assert!(
        table.contains("note: ") && table.contains("run.json"),
        "why the broken run cannot be read:\n{table}"
    );
    let killed = lines
        .iter()
        .find(|l| l.contains("killed"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(
        killed.contains("  did not finish  ")
            && killed.contains(" ms ")
            && dir_of(killed) == dead.display().to_string(),
        "listed with its figures from its data:\n{table}"
    );
    // Its data give the figures its copy's report.json holds.
    let web = lines
        .iter()
        .find(|l| l.contains(" web "))
        .unwrap_or_else(|| panic!("{table}"));
    let figures = |l: &str| {
        l.split("1s")
            .nth(1)
            .unwrap()
            .split("0.00%")
            .next()
            .unwrap()
            .trim()
            .to_string()
    };
    assert_eq!(figures(killed), figures(web), "{table}");

    // JSON, filtered by name.
    let o = volley(&["runs", runs.to_str().unwrap(), "--name", "api", "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let list = json.as_array().unwrap();
    assert_eq!(list.len(), 2, "{json:#}");
    let (fast, slow) = (
        &list[0]["figures"]["ttfb_p50_ms"],
        &list[1]["figures"]["ttfb_p50_ms"],
    );
    assert!(
        fast.as_f64().unwrap() < 6.0 && slow.as_f64().unwrap() > 7.0,
        "{fast} {slow}"
    );
    assert!(
        list.iter()
            .all(|e| e["status"] == "complete" && e["kind"] == "run" && e["split"] == "single")
    );
    let o = volley(&["runs", runs.to_str().unwrap(), "--name", "nope*"]);
    assert!(
        o.status.success()
            && String::from_utf8_lossy(&o.stderr).contains(
                "names there: 20261102T000000Z_crashed, api, api-group, bad-fixture, killed, web)"
            ),
        "{}",
        text(&o)
    );

    // The trend of the two api runs.
    let stem = dir.path().join("charts/api-ttfb");
    let o = volley(&[
        "runs",
        runs.to_str().unwrap(),
        "--name",
        "api",
        "--trend",
        "ttfb_p50_ms",
        "-o",
        stem.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let png = image::open(stem.with_extension("png")).unwrap().to_rgb8();
    assert_eq!(png.dimensions(), (960, 480));
    let svg = std::fs::read_to_string(stem.with_extension("svg")).unwrap();
    assert!(svg.contains("TTFB p50 (per request) across runs"), "svg");
    let html = std::fs::read_to_string(stem.with_extension("html")).unwrap();
    assert!(
        html.contains("uPlot") && html.matches(">api</td>").count() == 2,
        "html"
    );
    // Opened in headless Chromium, the page draws its chart without a script error.
    if need("chromium") {
        let (dom, log) = crate::html::open_page(
            &stem.with_extension("html"),
            &dir.path().join("trend-shot.png"),
        );
        crate::html::assert_no_console_errors(&log);
        assert_eq!(crate::html::drawn_canvases(&dom), 1, "{dom}");
        assert!(
            dom.contains("TTFB p50 (per request) across runs"),
            "the chart's title"
        );
    }
    // A bad metric name: exit 2 with the names and a suggestion.
    let o = volley(&["runs", runs.to_str().unwrap(), "--trend", "ttfb_p99"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("did you mean `ttfb_p99_ms`"),
        "{}",
        text(&o)
    );
    let o = volley(&["runs", dir.path().join("missing").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}
