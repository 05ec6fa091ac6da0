//! Event-to-pushed-branch latency of `driftback serve` on a generated monorepo: 20 stacks (root
//! modules with an S3 backend block), 2,000 `.tf` files, 50,000 SQS queues, one account per stack;
//! the states (about 100 MB in all) in moto's S3, the feed through EventBridge (moto) into SQS.
//! One `SetQueueAttributes` at a time, each on another stack in turn; the daemon routes it to the
//! stack whose state manages the queue, commits on that stack's branch, pushes it to a bare remote
//! and records the outcome. Latency is from the record's creation to the daemon's "change set
//! reconciled" log line, which follows the push and the store write.
//!
//!   scripts/moto.sh cargo bench -p driftback --bench monorepo [-- SAMPLES]
//!
//! The first change set is cold: the daemon discovers the stacks and reads every state then. The
//! daemon's peak memory is its VmHWM.

use std::time::Duration;

use aws_sdk_s3::primitives::ByteStream;
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

#[path = "../tests/support/mod.rs"]
mod support;

const STACKS: usize = 20;
const FILES_PER_STACK: usize = 100;
const QUEUES_PER_FILE: usize = 25;
const REGION: &str = "eu-west-1";

fn account(stack: usize) -> String {
    format!("{:012}", 100_000 + stack)
}

fn queue_url(stack: usize, file: usize, n: usize) -> String {
    format!("https://sqs.{REGION}.amazonaws.com/{}/s{stack:02}-f{file:03}-q{n:02}", account(stack))
}

/// Files by path (or state objects by key) and their texts.
type Texts = Vec<(String, String)>;

/// The repository's files and each stack's state object.
fn monorepo(bucket: &str, endpoint: &str) -> (Texts, Texts) {
    let mut files = Vec::new();
    let mut states = Vec::new();
    for s in 0..STACKS {
        let dir = format!("stacks/s{s:02}");
        let mut main = (
            format!("{dir}/main.tf"),
            format!(
                "terraform {{\n  backend \"s3\" {{\n    bucket         = \"{bucket}\"\n    key            = \"stacks/s{s:02}/terraform.tfstate\"\n    region         = \"us-east-1\"\n    use_path_style = true\n    endpoints = {{\n      s3 = \"{endpoint}\"\n    }}\n  }}\n}}\n\nprovider \"aws\" {{\n  region              = \"{REGION}\"\n  allowed_account_ids = [\"{}\"]\n}}\n",
                account(s)
            ),
        );
        let mut resources = Vec::with_capacity(FILES_PER_STACK * QUEUES_PER_FILE);
        for f in 0..FILES_PER_STACK {
            // The first file holds the backend and the provider too.
            let mut text = if f == 0 { std::mem::take(&mut main.1) + "\n" } else { String::new() };
            for q in 0..QUEUES_PER_FILE {
                let name = format!("s{s:02}-f{f:03}-q{q:02}");
                text.push_str(&format!(
                    "resource \"aws_sqs_queue\" \"f{f:03}_q{q:02}\" {{\n  name                       = \"{name}\"\n  visibility_timeout_seconds = 30\n\n  tags = {{\n    Team = \"platform\"\n  }}\n}}\n\n"
                ));
                let url = queue_url(s, f, q);
                resources.push(json!({
                    "mode": "managed", "type": "aws_sqs_queue", "name": format!("f{f:03}_q{q:02}"),
                    "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
                    "instances": [{"schema_version": 0, "attributes": {
                        "id": url, "url": url, "name": name,
                        "arn": format!("arn:aws:sqs:{REGION}:{}:{name}", account(s)),
                        "visibility_timeout_seconds": 30, "message_retention_seconds": 345600,
                        "delay_seconds": 0, "max_message_size": 262144, "receive_wait_time_seconds": 0,
                        "policy": format!("{{\"Version\":\"2012-10-17\",\"Statement\":[{}]}}", "{\"Effect\":\"Allow\"},".repeat(80).trim_end_matches(',')),
                        "tags": {"Team": "platform"}, "tags_all": {"Team": "platform"}}}]
                }));
            }
            let path = if f == 0 { main.0.clone() } else { format!("{dir}/queues_{f:03}.tf") };
            files.push((path, text));
        }
        let state = json!({"version": 4, "terraform_version": "1.9.5", "serial": 1, "lineage": format!("s{s}"),
                           "outputs": {}, "resources": resources});
        states.push((format!("stacks/s{s:02}/terraform.tfstate"), state.to_string()));
    }
    (files, states)
}

