//! A run's metrics as Prometheus sees them: cumulative counters, gauges and histograms,
//! grown interval by interval from what the recorder wrote, labelled so that the segments of
//! a split run (one series set each) add up with `sum`.
//!
//! Every output renders from these [`Family`]s — remote write, the OpenMetrics text — so
//! both carry the same series with the same values.

use std::time::{Duration, SystemTime};

use volley_record::{IntervalView, RunStart};
use volley_stats::{Counts, ErrorKind, IntervalSample};

use crate::buckets;

/// What a family is, in Prometheus' terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up; its sample is named `<family>_total`.
    Counter,
    /// A value now.
    Gauge,
    /// `_bucket{le}`, `_sum` and `_count`, cumulative.
    Histogram,
}

/// One sample: its name's suffix (`_total`, `_bucket`, … or none), its labels beyond the
/// family's name, and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub suffix: &'static str,
    pub labels: Vec<(&'static str, String)>,
    pub value: f64,
}

/// A metric family: name, help, kind, unit (OpenMetrics' `# UNIT`), samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    pub name: String,
    pub help: &'static str,
    pub kind: Kind,
    pub unit: Option<&'static str>,
    pub samples: Vec<Sample>,
}

/// Totals of one part of the run (the whole, or one scenario step) since it started.
#[derive(Debug, Clone, Default)]
struct Part {
    counts: Counts,
    ttfb: Option<Box<buckets::Counts>>,
    total: Option<Box<buckets::Counts>>,
}

impl Part {
    fn add(&mut self, s: &IntervalSample) {
        self.counts.merge(&s.counts);
        if !s.ttfb.is_empty() {
            buckets::fold(
                &s.ttfb.histogram(),
                self.ttfb
                    .get_or_insert_with(|| Box::new([0; buckets::FINITE + 1])),
            );
        }
        if !s.total.is_empty() {
            buckets::fold(
                &s.total.histogram(),
                self.total
                    .get_or_insert_with(|| Box::new([0; buckets::FINITE + 1])),
            );
        }
    }

    /// Requests that got an answer or failed (what report.json counts: tests + errors).
    fn requests(&self) -> u64 {
        self.counts.tests + self.counts.errors
    }
}

/// Error kinds exported as `volley_errors_total{kind}` (`not_sent` is no request: it has
/// its own counter).
fn error_kinds() -> impl Iterator<Item = ErrorKind> {
    ErrorKind::ALL
        .into_iter()
        .filter(|k| *k != ErrorKind::NotSent)
}

/// One run's metrics so far.
#[derive(Debug, Clone)]
pub struct RunMetrics {
    /// `run_id`, `name`, `segment`: on every series.
    labels: Vec<(&'static str, String)>,
    steps: Vec<String>,
    whole: Part,
    by_step: Vec<Part>,
    vus: f64,
    target_vus: u64,
    started: SystemTime,
    interval: Duration,
    /// Intervals seen.
    pub intervals: u64,
}

impl RunMetrics {
    /// A run that has just started, none of its intervals seen.
    pub fn new(run: &RunStart<'_>) -> RunMetrics {
        let meta = run.meta;
        let (run_id, segment) = match &meta.segment {
            Some(note) => (note.run_id.clone(), note.segment.to_string()),
            // A whole run: its directory's name is unique and is what the user sees.
            None => (
                run.dir.file_name().map_or_else(
                    || meta.started_at.clone(),
                    |n| n.to_string_lossy().into_owned(),
                ),
                "0/1".to_string(),
            ),
        };
        let steps: Vec<String> = meta.steps.iter().map(|s| s.name.clone()).collect();
        RunMetrics {
            labels: vec![
                ("run_id", run_id),
                ("name", meta.name.clone()),
                ("segment", segment),
            ],
            by_step: vec![Part::default(); steps.len()],
            steps,
            whole: Part::default(),
            vus: 0.0,
            target_vus: 0,
            started: run.started,
            interval: Duration::from_secs_f64(meta.interval_s.max(0.001)),
            intervals: 0,
        }
    }

    /// The run id label.
    pub fn run_id(&self) -> &str {
        &self.labels[0].1
    }

    /// Adds an interval.
    pub fn add(&mut self, iv: &IntervalView<'_>) {
        self.whole.add(iv.sample);
        for (part, s) in self.by_step.iter_mut().zip(iv.steps) {
            part.add(s);
        }
        self.vus = iv.row.vusers;
        self.target_vus = iv.target_vus;
        self.intervals = self.intervals.max(iv.index + 1);
    }

    /// Where the samples of `iv` are stamped, ms since the Unix epoch: when its interval ends;
    /// for the drain after the stop (a row of no length, after the last interval), now, when
    /// it ended, and never before the last interval's stamp.
    pub fn stamp_ms(&self, iv: &IntervalView<'_>) -> i64 {
        if iv.row.period_s > 0.0 {
            return self.end_ms(iv.index);
        }
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        now.max(self.end_ms(iv.index.saturating_sub(1)) + 1)
    }

