//! Helpers shared by the daemon's integration tests (`serve`, `backfill`): the demo project in a
//! bare git remote, and git run as a user would.
// Each test file compiles this module on its own and uses only part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The bundled demo (`crates/driftback/demo`).
pub fn demo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("demo")
}

/// Runs git in `dir` and returns its standard output; panics with git's error when it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A bare remote under `root` holding the demo project on `main`.
pub fn bare_remote(root: &Path) -> PathBuf {
    let src = root.join("src");
    std::fs::create_dir_all(&src).unwrap();
    for name in ["main.tf", "terraform.tfstate"] {
        std::fs::copy(demo_dir().join("project").join(name), src.join(name)).unwrap();
    }
    git(&src, &["init", "-q", "-b", "main"]);
    git(&src, &["add", "."]);
    git(&src, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init"]);
    let remote = root.join("remote.git");
    let out = Command::new("git").args(["clone", "-q", "--bare"]).arg(&src).arg(&remote).output().unwrap();
    assert!(out.status.success(), "git clone --bare: {}", String::from_utf8_lossy(&out.stderr));
    remote
}
