//! `volley scalability`: the Universal Scalability Law ([`volley_stats::usl`]) fitted to
//! throughput against concurrency, from what volley already wrote or a CSV.
//!
//! The points: a capacity search's probes (concurrency by Little's law, or its VUs), a run's
//! levels (each held level of VUs and its TPS), a group's or sweep's runs (mean VUs, TPS), or
//! `concurrency,throughput` rows.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use volley_report::capacity::{self, Capacity};
use volley_report::chartset::{Chart, Line, Unit, XAxis};
use volley_stats::usl::{self, FitError};

use crate::args::{ScalabilityArgs, ScalabilityFormat};

/// The most rows a CSV of points may have.
const MAX_POINTS: usize = 100_000;

/// `concurrency,throughput` rows, a header allowed.
fn csv_points(path: &Path) -> Result<Vec<(f64, f64)>> {
    // 100,000 rows of two numbers fit in a few MiB: more than 64 MiB is not such a CSV.
    let input =
        volley_scenario::limits::open_bounded(path, 64 << 20).map_err(|e| anyhow::anyhow!(e))?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(input);
    let mut out = Vec::new();
    for (i, rec) in reader.records().enumerate() {
        let rec = rec.with_context(|| format!("{}: row {}", path.display(), i + 1))?;
        let cell = |k: usize| rec.get(k).map(str::trim).unwrap_or("");
        let (a, b) = (cell(0).parse::<f64>(), cell(1).parse::<f64>());
        // Row 1 is a header only when neither cell is a number (`concurrency,throughput`):
        // a first row with a typo is an error like any other, not skipped.
        let header = i == 0 && a.is_err() && b.is_err();
        match (a, b) {
            (Ok(n), Ok(x)) if n.is_finite() && x.is_finite() && n > 0.0 && x >= 0.0 => {
                out.push((n, x))
            }
            (Ok(n), Ok(x)) if n.is_finite() && x.is_finite() => bail!(
                "{}: row {}: concurrency {n} and throughput {x}: a concurrency is above 0 and a throughput 0 or more",
                path.display(),
                i + 1
            ),
            _ if header => continue,
            _ => bail!(
                "{}: row {}: `{}` is not two numbers; write concurrency,throughput rows like 18,996",
                path.display(),
                i + 1,
                rec.iter().collect::<Vec<_>>().join(",")
            ),
        }
        if out.len() > MAX_POINTS {
            bail!(
                "{}: more than {MAX_POINTS} rows; the law needs a few levels, not a series",
                path.display()
            );
        }
    }
    Ok(out)
}

/// The points of a run or group directory: a run's held levels; a group's runs.
fn dir_points(path: &Path) -> Result<Vec<(f64, f64)>> {
    let set = volley_formats::open_run_or_group(path, None)?;
    let opts = volley_report::ReportOptions::default();
    if set.runs.len() > 1 {
        return Ok(set
            .runs
            .iter()
            .map(|src| {
                let r = volley_report::RunReport::from_source(src, opts);
                // The measured intervals (not the drain after the stop, of no length and 0 VUs).
                let iv: Vec<_> = src
                    .series
                    .intervals
                    .iter()
                    .filter(|i| i.period_s > 0.0)
                    .collect();
                let vus = iv.iter().map(|i| i.vusers).sum::<f64>() / iv.len().max(1) as f64;
                (vus, r.seed_suite.tps_avg)
            })
            .collect());
    }
    let src = set.runs.first().context("no run in it")?;
    let levels = volley_report::levels::of(src, opts);
    Ok(levels.iter().map(|l| (l.vusers, l.tps_avg)).collect())
}

pub(crate) fn scalability(a: ScalabilityArgs) -> Result<ExitCode> {
    let p = &a.input;
    let points = if p.is_dir() && crate::capacity_cmd::is_capacity_dir(p) {
        let c = Capacity::read(p)?;
        c.probes
            .iter()
            .filter(|x| {
                x.stopped_early.is_none()
                    && x.verdict != volley_stats::search::Outcome::GeneratorLimited
            })
            .map(|x| match c.load {
                capacity::LoadKind::Vus => (x.offered, x.achieved_tps),
                capacity::LoadKind::Rate => (x.concurrency, x.achieved_tps),
            })
            .collect()
    } else if p.is_dir() {
        dir_points(p)?
    } else {
        csv_points(p)?
    };
    let fit = usl::fit(&points);
    match a.format {
        ScalabilityFormat::Json => {
            let v = match &fit {
                Ok(u) => serde_json::json!({ "usl": u, "points": points }),
                Err(e) => {
                    serde_json::json!({ "usl": null, "points": points, "error": e.to_string() })
                }
            };
            println!("{}", serde_json::to_string_pretty(&v)?);
        }
        ScalabilityFormat::Table => {
            println!(
                "  {:>12}  {:>12}  {:>12}",
                "concurrency", "measured", "modelled"
            );
            for (n, x) in &points {
                let m = fit
                    .as_ref()
                    .map_or("-".to_string(), |u| format!("{:.1}", u.throughput(*n)));
                println!("  {n:>12.1}  {x:>12.1}  {m:>12}");
            }
            match &fit {
                Ok(u) => println!("\n{}", capacity::usl_line(u)),
                Err(e) => println!("\nNo prediction: {e}"),
            }
        }
    }
    if let (Some(dir), Ok(u)) = (&a.charts, &fit) {
        let mut pts = points.clone();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let max = pts
            .last()
            .map_or(1.0, |p| p.0)
            .max(u.peak_concurrency.unwrap_or(0.0))
            * 1.1;
        let xs: Vec<f64> = (0..=100).map(|i| max * i as f64 / 100.0).collect();
        let mut x = xs.clone();
        x.extend(pts.iter().map(|p| p.0));
        let modelled: Vec<Option<f64>> = xs
            .iter()
            .map(|n| Some(u.throughput(*n)))
            .chain(pts.iter().map(|_| None))
            .collect();
        let measured: Vec<Option<f64>> = xs
            .iter()
            .map(|_| None)
            .chain(pts.iter().map(|p| Some(p.1)))
            .collect();
        let chart = Chart {
            name: "scalability",
            title: "Throughput against concurrency: measured and the USL".into(),
            x_axis: XAxis::Load {
                max,
                label: "concurrency",
            },
            y: Unit::Tps,
            y2: None,
            image: true,
            x,
            lines: vec![
                Line::new("USL model", modelled),
                Line::new("measured", measured),
            ],
        };
        for f in volley_report::charts::save_chart(dir, &chart)? {
            eprintln!("volley: wrote {}", f.display());
        }
    }
    Ok(match fit {
        Ok(_) => ExitCode::SUCCESS,
        // Too little to fit is an input problem; a poor fit is a verdict that cannot be judged.
        Err(FitError::TooFewPoints(_)) => ExitCode::from(2),
        Err(FitError::PoorFit(_)) => ExitCode::from(1),
    })
}
