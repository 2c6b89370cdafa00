//! Run directories written for unit tests.

use std::path::Path;
use std::time::{Duration, SystemTime};

use volley_formats::rundir::{RunMeta, RunStatus, RunWriter};
use volley_formats::{RecordedPlan, RunData, Source};
use volley_scenario::{LoadSpec, RequestSpec};
use volley_stats::IntervalSample;

/// One scrape: (elapsed s, target, series, value, whether a rate).
type Scrape<'a> = (f64, &'a str, &'a str, f64, bool);

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
    let scrapes: Vec<Scrape<'_>> = server
        .iter()
        .map(|&(t, target, series, value)| (t, target, series, value, false))
        .collect();
    write(
        root,
        name,
        &vec![4; intervals as usize],
        |_| n,
        ms,
        &scrapes,
    )
}

/// A run of one-second intervals holding `vus[i]` VUs in interval i, completing
/// `requests(vus)` requests of `ms` per interval; `server` adds scrapes: (elapsed s, series,
/// value, whether a rate).
pub(crate) fn stepped(
    root: &Path,
    vus: &[u32],
    requests: impl Fn(u32) -> u64,
    ms: u64,
    server: &[(f64, &str, f64, bool)],
) -> Source {
    let scrapes: Vec<Scrape<'_>> = server
        .iter()
        .map(|&(t, series, value, rate)| (t, "http://127.0.0.1/metrics", series, value, rate))
        .collect();
    write(root, "stepped", vus, requests, ms, &scrapes)
}

fn write(
    root: &Path,
    name: &str,
    vus: &[u32],
    requests: impl Fn(u32) -> u64,
    ms: u64,
    server: &[Scrape<'_>],
) -> Source {
    // The plan: each run of equal VUs a level reached at once and held (`0s:5,6s:5,...`).
    let mut load = LoadSpec::default();
    let mut stages = Vec::new();
    for (i, v) in vus.iter().enumerate() {
        if i == 0 || vus[i - 1] != *v {
            let held = vus[i..].iter().take_while(|w| *w == v).count();
            stages.push(format!("0s:{v},{held}s:{v}"));
        }
    }
    if stages.len() > 1 {
        load.set("stages", &stages.join(",")).unwrap();
    } else {
        load.vus = Some(vus.first().copied().unwrap_or(4).into());
        load.duration = Some(Duration::from_secs(vus.len().max(1) as u64));
    }
    let plan = RecordedPlan::new(
        load.resolve().unwrap(),
        RequestSpec::get("http://127.0.0.1/"),
    );
    let meta = RunMeta {
        started_at: "2026-01-01T00:00:00Z".into(),
        planned_duration_s: vus.len() as f64,
        ..RunMeta::new(name, plan)
    };
    let mut w = RunWriter::create(root, meta, SystemTime::now()).unwrap();
    for (i, v) in vus.iter().enumerate() {
        let mut s = IntervalSample::new(i as u64);
        for k in 0..requests(*v) {
            s.record_success(ms * 1000 + k, ms * 2000 + k, 0, 10);
        }
        w.write_interval(&s, &s.to_interval(i as f64, 1.0, f64::from(*v)), &[])
            .unwrap();
    }
    for (t, target, series, value, rate) in server {
        w.write_server(*t, target, &[(series.to_string(), *value, *rate)])
            .unwrap();
    }
    w.finish(RunStatus::Complete, None).unwrap();
    Source::from_run(RunData::read(w.dir()).unwrap())
}
