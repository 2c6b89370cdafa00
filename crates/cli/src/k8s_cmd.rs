//! `volley k8s`: a plan as the manifests of an Indexed Job (`manifest`), and its segments'
//! run directories back from object storage (`collect`). The objects are built by
//! `volley-k8s`, the bytes moved by `volley-store`; this module reads flags and files.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use jiff::Timestamp;
use volley_k8s::{Credentials, JobSpec, Resources, Spread};
use volley_store::Store;

use crate::args::{CollectArgs, K8sCommand, ManifestArgs, RunLine, SpreadArg};
use crate::resolve::{Runner, resolve};

/// Flags the manifest sets for every pod, which the run flags may not set again: their ids,
/// as written, and why.
const SET_BY_MANIFEST: &[(&str, &str, &str)] = &[
    (
        "segment",
        "--segment",
        "each pod runs the segment of its completion index",
    ),
    (
        "segments",
        "--segments",
        "give it before `--`: it is the manifest's own flag",
    ),
    (
        "start_at",
        "--start-at",
        "the manifest sets it from --start-in",
    ),
    (
        "run_id",
        "--run-id",
        "give it before `--`: it names the Job, the results' folder and every segment",
    ),
    (
        "upload",
        "--upload",
        "the manifest sets it from --bucket and the run id",
    ),
    (
        "output",
        "--output",
        "pods write to their own /runs and upload it",
    ),
    (
        "progress",
        "--progress",
        "pods log a plain line per interval",
    ),
];

pub(crate) fn k8s(command: K8sCommand) -> Result<ExitCode> {
    match command {
        K8sCommand::Manifest(a) => manifest(*a),
        K8sCommand::Collect(a) => collect(a),
    }
}

fn manifest(a: ManifestArgs) -> Result<ExitCode> {
    let line = (a.scenario.iter().map(|p| p.display().to_string())).chain(a.run.iter().cloned());
    let (run, given) = RunLine::parse_given(line)?;
    if let Some((_, set, why)) = SET_BY_MANIFEST
        .iter()
        .find(|(id, _, _)| given.iter().any(|g| g == id))
    {
        bail!("{set} after `--`: leave it out, {why}");
    }
    if let (None, Some(file)) = (&a.scenario, &run.scenario) {
        let file = file.display();
        bail!(
            "`{file}` after `--`: give the scenario file before `--` (volley k8s manifest {file} --segments ... -- FLAGS)"
        );
    }
    // Before the plan is checked for that many pods.
    volley_k8s::check_segments(a.segments)?;
    // Everything `volley run` checks, for the pods: each runs one of the segments, and the
    // target's name and the scenario's `env.` values are theirs.
    let checked = resolve(
        &run,
        Runner::Pods {
            segments: u64::from(a.segments),
            env_secret: a.env_secret.is_some(),
        },
    )?;
    let files = match checked.plan.scenario() {
        Some(sc) => {
            let data: Vec<PathBuf> = sc.data.iter().map(|f| f.file.clone()).collect();
            volley_k8s::bundle(&sc.file, &data)?
        }
        None => Vec::new(),
    };
    let now = Timestamp::now();
    let start_in = a.start_in;
    let start_at = volley_k8s::start_at(now, start_in)?;
    let name = checked.name();
    let run_id = match &a.run_id {
        Some(id) => {
            volley_k8s::validate_run_id(id)?;
            id.clone()
        }
        None => volley_k8s::run_id_from(&name, now),
    };
    let mut env = Vec::new();
    if let Some(r) = &a.region {
        env.push(("AWS_REGION".to_string(), r.clone()));
    }
    if let Some(e) = &a.endpoint {
        if !(e.starts_with("http://") || e.starts_with("https://")) {
            bail!(
                "--endpoint {e}: give a URL, e.g. https://s3.example.com or http://minio.minio.svc:9000"
            );
        }
        // The endpoint is an env value of the Job spec, as readable as its args: a user and
        // password in it are refused as a credential in the run flags is.
        let authority = e
            .split_once("://")
            .map_or("", |(_, rest)| rest)
            .split(['/', '?', '#'])
            .next()
            .unwrap_or_default();
        if let Some((_, host)) = authority.rsplit_once('@') {
            let scheme = e.split_once("://").map_or("", |(s, _)| s);
            bail!(
                "--endpoint {scheme}://***@{host}: a user and password in the endpoint would put a credential into the Job spec in clear; give --endpoint {scheme}://{host} and keep the S3 keys in the Secret the pods read them from (--secret NAME, keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; or --service-account)"
            );
        }
        env.push(("AWS_ENDPOINT_URL".to_string(), e.clone()));
    }
    if a.allow_http {
        env.push(("AWS_ALLOW_HTTP".to_string(), "true".to_string()));
    }
    // The pods' args are the user's words after `--`, copied verbatim (the one place the raw
    // command line is read: the flags themselves were read from `run` above). They sit in the
    // Job spec, readable by whoever can read jobs and pods, kept in etcd, and printed here: a
    // credential in them is refused, with where to put it instead.
    let masked = volley_scenario::secret::mask_args(a.run.iter().cloned());
    if let Some((_, shown)) = a.run.iter().zip(&masked).find(|(a, m)| a != m) {
        bail!(
            "`{}` would put a credential into the Job spec in clear: put it in a Kubernetes Secret and refer to it from a scenario (`Authorization: Bearer {{{{ env.TOKEN }}}}`, an --out URL without its password) run with --env-secret NAME, whose keys become the pods' environment",
            shown
        );
    }
    let spec = JobSpec {
        run_id: run_id.clone(),
        segments: a.segments,
        image: a.image.clone(),
        image_pull_policy: a.image_pull_policy.clone(),
        namespace: a.namespace.clone(),
        scenario: files.first().map(|f| f.path.clone()),
        files,
        run_args: a.run.clone(),
        start_at,
        planned: checked.plan.load.planned(),
        results: a.bucket.clone(),
        credentials: match &a.service_account {
            Some(sa) => Credentials::ServiceAccount(sa.clone()),
            None => Credentials::Secret(a.secret.clone()),
        },
        env,
        env_secret: a.env_secret.clone(),
        resources: Resources {
            cpu: a.cpu.clone(),
            memory: a.memory.clone(),
        },
        spread: match a.spread {
            SpreadArg::Hard => Spread::Hard,
            SpreadArg::Soft => Spread::Soft,
        },
        ttl_after_finished: if a.keep_finished { None } else { Some(a.ttl) },
        host_network: a.host_network,
        // The pods' --kube (or the scenario's `kube:`): segment 0's pod watches with the
        // pods' service account, which the manifests let read each namespace.
        watched: checked
            .kube
            .as_ref()
            .map(|k| k.specs.iter().map(|s| s.namespace.clone()).collect())
            .unwrap_or_default(),
    };
    let m = volley_k8s::manifests(&spec, now)?;
    let results = a.bucket.join(&run_id);
    if a.output == "-" {
        std::io::stdout().write_all(m.to_yaml().as_bytes())?;
    } else {
        for p in m.write_dir(Path::new(&a.output))? {
            eprintln!("volley: wrote {}", p.display());
        }
    }
    eprintln!(
        "volley: run {run_id}: {} segments start at {} (in {}s); apply it now ({}); then `volley k8s collect {results} -o runs/{run_id}`",
        a.segments,
        start_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        start_in.as_secs(),
        if a.output == "-" {
            "pipe this output to `kubectl apply -f -`".to_string()
        } else {
            format!("`kubectl apply -f {}`", a.output)
        },
    );
    Ok(ExitCode::SUCCESS)
}

