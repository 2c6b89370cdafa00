//! The answer of `volley capacity`: the highest load that meets the SLO, the bracket it was
//! found in, what limits it, and whether it meets the target — as capacity.json, a terminal
//! table, Markdown, a page and charts, all drawn from one [`Capacity`].
//!
//! Each probe is a run directory of the capacity group; [`judge`] reads a probe's report
//! against the SLO (with the noise of its own figures, so a probe near the limit is known to
//! be near), and [`limit_of`] names the resource the server metrics show running out.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use volley_formats::Source;
use volley_scenario::Threshold;
use volley_scenario::threshold::{Metric, Op, Stat};
use volley_stats::compare::NOISE_Z;
use volley_stats::search::Outcome;
use volley_stats::usl::Usl;

use crate::chartset::{Chart, Line, Unit, XAxis};
use crate::error::{ReportError, Result};
use crate::model::{ReportOptions, RunReport};

/// capacity.json's name.
pub const CAPACITY_JSON: &str = "capacity.json";

/// The smallest band around an SLO limit inside which a probe counts as near it, in % of
/// the limit (the bootstrap's noise may say less on a quiet run).
pub const NEAR_FLOOR_PCT: f64 = 5.0;
/// The band when the probe has too few intervals for a noise estimate, in % of the limit.
pub const NEAR_UNKNOWN_PCT: f64 = 10.0;

/// What the search varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadKind {
    /// Arrivals per second (open model).
    Rate,
    /// Virtual users (closed model).
    Vus,
}

impl LoadKind {
    /// The unit after a load.
    pub fn unit(self) -> &'static str {
        match self {
            LoadKind::Rate => "req/s",
            LoadKind::Vus => "VUs",
        }
    }

    /// A load with its unit: `1,480 req/s`, `40 VUs`.
    pub fn show(self, load: f64) -> String {
        format!("{} {}", number(load), self.unit())
    }
}

/// `1480.4` as `1,480`; below 100 with one decimal where it has one.
pub fn number(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    if v.abs() < 100.0 && v.fract().abs() > 1e-9 {
        return format!("{v:.1}");
    }
    let n = v.round().abs() as u64;
    let s = volley_formats::numfmt::group_thousands(n);
    if v < 0.0 { format!("-{s}") } else { s }
}

/// A number that may be NaN, which serde_json writes as `null`: read back as NaN.
fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// One probe, as the table and capacity.json list it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    /// The load offered (arrivals per second, or VUs).
    pub offered: f64,
    /// Requests per second achieved while measured.
    #[serde(deserialize_with = "nan_if_null")]
    pub achieved_tps: f64,
    /// TTFB percentiles while measured, ms (NaN: no successful request).
    pub ttfb_p50_ms: Option<f64>,
    pub ttfb_p99_ms: Option<f64>,
    /// Failed requests, % of all.
    pub error_rate_pct: f64,
    /// Requests in flight on average (Little's law: achieved TPS × mean TTFB; NaN, written
    /// `null`, when no request succeeded).
    #[serde(deserialize_with = "nan_if_null")]
    pub concurrency: f64,
    /// `pass`, `fail`, `uncertain` or `generator-limited`.
    pub verdict: Outcome,
    /// `step`, `bisect`, `confirm` (a repeat of the load before it).
    pub role: String,
    /// Why the probe was stopped before its end, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_early: Option<String>,
    /// The SLO figures against their limits, and how near the noise says they are.
    pub judged: String,
    /// Why volley could not drive it, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<String>,
    /// What the server metrics showed running out, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Poisson arrivals: the seed this probe drew its schedule from (each probe its own,
    /// derived from the search's seed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Its run directory, relative to the capacity directory.
    pub dir: String,
}

/// The target from real traffic, and whether the capacity meets it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetVerdict {
    /// Requests per second the traffic asks for (peak factor applied).
    pub target_rps: f64,
    /// As given: `220.69/s`, `19080000/day × 1.5`.
    pub given: String,
    /// Whether the capacity (or a run's achieved TPS) is at least the target.
    pub met: bool,
    /// `(capacity − target) / target`, %.
    pub headroom_pct: f64,
}

impl TargetVerdict {
    /// The verdict on `have` requests per second against `target_rps`.
    pub fn of(have: f64, target_rps: f64, given: &str) -> TargetVerdict {
        TargetVerdict {
            target_rps,
            given: given.to_string(),
            met: have.is_finite() && have >= target_rps,
            headroom_pct: (have - target_rps) / target_rps * 100.0,
        }
    }

    /// `≥ target 220.69 req/s (40 % headroom)` or `below target 220.69 req/s (−12 %)`.
    pub fn describe(&self) -> String {
        let t = trim_rate(self.target_rps);
        if self.met {
            format!("≥ target {t} req/s ({:.0} % headroom)", self.headroom_pct)
        } else {
            format!("below target {t} req/s ({:.0} %)", self.headroom_pct)
        }
    }
}

