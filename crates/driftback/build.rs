//! The version `driftback --version` prints: the package version and the git revision it was built
//! from (`DRIFTBACK_GIT_REVISION` when set, as in the container build, else `git describe`).

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=DRIFTBACK_GIT_REVISION");
    println!("cargo:rerun-if-changed=../../.git/HEAD");
    println!("cargo:rerun-if-changed=../../.git/refs/heads");
    let revision = std::env::var("DRIFTBACK_GIT_REVISION").ok().filter(|r| !r.trim().is_empty()).or_else(|| {
        let out = Command::new("git").args(["describe", "--always", "--dirty", "--exclude", "*"]).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string()).filter(|r| !r.is_empty())
    });
    let version = match revision {
        Some(revision) => format!("{} ({revision})", env!("CARGO_PKG_VERSION")),
        None => env!("CARGO_PKG_VERSION").to_string(),
    };
    println!("cargo:rustc-env=DRIFTBACK_VERSION={version}");
}
