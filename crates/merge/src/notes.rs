//! What the merged run.json says beyond the series: the segments' errors combined, and
//! each segment's origin and generator health, also per interval in `generators.csv`.

use std::io::Write;
use std::path::Path;

use volley_rundir::numfmt::ngrinder_number;
use volley_rundir::rundir::{ErrorNote, NotedMessage};
use volley_rundir::segment::SegmentOrigin;

use crate::Error;
use crate::inputs::SegmentSet;

/// Per-segment generator health, one row per segment and interval.
pub const GENERATORS_CSV: &str = "generators.csv";

/// The segments' error notes as one: counts added per kind, messages pooled under the same
/// limit a run keeps ([`volley_stats::MESSAGES_PER_STEP`] per step and kind, no repeats).
pub(crate) fn errors(set: &SegmentSet) -> Vec<ErrorNote> {
    let mut out: Vec<ErrorNote> = Vec::new();
    for s in &set.segments {
        for note in &s.data.meta.errors {
            let i = match out.iter().position(|n| n.kind == note.kind) {
                Some(i) => i,
                None => {
                    out.push(ErrorNote {
                        kind: note.kind,
                        count: 0,
                        messages: Vec::new(),
                    });
                    out.len() - 1
                }
            };
            let merged = &mut out[i];
            merged.count += note.count;
            for m in &note.messages {
                let same_step = merged
                    .messages
                    .iter()
                    .filter(|n: &&NotedMessage| n.step == m.step)
                    .count();
                if same_step < volley_stats::MESSAGES_PER_STEP && !merged.messages.contains(m) {
                    merged.messages.push(m.clone());
                }
            }
        }
    }
    out
}

/// Where each segment ran and how its generator fared over the run.
pub(crate) fn origins(set: &SegmentSet) -> Vec<SegmentOrigin> {
    set.segments
        .iter()
        .map(|s| {
            let d = &s.data;
            SegmentOrigin {
                segment: s.segment,
                dir: d.dir.display().to_string(),
                host: d.meta.host.clone(),
                status: d.meta.status.name().to_string(),
                started_at: d.meta.started_at.clone(),
                start_lag_ms: s.note.start_lag_ms,
                offset_intervals: s.offset,
                tests: d.series.tests(),
                errors: d.series.errors(),
                late: d.generator.iter().map(|g| g.late).sum(),
                dropped: d.generator.iter().map(|g| g.dropped).sum(),
                sched_lag_max_ms: d
                    .generator
                    .iter()
                    .map(|g| g.sched_lag_max_ms)
                    .fold(0.0, f64::max),
                cpu_max_pct: d.generator.iter().map(|g| g.cpu_pct).fold(0.0, f64::max),
                clock: s.note.clock.clone(),
            }
        })
        .collect()
}

/// Writes `generators.csv`: `Segment,Elapsed_(s),Late,Dropped,Schedule_lag_max_(ms),Generator_CPU_(%)`,
/// elapsed at the end of each interval of the merged run.
pub(crate) fn write_generators(set: &SegmentSet, out: &Path, interval_s: f64) -> Result<(), Error> {
    let path = out.join(GENERATORS_CSV);
    let io = |e| Error::from(volley_rundir::Error::io(&path, e));
    let mut w = std::io::BufWriter::new(std::fs::File::create(&path).map_err(io)?);
    writeln!(
        w,
        "Segment,Elapsed_(s),Late,Dropped,Schedule_lag_max_(ms),Generator_CPU_(%)"
    )
    .map_err(io)?;
    for s in &set.segments {
        for (j, g) in s.data.generator.iter().enumerate() {
            let row = &s.data.series.intervals[j];
            let elapsed = (s.offset as f64 + j as f64) * interval_s + row.period_s;
            writeln!(
                w,
                "{},{},{},{},{},{}",
                s.segment,
                ngrinder_number(elapsed),
                g.late,
                g.dropped,
                ngrinder_number(g.sched_lag_max_ms),
                ngrinder_number(g.cpu_pct)
            )
            .map_err(io)?;
        }
    }
    w.flush().map_err(io)
}
