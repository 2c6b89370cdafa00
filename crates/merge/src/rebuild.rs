//! Each merged interval rebuilt from the segments' rows and histograms, then written by the
//! same [`RunWriter`] a run writes with, so the merged directory has the layout and columns
//! of any run.
//!
//! A row's sums come back from its means times its count (series.csv keeps means to the
//! microsecond), so the merged means are the segments' means weighted by their counts;
//! counts and histograms are added exactly. One merged interval is built at a time, each
//! segment's `latency.hlog` read alongside (volley writes it in interval order), so memory
//! does not grow with the length of the run beyond the segments' series.

use std::collections::HashMap;

use hdrhistogram::Histogram;
use std::fs::File;
use std::io::BufReader;
use std::iter::Peekable;

use volley_rundir::RunWriter;
use volley_rundir::hlog::{self, HistKey, LoggedHistogram};
use volley_stats::{Counts, Interval, IntervalSample, Latencies, new_histogram};

use crate::Error;
use crate::inputs::{Input, SegmentSet};

/// Columns of series.csv that [`volley_rundir::RunData`] does not keep, read here by name.
const RECONNECTS: &str = "Reconnects";
const TLS_MS: &str = "Mean_TLS_handshake_(ms)";

/// What one segment brings to the merge, indexed by its own interval.
struct Prepared<'a> {
    input: &'a Input,
    /// (reconnects, mean TLS handshake ms) per row.
    extra: Vec<(u64, f64)>,
    /// Its histogram log, read as the merge goes.
    hlog: Option<Peekable<hlog::Reader<BufReader<File>>>>,
    /// Its rows for which the log held no histogram (cut short, or missing), and their
    /// requests: counted in the totals, not in the percentiles.
    unlogged: (usize, u64),
}

