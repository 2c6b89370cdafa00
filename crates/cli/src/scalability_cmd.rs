//! `volley scalability`: the Universal Scalability Law ([`volley_stats::usl`]) fitted to
//! throughput against concurrency, from what volley already wrote or a CSV.
//!
//! The points: a capacity search's probes (concurrency by Little's law, or its VUs), a run's
//! levels (each held level of VUs and its TPS), a group's or sweep's runs (mean VUs, TPS), or
//! `concurrency,throughput` rows. A throughput of 0 is a point like any other.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use volley_report::capacity::{self, Capacity};
use volley_report::chartset::{Chart, Line, Unit, XAxis};
use volley_stats::usl;

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

/// A table cell: one decimal, or 4 significant digits in scientific notation where one
/// decimal would print 300 digits or none (throughput in odd units: 1e300, 1e-300).
fn cell(v: f64) -> String {
    if v == 0.0 || (1e-2..1e12).contains(&v.abs()) {
        format!("{v:.1}")
    } else {
        format!("{v:.3e}")
    }
}

/// One run as a point: its mean VUs over the measured intervals (not the drain after the
/// stop, of no length and 0 VUs) and its TPS.
fn run_point(src: &volley_formats::Source, opts: volley_report::ReportOptions) -> (f64, f64) {
    let r = volley_report::RunReport::from_source(src, opts);
    let iv: Vec<_> = src
        .series
        .intervals
        .iter()
        .filter(|i| i.period_s > 0.0)
        .collect();
    let vus = iv.iter().map(|i| i.vusers).sum::<f64>() / iv.len().max(1) as f64;
    (vus, r.seed_suite.tps_avg)
}

/// The points of a run or group directory: a run's held levels; a group's runs.
fn dir_points(path: &Path) -> Result<Vec<(f64, f64)>> {
    let set = volley_formats::open_run_or_group(path, None)?;
    let opts = volley_report::ReportOptions::default();
    if set.runs.len() > 1 {
        return Ok(set.runs.iter().map(|src| run_point(src, opts)).collect());
    }
    let src = set.runs.first().context("no run in it")?;
    let levels = volley_report::levels::of(src, opts);
    Ok(levels.iter().map(|l| (l.vusers, l.tps_avg)).collect())
}

/// What `volley sweep -o DIR` writes first among its files: its mark.
const SWEEP_JSON: &str = "sweep.json";

/// A JSON file of at most 16 MiB (run.json, group.json and sweep.json are a few KiB).
fn small_json(path: &Path) -> Result<serde_json::Value> {
    let bytes =
        volley_scenario::limits::read_bounded(path, 16 << 20).map_err(|e| anyhow::anyhow!(e))?;
    serde_json::from_slice(&bytes).with_context(|| format!("{} is not JSON", path.display()))
}

/// The points of a sweep directory (`volley sweep -o DIR`): one per run of each value
/// sweep.json lists (a value with `--repeat` is a group of runs), mean VUs against TPS. A
/// value's run is the newest directory of its name (`<UTC time>_<name>`, so the last in
/// name order): a directory swept twice holds both sweeps, and sweep.json is the last's.
fn sweep_points(path: &Path) -> Result<Vec<(f64, f64)>> {
    let summary = small_json(&path.join(SWEEP_JSON))?;
    let labels: Vec<&str> = summary["rows"]
        .as_array()
        .map(|rows| rows.iter().filter_map(|r| r["label"].as_str()).collect())
        .unwrap_or_default();
    if labels.is_empty() {
        bail!(
            "{}: {SWEEP_JSON} lists no values (no rows with a label); give the directory `volley sweep -o` wrote, or one run or group in it",
            path.display()
        );
    }
    let mut dirs: Vec<_> = std::fs::read_dir(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|d| d.is_dir())
        .collect();
    dirs.sort();
    // Each run's or group's name, from the file that says it (others are not the sweep's).
    let named: Vec<(String, &Path)> = dirs
        .iter()
        .filter_map(|d| {
            let meta = ["group.json", "run.json"]
                .iter()
                .map(|f| d.join(f))
                .find(|f| f.is_file())?;
            let v = small_json(&meta).ok()?;
            Some((v["name"].as_str()?.to_string(), d.as_path()))
        })
        .collect();
    let opts = volley_report::ReportOptions::default();
    let mut points = Vec::new();
    for label in labels {
        let Some((_, dir)) = named.iter().rev().find(|(n, _)| n == label) else {
            bail!(
                "{}: {SWEEP_JSON} lists `{label}`, but no run or group of that name is in the directory; put its run directory back, or fit the runs that are there one by one",
                path.display()
            );
        };
        let set = volley_formats::open_run_or_group(dir, None)?;
        points.extend(set.runs.iter().map(|src| run_point(src, opts)));
    }
    let mut vus: Vec<f64> = points.iter().map(|p| p.0).collect();
    vus.sort_by(f64::total_cmp);
    vus.dedup_by(|a, b| (*a - *b).abs() <= 1e-9 * b.abs().max(1.0));
    if vus.len() == 1 && points.len() > 1 {
        bail!(
            "{}: every run of this sweep held {:.1} VUs, so it varied something other than the concurrency and the law has one level to fit; sweep the VUs (volley sweep --vary vus=1,2,4,8 -- --vus {{vus}} ...), or give one step-up run of it",
            path.display(),
            vus[0]
        );
    }
    Ok(points)
}

pub(crate) fn scalability(a: ScalabilityArgs) -> Result<ExitCode> {
    let p = &a.input;
    // Said before the input is read or fitted: the charts would be the last thing written.
    if let Some(dir) = &a.charts
        && dir.exists()
        && !dir.is_dir()
    {
        bail!(
            "--charts {}: that is a file; --charts takes a directory to write scalability.svg and scalability.png into (made when missing)",
            dir.display()
        );
    }
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
    } else if p.is_dir() && p.join(SWEEP_JSON).is_file() {
        sweep_points(p)?
    } else if p.is_dir() {
        dir_points(p).context(
            "volley scalability reads a capacity directory, a run directory (its levels), a run group, a sweep directory (with sweep.json) or a CSV of concurrency,throughput rows",
        )?
    } else {
        csv_points(p)?
    };
    let fit = usl::fit(&points);
    match a.format {
        ScalabilityFormat::Json => {
            let v = match &fit {
                Ok(u) => serde_json::json!({
                    "usl": u,
                    "peak_measured": u.peak_measured(),
                    "peak_note": u.peak_note(),
                    "points": points
                }),
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
                    .map_or("-".to_string(), |u| cell(u.throughput(*n)));
                println!("  {:>12}  {:>12}  {m:>12}", cell(*n), cell(*x));
            }
            match &fit {
                Ok(u) => {
                    let line = capacity::usl_line(u);
                    println!("\n{line}");
                    // Said here until the law's line says it itself.
                    if let Some(note) = u.peak_note().filter(|n| !line.contains(n.as_str())) {
                        println!("{note}");
                    }
                }
                Err(e) => {
                    println!("\nNo prediction: {e}");
                    if let Some(advice) = crate::advice::of(e) {
                        println!("{advice}");
                    }
                }
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
        Err(e) if e.is_too_few_points() => ExitCode::from(2),
        Err(_) => ExitCode::from(1),
    })
}
