//! What the server's own readings say about the bottleneck, one sentence each: the DB pool,
//! Tomcat's threads and connections, CPU and garbage collection, and the ramp's saturation.
//!
//! Every sentence names the level of load it is about, so it reads at the levels the plan
//! held (`--stages "0s:5,15s:5,0s:10,15s:10"`) when it held some:
//! - a queue "from N VUs" is one that stayed up at that level (in at least half of its
//!   scrapes); a reading above 0 in fewer is a burst as users started, said as such;
//! - CPU is judged in the levels after the warm-up, never on a first reading (Micrometer's
//!   `process_cpu_usage` averages over the time since it was last read, which for the first
//!   scrape reaches back into the JVM's start-up);
//! - every series of a metric is read (each pool, each connector; GC pauses of every cause
//!   summed), not the first one the endpoint happens to list;
//! - a level without readings (the scrapes failed) gets no sentence.

use volley_formats::Source;
use volley_formats::rundir::ServerPoint;
use volley_scenario::words::counted;
use volley_stats::Interval;

use crate::levels::Level;

/// A level counts as holding a queue when at least this share of its readings show one.
const PERSISTENT_SHARE: f64 = 0.5;

/// CPU share at which a finding calls CPU the likely limit.
const CPU_NEAR_SATURATION: f64 = 0.8;

/// One reading placed on the series: its value and the row it is credited to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reading {
    pub(crate) value: f64,
    pub(crate) row: usize,
    pub(crate) vusers: f64,
}

/// The readings of each series named `metric` (any labels) of each endpoint, in time order,
/// after the warm-up; series in the order they were first listed.
pub(crate) fn series_of(src: &Source, metric: &str, warmup_s: f64) -> Vec<(String, Vec<Reading>)> {
    let rows = &src.series.intervals;
    let mut out: Vec<(String, Vec<Reading>)> = Vec::new();
    let mut targets: Vec<&str> = Vec::new();
    let mut averaged = Vec::new();
    for p in src
        .server
        .iter()
        .filter(|p| is_metric(p, metric) && crate::inputs::readable(p))
    {
        if p.reaches_before_the_run(&mut averaged) {
            continue;
        }
        let Some(row) = p.row(rows) else { continue };
        if rows[row].start_s + 1e-9 < warmup_s || rows[row].period_s <= 0.0 {
            continue;
        }
        let r = Reading {
            value: p.value,
            row,
            vusers: rows[row].vusers,
        };
        match out
            .iter_mut()
            .zip(&targets)
            .find(|((s, _), t)| *s == p.series && **t == p.target)
        {
            Some(((_, v), _)) => v.push(r),
            None => {
                out.push((p.series.clone(), vec![r]));
                targets.push(&p.target);
            }
        }
    }
    out
}

/// Whether `url`'s host is this machine's loopback (127.0.0.0/8, `localhost`, `[::1]`).
fn on_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host = rest.split(['/', '?']).next().unwrap_or("");
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let host = if host.starts_with('[') {
        host.split(']').next().unwrap_or("").trim_start_matches('[')
    } else {
        host.split(':').next().unwrap_or("")
    };
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Whether `p` is a series of `metric`: `metric` or `metric{labels}`.
pub(crate) fn is_metric(p: &ServerPoint, metric: &str) -> bool {
    p.series
        .strip_prefix(metric)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('{'))
}

/// The labels of a series key, as written (`{pool="HikariPool-1"}`), or "".
fn labels(series: &str) -> &str {
    series.find('{').map_or("", |i| &series[i..])
}

/// `name` with the labels of `series` when the metric has more than one series.
fn named(name: &str, series: &str, several: bool) -> String {
    if several {
        format!("{name} {}", labels(series))
    } else {
        name.to_string()
    }
}

/// The held level a row belongs to.
pub(crate) fn level_of<'a>(
    levels: &'a [Level],
    rows: &[Interval],
    row: usize,
) -> Option<&'a Level> {
    let start = rows[row].start_s;
    levels
        .iter()
        .find(|l| start + 1e-9 >= l.from_s && start + 1e-9 < l.to_s)
}

/// How a queue-like series (pending connections, busy threads at their maximum) behaved,
/// judged by `up` on each reading.
struct Queue {
    /// The first level (or, without levels, the first reading that the next one confirms)
    /// at which it stayed up: VUs, readings up, readings there (from then on, without levels).
    persistent: Option<(f64, usize, usize)>,
    /// Levels before that where it rose only briefly (without levels: all its readings, if it
    /// never stayed up): VUs at the highest, readings up, readings, highest.
    bursts: Vec<(f64, usize, usize, f64)>,
    /// Judged at held levels.
    on_levels: bool,
}

