//! capacity.json's [`Capacity`], assembled from how the search ended (its exit code is
//! [`Capacity::passed`]).

use std::time::Duration;

use volley_report::capacity::{self, Capacity, LoadKind, TargetVerdict};
use volley_stats::search::Outcome;

use crate::early_stop::{EARLY_STOP_FACTOR, EARLY_STOP_INTERVALS};
use crate::{Ended, Plan};

/// The answer of a search of `plan` on `name` that ended as `ended`, after `elapsed`.
/// `arrivals` says how an open model's arrivals were spaced.
pub fn assemble(
    plan: &Plan,
    name: &str,
    arrivals: String,
    ended: Ended,
    elapsed: Duration,
) -> Capacity {
    let Ended {
        search,
        probes,
        limits,
        mut notes,
    } = ended;
    let status = search.status();
    let last_pass = search.last_pass();
    let first_fail = search.first_fail();
    let tps_at = |load: f64| {
        probes
            .iter()
            .filter(|p| p.offered == load && p.verdict == Outcome::Pass)
            .map(|p| p.achieved_tps)
            .fold(f64::NAN, f64::min)
    };
    let capacity_tps = last_pass.map(tps_at).filter(|v| v.is_finite());
    let limit = capacity::limit_of(&limits, plan.kind, first_fail);
    let target = plan.target.as_ref().map(|(rate, given)| {
        let have = match plan.kind {
            LoadKind::Rate => last_pass.unwrap_or(0.0),
            LoadKind::Vus => capacity_tps.unwrap_or(0.0),
        };
        TargetVerdict::of(have, *rate, given)
    });
    let usl = volley_stats::usl::fit(&capacity::usl_points(plan.kind, &probes)).ok();
    if plan.kind == LoadKind::Rate {
        notes.insert(
            0,
            format!(
                "Open model, arrivals {arrivals}; latency is measured from each arrival's due time."
            ),
        );
    }
    if plan.error_slo_added {
        notes.insert(
            0,
            format!(
                "No error SLO was given, so `{}` applies: a load the service refused is no capacity (--slo \"error_rate < 100%\" judges latency alone).",
                crate::plan::DEFAULT_ERROR_SLO
            ),
        );
    }
    notes.push(format!(
        "Each probe: {} of warm-up, then {} measured. A probe within its noise of a limit (3 standard errors of the within-run bootstrap, at least {} % of the limit) is run {} more time(s); disagreeing runs make the load uncertain, never a pass.",
        humantime::format_duration(plan.warmup),
        humantime::format_duration(plan.probe),
        capacity::NEAR_FLOOR_PCT,
        plan.confirm
    ));
    notes.push(format!(
        "A probe fails when its successful requests per second fall below a lower load's beyond the noise ({} standard errors, at least {} %), whatever its latency.",
        crate::policy::FALL_Z,
        crate::policy::FALL_FLOOR_PCT
    ));
    notes.push(format!(
        "A probe stops early after {EARLY_STOP_INTERVALS} intervals in a row break a latency SLO {EARLY_STOP_FACTOR}× over, or an error-rate SLO {EARLY_STOP_FACTOR}× over (and by {} points); it counts as failed.",
        crate::early_stop::EARLY_STOP_ERROR_POINTS
    ));
    notes.push(
        "The capacity is the highest load that passed; the first failure bounds it from above."
            .into(),
    );
    Capacity {
        schema: 1,
        kind: "capacity".into(),
        name: name.to_string(),
        slo: plan.slo.iter().map(|t| t.expr.clone()).collect(),
        load: plan.kind,
        arrivals: (plan.kind == LoadKind::Rate).then_some(arrivals),
        status: status.name().into(),
        capacity_rps: match plan.kind {
            LoadKind::Rate => last_pass,
            LoadKind::Vus => capacity_tps,
        },
        capacity_vus: (plan.kind == LoadKind::Vus).then_some(last_pass).flatten(),
        capacity_tps,
        last_pass,
        first_fail,
        precision_pct: plan.search.precision * 100.0,
        limited_by: limit.as_ref().map(|l| l.0.clone()),
        limit_detail: limit.map(|l| l.1),
        target,
        usl,
        probes,
        notes,
        elapsed_s: elapsed.as_secs_f64(),
    }
}
