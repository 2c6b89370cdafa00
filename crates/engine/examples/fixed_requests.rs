//! Sends an exact number of requests with the engine alone, for instruction counts per
//! request under `valgrind --tool=callgrind` (bench/h2.sh's "callgrind" note): run it with
//! two iteration counts and divide the difference in instructions by the difference in
//! requests, so start-up cancels out.
//!
//!     cargo build --release -p volley-engine --example fixed_requests
//!     valgrind --tool=callgrind target/release/examples/fixed_requests URL VUS ITERATIONS [CONNECTIONS] [--http2]

use std::time::Duration;

use volley_engine::{EngineConfig, Event, Target, TlsOptions};
use volley_scenario::{LoadSpec, RequestSpec, Settings, Work};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let positional: Vec<&String> = args
        .iter()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let [url, vus, iterations, rest @ ..] = positional.as_slice() else {
        eprintln!("usage: fixed_requests URL VUS ITERATIONS [CONNECTIONS] [--http2]");
        std::process::exit(2);
    };
    let mut load = LoadSpec::default();
    load.set("vus", vus).unwrap();
    load.set("iterations", iterations).unwrap();
    if let Some(c) = rest.first() {
        load.set("connections", c.as_str()).unwrap();
    }
    let plan = Settings {
        load,
        ..Settings::default()
    }
    .plan(Work::Request(RequestSpec::get(url.as_str())))
    .unwrap();
    let config = EngineConfig {
        plan,
        target: Target::resolve(url).unwrap(),
        tls: TlsOptions {
            insecure: true,
            cacert: None,
            http3: false,
        },
        http2: args.iter().any(|a| a == "--http2"),
        interval: Duration::from_secs(1),
        threads: 1,
        grace: Duration::from_secs(5),
        error_stop: false,
        start_at: None,
    };
    let run = volley_engine::start(config).unwrap();
    let (mut tests, mut errors) = (0, 0);
    while let Some(event) = run.next_event() {
        match event {
            Event::Interval { sample, .. } => {
                tests += sample.counts.tests;
                errors += sample.counts.errors;
            }
            Event::End(_) => break,
            Event::PlanChanged(_) => {}
        }
    }
    println!("{tests} {errors}");
}
