//! Opening any result: a volley run directory or a peer tool's file, its format detected
//! from the content (or forced), handed to its reader. It sits above both [`crate::source`]
//! and the importers, so neither imports the other.

use std::io::BufRead;
use std::path::Path;

use crate::error::{Error, Result};
use crate::import;
use crate::note::{Figure, InputNote, Place};
use crate::rundir::RunData;
use crate::source::{Format, READABLE, Source};

/// Whether `head` opens a JMeter XML result file (`<?xml …?>` then `<testResults`).
fn is_xml_jtl(head: &str) -> bool {
    let t = head.trim_start_matches('\u{feff}').trim_start();
    let t = match t.strip_prefix("<?xml") {
        Some(rest) => rest.split_once("?>").map_or("", |(_, r)| r).trim_start(),
        None => t,
    };
    t.starts_with("<testResults")
}

/// Opens a run directory or a result file, detecting the format from the content.
pub fn open(path: &Path) -> Result<Source> {
    open_as(path, None)
}

/// Opens `path` as `format`, or as what its content looks like when `format` is `None`.
pub fn open_as(path: &Path, format: Option<Format>) -> Result<Source> {
    if path
        .symlink_metadata()
        .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
    {
        return Err(Error::unrecognised(path.to_path_buf(), "no such file or directory; give a run directory (`volley runs` lists those under runs/) or a result file: volley reads nGrinder, k6, JMeter, Locust and Gatling results".to_string()));
    }
    if path.is_dir() || format == Some(Format::Volley) {
        if !RunData::is_run_dir(path) {
            return Err(Error::unrecognised(
                path.to_path_buf(),
                format!(
                    "not a volley run directory (no run.json and series.csv); volley reads {READABLE}"
                ),
            ));
        }
        return Ok(Source::from_run(RunData::read(path)?));
    }
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
    let head = reader.fill_buf().map_err(|e| Error::io(path, e))?.to_vec();
    let head_text = String::from_utf8_lossy(&head);
    let first_line = head_text
        .trim_start_matches('\u{feff}')
        .lines()
        .next()
        .unwrap_or("")
        .trim_end_matches('\r')
        .to_string();
    // JMeter's XML results: read as neither format (nor as a CSV JTL when forced), so named.
    if matches!(format, None | Some(Format::Jtl)) && is_xml_jtl(&head_text) {
        return Err(Error::unrecognised(path.to_path_buf(), "a JMeter result file in XML (<testResults>); volley reads JTL files in CSV, JMeter's default: run the test again with `-Jjmeter.save.saveservice.output_format=csv` (or that line in user.properties), or save this file as CSV in JMeter's GUI (a listener's Configure, or the Simple Data Writer)".to_string()));
    }
    let format = match format.or_else(|| detect(&head_text, &first_line)) {
        Some(f) => f,
        None if import::gatling::sniff_binary(&head) => Format::GatlingBinary,
        None => {
            return Err(Error::unrecognised(
                path.to_path_buf(),
                format!("not a format volley reads; it reads {READABLE} (force one with --from)"),
            ));
        }
    };
    // A text file whose last line has no line end was cut off while it was being written:
    // the reader stops before that line, and the report says so.
    let line_based = !matches!(format, Format::K6Summary | Format::GatlingBinary);
    let cut = if line_based { cut_offset(path)? } else { None };
    // What the reader missed may be in the line left out.
    let explained = |e: Error| {
        match cut {
        Some(_) => e.noted(
            "(the file's last line has no line end: it was cut off while it was being written and is left out)",
        ),
        None => e,
    }
    };
    // A large file is read in parts on every core; one pass when it cannot be.
    if let Some(limit) = parallel(path, format, cut)? {
        let read = match format {
            Format::Jtl => import::jmeter::read_parts(path, limit, &first_line, PART_BYTES),
            Format::K6Csv => import::k6::read_csv_parts(path, limit, PART_BYTES),
            Format::K6Json => import::k6::read_json_parts(path, limit, PART_BYTES),
            Format::Ngrinder => crate::ngrinder::read_parts(path, limit, PART_BYTES)
                .map(|read| read.map(|(file, lines)| (ngrinder_source(path, file), lines))),
            _ => Ok(None),
        }
        .map_err(explained)?;
        if let Some((mut src, lines)) = read {
            if cut.is_some() {
                let file = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                src.input_notes.push(InputNote::CutOff {
                    file,
                    at: Place::Line(lines + 1),
                });
            }
            return Ok(src);
        }
    }
    let newlines = std::cell::Cell::new(0u64);
    let counted = CountNewlines {
        inner: std::io::Read::take(reader, cut.unwrap_or(u64::MAX)),
        newlines: &newlines,
    };
    let reader = std::io::BufReader::with_capacity(1 << 16, counted);
    let mut src = read_as(path, format, reader, &first_line).map_err(explained)?;
    if cut.is_some() {
        let file = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        src.input_notes.push(InputNote::CutOff {
            file,
            at: Place::Line(newlines.get() + 1),
        });
    }
    Ok(src)
}

