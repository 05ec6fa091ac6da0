//! checkov, the Terraform security scanner the `checkov_*` tests use as an independent oracle of
//! the security judgement: where `scripts/checkov.sh` put it, and one scan of a directory tree.
//! Included by those tests with `#[path = "support/checkov.rs"] mod checkov;`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

/// The checkov executable `scripts/checkov.sh` exported; `None` (the test is skipped, with a
/// notice naming `tests`) when it did not run, unless `DRIFTBACK_REQUIRE_SERVICES` says it must have.
pub fn executable(tests: &str) -> Option<PathBuf> {
    match std::env::var_os("DRIFTBACK_CHECKOV") {
        Some(path) => Some(PathBuf::from(path)),
        None if std::env::var_os("DRIFTBACK_REQUIRE_SERVICES").is_some() => {
            panic!("DRIFTBACK_REQUIRE_SERVICES is set but DRIFTBACK_CHECKOV is not: run through scripts/checkov.sh")
        }
        None => {
            eprintln!("NOTICE: {tests} skipped: checkov is not available (run `scripts/checkov.sh cargo test`)");
            None
        }
    }
}

/// One check on one resource, as checkov reported it.
#[derive(Debug, Clone)]
pub struct Finding {
    pub check_id: String,
    /// The resource's address in its root module (`module.logs.aws_s3_bucket.this`, `aws_instance.web["a"]`).
    pub resource: String,
    /// The file that declares the resource, relative to the scanned directory.
    pub file: PathBuf,
    pub passed: bool,
}

#[derive(Deserialize)]
struct Report {
    check_type: String,
    results: Results,
}

#[derive(Deserialize)]
struct Results {
    #[serde(default)]
    passed_checks: Vec<Check>,
    #[serde(default)]
    failed_checks: Vec<Check>,
    #[serde(default)]
    parsing_errors: Vec<String>,
}

#[derive(Deserialize)]
struct Check {
    check_id: String,
    resource: String,
    file_path: String,
    #[serde(default)]
    file_abs_path: Option<String>,
}

/// Scans every Terraform root under `dir` in one run (checkov costs seconds per start) with the
/// checks `only` (all of them when empty), offline (`--skip-download`). Panics, naming them, when a
/// file does not parse or checkov fails.
pub fn scan(checkov: &Path, dir: &Path, only: &[String]) -> Vec<Finding> {
    let mut command = Command::new(checkov);
    command
        .arg("--directory")
        .arg(dir)
        .args(["--framework", "terraform", "--compact", "--output", "json", "--skip-download"])
        // No telemetry, no platform: the scan is local.
        .env_remove("BC_API_KEY")
        .env_remove("PRISMA_API_URL");
    if !only.is_empty() {
        command.arg("--check").arg(only.join(","));
    }
    let out = command.output().unwrap_or_else(|e| panic!("running {}: {e}", checkov.display()));
    // checkov exits 1 when a check failed, which is what the scan is for.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "checkov failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let value: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!("checkov's JSON output does not parse ({e}): {}", stdout.chars().take(2000).collect::<String>())
    });
    // One framework gives one report; several give a list; no resource at all gives a bare summary.
    let reports: Vec<serde_json::Value> = match value {
        serde_json::Value::Array(reports) => reports,
        report if report.get("results").is_some() => vec![report],
        _ => vec![],
    };
    let root = dir.canonicalize().unwrap();
    let relative = |check: &Check| -> PathBuf {
        let abs = check.file_abs_path.as_deref().map(PathBuf::from);
        match abs.as_deref().and_then(|p| p.strip_prefix(&root).ok().or_else(|| p.strip_prefix(dir).ok())) {
            Some(rel) => rel.to_path_buf(),
            None => PathBuf::from(check.file_path.trim_start_matches('/')),
        }
    };
    let mut findings = Vec::new();
    for report in reports {
        let report: Report = serde_json::from_value(report).expect("a checkov report has check_type and results");
        if report.check_type != "terraform" {
            continue;
        }
        assert!(
            report.results.parsing_errors.is_empty(),
            "checkov could not parse {} file(s): {}",
            report.results.parsing_errors.len(),
            report.results.parsing_errors.join(", ")
        );
        for (checks, passed) in [(&report.results.passed_checks, true), (&report.results.failed_checks, false)] {
            findings.extend(checks.iter().map(|check| Finding {
                check_id: check.check_id.clone(),
                resource: check.resource.clone(),
                file: relative(check),
                passed,
            }));
        }
    }
    findings
}
