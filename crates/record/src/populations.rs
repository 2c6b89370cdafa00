//! Recording a run of several populations (a scenario file's `scenarios:`): one engine run
//! per population, all started at one instant so their intervals line up exactly, each
//! written to a run directory of its own under `populations/<name>/`, and the run's total —
//! interval `k` of every population merged, histograms added bucket for bucket — written
//! to the run directory itself, where every report, comparison and merge reads it as any
//! run. A population that starts later runs on the same clock (its load is
//! [`volley_scenario::Load::delayed`]), so nothing needs shifting.
//!
//! Worker threads are split between the populations (`threads / n` each, the first ones
//! taking the remainder, at least one each), so the generator uses as many event loops as
//! it would for one run. The generator CPU each engine measures is the whole process's
//! over its own threads; it is rescaled to the process's share of all the run's threads,
//! so every population and the total show the same, comparable figure.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

use volley_engine::{EngineConfig, Event, RunControl, StopReason};
use volley_rundir::RunWriter;
use volley_rundir::recorded::RecordedPopulation;
use volley_rundir::rundir::POPULATIONS_DIR;
use volley_scenario::{Load, Plan, Threshold, qualified_step};
use volley_stats::{ErrorMessage, Interval, IntervalSample};

use crate::write::{record_scrapes, status_of, write_interval};
use crate::{Error, IntervalView, Observer, Recorded, RunSpec, RunStart};

/// One population of a run.
#[derive(Debug, Clone)]
pub struct PopulationSpec {
    /// Its name (letters, digits, `_`, `-`).
    pub name: String,
    /// What its engine runs: its scenario under its load, delayed by `start` onto the run's clock.
    pub plan: Plan,
    /// Its load as written (from its own start).
    pub load: Load,
    /// When it starts, from the start of the run.
    pub start: Duration,
    /// Its own thresholds (each with `population` set).
    pub thresholds: Vec<Threshold>,
}

impl PopulationSpec {
    /// What run.json records of it.
    pub fn recorded(&self, threads: usize) -> RecordedPopulation {
        RecordedPopulation {
            name: self.name.clone(),
            load: self.load.clone(),
            start_s: self.start.as_secs_f64(),
            threads,
            dir: format!("{POPULATIONS_DIR}/{}", self.name),
        }
    }
}

/// Worker threads of population `i` of `n` when the run has `threads`.
pub fn threads_of(i: usize, n: usize, threads: usize) -> usize {
    let n = n.max(1);
    (threads / n + usize::from(i < threads % n)).max(1)
}

/// The run of one population as if it were a run of its own: its plan, threads, thresholds
/// (without the population prefix: they are this run's own), warm-up (the run's, or until
/// it starts when that is later, so its figures cover only the time it ran).
fn population_run(spec: &RunSpec, i: usize) -> RunSpec {
    let p = &spec.populations[i];
    let mut run = spec.clone();
    run.populations = Vec::new();
    run.engine = EngineConfig {
        plan: p.plan.clone(),
        threads: threads_of(i, spec.populations.len(), spec.engine.threads),
        ..spec.engine.clone()
    };
    run.name = p.name.clone();
    run.warmup = spec.warmup.max(p.start);
    run.server_metrics = Vec::new();
    run.kube = None;
    run.thresholds = p
        .thresholds
        .iter()
        .map(|t| Threshold {
            expr: t.local_expr().to_string(),
            population: None,
            ..t.clone()
        })
        .collect();
    if spec.is_segment() {
        run.run_id = Some(spec.run_id());
    }
    run
}

/// Interval `k` of the total, gathered from the populations as they deliver it.
struct Pending {
    sample: IntervalSample,
    /// Each population's step samples (`None` until it delivered this interval).
    steps: Vec<Option<Vec<IntervalSample>>>,
    period_s: f64,
    vusers: f64,
    target_vus: u64,
    messages: Vec<ErrorMessage>,
}

