//! A run as the dashboard holds it while it goes: everything the observer was shown,
//! gathered interval by interval into the report's own chart figures
//! ([`volley_report::chartset::RunFigures`]) and the tables beside them, and turned into
//! one JSON snapshot per update. Every figure here comes from what the recorder handed the
//! observer — the intervals it wrote — never from a second source.

use hdrhistogram::Histogram;
use serde::Serialize;
use volley_engine::LiveModel;
use volley_engine::scrape::ScrapeSample;
use volley_record::IntervalView;
use volley_report::chartset::{RunFigures, curve_of};
use volley_report::html::{ChartView, chart_view};
use volley_rundir::RunMeta;
use volley_rundir::rundir::{PlanChangeNote, ServerPoint};
use volley_stats::{ErrorKind, Interval, LatencySummary, SeedSuite, Series, SuiteOptions};

/// How many first messages are kept per error kind (as run.json does).
const MESSAGES_PER_KIND: usize = 5;

/// One run's live state.
pub(crate) struct LiveRun {
    meta: RunMeta,
    dir: String,
    model: LiveModel,
    figures: RunFigures,
    /// Every interval's row (for the per-interval suite the thresholds read).
    rows: Vec<Interval>,
    /// Each step's rows.
    step_rows: Vec<Vec<Interval>>,
    totals: Totals,
    steps: Vec<Totals>,
    errors: [u64; volley_stats::KINDS],
    messages: Vec<(ErrorKind, String)>,
    now: Option<Now>,
    generator: Generator,
    plan_changes: Vec<PlanChangeNote>,
    /// `running` while the load goes, then `finished`, then `recorded`.
    phase: &'static str,
    /// Which run of a group (1-based) of how many.
    run_of: Option<(usize, usize)>,
}

/// Merged per-request latencies from the warm-up's end on, µs.
struct Totals {
    tests: u64,
    errors: u64,
    ttfb: Histogram<u64>,
    total: Histogram<u64>,
    iteration: Histogram<u64>,
}

impl Totals {
    fn new() -> Totals {
        let h = || Histogram::new(3).expect("3 significant digits is a valid precision");
        Totals {
            tests: 0,
            errors: 0,
            ttfb: h(),
            total: h(),
            iteration: h(),
        }
    }

    fn add(&mut self, s: &volley_stats::IntervalSample) {
        self.tests += s.counts.tests;
        self.errors += s.counts.errors;
        let _ = self.ttfb.add(&*s.ttfb.histogram());
        let _ = self.total.add(&*s.total.histogram());
        if let Some(it) = &s.iteration {
            let _ = self.iteration.add(&**it);
        }
    }
}

/// The last interval.
#[derive(Serialize, Clone)]
struct Now {
    t_s: f64,
    tps: f64,
    vus: f64,
    target_vus: u64,
    mttfb_ms: f64,
    errors: u64,
    ttfb_ms: Option<LatencySummary>,
}

#[derive(Serialize, Clone, Default)]
struct Generator {
    cpu_pct: f64,
    cpu_max_pct: f64,
    sched_lag_ms: f64,
    sched_lag_max_ms: f64,
    late: u64,
    dropped: u64,
}

/// What the page receives on every update.
#[derive(Serialize)]
pub(crate) struct Snapshot {
    name: String,
    dir: String,
    phase: &'static str,
    run_of: Option<(usize, usize)>,
    /// `closed`, `open` or `fixed`: which control the page offers.
    control: &'static str,
    max_vus: Option<u64>,
    interval_s: f64,
    warmup_s: f64,
    planned_s: f64,
    elapsed_s: f64,
    charts: Vec<ChartView>,
    now: Option<Now>,
    totals: TotalsView,
    errors: Vec<ErrorView>,
    step_head: [&'static str; 8],
    steps: Vec<Vec<String>>,
    generator: Generator,
    thresholds: Vec<ThresholdView>,
    plan_changes: Vec<String>,
    /// The run's report is written: the page loads `/report`.
    pub(crate) report: bool,
}

#[derive(Serialize)]
struct TotalsView {
    tests: u64,
    errors: u64,
    error_rate_pct: f64,
    ttfb_ms: Option<LatencySummary>,
    total_ms: Option<LatencySummary>,
}

#[derive(Serialize)]
struct ErrorView {
    kind: &'static str,
    count: u64,
    messages: Vec<String>,
}

#[derive(Serialize)]
struct ThresholdView {
    expr: String,
    actual: Option<f64>,
    /// `pass`, `fail`, or `waiting` (no figure yet).
    state: &'static str,
}

impl LiveRun {
    /// A run that has just started.
    pub(crate) fn new(
        meta: &RunMeta,
        dir: &std::path::Path,
        model: LiveModel,
        run_of: Option<(usize, usize)>,
    ) -> LiveRun {
        let steps = meta.steps.len();
        LiveRun {
            figures: RunFigures {
                name: meta.name.clone(),
                steps: meta
                    .steps
                    .iter()
                    .map(|s| (s.name.clone(), Vec::new()))
                    .collect(),
                ..Default::default()
            },
            meta: meta.clone(),
            dir: dir.display().to_string(),
            model,
            rows: Vec::new(),
            step_rows: vec![Vec::new(); steps],
            totals: Totals::new(),
            steps: (0..steps).map(|_| Totals::new()).collect(),
            errors: [0; volley_stats::KINDS],
            messages: Vec::new(),
            now: None,
            generator: Generator::default(),
            plan_changes: Vec::new(),
            phase: "running",
            run_of,
        }
    }

