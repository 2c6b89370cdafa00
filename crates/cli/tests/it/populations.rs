//! Runs of several populations (a scenario file's `scenarios:`), with
//! `examples/mixed-populations.yaml` against the demo target: readers at a constant arrival
//! rate beside writers ramping VUs. The total must be exactly the populations' sum, interval
//! by interval and histogram by histogram; per-population thresholds pass and fail on their
//! own rows; split runs merge back exactly.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use volley_formats::{HistKey, RunData, Source};

use crate::support::*;

const EXAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../examples/mixed-populations.yaml"
);

struct Demo {
    rt: tokio::runtime::Runtime,
    target: Option<volley_demo::Target>,
}

impl Demo {
    fn start() -> Demo {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let target = rt
            .block_on(volley_demo::start(
                "127.0.0.1:0".parse().unwrap(),
                &volley_demo::Knobs::default(),
            ))
            .unwrap();
        Demo {
            rt,
            target: Some(target),
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.target.as_ref().unwrap().addr)
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        if let Some(t) = self.target.take() {
            let _ = self.rt.block_on(t.stop());
        }
    }
}

/// The total of `run` is its populations' sum: every interval's counts, every histogram.
fn assert_total_is_the_sum(run: &RunData) {
    assert_eq!(run.populations.len(), 2, "readers and writers");
    let total = &run.series.intervals;
    for (k, row) in total.iter().enumerate() {
        let (tests, errors): (u64, u64) = run
            .populations
            .iter()
            .filter_map(|p| p.series.intervals.get(k))
            .fold((0, 0), |(t, e), r| (t + r.tests, e + r.errors));
        assert_eq!((row.tests, row.errors), (tests, errors), "interval {k}");
    }
    for p in &run.populations {
        assert!(p.series.intervals.len() <= total.len());
    }
    let all: u64 = run.populations.iter().map(|p| p.series.tests()).sum();
    assert_eq!(run.series.tests(), all);
    let src = Source::from_run(run.clone());
    for key in [HistKey::TTFB, HistKey::TOTAL, HistKey::ITERATION] {
        let sum: u64 = src
            .populations
            .iter()
            .map(|p| p.merged(key, 0.0).len())
            .sum();
        assert_eq!(src.merged(key, 0.0).len(), sum, "{key:?}");
    }
    // The run's steps are every population's, qualified, and add up to the populations' steps.
    let names: Vec<&str> = run.steps.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "readers/read messages",
            "writers/post message",
            "writers/read messages"
        ]
    );
    let step_tests: u64 = run.steps.iter().map(|(_, s)| s.tests()).sum();
    let pop_step_tests: u64 = run
        .populations
        .iter()
        .flat_map(|p| p.steps.iter().map(|(_, s)| s.tests()))
        .sum();
    assert_eq!(step_tests, pop_step_tests);
}