impl Queue {
    /// Where the readings of [`Queue::persistent`] were counted.
    fn where_counted(&self) -> &'static str {
        if self.on_levels {
            "there"
        } else {
            "from then on"
        }
    }
}

fn queue(
    readings: &[Reading],
    levels: &[Level],
    rows: &[Interval],
    up: impl Fn(&Reading) -> bool,
) -> Queue {
    let mut q = Queue {
        persistent: None,
        bursts: Vec::new(),
        on_levels: !levels.is_empty(),
    };
    if !levels.is_empty() {
        for level in levels {
            let at: Vec<&Reading> = readings
                .iter()
                .filter(|r| level_of(levels, rows, r.row).is_some_and(|l| std::ptr::eq(l, level)))
                .collect();
            let n_up = at.iter().filter(|r| up(r)).count();
            if at.is_empty() || n_up == 0 {
                continue;
            }
            if at.len() >= 2 && n_up as f64 >= at.len() as f64 * PERSISTENT_SHARE {
                q.persistent = Some((level.vusers, n_up, at.len()));
                break;
            }
            let high = at
                .iter()
                .filter(|r| up(r))
                .map(|r| r.value)
                .fold(f64::MIN, f64::max);
            q.bursts.push((level.vusers, n_up, at.len(), high));
        }
        return q;
    }
    // A ramp: a queue stays up from the first reading that the next one confirms.
    let first =
        (0..readings.len()).find(|&i| up(&readings[i]) && readings.get(i + 1).is_some_and(&up));
    match first {
        Some(i) => {
            let rest = &readings[i..];
            let n_up = rest.iter().filter(|r| up(r)).count();
            q.persistent = Some((readings[i].vusers, n_up, rest.len()));
        }
        None => {
            let ups: Vec<&Reading> = readings.iter().filter(|r| up(r)).collect();
            if let Some(top) = ups.iter().max_by(|a, b| a.value.total_cmp(&b.value)) {
                q.bursts
                    .push((top.vusers, ups.len(), readings.len(), top.value));
            }
        }
    }
    q
}

/// The highest reading and the VUs in force then.
fn peak(readings: &[Reading]) -> Option<Reading> {
    readings
        .iter()
        .copied()
        .reduce(|a, b| if b.value > a.value { b } else { a })
}

pub(crate) fn vus(v: f64) -> String {
    format!("{v:.0} VUs")
}

