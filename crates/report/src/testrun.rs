//! Run directories written for unit tests.

use std::path::Path;
use std::time::{Duration, SystemTime};

use volley_formats::rundir::{RunMeta, RunStatus, RunWriter};
use volley_formats::{RecordedPlan, RunData, Source};
use volley_scenario::{LoadSpec, RequestSpec};
use volley_stats::IntervalSample;

/// A run of `intervals` one-second intervals under `root`, `n` requests each taking
/// `ms`; `server` adds scrapes: (elapsed s, target, series, value).
pub(crate) fn run(
    root: &Path,
    name: &str,
    intervals: u64,
    n: u64,
    ms: u64,
    server: &[(f64, &str, &str, f64)],
) -> Source {
    let plan = RecordedPlan::new(
        LoadSpec {
            vus: Some(4),
            duration: Some(Duration::from_secs(intervals.max(1))),
            ..LoadSpec::default()
        }
        .resolve()
        .unwrap(),
        RequestSpec::get("http://127.0.0.1/"),
    );
    let meta = RunMeta {
        started_at: "2026-01-01T00:00:00Z".into(),
        planned_duration_s: intervals as f64,
        ..RunMeta::new(name, plan)
    };
    let mut w = RunWriter::create(root, meta, SystemTime::now()).unwrap();
    for i in 0..intervals {
        let mut s = IntervalSample::new(i);
        for k in 0..n {
            s.record_success(ms * 1000 + k, ms * 2000 + k, 0, 10);
        }
        w.write_interval(&s, &s.to_interval(i as f64, 1.0, 4.0), &[])
            .unwrap();
    }
    for (t, target, series, value) in server {
        w.write_server(*t, target, &[(series.to_string(), *value, false)])
            .unwrap();
    }
    w.finish(RunStatus::Complete, None).unwrap();
    Source::from_run(RunData::read(w.dir()).unwrap())
}
