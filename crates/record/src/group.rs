//! Recording a run group: one plan run N times in a row, with an optional pause between
//! runs, each run a run directory inside the group directory, and group.json kept current
//! so a group stopped half-way says which runs completed.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use volley_rundir::{GroupWriter, RunStatus};

use crate::{Error, Observer, Recorded, RunSpec, record};

/// A group to record.
#[derive(Debug, Clone)]
pub struct GroupSpec {
    /// Every run of the group; its `output` is where the group directory goes.
    pub run: RunSpec,
    /// Runs (at least 1).
    pub repeat: usize,
    /// Pause between runs.
    pub pause: Duration,
}

/// A recorded group.
#[derive(Debug, Clone)]
pub struct RecordedGroup {
    /// The group directory.
    pub dir: PathBuf,
    /// The runs recorded, in order.
    pub runs: Vec<Recorded>,
    /// `complete` when every run ran its course; `interrupted` when the user stopped it.
    pub status: RunStatus,
}

/// Runs `spec.run` `spec.repeat` times into a group directory under `spec.run.output`.
/// Stops before the next run once a run was interrupted or the observer says stop; a run
/// that cannot start (the target stopped answering) ends the group with that error, the
/// runs before it kept.
pub fn record_group(spec: &GroupSpec, observer: &mut dyn Observer) -> Result<RecordedGroup, Error> {
    let repeat = spec.repeat.max(1);
    let mut group = GroupWriter::create(
        &spec.run.output,
        &spec.run.name,
        repeat,
        spec.pause.as_secs_f64(),
        spec.run.recorded_plan(),
    )?;
    let mut runs = Vec::new();
    let mut stopped = false;
    for i in 0..repeat {
        if i > 0 && !pause(spec.pause, observer) {
            stopped = true;
            break;
        }
        if !observer.keep_going() {
            stopped = true;
            break;
        }
        observer.run_starting(i, repeat);
        let mut run = spec.run.clone();
        run.output = group.dir().to_path_buf();
        run.name = format!("{}-{}", spec.run.name, i + 1);
        let recorded = match record(&run, observer) {
            Ok(r) => r,
            Err(e) => {
                group.finish(
                    RunStatus::Aborted,
                    Some(format!(
                        "run {} of {repeat} could not be recorded: {e}",
                        i + 1
                    )),
                )?;
                return Err(e);
            }
        };
        group.run(&recorded.dir, recorded.status, recorded.reason.clone())?;
        observer.run_recorded(&recorded);
        let interrupted = recorded.status == RunStatus::Interrupted;
        runs.push(recorded);
        if interrupted {
            stopped = true;
            break;
        }
    }
    let status = if stopped {
        RunStatus::Interrupted
    } else {
        RunStatus::Complete
    };
    let reason =
        stopped.then(|| format!("stopped by the user after {} of {repeat} runs", runs.len()));
    group.finish(status, reason)?;
    Ok(RecordedGroup {
        dir: group.dir().to_path_buf(),
        runs,
        status,
    })
}

/// Waits `d`, asking the observer every 100 ms whether to go on; `false` when it said stop.
fn pause(d: Duration, observer: &mut dyn Observer) -> bool {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if !observer.keep_going() {
            return false;
        }
        std::thread::sleep((end - Instant::now()).min(Duration::from_millis(100)));
    }
    true
}
