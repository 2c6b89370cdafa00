//! `volley check`'s engine side: one iteration of a scenario with one VU, outside any run,
//! every request and response traced.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::context::{Shared, WorkerContext};
use crate::error::{Error, Repr};
use crate::recorder::Recorder;
use crate::run::EngineConfig;

/// Runs one iteration of the plan's scenario with one VU, outside any run, and returns
/// every request and response (`volley check`). Nothing is recorded anywhere.
pub fn check_once(config: &EngineConfig) -> Result<Vec<crate::Trace>, Error> {
    let Some(scenario) = config.plan.scenario().cloned() else {
        return Err(Repr::NoScenario.into());
    };
    let tls = if config.target.tls {
        config.tls.client_config(false)?
    } else {
        None
    };
    crate::grpc::resolve(
        &scenario.steps,
        &scenario.step_info,
        &config.target,
        &tls,
        config.timeout_for_preflight(),
    )?;
    // One VU, already counted as running, that the conductor never starts.
    let shared = Arc::new(Shared::new(0, 1));
    let names: Arc<[String]> = scenario
        .step_info
        .iter()
        .map(|i| i.name.clone())
        .collect::<Vec<_>>()
        .into();
    let ctx = Rc::new(WorkerContext {
        shared,
        plan: Arc::new(config.plan.clone()),
        target: Rc::new(config.target.clone()),
        stream_tls: crate::tls::http1_only(&tls),
        tls: tls.clone(),
        force_h2: config.http2,
        request: None,
        recorder: Rc::new(RefCell::new(Recorder::new(
            Instant::now(),
            Duration::from_secs(3600),
            false,
            names,
        ))),
        buffers: Default::default(),
        steps: Default::default(),
        pool: None,
        grpc: crate::grpc::Channels::new(
            &config.target,
            &tls,
            &scenario.steps,
            None,
            volley_scenario::Segment::WHOLE,
            0,
            1,
        ),
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| Repr::Start {
            what: "a runtime",
            error,
        })?;
    let traces = RefCell::new(Vec::new());
    tokio::task::LocalSet::new()
        .block_on(&rt, async {
            let mut client = crate::client::Client::new(ctx.target.clone(), tls, config.http2);
            let mut state = crate::flow::FlowState::new(0);
            crate::flow::iteration(&ctx, &scenario, &mut client, &mut state, 0, Some(&traces)).await
        })
        .map_err(Repr::Halted)?;
    Ok(traces.into_inner())
}
