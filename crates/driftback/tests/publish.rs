//! `driftback reconcile` with `[publish] mode = "pull-request"`, end to end: branches pushed to a
//! bare remote, pull requests opened on a GitHub stand-in speaking the real REST wire format, and a
//! later change to the same resource added to that resource's open pull request.

#[path = "../../publish/tests/it/github_server.rs"]
#[allow(dead_code)]
mod github_server;

use std::path::{Path, PathBuf};
use std::process::Command;

use github_server::{GitHubStandIn, TOKEN};

const BIN: &str = env!("CARGO_BIN_EXE_driftback");

fn demo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("demo")
}

/// The demo's CloudTrail record `id` (`3f0c1d2e-...-000000000007`), for a test to vary.
fn demo_record(id: &str) -> serde_json::Value {
    let demo: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(demo_dir().join("events.json")).unwrap()).unwrap();
    demo["Records"].as_array().unwrap().iter().find(|r| r["eventID"] == id).unwrap().clone()
}

/// `record` as a CloudTrail log file in `dir`, named by its event id.
fn events_file(dir: &Path, record: serde_json::Value) -> PathBuf {
    let file = dir.join(format!("{}.json", record["eventID"].as_str().unwrap()));
    std::fs::write(&file, serde_json::json!({"Records": [record]}).to_string()).unwrap();
    file
}

/// `driftback.toml` in `dir`: pull requests to the stand-in `server` for `acme/infra`, with the
/// `[publish]` keys in `more` (lines) after the common ones.
fn publish_config(dir: &Path, server: &GitHubStandIn, more: &str) -> PathBuf {
    let config = dir.join("driftback.toml");
    let common = format!(
        "[publish]\nmode = \"pull-request\"\napi_url = \"{}\"\nrepository = \"acme/infra\"\nretry_delay_ms = 0\n",
        server.base_url
    );
    std::fs::write(&config, common + more).unwrap();
    config
}

/// One SetQueueAttributes by alice on the demo queue, setting `attributes`.
fn queue_save(dir: &Path, attributes: serde_json::Value) -> PathBuf {
    queue_event(dir, "3f0c1d2e-0000-4000-8000-000000000201", "2024-05-02T10:45:00Z", attributes)
}

/// alice's SetQueueAttributes on the demo queue (the demo's record 7) as event `id` at `time`,
/// setting `attributes`.
fn queue_event(dir: &Path, id: &str, time: &str, attributes: serde_json::Value) -> PathBuf {
    let mut record = demo_record("3f0c1d2e-0000-4000-8000-000000000007");
    record["eventID"] = id.into();
    record["eventTime"] = time.into();
    record["requestParameters"]["attributes"] = attributes;
    events_file(dir, record)
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim_end().to_string()
}

/// The demo project committed on `main`, with a bare `origin` that has `main`.
fn repo_with_origin(dir: &Path) -> (PathBuf, PathBuf) {
    let repo = dir.join("infra");
    let origin = dir.join("origin.git");
    std::fs::create_dir_all(&repo).unwrap();
    for name in ["main.tf", "terraform.tfstate"] {
        std::fs::copy(demo_dir().join("project").join(name), repo.join(name)).unwrap();
    }
    git(dir, &["init", "-q", "--bare", "-b", "main", origin.to_str().unwrap()]);
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "."]);
    git(&repo, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init"]);
    git(&repo, &["remote", "add", "origin", origin.to_str().unwrap()]);
    git(&repo, &["push", "-q", "origin", "main"]);
    (repo, origin)
}

