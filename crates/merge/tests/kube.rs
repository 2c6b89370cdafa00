//! The cluster's record through a merge: segment 0 watched (`--kube` is off in the others), so
//! the merged run has its kube.jsonl and kube.csv, their times moved by where its rows start in
//! the merged run, and its run.json note; without segment 0 the note says the record is
//! missing, and a run nobody watched has none of it.

#[path = "../examples/synth_segments.rs"]
mod synth;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use volley_merge::{MergeOptions, merge};
use volley_rundir::kube::{KubeNote, KubeTargetNote};
use volley_rundir::rundir::{KUBE_CSV, KUBE_JSONL, read_kube};
use volley_rundir::segment::{SegmentNote, plan_hash};
use volley_rundir::{RunData, RunMeta, RunStatus, RunWriter};
use volley_scenario::Segment;
use volley_stats::IntervalSample;

fn start() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

const TARGET: &str = "kube:shop/deployment/chat";

/// Segment `i` of 2, three 1 s intervals, started `late` after the run; `kube`: its note
/// (segment 0 with its files, the others with the note of being off).
fn segment(root: &Path, i: u64, late: Duration, kube: bool) -> PathBuf {
    let plan = synth::plan(100.0, 3);
    let started = start() + late;
    let mut meta = RunMeta::new("watched", plan.clone());
    meta.started_at = jiff::Timestamp::try_from(started).unwrap().to_string();
    meta.segment = Some(SegmentNote {
        segment: Segment::new(i, 2).unwrap(),
        run_id: "run-k".into(),
        plan_hash: plan_hash(&plan),
        start_at: None,
        start_lag_ms: 0.1,
        clock: None,
    });
    let target = KubeTargetNote {
        spec: "deployment/chat".into(),
        target: TARGET.into(),
        selector: "app=chat".into(),
        services: vec!["chat".into()],
        hpas: vec![],
    };
    meta.kube = kube.then(|| {
        if i == 0 {
            KubeNote {
                server: "https://10.0.0.1:6443".into(),
                namespace: "shop".into(),
                auth: "token".into(),
                targets: vec![target],
                ..KubeNote::default()
            }
        } else {
            KubeNote {
                targets: vec![KubeTargetNote {
                    spec: "deployment/chat".into(),
                    ..KubeTargetNote::default()
                }],
                problems: vec![format!("--kube is off in segment {i}/2")],
                ..KubeNote::default()
            }
        }
    });
    let mut w = RunWriter::create(&root.join(format!("seg-{i}")), meta, started).unwrap();
    for k in 0..3u64 {
        let mut s = IntervalSample::new_open(k);
        for r in 0..10 {
            s.record_success(1000 + 100 * r, 2000 + 100 * r, 0, 64);
            s.record_actual(1000 + 100 * r, 2000 + 100 * r);
        }
        let row = s.to_interval(k as f64, 1.0, 50.0);
        w.write_interval(&s, &row, &[]).unwrap();
    }
    w.finish(RunStatus::Complete, None).unwrap();
    let dir = w.dir().to_path_buf();
    if kube && i == 0 {
        std::fs::write(
            dir.join(KUBE_JSONL),
            format!(
                "{{\"t\":0.012,\"target\":\"{TARGET}\",\"op\":\"list\",\"ns\":\"shop\",\"name\":\"chat-1\",\"kind\":\"Pod\",\"obs\":{{\"phase\":\"Running\",\"ready\":true,\"restarts\":0,\"deleting\":false}}}}\n\
                 {{\"t\":1.5,\"kind\":\"watch\",\"target\":\"{TARGET}\",\"resource\":\"pods\",\"op\":\"listed\",\"objects\":1}}\n"
            ),
        )
        .unwrap();
        std::fs::write(
            dir.join(KUBE_CSV),
            format!(
                "Elapsed_(s),Target,Series,Value,Kind\n1,{TARGET},kube_pods_ready,1,gauge\n\
                 2,{TARGET},\"kube_pod_ready{{pod=\"\"chat-1\"\"}}\",1,gauge\n3,{TARGET},kube_pods_ready,2,gauge\n"
            ),
        )
        .unwrap();
    }
    dir
}

