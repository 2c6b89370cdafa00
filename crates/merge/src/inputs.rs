//! Finding the segments' run directories among the inputs, reading them, and checking that
//! they are segments of one run that can be lined up.

use std::path::{Path, PathBuf};

use volley_rundir::segment::SegmentNote;
use volley_rundir::{RunData, RunStatus};
use volley_scenario::Segment;

use crate::{Error, MergeOptions, Repr};

/// How deep under an input directory run directories are looked for
/// (`<run id>/<segment>/<time>_<name>/`, as launchers lay them out).
const MAX_DEPTH: usize = 3;

/// The run directories among `inputs`: each input is one, or holds some (up to three
/// levels down); `out` is skipped. In name order, so the result does not depend on the
/// file system's.
pub fn find_run_dirs(inputs: &[PathBuf], out: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut found = Vec::new();
    for input in inputs {
        let before = found.len();
        walk(input, out, 0, &mut found)?;
        if found.len() == before {
            return Err(Repr::NoRuns(input.display().to_string()).into());
        }
    }
    if found.is_empty() {
        return Err(Repr::NoRuns("the inputs".into()).into());
    }
    Ok(found)
}

fn walk(dir: &Path, out: &Path, depth: usize, found: &mut Vec<PathBuf>) -> Result<(), Error> {
    if dir == out {
        return Ok(());
    }
    if RunData::is_run_dir(dir) {
        found.push(dir.to_path_buf());
        return Ok(());
    }
    if depth >= MAX_DEPTH || !dir.is_dir() {
        return Ok(());
    }
    let read = std::fs::read_dir(dir).map_err(|e| volley_rundir::Error::io(dir, e))?;
    let mut children: Vec<PathBuf> = read
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    children.sort();
    for c in children {
        walk(&c, out, depth + 1, found)?;
    }
    Ok(())
}

/// One segment's run directory, read.
pub(crate) struct Input {
    pub(crate) segment: Segment,
    pub(crate) note: SegmentNote,
    pub(crate) data: RunData,
    /// Where its intervals start in the merged run, in intervals.
    pub(crate) offset: u64,
    /// Its start.
    pub(crate) started_at: jiff::Timestamp,
}

/// The segments of one run, checked, in index order.
pub(crate) struct SegmentSet {
    pub(crate) segments: Vec<Input>,
    pub(crate) run_id: String,
    pub(crate) count: u64,
    pub(crate) missing: Vec<u64>,
    /// The earliest start: the merged run's.
    pub(crate) started_at: jiff::Timestamp,
}

