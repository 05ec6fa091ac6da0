//! `driftback serve` on a repository of many root modules whose states live in moto's S3: `app`,
//! one root module in two workspaces (`prod`, `staging`) with a tfvars file each and a shared
//! module under `modules/`; `network`, a stack in a second account (its provider assumes a role
//! there). Changes arrive through EventBridge and through the organisation trail's log files.
//! Each lands on a branch named for its stack and workspace that edits only that workspace's
//! files; the store says which stack, workspace and state version each decision used, and a new
//! state version is read again. (Ambiguity and adoption are tested on the router itself, in
//! `driver::stacks`.)
//!
//! Run through scripts/moto.sh (DRIFTBACK_TEST_MOTO_ENDPOINT); without it the test says so and
//! passes, unless DRIFTBACK_REQUIRE_SERVICES is set.

use aws_sdk_s3::primitives::ByteStream;
use serde_json::{Value, json};

mod support;
use support::{
    Daemon, bare_remote_with, eventbridge, eventbridge_entries, free_port, git, gzip, moto_endpoint, queue_arn,
    queue_messages, remote_branches, route_cloudtrail_to_queue, s3_client, sqs_client, trail_bucket, trail_daemon_env,
    wait_for,
};

const APP_ACCOUNT: &str = "111111111111";
const NETWORK_ACCOUNT: &str = "222222222222";

const APP_MAIN: &str = r#"terraform {
  backend "s3" {}
}

variable "region" {
  type    = string
  default = "eu-west-1"
}

variable "queue_name" {
  type = string
}

variable "visibility_timeout" {
  type    = number
  default = 30
}

provider "aws" {
  region = var.region
}

module "queue" {
  source             = "../modules/queue"
  name               = var.queue_name
  visibility_timeout = var.visibility_timeout
}
"#;

const QUEUE_MODULE: &str = r#"variable "name" {
  type = string
}

variable "visibility_timeout" {
  type = number
}

resource "aws_sqs_queue" "this" {
  name                       = var.name
  visibility_timeout_seconds = var.visibility_timeout
}
"#;

fn network_main(bucket: &str) -> String {
    format!(
        r#"terraform {{
  backend "s3" {{
    bucket         = "{bucket}"
    key            = "network.tfstate"
    region         = "us-east-1"
    use_path_style = true
  }}
}}

provider "aws" {{
  region = "us-east-1"
  assume_role {{
    role_arn = "arn:aws:iam::{NETWORK_ACCOUNT}:role/terraform"
  }}
}}

resource "aws_vpc" "main" {{
  cidr_block = "10.0.0.0/16"
}}

resource "aws_s3_bucket" "flow_logs" {{
  bucket = "acme-flow-logs"
}}
"#
    )
}

/// A state (format version 4) of `(module, type, name, attributes)` resources.
fn state(lineage: &str, serial: u64, resources: &[(&str, &str, &str, Value)]) -> String {
    let resources: Vec<Value> = resources
        .iter()
        .map(|(module, rtype, name, attrs)| {
            let mut r = json!({"mode": "managed", "type": rtype, "name": name,
                "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
                "instances": [{"schema_version": 0, "attributes": attrs}]});
            if !module.is_empty() {
                r["module"] = json!(module);
            }
            r
        })
        .collect();
    json!({"version": 4, "terraform_version": "1.9.5", "serial": serial, "lineage": lineage, "outputs": {},
           "resources": resources})
    .to_string()
}

fn queue(name: &str, region: &str) -> Value {
    json!({"id": format!("https://sqs.{region}.amazonaws.com/{APP_ACCOUNT}/{name}"), "name": name,
           "arn": format!("arn:aws:sqs:{region}:{APP_ACCOUNT}:{name}"), "url": format!("https://sqs.{region}.amazonaws.com/{APP_ACCOUNT}/{name}"),
           "visibility_timeout_seconds": 30, "delay_seconds": 0, "message_retention_seconds": 345600,
           "max_message_size": 262144, "receive_wait_time_seconds": 0, "fifo_queue": false, "tags": {}, "tags_all": {}})
}

