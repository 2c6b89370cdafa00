//! `volley convert har|openapi|curl`: reads the input, hands it to `volley_convert`, writes
//! the scenario (a file or standard output) and says on standard error what was left out and
//! which environment variables to set.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use volley_convert::{Converted, HarOptions, OpenApiOptions};

use crate::args::ConvertCommand;

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
    };
    write(&converted, output)?;
    Ok(ExitCode::SUCCESS)
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