/// `driftback pending` on the repository's knowledge base.
fn pending(repo: &Path) -> String {
    let out = Command::new(BIN).args(["pending", "--repo"]).arg(repo).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn reconcile(events: &Path, repo: &Path, config: &Path, token: &str) -> (bool, String) {
    let out = Command::new(BIN)
        .args(["reconcile", "--events"])
        .arg(events)
        .arg("--repo")
        .arg(repo)
        .arg("--config")
        .arg(config)
        .env("GITHUB_TOKEN", token)
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconciled_change_sets_become_pushed_branches_and_one_pull_request_per_resource() {
    // Escalations as issues here (`escalation_drafts = false`); held drafts are the next test.
    let server = GitHubStandIn::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (repo, origin) = repo_with_origin(dir.path());
    let config = publish_config(dir.path(), &server, "labels = [\"drift\"]\nescalation_drafts = false\n");

    // A wrong token stops the run with what to fix, and the events stay unseen for the next run.
    let (ok, text) = tokio::task::spawn_blocking({
        let (repo, config) = (repo.clone(), config.clone());
        move || reconcile(&demo_dir().join("events.json"), &repo, &config, "not-the-token")
    })
    .await
    .unwrap();
    assert!(!ok, "{text}");
    assert!(text.contains("publish.token_env") && !text.contains("not-the-token"), "{text}");

    let (ok, text) = tokio::task::spawn_blocking({
        let (repo, config) = (repo.clone(), config.clone());
        move || reconcile(&demo_dir().join("events.json"), &repo, &config, TOKEN)
    })
    .await
    .unwrap();
    assert!(ok, "{text}");
    assert!(text.contains("pull request #1 opened"), "{text}");

    let pulls = server.inner.lock().unwrap().pulls.clone();
    let heads: Vec<String> = git(&origin, &["branch", "--list", "driftback/*", "--format=%(refname:short)"])
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(pulls.len(), heads.len(), "one pull request per pushed branch: {heads:?}");
    for pr in &pulls {
        let head = pr["head"]["ref"].as_str().unwrap();
        assert!(heads.iter().any(|h| h == head), "{head} was pushed");
        let body = pr["body"].as_str().unwrap();
        assert!(body.starts_with("<!-- driftback:resource "), "{body}");
        for section in
            ["## Timeline", "## Who made the change", "## Decision", "## Diff", "## Events", "## To revert instead"]
        {
            assert!(body.contains(section), "{section} in {body}");
        }
        assert_eq!(pr["base"]["ref"], "main");
    }
    // Titles and commit summaries name the field change, with the value before from the code.
    let web_title = pulls
        .iter()
        .find(|p| p["head"]["ref"].as_str().unwrap().contains("aws_instance.web"))
        .map(|p| p["title"].as_str().unwrap().to_string())
        .unwrap();
    assert!(
        web_title.starts_with("drift: aws_instance.web instance_type t3.medium -> t3.large and 1 more (cli, alice)"),
        "{web_title}"
    );
    let labels = server.inner.lock().unwrap().labels.clone();
    for pr in &pulls {
        assert_eq!(labels[&pr["number"].as_u64().unwrap()], ["drift"], "{labels:?}");
    }
    // The world-open SSH rule was escalated: one issue for the security group, labelled with the
    // decision and the rule, telling what happened and how people answer.
    let issues = server.inner.lock().unwrap().issues.clone();
    assert_eq!(issues.len(), 1, "{issues:#?}");
    let issue = &issues[0];
    let number = issue["number"].as_u64().unwrap();
    let body = issue["body"].as_str().unwrap();
    assert!(body.starts_with("<!-- driftback:escalation aws_security_group."), "{body}");
    assert!(body.contains("debug ssh") || body.contains("AuthorizeSecurityGroupIngress"), "{body}");
    assert!(body.contains("/driftback revert"), "{body}");
    // What accepting would write is there, computed and not committed: the field table and the
    // diff of the edit, and how to keep the code's value.
    assert!(body.contains("| `ingress` | *(not set)* |"), "{body}");
    let accepting = &body[body.find("## What accepting would write").unwrap()..];
    assert!(accepting.contains("```diff\ndiff --git a/main.tf b/main.tf"), "{accepting}");
    assert!(
        accepting.contains("+  ingress {") && accepting.contains("+    cidr_blocks = [\"0.0.0.0/0\"]"),
        "{accepting}"
    );
    assert!(!body.contains("No edit was computed"), "{body}");
    assert!(body.contains("(`ingress` unset)"), "{body}");
    assert!(git(&origin, &["branch", "--list", "driftback/aws_security_group*"]).is_empty(), "nothing committed");
    assert!(labels[&number].iter().any(|l| l == "decision:escalate"), "{labels:?}");
    assert!(text.contains(&format!("issue #{number} opened")) || text.contains("escalated"), "{text}");
    // It waits for a person, and `pending` says where.
    let waiting = pending(&repo);
    assert!(
        waiting.contains("aws_security_group.") && waiting.contains(&format!("[issue #{number} opened: ")),
        "{waiting}"
    );
    assert!(waiting.contains("1 change set(s) wait for a person"), "{waiting}");

    // An hour later alice changes the web server again: the same pull request carries both changes.
    let mut later = demo_record("3f0c1d2e-0000-4000-8000-000000000002");
    later["eventID"] = "3f0c1d2e-0000-4000-8000-000000000100".into();
    later["eventTime"] = "2024-05-02T12:40:00Z".into();
    later["requestParameters"]["instanceType"]["value"] = "t3.xlarge".into();
    let later_file = events_file(dir.path(), later.clone());
    let (ok, text) = tokio::task::spawn_blocking({
        let (repo, config, later_file) = (repo.clone(), config.clone(), later_file.clone());
        move || reconcile(&later_file, &repo, &config, TOKEN)
    })
    .await
    .unwrap();
    assert!(ok, "{text}");
    assert!(text.contains("pull request #1 updated"), "{text}");

    let pulls_after = server.inner.lock().unwrap().pulls.clone();
    assert_eq!(pulls_after.len(), pulls.len(), "no new pull request");
    let web: Vec<&serde_json::Value> =
        pulls_after.iter().filter(|p| p["head"]["ref"].as_str().unwrap().contains("aws_instance.web")).collect();
    assert_eq!(web.len(), 1, "{pulls_after:#?}");
    let web_head = web[0]["head"]["ref"].as_str().unwrap();
    let body = web[0]["body"].as_str().unwrap();
    assert!(body.contains("3f0c1d2e-0000-4000-8000-000000000002"), "{body}");
    assert!(body.contains("## Later change"), "{body}");
    assert!(body.contains("3f0c1d2e-0000-4000-8000-000000000100"), "{body}");
    let comments = server.inner.lock().unwrap().comments.clone();
    assert!(comments.iter().any(|(n, _)| Some(*n) == web[0]["number"].as_u64()), "{comments:?}");
    assert_eq!(git(&origin, &["rev-list", "--count", &format!("main..{web_head}")]), "2");
    let main_tf = git(&origin, &["show", &format!("{web_head}:main.tf")]);
    assert!(main_tf.contains("t3.xlarge") && main_tf.contains("cc-4411"), "{main_tf}");
    let summaries = git(&origin, &["log", "--format=%s", &format!("main..{web_head}")]);
    assert!(
        summaries.lines().next().unwrap().starts_with("drift(aws_instance.web): instance_type t3.large -> t3.xlarge"),
        "{summaries}"
    );
    let log = git(&origin, &["log", "--format=%B", &format!("main..{web_head}")]);
    assert!(
        log.contains("Drift-Decision: reconcile")
            && log.contains("Drift-Event-Id: 3f0c1d2e-0000-4000-8000-000000000100"),
        "{log}"
    );

    // The store knows the resource's open pull request.
    let kb = repo.join(".git/driftback/kb.sqlite");
    let store = driftback_store::Store::open_sqlite(&kb).await.unwrap();
    let open = store.open_pull_request("aws_instance.web").await.unwrap().unwrap();
    assert_eq!((open.number, open.branch.as_str()), (1, web_head));

    // Merged on GitHub; the next change to the web server is polled into the store as merged and
    // gets a new pull request of its own.
    server.merge(1);
    let mut third = later.clone();
    third["eventID"] = "3f0c1d2e-0000-4000-8000-000000000101".into();
    third["eventTime"] = "2024-05-03T08:00:00Z".into();
    third["requestParameters"]["instanceType"]["value"] = "t3.2xlarge".into();
    let third_file = dir.path().join("third.json");
    std::fs::write(&third_file, serde_json::json!({ "Records": [third] }).to_string()).unwrap();
    let (ok, text) = tokio::task::spawn_blocking({
        let (repo, config) = (repo.clone(), config.clone());
        move || reconcile(&third_file, &repo, &config, TOKEN)
    })
    .await
    .unwrap();
    assert!(ok, "{text}");
    // Issues and pull requests share one sequence of numbers, as on GitHub.
    let newest = server.inner.lock().unwrap().pulls.last().unwrap()["number"].as_u64().unwrap();
    assert!(text.contains(&format!("pull request #{newest} opened")), "{text}");
    let open = store.open_pull_request("aws_instance.web").await.unwrap().unwrap();
    assert_eq!(open.number, newest, "#1 was recorded as merged, the new one as open");

    // A later change to the escalated security group is written into the code (a tag): its issue
    // is closed, saying by which pull request.
    let sg_tag = serde_json::json!({"Records": [{
        "eventVersion": "1.09", "eventID": "3f0c1d2e-0000-4000-8000-000000000102",
        "eventTime": "2024-05-03T09:00:00Z", "eventSource": "ec2.amazonaws.com", "eventName": "CreateTags",
        "awsRegion": "us-east-1", "recipientAccountId": "123456789012", "readOnly": false,
        "eventType": "AwsApiCall", "managementEvent": true, "sourceIPAddress": "203.0.113.10",
        "userAgent": "aws-cli/2.15.30 md/awscrt#0.19.19 ua/2.0 os/linux#6.5 md/arch#x86_64 lang/python#3.11.8",
        "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/alice",
            "accountId": "123456789012", "userName": "alice"},
        "requestParameters": {"resourcesSet": {"items": [{"resourceId": "sg-0fedcba9876543210"}]},
            "tagSet": {"items": [{"key": "Owner", "value": "platform"}]}},
        "responseElements": {"_return": true}}]});
    let sg_file = dir.path().join("sg-tag.json");
    std::fs::write(&sg_file, sg_tag.to_string()).unwrap();
    let (ok, text) = tokio::task::spawn_blocking({
        let (repo, config) = (repo.clone(), config.clone());
        move || reconcile(&sg_file, &repo, &config, TOKEN)
    })
    .await
    .unwrap();
    assert!(ok, "{text}");
    // The tag is written into the code, but the issue waits on the ingress rule: it stays open.
    assert!(text.contains("reconciled: 1"), "{text}");
    let state = |server: &GitHubStandIn| {
        server.inner.lock().unwrap().issues.iter().find(|i| i["number"] == number).unwrap()["state"].clone()
    };
    assert_eq!(state(&server), "open", "{text}");

    // A rule says the queue's visibility timeout is for a person to decide. alice raises it: an
    // issue waits on that field, with what accepting would write.
    std::fs::create_dir_all(repo.join(".driftback")).unwrap();
    std::fs::write(
        repo.join(".driftback/policy.toml"),
        "[[rule]]\nname = \"queue-timeout-needs-a-person\"\nresource_type = \"aws_sqs_queue\"\n\
         attribute = \"visibility_timeout_seconds\"\ndecision = \"escalate\"\n",
    )
    .unwrap();
    let queue = |id: &str, time: &str, timeout: &str| {
        queue_event(dir.path(), id, time, serde_json::json!({ "VisibilityTimeout": timeout }))
    };
    let raised = queue("3f0c1d2e-0000-4000-8000-000000000104", "2024-05-04T10:00:00Z", "600");
    let (ok, text) = tokio::task::spawn_blocking({
        let (repo, config) = (repo.clone(), config.clone());
        move || reconcile(&raised, &repo, &config, TOKEN)
    })
    .await
    .unwrap();
    assert!(ok && text.contains("escalated: 1"), "{text}");
    let queue_issue = server.inner.lock().unwrap().issues.last().unwrap().clone();
    let queue_number = queue_issue["number"].as_u64().unwrap();
    let body = queue_issue["body"].as_str().unwrap();
    assert!(body.starts_with("<!-- driftback:escalation aws_sqs_queue.jobs -->"), "{body}");
    assert!(body.contains("| `visibility_timeout_seconds` | `30` | `600` |"), "{body}");
    assert!(body.contains("-  visibility_timeout_seconds = 30\n+  visibility_timeout_seconds = 600"), "{body}");
    assert!(pending(&repo).contains("aws_sqs_queue.jobs"));

    // She sets it back to what the code says: nothing to write, nothing to decide; the issue is
    // closed saying so, and nothing waits for a person any more.
    let back = queue("3f0c1d2e-0000-4000-8000-000000000105", "2024-05-04T11:00:00Z", "30");
    let (ok, text) = tokio::task::spawn_blocking({
        let (repo, config) = (repo.clone(), config.clone());
        move || reconcile(&back, &repo, &config, TOKEN)
    })
    .await
    .unwrap();
    assert!(ok && text.contains("escalated: 0"), "{text}");
    let queue_state =
        server.inner.lock().unwrap().issues.iter().find(|i| i["number"] == queue_number).unwrap()["state"].clone();
    assert_eq!(queue_state, "closed", "{text}");
    let comments = server.inner.lock().unwrap().comments.clone();
    assert!(
        comments.iter().any(|(n, c)| *n == queue_number && c.contains("back to what the code says")),
        "{comments:?}"
    );
    assert_eq!(state(&server), "open", "the security group's issue still waits");
    let waiting = pending(&repo);
    assert!(!waiting.contains("aws_sqs_queue.jobs"), "{waiting}");

    // The checked-out branch and working tree are untouched.
    assert_eq!(git(&repo, &["status", "--porcelain", "--untracked-files=no"]), "");
    // Requests carried the token as a bearer header and nothing else was needed.
    assert!(server.requests().iter().all(|r| r.path.starts_with("/repos/acme/infra/")));
}

/// A repository with `policy` as its policy file, a config publishing to `server`, and the events
/// of `attributes` reconciled: the run's output.
async fn reconcile_queue_save(
    server: &GitHubStandIn,
    dir: &Path,
    policy: &str,
    attributes: serde_json::Value,
) -> (PathBuf, PathBuf, String) {
    reconcile_queue_save_with(server, dir, policy, attributes, false).await
}

/// As [`reconcile_queue_save`], with held edits published as drafts when `drafts`.
async fn reconcile_queue_save_with(
    server: &GitHubStandIn,
    dir: &Path,
    policy: &str,
    attributes: serde_json::Value,
    drafts: bool,
) -> (PathBuf, PathBuf, String) {
    let (repo, origin) = repo_with_origin(dir);
    std::fs::create_dir_all(repo.join(".driftback")).unwrap();
    std::fs::write(repo.join(".driftback/policy.toml"), policy).unwrap();
    let config = publish_config(dir, server, &format!("escalation_drafts = {drafts}\n"));
    let events = queue_save(dir, attributes);
    let (ok, text) = tokio::task::spawn_blocking({
        let (repo, config) = (repo.clone(), config.clone());
        move || reconcile(&events, &repo, &config, TOKEN)
    })
    .await
    .unwrap();
    assert!(ok, "{text}");
    (repo, origin, text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_independent_held_field_is_split_from_the_written_ones_and_a_dependent_pair_stays_together() {
    // A rule holds the visibility timeout for a person; the retention period alice changed in the
    // same save is independent of it: written in a pull request, while the timeout waits in an issue.
    let server = GitHubStandIn::start().await;
    let dir = tempfile::tempdir().unwrap();
    let policy = "[[rule]]\nname = \"queue-timeout-needs-a-person\"\nresource_type = \"aws_sqs_queue\"\n\
                  attribute = \"visibility_timeout_seconds\"\ndecision = \"escalate\"\n";
    let save = serde_json::json!({"VisibilityTimeout": "600", "MessageRetentionPeriod": "86400"});
    let (repo, origin, text) = reconcile_queue_save(&server, dir.path(), policy, save.clone()).await;
    assert!(text.contains("reconciled: 1"), "{text}");

    let pulls = server.inner.lock().unwrap().pulls.clone();
    assert_eq!(pulls.len(), 1, "{text}");
    // Markdown escapes read back as plain text.
    let body = pulls[0]["body"].as_str().unwrap().replace('\\', "");
    assert!(body.contains("+  message_retention_seconds"), "{body}");
    assert!(body.contains("**reconcile** by the rule `default:reconcile`"), "{body}");
    assert!(!body.contains("visibility_timeout_seconds = 600"), "only the written field is in the diff: {body}");
    assert!(body.contains("split: `message_retention_seconds` of aws_sqs_queue.jobs written"), "{body}");
    assert!(body.contains("queue-timeout-needs-a-person"), "{body}");
    let head = pulls[0]["head"]["ref"].as_str().unwrap();
    let code = git(&origin, &["show", &format!("{head}:main.tf")]);
    assert!(code.contains("message_retention_seconds  = 86400"), "{code}");
    assert!(code.contains("visibility_timeout_seconds = 30"), "{code}");

    let issues = server.inner.lock().unwrap().issues.clone();
    assert_eq!(issues.len(), 1, "{text}");
    let issue = issues[0]["body"].as_str().unwrap().replace('\\', "");
    assert!(issue.starts_with("<!-- driftback:escalation aws_sqs_queue.jobs -->"), "{issue}");
    assert!(issue.contains("held for a person: `visibility_timeout_seconds`"), "{issue}");
    assert!(issue.contains("| `visibility_timeout_seconds` | `30` | `600` |"), "{issue}");
    assert!(!issue.contains("| `message_retention_seconds`"), "the written field does not wait: {issue}");
    assert!(issue.contains("-  visibility_timeout_seconds = 30\n+  visibility_timeout_seconds = 600"), "{issue}");
    assert!(issue.contains("split: "), "{issue}");
    assert_eq!(issues[0]["state"], "open");
    // The change set waits for a person, though part of it was written.
    assert!(pending(&repo).contains("aws_sqs_queue.jobs"), "{}", pending(&repo));

    // A bound over both fields relates them: the timeout below it holds the retention period too.
    // Nothing is written; one issue names both.
    let server = GitHubStandIn::start().await;
    let dir = tempfile::tempdir().unwrap();
    let policy = "[[rule]]\nname = \"queue-timings\"\nresource_type = \"aws_sqs_queue\"\n\
                  attribute = [\"visibility_timeout_seconds\", \"message_retention_seconds\"]\nmin = 60\n";
    let save = serde_json::json!({"VisibilityTimeout": "10", "MessageRetentionPeriod": "86400"});
    let (_, _, text) = reconcile_queue_save(&server, dir.path(), policy, save).await;
    assert!(text.contains("escalated: 1") && text.contains("reconciled: 0"), "{text}");
    assert!(server.inner.lock().unwrap().pulls.is_empty(), "{text}");
    let issues = server.inner.lock().unwrap().issues.clone();
    assert_eq!(issues.len(), 1, "{text}");
    let issue = issues[0]["body"].as_str().unwrap();
    assert!(issue.contains("| `visibility_timeout_seconds` | `30` | `10` |"), "{issue}");
    assert!(issue.contains("| `message_retention_seconds` |"), "{issue}");
    assert!(!issue.contains("split: "), "{issue}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_split_change_sets_held_part_is_a_draft_beside_the_written_pull_request() {
    // As above, with held edits as drafts: the retention period is written in an ordinary pull
    // request; the timeout, which can be written too, waits in a draft on its own `-held` branch.
    let server = GitHubStandIn::start().await;
    let dir = tempfile::tempdir().unwrap();
    let policy = "[[rule]]\nname = \"queue-timeout-needs-a-person\"\nresource_type = \"aws_sqs_queue\"\n\
                  attribute = \"visibility_timeout_seconds\"\ndecision = \"escalate\"\n";
    let save = serde_json::json!({"VisibilityTimeout": "600", "MessageRetentionPeriod": "86400"});
    let (repo, origin, text) = reconcile_queue_save_with(&server, dir.path(), policy, save, true).await;
    assert!(text.contains("reconciled: 1"), "{text}");
    assert!(server.inner.lock().unwrap().issues.is_empty(), "no issue: the held part can be written");
    let pulls = server.inner.lock().unwrap().pulls.clone();
    assert_eq!(pulls.len(), 2, "{pulls:#?}");
    let (drafts, written): (Vec<_>, Vec<_>) = pulls.iter().partition(|p| p["draft"] == true);
    assert_eq!((drafts.len(), written.len()), (1, 1), "{pulls:#?}");
    let (held, written) = (drafts[0]["head"]["ref"].as_str().unwrap(), written[0]["head"]["ref"].as_str().unwrap());
    assert_eq!(held, format!("{written}-held"));
    let code = |branch: &str| git(&origin, &["show", &format!("{branch}:main.tf")]);
    assert!(code(written).contains("message_retention_seconds  = 86400"), "{}", code(written));
    assert!(code(written).contains("visibility_timeout_seconds = 30"), "{}", code(written));
    let held_diff = git(&origin, &["diff", &format!("main...{held}")]);
    assert!(held_diff.contains("+  visibility_timeout_seconds = 600"), "{held_diff}");
    assert!(!held_diff.contains("message_retention_seconds"), "the draft holds only what waits: {held_diff}");
    let body = drafts[0]["body"].as_str().unwrap().replace('\\', "");
    assert!(body.contains("split: ") && body.contains("queue-timeout-needs-a-person"), "{body}");
    assert!(pending(&repo).contains("aws_sqs_queue.jobs"), "{}", pending(&repo));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writable_held_edit_is_a_draft_pull_request_updated_per_resource_and_a_redacted_one_an_issue() {
    let server = GitHubStandIn::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (repo, origin) = repo_with_origin(dir.path());
    let config = publish_config(dir.path(), &server, "labels = [\"drift\"]\n");
    let run = |events: PathBuf| {
        let (repo, config) = (repo.clone(), config.clone());
        tokio::task::spawn_blocking(move || reconcile(&events, &repo, &config, TOKEN))
    };
    let (ok, text) = run(demo_dir().join("events.json")).await.unwrap();
    assert!(ok, "{text}");

    // The world-open SSH rule waits for a person, and its edit can be written: a draft pull
    // request holds it, on its own pushed branch; no issue.
    assert!(server.inner.lock().unwrap().issues.is_empty(), "{:#?}", server.inner.lock().unwrap().issues);
    let pulls = server.inner.lock().unwrap().pulls.clone();
    let drafts: Vec<&serde_json::Value> = pulls.iter().filter(|p| p["draft"] == true).collect();
    assert_eq!(drafts.len(), 1, "{pulls:#?}");
    let draft = drafts[0].clone();
    let number = draft["number"].as_u64().unwrap();
    let head = draft["head"]["ref"].as_str().unwrap().to_string();
    assert!(head.starts_with("driftback/aws_security_group.web-"), "same naming as reconciliations: {head}");
    let posted = server.requests().into_iter().filter(|r| r.method == "POST" && r.path.ends_with("/pulls"));
    assert!(posted.filter(|r| r.body["head"] == head.as_str()).all(|r| r.body["draft"] == true));
    let body = draft["body"].as_str().unwrap();
    assert!(body.starts_with("<!-- driftback:escalation aws_security_group.web -->"), "{body}");
    assert!(
        body.contains("**Held for a person.**")
            && body.contains("`default:security-baseline`")
            && body.contains("EC2.13"),
        "{body}"
    );
    assert!(body.contains("## Timeline") && body.contains("## Who made the change"), "{body}");
    let labels = server.inner.lock().unwrap().labels[&number].clone();
    assert!(labels.contains(&"decision:escalate".to_string()) && labels.contains(&"drift".to_string()), "{labels:?}");
    // Its diff is the held edit, shown in its body as well.
    let diff = git(&origin, &["diff", &format!("main...{head}")]);
    assert!(diff.contains("+  ingress {") && diff.contains("+    cidr_blocks = [\"0.0.0.0/0\"]"), "{diff}");
    let accepting = &body[body.find("## What accepting would write").unwrap()..];
    assert!(accepting.contains("+    cidr_blocks = [\"0.0.0.0/0\"]"), "{accepting}");
    let message = git(&origin, &["log", "-1", "--format=%B", &head]);
    assert!(message.contains("Held for a person") && message.contains("Drift-Decision: escalate"), "{message}");
    let waiting = pending(&repo);
    assert!(waiting.contains(&format!("[draft pull request #{number} opened: ")), "{waiting}");
    // Reconciliations of other resources are ordinary pull requests.
    assert!(pulls.iter().filter(|p| p["number"] != number).all(|p| p["draft"] == false));

    // A later world-open rule on the same group: a new commit on the draft's branch, its body
    // updated, a comment; no second draft, still no issue.
    let mut rdp = demo_record("3f0c1d2e-0000-4000-8000-000000000005");
    rdp["eventID"] = "3f0c1d2e-0000-4000-8000-000000000300".into();
    rdp["eventTime"] = "2024-05-02T10:00:00Z".into();
    rdp["requestParameters"]["ipPermissions"]["items"][0]["fromPort"] = 3389.into();
    rdp["requestParameters"]["ipPermissions"]["items"][0]["toPort"] = 3389.into();
    let rdp_file = events_file(dir.path(), rdp);
    let (ok, text) = run(rdp_file).await.unwrap();
    assert!(ok, "{text}");
    let after = server.inner.lock().unwrap().pulls.clone();
    assert_eq!(after.len(), pulls.len(), "no new pull request: {after:#?}");
    assert!(server.inner.lock().unwrap().issues.is_empty());
    assert_eq!(git(&origin, &["rev-list", "--count", &format!("main..{head}")]), "2");
    let code = git(&origin, &["show", &format!("{head}:main.tf")]);
    assert!(code.contains("from_port   = 22") && code.contains("from_port   = 3389"), "{code}");
    let draft = after.iter().find(|p| p["number"] == number).unwrap();
    let body = draft["body"].as_str().unwrap();
    // The latest change's story, and the diff of everything the draft holds.
    assert!(body.contains("2024-05-02 10:00:00Z") && body.contains("from_port   = 3389"), "{body}");
    assert!(body.contains("+    from_port   = 22\n"), "{body}");
    assert!(!body.contains("terraform.tfstate"), "only Terraform files: {body}");
    let comments = server.inner.lock().unwrap().comments.clone();
    assert!(
        comments
            .iter()
            .any(|(n, c)| *n == number && c.contains("A later change on") && c.contains("to this draft's branch")),
        "{comments:?}"
    );

    // A held value CloudTrail redacted can never be written: an issue, not a draft.
    std::fs::create_dir_all(repo.join(".driftback")).unwrap();
    std::fs::write(
        repo.join(".driftback/policy.toml"),
        "[[rule]]\nname = \"queue-timeout-needs-a-person\"\nresource_type = \"aws_sqs_queue\"\n\
         attribute = \"visibility_timeout_seconds\"\ndecision = \"escalate\"\n",
    )
    .unwrap();
    let redacted = queue_save(dir.path(), serde_json::json!({"VisibilityTimeout": "HIDDEN_DUE_TO_SECURITY_REASONS"}));
    let (ok, text) = run(redacted).await.unwrap();
    assert!(ok && text.contains("escalated: 1"), "{text}");
    let issues = server.inner.lock().unwrap().issues.clone();
    assert_eq!(issues.len(), 1, "{text}");
    assert!(issues[0]["body"].as_str().unwrap().starts_with("<!-- driftback:escalation aws_sqs_queue.jobs -->"));
    let queue_drafts = server.inner.lock().unwrap().pulls.iter().filter(|p| p["draft"] == true).count();
    assert_eq!(queue_drafts, 1, "only the security group's draft");
    // Nothing of the redacted value is pushed anywhere.
    let branches = git(&origin, &["branch", "--list", "driftback/*", "--format=%(refname:short)"]);
    assert!(branches.lines().all(|b| !git(&origin, &["show", &format!("{b}:main.tf")]).contains("HIDDEN")));

    // Raised to 600: writable, so a held draft for the queue beside its issue. Set back to 30: the
    // drifted value returned, and both are closed (the draft without merging).
    let queue = |id: &str, time: &str, timeout: &str| {
        queue_event(dir.path(), id, time, serde_json::json!({ "VisibilityTimeout": timeout }))
    };
    let (ok, text) = run(queue("3f0c1d2e-0000-4000-8000-000000000301", "2024-05-04T10:00:00Z", "600")).await.unwrap();
    assert!(ok && text.contains("escalated: 1"), "{text}");
    let queue_draft = server.inner.lock().unwrap().pulls.last().unwrap().clone();
    assert_eq!(queue_draft["draft"], true, "{queue_draft}");
    assert!(queue_draft["body"].as_str().unwrap().starts_with("<!-- driftback:escalation aws_sqs_queue.jobs -->"));
    let (ok, text) = run(queue("3f0c1d2e-0000-4000-8000-000000000302", "2024-05-04T11:00:00Z", "30")).await.unwrap();
    assert!(ok && text.contains("escalated: 0"), "{text}");
    let state_of = |number: &serde_json::Value| {
        let inner = server.inner.lock().unwrap();
        inner.issues.iter().chain(&inner.pulls).find(|t| t["number"] == *number).unwrap()["state"].clone()
    };
    assert_eq!(state_of(&queue_draft["number"]), "closed", "{text}");
    // The redacted change set could not be planned: its issue names no field, so only a person
    // closes it (docs/publishing.md).
    assert_eq!(marker_fields_of(&issues[0]), Vec::<String>::new(), "{}", issues[0]["body"]);
    assert_eq!(state_of(&issues[0]["number"]), "open", "{text}");
    let merged =
        server.inner.lock().unwrap().pulls.iter().find(|p| p["number"] == queue_draft["number"]).unwrap()["merged"]
            .clone();
    assert_eq!(merged, false);
    assert_eq!(state_of(&serde_json::json!(number)), "open", "the security group's draft still waits");
    let comments = server.inner.lock().unwrap().comments.clone();
    assert!(comments.iter().any(|(n, c)| queue_draft["number"] == *n && c.contains("back to what the code says")));
}

/// The fields an escalation thread's body says it waits on.
fn marker_fields_of(thread: &serde_json::Value) -> Vec<String> {
    driftback_publish::issues::marker_fields(thread["body"].as_str().unwrap_or_default())
}
