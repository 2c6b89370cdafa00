//! The run history: every run (and run group) under a directory such as `runs/`, with its
//! plan, headline figures and status, oldest first — what `volley runs` lists and what
//! `--trend` draws. Figures come from each run's `report.json` when it has one (written at the
//! end of the run), otherwise from its data; a run that cannot be read is listed with what is
//! wrong, never left out.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use volley_formats::rundir::{RUN_JSON, RunMeta, RunStatus};
use volley_formats::{RecordedPlan, RunData, Source};
use volley_scenario::Model;

use crate::doc::Align;
use crate::error::{Repr, Result};
use crate::model::{ReportOptions, RunReport};

/// How deep `scan` looks for runs below the directory it is given (`runs/demo/<run>` is 2).
const MAX_DEPTH: usize = 3;

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// One run directory.
    Run,
    /// A run group: a directory of runs of the same plan with a group file.
    Group,
}

/// One run or group of the history.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    /// Run or group.
    pub kind: Kind,
    /// A run's part in a split run, from its run.json: `single` (not split), `merged` (made
    /// by `volley merge`; `merged (2 of 3 segments)` when some were missing) or `segment i/N`;
    /// absent for a group and a run whose run.json cannot be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub split: Option<String>,
    /// Its directory.
    pub path: PathBuf,
    /// The run's name.
    pub name: String,
    /// Start, RFC 3339 (empty when unknown).
    pub started_at: String,
    /// What ran, in a few words (`GET /rooms · 50 VUs · 1m`).
    pub plan: String,
    /// The plan's hash ([`volley_formats::segment::plan_hash`]; a group's, its first run's):
    /// runs of one name with different plans are told apart by it. Empty when unknown.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub plan_hash: String,
    /// complete | interrupted | aborted | running | did not finish | unreadable.
    pub status: String,
    /// What could not be read, when something could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// Thresholds that held, of how many (none: the run had none).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "threshold_counts"
    )]
    pub thresholds: Option<(usize, usize)>,
    /// The figures, by the comparison's keys (`tps_avg`, `ttfb_p99_ms`, …); for a group, the
    /// mean over its runs that completed. A figure the run does not have is absent.
    pub figures: BTreeMap<String, f64>,
    /// A group's runs, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<Entry>,
}

/// `{"passed": 2, "total": 3}`.
fn threshold_counts<S: serde::Serializer>(
    t: &Option<(usize, usize)>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Counts {
        passed: usize,
        total: usize,
    }
    t.map(|(passed, total)| Counts { passed, total })
        .serialize(s)
}

impl Entry {
    /// A figure by its key.
    pub fn figure(&self, key: &str) -> Option<f64> {
        self.figures.get(key).copied().filter(|v| v.is_finite())
    }

    /// Start as seconds since the Unix epoch, when known.
    pub fn started_s(&self) -> Option<f64> {
        self.started_at
            .parse::<jiff::Timestamp>()
            .ok()
            .map(|t| t.as_millisecond() as f64 / 1000.0)
    }

    fn unreadable(kind: Kind, path: &Path, name: String, problem: String) -> Entry {
        Entry {
            kind,
            split: None,
            path: path.to_path_buf(),
            name,
            started_at: started_from_dir_name(path),
            plan: String::new(),
            plan_hash: String::new(),
            status: "unreadable".to_string(),
            problem: Some(problem),
            thresholds: None,
            figures: BTreeMap::new(),
            runs: Vec::new(),
        }
    }
}

/// `20261123T050908Z_name` → `2026-11-23T05:09:08Z`, the time a run directory is named by.
fn started_from_dir_name(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stamp = name.split('_').next().unwrap_or("");
    jiff::civil::DateTime::strptime("%Y%m%dT%H%M%SZ", stamp)
        .ok()
        .and_then(|dt| dt.to_zoned(jiff::tz::TimeZone::UTC).ok())
        .map(|z| z.timestamp().to_string())
        .unwrap_or_default()
}

/// The part of `report.json` the history reads (the layout `docs/report-json.md` documents).
#[derive(Deserialize)]
struct ReportFile {
    seed_suite: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    per_request: PerRequestFile,
    #[serde(default)]
    thresholds: Vec<ThresholdFile>,
}

#[derive(Deserialize, Default)]
struct PerRequestFile {
    ttfb_ms: Option<BTreeMap<String, serde_json::Value>>,
}

#[derive(Deserialize)]
struct ThresholdFile {
    passed: bool,
}

