//! Writes the run directories of a split run's segments, synthetic but through the real
//! writer (`RunWriter`), for measuring `volley merge` on long runs:
//!
//! ```text
//! cargo run --release -p volley-merge --example synth_segments -- OUT SEGMENTS INTERVALS [RATE]
//! ```
//!
//! Each segment records an open-model run at RATE requests/s (default 1000) in 1 s
//! intervals, with log-normal-ish latencies, a few errors, and generator health.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use volley_rundir::recorded::RecordedPlan;
use volley_rundir::rundir::ErrorNote;
use volley_rundir::segment::{SegmentNote, plan_hash};
use volley_rundir::{RunMeta, RunStatus, RunWriter};
use volley_scenario::{Load, Model, RateShape, RequestSpec, Segment};
use volley_stats::{ErrorKind, ErrorMessage, IntervalSample};

/// The plan every synthetic segment ran: `rate`/s for `intervals` seconds.
pub fn plan(rate: f64, intervals: u64) -> RecordedPlan {
    let load = Load {
        model: Model::Open {
            rate: RateShape::constant(rate, Duration::from_secs(intervals)),
            max_vus: 1000,
        },
        pacing: Duration::ZERO,
        think_time: Duration::ZERO,
        connections: None,
        arrivals: Default::default(),
        arrival_wait: Default::default(),
    };
    RecordedPlan::new(load, RequestSpec::get("http://10.0.0.1/"))
}

/// Writes segment `seg` of run `run_id` under `root`: `intervals` 1 s intervals at
/// `per_interval` requests each; returns its directory.
pub fn write_segment(
    root: &Path,
    seg: Segment,
    run_id: &str,
    plan: &RecordedPlan,
    start: SystemTime,
    intervals: u64,
    per_interval: u64,
) -> PathBuf {
    let mut meta = RunMeta::new("synthetic", plan.clone());
    meta.started_at = jiff::Timestamp::try_from(start).unwrap().to_string();
    meta.host = format!("host-{}", seg.index);
    meta.segment = Some(SegmentNote {
        segment: seg,
        run_id: run_id.into(),
        plan_hash: plan_hash(plan),
        start_at: Some(meta.started_at.clone()),
        start_lag_ms: 0.2,
        clock: None,
    });
    let mut w = RunWriter::create(&root.join(format!("seg-{}", seg.index)), meta, start).unwrap();
    let mut x = 0x2545_f491_4f6c_dd1du64 ^ (seg.index + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    for i in 0..intervals {
        let mut s = IntervalSample::new_open(i);
        for _ in 0..per_interval {
            // Mostly 0.5–5 ms, a tail to ~200 ms.
            let ttfb = (500.0
                * (1.0 + 9.0 * rnd())
                * if rnd() < 0.01 {
                    40.0 * rnd() + 1.0
                } else {
                    1.0
                }) as u64;
            let total = ttfb + (100.0 * rnd()) as u64;
            s.record_success(ttfb, total, (50.0 * rnd()) as u64, 512);
            s.record_actual(ttfb / 2 + 1, total / 2 + 1);
        }
        let mut messages = Vec::new();
        if rnd() < 0.2 {
            s.record_error(ErrorKind::Timeout);
            messages.push(ErrorMessage {
                kind: ErrorKind::Timeout,
                step: None,
                text: format!("timed out on host-{}", seg.index),
            });
        }
        s.counts.sched_lag_max_us = (2000.0 * rnd()) as u64;
        s.counts.generator_cpu_pct = 30.0 + 20.0 * rnd();
        let row = s.to_interval(i as f64, 1.0, 250.0);
        w.write_interval(&s, &row, &[]).unwrap();
        ErrorNote::add(&mut w.meta_mut().errors, &s.counts.errors_by_kind, messages);
    }
    w.finish(RunStatus::Complete, None).unwrap();
    w.dir().to_path_buf()
}

#[allow(dead_code)]
fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: synth_segments OUT SEGMENTS INTERVALS [RATE]");
        std::process::exit(2);
    }
    let out = PathBuf::from(&args[1]);
    let n: u64 = args[2].parse().expect("SEGMENTS");
    let intervals: u64 = args[3].parse().expect("INTERVALS");
    let rate: f64 = args.get(4).map_or(1000.0, |r| r.parse().expect("RATE"));
    let plan = plan(rate, intervals);
    let start = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    for i in 0..n {
        let seg = Segment::new(i, n).unwrap();
        let dir = write_segment(
            &out,
            seg,
            "synthetic-run",
            &plan,
            start,
            intervals,
            (rate / n as f64) as u64,
        );
        eprintln!("wrote {}", dir.display());
    }
}
