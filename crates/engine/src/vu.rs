//! One virtual user: a loop of iterations on its own connection, honouring think time,
//! pacing and the current VU target, until the run stops.

use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::client::Client;
use crate::context::WorkerContext;
use crate::flow::{FlowState, Iteration, NOTHING_SENT_LIMIT};
use crate::recorder::InFlight;

/// Starts VU `id` on `vus`. A scenario VU and a single-request VU are tasks of two types:
/// a task's future is as large as the largest state of its loop, and the single request's
/// send, held inline (2.8 KB), would otherwise size every scenario VU too, which holds its
/// steps in a box of their own.
pub(crate) fn spawn_vu(vus: &mut tokio::task::JoinSet<()>, ctx: Rc<WorkerContext>, id: u64) {
    match ctx.plan.scenario().cloned() {
        Some(scenario) => vus.spawn_local(run_vu(ctx, id, ScenarioIterations::new(scenario))),
        None => vus.spawn_local(run_vu(ctx, id, SingleRequest)),
    };
}

/// What a VU does once per iteration (closed model) or per arrival (open model); one type
/// per kind of plan, so that each VU's task is sized by its own kind only.
pub(crate) trait Iterate {
    /// Runs one iteration, `queued_us` late (an open-model arrival that waited for a free
    /// VU); `Err` says why the whole run must stop.
    async fn once(
        &mut self,
        ctx: &Rc<WorkerContext>,
        client: &mut Client,
        flow: &mut FlowState,
        queued_us: u64,
    ) -> Result<(), String>;
}

/// The plan's single request.
pub(crate) struct SingleRequest;

impl Iterate for SingleRequest {
    async fn once(
        &mut self,
        ctx: &Rc<WorkerContext>,
        client: &mut Client,
        _: &mut FlowState,
        queued_us: u64,
    ) -> Result<(), String> {
        send_request(ctx, client, queued_us).await;
        Ok(())
    }
}

/// One pass through the scenario's steps.
pub(crate) struct ScenarioIterations {
    scenario: std::sync::Arc<volley_scenario::Scenario>,
    nothing_sent: NothingSent,
}

impl ScenarioIterations {
    pub(crate) fn new(scenario: std::sync::Arc<volley_scenario::Scenario>) -> Self {
        ScenarioIterations {
            scenario,
            nothing_sent: NothingSent::default(),
        }
    }
}

impl Iterate for ScenarioIterations {
    async fn once(
        &mut self,
        ctx: &Rc<WorkerContext>,
        client: &mut Client,
        flow: &mut FlowState,
        queued_us: u64,
    ) -> Result<(), String> {
        let it = crate::flow::iteration(ctx, &self.scenario, client, flow, queued_us, None).await?;
        let halt = self.nothing_sent.observe(&it);
        if it.sent == 0 {
            // Nothing awaited on the wire: let the event loop run (flushes, stops).
            tokio::task::yield_now().await;
        }
        halt.map_or(Ok(()), Err)
    }
}

/// Runs VU `id` until the run stops or the target drops below it.
async fn run_vu(ctx: Rc<WorkerContext>, id: u64, mut work: impl Iterate) {
    let mut client = ctx.client();
    // Scenarios see the VU's number in the whole plan, the same whichever segment runs it.
    let mut flow = FlowState::new(ctx.plan.segment.global(id));
    let shared = &ctx.shared;
    let mut left = ctx.plan.load.iterations().unwrap_or(u64::MAX);
    while !shared.stop.is_cancelled() && id < shared.target_vus.load(Ordering::Relaxed) {
        // Only pacing needs the iteration's start: no clock read otherwise.
        let started = (!ctx.plan.load.pacing.is_zero()).then(Instant::now);
        if let Err(why) = work.once(&ctx, &mut client, &mut flow, 0).await {
            shared.halt(why);
            break;
        }
        left -= 1;
        if left == 0 {
            // Done: the VU keeps its `running` mark so that it is not started again.
            shared.finished_vus.fetch_add(1, Ordering::AcqRel);
            shared.active_vus.fetch_sub(1, Ordering::Relaxed);
            return;
        }
        if !ctx.plan.load.think_time.is_zero() {
            sleep_unless_stopped(&ctx, Instant::now() + ctx.plan.load.think_time).await;
        }
        if let Some(started) = started {
            sleep_unless_stopped(&ctx, started + ctx.plan.load.pacing).await;
        }
    }
    if let Some(flag) = shared
        .running
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(id as usize)
    {
        flag.store(false, Ordering::Release);
    }
    shared.active_vus.fetch_sub(1, Ordering::Relaxed);
}

/// The single request of a plan without a scenario; `queued_us`: how late it was sent.
async fn send_request(ctx: &WorkerContext, client: &mut Client, queued_us: u64) {
    // A plan of one request always has it prepared (`run::start`).
    let Some(request) = &ctx.request else {
        return;
    };
    // Three clock reads per request: its start (here), its first byte and its end (the
    // client's), the end also placing it in its interval.
    let start = Instant::now();
    let in_flight = InFlight::sent_at(&ctx.recorder, None, start);
    let result = client
        .send_from(start, request, ctx.plan.timeout, &ctx.buffers, None)
        .await;
    match result {
        Ok((mut ex, end)) => {
            in_flight.done_at(end);
            ex.queued_us = queued_us;
            let ok = ctx.plan.expect_status.contains(ex.status);
            ctx.recorder
                .borrow_mut()
                .record_exchange_at(end, None, &ex, ok);
        }
        Err(failure) => {
            let took = in_flight.done();
            let us = crate::dial::micros(took) + queued_us;
            ctx.recorder
                .borrow_mut()
                .record_failure_after(None, failure, us);
        }
    }
}

/// Counts a VU's iterations in a row that sent no request; at [`NOTHING_SENT_LIMIT`] it
/// says why the run must stop.
#[derive(Default)]
struct NothingSent {
    streak: u32,
}

impl NothingSent {
    fn observe(&mut self, it: &Iteration) -> Option<String> {
        if it.sent > 0 {
            self.streak = 0;
            return None;
        }
        self.streak += 1;
        (self.streak >= NOTHING_SENT_LIMIT).then(|| {
            format!(
                "{} iterations in a row sent no request: {}; fix the scenario (volley check FILE shows each step)",
                self.streak,
                it.not_sent.as_deref().unwrap_or("no step was sent")
            )
        })
    }
}

async fn sleep_unless_stopped(ctx: &WorkerContext, until: Instant) {
    if until <= Instant::now() {
        return;
    }
    tokio::select! {
        _ = tokio::time::sleep_until(until.into()) => {}
        _ = ctx.shared.stop.cancelled() => {}
    }
}
