//! JMeter JTL in CSV form (default columns, with or without the header line).
//!
//! Redirects and embedded resources are written as sub-result rows (`label-0`,
//! `label-1`) right after their parent; they are part of the parent's sample and are not
//! counted again. `Latency` is JMeter's time to first byte (connection set-up included).

use std::path::Path;

use volley_stats::ErrorKind;

use crate::bucket::{Bucketer, RequestRecord};
use crate::error::{Error, Result};
use crate::import::parts::{self, How, Outcome, Parts, Plan};
use crate::import::rows::{self, Dialect, Fields};
use crate::import::{BUCKET_S, MAX_DURATION_MS, bad_duration, bad_stamp, source};
use crate::note::{Figure, InputNote, Locator, NoteBook, Unit};
use crate::source::{Format, Source};

/// JMeter's default CSV columns, in order.
const DEFAULT_COLUMNS: [&str; 17] = [
    "timeStamp",
    "elapsed",
    "label",
    "responseCode",
    "responseMessage",
    "threadName",
    "dataType",
    "success",
    "failureMessage",
    "bytes",
    "sentBytes",
    "grpThreads",
    "allThreads",
    "URL",
    "Latency",
    "IdleTime",
    "Connect",
];

/// How a Transaction Controller's own sample's `responseMessage` starts (JMeter's
/// `TransactionController`: "Number of samples in transaction : 2, number of failing
/// samples : 0").
const TRANSACTION_MESSAGE: &str = "Number of samples in transaction";

/// Whether the first line is a JTL CSV header, or a headerless row of the default columns.
pub fn sniff(first_line: &str) -> bool {
    if first_line.starts_with("timeStamp,elapsed,")
        || first_line.starts_with("timeStamp\telapsed\t")
    {
        return true;
    }
    let f: Vec<&str> = first_line.split(',').collect();
    f.len() >= 16
        && f[0].len() == 13
        && f[0].parse::<u64>().is_ok()
        && f[1].parse::<u64>().is_ok()
        && (f[7] == "true" || f[7] == "false")
}

/// Volley's kind for a failed sample.
fn classify(code: &str, message: &str) -> ErrorKind {
    if let Ok(status) = code.parse::<u16>() {
        // A failed sample with a success code failed an assertion.
        return if status >= 400 {
            ErrorKind::Status
        } else {
            ErrorKind::Check
        };
    }
    let text = format!("{code} {message}");
    if text.contains("Timeout") || text.contains("timed out") {
        ErrorKind::Timeout
    } else if text.contains("ConnectException")
        || text.contains("refused")
        || text.contains("UnknownHost")
        || text.contains("NoRouteToHost")
    {
        ErrorKind::Connect
    } else if text.contains("SSL") || text.contains("TLS") {
        ErrorKind::Tls
    } else if text.contains("reset")
        || text.contains("NoHttpResponse")
        || text.contains("SocketException")
    {
        ErrorKind::Reset
    } else {
        ErrorKind::Protocol
    }
}

