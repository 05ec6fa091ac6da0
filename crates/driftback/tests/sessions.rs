//! `driftback reconcile` on one actor session's changes to several resources whose values share an
//! origin in the code: the session's change sets plan alongside each other, so one edit of the
//! shared origin makes all of them, on one branch.

mod support;

use std::path::Path;
use std::process::{Command, Output};

use support::{SUBNET_A, SUBNET_B, git, output_text as text, shared_tags_files, tag_subnet, write_file as write};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_driftback");

const MAIN_TF: &str = r#"variable "instance_type" {
  type    = string
  default = "t3.micro"
}

resource "aws_instance" "app" {
  count         = 2
  ami           = "ami-0c55b159cbfafe1f0"
  instance_type = var.instance_type
}
"#;

/// `user` resizes instance `id` to `size` at `time`, as CloudTrail logs it.
fn resize(id: &str, user: &str, time: &str, size: &str, event: &str) -> Value {
    json!({
        "eventVersion": "1.08",
        "userIdentity": {"type": "IAMUser", "arn": format!("arn:aws:iam::123456789012:user/{user}"),
                         "accountId": "123456789012", "userName": user},
        "eventTime": time, "eventSource": "ec2.amazonaws.com", "eventName": "ModifyInstanceAttribute",
        "awsRegion": "us-east-1", "sourceIPAddress": "203.0.113.87", "userAgent": "AWS Internal",
        "requestParameters": {"instanceId": id, "instanceType": {"value": size}},
        "responseElements": {"_return": true}, "eventID": event, "readOnly": false, "eventType": "AwsApiCall",
        "managementEvent": true, "recipientAccountId": "123456789012"
    })
}

/// The repository (two instances of one block, both sized by one variable) and `events`.
fn setup(root: &Path, events: Vec<Value>) -> std::path::PathBuf {
    let repo = root.join("infra");
    write(&repo.join("main.tf"), MAIN_TF);
    write(&repo.join("terraform.tfvars"), "instance_type = \"t3.small\"\n");
    let instance = |index: u32, id: &str| json!({"index_key": index, "attributes": {"id": id, "ami": "ami-0c55b159cbfafe1f0", "instance_type": "t3.small"}});
    let state = json!({"version": 4, "resources": [{"mode": "managed", "type": "aws_instance", "name": "app",
        "instances": [instance(0, "i-0aaaaaaaaaaaaaaa1"), instance(1, "i-0aaaaaaaaaaaaaaa2")]}]});
    write(&repo.join("terraform.tfstate"), &state.to_string());
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "."]);
    git(&repo, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init"]);
    write(&root.join("events.json"), &json!({ "Records": events }).to_string());
    repo
}

fn reconcile(root: &Path, repo: &Path) -> Output {
    Command::new(BIN)
        .args(["reconcile", "--events"])
        .arg(root.join("events.json"))
        .arg("--repo")
        .arg(repo)
        .env_remove("DRIFTBACK_LLM_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap()
}

fn branches(repo: &Path) -> Vec<String> {
    git(repo, &["branch", "--list", "driftback/*", "--format=%(refname:short)"]).lines().map(str::to_string).collect()
}

#[test]
fn one_sessions_resizes_of_every_instance_are_one_edit_of_their_shared_variable_on_one_branch() {
    let root = tempfile::tempdir().unwrap();
    let repo = setup(
        root.path(),
        vec![
            resize("i-0aaaaaaaaaaaaaaa1", "dave", "2024-10-28T12:15:02Z", "t3.large", "e-1"),
            resize("i-0aaaaaaaaaaaaaaa2", "dave", "2024-10-28T12:16:10Z", "t3.large", "e-2"),
        ],
    );
    let out = reconcile(root.path(), &repo);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("reconciled: 2"), "{}", text(&out));
    let branches = branches(&repo);
    assert_eq!(branches.len(), 1, "one branch for both change sets: {branches:?}\n{}", text(&out));
    assert_eq!(git(&repo, &["diff", "--name-only", "main", &branches[0]]).trim(), "terraform.tfvars");
    let tfvars = git(&repo, &["show", &format!("{}:terraform.tfvars", branches[0])]);
    assert_eq!(tfvars, "instance_type = \"t3.large\"\n");
    let message = git(&repo, &["log", "-1", "--format=%B", &branches[0]]);
    assert!(message.contains("the edit also makes change set") && message.contains("aws_instance.app[1]"), "{message}");
}

