//! Where the shared fixtures are: `../shared/fixtures` beside the clone (as CI lays it
//! out), or `VOLLEY_FIXTURES`.

use std::path::PathBuf;

/// The fixtures directory; panics with what to do when it is missing.
pub fn fixtures() -> PathBuf {
    let dir = std::env::var_os("VOLLEY_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures"));
    assert!(
        dir.is_dir(),
        "the shared fixtures are not at {}: clone volley beside `shared/` (as CI does) or set VOLLEY_FIXTURES to the fixtures directory",
        dir.display()
    );
    dir
}
