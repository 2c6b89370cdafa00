//! `volley capacity`: the highest load that meets the SLO.
//!
//! The search itself is [`volley_stats::search`] (step up ×2, then bisect to the precision);
//! this module runs its probes. Each probe is `volley run`'s flags with the load set to one
//! constant level — resolved by the same [`crate::resolve::resolve`] as any run — recorded as a
//! run directory of the capacity group, and judged against the SLO with the noise of its own
//! figures ([`volley_report::capacity::judge`]).
//!
//! Rules, as the notes of every result say them:
//! - **Early stop.** After the warm-up, a probe is stopped once [`EARLY_STOP_INTERVALS`]
//!   intervals in a row each break a latency SLO by [`EARLY_STOP_FACTOR`]× or an error-rate
//!   SLO by [`EARLY_STOP_FACTOR`]× (and by 5 points at least): the server is clearly overloaded,
//!   and hammering it longer shows nothing more.
//! - **Recovery.** After a probe that did not pass, short checks at the starting load run
//!   until one meets the SLO (at most `--recovery`), so a queue left behind is not billed to
//!   the next probe.
//! - **Confirmation.** A probe within its noise of a limit runs `--confirm` times more; if
//!   they disagree, the load is uncertain and counts as not passing.
//! - **Generator guard.** A probe on which volley fell behind its schedule, ran out of CPU, or
//!   ran out of VUs while the server met the SLO says nothing of the server: the search ends
//!   with "capacity ≥ the last pass".

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use volley_engine::{RunControl, StopReason};
use volley_formats::RunStatus;
use volley_record::{IntervalView, Observer, RunStart};
use volley_report::ReportOptions;
use volley_report::capacity::{self, Capacity, LoadKind, Probe, TargetVerdict};
use volley_scenario::Threshold;
use volley_scenario::threshold::Metric;
use volley_stats::search::{Outcome, Search, SearchPlan, Status};

use crate::args::{CapacityArgs, ProgressMode, RunArgs};

/// A probe stops early once this many intervals in a row clearly break the SLO.
pub(crate) const EARLY_STOP_INTERVALS: u32 = 2;
/// "Clearly": by this factor.
pub(crate) const EARLY_STOP_FACTOR: f64 = 3.0;
/// A recovery check's length.
const RECOVERY_CHECK: Duration = Duration::from_secs(2);
/// The highest rate a search may reach, arrivals per second.
const MAX_RATE: f64 = volley_scenario::limits::MAX_RATE;
/// Fewest requests the first probe of a rate search must hold.
const MIN_PROBE_REQUESTS: f64 = 20.0;
/// The most virtual users a search may reach.
const MAX_USERS: f64 = volley_scenario::limits::MAX_VUS as f64;

/// The options of the load that the search sets, probe by probe.
const SEARCH_OWNS: &[&str] = &[
    "vus",
    "duration",
    "ramp_up",
    "ramp_down",
    "stages",
    "rate",
    "rate_stages",
    "iterations",
    "repeat",
    "repeat_pause",
];

/// `START..MAX`, both above zero, START ≤ MAX, MAX at most `cap`.
fn range(flag: &str, text: &str, whole: bool, cap: f64) -> Result<(f64, f64)> {
    let bad = || {
        anyhow::anyhow!(
            "{flag} {text}: write START..MAX, like {}",
            if whole { "5..200" } else { "50..5000" }
        )
    };
    let (a, b) = text.split_once("..").ok_or_else(bad)?;
    let parse = |s: &str| -> Result<f64> {
        let v = if whole {
            s.trim()
                .parse::<u64>()
                .map(|v| v as f64)
                .map_err(|_| bad())?
        } else {
            volley_scenario::parse_rate(s.trim()).map_err(|e| anyhow::anyhow!("{flag}: {e}"))?
        };
        Ok(v)
    };
    let (start, max) = (parse(a)?, parse(b)?);
    if !(start > 0.0 && start <= max) {
        bail!("{flag} {text}: START must be above 0 and at most MAX");
    }
    if max > cap {
        bail!(
            "{flag} {text}: at most {} from one process; split a larger load with --segment or volley k8s manifest",
            capacity::number(cap)
        );
    }
    Ok((start, max))
}

