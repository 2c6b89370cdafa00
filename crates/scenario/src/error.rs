//! The crate's one error type, shaped as hyper's: an [`Error`] whose [`Kind`] the caller asks
//! about (`is_value()`, `is_scenario()`): a plan value that cannot be parsed, or a scenario
//! file with problems (every one, each with its line and column: [`Error::problems`]).

use std::path::PathBuf;

/// A plan value or a scenario file that cannot be used; the message says what was expected.
#[derive(Debug, Clone, PartialEq)]
pub struct Error(Repr);

/// What went wrong, for callers that branch on it.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A plan value (a duration, a rate, a header, a template, ...) that cannot be parsed.
    Value,
    /// A scenario file with problems, every one listed.
    Scenario,
}

#[derive(Debug, Clone, PartialEq)]
enum Repr {
    Value(String),
    Scenario(Vec<Problem>),
}

impl Error {
    /// A plan value that cannot be parsed: `message` says what was expected.
    pub(crate) fn value(message: String) -> Error {
        Error(Repr::Value(message))
    }

    /// The problems of a scenario file.
    pub(crate) fn scenario(problems: Vec<Problem>) -> Error {
        Error(Repr::Scenario(problems))
    }

    /// What went wrong.
    pub fn kind(&self) -> Kind {
        match &self.0 {
            Repr::Value(_) => Kind::Value,
            Repr::Scenario(_) => Kind::Scenario,
        }
    }

    /// A plan value that cannot be parsed.
    pub fn is_value(&self) -> bool {
        self.kind() == Kind::Value
    }

    /// A scenario file with problems.
    pub fn is_scenario(&self) -> bool {
        self.kind() == Kind::Scenario
    }

    /// Every problem of a scenario file (none for a plan value).
    pub fn problems(&self) -> &[Problem] {
        match &self.0 {
            Repr::Scenario(p) => p,
            Repr::Value(_) => &[],
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Repr::Value(message) => f.write_str(message),
            Repr::Scenario(problems) => {
                for (i, e) in problems.iter().enumerate() {
                    if i > 0 {
                        writeln!(f)?;
                    }
                    write!(f, "{e}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for Error {}

/// A plan value's message (for the callers that carry errors as text: a template's render).
impl From<String> for Error {
    fn from(message: String) -> Self {
        Error::value(message)
    }
}

impl From<Error> for String {
    fn from(e: Error) -> Self {
        e.to_string()
    }
}

impl PartialEq<&str> for Error {
    fn eq(&self, other: &&str) -> bool {
        match &self.0 {
            Repr::Value(message) => message == other,
            Repr::Scenario(_) => {
                let text = self.to_string();
                text == *other
            }
        }
    }
}

/// One problem in a scenario file, where it is and what to write instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file.
    pub file: PathBuf,
    /// 1-based line (0 when unknown).
    pub line: u64,
    /// 1-based column (0 when unknown).
    pub column: u64,
    /// What is wrong and what to write instead.
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Without a place in the file (it could not be read), the file alone.
        match (self.line, self.column) {
            (0, _) => write!(f, "{}: {}", self.file.display(), self.message),
            (line, 0) => write!(f, "{}:{line}: {}", self.file.display(), self.message),
            (line, column) => write!(
                f,
                "{}:{line}:{column}: {}",
                self.file.display(),
                self.message
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Kind;

    #[test]
    fn a_bad_value_and_a_bad_file_are_told_apart_by_kind() {
        let e = crate::parse_duration("5").unwrap_err();
        assert_eq!(e.kind(), Kind::Value, "{e}");
        assert!(e.is_value() && !e.is_scenario() && e.problems().is_empty());
        let e = crate::parse_scenario(
            std::path::Path::new("s.yaml"),
            "target: http://127.0.0.1:8080\nsteps:\n  - request: GET /\n    tiemout: 5s\n",
            &|_| None,
        )
        .unwrap_err();
        assert_eq!(e.kind(), Kind::Scenario, "{e}");
        assert!(e.is_scenario() && !e.is_value());
        let p = &e.problems()[0];
        assert_eq!((p.line, p.file.to_str()), (4, Some("s.yaml")), "{e}");
        assert!(e.to_string().starts_with("s.yaml:4:"), "{e}");
    }
}
