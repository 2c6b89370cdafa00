//! `volley runs`: the run history under a directory, and a figure's trend across it.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;
use volley_report::history::{self, Entry};
use volley_report::trend::Trend;

/// `volley runs`.
#[derive(Debug, Args)]
pub(crate) struct RunsArgs {
    /// Where the runs are (searched up to three levels down, so runs/demo/… count).
    #[arg(default_value = "runs")]
    pub(crate) dir: PathBuf,
    /// Only runs (and groups) whose name matches this glob (`*` any text, `?` one character).
    #[arg(long, value_name = "PATTERN")]
    pub(crate) name: Option<String>,
    /// Only the newest N.
    #[arg(long, value_name = "N")]
    pub(crate) last: Option<usize>,
    /// One JSON array instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
    /// Draw this figure across the runs (a comparison key: tps_avg, ttfb_p99_ms,
    /// error_rate_pct, …) as PNG, SVG and an interactive HTML page.
    #[arg(long, value_name = "METRIC")]
    pub(crate) trend: Option<String>,
    /// With --trend: where the chart goes, without extension [default: trend-METRIC].
    #[arg(long, short = 'o', value_name = "STEM", requires = "trend")]
    pub(crate) output: Option<PathBuf>,
}

pub(crate) fn runs(a: RunsArgs) -> Result<ExitCode> {
    // The metric is checked before anything is read, so a typo costs nothing.
    let metric = a
        .trend
        .as_deref()
        .map(volley_report::gate::metric_name)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--trend: {e}"))?;
    let all = history::scan(&a.dir)?;
    let mut entries: Vec<Entry> = match &a.name {
        Some(p) => all
            .iter()
            .filter(|e| history::glob_match(p, &e.name))
            .cloned()
            .collect(),
        None => all.clone(),
    };
    if let Some(n) = a.last {
        if n == 0 {
            anyhow::bail!("--last 0 shows nothing; give 1 or more (the newest runs)");
        }
        entries.drain(..entries.len().saturating_sub(n));
    }
    if entries.is_empty() {
        match &a.name {
            Some(p) if !all.is_empty() => {
                let mut names: Vec<&str> = all.iter().map(|e| e.name.as_str()).collect();
                names.sort_unstable();
                names.dedup();
                eprintln!(
                    "volley: no run named `{p}` under {} (names there: {}); --name takes a glob, e.g. 'rooms*'",
                    a.dir.display(),
                    names.join(", ")
                );
            }
            _ => eprintln!("volley: no runs under {}", a.dir.display()),
        }
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&entries)?);
    } else if !entries.is_empty() {
        print!("{}", history::table(&entries));
    }
    if let Some(key) = metric {
        let trend = Trend::of(&entries, key);
        for l in &trend.left_out {
            eprintln!("volley: not drawn: {l}");
        }
        if trend.is_empty() {
            bail!(
                "--trend {key}: no run under {} has this figure, so there is nothing to draw",
                a.dir.display()
            );
        }
        let stem = a
            .output
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("trend-{key}")));
        let mut files = trend.save_images(&stem)?;
        let mut html = stem.clone().into_os_string();
        html.push(".html");
        let html = PathBuf::from(html);
        std::fs::write(&html, trend.html(&entries))
            .map_err(|e| anyhow::anyhow!("{}: {e}", html.display()))?;
        files.push(html);
        eprintln!(
            "volley: wrote {}",
            files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}
