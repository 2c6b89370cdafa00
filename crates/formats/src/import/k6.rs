//! k6: `--out csv`, `--out json` (NDJSON) and `--summary-export`.
//!
//! k6 writes one sample per metric per request (`http_reqs`, `http_req_duration`,
//! `http_req_blocked`, `_connecting`, `_tls_handshaking`, `_sending`, `_waiting`,
//! `_receiving`, `http_req_failed`), consecutively; a request is rebuilt from the run of
//! samples that starts at its `http_reqs`. k6's `http_req_waiting` excludes connection
//! set-up, so to compare with nGrinder and volley, TTFB here is connecting + TLS +
//! sending + waiting, and total time is that plus receiving.

use std::io::BufRead;
use std::path::Path;

use volley_stats::{ErrorKind, Interval, Series};

use crate::bucket::{Bucketer, RequestRecord};
use crate::error::{FormatError, Result};
use crate::import::{BUCKET_S, source};
use crate::source::{Format, Source};

/// A request being rebuilt from its samples.
#[derive(Default)]
struct Pending {
    at_ms: f64,
    status: Option<u16>,
    expected: Option<bool>,
    error_code: Option<u32>,
    connecting: f64,
    tls: f64,
    sending: f64,
    waiting: f64,
    receiving: f64,
    failed: Option<bool>,
}

impl Pending {
    fn record(&self) -> RequestRecord {
        let ms_us = |ms: f64| (ms * 1000.0).round().max(0.0) as u64;
        let ttfb = self.connecting + self.tls + self.sending + self.waiting;
        let failed = self.failed.unwrap_or(self.expected == Some(false));
        let error = failed.then(|| classify(self.status, self.error_code));
        RequestRecord {
            start_ms: self.at_ms,
            ttfb_us: Some(ms_us(ttfb)),
            total_us: ms_us(ttfb + self.receiving),
            connect_us: ms_us(self.connecting + self.tls),
            bytes: 0,
            error,
            status: self.status.filter(|s| *s > 0),
            vusers: None,
        }
    }
}

/// k6's error codes (`lib/netext/httpext/error_codes.go`) as volley's kinds.
fn classify(status: Option<u16>, code: Option<u32>) -> ErrorKind {
    match (status, code) {
        (Some(s), _) if s >= 100 => ErrorKind::Status,
        (_, Some(1050)) => ErrorKind::Timeout,
        (_, Some(c)) if (1100..1300).contains(&c) => ErrorKind::Connect,
        (_, Some(c)) if (1300..1400).contains(&c) => ErrorKind::Tls,
        (_, Some(c)) if (1000..1100).contains(&c) => ErrorKind::Reset,
        _ => ErrorKind::Protocol,
    }
}

/// Rebuilds requests from metric samples and buckets them.
struct Assembler {
    bucketer: Bucketer,
    pending: Option<Pending>,
    vus: Vec<(f64, f64)>,
}

impl Assembler {
    fn new() -> Self {
        Assembler { bucketer: Bucketer::new(BUCKET_S), pending: None, vus: Vec::new() }
    }

    fn sample(&mut self, metric: &str, at_ms: f64, value: f64, status: Option<u16>, expected: Option<bool>, code: Option<u32>) {
        if metric == "vus" {
            self.vus.push((at_ms, value));
            return;
        }
        if metric == "http_reqs" {
            self.flush();
            self.pending = Some(Pending { at_ms, status, expected, error_code: code, ..Default::default() });
            return;
        }
        let Some(p) = self.pending.as_mut() else { return };
        match metric {
            "http_req_connecting" => p.connecting = value,
            "http_req_tls_handshaking" => p.tls = value,
            "http_req_sending" => p.sending = value,
            "http_req_waiting" => p.waiting = value,
            "http_req_receiving" => p.receiving = value,
            "http_req_failed" => {
                p.failed = Some(value != 0.0);
                self.flush();
            }
            _ => {}
        }
    }

