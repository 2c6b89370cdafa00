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
use volley_formats::numfmt;
use volley_formats::numfmt::grouped as number;
use volley_scenario::Threshold;
use volley_scenario::threshold::{Metric, Op};
use volley_stats::compare::{NOISE_Z, Verdict};
use volley_stats::search::Outcome;
use volley_stats::usl::Usl;

use crate::chartset::{Chart, Line, Style, Unit, XAxis};
use crate::doc::{Answer, Block, Cell, Doc, Figure, Section, cells};
use crate::error::{Repr, Result};
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

    /// The answer's figures: the capacity, its bracket, what it achieved and what limits it.
    fn figures(&self) -> Vec<Figure> {
        let k = self.load;
        let capacity = match (self.status.as_str(), self.last_pass, self.first_fail) {
            ("slo_met_at_max" | "generator_limited", Some(p), _) => format!("≥ {}", k.show(p)),
            ("slo_broken_at_start", _, Some(f)) => format!("< {}", k.show(f)),
            (_, Some(p), _) => k.show(p),
            _ => "not found".to_string(),
        };
        let mut out = vec![Figure::new("capacity", capacity)];
        if let Some(b) = self.bracket() {
            out.push(Figure::new("bracket", format!("{b} {}", k.unit())));
        }
        if let Some(t) = self.capacity_tps.filter(|t| t.is_finite()) {
            out.push(Figure::new(
                "achieved there",
                format!("{} req/s", number(t)),
            ));
        }
        if let Some(l) = &self.limited_by {
            out.push(Figure::new("limited by", l.clone()));
        }
        out
    }

    /// `[1,450, 1,520)`: from the highest load that passed to the lowest that failed.
    pub fn bracket(&self) -> Option<String> {
        match (self.last_pass, self.first_fail) {
            (Some(p), Some(f)) => Some(format!("[{}, {})", number(p), number(f))),
            (Some(p), None) => Some(format!("[{}, ∞)", number(p))),
            (None, Some(f)) => Some(format!("[0, {})", number(f))),
            (None, None) => None,
        }
    }

    /// The result as a document, the one its terminal, Markdown and HTML forms are drawn
    /// from: the headline as the verdict (passed as [`Capacity::passed`] decides the exit
    /// code), the figures, then the probes, how each was judged, the scalability law, the
    /// charts (`charts`: Markdown's image links) and the notes.
    pub fn doc(&self, charts: &[(String, String)]) -> Doc {
        let load = match (self.load, &self.arrivals) {
            (LoadKind::Rate, Some(a)) => format!("load: arrivals per second (open model, {a})"),
            (LoadKind::Rate, None) => "load: arrivals per second (open model)".to_string(),
            (LoadKind::Vus, _) => "load: virtual users (closed model)".to_string(),
        };
        let meta = vec![
            format!("SLO: {}", self.slo.join(", ")),
            load,
            format!(
                "status: {} · {} probes · {:.0} s",
                self.status,
                self.probes.len(),
                self.elapsed_s
            ),
        ];
        let mut header = Self::HEADER.map(String::from).to_vec();
        header[0] = format!("offered ({})", self.load.unit());
        let mut sections = vec![Section::new(
            "probes",
            "Probes",
            "in the order run; the charts draw them by load",
            Block::Table {
                header,
                rows: self.probe_rows().into_iter().map(cells).collect(),
            },
        )];
        let judged: Vec<String> = self
            .probes
            .iter()
            .map(|p| {
                format!(
                    "{} ({}): {}{}",
                    self.load.show(p.offered),
                    p.role,
                    p.judged,
                    p.stopped_early
                        .as_ref()
                        .map(|w| format!("; stopped early: {w}"))
                        .unwrap_or_default()
                )
            })
            .collect();
        if !judged.is_empty() {
            sections.push(Section::new(
                "judged",
                "Each probe against the SLO",
                "",
                Block::List(judged),
            ));
        }
        if let Some(u) = &self.usl {
            sections.push(Section::new(
                "usl",
                "Scalability",
                "",
                Block::List(vec![usl_line(u)]),
            ));
        }
        if !charts.is_empty() {
            sections.push(Section::new(
                "charts",
                "Charts",
                "",
                Block::Images(charts.to_vec()),
            ));
        }
        if !self.notes.is_empty() {
            sections.push(Section::new(
                "notes",
                "Notes",
                "",
                Block::Notes(self.notes.clone()),
            ));
        }
        Doc {
            title: format!("Capacity: {}", self.name),
            meta,
            answer: Answer {
                verdict: Some((self.passed(), self.headline())),
                figures: self.figures(),
                findings: self.target_line().into_iter().collect(),
                ..Answer::default()
            },
            sections,
        }
    }

    /// For the terminal.
    pub fn table(&self) -> String {
        self.doc(&[]).terminal()
    }

    /// For capacity.md; `charts` are the image links (alt text, relative path).
    pub fn markdown(&self, charts: &[(String, String)]) -> String {
        self.doc(charts).markdown()
    }

    /// capacity.json.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("capacity serializes")
    }

    /// Reads `dir/capacity.json`.
    pub fn read(dir: &Path) -> Result<Capacity> {
        let p = dir.join(CAPACITY_JSON);
        let text = std::fs::read_to_string(&p).map_err(|e| Repr::io(&p, e))?;
        let c: Capacity = serde_json::from_str(&text).map_err(|e| Repr::Input {
            path: p.clone(),
            message: format!("not a capacity result: {e}"),
        })?;
        if c.kind != "capacity" {
            return Err(Repr::Input {
                path: p,
                message: format!("`kind` is `{}`; a capacity result says `capacity`", c.kind),
            }
            .into());
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
            return Err(Repr::Input {
                path: p,
                message: format!(
                    "{what}: not a load a search can have (loads and rates are finite, 0 or more, and the last pass is below the first failure); run the search again rather than edit its result"
                ),
            }
            .into());
        }
        Ok(c)
    }

    /// The probes by load: one point per load offered (a load probed twice, as a confirmation
    /// is, is the mean of its probes), in increasing order; an interrupted probe judges
    /// nothing and is left out.
    fn by_load(&self) -> Vec<AtLoad> {
        let mut probes: Vec<&Probe> = self
            .probes
            .iter()
            .filter(|p| p.verdict != Outcome::Interrupted && p.offered.is_finite())
            .collect();
        probes.sort_by(|a, b| a.offered.total_cmp(&b.offered));
        let mut out: Vec<AtLoad> = Vec::new();
        for group in probes.chunk_by(|a, b| a.offered == b.offered) {
            let mean = |v: &mut dyn Iterator<Item = f64>| {
                let (n, sum) = v
                    .filter(|x| x.is_finite())
                    .fold((0usize, 0.0), |(n, s), x| (n + 1, s + x));
                (n > 0).then(|| sum / n as f64)
            };
            out.push(AtLoad {
                load: group[0].offered,
                p50: mean(&mut group.iter().filter_map(|p| p.ttfb_p50_ms)),
                p99: mean(&mut group.iter().filter_map(|p| p.ttfb_p99_ms)),
                errors: mean(&mut group.iter().map(|p| p.error_rate_pct)),
                tps: mean(&mut group.iter().map(|p| p.achieved_tps)),
                failed: group.iter().any(|p| p.verdict == Outcome::Fail),
            });
        }
        out
    }

    /// The load axis of its charts, reaching `max`.
    fn load_axis(&self, max: f64) -> XAxis {
        XAxis::Load {
            max: (max * 1.05).max(1.0),
            label: match self.load {
                LoadKind::Rate => "offered load (req/s)",
                LoadKind::Vus => "virtual users",
            },
        }
    }

    /// The SLO's limits on `metrics`, as (expression, limit).
    fn limits(&self, metrics: &[Metric]) -> Vec<(String, f64)> {
        self.slo
            .iter()
            .filter_map(|s| {
                let t = volley_scenario::parse_threshold(s).ok()?;
                metrics.contains(&t.metric).then(|| (s.clone(), t.limit))
            })
            .collect()
    }

    /// The bracket on `x` as a span line (none unless both ends were probed).
    fn bracket_line(&self, x: &[f64], label: &str) -> Option<Line> {
        let (p, f) = (self.last_pass?, self.first_fail?);
        Some(
            Line::new(
                &format!("{label}{}", self.bracket()?),
                x.iter().map(|v| (*v == p || *v == f).then_some(0.0)),
            )
            .styled(Style::Span),
        )
    }

    /// The charts, each against the load offered (probes in increasing load, a load probed
    /// twice drawn once at the mean of its probes) with the bracket shaded: latency with the
    /// SLO's latency limits and the loads that failed, the error rate with the SLO's limit on
    /// it, and the throughput achieved against the load offered (and the target, when given).
    pub fn charts(&self) -> Vec<Chart> {
        let points = self.by_load();
        let x: Vec<f64> = points.iter().map(|p| p.load).collect();
        let x_axis = self.load_axis(x.iter().copied().fold(0.0, f64::max));
        let flat = |label: &str, v: f64| Line::new(label, x.iter().map(|_| Some(v)));
        let bracket = self.bracket_line(&x, "bracket ");
        let mut latency: Vec<Line> = bracket.iter().cloned().collect();
        latency.push(Line::new("TTFB p50", points.iter().map(|p| p.p50)));
        latency.push(Line::new("TTFB p99", points.iter().map(|p| p.p99)));
        for (s, limit) in self.limits(&[Metric::Ttfb, Metric::Total, Metric::Mttfb]) {
            latency.push(flat(&format!("SLO: {s}"), limit).styled(Style::Limit));
        }
        if points.iter().any(|p| p.failed) {
            latency.push(
                Line::new(
                    "failed the SLO (TTFB p99)",
                    points.iter().map(|p| if p.failed { p.p99 } else { None }),
                )
                .styled(Style::Dots),
            );
        }
        let mut errors: Vec<Line> = bracket.iter().cloned().collect();
        errors.push(Line::new("errors", points.iter().map(|p| p.errors)));
        for (s, limit) in self.limits(&[Metric::ErrorRate]) {
            errors.push(flat(&format!("SLO: {s}"), limit).styled(Style::Limit));
        }
        let mut throughput: Vec<Line> = bracket.into_iter().collect();
        throughput.push(Line::new("achieved TPS", points.iter().map(|p| p.tps)));
        if self.load == LoadKind::Rate {
            throughput.push(Line::new("offered", x.iter().map(|v| Some(*v))).styled(Style::Limit));
        }
        if let Some(t) = &self.target {
            throughput.push(flat("target", t.target_rps).styled(Style::Limit));
        }
        let chart = |name, title: &str, y, lines| Chart {
            name,
            title: title.to_string(),
            x_axis,
            y,
            y2: None,
            image: true,
            x: x.clone(),
            lines,
        };
        vec![
            chart(
                "capacity_latency",
                "Latency against offered load",
                Unit::Ms,
                latency,
            ),
            chart(
                "capacity_errors",
                "Error rate against offered load (%)",
                Unit::Pct,
                errors,
            ),
            chart(
                "capacity_throughput",
                "Achieved against offered throughput",
                Unit::Tps,
                throughput,
            ),
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

    /// A page of its own, in the run page's style: the answer first (its colour from
    /// [`Capacity::passed`]), then the probes, and the interactive charts.
    pub fn page(&self) -> String {
        crate::html::render(
            &format!("volley capacity: {}", self.name),
            &[self.doc(&[]).html()],
            self.charts(),
            Vec::new(),
        )
    }

    /// The page ([`Capacity::page`]); the SVGs are no longer inlined, its charts are drawn
    /// on the page. Kept for callers that drew the charts first.
    pub fn html(&self, _svgs: &[String]) -> String {
        self.page()
    }

    /// Everything of the result into `dir`: capacity.json, the charts (charts/*.png, *.svg),
    /// capacity.md and capacity.html.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let put = |name: &str, text: String| {
            let p = dir.join(name);
            std::fs::write(&p, text).map_err(|e| Repr::io(&p, e).into())
        };
        put(CAPACITY_JSON, self.to_json())?;
        let files = self.draw(&dir.join("charts"))?;
        put(
            "capacity.md",
            self.markdown(&crate::charts::png_links(&files)),
        )?;
        put("capacity.html", self.page())
    }
}

