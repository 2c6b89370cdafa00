//! The run directory read back as a source: what `RunWriter` writes, `RunData` reads and
//! `Source` reports from (histograms per interval and per step), round trip.

use std::fs;
use std::time::SystemTime;

use volley_formats::ngrinder::HEADER;
use volley_formats::rundir::{DRAIN_CSV, SERIES_CSV};
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

/// A run of three intervals and the drain after its stop, with two scenario steps, written
/// through the real writer: the drain row (0 s long, no TPS) goes to drain.csv.
fn run_with_a_drain(root: &std::path::Path) -> std::path::PathBuf {
    let mut m = meta();
    m.steps = ["login", "rooms"]
        .map(|name| StepInfo {
            name: name.into(),
            kind: volley_scenario::StepKind::Http,
        })
        .to_vec();
    let mut w = RunWriter::create(root, m, SystemTime::now()).unwrap();
    for i in 0..4u64 {
        let (mut all, mut a, mut b) = (
            IntervalSample::new(i),
            IntervalSample::new(i),
            IntervalSample::new(i),
        );
        for _ in 0..(i + 2) {
            a.record_success(1000 * (i + 1), 2000 * (i + 1), 0, 10);
            all.record_success(1000 * (i + 1), 2000 * (i + 1), 0, 10);
        }
        b.record_success(3000, 9000, 0, 10);
        all.record_success(3000, 9000, 0, 10);
        b.record_error(ErrorKind::Timeout);
        all.record_error(ErrorKind::Timeout);
        all.counts.reconnects = i;
        // The drain: at the stop (3 s), 0 s long and with 0 VUs, as the conductor emits it.
        let row = match i {
            3 => all.to_interval(3.0, 0.0, 0.0),
            i => all.to_interval(i as f64, 1.0, 4.0),
        };
        w.write_interval(&all, &row, &[a, b]).unwrap();
    }
    w.finish(RunStatus::Complete, None).unwrap();
    w.dir().to_path_buf()
}

/// Every row a reader keeps of a run directory, NaN TPS included, for comparing two reads.
fn rows_of(d: &RunData) -> String {
    format!(
        "{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
        d.series.intervals, d.steps, d.errors_by_kind, d.generator, d.step_events, d.input_notes
    )
}

#[test]
fn the_drain_is_written_to_drain_csv_and_read_back_as_the_series_last_row() {
    let root = tempfile::tempdir().unwrap();
    let dir = run_with_a_drain(root.path());
    let series = fs::read_to_string(dir.join(SERIES_CSV)).unwrap();
    let drain = fs::read_to_string(dir.join(DRAIN_CSV)).unwrap();
    // series.csv: the three measured intervals, each with a number in its TPS cell (the
    // seventh column) and a length; drain.csv: series.csv's header and the drain's row.
    let header = series.lines().next().unwrap();
    let tps = HEADER.iter().position(|c| *c == "TPS").unwrap();
    let rows: Vec<&str> = series.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "{series}");
    for r in &rows {
        let cell = r.split(',').nth(tps).unwrap();
        assert!(cell.parse::<f64>().is_ok(), "TPS `{cell}` in {r}");
    }
    let drain_rows: Vec<&str> = drain.lines().collect();
    assert_eq!(drain_rows.len(), 2, "{drain}");
    assert_eq!(drain_rows[0], header);
    assert_eq!(drain_rows[1].split(',').nth(tps), Some(""), "{drain}");
    // Read back: the drain is the series' last row, in every column and step block.
    let data = RunData::read(&dir).unwrap();
    let last = data.series.intervals.last().unwrap();
    assert_eq!(data.series.intervals.len(), 4);
    assert_eq!((last.period_s, last.vusers, last.start_s), (0.0, 0.0, 3.0));
    assert_eq!((last.tests, last.errors), (6, 1));
    assert!(last.tps.is_nan());
    assert_eq!(data.series.measured_rows(), 3);
    assert_eq!(data.steps[0].1.intervals.len(), 4);
    assert_eq!(data.steps[0].1.intervals[3].tests, 5);
    assert_eq!(data.errors_by_kind[3][ErrorKind::Timeout.index()], 1);
    assert_eq!(
        (data.series.tests(), data.series.errors()),
        (2 + 3 + 4 + 5 + 4, 4)
    );
    assert!(data.input_notes.is_empty(), "{:?}", data.input_notes);
    // Its histograms are the drain's: the report counts its requests in the latencies.
    let source = Source::from_run(data);
    assert_eq!(source.merged(HistKey::TTFB, 0.0).len(), 2 + 3 + 4 + 5 + 4);
}

#[test]
fn a_run_directory_with_the_drain_in_series_csv_reads_as_before() {
    let root = tempfile::tempdir().unwrap();
    let dir = run_with_a_drain(root.path());
    let now = RunData::read(&dir).unwrap();
    // The layout before drain.csv: the drain as series.csv's last row.
    let drain = fs::read_to_string(dir.join(DRAIN_CSV)).unwrap();
    let mut series = fs::read_to_string(dir.join(SERIES_CSV)).unwrap();
    series.push_str(drain.lines().nth(1).unwrap());
    series.push('\n');
    fs::write(dir.join(SERIES_CSV), series).unwrap();
    fs::remove_file(dir.join(DRAIN_CSV)).unwrap();
    let before = RunData::read(&dir).unwrap();
    assert_eq!(rows_of(&before), rows_of(&now));
    assert_eq!(before.series.measured_rows(), 3);
}

#[test]
fn a_drain_csv_that_is_no_drain_is_refused_and_a_cut_one_noted() {
    let root = tempfile::tempdir().unwrap();
    let dir = run_with_a_drain(root.path());
    let path = dir.join(DRAIN_CSV);
    let drain = fs::read_to_string(&path).unwrap();
    let (header, row) = drain.trim_end().split_once('\n').unwrap();
    let period = header.split(',').position(|c| c == "Period_(s)").unwrap();
    let err = |text: String| {
        fs::write(&path, text).unwrap();
        RunData::read(&dir).unwrap_err().to_string()
    };
    // A row with a length: measured time, which belongs in series.csv.
    let mut cells: Vec<&str> = row.split(',').collect();
    cells[period] = "1";
    let e = err(format!("{header}\n{}\n", cells.join(",")));
    assert!(
        e.contains("drain.csv") && e.contains("Period_(s) is 1") && e.contains("series.csv"),
        "{e}"
    );
    // Another header than series.csv's.
    let short: Vec<&str> = header.split(',').take(20).collect();
    let cut_row: Vec<&str> = row.split(',').take(20).collect();
    let e = err(format!("{}\n{}\n", short.join(","), cut_row.join(",")));
    assert!(
        e.contains("drain.csv") && e.contains("header is not series.csv's"),
        "{e}"
    );
    // Cut while its row was being written: the row is left out, and said to be.
    fs::write(&path, format!("{header}\n{}", &row[..row.len() / 2])).unwrap();
    let data = RunData::read(&dir).unwrap();
    assert_eq!(data.series.intervals.len(), 3);
    let notes: Vec<String> = data.input_notes.iter().map(|n| n.to_string()).collect();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("drain.csv: the last line (line 2)")),
        "{notes:?}"
    );
}
