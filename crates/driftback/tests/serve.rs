//! `driftback serve` end to end against moto's server: EventBridge rule -> SQS -> the daemon ->
//! branches in a bare remote; a kill -9 mid-work and a restart; redelivered events; poison
//! messages; graceful shutdown on SIGTERM.
//!
//! Run through `scripts/moto.sh` (as `scripts/test.sh` does), which starts moto and exports
//! DRIFTBACK_TEST_MOTO_ENDPOINT. Without it the test says so and passes, unless
//! DRIFTBACK_REQUIRE_SERVICES is set (CI), where it fails.

#[path = "../../publish/tests/it/github_server.rs"]
#[allow(dead_code)]
mod github_server;

use std::process::Command;
use std::time::{Duration, Instant};

use aws_sdk_sqs::types::QueueAttributeName;
use serde_json::{Value, json};
use sqlx::Connection;

mod support;
use support::{
    Daemon, bare_remote, bare_remote_with, demo_records, eventbridge, free_port, git, moto_endpoint, queue_arn,
    queue_messages, remote_branches, route_cloudtrail_to_queue, sqs_client, wait_for,
};

const BIN: &str = env!("CARGO_BIN_EXE_driftback");

/// The `aws.<service>` source EventBridge gives a CloudTrail record of this service.
fn eventbridge_source(record: &Value) -> String {
    let event_source = record["eventSource"].as_str().unwrap_or_default();
    format!("aws.{}", event_source.split('.').next().unwrap_or_default())
}

async fn put_records(http: &reqwest::Client, endpoint: &str, records: &[Value]) {
    for chunk in records.chunks(10) {
        let entries: Vec<Value> = chunk
            .iter()
            .map(|r| {
                json!({"Source": eventbridge_source(r), "DetailType": "AWS API Call via CloudTrail",
                       "Detail": r.to_string(), "EventBusName": "default"})
            })
            .collect();
        let out = eventbridge(http, endpoint, "PutEvents", json!({"Entries": entries})).await;
        assert_eq!(out["FailedEntryCount"].as_u64().unwrap_or(0), 0, "{out}");
    }
}

/// GitHub's delivery of `event` with `body`, signed with the test's webhook secret, to the daemon's
/// webhook on `listen`.
async fn deliver_signed(
    http: &reqwest::Client,
    listen: &str,
    event: &str,
    body: String,
) -> reqwest::Result<reqwest::Response> {
    let signature =
        driftback_publish::webhook::signature(&driftback_publish::Secret::new(WEBHOOK_SECRET), body.as_bytes());
    http.post(format!("http://{listen}{}", driftback_publish::webhook::WEBHOOK_PATH))
        .header("X-GitHub-Event", event)
        .header("X-Hub-Signature-256", signature)
        .body(body)
        .send()
        .await
}

