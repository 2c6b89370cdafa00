//! The merge on segments written through the real run-directory writer: exact on counts
//! and histograms, weighted on means, and every refusal with what to do instead.

#[path = "../examples/synth_segments.rs"]
mod synth;

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use volley_formats::Source;
use volley_merge::{Error, Kind, MergeOptions, merge};
use volley_rundir::hlog::HistKey;
use volley_rundir::{RunData, RunStatus};
use volley_scenario::Segment;
use volley_stats::CompactHistogram;

const START: u64 = 1_800_000_000;

fn start() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(START)
}

/// `n` segments of one run, 5 intervals each; segment `i` sends `10 + i` requests per interval.
fn segments(root: &std::path::Path, n: u64) -> Vec<PathBuf> {
    let plan = synth::plan(100.0, 5);
    (0..n)
        .map(|i| {
            synth::write_segment(
                root,
                Segment::new(i, n).unwrap(),
                "run-a",
                &plan,
                start(),
                5,
                10 + i,
            )
        })
        .collect()
}

/// Every histogram of `key` in a run, added.
fn whole(data: &RunData, key: HistKey) -> hdrhistogram::Histogram<u64> {
    CompactHistogram::merge_all(
        data.histograms
            .collect()
            .unwrap()
            .iter()
            .filter(|h| h.key == key)
            .map(|h| &h.histogram),
    )
}

#[test]
fn counts_and_histograms_add_up_exactly() {
    let root = tempfile::tempdir().unwrap();
    let dirs = segments(root.path(), 4);
    let out = root.path().join("merged");
    let merged = merge(&[root.path().to_path_buf()], &out, &MergeOptions::default()).unwrap();
    assert_eq!(
        (merged.status, merged.segments.clone(), merged.intervals),
        (RunStatus::Complete, vec![0, 1, 2, 3], 5)
    );
    assert_eq!(merged.run_id, "run-a");
    let inputs: Vec<RunData> = dirs.iter().map(|d| RunData::read(d).unwrap()).collect();
    let m = RunData::read(&out).unwrap();
    for k in 0..5 {
        let row = &m.series.intervals[k];
        let parts: Vec<_> = inputs.iter().map(|d| &d.series.intervals[k]).collect();
        assert_eq!(
            row.tests,
            parts.iter().map(|r| r.tests).sum::<u64>(),
            "interval {k}"
        );
        assert_eq!(row.tests, 10 + 11 + 12 + 13);
        assert_eq!(row.errors, parts.iter().map(|r| r.errors).sum::<u64>());
        assert_eq!(row.vusers, 1000.0, "VUs summed");
        assert_eq!(row.start_s, k as f64);
        // Means weighted by counts, to the microsecond series.csv keeps.
        let weighted = parts
            .iter()
            .map(|r| r.mttfb_ms * r.tests as f64)
            .sum::<f64>()
            / row.tests as f64;
        assert!(
            (row.mttfb_ms - weighted).abs() < 0.002,
            "{} vs {weighted}",
            row.mttfb_ms
        );
        assert_eq!(
            m.errors_by_kind[k],
            (0..volley_stats::KINDS)
                .map(|i| inputs.iter().map(|d| d.errors_by_kind[k][i]).sum())
                .collect::<Vec<u64>>()[..]
        );
    }
    for key in [
        HistKey::TTFB,
        HistKey::TOTAL,
        HistKey::TTFB_ACTUAL,
        HistKey::TOTAL_ACTUAL,
    ] {
        let mut sum = volley_stats::new_histogram();
        for d in &inputs {
            sum.add(whole(d, key)).unwrap();
        }
        let got = whole(&m, key);
        assert_eq!(got.len(), sum.len(), "{key}");
        let buckets = |h: &hdrhistogram::Histogram<u64>| {
            h.iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect::<Vec<_>>()
        };
        assert_eq!(buckets(&got), buckets(&sum), "{key}: bucket for bucket");
    }
    let meta = &m.meta;
    let from = meta.merged.as_ref().unwrap();
    assert_eq!(from.segments.len(), 4);
    assert_eq!(from.segments[2].host, "host-2");
    assert_eq!(from.segments[3].tests, 13 * 5);
    assert_eq!(meta.started_at, "2027-01-15T08:00:00Z");
    let timeouts: u64 = inputs.iter().map(|d| d.series.errors()).sum();
    assert!(timeouts > 0, "the synthetic segments have errors to pool");
    assert_eq!(meta.errors.iter().map(|e| e.count).sum::<u64>(), timeouts);
    let hosts_with_errors = inputs.iter().filter(|d| d.series.errors() > 0).count();
    assert_eq!(
        meta.errors[0].messages.len(),
        hosts_with_errors,
        "one distinct message per segment that had errors, pooled"
    );
    let generators = std::fs::read_to_string(out.join(volley_merge::GENERATORS_CSV)).unwrap();
    assert_eq!(
        generators.lines().count(),
        1 + 4 * 5,
        "a row per segment and interval"
    );
    // Reports read it as any run.
    let source = Source::from_run(m);
    assert_eq!(source.merged(HistKey::TTFB, 0.0).len(), 46 * 5);
}

