//! Recording one run: the target checked, the engine started, each interval written to the
//! run directory as it ends (and shown to the observer after), the server scraped beside it,
//! run.json kept current. A run of populations is [`crate::populations`].

use volley_engine::{Event, Retarget};
use volley_rundir::RunWriter;
use volley_rundir::rundir::PlanChangeNote;

use crate::write::{record_scrapes, status_of, write_interval};
use crate::{Error, IntervalView, Observer, Recorded, RunSpec, RunStart, populations};

/// Checks the target answers, runs the plan, and writes its run directory as it goes.
pub fn record(spec: &RunSpec, observer: &mut dyn Observer) -> Result<Recorded, Error> {
    if !spec.populations.is_empty() {
        return populations::record_populations(spec, observer);
    }
    let engine = &spec.engine;
    volley_engine::preflight(&engine.target, &engine.tls, engine.timeout_for_preflight())?;
    // Resolved before any load is sent: a missing permission or Deployment stops it here.
    let mut kube = spec
        .kube
        .clone()
        .map(volley_kube::Watcher::connect)
        .transpose()?;
    let run = volley_engine::start(engine.clone())?;
    let mut meta = spec.meta();
    if let Ok(t) = jiff::Timestamp::try_from(run.started) {
        meta.started_at = t.to_string();
    }
    if let Some(note) = &mut meta.segment {
        note.start_lag_ms = run.start_lag.as_secs_f64() * 1000.0;
    }
    meta.kube = kube.as_ref().map(|k| k.note().clone());
    let mut writer = RunWriter::create(&spec.output, meta, run.started)?;
    if let Some(k) = &mut kube {
        let dir = writer.dir().to_path_buf();
        k.start(run.t0, run.started, engine.interval, dir);
    }
    observer.started(&RunStart {
        dir: writer.dir(),
        control: run.control(),
        meta: writer.meta(),
        started: run.started,
    });
    let scraper = (!spec.server_metrics.is_empty()).then(|| {
        volley_engine::scrape::start(
            spec.server_metrics.clone(),
            engine.tls.clone(),
            run.t0,
            engine.interval,
        )
    });
    let mut stopped = None;
    let mut index = 0u64;
    while let Some(event) = run.next_event() {
        match event {
            Event::Interval {
                sample,
                steps,
                row,
                messages,
                target_vus,
            } => {
                write_interval(&mut writer, &sample, &row, &steps, &messages)?;
                observer.interval(&IntervalView {
                    index,
                    row: &row,
                    sample: &sample,
                    steps: &steps,
                    target_vus,
                    messages: &messages,
                });
                index += 1;
                if let Some(scraper) = &scraper {
                    record_scrapes(&mut writer, scraper, engine.interval, observer)?;
                }
            }
            Event::PlanChanged(change) => {
                let (vus, rate) = match change.to {
                    Retarget::Vus(v) => (Some(v), None),
                    Retarget::Rate(r) => (None, Some(r)),
                };
                let note = PlanChangeNote {
                    at_s: change.at.as_secs_f64(),
                    vus,
                    rate,
                    by: change.by,
                };
                writer.meta_mut().plan_changes.push(note.clone());
                writer.write_meta()?;
                observer.plan_changed(&note);
            }
            Event::End(end) => {
                observer.finished();
                writer.meta_mut().outputs = observer.outputs();
                if let Some(scraper) = &scraper {
                    scraper.stop();
                    record_scrapes(&mut writer, scraper, engine.interval, observer)?;
                }
                if let Some(k) = kube.take() {
                    writer.meta_mut().kube = Some(k.stop());
                }
                stopped = Some(end.stopped);
                break;
            }
        }
    }
    let (status, reason) = status_of(stopped.flatten());
    writer.finish(status, reason.clone())?;
    Ok(Recorded {
        dir: writer.dir().to_path_buf(),
        status,
        reason,
    })
}
