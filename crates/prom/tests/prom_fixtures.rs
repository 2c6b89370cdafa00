//! The exposition parser on real output (see `fixtures/SOURCES.md`).

use volley_prom::{MetricType, parse};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name),
    )
    .unwrap()
}

fn sample_lines(text: &str) -> usize {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .count()
}

#[test]
fn node_exporter_output_parses_completely() {
    let text = fixture("node_exporter.prom");
    let e = parse(&text);
    assert!(
        e.errors.is_empty(),
        "{:?}",
        &e.errors[..e.errors.len().min(5)]
    );
    assert_eq!(e.samples.len(), sample_lines(&text));
    assert!(e.samples.len() > 500);
    assert_eq!(e.type_of("node_cpu_seconds_total"), MetricType::Counter);
    assert_eq!(e.type_of("go_gc_duration_seconds_sum"), MetricType::Summary);
    assert!(e.is_cumulative("node_network_receive_bytes_total"));
    let cpu = e
        .samples
        .iter()
        .find(|s| s.name == "node_cpu_seconds_total")
        .unwrap();
    assert!(cpu.labels.iter().any(|(k, _)| k == "mode"));
}

#[test]
fn the_demo_targets_spring_style_output_parses_completely() {
    let text = fixture("demo_target.prom");
    let e = parse(&text);
    assert!(e.errors.is_empty(), "{:?}", e.errors);
    assert_eq!(e.samples.len(), sample_lines(&text));
    let pending = e
        .samples
        .iter()
        .find(|s| s.name == "hikaricp_connections_pending")
        .unwrap();
    assert_eq!(
        pending.labels,
        vec![("pool".to_string(), "HikariPool-1".to_string())]
    );
    let templated = e
        .samples
        .iter()
        .filter(|s| {
            s.labels
                .iter()
                .any(|(k, v)| k == "uri" && v == "/api/pair-room/{code}")
        })
        .count();
    assert!(templated > 0);
    assert_eq!(
        e.type_of("http_server_requests_seconds_bucket"),
        MetricType::Histogram
    );
}

#[test]
fn a_real_spring_boot_2_actuator_output_parses_completely() {
    let text = fixture("spring_boot_2.7.18_actuator.prom");
    let e = parse(&text);
    assert!(e.errors.is_empty(), "{:?}", e.errors);
    assert_eq!(e.samples.len(), sample_lines(&text));
    // Spring Boot 2 writes a trailing comma in every label set.
    assert!(text.contains(",} "));
    let pending = e
        .samples
        .iter()
        .find(|s| s.name == "hikaricp_connections_pending")
        .unwrap();
    assert_eq!(
        pending.labels,
        vec![("pool".to_string(), "HikariPool-1".to_string())]
    );
    let owners = e.samples.iter().find(|s| {
        s.name == "http_server_requests_seconds_count"
            && s.labels
                .iter()
                .any(|(k, v)| k == "uri" && v == "/owners/{ownerId}")
    });
    assert!(
        owners.is_some(),
        "the templated uri label survives the braces"
    );
    assert!(e.is_cumulative("http_server_requests_seconds_count"));
    assert_eq!(e.type_of("jvm_memory_used_bytes"), MetricType::Gauge);
}
