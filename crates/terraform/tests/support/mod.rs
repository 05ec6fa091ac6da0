//! What the terraform crate's integration tests share: the developers' corpus projects.

use std::path::{Path, PathBuf};

/// Every project folder of `tests/corpus/projects`, sorted.
pub fn corpus_projects() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/projects");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    assert!(out.len() >= 5, "expected the corpus projects under {}", dir.display());
    out
}
