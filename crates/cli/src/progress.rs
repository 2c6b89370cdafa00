//! Live progress: a status line redrawn in place on a terminal, plain lines otherwise.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use volley_stats::{Interval, IntervalSample};

use crate::args::ProgressMode;

pub(crate) struct Progress {
    live: bool,
    quiet: bool,
    /// `None` when the run ends when its VUs are done (a run count).
    planned: Option<Duration>,
    errors: u64,
}

impl Progress {
    pub(crate) fn new(mode: ProgressMode, planned: Option<Duration>) -> Self {
        let tty = std::io::stderr().is_terminal();
        Progress {
            live: mode == ProgressMode::Auto && tty,
            quiet: mode == ProgressMode::None,
            planned,
            errors: 0,
        }
    }

    pub(crate) fn interval(&mut self, row: &Interval, sample: &IntervalSample, target_vus: u64) {
        self.errors += row.errors;
        if self.quiet {
            return;
        }
        let elapsed = row.start_s + row.period_s;
        let total = self.planned.map_or(0.0, |p| p.as_secs_f64());
        let of_total = self
            .planned
            .map_or_else(String::new, |_| format!("/{total:.0}s"));
        let pct = |p: f64| {
            if sample.ttfb.is_empty() {
                0.0
            } else {
                sample.ttfb.value_at_percentile(p) as f64 / 1000.0
            }
        };
        // The drain after the stop has no length and so no TPS.
        let tps = if row.tps.is_nan() {
            format!("{:>9}", "drain")
        } else {
            format!("{:>9.1}", row.tps)
        };
        let mut stats = format!(
            "VUs {:>4}/{:<4} TPS {tps}  TTFB p50 {:>7.2} ms p99 {:>8.2} ms  errors {} ({} total)",
            row.vusers,
            target_vus,
            pct(50.0),
            pct(99.0),
            row.errors,
            self.errors
        );
        let c = &sample.counts;
        if c.late + c.dropped > 0 {
            stats.push_str(&format!("  late {} dropped {}", c.late, c.dropped));
        }
        if c.pool_wait_sum_us > 0 {
            stats.push_str(&format!("  pool wait {:.2} ms", c.pool_wait_mean_ms()));
        }
        let mut err = std::io::stderr().lock();
        if self.live {
            let width = 24;
            let done = if self.planned.is_some() {
                ((elapsed / total.max(1e-9)).min(1.0) * width as f64) as usize
            } else {
                0
            };
            let bar = format!("{}{}", "=".repeat(done), " ".repeat(width - done));
            let _ = write!(err, "\r\x1b[2K[{bar}] {elapsed:>6.0}s{of_total}  {stats}");
        } else {
            let _ = writeln!(err, "{elapsed:>7.1}s{of_total}  {stats}");
        }
        let _ = err.flush();
    }

    pub(crate) fn finish(&self) {
        if self.live {
            eprintln!();
        }
    }
}