/// The comparison's figures from a report's JSON: the seed suite's keys as they are, and the
/// per-request TTFB percentiles as `ttfb_pNN_ms`.
fn figures_of(report: &ReportFile) -> BTreeMap<String, f64> {
    let keys = crate::gate::metric_names();
    let mut out = BTreeMap::new();
    for (k, v) in &report.seed_suite {
        if let (true, Some(v)) = (keys.contains(&k.as_str()), v.as_f64()) {
            out.insert(k.clone(), v);
        }
    }
    if let Some(ttfb) = &report.per_request.ttfb_ms {
        for (k, v) in ttfb {
            let key = format!("ttfb_{k}");
            if let (true, Some(v)) = (keys.contains(&key.as_str()), v.as_f64()) {
                out.insert(key, v);
            }
        }
    }
    out
}

/// `30s`, `1m`, `1m30s`, `2h5m`.
fn duration_text(d: std::time::Duration) -> String {
    let s = d.as_secs();
    let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
    let mut out = String::new();
    if h > 0 {
        let _ = write!(out, "{h}h");
    }
    if m > 0 {
        let _ = write!(out, "{m}m");
    }
    if s > 0 || out.is_empty() {
        let _ = write!(out, "{s}s");
    }
    out
}

/// What a plan ran, in a few words: `GET /rooms · 50 VUs · 1m`, `scenario pair-room.yaml · 100/s · 5m`.
pub fn plan_summary(p: &RecordedPlan) -> String {
    let what = match &p.scenario {
        Some(s) => format!(
            "scenario {}",
            s.file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        ),
        None => match &p.request {
            Some(r) => {
                let path = r
                    .url
                    .split_once("://")
                    .and_then(|(_, rest)| rest.find('/').map(|i| &rest[i..]))
                    .unwrap_or("/");
                format!("{} {path}", r.method)
            }
            None => "no request recorded".to_string(),
        },
    };
    let load = match &p.load.model {
        Model::Closed { shape } => format!("{} VUs", shape.max_vus()),
        Model::Iterations { shape, per_vu, .. } => {
            format!("{} VUs × {per_vu} iterations", shape.max_vus())
        }
        Model::Open { rate, .. } => {
            let peak = rate
                .stages
                .iter()
                .map(|s| s.rate)
                .fold(rate.start_rate, f64::max);
            format!("{peak}/s")
        }
    };
    match p.load.planned() {
        Some(d) => format!("{what} · {load} · {}", duration_text(d)),
        None => format!("{what} · {load}"),
    }
}

/// One run directory as an entry.
pub fn read_run(dir: &Path) -> Entry {
    let dir_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let meta_path = dir.join(RUN_JSON);
    let meta: RunMeta = match std::fs::read_to_string(&meta_path)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
    {
        Ok(m) => m,
        Err(e) => return Entry::unreadable(Kind::Run, dir, dir_name, format!("{RUN_JSON}: {e}")),
    };
    let mut status = meta.status;
    if status == RunStatus::Running && volley_formats::rundir::recorder_gone(&meta) == Some(true) {
        status = RunStatus::DidNotFinish;
    }
    let mut entry = Entry {
        kind: Kind::Run,
        split: Some(split_of(&meta)),
        path: dir.to_path_buf(),
        name: meta.name.clone(),
        started_at: meta.started_at.clone(),
        plan: plan_summary(&meta.plan),
        plan_hash: volley_formats::segment::plan_hash(&meta.plan),
        status: status.name().to_string(),
        problem: None,
        thresholds: None,
        figures: BTreeMap::new(),
        runs: Vec::new(),
    };
    // report.json is written when the run ends; a run without one is read from its data.
    let report: std::result::Result<ReportFile, String> =
        match std::fs::read_to_string(dir.join("report.json")) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| format!("report.json: {e}")),
            Err(_) => RunData::read(dir)
                .map_err(|e| e.to_string())
                .map(|run| RunReport::from_source(&Source::from_run(run), ReportOptions::default()))
                .and_then(|r| {
                    serde_json::from_value(serde_json::to_value(&r).map_err(|e| e.to_string())?)
                        .map_err(|e| e.to_string())
                }),
        };
    match report {
        Ok(r) => {
            entry.figures = figures_of(&r);
            if !r.thresholds.is_empty() {
                entry.thresholds = Some((
                    r.thresholds.iter().filter(|t| t.passed).count(),
                    r.thresholds.len(),
                ));
            }
        }
        Err(e) => entry.problem = Some(format!("its figures cannot be read: {e}")),
    }
    entry
}

