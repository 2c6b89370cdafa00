//! `volley report` on foreign files.

use std::path::PathBuf;

use crate::support::*;

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures").join(rel)
}

#[test]
fn ngrinder_output_csv_matches_the_published_script() {
    let path = fixture("ngrinder/ngrinder_neven7_output.csv");
    let o = volley(&["report", "--format", "json", path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let got: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let want: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path.with_extension("expected.json")).unwrap()).unwrap();
    for (k, v) in want.as_object().unwrap() {
        let (a, b) = (v.as_f64().unwrap(), got["seed_suite"][k].as_f64().unwrap());
        assert!((a - b).abs() <= 0.01, "{k}: {a} vs {b}");
    }
    assert!(got["notes"][0].as_str().unwrap().contains("per-request percentiles are not available"));
}

#[test]
fn unknown_file_lists_what_volley_reads() {
    let dir = out_dir();
    let p = dir.path().join("x.txt");
    std::fs::write(&p, "hello\n").unwrap();
    let o = volley(&["report", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nGrinder output.csv"), "{}", text(&o));
}
