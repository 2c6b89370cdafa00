//! What a run and a run of populations both write as they go: an interval (row, samples,
//! errors), the server's scrapes, and the status the run ends with.

use std::time::Duration;

use volley_engine::StopReason;
use volley_engine::scrape::{NoteKind, ScrapeNote};
use volley_rundir::rundir::{ErrorNote, SERVER_CSV, SeriesNote};
use volley_rundir::{RunStatus, RunWriter};
use volley_stats::{ErrorMessage, Interval, IntervalSample};

use crate::Observer;

/// Writes one interval to a run directory: its series row, samples and step samples, and
/// its errors into run.json's tallies (every interval, so the totals stay whole; run.json is
/// rewritten only when a message is new).
pub(crate) fn write_interval(
    writer: &mut RunWriter,
    sample: &IntervalSample,
    row: &Interval,
    steps: &[IntervalSample],
    messages: &[ErrorMessage],
) -> Result<(), volley_rundir::Error> {
    writer.write_interval(sample, row, steps)?;
    ErrorNote::add(
        &mut writer.meta_mut().errors,
        &sample.counts.errors_by_kind,
        messages.to_vec(),
    );
    if !messages.is_empty() {
        writer.write_meta()?;
    }
    Ok(())
}

/// A run's status, and why, from why the engine stopped (`None`: it ran its course).
pub(crate) fn status_of(stopped: Option<StopReason>) -> (RunStatus, Option<String>) {
    match stopped {
        None => (RunStatus::Complete, None),
        Some(StopReason::Interrupted) => (
            RunStatus::Interrupted,
            Some("interrupted by the user".to_string()),
        ),
        Some(StopReason::Terminated) => (
            RunStatus::Interrupted,
            Some(
                "stopped by SIGTERM (kubectl delete pod, a node drain or an eviction, or kill)"
                    .to_string(),
            ),
        ),
        Some(StopReason::Aborted(why)) => (RunStatus::Aborted, Some(why)),
    }
}

/// server.csv's budget per run, bytes: beyond it only the series the findings read
/// ([`volley_engine::scrape::is_findings_series`]) are written. A Spring Boot page of 125
/// series (bench/spring) writes about 14 KB a scrape: 5 hours at 1 s intervals; one of 3,000
/// series about 300 KB, 15 minutes, then its findings' series go on.
pub const SERVER_CSV_ALL: u64 = 256 << 20;
/// server.csv's hard bound per run, bytes: nothing is written beyond it.
pub const SERVER_CSV_FINDINGS: u64 = 512 << 20;

/// What a row of server.csv for `series` of `url` takes at most, bytes: the time, the two
/// quoted fields (a `"` doubled), the value and the kind.
fn row_bytes(url: &str, series: &str) -> u64 {
    let quoted = |s: &str| s.len() + 2 + s.bytes().filter(|b| *b == b'"').count();
    (24 + quoted(url) + quoted(series) + 32 + 10) as u64
}

/// The values of one scrape that fit server.csv's budgets when it holds `size` bytes, and
/// a note for those that do not.
fn within_budget(
    size: u64,
    url: &str,
    values: Vec<(String, f64, bool)>,
    budgets: (u64, u64),
) -> (Vec<(String, f64, bool)>, Vec<ScrapeNote>) {
    let (all, findings) = budgets;
    let mut size = size;
    let mut kept = Vec::with_capacity(values.len());
    let mut notes: Vec<ScrapeNote> = Vec::new();
    for v in values {
        let row = row_bytes(url, &v.0);
        let fits = if volley_engine::scrape::is_findings_series(&v.0) {
            findings
        } else {
            all
        };
        if size + row <= fits {
            size += row;
            kept.push(v);
            continue;
        }
        let why = if fits == all {
            format!(
                "server.csv reached its budget of {} MiB: from then on only the series the findings read were written",
                all >> 20
            )
        } else {
            format!(
                "server.csv reached its bound of {} MiB: nothing more was written",
                findings >> 20
            )
        };
        match notes.iter_mut().find(|n| n.why == why) {
            Some(n) => n.count += 1,
            None => notes.push(ScrapeNote {
                kind: NoteKind::LeftOut,
                why,
                count: 1,
                first: v.0,
            }),
        }
    }
    (kept, notes)
}

