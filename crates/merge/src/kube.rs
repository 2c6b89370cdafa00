//! The cluster's record in a merged run: segment 0 is the one that watched (`--kube` is off in
//! the others, their run.json says so), so its kube.jsonl and kube.csv are the run's, their
//! times shifted by where its intervals start in the merged run (as its rows are), and its
//! run.json note is the merged run's. Without segment 0 the note says the record is missing.

use std::io::Write;
use std::path::Path;

use volley_rundir::kube::KubeNote;
use volley_rundir::rundir::{KUBE_CSV, KUBE_JSONL, SERVER_HEADER, read_kube, server_row};

use crate::error::{Error, Repr};
use crate::inputs::{Input, SegmentSet};

/// What run.json's note says when segment 0, the one that watched, is not among the inputs.
pub(crate) const MISSING: &str = "the cluster record is missing (segment 0 missing): segment 0 \
                                  watches for the whole run; merge with its run directory";

/// The segment that watched: segment 0, when it is here and watched.
fn watcher(set: &SegmentSet) -> Option<&Input> {
    set.segments
        .iter()
        .find(|s| s.segment.index == 0 && s.data.meta.kube.is_some())
}

/// The merged run's `kube` note: segment 0's; a note of the record missing when another
/// segment was given `--kube` and segment 0 is not here; `None` when nobody watched.
pub(crate) fn note(set: &SegmentSet) -> Option<KubeNote> {
    if let Some(s) = watcher(set) {
        return s.data.meta.kube.clone();
    }
    let other = set
        .segments
        .iter()
        .find_map(|s| s.data.meta.kube.as_ref())?;
    Some(KubeNote {
        targets: other.targets.clone(),
        problems: vec![MISSING.to_string()],
        ..KubeNote::default()
    })
}

/// Copies segment 0's kube.jsonl and kube.csv into `out`, times shifted by its offset.
pub(crate) fn copy(set: &SegmentSet, out: &Path, interval_s: f64) -> Result<(), Error> {
    let Some(s) = watcher(set) else {
        return Ok(());
    };
    let shift = s.offset as f64 * interval_s;
    let dir = &s.data.dir;
    let out_err = |p: &Path, e: &dyn std::fmt::Display| {
        Error::from(Repr::Output(p.to_path_buf(), e.to_string()))
    };
    let jsonl = dir.join(KUBE_JSONL);
    if jsonl.exists() {
        let to = out.join(KUBE_JSONL);
        if shift == 0.0 {
            std::fs::copy(&jsonl, &to).map_err(|e| out_err(&to, &e))?;
        } else {
            let text = std::fs::read_to_string(&jsonl)
                .map_err(|e| Error::from(volley_rundir::Error::io(&jsonl, e)))?;
            let mut w =
                std::io::BufWriter::new(std::fs::File::create(&to).map_err(|e| out_err(&to, &e))?);
            for (i, line) in text.lines().enumerate() {
                let shifted = shift_line(line, shift).ok_or_else(|| {
                    Error::from(volley_rundir::Error::malformed(
                        &jsonl,
                        i as u64 + 1,
                        None,
                        "not a JSON object with a number `t`: kube.jsonl is written by volley \
                         run --kube; this one was cut or edited"
                            .to_string(),
                    ))
                })?;
                writeln!(w, "{shifted}").map_err(|e| out_err(&to, &e))?;
            }
            w.flush().map_err(|e| out_err(&to, &e))?;
        }
    }
    if dir.join(KUBE_CSV).exists() {
        let to = out.join(KUBE_CSV);
        if shift == 0.0 {
            std::fs::copy(dir.join(KUBE_CSV), &to).map_err(|e| out_err(&to, &e))?;
        } else {
            let points = read_kube(dir)?;
            let mut w = csv::Writer::from_path(&to).map_err(|e| out_err(&to, &e))?;
            w.write_record(SERVER_HEADER)
                .map_err(|e| out_err(&to, &e))?;
            for p in &points {
                w.write_record(server_row(
                    p.elapsed_s + shift,
                    &p.target,
                    &p.series,
                    p.value,
                    p.rate,
                ))
                .map_err(|e| out_err(&to, &e))?;
            }
            w.flush().map_err(|e| out_err(&to, &e))?;
        }
    }
    Ok(())
}

/// One kube.jsonl line with its `t` moved `shift` seconds later (rounded to the ms, as
/// written).
fn shift_line(line: &str, shift: f64) -> Option<String> {
    let mut v: serde_json::Value = serde_json::from_str(line).ok()?;
    let t = v.get("t")?.as_f64()?;
    v["t"] = serde_json::json!(((t + shift) * 1000.0).round() / 1000.0);
    Some(v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_moves_by_the_offset_and_keeps_the_rest() {
        let l = r#"{"t":1.25,"target":"kube:shop/deployment/chat","op":"apply","name":"p"}"#;
        let v: serde_json::Value = serde_json::from_str(&shift_line(l, 2.0).unwrap()).unwrap();
        assert_eq!(v["t"], 3.25);
        assert_eq!(v["name"], "p");
        assert_eq!(v["target"], "kube:shop/deployment/chat");
        assert_eq!(shift_line("{\"x\":1}", 1.0), None);
        assert_eq!(shift_line("{\"t\":1", 1.0), None);
    }
}
