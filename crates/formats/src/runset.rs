//! One side of a comparison: a single run (or result file), or a run group's runs. Every
//! command that takes "a run or a group" opens it here, with [`open_run_or_group`].

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::group::{GroupMeta, is_group_dir, read_group};
use crate::rundir::RunStatus;
use crate::source::{Format, Source};

/// A run, or a group of runs of one plan.
#[derive(Debug, Clone)]
pub struct RunSet {
    /// The path given.
    pub path: PathBuf,
    /// The run's or the group's name.
    pub name: String,
    /// The runs (one for a run or a file; a group's completed runs, in order).
    pub runs: Vec<Source>,
    /// group.json, for a group.
    pub group: Option<GroupMeta>,
    /// What was left out of a group and why (runs that did not complete).
    pub notes: Vec<String>,
}

impl RunSet {
    /// A single run or result file already opened.
    pub fn single(src: Source) -> RunSet {
        RunSet {
            path: src.path.clone(),
            name: src.name.clone(),
            runs: vec![src],
            group: None,
            notes: Vec::new(),
        }
    }

    /// Whether this is a group (even of one completed run).
    pub fn is_group(&self) -> bool {
        self.group.is_some()
    }

    /// The first run: where a single figure per side is shown (charts, pages).
    pub fn first(&self) -> &Source {
        &self.runs[0]
    }
}

/// Opens `path` as a run group (a directory with group.json: its completed runs) or as a
/// single run directory or result file (as `format`, or detected).
pub fn open_run_or_group(path: &Path, format: Option<Format>) -> Result<RunSet> {
    if !is_group_dir(path) {
        let mut set = RunSet::single(crate::open::open_as(path, format)?);
        set.path = path.to_path_buf();
        return Ok(set);
    }
    let meta = read_group(path)?;
    let mut runs = Vec::new();
    let mut notes = Vec::new();
    for r in &meta.runs {
        let dir = path.join(&r.dir);
        if !dir.is_dir() {
            return Err(Error::unrecognised(
                path.to_path_buf(),
                format!(
                    "group.json lists run `{}`, which is not in the group directory; put it back or remove its entry",
                    r.dir
                ),
            ));
        }
        let src = crate::open::open_as(&dir, Some(Format::Volley))?;
        // run.json is written last by the run itself: it knows better than a group file
        // that was not rewritten after a crash.
        let status = src.meta.as_ref().map_or(r.status, |m| m.status);
        if status == RunStatus::Complete {
            runs.push(src);
        } else {
            notes.push(format!(
                "run `{}` is left out: it is {}",
                r.dir,
                status.name()
            ));
        }
    }
    if runs.is_empty() {
        return Err(Error::unrecognised(
            path.to_path_buf(),
            format!(
                "this group has no completed run ({} listed); run the group again",
                meta.runs.len()
            ),
        ));
    }
    Ok(RunSet {
        path: path.to_path_buf(),
        name: meta.name.clone(),
        runs,
        group: Some(meta),
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::GroupWriter;
    use crate::recorded::RecordedPlan;

    fn plan() -> RecordedPlan {
        let mut load = volley_scenario::LoadSpec::default();
        load.set("duration", "1s").unwrap();
        RecordedPlan::new(
            load.resolve().unwrap(),
            volley_scenario::RequestSpec::get("http://127.0.0.1:1/"),
        )
    }

    #[test]
    fn a_group_without_completed_runs_or_with_a_missing_one_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let mut g = GroupWriter::create(root.path(), "g", 3, 0.0, plan()).unwrap();
        let e = open_run_or_group(g.dir(), None).unwrap_err().to_string();
        assert!(e.contains("no completed run (0 listed)"), "{e}");
        g.run(&g.dir().join("gone"), RunStatus::Complete, None)
            .unwrap();
        let e = open_run_or_group(g.dir(), None).unwrap_err().to_string();
        assert!(
            e.contains("lists run `gone`, which is not in the group directory"),
            "{e}"
        );
        let meta = read_group(g.dir()).unwrap();
        assert_eq!(
            (
                meta.kind.as_str(),
                meta.repeat,
                meta.runs.len(),
                meta.status
            ),
            ("group", 3, 1, RunStatus::Running)
        );
        // Not a group file at all.
        std::fs::write(g.dir().join(crate::group::GROUP_JSON), r#"{"kind":"run"}"#).unwrap();
        assert!(read_group(g.dir()).is_err());
    }
}