/// `5%` or `0.05` as a fraction.
fn precision(text: &str) -> Result<f64> {
    let t = text.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| anyhow::anyhow!("--precision {text}: write it like 5% or 0.05"))?;
    if !(0.005..=1.0).contains(&v) {
        bail!("--precision {text}: give between 0.5% and 100%");
    }
    Ok(v)
}

fn duration(flag: &str, text: &str, min: Duration, max: Duration) -> Result<Duration> {
    let d = volley_scenario::parse_duration(text).map_err(|e| anyhow::anyhow!("{flag}: {e}"))?;
    if d < min || d > max {
        bail!(
            "{flag} {text}: give between {} and {}",
            humantime::format_duration(min),
            humantime::format_duration(max)
        );
    }
    Ok(d)
}

/// The search, checked.
struct Plan {
    kind: LoadKind,
    search: SearchPlan,
    probe: Duration,
    warmup: Duration,
    confirm: u64,
    recovery: Duration,
    slo: Vec<Threshold>,
    /// The SLO is the scenario file's `slo:`, which a run of the file judges already.
    slo_in_file: bool,
    target: Option<(f64, String)>,
}

fn plan(a: &CapacityArgs) -> Result<Plan> {
    let r = &a.run;
    if let Some(key) = r
        .load
        .0
        .given()
        .into_iter()
        .find(|k| SEARCH_OWNS.contains(k))
    {
        bail!(
            "--{}: volley capacity sets the load itself, probe by probe; give the range to search instead: --rates START..MAX (arrivals per second) or --vus START..MAX (virtual users)",
            key.replace('_', "-")
        );
    }
    for (given, flag, instead) in [
        (
            !r.thresholds.is_empty(),
            "--threshold",
            "give the service level with --slo",
        ),
        (
            !r.outs.is_empty(),
            "--out",
            "send a run's metrics with volley run",
        ),
        (
            r.dashboard.is_some(),
            "--dashboard",
            "serve a probe's report with volley report --serve",
        ),
        (
            r.junit.is_some(),
            "--junit",
            "gate on the exit code, or on capacity.json",
        ),
        (
            r.upload.is_some(),
            "--upload",
            "upload the capacity directory afterwards",
        ),
        (
            r.segment.is_some() || r.segments.is_some(),
            "--segment",
            "search from one process",
        ),
        (
            r.start_at.is_some(),
            "--start-at",
            "start the search when you want it",
        ),
    ] {
        if given {
            bail!("{flag} is not for capacity searches: {instead}");
        }
    }
    let (kind, (start, max)) = match (&a.rates, &a.users) {
        (Some(t), None) => (LoadKind::Rate, range("--rates", t, false, MAX_RATE)?),
        (None, Some(t)) => (LoadKind::Vus, range("--vus", t, true, MAX_USERS)?),
        _ => bail!(
            "say what to search: --rates START..MAX (open model, arrivals per second, e.g. 50..5000) or --vus START..MAX (closed model, e.g. 5..200)"
        ),
    };
    if kind == LoadKind::Vus && r.load.0.arrivals.is_some() {
        bail!(
            "--arrivals spaces the arrivals of a rate: search --rates START..MAX with it, or leave it out for --vus"
        );
    }
    if !(a.factor > 1.0 && a.factor <= 10.0) {
        bail!(
            "--factor {}: give a step-up factor above 1 and at most 10 (2: double each step)",
            a.factor
        );
    }
    let mut slo = a
        .slo
        .iter()
        .map(|s| volley_scenario::parse_threshold(s).map_err(|e| anyhow::anyhow!("--slo {s}: {e}")))
        .collect::<Result<Vec<_>>>()?;
    // Without --slo, the scenario file's `slo:` (which every probe, as a run of the file,
    // judges as thresholds already).
    let slo_in_file = slo.is_empty();
    if slo_in_file {
        if let Some(path) = &r.scenario {
            slo = crate::resolve::load_scenario(path)?.slo;
        }
        if slo.is_empty() {
            bail!(
                "give the service level to meet: --slo \"ttfb p99 < 200ms\" --slo \"error_rate < 1%\" (or `slo:` in the scenario file)"
            );
        }
    }
    if let Some(t) = slo
        .iter()
        .find(|t| t.population.is_some() || t.step.is_some())
    {
        bail!(
            "--slo `{}`: a capacity is judged on the whole run; write it without a population or step",
            t.expr
        );
    }
    let warmup = match &r.warmup {
        Some(w) => duration("--warmup", w, Duration::ZERO, Duration::from_secs(3600))?,
        None => Duration::from_secs(5),
    };
    Ok(Plan {
        kind,
        search: SearchPlan {
            start,
            max,
            factor: a.factor,
            precision: precision(&a.precision)?,
            whole: kind == LoadKind::Vus,
            max_probes: a.max_probes as usize,
        },
        probe: {
            let probe = duration(
                "--probe",
                &a.probe,
                Duration::from_secs(1),
                Duration::from_secs(3600),
            )?;
            // A probe judged on a handful of requests says nothing of a percentile.
            let requests = start * probe.as_secs_f64();
            if kind == LoadKind::Rate && requests < MIN_PROBE_REQUESTS {
                bail!(
                    "--rates {start}..: a {}s probe at {start}/s holds {requests:.1} requests, too few to judge an SLO (at least {MIN_PROBE_REQUESTS:.0}); start higher or probe longer",
                    probe.as_secs_f64()
                );
            }
            probe
        },
        warmup,
        confirm: a.confirm,
        recovery: duration(
            "--recovery",
            &a.recovery,
            Duration::ZERO,
            Duration::from_secs(3600),
        )?,
        slo,
        slo_in_file,
        target: crate::resolve::target_rate(r)?,
    })
}

