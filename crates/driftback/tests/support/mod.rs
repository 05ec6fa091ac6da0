//! Helpers shared by the daemon's integration tests (`serve`, `backfill`) and the latency bench
//! (`benches/latency.rs`): the demo project in a bare git remote, git run as a user would, and
//! SQS and EventBridge on moto's server.
// Each test file compiles this module on its own and uses only part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

/// The bundled demo (`crates/driftback/demo`).
pub fn demo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("demo")
}

/// Runs git in `dir` and returns its standard output; panics with git's error when it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A bare remote under `root` holding the demo project on `main`.
pub fn bare_remote(root: &Path) -> PathBuf {
    let project = demo_dir().join("project");
    let read = |name: &str| std::fs::read_to_string(project.join(name)).unwrap();
    bare_remote_with(root, &[("main.tf", &read("main.tf")), ("terraform.tfstate", &read("terraform.tfstate"))])
}

/// A bare remote under `root` whose `main` holds `files` (name, text) in one commit.
pub fn bare_remote_with(root: &Path, files: &[(&str, &str)]) -> PathBuf {
    let src = root.join("src");
    std::fs::create_dir_all(&src).unwrap();
    for (name, text) in files {
        std::fs::write(src.join(name), text).unwrap();
    }
    git(&src, &["init", "-q", "-b", "main"]);
    git(&src, &["add", "."]);
    git(&src, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init"]);
    let remote = root.join("remote.git");
    let out = Command::new("git").args(["clone", "-q", "--bare"]).arg(&src).arg(&remote).output().unwrap();
    assert!(out.status.success(), "git clone --bare: {}", String::from_utf8_lossy(&out.stderr));
    remote
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// An SQS client for moto's server at `endpoint`.
pub async fn sqs_client(endpoint: &str) -> aws_sdk_sqs::Client {
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .load()
        .await;
    aws_sdk_sqs::Client::new(&sdk)
}

/// The ARN of the queue at `queue_url`.
pub async fn queue_arn(sqs: &aws_sdk_sqs::Client, queue_url: &str) -> String {
    use aws_sdk_sqs::types::QueueAttributeName;
    sqs.get_queue_attributes()
        .queue_url(queue_url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .unwrap()
        .attributes()
        .unwrap()[&QueueAttributeName::QueueArn]
        .clone()
}

/// EventBridge over its JSON protocol, as the AWS SDKs speak it; panics with the answer when the
/// call fails, and returns the answer's JSON (null when it has none).
pub async fn eventbridge(http: &reqwest::Client, endpoint: &str, action: &str, body: Value) -> Value {
    let response = http
        .post(endpoint)
        .header("Content-Type", "application/x-amz-json-1.1")
        .header("X-Amz-Target", format!("AWSEvents.{action}"))
        .header(
            "Authorization",
            "AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/events/aws4_request, SignedHeaders=host, \
             Signature=0",
        )
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    assert!(status.is_success(), "EventBridge {action}: {status} {text}");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// An EventBridge rule `rule` sending CloudTrail API calls on the default bus to the queue
/// `queue_arn`, as the deployment guide sets it up.
pub async fn route_cloudtrail_to_queue(http: &reqwest::Client, endpoint: &str, rule: &str, queue_arn: &str) {
    let pattern = json!({"detail-type": ["AWS API Call via CloudTrail"]}).to_string();
    eventbridge(http, endpoint, "PutRule", json!({"Name": rule, "EventPattern": pattern, "State": "ENABLED"})).await;
    eventbridge(http, endpoint, "PutTargets", json!({"Rule": rule, "Targets": [{"Id": "queue", "Arn": queue_arn}]}))
        .await;
}
