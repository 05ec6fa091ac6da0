//! One road: `reconcile`, `serve` (through moto's SQS and EventBridge) and `eval` drive the same
//! events on the same repository through the same driver, so they produce the same change sets,
//! the same branches with the same commit messages and patches, and the same knowledge-base records.
//!
//! One actor session's change sets whose values share an origin in the code are decided alike too:
//! the daemon finds a change set's siblings in its queue, and remembers across a restart that a
//! sibling's edit already wrote a change.
//!
//! Run through `scripts/moto.sh` (as `scripts/test.sh` does). Without moto the serve leg cannot
//! run: the test says so and passes, unless DRIFTBACK_REQUIRE_SERVICES is set (CI), where it fails.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod support;
use support::{
    Daemon, SUBNET_A, SUBNET_B, bare_remote, bare_remote_with, demo_dir, eventbridge, eventbridge_entries, free_port,
    git, moto_endpoint, queue_arn, route_cloudtrail_to_queue, shared_tags_files, sqs_client, tag_subnet, wait_for,
};

const BIN: &str = env!("CARGO_BIN_EXE_driftback");

/// What one branch holds: its commit message and the patch against its parent.
#[derive(Debug, PartialEq)]
struct Branch {
    message: String,
    patch: String,
}

fn branches(remote: &Path) -> BTreeMap<String, Branch> {
    git(remote, &["for-each-ref", "--format=%(refname:short)", "refs/heads/driftback/"])
        .lines()
        .map(|name| {
            let message = git(remote, &["log", "-1", "--format=%B", name]);
            let patch = git(remote, &["diff", &format!("{name}^"), name]);
            (name.to_string(), Branch { message, patch })
        })
        .collect()
}

/// Everything the knowledge base keeps of a change set, but the commit id (a commit made at
/// another second has another id) and the decision's row id and time.
async fn records(store: &Path, ids: &[String]) -> BTreeMap<String, Value> {
    let store = driftback_store::Store::open_sqlite(store).await.unwrap();
    let mut out = BTreeMap::new();
    for id in ids {
        let mut row = serde_json::to_value(store.change_set(id).await.unwrap()).unwrap();
        row["commit_id"] = Value::Null;
        let decisions: Vec<Value> =
            store.decisions(id).await.unwrap().into_iter().map(|d| serde_json::to_value(d.decision).unwrap()).collect();
        out.insert(id.clone(), json!({"row": row, "decisions": decisions}));
    }
    for (address, path) in [("aws_instance.web", "instance_type"), ("aws_security_group.web", "ingress")] {
        let history = store.field_history(address, path, chrono::DateTime::UNIX_EPOCH, 100).await.unwrap();
        let owner = store.field_owner(address, path).await.unwrap().map(|o| o.owner);
        let history: Vec<Value> = history
            .into_iter()
            .map(|c| json!([c.actor, c.event_id, c.event_time.to_rfc3339(), c.change_set_id]))
            .collect();
        out.insert(format!("{address}.{path}"), json!({"history": history, "owner": owner}));
    }
    store.close().await;
    out
}

/// The lines a unified diff removes and adds (`-` and `+` lines, without the file headers).
fn edit_lines(diff: &str) -> Vec<String> {
    diff.lines()
        .filter(|l| (l.starts_with('+') && !l.starts_with("+++")) || (l.starts_with('-') && !l.starts_with("---")))
        .map(str::to_string)
        .collect()
}

/// The lines `after` removes from and adds to `before`, as git diffs them.
fn changed_lines(tmp: &Path, before: &str, after: &str) -> Vec<String> {
    let (a, b) = (tmp.join("before.tf"), tmp.join("after.tf"));
    std::fs::write(&a, before).unwrap();
    std::fs::write(&b, after).unwrap();
    let out = Command::new("git").args(["diff", "--no-index", "-U0"]).arg(&a).arg(&b).output().unwrap();
    edit_lines(&String::from_utf8(out.stdout).unwrap())
}

fn clone(remote: &Path, dir: &Path) {
    let out = Command::new("git").args(["clone", "-q"]).arg(remote).arg(dir).output().unwrap();
    assert!(out.status.success(), "git clone: {}", String::from_utf8_lossy(&out.stderr));
}

