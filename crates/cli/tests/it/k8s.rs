//! `volley k8s`: the generated manifests checked against the official Kubernetes OpenAPI
//! schemas of 1.29-1.37 (`kubernetes-validate --strict`, offline; scripts/test.sh installs
//! it), and a real run uploaded with `volley run --upload` to a real S3-compatible server
//! (moto on loopback) and brought back by `volley k8s collect`, byte for byte.
//! Server-side validation by a real kube-apiserver is scripts/k8s-apiserver-check.sh.

#[path = "../../../store/tests/support/moto.rs"]
#[allow(dead_code)]
mod moto;

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{TestServer, need, only_run, out_dir, serial, text};

/// The Kubernetes versions users run that the schemas cover.
const VERSIONS: &[&str] = &[
    "1.29.0", "1.30.0", "1.31.0", "1.32.0", "1.33.0", "1.34.0", "1.35.0", "1.36.0", "1.37.0",
];

fn volley_env(args: &[&str], env: &[(String, String)]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_volley"))
        .args(args)
        .envs(env.iter().cloned())
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// `kubernetes-validate --strict` (unknown fields refused) for every version; its output
/// when one fails.
fn schema_check(file: &Path) -> Result<(), String> {
    for v in VERSIONS {
        let out = Command::new("kubernetes-validate")
            .args(["--strict", "-k", v, "--no-warn"])
            .arg(file)
            .output()
            .unwrap_or_else(|e| panic!("kubernetes-validate is needed for this test ({e}): run scripts/test.sh, which installs it into target/tools/venv"));
        if !out.status.success() {
            return Err(format!(
                "{v}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            said.matches("passed for resource").count(),
            1,
            "{v}: {said}"
        );
    }
    Ok(())
}

fn manifest(args: &[&str]) -> (PathBuf, tempfile::TempDir) {
    let out = out_dir();
    let dir = out.path().join("manifests");
    let mut all = vec!["k8s", "manifest", "-o", dir.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = crate::support::volley(&all);
    assert!(o.status.success(), "{}", text(&o));
    (dir, out)
}

#[test]
fn every_manifest_passes_the_official_schemas() {
    if !need("kubernetes-validate") {
        return;
    }
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let chat = examples.join("chat.yaml");
    let plans: Vec<Vec<String>> = vec![
        // A scenario with a CSV feeder, keys in a Secret.
        vec![
            chat.display().to_string(),
            "--segments".into(),
            "4".into(),
            "--image".into(),
            "volley:test".into(),
            "--bucket".into(),
            "s3://load-results/volley".into(),
            "--region".into(),
            "eu-west-1".into(),
            "-n".into(),
            "load".into(),
        ],
        // One URL, flags only; a service account; soft spread; an S3-compatible endpoint; the
        // node's network.
        [
            "--segments",
            "2",
            "--image",
            "volley:test",
            "--bucket",
            "s3://load-results",
            "--service-account",
            "volley-results",
            "--spread",
            "soft",
            "--endpoint",
            "http://minio.minio.svc:9000",
            "--allow-http",
            "--keep-finished",
            "--cpu",
            "1500m",
            "--memory",
            "512Mi",
            "--image-pull-policy",
            "Always",
            "--host-network",
            "--",
            "--url",
            "http://api.internal:8080/rooms",
            "--rate",
            "500",
            "--duration",
            "5m",
            "--max-vus",
            "100",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        // --kube in the pods' flags: a ServiceAccount, and a Role and RoleBinding in each
        // namespace watched.
        [
            "--segments",
            "2",
            "--image",
            "volley:test",
            "--bucket",
            "s3://load-results",
            "-n",
            "load",
            "--",
            "--url",
            "http://chat.shop.svc:8080/rooms",
            "--vus",
            "10",
            "--duration",
            "1m",
            "--kube",
            "shop/deployment/chat",
            "--kube",
            "pods/app=cart",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
    ];
    for plan in plans {
        let args: Vec<&str> = plan.iter().map(String::as_str).collect();
        let (dir, _keep) = manifest(&args);
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        let want: &[&str] = if plan.iter().any(|a| a == "--kube") {
            &[
                "configmap.yaml",
                "job.yaml",
                "role-load.yaml",
                "role-shop.yaml",
                "rolebinding-load.yaml",
                "rolebinding-shop.yaml",
                "serviceaccount.yaml",
            ]
        } else {
            &["configmap.yaml", "job.yaml"]
        };
        assert_eq!(files, want, "{plan:?}");
        for file in &files {
            schema_check(&dir.join(file)).unwrap_or_else(|e| panic!("{file} of {plan:?}: {e}"));
        }
    }
}

#[test]
fn the_scenario_and_its_data_file_are_in_the_config_map() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let (dir, _keep) = manifest(&[
        examples.join("chat.yaml").to_str().unwrap(),
        "--segments",
        "3",
        "--image",
        "volley:test",
        "--bucket",
        "s3://load-results/volley",
        "--run-id",
        "chat-1",
        "--",
        "--vus",
        "30",
        "--duration",
        "1m",
    ]);
    let cm: serde_json::Value =
        serde_saphyr::from_str(&std::fs::read_to_string(dir.join("configmap.yaml")).unwrap())
            .unwrap();
    assert_eq!(
        cm["data"]["users.csv"].as_str().unwrap(),
        std::fs::read_to_string(examples.join("users.csv")).unwrap()
    );
    assert_eq!(
        cm["data"]["chat.yaml"].as_str().unwrap(),
        std::fs::read_to_string(examples.join("chat.yaml")).unwrap()
    );
    let job: serde_json::Value =
        serde_saphyr::from_str(&std::fs::read_to_string(dir.join("job.yaml")).unwrap()).unwrap();
    assert_eq!(job["metadata"]["name"], "volley-chat-1");
    let args = &job["spec"]["template"]["spec"]["containers"][0]["args"];
    assert_eq!(args[1], "/plan/chat.yaml");
    assert_eq!(args[2], "--vus");
    assert!(
        args.as_array()
            .unwrap()
            .iter()
            .any(|a| a == "s3://load-results/volley/chat-1/segment-$(JOB_COMPLETION_INDEX)"),
        "{args}"
    );
}

#[test]
fn the_schema_check_can_fail() {
    if !need("kubernetes-validate") {
        return;
    }
    let (dir, _keep) = manifest(&[
        "--segments",
        "2",
        "--image",
        "volley:test",
        "--bucket",
        "s3://load-results",
        "--",
        "--url",
        "http://api.internal/",
        "--vus",
        "2",
        "--duration",
        "10s",
    ]);
    let job = std::fs::read_to_string(dir.join("job.yaml")).unwrap();
    for (from, to) in [
        (
            "completionMode: Indexed",
            "completionMode: Indexed\n  completionz: 2",
        ),
        ("backoffLimitPerIndex: 0", "backoffLimitPerIndex: none"),
    ] {
        assert!(job.contains(from));
        let broken = dir.join("broken.yaml");
        std::fs::write(&broken, job.replacen(from, to, 1)).unwrap();
        let e = schema_check(&broken).expect_err("a broken Job must not pass");
        assert!(e.contains("did not validate"), "{e}");
    }
}

#[test]
fn flags_the_manifest_sets_or_the_pods_cannot_use_are_refused() {
    let base = [
        "k8s",
        "manifest",
        "--segments",
        "2",
        "--image",
        "volley:test",
        "--bucket",
        "s3://load-results",
        "--",
    ];
    for (extra, says) in [
        (
            &["--url", "http://x/", "--output", "runs"][..],
            "--output after `--`",
        ),
        (
            &["--url", "http://x/", "--segment", "0/2"][..],
            "--segment after `--`",
        ),
        (
            &["--url", "http://x/", "--run-id", "r1"][..],
            "--run-id after `--`: leave it out, give it before `--`",
        ),
        (
            &["--url", "http://x/", "--body-file", "b.json"][..],
            "--body-file b.json: the pods cannot read files from this machine",
        ),
        (
            &["examples/chat.yaml", "--vus", "2"][..],
            "give the scenario file before `--`",
        ),
        (&["--url", "http://x/", "--vus", "0"][..], "--vus"),
    ] {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        let o = crate::support::volley(&args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", text(&o));
        assert!(text(&o).contains(says), "{extra:?}: {}", text(&o));
    }
    let o = crate::support::volley(&[
        "k8s",
        "manifest",
        "--segments",
        "2",
        "--image",
        "volley:test",
        "--bucket",
        "https://bucket/x",
        "--",
        "--url",
        "http://x/",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("s3://BUCKET/PREFIX"), "{}", text(&o));
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push((
                    p.strip_prefix(dir).unwrap().display().to_string(),
                    std::fs::read(&p).unwrap(),
                ));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn runs_upload_and_collect_brings_them_back_byte_for_byte() {
    if !need("moto") {
        return;
    }
    let _serial = serial();
    let target = TestServer::start();
    let s3 = moto::Moto::start();
    s3.create_bucket("volley-results");
    let env = s3.env();
    let url = target.url("/ok");
    // Two segments of one run, as two pods run them: started together, each uploading.
    let at = crate::support::start_at_in(2);
    let outs: Vec<_> = (0..2).map(|_| out_dir()).collect();
    let children: Vec<_> = (0..2)
        .map(|i| {
            let dest = format!("s3://volley-results/team/run-7/segment-{i}");
            let out = outs[i].path().to_str().unwrap();
            let args = [
                "run",
                "--url",
                &url,
                "--vus",
                "2",
                "--duration",
                "2s",
                "--progress",
                "none",
                "-o",
                out,
                "--upload",
                &dest,
                "--segment",
                &format!("{i}/2"),
                "--start-at",
                &at,
            ];
            let mut child = Command::new(env!("CARGO_BIN_EXE_volley"));
            child
                .args(args)
                .envs(env.iter().cloned())
                .env("NO_COLOR", "1")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            (dest, child.spawn().unwrap())
        })
        .collect();
    let mut runs = Vec::new();
    for ((dest, child), out) in children.into_iter().zip(&outs) {
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", text(&o));
        assert!(text(&o).contains(&format!("to {dest}/")), "{}", text(&o));
        runs.push((only_run(out.path()), ()));
    }
    let got = out_dir();
    let o = volley_env(
        &[
            "k8s",
            "collect",
            "s3://volley-results/team/run-7",
            "-o",
            got.path().to_str().unwrap(),
        ],
        &env,
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("volley merge"), "{}", text(&o));
    // Collect merges them: every request of both segments, in one run directory.
    let merged = volley_formats::RunData::read(&got.path().join("merged")).unwrap();
    let sent: u64 = runs
        .iter()
        .map(|(r, _)| volley_formats::RunData::read(r).unwrap().series.tests())
        .sum();
    assert_eq!(merged.series.tests(), sent);
    assert_eq!(merged.series.tests(), target.seen());
    assert_eq!(merged.meta.merged.as_ref().unwrap().segments.len(), 2);
    for (i, (run, _keep)) in runs.iter().enumerate() {
        let back = got.path().join(format!("segments/segment-{i}"));
        let (a, b) = (files(run), files(&back));
        assert!(
            a.iter().any(|(n, _)| n == "run.json") && a.iter().any(|(n, _)| n == "latency.hlog"),
            "{a:?}"
        );
        assert_eq!(
            a.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            b.iter().map(|(n, _)| n).collect::<Vec<_>>()
        );
        assert!(a == b, "segment {i}: the bytes differ");
    }
    // A second collect into the same place would mix runs: refused.
    let o = volley_env(
        &[
            "k8s",
            "collect",
            "s3://volley-results/team/run-7",
            "-o",
            got.path().to_str().unwrap(),
        ],
        &env,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("exists already"), "{}", text(&o));
    // Nothing under a wrong run id: said plainly.
    let o = volley_env(
        &[
            "k8s",
            "collect",
            "s3://volley-results/team/run-8",
            "-o",
            out_dir().path().join("x").to_str().unwrap(),
        ],
        &env,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("nothing under s3://volley-results/team/run-8/"),
        "{}",
        text(&o)
    );
}

/// A collect that fails says each cause once (object_store's errors print their source and
/// also return it, which repeated the chain at every level), and a typo in the run flags of
/// `volley k8s manifest` is clap's message once, after one `error:`.
#[test]
fn a_failed_collect_and_a_mistyped_run_flag_say_each_thing_once() {
    // Nothing listens on port 9 of loopback: the listing fails (after object_store's retries).
    let env = [
        ("AWS_ENDPOINT_URL", "http://127.0.0.1:9"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_REGION", "us-east-1"),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()));
    let dir = out_dir();
    let o = volley_env(
        &[
            "k8s",
            "collect",
            "s3://volley-results/team/run-9",
            "-o",
            dir.path().join("x").to_str().unwrap(),
        ],
        &env,
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with("volley: error: listing s3://volley-results/team/run-9: "),
        "{err}"
    );
    for once in ["Error performing list request", "Connection refused"] {
        assert_eq!(err.matches(once).count(), 1, "`{once}` once: {err}");
    }

    let o = crate::support::volley(&[
        "k8s",
        "manifest",
        "--segments",
        "2",
        "--image",
        "volley:test",
        "--bucket",
        "s3://load-results",
        "--",
        "--url",
        "http://127.0.0.1:9/rooms",
        "--vu",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with("volley: error: unexpected argument '--vu' found")
            && err.matches("error:").count() == 1
            && err.contains("a similar argument exists: '--vus'")
            && err.contains("try 'volley run --help'"),
        "{err}"
    );
}

/// The manifest checks the run flags with the same resolver as `volley run`: whatever `run`
/// refuses before any load (the URL is a closed port: nothing here reaches the network),
/// the manifest refuses too, with the same words, for the pods' segments.
#[test]
fn the_manifest_refuses_what_run_refuses() {
    let url = "http://127.0.0.1:9/rooms";
    let manifest = |segments: &str, flags: &[&str]| {
        let mut args = vec![
            "k8s",
            "manifest",
            "--segments",
            segments,
            "--image",
            "volley:test",
            "--bucket",
            "s3://load-results",
            "--",
        ];
        args.extend_from_slice(flags);
        crate::support::volley(&args)
    };
    let run = |flags: &[&str]| {
        let mut args = vec!["run"];
        args.extend_from_slice(flags);
        crate::support::volley(&args)
    };
    // (run flags, the segment `run` is given for the same plan, manifest pods, what both say)
    for (flags, says) in [
        (
            &["--vus", "2", "--duration", "2s", "--out", "nope=http://x"][..],
            "unknown kind `nope`",
        ),
        (
            &[
                "--vus",
                "2",
                "--duration",
                "2s",
                "--out",
                "otlp=http://[::1",
            ][..],
            "otlp",
        ),
        (
            &["--vus", "2", "--duration", "2s", "--grace", "soon"][..],
            "--grace",
        ),
        (
            &["--vus", "2", "--duration", "2s", "--source-addrs", "here"][..],
            "not an IP address",
        ),
        (
            &["--vus", "2", "--duration", "2s", "--dashboard=nowhere"][..],
            "nowhere",
        ),
        (
            &["--vus", "2", "--duration", "2s", "--threads", "0"][..],
            "--threads",
        ),
        (
            &["--vus", "2", "--duration", "2s", "--interval", "10ms"][..],
            "--interval",
        ),
    ] {
        let mut with_url = vec!["--url", url];
        with_url.extend_from_slice(flags);
        let r = run(&with_url);
        assert_eq!(r.status.code(), Some(2), "run {flags:?}: {}", text(&r));
        assert!(text(&r).contains(says), "run {flags:?}: {}", text(&r));
        let m = manifest("2", &with_url);
        assert_eq!(m.status.code(), Some(2), "manifest {flags:?}: {}", text(&m));
        assert!(text(&m).contains(says), "manifest {flags:?}: {}", text(&m));
    }
    // Segments: what one process refuses for its segment, the manifest refuses for its pods.
    let base = ["--url", url, "--vus", "4", "--duration", "2s"];
    for (segment, pods, extra, says) in [
        ("7/8", "8", &[][..], "8 segments cannot share 4 VUs"),
        (
            "1/2",
            "2",
            &["--repeat", "2"][..],
            "--repeat and a split run",
        ),
    ] {
        let flags: Vec<&str> = base.iter().chain(extra).copied().collect();
        let mut one = flags.clone();
        one.extend(["--segment", segment]);
        for o in [run(&one), manifest(pods, &flags)] {
            assert_eq!(o.status.code(), Some(2), "{segment}: {}", text(&o));
            assert!(text(&o).contains(says), "{segment}: {}", text(&o));
        }
    }
    // And a plan the pods can run is written (the same flags with 2 pods and 4 VUs).
    let m = manifest("2", &base);
    assert_eq!(m.status.code(), Some(0), "{}", text(&m));
}

/// `--env-secret NAME`: the pods take the scenario's `env.` values from the Secret, so the
/// manifest does not ask for them in this shell; without it, it says to give one.
#[test]
fn env_values_come_from_the_secret_not_this_shell() {
    let dir = out_dir();
    let file = dir.path().join("flow.yaml");
    std::fs::write(
        &file,
        "target: http://127.0.0.1:9\nload: { vus: 4, duration: 1m }\nsteps:\n  - request: GET /rooms\n    headers: { Authorization: \"Bearer {{ env.VOLLEY_TEST_UNSET_SESSION }}\" }\n",
    )
    .unwrap();
    let file = file.to_str().unwrap();
    let args = |secret: bool| {
        let mut a = vec![
            "k8s",
            "manifest",
            file,
            "--segments",
            "2",
            "--image",
            "r/volley:0.1.0",
            "--bucket",
            "s3://load-results/p",
        ];
        if secret {
            a.extend_from_slice(&["--env-secret", "s"]);
        }
        a.extend_from_slice(&["--", "--vus", "4", "--duration", "1m"]);
        a
    };
    let o = crate::support::volley(&args(true));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("secretRef"), "{}", text(&o));
    let o = crate::support::volley(&args(false));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("env.VOLLEY_TEST_UNSET_SESSION") && text(&o).contains("--env-secret"),
        "{}",
        text(&o)
    );
    // `volley run` itself still needs the value here.
    let o = crate::support::volley(&["run", file, "--duration", "1s"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("is not set"), "{}", text(&o));
}

/// Kubernetes' own expansion of a container's args and env values (scripts/k8s-expand: the
/// kubelet's `third_party/forked/golang/expansion`, v1.37.2, built by scripts/test.sh into
/// target/tools/k8s-expand: the test calls `need("k8s-expand")` first), run over `container`
/// with the `valueFrom` variables `given`.
fn kubelet_expands(container: &serde_json::Value, given: &[&str]) -> serde_json::Value {
    use std::io::Write as _;
    let tool = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/tools/k8s-expand");
    let mut child = Command::new(&tool)
        .args(given)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(container.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every flag reaches the pod as typed: the pods' args and env, expanded by Kubernetes' own
/// rules, are the flags given (`pa$$word` stayed `pa$word` when only `$(` was escaped), and
/// only the pod's index is filled in.
#[test]
fn every_arg_reaches_the_pod_as_typed() {
    if !need("k8s-expand") {
        return;
    }
    let typed = [
        "--url",
        "http://api.internal:8080/rooms?q=pa$$word&x=$(HOME)&y=$",
        "--vus",
        "4",
        "--duration",
        "1m",
        "-H",
        "X-Note: a=$$b $$(JOB_COMPLETION_INDEX) $(JOB_COMPLETION_INDEX) $PATH $( $$$",
    ];
    let endpoint = "http://minio.minio.svc:9000/$$a$(HOME)";
    let mut args = vec![
        "--segments",
        "2",
        "--image",
        "volley:test",
        "--bucket",
        "s3://load-results/p",
        "--run-id",
        "dollars",
        "--endpoint",
        endpoint,
        "--",
    ];
    args.extend_from_slice(&typed);
    let (dir, _keep) = manifest(&args);
    let job: serde_json::Value =
        serde_saphyr::from_str(&std::fs::read_to_string(dir.join("job.yaml")).unwrap()).unwrap();
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    let pod = kubelet_expands(
        container,
        &[
            "JOB_COMPLETION_INDEX=1",
            "AWS_ACCESS_KEY_ID=k",
            "AWS_SECRET_ACCESS_KEY=s",
            "AWS_SESSION_TOKEN=",
        ],
    );
    let got: Vec<&str> = pod["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(got[0], "run");
    assert_eq!(got[1..=typed.len()], typed, "{pod}");
    let rest = &got[typed.len() + 1..];
    assert_eq!(rest[..2], ["--segment", "1/2"], "{pod}");
    assert_eq!(
        rest.last().copied(),
        Some("s3://load-results/p/dollars/segment-1"),
        "{pod}"
    );
    assert_eq!(pod["env"]["AWS_ENDPOINT_URL"], endpoint, "{pod}");
}
