//! `driftback serve` on an organisation trail against moto: the trail bucket notifies the queue
//! the EventBridge rule also feeds (as deploy/terraform wires it, `[feed] carries = "both"`); the
//! demo's records arrive in one gzip'd organisation log file, some of them through EventBridge as
//! well. Each event is recorded once, its change sets become branches, and every message is
//! deleted.
//!
//! Run through scripts/moto.sh (DRIFTBACK_TEST_MOTO_ENDPOINT); without it the test says so and
//! passes, unless DRIFTBACK_REQUIRE_SERVICES is set.

use serde_json::json;

mod support;
use support::{
    Daemon, bare_remote, demo_records, eventbridge, eventbridge_entries, free_port, git, gzip, moto_endpoint,
    queue_arn, queue_messages, remote_branches, route_cloudtrail_to_queue, s3_client, sqs_client, trail_bucket,
    trail_daemon_env, wait_for,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_reads_the_organisation_trail_and_the_eventbridge_feed_recording_each_event_once() {
    let Some(endpoint) = moto_endpoint("trail serve test") else { return };
    let root = tempfile::tempdir().unwrap();
    let remote = bare_remote(root.path());
    let suffix = format!("{}-{}", std::process::id(), free_port());

    // One queue: the EventBridge rule's target and the trail bucket's notification target.
    let sqs = sqs_client(&endpoint).await;
    let queue_url = sqs.create_queue().queue_name(format!("org-{suffix}")).send().await.unwrap().queue_url.unwrap();
    let arn = queue_arn(&sqs, &queue_url).await;
    let http = reqwest::Client::new();
    route_cloudtrail_to_queue(&http, &endpoint, &format!("cloudtrail-{suffix}"), &arn).await;
    let s3 = s3_client(&endpoint).await;
    let bucket = format!("org-trail-{suffix}");
    trail_bucket(&s3, &bucket, &arn).await;

    // The demo's nine records in one organisation log file, and a digest file next to it.
    let records = demo_records();
    assert_eq!(records.len(), 9);
    let day = "CloudTrail/us-east-1/2026/01/15";
    let key =
        format!("AWSLogs/o-exampleorg1/123456789012/{day}/123456789012_CloudTrail_us-east-1_20260115T1030Z_x.json.gz");
    let log = gzip(json!({"Records": records}).to_string().as_bytes());
    s3.put_object().bucket(&bucket).key(&key).body(log.into()).send().await.unwrap();
    let digest = "AWSLogs/o-exampleorg1/123456789012/CloudTrail-Digest/us-east-1/2026/01/15/x_Digest.json.gz";
    s3.put_object().bucket(&bucket).key(digest).body(gzip(b"{}").into()).send().await.unwrap();
    // Three of them through EventBridge as well.
    let out = eventbridge(&http, &endpoint, "PutEvents", eventbridge_entries(&records[..3])).await;
    assert_eq!(out["FailedEntryCount"].as_u64().unwrap_or(0), 0, "{out}");
    // S3's test event, two object notifications, three envelopes.
    assert_eq!(queue_messages(&sqs, &queue_url).await, 6);

    let listen = format!("127.0.0.1:{}", free_port());
    let workdir = root.path().join("work");
    let envs = trail_daemon_env(&endpoint, &queue_url, &bucket, &remote, &workdir, &listen);
    let mut daemon = Daemon::start(root.path(), &envs, 1);
    // Done when the branches are pushed, the queue is empty and both sources' events are counted
    // (the counters move after a message is deleted).
    let metrics_text =
        async || http.get(format!("http://{listen}/metrics")).send().await.unwrap().text().await.unwrap();
    wait_for("three branches, an empty queue and both feeds counted", &mut daemon, async || {
        remote_branches(&remote).len() >= 3
            && queue_messages(&sqs, &queue_url).await == 0
            && metrics_text()
                .await
                .lines()
                .any(|l| l.starts_with("driftback_events_duplicate_total ") && l.ends_with(" 3"))
    })
    .await;
    let metrics = metrics_text().await;
    let value = |series: &str| {
        metrics.lines().find_map(|l| l.strip_prefix(series).and_then(|v| v.trim().parse::<u64>().ok())).unwrap_or(0)
    };
    assert_eq!(value("driftback_trail_objects_read_total"), 1, "{metrics}");
    assert_eq!(value("driftback_trail_objects_ignored_total{reason=\"digest\"}"), 1, "{metrics}");
    assert_eq!(value("driftback_trail_objects_ignored_total{reason=\"test-event\"}"), 1, "{metrics}");
    assert_eq!(value("driftback_events_received_total{source=\"trail\"}"), 9, "{metrics}");
    assert_eq!(value("driftback_events_duplicate_total"), 3, "{metrics}");
    let status = daemon.terminate();
    assert!(status.success(), "exit {status:?}:\n{}", daemon.log());
    assert!(daemon.log().contains("\"carries\":\"both\"") || daemon.log().contains("carries=both"), "{}", daemon.log());

    // One branch per change set, as from the EventBridge feed alone (tests/serve.rs): the web
    // server's tag is in its type's change set, or one of its own when it arrived after that one
    // was taken.
    let branches = remote_branches(&remote);
    let web: Vec<&String> = branches.iter().filter(|b| b.contains("aws_instance.web")).collect();
    assert!(branches.len() == 3 || (branches.len() == 4 && web.len() == 2), "{branches:?}");
    let typed = web.iter().filter(|b| git(&remote, &["diff", "main", b]).contains("+  instance_type = \"t3.large\""));
    assert_eq!(typed.count(), 1, "{branches:?}");
    let store = driftback_store::Store::open_sqlite(&workdir.join(".git/driftback/kb.sqlite")).await.unwrap();
    let stats = store.stats().await.unwrap();
    assert_eq!((stats.events, stats.bad_records), (9, 0), "{stats:?}");
    let reconciled = stats.change_sets_by_status.iter().find(|(s, _)| s == "reconciled").map(|(_, n)| *n);
    assert_eq!(reconciled, Some(3), "{stats:?}");
    store.close().await;
}
