//! The ownership policy end to end: `policy check`, `policy explain` (snapshot tests), and
//! `reconcile` honouring a repository's policy file, with the ledger kept across runs.
//!
//! Snapshots live in tests/snapshots/; run with `UPDATE_SNAPSHOTS=1` to rewrite them after an
//! intended change, and review the diff.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_driftback");

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus")
}

fn project() -> PathBuf {
    corpus().join("projects/ownership")
}

fn scenario_events(id: &str) -> PathBuf {
    corpus().join("scenarios").join(id).join("events.json")
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn driftback(dir: &Path, args: &[&str]) -> Output {
    // Module sources are never fetched here: tests make no network calls.
    Command::new(BIN)
        .current_dir(dir)
        .args(args)
        .env_remove("DRIFTBACK_CONFIG")
        .env("DRIFTBACK_MODULES__FETCH", "false")
        .output()
        .expect("driftback runs")
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Compare with a committed snapshot, or rewrite it when UPDATE_SNAPSHOTS is set.
fn check_snapshot(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots").join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("no snapshot {}; run with UPDATE_SNAPSHOTS=1", path.display()));
    if expected != actual {
        let first = expected.lines().zip(actual.lines()).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "{name} differs from the snapshot at line {}:\n  expected: {}\n  actual:   {}\n(run with UPDATE_SNAPSHOTS=1 to accept)",
            first + 1,
            expected.lines().nth(first).unwrap_or(""),
            actual.lines().nth(first).unwrap_or("")
        );
    }
}

#[test]
fn policy_explain_text_and_json_match_their_snapshots() {
    let mut all = String::new();
    for id in [
        "ownership-001-autoscaler-owns-desired-capacity",
        "ownership-003-person-overrides-ops-bot-field",
        "ownership-004-fleet-max-above-bound",
        "ownership-006-api-instance-type-not-allowed",
        "ownership-007-worker-runtime-immutable",
        "ownership-009-hotfix-wins-over-scheduled-job",
        "ownership-011-autoscaler-in-registry-module",
    ] {
        let events = format!("../../scenarios/{id}/events.json");
        let out = driftback(&project(), &["policy", "explain", "--event", &events, "--repo", "."]);
        assert!(out.status.success(), "{}", text(&out));
        all.push_str(&format!("=== {id}\n{}", String::from_utf8_lossy(&out.stdout)));
    }
    check_snapshot("policy_explain.txt", &all);

    let events = "../../scenarios/ownership-010-retention-oscillation/events.json";
    let out = driftback(&project(), &["policy", "explain", "--event", events, "--repo", ".", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let json: Value = serde_json::from_slice(&out.stdout).expect("explain --json prints JSON");
    let sets = json["change_sets"].as_array().unwrap();
    assert_eq!(sets.len(), 3);
    assert_eq!(sets[2]["decision"]["kind"], "escalate");
    assert_eq!(sets[2]["decision"]["oscillations"][0]["actors"], serde_json::json!(["alice", "bob"]));
    check_snapshot("policy_explain_oscillation.json", &String::from_utf8_lossy(&out.stdout));
}

#[test]
fn policy_explain_without_a_repository_judges_the_calls_with_the_defaults() {
    let events = corpus().join("scenarios/flat-014-sg-ssh-world-escalate/events.json");
    let out = driftback(&corpus(), &["policy", "explain", "--event", events.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let shown = text(&out);
    assert!(shown.contains("policy: built-in defaults"), "{shown}");
    assert!(shown.contains("decision: escalate (rule default:security-weakening)"), "{shown}");
}

#[test]
fn policy_check_validates_runs_examples_and_names_the_rule_and_field() {
    let out = driftback(&project(), &["policy", "check"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("examples: 8 passed"), "{}", text(&out));

    let out = driftback(&project(), &["policy", "check", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["ok"], true);
    assert_eq!(report["rules"].as_array().unwrap().len(), 6);
    assert!(report["builtin_rules"].as_array().unwrap().iter().any(|r| r == "default:security-weakening"));

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("policy.toml");
    let cases = [
        (
            "[[rule]]\nname = \"bounds\"\nresource_type = \"aws_autoscaling_group\"\nattribute = \"max_size\"\nmax = \"ten\"\n",
            "rule \"bounds\" (rule 1): `max`: expected a number",
        ),
        (
            "[[rule]]\nname = \"types\"\nresource_type = \"aws_instance\"\nattribute = \"instance_type\"\nallowed = [\"t3.small\"]\ndecision = \"revert\"\n[[rule.example]]\naddress = \"aws_instance.web\"\nattribute = \"instance_type\"\nvalue = \"t3.small\"\nexpect = \"revert\"\n",
            "rule \"types\", example 1: expected revert, but the rule gives no_match",
        ),
    ];
    for (policy, want) in cases {
        std::fs::write(&file, policy).unwrap();
        let out = driftback(dir.path(), &["policy", "check", "policy.toml"]);
        assert!(!out.status.success(), "{policy}");
        let shown = text(&out);
        assert!(shown.contains("policy.toml") && shown.contains(want), "{shown}\nwanted: {want}");
    }
    // A file given explicitly must exist; with none in the repository the defaults apply.
    let out = driftback(dir.path(), &["policy", "check", "missing.toml"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("missing.toml does not exist"), "{}", text(&out));
    let out = driftback(dir.path(), &["policy", "check"]);
    assert!(out.status.success());
    assert!(text(&out).contains("the built-in defaults apply"), "{}", text(&out));
}

/// CloudTrail records of a scenario, whatever its container.
fn records(id: &str) -> Vec<Value> {
    let raw = std::fs::read_to_string(scenario_events(id)).unwrap();
    let detail = |v: Value| if v.get("detail-type").is_some() { v["detail"].clone() } else { v };
    match serde_json::from_str::<Value>(&raw) {
        Ok(Value::Object(o)) => o["Records"].as_array().unwrap().clone(),
        Ok(Value::Array(a)) => a,
        _ => raw.lines().filter(|l| !l.trim().is_empty()).map(|l| detail(serde_json::from_str(l).unwrap())).collect(),
    }
}

fn write_events(dir: &Path, name: &str, records: Vec<Value>) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string(&serde_json::json!({ "Records": records })).unwrap()).unwrap();
    path
}

/// The ownership project (with its policy file) as a git repository on `main`.
fn ownership_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for rel in ["main.tf", "versions.tf", "terraform.tfstate", ".driftback/policy.toml"] {
        let to = dir.path().join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(project().join(rel), to).unwrap();
    }
    git(dir.path(), &["init", "-q", "-b", "main"]);
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init"]);
    dir
}

fn branch_for(repo: &Path, needle: &str) -> Option<String> {
    git(repo, &["branch", "--list", "driftback/*", "--format=%(refname:short)"])
        .lines()
        .find(|b| b.contains(needle))
        .map(str::to_string)
}

#[test]
fn reconcile_honours_the_policy_file_for_every_decision_kind() {
    let repo = ownership_repo();
    let scratch = tempfile::tempdir().unwrap();
    let mut all = Vec::new();
    for id in [
        "ownership-001-autoscaler-owns-desired-capacity",
        "ownership-003-person-overrides-ops-bot-field",
        "ownership-006-api-instance-type-not-allowed",
        "ownership-009-hotfix-wins-over-scheduled-job",
    ] {
        all.extend(records(id));
    }
    let events = write_events(scratch.path(), "events.json", all);
    let out = driftback(repo.path(), &["reconcile", "--events", events.to_str().unwrap(), "--repo", "."]);
    assert!(out.status.success(), "{}", text(&out));
    let summary = text(&out);

    // reconcile: the incident hotfix is committed, with the decision and rationale in the message.
    let worker = branch_for(repo.path(), "aws_lambda_function.worker").expect("a branch for the hotfix");
    let diff = git(repo.path(), &["diff", "main", &worker]);
    assert!(diff.contains("+  memory_size   = 2048") || diff.contains("memory_size = 2048"), "{diff}");
    let message = git(repo.path(), &["log", "-1", "--format=%B", &worker]);
    assert!(message.contains("Decision: reconcile (incident-hotfixes-are-kept)"), "{message}");
    assert!(message.contains("for availability (incident)"), "{message}");
    assert!(message.contains("the code is updated to match the cloud"), "{message}");

    // ignore_changes: the autoscaler's field goes into lifecycle { ignore_changes }.
    let web = branch_for(repo.path(), "aws_autoscaling_group.web").expect("a branch for the autoscaler's change");
    let diff = git(repo.path(), &["diff", "main", &web]);
    assert!(diff.contains("ignore_changes = [desired_capacity]"), "{diff}");
    assert!(!diff.contains("desired_capacity    = 5"), "{diff}");
    let message = git(repo.path(), &["log", "-1", "--format=%B", &web]);
    assert!(message.contains("Decision: ignore_changes (default:autoscaling-owns-desired-capacity)"), "{message}");

    // revert and escalate: nothing committed, the reason reported.
    assert!(branch_for(repo.path(), "aws_instance.api").is_none(), "{summary}");
    assert!(branch_for(repo.path(), "aws_sqs_queue.orders").is_none(), "{summary}");
    assert!(
        summary.contains(
            "aws_instance.api: revert: aws_instance.api.instance_type = \"m5.8xlarge\" is not one of the allowed values"
        ),
        "{summary}"
    );
    assert!(summary.contains("the next terraform apply will revert it"), "{summary}");
    assert!(summary.contains("is owned by ops-bot, not alice"), "{summary}");
    assert_eq!(git(repo.path(), &["status", "--porcelain", "--untracked-files=no"]), "");

    // The knowledge base records the revert as `revert`, not as ignored or escalated.
    let kb = repo.path().join(".git/driftback/kb.sqlite");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let stats = runtime.block_on(async {
        let store = driftback_store::Store::open_sqlite(&kb).await.unwrap();
        store.stats().await.unwrap()
    });
    let count = |status: &str| stats.change_sets_by_status.iter().find(|(s, _)| s == status).map(|(_, n)| *n);
    // The API instance's size, and the rightsizing job undoing the hotfix.
    assert_eq!(count("revert"), Some(2), "{:?}", stats.change_sets_by_status);
    assert_eq!(count("escalated"), Some(1), "{:?}", stats.change_sets_by_status);
    assert_eq!(count("ignored"), None, "{:?}", stats.change_sets_by_status);
}

#[test]
fn oscillation_is_detected_across_runs_from_the_stored_ledger() {
    let repo = ownership_repo();
    let scratch = tempfile::tempdir().unwrap();
    let mut history = records("ownership-010-retention-oscillation");
    let third = history.pop().unwrap();
    let first_run = write_events(scratch.path(), "first.json", history);
    let second_run = write_events(scratch.path(), "second.json", vec![third]);

    let out = driftback(repo.path(), &["reconcile", "--events", first_run.to_str().unwrap(), "--repo", "."]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("reconciled: 2"), "{}", text(&out));
    assert!(!text(&out).contains("oscillation"), "{}", text(&out));

    // The third change comes in a later run: only the knowledge base remembers the first two.
    let out = driftback(repo.path(), &["reconcile", "--events", second_run.to_str().unwrap(), "--repo", "."]);
    assert!(out.status.success(), "{}", text(&out));
    let summary = text(&out);
    assert!(summary.contains("reconciled: 0") && summary.contains("escalated: 1"), "{summary}");
    assert!(summary.contains("oscillations: 1"), "{summary}");
    assert!(summary.contains("aws_sqs_queue.orders.message_retention_seconds between alice and bob"), "{summary}");
}
