//! Helpers shared by the daemon's integration tests (`serve`, `serve_trail`, `backfill`, ...) and
//! the latency bench (`benches/latency.rs`): the demo project in a bare git remote, git run as a
//! user would, SQS and EventBridge on moto's server, and the daemon as a child process.
// Each test file compiles this module on its own and uses only part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The loopback git host that asks for credentials, and its GitHub App stand-in.
pub mod git_host;
/// Helpers of the tests against a private repository.
pub mod private;
/// A loopback OpenSSH server.
pub mod sshd;

/// The bundled demo (`crates/driftback/demo`).
pub fn demo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("demo")
}

/// Runs git in `dir` and returns its standard output; panics with git's error when it fails.
/// Write `text` at `path`, making its directories.
pub fn write_file(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// What a finished command printed, stdout then stderr.
pub fn output_text(out: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

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
        let path = src.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
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

/// moto's endpoint from `scripts/moto.sh`; `None` (the test is skipped, with a notice naming
/// `tests`) when moto is not running, unless `DRIFTBACK_REQUIRE_SERVICES` says it must be.
pub fn moto_endpoint(tests: &str) -> Option<String> {
    match std::env::var("DRIFTBACK_TEST_MOTO_ENDPOINT") {
        Ok(endpoint) => Some(endpoint),
        Err(_) if std::env::var_os("DRIFTBACK_REQUIRE_SERVICES").is_some() => {
            panic!("DRIFTBACK_REQUIRE_SERVICES is set but moto is not running: run through scripts/moto.sh")
        }
        Err(_) => {
            eprintln!("NOTICE: {tests} skipped: moto is not running (run `scripts/moto.sh cargo test`)");
            None
        }
    }
}

/// The `driftback/...` branches of a bare remote.
pub fn remote_branches(remote: &Path) -> Vec<String> {
    git(remote, &["for-each-ref", "--format=%(refname:short)", "refs/heads/driftback/"])
        .lines()
        .map(str::to_string)
        .collect()
}

/// The demo's CloudTrail records.
pub fn demo_records() -> Vec<Value> {
    let text = std::fs::read_to_string(demo_dir().join("events.json")).unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    value["Records"].as_array().cloned().unwrap_or_else(|| value.as_array().unwrap().clone())
}

/// Messages in a queue, visible or in flight.
pub async fn queue_messages(sqs: &aws_sdk_sqs::Client, url: &str) -> u64 {
    use aws_sdk_sqs::types::QueueAttributeName;
    let out = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
        .send()
        .await
        .unwrap();
    let attrs = out.attributes().unwrap();
    let n = |k: QueueAttributeName| attrs.get(&k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    n(QueueAttributeName::ApproximateNumberOfMessages) + n(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
}

/// `driftback serve` as a child process, its log in a file; killed when dropped.
pub struct Daemon {
    pub child: Child,
    log: PathBuf,
}

impl Daemon {
    /// Start `driftback serve` with `envs`, logging to `root/serve-RUN.log`.
    pub fn start(root: &Path, envs: &[(&str, String)], run: usize) -> Daemon {
        let log = root.join(format!("serve-{run}.log"));
        let child = Command::new(env!("CARGO_BIN_EXE_driftback"))
            .arg("serve")
            .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
            .env("DRIFTBACK_LOG", "info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Daemon { child, log }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM, then its exit status (within 40 s).
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let status = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap();
        assert!(status.success());
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(start.elapsed() < Duration::from_secs(40), "no exit 40 s after SIGTERM:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Wait (at most 90 s) until `done`, failing with the daemon's log if it exits first.
pub async fn wait_for(what: &str, daemon: &mut Daemon, mut done: impl AsyncFnMut() -> bool) {
    let start = Instant::now();
    while !done().await {
        if let Some(status) = daemon.child.try_wait().unwrap() {
            panic!("the daemon exited ({status}) while waiting for {what}; its log:\n{}", daemon.log());
        }
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "timed out waiting for {what}; daemon log:\n{}",
            daemon.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// An S3 client for moto's server at `endpoint` (path-style addressing).
pub async fn s3_client(endpoint: &str) -> aws_sdk_s3::Client {
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .load()
        .await;
    aws_sdk_s3::Client::from_conf(aws_sdk_s3::config::Builder::from(&sdk).force_path_style(true).build())
}

/// A new bucket whose new objects are announced to the queue `queue_arn` (an organisation trail's
/// bucket, as deploy/terraform wires it).
pub async fn trail_bucket(s3: &aws_sdk_s3::Client, bucket: &str, queue_arn: &str) {
    s3.create_bucket().bucket(bucket).send().await.unwrap();
    let notification = aws_sdk_s3::types::NotificationConfiguration::builder()
        .queue_configurations(
            aws_sdk_s3::types::QueueConfiguration::builder()
                .queue_arn(queue_arn)
                .events(aws_sdk_s3::types::Event::from("s3:ObjectCreated:*"))
                .build()
                .unwrap(),
        )
        .build();
    s3.put_bucket_notification_configuration()
        .bucket(bucket)
        .notification_configuration(notification)
        .send()
        .await
        .unwrap();
}

/// `bytes` gzip'd, as CloudTrail writes its log files.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// CloudTrail records as EventBridge delivers them (`PutEvents` entries on the default bus).
pub fn eventbridge_entries(records: &[Value]) -> Value {
    let entries: Vec<Value> = records
        .iter()
        .map(|r| {
            let service = r["eventSource"].as_str().unwrap().split('.').next().unwrap();
            json!({"Source": format!("aws.{service}"), "DetailType": "AWS API Call via CloudTrail",
                   "Detail": r.to_string(), "EventBusName": "default"})
        })
        .collect();
    json!({ "Entries": entries })
}

/// The environment of a daemon that reads `queue_url` on moto at `endpoint` (EventBridge envelopes
/// and the trail bucket's notifications, `[feed] carries = "both"`), fetches trail log files from
/// `trail_bucket`, and pushes its branches to `remote` from a clone in `workdir`; `/healthz` and
/// the rest on `listen`. Tests add what is theirs.
pub fn trail_daemon_env(
    endpoint: &str,
    queue_url: &str,
    trail_bucket: &str,
    remote: &Path,
    workdir: &Path,
    listen: &str,
) -> Vec<(&'static str, String)> {
    vec![
        ("DRIFTBACK_FEED__QUEUE_URL", queue_url.to_string()),
        ("DRIFTBACK_FEED__ENDPOINT_URL", endpoint.to_string()),
        ("DRIFTBACK_FEED__REGION", "us-east-1".to_string()),
        ("DRIFTBACK_FEED__WAIT_TIME_SECS", "1".to_string()),
        ("DRIFTBACK_FEED__CARRIES", "both".to_string()),
        ("DRIFTBACK_FEED__TRAIL_BUCKETS", trail_bucket.to_string()),
        ("DRIFTBACK_FEED__S3_ENDPOINT_URL", endpoint.to_string()),
        ("DRIFTBACK_FEED__S3_FORCE_PATH_STYLE", "true".to_string()),
        ("DRIFTBACK_SERVE__REPO_URL", remote.display().to_string()),
        ("DRIFTBACK_SERVE__WORKDIR", workdir.display().to_string()),
        ("DRIFTBACK_SERVE__LISTEN", listen.to_string()),
        ("DRIFTBACK_SERVE__POLL_MS", "100".to_string()),
        ("DRIFTBACK_BACKFILL__ON_START", "false".to_string()),
        ("DRIFTBACK_PUBLISH__MODE", "push".to_string()),
    ]
}

/// The nearest p-th percentile (by rank) of `sorted`.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

/// A child process killed when dropped (the benches' daemon).
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A latency bench's daemon: `driftback serve` on a new queue `name` fed by an EventBridge rule
/// (moto at `endpoint`), with a zero quiet window, pushing to `remote`, its JSON log read from
/// `log`; ready when this returns.
pub struct BenchFeed {
    pub daemon: Killed,
    pub http: reqwest::Client,
    pub log: std::io::BufReader<std::fs::File>,
}

impl BenchFeed {
    pub async fn start(endpoint: &str, name: &str, remote: &Path, root: &Path) -> BenchFeed {
        let sqs = sqs_client(endpoint).await;
        let queue_url = sqs.create_queue().queue_name(name).send().await.unwrap().queue_url.unwrap();
        let http = reqwest::Client::new();
        route_cloudtrail_to_queue(&http, endpoint, name, &queue_arn(&sqs, &queue_url).await).await;
        let port = free_port();
        let log = root.join("serve.log");
        let daemon = Killed(
            Command::new(env!("CARGO_BIN_EXE_driftback"))
                .arg("serve")
                .env("DRIFTBACK_FEED__QUEUE_URL", &queue_url)
                .env("DRIFTBACK_FEED__ENDPOINT_URL", endpoint)
                .env("DRIFTBACK_FEED__REGION", "us-east-1")
                .env("DRIFTBACK_GROUP__QUIET_WINDOW_SECS", "0")
                .env("DRIFTBACK_SERVE__REPO_URL", remote)
                .env("DRIFTBACK_SERVE__WORKDIR", root.join("work"))
                .env("DRIFTBACK_SERVE__LISTEN", format!("127.0.0.1:{port}"))
                .env("DRIFTBACK_BACKFILL__ON_START", "false")
                .env("DRIFTBACK_PUBLISH__MODE", "push")
                .env("DRIFTBACK_LOG", "info")
                .env("DRIFTBACK_LOG_FORMAT", "json")
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log).unwrap())
                .spawn()
                .unwrap(),
        );
        let ready = Instant::now();
        while !matches!(http.get(format!("http://127.0.0.1:{port}/readyz")).send().await, Ok(r) if r.status().is_success())
        {
            assert!(ready.elapsed() < Duration::from_secs(60), "not ready: {}", std::fs::read_to_string(&log).unwrap());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let log = std::io::BufReader::new(std::fs::File::open(&log).unwrap());
        BenchFeed { daemon, http, log }
    }
}

/// The time of the daemon's next "change set reconciled" JSON log line read from `log` (which
/// must say `reconciled`), waiting at most `within`.
pub async fn next_reconciled(
    log: &mut std::io::BufReader<std::fs::File>,
    within: Duration,
) -> chrono::DateTime<chrono::Utc> {
    use std::io::BufRead;
    let deadline = Instant::now() + within;
    let mut line = String::new();
    loop {
        line.clear();
        if log.read_line(&mut line).unwrap() == 0 {
            assert!(Instant::now() < deadline, "nothing reconciled within {within:?}");
            tokio::time::sleep(Duration::from_millis(2)).await;
            continue;
        }
        let Ok(entry) = serde_json::from_str::<Value>(line.trim()) else { continue };
        if entry["message"] == "change set reconciled" {
            assert_eq!(entry["outcome"], "reconciled", "{entry}");
            return entry["timestamp"].as_str().unwrap().parse().unwrap();
        }
    }
}

/// The two subnets of [`shared_tags_files`], whose tags come from one shared local.
pub const SUBNET_A: &str = "subnet-0aaaaaaaaaaaaaaa1";
pub const SUBNET_B: &str = "subnet-0bbbbbbbbbbbbbbb2";

/// A repository where two subnets' tags come from one shared local (`local.subnet_tags`), with its
/// state: (path, text) pairs for [`bare_remote_with`].
pub fn shared_tags_files() -> Vec<(&'static str, String)> {
    let main = r#"locals {
  subnet_tags = {
    Team = "network"
    Tier = "private"
  }
}

resource "aws_vpc" "main" {
  cidr_block = "10.0.0.0/16"
}

resource "aws_subnet" "a" {
  vpc_id     = aws_vpc.main.id
  cidr_block = "10.0.1.0/24"
  tags       = local.subnet_tags
}

resource "aws_subnet" "b" {
  vpc_id     = aws_vpc.main.id
  cidr_block = "10.0.2.0/24"
  tags       = local.subnet_tags
}
"#;
    let tags = json!({"Team": "network", "Tier": "private"});
    let provider = "provider[\"registry.terraform.io/hashicorp/aws\"]";
    let subnet = |name: &str, id: &str, cidr: &str| {
        json!({"mode": "managed", "type": "aws_subnet", "name": name, "provider": provider,
               "instances": [{"schema_version": 1, "attributes": {
                   "id": id, "arn": format!("arn:aws:ec2:us-east-1:123456789012:subnet/{id}"),
                   "vpc_id": "vpc-0a1b2c3d4e5f60001", "cidr_block": cidr, "tags": tags, "tags_all": tags}}]})
    };
    let state = json!({"version": 4, "terraform_version": "1.9.5", "serial": 3, "lineage": "subnets", "outputs": {},
    "resources": [
        {"mode": "managed", "type": "aws_vpc", "name": "main", "provider": provider,
         "instances": [{"schema_version": 1, "attributes": {"id": "vpc-0a1b2c3d4e5f60001",
             "cidr_block": "10.0.0.0/16", "tags": {}, "tags_all": {}}}]},
        subnet("a", SUBNET_A, "10.0.1.0/24"),
        subnet("b", SUBNET_B, "10.0.2.0/24"),
    ]});
    vec![("main.tf", main.to_string()), ("terraform.tfstate", serde_json::to_string_pretty(&state).unwrap())]
}

/// The console user `maria` (one role session) tagging `subnet` `Team = platform` at `time`, as
/// CloudTrail logs a `CreateTags` call.
pub fn tag_subnet(subnet: &str, time: &str, event_id: &str) -> Value {
    json!({
        "eventVersion": "1.08",
        "userIdentity": {"type": "AssumedRole", "principalId": "AROAEXAMPLE:maria",
                         "arn": "arn:aws:sts::123456789012:assumed-role/Admin/maria", "accountId": "123456789012",
                         "sessionContext": {"sessionIssuer": {"type": "Role",
                             "arn": "arn:aws:iam::123456789012:role/Admin", "userName": "Admin"}}},
        "eventTime": time, "eventSource": "ec2.amazonaws.com", "eventName": "CreateTags", "awsRegion": "us-east-1",
        "sourceIPAddress": "203.0.113.7", "userAgent": "AWS Internal",
        "requestParameters": {"resourcesSet": {"items": [{"resourceId": subnet}]},
                              "tagSet": {"items": [{"key": "Team", "value": "platform"}]}},
        "responseElements": {"_return": true}, "eventID": event_id, "readOnly": false, "eventType": "AwsApiCall",
        "managementEvent": true, "recipientAccountId": "123456789012"
    })
}