/// `volley run`'s flags for one probe: `load` held for the warm-up and the measurement.
fn probe_args(
    base: &RunArgs,
    plan: &Plan,
    load: f64,
    length: Duration,
    warmup: Duration,
) -> RunArgs {
    let mut a = base.clone();
    let spec = &mut a.load.0;
    spec.duration = Some(length);
    match plan.kind {
        LoadKind::Rate => spec.rate = Some(load),
        LoadKind::Vus => spec.vus = Some(load as u64),
    }
    a.warmup = Some(format!("{}ms", warmup.as_millis()));
    a.thresholds = if plan.slo_in_file {
        Vec::new()
    } else {
        plan.slo.iter().map(|t| t.expr.clone()).collect()
    };
    a.target = None;
    a.peak_factor = None;
    a.progress = ProgressMode::None;
    a
}

/// Watches a probe: Ctrl-C, and the early-stop rule.
struct Watch<'a> {
    slo: &'a [Threshold],
    warmup_intervals: u64,
    in_a_row: u32,
    control: Option<RunControl>,
    stopped: Option<String>,
}

impl Watch<'_> {
    /// How interval `iv` breaks the SLO clearly, if it does.
    fn clearly_broken(&self, iv: &IntervalView<'_>) -> Option<String> {
        let c = &iv.sample.counts;
        for t in self.slo {
            let got = match t.metric {
                Metric::ErrorRate if c.tests > 0 => c.errors as f64 / c.tests as f64 * 100.0,
                Metric::Ttfb | Metric::Total => {
                    let l = if t.metric == Metric::Ttfb {
                        &iv.sample.ttfb
                    } else {
                        &iv.sample.total
                    };
                    let q = t
                        .stat
                        .name()
                        .strip_prefix('p')
                        .and_then(|p| p.parse::<f64>().ok());
                    match q {
                        Some(q) if !l.is_empty() => l.value_at_percentile(q) as f64 / 1000.0,
                        _ => continue,
                    }
                }
                _ => continue,
            };
            let over = match t.metric {
                Metric::ErrorRate => got > (t.limit * EARLY_STOP_FACTOR).max(t.limit + 5.0),
                _ => got > t.limit * EARLY_STOP_FACTOR,
            };
            if over {
                return Some(format!("{} read {got:.1} against {}", t.expr, t.limit));
            }
        }
        None
    }
}

impl Observer for Watch<'_> {
    fn started(&mut self, run: &RunStart<'_>) {
        let control = run.control.clone();
        if crate::signals::stop_requested() {
            control.stop(StopReason::Interrupted);
        }
        crate::signals::install(control.clone());
        self.control = Some(control);
    }

    fn interval(&mut self, iv: &IntervalView<'_>) {
        // The drain after the stop (a row of no length) holds what was queued then: no
        // interval of the probe.
        if iv.index < self.warmup_intervals || self.stopped.is_some() || iv.row.period_s <= 0.0 {
            return;
        }
        match self.clearly_broken(iv) {
            Some(why) => {
                self.in_a_row += 1;
                if self.in_a_row >= EARLY_STOP_INTERVALS {
                    let msg = format!(
                        "{EARLY_STOP_INTERVALS} intervals in a row broke the SLO {EARLY_STOP_FACTOR}× over (last: {why})"
                    );
                    if let Some(c) = &self.control {
                        c.stop(StopReason::Aborted(format!(
                            "capacity probe stopped early: {msg}"
                        )));
                    }
                    self.stopped = Some(msg);
                }
            }
            None => self.in_a_row = 0,
        }
    }

    fn keep_going(&mut self) -> bool {
        !crate::signals::stop_requested()
    }
}

