//! Split runs on one machine: `volley run --segment i/N` processes started together with
//! `--start-at`, then `volley merge`. The counting test server checks that the merged run
//! holds every request the segments sent, and the schedule checks that an open model's
//! arrivals are the single-process schedule's, interval by interval.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

use volley_formats::RunData;

use crate::support::*;

/// Starts segments `0/n` … `n-1/n` of `args` as separate processes that begin together in a
/// couple of seconds, each writing under `out/seg<i>`.
fn spawn_segments(n: u64, args: &[&str], out: &Path) -> Vec<Child> {
    let at = start_at_in(2);
    (0..n)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_volley"))
                .arg("run")
                .args(args)
                .args([
                    "--segment",
                    &format!("{i}/{n}"),
                    "--start-at",
                    &at,
                    "--progress",
                    "none",
                    "--threads",
                    "1",
                    "-o",
                ])
                .arg(out.join(format!("seg{i}")))
                .env("NO_COLOR", "1")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect()
}

/// Runs [`spawn_segments`] to the end; returns their outputs.
fn split_run(n: u64, args: &[&str], out: &Path) -> Vec<Output> {
    spawn_segments(n, args, out)
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect()
}

fn merge(inputs: &[PathBuf], out: &Path) -> Output {
    let mut args: Vec<&str> = vec!["merge"];
    args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    args.extend(["-o", out.to_str().unwrap()]);
    volley(&args)
}

