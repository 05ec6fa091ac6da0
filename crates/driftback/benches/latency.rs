//! Event-to-commit latency of `driftback serve` on the recipe path, with a zero quiet window:
//! one CloudTrail record at a time (all by one user, so the field is not contested) is put through
//! EventBridge (moto) into SQS; the daemon records
//! it, reconciles it with a recipe, commits and pushes a branch to a bare remote, and records the
//! outcome. Latency is from the record's creation (its eventTime, set when it is sent) to the
//! daemon's "change set reconciled" log line, which follows the commit, the push and the store write.
//!
//!   scripts/moto.sh cargo bench -p driftback --bench latency [-- SAMPLES]
//!
//! Samples are sequential (one change set in flight), so this is latency, not throughput. Real
//! CloudTrail adds its own delivery delay (about 5 minutes on average) before the record is sent.

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

// The daemon's integration-test helpers: the demo remote, git, SQS and EventBridge on moto.
#[path = "../tests/support/mod.rs"]
mod support;

fn record(i: usize, now: DateTime<Utc>) -> Value {
    json!({
        "eventVersion": "1.09",
        "userIdentity": {"type": "IAMUser", "principalId": "AIDABENCH",
                         "arn": "arn:aws:iam::123456789012:user/bench", "accountId": "123456789012",
                         "userName": "bench"},
        "eventTime": now.to_rfc3339_opts(SecondsFormat::Millis, true),
        "eventSource": "ec2.amazonaws.com", "eventName": "ModifyInstanceAttribute", "awsRegion": "us-east-1",
        "sourceIPAddress": "203.0.113.10",
        "userAgent": "aws-cli/2.15.30 md/awscrt#0.19.19 ua/2.0 os/linux#6.5 md/arch#x86_64 lang/python#3.11.8",
        "requestParameters": {"instanceId": "i-0abc123def4567890", "instanceType": {"value": "t3.large"}},
        "responseElements": {"requestId": "r", "_return": true},
        "requestID": format!("req-{i}"), "eventID": format!("bench-{i:06}-{}", now.timestamp_millis()),
        "readOnly": false, "eventType": "AwsApiCall", "managementEvent": true,
        "recipientAccountId": "123456789012", "eventCategory": "Management"
    })
}

#[tokio::main]
async fn main() {
    let samples: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(100);
    let Ok(endpoint) = std::env::var("DRIFTBACK_TEST_MOTO_ENDPOINT") else {
        eprintln!("moto is not running: run `scripts/moto.sh cargo bench -p driftback --bench latency`");
        std::process::exit(2);
    };
    let root = tempfile::tempdir().unwrap();
    let remote = support::bare_remote(root.path());
    let name = format!("latency-{}", std::process::id());
    let mut feed = support::BenchFeed::start(&endpoint, &name, &remote, root.path()).await;

    let mut latencies = Vec::with_capacity(samples);
    for i in 0..samples {
        let sent = Utc::now();
        let detail = record(i, sent).to_string();
        let entry = json!({"Source": "aws.ec2", "DetailType": "AWS API Call via CloudTrail", "Detail": detail});
        support::eventbridge(&feed.http, &endpoint, "PutEvents", json!({"Entries": [entry]})).await;
        let done_at = support::next_reconciled(&mut feed.log, Duration::from_secs(60)).await;
        latencies.push((done_at - sent).num_microseconds().unwrap() as f64 / 1000.0);
    }
    drop(feed);
    let branches = support::remote_branches(&remote).len();
    let mut sorted = latencies.clone();
    sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let mean = sorted.iter().sum::<f64>() / sorted.len() as f64;
    println!("event-to-commit latency, {samples} change sets ({branches} branches pushed), quiet window 0:");
    println!(
        "  p50 {:.0} ms   p99 {:.0} ms   mean {:.0} ms   min {:.0} ms   max {:.0} ms",
        support::percentile(&sorted, 50.0),
        support::percentile(&sorted, 99.0),
        mean,
        sorted[0],
        sorted[sorted.len() - 1]
    );
}