/// A rate as given, up to two decimals: `220.69`, `1,480`.
fn trim_rate(v: f64) -> String {
    if v.fract().abs() < 1e-9 {
        number(v)
    } else {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// The result of a capacity search: capacity.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Capacity {
    /// Layout version.
    pub schema: u32,
    /// Always `capacity`.
    pub kind: String,
    /// The runs' name.
    pub name: String,
    /// The SLO, as written.
    pub slo: Vec<String>,
    /// What was varied.
    pub load: LoadKind,
    /// Open model: how arrivals were spaced (`even`, `poisson (seed 1)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<String>,
    /// `found`, `generator_limited`, `slo_met_at_max`, `slo_broken_at_start`, `uncertain`,
    /// `probe_limit`, `interrupted`, `target_failed` or `unstable`.
    pub status: String,
    /// The capacity: the highest load that met the SLO (`null` when none did).
    pub capacity_rps: Option<f64>,
    /// The same for a search over virtual users.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_vus: Option<f64>,
    /// Requests per second achieved at the capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_tps: Option<f64>,
    /// The highest load that passed, and the lowest that did not.
    pub last_pass: Option<f64>,
    pub first_fail: Option<f64>,
    /// The precision asked for, %.
    pub precision_pct: f64,
    /// The resource that ran out (`DB pool`, `worker threads`, `server CPU`), from the
    /// server metrics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limited_by: Option<String>,
    /// Where it started to: `pending > 0 from 1,200 req/s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_detail: Option<String>,
    /// The target from traffic, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<TargetVerdict>,
    /// The scalability law fitted to the probes (concurrency by Little's law), when it fits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usl: Option<Usl>,
    /// Every probe in the order run.
    pub probes: Vec<Probe>,
    /// How the search was run, and what to know to read it.
    pub notes: Vec<String>,
    /// Wall time of the whole search, s.
    pub elapsed_s: f64,
}

impl Capacity {
    /// The one line that answers the question.
    pub fn headline(&self) -> String {
        let slo = self.slo.join(", ");
        let k = self.load;
        let bracket = match (self.last_pass, self.first_fail) {
            (Some(p), Some(f)) => format!(" ({} passed, {} failed)", number(p), number(f)),
            (Some(p), None) => format!(" ({} passed)", number(p)),
            _ => String::new(),
        };
        // An SLO no run can meet, and a target that answered the lowest load with nothing but
        // errors: starting lower helps neither, so the line says what does.
        let unmeetable = self
            .slo
            .iter()
            .map(|e| volley_scenario::parse_threshold(e))
            .collect::<std::result::Result<Vec<_>, _>>()
            .ok()
            .and_then(|slo| volley_scenario::threshold::unmeetable(&slo));
        let lowest = self
            .probes
            .iter()
            .filter(|p| p.verdict != Outcome::Interrupted)
            .min_by(|a, b| a.offered.total_cmp(&b.offered));
        let all_errors = lowest.filter(|p| {
            p.error_rate_pct >= 100.0 || (p.ttfb_p50_ms.is_none() && p.error_rate_pct > 0.0)
        });
        let mut line = match self.status.as_str() {
            "slo_broken_at_start" | "target_failed"
                if self.last_pass.is_none() && unmeetable.is_some() =>
            {
                format!(
                    "Capacity under SLO ({slo}): none — no load can meet this SLO, so starting lower will not help: {}",
                    unmeetable.unwrap_or_default()
                )
            }
            "slo_broken_at_start" | "target_failed"
                if self.last_pass.is_none() && all_errors.is_some() =>
            {
                format!(
                    "Capacity under SLO ({slo}): none — every answer at the lowest load ({}) was an error, so no load meets the SLO and starting lower will not help: make the request succeed first (the target, its URL, method and body)",
                    k.show(all_errors.map_or(f64::NAN, |p| p.offered))
                )
            }
            "target_failed" if lowest.is_none() => format!(
                "Capacity under SLO ({slo}): unknown — the target did not answer the first probe: start it, or correct the URL, and search again"
            ),
            "found" | "probe_limit" | "interrupted" | "uncertain" | "target_failed"
            | "unstable" => match self.last_pass {
                Some(p) => format!("Capacity under SLO ({slo}): {}{bracket}", k.show(p)),
                None => format!("Capacity under SLO ({slo}): not found{bracket}"),
            },
            "slo_met_at_max" => format!(
                "Capacity under SLO ({slo}): ≥ {} — the SLO held at the highest load allowed; raise the range's top",
                k.show(self.last_pass.unwrap_or(f64::NAN))
            ),
            "slo_broken_at_start" => format!(
                "Capacity under SLO ({slo}): below {} — the SLO broke at the lowest load; start lower",
                k.show(self.first_fail.unwrap_or(f64::NAN))
            ),
            "generator_limited" => match self.last_pass {
                Some(p) => format!(
                    "Capacity under SLO ({slo}): ≥ {}; volley could not drive more from here — split the load (--segment, volley k8s manifest)",
                    k.show(p)
                ),
                None => format!(
                    "Capacity under SLO ({slo}): unknown; volley could not drive even the first load from here — split the load (--segment, volley k8s manifest)"
                ),
            },
            other => format!("Capacity under SLO ({slo}): {other}"),
        };
        match self.status.as_str() {
            "uncertain" => line.push_str(" · uncertain: probes near the limit flip-flopped"),
            "probe_limit" => line.push_str(" · the probe budget ran out before the bracket closed"),
            "interrupted" => line.push_str(" · stopped by the user: the bracket so far"),
            "target_failed" if lowest.is_some() => {
                line.push_str(" · the target stopped answering: the bracket so far")
            }
            "unstable" => line.push_str(
                " · the target became unstable (the start load failed after it had passed): the bracket so far",
            ),
            _ => {}
        }
        if let Some(l) = &self.limited_by {
            let _ = write!(line, " · limited by: {l}");
            if let Some(d) = &self.limit_detail {
                let _ = write!(line, " ({d})");
            }
        }
        line
    }

    /// The target line, when a target was given.
    pub fn target_line(&self) -> Option<String> {
        let t = self.target.as_ref()?;
        let have = match self.last_pass {
            Some(p) if self.load == LoadKind::Rate => p,
            _ => self.capacity_tps.unwrap_or(f64::NAN),
        };
        Some(format!(
            "capacity {} req/s {}{}",
            number(have),
            t.describe(),
            if self.status == "slo_met_at_max" {
                " (a lower bound: the SLO held at the top of the range)"
            } else {
                ""
            }
        ))
    }

    /// Whether the result is a verdict a gate can pass, and so exit code 0 (docs/capacity.md
    /// has the table):
    /// - a search that did not end on its own (`interrupted`, `target_failed`, `unstable`) or
    ///   found nothing (`slo_broken_at_start`) fails, target or not;
    /// - with `--target`, the target met (a `generator_limited` search meets it when its last
    ///   pass does: the capacity is at least that);
    /// - without, a capacity found (`found`, `uncertain`, `probe_limit`, `slo_met_at_max`).
    pub fn passed(&self) -> bool {
        let never = [
            "interrupted",
            "target_failed",
            "unstable",
            "slo_broken_at_start",
        ];
        if never.contains(&self.status.as_str()) {
            return false;
        }
        match &self.target {
            Some(t) => t.met,
            None => self.last_pass.is_some() && self.status != "generator_limited",
        }
    }

    fn probe_rows(&self) -> Vec<Vec<String>> {
        let ms = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.2}"));
        self.probes
            .iter()
            .map(|p| {
                vec![
                    number(p.offered),
                    format!("{:.1}", p.achieved_tps),
                    ms(p.ttfb_p50_ms),
                    ms(p.ttfb_p99_ms),
                    format!("{:.2}", p.error_rate_pct),
                    p.verdict.name().to_string(),
                    p.role.clone(),
                    p.server.clone().unwrap_or_default(),
                ]
            })
            .collect()
    }

    const HEADER: [&'static str; 8] = [
        "offered",
        "achieved TPS",
        "TTFB p50 ms",
        "TTFB p99 ms",
        "errors %",
        "verdict",
        "probe",
        "server",
    ];

    /// For the terminal.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{}", self.headline());
        if let Some(t) = self.target_line() {
            let _ = writeln!(out, "{t}");
        }
        let mut header = Self::HEADER;
        header[0] = match self.load {
            LoadKind::Rate => "offered req/s",
            LoadKind::Vus => "VUs",
        };
        let _ = writeln!(out);
        crate::doc::columns(&mut out, "", &header.map(String::from), &self.probe_rows());
        for p in &self.probes {
            if let Some(why) = &p.stopped_early {
                let _ = writeln!(out, "  {}: stopped early: {why}", self.load.show(p.offered));
            }
        }
        if let Some(u) = &self.usl {
            let _ = writeln!(out, "\n{}", usl_line(u));
        }
        for n in &self.notes {
            let _ = writeln!(out, "  · {n}");
        }
        out
    }

    /// For report.md / capacity.md.
    pub fn markdown(&self, charts: &[(String, String)]) -> String {
        let mut out = format!(
            "# Capacity: {}\n\n**{}**\n\n",
            crate::md_text(&self.name),
            crate::md_text(&self.headline())
        );
        if let Some(t) = self.target_line() {
            let _ = writeln!(out, "**{}**\n", crate::md_text(&t));
        }
        let mut header = Self::HEADER.map(String::from);
        header[0] = format!("offered ({})", self.load.unit());
        let _ = writeln!(out, "| {} |", header.join(" | "));
        let _ = writeln!(out, "|{}", "---:|".repeat(header.len()));
        for row in self.probe_rows() {
            let cells: Vec<String> = row.iter().map(|c| crate::md_text(c)).collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
        let _ = writeln!(out);
        for p in &self.probes {
            let _ = writeln!(
                out,
                "- {} ({}): {}{}",
                self.load.show(p.offered),
                p.role,
                crate::md_text(&p.judged),
                p.stopped_early
                    .as_ref()
                    .map(|w| format!("; stopped early: {}", crate::md_text(w)))
                    .unwrap_or_default()
            );
        }
        if let Some(u) = &self.usl {
            let _ = writeln!(out, "\n{}", crate::md_text(&usl_line(u)));
        }
        for (name, path) in charts {
            let _ = writeln!(out, "\n![{name}]({path})");
        }
        if !self.notes.is_empty() {
            let _ = writeln!(out, "\n## Notes\n");
            for n in &self.notes {
                let _ = writeln!(out, "- {}", crate::md_text(n));
            }
        }
        out
    }

    /// capacity.json.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("capacity serializes")
    }

    /// Reads `dir/capacity.json`.
    pub fn read(dir: &Path) -> Result<Capacity> {
        let p = dir.join(CAPACITY_JSON);
        let text = std::fs::read_to_string(&p).map_err(|e| ReportError::io(&p, e))?;
        let c: Capacity = serde_json::from_str(&text).map_err(|e| ReportError::Input {
            path: p.clone(),
            message: format!("not a capacity result: {e}"),
        })?;
        if c.kind != "capacity" {
            return Err(ReportError::Input {
                path: p,
                message: format!("`kind` is `{}`; a capacity result says `capacity`", c.kind),
            });
        }
        // Loads and rates no search can have (a hand edit): refused, as run.json's are.
        let load = |v: f64| v.is_finite() && (0.0..=1e12).contains(&v);
        let bad = [
            ("capacity_rps", c.capacity_rps),
            ("last_pass", c.last_pass),
            ("first_fail", c.first_fail),
        ]
        .into_iter()
        .find(|(_, v)| v.is_some_and(|v| !load(v)))
        .map(|(k, _)| k.to_string())
        .or_else(|| {
            c.probes
                .iter()
                .position(|p| {
                    !load(p.offered)
                        || !(p.achieved_tps.is_nan() || load(p.achieved_tps))
                        || !(0.0..=100.0).contains(&p.error_rate_pct)
                })
                .map(|i| format!("probes[{i}]"))
        })
        .or_else(|| {
            matches!((c.last_pass, c.first_fail), (Some(p), Some(f)) if p >= f)
                .then(|| "last_pass ≥ first_fail".to_string())
        });
        if let Some(what) = bad {
            return Err(ReportError::Input {
                path: p,
                message: format!(
                    "{what}: not a load a search can have (loads and rates are finite, 0 or more, and the last pass is below the first failure); run the search again rather than edit its result"
                ),
            });
        }
        Ok(c)
    }

    /// The charts: latency against offered load with the SLO's latency limits (the hockey
    /// stick), and achieved against offered throughput.
    pub fn charts(&self) -> Vec<Chart> {
        let mut probes: Vec<&Probe> = self.probes.iter().collect();
        probes.sort_by(|a, b| a.offered.total_cmp(&b.offered));
        let x: Vec<f64> = probes.iter().map(|p| p.offered).collect();
        let max = x.iter().copied().fold(0.0, f64::max) * 1.05;
        let x_axis = XAxis::Load {
            max: max.max(1.0),
            label: match self.load {
                LoadKind::Rate => "offered load (req/s)",
                LoadKind::Vus => "virtual users",
            },
        };
        let mut latency = vec![
            Line::new("TTFB p50", probes.iter().map(|p| p.ttfb_p50_ms)),
            Line::new("TTFB p99", probes.iter().map(|p| p.ttfb_p99_ms)),
        ];
        for s in &self.slo {
            if let Ok(t) = volley_scenario::parse_threshold(s)
                && matches!(t.metric, Metric::Ttfb | Metric::Total | Metric::Mttfb)
            {
                latency.push(Line::new(
                    &format!("SLO: {s}"),
                    probes.iter().map(|_| Some(t.limit)),
                ));
            }
        }
        let mut throughput = vec![Line::new(
            "achieved TPS",
            probes.iter().map(|p| Some(p.achieved_tps)),
        )];
        if self.load == LoadKind::Rate {
            throughput.push(Line::new("offered", probes.iter().map(|p| Some(p.offered))));
        }
        vec![
            Chart {
                name: "capacity_latency",
                title: "Latency against offered load".into(),
                x_axis,
                y: Unit::Ms,
                y2: None,
                image: true,
                x: x.clone(),
                lines: latency,
            },
            Chart {
                name: "capacity_throughput",
                title: "Achieved against offered throughput".into(),
                x_axis,
                y: Unit::Tps,
                y2: None,
                image: true,
                x,
                lines: throughput,
            },
        ]
    }

    /// The charts drawn into `dir` (SVG and PNG).
    pub fn draw(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        let mut files = Vec::new();
        for c in self.charts() {
            files.extend(crate::charts::save_chart(dir, &c)?);
        }
        Ok(files)
    }

    /// A page of its own: the answer first, then the probes and the charts (inlined SVG).
    pub fn html(&self, svgs: &[String]) -> String {
        let esc = |text: &str| minijinja::HtmlEscape(text).to_string();
        let mut out = String::from(
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>volley capacity</title><style>body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td:first-child{text-align:left}.answer{font-size:1.4em;font-weight:bold;margin:1em 0}.fail{color:#b00}.pass{color:#070}</style></head><body>",
        );
        let _ = write!(out, "<h1>Capacity: {}</h1>", esc(&self.name));
        let class = if self.passed() { "pass" } else { "fail" };
        let _ = write!(
            out,
            "<p class=\"answer {class}\" id=\"answer\">{}</p>",
            esc(&self.headline())
        );
        if let Some(t) = self.target_line() {
            let _ = write!(
                out,
                "<p class=\"answer {class}\" id=\"target\">{}</p>",
                esc(&t)
            );
        }
        out.push_str("<table id=\"probes\"><tr>");
        let mut header = Self::HEADER.map(String::from);
        header[0] = format!("offered ({})", self.load.unit());
        for h in &header {
            let _ = write!(out, "<th>{}</th>", esc(h));
        }
        out.push_str("</tr>");
        for row in self.probe_rows() {
            out.push_str("<tr>");
            for c in row {
                let _ = write!(out, "<td>{}</td>", esc(&c));
            }
            out.push_str("</tr>");
        }
        out.push_str("</table><ul>");
        for p in &self.probes {
            let _ = write!(
                out,
                "<li>{} ({}): {}{}</li>",
                esc(&self.load.show(p.offered)),
                esc(&p.role),
                esc(&p.judged),
                p.stopped_early
                    .as_ref()
                    .map(|w| format!("; stopped early: {}", esc(w)))
                    .unwrap_or_default()
            );
        }
        out.push_str("</ul>");
        if let Some(u) = &self.usl {
            let _ = write!(out, "<p>{}</p>", esc(&usl_line(u)));
        }
        for svg in svgs {
            // Plotters' own SVG: drawn here from our figures, no user text but the names.
            out.push_str("<figure>");
            out.push_str(svg);
            out.push_str("</figure>");
        }
        if !self.notes.is_empty() {
            out.push_str("<h2>Notes</h2><ul>");
            for n in &self.notes {
                let _ = write!(out, "<li>{}</li>", esc(n));
            }
            out.push_str("</ul>");
        }
        out.push_str("</body></html>\n");
        out
    }
}

