//! Integration tests of the publish crate, in one binary: the working clone and pushes against real
//! bare repositories, the pull request flow against a GitHub stand-in speaking the real wire format,
//! body snapshots, the webhook.

mod auth;
mod clone;
mod escalations;
// Shared with the daemon's tests (crates/driftback/tests/support).
#[path = "../../../driftback/tests/support/git_host.rs"]
mod git_host;
mod github_server;
mod pull_requests;
mod push;
mod snapshots;
mod ssh;
#[path = "../../../driftback/tests/support/sshd.rs"]
#[allow(dead_code)]
mod sshd;
mod webhook;

use std::path::{Path, PathBuf};
use std::process::Command;

use driftback_publish::story::Story;

/// Run git in `dir`, panicking with its error output when it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=Teammate", "-c", "user.email=teammate@example.com", "-c", "init.defaultBranch=main"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim_end().to_string()
}

pub const MAIN_TF: &str =
    "resource \"aws_instance\" \"web\" {\n  ami           = \"ami-123\"\n  instance_type = \"t3.medium\"\n}\n";

/// A bare remote holding `main` with main.tf, and a clone of it to work in.
pub struct Setup {
    pub dir: tempfile::TempDir,
    pub remote: PathBuf,
    pub work: PathBuf,
}

impl Setup {
    pub fn create() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let remote = dir.path().join("remote.git");
        let seed = dir.path().join("seed");
        std::fs::create_dir_all(&seed).unwrap();
        git(dir.path(), &["init", "-q", "--bare", "-b", "main", remote.to_str().unwrap()]);
        git(&seed, &["init", "-q", "-b", "main"]);
        std::fs::write(seed.join("main.tf"), MAIN_TF).unwrap();
        git(&seed, &["add", "."]);
        git(&seed, &["commit", "-q", "-m", "init"]);
        git(&seed, &["push", "-q", remote.to_str().unwrap(), "main"]);
        let work = dir.path().join("work");
        git(dir.path(), &["clone", "-q", remote.to_str().unwrap(), work.to_str().unwrap()]);
        Setup { dir, remote, work }
    }

    pub fn remote_url(&self) -> String {
        self.remote.display().to_string()
    }

    /// Another clone that pushes a commit changing `file` to `content` on `branch` (which may be new
    /// there, starting from `start`).
    pub fn teammate_pushes(&self, branch: &str, start: &str, file: &str, content: &str) {
        let other = self.dir.path().join("teammate");
        if !other.exists() {
            git(self.dir.path(), &["clone", "-q", &self.remote_url(), other.to_str().unwrap()]);
        }
        git(&other, &["fetch", "-q", "origin"]);
        git(&other, &["checkout", "-q", "-B", branch, &format!("origin/{start}")]);
        std::fs::write(other.join(file), content).unwrap();
        git(&other, &["add", "."]);
        git(&other, &["commit", "-q", "-m", &format!("teammate edits {file}")]);
        git(&other, &["push", "-q", "origin", &format!("HEAD:refs/heads/{branch}")]);
    }

    /// The content of `file` at `rev` in the remote.
    pub fn remote_file(&self, rev: &str, file: &str) -> String {
        git(&self.remote, &["show", &format!("{rev}:{file}")])
    }
}

/// A story read from a committed fixture.
pub fn story(name: &str) -> Story {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots").join(format!("{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}
