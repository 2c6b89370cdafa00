//! The run group: the same plan run N times (`volley run --repeat N`), so comparisons can
//! see what varies between runs, not only within one.
//!
//! ```text
//! runs/<UTC time>_<name>-xN/
//!   group.json    id, name, plan, repeat, pause, status, the runs in order with their status
//!   <UTC time>_<name>-1/   a run directory (run.json, series.csv, latency.hlog, reports)
//!   <UTC time>_<name>-2/   ...
//!   summary.md  summary.json   each figure across the runs (written at the end)
//! ```
//!
//! group.json is rewritten (atomically) before and after every run, so a group stopped
//! half-way (Ctrl-C, a crash) still says which runs completed. It records the host and pid of
//! the process writing it, as run.json does: a group that still says `running` when that
//! process is gone (killed, crashed) is read as `did not finish` ([`read_group`]), by the
//! same test as a run ([`crate::rundir::recorder_gone`]: the pid on this host, and the start
//! time of the process that has it now, so a reused pid is not taken for the writer).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::recorded::RecordedPlan;
use crate::rundir::RunStatus;

/// The group file's name.
pub const GROUP_JSON: &str = "group.json";

/// One run of a group, as group.json lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupRun {
    /// Its run directory, relative to the group directory.
    pub dir: String,
    /// How it ended (`running` while it runs).
    pub status: RunStatus,
    /// Why it stopped early, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `group.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GroupMeta {
    /// Layout version.
    pub schema: u32,
    /// Always `group`: tells a group file from a run.json at a glance.
    pub kind: String,
    /// The group directory's name (unique under its output directory).
    pub id: String,
    /// The runs' name.
    pub name: String,
    /// Runs asked for.
    pub repeat: usize,
    /// Pause between runs, s.
    pub pause_s: f64,
    /// `running` until the last run ends; then `complete`, or how the group was stopped.
    pub status: RunStatus,
    /// Why the group stopped before its last run, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The host that records the group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub host: String,
    /// The recording process (groups written before it was recorded have none: whether their
    /// writer is gone cannot be told).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Start, RFC 3339 UTC.
    pub started_at: String,
    /// End, RFC 3339 UTC, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    /// The plan every run carries out.
    pub plan: RecordedPlan,
    /// The runs in order.
    pub runs: Vec<GroupRun>,
}

impl GroupMeta {
    /// The runs that ran their planned course.
    pub fn completed(&self) -> impl Iterator<Item = &GroupRun> {
        self.runs.iter().filter(|r| r.status == RunStatus::Complete)
    }
}

/// A group directory being written.
#[derive(Debug)]
pub struct GroupWriter {
    dir: PathBuf,
    meta: GroupMeta,
}

impl GroupWriter {
    /// Creates `<root>/<UTC time>_<name>-x<repeat>/` and writes a `running` group.json.
    pub fn create(
        root: &Path,
        name: &str,
        repeat: usize,
        pause_s: f64,
        plan: RecordedPlan,
    ) -> Result<GroupWriter> {
        let now = jiff::Timestamp::now();
        let base = format!(
            "{}_{}-x{repeat}",
            now.strftime("%Y%m%dT%H%M%SZ"),
            crate::rundir::sanitize(name)
        );
        let mut dir = root.join(&base);
        for n in 2.. {
            if !dir.exists() {
                break;
            }
            dir = root.join(format!("{base}-{n}"));
        }
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let meta = GroupMeta {
            schema: 1,
            kind: "group".to_string(),
            id: dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            name: name.to_string(),
            repeat,
            pause_s,
            status: RunStatus::Running,
            reason: None,
            host: crate::rundir::host_name(),
            pid: Some(std::process::id()),
            started_at: now.to_string(),
            ended_at: None,
            plan,
            runs: Vec::new(),
        };
        let w = GroupWriter { dir, meta };
        w.write()?;
        Ok(w)
    }

    /// The group directory (runs are created under it).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// group.json so far.
    pub fn meta(&self) -> &GroupMeta {
        &self.meta
    }

    /// Records run `dir` (a directory under the group's) and how it stands, and rewrites
    /// group.json: a run seen for the first time is appended, a known one updated.
    pub fn run(&mut self, dir: &Path, status: RunStatus, reason: Option<String>) -> Result<()> {
        let rel = dir
            .strip_prefix(&self.dir)
            .unwrap_or(dir)
            .to_string_lossy()
            .into_owned();
        match self.meta.runs.iter_mut().find(|r| r.dir == rel) {
            Some(r) => {
                r.status = status;
                r.reason = reason;
            }
            None => self.meta.runs.push(GroupRun {
                dir: rel,
                status,
                reason,
            }),
        }
        self.write()
    }

    /// Records how the group ended and rewrites group.json.
    pub fn finish(&mut self, status: RunStatus, reason: Option<String>) -> Result<()> {
        self.meta.status = status;
        self.meta.reason = reason;
        self.meta.ended_at = Some(jiff::Timestamp::now().to_string());
        self.write()
    }

