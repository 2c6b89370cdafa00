//! The cluster's findings (issue 54 §2) on real runs: fixtures/runs/kube-*, whole run
//! directories `volley run --kube` wrote on the real single-node cluster of scripts/k8s-node
//! (each folder's README.md says how, and what happened, measured from its own files).

use std::path::{Path, PathBuf};

use volley_formats::{RunData, Source};
use volley_report::{ReportOptions, RunReport};

fn dir(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/runs")
        .join(case)
}

fn report_of(dir: &Path) -> RunReport {
    let src = Source::from_run(RunData::read(dir).unwrap());
    RunReport::from_source(&src, ReportOptions::default())
}

fn report(case: &str) -> RunReport {
    report_of(&dir(case))
}

/// The run directory of `case` without its cluster record (kube.jsonl, kube.csv).
fn without_kube(case: &str, into: &Path) -> PathBuf {
    let to = into.join(case);
    std::fs::create_dir_all(&to).unwrap();
    for e in std::fs::read_dir(dir(case)).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if e.file_type().unwrap().is_file() && name != "kube.jsonl" && name != "kube.csv" {
            std::fs::copy(e.path(), to.join(&name)).unwrap();
        }
    }
    to
}

/// The acceptance script's patterns (scripts/k8s-node/kube-acceptance.sh greps report.json's
/// `findings` for them), without a regex crate.
fn not_ready_pattern(f: &str) -> bool {
    f.split_once("was not ready ")
        .is_some_and(|(_, rest)| rest.contains(" s (readiness probe"))
}

#[test]
fn kube_probe_names_the_pods_their_windows_probes_and_errors() {
    let r = report("kube-probe");
    let cluster = r
        .cluster
        .as_ref()
        .expect("a --kube run has a cluster section");
    // The errors' causes first, the cluster's next, in that order.
    assert!(r.findings[0].starts_with("Errors: 198 of 4,921 requests failed"));
    assert_eq!(
        r.findings[2..7],
        [
            "Service chat had no ready endpoint 45.2–45.4 s (0 of 2): every request it took then had no pod to go to; 30 of the run's 198 errors fall in the intervals overlapping that window (45.0–46.0 s).",
            "Pod chat-764945cf6f-w6jmj was not ready 5 times, 13.2 s in all: 41–45 s, 48–51 s, 55–58 s, … and 1 more, the last 70–72 s (readiness probe timed out, 11 times): as few as 0 of 2 endpoints of Service chat ready; 109 of the run's 198 errors fall in the intervals overlapping those windows (41–70 s).",
            "Pod chat-764945cf6f-v44kv was not ready 5 times, 10.3 s in all: 40.2–41.2 s, 45–48 s, 52–55 s, … and 1 more, the last 66–69 s (readiness probe timed out, 8 times; readiness probe answered 503, 1 time): as few as 0 of 2 endpoints of Service chat ready; 107 of the run's 198 errors fall in the intervals overlapping those windows (40–69 s).",
            "Pod chat-764945cf6f-v44kv at its CPU limit (200m) from 100 VUs on 2 replicas (100 % of the limit over that level).",
            "Pod chat-764945cf6f-w6jmj at its CPU limit (200m) from 100 VUs on 2 replicas (93 % of the limit over that level).",
        ]
    );
    assert_eq!(
        r.findings.iter().filter(|f| not_ready_pattern(f)).count(),
        2
    );
    // The same as numbers in report.json.
    let json: serde_json::Value = serde_json::to_value(&r).unwrap();
    let u = &json["cluster"]["unready"][1];
    assert_eq!(u["pod"], "chat-764945cf6f-v44kv");
    assert_eq!(u["windows"][0]["from_s"], 40.181);
    assert_eq!(u["windows"][0]["to_s"], 41.18);
    assert_eq!(u["errors"]["count"], 107);
    assert_eq!(cluster.errors_unready(), 165);
    // kube.csv's once-a-second gauge never caught the 0.2 s with no ready endpoint.
    assert_eq!(
        (cluster.ready_pods_min, cluster.ready_pods_max),
        (Some(1.0), Some(2.0))
    );
    // The levels table: ready pods fell to 1 at 100 VUs.
    let top = r.levels.last().unwrap();
    assert_eq!(
        (top.vusers, top.ready_pods, top.replicas),
        (100.0, Some((1.0, 2.0)), Some(2.0))
    );
    assert!(volley_report::markdown(&r).contains("ready pods 1–2, replicas 2"));
}

#[test]
fn kube_hpa_names_each_scale_out_and_the_tps_after_it() {
    let r = report("kube-hpa");
    let scales: Vec<&String> = r
        .findings
        .iter()
        .filter(|f| f.starts_with("The HPA"))
        .collect();
    assert_eq!(
        scales,
        [
            "The HPA chat scaled chat 1 → 2 at 9 s (CPU 89 % of request, target 50 %); the new pod was ready at 12 s; TPS rose 2.1× after (31 → 66 req/s: 9 intervals before 9 s, 7 intervals from 12 s).",
            "The HPA chat scaled chat 2 → 3 at 19 s (CPU 193 % of request, target 50 %); the new pod was ready at 21 s; TPS rose 1.6× after (60 → 94 req/s: 9 intervals before 19 s, 69 intervals from 21 s).",
        ]
    );
    let json: serde_json::Value = serde_json::to_value(&r).unwrap();
    let s = &json["cluster"]["scales"][1];
    assert_eq!((s["from"].as_i64(), s["to"].as_i64()), (Some(2), Some(3)));
    assert_eq!(s["at_s"], 19.216);
    assert_eq!(s["ready_s"], 20.998);
    assert_eq!(s["current_pct"], 193);
}

