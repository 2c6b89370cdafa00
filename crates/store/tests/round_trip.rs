//! Upload a directory to a real S3-compatible server (moto on loopback) and download it
//! back: every byte the same, a multipart upload included, and a hostile key refused.

#[path = "support/moto.rs"]
mod moto;

#[path = "../../cli/tests/it/parts.rs"]
mod parts;
use parts::need;

use std::path::Path;

use volley_store::{Location, Store};

fn store(m: &moto::Moto, url: &str) -> Store {
    Store::with_env(&url.parse::<Location>().unwrap(), m.env()).unwrap()
}

fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
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
fn directory_round_trip_keeps_every_byte() {
    if !need("moto") {
        return;
    }
    let m = moto::Moto::start();
    m.create_bucket("volley-results");
    let src = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(src.path().join("charts")).unwrap();
    std::fs::write(src.path().join("run.json"), br#"{"status":"complete"}"#).unwrap();
    std::fs::write(src.path().join("charts/tps.svg"), b"<svg/>").unwrap();
    std::fs::write(src.path().join("empty.txt"), b"").unwrap();
    // Larger than one part: goes up as a multipart upload of 8 MiB parts.
    let big: Vec<u8> = (0..9 * 1024 * 1024 + 17)
        .map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    std::fs::write(src.path().join("latency.hlog"), &big).unwrap();

    let up = store(&m, "s3://volley-results/team/run-1/segment-0")
        .upload_dir(src.path())
        .unwrap();
    assert_eq!(
        up.files,
        ["charts/tps.svg", "empty.txt", "latency.hlog", "run.json"]
    );
    assert_eq!(up.bytes, (big.len() + 6 + 21) as u64);

    let dest = tempfile::tempdir().unwrap();
    let down = store(&m, "s3://volley-results/team/run-1")
        .download(&dest.path().join("segments"))
        .unwrap();
    assert_eq!(
        down.files,
        [
            "segment-0/charts/tps.svg",
            "segment-0/empty.txt",
            "segment-0/latency.hlog",
            "segment-0/run.json"
        ]
    );
    assert_eq!(
        tree(&dest.path().join("segments/segment-0")),
        tree(src.path())
    );

    // Another prefix sees nothing of it.
    let other = tempfile::tempdir().unwrap();
    assert!(
        store(&m, "s3://volley-results/team/run-10")
            .download(other.path())
            .unwrap()
            .files
            .is_empty()
    );
}

#[test]
fn keys_that_climb_out_are_not_written() {
    if !need("moto") {
        return;
    }
    let m = moto::Moto::start();
    m.create_bucket("volley-results");
    let status = m.put_raw("/volley-results/run/a/../../escaped.txt", b"x");
    assert!(status.contains("200"), "{status}");
    let dest = tempfile::tempdir().unwrap();
    let target = dest.path().join("in");
    // object_store refuses the name when listing; the download stops before writing anything.
    let e = store(&m, "s3://volley-results/run")
        .download(&target)
        .unwrap_err()
        .to_string();
    assert!(e.contains("..") && e.contains("escaped.txt"), "{e}");
    assert!(!target.exists() && !dest.path().join("escaped.txt").exists());
}

#[test]
fn a_missing_bucket_is_an_error_that_names_it() {
    if !need("moto") {
        return;
    }
    let m = moto::Moto::start();
    let src = tempfile::tempdir().unwrap();
    std::fs::write(src.path().join("run.json"), b"{}").unwrap();
    let e = store(&m, "s3://no-such-bucket/x")
        .upload_dir(src.path())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("run.json") && e.contains("no-such-bucket"),
        "{e}"
    );
}