#[test]
fn closed_segments_merge_to_every_request_the_server_saw() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let url = server.url("/delay?ms=5");
    let outs = split_run(
        3,
        &[
            "--url",
            &url,
            "--vus",
            "7",
            "--duration",
            "3s",
            "--threshold",
            "error_rate < 1%",
        ],
        out.path(),
    );
    for o in &outs {
        assert!(o.status.success(), "{}", text(o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("of run "),
            "{}",
            text(o)
        );
    }
    let merged = out.path().join("merged");
    let o = merge(&[out.path().to_path_buf()], &merged);
    assert!(o.status.success(), "{}", text(&o));
    let run = RunData::read(&merged).unwrap();
    assert_eq!(
        run.series.tests() + run.series.errors(),
        server.seen(),
        "every request the server read, once"
    );
    assert!(
        run.series.tests() > 3 * 7 * 100,
        "{} requests",
        run.series.tests()
    );
    // 7 VUs split 3 + 2 + 2, summed back in every full interval.
    assert!(
        run.series
            .intervals
            .iter()
            .filter(|r| r.period_s >= 1.0)
            .all(|r| r.vusers == 7.0),
        "{:?}",
        run.series.intervals
    );
    let segs = &run.meta.merged.as_ref().unwrap().segments;
    assert_eq!(
        segs.iter()
            .map(|s| (s.segment.index, s.tests + s.errors))
            .map(|(_, n)| n)
            .sum::<u64>(),
        server.seen()
    );
    assert!(segs.iter().all(|s| s.start_lag_ms < 1000.0), "{segs:?}");
    // Every report works on it unchanged, with the plan's threshold evaluated.
    let r = report_json(&merged);
    assert_eq!(r["thresholds"][0]["passed"], true, "{}", r["thresholds"]);
    let table = volley(&["report", "--verbose", merged.to_str().unwrap()]);
    assert!(table.status.success(), "{}", text(&table));
    assert!(
        String::from_utf8_lossy(&table.stdout).contains("Total Tests"),
        "{}",
        text(&table)
    );
    let cmp = volley(&[
        "compare",
        outs_dir(out.path(), 0).to_str().unwrap(),
        merged.to_str().unwrap(),
    ]);
    assert!(cmp.status.success(), "{}", text(&cmp));

    // A segment left out: merged, but partial, and the exit code says so.
    let partial = out.path().join("partial");
    let o = merge(
        &[outs_dir(out.path(), 0), outs_dir(out.path(), 2)],
        &partial,
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("PARTIAL: segment 1/3 is missing;"),
        "{}",
        text(&o)
    );
    // `volley runs` tells them apart, each with its directory.
    let o = volley(&["runs", out.path().to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let table = String::from_utf8_lossy(&o.stdout);
    let header = table.lines().next().unwrap();
    assert!(
        header.contains("  kind  ") && header.ends_with("  dir"),
        "{table}"
    );
    let line_of = |dir: &Path| {
        table
            .lines()
            .find(|l| l.ends_with(&format!("  {}", dir.display())))
            .unwrap_or_else(|| panic!("no line for {}:\n{table}", dir.display()))
            .to_string()
    };
    for i in 0..3 {
        assert!(
            line_of(&outs_dir(out.path(), i)).contains(&format!("  segment {i}/3  ")),
            "{table}"
        );
    }
    assert!(line_of(&merged).contains("  merged  "), "{table}");
    assert!(
        line_of(&partial).contains("  merged (2 of 3 segments)  "),
        "{table}"
    );
    let o = volley(&["runs", out.path().to_str().unwrap(), "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let splits: Vec<&str> = json
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["split"].as_str().unwrap())
        .collect();
    assert_eq!(
        splits.iter().filter(|s| s.starts_with("segment ")).count(),
        3,
        "{json:#}"
    );
    // The same segment twice (a retried pod) is refused.
    let all: Vec<PathBuf> = (0..3)
        .map(|i| out.path().join(format!("seg{i}")))
        .chain([outs_dir(out.path(), 1)])
        .collect();
    let o = merge(&all, &out.path().join("dup"));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("segment 1/3 appears twice"),
        "{}",
        text(&o)
    );
}

/// The run directory of segment `i` under `out`.
fn outs_dir(out: &Path, i: u64) -> PathBuf {
    only_run(&out.join(format!("seg{i}")))
}

#[test]
fn open_segments_send_exactly_the_single_process_schedule() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let url = server.url("/ok");
    let outs = split_run(
        4,
        &[
            "--url",
            &url,
            "--rate-stages",
            "1s:400,2s:400",
            "--max-vus",
            "40",
        ],
        out.path(),
    );
    for o in &outs {
        assert!(o.status.success(), "{}", text(o));
    }
    let merged = out.path().join("merged");
    let o = merge(&[out.path().to_path_buf()], &merged);
    assert!(o.status.success(), "{}", text(&o));
    let run = RunData::read(&merged).unwrap();
    // The single-process schedule: arrivals due in each 1 s interval of a ramp 0→400/s over
    // 1 s, then 400/s for 2 s.
    let rate = volley_scenario::RateShape::parse("1s:400,2s:400").unwrap();
    let mut expected = vec![0u64; 3];
    for due in (0..).map_while(|k| rate.due(k)) {
        expected[due.as_secs() as usize] += 1;
    }
    // Requests count in the interval they complete in: one due just before a boundary may
    // land after it, so per interval within a few; over the run, exactly.
    let got: Vec<u64> = run
        .series
        .intervals
        .iter()
        .map(|r| r.tests + r.errors + r.dropped)
        .collect();
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(
        got.iter().zip(&expected).all(|(g, e)| g.abs_diff(*e) <= 3),
        "arrivals per interval {got:?}, schedule {expected:?}"
    );
    assert_eq!(
        got.iter().sum::<u64>(),
        expected.iter().sum::<u64>(),
        "every arrival of the schedule, once"
    );
    assert_eq!(server.seen(), expected.iter().sum::<u64>());
    assert!(run.generator.iter().all(|g| g.dropped == 0));
    // The segments' schedule-lag histograms add up: every arrival's dispatch delay, once.
    let r = report_json(&merged);
    assert_eq!(
        r["generator"]["sched_lag_ms"]["count"].as_u64(),
        Some(expected.iter().sum::<u64>()),
        "{}",
        r["generator"]
    );
}

/// What `kubectl delete pod`, a drain or an eviction does to a segment: SIGTERM mid-run. The
/// segment stops gracefully and keeps its run directory (uploaded in a pod), but fails, so that
/// its pod and the Job fail too; the merge names it and fails, as for a missing segment. Seen on
/// a real node (scripts/k8s-node/acceptance.sh): before, the pod succeeded and the Job completed.
#[test]
fn a_segment_stopped_by_sigterm_fails_and_its_merge_says_so() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let url = server.url("/ok");
    let children = spawn_segments(
        2,
        &["--url", &url, "--rate", "200", "--duration", "8s"],
        out.path(),
    );
    // SIGTERM once segment 1 has recorded two of its eight seconds of load.
    wait_for_intervals(
        &out.path().join("seg1"),
        2,
        std::time::Duration::from_secs(30),
    );
    let kill = Command::new("kill")
        .args(["-TERM", &children[1].id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let outs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    assert!(outs[0].status.success(), "{}", text(&outs[0]));
    assert_eq!(outs[1].status.code(), Some(1), "{}", text(&outs[1]));
    assert!(
        text(&outs[1]).contains("segment 1/2 was interrupted after"),
        "{}",
        text(&outs[1])
    );
    let stopped = RunData::read(&outs_dir(out.path(), 1)).unwrap();
    assert_eq!(stopped.meta.status, volley_formats::RunStatus::Interrupted);
    assert!(
        stopped
            .meta
            .reason
            .as_deref()
            .unwrap_or("")
            .contains("SIGTERM"),
        "{:?}",
        stopped.meta.reason
    );
    let merged = out.path().join("merged");
    let o = merge(&[out.path().to_path_buf()], &merged);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("INCOMPLETE: segment 1/2 is interrupted"),
        "{}",
        text(&o)
    );
    // Nothing is lost: the merged run holds every request both segments sent.
    let run = RunData::read(&merged).unwrap();
    assert_eq!(server.seen(), run.series.tests() + run.series.errors());
    assert_eq!(report_json(&merged)["status"], "interrupted");
}

#[test]
fn bad_segments_are_refused_before_anything_is_sent() {
    // Not only refusals: an Indexed Job's pod runs a segment of 1 s at the end.
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let url = server.url("/ok");
    let o_dir = out.path().to_str().unwrap();
    for (args, says) in [
        (vec!["--segment", "3/2"], "segment 3/2 does not exist"),
        (vec!["--segment", "0/0"], "at least 1 segment"),
        (vec!["--segment", "1"], "write it as i/N"),
        // Segment 0/5 runs a VU: the one that would run none is named.
        (
            vec!["--segment", "0/5"],
            "5 segments cannot share 4 VUs: segment 4/5 would run none; use at most 4 segments",
        ),
        (
            vec!["--segment", "0/7"],
            "7 segments cannot share 4 VUs: segments 4/7 to 6/7 would run none",
        ),
        (vec!["--segments", "2"], "JOB_COMPLETION_INDEX"),
        (vec!["--segment", "0/2", "--start-at", "1000000000"], "was "),
        (vec!["--segment", "0/2", "--start-at", "noon"], "RFC 3339"),
    ] {
        let mut all = vec![
            "run",
            "--url",
            &url,
            "--vus",
            "4",
            "--duration",
            "1s",
            "-o",
            o_dir,
        ];
        all.extend(args.iter().copied());
        let o = volley(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(says),
            "{args:?}: {}",
            text(&o)
        );
    }
    // An Indexed Job's pod: the index from the environment.
    let o = Command::new(env!("CARGO_BIN_EXE_volley"))
        .args([
            "run",
            "--url",
            &url,
            "--vus",
            "4",
            "--duration",
            "1s",
            "--segments",
            "2",
            "--progress",
            "none",
            "-o",
            o_dir,
        ])
        .env("JOB_COMPLETION_INDEX", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let run = RunData::read(&only_run(out.path())).unwrap();
    assert_eq!(
        run.meta.segment.as_ref().unwrap().segment.to_string(),
        "1/2"
    );
    assert_eq!(server.seen(), run.series.tests());
}
