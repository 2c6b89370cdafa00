//! The drain after the stop (what completed in the grace period, a row 0 s long) through a
//! merge: each segment keeps it in drain.csv, or, written before drain.csv, as series.csv's
//! last row; the merged run keeps it in drain.csv, its counts and columns added, and its
//! series.csv holds the measured intervals alone.

#[path = "../examples/synth_segments.rs"]
mod synth;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use volley_merge::{MergeOptions, merge};
use volley_rundir::rundir::{DRAIN_CSV, SERIES_CSV};
use volley_rundir::segment::{SegmentNote, plan_hash};
use volley_rundir::{RunData, RunMeta, RunStatus, RunWriter};
use volley_scenario::Segment;
use volley_stats::IntervalSample;

fn start() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

/// Segment `i` of 2: three 1 s intervals of `10 + i` requests, then its drain at the stop,
/// `3 + i` requests and `i + 1` reconnects.
fn segment(root: &Path, i: u64) -> PathBuf {
    let plan = synth::plan(100.0, 3);
    let seg = Segment::new(i, 2).unwrap();
    let mut meta = RunMeta::new("drained", plan.clone());
    meta.started_at = jiff::Timestamp::try_from(start()).unwrap().to_string();
    meta.segment = Some(SegmentNote {
        segment: seg,
        run_id: "run-d".into(),
        plan_hash: plan_hash(&plan),
        start_at: Some(meta.started_at.clone()),
        start_lag_ms: 0.1,
        clock: None,
    });
    let mut w = RunWriter::create(&root.join(format!("seg-{i}")), meta, start()).unwrap();
    for k in 0..4u64 {
        let mut s = IntervalSample::new_open(k);
        let n = if k == 3 { 3 + i } else { 10 + i };
        for r in 0..n {
            s.record_success(1000 + 100 * r, 2000 + 100 * r, 0, 64);
            s.record_actual(1000 + 100 * r, 2000 + 100 * r);
        }
        let row = if k == 3 {
            s.counts.reconnects = i + 1;
            s.to_interval(3.0, 0.0, 0.0)
        } else {
            s.to_interval(k as f64, 1.0, 50.0)
        };
        w.write_interval(&s, &row, &[]).unwrap();
    }
    w.finish(RunStatus::Complete, None).unwrap();
    w.dir().to_path_buf()
}

/// The layout before drain.csv: the drain as series.csv's last row.
fn as_before_drain_csv(dir: &Path) {
    let drain = std::fs::read_to_string(dir.join(DRAIN_CSV)).unwrap();
    let mut series = std::fs::read_to_string(dir.join(SERIES_CSV)).unwrap();
    series.push_str(drain.lines().nth(1).unwrap());
    series.push('\n');
    std::fs::write(dir.join(SERIES_CSV), series).unwrap();
    std::fs::remove_file(dir.join(DRAIN_CSV)).unwrap();
}

/// A column of a CSV file with a header, by name.
fn column(path: &Path, name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let c = lines
        .next()
        .unwrap()
        .split(',')
        .position(|h| h == name)
        .unwrap();
    lines
        .map(|l| l.split(',').nth(c).unwrap().to_string())
        .collect()
}

#[test]
fn a_merged_run_keeps_the_drain_in_drain_csv() {
    for old in [false, true] {
        let root = tempfile::tempdir().unwrap();
        let dirs = [segment(root.path(), 0), segment(root.path(), 1)];
        if old {
            dirs.iter().for_each(|d| as_before_drain_csv(d));
        }
        let out = root.path().join("merged");
        let merged = merge(&dirs, &out, &MergeOptions::default()).unwrap();
        assert_eq!(merged.intervals, 4, "old layout: {old}");
        // series.csv: the three measured intervals, each with its TPS; drain.csv: the drain.
        let tps = column(&out.join(SERIES_CSV), "TPS");
        assert_eq!(tps, ["21", "21", "21"], "old layout: {old}");
        assert_eq!(column(&out.join(DRAIN_CSV), "TPS"), [""]);
        assert_eq!(column(&out.join(DRAIN_CSV), "Tests"), ["7"]);
        assert_eq!(column(&out.join(DRAIN_CSV), "Reconnects"), ["3"]);
        assert_eq!(column(&out.join(DRAIN_CSV), "Period_(s)"), ["0"]);
        let m = RunData::read(&out).unwrap();
        let last = m.series.intervals.last().unwrap();
        assert_eq!((last.period_s, last.tests), (0.0, 7), "old layout: {old}");
        assert_eq!(m.series.tests(), 21 * 3 + 7);
        assert!(m.input_notes.is_empty(), "{:?}", m.input_notes);
    }
}