#[test]
fn missing_segments_make_a_partial_run_that_names_them() {
    let root = tempfile::tempdir().unwrap();
    let dirs = segments(root.path(), 4);
    let out = root.path().join("merged");
    let merged = merge(
        &[dirs[0].clone(), dirs[2].clone()],
        &out,
        &MergeOptions::default(),
    )
    .unwrap();
    assert_eq!(merged.status, RunStatus::Partial);
    assert_eq!(merged.missing, vec![1, 3]);
    let m = RunData::read(&out).unwrap();
    assert_eq!(m.meta.status, RunStatus::Partial);
    assert!(
        m.meta
            .reason
            .as_deref()
            .unwrap()
            .contains("segments 1/4, 3/4 missing: the figures cover 2 of 4 segments"),
        "{:?}",
        m.meta.reason
    );
    assert_eq!(m.series.tests(), (10 + 12) * 5);
}

#[test]
fn refuses_what_cannot_be_one_run() {
    let root = tempfile::tempdir().unwrap();
    let dirs = segments(root.path(), 2);
    let out = |n: &str| root.path().join(n);
    let opts = MergeOptions::default();
    let text = |e: Error| e.to_string();

    // A retried pod: the same segment twice.
    let e = text(
        merge(
            &[dirs[0].clone(), dirs[1].clone(), dirs[0].clone()],
            &out("a"),
            &opts,
        )
        .unwrap_err(),
    );
    assert!(
        e.contains("segment 0/2 appears twice") && e.contains("retried pod"),
        "{e}"
    );

    // Another run's segment.
    let plan = synth::plan(100.0, 5);
    let other = synth::write_segment(
        &root.path().join("other"),
        Segment::new(1, 2).unwrap(),
        "run-b",
        &plan,
        start(),
        5,
        3,
    );
    let e = text(merge(&[dirs[0].clone(), other], &out("b"), &opts).unwrap_err());
    assert!(
        e.contains("its run id is run-b") && e.contains("has run-a"),
        "{e}"
    );

    // Another plan under the same id.
    let other = synth::write_segment(
        &root.path().join("plan"),
        Segment::new(1, 2).unwrap(),
        "run-a",
        &synth::plan(200.0, 5),
        start(),
        5,
        3,
    );
    let e = text(merge(&[dirs[0].clone(), other], &out("c"), &opts).unwrap_err());
    assert!(e.contains("the hash of its plan"), "{e}");

    // Started 3 s apart.
    let late = synth::write_segment(
        &root.path().join("late"),
        Segment::new(1, 2).unwrap(),
        "run-a",
        &plan,
        start() + Duration::from_secs(3),
        5,
        3,
    );
    let e = merge(&[dirs[0].clone(), late.clone()], &out("d"), &opts).unwrap_err();
    assert_eq!(e.kind(), Kind::StartsApart, "{e}");
    assert!(e.is_starts_apart());
    let e = text(e);
    assert!(
        e.contains("started 3000 ms apart") && e.contains("widen the start tolerance"),
        "{e}"
    );
    // Within a widened tolerance the late one lines up three intervals in.
    let ok = merge(
        &[dirs[0].clone(), late],
        &out("e"),
        &MergeOptions {
            start_tolerance: Duration::from_secs(5),
        },
    )
    .unwrap();
    assert_eq!(ok.intervals, 8);
    let m = RunData::read(&out("e")).unwrap();
    assert_eq!(
        m.series
            .intervals
            .iter()
            .map(|r| r.tests)
            .collect::<Vec<_>>(),
        [10, 10, 10, 13, 13, 3, 3, 3]
    );

    // A plain run is not a segment; nothing found is said so.
    let plain = root.path().join("plain");
    let mut w = volley_rundir::RunWriter::create(
        &plain,
        volley_rundir::RunMeta::new("plain", plan.clone()),
        start(),
    )
    .unwrap();
    w.finish(RunStatus::Complete, None).unwrap();
    let e = text(merge(std::slice::from_ref(&plain), &out("f"), &opts).unwrap_err());
    assert!(e.contains("not a segment of a split run"), "{e}");
    let empty = root.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    assert!(
        text(merge(&[empty], &out("g"), &opts).unwrap_err()).contains("no run directory under")
    );

    // The output must be new.
    let e = text(merge(&[dirs[0].clone(), dirs[1].clone()], &dirs[0], &opts).unwrap_err());
    assert!(e.contains("already holds a run directory"), "{e}");
}

/// A segment whose run.json plan was edited after the run (another URL, a hundred times the
/// rate) keeps the hash it was recorded with; the merge recomputes it from the plan and
/// refuses the segment, naming it, instead of trusting the recorded hash.
#[test]
fn a_segment_whose_plan_was_edited_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let dirs = segments(root.path(), 2);
    // As written, the recomputed hash is the recorded one: the merge goes through.
    merge(&dirs, &root.path().join("ok"), &MergeOptions::default()).unwrap();
    type Edit = fn(&mut serde_json::Value);
    let edits: [(&str, Edit); 2] = [
        ("url", |p| {
            p["request"]["url"] = "http://10.0.0.2/".into();
        }),
        ("rate", |p| {
            let rate = &mut p["load"]["rate"]["stages"][0]["rate"];
            *rate = (rate.as_f64().unwrap() * 100.0).into();
        }),
    ];
    for (what, edit) in edits {
        let meta = dirs[1].join("run.json");
        let text = std::fs::read_to_string(&meta).unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        edit(&mut v["plan"]);
        std::fs::write(&meta, serde_json::to_string_pretty(&v).unwrap()).unwrap();
        let e = merge(&dirs, &root.path().join(what), &MergeOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&dirs[1].display().to_string())
                && e.contains("the plan was edited after the run"),
            "{what}: {e}"
        );
        std::fs::write(&meta, text).unwrap();
    }
}