/// The scalability law in one line.
pub fn usl_line(u: &Usl) -> String {
    let peak = match (u.peak_concurrency, u.peak_throughput) {
        (Some(n), Some(x)) => format!(
            "throughput peaks at {} req/s at a concurrency of {}",
            sci(x, number),
            sci(n, |n| if n < 10.0 { format!("{n:.1}") } else { format!("{n:.0}") })
        ),
        _ if u.kappa > 0.0 => "no peak within ten times the highest concurrency measured: throughput still grows there (measure higher loads to find the peak)".to_string(),
        _ if u.sigma <= 1e-9 => {
            "no contention or coherency cost measured: throughput grows linearly over these points (measure higher loads to find the peak)".to_string()
        }
        _ => format!(
            "no coherency cost (κ = 0): throughput levels off towards {} req/s",
            sci(u.lambda / u.sigma, number)
        ),
    };
    let mut line = format!(
        "Scalability (USL, {} points, R² {:.3}): σ {:.5} (contention), κ {:.7} (coherency), λ {}; {peak}.",
        u.points,
        u.r2,
        u.sigma,
        u.kappa,
        sci(u.lambda, |v| format!("{v:.2}"))
    );
    if let Some(note) = u.peak_note() {
        line.push(' ');
        line.push_str(&note);
    }
    line
}