fn record(i: usize, now: DateTime<Utc>) -> Value {
    let stack = i % STACKS;
    let (file, queue) = ((i / STACKS) % FILES_PER_STACK, (i * 7) % QUEUES_PER_FILE);
    json!({
        "eventVersion": "1.09",
        "userIdentity": {"type": "IAMUser", "principalId": "AIDABENCH",
                         "arn": format!("arn:aws:iam::{}:user/bench", account(stack)),
                         "accountId": account(stack), "userName": "bench"},
        "eventTime": now.to_rfc3339_opts(SecondsFormat::Millis, true),
        "eventSource": "sqs.amazonaws.com", "eventName": "SetQueueAttributes", "awsRegion": REGION,
        "sourceIPAddress": "203.0.113.10",
        "userAgent": "aws-cli/2.15.30 md/awscrt#0.19.19 ua/2.0 os/linux#6.5 md/arch#x86_64 lang/python#3.11.8",
        "requestParameters": {"queueUrl": queue_url(stack, file, queue),
                              "attributes": {"VisibilityTimeout": (60 + i).to_string()}},
        "responseElements": null,
        "requestID": format!("req-{i}"), "eventID": format!("mono-{i:06}-{}", now.timestamp_millis()),
        "readOnly": false, "eventType": "AwsApiCall", "managementEvent": true,
        "recipientAccountId": account(stack), "eventCategory": "Management"
    })
}

fn peak_rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kb: f64 = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

#[tokio::main]
async fn main() {
    let samples: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(60).max(2);
    let Ok(endpoint) = std::env::var("DRIFTBACK_TEST_MOTO_ENDPOINT") else {
        eprintln!("moto is not running: run `scripts/moto.sh cargo bench -p driftback --bench monorepo`");
        std::process::exit(2);
    };
    let root = tempfile::tempdir().unwrap();
    let bucket = format!("monorepo-state-{}", std::process::id());
    let (files, states) = monorepo(&bucket, &endpoint);
    let state_bytes: usize = states.iter().map(|(_, s)| s.len()).sum();
    let s3 = support::s3_client(&endpoint).await;
    s3.create_bucket().bucket(&bucket).send().await.unwrap();
    for (key, text) in states {
        s3.put_object().bucket(&bucket).key(key).body(ByteStream::from(text.into_bytes())).send().await.unwrap();
    }
    let borrowed: Vec<(&str, &str)> = files.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
    let remote = support::bare_remote_with(root.path(), &borrowed);
    println!(
        "generated: {STACKS} stacks, {} files, {} queues, states {:.1} MB in S3 (moto)",
        files.len(),
        STACKS * FILES_PER_STACK * QUEUES_PER_FILE,
        state_bytes as f64 / 1e6
    );

    let name = format!("monorepo-{}", std::process::id());
    let mut feed = support::BenchFeed::start(&endpoint, &name, &remote, root.path()).await;
    let pid = feed.daemon.0.id();

    let mut latencies = Vec::with_capacity(samples);
    for i in 0..samples {
        let sent = Utc::now();
        let detail = record(i, sent).to_string();
        let entry = json!({"Source": "aws.sqs", "DetailType": "AWS API Call via CloudTrail", "Detail": detail});
        support::eventbridge(&feed.http, &endpoint, "PutEvents", json!({"Entries": [entry]})).await;
        let done_at = support::next_reconciled(&mut feed.log, Duration::from_secs(120)).await;
        latencies.push((done_at - sent).num_microseconds().unwrap() as f64 / 1000.0);
    }
    let peak = peak_rss_mb(pid);
    drop(feed);
    let branches = support::remote_branches(&remote).len();
    let cold = latencies[0];
    let mut warm = latencies[1..].to_vec();
    warm.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!("event to pushed branch, {samples} change sets on {STACKS} stacks in turn ({branches} branches pushed):");
    println!("  first change set (cold: discovery, every state read): {cold:.0} ms");
    println!(
        "  after it: p50 {:.0} ms   p90 {:.0} ms   max {:.0} ms",
        support::percentile(&warm, 50.0),
        support::percentile(&warm, 90.0),
        warm[warm.len() - 1]
    );
    println!("  daemon peak memory (VmHWM): {peak:.0} MB");
}
