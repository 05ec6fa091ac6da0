//! `driftback reconcile --workspace`: one root module in two workspaces with their own variable
//! files. A drift in prod lands in prod's file, never in what the workspaces share.

mod support;

use std::path::Path;
use std::process::{Command, Output};

use support::{git, output_text as text, write_file as write};

use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_driftback");

const MAIN_TF: &str = r#"variable "instance_type" {
  type    = string
  default = "t3.micro"
}

resource "aws_instance" "app" {
  ami           = "ami-0c55b159cbfafe1f0"
  instance_type = var.instance_type
}
"#;

/// The repository, committed, and the prod state's instance type change as CloudTrail logs it.
fn setup(root: &Path) -> std::path::PathBuf {
    let repo = root.join("infra");
    write(&repo.join("main.tf"), MAIN_TF);
    write(&repo.join("terraform.tfvars"), "instance_type = \"t3.small\"\n");
    write(&repo.join("envs/prod.tfvars"), "# prod\n");
    write(&repo.join("envs/staging.tfvars"), "instance_type = \"t3.medium\"\n");
    let state = json!({"version": 4, "resources": [{"mode": "managed", "type": "aws_instance", "name": "app",
        "instances": [{"attributes": {"id": "i-0prod000000000001", "ami": "ami-0c55b159cbfafe1f0", "instance_type": "t3.small"}}]}]});
    write(&repo.join("terraform.tfstate"), &state.to_string());
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "."]);
    git(&repo, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init"]);
    let events = json!({"Records": [{
        "eventVersion": "1.08",
        "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/dave", "accountId": "123456789012", "userName": "dave"},
        "eventTime": "2024-10-28T12:15:02Z", "eventSource": "ec2.amazonaws.com", "eventName": "ModifyInstanceAttribute",
        "awsRegion": "us-east-1", "sourceIPAddress": "203.0.113.87", "userAgent": "AWS Internal",
        "requestParameters": {"instanceId": "i-0prod000000000001", "instanceType": {"value": "t3.large"}},
        "responseElements": {"_return": true}, "eventID": "ws-1", "readOnly": false, "eventType": "AwsApiCall",
        "managementEvent": true, "recipientAccountId": "123456789012"}]});
    write(&root.join("events.json"), &events.to_string());
    repo
}

fn reconcile(root: &Path, repo: &Path, extra: &[&str]) -> Output {
    Command::new(BIN)
        .args(["reconcile", "--events"])
        .arg(root.join("events.json"))
        .arg("--repo")
        .arg(repo)
        .args(extra)
        .env_remove("DRIFTBACK_LLM_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap()
}

#[test]
fn a_drift_in_one_workspace_is_written_into_its_own_variable_file() {
    let root = tempfile::tempdir().unwrap();
    let repo = setup(root.path());
    let out = reconcile(
        root.path(),
        &repo,
        &["--workspace", "prod", "--var-file", "envs/prod.tfvars", "--other-workspace", "staging=envs/staging.tfvars"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("reconciled: 1"), "{}", text(&out));
    let branch = git(&repo, &["branch", "--list", "driftback/*", "--format=%(refname:short)"]);
    let changed = git(&repo, &["diff", "--name-only", "main", branch.trim()]);
    assert_eq!(changed.trim(), "envs/prod.tfvars", "only prod's file changes");
    let prod = git(&repo, &["show", &format!("{}:envs/prod.tfvars", branch.trim())]);
    assert!(prod.contains("instance_type = \"t3.large\""), "{prod}");
}

#[test]
fn workspace_arguments_are_checked() {
    let root = tempfile::tempdir().unwrap();
    let repo = setup(root.path());
    for (args, expect) in [
        (vec!["--workspace", "prod", "--var-file", "envs/production.tfvars"], "envs/production.tfvars"),
        (vec!["--workspace", "prod", "--var-file", "../outside.tfvars"], "inside the repository"),
        (vec!["--workspace", "prod", "--other-workspace", "staging"], "NAME=FILE"),
        (vec!["--var-file", "envs/prod.tfvars"], "--workspace"),
    ] {
        let out = reconcile(root.path(), &repo, &args);
        assert!(!out.status.success() && text(&out).contains(expect), "{args:?}: {}", text(&out));
    }
    assert!(git(&repo, &["branch", "--list", "driftback/*"]).trim().is_empty(), "nothing written");
}