/// A field read as a whole number.
enum Whole {
    /// A whole number.
    Ok(i64),
    /// A number, but not one a count or time can be: NaN, infinite, fractional.
    Odd(&'static str),
    /// Not a number.
    Garbage,
}

#[inline]
fn whole(s: &[u8]) -> Whole {
    // Most fields are a few plain digits.
    match crate::num::whole(s) {
        Some(n) => Whole::Ok(n as i64),
        None => odd_whole(s),
    }
}

/// [`whole`] of anything but plain digits.
#[cold]
#[inline(never)]
fn odd_whole(s: &[u8]) -> Whole {
    let Ok(s) = std::str::from_utf8(s) else {
        return Whole::Garbage;
    };
    if let Ok(n) = s.parse::<i64>() {
        return Whole::Ok(n);
    }
    match s.parse::<f64>() {
        Ok(v) if v.is_nan() => Whole::Odd("NaN"),
        Ok(v) if v.is_infinite() => Whole::Odd("infinite"),
        Ok(_) => Whole::Odd("not a whole number"),
        Err(_) => Whole::Garbage,
    }
}

/// A whole-number field that `check` accepts: the value, or why the row is skipped; `None`
/// for garbage, an error. (Generic over `check` so that the range test is inlined.)
#[inline]
fn whole_field(
    raw: &[u8],
    name: &str,
    check: impl Fn(f64) -> Option<&'static str>,
) -> Option<std::result::Result<i64, String>> {
    match whole(raw) {
        Whole::Ok(v) => {
            Some(check(v as f64).map_or(Ok(v), |why| Err(format!("`{name}` is {why}"))))
        }
        Whole::Odd(why) => Some(Err(format!("`{name}` is {why}"))),
        Whole::Garbage => None,
    }
}

/// A `timeStamp` written as a date: `yyyy/MM/dd HH:mm:ss` or `yyyy-MM-dd HH:mm:ss` (or
/// `T` between), with optional `.S` to `.SSS`, as milliseconds since 1970 read as UTC; `None`
/// for anything else. JMeter formats with Java's date patterns, whose `S` is the millisecond
/// count padded to the pattern's width, not a decimal fraction: `.1` is 1 ms, `.001` too.
fn date_ms(s: &[u8]) -> Option<i64> {
    if s.len() < 19 || !matches!(s[10], b' ' | b'T') {
        return None;
    }
    let mut civil = [0u8; 19];
    civil.copy_from_slice(&s[..19]);
    if civil[4] == b'/' && civil[7] == b'/' {
        (civil[4], civil[7]) = (b'-', b'-');
    }
    let seconds = volley_text::civil::seconds(&civil, s[10])?;
    let millis = match &s[19..] {
        [] => 0,
        [b'.', ms @ ..] if !ms.is_empty() && ms.len() <= 3 && ms.iter().all(u8::is_ascii_digit) => {
            ms.iter().fold(0, |v, d| v * 10 + i64::from(d - b'0'))
        }
        _ => return None,
    };
    Some(seconds * 1000 + millis)
}

/// An optional count, column `c`: empty is unknown; anything but a whole number ≥ 0 is
/// unknown too, and said so in `book`.
#[inline(always)]
fn count(
    f: &Fields<'_>,
    c: Option<usize>,
    columns: &[String],
    book: &mut NoteBook,
    line: u64,
    effect: &str,
) -> Option<u64> {
    let c = c?;
    let raw = f.bytes(c);
    match crate::num::whole(raw) {
        Some(v) => Some(v),
        None if raw.is_empty() => None,
        None => odd_count(book, line, &columns[c], raw, effect),
    }
}

/// An optional count that is not plain digits (nor empty, which is unknown): a whole number
/// ≥ 0, or unknown, said so in `book`.
#[cold]
#[inline(never)]
fn odd_count(
    book: &mut NoteBook,
    line: u64,
    column: &str,
    raw: &[u8],
    effect: &str,
) -> Option<u64> {
    match whole(raw) {
        Whole::Ok(v) if v >= 0 => Some(v as u64),
        Whole::Ok(_) => {
            book.used(Unit::Row, line, &format!("a negative `{column}`: {effect}"));
            None
        }
        Whole::Odd(why) => {
            book.used(Unit::Row, line, &format!("`{column}` is {why}: {effect}"));
            None
        }
        Whole::Garbage => {
            book.used(
                Unit::Row,
                line,
                &format!("`{column}` is not a number: {effect}"),
            );
            None
        }
    }
}

/// An HTTP status code, as `str::parse::<u16>` reads it.
#[inline]
fn status(code: &[u8]) -> Option<u16> {
    match crate::num::whole(code) {
        Some(n) => u16::try_from(n).ok(),
        None => odd_status(code),
    }
}

/// [`status`] of anything but plain digits.
#[cold]
#[inline(never)]
fn odd_status(code: &[u8]) -> Option<u16> {
    std::str::from_utf8(code).ok()?.parse().ok()
}

/// Where the columns are, from the header (or JMeter's default columns).
struct Layout {
    delimiter: u8,
    has_header: bool,
    columns: Vec<String>,
    ts_c: usize,
    elapsed_c: usize,
    label_c: usize,
    code_c: usize,
    msg_c: Option<usize>,
    thread_c: Option<usize>,
    success_c: usize,
    bytes_c: Option<usize>,
    latency_c: Option<usize>,
    connect_c: Option<usize>,
    threads_c: Option<usize>,
    url_c: Option<usize>,
    data_type_c: Option<usize>,
    /// Fields a row needs at least.
    needed: usize,
}

impl Layout {
    fn new(path: &Path, first_line: &str, header: Option<Vec<String>>) -> Result<Layout> {
        let delimiter = delimiter_of(first_line);
        let has_header = header.is_some();
        let columns: Vec<String> =
            header.unwrap_or_else(|| DEFAULT_COLUMNS.iter().map(|s| s.to_string()).collect());
        let col = |name: &str| columns.iter().position(|c| c == name);
        let need = |name: &str| {
            col(name).ok_or_else(|| {
                Error::malformed(path, 1, None, format!("JTL header has no `{name}` column"))
            })
        };
        let (ts_c, elapsed_c, label_c, code_c, success_c) = (
            need("timeStamp")?,
            need("elapsed")?,
            need("label")?,
            need("responseCode")?,
            need("success")?,
        );
        Ok(Layout {
            delimiter,
            has_header,
            ts_c,
            elapsed_c,
            label_c,
            code_c,
            msg_c: col("responseMessage"),
            thread_c: col("threadName"),
            success_c,
            bytes_c: col("bytes"),
            latency_c: col("Latency"),
            connect_c: col("Connect"),
            threads_c: col("allThreads"),
            url_c: col("URL"),
            data_type_c: col("dataType"),
            needed: [ts_c, elapsed_c, label_c, code_c, success_c]
                .into_iter()
                .max()
                .unwrap_or(0)
                + 1,
            columns,
        })
    }
}

/// The last parent sample of a thread: (label, start, end).
type Parent = (String, i64, i64);

/// The last parent sample of each thread, by thread name.
type Parents = std::collections::HashMap<Vec<u8>, Parent, rustc_hash::FxBuildHasher>;

/// Labels, each with a count and the first line it was counted at.
type LabelRows = std::collections::HashMap<String, (u64, u64), rustc_hash::FxBuildHasher>;

/// Whether a row could be a Transaction Controller's own sample written without its
/// message: JMeter writes one with an empty `responseMessage` when the thread stops inside
/// the controller. A controller's sample has no URL (`null`) and no `dataType`, unlike any
/// HTTP sample; which labels are controllers, the rows with the message say.
fn may_be_stopped_transaction(l: &Layout, f: &Fields<'_>) -> bool {
    match (l.msg_c, l.url_c, l.data_type_c) {
        (Some(m), Some(u), Some(d)) => {
            f.get(m) == Some("") && f.get(u) == Some("null") && f.get(d) == Some("")
        }
        _ => false,
    }
}

/// Whether `label` is a sub-result of `parent` (`label-N`, started within its time).
fn is_sub(label: &str, start: i64, parent: &Parent) -> bool {
    let (p_label, p_start, p_end) = parent;
    // The cheap tests first: most rows are no sub-result, and most labels are not longer
    // than their thread's last one by a `-N`.
    let (l, p) = (label.as_bytes(), p_label.as_bytes());
    l.len() > p.len() + 1
        && l[p.len()] == b'-'
        && l[p.len() + 1..].iter().all(u8::is_ascii_digit)
        && l.starts_with(p)
        && start >= *p_start
        && start <= *p_end
}

/// Whether some parent could make `label` a sub-result (it ends in `-N`).
fn may_be_sub(label: &str) -> bool {
    label
        .rsplit_once('-')
        .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// What the rows read so far hold: the whole file's, or a part's.
struct State {
    bucketer: Bucketer,
    book: NoteBook,
    parents: Parents,
    sub_results: u64,
    /// Transaction-controller rows left out (their samples have rows of their own).
    transactions: u64,
    /// The labels of those rows.
    transaction_labels: std::collections::HashSet<String, rustc_hash::FxBuildHasher>,
    /// Rows of a thread stopped inside a Transaction Controller (no message, no URL, no
    /// `dataType`, the label of a controller row before them), left out too.
    stopped: u64,
    /// Rows that look like those but whose label no controller row had before them: counted
    /// (a sampler without URL or message, such as a JSR223 one, looks the same), by label.
    unconfirmed: LabelRows,
    /// Whether time stamps were dates (`timestamp_format`), not epoch milliseconds.
    dated: bool,
    rows: u64,
    /// Read ahead of the parts before: the first row of each thread that a parent before the
    /// part could have made a sub-result was counted as a parent: (thread, label, start).
    guessing: bool,
    assumed: Vec<(Vec<u8>, String, i64)>,
}

impl State {
    fn new(bucketer: Bucketer, parents: Parents, guessing: bool) -> State {
        State {
            bucketer,
            book: NoteBook::new(Locator::Line),
            parents,
            sub_results: 0,
            transactions: 0,
            transaction_labels: Default::default(),
            stopped: 0,
            unconfirmed: Default::default(),
            dated: false,
            rows: 0,
            guessing,
            assumed: Vec::new(),
        }
    }

    /// Reads one row at `line`.
    fn row(&mut self, path: &Path, l: &Layout, f: &Fields<'_>, line: u64) -> Result<()> {
        let columns = &l.columns;
        if f.len() == 1 && f.bytes(0).is_empty() {
            return Ok(());
        }
        if f.len() < l.needed || (l.has_header && f.len() < columns.len()) {
            return Err(Error::malformed(
                path,
                line,
                Some(f.len() as u64 + 1),
                format!(
                    "truncated row: {} fields, the header has {}",
                    f.len(),
                    columns.len()
                ),
            ));
        }
        if l.has_header && f.len() > columns.len() {
            return Err(Error::malformed(
                path,
                line,
                Some(columns.len() as u64 + 1),
                format!(
                    "{} fields, the header has {} (an unquoted separator in a label or message?)",
                    f.len(),
                    columns.len()
                ),
            ));
        }
        let garbage = |c: usize| {
            Error::malformed(
                path,
                line,
                Some(c as u64 + 1),
                format!(
                    "`{}`: expected a whole number, found `{}`",
                    columns[c],
                    f.at(c)
                ),
            )
        };
        let ts = f.bytes(l.ts_c);
        let stamp = whole_field(ts, "timeStamp", bad_stamp).or_else(|| {
            // `jmeter.save.saveservice.timestamp_format` writes dates, as JMeter's own
            // dashboard reads them.
            let ms = date_ms(ts)?;
            self.dated = true;
            Some(Ok(ms))
        });
        let start = match stamp.ok_or_else(|| garbage(l.ts_c))? {
            Ok(t) => t,
            Err(why) => {
                self.book.skip(Unit::Row, line, &why);
                return Ok(());
            }
        };
        let elapsed = match whole_field(f.bytes(l.elapsed_c), "elapsed", bad_duration)
            .ok_or_else(|| garbage(l.elapsed_c))?
        {
            Ok(e) => e,
            Err(why) => {
                self.book.skip(Unit::Row, line, &why);
                return Ok(());
            }
        };
        let ok = match f.bytes(l.success_c) {
            b"true" => true,
            b"false" => false,
            _ => {
                let other = f.at(l.success_c);
                return Err(Error::malformed(
                    path,
                    line,
                    Some(l.success_c as u64 + 1),
                    format!("`success`: expected true or false, found `{other}`"),
                ));
            }
        };
        // A Transaction Controller's own row (generateParentSample off) sums the samples it
        // ran, which have rows of their own: counting it too doubled requests and errors.
        if l.msg_c
            .is_some_and(|c| f.bytes(c).starts_with(TRANSACTION_MESSAGE.as_bytes()))
        {
            self.transactions += 1;
            let label = f.at(l.label_c);
            if !self.transaction_labels.contains(label) {
                self.transaction_labels.insert(label.to_string());
            }
            return Ok(());
        }
        let label = f.at(l.label_c);
        if may_be_stopped_transaction(l, f) {
            if self.transaction_labels.contains(label) {
                self.stopped += 1;
                return Ok(());
            }
            self.unconfirmed
                .entry(label.to_string())
                .or_insert((0, line))
                .0 += 1;
        }
        let thread = match l.thread_c {
            Some(c) => f.bytes(c),
            None => &[],
        };
        match self.parents.get_mut(thread) {
            Some(parent) => {
                if is_sub(label, start, parent) {
                    self.sub_results += 1;
                    return Ok(());
                }
                if !crate::bucket::same_name(&parent.0, label) {
                    parent.0.clear();
                    parent.0.push_str(label);
                }
                (parent.1, parent.2) = (start, start + elapsed);
            }
            None => {
                if self.guessing && may_be_sub(label) {
                    self.assumed
                        .push((thread.to_vec(), label.to_string(), start));
                }
                self.parents
                    .insert(thread.to_vec(), (label.to_string(), start, start + elapsed));
            }
        }
        const NO_TTFB: &str = "TTFB unknown; counted as requests and in total time, not in TTFB.";
        let book = &mut self.book;
        let latency = count(f, l.latency_c, columns, book, line, NO_TTFB);
        let connect = count(
            f,
            l.connect_c,
            columns,
            book,
            line,
            "connection time counted as 0.",
        );
        let bytes = count(
            f,
            l.bytes_c,
            columns,
            book,
            line,
            "response size counted as 0.",
        );
        let threads = count(
            f,
            l.threads_c,
            columns,
            book,
            line,
            "the VUs of the interval come from the other rows.",
        );
        if ok
            && latency.is_none()
            && l.latency_c
                .is_some_and(|c| c < f.len() && f.bytes(c).is_empty())
        {
            self.book
                .used(Unit::Row, line, &format!("no `Latency`: {NO_TTFB}"));
        }
        self.rows += 1;
        let code = f.bytes(l.code_c);
        let record_of = RequestRecord {
            start_ms: start as f64,
            ttfb_us: latency.map(|l| l.min(MAX_DURATION_MS as u64) * 1000),
            total_us: elapsed as u64 * 1000,
            connect_us: connect.unwrap_or(0).min(MAX_DURATION_MS as u64) * 1000,
            bytes: bytes.unwrap_or(0).min(1 << 40),
            error: (!ok)
                .then(|| classify(f.at(l.code_c), l.msg_c.and_then(|c| f.get(c)).unwrap_or(""))),
            status: status(code),
            vusers: threads.map(|v| v as f64),
            place: line,
            end_ms: None,
        };
        self.bucketer.add_labelled(&record_of, label);
        Ok(())
    }

    /// The source these rows make.
    fn finish(self, path: &Path, l: &Layout) -> Source {
        let State {
            bucketer,
            book,
            sub_results,
            transactions,
            transaction_labels,
            stopped,
            unconfirmed,
            dated,
            rows,
            ..
        } = self;
        let mut src = source(path, Format::Jtl);
        let missing = bucketer.ttfb_missing();
        let out = bucketer.finish();
        let successes = out.series.tests();
        out.into_source(&mut src);
        src.notes.push(format!(
            "{rows} JMeter samples bucketed by start second; {sub_results} sub-result rows (redirects, embedded resources) are part of their parent samples and not counted again. TTFB = JMeter's Latency."
        ));
        if dated {
            src.notes.push("Time stamps are dates (JMeter's jmeter.save.saveservice.timestamp_format) with no time zone: read as UTC, so the times shown are JMeter's local clock.".to_string());
        }
        if transactions > 0 {
            src.notes.push(format!(
                "{transactions} Transaction Controller rows (\"{TRANSACTION_MESSAGE} …\") are left out: each sums samples that have rows of their own, so counting it too would count them twice."
            ));
        }
        if stopped > 0 {
            src.notes.push(format!(
                "{stopped} more Transaction Controller rows are left out: written with an empty responseMessage when a thread stopped inside the controller, known by their label (a controller's), no URL (`null`) and no dataType."
            ));
        }
        let mut late: Vec<(&String, &(u64, u64))> = unconfirmed
            .iter()
            .filter(|(label, _)| transaction_labels.contains(*label))
            .collect();
        if !late.is_empty() {
            late.sort_by_key(|(_, (_, line))| *line);
            let n: u64 = late.iter().map(|(_, (n, _))| n).sum();
            let (label, (_, line)) = late[0];
            src.notes.push(format!(
                "{n} rows with no responseMessage, URL or dataType (the first at line {line}, `{label}`) are counted, though a later Transaction Controller row has their label: a thread stopped inside the controller before it ever completed, or a sampler named like it."
            ));
        }
        src.input_notes.splice(0..0, book.into_notes());
        if l.latency_c.is_none() && successes > 0 {
            src.input_notes.push(InputNote::Unavailable {
                figure: Figure::Ttfb,
                why: "this JTL has no `Latency` column (JMeter's time to first byte, saved when jmeter.save.saveservice.latency is true), so TTFB and MTTFB are unknown.".to_string(),
            });
        } else if missing > 0 && missing == successes {
            src.input_notes.push(InputNote::Unavailable {
                figure: Figure::Ttfb,
                why: "no successful sample of this JTL has a `Latency` value (JMeter's time to first byte), so TTFB and MTTFB are unknown.".to_string(),
            });
        }
        src
    }
}

/// The header's columns from its line (without its line end): split at `delimiter`, or
/// read by the csv reader when quoted.
fn header_of(path: &Path, line: &[u8], delimiter: u8) -> Result<Vec<String>> {
    let line = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut csv = csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .has_headers(false)
        .flexible(true)
        .from_reader(line);
    let mut record = csv::StringRecord::new();
    csv.read_record(&mut record)
        .map_err(|e| Error::malformed(path, 1, None, e.to_string()))?;
    Ok(record.iter().map(str::to_string).collect())
}

/// The delimiter a JTL whose first line is `first_line` uses.
fn delimiter_of(first_line: &str) -> u8 {
    if first_line.starts_with("timeStamp\t") {
        b'\t'
    } else {
        b','
    }
}

/// Reads a JTL CSV in one pass (the same rows, read the same way, as [`read_parts`]).
pub fn read(path: &Path, reader: impl std::io::Read, first_line: &str) -> Result<Source> {
    let mut reader = std::io::BufReader::new(reader);
    let has_header = first_line.starts_with("timeStamp");
    let mut header = None;
    if has_header {
        let mut line = Vec::new();
        std::io::BufRead::read_until(&mut reader, b'\n', &mut line)
            .map_err(|e| Error::io(path, e))?;
        header = Some(header_of(
            path,
            line.strip_suffix(b"\n").unwrap_or(&line),
            delimiter_of(first_line),
        )?);
    }
    let layout = Layout::new(path, first_line, header)?;
    let mut acc = State::new(Bucketer::new(BUCKET_S), Parents::default(), false);
    rows::stream(
        path,
        reader,
        Dialect::csv(layout.delimiter),
        1 + u64::from(has_header),
        |f, line| acc.row(path, &layout, f, line),
    )?;
    Ok(acc.finish(path, &layout))
}

/// Reads the JTL at `path` (its records end at `limit`) in parts of `part` bytes on every
/// core, exactly as [`read`] does in one pass. Returns the source and the line ends read;
/// `None` when it must be read in one pass instead (the file could not be read apart).
pub fn read_parts(
    path: &Path,
    limit: u64,
    first_line: &str,
    part: u64,
) -> Result<Option<(Source, u64)>> {
    let (file, head) = parts::head(path, limit)?;
    let has_header = first_line.starts_with("timeStamp");
    let (header, start) = if has_header {
        let Some(end) = memchr::memchr(b'\n', &head) else {
            return Ok(None);
        };
        (
            Some(header_of(path, &head[..end], delimiter_of(first_line))?),
            end as u64 + 1,
        )
    } else {
        (None, 0)
    };
    let layout = Layout::new(path, first_line, header)?;
    let jtl = Jtl {
        path,
        layout: &layout,
    };
    let mut acc = State::new(Bucketer::new(BUCKET_S), Parents::default(), false);
    let lines = parts::read(
        &file,
        Plan::new(start, limit, part),
        &jtl,
        &mut acc,
        u64::from(has_header),
    )?;
    Ok(lines.map(|lines| (acc.finish(path, &layout), lines)))
}

/// A JTL read in parts.
struct Jtl<'a> {
    path: &'a Path,
    layout: &'a Layout,
}

impl Parts for Jtl<'_> {
    type Acc = State;
    type Seed = f64;
    type Part = State;

