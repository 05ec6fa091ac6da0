//! The `driftback` binary end to end, on temporary git repositories.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_driftback");

fn demo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("demo")
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A git repository holding the demo project, committed on `main`.
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for name in ["main.tf", "terraform.tfstate"] {
        std::fs::copy(demo_dir().join("project").join(name), dir.path().join(name)).unwrap();
    }
    git(dir.path(), &["init", "-q", "-b", "main"]);
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init"]);
    dir
}

fn reconcile(repo: &Path, events: &Path) -> Output {
    Command::new(BIN).args(["reconcile", "--events"]).arg(events).arg("--repo").arg(repo).output().unwrap()
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn reconcile_commits_each_change_set_on_its_own_branch_and_is_idempotent() {
    let repo = repo();
    let head = git(repo.path(), &["rev-parse", "HEAD"]);
    let out = reconcile(repo.path(), &demo_dir().join("events.json"));
    assert!(out.status.success(), "{}", text(&out));
    let summary = text(&out);
    assert!(summary.contains("events read: 9"), "{summary}");
    assert!(summary.contains("dropped (read-only): 1"), "{summary}");
    assert!(summary.contains("reconciled: 3"), "{summary}");
    assert!(summary.contains("escalated: 1"), "{summary}");
    assert!(summary.contains("PurgeQueue changes no configuration"), "{summary}");
    // The SSH rule opened to the internet is held by the security baseline, with its control.
    assert!(summary.contains("EC2.13 (high)") && summary.contains("0.0.0.0/0"), "{summary}");
    // What was not changed is listed under its own heading, not among the escalations.
    let not_changed = summary.find("not changed: 1").expect("a not-changed heading");
    assert!(summary.find("PurgeQueue").unwrap() > not_changed, "{summary}");
    // Named by the address the state knows the queue by, not by its URL.
    assert!(summary.contains("  aws_sqs_queue.jobs: no change: PurgeQueue"), "{summary}");

    let branches = git(repo.path(), &["branch", "--list", "driftback/*", "--format=%(refname:short)"]);
    let branches: Vec<&str> = branches.lines().collect();
    assert_eq!(branches.len(), 3, "{branches:?}");
    let web = branches.iter().find(|b| b.contains("aws_instance.web")).unwrap();
    let diff = git(repo.path(), &["diff", "main", web]);
    assert!(diff.contains("+  instance_type = \"t3.large\""), "{diff}");
    assert!(diff.contains("+    CostCenter = \"cc-4411\""), "{diff}");
    // Laid out as terraform fmt would: the tag's siblings are aligned with the longer key.
    assert!(diff.contains("+    Name       = \"web\""), "{diff}");
    let log = git(repo.path(), &["log", "-1", "--format=%B", web]);
    assert!(log.contains("Drift-Event-Id: 3f0c1d2e-0000-4000-8000-000000000002"), "{log}");
    assert!(log.contains("Drift-Actor: arn:aws:iam::123456789012:user/alice"), "{log}");

    // The base branch and the working tree are as they were.
    assert_eq!(git(repo.path(), &["rev-parse", "HEAD"]), head);
    assert_eq!(git(repo.path(), &["status", "--porcelain", "--untracked-files=no"]), "");

    // A second run over the same file reconciles nothing twice.
    let again = reconcile(repo.path(), &demo_dir().join("events.json"));
    assert!(again.status.success(), "{}", text(&again));
    assert!(text(&again).contains("already seen in an earlier run: 9"), "{}", text(&again));
    assert!(text(&again).contains("reconciled: 0"), "{}", text(&again));
    let after = git(repo.path(), &["branch", "--list", "driftback/*"]);
    assert_eq!(after.lines().count(), 3);
}

#[test]
fn dry_run_writes_nothing() {
    let repo = repo();
    let out = Command::new(BIN)
        .args(["reconcile", "--dry-run", "--events"])
        .arg(demo_dir().join("events.json"))
        .arg("--repo")
        .arg(repo.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("reconciled: 3 (dry run)"), "{}", text(&out));
    assert_eq!(git(repo.path(), &["branch", "--list", "driftback/*"]), "");
    assert!(!repo.path().join(".git/driftback").exists());
}

#[test]
fn bad_inputs_fail_with_the_file_named_and_nothing_committed() {
    let repo = repo();
    let scratch = tempfile::tempdir().unwrap();

    let broken = scratch.path().join("broken.json");
    std::fs::write(&broken, "{\"Records\": [").unwrap();
    let out = reconcile(repo.path(), &broken);
    assert!(!out.status.success());
    assert!(text(&out).contains("broken.json") && text(&out).contains("line 1"), "{}", text(&out));

    let not_trail = scratch.path().join("other.json");
    std::fs::write(&not_trail, "{\"hello\": \"world\"}").unwrap();
    let out = reconcile(repo.path(), &not_trail);
    assert!(!out.status.success());
    assert!(text(&out).contains("not a CloudTrail container"), "{}", text(&out));

    // One bad record among good ones is reported and skipped.
    let mixed = scratch.path().join("mixed.json");
    let events: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(demo_dir().join("events.json")).unwrap()).unwrap();
    let mut records = events["Records"].as_array().unwrap().clone();
    records.insert(1, serde_json::json!({"not": "a record"}));
    std::fs::write(&mixed, serde_json::json!({"Records": records}).to_string()).unwrap();
    let out = reconcile(repo.path(), &mixed);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("mixed.json: record 2"), "{}", text(&out));
    assert!(text(&out).contains("reconciled: 3"), "{}", text(&out));

    let not_git = tempfile::tempdir().unwrap();
    std::fs::copy(demo_dir().join("project/main.tf"), not_git.path().join("main.tf")).unwrap();
    let out = reconcile(not_git.path(), &demo_dir().join("events.json"));
    assert!(!out.status.success());
    assert!(text(&out).contains("is not a git repository"), "{}", text(&out));

    let dirty = self::repo();
    std::fs::write(dirty.path().join("main.tf"), "# edited\n").unwrap();
    let out = reconcile(dirty.path(), &demo_dir().join("events.json"));
    assert!(!out.status.success());
    assert!(text(&out).contains("uncommitted changes (main.tf)"), "{}", text(&out));

    let broken_tf = self::repo();
    std::fs::write(broken_tf.path().join("extra.tf"), "resource \"aws_instance\" \"x\" {\n").unwrap();
    git(broken_tf.path(), &["add", "."]);
    git(broken_tf.path(), &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "broken"]);
    let out = reconcile(broken_tf.path(), &demo_dir().join("events.json"));
    assert!(!out.status.success());
    assert!(text(&out).contains("extra.tf") && text(&out).contains("does not parse"), "{}", text(&out));
    assert_eq!(git(broken_tf.path(), &["branch", "--list", "driftback/*"]), "");

    let bad_state = self::repo();
    let state = scratch.path().join("state.json");
    std::fs::write(&state, "{\"version\": 3}").unwrap();
    let out = Command::new(BIN)
        .args(["reconcile", "--events"])
        .arg(demo_dir().join("events.json"))
        .arg("--repo")
        .arg(bad_state.path())
        .arg("--state")
        .arg(&state)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(text(&out).contains("state.json") && text(&out).contains("version 3"), "{}", text(&out));
}