#[test]
fn another_actors_or_another_sizes_change_never_licenses_the_shared_edit() {
    for (user, size) in [("erin", "t3.large"), ("dave", "t3.xlarge")] {
        let root = tempfile::tempdir().unwrap();
        let repo = setup(
            root.path(),
            vec![
                resize("i-0aaaaaaaaaaaaaaa1", "dave", "2024-10-28T12:15:02Z", "t3.large", "e-1"),
                resize("i-0aaaaaaaaaaaaaaa2", user, "2024-10-28T12:16:10Z", size, "e-2"),
            ],
        );
        let out = reconcile(root.path(), &repo);
        assert!(out.status.success(), "{}", text(&out));
        // Each change set writes its own instance's value, narrowly, on its own branch.
        let branches = branches(&repo);
        assert_eq!(branches.len(), 2, "{user} {size}: {}", text(&out));
        for branch in branches {
            let changed = git(&repo, &["diff", "--name-only", "main", &branch]);
            assert_eq!(changed.trim(), "main.tf", "{user} {size}: {branch} edits the shared value");
        }
    }
}

/// `policy explain` decides each change set of a session as `reconcile` does, siblings included:
/// the same decision with the same evidence, and the same siblings whose changes the edit makes too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_explain_decides_a_sessions_change_sets_as_reconcile_does() {
    let root = tempfile::tempdir().unwrap();
    let repo = root.path().join("infra");
    for (path, text) in shared_tags_files() {
        write(&repo.join(path), &text);
    }
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "."]);
    git(&repo, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init"]);
    let records = vec![
        tag_subnet(SUBNET_A, "2025-03-04T09:10:00Z", "tag-a"),
        tag_subnet(SUBNET_B, "2025-03-04T09:10:40Z", "tag-b"),
    ];
    write(&root.path().join("events.json"), &json!({ "Records": records }).to_string());

    let explain = Command::new(BIN)
        .args(["policy", "explain", "--json", "--event"])
        .arg(root.path().join("events.json"))
        .arg("--repo")
        .arg(&repo)
        .env_remove("DRIFTBACK_LLM_API_KEY")
        .output()
        .unwrap();
    assert!(explain.status.success(), "{}", text(&explain));
    let explained: Value = serde_json::from_slice(&explain.stdout).unwrap();
    let out = reconcile(root.path(), &repo);
    assert!(out.status.success(), "{}", text(&out));

    let store = driftback_store::Store::open_sqlite(&repo.join(".git/driftback/kb.sqlite")).await.unwrap();
    let sets = explained["change_sets"].as_array().unwrap();
    let ids: Vec<&str> = sets.iter().map(|c| c["change_set"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 2, "{explained}");
    for set in sets {
        let id = set["change_set"].as_str().unwrap();
        let row = store.change_set(id).await.unwrap().unwrap_or_else(|| panic!("reconcile recorded no {id}"));
        let logged = store.decisions(id).await.unwrap();
        assert_eq!(set["decision"], logged.last().unwrap().decision.evidence, "{id}");
        // The siblings the decided edit makes too: named in reconcile's notes, listed by explain.
        let written_with: Vec<&str> = ids
            .iter()
            .copied()
            .filter(|other| row.notes.iter().any(|n| n.contains(&format!("also makes change set {other} "))))
            .collect();
        let listed: Vec<&str> =
            set["written_with"].as_array().into_iter().flatten().map(|v| v.as_str().unwrap()).collect();
        assert_eq!(listed, written_with, "{id}: {:?}", row.notes);
        assert_eq!(listed.len(), 1, "each change set's edit makes the other's: {explained}");
    }
    store.close().await;
}
