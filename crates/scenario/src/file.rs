//! Reading a scenario file, reporting every problem in one pass, each with its line and
//! column and what to write instead.
//!
//! Three layers, each collecting all it finds before the next runs on what was usable:
//! [`yaml`] reads the text into a tree of positioned values (syntax, duplicate keys, limits),
//! [`shape`] walks the tree into the raw model (unknown keys, wrong types, missing keys),
//! [`compile`] builds the [`Scenario`] (templates, queries, durations, variables defined
//! before use, feeder columns, URLs and headers that can never work).

use std::path::Path;

use crate::Scenario;
use crate::error::{Error, Problem};

mod compile;
mod shape;
mod yaml;

pub(crate) use crate::suggest::suggest;
pub use crate::template::MAX_TEMPLATES;
pub use compile::MAX_STEPS;
pub use yaml::{MAX_DEPTH, MAX_FILE_BYTES, MAX_NODES, MAX_TEXT_BYTES};

/// Line and column (1-based) of a value in the file; `At(0, 0)` when it has none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct At(pub u64, pub u64);

/// A value and where it is.
#[derive(Debug, Clone)]
pub(crate) struct S<T> {
    pub value: T,
    pub at: At,
}

/// Reads and validates the scenario at `path`, its `env.NAME`s from this process's
/// environment.
pub fn load_scenario(path: &Path) -> Result<Scenario, Error> {
    load_scenario_with(path, &|name| std::env::var(name).ok())
}

/// Reads and validates the scenario at `path`, its `env.NAME`s from `env` (a run planned
/// here and run elsewhere, such as the pods of `volley k8s manifest`, has them there).
pub fn load_scenario_with(
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Scenario, Error> {
    let one = |line, message: String| {
        Error::scenario(vec![Problem {
            file: path.to_path_buf(),
            line,
            column: u64::from(line > 0),
            message,
        }])
    };
    if std::fs::metadata(path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
        return Err(one(
            0,
            "no such file: give the path of a scenario file (examples/ has some)".into(),
        ));
    }
    // Refused before reading, so that a huge file is never held in memory.
    if let Ok(meta) = std::fs::metadata(path)
        && meta.len() > MAX_FILE_BYTES as u64
    {
        return Err(one(
            1,
            format!(
                "the file is {} bytes; scenario files are limited to {} MiB — split it, or use `repeat` and groups instead of copies",
                meta.len(),
                MAX_FILE_BYTES >> 20
            ),
        ));
    }
    let bytes = crate::limits::read_bounded(path, MAX_FILE_BYTES as u64).map_err(|e| one(0, e))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let before = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = before.iter().filter(|b| **b == b'\n').count() as u64 + 1;
        one(line, "the file is not UTF-8 text: save it as UTF-8".into())
    })?;
    parse_scenario(path, &text, env)
}

/// Parses and validates scenario text; `path` names it in errors and anchors relative
/// data files; `env` looks up environment variables.
pub fn parse_scenario(
    path: &Path,
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Scenario, Error> {
    let errors = |problems: Vec<(At, String)>| {
        let mut list: Vec<Problem> = problems
            .into_iter()
            .map(|(At(line, column), message)| Problem {
                file: path.to_path_buf(),
                line,
                column,
                message,
            })
            .collect();
        // File order; problems without a place last.
        list.sort_by_key(|e| (e.line == 0, e.line, e.column));
        // The parts every population shares are checked once per population: said once.
        let mut seen = std::collections::HashSet::new();
        list.retain(|e| seen.insert((e.line, e.column, e.message.clone())));
        Error::scenario(list)
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text
        .lines()
        .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#') || l.trim() == "---")
    {
        let message =
            "the file is empty: a scenario needs at least `target` and `steps` (see examples/)"
                .to_string();
        return Err(errors(vec![(At(1, 1), message)]));
    }
    let (tree, mut problems) = yaml::parse(text);
    let Some(tree) = tree else {
        return Err(errors(problems));
    };
    let mut shape = shape::Shape::default();
    let raw = shape.scenario(&tree);
    drop(tree);
    problems.append(&mut shape.problems);
    let Some(raw) = raw else {
        return Err(errors(problems));
    };
    let mut c = compile::Compiler::new(path.to_path_buf());
    let scenario = c.scenario(raw, env);
    problems.append(&mut c.errors);
    if problems.is_empty() {
        Ok(scenario)
    } else {
        Err(errors(problems))
    }
}

#[cfg(test)]
mod tests;
