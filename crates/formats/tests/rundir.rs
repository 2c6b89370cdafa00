//! The run directory read back as a source: what `RunWriter` writes, `RunData` reads and
//! `Source` reports from (histograms per interval and per step), round trip.

use std::fs;
use std::time::SystemTime;

use volley_formats::ngrinder::HEADER;
use volley_formats::rundir::SERIES_CSV;
use volley_formats::{HistKey, HistMetric, RunData, RunMeta, RunStatus, RunWriter, Source};
use volley_scenario::StepInfo;
use volley_stats::{ErrorKind, IntervalSample};

fn meta() -> RunMeta {
    let plan = serde_json::from_str(
        r#"{"load":{"model":"closed","shape":{"stages":[{"duration":2.0,"target":1}]}},"request":{"method":"GET","url":"http://127.0.0.1/","headers":[]},"timeout_s":60.0}"#,
    )
    .unwrap();
    RunMeta {
        started_at: "2026-01-01T00:00:00Z".into(),
        ..RunMeta::new("unit test", plan)
    }
}

#[test]
fn write_then_read() {
    let root = tempfile::tempdir().unwrap();
    let mut w = RunWriter::create(root.path(), meta(), SystemTime::now()).unwrap();
    assert!(
        w.dir()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .ends_with("_unit-test")
    );
    for i in 0..3u64 {
        let mut s = IntervalSample::new(i);
        s.record_success(1000 * (i + 1), 2000 * (i + 1), 0, 10);
        s.record_error(ErrorKind::Timeout);
        let row = s.to_interval(i as f64, 1.0, 4.0);
        w.write_interval(&s, &row, &[]).unwrap();
    }
    // Readable while still running.
    let mid = RunData::read(w.dir()).unwrap();
    assert_eq!(mid.meta.status, RunStatus::Running);
    assert_eq!(mid.series.intervals.len(), 3);
    w.finish(RunStatus::Interrupted, Some("Ctrl-C".into()))
        .unwrap();
    let data = RunData::read(w.dir()).unwrap();
    assert_eq!(data.meta.status, RunStatus::Interrupted);
    assert_eq!(data.series.tests(), 3);
    assert_eq!(data.series.errors(), 3);
    assert_eq!(data.errors_by_kind[2][ErrorKind::Timeout.index()], 1);
    assert_eq!(data.series.intervals[2].start_s, 2.0);
    let source = Source::from_run(data);
    assert_eq!(source.merged(HistKey::TTFB, 0.0).len(), 3);
    assert_eq!(source.merged(HistKey::TTFB, 1.0).len(), 2);
    let mut rows = Vec::new();
    source.each_interval(HistKey::TTFB, |row, h| rows.push((row, h.len())));
    assert_eq!(rows, [(0, 1), (1, 1), (2, 1)]);
    let after = source.series.intervals[1..].iter().map(|r| r.start_s);
    let mut noise_rows = Vec::new();
    source
        .interval_histograms(HistKey::TTFB, after)
        .unwrap()
        .each(&mut |i, h| noise_rows.push((i, h.len())));
    assert_eq!(noise_rows, [(0, 1), (1, 1)]);
    let header = fs::read_to_string(w.dir().join(SERIES_CSV)).unwrap();
    assert!(header.starts_with(&HEADER.join(",")));
}

#[test]
fn steps_get_ngrinder_blocks_and_their_own_histograms() {
    let root = tempfile::tempdir().unwrap();
    let mut m = meta();
    m.steps = vec![
        StepInfo {
            name: "create, room".into(),
            kind: volley_scenario::StepKind::Http,
        },
        StepInfo {
            name: "events".into(),
            kind: volley_scenario::StepKind::Sse,
        },
    ];
    let mut w = RunWriter::create(root.path(), m, SystemTime::now()).unwrap();
    for i in 0..2u64 {
        let mut all = IntervalSample::new(i);
        let mut a = IntervalSample::new(i);
        let mut b = IntervalSample::new(i);
        a.record_success(1000, 2000, 0, 10);
        all.record_success(1000, 2000, 0, 10);
        b.record_success(3000, 9000, 0, 10);
        all.record_success(3000, 9000, 0, 10);
        b.counts.events += 4;
        b.record_error(ErrorKind::Check);
        all.record_error(ErrorKind::Check);
        let row = all.to_interval(i as f64, 1.0, 1.0);
        w.write_interval(&all, &row, &[a, b]).unwrap();
    }
    w.finish(RunStatus::Complete, None).unwrap();
    let data = RunData::read(w.dir()).unwrap();
    assert_eq!(data.steps.len(), 2);
    assert_eq!(data.steps[0].0, "create, room");
    assert_eq!((data.steps[1].1.tests(), data.steps[1].1.errors()), (2, 2));
    assert_eq!(data.steps[1].1.intervals[0].mean_test_time_ms, 9.0);
    assert_eq!(data.step_events[1], vec![4, 4]);
    assert_eq!(data.series.tests(), 4);
    assert_eq!(data.errors_by_kind[0][ErrorKind::Check.index()], 1);
    let source = Source::from_run(data);
    assert_eq!(source.per_test.len(), 2);
    assert_eq!(
        source.merged(HistKey::step(HistMetric::Ttfb, 1), 0.0).len(),
        2
    );
    assert_eq!(source.merged(HistKey::TTFB, 0.0).len(), 4);
}