/// `v` as `plain` writes it between 0.01 and 10¹², else in scientific notation (`1.23e300`):
/// data at any scale fits, and is said in a line.
fn sci(v: f64, plain: impl Fn(f64) -> String) -> String {
    if v.is_finite() && v != 0.0 && !(1e-2..1e12).contains(&v.abs()) {
        format!("{v:.3e}")
    } else {
        plain(v)
    }
}

/// The points a scalability law is fitted to: each probe's concurrency (the VUs of a closed
/// search, Little's law's of an open one) and achieved throughput, leaving out the probes
/// that say nothing of the server (stopped early, generator-limited).
pub fn usl_points(load: LoadKind, probes: &[Probe]) -> Vec<(f64, f64)> {
    probes
        .iter()
        .filter(|p| p.stopped_early.is_none() && p.verdict != Outcome::GeneratorLimited)
        .map(|p| match load {
            LoadKind::Vus => (p.offered, p.achieved_tps),
            LoadKind::Rate => (p.concurrency, p.achieved_tps),
        })
        .collect()
}

/// How one probe's report reads against the SLO.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// Every SLO held.
    pub passed: bool,
    /// A figure is within its noise of its limit: worth a confirmation.
    pub near: bool,
    /// Why the generator's figures make the probe say nothing of the server.
    pub generator: Option<String>,
    /// `ttfb p99 212.3 ms vs < 250 ms (±9 %)`, one per SLO.
    pub detail: String,
    /// The standard error of the probe's TPS (successful requests per second) by the
    /// within-run bootstrap; NaN when the probe has too few intervals.
    pub tps_se: f64,
}

/// The compare-table key of the figure a threshold reads, when the bootstrap estimates it.
fn noise_key(t: &Threshold) -> Option<String> {
    match (t.metric, t.stat) {
        (Metric::ErrorRate, _) => Some("error_rate_pct".into()),
        (Metric::Ttfb, s) if s != Stat::Max && s != Stat::Mean && s != Stat::Avg => {
            Some(format!("ttfb_{}_ms", s.name().replace('.', "_")))
        }
        (Metric::Tps | Metric::Mttfb, s) => {
            volley_stats::metric::for_threshold(t.metric.name(), s.name())
                .map(|m| m.key.to_string())
        }
        _ => None,
    }
}

