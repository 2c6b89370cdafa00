//! The `volley` binary: turns flags into a validated configuration and hands it to the
//! library crates. Exit codes: 0 ok, 1 the run or gate failed (thresholds, no request succeeded, aborted, regressions), 2 usage or input error.

mod advice;
mod args;
mod capacity_cmd;
mod check_cmd;
mod ci;
mod convert_cmd;
mod demo_cmd;
mod examples_cmd;
mod gate_cmd;
mod k8s_cmd;
mod knob_flags;
mod live_cmd;
mod load_flags;
mod merge_cmd;
mod progress;
mod prom_target;
mod report_cmd;
mod resolve;
mod run_cmd;
mod runs_cmd;
mod scalability_cmd;
mod segment_flags;
mod signals;
mod sweep_cmd;
mod values;

use std::process::ExitCode;

use crate::args::Command;

/// Exit code for usage or input errors.
const EXIT_INPUT: u8 = 2;

fn main() -> ExitCode {
    quiet_on_closed_pipe();
    let cli = match args::parse_from(std::env::args_os()) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { EXIT_INPUT } else { 0 });
        }
    };
    let result = match cli.command {
        Command::Run(a) => run_cmd::run(*a),
        Command::Check(a) => check_cmd::check(a),
        Command::Report(a) => report_cmd::report(a),
        Command::Compare(a) => report_cmd::compare(a),
        Command::Demo(a) => demo_cmd::demo(a),
        Command::Sweep(a) => sweep_cmd::sweep(a),
        Command::Capacity(a) => capacity_cmd::capacity(*a),
        Command::Scalability(a) => scalability_cmd::scalability(a),
        Command::Merge(a) => merge_cmd::merge(a),
        Command::Runs(a) => runs_cmd::runs(a),
        Command::K8s { command } => k8s_cmd::k8s(command),
        Command::Convert { command } => convert_cmd::convert(command),
        Command::Examples { dir } => examples_cmd::examples(&dir),
        Command::Target {
            command: args::TargetCommand::Serve(a),
        } => demo_cmd::serve(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("volley: error: {}", error_text(&e));
            if let Some(advice) = advice::advice(&e) {
                eprintln!("volley: hint: {advice}");
            }
            ExitCode::from(EXIT_INPUT)
        }
    }
}

/// An error and its causes, each said once: a cause whose text an outer message already
/// holds is left out (libraries such as object_store both print their source and return
/// it as `source()`, so `{:#}` would repeat the chain at every level).
pub(crate) fn error_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let said = cause.to_string();
        if said.is_empty() || text.contains(&said) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&said);
    }
    text
}

/// `volley report run | head` closes our standard output early: end quietly, as Unix tools
/// do, instead of printing a panic (Rust ignores SIGPIPE, so the write fails instead).
fn quiet_on_closed_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .unwrap_or_default();
        if text.starts_with("failed printing to stdout") && text.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that prints its source and also returns it, as object_store's do.
    #[derive(Debug)]
    struct Wraps(&'static str, Option<Box<Wraps>>);

    impl std::fmt::Display for Wraps {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            match &self.1 {
                Some(inner) => write!(f, "{}: {inner}", self.0),
                None => f.write_str(self.0),
            }
        }
    }

    impl std::error::Error for Wraps {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|e| e as _)
        }
    }

    #[test]
    fn each_cause_is_said_once() {
        let inner = Wraps(
            "Generic S3 error",
            Some(Box::new(Wraps(
                "Error performing list request",
                Some(Box::new(Wraps("Connection refused (os error 111)", None))),
            ))),
        );
        let e = anyhow::Error::new(inner).context("listing s3://bucket/p/run1");
        assert_eq!(
            error_text(&e),
            "listing s3://bucket/p/run1: Generic S3 error: Error performing list request: Connection refused (os error 111)"
        );
        // Causes that are not in the message are added, as `{:#}` does.
        let e = anyhow::anyhow!("reading x").context("volley check");
        assert_eq!(error_text(&e), "volley check: reading x");
    }
}