/// Reads a file of `format` (not a run directory) from `reader`.
fn read_as(
    path: &Path,
    format: Format,
    mut reader: impl std::io::BufRead,
    first_line: &str,
) -> Result<Source> {
    let mut read_all = || -> Result<String> {
        let mut s = String::new();
        reader
            .read_to_string(&mut s)
            .map_err(|e| Error::io(path, e))?;
        Ok(s)
    };
    Ok(match format {
        Format::Volley => unreachable!("run directories are opened by open_as"),
        Format::Ngrinder => ngrinder_source(path, crate::ngrinder::read_from(path, &mut reader)?),
        Format::K6Summary => import::k6::read_summary(path, &read_all()?)?,
        Format::LocustHistory => import::locust::read_history(path, &read_all()?)?,
        Format::LocustStats => import::locust::read_stats(path, &read_all()?)?,
        Format::GatlingBinary => {
            let mut bytes = Vec::new();
            reader
                .read_to_end(&mut bytes)
                .map_err(|e| Error::io(path, e))?;
            import::gatling::read_binary(path, &bytes)?
        }
        Format::K6Csv => import::k6::read_csv(path, reader)?,
        Format::K6Json => import::k6::read_json(path, reader)?,
        Format::Jtl => import::jmeter::read(path, reader, first_line)?,
        Format::Gatling => import::gatling::read_text(path, reader)?,
    })
}

/// The source an nGrinder file gives.
fn ngrinder_source(path: &Path, file: crate::ngrinder::NgrinderFile) -> Source {
    let mut src = import::source(path, Format::Ngrinder);
    if !file.has_ttfb {
        src.input_notes.push(InputNote::Unavailable {
            figure: Figure::Ttfb,
            why: "this file has no Mean_time_to_first_byte column (a script without nGrinder's HTTP plugin), so MTTFB is unknown.".to_string(),
        });
    }
    src.series = file.total;
    src.per_test = file.tests;
    src.input_notes.extend(file.notes);
    src
}

/// Bytes per part when a file is read in parts.
const PART_BYTES: u64 = 1 << 20;
/// Files smaller than this are read in one pass (threads would cost more than they save).
const PARALLEL_FROM: u64 = 16 << 20;

/// Where the records of `path` end when it is to be read in parts (large, of a format
/// read that way); `None` to read it in one pass.
fn parallel(path: &Path, format: Format, cut: Option<u64>) -> Result<Option<u64>> {
    // VOLLEY_IMPORT_ONE_PASS=1 reads every file in one pass (for benchmarks and bisecting).
    if !matches!(
        format,
        Format::Jtl | Format::K6Csv | Format::K6Json | Format::Ngrinder
    ) || std::env::var_os("VOLLEY_IMPORT_ONE_PASS").is_some()
    {
        return Ok(None);
    }
    let len = std::fs::metadata(path)
        .map_err(|e| Error::io(path, e))?
        .len();
    let limit = cut.unwrap_or(len);
    Ok((limit >= PARALLEL_FROM).then_some(limit))
}

/// Counts the line ends that pass through.
struct CountNewlines<'a, R> {
    inner: R,
    newlines: &'a std::cell::Cell<u64>,
}

impl<R: std::io::Read> std::io::Read for CountNewlines<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.newlines
            .set(self.newlines.get() + memchr::memchr_iter(b'\n', &buf[..n]).count() as u64);
        Ok(n)
    }
}

/// Where the last line of the file at `path` starts, when it has no line end (and is not
/// the file's only line, nor blank): the file was cut off there. Reads the file backwards
/// from its end, so a file of any size costs only its last line.
fn cut_offset(path: &Path) -> Result<Option<u64>> {
    use std::io::{Read, Seek, SeekFrom};
    const CHUNK: u64 = 1 << 16;
    let io = |e| Error::io(path, e);
    let mut f = std::fs::File::open(path).map_err(io)?;
    let len = f.metadata().map_err(io)?.len();
    let (mut end, mut blank) = (len, true);
    let mut buf = Vec::new();
    while end > 0 {
        let start = end.saturating_sub(CHUNK);
        buf.resize((end - start) as usize, 0);
        f.seek(SeekFrom::Start(start)).map_err(io)?;
        f.read_exact(&mut buf).map_err(io)?;
        if end == len && buf.last() == Some(&b'\n') {
            return Ok(None);
        }
        match buf.iter().rposition(|&b| b == b'\n') {
            Some(p) => {
                blank &= buf[p + 1..].iter().all(u8::is_ascii_whitespace);
                return Ok((!blank).then_some(start + p as u64 + 1));
            }
            None => blank &= buf.iter().all(u8::is_ascii_whitespace),
        }
        end = start;
    }
    Ok(None)
}

/// The format a file's first bytes look like.
fn detect(head_text: &str, first_line: &str) -> Option<Format> {
    [
        (crate::ngrinder::sniff(first_line), Format::Ngrinder),
        (import::k6::sniff_csv(first_line), Format::K6Csv),
        (import::k6::sniff_json(first_line), Format::K6Json),
        (import::jmeter::sniff(first_line), Format::Jtl),
        (
            import::locust::sniff_history(first_line),
            Format::LocustHistory,
        ),
        (import::locust::sniff_stats(first_line), Format::LocustStats),
        (import::gatling::sniff_text(first_line), Format::Gatling),
        (import::k6::sniff_summary(head_text), Format::K6Summary),
    ]
    .into_iter()
    .find_map(|(yes, f)| yes.then_some(f))
}
