//! `volley merge`: the run directories of a split run's segments (`volley run --segment
//! i/N`) made into one run directory that every report, comparison and chart reads as it
//! reads a single run.
//!
//! Exact where the data is: request and error counts and the interval histograms are
//! added, bucket for bucket; means are weighted by their counts (nGrinder's way), VUs summed
//! per interval. The generators' own health (late and dropped arrivals, dispatch lag, CPU)
//! is kept per segment in run.json (`merged.segments`) and `generators.csv`.
//!
//! It refuses segments of different runs or plans, two directories of one segment (a
//! retried pod) and segments whose starts lie further apart than a tolerance; missing
//! segments are merged around and the result is marked `partial`, naming them.

mod error;
mod inputs;
mod kube;
mod notes;
mod rebuild;

use std::path::{Path, PathBuf};
use std::time::Duration;

use volley_rundir::rundir::RunMeta;
use volley_rundir::segment::MergedFrom;
use volley_rundir::{RunStatus, RunWriter};

use error::Repr;
pub use error::{Error, Kind};
pub use inputs::find_run_dirs;
pub use notes::GENERATORS_CSV;

/// How to merge.
#[derive(Debug, Clone)]
pub struct MergeOptions {
    /// Segments whose recorded starts lie further apart than this are refused.
    pub start_tolerance: Duration,
}

impl Default for MergeOptions {
    /// One second: segments started with `--start-at` start within milliseconds.
    fn default() -> Self {
        MergeOptions {
            start_tolerance: Duration::from_secs(1),
        }
    }
}

/// A merged run directory.
#[derive(Debug, Clone)]
pub struct Merged {
    /// Where it was written.
    pub dir: PathBuf,
    /// `complete`, `partial` (segments missing), or the worst status of a segment.
    pub status: RunStatus,
    /// The run id the segments share.
    pub run_id: String,
    /// Segments merged, by index.
    pub segments: Vec<u64>,
    /// Segments of the run that were not among the inputs.
    pub missing: Vec<u64>,
    /// Segments merged that did not run their whole plan (interrupted, aborted, or never
    /// finished), with their status: the merged figures lack their share from where they
    /// stopped.
    pub unfinished: Vec<(u64, RunStatus)>,
    /// Intervals written.
    pub intervals: usize,
}

/// Merges the segment run directories found under `inputs` (run directories, or
/// directories holding them) into one run directory at `out`.
pub fn merge(inputs: &[PathBuf], out: &Path, opts: &MergeOptions) -> Result<Merged, Error> {
    if out.join(volley_rundir::rundir::RUN_JSON).exists() {
        return Err(Repr::Output(
            out.to_path_buf(),
            "already holds a run directory; give a new directory for the merged run".into(),
        )
        .into());
    }
    let dirs = find_run_dirs(inputs, out)?;
    merge_dirs(&dirs, out, opts)
}

/// Merges exactly the segment run directories `dirs` into `out`; a run of populations has
/// each population's directories merged the same way into `out/populations/<name>`, so the
/// merged total and every merged population are exact (counts and histograms added).
fn merge_dirs(dirs: &[PathBuf], out: &Path, opts: &MergeOptions) -> Result<Merged, Error> {
    let set = inputs::SegmentSet::read(dirs, opts)?;
    let first = &set.segments[0];
    let interval_s = first.data.meta.interval_s;
    let status = set.status();
    let meta = RunMeta {
        status: RunStatus::Running,
        reason: None,
        started_at: set.started_at.to_string(),
        ended_at: None,
        pid: None,
        host: set.hosts().join(", "),
        command: std::env::args().collect(),
        errors: notes::errors(&set),
        server_metrics: first.data.meta.server_metrics.clone(),
        segment: None,
        kube: kube::note(&set),
        merged: Some(MergedFrom {
            run_id: set.run_id.clone(),
            count: set.count,
            missing: set.missing.clone(),
            segments: notes::origins(&set),
            notes: Vec::new(),
        }),
        ..first.data.meta.clone()
    };
    let started = std::time::SystemTime::from(set.started_at);
    let mut writer = RunWriter::create_at(out, meta, started)?;
    let (intervals, mut found) = rebuild::write_intervals(&set, &mut writer, interval_s)?;
    // The segments' own input notes (rows their series could not give), then the above.
    let mut merge_notes: Vec<String> = set
        .segments
        .iter()
        .flat_map(|s| {
            s.data
                .input_notes
                .iter()
                .map(move |n| format!("segment {}: {n}", s.segment))
        })
        .collect();
    merge_notes.append(&mut found);
    if let Some(m) = writer.meta_mut().merged.as_mut() {
        m.notes = merge_notes;
    }
    notes::write_generators(&set, out, interval_s)?;
    kube::copy(&set, out, interval_s)?;
    // The server's own metrics are the same server seen from every segment: the first
    // segment's scrapes stand for them, moved by where its rows start in the merged run (as
    // kube.csv is), so a scrape stays beside the load it saw.
    let shift = first.offset as f64 * interval_s;
    let mut points = first.data.server.iter().peekable();
    while let Some(p) = points.next() {
        let mut values = vec![(p.series.clone(), p.value, p.rate)];
        while let Some(q) = points.next_if(|q| q.elapsed_s == p.elapsed_s && q.target == p.target) {
            values.push((q.series.clone(), q.value, q.rate));
        }
        writer.write_server(p.elapsed_s + shift, &p.target, &values)?;
    }
    let ended_at = set.ended_at();
    writer.finish(status, set.reason())?;
    if let Some(end) = ended_at {
        // `finish` stamps the time of the merge; the run ended when its last segment did.
        writer.meta_mut().ended_at = Some(end);
        writer.write_meta()?;
    }
    for p in &first.data.meta.plan.populations {
        let sub: Vec<PathBuf> = set
            .segments
            .iter()
            .map(|s| s.data.dir.join(&p.dir))
            .collect();
        if let Some(missing) = sub.iter().find(|d| !volley_rundir::RunData::is_run_dir(d)) {
            return Err(Repr::Output(
                missing.clone(),
                format!(
                    "population `{}` of this segment has no run directory here; every segment of a run of populations holds one per population",
                    p.name
                ),
            ).into());
        }
        merge_dirs(&sub, &out.join(&p.dir), opts)?;
    }
    Ok(Merged {
        dir: out.to_path_buf(),
        status,
        run_id: set.run_id.clone(),
        segments: set.segments.iter().map(|s| s.segment.index).collect(),
        missing: set.missing.clone(),
        unfinished: set
            .segments
            .iter()
            .filter(|s| s.data.meta.status != RunStatus::Complete)
            .map(|s| (s.segment.index, s.data.meta.status))
            .collect(),
        intervals,
    })
}
