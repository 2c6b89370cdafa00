//! The Prometheus / OpenMetrics text format, as servers really write it: `# HELP` and
//! `# TYPE` lines, label values with escapes and with `}` `,` `=` inside quotes, Spring
//! Boot 2's trailing comma before `}`, `NaN` and `±Inf`, exponents, optional timestamps,
//! histogram and summary series, and OpenMetrics' `# EOF`.
//!
//! Parsing never fails as a whole: a malformed line is reported with its number and
//! skipped, because a scrape that half-works is still worth recording. A page that is no
//! exposition at all (HTML, JSON) is told apart by [`not_exposition`].

use std::collections::HashMap;

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Metric name, suffix included (`_total`, `_bucket`, `_count`, `_sum`).
    pub name: String,
    /// Labels in the order written.
    pub labels: Vec<(String, String)>,
    /// The value.
    pub value: f64,
    /// Timestamp as written (ms in the Prometheus format, seconds in OpenMetrics).
    pub timestamp: Option<f64>,
}

/// What `# TYPE` declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricType {
    /// Only goes up (rates are meaningful).
    Counter,
    /// Goes up and down.
    Gauge,
    /// `_bucket` / `_sum` / `_count` series.
    Histogram,
    /// Quantiles plus `_sum` / `_count`.
    Summary,
    /// Anything else or undeclared.
    Untyped,
}

/// A parsed exposition.
#[derive(Debug, Clone, Default)]
pub struct Exposition {
    /// Every sample, in order.
    pub samples: Vec<Sample>,
    /// Declared types by family name.
    pub types: HashMap<String, MetricType>,
    /// Malformed lines: (1-based line number, what was wrong). They are skipped.
    pub errors: Vec<(usize, String)>,
}

impl Exposition {
    /// The type of the family a sample belongs to (suffixes resolved).
    pub fn type_of(&self, sample_name: &str) -> MetricType {
        type_of(sample_name, |f| self.types.get(f).copied())
    }

    /// Whether a sample is cumulative (a counter, or a histogram's or summary's count, sum
    /// or bucket), so that its rate per second is what means something.
    pub fn is_cumulative(&self, sample_name: &str) -> bool {
        is_cumulative(sample_name, self.type_of(sample_name))
    }
}

/// Parses exposition text, keeping every sample (tests and small pages; the scraper reads
/// with a [`Reader`], which holds one sample at a time).
pub fn parse(text: &str) -> Exposition {
    let mut reader = Reader::new(text);
    let mut out = Exposition::default();
    for item in reader.by_ref() {
        match item {
            Ok(s) => out.samples.push(s),
            Err(e) => out.errors.push(e),
        }
    }
    out.types = reader.types;
    out
}

/// Most `# TYPE` declarations a [`Reader`] remembers. Beyond them it still knows the type of
/// the family declared last, which is the family of the samples that follow: the format
/// writes a family's `# TYPE` line before its samples, all in one group.
pub const MAX_TYPES: usize = 50_000;

/// Reads an exposition one sample at a time, with the types declared so far: its memory
/// is that of one line and at most [`MAX_TYPES`] family names, whatever the page holds.
pub struct Reader<'a> {
    lines: std::iter::Enumerate<std::str::Lines<'a>>,
    types: HashMap<String, MetricType>,
    /// The family declared last, when [`MAX_TYPES`] were already remembered.
    last: Option<(String, MetricType)>,
    done: bool,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `text`.
    pub fn new(text: &'a str) -> Reader<'a> {
        Reader {
            lines: text.lines().enumerate(),
            types: HashMap::new(),
            last: None,
            done: false,
        }
    }

    fn declared(&self, family: &str) -> Option<MetricType> {
        self.types.get(family).copied().or_else(|| {
            self.last
                .as_ref()
                .filter(|(name, _)| name == family)
                .map(|(_, t)| *t)
        })
    }

    /// The type of the family a sample belongs to (suffixes resolved), as declared so far.
    pub fn type_of(&self, sample_name: &str) -> MetricType {
        type_of(sample_name, |f| self.declared(f))
    }

    /// Whether a sample is cumulative ([`Exposition::is_cumulative`]), as declared so far.
    pub fn is_cumulative(&self, sample_name: &str) -> bool {
        is_cumulative(sample_name, self.type_of(sample_name))
    }

    fn declare(&mut self, name: &str, t: MetricType) {
        if self.types.len() < MAX_TYPES || self.types.contains_key(name) {
            self.types.insert(name.to_string(), t);
        } else {
            self.last = Some((name.to_string(), t));
        }
    }
}