    /// When interval `index` ends (where its samples are stamped), ms since the Unix epoch.
    pub fn end_ms(&self, index: u64) -> i64 {
        let at = self.started + self.interval * (index as u32 + 1);
        at.duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    }

    /// When the run started, ms since the Unix epoch.
    pub fn start_ms(&self) -> i64 {
        self.started
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    }

    fn with(&self, extra: &[(&'static str, String)]) -> Vec<(&'static str, String)> {
        let mut l = self.labels.clone();
        l.extend(extra.iter().cloned());
        l
    }

    /// The families, values as of the last interval added.
    pub fn families(&self) -> Vec<Family> {
        let mut out = Vec::new();
        self.part_families(&mut out, "", &self.whole, &[]);
        if !self.steps.is_empty() {
            let mut steps = Vec::new();
            for (name, part) in self.steps.iter().zip(&self.by_step) {
                self.part_families(&mut steps, "step_", part, &[("step", name.clone())]);
            }
            // One family per name, its samples from every step.
            for f in steps {
                match out.iter_mut().find(|g: &&mut Family| g.name == f.name) {
                    Some(g) => g.samples.extend(f.samples),
                    None => out.push(f),
                }
            }
        }
        let c = &self.whole.counts;
        out.push(counter(
            "volley_dropped_arrivals",
            "Open model: arrivals that found no free VU and were not sent",
            None,
            vec![self.sample("_total", &[], c.dropped as f64)],
        ));
        out.push(counter(
            "volley_late_arrivals",
            "Open model: arrivals sent late because they waited for a free VU",
            None,
            vec![self.sample("_total", &[], c.late as f64)],
        ));
        out.push(Family {
            name: "volley_vus".into(),
            help: "Virtual users running at the end of the interval",
            kind: Kind::Gauge,
            unit: None,
            samples: vec![self.sample("", &[], self.vus)],
        });
        out.push(Family {
            name: "volley_target_vus".into(),
            help: "The plan's VU target at the end of the interval",
            kind: Kind::Gauge,
            unit: None,
            samples: vec![self.sample("", &[], self.target_vus as f64)],
        });
        out
    }

    fn sample(&self, suffix: &'static str, extra: &[(&'static str, String)], value: f64) -> Sample {
        Sample {
            suffix,
            labels: self.with(extra),
            value,
        }
    }

    /// Requests, errors, bytes and the two latency histograms of one part; `prefix` is
    /// `step_` for a scenario step's families (so a sum over the run's series never adds a
    /// step to the whole it is part of).
    fn part_families(
        &self,
        out: &mut Vec<Family>,
        prefix: &str,
        part: &Part,
        extra: &[(&'static str, String)],
    ) {
        let c = &part.counts;
        let name = |base: &str| format!("volley_{prefix}{base}");
        out.push(counter(
            name("requests"),
            "Requests that completed or failed (tests + errors)",
            None,
            vec![self.sample("_total", extra, part.requests() as f64)],
        ));
        let errors = error_kinds()
            .map(|k| {
                let mut l = extra.to_vec();
                l.push(("kind", k.name().to_string()));
                self.sample("_total", &l, c.errors_by_kind[k.index()] as f64)
            })
            .collect();
        out.push(counter(
            name("errors"),
            "Failed requests by kind",
            None,
            errors,
        ));
        out.push(counter(
            name("not_sent"),
            "Scenario steps that could not be built and were never sent",
            None,
            vec![self.sample(
                "_total",
                extra,
                c.errors_by_kind[ErrorKind::NotSent.index()] as f64,
            )],
        ));
        out.push(counter(
            name("response_bytes"),
            "Response body bytes received by successful requests",
            Some("bytes"),
            vec![self.sample("_total", extra, c.bytes as f64)],
        ));
        out.push(self.histogram(
            name("ttfb_seconds"),
            "Time to first byte of successful requests",
            part.ttfb.as_deref(),
            c.tests,
            c.ttfb_sum_us,
            extra,
        ));
        out.push(self.histogram(
            name("request_duration_seconds"),
            "Total time of successful requests",
            part.total.as_deref(),
            c.tests,
            c.total_sum_us,
            extra,
        ));
    }

    fn histogram(
        &self,
        name: String,
        help: &'static str,
        counts: Option<&buckets::Counts>,
        count: u64,
        sum_us: u64,
        extra: &[(&'static str, String)],
    ) -> Family {
        let cum = counts.map_or([0; buckets::FINITE + 1], buckets::cumulative);
        let mut samples: Vec<Sample> = cum
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let mut l = extra.to_vec();
                l.push(("le", buckets::le(i)));
                self.sample("_bucket", &l, *n as f64)
            })
            .collect();
        samples.push(self.sample("_sum", extra, sum_us as f64 / 1e6));
        samples.push(self.sample("_count", extra, count as f64));
        Family {
            name,
            help,
            kind: Kind::Histogram,
            unit: Some("seconds"),
            samples,
        }
    }
}

fn counter(
    name: impl Into<String>,
    help: &'static str,
    unit: Option<&'static str>,
    samples: Vec<Sample>,
) -> Family {
    Family {
        name: name.into(),
        help,
        kind: Kind::Counter,
        unit,
        samples,
    }
}