async fn queue_is_empty(sqs: &aws_sdk_sqs::Client, url: &str) -> bool {
    queue_messages(sqs, url).await == 0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_reconciles_the_feed_survives_kill_9_and_duplicates_nothing() {
    let Some(endpoint) = moto_endpoint("SQS tests") else { return };
    let root = tempfile::tempdir().unwrap();
    let remote = bare_remote(root.path());
    let main_before = git(&remote, &["rev-parse", "main"]);
    let suffix = format!("{}-{}", std::process::id(), free_port());

    let sqs = sqs_client(&endpoint).await;
    let queue_url = sqs.create_queue().queue_name(format!("drift-{suffix}")).send().await.unwrap().queue_url.unwrap();
    let http = reqwest::Client::new();
    route_cloudtrail_to_queue(&http, &endpoint, &format!("cloudtrail-{suffix}"), &queue_arn(&sqs, &queue_url).await)
        .await;

    // The demo's nine records through EventBridge, and two poison messages.
    let records = demo_records();
    assert_eq!(records.len(), 9);
    put_records(&http, &endpoint, &records).await;
    put_records(&http, &endpoint, &[json!({"hello": "not a CloudTrail record"})]).await;
    sqs.send_message().queue_url(&queue_url).message_body("this is not JSON at all").send().await.unwrap();

    let listen = format!("127.0.0.1:{}", free_port());
    let workdir = root.path().join("work");
    let envs = vec![
        ("DRIFTBACK_FEED__QUEUE_URL", queue_url.clone()),
        ("DRIFTBACK_FEED__ENDPOINT_URL", endpoint.clone()),
        ("DRIFTBACK_FEED__REGION", "us-east-1".to_string()),
        ("DRIFTBACK_FEED__WAIT_TIME_SECS", "1".to_string()),
        ("DRIFTBACK_FEED__VISIBILITY_TIMEOUT_SECS", "4".to_string()),
        ("DRIFTBACK_SERVE__REPO_URL", remote.display().to_string()),
        ("DRIFTBACK_SERVE__WORKDIR", workdir.display().to_string()),
        ("DRIFTBACK_SERVE__LISTEN", listen.clone()),
        ("DRIFTBACK_SERVE__POLL_MS", "100".to_string()),
        ("DRIFTBACK_SERVE__LEASE_SECS", "3".to_string()),
        ("DRIFTBACK_SERVE__SHUTDOWN_DEADLINE_SECS", "20".to_string()),
        ("DRIFTBACK_BACKFILL__ON_START", "false".to_string()),
        ("DRIFTBACK_WEBHOOK_SECRET", WEBHOOK_SECRET.to_string()),
        ("DRIFTBACK_PUBLISH__MODE", "push".to_string()),
    ];

    // First run: killed with SIGKILL as soon as the first branch reaches the remote.
    let mut first = Daemon::start(root.path(), &envs, 1);
    wait_for("a first branch on the remote", &mut first, async || !remote_branches(&remote).is_empty()).await;
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    eprintln!("killed the first daemon with {} branch(es) on the remote", remote_branches(&remote).len());
    // Killed in the middle of a git operation, it would leave git's lock files in its clone.
    std::fs::write(workdir.join(".git/index.lock"), "").unwrap();
    std::fs::write(workdir.join(".git/refs/heads/main.lock"), "").unwrap();

    // Second run: picks up the rest; the same events delivered again change nothing.
    let mut second = Daemon::start(root.path(), &envs, 2);
    let ops = format!("http://{listen}");
    wait_for(
        "/readyz",
        &mut second,
        async || matches!(http.get(format!("{ops}/readyz")).send().await, Ok(r) if r.status().is_success()),
    )
    .await;
    assert_eq!(http.get(format!("{ops}/healthz")).send().await.unwrap().status(), 200);
    assert!(second.log().contains("removing a git lock left by a driftback that stopped"), "{}", second.log());
    // A second daemon on the same working clone is refused, and says what to do.
    let other_listen = format!("127.0.0.1:{}", free_port());
    let refused = Command::new(BIN)
        .arg("serve")
        .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
        .env("DRIFTBACK_SERVE__LISTEN", &other_listen)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("another driftback serve is using the working clone"), "{said}");
    // The fatal error is a log line in the daemon's format, with one message.
    let last: Value = serde_json::from_str(said.lines().last().unwrap()).expect("a JSON log line");
    assert_eq!(last["level"], "ERROR", "{said}");
    assert!(last["error"].as_str().unwrap().contains("another driftback serve"), "{said}");
    // GitHub's webhook is served next to the probes, and only signed deliveries get in.
    let ping = json!({"zen": "Keep it logically awesome."}).to_string();
    let deliver = |signature: String| {
        http.post(format!("{ops}{}", driftback_publish::webhook::WEBHOOK_PATH))
            .header("X-GitHub-Event", "ping")
            .header("X-Hub-Signature-256", signature)
            .body(ping.clone())
            .send()
    };
    let forged =
        driftback_publish::webhook::signature(&driftback_publish::Secret::new("not the secret"), ping.as_bytes());
    assert_eq!(deliver(forged).await.unwrap().status(), 401);
    let signed =
        driftback_publish::webhook::signature(&driftback_publish::Secret::new(WEBHOOK_SECRET), ping.as_bytes());
    assert_eq!(deliver(signed).await.unwrap().status(), 200);
    wait_for("three branches and an empty queue", &mut second, async || {
        remote_branches(&remote).len() >= 3 && queue_is_empty(&sqs, &queue_url).await
    })
    .await;
    put_records(&http, &endpoint, &records).await;
    wait_for("the redelivered events to be consumed", &mut second, async || {
        let metrics = http.get(format!("{ops}/metrics")).send().await.unwrap().text().await.unwrap();
        metrics.lines().any(|l| l.starts_with("driftback_events_duplicate_total") && l.ends_with(" 9"))
            && queue_is_empty(&sqs, &queue_url).await
    })
    .await;
    let metrics = http.get(format!("{ops}/metrics")).send().await.unwrap().text().await.unwrap();
    for name in ["driftback_events_received_total", "driftback_events_dropped_total{reason=\"read-only\"}"] {
        assert!(metrics.contains(name), "{name} missing from /metrics:\n{metrics}");
    }

    // The change set the first daemon held when it was killed is taken again once its lease runs
    // out (3 s), and found already committed: wait for that rather than for the clock.
    let kb = workdir.join(".git/driftback/kb.sqlite");
    wait_for("the killed daemon's change set to be finished", &mut second, async || {
        let store = driftback_store::Store::open_sqlite(&kb).await.unwrap();
        store.unfinished_change_sets().await.unwrap().is_empty()
    })
    .await;
    eprintln!("second daemon's log:\n{}", second.log());
    let status = second.terminate();
    assert!(status.success(), "exit {status:?}:\n{}", second.log());
    let log = second.log();
    let first_line: Value = serde_json::from_str(log.lines().next().unwrap()).expect("JSON logs off a terminal");
    assert!(first_line.get("level").is_some(), "{first_line}");
    assert!(log.contains("\"stopped\""), "{log}");

    // Exactly one branch per reconciled change set: no duplicate commit after the crash, none for
    // redeliveries. Three resources drifted; alice's tag on the web server half a minute after its
    // type joins that change set, or is one of its own when it arrived after the first was taken
    // (SQS may hand the records over in more than one receive).
    let store = driftback_store::Store::open_sqlite(&workdir.join(".git/driftback/kb.sqlite")).await.unwrap();
    let stats = store.stats().await.unwrap();
    let reconciled = stats.change_sets_by_status.iter().find(|(s, _)| s == "reconciled").map_or(0, |(_, n)| *n);
    let branches = remote_branches(&remote);
    let web_branches = branches.iter().filter(|b| b.contains("aws_instance.web")).count();
    assert!(branches.len() == 3 || (branches.len() == 4 && web_branches == 2), "{branches:?}");
    assert_eq!(branches.len() as u64, reconciled, "{branches:?} {stats:?}");
    let mut trailers: Vec<String> = branches
        .iter()
        .map(|b| {
            let message = git(&remote, &["log", "-1", "--format=%B", b]);
            message.lines().find(|l| l.starts_with("Drift-Change-Set: ")).unwrap_or_else(|| panic!("{message}")).into()
        })
        .collect();
    trailers.sort();
    trailers.dedup();
    assert_eq!(trailers.len(), branches.len(), "{trailers:?}");
    let change_set_ids: Vec<String> =
        trailers.iter().map(|t| t.trim_start_matches("Drift-Change-Set: ").trim().to_string()).collect();
    let typed = branches
        .iter()
        .filter(|b| b.contains("aws_instance.web"))
        .map(|web| git(&remote, &["diff", "main", web]))
        .filter(|diff| diff.contains("+  instance_type = \"t3.large\""))
        .count();
    assert_eq!(typed, 1, "{branches:?}");
    assert_eq!(git(&remote, &["rev-parse", "main"]), main_before, "main is not touched");

    // The store shows the whole trail.
    assert_eq!(stats.events, 9, "{stats:?}");
    assert!(stats.bad_records >= 2, "{stats:?}");
    let unfinished = store.unfinished_change_sets().await.unwrap();
    assert!(unfinished.is_empty(), "{unfinished:?}");
    // Each reconciled change set's decision is in the audit log with its evidence, exactly once
    // (not a second time, evidence-less, from the change set row).
    for id in &change_set_ids {
        let decisions = store.decisions(id).await.unwrap();
        assert_eq!(decisions.len(), 1, "change set {id}: {decisions:?}");
        assert_eq!(decisions[0].decision.kind, "reconcile", "{decisions:?}");
        assert!(decisions[0].decision.evidence.get("fields").is_some(), "{decisions:?}");
    }
    // The field changes are in the ownership ledger, and the web server's instance type has its owner.
    let history =
        store.field_history("aws_instance.web", "instance_type", chrono::DateTime::UNIX_EPOCH, 100).await.unwrap();
    assert_eq!(history.len(), 1, "{history:?}");
    assert!(change_set_ids.contains(history[0].change_set_id.as_ref().unwrap()), "{history:?}");
    let owner = store.field_owner("aws_instance.web", "instance_type").await.unwrap();
    assert!(owner.is_some(), "no owner recorded for aws_instance.web instance_type");
    store.close().await;
}

