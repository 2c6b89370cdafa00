//! `--kube` everywhere a run happens, against an API server replaying answers recorded from a
//! real kube-apiserver (fixtures/kube/basic, `volley_kube::replay`) and the demo target: a
//! scenario file's `kube:`, each probe of `volley capacity`, each run of `volley sweep` (whose
//! `--setup` waits for the watched Deployment's rollout), and a split run, where segment 0
//! alone watches and the merge keeps its record.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use volley_kube::replay::{Fault, Replay};

use crate::support::*;

const TOKEN: &str = "volley-cli-token-4d2b8f";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/kube/basic")
}

/// The demo target on a runtime of its own.
fn demo() -> (tokio::runtime::Runtime, volley_demo::Target) {
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
    (rt, target)
}

/// The replay with `fault` and a kubeconfig for it in `dir`.
fn cluster(fault: Fault, dir: &Path) -> (Replay, PathBuf) {
    let server = Replay::serve(&fixture(), fault, 10.0);
    let kc = dir.join("kubeconfig");
    std::fs::write(&kc, server.kubeconfig(TOKEN)).unwrap();
    (server, kc)
}

/// `volley ARGS` with `KUBECONFIG=kubeconfig`.
fn volley_kube(kubeconfig: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_volley"))
        .args(args)
        .env("NO_COLOR", "1")
        .env("KUBECONFIG", kubeconfig)
        .output()
        .unwrap()
}

/// `volley run FILE` into `runs` with the replay's kubeconfig; it must succeed and watch.
fn run_watched_file(kubeconfig: &Path, file: &Path, runs: &Path) -> PathBuf {
    let o = volley_kube(
        kubeconfig,
        &[
            "run",
            file.to_str().unwrap(),
            "--interval",
            "500ms",
            "--progress",
            "none",
            "-o",
            runs.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let run = only_run(runs);
    assert_watched(&run);
    run
}

/// Every run directory (holding run.json) under `root`, sorted.
fn run_dirs(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(d) = todo.pop() {
        if d.join("run.json").is_file() {
            out.push(d.clone());
        }
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            }
        }
    }
    out.sort();
    out
}

fn kube_note(run: &Path) -> serde_json::Value {
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    meta["kube"].clone()
}

/// The run watched the replay's Deployment: both files, samples of its 3 ready pods, the note.
fn assert_watched(run: &Path) {
    assert!(run.join("kube.jsonl").is_file(), "{}", run.display());
    // kube.csv: Elapsed_(s),Target,Series,Value,Kind.
    let mut csv = csv::Reader::from_path(run.join("kube.csv")).unwrap();
    let rows: Vec<csv::StringRecord> = csv.records().map(|r| r.unwrap()).collect();
    assert!(
        rows.iter().any(|r| &r[1] == "kube:shop/deployment/chat"
            && &r[2] == "kube_pods_ready"
            && &r[3] == "3"),
        "{}: {rows:?}",
        run.display()
    );
    let note = kube_note(run);
    assert_eq!(note["targets"][0]["target"], "kube:shop/deployment/chat");
    for f in std::fs::read_dir(run).unwrap() {
        let p = f.unwrap().path();
        if p.is_file() {
            let bytes = std::fs::read(&p).unwrap();
            assert!(
                !bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()),
                "{} holds the token",
                p.display()
            );
        }
    }
}