/// What part of a split run a run is: `single`, `merged` (`merged (2 of 3 segments)` when
/// some were missing) or `segment i/N`.
fn split_of(meta: &RunMeta) -> String {
    if let Some(m) = &meta.merged {
        return if m.missing.is_empty() {
            "merged".to_string()
        } else {
            format!("merged ({} of {} segments)", m.segments.len(), m.count)
        };
    }
    match &meta.segment {
        Some(s) if !s.segment.is_whole() => format!("segment {}", s.segment),
        _ => "single".to_string(),
    }
}

/// A group directory as an entry: its runs, and the mean of their figures over the runs that
/// completed.
fn read_group(dir: &Path) -> Entry {
    let dir_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let file = match volley_formats::group::read_group(dir) {
        Ok(g) => g,
        Err(e) => return Entry::unreadable(Kind::Group, dir, dir_name, e.to_string()),
    };
    let mut runs: Vec<Entry> = subdirs(dir)
        .iter()
        .filter(|d| d.join(RUN_JSON).is_file())
        .map(|d| read_run(d))
        .collect();
    sort(&mut runs);
    let complete: Vec<&Entry> = runs
        .iter()
        .filter(|r| r.status == RunStatus::Complete.name() && r.problem.is_none())
        .collect();
    let mut figures = BTreeMap::new();
    for key in crate::gate::metric_names() {
        let values: Vec<f64> = complete.iter().filter_map(|r| r.figure(key)).collect();
        if !values.is_empty() && values.len() == complete.len() {
            figures.insert(
                key.to_string(),
                values.iter().sum::<f64>() / values.len() as f64,
            );
        }
    }
    let thresholds = runs
        .iter()
        .filter_map(|r| r.thresholds)
        .fold(None, |acc: Option<(usize, usize)>, (p, t)| {
            Some(acc.map_or((p, t), |(ap, at)| (ap + p, at + t)))
        });
    Entry {
        kind: Kind::Group,
        split: None,
        path: dir.to_path_buf(),
        name: file.name,
        started_at: Some(file.started_at)
            .filter(|t| !t.is_empty())
            .or_else(|| runs.first().map(|r| r.started_at.clone()))
            .unwrap_or_default(),
        plan: format!(
            "{} runs{}",
            runs.len(),
            runs.first()
                .map(|r| format!(" of {}", r.plan))
                .unwrap_or_default()
        ),
        plan_hash: runs
            .first()
            .map(|r| r.plan_hash.clone())
            .unwrap_or_default(),
        status: file.status.name().to_string(),
        problem: (complete.len() < runs.len()).then(|| {
            format!(
                "{} of {} runs completed; the figures are the mean of those",
                complete.len(),
                runs.len()
            )
        }),
        thresholds,
        figures,
        runs,
    }
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

/// Oldest first; entries without a time last, by path.
fn sort(entries: &mut [Entry]) {
    entries.sort_by(|a, b| match (a.started_s(), b.started_s()) {
        (Some(x), Some(y)) => x.total_cmp(&y).then_with(|| a.path.cmp(&b.path)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.path.cmp(&b.path),
    });
}

fn collect(dir: &Path, depth: usize, out: &mut Vec<Entry>) {
    if volley_formats::group::is_group_dir(dir) {
        out.push(read_group(dir));
    } else if dir.join(RUN_JSON).is_file() {
        out.push(read_run(dir));
    } else if depth < MAX_DEPTH {
        for d in subdirs(dir) {
            collect(&d, depth + 1, out);
        }
    }
}

/// Every run and group in `dir` (or `dir` itself when it is one), looking up to three levels
/// down (`runs/demo/<run>`), oldest first.
pub fn scan(dir: &Path) -> Result<Vec<Entry>> {
    if !dir.is_dir() {
        let what = if dir.exists() {
            "a file, not a directory of runs; give the directory volley run wrote to (runs/, or where -o said)"
        } else {
            "no such directory (volley run writes its runs under runs/, or where -o says)"
        };
        return Err(Repr::io(dir, std::io::Error::new(std::io::ErrorKind::NotFound, what)).into());
    }
    let mut out = Vec::new();
    collect(dir, 0, &mut out);
    sort(&mut out);
    Ok(out)
}

/// Whether `name` matches the glob `pattern` (`*` any run of characters, `?` one), whole.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut pi, mut ni, mut star, mut mark) = (0, 0, None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

fn cell(v: Option<f64>, unit: &str) -> String {
    v.map_or("-".to_string(), |v| {
        volley_formats::numfmt::with_unit(v, unit)
    })
}

/// `2026-11-23 05:09:08Z`.
fn time_cell(e: &Entry) -> String {
    e.started_at
        .parse::<jiff::Timestamp>()
        .map(|t| t.strftime("%Y-%m-%d %H:%M:%SZ").to_string())
        .unwrap_or_else(|_| "-".to_string())
}

fn status_cell(e: &Entry) -> String {
    let mut s = e.status.clone();
    if let Some((passed, total)) = e.thresholds {
        let _ = write!(
            s,
            "{}",
            if passed == total {
                format!(", thresholds {passed}/{total} ok")
            } else {
                format!(", THRESHOLDS {}/{total} FAILED", total - passed)
            }
        );
    }
    s
}

/// single | merged | segment i/N | group (`-` for a run whose run.json cannot be read).
fn kind_cell(e: &Entry) -> String {
    match (e.kind, &e.split) {
        (Kind::Group, _) => "group".to_string(),
        (Kind::Run, Some(s)) => s.clone(),
        (Kind::Run, None) => "-".to_string(),
    }
}

/// The history as a terminal table: one line per run or group (a group's runs indented under
/// it), then what could not be read.
pub fn table(entries: &[Entry]) -> String {
    let header = [
        "time", "name", "kind", "plan", "TPS", "TTFB p99", "errors", "status", "dir",
    ];
    let mut rows: Vec<[String; 9]> = Vec::new();
    let row = |e: &Entry, indent: &str| {
        [
            time_cell(e),
            format!("{indent}{}", crate::escape::terminal_safe(&e.name)),
            kind_cell(e),
            crate::escape::terminal_safe(&e.plan).into_owned(),
            cell(e.figure("tps_avg"), ""),
            cell(e.figure("ttfb_p99_ms"), " ms"),
            cell(e.figure("error_rate_pct"), "%"),
            status_cell(e),
            crate::escape::terminal_safe(&e.path.display().to_string()).into_owned(),
        ]
    };
    for e in entries {
        rows.push(row(e, ""));
        for r in &e.runs {
            rows.push(row(r, "  "));
        }
    }
    // The figures (TPS, TTFB p99, errors) to the right; the directory last, unpadded.
    let align = |c: usize| match c {
        4..7 => Align::Right,
        _ => Align::Left,
    };
    let mut out = String::new();
    let rows: Vec<Vec<String>> = rows.into_iter().map(Vec::from).collect();
    crate::doc::aligned(
        &mut out,
        "",
        &header.map(str::to_string),
        &rows,
        align,
        false,
    );
    let problems: Vec<&Entry> = entries
        .iter()
        .flat_map(|e| std::iter::once(e).chain(&e.runs))
        .filter(|e| e.problem.is_some())
        .collect();
    if !problems.is_empty() {
        out.push('\n');
        for e in problems {
            let _ = writeln!(
                out,
                "note: {}: {}",
                e.path.display(),
                crate::escape::terminal_safe(e.problem.as_deref().unwrap_or_default())
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_whole_names() {
        for (p, n, want) in [
            ("rooms", "rooms", true),
            ("rooms", "rooms-2", false),
            ("rooms*", "rooms-2", true),
            ("*-pr-?", "api-pr-7", true),
            ("*", "", true),
            ("a*b*c", "aXbYc", true),
            ("a*b", "ab-", false),
        ] {
            assert_eq!(glob_match(p, n), want, "{p} vs {n}");
        }
    }

    #[test]
    fn runs_are_listed_oldest_first_with_their_figures_and_broken_ones_say_why() {
        let dir = tempfile::tempdir().unwrap();
        crate::testrun::run(&dir.path().join("nested/deeper"), "a", 5, 20, 5, &[]);
        let broken = dir.path().join("20260101T000000Z_broken");
        std::fs::create_dir_all(&broken).unwrap();
        std::fs::write(broken.join(RUN_JSON), "{ not json").unwrap();
        let entries = scan(dir.path()).unwrap();
        assert_eq!(entries.len(), 2, "{entries:?}");
        let broken = entries.iter().find(|e| e.status == "unreadable").unwrap();
        assert!(
            broken.problem.as_deref().unwrap().contains("run.json"),
            "{broken:?}"
        );
        assert_eq!(
            broken.started_at, "2026-01-01T00:00:00Z",
            "the time from the directory's name"
        );
        let a = entries.iter().find(|e| e.name == "a").unwrap();
        assert_eq!(a.status, "complete");
        assert_eq!(a.plan, "GET / · 4 VUs · 5s");
        assert!((a.figure("tps_avg").unwrap() - 20.0).abs() < 1e-9, "{a:?}");
        assert!(a.figure("ttfb_p99_ms").unwrap() > 4.9);
        let text = table(&entries);
        assert!(
            text.contains("unreadable") && text.contains("note: "),
            "{text}"
        );
    }
}
