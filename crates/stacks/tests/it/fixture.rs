//! An infrastructure repository as teams keep them, committed to a real git repository: `app`,
//! one root module in two workspaces (`prod`, `staging`) whose tfvars live under `envs/`, its
//! backend completed by a partial configuration file; `network`, a stack in a second account;
//! `legacy`, local states in two workspaces; a shared module (with a lock file of its own) and
//! a module nobody calls.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use driftback_stacks::{StackConfig, WorkspaceConfig};

pub const NETWORK_ACCOUNT: &str = "222222222222";

pub struct Repo {
    pub dir: tempfile::TempDir,
    pub config: Vec<StackConfig>,
    pub app_bucket: String,
    pub network_bucket: String,
}

impl Repo {
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Write and commit the repository; S3 is reached at `endpoint`.
    pub fn write(endpoint: &str) -> Repo {
        let dir = tempfile::tempdir().unwrap();
        let unique = unique();
        let app_bucket = format!("acme-app-state-{unique}");
        let network_bucket = format!("acme-network-state-{unique}");
        let files: Vec<(&str, String)> = vec![
            (
                "app/main.tf",
                "terraform {\n  backend \"s3\" {}\n}\n\nvariable \"region\" {\n  default = \"eu-west-1\"\n}\nvariable \"queue_name\" {}\n\nprovider \"aws\" {\n  region = var.region\n}\n\nmodule \"queue\" {\n  source = \"../modules/queue\"\n  name   = var.queue_name\n}\n".into(),
            ),
            (
                "app/backend.hcl",
                format!(
                    "bucket         = \"{app_bucket}\"\nkey            = \"app/terraform.tfstate\"\nregion         = \"us-east-1\"\nuse_path_style = true\nsecret_key     = \"not-a-place-for-secrets\"\n"
                ),
            ),
            ("envs/prod/prod.tfvars", "queue_name = \"jobs-prod\"\n".into()),
            ("envs/staging/staging.tfvars", "queue_name = \"jobs-staging\"\nregion     = \"eu-central-1\"\n".into()),
            (
                "modules/queue/main.tf",
                "variable \"name\" {}\n\nresource \"aws_sqs_queue\" \"this\" {\n  name = var.name\n}\n".into(),
            ),
            ("modules/queue/.terraform.lock.hcl", "# lock file of the module's own examples\n".into()),
            ("modules/unused/main.tf", "resource \"aws_s3_bucket\" \"b\" {}\n".into()),
            (
                "network/main.tf",
                format!(
                    "terraform {{\n  backend \"s3\" {{\n    bucket         = \"{network_bucket}\"\n    key            = \"network.tfstate\"\n    region         = \"us-east-1\"\n    use_path_style = true\n  }}\n}}\n\nprovider \"aws\" {{\n  region = \"us-east-1\"\n  assume_role {{\n    role_arn = \"arn:aws:iam::{NETWORK_ACCOUNT}:role/terraform\"\n  }}\n}}\n\nresource \"aws_vpc\" \"main\" {{\n  cidr_block = \"10.0.0.0/16\"\n}}\n"
                ),
            ),
            ("network/.terraform.lock.hcl", "provider \"registry.terraform.io/hashicorp/aws\" {\n  version = \"6.25.0\"\n}\n".into()),
            (
                "legacy/main.tf",
                "provider \"aws\" {\n  region = \"eu-west-1\"\n}\n\nresource \"aws_sqs_queue\" \"q\" {\n  name = \"legacy-${terraform.workspace}-q\"\n}\n\nresource \"aws_s3_bucket\" \"assets\" {\n  bucket = \"acme-shared-assets\"\n}\n".into(),
            ),
            ("legacy/terraform.tfstate", legacy_state("default")),
            ("legacy/terraform.tfstate.d/blue/terraform.tfstate", legacy_state("blue")),
        ];
        for (path, text) in &files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        git(dir.path(), &["init", "-q", "-b", "main"]);
        git(dir.path(), &["add", "-A"]);
        git(dir.path(), &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "infrastructure"]);
        let endpoints = json!({"endpoints": {"s3": endpoint}});
        let config = vec![
            StackConfig {
                path: "app".into(),
                name: Some("app".into()),
                backend_config: vec!["app/backend.hcl".into()],
                settings: endpoints.as_object().unwrap().clone(),
                workspaces: vec![
                    WorkspaceConfig {
                        name: "prod".into(),
                        tfvars: vec!["envs/prod/prod.tfvars".into()],
                        ..Default::default()
                    },
                    WorkspaceConfig {
                        name: "staging".into(),
                        tfvars: vec!["envs/staging/staging.tfvars".into()],
                        ..Default::default()
                    },
                ],
                ..Default::default()
            },
            StackConfig {
                path: "network".into(),
                settings: endpoints.as_object().unwrap().clone(),
                ..Default::default()
            },
        ];
        Repo { dir, config, app_bucket, network_bucket }
    }
}

fn unique() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("{}-{nanos}", std::process::id())
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git").args(args).current_dir(dir).status().unwrap();
    assert!(status.success(), "git {args:?}");
}

/// A state (format version 4) with these `(type, name, attributes)` resources.
pub fn state(lineage: &str, serial: u64, resources: &[(&str, &str, Value)]) -> String {
    let resources: Vec<Value> = resources
        .iter()
        .map(|(t, n, attrs)| {
            json!({"mode": "managed", "type": t, "name": n,
                   "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
                   "instances": [{"schema_version": 0, "attributes": attrs}]})
        })
        .collect();
    serde_json::to_string_pretty(&json!({
        "version": 4, "terraform_version": "1.9.5", "serial": serial, "lineage": lineage,
        "outputs": {}, "resources": resources, "check_results": null
    }))
    .unwrap()
}

fn legacy_state(workspace: &str) -> String {
    let queue = format!("legacy-{workspace}-q");
    state(
        &format!("legacy-{workspace}"),
        4,
        &[
            (
                "aws_sqs_queue",
                "q",
                json!({"id": format!("https://sqs.eu-west-1.amazonaws.com/111111111111/{queue}"), "name": queue,
                       "arn": format!("arn:aws:sqs:eu-west-1:111111111111:{queue}")}),
            ),
            (
                "aws_s3_bucket",
                "assets",
                json!({"id": "acme-shared-assets", "bucket": "acme-shared-assets", "arn": "arn:aws:s3:::acme-shared-assets"}),
            ),
        ],
    )
}
