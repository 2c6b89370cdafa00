//! kube.jsonl and kube.csv, written by the watcher's own thread as observations come (each
//! line flushed, so a crash keeps what was seen), each within a bound.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use volley_rundir::rundir::{KUBE_CSV, KUBE_JSONL, SERVER_HEADER, server_row};

use crate::error::{Error, Result};
use crate::obs::Obs;

/// Most bytes written to kube.jsonl, and to kube.csv: a workload of a few dozen pods writes
/// a few MB an hour; past this, nothing more is written and run.json says so.
pub const MAX_FILE: u64 = 256 << 20;

/// One observed object, as kube.jsonl holds it.
#[derive(Debug, Serialize)]
pub struct ObjectLine<'a> {
    /// Seconds since the run's t0, on arrival.
    pub t: f64,
    /// kube.csv's Target of the workload.
    pub target: &'a str,
    /// `list` (the first listing), `relist`, `apply`, `delete`, `gone` (not listed again).
    pub op: &'a str,
    /// Its namespace.
    pub ns: &'a str,
    /// Its name.
    pub name: &'a str,
    /// `kind` and `obs`.
    #[serde(flatten)]
    pub obs: &'a Obs,
}

/// What happened to a watch, as kube.jsonl holds it (`"kind":"watch"`).
#[derive(Debug, Serialize)]
pub struct WatchLine<'a> {
    /// Seconds since the run's t0.
    pub t: f64,
    /// Always `watch`.
    pub kind: &'static str,
    /// kube.csv's Target of the workload.
    pub target: &'a str,
    /// `pods`, `events` ...
    pub resource: &'a str,
    /// `listed`, `relisted`, `lost`, `resumed`, `unavailable`.
    pub op: &'a str,
    /// Objects in a listing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objects: Option<usize>,
    /// The error, when lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<&'a str>,
}

/// The two files.
pub struct Recorder {
    jsonl: BufWriter<File>,
    jsonl_path: PathBuf,
    jsonl_bytes: u64,
    csv: csv::Writer<File>,
    csv_path: PathBuf,
    csv_bytes: u64,
    /// Set when a bound was reached (once per file).
    pub full: Vec<String>,
}

impl Recorder {
    /// Creates kube.jsonl and kube.csv (with its header) in `dir`.
    pub fn create(dir: &Path) -> Result<Recorder> {
        let jsonl_path = dir.join(KUBE_JSONL);
        let csv_path = dir.join(KUBE_CSV);
        let jsonl = File::create(&jsonl_path).map_err(|e| Error::write(&jsonl_path, e))?;
        let file = File::create(&csv_path).map_err(|e| Error::write(&csv_path, e))?;
        let mut csv = csv::Writer::from_writer(file);
        csv.write_record(SERVER_HEADER)
            .and_then(|()| csv.flush().map_err(csv::Error::from))
            .map_err(|e| Error::write(&csv_path, std::io::Error::other(e)))?;
        Ok(Recorder {
            jsonl: BufWriter::new(jsonl),
            jsonl_path,
            jsonl_bytes: 0,
            csv,
            csv_path,
            csv_bytes: 0,
            full: Vec::new(),
        })
    }

    /// Appends one line to kube.jsonl and flushes it.
    pub fn line(&mut self, line: &impl Serialize) -> Result<()> {
        let mut text = serde_json::to_string(line)
            .map_err(|e| Error::write(&self.jsonl_path, std::io::Error::other(e)))?;
        text.push('\n');
        if self.jsonl_bytes + text.len() as u64 > MAX_FILE {
            self.over(KUBE_JSONL);
            return Ok(());
        }
        self.jsonl_bytes += text.len() as u64;
        self.jsonl
            .write_all(text.as_bytes())
            .and_then(|()| self.jsonl.flush())
            .map_err(|e| Error::write(&self.jsonl_path, e))
    }

    /// Appends one sample's rows to kube.csv and flushes it.
    pub fn rows(&mut self, elapsed: f64, target: &str, rows: &[(String, f64, bool)]) -> Result<()> {
        for (series, value, rate) in rows {
            let row = server_row(elapsed, target, series, *value, *rate);
            let len = row.iter().map(|c| c.len() + 3).sum::<usize>() as u64;
            if self.csv_bytes + len > MAX_FILE {
                self.over(KUBE_CSV);
                break;
            }
            self.csv_bytes += len;
            self.csv
                .write_record(&row)
                .map_err(|e| Error::write(&self.csv_path, std::io::Error::other(e)))?;
        }
        self.csv
            .flush()
            .map_err(|e| Error::write(&self.csv_path, e))
    }

    fn over(&mut self, file: &str) {
        let why = format!(
            "{file} reached its bound of {} MiB: nothing more was written",
            MAX_FILE >> 20
        );
        if !self.full.contains(&why) {
            self.full.push(why);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obs::{PodObs, Termination};

    /// The lines the watcher writes are the lines the reports read back (volley-rundir's
    /// reader of kube.jsonl), field for field.
    #[test]
    fn what_is_written_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let obs = Obs::Pod(PodObs {
            ready: Some(false),
            restarts: 2,
            last_term: Some(Termination {
                container: "app".into(),
                reason: Some("OOMKilled".into()),
                exit_code: 137,
            }),
            ..PodObs::default()
        });
        {
            let mut r = Recorder::create(dir.path()).unwrap();
            r.line(&ObjectLine {
                t: 4.5,
                target: "kube:shop/deployment/chat",
                op: "apply",
                ns: "shop",
                name: "chat-1",
                obs: &obs,
            })
            .unwrap();
            r.line(&WatchLine {
                t: 6.0,
                kind: "watch",
                target: "kube:shop/deployment/chat",
                resource: "pods",
                op: "lost",
                objects: None,
                why: Some("reset"),
            })
            .unwrap();
        }
        let log = volley_rundir::kubelog::read_kube_log(dir.path())
            .unwrap()
            .unwrap();
        assert_eq!(log.objects.len(), 1);
        assert_eq!(log.objects[0].obs, obs);
        assert_eq!(
            (log.objects[0].t, log.objects[0].name.as_str()),
            (4.5, "chat-1")
        );
        assert_eq!(log.watches[0].op, "lost");
        assert_eq!(log.watches[0].why.as_deref(), Some("reset"));
    }
}
