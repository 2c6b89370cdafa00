//! `--kube` in a recorded run: the watcher started beside the load with the run's t0 and
//! interval, against an API server replaying answers recorded from a real kube-apiserver
//! (fixtures/kube/basic). The run directory gains kube.jsonl, kube.csv and run.json's `kube`
//! note, and never the kubeconfig's token; a run without `--kube` writes none of it.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use volley_engine::Target;
use volley_kube::replay::{Fault, Replay};
use volley_record::{Quiet, RunSpec};
use volley_rundir::{RunData, RunStatus};
use volley_scenario::{LoadSpec, RequestSpec, Settings, Work};

const TOKEN: &str = "volley-record-token-93b1e7";

fn files(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn a_run_with_kube_records_the_workload_and_one_without_writes_nothing_of_it() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let target = rt
        .block_on(volley_demo::start(
            "127.0.0.1:0".parse().unwrap(),
            &volley_demo::Knobs::default(),
        ))
        .unwrap();
    let url = format!("http://{}/rooms", target.addr);
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/kube/basic");
    let server = Replay::serve(&fixture, Fault::None, 10.0);
    let out = tempfile::tempdir().unwrap();
    let kubeconfig = out.path().join("kubeconfig");
    std::fs::write(&kubeconfig, server.kubeconfig(TOKEN)).unwrap();
    let spec = |kube: bool| {
        let mut load = LoadSpec::default();
        load.set("stages", "1s:2,1s:2").unwrap();
        let settings = Settings {
            load,
            ..Settings::default()
        };
        let plan = settings
            .plan(Work::Request(RequestSpec::get(url.clone())))
            .unwrap();
        let mut spec = RunSpec::new(plan, Target::resolve(&url).unwrap());
        spec.output = out.path().join("runs");
        spec.engine.threads = 1;
        spec.engine.grace = Duration::from_millis(200);
        spec.kube = kube.then(|| volley_kube::Options {
            specs: vec![volley_kube::Spec::parse("deployment/chat").unwrap()],
            context: None,
            kubeconfig: Some(kubeconfig.clone()),
            off: None,
        });
        spec
    };
    let with = volley_record::record(&spec(true), &mut Quiet).unwrap();
    let without = volley_record::record(&spec(false), &mut Quiet).unwrap();
    rt.block_on(target.stop()).unwrap();
    assert_eq!(with.status, RunStatus::Complete);

    // drain.csv is there when requests were in flight at the stop, in either run.
    let added: Vec<String> = files(&with.dir)
        .difference(&files(&without.dir))
        .filter(|f| *f != "drain.csv")
        .cloned()
        .collect();
    assert_eq!(added, ["kube.csv", "kube.jsonl"]);
    assert!(files(&without.dir).iter().all(|f| !f.starts_with("kube")));
    assert!(RunData::read(&without.dir).unwrap().meta.kube.is_none());

    let data = RunData::read(&with.dir).unwrap();
    let note = data.meta.kube.expect("run.json's kube note");
    assert_eq!(note.auth, "token");
    assert_eq!(note.targets[0].target, "kube:shop/deployment/chat");
    assert!(
        note.watches
            .iter()
            .any(|w| w.resource == "pods" && w.observed >= 3),
        "{note:?}"
    );
    // Sampled at the scrape instants: 1 s and 2 s, the run's intervals.
    let points = volley_rundir::rundir::read_kube(&with.dir).unwrap();
    let at: BTreeSet<String> = points.iter().map(|p| p.elapsed_s.to_string()).collect();
    assert!(at.contains("1") && at.contains("2"), "{at:?}");
    let ready = points
        .iter()
        .find(|p| p.series == "kube_pods_ready" && p.elapsed_s == 2.0)
        .unwrap();
    assert_eq!(ready.value, 3.0);
    // The gauge taken at the run's end belongs to its last row, as server metrics do.
    let row = ready.row(&data.series.intervals);
    assert_eq!(row, Some(1), "{:?}", data.series.intervals);
    for f in files(&with.dir) {
        let bytes = std::fs::read(with.dir.join(&f)).unwrap();
        assert!(
            !bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()),
            "{f} holds the kubeconfig's token"
        );
    }
}
