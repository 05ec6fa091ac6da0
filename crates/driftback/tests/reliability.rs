//! The daemon under a hostile feed and a hostile host, bounded to run in CI: two replicas on one
//! queue and one Postgres knowledge base, kill -9 at random moments (a replica killed is started
//! again), Postgres stopped and started mid-run, and poison, oversized and forged messages among
//! 120 change sets. At the end: every change set reconciled once (one branch, one commit, per
//! `Drift-Change-Set` trailer), none lost, the hostile ones recorded as bad input, and both
//! replicas still running until asked to stop.
//!
//! Run through `scripts/postgres.sh scripts/moto.sh` (as `scripts/test.sh` does); without them it
//! is skipped (and fails when DRIFTBACK_REQUIRE_SERVICES is set). `--nocapture` prints the figures
//! docs/benchmarks.md quotes.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sqlx::Connection;
use support::{bare_remote_with, free_port, git, sqs_client};

const BIN: &str = env!("CARGO_BIN_EXE_driftback");
/// Change sets the run must reconcile: one tag change on each of this many instances.
const CHANGE_SETS: usize = 120;
const ACCOUNT: &str = "123456789012";

/// A deterministic generator, so a failing run can be replayed with its seed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn project() -> (String, String) {
    let mut tf = String::new();
    let mut resources = Vec::new();
    for i in 0..CHANGE_SETS {
        tf.push_str(&format!(
            "resource \"aws_instance\" \"web_{i}\" {{\n  ami           = \"ami-0abc\"\n  instance_type = \"t3.micro\"\n\n  tags = {{\n    Name = \"web-{i}\"\n  }}\n}}\n\n"
        ));
        resources.push(json!({"mode": "managed", "type": "aws_instance", "name": format!("web_{i}"),
            "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
            "instances": [{"schema_version": 1, "attributes": {"id": instance(i), "ami": "ami-0abc",
                "instance_type": "t3.micro", "tags": {"Name": format!("web-{i}")},
                "tags_all": {"Name": format!("web-{i}")}}}]}));
    }
    let state = json!({"version": 4, "terraform_version": "1.9.0", "serial": 1, "lineage": "reliability",
        "outputs": {}, "resources": resources});
    (tf, serde_json::to_string_pretty(&state).unwrap())
}

fn instance(i: usize) -> String {
    format!("i-{:017x}", 0xabc000 + i)
}

/// The CloudTrail record of a console user tagging instance `i`.
fn tag_record(i: usize) -> Value {
    json!({"eventVersion": "1.09", "eventID": format!("00000000-0000-4000-8000-{i:012}"),
        "eventTime": format!("2024-06-01T10:{:02}:{:02}Z", i / 60, i % 60),
        "eventSource": "ec2.amazonaws.com", "eventName": "CreateTags", "awsRegion": "us-east-1",
        "recipientAccountId": ACCOUNT, "eventType": "AwsApiCall", "managementEvent": true, "readOnly": false,
        "sourceIPAddress": "203.0.113.7", "userAgent": "AWS Internal",
        "userIdentity": {"type": "IAMUser", "arn": format!("arn:aws:iam::{ACCOUNT}:user/alice"),
            "accountId": ACCOUNT, "userName": "alice"},
        "sessionCredentialFromConsole": "true",
        "requestParameters": {"resourcesSet": {"items": [{"resourceId": instance(i)}]},
            "tagSet": {"items": [{"key": "CostCenter", "value": format!("cc-{i}")}]}},
        "responseElements": {"_return": true}})
}

fn envelope(source: &str, record: &Value) -> String {
    json!({"version": "0", "id": "e", "detail-type": "AWS API Call via CloudTrail", "source": source,
        "account": ACCOUNT, "time": record["eventTime"], "region": "us-east-1", "resources": [], "detail": record})
    .to_string()
}

struct Replica {
    name: String,
    envs: Vec<(String, String)>,
    child: Option<Child>,
    log: PathBuf,
    starts: usize,
}

impl Replica {
    fn start(&mut self) {
        self.starts += 1;
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&self.log).unwrap();
        let child = Command::new(BIN)
            .arg("serve")
            .envs(self.envs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("DRIFTBACK_LOG", "info")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
    }

    fn kill_9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Panics with the log when the replica exited on its own.
    fn assert_running(&mut self) {
        let exited = self.child.as_mut().and_then(|c| c.try_wait().unwrap());
        assert!(exited.is_none(), "replica {} exited by itself ({exited:?}); its log:\n{}", self.name, self.log_text());
    }

    fn log_text(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(60)..].join("\n")
    }

    fn terminate(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().unwrap();
        let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
        assert!(status.success());
        let start = Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            assert!(start.elapsed() < Duration::from_secs(40), "no exit after SIGTERM:\n{}", self.log_text());
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill_9();
    }
}