    fn write(&self) -> Result<()> {
        let tmp = self.dir.join(".group.json.tmp");
        let json = serde_json::to_vec_pretty(&self.meta).expect("group metadata serializes");
        std::fs::write(&tmp, json).map_err(|e| Error::io(&tmp, e))?;
        std::fs::rename(&tmp, self.dir.join(GROUP_JSON))
            .map_err(|e| Error::io(self.dir.join(GROUP_JSON), e))
    }
}

/// Whether `path` is a group directory.
pub fn is_group_dir(path: &Path) -> bool {
    path.join(GROUP_JSON).is_file()
}

/// Reads `dir/group.json`.
pub fn read_group(dir: &Path) -> Result<GroupMeta> {
    let p = dir.join(GROUP_JSON);
    let text = std::fs::read_to_string(&p).map_err(|e| Error::io(&p, e))?;
    let mut meta: GroupMeta = serde_json::from_str(&text).map_err(|e| {
        Error::malformed(&p, e.line() as u64, Some(e.column() as u64), e.to_string())
    })?;
    if meta.kind != "group" {
        return Err(Error::malformed(
            &p,
            1,
            None,
            format!("`kind` is `{}`; a group file says `group`", meta.kind),
        ));
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(twice) = meta
        .runs
        .iter()
        .find(|r| !seen.insert(r.dir.trim_end_matches('/')))
    {
        return Err(Error::malformed(
            &p,
            1,
            None,
            format!(
                "run `{}` is listed more than once; a group's runs are independent runs, each listed once (a copy would be counted as a repeat that agrees with itself)",
                twice.dir
            ),
        ));
    }
    if let Some(bad) = meta
        .runs
        .iter()
        .find(|r| !crate::rundir::is_plain_subdir(&r.dir))
    {
        let line = text
            .lines()
            .position(|l| l.contains(&format!("{:?}", bad.dir)))
            .map_or(1, |i| i as u64 + 1);
        return Err(Error::malformed(
            &p,
            line,
            None,
            format!(
                "run `{}` is not a directory inside the group (a plain name such as `01_name`); a group holds its own runs",
                bad.dir
            ),
        ));
    }
    if meta.status == RunStatus::Running && writer_gone(&meta) == Some(true) {
        meta.status = RunStatus::DidNotFinish;
        meta.reason = Some(format!(
            "group.json still says running, but its recorder (pid {} on {}) is gone: it was killed or crashed before the group ended",
            meta.pid.unwrap_or_default(),
            meta.host
        ));
        for r in meta
            .runs
            .iter_mut()
            .filter(|r| r.status == RunStatus::Running)
        {
            r.status = RunStatus::DidNotFinish;
        }
    }
    Ok(meta)
}

/// Whether the process that wrote a `running` group.json is gone: run.json's test
/// ([`crate::rundir::recorder_gone`]) on the group's host, pid and start.
fn writer_gone(meta: &GroupMeta) -> Option<bool> {
    let mut as_run = crate::rundir::RunMeta::new(&meta.name, meta.plan.clone());
    as_run.host = meta.host.clone();
    as_run.pid = meta.pid;
    as_run.started_at = meta.started_at.clone();
    crate::rundir::recorder_gone(&as_run)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> RecordedPlan {
        serde_json::from_str(
            r#"{"load":{"model":"closed","shape":{"stages":[{"duration":2.0,"target":4}]}},"request":{"method":"GET","url":"http://127.0.0.1/","headers":[]},"timeout_s":60.0,"threads":2}"#,
        )
        .unwrap()
    }

    /// A `running` group whose writer is alive reads as running; once that process is gone
    /// (a pid no process has), as `did not finish`, with its running run too; a group file
    /// without a pid (written before it was recorded) cannot be judged and stays running.
    #[test]
    fn a_running_group_whose_writer_is_gone_did_not_finish() {
        let root = tempfile::tempdir().unwrap();
        let mut w = GroupWriter::create(root.path(), "g", 3, 0.0, plan()).unwrap();
        let run = w.dir().join("01_g-1");
        w.run(&run, RunStatus::Running, None).unwrap();
        let g = read_group(w.dir()).unwrap();
        assert_eq!(
            (g.status, g.pid),
            (RunStatus::Running, Some(std::process::id()))
        );

        // A process that has ended and been waited for: its pid is free.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        let file = w.dir().join(GROUP_JSON);
        let text = std::fs::read_to_string(&file).unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["pid"] = gone.into();
        std::fs::write(&file, v.to_string()).unwrap();
        let g = read_group(w.dir()).unwrap();
        assert_eq!(g.status, RunStatus::DidNotFinish, "{:?}", g.reason);
        assert!(
            g.reason
                .as_deref()
                .unwrap()
                .contains(&format!("pid {gone}")),
            "{:?}",
            g.reason
        );
        assert_eq!(g.runs[0].status, RunStatus::DidNotFinish);

        v.as_object_mut().unwrap().remove("pid");
        std::fs::write(&file, v.to_string()).unwrap();
        assert_eq!(read_group(w.dir()).unwrap().status, RunStatus::Running);
    }
}