    /// Takes in one interval as it was written.
    pub(crate) fn interval(&mut self, iv: &IntervalView<'_>) {
        let row = iv.row;
        let ttfb = &iv.sample.ttfb;
        let p99 = (!ttfb.is_empty()).then(|| ttfb.value_at_percentile(99.0) as f64 / 1000.0);
        self.figures.timeline.push(row, p99);
        let after_warmup = row.start_s + 1e-9 >= self.meta.warmup_s;
        for (i, s) in iv.steps.iter().enumerate() {
            let step_row = s.to_interval(row.start_s, row.period_s, row.vusers);
            if let Some((_, line)) = self.figures.steps.get_mut(i) {
                line.push((step_row.tests > 0).then_some(step_row.mttfb_ms));
            }
            if after_warmup {
                if let Some(t) = self.steps.get_mut(i) {
                    t.add(s);
                }
                if let Some(r) = self.step_rows.get_mut(i) {
                    r.push(step_row);
                }
            }
        }
        if after_warmup {
            self.rows.push(row.clone());
            self.totals.add(iv.sample);
        }
        let c = &iv.sample.counts;
        for (a, b) in self.errors.iter_mut().zip(c.errors_by_kind) {
            *a += b;
        }
        for m in iv.messages {
            if self.messages.iter().filter(|(k, _)| *k == m.kind).count() < MESSAGES_PER_KIND {
                let text = match &m.step {
                    Some(step) => format!("{step}: {}", m.text),
                    None => m.text.clone(),
                };
                self.messages.push((m.kind, text));
            }
        }
        let lag_ms = c.sched_lag_max_us as f64 / 1000.0;
        let g = &mut self.generator;
        g.cpu_pct = c.generator_cpu_pct;
        g.cpu_max_pct = g.cpu_max_pct.max(c.generator_cpu_pct);
        g.sched_lag_ms = lag_ms;
        g.sched_lag_max_ms = g.sched_lag_max_ms.max(lag_ms);
        g.late += c.late;
        g.dropped += c.dropped;
        self.now = Some(Now {
            t_s: row.start_s + row.period_s,
            tps: row.tps,
            vus: row.vusers,
            target_vus: iv.target_vus,
            mttfb_ms: row.mttfb_ms,
            errors: row.errors,
            ttfb_ms: LatencySummary::from_histogram(&ttfb.histogram()),
        });
        self.figures.curves = vec![
            ("TTFB", curve_of(&self.totals.ttfb)),
            ("Total time", curve_of(&self.totals.total)),
        ];
    }

    /// Takes in one scrape of the server's metrics.
    pub(crate) fn server(&mut self, s: &ScrapeSample) {
        let elapsed_s = self.meta.interval_s * (s.index + 1) as f64;
        self.figures
            .server
            .extend(s.values.iter().map(|(series, value, rate)| ServerPoint {
                elapsed_s,
                target: s.url.clone(),
                series: series.clone(),
                value: *value,
                rate: *rate,
            }));
    }

    pub(crate) fn plan_changed(&mut self, change: &PlanChangeNote) {
        self.plan_changes.push(change.clone());
    }

    pub(crate) fn set_phase(&mut self, phase: &'static str) {
        self.phase = phase;
    }