#[test]
fn a_scenario_files_kube_key_watches_and_a_bad_one_is_refused() {
    let _g = serial();
    let (_rt, target) = demo();
    let out = out_dir();
    let (_server, kc) = cluster(Fault::None, out.path());
    let file = out.path().join("watched.yaml");
    std::fs::write(
        &file,
        format!(
            "target: http://{}\nload: {{ vus: 2, duration: 2s }}\nkube: deployment/chat\n\
             kube_context: replay\nsteps:\n  - request: GET /rooms\n",
            target.addr
        ),
    )
    .unwrap();
    let runs = out.path().join("runs");
    let run = run_watched_file(&kc, &file, &runs);
    assert_eq!(kube_note(&run)["context"], "replay");

    // A value --kube would refuse, refused from the file with the key named.
    std::fs::write(
        &file,
        format!(
            "target: http://{}\nload: {{ vus: 1, duration: 1s }}\nkube: [deployment/chat, app=chat]\n\
             steps:\n  - request: GET /rooms\n",
            target.addr
        ),
    )
    .unwrap();
    let o = volley_kube(
        &kc,
        &["run", file.to_str().unwrap(), "-o", runs.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("`kube:`") && err.contains("write pods/app=chat"),
        "{err}"
    );
    // --kube-context without anything to watch.
    let o = volley_kube(
        &kc,
        &[
            "run",
            "--url",
            "http://127.0.0.1:1/",
            "--vus",
            "1",
            "--duration",
            "1s",
            "--kube-context",
            "replay",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--kube-context replay without --kube"),
        "{}",
        text(&o)
    );
}

/// A run of populations watches once, for the whole run: the record is in the run's own
/// directory, none in the populations' directories.
#[test]
fn a_run_of_populations_watches_once_in_the_run_s_directory() {
    let _g = serial();
    let (_rt, target) = demo();
    let out = out_dir();
    let (_server, kc) = cluster(Fault::None, out.path());
    let file = out.path().join("mix.yaml");
    std::fs::write(
        &file,
        format!(
            "target: http://{}\nkube: deployment/chat\nscenarios:\n  readers:\n    load: {{ vus: 1, duration: 2s }}\n    \
             steps:\n      - request: GET /rooms\n  writers:\n    load: {{ vus: 1, duration: 2s }}\n    \
             steps:\n      - request: GET /health\n",
            target.addr
        ),
    )
    .unwrap();
    let runs = out.path().join("runs");
    let run = run_watched_file(&kc, &file, &runs);
    for p in ["readers", "writers"] {
        let sub = run.join("populations").join(p);
        assert!(sub.join("run.json").is_file(), "{}", sub.display());
        assert!(!sub.join("kube.jsonl").exists() && kube_note(&sub).is_null());
    }
}

#[test]
fn a_denied_permission_stops_the_run_before_any_load() {
    let _g = serial();
    let (_rt, target) = demo();
    let out = out_dir();
    let (_server, kc) = cluster(Fault::Forbidden { resource: "pods" }, out.path());
    let runs = out.path().join("runs");
    let o = volley_kube(
        &kc,
        &[
            "run",
            "--url",
            &format!("http://{}/rooms", target.addr),
            "--vus",
            "1",
            "--duration",
            "1s",
            "--kube",
            "deployment/chat",
            "-o",
            runs.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(
            "--kube: cannot list pods in namespace shop: grant the Role in docs/kubernetes.md"
        ),
        "{}",
        text(&o)
    );
    assert!(
        !runs.exists() || run_dirs(&runs).is_empty(),
        "no run was recorded"
    );
}

#[test]
fn every_capacity_probe_records_the_workload_in_its_own_directory() {
    let _g = serial();
    let (_rt, target) = demo();
    let out = out_dir();
    let (_server, kc) = cluster(Fault::None, out.path());
    let o = volley_kube(
        &kc,
        &[
            "capacity",
            "--url",
            &format!("http://{}/rooms", target.addr),
            "--rates",
            "20..40",
            "--slo",
            "error_rate < 1%",
            "--probe",
            "1s",
            "--warmup",
            "1s",
            "--interval",
            "500ms",
            "--kube",
            "deployment/chat",
            "-o",
            out.path().join("cap").to_str().unwrap(),
        ],
    );
    assert!(o.status.code() == Some(0), "{}", text(&o));
    let runs = run_dirs(&out.path().join("cap"));
    assert!(runs.len() >= 2, "a probe per load: {runs:?}");
    for run in &runs {
        assert_watched(run);
    }
}

#[test]
fn each_sweep_run_watches_after_the_setup_rolled_out_and_a_stuck_rollout_stops_it() {
    let _g = serial();
    let (_rt, target) = demo();
    let out = out_dir();
    let (_server, kc) = cluster(Fault::Rollout { ms: 900 }, out.path());
    let url = format!("http://{}/rooms", target.addr);
    let sweep = |kc: &Path, dir: &Path, timeout: &str| {
        volley_kube(
            kc,
            &[
                "sweep",
                "--vary",
                "vus=1,2",
                "--setup",
                "true {vus}",
                "--rollout-timeout",
                timeout,
                "-o",
                dir.to_str().unwrap(),
                "--",
                "--url",
                &url,
                "--vus",
                "{vus}",
                "--duration",
                "1s",
                "--interval",
                "500ms",
                "--kube",
                "deployment/chat",
            ],
        )
    };
    let o = sweep(&kc, &out.path().join("sweep"), "20s");
    assert!(o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    for want in [
        "volley: waiting for deployment shop/chat to roll out",
        "volley: deployment shop/chat: waiting for 1 of 3 replicas updated",
        "volley: deployment shop/chat rolled out: generation 2, 3 replicas ready",
    ] {
        assert!(err.contains(want), "{want}:\n{err}");
    }
    let runs = run_dirs(&out.path().join("sweep"));
    assert_eq!(runs.len(), 2, "{runs:?}");
    for run in &runs {
        assert_watched(run);
    }

    let (_stuck, kc) = cluster(Fault::Rollout { ms: 600_000 }, &out.path().join("sweep"));
    let o = sweep(&kc, &out.path().join("stuck"), "1s");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("after the --setup of vus=1")
            && err.contains("deployment shop/chat did not roll out within 1 s: still waiting for"),
        "{err}"
    );
    assert!(run_dirs(&out.path().join("stuck")).is_empty());
}

#[test]
fn in_a_split_run_segment_0_watches_and_the_merge_keeps_its_record() {
    let _g = serial();
    let (_rt, target) = demo();
    let out = out_dir();
    let (_server, kc) = cluster(Fault::None, out.path());
    let url = format!("http://{}/rooms", target.addr);
    let at = start_at_in(2);
    let children: Vec<_> = (0..2)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_volley"))
                .args([
                    "run",
                    "--url",
                    &url,
                    "--vus",
                    "2",
                    "--duration",
                    "2s",
                    "--interval",
                    "500ms",
                    "--kube",
                    "deployment/chat",
                    "--segment",
                ])
                .arg(format!("{i}/2"))
                .args(["--start-at", &at, "--progress", "none", "-o"])
                .arg(out.path().join(format!("seg{i}")))
                .env("NO_COLOR", "1")
                .env("KUBECONFIG", &kc)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", text(&o));
    }
    let seg0 = only_run(&out.path().join("seg0"));
    let seg1 = only_run(&out.path().join("seg1"));
    assert_watched(&seg0);
    assert!(!seg1.join("kube.jsonl").exists() && !seg1.join("kube.csv").exists());
    let problems = kube_note(&seg1)["problems"].to_string();
    assert!(
        problems.contains("--kube is off in segment 1/2: segment 0 watches the cluster"),
        "{problems}"
    );
    let merged = out.path().join("merged");
    let o = volley(&[
        "merge",
        seg0.to_str().unwrap(),
        seg1.to_str().unwrap(),
        "-o",
        merged.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_watched(&merged);
    assert_eq!(kube_note(&merged), kube_note(&seg0));
    let alone = out.path().join("alone");
    let o = volley(&[
        "merge",
        seg1.to_str().unwrap(),
        "-o",
        alone.to_str().unwrap(),
    ]);
    // Partial (segment 0 missing): exit 1, the run written all the same.
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        kube_note(&alone)["problems"]
            .to_string()
            .contains("the cluster record is missing (segment 0 missing)"),
        "{}",
        kube_note(&alone)
    );
}
