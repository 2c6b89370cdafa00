//! `volley examples DIR`: the example scenarios, shipped in the binary, written to a
//! directory, so that a user of the binary (who has no `examples/` of the repository) can run
//! them against `volley target serve`. Each file is written as it is in the repository; the
//! gRPC example names its `.proto` beside it.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, Result};

/// The shipped examples: (file name, contents), from the repository's `examples/`.
pub(crate) const FILES: [(&str, &str); 6] = [
    ("chat.yaml", include_str!("../../../examples/chat.yaml")),
    ("users.csv", include_str!("../../../examples/users.csv")),
    (
        "pair-room.yaml",
        include_str!("../../../examples/pair-room.yaml"),
    ),
    (
        "mixed-populations.yaml",
        include_str!("../../../examples/mixed-populations.yaml"),
    ),
    (
        "grpc-chat.yaml",
        include_str!("../../../examples/grpc-chat.yaml"),
    ),
    ("chat.proto", include_str!("../../../examples/chat.proto")),
];

/// Writes every example into `dir` (created if missing); refuses to overwrite a file there.
pub(crate) fn examples(dir: &Path) -> Result<ExitCode> {
    let taken: Vec<&str> = FILES
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| dir.join(name).exists())
        .collect();
    if !taken.is_empty() {
        eprintln!(
            "volley: examples: {} already holds {}; give a new or empty directory (nothing was written)",
            dir.display(),
            taken.join(", ")
        );
        return Ok(ExitCode::from(2));
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (name, text) in FILES {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    let d = dir.display();
    println!(
        "volley: wrote {} examples to {d}: {}",
        FILES.len(),
        FILES.map(|(n, _)| n).join(", ")
    );
    println!("volley: start the demo target    volley target serve &");
    println!("volley: check one iteration      volley check {d}/pair-room.yaml");
    println!("volley: run a flow               volley run {d}/chat.yaml");
    println!("volley: gRPC (chat.proto beside) volley run {d}/grpc-chat.yaml");
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    /// The shipped `.proto` is the one the demo target serves.
    #[test]
    fn the_shipped_proto_is_the_demo_targets() {
        assert_eq!(
            super::FILES
                .iter()
                .find(|(n, _)| *n == "chat.proto")
                .unwrap()
                .1,
            include_str!("../../demo/proto/chat.proto"),
            "examples/chat.proto differs from crates/demo/proto/chat.proto: copy it again"
        );
    }
}