/// Judges probe `report` (of `src`) against `slo`: each figure against its limit, how near it
/// is by its own noise (the within-run bootstrap, [`NOISE_Z`] standard errors, at least
/// [`NEAR_FLOOR_PCT`] of the limit), and whether the generator kept up.
pub fn judge(src: &Source, report: &RunReport, slo: &[Threshold], opts: ReportOptions) -> Judged {
    let noise = crate::compare::run_noise(src, opts);
    let mut passed = true;
    let mut near = false;
    let mut parts = Vec::new();
    for t in slo {
        // The probe's report judged every threshold of the run; the SLO's are found by name.
        let Some(r) = report.thresholds.iter().find(|r| r.expr == t.expr) else {
            passed = false;
            parts.push(format!("{}: not judged", t.expr));
            continue;
        };
        passed &= r.passed;
        let band = noise_key(t)
            .and_then(|k| noise.iter().find(|(key, _, _)| *key == k))
            .map(|(_, _, se)| *se)
            .filter(|se| se.is_finite())
            .map_or(t.limit.abs() * NEAR_UNKNOWN_PCT / 100.0, |se| {
                (NOISE_Z * se).max(t.limit.abs() * NEAR_FLOOR_PCT / 100.0)
            });
        let close = r.actual.is_finite() && (r.actual - t.limit).abs() <= band;
        near |= close;
        let op = match t.op {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        };
        parts.push(format!(
            "{} {} vs {op} {} (±{}){}",
            t.expr.split(['<', '>']).next().unwrap_or(&t.expr).trim(),
            fmt(r.actual),
            fmt(t.limit),
            fmt(band),
            if close { " near" } else { "" }
        ));
    }
    // The generator's own lag is the delay from each arrival's due time to its dispatch; it
    // is part of every latency measured from the due time. It makes the probe say nothing of
    // the server when it is a real share of what was measured (a quarter of the latency the
    // SLO reads, and 10 ms at least); a millisecond of lag under a 2 s p99 is the server's.
    let latency = slo
        .iter()
        .filter(|t| {
            matches!(
                t.metric,
                Metric::Ttfb | Metric::Total | Metric::Mttfb | Metric::Iteration
            )
        })
        .filter_map(|t| report.thresholds.iter().find(|r| r.expr == t.expr))
        .map(|r| r.actual)
        .filter(|v| v.is_finite())
        .fold(f64::NAN, f64::max);
    let latency = if latency.is_finite() {
        latency
    } else {
        report
            .per_request
            .ttfb_ms
            .as_ref()
            .map_or(0.0, |t| t.p99_ms)
    };
    // Open model: did the server answer in time once a request was sent? TTFB from the
    // actual send (not from the due time) against the latency SLOs on TTFB.
    let answered_in_time = report.per_request.ttfb_actual_ms.as_ref().is_some_and(|a| {
        let mut any = false;
        let ok = slo.iter().filter(|t| t.metric == Metric::Ttfb).all(|t| {
            any = true;
            let v = match t.stat {
                Stat::P50 => a.p50_ms,
                Stat::P90 => a.p90_ms,
                Stat::P95 => a.p95_ms,
                Stat::P99 => a.p99_ms,
                Stat::P99_9 => a.p99_9_ms,
                Stat::P99_99 => a.p99_99_ms,
                Stat::Max => a.max_ms,
                _ => a.mean_ms,
            };
            t.op.holds(v, t.limit)
        });
        any && ok
    });
    let generator = report.generator.as_ref().and_then(|g| {
        let measured = (report.measured_s / report.interval_s.max(1e-9)).round().max(1.0) as usize;
        // The dispatch lag of every arrival (open model), or the event loop's wake-up delay
        // every 10 ms (closed model): either way, volley's own delay in what it measured.
        // Never from one interval: a pause of the machine in one interval lifts the p99 of a
        // short probe; lag that volley could not keep up with is behind in several.
        let lag = g.sched_lag_ms.as_ref().map_or(0.0, |l| l.p99_ms);
        if lag >= LAG_FLOOR_MS
            && lag >= LAG_SHARE * latency
            && g.behind_intervals >= LAG_INTERVALS
        {
            Some(format!(
                "volley's own dispatch lag (p99 {lag:.1} ms, behind in {} intervals) is a real share of the latency it measured ({latency:.1} ms)",
                g.behind_intervals
            ))
        } else if g.saturated_intervals * 2 >= measured {
            Some(format!(
                "volley used more than 90 % of its CPU in {} of {measured} intervals",
                g.saturated_intervals
            ))
        } else if (g.late > 0 || g.dropped > 0) && (passed || answered_in_time) {
            Some(format!(
                "{} arrivals waited for a free VU and {} were dropped while the server answered within the SLO once asked: the queue was volley's (raise --max-vus)",
                g.late, g.dropped
            ))
        } else {
            None
        }
    });
    // Below its capacity a server's queue is stable; above it the backlog grows for as long as
    // the probe lasts, so a short probe can end before its p99 crosses the limit. A latency
    // that rises steadily through the measurement is that backlog: the probe fails.
    if let Some(why) = queue_growth(src, report) {
        passed = false;
        parts.push(why);
    }
    let tps_se = volley_stats::metric::for_threshold("tps", "avg")
        .and_then(|m| noise.iter().find(|(key, _, _)| *key == m.key))
        .map_or(f64::NAN, |(_, _, se)| *se);
    Judged {
        passed,
        near,
        generator,
        detail: parts.join("; "),
        tps_se,
    }
}

/// Successful requests per second over the probe's full intervals after the warm-up: a probe
/// stopped early ends with a partial interval (and the drain after it, of no length).
pub fn full_interval_tps(src: &Source, report: &RunReport) -> f64 {
    let series = src.series.after_warmup(report.warmup_s);
    let nominal = series.nominal_interval_s();
    let full: Vec<f64> = series
        .intervals
        .iter()
        .filter(|r| r.period_s >= nominal * 0.99)
        .map(|r| r.tps)
        .collect();
    if full.is_empty() {
        report.seed_suite.tps_avg
    } else {
        full.iter().sum::<f64>() / full.len() as f64
    }
}

/// Whether a probe found nothing listening: not one request succeeded, and every failure was a
/// refused, unreachable or reset connection (a process down or restarting; an overloaded one
/// still answers, if only with errors or timeouts).
pub fn target_down(report: &RunReport) -> bool {
    let s = &report.seed_suite;
    s.errors > 0
        && s.total_tests == s.errors
        && report
            .errors
            .iter()
            .filter(|e| e.count > 0)
            .all(|e| e.kind == "connect" || e.kind == "reset")
}

/// A probe's latency grows through its measurement when the mean TTFB of the last third of
/// its full intervals is at least this many times that of the first third ...
pub const GROWTH_RATIO: f64 = 1.5;
/// ... and at least this much higher, ms (a millisecond's jitter is not a queue) ...
pub const GROWTH_MIN_MS: f64 = 5.0;
/// ... and it rose from one interval to the next in at least this share of the steps (one
/// slow interval at the end is a stall, not a queue).
pub const GROWTH_STEPS: f64 = 0.75;