/// The host of a URL, for a run id when the plan has no name.
fn collect(a: CollectArgs) -> Result<ExitCode> {
    let segments_dir = a.output.join("segments");
    if segments_dir.exists() {
        bail!(
            "{} exists already: collect into a new directory, so that segments of two runs are never mixed",
            segments_dir.display()
        );
    }
    let store = Store::from_env(&a.run)?;
    let got = store.download(&segments_dir)?;
    if got.files.is_empty() {
        bail!(
            "nothing under {}/: check the run id (the manifest printed it) and that the pods have finished",
            a.run
        );
    }
    let segments = segment_dirs(&segments_dir)?;
    eprintln!(
        "volley: downloaded {} files ({} bytes) from {}/ into {}",
        got.files.len(),
        got.bytes,
        a.run,
        segments_dir.display()
    );
    for (index, dir) in &segments {
        let complete = dir.join("run.json").is_file();
        eprintln!(
            "  segment {index}: {}{}",
            dir.display(),
            if complete {
                ""
            } else {
                " (no run.json: the pod did not finish its run)"
            }
        );
    }
    // The whole folder: a segment whose pod left no run directory is then reported missing
    // (the merged run is `partial`) rather than stopping the merge.
    let merged = a.output.join("merged");
    eprintln!(
        "volley: merging them (volley merge {} -o {})",
        segments_dir.display(),
        merged.display()
    );
    crate::merge_cmd::merge_and_report(
        &[segments_dir],
        &merged,
        &volley_merge::MergeOptions::default(),
    )
}

/// The `segment-<i>` folders under `dir`, by index; anything else there is an error (the
/// prefix holds something that is not this run's segments).
fn segment_dirs(dir: &Path) -> Result<Vec<(u32, PathBuf)>> {
    let mut out = Vec::new();
    for entry in
        std::fs::read_dir(dir).with_context(|| format!("{}: cannot read it", dir.display()))?
    {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let index = name
            .strip_prefix("segment-")
            .and_then(|i| i.parse::<u32>().ok())
            .filter(|_| entry.path().is_dir());
        match index {
            Some(i) => out.push((i, entry.path())),
            None => bail!(
                "{}: not a segment-<i> folder; the prefix holds more than one run's segments",
                entry.path().display()
            ),
        }
    }
    out.sort();
    Ok(out)
}