/// Records a run of populations (`spec.populations`, not empty).
pub(crate) fn record_populations(
    spec: &RunSpec,
    observer: &mut dyn Observer,
) -> Result<Recorded, Error> {
    let engine = &spec.engine;
    volley_engine::preflight(&engine.target, &engine.tls, engine.timeout_for_preflight())?;
    // The workload is watched once, for the whole run (the populations load the same
    // target): resolved before any load, recorded in this run's directory.
    let mut kube = spec
        .kube
        .clone()
        .map(volley_kube::Watcher::connect)
        .transpose()?;
    let n = spec.populations.len();
    // One instant for all: the first start waits for it, the others find it passed and
    // count their intervals from it all the same.
    let at = engine
        .start_at
        .unwrap_or_else(|| SystemTime::now() + Duration::from_millis(100));
    let runs_specs: Vec<RunSpec> = (0..n).map(|i| population_run(spec, i)).collect();
    let mut runs = Vec::new();
    for r in &runs_specs {
        let config = EngineConfig {
            start_at: Some(at),
            ..r.engine.clone()
        };
        match volley_engine::start(config) {
            Ok(run) => runs.push(run),
            Err(e) => {
                runs.iter()
                    .for_each(|r: &volley_engine::Run| r.control().abort());
                return Err(e.into());
            }
        }
    }
    let controls: Vec<RunControl> = runs.iter().map(|r| r.control()).collect();
    let lag = runs.iter().map(|r| r.start_lag).max().unwrap_or_default();
    let t0 = runs[0].t0;
    let mut meta = spec.meta();
    meta.started_at = jiff::Timestamp::try_from(at)
        .map(|t| t.to_string())
        .unwrap_or(meta.started_at);
    if let Some(note) = &mut meta.segment {
        note.start_lag_ms = lag.as_secs_f64() * 1000.0;
    }
    meta.kube = kube.as_ref().map(|k| k.note().clone());
    let mut writer = RunWriter::create(&spec.output, meta, at)?;
    if let Some(k) = &mut kube {
        let dir = writer.dir().to_path_buf();
        k.start(t0, at, engine.interval, dir);
    }
    let mut subs = Vec::new();
    for (i, r) in runs_specs.iter().enumerate() {
        let mut m = r.meta();
        m.started_at = writer.meta().started_at.clone();
        m.population = Some(spec.populations[i].recorded(r.engine.threads));
        if let Some(note) = &mut m.segment {
            note.start_lag_ms = runs[i].start_lag.as_secs_f64() * 1000.0;
        }
        subs.push(RunWriter::create_at(
            &writer
                .dir()
                .join(POPULATIONS_DIR)
                .join(&spec.populations[i].name),
            m,
            at,
        )?);
    }
    let all =
        RunControl::together(controls.clone()).expect("a run of populations has at least one");
    observer.started(&RunStart {
        dir: writer.dir(),
        control: all,
        meta: writer.meta(),
        started: at,
    });
    let scraper = (!spec.server_metrics.is_empty()).then(|| {
        volley_engine::scrape::start(
            spec.server_metrics.clone(),
            engine.tls.clone(),
            t0,
            engine.interval,
        )
    });
    // Every population's events, on one channel, in the order they come.
    let (tx, rx) = mpsc::channel();
    for (i, run) in runs.into_iter().enumerate() {
        let tx = tx.clone();
        std::thread::Builder::new()
            .name(format!("volley-population-{i}"))
            .spawn(move || {
                while let Some(e) = run.next_event() {
                    let end = matches!(e, Event::End(_));
                    if tx.send((i, e)).is_err() || end {
                        break;
                    }
                }
            })
            .map_err(|error| crate::Error::start("a population's event thread", error))?;
    }
    drop(tx);
    let step_counts: Vec<usize> = spec
        .populations
        .iter()
        .map(|p| p.plan.scenario().map_or(0, |s| s.step_info.len()))
        .collect();
    let threads: Vec<usize> = runs_specs.iter().map(|r| r.engine.threads).collect();
    let total_threads: usize = threads.iter().sum();
    let mut next = vec![0u64; n];
    let mut ended: Vec<Option<Option<StopReason>>> = vec![None; n];
    let mut pending: BTreeMap<u64, Pending> = BTreeMap::new();
    let mut index = 0u64;
    let mut stop_reason: Option<StopReason> = None;
    while ended.iter().any(Option::is_none) {
        let Ok((i, event)) = rx.recv() else { break };
        match event {
            Event::Interval {
                mut sample,
                steps,
                row,
                messages,
                target_vus,
            } => {
                let k = next[i];
                next[i] += 1;
                sample.counts.generator_cpu_pct *= threads[i] as f64 / total_threads.max(1) as f64;
                write_interval(&mut subs[i], &sample, &row, &steps, &messages)?;
                let p = pending.entry(k).or_insert_with(|| Pending {
                    sample: IntervalSample::new(k),
                    steps: vec![None; n],
                    period_s: 0.0,
                    vusers: 0.0,
                    target_vus: 0,
                    messages: Vec::new(),
                });
                p.sample.merge(&sample);
                p.period_s = p.period_s.max(row.period_s);
                p.vusers += row.vusers;
                p.target_vus += target_vus;
                let name = &spec.populations[i].name;
                p.messages.extend(messages.into_iter().map(|m| {
                    let step = Some(
                        m.step
                            .as_deref()
                            .map_or_else(|| name.clone(), |s| qualified_step(name, s)),
                    );
                    ErrorMessage { step, ..m }
                }));
                p.steps[i] = Some(steps);
            }
            // Live changes are refused for a run of populations (`LiveModel::Populations`).
            Event::PlanChanged(_) => {}
            Event::End(end) => {
                if let Some(reason) = &end.stopped
                    && stop_reason.is_none()
                {
                    // One population stopped early (Ctrl-C reaches them all; volley's error
                    // stop only the one): the run stops as a whole.
                    let reason = match reason {
                        StopReason::Interrupted => StopReason::Interrupted,
                        StopReason::Terminated => StopReason::Terminated,
                        StopReason::Aborted(why) => StopReason::Aborted(format!(
                            "population `{}`: {why}",
                            spec.populations[i].name
                        )),
                    };
                    for (j, c) in controls.iter().enumerate() {
                        if j != i && ended[j].is_none() {
                            c.stop(reason.clone());
                        }
                    }
                    stop_reason = Some(reason);
                }
                ended[i] = Some(end.stopped);
            }
        }
        // Intervals every population has delivered (or will never deliver) are complete.
        while let Some((&k, _)) = pending.first_key_value() {
            if (0..n).any(|j| ended[j].is_none() && next[j] <= k) {
                break;
            }
            let p = pending.remove(&k).expect("the first key is there");
            emit(spec, &mut writer, observer, index, p, &step_counts)?;
            index += 1;
            if let Some(scraper) = &scraper {
                record_scrapes(&mut writer, scraper, engine.interval, observer)?;
            }
        }
    }
    observer.finished();
    writer.meta_mut().outputs = observer.outputs();
    if let Some(scraper) = &scraper {
        scraper.stop();
        record_scrapes(&mut writer, scraper, engine.interval, observer)?;
    }
    if let Some(k) = kube.take() {
        writer.meta_mut().kube = Some(k.stop());
    }
    for (i, sub) in subs.iter_mut().enumerate() {
        let (status, reason) = status_of(ended[i].clone().flatten());
        sub.finish(status, reason)?;
    }
    let (status, reason) = status_of(stop_reason);
    writer.finish(status, reason.clone())?;
    Ok(Recorded {
        dir: writer.dir().to_path_buf(),
        status,
        reason,
    })
}

/// Writes interval `index` of the total: the populations' samples merged, their steps side
/// by side (an empty sample for a population that had ended).
fn emit(
    spec: &RunSpec,
    writer: &mut RunWriter,
    observer: &mut dyn Observer,
    index: u64,
    p: Pending,
    step_counts: &[usize],
) -> Result<(), Error> {
    let interval = spec.engine.interval.as_secs_f64();
    // A row every population delivered with no length is their drain after the stop.
    let row: Interval = p
        .sample
        .to_interval(interval * index as f64, p.period_s, p.vusers);
    let mut steps = Vec::new();
    for (s, count) in p.steps.into_iter().zip(step_counts) {
        match s {
            Some(s) => steps.extend(s),
            None => steps.extend((0..*count).map(|_| IntervalSample::new(index))),
        }
    }
    write_interval(writer, &p.sample, &row, &steps, &p.messages)?;
    observer.interval(&IntervalView {
        index,
        row: &row,
        sample: &p.sample,
        steps: &steps,
        target_vus: p.target_vus,
        messages: &p.messages,
    });
    Ok(())
}
