//! `volley capacity` against the demo target, whose limit is known by construction: `GET
//! /rooms` holds one of `db-pool` connections for `db-rtt`, so pool 2 at 10 ms serves at most
//! 200 requests per second. Also `volley scalability`, `--arrivals poisson`, `--target` on a
//! run, and the level table of a step-up.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::*;

fn demo(pool: usize, rtt_ms: u64) -> (tokio::runtime::Runtime, volley_demo::Target) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut knobs = volley_demo::Knobs::default();
    knobs.set("db-pool", &pool.to_string()).unwrap();
    knobs.set("db-rtt", &format!("{rtt_ms}ms")).unwrap();
    let target = rt
        .block_on(volley_demo::start("127.0.0.1:0".parse().unwrap(), &knobs))
        .unwrap();
    (rt, target)
}

/// The capacity directory under `out`.
fn capacity_dir(out: &Path) -> PathBuf {
    std::fs::read_dir(out)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.join("capacity.json").is_file())
        .unwrap_or_else(|| panic!("no capacity.json under {}", out.display()))
}

fn read_json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn a_search_finds_the_pool_limit_names_the_pool_and_judges_the_target() {
    let _g = serial();
    let (_rt, target) = demo(2, 10);
    let base = format!("http://{}", target.addr);
    let out = out_dir();
    let o = volley(&[
        "capacity",
        "--url",
        &format!("{base}/rooms"),
        "--rates",
        "40..800",
        "--slo",
        "ttfb p99 < 250ms",
        "--slo",
        "error_rate < 1%",
        "--probe",
        "2s",
        "--warmup",
        "1s",
        "--interval",
        "500ms",
        "--precision",
        "10%",
        "--server-metrics",
        &format!("{base}/metrics"),
        "--target",
        "19080000/day",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    let log = text(&o);
    // 19,080,000 a day is 220.8/s, above what two connections at 10 ms can serve.
    assert_eq!(o.status.code(), Some(1), "below the target: exit 1\n{log}");
    let dir = capacity_dir(out.path());
    let c = read_json(&dir.join("capacity.json"));
    assert_eq!(c["status"], "found", "{c:#}");
    let cap = c["capacity_rps"].as_f64().unwrap();
    assert!(
        (100.0..=210.0).contains(&cap),
        "pool 2 × 10 ms bounds it at 200/s: {cap}\n{log}"
    );
    let (lo, hi) = (
        c["last_pass"].as_f64().unwrap(),
        c["first_fail"].as_f64().unwrap(),
    );
    assert!(lo < hi && (hi - lo) / lo <= 0.10 + 1e-9, "{lo}..{hi}");
    assert_eq!(c["limited_by"], "DB pool", "{c:#}");
    assert_eq!(c["target"]["met"], false);
    assert!((c["target"]["target_rps"].as_f64().unwrap() - 220.83).abs() < 0.01);
    let probes = c["probes"].as_array().unwrap();
    assert!(probes.len() <= 14, "{} probes", probes.len());
    for p in probes {
        for k in [
            "offered",
            "achieved_tps",
            "ttfb_p50_ms",
            "ttfb_p99_ms",
            "error_rate_pct",
            "verdict",
        ] {
            assert!(!p[k].is_null(), "{k} in {p}");
        }
        // Every probe is a run directory of the capacity group, with its reports.
        assert!(
            dir.join(p["dir"].as_str().unwrap())
                .join("report.json")
                .is_file()
        );
    }
    let group = read_json(&dir.join("group.json"));
    assert_eq!(group["kind"], "group");
    assert_eq!(group["runs"].as_array().unwrap().len(), probes.len());
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("Capacity under SLO (ttfb p99 < 250ms, error_rate < 1%):")
            && stdout.contains("limited by: DB pool")
            && stdout.contains("below target 220.83 req/s"),
        "{stdout}"
    );
    let html = std::fs::read_to_string(dir.join("capacity.html")).unwrap();
    assert!(
        html.contains("Capacity under SLO")
            && html.contains("<p class=\"verdict fail\"><b>FAIL</b>")
            && ["capacity_latency", "capacity_errors", "capacity_throughput"]
                .iter()
                .all(|c| html.contains(&format!("\"name\":\"{c}\""))),
        "the page has the answer, coloured as the exit code, and the charts"
    );
    assert!(dir.join("charts/capacity_latency.png").is_file());
    // `volley report` of the directory is the answer; `volley compare` of two compares them.
    let r = volley(&["report", dir.to_str().unwrap()]);
    assert!(
        String::from_utf8_lossy(&r.stdout).contains("Capacity under SLO"),
        "{}",
        text(&r)
    );
    let page = out.path().join("page.html");
    let r = volley(&[
        "report",
        dir.to_str().unwrap(),
        "--html",
        page.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", text(&r));
    // The page is drawn anew from capacity.json, as the search drew it (the charts' data
    // aside: serde_json may read a float back one bit off, 220.83333333333334 for ...37).
    let again = std::fs::read_to_string(&page).unwrap();
    let body = |p: &str| p.split("<script").next().unwrap().to_string();
    assert_eq!(body(&again), body(&html), "the page drawn again differs");
    let cmp = volley(&[
        "compare",
        dir.to_str().unwrap(),
        dir.to_str().unwrap(),
        "--labels",
        "a,b",
    ]);
    let cmp_out = String::from_utf8_lossy(&cmp.stdout);
    assert!(
        cmp.status.success() && cmp_out.contains("brackets overlap"),
        "{}",
        text(&cmp)
    );
    // The fit from the probes: `volley scalability` reads the directory.
    let s = volley(&["scalability", dir.to_str().unwrap(), "--format", "json"]);
    let fit: serde_json::Value = serde_json::from_slice(&s.stdout).unwrap();
    assert!(fit["points"].as_array().unwrap().len() >= 3, "{fit}");
}

#[test]
fn a_probe_volley_cannot_drive_is_not_the_servers_capacity() {
    let _g = serial();
    let (_rt, target) = demo(8, 0);
    let out = out_dir();
    // One event loop and two VUs cannot offer 100,000 arrivals a second: the first probe is
    // generator-limited, and the answer says so instead of naming a capacity.
    let o = volley(&[
        "capacity",
        "--url",
        &format!("http://{}/health", target.addr),
        "--rates",
        "100000..200000",
        "--slo",
        "ttfb p99 < 250ms",
        "--probe",
        "2s",
        "--warmup",
        "0s",
        "--interval",
        "500ms",
        "--threads",
        "1",
        "--max-vus",
        "2",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    let log = text(&o);
    assert_eq!(o.status.code(), Some(1), "{log}");
    let c = read_json(&capacity_dir(out.path()).join("capacity.json"));
    assert_eq!(c["status"], "generator_limited", "{c:#}\n{log}");
    assert!(c["capacity_rps"].is_null(), "{c:#}");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("volley could not drive"),
        "{log}"
    );
}

#[test]
fn ctrl_c_leaves_the_bracket_found_so_far() {
    let _g = serial();
    let (_rt, target) = demo(4, 1);
    let out = out_dir();
    let url = format!("http://{}/rooms", target.addr);
    let mut child = Watched::start(&[
        "capacity",
        "--url",
        &url,
        "--rates",
        "20..2000",
        "--slo",
        "ttfb p99 < 250ms",
        "--probe",
        "3s",
        "--warmup",
        "0s",
        "--interval",
        "500ms",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    // The first probe passes; the interrupt lands in the second, once the first says so.
    child.wait_for(Duration::from_secs(60), |l| {
        l.contains("20 req/s") && l.contains("pass")
    });
    child.signal("-INT");
    let started = std::time::Instant::now();
    let o = child.finish();
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "ended in bounded time"
    );
    let c = read_json(&capacity_dir(out.path()).join("capacity.json"));
    assert_eq!(c["status"], "interrupted", "{c:#}\n{}", text(&o));
    assert_eq!(c["last_pass"], 20.0, "the bracket so far: {c:#}");
    // The probe the interrupt cut is listed as such, never as a pass or a fail.
    let last = c["probes"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["verdict"], "interrupted", "{c:#}");

    // Two capacity results: a comparison is a table that --fail-on regression gates, and
    // refuses what it does not have.
    let a = capacity_dir(out.path());
    let b = out.path().join("lower");
    std::fs::create_dir_all(&b).unwrap();
    let mut lower = c.clone();
    lower["status"] = "found".into();
    lower["last_pass"] = 5.0.into();
    lower["first_fail"] = 10.0.into();
    lower["capacity_rps"] = 5.0.into();
    std::fs::write(b.join("capacity.json"), lower.to_string()).unwrap();
    let mut higher = c.clone();
    higher["status"] = "found".into();
    higher["first_fail"] = 40.0.into();
    higher["capacity_rps"] = 20.0.into();
    let h = out.path().join("higher");
    std::fs::create_dir_all(&h).unwrap();
    std::fs::write(h.join("capacity.json"), higher.to_string()).unwrap();
    let (hs, bs) = (h.to_str().unwrap(), b.to_str().unwrap());
    let o = volley(&["compare", "--baseline", hs, bs, "--fail-on", "regression"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "a fall beyond both brackets fails: {}",
        text(&o)
    );
    assert!(text(&o).contains("fell from 20"), "{}", text(&o));
    let o = volley(&["compare", "--baseline", hs, hs, "--fail-on", "regression"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // The interrupted search has no capacity to judge: the gate fails, saying why.
    let o = volley(&[
        "compare",
        "--baseline",
        a.to_str().unwrap(),
        hs,
        "--fail-on",
        "regression",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("cannot be judged"), "{}", text(&o));
    for flag in [["--junit", "j.xml"], ["--format", "json"]] {
        let o = volley(&["compare", hs, bs, flag[0], flag[1]]);
        assert_eq!(o.status.code(), Some(2), "{flag:?}: {}", text(&o));
        assert!(
            text(&o).contains("not available for a comparison of capacity results"),
            "{}",
            text(&o)
        );
    }
    // A hand-edited result no search can have is refused, as a run.json is.
    let neg = out.path().join("negative");
    std::fs::create_dir_all(&neg).unwrap();
    let mut bad = c.clone();
    bad["last_pass"] = (-5.0).into();
    std::fs::write(neg.join("capacity.json"), bad.to_string()).unwrap();
    let o = volley(&["report", neg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("not a load a search can have"),
        "{}",
        text(&o)
    );
    let file = out.path().join("cmp.txt");
    let o = volley(&["compare", hs, bs, "-o", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(std::fs::read_to_string(&file).unwrap().contains("Capacity"));
    // The comparison as a page: the answer and the gate's verdict before the table.
    let page = out.path().join("cmp.html");
    let o = volley(&[
        "compare",
        "--baseline",
        hs,
        bs,
        "--fail-on",
        "regression",
        "--labels",
        "before,<after>",
        "--html",
        page.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    let (answer, gate, table) = (
        html.find("class=\"answer\"").unwrap(),
        html.find("Gate: FAILED").unwrap(),
        html.find("id=\"comparison\"").unwrap(),
    );
    assert!(answer < gate && gate < table, "{html}");
    assert!(
        html.contains("Gate: FAILED: the capacity fell from 20")
            && html.contains("aria-label=\"worse\"")
            && html.contains("&lt;after&gt;")
            && !html.contains("<after>"),
        "{html}"
    );
}

#[test]
fn poisson_arrivals_are_recorded_and_reported() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let o = volley(&[
        "run",
        "--url",
        &server.url("/ok"),
        "--rate",
        "400",
        "--duration",
        "2s",
        "--arrivals",
        "poisson:7",
        "--target",
        "100/s",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("≥ target 100 req/s"), "{}", text(&o));
    let run = only_run(out.path());
    let meta = read_json(&run.join("run.json"));
    assert_eq!(
        meta["plan"]["load"]["arrivals"]["process"], "poisson",
        "{meta:#}"
    );
    assert_eq!(meta["plan"]["load"]["arrivals"]["seed"], 7);
    let r = report_json(&run);
    assert_eq!(r["arrivals"], "poisson (seed 7)");
    // 800 arrivals expected; a Poisson count has a standard deviation of √800 ≈ 28.
    let n = r["seed_suite"]["total_tests"].as_f64().unwrap();
    assert!((800.0 - n).abs() < 5.0 * 28.3, "{n}");
    // A target above what ran fails the run.
    let o = volley(&[
        "run",
        "--url",
        &server.url("/ok"),
        "--rate",
        "50",
        "--duration",
        "1s",
        "--target",
        "19080000/day",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("below target 220.83 req/s"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_spinning_wait_is_recorded_said_and_refused_without_a_rate() {
    let _g = serial();
    let server = TestServer::start();
    let out = out_dir();
    let o = volley(&[
        "run",
        "--url",
        &server.url("/ok"),
        "--rate",
        "300",
        "--duration",
        "1s",
        "--arrival-wait",
        "spin",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let run = only_run(out.path());
    let meta = read_json(&run.join("run.json"));
    assert_eq!(meta["plan"]["load"]["arrival_wait"], "spin", "{meta:#}");
    let r = report_json(&run);
    assert_eq!(r["seed_suite"]["total_tests"], 300, "{r:#}");
    assert!(
        r["notes"].to_string().contains("--arrival-wait spin"),
        "{}",
        r["notes"]
    );
    // A closed model has no arrivals to space or wait for: either option without a rate says
    // what to write.
    for (flag, value) in [("--arrivals", "poisson"), ("--arrival-wait", "spin")] {
        let o = volley(&[
            "run",
            "--url",
            &server.url("/ok"),
            "--vus",
            "1",
            "--duration",
            "1s",
            flag,
            value,
        ]);
        assert_eq!(o.status.code(), Some(2), "{flag}: {}", text(&o));
        assert!(text(&o).contains("give a rate too"), "{flag}: {}", text(&o));
    }
    let o = volley(&[
        "run",
        "--url",
        &server.url("/ok"),
        "--rate",
        "10",
        "--duration",
        "1s",
        "--arrival-wait",
        "busy",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("write sleep"), "{}", text(&o));
}

#[test]
fn a_step_up_has_one_row_per_level() {
    let _g = serial();
    let (_rt, target) = demo(2, 10);
    let out = out_dir();
    let o = volley(&[
        "run",
        "--url",
        &format!("http://{}/rooms", target.addr),
        "--stages",
        "0s:1,2s:1,0s:4,2s:4",
        "--interval",
        "500ms",
        "--server-metrics",
        &format!("http://{}/metrics", target.addr),
        "-o",
        out.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let r = report_json(&only_run(out.path()));
    let levels = r["levels"].as_array().unwrap_or_else(|| panic!("{r:#}"));
    assert_eq!(levels.len(), 2, "{levels:#?}");
    assert_eq!(levels[0]["vusers"], 1.0);
    assert_eq!(levels[1]["vusers"], 4.0);
    // One VU on a pool of 2 never waits; four do, and TPS stops at the pool's 200/s.
    let (t1, t4) = (
        levels[0]["tps_avg"].as_f64().unwrap(),
        levels[1]["tps_avg"].as_f64().unwrap(),
    );
    assert!(t4 > t1 * 1.3 && t4 < 215.0, "{t1} → {t4}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("Levels (each held level of VUs"));
    let md = std::fs::read_to_string(only_run(out.path()).join("report.md")).unwrap();
    assert!(md.contains("## Levels"), "{md}");
    let html = std::fs::read_to_string(only_run(out.path()).join("report.html")).unwrap();
    assert!(
        html.contains("<h3 id=\"levels\">Levels</h3>"),
        "the page has the level table too"
    );
}

#[test]
fn scalability_fits_the_published_example_and_refuses_too_little() {
    let dir = out_dir();
    let csv = dir.path().join("usl.csv");
    std::fs::write(
        &csv,
        "concurrency,throughput\n1,65\n18,996\n36,1652\n72,1853\n108,1829\n144,1775\n216,1702\n",
    )
    .unwrap();
    let o = volley(&[
        "scalability",
        csv.to_str().unwrap(),
        "--format",
        "json",
        "--charts",
        dir.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let u = &v["usl"];
    let near = |k: &str, want: f64| ((u[k].as_f64().unwrap() - want) / want).abs() < 0.001;
    assert!(
        near("sigma", 0.02773) && near("kappa", 0.0001043) && near("lambda", 89.99),
        "{u}"
    );
    assert!(dir.path().join("scalability.svg").is_file());
    std::fs::write(&csv, "1,65\n18,996\n").unwrap();
    let o = volley(&["scalability", csv.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("at least 4"), "{}", text(&o));
    std::fs::write(&csv, "1,65\nten,996\n").unwrap();
    let o = volley(&["scalability", csv.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("row 2"), "{}", text(&o));
}

#[test]
fn capacity_refuses_what_it_sets_itself() {
    for (args, says) in [
        (vec!["--rate", "100"], "sets the load itself"),
        (vec!["--threshold", "error_rate < 1%"], "--slo"),
        (vec!["--rates", "0..100"], "START must be above 0"),
        (
            vec!["--rates", "100..50"],
            "START must be above 0 and at most MAX",
        ),
        (vec!["--rates", "10..1e12"], "at most 10000000/s"),
        (vec!["--vus", "5..2000000"], "at most 1,000,000"),
        (vec!["--precision", "0"], "from 0.5% to 100%"),
        (vec!["--precision", "0.05"], "did you mean 5%?"),
        (vec![], "give the service level to meet"),
    ] {
        let mut a = vec!["capacity", "--url", "http://127.0.0.1:9/"];
        if !says.contains("service level") {
            a.extend(["--slo", "ttfb p99 < 200ms"]);
        }
        if !args
            .iter()
            .any(|x| x.starts_with("--rates") || x.starts_with("--vus"))
        {
            a.extend(["--rates", "10..100"]);
        }
        a.extend(args.iter().copied());
        let o = volley(&a);
        assert_eq!(o.status.code(), Some(2), "{a:?}: {}", text(&o));
        assert!(text(&o).contains(says), "{a:?}: {}", text(&o));
    }
}

#[test]
fn an_overloaded_probe_stops_early_and_the_start_says_start_lower() {
    let _g = serial();
    let (_rt, target) = demo(2, 10);
    let out = out_dir();
    // Ten times what two connections at 10 ms serve: the queue grows by 1,800 a second, the
    // p99 passes 3 × 250 ms within a second, and two such intervals end the 20 s probe.
    let started = std::time::Instant::now();
    let o = volley(&[
        "capacity",
        "--url",
        &format!("http://{}/rooms", target.addr),
        "--rates",
        "2000..4000",
        "--slo",
        "ttfb p99 < 250ms",
        "--probe",
        "20s",
        "--warmup",
        "0s",
        "--interval",
        "500ms",
        "-o",
        out.path().to_str().unwrap(),
    ]);
    let took = started.elapsed();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let c = read_json(&capacity_dir(out.path()).join("capacity.json"));
    assert_eq!(c["status"], "slo_broken_at_start", "{c:#}");
    let probes = c["probes"].as_array().unwrap();
    assert_eq!(probes.len(), 1, "{c:#}");
    assert_eq!(probes[0]["verdict"], "fail");
    assert!(
        probes[0]["stopped_early"]
            .as_str()
            .unwrap()
            .contains("2 intervals in a row"),
        "{c:#}"
    );
    assert!(
        took < Duration::from_secs(15),
        "the 20 s probe ended early: {took:?}"
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("start lower"),
        "{}",
        text(&o)
    );
}

/// A capacity result written by hand into `dir`: loads of `load` (`rate` or `vus`) probed in
/// the order given (`(offered, p99 ms, errors %, passed)`), under `slo`; the bracket from the
/// highest pass below the lowest failure.
pub(crate) fn hand_capacity(
    dir: &Path,
    load: &str,
    slo: &[&str],
    probes: &[(f64, f64, f64, bool)],
) {
    let last_pass = probes
        .iter()
        .filter(|p| p.3)
        .map(|p| p.0)
        .fold(f64::NAN, f64::max);
    let first_fail = probes
        .iter()
        .filter(|p| !p.3)
        .map(|p| p.0)
        .fold(f64::NAN, f64::min);
    let probes: Vec<serde_json::Value> = probes
        .iter()
        .map(|&(offered, p99, errors, passed)| {
            serde_json::json!({
                "offered": offered,
                "achieved_tps": offered.min(180.0),
                "ttfb_p50_ms": p99 / 3.0,
                "ttfb_p99_ms": p99,
                "error_rate_pct": errors,
                "concurrency": 2.0,
                "verdict": if passed { "pass" } else { "fail" },
                "role": "step",
                "judged": format!("ttfb p99 {p99} vs < 100"),
                "dir": "probe",
            })
        })
        .collect();
    std::fs::create_dir_all(dir).unwrap();
    let c = serde_json::json!({
        "schema": 1,
        "kind": "capacity",
        "name": "rooms",
        "slo": slo,
        "load": load,
        "status": "found",
        "capacity_rps": last_pass,
        "last_pass": last_pass,
        "first_fail": first_fail,
        "precision_pct": 5.0,
        "probes": probes,
        "notes": ["written by hand"],
        "elapsed_s": 30.0,
    });
    std::fs::write(dir.join("capacity.json"), c.to_string()).unwrap();
}

#[test]
fn capacities_of_unlike_loads_or_slos_are_not_compared_and_a_gate_refuses_them() {
    let out = out_dir();
    let probes = [
        (50.0, 20.0, 0.0, true),
        (200.0, 66.0, 3.7, false),
        (100.0, 30.0, 0.0, true),
        (150.0, 40.0, 0.0, true),
        (175.0, 90.0, 1.5, false),
    ];
    let slo = ["ttfb p99 < 100ms", "error_rate < 1%"];
    let rate = out.path().join("rate");
    hand_capacity(&rate, "rate", &slo, &probes);
    let users = out.path().join("users");
    hand_capacity(
        &users,
        "vus",
        &slo,
        &[(10.0, 20.0, 0.0, true), (17.0, 300.0, 0.0, false)],
    );
    let loose = out.path().join("loose");
    hand_capacity(
        &loose,
        "rate",
        &["ttfb p99 < 2s", "error_rate < 1%"],
        &[(400.0, 900.0, 0.0, true), (450.0, 2500.0, 0.0, false)],
    );
    let (r, u, l) = (
        rate.to_str().unwrap(),
        users.to_str().unwrap(),
        loose.to_str().unwrap(),
    );
    // Shown side by side, each figure its own, the reason said; no change, no mark.
    let o = volley(&["compare", r, u, "--verbose"]);
    assert!(o.status.success(), "{}", text(&o));
    let t = String::from_utf8_lossy(&o.stdout);
    let row = t.lines().find(|l| l.starts_with("  capacity")).unwrap();
    assert!(
        row.contains("150 req/s") && row.contains("10 VUs") && row.contains("not compared"),
        "{t}"
    );
    assert!(!row.contains(['🟢', '🔴', '⚪']), "{t}");
    // Two searches of one name are told apart by their directories.
    assert!(
        !t.contains("rooms → rooms") && t.contains("rooms (rate)"),
        "{t}"
    );
    assert!(
        t.contains("a rate and a number of users are different loads"),
        "{t}"
    );
    // A gate on them is refused (a usage error), not passed or failed.
    for (a, b, why) in [(r, u, "different loads"), (r, l, "different questions")] {
        let o = volley(&["compare", "--baseline", a, b, "--fail-on", "regression"]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(
            text(&o).contains("--fail-on regression cannot judge") && text(&o).contains(why),
            "{}",
            text(&o)
        );
    }
    // Alike searches are gated as before.
    let o = volley(&["compare", "--baseline", r, r, "--fail-on", "regression"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}