#[test]
fn the_mixed_example_runs_with_zero_errors_and_its_total_is_the_sum() {
    let _g = serial();
    let demo = Demo::start();
    let out = out_dir();
    let o = volley(&[
        "run",
        "--verbose",
        EXAMPLE,
        "--url",
        &demo.url(),
        "--progress",
        "none",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let dir = only_run(out.path());
    let run = RunData::read(&dir).unwrap();
    assert_eq!(run.series.errors(), 0, "{}", text(&o));
    assert_total_is_the_sum(&run);
    // The readers arrived at 100/s for 8 s; the writers started 2 s in.
    let readers = &run.populations[0];
    assert_eq!(readers.meta.name, "readers");
    assert!(
        (790..=800).contains(&readers.series.tests()),
        "{}",
        readers.series.tests()
    );
    let writers = &run.populations[1];
    assert!(
        writers
            .series
            .intervals
            .iter()
            .take(2)
            .all(|r| r.tests == 0),
        "{:?}",
        writers.series.intervals
    );
    assert!(writers.series.intervals[3].tests > 0);
    let plan = &run.meta.plan;
    assert_eq!(
        plan.populations
            .iter()
            .map(|p| (p.name.as_str(), p.start_s, p.load.kind()))
            .collect::<Vec<_>>(),
        [("readers", 0.0, "open"), ("writers", 2.0, "closed")]
    );
    assert_eq!(plan.model(), "mixed");
    // Reports: a row per population and the total, in every layout; thresholds judged on each.
    let report = report_json(&dir);
    let pops = report["populations"].as_array().unwrap();
    assert_eq!(pops.len(), 2);
    let sum: u64 = pops
        .iter()
        .map(|p| p["report"]["seed_suite"]["total_tests"].as_u64().unwrap())
        .sum();
    assert_eq!(
        report["seed_suite"]["total_tests"].as_u64().unwrap(),
        sum,
        "after warm-up too"
    );
    let exprs: Vec<&str> = report["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["expr"].as_str().unwrap())
        .collect();
    assert_eq!(
        exprs,
        [
            "error_rate < 1%",
            "writers.ttfb p99 < 2s",
            "readers/read messages: ttfb p99 < 2s",
            "writers.error_rate < 1%",
            "writers/post message: ttfb p95 < 2s"
        ]
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("Populations")
            && stdout.lines().any(|l| l.trim_start().starts_with("total ")),
        "{stdout}"
    );
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("## Populations")
            && md.contains("| readers | open |")
            && md.contains("| writers | closed |"),
        "{md}"
    );
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("<h3 id=\"populations\">Populations</h3>"));
    // The note says each population has its own report below: it does, in every form.
    for (form, text) in [("terminal", &*stdout), ("markdown", &md), ("html", &html)] {
        for p in ["readers", "writers"] {
            assert!(
                text.contains(&format!("Population {p}\n"))
                    || text.contains(&format!("Population {p} ("))
                    || text.contains(&format!(">Population {p}<")),
                "{form} lacks population {p}'s own report:\n{text}"
            );
        }
    }
    // Each population is a run directory of its own: report it alone.
    let o = volley(&["report", dir.join("populations/writers").to_str().unwrap()]);
    assert!(
        o.status.success() && String::from_utf8_lossy(&o.stdout).contains("writers"),
        "{}",
        text(&o)
    );
    // compare and gate give each population its rows.
    let d = dir.to_str().unwrap();
    let o = volley(&["compare", "--verbose", d, d]);
    let cmp = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success()
            && cmp.contains("Per population:")
            && cmp.lines().any(|l| l.trim_start().starts_with("readers "))
            && cmp.lines().any(|l| l.trim_start().starts_with("writers ")),
        "{}",
        text(&o)
    );
    // The default gate includes TTFB p99, which 8 s of load cannot judge per population
    // (fewer than 1,000 requests): the gate fails and says so, rather than pass on it.
    let o = volley(&["compare", d, d, "--fail-on", "regression"]);
    let gate = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.code() == Some(1)
            && gate.contains("population `writers`: ")
            && gate.contains("too few requests beyond this percentile"),
        "{}",
        text(&o)
    );
    // Gated on what it can judge, the run against itself passes.
    let o = volley(&[
        "compare",
        d,
        d,
        "--fail-on",
        "regression",
        "--gate-metrics",
        "error_rate_pct,tps_avg,mttfb_avg_ms,ttfb_p50_ms",
    ]);
    let gate = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && gate.contains("population `writers`: "),
        "{}",
        text(&o)
    );
}