fn record(id: &str, account: &str, region: &str, source: &str, name: &str, request: Value) -> Value {
    json!({
        "eventVersion": "1.09",
        "userIdentity": {"type": "IAMUser", "principalId": "AIDAEXAMPLEALICE",
                         "arn": format!("arn:aws:iam::{account}:user/alice"), "accountId": account, "userName": "alice"},
        "eventTime": "2026-11-20T10:00:00Z",
        "eventSource": source,
        "eventName": name,
        "awsRegion": region,
        "sourceIPAddress": "203.0.113.10",
        "userAgent": "aws-cli/2.15.30 md/awscrt#0.19.19 ua/2.0 os/linux#6.5 md/arch#x86_64 lang/python#3.11.8",
        "requestParameters": request,
        "responseElements": null,
        "requestID": format!("req-{id}"),
        "eventID": format!("5a0c1d2e-0000-4000-8000-00000000000{id}"),
        "readOnly": false,
        "eventType": "AwsApiCall",
        "managementEvent": true,
        "recipientAccountId": account,
        "eventCategory": "Management"
    })
}

fn set_visibility(id: &str, name: &str, region: &str, seconds: &str) -> Value {
    record(
        id,
        APP_ACCOUNT,
        region,
        "sqs.amazonaws.com",
        "SetQueueAttributes",
        json!({"queueUrl": format!("https://sqs.{region}.amazonaws.com/{APP_ACCOUNT}/{name}"),
               "attributes": {"VisibilityTimeout": seconds}}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_routes_each_change_to_its_stack_and_workspace_with_states_in_s3() {
    let Some(endpoint) = moto_endpoint("stacks serve test") else { return };
    let root = tempfile::tempdir().unwrap();
    let suffix = format!("{}-{}", std::process::id(), free_port());
    let (app_bucket, network_bucket) = (format!("acme-app-state-{suffix}"), format!("acme-network-state-{suffix}"));

    // The states, where Terraform's S3 backend keeps them.
    let s3 = s3_client(&endpoint).await;
    for bucket in [&app_bucket, &network_bucket] {
        s3.create_bucket().bucket(bucket).send().await.unwrap();
    }
    let put = async |bucket: &str, key: &str, body: String| {
        s3.put_object().bucket(bucket).key(key).body(ByteStream::from(body.into_bytes())).send().await.unwrap();
    };
    put(
        &app_bucket,
        "env:/prod/app/terraform.tfstate",
        state("app-prod", 12, &[("module.queue", "aws_sqs_queue", "this", queue("jobs-prod", "eu-west-1"))]),
    )
    .await;
    put(
        &app_bucket,
        "env:/staging/app/terraform.tfstate",
        state("app-staging", 3, &[("module.queue", "aws_sqs_queue", "this", queue("jobs-staging", "eu-central-1"))]),
    )
    .await;
    let flow_logs = json!({"id": "acme-flow-logs", "bucket": "acme-flow-logs", "arn": "arn:aws:s3:::acme-flow-logs"});
    let vpc = json!({"id": "vpc-0a1", "arn": format!("arn:aws:ec2:us-east-1:{NETWORK_ACCOUNT}:vpc/vpc-0a1"),
                     "cidr_block": "10.0.0.0/16", "enable_dns_hostnames": false, "enable_dns_support": true,
                     "instance_tenancy": "default", "tags": {}, "tags_all": {}});
    put(
        &network_bucket,
        "network.tfstate",
        state("network", 40, &[("", "aws_vpc", "main", vpc), ("", "aws_s3_bucket", "flow_logs", flow_logs.clone())]),
    )
    .await;

    // The repository: app's backend completed by a partial configuration file.
    let network = network_main(&network_bucket);
    let backend = format!(
        "bucket         = \"{app_bucket}\"\nkey            = \"app/terraform.tfstate\"\nregion         = \"us-east-1\"\nuse_path_style = true\n"
    );
    let prod_vars = "queue_name = \"jobs-prod\"\n";
    let staging_vars = "queue_name = \"jobs-staging\"\nregion     = \"eu-central-1\"\n";
    let remote = bare_remote_with(
        root.path(),
        &[
            ("app/main.tf", APP_MAIN),
            ("app/backend.hcl", &backend),
            ("envs/prod.tfvars", prod_vars),
            ("envs/staging.tfvars", staging_vars),
            ("modules/queue/main.tf", QUEUE_MODULE),
            ("network/main.tf", &network),
        ],
    );
    let config = root.path().join("driftback.toml");
    std::fs::write(
        &config,
        format!(
            r#"[[stack]]
path = "app"
backend_config = ["app/backend.hcl"]
settings = {{ endpoints = {{ s3 = "{endpoint}" }} }}

[[stack.workspace]]
name = "prod"
tfvars = ["envs/prod.tfvars"]

[[stack.workspace]]
name = "staging"
tfvars = ["envs/staging.tfvars"]

[[stack]]
path = "network"
settings = {{ endpoints = {{ s3 = "{endpoint}" }} }}
"#
        ),
    )
    .unwrap();

    // One queue fed by the EventBridge rule and by the trail bucket's notifications.
    let sqs = sqs_client(&endpoint).await;
    let queue_url = sqs.create_queue().queue_name(format!("stacks-{suffix}")).send().await.unwrap().queue_url.unwrap();
    let arn = queue_arn(&sqs, &queue_url).await;
    let http = reqwest::Client::new();
    route_cloudtrail_to_queue(&http, &endpoint, &format!("cloudtrail-{suffix}"), &arn).await;
    let trail = format!("org-trail-{suffix}");
    trail_bucket(&s3, &trail, &arn).await;

    // prod's queue through EventBridge; staging's queue and the network account's VPC in one
    // organisation log file.
    let prod_change = set_visibility("1", "jobs-prod", "eu-west-1", "60");
    let staging_change = set_visibility("2", "jobs-staging", "eu-central-1", "120");
    let vpc_change = record(
        "3",
        NETWORK_ACCOUNT,
        "us-east-1",
        "ec2.amazonaws.com",
        "ModifyVpcAttribute",
        json!({"vpcId": "vpc-0a1", "enableDnsHostnames": {"value": true}}),
    );
    let out = eventbridge(&http, &endpoint, "PutEvents", eventbridge_entries(&[prod_change])).await;
    assert_eq!(out["FailedEntryCount"].as_u64().unwrap_or(0), 0, "{out}");
    let key = format!(
        "AWSLogs/o-exampleorg1/{NETWORK_ACCOUNT}/CloudTrail/us-east-1/2026/11/20/{NETWORK_ACCOUNT}_CloudTrail_us-east-1_20261120T1000Z_x.json.gz"
    );
    let log = gzip(json!({"Records": [staging_change, vpc_change]}).to_string().as_bytes());
    s3.put_object().bucket(&trail).key(&key).body(log.into()).send().await.unwrap();

    let listen = format!("127.0.0.1:{}", free_port());
    let workdir = root.path().join("work");
    let mut envs = trail_daemon_env(&endpoint, &queue_url, &trail, &remote, &workdir, &listen);
    envs.push(("DRIFTBACK_CONFIG", config.display().to_string()));
    envs.push(("DRIFTBACK_GROUP__QUIET_WINDOW_SECS", "1".to_string()));
    let mut daemon = Daemon::start(root.path(), &envs, 1);
    wait_for("three branches and an empty queue", &mut daemon, async || {
        remote_branches(&remote).len() >= 3 && queue_messages(&sqs, &queue_url).await == 0
    })
    .await;

    // Each change on its stack's and workspace's branch, editing that workspace's file only.
    let branches = remote_branches(&remote);
    let branch = |prefix: &str| {
        branches.iter().find(|b| b.starts_with(prefix)).unwrap_or_else(|| panic!("no {prefix}* in {branches:?}"))
    };
    let prod = branch("driftback/app/prod/module.queue.aws_sqs_queue.this-");
    let staging = branch("driftback/app/staging/module.queue.aws_sqs_queue.this-");
    let vpc = branch("driftback/network/default/aws_vpc.main-");
    let changed = |b: &str| -> Vec<String> {
        git(&remote, &["diff", "--name-only", "main", b]).lines().map(str::to_string).collect()
    };
    assert_eq!(changed(prod), vec!["envs/prod.tfvars".to_string()]);
    assert_eq!(changed(staging), vec!["envs/staging.tfvars".to_string()]);
    assert_eq!(changed(vpc), vec!["network/main.tf".to_string()]);
    assert!(git(&remote, &["diff", "main", prod]).contains("+visibility_timeout = 60"), "{}", daemon.log());
    assert!(git(&remote, &["diff", "main", staging]).contains("+visibility_timeout = 120"));
    assert!(git(&remote, &["diff", "main", vpc]).contains("+  enable_dns_hostnames = true"));
    let title = git(&remote, &["log", "-1", "--format=%s", prod]);
    assert!(title.contains("in app (prod)"), "{title}");

    // A new prod state version (someone applied): read again, and the decision records it.
    let prod_state =
        state("app-prod", 13, &[("module.queue", "aws_sqs_queue", "this", queue("jobs-prod", "eu-west-1"))]);
    put(&app_bucket, "env:/prod/app/terraform.tfstate", prod_state).await;
    let again = set_visibility("4", "jobs-prod", "eu-west-1", "90");
    eventbridge(&http, &endpoint, "PutEvents", eventbridge_entries(&[again])).await;
    wait_for("a fourth branch", &mut daemon, async || remote_branches(&remote).len() >= 4).await;
    let status = daemon.terminate();
    assert!(status.success(), "exit {status:?}:\n{}", daemon.log());

    // The knowledge base, as an operator queries it.
    let head = s3.head_object().bucket(&app_bucket).key("env:/prod/app/terraform.tfstate").send().await.unwrap();
    let newest = format!("etag {}", head.e_tag().unwrap().trim_matches('"'));
    let store = driftback_store::Store::open_sqlite(&workdir.join(".git/driftback/kb.sqlite")).await.unwrap();
    assert_eq!(store.stats().await.unwrap().events, 4);
    store.close().await;
    use sqlx::Connection;
    let url = format!("sqlite://{}", workdir.join(".git/driftback/kb.sqlite").display());
    let mut db = sqlx::SqliteConnection::connect(&url).await.unwrap();
    let decided: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT stack, workspace, state_version FROM change_sets WHERE status = 'reconciled' \
         ORDER BY stack, workspace, last_event_time",
    )
    .fetch_all(&mut db)
    .await
    .unwrap();
    let places: Vec<String> = decided.iter().map(|(s, w, _)| format!("{s}/{w}")).collect();
    assert_eq!(places, ["app/prod", "app/prod", "app/staging", "network/default"], "{decided:?}");
    assert!(decided.iter().all(|(_, _, v)| v.starts_with("etag ")), "{decided:?}");
    assert_ne!(decided[0].2, newest, "the first prod change was decided on the first state version");
    assert_eq!(decided[1].2, newest, "the later one on the new version: {decided:?}");
    // The ownership ledger keeps the same address in two workspaces apart.
    let ledger: Vec<(String, String)> =
        sqlx::query_as("SELECT DISTINCT address, attribute_path FROM field_changes ORDER BY address")
            .fetch_all(&mut db)
            .await
            .unwrap();
    let queue = "module.queue.aws_sqs_queue.this";
    assert_eq!(
        ledger,
        [
            ("aws_vpc.main in network (default)".to_string(), "enable_dns_hostnames".to_string()),
            (format!("{queue} in app (prod)"), "visibility_timeout_seconds".to_string()),
            (format!("{queue} in app (staging)"), "visibility_timeout_seconds".to_string()),
        ]
    );
}
