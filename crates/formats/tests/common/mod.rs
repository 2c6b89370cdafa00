//! Where the fixtures are: `fixtures/` at the root of the repository, or `VOLLEY_FIXTURES`.

use std::path::PathBuf;

/// The fixtures directory; panics with what to do when it is missing.
pub fn fixtures() -> PathBuf {
    let dir = std::env::var_os("VOLLEY_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures"));
    assert!(
        dir.is_dir(),
        "the fixtures are not at {}: they live in `fixtures/` at the root of the repository (or set VOLLEY_FIXTURES to a directory laid out the same way)",
        dir.display()
    );
    dir
}
