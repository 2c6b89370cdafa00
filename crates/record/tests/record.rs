//! Recording as a library call: a typed plan in, a run directory out — against the real
//! demo target on loopback, its `/metrics` scraped beside the load.

use std::time::Duration;

use volley_engine::Target;
use volley_record::{Quiet, RunSpec};
use volley_rundir::{RunData, RunStatus};
use volley_scenario::{LoadSpec, RequestSpec, Settings, Work};

#[test]
fn a_typed_plan_records_a_run_directory_that_reads_back() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let knobs = volley_demo::Knobs {
        db_pool: 2,
        db_rtt: Duration::from_millis(5),
        ..Default::default()
    };
    let target = rt
        .block_on(volley_demo::start("127.0.0.1:0".parse().unwrap(), &knobs))
        .unwrap();
    let base = format!("http://{}", target.addr);
    let mut load = LoadSpec::default();
    load.set("stages", "1s:8,1s:8").unwrap();
    let settings = Settings {
        load,
        ..Settings::default()
    };
    let plan = settings
        .plan(Work::Request(RequestSpec::get(format!("{base}/rooms"))))
        .unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut spec = RunSpec::new(plan, Target::resolve(&format!("{base}/rooms")).unwrap());
    spec.name = "library".into();
    spec.output = out.path().to_path_buf();
    spec.engine.threads = 1;
    spec.server_metrics = vec![format!("{base}/metrics")];

    let recorded = volley_record::record(&spec, &mut Quiet).unwrap();
    rt.block_on(target.stop()).unwrap();

    assert_eq!(recorded.status, RunStatus::Complete);
    let data = RunData::read(&recorded.dir).unwrap();
    assert_eq!(
        data.meta.plan,
        spec.recorded_plan(),
        "run.json's plan reads back as it was written"
    );
    assert_eq!(data.meta.name, "library");
    // Two intervals, and the drain after the stop when requests were in flight then.
    let timed = data
        .series
        .intervals
        .iter()
        .filter(|i| i.period_s > 0.0)
        .count();
    assert_eq!(timed, 2, "{:?}", data.series.intervals);
    assert!(data.series.intervals.len() <= 3);
    let tests: u64 = data.series.intervals.iter().map(|i| i.tests).sum();
    assert!(tests > 20, "{tests} requests");
    assert!(data.meta.errors.is_empty(), "{:?}", data.meta.errors);
    assert_eq!(data.meta.server_metrics[0].failed, 0);
    assert!(data.meta.server_metrics[0].ok >= 1);
    let server = std::fs::read_to_string(recorded.dir.join("server.csv")).unwrap();
    assert!(server.contains("hikaricp_connections_pending"), "{server}");
}

#[test]
fn a_target_that_does_not_answer_is_an_engine_error_and_nothing_is_written() {
    // A port just freed: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/");
    let mut load = LoadSpec::default();
    load.set("duration", "1s").unwrap();
    let settings = Settings {
        load,
        ..Settings::default()
    };
    let plan = settings
        .plan(Work::Request(RequestSpec::get(url.clone())))
        .unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut spec = RunSpec::new(plan, Target::resolve(&url).unwrap());
    spec.output = out.path().join("runs");
    let e = volley_record::record(&spec, &mut Quiet).unwrap_err();
    assert_eq!(e.kind(), volley_record::Kind::Engine, "{e}");
    assert!(e.is_engine() && !e.is_write());
    assert!(e.engine().is_some_and(|e| e.is_unreachable()), "{e}");
    assert!(!out.path().join("runs").exists(), "nothing was written");
}