/// Adds a scrape's notes, taken `elapsed_s` into the run, to an endpoint's in run.json.
fn tally(into: &mut Vec<SeriesNote>, notes: &[ScrapeNote], elapsed_s: f64) {
    for n in notes {
        match into
            .iter_mut()
            .find(|m| m.kind == n.kind.name() && m.why == n.why)
        {
            Some(m) => m.count += n.count,
            None => into.push(SeriesNote {
                kind: n.kind.name().to_string(),
                why: n.why.clone(),
                count: n.count,
                first: n.first.clone(),
                first_s: elapsed_s,
            }),
        }
    }
}

/// Writes the scrapes taken so far to server.csv, within its budgets ([`SERVER_CSV_ALL`],
/// [`SERVER_CSV_FINDINGS`]), and tallies them in run.json.
pub(crate) fn record_scrapes(
    writer: &mut RunWriter,
    scraper: &volley_engine::scrape::Scraper,
    interval: Duration,
    observer: &mut dyn Observer,
) -> Result<(), volley_rundir::Error> {
    let mut any = false;
    let path = writer.dir().join(SERVER_CSV);
    while let Ok(mut s) = scraper.samples.try_recv() {
        any = true;
        let elapsed = interval.as_secs_f64() * (s.index + 1) as f64;
        let size = std::fs::metadata(&path).map_or(0, |m| m.len());
        let budgets = (SERVER_CSV_ALL, SERVER_CSV_FINDINGS);
        let (values, over) = within_budget(size, &s.url, std::mem::take(&mut s.values), budgets);
        s.values = values;
        s.notes.extend(over);
        writer.write_server(elapsed, &s.url, &s.values)?;
        if let Some(note) = writer
            .meta_mut()
            .server_metrics
            .iter_mut()
            .find(|n| n.url == s.url)
        {
            match &s.error {
                Some(e) => {
                    note.failed += 1;
                    note.last_error = Some(e.clone());
                }
                None => note.ok += 1,
            }
            tally(&mut note.notes, &s.notes, elapsed);
        }
        observer.server(&s);
    }
    if any {
        writer.write_meta()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beyond_the_budget_only_the_findings_series_are_written_and_beyond_the_bound_none() {
        let url = "http://h/metrics";
        let values = || {
            vec![
                ("a{x=\"1\"}".to_string(), 1.0, false),
                ("process_cpu_usage".to_string(), 0.5, false),
                ("b".to_string(), 2.0, true),
            ]
        };
        let row = |s: &str| row_bytes(url, s);
        // A row counts its doubled quotes.
        assert_eq!(row("\"\""), row("ab") + 2);
        let budgets = (1000, 2000);
        let (kept, notes) = within_budget(0, url, values(), budgets);
        assert_eq!(kept.len(), 3);
        assert!(notes.is_empty());
        let (kept, notes) = within_budget(1000 - row("a{x=\"1\"}"), url, values(), budgets);
        assert_eq!(
            kept.iter().map(|v| v.0.as_str()).collect::<Vec<_>>(),
            ["a{x=\"1\"}", "process_cpu_usage"]
        );
        assert_eq!(notes.len(), 1);
        assert_eq!(notes[0].first, "b");
        assert!(
            notes[0].why.contains("only the series the findings read"),
            "{notes:?}"
        );
        let (kept, notes) = within_budget(2000, url, values(), budgets);
        assert!(kept.is_empty());
        assert_eq!(notes.iter().map(|n| n.count).sum::<u64>(), 3);
        assert!(
            notes
                .iter()
                .any(|n| n.why.contains("nothing more was written")),
            "{notes:?}"
        );
        // Tallied in run.json by kind and reason, with when it first happened.
        let mut into = Vec::new();
        tally(&mut into, &notes, 4.0);
        tally(&mut into, &notes, 5.0);
        assert_eq!(into.len(), 2);
        assert!(
            into.iter()
                .all(|n| n.first_s == 4.0 && n.kind == "left_out")
        );
        assert_eq!(into.iter().map(|n| n.count).sum::<u64>(), 6);
    }
}