/// One probe's reading.
struct Reading {
    probe: Probe,
    judged: capacity::Judged,
    server: Option<capacity::ServerLimit>,
    interrupted: bool,
    /// volley's own longest delay after the warm-up, ms, when it passed
    /// [`volley_stats::compare::STALL_MS`]: the machine paused volley itself.
    stalled_ms: Option<f64>,
}

impl Reading {
    fn outcome(&self) -> Outcome {
        if self.interrupted {
            Outcome::Interrupted
        } else if self.judged.generator.is_some() {
            Outcome::GeneratorLimited
        } else if self.judged.passed && self.probe.stopped_early.is_none() {
            Outcome::Pass
        } else {
            Outcome::Fail
        }
    }
}

/// What the search has run so far, and where: every probe goes through [`Probes::run`], which
/// names it, records it, lists it in the capacity group and prints its line.
struct Probes<'a> {
    base: &'a RunArgs,
    plan: &'a Plan,
    dir: PathBuf,
    group: volley_formats::group::GroupWriter,
    /// Probes run so far (their directories are numbered).
    n: usize,
    list: Vec<Probe>,
    limits: Vec<capacity::ProbeLimit>,
}

/// One probe, as the search reads it.
struct Ran {
    outcome: Outcome,
    near: bool,
    interrupted: bool,
    /// Why the generator could not drive it, when it could not.
    generator: Option<String>,
    /// How long volley itself stalled in it, when that passed the stall mark.
    stalled_ms: Option<f64>,
}

impl Probes<'_> {
    /// Runs a probe of `load` as `role` (`step`, `bisect`, `confirm`, `retry`).
    fn run(&mut self, load: f64, role: &str) -> Result<Ran> {
        self.n += 1;
        let suffix = match role {
            "step" | "bisect" => String::new(),
            other => format!("-{other}"),
        };
        let label = format!(
            "p{:02}-{}{suffix}",
            self.n,
            capacity::number(load).replace(',', "")
        );
        let reading = run_probe(
            self.base,
            self.plan,
            load,
            &self.dir,
            &label,
            role,
            (self.plan.probe, self.plan.warmup),
        )?;
        let status = if reading.interrupted {
            RunStatus::Interrupted
        } else {
            RunStatus::Complete
        };
        self.group
            .run(&self.dir.join(&reading.probe.dir), status, None)?;
        print_probe(self.plan, &reading.probe);
        let ran = Ran {
            outcome: reading.outcome(),
            near: reading.judged.near,
            interrupted: reading.interrupted,
            generator: reading.judged.generator.clone(),
            stalled_ms: reading.stalled_ms,
        };
        self.limits.push((load, ran.outcome, reading.server));
        self.list.push(reading.probe);
        Ok(ran)
    }
}