/// `driftback eval` on a corpus: (passed, failed, dangerous, results), checked for consistency.
fn eval_corpus(name: &str) -> (usize, usize, usize, Vec<serde_json::Value>) {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(name);
    let json = tempfile::NamedTempFile::new().unwrap();
    let out = Command::new(BIN).arg("eval").arg(&corpus).arg("--json").arg(json.path()).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    let nums: Vec<usize> = last.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok()).collect();
    assert_eq!(nums.len(), 3, "{last}");
    let results: Vec<serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(json.path()).unwrap()).unwrap();
    assert_eq!(results.len(), nums[0] + nums[1]);
    let dangerous = results.iter().filter(|r| r["dangerous"].as_array().is_some_and(|d| !d.is_empty())).count();
    assert_eq!(dangerous, nums[2], "{last}");
    // Every dangerous outcome is in the JSON, fails its scenario and has its own output line.
    assert!(
        results.iter().filter(|r| r["dangerous"].as_array().is_some_and(|d| !d.is_empty())).all(|r| r["pass"] == false)
    );
    let listed: usize = results.iter().map(|r| r["dangerous"].as_array().map_or(0, Vec::len)).sum();
    assert_eq!(stdout.lines().filter(|l| l.starts_with("DANGER ")).count(), listed, "{last}");
    (nums[0], nums[1], nums[2], results)
}

#[test]
fn the_real_world_corpus_holds_its_recorded_passes_and_nothing_dangerous() {
    let (passed, failed, dangerous, results) = eval_corpus("tests/corpus-wild");
    let dangers: Vec<&serde_json::Value> =
        results.iter().filter(|r| r["dangerous"].as_array().is_some_and(|d| !d.is_empty())).collect();
    assert_eq!(dangerous, 0, "{dangers:#?}");
    // Raise this floor when more pass; docs/corpus.md lists the failures and their causes.
    assert!(passed >= 213, "{passed} passed, {failed} failed");
}

#[test]
fn the_corpus_passes_at_its_recorded_rate() {
    let (passed, failed, dangerous, results) = eval_corpus("tests/corpus");
    assert_eq!(dangerous, 0, "no branch may do what a reviewer must refuse");
    assert!(results.iter().all(|r| r.get("milliseconds").is_some() && r.get("tokens").is_some()));
    // Raise this floor when the pass rate improves; docs/corpus.md lists the failures.
    assert!(passed * 100 >= (passed + failed) * 97, "{passed} passed, {failed} failed");
}

/// The security corpus (issue 27): weakenings on resources the code manages, as CloudTrail logs
/// them, and look-alikes on the same calls. No branch may write a weakening; the look-alikes are
/// reconciled.
#[test]
fn the_security_corpus_writes_no_weakening_and_reconciles_its_look_alikes() {
    let (passed, failed, dangerous, results) = eval_corpus("tests/corpus-security");
    let dangers: Vec<&serde_json::Value> =
        results.iter().filter(|r| r["dangerous"].as_array().is_some_and(|d| !d.is_empty())).collect();
    assert_eq!(dangerous, 0, "{dangers:#?}");
    // Issue 27's bar: every weakening held, every look-alike reconciled (docs/corpus.md).
    let failures: Vec<String> = results
        .iter()
        .filter(|r| r["pass"] != serde_json::Value::Bool(true))
        .map(|r| format!("{}: {}", r["id"], r["reason"]))
        .collect();
    assert_eq!(failed, 0, "{passed} passed; failures:\n{}", failures.join("\n"));
}