/// The settings both `reconcile` and `serve` run with: push branches, recipes only.
fn common_env(command: &mut Command) -> &mut Command {
    command
        .env("DRIFTBACK_PUBLISH__MODE", "push")
        .env_remove("DRIFTBACK_LLM_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env("DRIFTBACK_LOG", "info")
}

struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_serve_and_eval_walk_one_road() {
    let Ok(endpoint) = std::env::var("DRIFTBACK_TEST_MOTO_ENDPOINT") else {
        assert!(
            std::env::var_os("DRIFTBACK_REQUIRE_SERVICES").is_none(),
            "DRIFTBACK_REQUIRE_SERVICES is set but moto is not running: run through scripts/moto.sh"
        );
        eprintln!("NOTICE: one-road test skipped: moto is not running (run `scripts/moto.sh cargo test`)");
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let events = demo_dir().join("events.json");

    // eval: the demo project as a corpus of one scenario.
    let corpus = root.path().join("corpus");
    let project = corpus.join("projects/demo");
    std::fs::create_dir_all(&project).unwrap();
    for name in ["main.tf", "terraform.tfstate"] {
        std::fs::copy(demo_dir().join("project").join(name), project.join(name)).unwrap();
    }
    let scenario = corpus.join("scenarios/demo");
    std::fs::create_dir_all(&scenario).unwrap();
    std::fs::copy(&events, scenario.join("events.json")).unwrap();
    std::fs::write(scenario.join("scenario.toml"), "project = \"demo\"\n[expect]\nunchanged_others = false\n").unwrap();
    let results = root.path().join("eval.json");
    let out = Command::new(BIN).arg("eval").arg(&corpus).arg("--json").arg(&results).output().unwrap();
    assert!(out.status.success(), "eval: {}", String::from_utf8_lossy(&out.stdout));
    let results: Value = serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
    let eval_sets = results[0]["change_sets"].as_array().unwrap().clone();
    let ids: Vec<String> = eval_sets.iter().map(|c| c["id"].as_str().unwrap().to_string()).collect();
    assert!(ids.len() >= 4, "{eval_sets:?}");

    // reconcile: the CloudTrail file into a clone of its own remote.
    let rec_root = root.path().join("reconcile");
    let rec_remote = bare_remote(&rec_root);
    let rec_repo = rec_root.join("repo");
    clone(&rec_remote, &rec_repo);
    let out = common_env(&mut Command::new(BIN))
        .arg("reconcile")
        .arg("--events")
        .arg(&events)
        .arg("--repo")
        .arg(&rec_repo)
        .output()
        .unwrap();
    assert!(out.status.success(), "reconcile: {}", String::from_utf8_lossy(&out.stderr));

    // serve: the same records through EventBridge and SQS into a daemon with its own remote.
    let serve_root = root.path().join("serve");
    let serve_remote = bare_remote(&serve_root);
    let workdir = serve_root.join("work");
    let sqs = sqs_client(&endpoint).await;
    let queue_url = sqs.create_queue().queue_name("one-road").send().await.unwrap().queue_url().unwrap().to_string();
    let http = reqwest::Client::new();
    route_cloudtrail_to_queue(&http, &endpoint, "one-road", &queue_arn(&sqs, &queue_url).await).await;
    let text = std::fs::read_to_string(&events).unwrap();
    let trail: Value = serde_json::from_str(&text).unwrap();
    for chunk in trail["Records"].as_array().unwrap().chunks(10) {
        let entries: Vec<Value> = chunk
            .iter()
            .map(|r| {
                let source = format!(
                    "aws.{}",
                    r["eventSource"].as_str().unwrap_or_default().split('.').next().unwrap_or_default()
                );
                json!({"Source": source, "DetailType": "AWS API Call via CloudTrail", "Detail": r.to_string()})
            })
            .collect();
        eventbridge(&http, &endpoint, "PutEvents", json!({"Entries": entries})).await;
    }
    let log = serve_root.join("serve.log");
    let daemon = Killed(
        common_env(&mut Command::new(BIN))
            .arg("serve")
            .env("DRIFTBACK_FEED__QUEUE_URL", &queue_url)
            .env("DRIFTBACK_FEED__ENDPOINT_URL", &endpoint)
            .env("DRIFTBACK_FEED__REGION", "us-east-1")
            .env("DRIFTBACK_FEED__WAIT_TIME_SECS", "1")
            .env("DRIFTBACK_SERVE__REPO_URL", &serve_remote)
            .env("DRIFTBACK_SERVE__WORKDIR", &workdir)
            .env("DRIFTBACK_SERVE__LISTEN", format!("127.0.0.1:{}", free_port()))
            .env("DRIFTBACK_SERVE__POLL_MS", "100")
            .env("DRIFTBACK_BACKFILL__ON_START", "false")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let store_path = workdir.join(".git/driftback/kb.sqlite");
    let started = Instant::now();
    loop {
        let done = if store_path.exists() {
            let store = driftback_store::Store::open_sqlite(&store_path).await.unwrap();
            let finished = {
                let mut n = 0;
                for id in &ids {
                    if store.change_set(id).await.unwrap().is_some_and(|c| c.status != "pending") {
                        n += 1;
                    }
                }
                n == ids.len() && store.unfinished_change_sets().await.unwrap().is_empty()
            };
            store.close().await;
            finished
        } else {
            false
        };
        if done {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "serve did not finish every change set; its log:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    drop(daemon);

    // The same branches, messages and patches.
    let from_reconcile = branches(&rec_remote);
    let from_serve = branches(&serve_remote);
    assert!(!from_reconcile.is_empty());
    assert_eq!(from_reconcile, from_serve);
    // eval reconciled the same change sets onto the same branch names with the same edits (its
    // scratch copy keeps each patch for the next change set; a branch starts from the base).
    let mut scratch: BTreeMap<String, String> =
        ["main.tf"].iter().map(|f| (f.to_string(), std::fs::read_to_string(project.join(f)).unwrap())).collect();
    let mut eval_edits = BTreeMap::new();
    for set in &eval_sets {
        let mut lines = Vec::new();
        for (file, text) in set["files"].as_object().unwrap() {
            let before = scratch.insert(file.clone(), text.as_str().unwrap().to_string()).unwrap_or_default();
            lines.extend(changed_lines(root.path(), &before, text.as_str().unwrap()));
        }
        if let Some(branch) = set["branch"].as_str() {
            eval_edits.insert(branch.to_string(), lines);
        }
    }
    let git_edits: BTreeMap<String, Vec<String>> = from_reconcile
        .keys()
        .map(|b| (b.clone(), edit_lines(&git(&rec_remote, &["diff", "-U0", &format!("{b}^"), b]))))
        .collect();
    assert_eq!(eval_edits, git_edits);
    // The same records in both knowledge bases.
    let rec_records = records(&rec_repo.join(".git/driftback/kb.sqlite"), &ids).await;
    let serve_records = records(&store_path, &ids).await;
    assert_eq!(rec_records, serve_records);
    for id in &ids {
        let status = rec_records[id]["row"]["status"].as_str().unwrap().to_string();
        let eval_status = eval_sets.iter().find(|c| c["id"] == id.as_str()).unwrap()["status"].clone();
        assert_eq!(eval_status, status.as_str(), "{id}");
    }
}

/// What a branch holds, byte for byte but for the commits' times: its name, its commit's tree and
/// its parent's, and its commit message.
fn branch_trees(remote: &Path) -> BTreeMap<String, (String, String, String)> {
    git(remote, &["for-each-ref", "--format=%(refname:short)", "refs/heads/driftback/"])
        .lines()
        .map(|name| {
            let tree = git(remote, &["rev-parse", &format!("{name}^{{tree}}")]);
            let parent = git(remote, &["rev-parse", &format!("{name}^^{{tree}}")]);
            let message = git(remote, &["log", "-1", "--format=%B", name]);
            (name.to_string(), (tree, parent, message))
        })
        .collect()
}

/// The knowledge base's rows and audit log of `ids`, without the commit id.
async fn rows(store: &Path, ids: &[&str]) -> Vec<Value> {
    let store = driftback_store::Store::open_sqlite(store).await.unwrap();
    let mut out = Vec::new();
    for id in ids {
        let mut row = serde_json::to_value(store.change_set(id).await.unwrap()).unwrap();
        row["commit_id"] = Value::Null;
        let decisions: Vec<Value> =
            store.decisions(id).await.unwrap().into_iter().map(|d| serde_json::to_value(d.decision).unwrap()).collect();
        out.push(json!({"row": row, "decisions": decisions}));
    }
    store.close().await;
    out
}

/// A console user tags two subnets in turn, as two calls, and both subnets' tags come from one
/// shared local: `reconcile` edits the local once, on the first change set's branch, and the
/// second change set's branch is the first one's. The daemon does the same from its queue, though
/// it is restarted between the two change sets: the second is not written again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_shared_origin_is_written_once_alike_by_reconcile_and_by_serve_across_a_restart() {
    let Some(endpoint) = moto_endpoint("the shared-origin one-road test") else { return };
    let root = tempfile::tempdir().unwrap();
    // Each change set is due a quiet window after its event: the first soon after the daemon
    // starts, the second 20 s later, while the daemon is being restarted. 20 s apart is within the
    // window, so they are one run of work: siblings.
    let quiet = 30;
    let now = chrono::Utc::now();
    let at = |ago: i64| (now - chrono::Duration::seconds(ago)).format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let records = vec![tag_subnet(SUBNET_A, &at(quiet - 6), "tag-a"), tag_subnet(SUBNET_B, &at(quiet - 26), "tag-b")];
    let events = root.path().join("events.json");
    std::fs::write(&events, json!({ "Records": records }).to_string()).unwrap();
    let (a, b) = (
        driftback_events::change_set_id(Some(SUBNET_A), "tag-a"),
        driftback_events::change_set_id(Some(SUBNET_B), "tag-b"),
    );
    let files = shared_tags_files();
    let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();

    // reconcile: the CloudTrail file into a clone of its own remote.
    let rec_root = root.path().join("reconcile");
    let rec_remote = bare_remote_with(&rec_root, &files);
    let rec_repo = rec_root.join("repo");
    clone(&rec_remote, &rec_repo);
    let out = common_env(&mut Command::new(BIN))
        .env("DRIFTBACK_GROUP__QUIET_WINDOW_SECS", quiet.to_string())
        .arg("reconcile")
        .arg("--events")
        .arg(&events)
        .arg("--repo")
        .arg(&rec_repo)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "reconcile: {said}{}", String::from_utf8_lossy(&out.stderr));
    let from_reconcile = branch_trees(&rec_remote);
    assert_eq!(from_reconcile.len(), 1, "one branch for both change sets: {said}");

    // serve: the same records through EventBridge and SQS, the daemon stopped after the first
    // change set and started again.
    let serve_root = root.path().join("serve");
    let serve_remote = bare_remote_with(&serve_root, &files);
    let workdir = serve_root.join("work");
    let sqs = sqs_client(&endpoint).await;
    let queue_url =
        sqs.create_queue().queue_name("shared-origin").send().await.unwrap().queue_url().unwrap().to_string();
    let http = reqwest::Client::new();
    route_cloudtrail_to_queue(&http, &endpoint, "shared-origin", &queue_arn(&sqs, &queue_url).await).await;
    eventbridge(&http, &endpoint, "PutEvents", eventbridge_entries(&records)).await;
    let env: Vec<(&str, String)> = vec![
        ("DRIFTBACK_FEED__QUEUE_URL", queue_url.clone()),
        ("DRIFTBACK_FEED__ENDPOINT_URL", endpoint.clone()),
        ("DRIFTBACK_FEED__REGION", "us-east-1".into()),
        ("DRIFTBACK_FEED__WAIT_TIME_SECS", "1".into()),
        ("DRIFTBACK_SERVE__REPO_URL", serve_remote.display().to_string()),
        ("DRIFTBACK_SERVE__WORKDIR", workdir.display().to_string()),
        ("DRIFTBACK_SERVE__LISTEN", format!("127.0.0.1:{}", free_port())),
        ("DRIFTBACK_SERVE__POLL_MS", "100".into()),
        ("DRIFTBACK_BACKFILL__ON_START", "false".into()),
        ("DRIFTBACK_PUBLISH__MODE", "push".into()),
        ("DRIFTBACK_GROUP__QUIET_WINDOW_SECS", quiet.to_string()),
        ("DRIFTBACK_LLM_API_KEY", String::new()),
    ];
    let store_path = workdir.join(".git/driftback/kb.sqlite");
    let status_of = |id: String| {
        let store_path = store_path.clone();
        async move {
            if !store_path.exists() {
                return None;
            }
            let store = driftback_store::Store::open_sqlite(&store_path).await.unwrap();
            let queued = store.queued_change_set(&id).await.unwrap().map(|q| q.status);
            store.close().await;
            queued
        }
    };
    let mut daemon = Daemon::start(&serve_root, &env, 1);
    wait_for("the first change set", &mut daemon, async || {
        status_of(a.clone()).await == Some(driftback_store::QueueStatus::Done)
    })
    .await;
    assert_eq!(
        status_of(b.clone()).await,
        Some(driftback_store::QueueStatus::Pending),
        "the second change set waits for its quiet window:\n{}",
        daemon.log()
    );
    assert!(daemon.terminate().success(), "{}", daemon.log());
    let mut daemon = Daemon::start(&serve_root, &env, 2);
    wait_for("the second change set", &mut daemon, async || {
        status_of(b.clone()).await == Some(driftback_store::QueueStatus::Done)
    })
    .await;
    drop(daemon);

    assert_eq!(branch_trees(&serve_remote), from_reconcile);
    let ids = [a.as_str(), b.as_str()];
    let (rec_rows, serve_rows) =
        (rows(&rec_repo.join(".git/driftback/kb.sqlite"), &ids).await, rows(&store_path, &ids).await);
    assert_eq!(serve_rows, rec_rows);
    let second = rec_rows[1]["row"]["notes"].to_string();
    assert!(second.contains(&format!("by change set {a} of the same session")), "{second}");
}
