//! `driftback eval` on a corpus of the repository, with its results read back and checked for
//! consistency (the totals line, the JSON results and the `DANGER` lines agree). Shared by the
//! corpora's tests; include it with `#[path = "support/corpus.rs"] mod corpus;`.
// Each test file compiles this module on its own and uses only part of it.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_driftback");

/// What one `driftback eval` run said.
pub struct Run {
    pub passed: usize,
    pub failed: usize,
    /// Scenarios with at least one dangerous finding.
    pub dangerous: usize,
    pub results: Vec<Value>,
    /// Standard output, then standard error.
    pub output: String,
}

impl Run {
    /// The results with a dangerous finding.
    pub fn dangers(&self) -> Vec<&Value> {
        self.results.iter().filter(|r| r["dangerous"].as_array().is_some_and(|d| !d.is_empty())).collect()
    }

    /// The result of scenario `id`.
    pub fn result(&self, id: &str) -> Option<&Value> {
        self.results.iter().find(|r| r["id"] == id)
    }
}

/// The repository's folder `name` (`tests/corpus-records`).
pub fn corpus_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(name)
}

/// `driftback eval CORPUS --json FILE` with `args` after it and `envs` set.
pub fn eval_corpus<K: AsRef<OsStr>, V: AsRef<OsStr>>(name: &str, args: &[&str], envs: &[(K, V)]) -> Run {
    let json = tempfile::NamedTempFile::new().unwrap();
    let mut command = Command::new(BIN);
    command.arg("eval").arg(corpus_dir(name)).arg("--json").arg(json.path()).args(args);
    for (key, value) in envs {
        command.env(key, value);
    }
    let out = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let output = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let last = stdout.lines().last().unwrap_or_default();
    let nums: Vec<usize> = last.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok()).collect();
    assert_eq!(nums.len(), 3, "{last}\n{output}");
    let results: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(json.path()).unwrap()).unwrap();
    assert_eq!(results.len(), nums[0] + nums[1]);
    let run = Run { passed: nums[0], failed: nums[1], dangerous: nums[2], results, output };
    assert_eq!(run.dangers().len(), run.dangerous, "{last}");
    assert!(run.dangers().iter().all(|r| r["pass"] == false));
    let listed: usize = run.results.iter().map(|r| r["dangerous"].as_array().map_or(0, Vec::len)).sum();
    assert_eq!(stdout.lines().filter(|l| l.starts_with("DANGER ")).count(), listed, "{last}");
    run
}
