//! What a run and a run of populations both write as they go: an interval (row, samples,
//! errors), the server's scrapes, and the status the run ends with.

use std::time::Duration;

use volley_engine::StopReason;
use volley_rundir::rundir::ErrorNote;
use volley_rundir::{FormatError, RunStatus, RunWriter};
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
) -> Result<(), FormatError> {
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

/// Writes the scrapes taken so far to server.csv and tallies them in run.json.
pub(crate) fn record_scrapes(
    writer: &mut RunWriter,
    scraper: &volley_engine::scrape::Scraper,
    interval: Duration,
    observer: &mut dyn Observer,
) -> Result<(), FormatError> {
    let mut any = false;
    while let Ok(s) = scraper.samples.try_recv() {
        any = true;
        let elapsed = interval.as_secs_f64() * (s.index + 1) as f64;
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
        }
        observer.server(&s);
    }
    if any {
        writer.write_meta()?;
    }
    Ok(())
}