/// A rising trend is one whose least-squares slope is at least this many standard errors
/// above zero ...
pub const GROWTH_T: f64 = 2.0;

/// Whether the probe's latency rose through its measurement (a growing backlog): most steps
/// from one interval to the next go up, or — for bursty arrivals, whose queue jumps up and
/// down — the least-squares trend of the intervals' mean TTFB rises by [`GROWTH_T`] standard
/// errors; either way by [`GROWTH_RATIO`]× and [`GROWTH_MIN_MS`] from start to end.
fn queue_growth(src: &Source, report: &RunReport) -> Option<String> {
    let series = src.series.after_warmup(report.warmup_s);
    let nominal = series.nominal_interval_s();
    let rows: Vec<f64> = series
        .intervals
        .iter()
        .filter(|r| r.period_s >= nominal * 0.99 && r.mttfb_ms.is_finite() && r.tests > 0)
        .map(|r| r.mttfb_ms)
        .collect();
    growth(&rows)
}

/// [`queue_growth`] on the intervals' mean TTFB, ms, in order.
fn growth(rows: &[f64]) -> Option<String> {
    if rows.len() < 3 {
        return None;
    }
    let k = rows.len() / 3;
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (first, last) = (mean(&rows[..k]), mean(&rows[rows.len() - k..]));
    // A trend, not one slow interval: most steps from one interval to the next go up.
    let ups = rows.windows(2).filter(|w| w[1] > w[0]).count();
    let steady = ups as f64 >= GROWTH_STEPS * (rows.len() - 1) as f64;
    let risen = |from: f64, to: f64| to >= from * GROWTH_RATIO && to - from >= GROWTH_MIN_MS;
    if steady && risen(first, last) {
        return Some(format!(
            "the queue grew through the probe: MTTFB {first:.1} ms in its first third, {last:.1} ms in its last (the load is above what the server sustains)"
        ));
    }
    // The least-squares line through (i, rows[i]) and its slope's standard error.
    let n = rows.len() as f64;
    let xm = (n - 1.0) / 2.0;
    let ym = mean(rows);
    let sxx: f64 = (0..rows.len()).map(|i| (i as f64 - xm).powi(2)).sum();
    let sxy: f64 = rows
        .iter()
        .enumerate()
        .map(|(i, y)| (i as f64 - xm) * (y - ym))
        .sum();
    let slope = sxy / sxx;
    let start = ym - slope * xm;
    let end = ym + slope * xm;
    if rows.len() < 5 {
        return None;
    }
    let sse: f64 = rows
        .iter()
        .enumerate()
        .map(|(i, y)| (y - (start + slope * i as f64)).powi(2))
        .sum();
    let se = (sse / (n - 2.0) / sxx).sqrt();
    (slope > 0.0 && slope >= GROWTH_T * se && risen(start.max(0.0), end)).then(|| {
        format!(
            "the queue was still growing at the probe's end: MTTFB rose along its trend from {:.1} ms to {end:.1} ms ({:.1} standard errors; the load is not steady)",
            start.max(0.0),
            slope / se
        )
    })
}