impl Iterator for Reader<'_> {
    /// A sample, or a malformed line: (1-based line number, what was wrong).
    type Item = Result<Sample, (usize, String)>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let (i, raw) = self.lines.next()?;
            let line = raw.trim();
            if line.is_empty() {
                continue;
            }
            if let Some(comment) = line.strip_prefix('#') {
                let mut words = comment.split_whitespace();
                match words.next() {
                    Some("EOF") => self.done = true,
                    Some("TYPE") => {
                        if let (Some(name), Some(kind)) = (words.next(), words.next()) {
                            let t = match kind {
                                "counter" => MetricType::Counter,
                                "gauge" => MetricType::Gauge,
                                "histogram" | "gaugehistogram" => MetricType::Histogram,
                                "summary" => MetricType::Summary,
                                _ => MetricType::Untyped,
                            };
                            self.declare(name, t);
                        }
                    }
                    _ => {}
                }
                continue;
            }
            return Some(parse_sample(line).map_err(|e| (i + 1, e)));
        }
        None
    }
}

/// The type of `sample_name`'s family, from what `declared` knows (suffixes resolved).
fn type_of(sample_name: &str, declared: impl Fn(&str) -> Option<MetricType>) -> MetricType {
    if let Some(t) = declared(sample_name) {
        return t;
    }
    for suffix in [
        "_total", "_created", "_bucket", "_count", "_sum", "_gcount", "_gsum",
    ] {
        if let Some(family) = sample_name.strip_suffix(suffix)
            && let Some(t) = declared(family)
        {
            return t;
        }
    }
    MetricType::Untyped
}

fn is_cumulative(sample_name: &str, t: MetricType) -> bool {
    match t {
        MetricType::Counter => !sample_name.ends_with("_created"),
        MetricType::Histogram | MetricType::Summary => ["_count", "_sum", "_bucket"]
            .iter()
            .any(|s| sample_name.ends_with(s)),
        _ => false,
    }
}

/// Why `text` is no Prometheus text at all, judged on its first characters: an HTML or XML
/// page (a login page, an error page, the application's home page), or JSON (Spring Boot's
/// `/actuator/metrics` rather than `/actuator/prometheus`). `None` when it may be.
pub fn not_exposition(text: &str) -> Option<String> {
    let start = text.trim_start_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
    let what = match start.chars().next()? {
        '<' => "HTML or XML",
        '{' | '[' => "JSON",
        _ => return None,
    };
    let shown: String = start.chars().take_while(|c| *c != '\n').take(40).collect();
    Some(format!(
        "the page is {what}, not Prometheus text (it starts `{shown}`); point --server-metrics at the Prometheus endpoint (Spring Boot: /actuator/prometheus, node_exporter: /metrics)"
    ))
}

fn is_name_char(c: char, first: bool) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':' || (!first && c.is_ascii_digit())
}

fn parse_sample(line: &str) -> Result<Sample, String> {
    let name_end = line
        .char_indices()
        .find(|&(i, c)| !is_name_char(c, i == 0))
        .map_or(line.len(), |(i, _)| i);
    if name_end == 0 {
        return Err(format!(
            "expected a metric name at `{}`",
            line.chars().take(20).collect::<String>()
        ));
    }
    let name = &line[..name_end];
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(after) = rest.strip_prefix('{') {
        let (parsed, remaining) = parse_labels(after)?;
        labels = parsed;
        rest = remaining;
    }
    let mut fields = rest.split_whitespace();
    let value_text = fields.next().ok_or("missing value")?;
    let value = parse_value(value_text).ok_or_else(|| format!("`{value_text}` is not a number"))?;
    let timestamp = match fields.next() {
        Some(t) => Some(
            t.parse::<f64>()
                .map_err(|_| format!("`{t}` is not a timestamp"))?,
        ),
        None => None,
    };
    Ok(Sample {
        name: name.to_string(),
        labels,
        value,
        timestamp,
    })
}

/// A series' labels, name and value, in the order written.
type Labels = Vec<(String, String)>;

/// Parses `name="value",...}` and returns the labels and what follows the `}`.
fn parse_labels(mut s: &str) -> Result<(Labels, &str), String> {
    let mut labels = Vec::new();
    loop {
        s = s.trim_start();
        if let Some(rest) = s.strip_prefix('}') {
            return Ok((labels, rest));
        }
        let eq = s.find('=').ok_or("expected `label=\"value\"`")?;
        let name = s[..eq].trim();
        if name.is_empty()
            || !name
                .chars()
                .enumerate()
                .all(|(i, c)| is_name_char(c, i == 0) && c != ':')
        {
            return Err(format!("bad label name `{name}`"));
        }
        s = s[eq + 1..].trim_start();
        let body = s
            .strip_prefix('"')
            .ok_or("expected `\"` to open a label value")?;
        let mut value = String::new();
        let mut chars = body.char_indices();
        let end = loop {
            match chars.next() {
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, c)) => value.push(c),
                    None => return Err("unterminated escape in a label value".into()),
                },
                Some((i, '"')) => break i,
                Some((_, c)) => value.push(c),
                None => return Err("unterminated label value".into()),
            }
        };
        labels.push((name.to_string(), value));
        s = body[end + 1..].trim_start();
        if let Some(rest) = s.strip_prefix(',') {
            s = rest; // a trailing comma before `}` is allowed (Spring Boot 2 writes one)
        } else if !s.starts_with('}') {
            return Err("expected `,` or `}` after a label".into());
        }
    }
}