impl<'a> Prepared<'a> {
    fn new(input: &'a Input) -> Result<Prepared<'a>, Error> {
        let rows = input.data.series.intervals.len();
        let path = input.data.dir.join(volley_rundir::rundir::LATENCY_HLOG);
        let hlog = match File::open(&path) {
            Ok(f) => Some(
                hlog::Reader::new(&path, BufReader::new(f))
                    .stopping_at_a_cut_line()
                    .peekable(),
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(volley_rundir::Error::io(path, e).into()),
        };
        Ok(Prepared {
            input,
            extra: extra_columns(input, rows)?,
            hlog,
            unlogged: (0, 0),
        })
    }

    /// Adds the histograms of its row `j` to `into`, reading them from its log; a row with
    /// requests and no histogram is counted in `unlogged`.
    fn add_histograms(&mut self, j: usize, into: &mut Hists) -> Result<(), Error> {
        let row = &self.input.data.series.intervals[j];
        let requests = row.tests + row.errors;
        let mut found = false;
        let added = self.read_histograms(j, into, &mut found);
        if !found && requests > 0 {
            self.unlogged.0 += 1;
            self.unlogged.1 += requests;
        }
        added
    }

    /// What its rows without histograms mean for the merged run, if there are any.
    pub(crate) fn note(&self) -> Option<String> {
        let (rows, requests) = self.unlogged;
        (rows > 0).then(|| {
            format!(
                "segment {}: {LATENCY} has no histograms for {rows} of its intervals (cut short, or missing): their requests ({requests}) are counted in every total but not in the per-request percentiles",
                self.input.segment,
                LATENCY = volley_rundir::rundir::LATENCY_HLOG
            )
        })
    }

    fn read_histograms(
        &mut self,
        j: usize,
        into: &mut Hists,
        found: &mut bool,
    ) -> Result<(), Error> {
        let Some(log) = &mut self.hlog else {
            return Ok(());
        };
        // The row a histogram belongs to is the one that starts when it does (the drain
        // after a stop between boundaries starts at the stop, not at a boundary).
        let rows = &self.input.data.series.intervals;
        let index = |h: &LoggedHistogram| rows.partition_point(|r| r.start_s < h.start_s - 1e-6);
        loop {
            match log.peek() {
                None => return Ok(()),
                Some(Err(_)) => {
                    return Err(log
                        .next()
                        .and_then(Result::err)
                        .expect("an error was peeked")
                        .into());
                }
                Some(Ok(h)) if index(h) > j => return Ok(()),
                Some(Ok(_)) => {}
            }
            let h = log.next().expect("peeked").expect("peeked");
            // Histograms of an earlier row than asked (none are written out of order) are passed over.
            if index(&h) == j {
                into.add(&h);
                *found = true;
            }
        }
    }

    /// Row `m` of the merged run, when this segment has it.
    fn row(&self, m: u64) -> Option<usize> {
        let j = m.checked_sub(self.input.offset)? as usize;
        (j < self.input.data.series.intervals.len()).then_some(j)
    }
}

/// Reads the Reconnects and TLS columns of the segment's series.csv, and of its drain.csv
/// (the drain after the stop, whose row follows series.csv's in the segment's series).
fn extra_columns(input: &Input, rows: usize) -> Result<Vec<(u64, f64)>, Error> {
    use volley_rundir::rundir::{DRAIN_CSV, SERIES_CSV};
    let dir = &input.data.dir;
    let drain = dir.join(DRAIN_CSV);
    // series.csv's rows, then drain.csv's: the measured ones when there is a drain.csv (a
    // run directory written before it has the drain as series.csv's last row).
    let files = if drain.is_file() {
        vec![
            (dir.join(SERIES_CSV), input.data.series.measured_rows()),
            (drain, rows),
        ]
    } else {
        vec![(dir.join(SERIES_CSV), rows)]
    };
    let mut out = Vec::with_capacity(rows);
    for (path, upto) in files {
        let mut reader = csv::ReaderBuilder::new()
            .flexible(true)
            .from_path(&path)
            .map_err(|e| volley_rundir::Error::malformed(&path, 1, None, e.to_string()))?;
        let header = reader
            .headers()
            .map_err(|e| volley_rundir::Error::malformed(&path, 1, None, e.to_string()))?
            .clone();
        let col = |name: &str| header.iter().position(|h| h == name);
        let (rc, tc) = (col(RECONNECTS), col(TLS_MS));
        for rec in reader.records().take(upto.saturating_sub(out.len())) {
            let Ok(rec) = rec else { break };
            let num = |c: Option<usize>| {
                c.and_then(|c| rec.get(c))
                    .and_then(|v| v.parse::<f64>().ok())
                    .unwrap_or(0.0)
            };
            out.push((num(rc) as u64, num(tc)));
        }
        // Rows the file did not hold read as 0, so drain.csv's stay in their place.
        out.resize(upto.max(out.len()), (0, 0.0));
    }
    out.resize(rows, (0, 0.0));
    Ok(out)
}

/// The sums behind a row: its count times each mean, µs.
fn counts_of(
    row: &Interval,
    kinds: Option<&[u64; volley_stats::KINDS]>,
    tls_ms: f64,
    reconnects: u64,
) -> Counts {
    let n = row.tests as f64;
    let sum_us = |mean_ms: f64| (mean_ms * 1000.0 * n).round() as u64;
    let mean_us = row.mean_test_time_ms * 1000.0;
    let sd_us = row.test_time_sd_ms * 1000.0;
    let mut c = Counts {
        tests: row.tests,
        errors: row.errors,
        response_errors: row.response_errors,
        total_sum_us: sum_us(row.mean_test_time_ms),
        total_sumsq_us: n * (sd_us * sd_us + mean_us * mean_us),
        ttfb_sum_us: sum_us(row.mttfb_ms),
        connect_sum_us: sum_us(row.mean_connect_ms),
        tls_sum_us: sum_us(tls_ms),
        bytes: (row.mean_response_length * n).round() as u64,
        reconnects,
        dropped: row.dropped,
        ..Counts::default()
    };
    if let Some(k) = kinds {
        c.errors_by_kind = *k;
    }
    c
}

/// Histograms of one merged interval, by key, added as they come.
#[derive(Default)]
struct Hists(HashMap<HistKey, Histogram<u64>>);

impl Hists {
    fn add(&mut self, h: &LoggedHistogram) {
        h.histogram
            .add_to(self.0.entry(h.key).or_insert_with(new_histogram));
    }

    fn latencies(&mut self, key: HistKey) -> Latencies {
        self.0
            .remove(&key)
            .map_or_else(Latencies::new, Latencies::from_histogram)
    }

    fn boxed(&mut self, key: HistKey) -> Option<Box<Histogram<u64>>> {
        self.0.remove(&key).map(Box::new)
    }
}

/// Writes every merged interval; returns how many.
/// Writes the merged intervals; returns how many, and notes on what the segments' files
/// lacked ([`Prepared::note`]).
pub(crate) fn write_intervals(
    set: &SegmentSet,
    writer: &mut RunWriter,
    interval_s: f64,
) -> Result<(usize, Vec<String>), Error> {
    let mut prepared = set
        .segments
        .iter()
        .map(Prepared::new)
        .collect::<Result<Vec<_>, _>>()?;
    let steps = set.segments[0].data.meta.steps.len();
    let open = set.segments[0].data.meta.plan.load.is_open();
    let end = prepared
        .iter()
        .map(|p| p.input.offset + p.input.data.series.intervals.len() as u64)
        .max()
        .unwrap_or(0);
    let mut written = 0;
    for m in 0..end {
        let mut counts = Counts::default();
        let mut step_counts = vec![Counts::default(); steps];
        let mut hists = Hists::default();
        let (mut vusers, mut period, mut any) = (0.0, 0.0f64, false);
        for p in &mut prepared {
            let Some(j) = p.row(m) else { continue };
            any = true;
            let data = &p.input.data;
            let row = &data.series.intervals[j];
            let mut c = counts_of(row, data.errors_by_kind.get(j), p.extra[j].1, p.extra[j].0);
            if let Some(g) = data.generator.get(j) {
                c.late = g.late;
                c.sched_lag_max_us = (g.sched_lag_max_ms * 1000.0).round() as u64;
                c.generator_cpu_pct = g.cpu_pct;
            }
            counts.merge(&c);
            vusers += row.vusers;
            period = period.max(row.period_s);
            for (k, sc) in step_counts.iter_mut().enumerate() {
                let Some(step_row) = data.steps.get(k).and_then(|(_, s)| s.intervals.get(j)) else {
                    continue;
                };
                let mut c = counts_of(step_row, None, 0.0, 0);
                c.events = data
                    .step_events
                    .get(k)
                    .and_then(|e| e.get(j))
                    .copied()
                    .unwrap_or(0);
                sc.merge(&c);
            }
            p.add_histograms(j, &mut hists)?;
        }
        if !any {
            continue;
        }
        let mut sample = IntervalSample::new(m);
        sample.counts = counts;
        sample.ttfb = hists.latencies(HistKey::TTFB);
        sample.total = hists.latencies(HistKey::TOTAL);
        let (ta, tt) = (
            hists.0.contains_key(&HistKey::TTFB_ACTUAL),
            hists.0.contains_key(&HistKey::TOTAL_ACTUAL),
        );
        if open || ta || tt {
            sample.actual = Some(Box::new((
                hists.latencies(HistKey::TTFB_ACTUAL),
                hists.latencies(HistKey::TOTAL_ACTUAL),
            )));
        }
        sample.iteration = hists.boxed(HistKey::ITERATION);
        sample.unfinished = hists.boxed(HistKey::UNFINISHED);
        sample.sched_lag = hists.boxed(HistKey::SCHED_LAG);
        sample.failed = hists.boxed(HistKey::FAILED);
        sample.pool_wait = hists.boxed(HistKey::POOL_WAIT);
        let step_samples: Vec<IntervalSample> = step_counts
            .into_iter()
            .enumerate()
            .map(|(k, c)| {
                let mut s = IntervalSample::new(m);
                s.counts = c;
                s.ttfb = hists.latencies(HistKey::step(volley_rundir::HistMetric::Ttfb, k));
                s.total = hists.latencies(HistKey::step(volley_rundir::HistMetric::Total, k));
                s
            })
            .collect();
        let row = sample.to_interval(m as f64 * interval_s, period, vusers);
        writer.write_interval(&sample, &row, &step_samples)?;
        written += 1;
    }
    Ok((
        written,
        prepared.iter().filter_map(Prepared::note).collect(),
    ))
}