    /// The page's view of the run now.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let suite_opts = SuiteOptions::default();
        let suite = SeedSuite::compute(
            &Series {
                intervals: self.rows.clone(),
            },
            suite_opts,
        );
        let step_suites: Vec<SeedSuite> = self
            .step_rows
            .iter()
            .map(|r| {
                SeedSuite::compute(
                    &Series {
                        intervals: r.clone(),
                    },
                    suite_opts,
                )
            })
            .collect();
        let summary = |h: &Histogram<u64>| LatencySummary::from_histogram(h);
        let thresholds = self
            .meta
            .plan
            .thresholds
            .iter()
            .map(|t| {
                let (expr, actual) = match &t.step {
                    None => (
                        t.expr.clone(),
                        Some(volley_report::threshold_actual(
                            t,
                            &suite,
                            &summary(&self.totals.ttfb),
                            &summary(&self.totals.total),
                            &summary(&self.totals.iteration),
                        )),
                    ),
                    Some(name) => {
                        let i = self.meta.steps.iter().position(|s| s.name == *name);
                        let actual = i.map(|i| {
                            let st = &self.steps[i];
                            volley_report::threshold_actual(
                                t,
                                &step_suites[i],
                                &summary(&st.ttfb),
                                &summary(&st.total),
                                &summary(&self.totals.iteration),
                            )
                        });
                        (format!("{name}: {}", t.expr), actual)
                    }
                };
                let actual = actual.filter(|a| a.is_finite());
                let state = match actual {
                    None => "waiting",
                    Some(a) if t.op.holds(a, t.limit) => "pass",
                    Some(_) => "fail",
                };
                ThresholdView {
                    expr,
                    actual,
                    state,
                }
            })
            .collect();
        let ms = |h: &Histogram<u64>, p: f64| {
            if h.is_empty() {
                "-".to_string()
            } else {
                let us = volley_stats::rank::value_at_percentile(h, p);
                format!("{:.2}", us as f64 / 1000.0)
            }
        };
        let steps = self
            .meta
            .steps
            .iter()
            .zip(&self.steps)
            .zip(&step_suites)
            .map(|((info, t), s)| {
                vec![
                    info.name.clone(),
                    info.kind.name().to_string(),
                    t.tests.to_string(),
                    t.errors.to_string(),
                    format!("{:.2}", s.tps_avg),
                    ms(&t.ttfb, 50.0),
                    ms(&t.ttfb, 95.0),
                    ms(&t.ttfb, 99.0),
                ]
            })
            .collect();
        let errors = ErrorKind::ALL
            .iter()
            .zip(self.errors)
            .filter(|(_, n)| *n > 0)
            .map(|(k, count)| ErrorView {
                kind: k.name(),
                count,
                messages: self
                    .messages
                    .iter()
                    .filter(|(m, _)| m == k)
                    .map(|(_, t)| t.clone())
                    .collect(),
            })
            .collect();
        let all = self.totals.tests + self.totals.errors;
        let (control, max_vus) = match self.model {
            LiveModel::Vus { max } => ("closed", Some(max)),
            LiveModel::Rate => ("open", None),
            LiveModel::Fixed | LiveModel::Populations => ("fixed", None),
        };
        Snapshot {
            name: self.meta.name.clone(),
            dir: self.dir.clone(),
            phase: self.phase,
            run_of: self.run_of,
            control,
            max_vus,
            interval_s: self.meta.interval_s,
            warmup_s: self.meta.warmup_s,
            planned_s: self.meta.planned_duration_s,
            elapsed_s: self.now.as_ref().map_or(0.0, |n| n.t_s),
            charts: self.figures.charts().into_iter().map(chart_view).collect(),
            now: self.now.clone(),
            totals: TotalsView {
                tests: self.totals.tests,
                errors: self.totals.errors,
                error_rate_pct: if all > 0 {
                    self.totals.errors as f64 * 100.0 / all as f64
                } else {
                    0.0
                },
                ttfb_ms: summary(&self.totals.ttfb),
                total_ms: summary(&self.totals.total),
            },
            errors,
            step_head: [
                "step", "kind", "tests", "errors", "TPS avg", "TTFB p50", "TTFB p95", "TTFB p99",
            ],
            steps,
            generator: self.generator.clone(),
            thresholds,
            plan_changes: self
                .plan_changes
                .iter()
                .map(PlanChangeNote::describe)
                .collect(),
            report: false,
        }
    }
}
