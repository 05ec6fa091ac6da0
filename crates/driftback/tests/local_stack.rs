//! scripts/local-stack.sh end to end: it starts Postgres and moto, seeds the queue, the rule and a
//! git remote, runs `driftback serve` until the first demo change set is pushed as a branch, and
//! stops everything it started.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_driftback");

#[test]
fn the_local_stack_pushes_a_branch_and_stops_what_it_started() {
    if std::env::var_os("DRIFTBACK_TEST_MOTO_ENDPOINT").is_none() {
        assert!(
            std::env::var_os("DRIFTBACK_REQUIRE_SERVICES").is_none(),
            "DRIFTBACK_REQUIRE_SERVICES is set but moto is not running: run through scripts/moto.sh"
        );
        eprintln!("NOTICE: local-stack test skipped: run through scripts/postgres.sh scripts/moto.sh");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(root.join("scripts/local-stack.sh"))
        .arg("--once")
        .env("DRIFTBACK_BIN", BIN)
        .env("LOCAL_STACK_DIR", dir.path())
        .env("LOCAL_STACK_TIMEOUT_SECS", "90")
        // Its own Postgres and moto, not the test run's.
        .env_remove("LOCAL_STACK_INNER")
        .env_remove("DATABASE_URL")
        .env_remove("DRIFTBACK_TEST_MOTO_ENDPOINT")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "local-stack.sh failed:\n{stderr}");
    let branches = Command::new("git")
        .arg("--git-dir")
        .arg(dir.path().join("remote.git"))
        .args(["for-each-ref", "--format=%(refname:short)", "refs/heads/driftback/"])
        .output()
        .unwrap();
    let branches = String::from_utf8(branches.stdout).unwrap();
    assert!(branches.lines().any(|b| b.starts_with("driftback/")), "no branch pushed: {stderr}");
    // The first line of stdout is the pushed commit's subject, written by the daemon.
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("drift("), "{stdout}");
    // The daemon was stopped the graceful way (SIGTERM), and it is gone.
    let log = std::fs::read_to_string(dir.path().join("serve.log")).unwrap();
    assert!(log.contains("\"message\":\"stopped\""), "{log}");
    let ps = Command::new("ps").args(["-eo", "args"]).output().unwrap();
    let ps = String::from_utf8_lossy(&ps.stdout);
    let work = dir.path().join("work").display().to_string();
    assert!(!ps.lines().any(|l| l.contains(&work)), "a process still uses {work}");
}