#[test]
fn kube_proxy_cpu_names_the_pod_at_its_limit() {
    let r = report("kube-proxy-cpu");
    assert_eq!(
        r.findings[0],
        "Pod proxy-7cc77886c7-nk8fz at its CPU limit (100m) at 32 VUs on 1 replica (100 % of the limit over the run after its warm-up, 0–30 s)."
    );
    let a = &r.cluster.as_ref().unwrap().cpu_at_limit[0];
    assert_eq!((a.limit_cores, a.replicas), (0.1, Some(1.0)));
    assert!((a.pct_of_limit - 100.18).abs() < 0.01, "{}", a.pct_of_limit);
}

/// A run without `--kube` is reported as before: no cluster section, no cluster sentence, no
/// ready pods in the levels; the same run with its record differs by exactly those.
#[test]
fn a_run_without_its_cluster_record_is_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    for case in ["kube-probe", "kube-hpa", "kube-proxy-cpu"] {
        let with = report(case);
        let without = report_of(&without_kube(case, tmp.path()));
        assert!(without.cluster.is_none());
        let mut a = serde_json::to_value(&with).unwrap();
        let b = serde_json::to_value(&without).unwrap();
        assert!(b.get("cluster").is_none(), "{case}");
        let n = with.findings.len() - without.findings.len();
        assert!(n > 0, "{case}");
        let obj = a.as_object_mut().unwrap();
        obj.remove("cluster");
        obj["source"] = b["source"].clone();
        let findings = obj["findings"].as_array_mut().unwrap();
        let causes = findings
            .iter()
            .take_while(|f| {
                let f = f.as_str().unwrap();
                !(f.starts_with("Pod ") || f.starts_with("Service ") || f.starts_with("The HPA"))
            })
            .count();
        findings.drain(causes..causes + n);
        for l in obj
            .get_mut("levels")
            .and_then(|l| l.as_array_mut())
            .into_iter()
            .flatten()
        {
            let l = l.as_object_mut().unwrap();
            assert!(l.remove("ready_pods").is_some(), "{case}");
            l.remove("replicas");
        }
        assert_eq!(a, b, "{case}");
        let md = volley_report::markdown(&without);
        assert!(
            !md.contains("ready pods") && !md.contains("Cluster"),
            "{case}"
        );
    }
}

#[test]
fn compare_puts_the_clusters_side_by_side() {
    let sets: Vec<_> = ["kube-probe", "kube-hpa"]
        .iter()
        .map(|c| volley_formats::open_run_or_group(&dir(c), None).unwrap())
        .collect();
    let cmp = volley_report::compare::build(&sets, &[], ReportOptions::default());
    let md = cmp.markdown();
    let section = &md[md.find("Cluster").expect("a Cluster section")..];
    for row in [
        "| ready pods (min–max) | 1–2 | 1–3 |",
        "| unready, pod-seconds | 23.5 | 0.0 |",
        "| errors in unready windows | 165 | 0 |",
        "| no ready endpoint, s | 0.2 | 0.0 |",
        "| scales | none | 1 → 2 at 9 s, 2 → 3 at 19 s |",
    ] {
        assert!(section.contains(row), "{row} not in\n{section}");
    }
    let json: serde_json::Value = serde_json::from_str(&cmp.to_json()).unwrap();
    assert_eq!(json["runs"][1]["cluster"]["scales"][0]["to"], 2);
}

/// The TPS chart draws the ready pods as a step line on the right axis, in the image files and
/// on the page; a run without `--kube` keeps its chart as it was.
#[test]
fn the_tps_chart_shows_the_ready_pods() {
    let opts = ReportOptions::default();
    let src = Source::from_run(RunData::read(&dir("kube-probe")).unwrap());
    let charts = volley_report::chartset::run_set(&src, opts);
    let tps = &charts[0];
    assert_eq!(tps.name, "tps");
    assert_eq!(tps.y2, Some(volley_report::chartset::Unit::VusPods));
    let pods = tps.lines.iter().find(|l| l.label == "ready pods").unwrap();
    assert!(pods.right && pods.style == volley_report::chartset::Style::Step);
    let values: Vec<f64> = pods.values.iter().flatten().copied().collect();
    // kube.csv samples at the end of each interval, a gauge credited to the next row: every
    // row but the first (no sample at 0 s) has one.
    assert!(pods.values[0].is_none());
    assert_eq!(values.len(), tps.x.len() - 1);
    assert_eq!(values.iter().copied().fold(f64::MAX, f64::min), 1.0);
    assert_eq!(values.iter().copied().fold(0.0, f64::max), 2.0);
    let out = tempfile::tempdir().unwrap();
    let files = volley_report::charts::save_chart(out.path(), tps).unwrap();
    let svg = std::fs::read_to_string(
        files
            .iter()
            .find(|f| f.extension().unwrap() == "svg")
            .unwrap(),
    )
    .unwrap();
    assert!(svg.contains("ready pods") && svg.contains("VUs, ready pods"));
    let page = volley_report::html::report_page(&[src], &[report("kube-probe")], &[], opts);
    assert!(page.contains("\"ready pods\"") && page.contains("\"step\""));
    let tmp = tempfile::tempdir().unwrap();
    let plain = Source::from_run(RunData::read(&without_kube("kube-probe", tmp.path())).unwrap());
    let charts = volley_report::chartset::run_set(&plain, opts);
    assert_eq!(charts[0].y2, Some(volley_report::chartset::Unit::Vus));
    assert_eq!(charts[0].lines.len(), 2);
}