#[test]
fn the_merged_run_keeps_segment_0s_record_moved_to_its_rows() {
    let root = tempfile::tempdir().unwrap();
    // Segment 0 started a second after segment 1: its rows start at the merged run's second.
    let dirs = [
        segment(root.path(), 0, Duration::from_secs(1), true),
        segment(root.path(), 1, Duration::ZERO, true),
    ];
    let out = root.path().join("merged");
    merge(&dirs, &out, &MergeOptions::default()).unwrap();
    let data = RunData::read(&out).unwrap();
    let seg0 = RunData::read(&dirs[0]).unwrap();
    assert_eq!(data.meta.kube, seg0.meta.kube, "segment 0's note");
    let points = read_kube(&out).unwrap();
    let at: Vec<(f64, &str)> = points
        .iter()
        .map(|p| (p.elapsed_s, p.series.as_str()))
        .collect();
    assert_eq!(
        at,
        [
            (2.0, "kube_pods_ready"),
            (3.0, "kube_pod_ready{pod=\"chat-1\"}"),
            (4.0, "kube_pods_ready"),
        ]
    );
    assert!(points.iter().all(|p| p.target == TARGET && !p.rate));
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(out.join(KUBE_JSONL))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["t"], 1.012);
    assert_eq!(lines[0]["name"], "chat-1");
    assert_eq!(lines[1]["t"], 2.5);
    assert_eq!(lines[1]["op"], "listed");

    // Started together: the files are segment 0's, byte for byte.
    let root = tempfile::tempdir().unwrap();
    let dirs = [
        segment(root.path(), 0, Duration::ZERO, true),
        segment(root.path(), 1, Duration::ZERO, true),
    ];
    let out = root.path().join("merged");
    merge(&dirs, &out, &MergeOptions::default()).unwrap();
    for f in [KUBE_JSONL, KUBE_CSV] {
        assert_eq!(
            std::fs::read(out.join(f)).unwrap(),
            std::fs::read(dirs[0].join(f)).unwrap(),
            "{f}"
        );
    }
}

#[test]
fn without_segment_0_the_note_says_the_record_is_missing_and_unwatched_runs_have_none() {
    let root = tempfile::tempdir().unwrap();
    let one = segment(root.path(), 1, Duration::ZERO, true);
    let out = root.path().join("merged");
    merge(std::slice::from_ref(&one), &out, &MergeOptions::default()).unwrap();
    let data = RunData::read(&out).unwrap();
    assert_eq!(data.meta.status, RunStatus::Partial);
    let note = data.meta.kube.expect("a note of the missing record");
    assert_eq!(note.targets[0].spec, "deployment/chat");
    assert_eq!(note.problems.len(), 1);
    assert!(
        note.problems[0].starts_with("the cluster record is missing (segment 0 missing)"),
        "{:?}",
        note.problems
    );
    assert!(!out.join(KUBE_JSONL).exists() && !out.join(KUBE_CSV).exists());

    let root = tempfile::tempdir().unwrap();
    let dirs = [
        segment(root.path(), 0, Duration::ZERO, false),
        segment(root.path(), 1, Duration::ZERO, false),
    ];
    let out = root.path().join("merged");
    merge(&dirs, &out, &MergeOptions::default()).unwrap();
    assert!(RunData::read(&out).unwrap().meta.kube.is_none());
    assert!(!out.join(KUBE_JSONL).exists() && !out.join(KUBE_CSV).exists());
}

/// server.csv moves with its segment's rows as kube.csv does: the first segment's scrapes stand
/// for the server, and when it started an interval after another segment, its scrape at 1 s
/// belongs to the merged run's second row, not its first.
#[test]
fn the_server_metrics_move_with_the_rows_of_the_segment_that_scraped_them() {
    let root = tempfile::tempdir().unwrap();
    let dirs = [
        segment(root.path(), 0, Duration::from_secs(1), false),
        segment(root.path(), 1, Duration::ZERO, false),
    ];
    std::fs::write(
        dirs[0].join(volley_rundir::rundir::SERVER_CSV),
        "Elapsed_(s),Target,Series,Value,Kind\n1,http://t/metrics,hikaricp_connections_pending,0,gauge\n\
         2,http://t/metrics,hikaricp_connections_pending,3,gauge\n",
    )
    .unwrap();
    let out = root.path().join("merged");
    merge(&dirs, &out, &MergeOptions::default()).unwrap();
    let at: Vec<(f64, f64)> = RunData::read(&out)
        .unwrap()
        .server
        .iter()
        .map(|p| (p.elapsed_s, p.value))
        .collect();
    assert_eq!(at, [(2.0, 0.0), (3.0, 3.0)]);
}