    fn flush(&mut self) {
        if let Some(p) = self.pending.take() {
            self.bucketer.add(&p.record());
        }
    }

    fn finish(mut self, path: &Path, format: Format) -> Source {
        self.flush();
        let mut src = source(path, format);
        let requests = self.bucketer.records();
        let mut out = self.bucketer.finish();
        apply_vus(&mut out.series, &self.vus);
        out.into_source(&mut src);
        src.notes.push(format!(
            "{requests} requests rebuilt from k6 samples and bucketed by second; TTFB = connecting + TLS + sending + waiting (k6's http_req_waiting alone excludes connection set-up)."
        ));
        src
    }
}

/// Sets each interval's VU count from k6's `vus` gauge (the last value in the interval).
fn apply_vus(series: &mut Series, vus: &[(f64, f64)]) {
    let Some(first) = vus.first().map(|v| v.0) else { return };
    let origin = (first / 1000.0).floor() * 1000.0;
    for (at, v) in vus {
        let idx = ((at - origin) / 1000.0) as usize;
        if let Some(row) = series.intervals.get_mut(idx) {
            row.vusers = *v;
        }
    }
}

/// Whether the first line is a k6 CSV header.
pub fn sniff_csv(first_line: &str) -> bool {
    first_line.starts_with("metric_name,timestamp,metric_value")
}

/// Reads `--out csv`.
pub fn read_csv(path: &Path, reader: impl std::io::Read) -> Result<Source> {
    let mut csv = csv::ReaderBuilder::new().flexible(true).from_reader(reader);
    let header = csv.headers().map_err(|e| FormatError::malformed(path, 1, None, e.to_string()))?.clone();
    let col = |name: &str| header.iter().position(|h| h == name);
    let (metric_c, ts_c, value_c) = (0, 1, 2);
    let (status_c, expected_c, code_c) = (col("status"), col("expected_response"), col("error_code"));
    let mut asm = Assembler::new();
    let mut record = csv::StringRecord::new();
    let mut line = 1u64;
    loop {
        match csv.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return Err(FormatError::malformed(path, line + 1, None, e.to_string())),
        }
        line += 1;
        if record.len() < 3 {
            return Err(FormatError::malformed(path, line, Some(record.len() as u64 + 1), "truncated row: expected metric_name,timestamp,metric_value"));
        }
        let bad = |c: usize, what: &str| FormatError::malformed(path, line, Some(c as u64 + 1), format!("expected {what}, found `{}`", &record[c]));
        let ts = parse_timestamp(&record[ts_c]).ok_or_else(|| bad(ts_c, "a timestamp"))?;
        let value: f64 = record[value_c].parse().map_err(|_| bad(value_c, "a number"))?;
        let get = |c: Option<usize>| c.and_then(|c| record.get(c)).filter(|s| !s.is_empty());
        asm.sample(
            &record[metric_c],
            ts,
            value,
            get(status_c).and_then(|s| s.parse().ok()),
            get(expected_c).map(|s| s == "true"),
            get(code_c).and_then(|s| s.parse().ok()),
        );
    }
    Ok(asm.finish(path, Format::K6Csv))
}

/// k6 CSV timestamps: unix seconds (default), milli/micro/nanoseconds, or RFC 3339 → ms.
fn parse_timestamp(s: &str) -> Option<f64> {
    if let Ok(n) = s.parse::<f64>() {
        return Some(match n {
            n if n > 1e17 => n / 1e6,
            n if n > 1e14 => n / 1e3,
            n if n > 1e11 => n,
            n => n * 1000.0,
        });
    }
    s.parse::<jiff::Timestamp>().ok().map(|t| t.as_millisecond() as f64)
}

/// Whether the first line is k6 NDJSON.
pub fn sniff_json(first_line: &str) -> bool {
    let l = first_line.trim_start();
    l.starts_with('{') && (l.contains("\"type\":\"Metric\"") || l.contains("\"type\":\"Point\""))
}