    fn read(
        &self,
        buf: &[u8],
        own: usize,
        at_end: bool,
        how: How<'_, f64, State>,
    ) -> Outcome<State> {
        let l = self.layout;
        let mut state = match how {
            How::Guess(&origin) => State::new(
                Bucketer::part(BUCKET_S, Locator::Line, Some(origin), None),
                Parents::default(),
                true,
            ),
            How::After(acc) => {
                let mut state = State::new(
                    Bucketer::part(
                        BUCKET_S,
                        Locator::Line,
                        acc.bucketer.origin_ms(),
                        acc.bucketer.newest(),
                    ),
                    acc.parents.clone(),
                    false,
                );
                state.transaction_labels.clone_from(&acc.transaction_labels);
                state
            }
        };
        match rows::records(
            self.path,
            buf,
            own,
            at_end,
            Dialect::csv(l.delimiter),
            |f, line| state.row(self.path, l, f, line),
        ) {
            Ok(Some((consumed, newlines))) => {
                state.bucketer.seal();
                Outcome::Read {
                    part: state,
                    consumed,
                    newlines,
                }
            }
            Ok(None) => Outcome::NeedMore,
            Err(e) => Outcome::Failed(e),
        }
    }

    fn seed(&self, acc: &State) -> Option<f64> {
        acc.bucketer.origin_ms()
    }

