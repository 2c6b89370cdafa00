//! `volley capacity`: the highest load that meets the SLO.
//!
//! The search is the `volley-capacity` crate's ([`volley_capacity::run`]): which load comes
//! next, how a probe is read, when the answer is known. This module turns the flags into its
//! [`Plan`] and runs its probes: each is `volley run`'s resolved plan at one constant load
//! ([`Resolved::with_load`]), recorded as a run directory of the capacity group, read with the
//! noise of its own figures ([`volley_report::capacity::judge`]) and watched by the early-stop
//! rule ([`volley_capacity::early_stop`]).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use volley_capacity::early_stop::EarlyStop;
use volley_capacity::{Kind, Plan, Prober, Reading, Role};
use volley_engine::{RunControl, StopReason};
use volley_formats::RunStatus;
use volley_record::{IntervalView, Observer, RunStart};
use volley_report::ReportOptions;
use volley_report::capacity::{self, Capacity, LoadKind, Probe};
use volley_scenario::Warmup;
use volley_stats::search::{Outcome, SearchPlan};

use crate::args::CapacityArgs;
use crate::resolve::{ConstantLoad, Resolved};

/// Fewest requests the first probe of a rate search must hold.
const MIN_PROBE_REQUESTS: f64 = 20.0;

/// The search the flags describe, checked, and the run every probe is a copy of.
fn plan(a: &CapacityArgs) -> Result<(Plan, Resolved)> {
    let r = &a.run;
    if let Some(key) = r
        .load
        .0
        .given()
        .into_iter()
        .find(|k| volley_capacity::plan::search_owns(k))
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
    let (kind, (start, max)) = match (a.rates, a.users) {
        (Some(r), None) => (LoadKind::Rate, r),
        (None, Some(r)) => (LoadKind::Vus, r),
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
    let slo = a.slo.clone();
    let warmup = match r.warmup {
        Some(w @ Warmup::Stages(_)) => bail!(
            "--warmup {w}: a probe holds one load, so it has no stages; give the warm-up as a time, e.g. --warmup 5s"
        ),
        Some(Warmup::Time(d)) => {
            volley_scenario::duration::within(d, Duration::ZERO, crate::values::MAX_WAIT)
                .map_err(|e| anyhow::anyhow!("--warmup {}: {e}", Warmup::Time(d)))?
        }
        None => Duration::from_secs(5),
    };
    let probe = a.probe;
    // A probe judged on a handful of requests says nothing of a percentile.
    let requests = start * probe.as_secs_f64();
    if kind == LoadKind::Rate && requests < MIN_PROBE_REQUESTS {
        bail!(
            "--rates {start}..: a {}s probe at {start}/s holds {requests:.1} requests, too few to judge an SLO (at least {MIN_PROBE_REQUESTS:.0}); start higher or probe longer",
            probe.as_secs_f64()
        );
    }
    // The scenario, read once here for what the search itself needs of it: one population to
    // search, and its `slo:` when no --slo is given (which every probe then judges).
    let scenario = r
        .scenario
        .as_deref()
        .map(crate::resolve::load_scenario)
        .transpose()?;
    if let Some(sc) = scenario.as_ref().filter(|sc| !sc.populations.is_empty()) {
        bail!(
            "{}: the scenario runs {} populations (`scenarios:`), each with its own load; volley capacity searches one load: give it a scenario of one population (its steps under `steps:`)",
            sc.file.display(),
            sc.populations.len()
        );
    }
    let slo = if slo.is_empty() {
        let from_file = scenario.map(|sc| sc.slo).unwrap_or_default();
        if from_file.is_empty() {
            bail!(
                "give the service level to meet: --slo \"ttfb p99 < 200ms\" (an error SLO, error_rate < 1%, applies unless you give one; or `slo:` in the scenario file)"
            );
        }
        from_file
    } else {
        slo
    };
    if let Some(why) = volley_scenario::threshold::unmeetable(&slo) {
        bail!("--slo: {why}");
    }
    // The run every probe copies: every flag and the scenario checked once, before any load.
    // Resolved at the start load (each probe replaces it: `Resolved::with_load`).
    let mut base_args = r.clone();
    base_args.warmup = None;
    base_args.load.0.duration = Some(probe + warmup);
    match kind {
        LoadKind::Rate => base_args.load.0.rate = Some(start),
        LoadKind::Vus => base_args.load.0.vus = Some(start as u64),
    }
    let base = crate::resolve::resolve(&base_args, crate::resolve::Runner::Here)?;
    if let Some(t) = slo
        .iter()
        .find(|t| t.population.is_some() || t.step.is_some())
    {
        bail!(
            "--slo `{}`: a capacity is judged on the whole run; write it without a population or step",
            t.expr
        );
    }
    let (slo, error_slo_added) = volley_capacity::plan::with_error_slo(slo);
    let poisson_seed = match base.settings.load.arrivals {
        Some(volley_scenario::Arrivals::Poisson { seed }) if kind == LoadKind::Rate => Some(seed),
        _ => None,
    };
    Ok((
        Plan {
            kind,
            search: SearchPlan {
                start,
                max,
                factor: a.factor,
                precision: a.precision,
                whole: kind == LoadKind::Vus,
                max_probes: a.max_probes as usize,
            },
            probe,
            warmup,
            confirm: a.confirm,
            recovery: a.recovery,
            slo,
            error_slo_added,
            target: crate::resolve::target_rate(r)?,
            poisson_seed,
        },
        base,
    ))
}

/// Watches a probe: Ctrl-C, and the early-stop rule.
struct Watch<'a> {
    rule: EarlyStop<'a>,
    control: Option<RunControl>,
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
        if let Some(msg) = self.rule.interval(iv.index, iv.row.period_s, iv.sample)
            && let Some(c) = &self.control
        {
            c.stop(StopReason::Aborted(format!(
                "capacity probe stopped early: {msg}"
            )));
        }
    }

    fn keep_going(&mut self) -> bool {
        !crate::signals::stop_requested()
    }
}