fn bursts_text(bursts: &[(f64, usize, usize, f64)]) -> String {
    bursts
        .iter()
        .map(|(v, up, n, high)| format!("up to {high:.0} at {} in {up} of {n} scrapes", vus(*v)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One sentence per bottleneck signal the run's server readings show, and the saturation
/// finding last.
pub fn of(
    src: &Source,
    warmup_s: f64,
    levels: &[Level],
    saturation: Option<&volley_stats::knee::Saturation>,
) -> Vec<String> {
    let rows = &src.series.intervals;
    let mut out = Vec::new();

    // The DB pool: each pool of its own.
    let pools = series_of(src, "hikaricp_connections_pending", warmup_s);
    let several = pools.len() > 1;
    for (series, readings) in &pools {
        let Some(top) = peak(readings).filter(|p| p.value > 0.0) else {
            continue;
        };
        let name = named("DB pool", series, several);
        let mut q = queue(readings, levels, rows, |r| r.value > 0.0);
        if q.persistent.is_none() && q.bursts.is_empty() {
            // Up only between the held levels (a ramp between them): read as a ramp.
            q = queue(readings, &[], rows, |r| r.value > 0.0);
        }
        let before = if q.bursts.is_empty() {
            String::new()
        } else {
            format!(
                "; below that only bursts as users started ({}), not exhaustion",
                bursts_text(&q.bursts)
            )
        };
        out.push(match q.persistent {
            Some((v, up, n)) => format!(
                "{name} pending > 0 from {} (in {up} of {n} scrapes {}); it peaked at {:.0} waiting requests at {}{before}.",
                vus(v),
                q.where_counted(),
                top.value,
                vus(top.vusers)
            ),
            None => format!(
                "{name} pending rose above 0 only in bursts ({}): the pool kept up, it was not exhausted.",
                bursts_text(&q.bursts)
            ),
        });
    }

    // Tomcat's worker threads, per connector, against that connector's maximum.
    let busy = series_of(src, "tomcat_threads_busy_threads", warmup_s);
    let max_threads = series_of(src, "tomcat_threads_config_max_threads", 0.0);
    for (series, readings) in &busy {
        let Some(max) = config_of(&max_threads, series) else {
            continue;
        };
        let q = queue(readings, levels, rows, |r| r.value >= max);
        let name = named("Tomcat", series, busy.len() > 1);
        match q.persistent {
            Some((v, up, n)) => out.push(format!(
                "{name}: all {max:.0} worker threads were busy from {} (in {up} of {n} scrapes {}): requests queued for a thread (server.tomcat.threads.max).",
                vus(v),
                q.where_counted()
            )),
            None if !q.bursts.is_empty() => out.push(format!(
                "{name}: all {max:.0} worker threads were busy only briefly ({}).",
                bursts_text(&q.bursts)
            )),
            None => {}
        }
    }

    // Tomcat's connections against max-connections.
    let conns = series_of(src, "tomcat_connections_current_connections", warmup_s);
    let max_conns = series_of(src, "tomcat_connections_config_max_connections", 0.0);
    for (series, readings) in &conns {
        let Some(max) = config_of(&max_conns, series) else {
            continue;
        };
        let q = queue(readings, levels, rows, |r| r.value >= max);
        let name = named("Tomcat", series, conns.len() > 1);
        let Some((v, up, n)) = q.persistent else {
            if !q.bursts.is_empty() {
                out.push(format!(
                    "{name} reached all {max:.0} connections it accepts (server.tomcat.max-connections) only briefly ({}).",
                    bursts_text(&q.bursts)
                ));
            }
            continue;
        };
        let lost = src
            .errors_by_kind
            .iter()
            .flat_map(|e| e.iter())
            .sum::<u64>();
        let unfinished = unfinished_requests(src);
        let consequence = match (unfinished, lost) {
            (0, 0) => String::new(),
            (0, e) => format!(" {} failed.", counted(e, "request")),
            (u, _) => format!(" {} never finished.", counted(u, "request")),
        };
        out.push(format!(
            "{name} held all {max:.0} connections it accepts from {} (in {up} of {n} scrapes {}): further connections waited in the accept queue (server.tomcat.accept-count) or were refused before Tomcat saw them (server.tomcat.max-connections).{consequence}",
            vus(v),
            q.where_counted()
        ));
    }

    // CPU, in the levels after the warm-up, without the first reading: the process's and the
    // host's. A host at its limit is a limit even when the process's own share is low (another
    // process on it, volley itself when it shares the host).
    let cpu_peak = |metric: &str| {
        let (_, readings) = series_of(src, metric, warmup_s).into_iter().next()?;
        let judged: Vec<Reading> = readings
            .into_iter()
            .filter(|r| levels.is_empty() || level_of(levels, rows, r.row).is_some())
            .collect();
        peak(&judged)
    };
    match (cpu_peak("process_cpu_usage"), cpu_peak("system_cpu_usage")) {
        (process, Some(host)) if host.value >= CPU_NEAR_SATURATION => {
            let own = process.map_or(String::new(), |p| {
                format!(
                    " while the server process used {:.0} % at its peak",
                    p.value * 100.0
                )
            });
            // The host whose CPU was read is this one when its metrics came over loopback:
            // volley's own CPU is then part of what the host spent.
            let shared = src
                .server
                .iter()
                .filter(|p| is_metric(p, "system_cpu_usage"))
                .any(|p| on_loopback(&p.target));
            out.push(format!(
                "Server host CPU peaked at {:.0} % at {}{own}, near saturation: the host's CPU may be the limit{}.",
                host.value * 100.0,
                vus(host.vusers),
                match (shared, process.is_some_and(|p| p.value < CPU_NEAR_SATURATION)) {
                    (true, _) => {
                        " (volley and the target share this host — its metrics came over loopback — so volley's own CPU is part of it; run the load from another host to take it out)"
                    }
                    (false, true) => " (another process on the host used it)",
                    (false, false) => "",
                }
            ));
        }
        (Some(top), _) | (None, Some(top)) => {
            let what = if cpu_peak("process_cpu_usage").is_some() {
                "Server process CPU"
            } else {
                "Server host CPU"
            };
            let verdict = if top.value >= CPU_NEAR_SATURATION {
                "near saturation: CPU may be the limit"
            } else {
                "so CPU was not the limit"
            };
            out.push(format!(
                "{what} peaked at {:.0} % at {}, {verdict}.",
                top.value * 100.0,
                vus(top.vusers)
            ));
        }
        (None, None) => {}
    }

    // GC pauses of every cause, summed per scrape.
    let count = summed(src, "jvm_gc_pause_seconds_count", warmup_s);
    if let Some(top) = peak(&count).filter(|p| p.value > 0.0) {
        let paused = summed(src, "jvm_gc_pause_seconds_sum", warmup_s)
            .iter()
            .find(|r| r.row == top.row)
            .map_or(0.0, |r| r.value * 1000.0);
        out.push(format!(
            "Up to {:.1} GC pauses per second ({paused:.1} ms paused per second) at {}.",
            top.value,
            vus(top.vusers)
        ));
    }

    if let Some(s) = saturation {
        out.push(s.finding.clone());
    }
    out
}

/// The configured maximum that goes with `series` (same labels), or the only one there is.
fn config_of(config: &[(String, Vec<Reading>)], series: &str) -> Option<f64> {
    let pick = config
        .iter()
        .find(|(s, _)| labels(s) == labels(series))
        .or_else(|| (config.len() == 1).then(|| &config[0]))?;
    pick.1.last().map(|r| r.value).filter(|m| *m > 0.0)
}

/// Every series of `metric` summed per scrape (one reading per row).
pub(crate) fn summed(src: &Source, metric: &str, warmup_s: f64) -> Vec<Reading> {
    let mut out: Vec<Reading> = Vec::new();
    for (_, readings) in series_of(src, metric, warmup_s) {
        for r in readings {
            match out.iter_mut().find(|o| o.row == r.row) {
                Some(o) => o.value += r.value,
                None => out.push(r),
            }
        }
    }
    out.sort_by_key(|r| r.row);
    out
}

/// Requests recorded as unfinished (no response when the grace period ended).
fn unfinished_requests(src: &Source) -> u64 {
    let k = volley_stats::ErrorKind::Unfinished.index();
    src.errors_by_kind.iter().map(|e| e[k]).sum()
}

#[cfg(test)]
pub(crate) mod tests {
    #[test]
    fn a_target_on_loopback_shares_volley_s_host() {
        for url in [
            "http://127.0.0.1:8080/metrics",
            "http://localhost/actuator/prometheus",
            "http://[::1]:9100/metrics",
            "https://user:pw@127.0.0.2/m",
        ] {
            assert!(super::on_loopback(url), "{url}");
        }
        for url in [
            "http://10.0.0.5:8080/metrics",
            "http://api.internal/metrics",
            "",
        ] {
            assert!(!super::on_loopback(url), "{url}");
        }
    }

    use crate::inputs::ReportOptions;
    use crate::levels;
    use crate::testrun::stepped;

    /// 5 VUs for 6 s, then 10 for 6 s, then 20 for 6 s.
    pub(crate) fn step_up() -> Vec<u32> {
        [5u32; 6]
            .into_iter()
            .chain([10; 6])
            .chain([20; 6])
            .collect()
    }

    fn findings(server: &[(f64, &str, f64, bool)]) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        let src = stepped(dir.path(), &step_up(), |v| 10 * u64::from(v), 20, server);
        let levels = levels::of(&src, ReportOptions::default());
        assert_eq!(levels.len(), 3);
        super::of(&src, 0.0, &levels, None)
    }

    /// A gauge every second, 1 s to 18 s, valued by `at(t)`.
    fn gauge(series: &'static str, at: impl Fn(f64) -> f64) -> Vec<(f64, &'static str, f64, bool)> {
        (1..=18)
            .map(|t| (t as f64, series, at(t as f64), false))
            .collect()
    }

    #[test]
    fn a_queue_that_stays_names_its_level_and_a_blip_is_a_burst() {
        // One reading at 6 s (the instant 10 users start) shows 3 pending; from 12 s (20 users)
        // every reading shows 10: six in the level and the one at the stop, 18 s.
        let pending = gauge("hikaricp_connections_pending{pool=\"HikariPool-1\"}", |t| {
            if t == 6.0 {
                3.0
            } else if t >= 12.0 {
                10.0
            } else {
                0.0
            }
        });
        let f = findings(&pending);
        assert_eq!(
            f,
            [
                "DB pool pending > 0 from 20 VUs (in 7 of 7 scrapes there); it peaked at 10 waiting requests at 20 VUs; below that only bursts as users started (up to 3 at 10 VUs in 1 of 6 scrapes), not exhaustion."
            ]
        );
        let blip = gauge("hikaricp_connections_pending", |t| {
            if t == 6.0 { 3.0 } else { 0.0 }
        });
        assert_eq!(
            findings(&blip),
            [
                "DB pool pending rose above 0 only in bursts (up to 3 at 10 VUs in 1 of 6 scrapes): the pool kept up, it was not exhausted."
            ]
        );
    }

    #[test]
    fn on_a_ramp_a_queue_stays_from_the_reading_the_next_confirms() {
        let dir = tempfile::tempdir().unwrap();
        let ramp: Vec<u32> = (1..=18).collect();
        let read = |server: &[(f64, &str, f64, bool)]| {
            let src = stepped(dir.path(), &ramp, |v| 10 * u64::from(v), 20, server);
            let levels = levels::of(&src, ReportOptions::default());
            assert!(levels.is_empty(), "a ramp holds no level");
            super::of(&src, 0.0, &levels, None)
        };
        // Up at 5 s alone, then from 12 s on: from 13 VUs (the row that starts at 12 s).
        let pending = gauge("hikaricp_connections_pending", |t| {
            if t == 5.0 || t >= 12.0 { 4.0 } else { 0.0 }
        });
        assert_eq!(
            read(&pending),
            [
                "DB pool pending > 0 from 13 VUs (in 7 of 7 scrapes from then on); it peaked at 4 waiting requests at 6 VUs."
            ]
        );
        let blip = gauge("hikaricp_connections_pending", |t| {
            if t == 5.0 { 4.0 } else { 0.0 }
        });
        assert_eq!(
            read(&blip),
            [
                "DB pool pending rose above 0 only in bursts (up to 4 at 6 VUs in 1 of 18 scrapes): the pool kept up, it was not exhausted."
            ]
        );
    }

    #[test]
    fn every_series_is_read() {
        // Two pools: the first never waits, the second does from 10 VUs.
        let mut server = gauge("hikaricp_connections_pending{pool=\"a\"}", |_| 0.0);
        server.extend(gauge("hikaricp_connections_pending{pool=\"b\"}", |t| {
            if t >= 6.0 { 2.0 } else { 0.0 }
        }));
        // GC: the first cause listed is idle; the second pauses twice a second.
        server.extend((1..=18).map(|t| {
            (
                t as f64,
                "jvm_gc_pause_seconds_count{cause=\"Metadata GC Threshold\"}",
                0.0,
                true,
            )
        }));
        server.extend((1..=18).map(|t| {
            (
                t as f64,
                "jvm_gc_pause_seconds_count{cause=\"G1 Evacuation Pause\"}",
                2.0,
                true,
            )
        }));
        let f = findings(&server);
        assert!(
            f[0].starts_with("DB pool {pool=\"b\"} pending > 0 from 10 VUs"),
            "{f:#?}"
        );
        assert!(
            f.iter()
                .any(|s| s.starts_with("Up to 2.0 GC pauses per second")),
            "{f:#?}"
        );
    }

    #[test]
    fn cpu_is_judged_at_the_levels_without_its_first_reading() {
        // The first reading covers the JVM's start-up.
        let cpu = gauge("process_cpu_usage", |t| if t == 1.0 { 1.0 } else { 0.3 });
        assert_eq!(
            findings(&cpu),
            ["Server process CPU peaked at 30 % at 5 VUs, so CPU was not the limit."]
        );
    }

    #[test]
    fn a_level_without_readings_gets_no_finding_and_tomcat_connections_are_named() {
        // Scrapes failed from 12 s on (20 users): no reading there, so nothing about it.
        let mut server: Vec<_> = gauge("hikaricp_connections_pending", |t| {
            if t >= 12.0 { 5.0 } else { 0.0 }
        })
        .into_iter()
        .filter(|r| r.0 < 12.0)
        .collect();
        server.extend(gauge(
            "tomcat_connections_current_connections{name=\"http-nio\"}",
            |t| if t >= 6.0 { 10.0 } else { 6.0 },
        ));
        server.extend(gauge(
            "tomcat_connections_config_max_connections{name=\"http-nio\"}",
            |_| 10.0,
        ));
        let f = findings(&server);
        assert!(!f.iter().any(|s| s.starts_with("DB pool")), "{f:#?}");
        assert!(
            f.iter().any(|s| s.starts_with(
                "Tomcat held all 10 connections it accepts from 10 VUs (in 6 of 6 scrapes there)"
            )),
            "{f:#?}"
        );
    }
}