/// One load offered as the charts draw it.
struct AtLoad {
    load: f64,
    p50: Option<f64>,
    p99: Option<f64>,
    errors: Option<f64>,
    tps: Option<f64>,
    failed: bool,
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
    /// The SLO's thresholds (by index) whose figure is within its noise of its limit: worth a
    /// confirmation long enough to read that figure.
    pub near: Vec<usize>,
    /// Why the generator's figures make the probe say nothing of the server.
    pub generator: Option<String>,
    /// `ttfb p99 212.3 ms vs < 250 ms (±9 %)`, one per SLO.
    pub detail: String,
    /// The standard error of the probe's TPS (successful requests per second) by the
    /// within-run bootstrap; NaN when the probe has too few intervals.
    pub tps_se: f64,
}

/// The compare-table key of the figure a threshold reads, when the bootstrap estimates it:
/// the metric table's own row for the threshold ([`volley_stats::metric::for_threshold`]).
fn noise_key(t: &Threshold) -> Option<&'static str> {
    volley_stats::metric::for_threshold(t.metric.name(), t.stat.name()).map(|m| m.key)
}

/// Judges probe `report` (of `src`) against `slo`: each figure against its limit, how near it
/// is by its own noise (the within-run bootstrap, [`NOISE_Z`] standard errors, at least
/// [`NEAR_FLOOR_PCT`] of the limit), and whether the generator kept up.
pub fn judge(src: &Source, report: &RunReport, slo: &[Threshold], opts: ReportOptions) -> Judged {
    let noise = crate::compare::run_noise(src, opts);
    let mut passed = true;
    let mut near = Vec::new();
    let mut parts = Vec::new();
    for (i, t) in slo.iter().enumerate() {
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
        if close {
            near.push(i);
        }
        let op = match t.op {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        };
        parts.push(format!(
            "{} {} vs {op} {} (±{}){}",
            t.expr.split(['<', '>']).next().unwrap_or(&t.expr).trim(),
            numfmt::compact(r.actual),
            numfmt::compact(t.limit),
            numfmt::compact(band),
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
            t.op.holds(crate::model::latency_stat(a, t.stat), t.limit)
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
    /// The two answer different questions (loads of different kinds, different SLOs): a gate
    /// on them is refused, not passed or failed ([`unlike`] says why).
    Unlike(String),
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
            CapacityChange::Unlike(why) => format!("REFUSED: not alike: {why}"),
        }
    }
}

/// An SLO's expressions as a set that reads the same however they were written: each
/// threshold as metric, statistic, comparison and limit, in order.
fn slo_set(c: &Capacity) -> Vec<String> {
    let mut set: Vec<String> = c
        .slo
        .iter()
        .map(|s| match volley_scenario::parse_threshold(s) {
            Ok(t) => format!(
                "{}|{}|{}|{}|{}",
                t.metric.name(),
                t.stat.name(),
                op_text(t.op),
                t.limit,
                t.step.as_deref().unwrap_or("")
            ),
            Err(_) => s.split_whitespace().collect::<String>(),
        })
        .collect();
    set.sort();
    set.dedup();
    set
}

fn op_text(op: Op) -> &'static str {
    match op {
        Op::Lt => "<",
        Op::Le => "<=",
        Op::Gt => ">",
        Op::Ge => ">=",
    }
}

