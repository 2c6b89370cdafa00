//! Opening any result: a volley run directory or a peer tool's file, its format detected
//! from the content (or forced), handed to its reader. It sits above both [`crate::source`]
//! and the importers, so neither imports the other.

use std::io::BufRead;
use std::path::Path;

use crate::error::{FormatError, Result};
use crate::import;
use crate::rundir::RunData;
use crate::source::{Format, READABLE, Source};

/// Opens a run directory or a result file, detecting the format from the content.
pub fn open(path: &Path) -> Result<Source> {
    open_as(path, None)
}

/// Opens `path` as `format`, or as what its content looks like when `format` is `None`.
pub fn open_as(path: &Path, format: Option<Format>) -> Result<Source> {
    if path.is_dir() || format == Some(Format::Volley) {
        if !RunData::is_run_dir(path) {
            return Err(FormatError::Unrecognised {
                path: path.to_path_buf(),
                message: format!("not a volley run directory (no run.json and series.csv); volley reads {READABLE}"),
            });
        }
        return Ok(Source::from_run(RunData::read(path)?));
    }
    let file = std::fs::File::open(path).map_err(|e| FormatError::io(path, e))?;
    let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
    let head = reader.fill_buf().map_err(|e| FormatError::io(path, e))?.to_vec();
    let head_text = String::from_utf8_lossy(&head);
    let first_line = head_text.trim_start_matches('\u{feff}').lines().next().unwrap_or("").trim_end_matches('\r').to_string();
    let format = match format.or_else(|| detect(&head_text, &first_line)) {
        Some(f) => f,
        None if import::gatling::sniff_binary(&head) => Format::GatlingBinary,
        None => {
            return Err(FormatError::Unrecognised {
                path: path.to_path_buf(),
                message: format!("not a format volley reads; it reads {READABLE} (force one with --from)"),
            });
        }
    };
    let read_all = |mut r: std::io::BufReader<std::fs::File>| -> Result<String> {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut r, &mut s).map_err(|e| FormatError::io(path, e))?;
        Ok(s)
    };
    match format {
        Format::Volley => unreachable!("handled above"),
        Format::Ngrinder => {
            let file = crate::ngrinder::parse(path, &read_all(reader)?)?;
            let mut src = import::source(path, Format::Ngrinder);
            if !file.has_ttfb {
                src.notes.push("This file has no Mean_time_to_first_byte column (a script without nGrinder's HTTP plugin): its MTTFB figures are 0 and mean nothing.".to_string());
            }
            src.series = file.total;
            src.per_test = file.tests;
            Ok(src)
        }
        Format::K6Csv => import::k6::read_csv(path, reader),
        Format::K6Json => import::k6::read_json(path, reader),
        Format::K6Summary => import::k6::read_summary(path, &read_all(reader)?),
        Format::Jtl => import::jmeter::read(path, reader, &first_line),
        Format::LocustHistory => import::locust::read_history(path, &read_all(reader)?),
        Format::LocustStats => import::locust::read_stats(path, &read_all(reader)?),
        Format::Gatling => import::gatling::read_text(path, reader),
        Format::GatlingBinary => {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut reader, &mut bytes).map_err(|e| FormatError::io(path, e))?;
            import::gatling::read_binary(path, &bytes)
        }
    }
}

/// The format a file's first bytes look like.
fn detect(head_text: &str, first_line: &str) -> Option<Format> {
    [
        (crate::ngrinder::sniff(first_line), Format::Ngrinder),
        (import::k6::sniff_csv(first_line), Format::K6Csv),
        (import::k6::sniff_json(first_line), Format::K6Json),
        (import::jmeter::sniff(first_line), Format::Jtl),
        (import::locust::sniff_history(first_line), Format::LocustHistory),
        (import::locust::sniff_stats(first_line), Format::LocustStats),
        (import::gatling::sniff_text(first_line), Format::Gatling),
        (import::k6::sniff_summary(head_text), Format::K6Summary),
    ]
    .into_iter()
    .find_map(|(yes, f)| yes.then_some(f))
}
