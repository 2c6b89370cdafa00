//! The scraper on real /metrics pages (the parser's fixtures, `crates/prom/tests/fixtures`).

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../prom/tests/fixtures")
            .join(name),
    )
    .unwrap()
}

/// Real pages are kept whole by the scraper: nothing left out, marked or reset, and their
/// counters give rates at the second scrape.
#[test]
fn real_pages_are_kept_whole_by_the_scraper() {
    use std::time::{Duration, Instant};
    use volley_engine::scrape::Readings;
    for name in [
        "node_exporter.prom",
        "demo_target.prom",
        "spring_boot_2.7.18_actuator.prom",
    ] {
        let text = fixture(name);
        let mut r = Readings::default();
        let t0 = Instant::now();
        let (first, notes) = r.take(&text, t0).unwrap();
        assert!(notes.is_empty(), "{name}: {notes:?}");
        let (second, notes) = r.take(&text, t0 + Duration::from_secs(1)).unwrap();
        assert!(notes.is_empty(), "{name}: {notes:?}");
        assert!(
            second.len() > first.len(),
            "{name}: rates at the second scrape"
        );
        assert!(second.iter().any(|v| v.2 && v.1 == 0.0), "{name}");
    }
}