/// Runs one probe of `load` into `dir` and reads it: `length` measured after `warmup`.
fn run_probe(
    base: &RunArgs,
    plan: &Plan,
    load: f64,
    dir: &Path,
    name: &str,
    role: &str,
    (length, warmup): (Duration, Duration),
) -> Result<Reading> {
    let args = probe_args(base, plan, load, length + warmup, warmup);
    let resolved = crate::resolve::resolve(&args, crate::resolve::Runner::Here)?;
    let mut group = resolved.group()?;
    group.run.output = dir.to_path_buf();
    group.run.name = name.to_string();
    let interval = group.run.engine.interval.as_secs_f64().max(1e-3);
    let mut watch = Watch {
        slo: &plan.slo,
        warmup_intervals: (warmup.as_secs_f64() / interval).ceil() as u64,
        in_a_row: 0,
        control: None,
        stopped: None,
    };
    let recorded = volley_record::record(&group.run, &mut watch)?;
    let (report, source) = crate::run_cmd::write_reports_of(&recorded.dir, false)?;
    let opts = ReportOptions::default();
    let judged = capacity::judge(&source, &report, &plan.slo, opts);
    let ttfb = report.per_request.ttfb_ms.as_ref();
    // Successful requests per second over the probe's full intervals: a probe stopped early
    // ends with a partial interval (and the drain after it, of no length).
    let tps = {
        let series = source.series.after_warmup(report.warmup_s);
        let nominal = series.nominal_interval_s();
        let full: Vec<f64> = series
            .intervals
            .iter()
            .filter(|r| r.period_s >= nominal * 0.99)
            .map(|r| r.tps)
            .collect();
        if full.is_empty() {
            report.seed_suite.tps_avg
        } else {
            full.iter().sum::<f64>() / full.len() as f64
        }
    };
    let probe = Probe {
        offered: load,
        achieved_tps: tps,
        ttfb_p50_ms: ttfb.map(|t| t.p50_ms),
        ttfb_p99_ms: ttfb.map(|t| t.p99_ms),
        error_rate_pct: report.seed_suite.error_rate_pct,
        concurrency: ttfb.map_or(f64::NAN, |t| tps * t.mean_ms / 1000.0),
        verdict: Outcome::Fail,
        role: role.to_string(),
        stopped_early: watch.stopped.clone(),
        generator: None,
        judged: judged.detail.clone(),
        server: None,
        dir: recorded
            .dir
            .strip_prefix(dir)
            .unwrap_or(&recorded.dir)
            .to_string_lossy()
            .into_owned(),
    };
    let server = capacity::server_limit(&report);
    let stalled_ms = report
        .generator
        .as_ref()
        .map(|g| g.sched_lag_max_ms)
        .filter(|&ms| ms > volley_stats::compare::STALL_MS);
    let mut reading = Reading {
        probe,
        judged,
        server,
        interrupted: recorded.status == RunStatus::Interrupted,
        stalled_ms,
    };
    reading.probe.verdict = reading.outcome();
    reading.probe.generator = reading.judged.generator.clone();
    reading.probe.server = reading.server.as_ref().map(|(r, d)| format!("{r}: {d}"));
    Ok(reading)
}

pub(crate) fn capacity(a: CapacityArgs) -> Result<ExitCode> {
    let (_, _, code) = search(a)?;
    Ok(code)
}