#[test]
fn population_thresholds_fail_the_run_on_their_own_rows() {
    let _g = serial();
    let demo = Demo::start();
    let out = out_dir();
    // The writers' own step threshold made impossible; the readers' from the command line holds.
    let text_in = std::fs::read_to_string(EXAMPLE).unwrap().replace(
        "post message: ttfb p95 < 2s",
        "post message: ttfb p95 < 1us",
    );
    let file = out.path().join("mix.yaml");
    std::fs::write(&file, text_in).unwrap();
    let runs = out.path().join("runs");
    let o = volley(&[
        "run",
        file.to_str().unwrap(),
        "--url",
        &demo.url(),
        "--progress",
        "none",
        "--threshold",
        "readers.error_rate < 1%",
        "--threshold",
        "readers.ttfb max < 1us",
        "-o",
        runs.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("thresholds failed: ")
            && err.contains("writers/post message: ttfb p95 < 1us")
            && err.contains("readers.ttfb max < 1us"),
        "{err}"
    );
    let report = report_json(&only_run(&runs));
    let passed: Vec<(String, bool)> = report["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["expr"].as_str().unwrap().to_string(),
                t["passed"].as_bool().unwrap(),
            )
        })
        .collect();
    let of = |e: &str| {
        passed
            .iter()
            .find(|(x, _)| x == e)
            .unwrap_or_else(|| panic!("{e} in {passed:?}"))
            .1
    };
    assert!(
        of("readers.error_rate < 1%") && of("error_rate < 1%") && of("writers.error_rate < 1%")
    );
    assert!(!of("writers/post message: ttfb p95 < 1us") && !of("readers.ttfb max < 1us"));
    // Bad input is refused before anything runs.
    let o = volley(&[
        "run",
        EXAMPLE,
        "--url",
        &demo.url(),
        "--vus",
        "5",
        "-o",
        runs.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--vus would apply to every scenario"),
        "{}",
        text(&o)
    );
    let o = volley(&[
        "run",
        EXAMPLE,
        "--url",
        &demo.url(),
        "--threshold",
        "wirters.ttfb p99 < 1s",
        "-o",
        runs.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("no population `wirters`; its scenarios are readers, writers"),
        "{}",
        text(&o)
    );
    let rooms = format!("{}/rooms", demo.url());
    let o = volley(&[
        "run",
        "--url",
        &rooms,
        "--vus",
        "1",
        "--duration",
        "1s",
        "--threshold",
        "writers.ttfb p99 < 1s",
        "-o",
        runs.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("names a population, but this run has none"),
        "{}",
        text(&o)
    );
}

#[test]
fn split_runs_of_populations_merge_exactly() {
    let _g = serial();
    let demo = Demo::start();
    let out = out_dir();
    let at = start_at_in(2);
    let url = demo.url();
    let children: Vec<_> = (0..2)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_volley"))
                .args([
                    "run",
                    EXAMPLE,
                    "--url",
                    &url,
                    "--segment",
                    &format!("{i}/2"),
                    "--start-at",
                    &at,
                    "--progress",
                    "none",
                    "--threads",
                    "1",
                    "-o",
                ])
                .arg(out.path().join(format!("seg{i}")))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    for o in &outs {
        assert!(o.status.success(), "{}", text(o));
    }
    let segs: Vec<PathBuf> = (0..2)
        .map(|i| only_run(&out.path().join(format!("seg{i}"))))
        .collect();
    let merged = out.path().join("merged");
    let o = volley(&[
        "merge",
        segs[0].to_str().unwrap(),
        segs[1].to_str().unwrap(),
        "-o",
        merged.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let run = RunData::read(&merged).unwrap();
    assert_total_is_the_sum(&run);
    let read = |p: &Path| RunData::read(p).unwrap();
    let seg_runs: Vec<RunData> = segs.iter().map(|s| read(s)).collect();
    for (i, p) in run.populations.iter().enumerate() {
        let sum: u64 = seg_runs
            .iter()
            .map(|s| s.populations[i].series.tests())
            .sum();
        assert_eq!(p.series.tests(), sum, "population {}", p.meta.name);
    }
    // The readers' 100 arrivals a second, split in two, are all there.
    assert!(
        (790..=800).contains(&run.populations[0].series.tests()),
        "{}",
        run.populations[0].series.tests()
    );
}