/// Change sets in the store by status.
async fn statuses(url: &str) -> BTreeMap<String, i64> {
    let Ok(mut conn) = sqlx::PgConnection::connect(url).await else { return BTreeMap::new() };
    let rows: Vec<(String, i64)> = sqlx::query_as("SELECT status, count(*) FROM change_set_queue GROUP BY status")
        .fetch_all(&mut conn)
        .await
        .unwrap_or_default();
    rows.into_iter().collect()
}

/// Each remote branch's commits above `main`, with their `Drift-Change-Set` trailers.
fn pushed(remote: &Path) -> BTreeMap<String, Vec<String>> {
    let refs = git(remote, &["for-each-ref", "--format=%(refname:short)", "refs/heads/driftback/"]);
    refs.lines()
        .map(|branch| {
            let log = git(
                remote,
                &["log", "--format=%(trailers:key=Drift-Change-Set,valueonly)", &format!("main..{branch}")],
            );
            (branch.to_string(), log.lines().filter(|l| !l.trim().is_empty()).map(str::to_string).collect())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_survive_kill_9_a_postgres_restart_and_hostile_messages_losing_and_duplicating_nothing() {
    let (Ok(endpoint), Ok(database), Ok(restart)) = (
        std::env::var("DRIFTBACK_TEST_MOTO_ENDPOINT"),
        std::env::var("DATABASE_URL"),
        std::env::var("DRIFTBACK_TEST_PG_RESTART"),
    ) else {
        assert!(
            std::env::var_os("DRIFTBACK_REQUIRE_SERVICES").is_none(),
            "DRIFTBACK_REQUIRE_SERVICES is set but Postgres or moto is not running: run through \
             scripts/postgres.sh scripts/moto.sh"
        );
        eprintln!("NOTICE: reliability test skipped: run through scripts/postgres.sh scripts/moto.sh");
        return;
    };
    let seed = std::env::var("DRIFTBACK_RELIABILITY_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_2026_u64);
    eprintln!("reliability: seed {seed} (DRIFTBACK_RELIABILITY_SEED replays it)");
    let mut rng = Rng(seed);
    let root = tempfile::tempdir().unwrap();
    let (tf, state) = project();
    let remote = bare_remote_with(root.path(), &[("main.tf", &tf), ("terraform.tfstate", &state)]);

    // A database of its own on the test run's Postgres.
    let db = format!("reliability_{}", std::process::id());
    let mut admin = sqlx::PgConnection::connect(&database).await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{db}\""))).execute(&mut admin).await.unwrap();
    admin.close().await.unwrap();
    let store_url = format!("{}/{db}", database.rsplit_once('/').unwrap().0);

    // The feed: the change sets, and hostile messages among them.
    let sqs = sqs_client(&endpoint).await;
    let queue_url = sqs
        .create_queue()
        .queue_name(format!("reliability-{}", std::process::id()))
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let mut bodies: Vec<String> = (0..CHANGE_SETS).map(|i| envelope("aws.ec2", &tag_record(i))).collect();
    let poison = ["not JSON at all", "{\"truncated\": ", "{\"detail-type\": \"AWS API Call via CloudTrail\"}"];
    let mut oversized = tag_record(CHANGE_SETS + 1);
    oversized["eventID"] = json!("e".repeat(3000));
    let mut long_resource = tag_record(CHANGE_SETS + 2);
    long_resource["requestParameters"]["resourcesSet"]["items"][0]["resourceId"] =
        json!(format!("i-{}", "9".repeat(3000)));
    let forged = envelope("custom.ops-bot", &tag_record(CHANGE_SETS + 3));
    let mut long_arn = tag_record(CHANGE_SETS + 4);
    long_arn["userIdentity"]["arn"] = json!(format!("arn:aws:iam::{ACCOUNT}:user/{}", "a".repeat(3000)));
    // An `aws.*` source, but not the service whose call the record carries.
    let misattributed = envelope("aws.s3", &tag_record(CHANGE_SETS + 5));
    let mut elsewhere = tag_record(CHANGE_SETS + 6);
    elsewhere["recipientAccountId"] = json!("999999999999");
    let mut blank_id = tag_record(CHANGE_SETS + 7);
    blank_id["eventID"] = json!("   ");
    let mut nul_id = tag_record(CHANGE_SETS + 8);
    nul_id["eventID"] = json!("00000000-0000-4000-8000-\u{0}");
    let mut blank_resource = tag_record(CHANGE_SETS + 9);
    blank_resource["requestParameters"]["resourcesSet"]["items"][0]["resourceId"] = json!("  ");
    // What EventBridge never sends: a record without its envelope.
    let bare = tag_record(CHANGE_SETS + 10).to_string();
    // Kept (NUL is stored as U+FFFD), on an instance the code does not manage: an event, no branch.
    let mut nul_resource = tag_record(CHANGE_SETS + 11);
    nul_resource["requestParameters"]["resourcesSet"]["items"][0]["resourceId"] = json!("i-0nul\u{0}x");
    nul_resource["userIdentity"]["arn"] = json!(format!("arn:aws:iam::{ACCOUNT}:user/al\u{0}ice"));
    let hostile: Vec<String> = poison
        .iter()
        .map(|p| p.to_string())
        .chain([
            envelope("aws.ec2", &oversized),
            envelope("aws.ec2", &long_resource),
            forged,
            envelope("aws.ec2", &long_arn),
            misattributed,
            envelope("aws.ec2", &elsewhere),
            envelope("aws.ec2", &blank_id),
            envelope("aws.ec2", &nul_id),
            envelope("aws.ec2", &blank_resource),
            bare,
            envelope("aws.ec2", &nul_resource),
        ])
        .collect();
    // How many messages of each kind are bad input (the NUL resource is not: it is recorded).
    let expected_bad = BTreeMap::from([
        ("account not served", 1),
        ("blank", 2),
        ("control characters", 1),
        // A foreign source, another service's `aws.*` source, and an envelope with no source.
        ("forged", 3),
        ("no envelope", 1),
        ("oversized", 3),
        // Not JSON, and truncated JSON.
        ("poison", 2),
    ]);
    for (n, h) in hostile.iter().enumerate() {
        bodies.insert((n * 17 + 5) % bodies.len(), h.clone());
    }
    let sent = Instant::now();
    for chunk in bodies.chunks(10) {
        let mut batch = sqs.send_message_batch().queue_url(&queue_url);
        for (n, body) in chunk.iter().enumerate() {
            batch = batch.entries(
                aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                    .id(n.to_string())
                    .message_body(body)
                    .build()
                    .unwrap(),
            );
        }
        batch.send().await.unwrap();
    }

    let mut replicas: Vec<Replica> = ["r1", "r2"]
        .iter()
        .map(|name| {
            let envs = [
                ("DRIFTBACK_FEED__QUEUE_URL", queue_url.clone()),
                ("DRIFTBACK_FEED__ENDPOINT_URL", endpoint.clone()),
                ("DRIFTBACK_FEED__REGION", "us-east-1".into()),
                ("DRIFTBACK_FEED__WAIT_TIME_SECS", "1".into()),
                ("DRIFTBACK_FEED__VISIBILITY_TIMEOUT_SECS", "4".into()),
                ("DRIFTBACK_FEED__MAX_MESSAGES", "10".into()),
                ("DRIFTBACK_FEED__ACCOUNTS", ACCOUNT.into()),
                ("DRIFTBACK_GROUP__QUIET_WINDOW_SECS", "0".into()),
                ("DRIFTBACK_SERVE__REPO_URL", remote.display().to_string()),
                ("DRIFTBACK_SERVE__WORKDIR", root.path().join(format!("work-{name}")).display().to_string()),
                ("DRIFTBACK_SERVE__LISTEN", format!("127.0.0.1:{}", free_port())),
                ("DRIFTBACK_SERVE__REPLICA", name.to_string()),
                ("DRIFTBACK_SERVE__LEASE_SECS", "3".into()),
                ("DRIFTBACK_SERVE__POLL_MS", "100".into()),
                ("DRIFTBACK_STORE__URL", store_url.clone()),
                ("DRIFTBACK_BACKFILL__ON_START", "false".into()),
                ("DRIFTBACK_PUBLISH__MODE", "push".into()),
            ];
            Replica {
                name: name.to_string(),
                envs: envs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
                child: None,
                log: root.path().join(format!("{name}.log")),
                starts: 0,
            }
        })
        .collect();
    for r in &mut replicas {
        r.start();
    }

    // Chaos until every change set is done: a kill -9 every 0.3 to 1.5 s, the replica started
    // again at once; Postgres down for two seconds once a third of the work is done.
    let started = Instant::now();
    let mut kills = 0;
    let mut restarted_postgres = false;
    loop {
        let status = statuses(&store_url).await;
        let done = status.get("done").copied().unwrap_or(0) as usize;
        let unfinished: i64 = status.iter().filter(|(s, _)| *s != "done" && *s != "failed").map(|(_, n)| n).sum();
        if done > CHANGE_SETS && unfinished == 0 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(240),
            "not finished after 240 s: {status:?}; logs:\n{}\n{}",
            replicas[0].log_text(),
            replicas[1].log_text()
        );
        if !restarted_postgres && done >= CHANGE_SETS / 3 {
            restarted_postgres = true;
            let out = Command::new(&restart).arg("2").output().unwrap();
            assert!(out.status.success(), "restarting Postgres: {}", String::from_utf8_lossy(&out.stderr));
            eprintln!("reliability: Postgres restarted at {done} done ({:.1} s)", started.elapsed().as_secs_f64());
        }
        tokio::time::sleep(Duration::from_millis(300 + rng.below(1200))).await;
        // Kill while there is work to interrupt; once it is nearly done, let it finish.
        if done + 5 < CHANGE_SETS {
            let victim = rng.below(2) as usize;
            replicas[victim].assert_running();
            replicas[victim].kill_9();
            kills += 1;
            replicas[victim].start();
        }
    }
    let drained = started.elapsed();
    // The queue drained too (hostile messages included), and both replicas are alive.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = sqs
            .get_queue_attributes()
            .queue_url(&queue_url)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await
            .unwrap();
        let attrs = out.attributes().unwrap();
        let left: u64 = attrs.values().map(|v| v.parse::<u64>().unwrap()).sum();
        if left == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "{left} messages left on the queue");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    for r in &mut replicas {
        r.assert_running();
    }
    for r in &mut replicas {
        let status = r.terminate();
        assert!(status.success(), "replica {} on SIGTERM: {status:?}\n{}", r.name, r.log_text());
    }

    // Nothing lost: every change set done, each pushed once, on one branch with one commit.
    let branches = pushed(&remote);
    let mut trailers: BTreeMap<String, usize> = BTreeMap::new();
    for (branch, commits) in &branches {
        assert_eq!(commits.len(), 1, "{branch} has {} commits: {commits:?}", commits.len());
        *trailers.entry(commits[0].clone()).or_default() += 1;
    }
    let duplicated: Vec<_> = trailers.iter().filter(|(_, n)| **n > 1).collect();
    assert!(duplicated.is_empty(), "change sets pushed more than once: {duplicated:?}");
    assert_eq!(trailers.len(), CHANGE_SETS, "change sets pushed: {}", trailers.len());
    let mut conn = sqlx::PgConnection::connect(&store_url).await.unwrap();
    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM events").fetch_one(&mut conn).await.unwrap();
    assert_eq!(events as usize, CHANGE_SETS + 1, "events recorded (the change sets' and the NUL resource's)");
    let nul_kept: (String, String) =
        sqlx::query_as("SELECT resource_key, actor_session FROM change_set_queue WHERE resource_key LIKE 'i-0nul%'")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    assert_eq!(nul_kept.0, "i-0nul\u{fffd}x");
    assert!(nul_kept.1.contains("al\u{fffd}ice"), "{nul_kept:?}");
    // A message recorded and then killed before its delete comes back and is recorded again: count
    // each message once.
    let rows: Vec<(String, String)> =
        sqlx::query_as("SELECT location, reason FROM bad_records").fetch_all(&mut conn).await.unwrap();
    let mut messages: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (location, reason) in &rows {
        let kind = if reason.contains("without its EventBridge envelope") {
            "no envelope"
        } else if reason.contains("may be forged") {
            "forged"
        } else if reason.contains("bytes long") {
            "oversized"
        } else if reason.contains("does not serve") {
            "account not served"
        } else if reason.contains("is blank") {
            "blank"
        } else if reason.contains("control characters") {
            "control characters"
        } else {
            "poison"
        };
        let message = location.strip_prefix("sqs message ").and_then(|l| l.split(' ').next()).unwrap();
        messages.entry(kind).or_default().insert(message);
    }
    let counted: BTreeMap<&str, usize> = messages.iter().map(|(kind, ids)| (*kind, ids.len())).collect();
    assert_eq!(counted, expected_bad, "{rows:?}");
    let not_done: Vec<(String, String)> =
        sqlx::query_as("SELECT resource_key, status FROM change_set_queue WHERE status <> 'done'")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    assert!(not_done.is_empty(), "{not_done:?}");
    conn.close().await.unwrap();
    eprintln!(
        "reliability: {CHANGE_SETS} change sets + {} hostile messages, 2 replicas, {kills} kill -9s ({} starts), \
         1 Postgres restart (2 s down): drained in {:.1} s ({:.1} s after the first send); {} bad records; \
         0 lost, 0 duplicated",
        hostile.len(),
        replicas.iter().map(|r| r.starts).sum::<usize>(),
        drained.as_secs_f64(),
        sent.elapsed().as_secs_f64(),
        rows.len(),
    );
}