/// Runs the search: its directory, its result, and the exit code it earns.
pub(crate) fn search(a: CapacityArgs) -> Result<(PathBuf, Capacity, ExitCode)> {
    let plan = plan(&a)?;
    // The first probe's flags, resolved: every flag error before any load, and the name.
    let first = crate::resolve::resolve(
        &probe_args(
            &a.run,
            &plan,
            plan.search.start,
            plan.probe + plan.warmup,
            plan.warmup,
        ),
        crate::resolve::Runner::Here,
    )?;
    let spec = first.group()?;
    let name = spec.run.name.clone();
    std::fs::create_dir_all(&a.run.output)
        .with_context(|| format!("cannot create {}", a.run.output.display()))?;
    let group = volley_formats::group::GroupWriter::create(
        &a.run.output,
        &format!("capacity-{name}"),
        plan.search.max_probes,
        0.0,
        spec.run.recorded_plan(),
    )?;
    let dir = group.dir().to_path_buf();
    let _ = crate::signals::stop_requested(); // listens for Ctrl-C from here on
    eprintln!(
        "volley: capacity search of {name} under SLO {} — {} {}..{}, probes of {} after a {} warm-up; results in {}",
        plan.slo
            .iter()
            .map(|t| t.expr.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        match plan.kind {
            LoadKind::Rate => "rates",
            LoadKind::Vus => "VUs",
        },
        capacity::number(plan.search.start),
        capacity::number(plan.search.max),
        humantime::format_duration(plan.probe),
        humantime::format_duration(plan.warmup),
        dir.display()
    );
    let started = Instant::now();
    let mut search = Search::new(plan.search);
    let mut probes = Probes {
        base: &a.run,
        plan: &plan,
        dir: dir.clone(),
        group,
        n: 0,
        list: Vec::new(),
        limits: Vec::new(),
    };
    let mut notes = Vec::new();
    'search: while let Some(load) = search.next_load() {
        if crate::signals::stop_requested() {
            search.interrupt();
            break;
        }
        let role = if search.first_fail().is_none() {
            "step"
        } else {
            "bisect"
        };
        let first = probes.run(load, role)?;
        if first.interrupted {
            search.interrupt();
            break;
        }
        let (mut outcome, mut near) = (first.outcome, first.near);
        // A probe the generator could not drive runs once more: a stall of a shared machine
        // passes, a load volley cannot offer from here does not. So does a probe that failed
        // while the machine paused volley itself: its latencies hold that pause.
        let stalled = outcome == Outcome::Fail && first.stalled_ms.is_some();
        if outcome == Outcome::GeneratorLimited || stalled {
            let again = probes.run(load, "retry")?;
            let why = match first.stalled_ms {
                Some(ms) if stalled => format!("failed while volley itself stalled for {ms:.0} ms"),
                _ => format!(
                    "was generator-limited ({})",
                    first
                        .generator
                        .as_deref()
                        .unwrap_or("volley could not keep its schedule")
                ),
            };
            notes.push(format!(
                "The probe at {} {why}; it ran once more: {}.",
                plan.kind.show(load),
                again.outcome.name()
            ));
            (outcome, near) = (again.outcome, again.near);
            if again.interrupted {
                search.interrupt();
                break;
            }
        }
        if near && matches!(outcome, Outcome::Pass | Outcome::Fail) {
            for c in 0..plan.confirm {
                let again = probes.run(load, "confirm")?;
                if again.interrupted {
                    search.interrupt();
                    break 'search;
                }
                if again.outcome == Outcome::GeneratorLimited {
                    outcome = again.outcome;
                    break;
                }
                if again.outcome != outcome {
                    outcome = Outcome::Uncertain;
                    notes.push(format!(
                        "{} flip-flopped: {} of {} runs agreed before one differed; it counts as uncertain, not as a pass.",
                        plan.kind.show(load),
                        c + 1,
                        c + 2
                    ));
                    break;
                }
            }
        }
        search.record(load, outcome);
        if outcome != Outcome::Pass
            && outcome != Outcome::GeneratorLimited
            && search.status() == Status::Searching
            && search.last_pass().is_some()
            && !plan.recovery.is_zero()
        {
            let took = recover(&a.run, &plan, &dir)?;
            match took {
                Some(t) => notes.push(format!(
                    "After the probe at {}, the target met the SLO again at {} within {:.1} s.",
                    plan.kind.show(load),
                    plan.kind.show(plan.search.start),
                    t.as_secs_f64()
                )),
                None if crate::signals::stop_requested() => {
                    search.interrupt();
                    break;
                }
                None => notes.push(format!(
                    "After the probe at {}, the target did not meet the SLO at {} again within {} s: probes after it may read low.",
                    plan.kind.show(load),
                    plan.kind.show(plan.search.start),
                    plan.recovery.as_secs()
                )),
            }
        }
    }
    let status = search.status();
    let result = build(
        &plan,
        &name,
        first.plan.load.arrivals.label(),
        &search,
        probes.list,
        &probes.limits,
        notes,
        started.elapsed(),
    );
    probes.group.finish(
        if status == Status::Interrupted {
            RunStatus::Interrupted
        } else {
            RunStatus::Complete
        },
        (status == Status::Interrupted)
            .then(|| "stopped by the user: the bracket so far is in capacity.json".to_string()),
    )?;
    write_result(&result, &dir)?;
    println!("\n{}", result.table());
    eprintln!(
        "volley: wrote {0}/capacity.json, capacity.md, capacity.html and charts/",
        dir.display()
    );
    let ok = result.passed()
        && !matches!(
            status,
            Status::GeneratorLimited | Status::SloBrokenAtStart | Status::Interrupted
        )
        || result.target.as_ref().is_some_and(|t| t.met);
    let code = if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    Ok((dir, result, code))
}

fn print_probe(plan: &Plan, p: &Probe) {
    eprintln!(
        "  {:>14}  achieved {:>9.1} TPS  TTFB p99 {:>9}  errors {:>6.2} %  {}{}",
        plan.kind.show(p.offered),
        p.achieved_tps,
        p.ttfb_p99_ms.map_or("n/a".into(), |v| format!("{v:.2} ms")),
        p.error_rate_pct,
        p.verdict.name(),
        p.stopped_early
            .as_ref()
            .map(|w| format!(" (stopped early: {w})"))
            .unwrap_or_default()
    );
}

