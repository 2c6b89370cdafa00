//! What a report holds; serialized as `report.json`.

use serde::Serialize;
use volley_formats::RunData;
use volley_formats::hlog::{TAG_TOTAL, TAG_TTFB};
use volley_stats::{ErrorKind, LatencySummary, SeedSuite, SuiteOptions, TpsTail};

/// Version of the `report.json` layout; bumped when a field changes meaning or goes away.
pub const SCHEMA_VERSION: u32 = 1;

/// How to compute the report.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReportOptions {
    /// Seconds to exclude from the start; `None` uses the run's own warm-up.
    pub warmup_s: Option<f64>,
    /// TPS tail.
    pub tps_tail: TpsTail,
}

/// One kind of error with its first messages.
#[derive(Debug, Clone, Serialize)]
pub struct ErrorLine {
    /// Kind name.
    pub kind: String,
    /// Count after warm-up.
    pub count: u64,
    /// First messages seen.
    pub messages: Vec<String>,
}

/// Everything a report shows.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// [`SCHEMA_VERSION`].
    pub schema: u32,
    /// Run name.
    pub name: String,
    /// Where the figures came from (a directory or a file).
    pub source: String,
    /// running | complete | interrupted | aborted, or `imported`.
    pub status: String,
    /// Why it stopped early.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When it started, as recorded.
    pub started_at: String,
    /// Sampling interval, s.
    pub interval_s: f64,
    /// Seconds excluded from the start.
    pub warmup_s: f64,
    /// Seconds covered by the figures.
    pub measured_s: f64,
    /// The seed suite over the per-interval series.
    pub seed_suite: SeedSuite,
    /// Per-request figures (absent when the source has only per-interval data).
    pub per_request: PerRequest,
    /// Errors by kind.
    pub errors: Vec<ErrorLine>,
    /// Things a reader must know to read the figures right.
    pub notes: Vec<String>,
}

/// Per-request latency summaries.
#[derive(Debug, Clone, Serialize, Default)]
pub struct PerRequest {
    /// Time to first byte, from the actual start (connection set-up included).
    pub ttfb_ms: Option<LatencySummary>,
    /// Total time to the end of the body.
    pub total_ms: Option<LatencySummary>,
}

impl RunReport {
    /// The report of a run directory.
    pub fn from_run(run: &RunData, opts: ReportOptions) -> RunReport {
        let warmup_s = opts.warmup_s.unwrap_or(run.meta.warmup_s);
        let series = run.series.after_warmup(warmup_s);
        let seed_suite = SeedSuite::compute(&series, SuiteOptions { tps_tail: opts.tps_tail });
        let first_kept = run.series.intervals.len() - series.intervals.len();
        let mut errors = Vec::new();
        for kind in ErrorKind::ALL {
            let count: u64 = run.errors_by_kind[first_kept..].iter().map(|e| e[kind.index()]).sum();
            if count > 0 {
                let messages = run
                    .meta
                    .errors
                    .iter()
                    .find(|n| n.kind == kind.name())
                    .map(|n| n.messages.clone())
                    .unwrap_or_default();
                errors.push(ErrorLine { kind: kind.name().to_string(), count, messages });
            }
        }
        let mut notes = Vec::new();
        if warmup_s > 0.0 {
            notes.push(format!("The first {warmup_s} s (warm-up, {first_kept} intervals) are excluded from every figure."));
        }
        if seed_suite.variability_zero_intervals > 0 {
            notes.push(format!(
                "{} intervals with no successful request (MTTFB 0) are left out of the variability.",
                seed_suite.variability_zero_intervals
            ));
        }
        let nominal = series.nominal_interval_s();
        if let Some(last) = series.intervals.last().filter(|l| l.period_s < nominal * 0.999) {
            notes.push(format!(
                "The last interval is partial ({:.2} s of {nominal} s); its TPS is per second of that part.",
                last.period_s
            ));
        }
        notes.push(
            "TTFB and MTTFB are measured from the request's actual start, connection set-up included (as nGrinder does)."
                .to_string(),
        );
        RunReport {
            schema: SCHEMA_VERSION,
            name: run.meta.name.clone(),
            source: run.dir.display().to_string(),
            status: run.meta.status.name().to_string(),
            reason: run.meta.reason.clone(),
            started_at: run.meta.started_at.clone(),
            interval_s: run.meta.interval_s,
            warmup_s,
            measured_s: series.intervals.iter().map(|i| i.period_s).sum(),
            seed_suite,
            per_request: PerRequest { ttfb_ms: run.latency(TAG_TTFB, warmup_s), total_ms: run.latency(TAG_TOTAL, warmup_s) },
            errors,
            notes,
        }
    }

    /// The report of a per-interval series read from a foreign file (no per-request data).
    pub fn from_series(path: &std::path::Path, series: &volley_stats::Series, opts: ReportOptions) -> RunReport {
        let warmup_s = opts.warmup_s.unwrap_or(0.0);
        let kept = series.after_warmup(warmup_s);
        let seed_suite = SeedSuite::compute(&kept, SuiteOptions { tps_tail: opts.tps_tail });
        let mut notes = vec![
            "This file has only per-interval means: per-request percentiles are not available from it.".to_string(),
        ];
        if warmup_s > 0.0 {
            notes.push(format!("The first {warmup_s} s (warm-up) are excluded from every figure."));
        }
        if seed_suite.variability_zero_intervals > 0 {
            notes.push(format!(
                "{} intervals with no successful request (MTTFB 0) are left out of the variability.",
                seed_suite.variability_zero_intervals
            ));
        }
        RunReport {
            schema: SCHEMA_VERSION,
            name: path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            source: path.display().to_string(),
            status: "imported".to_string(),
            reason: None,
            started_at: String::new(),
            interval_s: kept.nominal_interval_s(),
            warmup_s,
            measured_s: kept.intervals.iter().map(|i| i.period_s).sum(),
            seed_suite,
            per_request: PerRequest::default(),
            errors: Vec::new(),
            notes,
        }
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("reports serialize")
    }
}