fn fmt(v: f64) -> String {
    if !v.is_finite() {
        "n/a".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// The generator's dispatch lag (p99) that can make a probe generator-limited, ms.
pub const LAG_FLOOR_MS: f64 = 10.0;
/// ... when it is at least this share of the latency the SLO reads ...
pub const LAG_SHARE: f64 = 0.25;
/// ... and the generator was behind its schedule in at least this many intervals.
pub const LAG_INTERVALS: usize = 2;

/// What a probe shows running out first: `(resource, finding)`. An error cliff is the first
/// thing that broke when the probe's errors reach 1 % (the refusals of a full accept queue, a
/// pool that timed out): it is named before what the server metrics show; then the DB pool,
/// Tomcat's threads, and the CPU of the server process or of its host.
pub fn server_limit(report: &RunReport) -> Option<ServerLimit> {
    if report.seed_suite.error_rate_pct >= crate::causes::START_PCT {
        let kinds: Vec<String> = report
            .errors
            .iter()
            .filter(|e| e.count > 0)
            .map(|e| {
                let statuses: Vec<&str> = e
                    .messages
                    .iter()
                    .filter(|m| m.starts_with("HTTP "))
                    .map(String::as_str)
                    .collect();
                if statuses.is_empty() {
                    e.kind.replace('_', " ")
                } else {
                    statuses.join("/")
                }
            })
            .collect();
        return Some((
            "errors",
            format!(
                "{:.1} % errors ({})",
                report.seed_suite.error_rate_pct,
                kinds.join(", ")
            ),
        ));
    }
    let find = |prefix: &str| report.server.iter().find(|p| p.series.starts_with(prefix));
    if let Some(p) = find("hikaricp_connections_pending").filter(|p| p.peak > 0.0) {
        return Some(("DB pool", format!("pool pending peaked at {:.0}", p.peak)));
    }
    let max_threads = report
        .server
        .iter()
        .find(|p| p.series.starts_with("tomcat_threads_config_max_threads"))
        .map(|p| p.peak);
    if let (Some(busy), Some(max)) = (find("tomcat_threads_busy_threads"), max_threads)
        && max > 0.0
        && busy.peak >= max
    {
        return Some(("worker threads", format!("all {max:.0} threads busy")));
    }
    if let Some(cpu) = find("process_cpu_usage").filter(|c| c.peak >= 0.8) {
        return Some(("server CPU", format!("CPU at {:.0} %", cpu.peak * 100.0)));
    }
    if let Some(cpu) = find("system_cpu_usage").filter(|c| c.peak >= 0.8) {
        return Some(("host CPU", format!("host CPU at {:.0} %", cpu.peak * 100.0)));
    }
    None
}

/// A resource that ran out, and how it showed: `("DB pool", "pool pending peaked at 9")`.
pub type ServerLimit = (&'static str, String);

/// One probe as [`limit_of`] reads it: its load, how it came out, what ran out.
pub type ProbeLimit = (f64, Outcome, Option<ServerLimit>);

/// The resource that limits the capacity: the one running out at the first failing probe
/// (else at the highest passing one), with the lowest load at which it first showed.
pub fn limit_of(
    probes: &[ProbeLimit],
    kind: LoadKind,
    first_fail: Option<f64>,
) -> Option<(String, String)> {
    let at = |load: f64| probes.iter().find(|(l, _, s)| *l == load && s.is_some());
    let (_, _, hit) = first_fail.and_then(at).or_else(|| {
        probes
            .iter()
            .filter(|(_, o, s)| *o == Outcome::Pass && s.is_some())
            .max_by(|a, b| a.0.total_cmp(&b.0))
    })?;
    let (resource, finding) = hit.as_ref()?;
    let from = probes
        .iter()
        .filter(|(_, _, s)| s.as_ref().is_some_and(|(r, _)| r == resource))
        .map(|(l, _, _)| *l)
        .fold(f64::INFINITY, f64::min);
    let what = match *resource {
        "errors" => finding.as_str(),
        "DB pool" => "pending > 0",
        "worker threads" => "all threads busy",
        "host CPU" => "host CPU ≥ 80 %",
        _ => "CPU ≥ 80 %",
    };
    Some((
        resource.to_string(),
        format!("{what} from {}", kind.show(from)),
    ))
}

/// Whether capacity `b` is worse than `a` beyond their uncertainty.
#[derive(Debug, Clone, PartialEq)]
pub enum CapacityChange {
    /// `b`'s whole bracket lies below `a`'s last pass: it fell.
    Fell { from: f64, below: f64 },
    /// The brackets overlap or `b` is higher: no fall can be called.
    Held,
    /// A search did not find a capacity (its status says why): nothing to judge.
    NotJudged(String),
}

impl CapacityChange {
    /// Whether a gate passes on it.
    pub fn passed(&self) -> bool {
        matches!(self, CapacityChange::Held)
    }

    /// One line for the gate.
    pub fn describe(&self) -> String {
        match self {
            CapacityChange::Fell { from, below } => format!(
                "FAILED: the capacity fell from {} to below {} (the second search failed there), beyond both brackets",
                number(*from),
                number(*below)
            ),
            CapacityChange::Held => {
                "PASSED: the second capacity's bracket reaches the first's; no fall beyond the uncertainty".into()
            }
            CapacityChange::NotJudged(why) => format!("FAILED: cannot be judged: {why}"),
        }
    }
}

/// Judges `b` against `a` (the baseline): a fall is called only when `b` failed at a load
/// `a` passed, so both brackets are below one another.
pub fn regression(a: &Capacity, b: &Capacity) -> CapacityChange {
    for c in [a, b] {
        if c.status != "found" && c.status != "slo_met_at_max" {
            return CapacityChange::NotJudged(format!(
                "the search `{}` ended `{}`, without a capacity",
                crate::escape::terminal_safe(&c.name),
                c.status
            ));
        }
    }
    match (a.last_pass, b.first_fail) {
        (Some(pass), Some(fail)) if fail <= pass => CapacityChange::Fell {
            from: pass,
            below: fail,
        },
        (Some(_), _) => CapacityChange::Held,
        (None, _) => CapacityChange::NotJudged("the baseline search passed no load".into()),
    }
}

/// Two capacity results side by side: the capacities, their brackets as the uncertainty,
/// and 🟢/🔴 only when the brackets do not overlap. The table and the page draw on it.
struct Comparison {
    labels: [String; 2],
    rows: Vec<Vec<String>>,
    mark: &'static str,
}

impl Comparison {
    fn of(a: &Capacity, b: &Capacity, labels: [&str; 2]) -> Comparison {
        let show = |c: &Capacity| {
            let v = c.last_pass.map_or("n/a".into(), |p| c.load.show(p));
            let bracket = match (c.last_pass, c.first_fail) {
                (Some(p), Some(f)) => format!("[{}, {})", number(p), number(f)),
                (Some(p), None) => format!("[{}, ∞)", number(p)),
                (None, Some(f)) => format!("[0, {})", number(f)),
                (None, None) => "unknown".into(),
            };
            (v, bracket)
        };
        let (va, ba) = show(a);
        let (vb, bb) = show(b);
        let change = match (a.last_pass, b.last_pass) {
            (Some(x), Some(y)) if x > 0.0 => format!("{:+.1} %", (y - x) / x * 100.0),
            _ => "n/a".into(),
        };
        let lo = |c: &Capacity| c.last_pass.unwrap_or(0.0);
        let hi = |c: &Capacity| c.first_fail.unwrap_or(f64::INFINITY);
        let mark = if a.load != b.load {
            "⚪ (different load kinds)"
        } else if lo(b) >= hi(a) {
            "🟢"
        } else if hi(b) <= lo(a) {
            "🔴"
        } else {
            "⚪ (brackets overlap)"
        };
        let pair = |f: &dyn Fn(&Capacity) -> String, what: &str| {
            vec![what.to_string(), f(a), f(b), String::new(), String::new()]
        };
        Comparison {
            labels: labels.map(str::to_string),
            rows: vec![
                vec!["capacity".into(), va, vb, change, mark.into()],
                vec!["bracket".into(), ba, bb, String::new(), String::new()],
                pair(&|c| c.status.clone(), "status"),
                pair(
                    &|c| c.limited_by.clone().unwrap_or_else(|| "-".into()),
                    "limited by",
                ),
            ],
            mark,
        }
    }
}

/// The comparison as a terminal or Markdown table.
pub fn compare_table(a: &Capacity, b: &Capacity, labels: [&str; 2]) -> String {
    let labels = labels.map(crate::escape::terminal_safe);
    let c = Comparison::of(a, b, [labels[0].as_ref(), labels[1].as_ref()]);
    let mut out = String::new();
    let _ = writeln!(out, "Capacity: {} → {}", c.labels[0], c.labels[1]);
    crate::doc::columns(
        &mut out,
        "",
        &["", &c.labels[0], &c.labels[1], "change", ""].map(String::from),
        &c.rows,
    );
    out
}

/// The comparison as a page: the answer first (both capacities and the mark, the gate's
/// verdict when there is one), then the table and each search's own headline and notes.
pub fn compare_html(
    a: &Capacity,
    b: &Capacity,
    labels: [&str; 2],
    gate: Option<&CapacityChange>,
) -> String {
    let esc = |text: &str| minijinja::HtmlEscape(text).to_string();
    let c = Comparison::of(a, b, labels);
    let mut out = String::from(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>volley capacity comparison</title><style>body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td:first-child{text-align:left}.answer{font-size:1.4em;font-weight:bold;margin:1em 0}.fail{color:#b00}.pass{color:#070}</style></head><body>",
    );
    let _ = write!(
        out,
        "<h1>Capacity: {} → {}</h1>",
        esc(&c.labels[0]),
        esc(&c.labels[1])
    );
    let _ = write!(
        out,
        "<p class=\"answer\" id=\"answer\">{} → {} {}</p>",
        esc(&c.rows[0][1]),
        esc(&c.rows[0][2]),
        crate::marks::in_text(&format!("{} {}", c.rows[0][3], c.mark))
    );
    if let Some(g) = gate {
        let class = if g.passed() { "pass" } else { "fail" };
        let _ = write!(
            out,
            "<p class=\"answer {class}\" id=\"gate\">Gate: {}</p>",
            esc(&g.describe())
        );
    }
    out.push_str("<table id=\"comparison\"><tr><th></th>");
    for h in [&c.labels[0], &c.labels[1]] {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("<th>change</th><th></th></tr>");
    for row in &c.rows {
        out.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let cell = if i == 4 {
                crate::marks::in_text(cell)
            } else {
                esc(cell)
            };
            let _ = write!(out, "<td>{cell}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    for (label, cap) in c.labels.iter().zip([a, b]) {
        let _ = write!(
            out,
            "<h2>{}</h2><p>{}</p>",
            esc(label),
            esc(&cap.headline())
        );
        if !cap.notes.is_empty() {
            out.push_str("<ul>");
            for n in &cap.notes {
                let _ = write!(out, "<li>{}</li>", esc(n));
            }
            out.push_str("</ul>");
        }
    }
    let _ = write!(
        out,
        "<p>{}</p>",
        crate::marks::in_text(
            "A capacity is the highest load that met the SLO; its bracket runs from there to the lowest load that broke it. 🟢 or 🔴 only when the brackets do not overlap."
        )
    );
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_still_growing_at_the_end_is_not_steady() {
        // A Poisson probe at 87.5/s on a pool of 2 × 21 ms (ρ ≈ 0.92), its ten intervals
        // after the warm-up as measured: it jumps up and down, and climbs.
        let bursty = [
            47.4, 52.8, 50.4, 107.8, 141.8, 76.2, 73.1, 183.2, 280.6, 200.5,
        ];
        let why = growth(&bursty).expect("not steady");
        assert!(why.contains("still growing"), "{why}");
        // A steady queue's jitter is not growth, nor is a queue that rose and drained.
        assert_eq!(
            growth(&[21.3, 22.0, 21.1, 23.4, 21.9, 22.6, 21.0, 22.2, 21.7, 22.9]),
            None
        );
        assert_eq!(
            growth(&[
                261.8, 331.5, 383.6, 426.0, 456.9, 423.0, 360.4, 378.0, 163.2, 81.8
            ]),
            None
        );
        // Steady growth, interval after interval, as before.
        let why = growth(&[20.0, 30.0, 41.0, 55.0, 70.0, 90.0]).unwrap();
        assert!(why.contains("grew through the probe"), "{why}");
    }

    fn probe(offered: f64, verdict: Outcome) -> Probe {
        Probe {
            offered,
            achieved_tps: offered,
            ttfb_p50_ms: Some(2.0),
            ttfb_p99_ms: Some(9.0),
            error_rate_pct: 0.0,
            concurrency: 1.0,
            verdict,
            role: "step".into(),
            stopped_early: None,
            judged: String::new(),
            generator: None,
            server: None,
            seed: None,
            dir: String::new(),
        }
    }

    fn result(status: &str, pass: Option<f64>, fail: Option<f64>) -> Capacity {
        Capacity {
            schema: 1,
            kind: "capacity".into(),
            name: "demo".into(),
            slo: vec!["ttfb p99 < 200ms".into(), "error_rate < 1%".into()],
            load: LoadKind::Rate,
            arrivals: Some("poisson (seed 1)".into()),
            status: status.into(),
            capacity_rps: pass,
            capacity_vus: None,
            capacity_tps: pass,
            last_pass: pass,
            first_fail: fail,
            precision_pct: 5.0,
            limited_by: Some("DB pool".into()),
            limit_detail: Some("pending > 0 from 1,200 req/s".into()),
            target: None,
            usl: None,
            probes: vec![probe(1450.0, Outcome::Pass), probe(1520.0, Outcome::Fail)],
            notes: vec![],
            elapsed_s: 1.0,
        }
    }

    #[test]
    fn the_headline_says_the_answer_its_bracket_and_its_limit() {
        let c = result("found", Some(1450.0), Some(1520.0));
        assert_eq!(
            c.headline(),
            "Capacity under SLO (ttfb p99 < 200ms, error_rate < 1%): 1,450 req/s (1,450 passed, 1,520 failed) · limited by: DB pool (pending > 0 from 1,200 req/s)"
        );
        let g = result("generator_limited", Some(4000.0), None);
        assert!(
            g.headline()
                .contains("≥ 4,000 req/s; volley could not drive more"),
            "{}",
            g.headline()
        );
        let u = result("uncertain", Some(150.0), Some(155.0));
        assert!(u.headline().contains("uncertain"));
        // capacity.json reads back as written.
        let back: Capacity = serde_json::from_str(&c.to_json()).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn a_target_is_met_or_not_with_its_headroom() {
        let mut c = result("found", Some(310.0), Some(320.0));
        c.target = Some(TargetVerdict::of(310.0, 220.69, "220.69/s"));
        assert_eq!(
            c.target_line().unwrap(),
            "capacity 310 req/s ≥ target 220.69 req/s (40 % headroom)"
        );
        assert!(c.passed());
        c.target = Some(TargetVerdict::of(200.0, 220.69, "220.69/s"));
        assert!(!c.passed());
        assert!(
            c.target
                .as_ref()
                .unwrap()
                .describe()
                .starts_with("below target 220.69")
        );
    }

    #[test]
    fn capacities_compare_by_their_brackets() {
        let a = result("found", Some(195.0), Some(205.0));
        let b = result("found", Some(1960.0), Some(2050.0));
        let t = compare_table(&a, &b, ["phase 1", "phase 2"]);
        assert!(t.contains("🟢") && t.contains("+905.1 %"), "{t}");
        let c = result("found", Some(200.0), Some(210.0));
        assert!(compare_table(&a, &c, ["a", "c"]).contains("brackets overlap"));
        assert!(compare_table(&b, &a, ["b", "a"]).contains("🔴"));
    }

    #[test]
    fn the_limit_is_the_resource_at_the_first_failure() {
        let probes = vec![
            (100.0, Outcome::Pass, None),
            (
                150.0,
                Outcome::Pass,
                Some(("DB pool", "pending 1".to_string())),
            ),
            (
                200.0,
                Outcome::Fail,
                Some(("DB pool", "pending 9".to_string())),
            ),
        ];
        let (r, d) = limit_of(&probes, LoadKind::Rate, Some(200.0)).unwrap();
        assert_eq!(
            (r.as_str(), d.as_str()),
            ("DB pool", "pending > 0 from 150 req/s")
        );
        assert_eq!(limit_of(&probes[..1], LoadKind::Rate, Some(100.0)), None);
    }
}
