//! One root module in several workspaces, each with its own variable file (`-var-file`): a drift
//! in one workspace is written where only that workspace reads it, never into what they share.

use std::path::{Path, PathBuf};

use driftback_terraform::eval::effective_config;
use driftback_terraform::{Address, AttrPath, AttrValue, Op, Repo};
use serde_json::{Value, json};

const MAIN: &str = r#"variable "instance_type" {
  type    = string
  default = "t3.micro"
}

variable "retention" {
  type    = number
  default = 7
}

locals {
  delays = {
    prod    = 10
    staging = 0
  }
}

resource "aws_instance" "app" {
  ami           = "ami-0c55b159cbfafe1f0"
  instance_type = var.instance_type
}

resource "aws_sqs_queue" "jobs" {
  name                      = "jobs-${terraform.workspace}"
  delay_seconds             = local.delays[terraform.workspace]
  message_retention_seconds = var.retention * 86400
}
"#;

fn repo(workspace: &str) -> Repo {
    let mut repo = Repo::from_files(
        [
            (PathBuf::from("main.tf"), MAIN.to_string()),
            (PathBuf::from("terraform.tfvars"), "instance_type = \"t3.small\"\n".to_string()),
            (PathBuf::from("envs/prod.tfvars"), "retention = 14\n".to_string()),
            (PathBuf::from("envs/staging.tfvars"), "instance_type = \"t3.medium\"\n".to_string()),
        ]
        .into_iter()
        .collect(),
    );
    repo.set_workspace(workspace, vec![PathBuf::from(format!("envs/{workspace}.tfvars"))]).unwrap();
    let other = if workspace == "prod" { "staging" } else { "prod" };
    repo.set_other_workspaces(vec![(other.to_string(), vec![PathBuf::from(format!("envs/{other}.tfvars"))])]).unwrap();
    repo
}

fn config(repo: &Repo, address: &str) -> Value {
    effective_config(repo, &Address::parse(address).unwrap()).unwrap()
}

fn set(repo: &mut Repo, address: &str, path: &str, value: Value) {
    let op = Op::Set { path: AttrPath::parse(path).unwrap(), value: AttrValue::Literal(value) };
    driftback_terraform::patch::apply(repo, &Address::parse(address).unwrap(), &op).unwrap();
}

fn text(repo: &Repo, file: &str) -> String {
    repo.text(Path::new(file)).unwrap().to_string()
}

#[test]
fn each_workspace_evaluates_with_its_own_files_and_name() {
    let prod = repo("prod");
    assert_eq!(config(&prod, "aws_instance.app")["instance_type"], "t3.small", "terraform.tfvars, shared");
    let jobs = config(&prod, "aws_sqs_queue.jobs");
    assert_eq!(jobs["name"], "jobs-prod");
    assert_eq!(jobs["delay_seconds"], 10);
    assert_eq!(jobs["message_retention_seconds"], 14 * 86400);
    let staging = repo("staging");
    assert_eq!(config(&staging, "aws_instance.app")["instance_type"], "t3.medium", "its -var-file wins");
    assert_eq!(config(&staging, "aws_sqs_queue.jobs")["delay_seconds"], 0);
    // Without a workspace: `default`, and only the files Terraform loads on its own.
    let plain =
        Repo::from_files([(PathBuf::from("main.tf"), MAIN.replace("local.delays[terraform.workspace]", "0"))].into());
    assert_eq!(config(&plain, "aws_sqs_queue.jobs")["name"], "jobs-default");

    let mut missing = repo("prod");
    let err = missing.set_workspace("prod", vec![PathBuf::from("envs/production.tfvars")]).unwrap_err();
    assert!(err.to_string().contains("envs/production.tfvars"), "{err}");
}

#[test]
fn a_drift_in_one_workspace_lands_in_that_workspaces_file() {
    // prod reads the shared terraform.tfvars: the change goes into envs/prod.tfvars instead.
    let mut prod = repo("prod");
    set(&mut prod, "aws_instance.app", "instance_type", json!("t3.large"));
    assert_eq!(config(&prod, "aws_instance.app")["instance_type"], "t3.large");
    assert!(
        text(&prod, "envs/prod.tfvars").contains("instance_type = \"t3.large\""),
        "{}",
        text(&prod, "envs/prod.tfvars")
    );
    assert_eq!(text(&prod, "terraform.tfvars"), "instance_type = \"t3.small\"\n", "the shared file is untouched");
    assert_eq!(text(&prod, "main.tf"), MAIN);

    // staging's own file already sets it: that line changes.
    let mut staging = repo("staging");
    set(&mut staging, "aws_instance.app", "instance_type", json!("t3.large"));
    assert_eq!(text(&staging, "envs/staging.tfvars"), "instance_type = \"t3.large\"\n");
    assert_eq!(text(&staging, "terraform.tfvars"), "instance_type = \"t3.small\"\n");

    // A value computed by a formula no edit of this workspace's file can express (the evaluator
    // does not invert arithmetic): the only edit left is the shared code, which would change
    // staging too, so it is refused and nothing is written.
    let mut prod = repo("prod");
    let op = Op::Set {
        path: AttrPath::parse("message_retention_seconds").unwrap(),
        value: AttrValue::Literal(json!(30 * 86400)),
    };
    let err = driftback_terraform::patch::apply(&mut prod, &Address::parse("aws_sqs_queue.jobs").unwrap(), &op)
        .unwrap_err()
        .to_string();
    assert!(err.contains("in workspace staging"), "{err}");
    assert_eq!(text(&prod, "main.tf"), MAIN);
    assert_eq!(text(&prod, "envs/prod.tfvars"), "retention = 14\n");
}

#[test]
fn a_map_keyed_by_the_workspace_changes_only_that_workspaces_entry() {
    let mut prod = repo("prod");
    set(&mut prod, "aws_sqs_queue.jobs", "delay_seconds", json!(30));
    assert_eq!(config(&prod, "aws_sqs_queue.jobs")["delay_seconds"], 30);
    let main = text(&prod, "main.tf");
    assert!(main.contains("prod    = 30") && main.contains("staging = 0"), "{main}");
    // staging, evaluated on the patched code, keeps its value.
    let mut staging = prod.clone();
    staging.set_workspace("staging", vec![PathBuf::from("envs/staging.tfvars")]).unwrap();
    assert_eq!(config(&staging, "aws_sqs_queue.jobs")["delay_seconds"], 0);
}