/// Short checks at the starting load until one meets the SLO: how long it took, or `None`.
fn recover(base: &RunArgs, plan: &Plan, dir: &Path) -> Result<Option<Duration>> {
    let t0 = Instant::now();
    let checks = dir.join("recovery");
    std::fs::create_dir_all(&checks)?;
    let mut i = 0;
    while t0.elapsed() < plan.recovery && !crate::signals::stop_requested() {
        std::thread::sleep(Duration::from_millis(500));
        i += 1;
        let r = run_probe(
            base,
            plan,
            plan.search.start,
            &checks,
            &format!("check-{i}"),
            "recovery",
            (RECOVERY_CHECK, Duration::ZERO),
        )?;
        if r.judged.passed && r.probe.stopped_early.is_none() {
            return Ok(Some(t0.elapsed()));
        }
    }
    Ok(None)
}

#[allow(clippy::too_many_arguments)]
fn build(
    plan: &Plan,
    name: &str,
    arrivals: String,
    search: &Search,
    probes: Vec<Probe>,
    limits: &[capacity::ProbeLimit],
    mut notes: Vec<String>,
    elapsed: Duration,
) -> Capacity {
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
    let limit = capacity::limit_of(limits, plan.kind, first_fail);
    let target = plan.target.as_ref().map(|(rate, given)| {
        let have = match plan.kind {
            LoadKind::Rate => last_pass.unwrap_or(0.0),
            LoadKind::Vus => capacity_tps.unwrap_or(0.0),
        };
        TargetVerdict::of(have, *rate, given)
    });
    let points: Vec<(f64, f64)> = probes
        .iter()
        .filter(|p| p.stopped_early.is_none() && p.verdict != Outcome::GeneratorLimited)
        .map(|p| {
            let n = match plan.kind {
                LoadKind::Vus => p.offered,
                LoadKind::Rate => p.concurrency,
            };
            (n, p.achieved_tps)
        })
        .collect();
    let usl = volley_stats::usl::fit(&points).ok();
    if plan.kind == LoadKind::Rate {
        notes.insert(
            0,
            format!(
                "Open model, arrivals {arrivals}; latency is measured from each arrival's due time."
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
        "A probe stops early after {EARLY_STOP_INTERVALS} intervals in a row break a latency SLO {EARLY_STOP_FACTOR}× over, or an error-rate SLO {EARLY_STOP_FACTOR}× over (and by 5 points); it counts as failed."
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

/// capacity.json, capacity.md, capacity.html and the charts into `dir`.
pub(crate) fn write_result(c: &Capacity, dir: &Path) -> Result<()> {
    std::fs::write(dir.join(capacity::CAPACITY_JSON), c.to_json())?;
    let charts_dir = dir.join("charts");
    let files = c.draw(&charts_dir)?;
    let svgs: Vec<String> = files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "svg"))
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect();
    let links = volley_report::charts::png_links(&files);
    std::fs::write(dir.join("capacity.md"), c.markdown(&links))?;
    std::fs::write(dir.join("capacity.html"), c.html(&svgs))?;
    Ok(())
}

/// Whether `dir` holds a capacity result.
pub(crate) fn is_capacity_dir(dir: &Path) -> bool {
    dir.join(capacity::CAPACITY_JSON).is_file()
}

/// The capacity results under `paths`, when every one is one.
/// A capacity directory among runs is refused: its probes ran at different loads, so they are
/// not repeats of one plan to judge a run against.
pub(crate) fn read_all(paths: &[PathBuf]) -> Result<Option<Vec<Capacity>>> {
    let caps = paths.iter().filter(|p| is_capacity_dir(p)).count();
    if caps > 0 && caps < paths.len() {
        let cap = paths
            .iter()
            .find(|p| is_capacity_dir(p))
            .expect("one at least");
        bail!(
            "{} is a capacity search, whose probes ran at different loads; compare it with another capacity directory, or compare one of its probes (a run directory inside it) with your runs",
            cap.display()
        );
    }
    if paths.is_empty() || caps == 0 {
        return Ok(None);
    }
    Ok(Some(
        paths
            .iter()
            .map(|p| Capacity::read(p))
            .collect::<Result<_, _>>()?,
    ))
}
