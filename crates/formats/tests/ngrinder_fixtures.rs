//! Every nGrinder fixture, read and summarised, matches the published script's answers
//! (`*.expected.json`, computed by the seed's pandas script) to 0.01.

use volley_stats::{SeedSuite, SuiteOptions};

mod common;
use common::fixtures;

#[test]
fn seed_suite_matches_every_expected_json() {
    let dir = fixtures().join("ngrinder");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).expect("fixtures directory") {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("csv") {
            continue;
        }
        let expected_path = path.with_extension("expected.json");
        let expected: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&expected_path).unwrap()).unwrap();
        let file = volley_formats::ngrinder::read(&path).unwrap();
        let suite =
            serde_json::to_value(SeedSuite::compute(&file.total, SuiteOptions::default())).unwrap();
        for (key, want) in expected.as_object().unwrap() {
            let got = &suite[key];
            match (want.as_f64(), got.as_f64()) {
                (Some(w), Some(g)) => assert!(
                    (w - g).abs() <= 0.01,
                    "{}: {key}: expected {w}, got {g}",
                    path.display()
                ),
                _ => assert_eq!(want, got, "{}: {key}", path.display()),
            }
        }
        checked += 1;
    }
    assert!(
        checked >= 15,
        "only {checked} fixtures found in {}",
        dir.display()
    );
}