/// Runs the search's probes as recorded runs: every probe is named, recorded, listed in the
/// capacity group and printed; recovery checks go to `recovery/`.
struct Recorder<'a> {
    plan: &'a Plan,
    base: &'a Resolved,
    dir: PathBuf,
    group: volley_formats::group::GroupWriter,
    /// Probes run so far (their directories are numbered), and recovery checks.
    n: usize,
    checks: usize,
}

impl Prober for Recorder<'_> {
    fn probe(
        &mut self,
        load: f64,
        role: Role,
        length: Duration,
        warmup: Duration,
    ) -> Result<Reading, volley_capacity::Error> {
        let (dir, label, seed) = if role == Role::Recovery {
            self.checks += 1;
            (
                self.dir.join("recovery"),
                format!("check-{}", self.checks),
                self.plan.probe_seed(0),
            )
        } else {
            self.n += 1;
            let suffix = match role {
                Role::Step | Role::Bisect => String::new(),
                other => format!("-{}", other.name()),
            };
            (
                self.dir.clone(),
                format!(
                    "p{:02}-{}{suffix}",
                    self.n,
                    volley_formats::numfmt::grouped(load).replace(',', "")
                ),
                self.plan.probe_seed(self.n),
            )
        };
        let other = |e: anyhow::Error| volley_capacity::Error::new(Kind::Other, format!("{e:#}"));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))
            .map_err(other)?;
        let constant = match self.plan.kind {
            LoadKind::Rate => ConstantLoad::Rate(load, seed),
            LoadKind::Vus => ConstantLoad::Vus(load as u64),
        };
        let reading = run_probe(
            self.base
                .with_load(constant, length, warmup, &self.plan.slo)
                .map_err(other)?,
            self.plan,
            &dir,
            &label,
            role,
            seed,
        )?;
        if role != Role::Recovery {
            let status = if reading.interrupted {
                RunStatus::Interrupted
            } else {
                RunStatus::Complete
            };
            self.group
                .run(&dir.join(&reading.probe.dir), status, None)
                .map_err(|e| other(e.into()))?;
        }
        Ok(reading)
    }

    fn decided(&mut self, probe: &Probe) {
        print_probe(self.plan, probe);
    }

    fn stop_requested(&self) -> bool {
        crate::signals::stop_requested()
    }

    fn pause(&mut self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// Records one probe into `dir` as `name` and reads it.
fn run_probe(
    run: Resolved,
    plan: &Plan,
    dir: &Path,
    name: &str,
    role: Role,
    seed: Option<u64>,
) -> Result<Reading, volley_capacity::Error> {
    let other = |e: anyhow::Error| volley_capacity::Error::new(Kind::Other, format!("{e:#}"));
    let warmup = run.warmup;
    let mut group = run.group().map_err(other)?;
    group.run.output = dir.to_path_buf();
    group.run.name = name.to_string();
    let interval = group.run.engine.interval.as_secs_f64().max(1e-3);
    let mut watch = Watch {
        rule: EarlyStop::new(&plan.slo, (warmup.as_secs_f64() / interval).ceil() as u64),
        control: None,
    };
    let recorded = match volley_record::record(&group.run, &mut watch) {
        Ok(r) => r,
        Err(e)
            if e.engine()
                .is_some_and(|e| e.is_unreachable() || e.is_resolve()) =>
        {
            return Err(volley_capacity::Error::new(Kind::Target, e.to_string()));
        }
        Err(e) => return Err(other(e.into())),
    };
    let (report, source) = crate::run_cmd::write_reports_of(&recorded.dir, false).map_err(other)?;
    let judged = capacity::judge(&source, &report, &plan.slo, ReportOptions::default());
    let ttfb = report.per_request.ttfb_ms.as_ref();
    let tps = capacity::full_interval_tps(&source, &report);
    let server = capacity::server_limit(&report);
    let stalled_ms = report
        .generator
        .as_ref()
        .map(|g| g.sched_lag_max_ms)
        .filter(|&ms| ms > volley_stats::compare::STALL_MS);
    Ok(Reading {
        probe: Probe {
            offered: match plan.kind {
                LoadKind::Rate => run_rate(&run).unwrap_or(f64::NAN),
                LoadKind::Vus => run.plan.load.max_vus() as f64,
            },
            achieved_tps: tps,
            ttfb_p50_ms: ttfb.map(|t| t.p50_ms),
            ttfb_p99_ms: ttfb.map(|t| t.p99_ms),
            error_rate_pct: report.seed_suite.error_rate_pct,
            concurrency: ttfb.map_or(f64::NAN, |t| tps * t.mean_ms / 1000.0),
            verdict: Outcome::Fail,
            role: role.name().to_string(),
            stopped_early: watch.rule.stopped().map(str::to_string),
            judged: judged.detail.clone(),
            generator: judged.generator.clone(),
            server: server.as_ref().map(|(r, d)| format!("{r}: {d}")),
            seed,
            dir: recorded
                .dir
                .strip_prefix(dir)
                .unwrap_or(&recorded.dir)
                .to_string_lossy()
                .into_owned(),
        },
        passed: judged.passed,
        near: judged.near,
        generator: judged.generator,
        interrupted: recorded.status == RunStatus::Interrupted,
        stalled_ms,
        server,
        tps_se: judged.tps_se,
        target_down: capacity::target_down(&report),
    })
}

/// The constant rate of a probe's plan.
fn run_rate(run: &Resolved) -> Option<f64> {
    run.settings.load.rate
}

pub(crate) fn capacity(a: CapacityArgs) -> Result<ExitCode> {
    let (_, _, code) = search(a)?;
    Ok(code)
}

/// Runs the search: its directory, its result, and the exit code it earns.
pub(crate) fn search(a: CapacityArgs) -> Result<(PathBuf, Capacity, ExitCode)> {
    let (plan, base) = plan(&a)?;
    // The first probe's run, resolved: every flag error before any load, and the name.
    let first = base.with_load(
        match plan.kind {
            LoadKind::Rate => ConstantLoad::Rate(plan.search.start, plan.probe_seed(1)),
            LoadKind::Vus => ConstantLoad::Vus(plan.search.start as u64),
        },
        plan.probe,
        plan.warmup,
        &plan.slo,
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
        "volley: capacity search of {name} under SLO {}{} — {} {}..{}, probes of {} after a {} warm-up; results in {}",
        plan.slo_text(),
        if plan.error_slo_added {
            " (the error SLO applies by default)"
        } else {
            ""
        },
        match plan.kind {
            LoadKind::Rate => "rates",
            LoadKind::Vus => "VUs",
        },
        volley_formats::numfmt::grouped(plan.search.start),
        volley_formats::numfmt::grouped(plan.search.max),
        humantime::format_duration(plan.probe),
        humantime::format_duration(plan.warmup),
        dir.display()
    );
    let started = Instant::now();
    let arrivals = first.plan.load.arrivals.label();
    let mut prober = Recorder {
        plan: &plan,
        base: &base,
        dir: dir.clone(),
        group,
        n: 0,
        checks: 0,
    };
    let ended = volley_capacity::run(&plan, &mut prober);
    let Recorder { mut group, .. } = prober;
    let ended = match ended {
        Ok(e) => e,
        Err(e) => {
            // No group is left `running`: it failed, and says why.
            let _ = group.finish(RunStatus::Aborted, Some(e.to_string()));
            bail!("the capacity search stopped: {e}");
        }
    };
    let result = volley_capacity::result::assemble(
        &plan,
        &name,
        match plan.poisson_seed {
            Some(seed) => format!("poisson (search seed {seed}, one seed per probe)"),
            None => arrivals,
        },
        ended,
        started.elapsed(),
    );
    let (status, why) = match result.status.as_str() {
        "interrupted" => (
            RunStatus::Interrupted,
            Some("stopped by the user: the bracket so far is in capacity.json".to_string()),
        ),
        "target_failed" | "unstable" => (
            RunStatus::Aborted,
            Some(format!(
                "{}: the bracket so far is in capacity.json",
                result.status.replace('_', " ")
            )),
        ),
        _ => (RunStatus::Complete, None),
    };
    group.finish(status, why)?;
    write_result(&result, &dir)?;
    // About one screen, the answer first (`--verbose`: everything); the files hold it all.
    let detail = crate::run_cmd::detail_of(a.run.verbose);
    let rest = dir.join("capacity.md");
    println!(
        "\n{}",
        result
            .doc(&[])
            .terminal_as(detail, &rest.display().to_string())
    );
    eprintln!(
        "volley: wrote {0}/capacity.json, capacity.md, capacity.html and charts/",
        dir.display()
    );
    let code = if result.passed() {
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
            .or_else(|| {
                p.judged
                    .contains("throughput fell")
                    .then(|| " (throughput fell below a lower load's)".to_string())
            })
            .unwrap_or_default()
    );
}

/// capacity.json, capacity.md, capacity.html and the charts into `dir`.
pub(crate) fn write_result(c: &Capacity, dir: &Path) -> Result<()> {
    Ok(c.write(dir)?)
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