impl SegmentSet {
    pub(crate) fn read(dirs: &[PathBuf], opts: &MergeOptions) -> Result<SegmentSet, Error> {
        let mut segments: Vec<Input> = Vec::new();
        for dir in dirs {
            // The histograms are read as they are merged, interval by interval (rebuild.rs).
            let data = RunData::read_without_histograms(dir)?;
            let note = data
                .meta
                .segment
                .clone()
                .ok_or_else(|| Repr::NotASegment(dir.clone()))?;
            let started_at: jiff::Timestamp = data.meta.started_at.parse().map_err(|e| {
                volley_rundir::Error::malformed(
                    dir.join("run.json"),
                    1,
                    None,
                    format!("started_at `{}`: {e}", data.meta.started_at),
                )
            })?;
            if note.segment.count == 0 || note.segment.index >= note.segment.count {
                return Err(volley_rundir::Error::malformed(
                    dir.join("run.json"),
                    1,
                    None,
                    format!(
                        "segment index {} of {}: a segment's index is 0 to its count − 1; this run directory was not written by volley run --segment, or was edited",
                        note.segment.index, note.segment.count
                    ),
                )
                .into());
            }
            // The hash is recomputed from the plan rather than trusted: a plan edited after
            // the run (another URL, 400 VUs for 4) would otherwise merge as the one recorded.
            let recomputed = volley_rundir::segment::plan_hash(&data.meta.plan);
            if recomputed != note.plan_hash {
                return Err(Repr::PlanEdited {
                    dir: dir.clone(),
                    recorded: note.plan_hash.clone(),
                    recomputed,
                }
                .into());
            }
            segments.push(Input {
                segment: note.segment,
                note,
                data,
                offset: 0,
                started_at,
            });
        }
        segments.sort_by_key(|s| s.segment.index);
        let first = &segments[0];
        let mismatch =
            |s: &Input, what: &'static str, theirs: String, ours: String| Repr::Mismatch {
                dir: s.data.dir.clone(),
                what,
                theirs,
                first: first.data.dir.clone(),
                ours,
            };
        for s in &segments[1..] {
            if s.note.run_id != first.note.run_id {
                return Err(mismatch(
                    s,
                    "its run id",
                    s.note.run_id.clone(),
                    first.note.run_id.clone(),
                )
                .into());
            }
            if s.note.plan_hash != first.note.plan_hash {
                return Err(mismatch(
                    s,
                    "the hash of its plan",
                    s.note.plan_hash.clone(),
                    first.note.plan_hash.clone(),
                )
                .into());
            }
            if s.segment.count != first.segment.count {
                return Err(mismatch(
                    s,
                    "its segment count",
                    s.segment.count.to_string(),
                    first.segment.count.to_string(),
                )
                .into());
            }
            if s.data.meta.interval_s != first.data.meta.interval_s {
                return Err(mismatch(
                    s,
                    "its interval (s)",
                    s.data.meta.interval_s.to_string(),
                    first.data.meta.interval_s.to_string(),
                )
                .into());
            }
        }
        for pair in segments.windows(2) {
            if pair[0].segment == pair[1].segment {
                return Err(Repr::Duplicate {
                    segment: pair[0].segment.to_string(),
                    first: pair[0].data.dir.clone(),
                    second: pair[1].data.dir.clone(),
                }
                .into());
            }
        }
        let earliest = segments
            .iter()
            .min_by_key(|s| s.started_at)
            .expect("one at least");
        let latest = segments
            .iter()
            .max_by_key(|s| s.started_at)
            .expect("one at least");
        let apart = latest
            .started_at
            .duration_since(earliest.started_at)
            .unsigned_abs();
        if apart > opts.start_tolerance {
            return Err(Repr::StartsApart {
                first: earliest.data.dir.clone(),
                first_at: earliest.data.meta.started_at.clone(),
                last: latest.data.dir.clone(),
                last_at: latest.data.meta.started_at.clone(),
                apart_ms: apart.as_secs_f64() * 1000.0,
                tolerance_ms: opts.start_tolerance.as_secs_f64() * 1000.0,
            }
            .into());
        }
        let started_at = earliest.started_at;
        let interval_s = first.data.meta.interval_s;
        for s in &mut segments {
            let behind = s.started_at.duration_since(started_at).as_secs_f64();
            s.offset = (behind / interval_s).round() as u64;
        }
        let count = segments[0].segment.count;
        let run_id = segments[0].note.run_id.clone();
        let missing = (0..count)
            .filter(|i| !segments.iter().any(|s| s.segment.index == *i))
            .collect();
        Ok(SegmentSet {
            segments,
            run_id,
            count,
            missing,
            started_at,
        })
    }

    /// `partial` when segments are missing; otherwise the worst status of a segment.
    pub(crate) fn status(&self) -> RunStatus {
        if !self.missing.is_empty() {
            return RunStatus::Partial;
        }
        let rank = |s: RunStatus| match s {
            RunStatus::Complete => 0,
            RunStatus::Interrupted => 1,
            RunStatus::Running => 2,
            RunStatus::DidNotFinish => 3,
            RunStatus::Partial => 4,
            RunStatus::Aborted => 5,
        };
        self.segments
            .iter()
            .map(|s| s.data.meta.status)
            .max_by_key(|s| rank(*s))
            .unwrap_or(RunStatus::Complete)
    }

    /// Why the merged run is not complete, when it is not.
    pub(crate) fn reason(&self) -> Option<String> {
        let mut why = Vec::new();
        if !self.missing.is_empty() {
            let names: Vec<String> = self
                .missing
                .iter()
                .map(|i| format!("{i}/{}", self.count))
                .collect();
            why.push(format!(
                "segment{} {} missing: the figures cover {} of {} segments",
                if names.len() == 1 { "" } else { "s" },
                names.join(", "),
                self.segments.len(),
                self.count
            ));
        }
        for s in self
            .segments
            .iter()
            .filter(|s| s.data.meta.status != RunStatus::Complete)
        {
            let reason = s
                .data
                .meta
                .reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default();
            why.push(format!(
                "segment {} {}{reason}",
                s.segment,
                s.data.meta.status.name()
            ));
        }
        (!why.is_empty()).then(|| why.join("; "))
    }

    /// The hosts that ran the segments, each once.
    pub(crate) fn hosts(&self) -> Vec<String> {
        let mut hosts: Vec<String> = Vec::new();
        for s in &self.segments {
            if !hosts.contains(&s.data.meta.host) {
                hosts.push(s.data.meta.host.clone());
            }
        }
        hosts
    }

    /// When the last segment ended.
    pub(crate) fn ended_at(&self) -> Option<String> {
        let ends: Option<Vec<jiff::Timestamp>> = self
            .segments
            .iter()
            .map(|s| s.data.meta.ended_at.as_deref().and_then(|e| e.parse().ok()))
            .collect();
        ends.and_then(|e| e.into_iter().max())
            .map(|t| t.to_string())
    }
}