fn parse_value(s: &str) -> Option<f64> {
    match s {
        "NaN" | "nan" => Some(f64::NAN),
        "+Inf" | "Inf" | "+inf" | "inf" => Some(f64::INFINITY),
        "-Inf" | "-inf" => Some(f64::NEG_INFINITY),
        _ => s.parse().ok(),
    }
}

/// Escapes a label value the way an exposition writes it (for tests and round trips).
pub fn escape_label_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    escape_into(&mut out, v);
    out
}

/// Appends `v` to `out`, escaped as in [`escape_label_value`].
pub fn escape_into(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spring_style_lines() {
        let text = "# HELP jvm_memory_used_bytes The amount of used memory\n# TYPE jvm_memory_used_bytes gauge\n\
jvm_memory_used_bytes{area=\"heap\",id=\"G1 Eden Space\",} 1.2E7\n\
# TYPE http_server_requests_seconds histogram\n\
http_server_requests_seconds_bucket{uri=\"/owners/{ownerId}\",le=\"+Inf\",} 3.0\n\
http_server_requests_seconds_count{uri=\"/owners/{ownerId}\",} 3\n";
        let e = parse(text);
        assert!(e.errors.is_empty(), "{:?}", e.errors);
        assert_eq!(
            e.samples[0].labels,
            vec![
                ("area".into(), "heap".into()),
                ("id".into(), "G1 Eden Space".into())
            ]
        );
        assert_eq!(e.samples[0].value, 1.2e7);
        assert_eq!(e.samples[1].labels[0].1, "/owners/{ownerId}");
        assert_eq!(
            e.type_of("http_server_requests_seconds_count"),
            MetricType::Histogram
        );
        assert!(e.is_cumulative("http_server_requests_seconds_count"));
        assert!(!e.is_cumulative("jvm_memory_used_bytes"));
    }

    #[test]
    fn escapes_specials_and_timestamps() {
        let e = parse(
            "m{path=\"a\\\"b\\\\c\\nd}e,f=g\"} NaN 1700000000000\nup +Inf\ndown -Inf\n# TYPE c counter\nc_total 5\nc_created 1.7e9\n# EOF\nafter 1\n",
        );
        assert!(e.errors.is_empty(), "{:?}", e.errors);
        assert_eq!(e.samples[0].labels[0].1, "a\"b\\c\nd}e,f=g");
        assert!(e.samples[0].value.is_nan());
        assert_eq!(e.samples[0].timestamp, Some(1.7e12));
        assert_eq!(e.samples[1].value, f64::INFINITY);
        assert_eq!(e.samples[2].value, f64::NEG_INFINITY);
        assert!(e.is_cumulative("c_total"));
        assert!(!e.is_cumulative("c_created"));
        assert_eq!(e.samples.len(), 5, "nothing after # EOF");
    }

    #[test]
    fn malformed_lines_are_reported_and_skipped() {
        let e = parse("ok 1\n{bad} 2\nx{a=\"unterminated} 3\ny{a=\"1\"} notanumber\nz 4\n");
        assert_eq!(
            e.samples
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>(),
            vec!["ok", "z"]
        );
        assert_eq!(
            e.errors.iter().map(|(l, _)| *l).collect::<Vec<_>>(),
            vec![2, 3, 4]
        );
    }

    /// A small deterministic generator, so the property tests need no extra crate.
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }
    }

    #[test]
    fn any_label_value_round_trips_through_escaping() {
        let alphabet: Vec<char> = "ab \"\\\n}{,=#é한".chars().collect();
        let mut rng = Lcg(7);
        for _ in 0..2000 {
            let len = (rng.next() % 12) as usize;
            let value: String = (0..len)
                .map(|_| alphabet[(rng.next() as usize) % alphabet.len()])
                .collect();
            let line = format!("m{{k=\"{}\",other=\"x\",}} 1", escape_label_value(&value));
            let e = parse(&line);
            assert!(e.errors.is_empty(), "{line:?}: {:?}", e.errors);
            assert_eq!(e.samples[0].labels[0].1, value, "{line:?}");
        }
    }

    #[test]
    fn arbitrary_input_never_panics() {
        let alphabet: Vec<char> = "m{}=\",\\# \n0.5eE+-InfNa_:x".chars().collect();
        let mut rng = Lcg(11);
        for _ in 0..5000 {
            let len = (rng.next() % 40) as usize;
            let text: String = (0..len)
                .map(|_| alphabet[(rng.next() as usize) % alphabet.len()])
                .collect();
            let e = parse(&text);
            assert!(e.samples.len() + e.errors.len() <= text.lines().count());
        }
    }
}