/// What makes two capacity results answer different questions, one sentence each (empty
/// when they are alike): loads of different kinds (a rate against a number of users), or
/// different SLOs (a capacity is the highest load that met its own SLO).
pub fn unlike(a: &Capacity, b: &Capacity, labels: [&str; 2]) -> Vec<String> {
    let mut out = Vec::new();
    let model = |k: LoadKind| match k {
        LoadKind::Rate => "arrivals per second (req/s, an open model)",
        LoadKind::Vus => "virtual users (VUs, a closed model)",
    };
    if a.load != b.load {
        out.push(format!(
            "{} searched {} and {} {}: a rate and a number of users are different loads, so the capacities are not compared figure by figure; search both with --rates, or both with --users",
            labels[0],
            model(a.load),
            labels[1],
            model(b.load)
        ));
    }
    if slo_set(a) != slo_set(b) {
        out.push(format!(
            "{} was searched under the SLO ({}) and {} under ({}): a capacity is the highest load that met its own SLO, so these answer different questions and are not compared; search both under one SLO",
            labels[0],
            a.slo.join(", "),
            labels[1],
            b.slo.join(", ")
        ));
    }
    out
}

/// Judges `b` against `a` (the baseline): a fall is called only when `b` failed at a load
/// `a` passed, so both brackets are below one another; searches of unlike loads or SLOs are
/// not judged at all ([`CapacityChange::Unlike`]).
pub fn regression(a: &Capacity, b: &Capacity) -> CapacityChange {
    let why = unlike(a, b, ["the baseline", "the other search"]);
    if !why.is_empty() {
        return CapacityChange::Unlike(why.join("; "));
    }
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

/// How two capacities are compared, said under the table.
const CAPACITY_METHOD: &str = "A capacity is the highest load that met the SLO; its bracket runs from there to the lowest load that broke it, and is its uncertainty. 🟢 or 🔴 only when the brackets do not overlap; ⚪ when they do. Searches of different kinds of load or under different SLOs are not compared.";

/// Two capacity results side by side as a document: the capacities and their change first
/// (or why they are not compared), the gate's verdict when one judged them, then the table,
/// each search's own answer and notes, and the method.
pub fn compare_doc(
    a: &Capacity,
    b: &Capacity,
    labels: [&str; 2],
    gate: Option<&CapacityChange>,
) -> Doc {
    let why = unlike(a, b, labels);
    let show = |c: &Capacity| c.last_pass.map_or("n/a".into(), |p| c.load.show(p));
    let lo = |c: &Capacity| c.last_pass.unwrap_or(0.0);
    let hi = |c: &Capacity| c.first_fail.unwrap_or(f64::INFINITY);
    let (change, verdict, after) = if !why.is_empty() {
        ("not compared".to_string(), None, "")
    } else {
        let change = match (a.last_pass, b.last_pass) {
            (Some(x), Some(y)) if x > 0.0 => format!("{:+.1} %", (y - x) / x * 100.0),
            _ => "n/a".into(),
        };
        if lo(b) >= hi(a) {
            (change, Some(Verdict::Better), "")
        } else if hi(b) <= lo(a) {
            (change, Some(Verdict::Worse), "")
        } else {
            (change, Some(Verdict::Noise), " (brackets overlap)")
        }
    };
    let pair = |what: &str, f: &dyn Fn(&Capacity) -> String| -> Vec<Cell> {
        vec![what.into(), f(a).into(), f(b).into(), "".into()]
    };
    let rows = vec![
        vec![
            "capacity".into(),
            show(a).into(),
            show(b).into(),
            Cell {
                text: change.clone(),
                mark: verdict,
                after: after.to_string(),
                strong: true,
                ..Cell::default()
            },
        ],
        pair("bracket", &|c| {
            c.bracket()
                .map_or("unknown".into(), |b| format!("{b} {}", c.load.unit()))
        }),
        pair("status", &|c| c.status.clone()),
        pair("limited by", &|c| {
            c.limited_by.clone().unwrap_or_else(|| "-".into())
        }),
        pair("SLO", &|c| c.slo.join(", ")),
        pair("arrivals", &|c| match c.load {
            LoadKind::Vus => "VUs (closed model)".into(),
            LoadKind::Rate => c.arrivals.clone().unwrap_or_else(|| "even".into()),
        }),
    ];
    let mut answer = Answer::default();
    if !why.is_empty() {
        answer.banner = Some(format!("Not compared: {}.", why.join("; ")));
    }
    answer.summary = Some(match verdict {
        Some(v) => format!(
            "{} → {}: {} → {} ({change} {}{after})",
            labels[0],
            labels[1],
            show(a),
            show(b),
            v.mark()
        ),
        None => format!(
            "{}: {}; {}: {} (not compared)",
            labels[0],
            show(a),
            labels[1],
            show(b)
        ),
    });
    answer.verdict = gate.map(|g| (g.passed(), format!("Gate: {}", g.describe())));
    let mut sections = vec![Section::new(
        "comparison",
        "Capacities",
        "",
        Block::Table {
            header: vec![
                String::new(),
                labels[0].to_string(),
                labels[1].to_string(),
                "change".into(),
            ],
            rows,
        },
    )];
    if !why.is_empty() {
        sections.push(Section::new(
            "not_compared",
            "Why they are not compared",
            "",
            Block::Notes(why.clone()),
        ));
    }
    if a.load == b.load && a.load == LoadKind::Rate && a.arrivals != b.arrivals {
        sections.push(Section::new(
            "arrivals",
            "Arrivals",
            "",
            Block::Notes(vec![format!(
                "{} spaced its arrivals {} and {} {}: Poisson arrivals come in bursts that queue where even ones do not, so the same server can show a lower capacity under them",
                labels[0],
                a.arrivals.as_deref().unwrap_or("evenly"),
                labels[1],
                b.arrivals.as_deref().unwrap_or("evenly")
            )]),
        ));
    }
    for (label, c) in labels.iter().zip([a, b]) {
        let mut blocks = vec![Block::List(vec![c.headline()])];
        if !c.notes.is_empty() {
            blocks.push(Block::Notes(c.notes.clone()));
        }
        sections.push(Section {
            id: "search".into(),
            title: label.to_string(),
            caption: String::new(),
            blocks,
        });
    }
    sections.push(Section::new(
        "method",
        "Method",
        "",
        Block::List(vec![CAPACITY_METHOD.to_string()]),
    ));
    Doc {
        title: format!("Capacity: {} → {}", labels[0], labels[1]),
        meta: labels
            .iter()
            .zip([a, b])
            .map(|(l, c)| format!("{l}: {} · {} · {} probes", c.name, c.status, c.probes.len()))
            .collect(),
        answer,
        sections,
    }
}

/// The comparison's charts: each search's TTFB p99, error rate and achieved throughput
/// against the load offered, with both brackets shaded (none when the loads are of
/// different kinds, as their axes are).
pub fn compare_charts(a: &Capacity, b: &Capacity, labels: [&str; 2]) -> Vec<Chart> {
    if a.load != b.load {
        return Vec::new();
    }
    let (pa, pb) = (a.by_load(), b.by_load());
    let mut x: Vec<f64> = pa.iter().chain(&pb).map(|p| p.load).collect();
    x.sort_by(f64::total_cmp);
    x.dedup();
    let x_axis = a.load_axis(x.iter().copied().fold(0.0, f64::max));
    let on_x = |points: &[AtLoad], pick: fn(&AtLoad) -> Option<f64>| -> Vec<Option<f64>> {
        x.iter()
            .map(|v| points.iter().find(|p| p.load == *v).and_then(pick))
            .collect()
    };
    let brackets: Vec<Line> = [(a, labels[0]), (b, labels[1])]
        .iter()
        .filter_map(|(c, l)| c.bracket_line(&x, &format!("{l}: bracket ")))
        .collect();
    let lines = |pick: fn(&AtLoad) -> Option<f64>, what: &str| -> Vec<Line> {
        let mut out = brackets.clone();
        for (points, l) in [(&pa, labels[0]), (&pb, labels[1])] {
            out.push(Line::new(&format!("{l}: {what}"), on_x(points, pick)));
        }
        out
    };
    let slo_lines = |metrics: &[Metric]| -> Vec<Line> {
        let mut limits = a.limits(metrics);
        for l in b.limits(metrics) {
            if !limits.iter().any(|(_, v)| *v == l.1) {
                limits.push(l);
            }
        }
        limits
            .into_iter()
            .map(|(s, v)| {
                Line::new(&format!("SLO: {s}"), x.iter().map(|_| Some(v))).styled(Style::Limit)
            })
            .collect()
    };
    let chart = |name, title: &str, y, lines| Chart {
        name,
        title: title.to_string(),
        x_axis,
        y,
        y2: None,
        image: true,
        x: x.clone(),
        lines,
    };
    let mut latency = lines(|p| p.p99, "TTFB p99");
    latency.extend(slo_lines(&[Metric::Ttfb, Metric::Total, Metric::Mttfb]));
    let mut errors = lines(|p| p.errors, "errors");
    errors.extend(slo_lines(&[Metric::ErrorRate]));
    let throughput = lines(|p| p.tps, "achieved TPS");
    vec![
        chart(
            "capacity_latency",
            "TTFB p99 against offered load",
            Unit::Ms,
            latency,
        ),
        chart(
            "capacity_errors",
            "Error rate against offered load (%)",
            Unit::Pct,
            errors,
        ),
        chart(
            "capacity_throughput",
            "Achieved against offered throughput",
            Unit::Tps,
            throughput,
        ),
    ]
}

/// The comparison as a terminal table (or Markdown with `markdown`).
pub fn compare_table(a: &Capacity, b: &Capacity, labels: [&str; 2]) -> String {
    compare_doc(a, b, labels, None).terminal()
}

/// The comparison as a page in the run page's style: the answer first (both capacities and
/// the mark, or why they are not compared; the gate's verdict when there is one), then the
/// table, each search's headline and notes, and the interactive charts.
pub fn compare_html(
    a: &Capacity,
    b: &Capacity,
    labels: [&str; 2],
    gate: Option<&CapacityChange>,
) -> String {
    crate::html::render(
        "volley capacity comparison",
        &[compare_doc(a, b, labels, gate).html()],
        compare_charts(a, b, labels),
        Vec::new(),
    )
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

    #[test]
    fn the_charts_draw_the_probes_by_load_with_the_bracket_and_the_errors() {
        let mut c = result("found", Some(150.0), Some(175.0));
        let mut failed = probe(175.0, Outcome::Fail);
        failed.error_rate_pct = 3.7;
        failed.ttfb_p99_ms = Some(66.0);
        let mut confirm = probe(175.0, Outcome::Fail);
        confirm.ttfb_p99_ms = Some(100.0);
        c.probes = vec![
            probe(50.0, Outcome::Pass),
            probe(200.0, Outcome::Fail),
            probe(150.0, Outcome::Pass),
            failed,
            confirm,
        ];
        let charts = c.charts();
        let names: Vec<&str> = charts.iter().map(|c| c.name).collect();
        assert_eq!(
            names,
            ["capacity_latency", "capacity_errors", "capacity_throughput"]
        );
        // In increasing load, one point per load (the confirmation averaged with its probe).
        assert_eq!(charts[0].x, [50.0, 150.0, 175.0, 200.0]);
        let line = |c: &Chart, label: &str| {
            c.lines
                .iter()
                .find(|l| l.label.starts_with(label))
                .unwrap_or_else(|| panic!("no {label} in {}", c.name))
                .clone()
        };
        assert_eq!(
            line(&charts[0], "TTFB p99").values,
            [Some(9.0), Some(9.0), Some(83.0), Some(9.0)]
        );
        let bracket = line(&charts[0], "bracket");
        assert_eq!(bracket.style, Style::Span);
        assert_eq!(bracket.values, [None, Some(0.0), Some(0.0), None]);
        assert_eq!(line(&charts[0], "SLO: ttfb p99").style, Style::Limit);
        assert_eq!(
            line(&charts[0], "failed").values,
            [None, None, Some(83.0), Some(9.0)]
        );
        // The error rate has its chart, with the SLO's limit on it.
        assert_eq!(charts[1].y, Unit::Pct);
        assert_eq!(
            line(&charts[1], "errors").values,
            [Some(0.0), Some(0.0), Some(1.85), Some(0.0)]
        );
        assert_eq!(line(&charts[1], "SLO: error_rate").values, [Some(1.0); 4]);
    }

    #[test]
    fn the_page_is_the_run_pages_equal_and_its_colour_is_the_status() {
        for (status, passed) in [
            ("found", true),
            ("target_failed", false),
            ("unstable", false),
            ("generator_limited", false),
        ] {
            let c = result(status, Some(150.0), Some(175.0));
            assert_eq!(c.passed(), passed, "{status}");
            let page = c.page();
            let verdict = if passed {
                "<p class=\"verdict pass\"><b>PASS</b>"
            } else {
                "<p class=\"verdict fail\"><b>FAIL</b>"
            };
            assert!(page.contains(verdict), "{status}: {page}");
            // Styled and drawn as the run page is: its stylesheet, uPlot and the chart data.
            assert!(page.contains(crate::html::PAGE_CSS), "{status}");
            assert!(page.contains("\"name\":\"capacity_errors\""), "{status}");
            assert!(page.contains("\"style\":\"span\""), "{status}");
        }
        // Every form holds every part of the document.
        let c = result("found", Some(150.0), Some(175.0));
        let doc = c.doc(&[]);
        let (t, m, h) = (c.table(), c.markdown(&[]), c.page());
        for w in crate::doc::words(&doc) {
            assert!(t.contains(&*crate::escape::terminal_safe(&w)), "{w}");
            assert!(
                m.contains(&crate::md_text(&w)) || m.contains(&crate::doc::md_prose(&w)),
                "{w}"
            );
            assert!(h.contains(&minijinja::HtmlEscape(&w).to_string()), "{w}");
        }
    }

    #[test]
    fn unlike_capacities_are_not_compared_nor_gated() {
        let a = result("found", Some(188.0), Some(195.0));
        let mut vus = result("found", Some(10.0), Some(17.0));
        vus.load = LoadKind::Vus;
        let t = compare_table(&a, &vus, ["rate", "users"]);
        let row = t.lines().find(|l| l.starts_with("  capacity")).unwrap();
        assert!(
            row.contains("not compared") && !row.contains(['🔴', '🟢', '⚪']),
            "{t}"
        );
        assert!(
            t.contains("a rate and a number of users are different loads"),
            "{t}"
        );
        assert!(matches!(regression(&a, &vus), CapacityChange::Unlike(_)));
        assert!(compare_charts(&a, &vus, ["a", "b"]).is_empty());
        // A looser SLO does not pass a gate: the searches answer different questions.
        let mut loose = result("found", Some(400.0), Some(420.0));
        loose.slo = vec!["ttfb p99 < 2s".into(), "error_rate < 1%".into()];
        let why = unlike(&a, &loose, ["strict", "loose"]);
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(why[0].contains("different questions"), "{why:?}");
        let gate = regression(&a, &loose);
        assert!(
            !gate.passed() && gate.describe().starts_with("REFUSED"),
            "{gate:?}"
        );
        // The same SLO written another way is alike.
        let mut same = result("found", Some(400.0), Some(420.0));
        same.slo = vec!["error_rate<1%".into(), "ttfb p99 < 200 ms".into()];
        assert!(unlike(&a, &same, ["a", "b"]).is_empty());
        assert_eq!(regression(&a, &same), CapacityChange::Held);
        // Alike ones are drawn on one chart, both brackets shaded.
        let charts = compare_charts(&a, &same, ["a", "b"]);
        assert_eq!(
            charts[0]
                .lines
                .iter()
                .filter(|l| l.style == Style::Span)
                .count(),
            2
        );
    }
}
