//! `volley convert har|openapi|curl|access-log`: reads the input, hands it to
//! `volley_convert`, writes the scenario (a file or standard output) and says on standard
//! error what was left out and which environment variables to set (and, for an access log,
//! its peaks and mix).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use volley_convert::{Converted, HarOptions, OpenApiOptions};

use crate::args::{ConvertAccessLogArgs, ConvertCommand};

pub(crate) fn convert(command: ConvertCommand) -> Result<ExitCode> {
    let invoked = volley_scenario::secret::mask_args(std::env::args().skip(1))
        .into_iter()
        .map(|a| if a.contains(' ') { format!("'{a}'") } else { a })
        .collect::<Vec<_>>()
        .join(" ");
    let invoked = format!("volley {invoked}");
    let (converted, output) = match command {
        ConvertCommand::Har(a) => {
            let text = read(&a.file)?;
            let mut keep = a.keep_headers.clone();
            if a.keep_user_agent {
                keep.push("User-Agent".into());
            }
            let name = a.file.file_stem().map(|s| s.to_string_lossy().into_owned());
            let opts = HarOptions {
                host: a.host,
                keep_static: a.keep_static,
                think_times: a.think_times,
                keep_headers: keep,
                name,
                command: invoked,
            };
            (
                volley_convert::har::convert(&text, &opts)
                    .with_context(|| a.file.display().to_string())?,
                a.output,
            )
        }
        ConvertCommand::Openapi(a) => {
            let text = read(&a.spec)?;
            let opts = OpenApiOptions {
                tags: a.tags,
                operations: a.operations,
                target: a.target,
                command: invoked,
            };
            (
                volley_convert::openapi::convert(&text, &opts)
                    .with_context(|| a.spec.display().to_string())?,
                a.output,
            )
        }
        // Not the command line: it may hold credentials.
        ConvertCommand::Curl(a) => (
            volley_convert::curl::convert(&a.command, "volley convert curl")?,
            a.output,
        ),
        ConvertCommand::AccessLog(a) => (access_log(&a, invoked)?, a.output),
    };
    write(&converted, output)?;
    Ok(ExitCode::SUCCESS)
}

/// Reads the logs one line at a time (each at most `MAX_LOG_BYTES`), says the peaks and the
/// mix, and returns the scenario.
fn access_log(a: &ConvertAccessLogArgs, invoked: String) -> Result<Converted> {
    use volley_convert::access_log::{MAX_LOG_BYTES, Tally};
    let mut tally = Tally::default();
    for path in &a.files {
        let source = path.display().to_string();
        if source == "-" {
            let stdin = std::io::stdin().lock();
            let mut bounded = std::io::Read::take(stdin, MAX_LOG_BYTES + 1);
            let reader = std::io::BufReader::with_capacity(1 << 16, &mut bounded);
            tally.read(reader, "standard input")?;
            if bounded.limit() == 0 {
                anyhow::bail!(
                    "standard input is larger than volley reads ({} GiB at most); give the day that holds the peak",
                    MAX_LOG_BYTES >> 30
                );
            }
        } else {
            let file = volley_scenario::limits::open_bounded(path, MAX_LOG_BYTES)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            tally.read(std::io::BufReader::with_capacity(1 << 16, file), &source)?;
        }
    }
    let name = a
        .files
        .first()
        .filter(|p| p.as_os_str() != "-")
        .and_then(|p| p.file_stem())
        .map(|s| s.to_string_lossy().into_owned());
    let opts = volley_convert::AccessLogOptions {
        target: a.target.clone(),
        max_endpoints: a.max_endpoints,
        name,
        command: invoked,
    };
    Ok(volley_convert::access_log::convert(&tally, &opts)?.converted)
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

fn write(c: &Converted, output: Option<PathBuf>) -> Result<()> {
    match &output {
        Some(path) => std::fs::write(path, &c.yaml)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => print!("{}", c.yaml),
    }
    for note in &c.notes {
        eprintln!("volley convert: {note}");
    }
    if !c.env.is_empty() {
        eprintln!(
            "volley convert: {} credential(s) moved out of the file into environment variables: {} (the file's header says what each stands for)",
            c.env.len(),
            c.env.join(", ")
        );
    }
    if let Some(path) = output {
        let env = c.env.iter().map(|e| format!("{e}=… ")).collect::<String>();
        eprintln!(
            "volley convert: wrote {}; next: {env}volley check {}",
            path.display(),
            path.display()
        );
    }
    Ok(())
}
