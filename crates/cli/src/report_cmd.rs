//! `volley report`: the metric suite of run directories and result files.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Result, bail};
use volley_formats::RunData;
use volley_report::{ReportOptions, RunReport};
use volley_scenario::parse_duration;

use crate::args::{ReportArgs, ReportFormat};

pub(crate) fn report(a: ReportArgs) -> Result<ExitCode> {
    let warmup_s = match &a.warmup {
        Some(w) => Some(parse_duration(w).map_err(|e| anyhow::anyhow!("--warmup: {e}"))?.as_secs_f64()),
        None => None,
    };
    let opts = ReportOptions { warmup_s, tps_tail: a.tps_tail.into() };
    let mut out = String::new();
    for path in &a.paths {
        let report = load(path, opts)?;
        out.push_str(&match a.format {
            ReportFormat::Table => volley_report::table(&report),
            ReportFormat::Md => volley_report::markdown(&report),
            ReportFormat::Json => report.to_json() + "\n",
        });
    }
    match &a.output {
        Some(p) => std::fs::write(p, out)?,
        None => print!("{out}"),
    }
    Ok(ExitCode::SUCCESS)
}

fn load(path: &Path, opts: ReportOptions) -> Result<RunReport> {
    if path.is_dir() {
        if !RunData::is_run_dir(path) {
            bail!("{}: not a volley run directory (no run.json and series.csv)", path.display());
        }
        return Ok(RunReport::from_run(&RunData::read(path)?, opts));
    }
    let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    if volley_formats::ngrinder::sniff(&text) {
        let file = volley_formats::ngrinder::parse(path, &text)?;
        return Ok(RunReport::from_series(path, &file.total, opts));
    }
    bail!("{}: not a format volley reads yet; it reads volley run directories and nGrinder output.csv", path.display())
}