/// The shared secret of the GitHub webhook in these tests.
const WEBHOOK_SECRET: &str = "serve-test-webhook-secret";

/// `driftback pending` on the daemon's clone (its embedded knowledge base).
fn driftback_pending(workdir: &std::path::Path) -> String {
    let out = Command::new(BIN).args(["pending", "--repo"]).arg(workdir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unparseable_messages_are_recorded_and_left_to_the_redrive_policy() {
    let Some(endpoint) = moto_endpoint("SQS tests") else { return };
    let root = tempfile::tempdir().unwrap();
    let remote = bare_remote(root.path());
    let suffix = format!("{}-{}", std::process::id(), free_port());
    let sqs = sqs_client(&endpoint).await;
    let dlq_url = sqs.create_queue().queue_name(format!("dlq-{suffix}")).send().await.unwrap().queue_url.unwrap();
    let dlq_arn = queue_arn(&sqs, &dlq_url).await;
    let policy = json!({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "2"}).to_string();
    let queue_url = sqs
        .create_queue()
        .queue_name(format!("feed-{suffix}"))
        .attributes(QueueAttributeName::RedrivePolicy, policy)
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let sent = sqs.send_message().queue_url(&queue_url).message_body("{\"truncated\": ").send().await.unwrap();
    let message_id = sent.message_id.unwrap();

    let workdir = root.path().join("work");
    let envs = vec![
        ("DRIFTBACK_FEED__QUEUE_URL", queue_url.clone()),
        ("DRIFTBACK_FEED__ENDPOINT_URL", endpoint.clone()),
        ("DRIFTBACK_FEED__REGION", "us-east-1".to_string()),
        ("DRIFTBACK_FEED__WAIT_TIME_SECS", "1".to_string()),
        ("DRIFTBACK_FEED__VISIBILITY_TIMEOUT_SECS", "2".to_string()),
        ("DRIFTBACK_FEED__UNPARSEABLE", "redrive".to_string()),
        ("DRIFTBACK_SERVE__REPO_URL", remote.display().to_string()),
        ("DRIFTBACK_SERVE__WORKDIR", workdir.display().to_string()),
        ("DRIFTBACK_SERVE__LISTEN", format!("127.0.0.1:{}", free_port())),
        ("DRIFTBACK_BACKFILL__ON_START", "false".to_string()),
    ];
    let mut daemon = Daemon::start(root.path(), &envs, 1);
    wait_for("the poison message in the dead-letter queue", &mut daemon, async || {
        let out = sqs
            .get_queue_attributes()
            .queue_url(&dlq_url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .send()
            .await
            .unwrap();
        out.attributes().unwrap()[&QueueAttributeName::ApproximateNumberOfMessages] == "1"
    })
    .await;
    let status = daemon.terminate();
    assert!(status.success(), "{}", daemon.log());
    assert!(queue_is_empty(&sqs, &queue_url).await);

    // Each receive was recorded with the text verbatim before the message moved on.
    let store = driftback_store::Store::open_sqlite(&workdir.join(".git/driftback/kb.sqlite")).await.unwrap();
    let stats = store.stats().await.unwrap();
    assert_eq!(stats.bad_records, 2, "{stats:?}");
    assert_eq!(stats.events, 0);
    store.close().await;
    // Off a terminal each line is one JSON object with one `message` (the log's), the SQS
    // message's id in its own field.
    let log = daemon.log();
    let left: Vec<&str> = log.lines().filter(|l| l.contains("left for the queue's redrive policy")).collect();
    assert_eq!(left.len(), 2, "one line per receive:\n{log}");
    for line in left {
        assert_eq!(line.matches("\"message\":").count(), 1, "{line}");
        let value: Value = serde_json::from_str(line).unwrap();
        assert_eq!(value["message"], "unparseable message left for the queue's redrive policy", "{line}");
        assert_eq!(value["sqs_message_id"], message_id.as_str(), "{line}");
        assert_eq!(value["level"], "WARN", "{line}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_and_unserved_envelopes_are_bad_input_and_make_no_change_set() {
    let Some(endpoint) = moto_endpoint("SQS tests") else { return };
    let root = tempfile::tempdir().unwrap();
    let remote = bare_remote(root.path());
    let suffix = format!("{}-{}", std::process::id(), free_port());
    let sqs = sqs_client(&endpoint).await;
    let queue_url = sqs.create_queue().queue_name(format!("forged-{suffix}")).send().await.unwrap().queue_url.unwrap();
    // The demo's tag change, in three envelopes: as AWS sends it; from a source anybody allowed
    // events:PutEvents can use; from an account this deployment does not serve.
    let tagged = demo_records().into_iter().find(|r| r["eventName"] == "CreateTags").unwrap();
    let envelope = |source: &str, record: &Value| {
        json!({"version": "0", "id": "e", "detail-type": "AWS API Call via CloudTrail", "source": source,
               "account": "123456789012", "time": record["eventTime"], "region": "us-east-1",
               "resources": [], "detail": record})
        .to_string()
    };
    let mut elsewhere = tagged.clone();
    elsewhere["eventID"] = json!("0f000000-0000-4000-8000-000000000001");
    elsewhere["recipientAccountId"] = json!("999999999999");
    let mut forged = tagged.clone();
    forged["eventID"] = json!("0f000000-0000-4000-8000-000000000002");
    // An `aws.*` source of another service than the record's: a forwarding rule or bus policy
    // that lets something else speak for EC2.
    let mut misattributed = tagged.clone();
    misattributed["eventID"] = json!("0f000000-0000-4000-8000-000000000003");
    for body in [
        envelope("custom.ops-bot", &forged),
        envelope("aws.ec2", &elsewhere),
        envelope("aws.s3", &misattributed),
        envelope("aws.ec2", &tagged),
    ] {
        sqs.send_message().queue_url(&queue_url).message_body(body).send().await.unwrap();
    }
    let workdir = root.path().join("work");
    let envs = vec![
        ("DRIFTBACK_FEED__QUEUE_URL", queue_url.clone()),
        ("DRIFTBACK_FEED__ENDPOINT_URL", endpoint.clone()),
        ("DRIFTBACK_FEED__REGION", "us-east-1".to_string()),
        ("DRIFTBACK_FEED__WAIT_TIME_SECS", "1".to_string()),
        ("DRIFTBACK_FEED__ACCOUNTS", "123456789012".to_string()),
        ("DRIFTBACK_FEED__REGIONS", "us-east-1,eu-west-1".to_string()),
        ("DRIFTBACK_GROUP__QUIET_WINDOW_SECS", "0".to_string()),
        ("DRIFTBACK_SERVE__POLL_MS", "100".to_string()),
        ("DRIFTBACK_SERVE__REPO_URL", remote.display().to_string()),
        ("DRIFTBACK_SERVE__WORKDIR", workdir.display().to_string()),
        ("DRIFTBACK_SERVE__LISTEN", format!("127.0.0.1:{}", free_port())),
        ("DRIFTBACK_BACKFILL__ON_START", "false".to_string()),
        ("DRIFTBACK_PUBLISH__MODE", "push".to_string()),
    ];
    let mut daemon = Daemon::start(root.path(), &envs, 1);
    // Done when the branch is pushed, the queue drained and the feed has recorded the change set
    // (after the push), so that stopping the daemon interrupts nothing.
    let db = workdir.join(".git/driftback/kb.sqlite");
    let recorded = async || {
        let Ok(store) = driftback_store::Store::open_sqlite(&db).await else { return false };
        let sets: u64 = store.stats().await.map_or(0, |s| s.change_sets_by_status.iter().map(|(_, n)| n).sum());
        store.close().await;
        sets > 0
    };
    wait_for("the served change to be pushed, recorded and the queue drained", &mut daemon, async || {
        !remote_branches(&remote).is_empty() && queue_is_empty(&sqs, &queue_url).await && recorded().await
    })
    .await;
    let status = daemon.terminate();
    assert!(status.success(), "{}", daemon.log());
    // One branch, for the one served record; the other three are bad input with their reasons.
    assert_eq!(remote_branches(&remote).len(), 1, "{:?}", remote_branches(&remote));
    let store = driftback_store::Store::open_sqlite(&db).await.unwrap();
    let stats = store.stats().await.unwrap();
    assert_eq!((stats.events, stats.bad_records), (1, 3), "{stats:?}");
    let sets: u64 = stats.change_sets_by_status.iter().map(|(_, n)| n).sum();
    assert_eq!(sets, 1, "{stats:?}");
    store.close().await;
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite:{}", db.display())).await.unwrap();
    let reasons: Vec<String> =
        sqlx::query_scalar("SELECT reason FROM bad_records ORDER BY reason").fetch_all(&mut conn).await.unwrap();
    assert!(reasons.iter().any(|r| r.contains("\"custom.ops-bot\"") && r.contains("may be forged")), "{reasons:?}");
    assert!(
        reasons.iter().any(|r| r.contains("\"aws.s3\" carries a record of eventSource \"ec2.amazonaws.com\"")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("\"999999999999\", which [feed] accounts does not serve")),
        "{reasons:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_knowledge_write_the_store_refuses_is_counted_and_the_reconciliation_stands() {
    let Some(endpoint) = moto_endpoint("SQS tests") else { return };
    let root = tempfile::tempdir().unwrap();
    let remote = bare_remote(root.path());
    let sqs = sqs_client(&endpoint).await;
    let queue_url = sqs
        .create_queue()
        .queue_name(format!("kb-lost-{}-{}", std::process::id(), free_port()))
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    // A knowledge base that refuses every new knowledge entry, as a database out of space would.
    let kb = root.path().join("kb.sqlite");
    driftback_store::Store::open_sqlite(&kb).await.unwrap().close().await;
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite:{}", kb.display())).await.unwrap();
    sqlx::raw_sql(
        "CREATE TRIGGER refuse_knowledge BEFORE INSERT ON knowledge \
         BEGIN SELECT RAISE(ABORT, 'no space left for knowledge (test)'); END",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();
    let tagged = demo_records().into_iter().find(|r| r["eventName"] == "CreateTags").unwrap();
    let body = json!({"version": "0", "id": "e", "detail-type": "AWS API Call via CloudTrail", "source": "aws.ec2",
                      "account": "123456789012", "time": tagged["eventTime"], "region": "us-east-1",
                      "resources": [], "detail": tagged});
    sqs.send_message().queue_url(&queue_url).message_body(body.to_string()).send().await.unwrap();
    let listen = format!("127.0.0.1:{}", free_port());
    let envs = vec![
        ("DRIFTBACK_FEED__QUEUE_URL", queue_url.clone()),
        ("DRIFTBACK_FEED__ENDPOINT_URL", endpoint.clone()),
        ("DRIFTBACK_FEED__REGION", "us-east-1".to_string()),
        ("DRIFTBACK_FEED__WAIT_TIME_SECS", "1".to_string()),
        ("DRIFTBACK_GROUP__QUIET_WINDOW_SECS", "0".to_string()),
        ("DRIFTBACK_SERVE__POLL_MS", "100".to_string()),
        ("DRIFTBACK_SERVE__REPO_URL", remote.display().to_string()),
        ("DRIFTBACK_SERVE__WORKDIR", root.path().join("work").display().to_string()),
        ("DRIFTBACK_SERVE__LISTEN", listen.clone()),
        ("DRIFTBACK_STORE__SQLITE_PATH", kb.display().to_string()),
        ("DRIFTBACK_BACKFILL__ON_START", "false".to_string()),
        ("DRIFTBACK_PUBLISH__MODE", "push".to_string()),
    ];
    let mut daemon = Daemon::start(root.path(), &envs, 1);
    let http = reqwest::Client::new();
    let lost = "driftback_knowledge_writes_lost_total{write=\"reconciliation\"} 1";
    wait_for("the change pushed and the lost knowledge write counted", &mut daemon, async || {
        let metrics = match http.get(format!("http://{listen}/metrics")).send().await {
            Ok(response) => response.text().await.unwrap_or_default(),
            Err(_) => return false,
        };
        !remote_branches(&remote).is_empty() && metrics.lines().any(|l| l == lost)
    })
    .await;
    let status = daemon.terminate();
    assert!(status.success(), "{}", daemon.log());
    // The reconciliation stands: its branch is pushed and its change set is done.
    assert_eq!(remote_branches(&remote).len(), 1);
    let store = driftback_store::Store::open_sqlite(&kb).await.unwrap();
    let stats = store.stats().await.unwrap();
    assert_eq!(stats.queue_by_status, [("done".to_string(), 1)], "{stats:?}");
    assert_eq!(stats.knowledge_entries, 0, "{stats:?}");
    store.close().await;
    let log = daemon.log();
    assert!(
        log.lines().any(|l| l.contains("a knowledge-base write failed") && l.contains("no space left for knowledge")),
        "{log}"
    );
}

/// A network interface; its call's recipe is switched off (`[recipes] disabled`), so only the
/// agent can reconcile it.
const ENI_TF: &str = r#"resource "aws_network_interface" "core" {
  subnet_id         = "subnet-1"
  source_dest_check = false
}
"#;

const ENI_CALL: &str = "ec2.amazonaws.com:ModifyNetworkInterfaceAttribute";

const ENI_STATE: &str = r#"{"version": 4, "resources": [
  {"mode": "managed", "type": "aws_network_interface", "name": "core", "instances": [{"attributes": {"id": "eni-0c0re", "source_dest_check": false}}]}
]}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_hands_what_no_recipe_covers_to_the_agent_and_keeps_its_transcript() {
    use driftback_agent::scripted::{Reply, ScriptedModel};
    let Some(endpoint) = moto_endpoint("SQS tests") else { return };
    let root = tempfile::tempdir().unwrap();
    let remote = bare_remote_with(root.path(), &[("main.tf", ENI_TF), ("terraform.tfstate", ENI_STATE)]);

    let sqs = sqs_client(&endpoint).await;
    let suffix = format!("{}-{}", std::process::id(), free_port());
    let queue_url = sqs.create_queue().queue_name(format!("agent-{suffix}")).send().await.unwrap().queue_url.unwrap();
    let record = json!({
        "eventVersion": "1.08",
        "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/erin", "accountId": "123456789012", "userName": "erin"},
        "eventTime": "2024-10-28T12:15:02Z",
        "eventSource": "ec2.amazonaws.com",
        "eventName": "ModifyNetworkInterfaceAttribute",
        "awsRegion": "us-east-1",
        "sourceIPAddress": "203.0.113.87",
        "userAgent": "AWS Internal",
        "requestParameters": {"networkInterfaceId": "eni-0c0re", "sourceDestCheck": {"value": true}},
        "responseElements": {"requestId": "r", "_return": true},
        "eventID": format!("agent-{suffix}"),
        "readOnly": false,
        "eventType": "AwsApiCall",
        "managementEvent": true,
        "recipientAccountId": "123456789012"
    });
    let envelope = json!({"version": "0", "id": "e", "detail-type": "AWS API Call via CloudTrail", "source": "aws.ec2",
                          "account": "123456789012", "time": "2024-10-28T12:15:02Z", "region": "us-east-1",
                          "resources": [], "detail": record});
    sqs.send_message().queue_url(&queue_url).message_body(envelope.to_string()).send().await.unwrap();

    let model = ScriptedModel::start(vec![
        Reply::call("read_hcl", json!({"address": "aws_network_interface.core"})),
        Reply::call(
            "edit_hcl",
            json!({"address": "aws_network_interface.core", "path": "source_dest_check", "value": true}),
        ),
        Reply::call("validate", json!({})),
        Reply::call(
            "finish",
            json!({"summary": "source/destination check off", "intent": "unknown", "motivation": "unknown", "confidence": 0.8}),
        ),
    ]);
    let workdir = root.path().join("work");
    let listen = format!("127.0.0.1:{}", free_port());
    let envs = vec![
        ("DRIFTBACK_FEED__QUEUE_URL", queue_url.clone()),
        ("DRIFTBACK_FEED__ENDPOINT_URL", endpoint.clone()),
        ("DRIFTBACK_FEED__REGION", "us-east-1".to_string()),
        ("DRIFTBACK_FEED__WAIT_TIME_SECS", "1".to_string()),
        ("DRIFTBACK_SERVE__REPO_URL", remote.display().to_string()),
        ("DRIFTBACK_SERVE__WORKDIR", workdir.display().to_string()),
        ("DRIFTBACK_SERVE__LISTEN", listen.clone()),
        ("DRIFTBACK_SERVE__POLL_MS", "100".to_string()),
        ("DRIFTBACK_BACKFILL__ON_START", "false".to_string()),
        ("DRIFTBACK_PUBLISH__MODE", "push".to_string()),
        ("DRIFTBACK_LLM_API_KEY", "scripted-key".to_string()),
        ("DRIFTBACK_AGENT__BASE_URL", model.base_url()),
        ("DRIFTBACK_AGENT__MODEL", "scripted".to_string()),
        ("DRIFTBACK_AGENT__TIMEOUT_SECS", "20".to_string()),
        ("DRIFTBACK_RECIPES__DISABLED", ENI_CALL.to_string()),
    ];
    let mut daemon = Daemon::start(root.path(), &envs, 1);
    wait_for("the agent's branch on the remote", &mut daemon, async || !remote_branches(&remote).is_empty()).await;
    let http = reqwest::Client::new();
    let metrics = http.get(format!("http://{listen}/metrics")).send().await.unwrap().text().await.unwrap();
    let tokens: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("driftback_llm_tokens_total "))
        .unwrap_or_else(|| panic!("no token count in /metrics:\n{metrics}"))
        .trim()
        .parse()
        .unwrap();
    assert!(tokens > 0.0, "{metrics}");
    let status = daemon.terminate();
    assert!(status.success(), "{}", daemon.log());
    assert_eq!(model.remaining(), 0, "the scripted model was not followed to its end:\n{}", daemon.log());

    let branches = remote_branches(&remote);
    assert_eq!(branches.len(), 1, "{branches:?}");
    let diff = git(&remote, &["diff", "main", &branches[0]]);
    assert!(diff.contains("+  source_dest_check = true"), "{diff}");
    let message = git(&remote, &["log", "-1", "--format=%B", &branches[0]]);
    let change_set = message.lines().find_map(|l| l.strip_prefix("Drift-Change-Set: ")).expect(&message).trim();

    // The agent's transcript and tokens are in the store with the change set's branch.
    let store = driftback_store::Store::open_sqlite(&workdir.join(".git/driftback/kb.sqlite")).await.unwrap();
    let kept = store.reconciliation(change_set).await.unwrap().expect("the agent's reconciliation is recorded");
    let r = kept.reconciliation;
    assert_eq!(r.model.as_deref(), Some("scripted"));
    assert_eq!(r.outcome, "reconciled");
    assert_eq!(r.branch.as_deref(), Some(branches[0].as_str()));
    assert!(r.prompt_tokens > 0, "{r:?}");
    assert_eq!(store.decisions(change_set).await.unwrap().len(), 1);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_opens_one_pull_request_per_resource_and_learns_merges_from_the_signed_webhook() {
    let Some(endpoint) = moto_endpoint("SQS tests") else { return };
    let github = github_server::GitHubStandIn::start().await;
    let root = tempfile::tempdir().unwrap();
    let remote = bare_remote(root.path());
    let sqs = sqs_client(&endpoint).await;
    let suffix = format!("{}-{}", std::process::id(), free_port());
    let queue_url = sqs.create_queue().queue_name(format!("prs-{suffix}")).send().await.unwrap().queue_url.unwrap();
    for record in demo_records() {
        let envelope = json!({"version": "0", "id": "e", "detail-type": "AWS API Call via CloudTrail",
                              "source": eventbridge_source(&record), "account": "123456789012", "region": "us-east-1",
                              "resources": [], "detail": record});
        sqs.send_message().queue_url(&queue_url).message_body(envelope.to_string()).send().await.unwrap();
    }

    let workdir = root.path().join("work");
    let listen = format!("127.0.0.1:{}", free_port());
    let envs = vec![
        ("DRIFTBACK_FEED__QUEUE_URL", queue_url.clone()),
        ("DRIFTBACK_FEED__ENDPOINT_URL", endpoint.clone()),
        ("DRIFTBACK_FEED__REGION", "us-east-1".to_string()),
        ("DRIFTBACK_FEED__WAIT_TIME_SECS", "1".to_string()),
        ("DRIFTBACK_SERVE__REPO_URL", remote.display().to_string()),
        ("DRIFTBACK_SERVE__WORKDIR", workdir.display().to_string()),
        ("DRIFTBACK_SERVE__LISTEN", listen.clone()),
        ("DRIFTBACK_SERVE__POLL_MS", "100".to_string()),
        ("DRIFTBACK_BACKFILL__ON_START", "false".to_string()),
        ("DRIFTBACK_PUBLISH__MODE", "pull-request".to_string()),
        ("DRIFTBACK_PUBLISH__API_URL", github.base_url.clone()),
        ("DRIFTBACK_PUBLISH__REPOSITORY", "acme/infra".to_string()),
        ("DRIFTBACK_PUBLISH__RETRY_DELAY_MS", "0".to_string()),
        ("GITHUB_TOKEN", github_server::TOKEN.to_string()),
        ("DRIFTBACK_WEBHOOK_SECRET", WEBHOOK_SECRET.to_string()),
    ];
    let mut daemon = Daemon::start(root.path(), &envs, 1);
    // Three reconciliations and the security group's held draft.
    wait_for("four pull requests", &mut daemon, async || github.inner.lock().unwrap().pulls.len() >= 4).await;
    // alice tagged the web server half a minute after changing its type: in the same change set,
    // or (when the tag arrived after that one was closed) a later one, added as a section of the
    // same pull request. Either way the daemon is done with it before anyone answers.
    let store = driftback_store::Store::open_sqlite(&workdir.join(".git/driftback/kb.sqlite")).await.unwrap();
    let since = chrono::DateTime::UNIX_EPOCH;
    wait_for("the web server's tag change recorded", &mut daemon, async || {
        let tagged = store.field_history("aws_instance.web", "tags.CostCenter", since, 1).await.unwrap();
        match tagged.first().and_then(|c| c.change_set_id.clone()) {
            Some(id) => store.change_set(&id).await.unwrap().is_some(),
            None => false,
        }
    })
    .await;

    let pulls = github.inner.lock().unwrap().pulls.clone();
    let heads = remote_branches(&remote);
    assert_eq!(pulls.len(), heads.len(), "one pull request per pushed branch: {heads:?}");
    for pr in &pulls {
        let head = pr["head"]["ref"].as_str().unwrap();
        assert!(heads.iter().any(|h| h == head), "{head} was pushed");
        let marker = if pr["draft"] == true { "<!-- driftback:escalation " } else { "<!-- driftback:resource " };
        assert!(pr["body"].as_str().unwrap().starts_with(marker), "{pr}");
        assert_eq!(pr["base"]["ref"], "main");
    }
    let web = pulls.iter().find(|p| p["head"]["ref"].as_str().unwrap().contains("aws_instance.web")).unwrap();
    let number = web["number"].as_u64().unwrap();

    // Each pull request's decision was in the knowledge base before the pull request opened: a
    // person (or a bot) may answer it at once. People answer once the daemon is done with the
    // change set (the feed has recorded its row), as they would.
    let change_set_in = |pr: &Value| -> String {
        pr["body"].as_str().unwrap().rsplit("Change set `").next().unwrap().split('`').next().unwrap().to_string()
    };
    for pr in &pulls {
        let id = change_set_in(pr);
        assert!(!store.decisions(&id).await.unwrap().is_empty(), "#{} opened before {id} was decided", pr["number"]);
        wait_for(&format!("change set {id} recorded"), &mut daemon, async || {
            store.change_set(&id).await.unwrap().is_some()
        })
        .await;
    }

    // The store knows the open pull request; GitHub's signed "closed" delivery marks it merged.
    let known = store.open_pull_request("aws_instance.web").await.unwrap().expect("the pull request is recorded");
    assert_eq!(known.number, number);
    let merged = github.merge(number);
    let body = json!({"action": "closed", "number": number, "pull_request": merged}).to_string();
    let http = reqwest::Client::new();
    let answer = deliver_signed(&http, &listen, "pull_request", body).await.unwrap();
    assert_eq!(answer.status(), 200, "{}", answer.text().await.unwrap());
    assert!(store.open_pull_request("aws_instance.web").await.unwrap().is_none(), "no longer open");

    // The world-open SSH rule waits for a person in a held draft pull request (its edit can be
    // written); people answer there.
    assert!(github.inner.lock().unwrap().issues.is_empty(), "a draft, not an issue");
    let draft = pulls.iter().find(|p| p["draft"] == true).expect("the held draft").clone();
    let draft_number = draft["number"].as_u64().unwrap();
    let draft_head = draft["head"]["ref"].as_str().unwrap().to_string();
    assert!(draft_head.contains("aws_security_group.web"), "{draft_head}");
    {
        let mut inner = github.inner.lock().unwrap();
        inner.permissions.insert("maria".into(), "write".into());
        inner.permissions.insert("lead".into(), "admin".into());
        inner.permissions.insert("visitor".into(), "read".into());
    }
    // A comment on a pull request, as GitHub delivers it: the thread is the pull request as an
    // issue (with `pull_request`), its body the description at that moment.
    let thread_of = |number: u64| -> Value {
        let mut t = github.inner.lock().unwrap().pulls.iter().find(|p| p["number"] == number).unwrap().clone();
        t["pull_request"] = json!({"url": t["url"].clone()});
        t
    };
    let say_on = |thread: &Value, user: &str, text: &str| {
        let body = json!({"action": "created", "issue": thread.clone(),
            "comment": {"id": 1, "body": text, "user": {"login": user, "type": "User"}},
            "sender": {"login": user, "type": "User"}})
        .to_string();
        deliver_signed(&http, &listen, "issue_comment", body)
    };
    // GitHub's signed `pull_request` delivery for a merge by `user`.
    let merged_by = async |number: u64, user: &str| {
        github.mark_ready(number);
        let merged = github.merge_by(number, user);
        let body = json!({"action": "closed", "number": number, "pull_request": merged,
                          "sender": {"login": user, "type": "User"}})
        .to_string();
        let answer = deliver_signed(&http, &listen, "pull_request", body).await.unwrap();
        assert_eq!(answer.status(), 200, "{}", answer.text().await.unwrap());
    };
    let replies = |n: u64| -> Vec<String> {
        github.inner.lock().unwrap().comments.iter().filter(|(c, _)| *c == n).map(|(_, t)| t.clone()).collect()
    };
    let change_set = change_set_in(&draft);
    let change_set = change_set.as_str();
    // A reader's accept is refused with a reply, and nothing is written.
    let pulls_before = github.inner.lock().unwrap().pulls.len();
    assert_eq!(say_on(&thread_of(draft_number), "visitor", "/driftback accept").await.unwrap().status(), 200);
    assert!(
        replies(draft_number).last().unwrap().contains("only people with write access"),
        "{:?}",
        replies(draft_number)
    );
    assert_eq!(git(&remote, &["rev-list", "--count", &format!("main..{draft_head}")]).trim(), "1");
    assert_eq!(say_on(&thread_of(draft_number), "maria", "/driftback explain").await.unwrap().status(), 200);
    let explained = replies(draft_number).last().unwrap().clone();
    assert!(explained.contains("**escalate**"), "{explained}");

    // A writer's accept is obeyed on the draft: the change set is driven again with her decision
    // and lands on the draft's branch (no new pull request), the thread says the draft is ready
    // to be marked ready and merged. Codifying runs on its own (longer than GitHub waits for a
    // delivery): its reply is the sign. The reply to an answer, among the comments made after
    // `before` (a commit the answer pushes is announced in the thread too, in either order).
    let answered = async |thread: u64, before: usize, reply: &str| -> String {
        let start = Instant::now();
        loop {
            if let Some(found) = replies(thread).into_iter().skip(before).find(|r| r.contains(reply)) {
                return found;
            }
            assert!(start.elapsed() < Duration::from_secs(60), "no reply in #{thread}: {:?}", replies(thread));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let before = replies(draft_number).len();
    assert_eq!(
        say_on(&thread_of(draft_number), "maria", "Hotfix, keep it.\n/driftback accept").await.unwrap().status(),
        200
    );
    let accepted = answered(draft_number, before, "@maria accepted change set").await;
    assert!(
        accepted.contains(&format!("pull request #{draft_number} updated"))
            && accepted.contains("ready to be marked ready for review"),
        "{accepted}"
    );
    let pulls = github.inner.lock().unwrap().pulls.clone();
    assert_eq!(pulls.len(), pulls_before, "{:?}", replies(draft_number));
    assert_eq!(git(&remote, &["rev-list", "--count", &format!("main..{draft_head}")]).trim(), "2");
    let main_tf = git(&remote, &["show", &format!("{draft_head}:main.tf")]);
    assert!(main_tf.contains("\"0.0.0.0/0\""), "{main_tf}");
    let log = git(&remote, &["log", "-1", "--format=%B", &draft_head]);
    assert!(log.contains("Drift-Decision: reconcile") && log.contains("maria in #"), "{log}");
    // It is the resource's pull request now: no longer waiting, found as the resource's.
    let sg_pr = pulls.iter().find(|p| p["number"] == draft_number).unwrap();
    let body = sg_pr["body"].as_str().unwrap();
    assert!(body.contains("<!-- driftback:resource aws_security_group.web -->"), "{body}");
    assert!(!body.contains("<!-- driftback:escalation "), "{body}");
    // Who decided is in the audit log: her answer, and the reconciliation under the rule `person`.
    let decisions = store.decisions(change_set).await.unwrap();
    let by_person = decisions.iter().find(|d| d.decision.kind == "person-accept").expect("the answer is recorded");
    assert_eq!(by_person.decision.evidence["by"], "maria");
    let redriven = decisions.iter().find(|d| d.decision.kind == "reconcile").expect("driven again");
    assert_eq!(redriven.decision.rule.as_deref(), Some("person"));
    assert!(!decisions.iter().any(|d| d.decision.evidence["by"] == "visitor"), "a reader is never obeyed");
    assert_eq!(store.change_set(change_set).await.unwrap().unwrap().status, "reconciled");
    assert_eq!(store.open_pull_request("aws_security_group.web").await.unwrap().map(|p| p.number), Some(draft_number));
    merged_by(draft_number, "maria").await;
    assert!(store.open_pull_request("aws_security_group.web").await.unwrap().is_none(), "merged");

    // Later world-open rules on the group: each a held draft of its own.
    let sg_record =
        demo_records().into_iter().find(|r| r["eventID"] == "3f0c1d2e-0000-4000-8000-000000000005").unwrap();
    let open_draft_after = |known: usize| {
        let pulls = github.inner.lock().unwrap().pulls.clone();
        (pulls.len() > known).then(|| pulls.last().cloned()).flatten().filter(|p| p["draft"] == true)
    };
    let send_rule = async |id: &str, time: &str, port: u64| {
        let mut record = sg_record.clone();
        record["eventID"] = id.into();
        record["eventTime"] = time.into();
        record["requestParameters"]["ipPermissions"]["items"][0]["fromPort"] = port.into();
        record["requestParameters"]["ipPermissions"]["items"][0]["toPort"] = port.into();
        let envelope = json!({"version": "0", "id": "e", "detail-type": "AWS API Call via CloudTrail",
                              "source": "aws.ec2", "account": "123456789012", "region": "us-east-1",
                              "resources": [], "detail": record});
        sqs.send_message().queue_url(&queue_url).message_body(envelope.to_string()).send().await.unwrap();
    };

    // Merged as it was (marked ready and merged by the lead, no command): the audit log records
    // the lead's accept, and the ledger learns that the code owns the field by their decision.
    let known = github.inner.lock().unwrap().pulls.len();
    send_rule("3f0c1d2e-0000-4000-8000-000000000400", "2024-05-02T09:00:00Z", 3389).await;
    wait_for("a second held draft", &mut daemon, async || open_draft_after(known).is_some()).await;
    let second = open_draft_after(known).unwrap();
    let second_number = second["number"].as_u64().unwrap();
    let second_change_set = change_set_in(&second);
    assert!(!store.decisions(&second_change_set).await.unwrap().is_empty(), "opened before it was decided");
    wait_for("the second draft's change set recorded", &mut daemon, async || {
        store.change_set(&second_change_set).await.unwrap().is_some()
    })
    .await;
    merged_by(second_number, "lead").await;
    let decisions = store.decisions(&second_change_set).await.unwrap();
    let accept = decisions.iter().find(|d| d.decision.kind == "person-accept").expect("the merge is an accept");
    assert_eq!(
        (accept.decision.evidence["by"].as_str(), accept.decision.evidence["via"].as_str()),
        (Some("lead"), Some("github-merge"))
    );
    let owner = store.field_owner("aws_security_group.web", "ingress").await.unwrap().unwrap();
    assert_eq!((owner.owner.as_str(), owner.rule.as_deref()), ("terraform", Some("person:lead")));
    assert!(!driftback_pending(&workdir).contains(&second_change_set), "no longer waits");

    // `/driftback revert` on a held draft closes it (not merged) with the reply.
    let known = github.inner.lock().unwrap().pulls.len();
    send_rule("3f0c1d2e-0000-4000-8000-000000000401", "2024-05-02T11:00:00Z", 5432).await;
    wait_for("a third held draft", &mut daemon, async || open_draft_after(known).is_some()).await;
    let third = open_draft_after(known).unwrap().clone();
    let third_number = third["number"].as_u64().unwrap();
    let third_change_set = change_set_in(&third);
    assert!(!store.decisions(&third_change_set).await.unwrap().is_empty(), "opened before it was decided");
    wait_for("the third draft's change set recorded", &mut daemon, async || {
        store.change_set(&third_change_set).await.unwrap().is_some()
    })
    .await;
    assert_eq!(say_on(&thread_of(third_number), "maria", "/driftback revert").await.unwrap().status(), 200);
    assert!(replies(third_number).last().unwrap().contains("Recorded: @maria decided that the code's value stands"));
    let third_now = github.inner.lock().unwrap().pulls.iter().find(|p| p["number"] == third_number).unwrap().clone();
    assert_eq!((third_now["state"].as_str(), third_now["merged"].as_bool()), (Some("closed"), Some(false)));
    assert!(github.requests().iter().any(|r| r.method == "PATCH"
        && r.path == format!("/repos/acme/infra/pulls/{third_number}")
        && r.body["state"] == "closed"));

    // On driftback's own pull request for the queue: `/driftback own` writes the policy rule and
    // the `ignore_changes` onto it.
    let queue_pr = pulls.iter().find(|p| p["head"]["ref"].as_str().unwrap().contains("aws_sqs_queue.jobs")).unwrap();
    let queue_number = queue_pr["number"].as_u64().unwrap();
    let mut thread = queue_pr.clone();
    thread["pull_request"] = json!({"url": queue_pr["url"].clone()});
    let before = replies(queue_number).len();
    assert_eq!(
        say_on(&thread, "maria", "/driftback own visibility_timeout_seconds by ops-bot").await.unwrap().status(),
        200
    );
    let owned = answered(queue_number, before, "decided that ops-bot owns").await;
    assert!(
        owned.contains("decided that ops-bot owns `visibility_timeout_seconds`")
            && owned.contains(&format!("pull request #{queue_number} updated")),
        "{owned}"
    );
    let queue_head = queue_pr["head"]["ref"].as_str().unwrap();
    let policy_text = git(&remote, &["show", &format!("{queue_head}:.driftback/policy.toml")]);
    let policy = driftback_policy::Policy::from_toml(&policy_text, "policy.toml").expect("the policy file loads");
    let rule = policy.rules.iter().find(|r| r.name == "own:aws_sqs_queue.jobs:visibility_timeout_seconds").unwrap();
    assert_eq!(rule.matcher.attributes, ["visibility_timeout_seconds"]);
    assert!(policy_text.contains("owner = \"ops-bot\""), "{policy_text}");
    let main_tf = git(&remote, &["show", &format!("{queue_head}:main.tf")]);
    assert!(main_tf.contains("ignore_changes = [visibility_timeout_seconds]"), "{main_tf}");
    // The ledger learned the owner.
    let owner = store.field_owner("aws_sqs_queue.jobs", "visibility_timeout_seconds").await.unwrap().unwrap();
    assert_eq!((owner.owner.as_str(), owner.rule.as_deref()), ("ops-bot", Some("person")));

    // On the web server's pull request, a revert is recorded with who decided, and said in the
    // thread. The code's value stands for both change sets the pull request carries.
    let web_thread = thread_of(number);
    assert_eq!(say_on(&web_thread, "maria", "/driftback revert").await.unwrap().status(), 200);
    assert!(replies(number).last().unwrap().contains("Recorded: @maria decided that the code's value stands"));
    let body = web_thread["body"].as_str().unwrap();
    let carried: std::collections::BTreeSet<&str> =
        body.split("Change set `").skip(1).map(|rest| rest.split('`').next().unwrap()).collect();
    assert!(!carried.is_empty(), "{body}");
    for id in &carried {
        let decisions = store.decisions(id).await.unwrap();
        let by_person = decisions.iter().find(|d| d.decision.kind == "person-revert").expect("the answer is recorded");
        assert_eq!(by_person.decision.evidence["by"], "maria", "{id}");
    }
    for field in ["instance_type", "tags.CostCenter"] {
        let owner = store.field_owner("aws_instance.web", field).await.unwrap().unwrap();
        assert_eq!((owner.owner.as_str(), owner.rule.as_deref()), ("terraform", Some("person:maria")), "{field}");
    }
    store.close().await;
    let status = daemon.terminate();
    assert!(status.success(), "{}", daemon.log());
}
