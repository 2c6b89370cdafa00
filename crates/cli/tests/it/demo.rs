//! `volley demo --quick` end to end: the newcomer's first command.

use crate::support::*;

#[test]
fn quick_demo_runs_reports_and_compares() {
    let _g = serial();
    let out = out_dir();
    let o = volley(&["demo", "--quick", "-o", out.path().to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    // One screen: a line and the top finding per run, then the comparison's answer and its
    // last table; every phase's report and the whole comparison are in the files.
    let shown = String::from_utf8_lossy(&o.stdout);
    crate::terminal::on_one_screen(
        &shown,
        crate::terminal::BUDGET + 2 * 5,
        "Original → Phase 3:",
        20,
    );
    assert!(
        shown.contains("comparison.md, or with --verbose")
            && shown.contains("demo-1-phase-1: TPS avg"),
        "{shown}"
    );
    let mut runs: Vec<_> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("run.json").is_file())
        .collect();
    runs.sort();
    assert_eq!(runs.len(), 5);
    // Last, the pair-room flow as a scenario: a row per step, every step answered.
    let flow = report_json(&runs.pop().unwrap());
    assert_eq!(flow["name"], "demo-4-pair-room-flow");
    assert_eq!(flow["per_test"].as_array().unwrap().len(), 13, "{flow}");
    assert!(
        flow["thresholds"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["passed"] == true),
        "{flow}"
    );
    assert!(
        flow["per_test"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["seed_suite"]["total_tests"].as_u64().unwrap() > 0),
        "{flow}"
    );
    // The target's own metrics were scraped in every phase: the Original's errors come first,
    // with their cause (fast refusals, Tomcat's threads all busy); Phase 1 names the next
    // bottleneck, the DB pool, and with the cache of Phase 3 far fewer requests wait for it.
    let findings = |run: &std::path::Path| {
        report_json(run)["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let original = findings(&runs[0]);
    assert!(original[0].starts_with("Errors:"), "{original:?}");
    assert!(original[0].contains("HTTP 503"), "{original:?}");
    assert!(
        original[1].contains("fast refusals") && original[1].contains("threads were busy"),
        "{original:?}"
    );
    assert!(
        findings(&runs[1])
            .iter()
            .any(|f| f.starts_with("DB pool pending > 0 from")),
        "{:?}",
        findings(&runs[1])
    );
    let pending = |run: &std::path::Path| {
        let r = report_json(run);
        let peak = r["server"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| {
                p["series"]
                    .as_str()
                    .unwrap()
                    .starts_with("hikaricp_connections_pending")
            })
            .map(|p| p["peak"].as_f64().unwrap());
        peak.unwrap_or_else(|| panic!("no pool series scraped: {r}"))
    };
    assert!(
        pending(&runs[3]) < pending(&runs[1]) / 2.0,
        "the cache relieves the pool: {} vs {}",
        pending(&runs[3]),
        pending(&runs[1])
    );
    for (i, run) in runs.iter().enumerate() {
        let r = report_json(run);
        assert_eq!(r["status"], "complete", "{}", run.display());
        assert!(r["seed_suite"]["tps_avg"].as_f64().unwrap() > 10.0, "{}", r);
        if i > 0 {
            assert_eq!(r["seed_suite"]["errors"], 0, "{}", r);
        }
    }
    let md = std::fs::read_to_string(out.path().join("comparison.md")).unwrap();
    assert!(
        md.contains("| Metric | Original | Phase 1 | Change |"),
        "{md}"
    );
    assert!(md.contains("## Overall: Original → Phase 3"), "{md}");
    // What each phase found, and the server's figures before and after, are the comparison's
    // own: in its Markdown, its page and its JSON alike.
    assert!(
        md.contains("## What each phase found")
            && md.contains("- Original: Errors:")
            && md.contains("- Phase 1: DB pool pending &gt; 0 from")
            && md.contains("## Server: Original → Phase 1")
            && md.contains("| pool pending |"),
        "{md}"
    );
    let page = std::fs::read_to_string(out.path().join("comparison.html")).unwrap();
    assert!(
        page.contains("What each phase found")
            && page.contains("Server: Phase 2 → Phase 3")
            && page.contains("busy threads"),
        "the page has what the Markdown has"
    );
    assert!(out.path().join("comparison_charts/tps.png").is_file());
    assert!(
        md.contains("![TPS by phase](comparison_charts/tps.png)"),
        "{md}"
    );
    // Served requests per second, Original to Phase 1: refused requests are no throughput.
    let cmp: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("comparison.json")).unwrap())
            .unwrap();
    let row = |step: usize, key: &str| {
        cmp["steps"][step]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["key"] == key)
            .unwrap()
            .clone()
    };
    assert!(
        cmp["runs"][1]["findings"][0]
            .as_str()
            .unwrap()
            .starts_with("DB pool pending > 0 from"),
        "{}",
        cmp["runs"][1]
    );
    // Original → Phase 1: the errors are gone.
    let errors = row(0, "error_rate_pct");
    assert_eq!(errors["verdict"], "better", "{errors}");
    // Phase 1 → Phase 2: a 5x larger pool on a pool-bound service is a throughput gain.
    let tps = row(1, "tps_avg");
    assert_eq!(tps["verdict"], "better", "{tps}");
}
