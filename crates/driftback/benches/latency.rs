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

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

// The daemon's integration-test helpers: the demo remote, git, SQS and EventBridge on moto.
#[path = "../tests/support/mod.rs"]
mod support;

const BIN: &str = env!("CARGO_BIN_EXE_driftback");

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

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
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
    let sqs = support::sqs_client(&endpoint).await;
    let name = format!("latency-{}", std::process::id());
    let queue_url = sqs.create_queue().queue_name(&name).send().await.unwrap().queue_url.unwrap();
    let http = reqwest::Client::new();
    support::route_cloudtrail_to_queue(&http, &endpoint, &name, &support::queue_arn(&sqs, &queue_url).await).await;

    let port = support::free_port();
    let log_path = root.path().join("serve.log");
    let daemon = Killed(
        Command::new(BIN)
            .arg("serve")
            .env("DRIFTBACK_FEED__QUEUE_URL", &queue_url)
            .env("DRIFTBACK_FEED__ENDPOINT_URL", &endpoint)
            .env("DRIFTBACK_FEED__REGION", "us-east-1")
            .env("DRIFTBACK_GROUP__QUIET_WINDOW_SECS", "0")
            .env("DRIFTBACK_SERVE__REPO_URL", &remote)
            .env("DRIFTBACK_SERVE__WORKDIR", root.path().join("work"))
            .env("DRIFTBACK_SERVE__LISTEN", format!("127.0.0.1:{port}"))
            .env("DRIFTBACK_BACKFILL__ON_START", "false")
            .env("DRIFTBACK_PUBLISH__MODE", "push")
            .env("DRIFTBACK_LOG", "info")
            .env("DRIFTBACK_LOG_FORMAT", "json")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log_path).unwrap())
            .spawn()
            .unwrap(),
    );
    let ready = Instant::now();
    while !matches!(http.get(format!("http://127.0.0.1:{port}/readyz")).send().await, Ok(r) if r.status().is_success())
    {
        assert!(
            ready.elapsed() < Duration::from_secs(30),
            "not ready: {}",
            std::fs::read_to_string(&log_path).unwrap()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let mut latencies = Vec::with_capacity(samples);
    let mut log = BufReader::new(std::fs::File::open(&log_path).unwrap());
    let mut line = String::new();
    for i in 0..samples {
        let sent = Utc::now();
        let detail = record(i, sent).to_string();
        let entry = json!({"Source": "aws.ec2", "DetailType": "AWS API Call via CloudTrail", "Detail": detail});
        support::eventbridge(&http, &endpoint, "PutEvents", json!({"Entries": [entry]})).await;
        let deadline = Instant::now() + Duration::from_secs(60);
        let done_at = loop {
            line.clear();
            if log.read_line(&mut line).unwrap() == 0 {
                assert!(Instant::now() < deadline, "sample {i} not reconciled within 60 s");
                tokio::time::sleep(Duration::from_millis(2)).await;
                continue;
            }
            let Ok(entry) = serde_json::from_str::<Value>(line.trim()) else { continue };
            if entry["message"] == "change set reconciled" {
                assert_eq!(entry["outcome"], "reconciled", "{entry}");
                let at: DateTime<Utc> = entry["timestamp"].as_str().unwrap().parse().unwrap();
                break at;
            }
        };
        latencies.push((done_at - sent).num_microseconds().unwrap() as f64 / 1000.0);
    }
    drop(daemon);
    let branches = Command::new("git")
        .arg("-C")
        .arg(&remote)
        .args(["for-each-ref", "--format=x", "refs/heads/driftback/"])
        .output()
        .unwrap();
    let branches = String::from_utf8_lossy(&branches.stdout).lines().count();
    let mut sorted = latencies.clone();
    sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let mean = sorted.iter().sum::<f64>() / sorted.len() as f64;
    println!("event-to-commit latency, {samples} change sets ({branches} branches pushed), quiet window 0:");
    println!(
        "  p50 {:.0} ms   p99 {:.0} ms   mean {:.0} ms   min {:.0} ms   max {:.0} ms",
        percentile(&sorted, 50.0),
        percentile(&sorted, 99.0),
        mean,
        sorted[0],
        sorted[sorted.len() - 1]
    );
}