/// Reads `--out json` (one JSON object per line).
pub fn read_json(path: &Path, reader: impl BufRead) -> Result<Source> {
    let mut asm = Assembler::new();
    for (i, line) in reader.lines().enumerate() {
        let line_no = i as u64 + 1;
        let line = line.map_err(|e| FormatError::io(path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(&line)
            .map_err(|e| FormatError::malformed(path, line_no, Some(e.column() as u64), format!("not a JSON object: {e}")))?;
        if v["type"] != "Point" {
            continue;
        }
        let metric = v["metric"].as_str().unwrap_or_default();
        let data = &v["data"];
        let at = data["time"]
            .as_str()
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .ok_or_else(|| FormatError::malformed(path, line_no, None, "Point without a valid data.time"))?;
        let tags = &data["tags"];
        let at_ms = at.as_microsecond() as f64 / 1000.0;
        asm.sample(
            metric,
            at_ms,
            data["value"].as_f64().unwrap_or(0.0),
            tags["status"].as_str().and_then(|s| s.parse().ok()),
            tags["expected_response"].as_str().map(|s| s == "true"),
            tags["error_code"].as_str().and_then(|s| s.parse().ok()),
        );
    }
    Ok(asm.finish(path, Format::K6Json))
}

/// Whether `text` is a `--summary-export` file (legacy flat shape) or `handleSummary` data.
pub fn sniff_summary(head: &str) -> bool {
    let h = head.trim_start();
    h.starts_with('{') && (h.contains("\"root_group\"") || h.contains("\"metrics\"")) && !sniff_json(h.lines().next().unwrap_or(""))
}

/// Reads `--summary-export`: totals only, one interval spanning the run.
pub fn read_summary(path: &Path, text: &str) -> Result<Source> {
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| FormatError::malformed(path, e.line() as u64, Some(e.column() as u64), e.to_string()))?;
    let m = &v["metrics"];
    // Legacy flat values, or handleSummary's { values: {...} }.
    let get = |metric: &str, field: &str| {
        let node = &m[metric];
        node[field].as_f64().or_else(|| node["values"][field].as_f64())
    };
    let count = get("http_reqs", "count")
        .ok_or_else(|| FormatError::malformed(path, 1, None, "no metrics.http_reqs.count: not a k6 summary with HTTP requests"))?;
    let rate = get("http_reqs", "rate").unwrap_or(0.0);
    // For http_req_failed, "passes" counts failed requests.
    let failed = get("http_req_failed", "passes").unwrap_or(0.0);
    let duration_s = if rate > 0.0 { count / rate } else { 0.0 };
    let tests = (count - failed).max(0.0) as u64;
    let waiting = get("http_req_waiting", "avg").unwrap_or(f64::NAN);
    let mut src = source(path, Format::K6Summary);
    src.series = Series {
        intervals: vec![Interval {
            period_s: duration_s,
            tests,
            errors: failed as u64,
            tps: if duration_s > 0.0 { tests as f64 / duration_s } else { 0.0 },
            mttfb_ms: waiting,
            mean_test_time_ms: get("http_req_duration", "avg").unwrap_or(0.0),
            vusers: get("vus_max", "max").or_else(|| get("vus_max", "value")).unwrap_or(0.0),
            ..Default::default()
        }],
    };
    let trend = |metric: &str| {
        ["avg", "min", "med", "p(90)", "p(95)", "max"]
            .iter()
            .filter_map(|f| get(metric, f).map(|v| format!("{f} {v:.2}")))
            .collect::<Vec<_>>()
            .join(", ")
    };
    src.notes.push("k6 summary: totals only, one interval spanning the run; interval percentiles and per-request percentiles are not available from this file.".to_string());
    src.notes.push(format!("k6's own http_req_duration (ms): {}", trend("http_req_duration")));
    src.notes.push(format!("k6's own http_req_waiting (ms, excludes connection set-up; shown as MTTFB): {}", trend("http_req_waiting")));
    Ok(src)
}
