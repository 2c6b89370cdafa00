//! `volley check`: validate a scenario without load, then run one iteration with one VU
//! and show each request and response briefly (an HTTP debug mode).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use volley_engine::{EngineConfig, Target, TlsOptions, Trace};
use volley_scenario::scenario::Node;
use volley_scenario::{LoadSpec, Scenario, Settings, Work};

use volley_report::terminal_safe;

use crate::args::CheckArgs;
use crate::resolve::load_scenario;

pub(crate) fn check(a: CheckArgs) -> Result<ExitCode> {
    let junit = |invalid: Option<&str>, traces: &[Trace]| match &a.junit {
        Some(path) => crate::ci::write_junit(
            path,
            &[crate::ci::check_suite(&a.scenario, invalid, traces)],
        ),
        None => Ok(()),
    };
    let sc = match load_scenario(&a.scenario) {
        Ok(sc) => sc,
        Err(e) => {
            junit(Some(&crate::error_text(&e)), &[])?;
            return Err(e);
        }
    };
    println!("{}: valid", a.scenario.display());
    print_outline(&sc);
    if a.no_request {
        junit(None, &[])?;
        return Ok(ExitCode::SUCCESS);
    }
    // The file's settings with one VU running one iteration.
    let flags = Settings {
        target: a.url.clone(),
        load: LoadSpec {
            vus: Some(1),
            iterations: Some(1),
            ..LoadSpec::default()
        },
        ..Settings::default()
    };
    let url = flags
        .target
        .clone()
        .or_else(|| sc.settings.target.clone())
        .unwrap_or_default();
    // A file of populations: one iteration of each, in order.
    let flows: Vec<(Option<String>, Arc<Scenario>)> = if sc.populations.is_empty() {
        vec![(None, Arc::new(sc))]
    } else {
        sc.populations
            .iter()
            .map(|p| (Some(p.name.clone()), p.scenario.clone()))
            .collect()
    };
    let target = Target::resolve(&url)?;
    let mut traces = Vec::new();
    for (i, (name, flow)) in flows.into_iter().enumerate() {
        let settings = flags.clone().merge(&flow.settings);
        let plan = settings.plan(Work::Scenario(flow))?;
        let config = EngineConfig {
            plan,
            target: target.clone(),
            tls: TlsOptions {
                insecure: a.insecure,
                cacert: a.cacert.clone(),
                http3: false,
            },
            http2: false,
            interval: Duration::from_secs(1),
            threads: 1,
            grace: Duration::ZERO,
            error_stop: false,
            start_at: None,
        };
        if i == 0 {
            volley_engine::preflight(&config.target, &config.tls, config.timeout_for_preflight())?;
        }
        let of = name
            .map(|n| format!(" of scenario `{n}`"))
            .unwrap_or_default();
        println!(
            "\nOne iteration{of}, one VU, against {}:\n",
            config.target.uri
        );
        let these = volley_engine::check_once(&config)?;
        for t in &these {
            print_trace(t);
        }
        traces.extend(these);
    }
    let failed = traces.iter().filter(|t| !t.passed).count();
    println!(
        "{}, {failed} failed",
        volley_scenario::words::counted(traces.len(), "request")
    );
    junit(None, &traces)?;
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn print_outline(sc: &Scenario) {
    let n = sc.step_info.len();
    println!(
        "  target {}, {n} step{}",
        sc.target(),
        if n == 1 { "" } else { "s" }
    );
    outline(&sc.steps, sc, 1);
    for p in &sc.populations {
        let load = p
            .scenario
            .settings
            .load
            .resolve()
            .map(|l| l.kind())
            .unwrap_or("?");
        println!(
            "  scenario `{}` ({load} model, starts at {} s):",
            p.name,
            p.start.as_secs_f64()
        );
        outline(&p.scenario.steps, &p.scenario, 2);
    }
    for d in &sc.data {
        let unique = if d.unique { ", unique" } else { "" };
        println!(
            "  data `{}`: {} rows of {} ({}{unique})",
            d.name,
            d.rows.len(),
            d.columns.join(", "),
            d.order.name()
        );
    }
    for t in sc.settings.thresholds.iter().chain(
        sc.populations
            .iter()
            .flat_map(|p| &p.scenario.settings.thresholds),
    ) {
        let shown = match (&t.population, &t.step) {
            (Some(p), Some(s)) => format!(
                "{}: {}",
                volley_scenario::qualified_step(p, s),
                t.local_expr()
            ),
            (None, Some(s)) => format!("{s}: {}", t.expr),
            _ => t.expr.clone(),
        };
        println!("  threshold {shown}");
    }
}

fn outline(nodes: &[Node], sc: &Scenario, depth: usize) {
    let pad = "  ".repeat(depth);
    for node in nodes {
        let (id, what) = match node {
            Node::Http(h) => (h.call.id, format!("{} {}", h.method, h.call.url.source())),
            Node::Sse(s) => (s.call.id, format!("SSE {}", s.call.url.source())),
            Node::WebSocket(w) => (w.call.id, format!("WebSocket {}", w.call.url.source())),
            Node::Grpc(g) => {
                let source = if g.protos.is_empty() {
                    "by reflection".to_string()
                } else {
                    format!(
                        "from {}",
                        g.protos
                            .iter()
                            .map(|p| p.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                let kind = match g.schema.get() {
                    Some(m) if m.is_server_streaming() => "server streaming, ",
                    Some(_) => "unary, ",
                    None => "",
                };
                (
                    g.call.id,
                    format!("gRPC {} ({kind}{source})", g.full_method()),
                )
            }
            Node::Group(g) => {
                println!(
                    "{pad}- group{} × {}",
                    g.name
                        .as_ref()
                        .map(|n| format!(" `{n}`"))
                        .unwrap_or_default(),
                    g.repeat
                );
                outline(&g.steps, sc, depth + 1);
                continue;
            }
            Node::OneOf(branches) => {
                let total: u32 = branches.iter().map(|b| b.weight).sum();
                println!("{pad}- one of:");
                for b in branches {
                    println!(
                        "{pad}  - branch{} ({} in {total})",
                        b.name
                            .as_ref()
                            .map(|n| format!(" `{n}`"))
                            .unwrap_or_default(),
                        b.weight
                    );
                    outline(&b.steps, sc, depth + 2);
                }
                continue;
            }
        };
        println!("{pad}- `{}`: {what}", sc.step_info[id].name);
    }
}

/// One request and response; what the target sent is shown with its control characters
/// escaped, so a response cannot drive the terminal.
fn print_trace(t: &Trace) {
    let safe = |s: &str| terminal_safe(s).into_owned();
    println!("── {}", safe(&t.step));
    println!("→ {}", safe(&t.request));
    for (k, v) in &t.request_headers {
        println!("  {}: {}", safe(k), safe(v));
    }
    let body = |b: &str| b.lines().for_each(|l| println!("  {}", safe(l)));
    if !t.request_body.is_empty() {
        body(&t.request_body);
    }
    if t.status > 0 {
        println!(
            "← {} in {:.1} ms (first byte {:.1} ms)",
            t.status, t.total_ms, t.ttfb_ms
        );
        for (k, v) in &t.response_headers {
            println!("  {}: {}", safe(k), safe(v));
        }
        if !t.response_body.is_empty() {
            body(&t.response_body);
        }
    }
    for (k, v) in &t.extracted {
        println!("  set {} = {}", safe(k), safe(v));
    }
    println!(
        "{} {}\n",
        if t.passed { "✓" } else { "✗" },
        safe(&t.outcome)
    );
}
