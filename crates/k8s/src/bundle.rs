//! The files a plan needs in the pod — the scenario and the CSV feeders it reads — with the
//! paths they keep under [`crate::PLAN_DIR`], so the scenario's relative `file:` names still
//! resolve there. They travel in one ConfigMap, which Kubernetes caps at 1 MiB.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use crate::{Error, Repr};

/// The most the plan's files may hold in all: a ConfigMap is limited to 1 MiB, and its
/// keys and the object's own fields need some room.
pub const MAX_PLAN_BYTES: usize = 1_000_000;

/// One file of the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanFile {
    /// The ConfigMap key (`[-._a-zA-Z0-9]+`, unique).
    pub key: String,
    /// The path under [`crate::PLAN_DIR`], `/`-separated, relative.
    pub path: String,
    /// The bytes.
    pub contents: Vec<u8>,
}

/// Reads the scenario at `scenario` and the data files it reads (`data`, as the scenario
/// crate resolved them: the scenario's directory joined with each `file:`). Each keeps its
/// path relative to the scenario's directory; a file outside that directory is refused, as
/// the pod could not find it under the name the scenario gives.
pub fn bundle(scenario: &Path, data: &[PathBuf]) -> Result<Vec<PlanFile>, Error> {
    let dir = scenario.parent().unwrap_or(Path::new(""));
    let mut files: Vec<PlanFile> = Vec::new();
    let mut keys = BTreeSet::new();
    let mut seen = BTreeSet::new();
    let mut total = 0usize;
    for path in std::iter::once(scenario).chain(data.iter().map(PathBuf::as_path)) {
        let rel = relative(dir, path).ok_or_else(|| {
            Repr::Invalid(format!(
                "data file {} is not in the scenario's directory {} or a folder under it: the pod gets that directory as {}, so the file could not be found there; move it beside the scenario and name it relative to the scenario (`file: users.csv`)",
                path.display(),
                if dir.as_os_str().is_empty() { ".".to_string() } else { dir.display().to_string() },
                crate::PLAN_DIR
            ))
        })?;
        if !seen.insert(rel.clone()) {
            continue;
        }
        let contents = std::fs::read(path).map_err(|error| Repr::Read {
            path: path.to_path_buf(),
            error,
        })?;
        total += contents.len();
        let key = unique_key(&rel, &mut keys);
        files.push(PlanFile {
            key,
            path: rel,
            contents,
        });
    }
    if total > MAX_PLAN_BYTES {
        let sizes: Vec<String> = files
            .iter()
            .map(|f| format!("{} ({} bytes)", f.path, f.contents.len()))
            .collect();
        return Err(Repr::Invalid(format!(
            "the plan's files hold {total} bytes, more than the {MAX_PLAN_BYTES} a ConfigMap can carry: {}; use a smaller data file, or build an image with the data in it",
            sizes.join(", ")
        )).into());
    }
    Ok(files)
}

/// `path` relative to `dir`, `/`-separated, when it is inside it (no `..`, not absolute).
fn relative(dir: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(dir).ok()?;
    let parts: Option<Vec<&str>> = rel
        .components()
        .map(|c| match c {
            Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect();
    let parts = parts?;
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// A ConfigMap key for `rel`: its characters outside `[-._a-zA-Z0-9]` as `-` (`/` as `.`),
/// numbered when two files would share one.
fn unique_key(rel: &str, taken: &mut BTreeSet<String>) -> String {
    let base: String = rel
        .chars()
        .map(|c| match c {
            '/' => '.',
            c if c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_') => c,
            _ => '-',
        })
        .collect();
    let base = if base.chars().all(|c| c == '.') {
        format!("file{base}")
    } else {
        base
    };
    let mut key = base.clone();
    let mut n = 2;
    while !taken.insert(key.clone()) {
        key = format!("{base}-{n}");
        n += 1;
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_paths_relative_to_the_scenario() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("data")).unwrap();
        std::fs::write(dir.path().join("flow.yaml"), "name: x\n").unwrap();
        std::fs::write(dir.path().join("data/users.csv"), "email\na@b\n").unwrap();
        std::fs::write(dir.path().join("data.users.csv"), "id\n1\n").unwrap();
        let data = [
            dir.path().join("data/users.csv"),
            dir.path().join("data.users.csv"),
            dir.path().join("data/users.csv"),
        ];
        let files = bundle(&dir.path().join("flow.yaml"), &data).unwrap();
        let got: Vec<(&str, &str)> = files
            .iter()
            .map(|f| (f.key.as_str(), f.path.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("flow.yaml", "flow.yaml"),
                ("data.users.csv", "data/users.csv"),
                ("data.users.csv-2", "data.users.csv")
            ]
        );
        assert_eq!(files[1].contents, b"email\na@b\n");
    }

    #[test]
    fn refuses_files_outside_and_too_much() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("s")).unwrap();
        std::fs::write(dir.path().join("s/flow.yaml"), "x").unwrap();
        std::fs::write(dir.path().join("outside.csv"), "a\n1\n").unwrap();
        let e = bundle(
            &dir.path().join("s/flow.yaml"),
            &[dir.path().join("s/../outside.csv")],
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("not in the scenario's directory")
                && e.contains("move it beside the scenario"),
            "{e}"
        );
        std::fs::write(dir.path().join("s/big.csv"), vec![b'x'; MAX_PLAN_BYTES]).unwrap();
        let e = bundle(
            &dir.path().join("s/flow.yaml"),
            &[dir.path().join("s/big.csv")],
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("more than the 1000000 a ConfigMap can carry")
                && e.contains("big.csv (1000000 bytes)"),
            "{e}"
        );
    }
}