    fn exact(&self, part: &State, acc: &State) -> bool {
        part.bucketer.exact_after(acc.bucketer.newest())
            && part
                .unconfirmed
                .keys()
                .all(|label| !acc.transaction_labels.contains(label))
            && part.assumed.iter().all(|(thread, label, start)| {
                !acc.parents
                    .get(thread)
                    .is_some_and(|p| is_sub(label, *start, p))
            })
    }

    fn absorb(&self, acc: &mut State, part: State, line_base: u64) {
        acc.bucketer.absorb(part.bucketer, line_base);
        acc.book.absorb(part.book, line_base);
        acc.parents.extend(part.parents);
        acc.sub_results += part.sub_results;
        acc.transactions += part.transactions;
        acc.transaction_labels.extend(part.transaction_labels);
        acc.stopped += part.stopped;
        for (label, (n, line)) in part.unconfirmed {
            let e = acc
                .unconfirmed
                .entry(label)
                .or_insert((0, line + line_base));
            e.0 += n;
        }
        acc.dated |= part.dated;
        acc.rows += part.rows;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dated_time_stamps_are_read_as_jmeter_writes_them() {
        // 2026-11-26 22:30:01.123 UTC.
        let ms = 1_795_732_201_123;
        assert_eq!(date_ms(b"2026/11/26 22:30:01.123"), Some(ms));
        assert_eq!(date_ms(b"2026-11-26T22:30:01.123"), Some(ms));
        assert_eq!(date_ms(b"2026/11/26 22:30:01.1"), Some(ms - 122));
        assert_eq!(date_ms(b"2026/11/26 22:30:01.001"), Some(ms - 122));
        assert_eq!(date_ms(b"2026/11/26 22:30:01"), Some(ms - 123));
        for bad in [
            &b"2026/11/26 22:30"[..],
            b"2026/13/26 22:30:01",
            b"2026/11/26 22:30:01.1234",
            b"1795732201123",
        ] {
            assert_eq!(date_ms(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn failed_samples_are_classified() {
        assert_eq!(classify("500", "Internal Server Error"), ErrorKind::Status);
        assert_eq!(
            classify("200", "OK"),
            ErrorKind::Check,
            "a success code on a failed sample is a failed assertion"
        );
        assert_eq!(
            classify(
                "Non HTTP response code: java.net.SocketTimeoutException",
                "Read timed out"
            ),
            ErrorKind::Timeout
        );
    }
}
