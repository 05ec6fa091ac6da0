//! The organisation trail feed against moto's S3 and SQS: a trail bucket whose notification
//! configuration targets the queue (moto delivers S3's notifications, its test event included),
//! log files put in the bucket, and the consumer's receive loop recording into the real store.
//!
//! Run through scripts/moto.sh (DRIFTBACK_TEST_MOTO_ENDPOINT); without it the tests say so and
//! pass, unless DRIFTBACK_REQUIRE_SERVICES is set.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use aws_sdk_sqs::types::QueueAttributeName;
use chrono::{DateTime, Utc};
use driftback_events::FilterConfig;
use driftback_feed::{
    Carries, ClaimedChangeSet, Intake, IntakeReceipt, Ledger, LedgerError, QuietWindow, Shutdown, SqsConfig,
    SqsConsumer, StoreLedger,
};
use driftback_store::{ChangeSetRecord, Store};
use serde_json::{Value, json};
use sqlx::Connection;

const WINDOW: QuietWindow = QuietWindow { quiet_secs: 120, max_age_secs: 900 };
const ORG: &str = "o-abcdefghij";
const ACCOUNT: &str = "123456789012";

fn moto_endpoint() -> Option<String> {
    match std::env::var("DRIFTBACK_TEST_MOTO_ENDPOINT") {
        Ok(endpoint) => Some(endpoint),
        Err(_) if std::env::var_os("DRIFTBACK_REQUIRE_SERVICES").is_some() => {
            panic!("DRIFTBACK_REQUIRE_SERVICES is set but moto is not running: run through scripts/moto.sh")
        }
        Err(_) => {
            eprintln!("NOTICE: trail tests skipped: moto is not running (run `scripts/moto.sh cargo test`)");
            None
        }
    }
}

/// The tests run one at a time: the metrics they read are the process's.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The process's metrics, rendered as /metrics renders them.
fn metrics() -> &'static metrics_exporter_prometheus::PrometheusHandle {
    static HANDLE: std::sync::OnceLock<metrics_exporter_prometheus::PrometheusHandle> = std::sync::OnceLock::new();
    HANDLE.get_or_init(|| metrics_exporter_prometheus::PrometheusBuilder::new().install_recorder().unwrap())
}

fn counter(text: &str, series: &str) -> u64 {
    text.lines().find_map(|l| l.strip_prefix(series).and_then(|rest| rest.trim().parse::<u64>().ok())).unwrap_or(0)
}

fn record(id: &str, time: &str, instance: &str, read_only: bool) -> Value {
    json!({
        "eventVersion": "1.09", "eventID": id, "eventTime": time, "eventSource": "ec2.amazonaws.com",
        "eventName": if read_only { "DescribeInstances" } else { "ModifyInstanceAttribute" },
        "eventType": "AwsApiCall", "managementEvent": true, "readOnly": read_only,
        "awsRegion": "eu-west-1", "recipientAccountId": ACCOUNT,
        "userIdentity": {"type": "IAMUser", "arn": format!("arn:aws:iam::{ACCOUNT}:user/alice"), "userName": "alice",
                         "accountId": ACCOUNT},
        "userAgent": "console.amazonaws.com",
        "requestParameters": {"instanceId": instance, "instanceType": {"value": "t3.large"}}
    })
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn log_key(org: bool, region: &str, name: &str) -> String {
    let org = if org { format!("{ORG}/") } else { String::new() };
    format!(
        "AWSLogs/{org}{ACCOUNT}/CloudTrail/{region}/2024/05/01/{ACCOUNT}_CloudTrail_{region}_20240501T1205Z_{name}.json.gz"
    )
}

struct Moto {
    endpoint: String,
    sqs: aws_sdk_sqs::Client,
    s3: aws_sdk_s3::Client,
    queue_url: String,
    bucket: String,
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

impl Moto {
    /// A queue and a trail bucket notifying it of new objects under AWSLogs/.
    async fn new(endpoint: &str) -> Moto {
        let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .endpoint_url(endpoint)
            .region(aws_config::Region::new("us-east-1"))
            .load()
            .await;
        let sqs = aws_sdk_sqs::Client::new(&sdk);
        let s3 = aws_sdk_s3::Client::from_conf(aws_sdk_s3::config::Builder::from(&sdk).force_path_style(true).build());
        let suffix = format!("{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let queue_url =
            sqs.create_queue().queue_name(format!("trail-{suffix}")).send().await.unwrap().queue_url.unwrap();
        let attrs = sqs
            .get_queue_attributes()
            .queue_url(&queue_url)
            .attribute_names(QueueAttributeName::QueueArn)
            .send()
            .await
            .unwrap();
        let queue_arn = attrs.attributes().unwrap()[&QueueAttributeName::QueueArn].clone();
        let bucket = format!("org-trail-{suffix}");
        s3.create_bucket().bucket(&bucket).send().await.unwrap();
        use aws_sdk_s3::types::{
            Event, FilterRule, FilterRuleName, NotificationConfiguration, NotificationConfigurationFilter,
            QueueConfiguration, S3KeyFilter,
        };
        let filter = NotificationConfigurationFilter::builder()
            .key(
                S3KeyFilter::builder()
                    .filter_rules(FilterRule::builder().name(FilterRuleName::Prefix).value("AWSLogs/").build())
                    .build(),
            )
            .build();
        let queue = QueueConfiguration::builder()
            .queue_arn(queue_arn)
            .events(Event::from("s3:ObjectCreated:*"))
            .filter(filter)
            .build()
            .unwrap();
        s3.put_bucket_notification_configuration()
            .bucket(&bucket)
            .notification_configuration(NotificationConfiguration::builder().queue_configurations(queue).build())
            .send()
            .await
            .unwrap();
        Moto { endpoint: endpoint.to_string(), sqs, s3, queue_url, bucket }
    }

    async fn put(&self, key: &str, body: Vec<u8>) {
        self.s3.put_object().bucket(&self.bucket).key(key).body(body.into()).send().await.unwrap();
    }

    fn config(&self, carries: Carries) -> SqsConfig {
        SqsConfig {
            queue_url: self.queue_url.clone(),
            region: Some("us-east-1".into()),
            endpoint_url: Some(self.endpoint.clone()),
            wait_time_secs: 1,
            visibility_timeout_secs: 2,
            receivers: 1,
            carries,
            trail_buckets: vec![self.bucket.clone()],
            max_object_bytes: 16 * 1024,
            s3_endpoint_url: Some(self.endpoint.clone()),
            s3_force_path_style: true,
            ..SqsConfig::default()
        }
    }

    /// Messages on the queue, visible or not.
    async fn messages(&self) -> u64 {
        let out = self
            .sqs
            .get_queue_attributes()
            .queue_url(&self.queue_url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await
            .unwrap();
        let attrs = out.attributes().unwrap();
        let n = |k: QueueAttributeName| attrs.get(&k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        n(QueueAttributeName::ApproximateNumberOfMessages)
            + n(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
    }

    /// Run the consumer until the queue is empty (or `for_at_most` passes), then stop it.
    async fn consume<L: Ledger + Clone>(&self, config: SqsConfig, ledger: L, for_at_most: Duration) -> bool {
        let consumer = SqsConsumer::new(config).await.unwrap();
        let shutdown = Shutdown::new();
        let task = tokio::spawn({
            let shutdown = shutdown.clone();
            async move { consumer.run(ledger, FilterConfig::default(), shutdown).await }
        });
        let start = Instant::now();
        let mut emptied = false;
        while start.elapsed() < for_at_most {
            if self.messages().await == 0 {
                emptied = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        shutdown.trigger();
        task.await.unwrap().unwrap();
        emptied
    }
}

async fn sqlite_store(dir: &tempfile::TempDir) -> (Store, String) {
    let path = dir.path().join("kb.sqlite");
    (Store::open_sqlite(&path).await.unwrap(), format!("sqlite://{}", path.display()))
}

async fn bad_records(url: &str) -> Vec<(String, String, String)> {
    let mut conn = sqlx::SqliteConnection::connect(url).await.unwrap();
    sqlx::query_as("SELECT location, reason, raw FROM bad_records ORDER BY location")
        .fetch_all(&mut conn)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trail_log_files_are_recorded_once_with_the_eventbridge_feed_and_their_messages_deleted() {
    let Some(endpoint) = moto_endpoint() else { return };
    let _one = ONE_AT_A_TIME.lock().await;
    let metrics = metrics();
    let before = metrics.render();
    let moto = Moto::new(&endpoint).await;

    // An organisation log file: two changes to one instance, a read-only call, and a change that
    // also arrives through EventBridge.
    let org_log = json!({"Records": [
        record("e1", "2024-05-01T12:00:00Z", "i-1", false),
        record("e2", "2024-05-01T12:00:30Z", "i-1", false),
        record("r1", "2024-05-01T12:00:40Z", "i-1", true),
        record("shared", "2024-05-01T12:01:00Z", "i-2", false),
    ]});
    moto.put(&log_key(true, "eu-west-1", "a"), gzip(org_log.to_string().as_bytes())).await;
    // A log file of a trail that is not an organisation's.
    let single = json!({"Records": [record("e3", "2024-05-01T12:02:00Z", "i-3", false)]});
    moto.put(&log_key(false, "eu-west-1", "b"), gzip(single.to_string().as_bytes())).await;
    // A digest file, AWS Config's marker, an object that is not a log file.
    moto.put(
        &format!(
            "AWSLogs/{ORG}/{ACCOUNT}/CloudTrail-Digest/eu-west-1/2024/05/01/{ACCOUNT}_CloudTrail-Digest_x.json.gz"
        ),
        gzip(b"{\"digestStartTime\": \"2024-05-01T11:00:00Z\"}"),
    )
    .await;
    moto.put(&format!("AWSLogs/{ACCOUNT}/Config/ConfigWritesToS3"), Vec::new()).await;
    moto.put(&format!("AWSLogs/{ACCOUNT}/notes.txt"), b"hello".to_vec()).await;
    // A truncated log file, and one whose records decompress past max_object_bytes (16 KiB).
    let mut truncated = gzip(org_log.to_string().as_bytes());
    truncated.truncate(truncated.len() / 2);
    moto.put(&log_key(true, "eu-west-1", "truncated"), truncated).await;
    let padded: Vec<Value> = (0..200)
        .map(|i| {
            let mut r = record(&format!("big-{i}"), "2024-05-01T12:03:00Z", "i-4", false);
            r["requestParameters"]["padding"] = json!("x".repeat(100));
            r
        })
        .collect();
    let big = gzip(json!({"Records": padded}).to_string().as_bytes());
    assert!(big.len() < 16 * 1024, "stored under the bound ({} bytes), so the bound is met decompressing", big.len());
    moto.put(&log_key(true, "eu-west-1", "big"), big).await;

    // The same change through EventBridge, and the non-organisation log file's notification again,
    // wrapped by SNS (an SNS subscription without raw delivery).
    let envelope = json!({"version": "0", "id": "eb-1", "detail-type": "AWS API Call via CloudTrail",
        "source": "aws.ec2", "account": ACCOUNT, "time": "2024-05-01T12:01:00Z", "region": "eu-west-1",
        "resources": [], "detail": record("shared", "2024-05-01T12:01:00Z", "i-2", false)});
    moto.sqs.send_message().queue_url(&moto.queue_url).message_body(envelope.to_string()).send().await.unwrap();
    let s3_notification = json!({"Records": [{
        "eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "us-east-1",
        "eventTime": "2024-05-01T12:05:00.000Z", "eventName": "ObjectCreated:Put",
        "s3": {"s3SchemaVersion": "1.0", "bucket": {"name": moto.bucket, "arn": format!("arn:aws:s3:::{}", moto.bucket)},
               "object": {"key": log_key(false, "eu-west-1", "b"), "size": 200, "sequencer": "01"}}}]});
    let sns = json!({"Type": "Notification", "MessageId": "sns-1", "TopicArn": "arn:aws:sns:us-east-1:123456789012:trail",
        "Subject": "Amazon S3 Notification", "Message": s3_notification.to_string(),
        "Timestamp": "2024-05-01T12:05:01.000Z"});
    moto.sqs.send_message().queue_url(&moto.queue_url).message_body(sns.to_string()).send().await.unwrap();
    // moto's notifications (7 objects, and S3's test event when the configuration was saved), ours.
    assert_eq!(moto.messages().await, 10, "moto did not deliver S3's notifications to the queue");

    let dir = tempfile::tempdir().unwrap();
    let (store, url) = sqlite_store(&dir).await;
    let ledger = StoreLedger::new(store.clone(), WINDOW);
    assert!(
        moto.consume(moto.config(Carries::Both), ledger, Duration::from_secs(30)).await,
        "messages left on the queue: {}",
        moto.messages().await
    );

    // Every event once: the EventBridge copy and the SNS-wrapped notification added nothing.
    let stats = store.stats().await.unwrap();
    assert_eq!(stats.events, 5, "{stats:?}");
    let ids: Vec<String> = ["e1", "e2", "r1", "shared", "e3"].iter().map(|s| s.to_string()).collect();
    assert_eq!(store.events_by_id(&ids).await.unwrap().len(), 5);
    // Their change sets: i-1 (e1, e2), i-2, i-3; the read-only call is in none.
    let mut pending: Vec<Vec<String>> =
        store.unfinished_change_sets().await.unwrap().into_iter().map(|q| q.change_set.event_ids).collect();
    pending.sort();
    assert_eq!(pending, [vec!["e1", "e2"], vec!["e3"], vec!["shared"]]);
    // The truncated and the oversized log files are bad input, by key, with the reason.
    let bad = bad_records(&url).await;
    assert_eq!(bad.len(), 2, "{bad:#?}");
    assert!(bad[0].0.ends_with("_big.json.gz") && bad[0].1.contains("max_object_bytes = 16384"), "{bad:#?}");
    assert!(bad[1].0.ends_with("_truncated.json.gz") && bad[1].1.contains("not valid gzip"), "{bad:#?}");
    assert!(bad.iter().all(|b| b.0.starts_with(&format!("s3://{}/AWSLogs/", moto.bucket))), "{bad:#?}");
    assert!(bad[0].2.contains("\"aws:s3\""), "the notification is kept to replay: {bad:#?}");

    // Counted: what was read, what was ignored and why.
    let after = metrics.render();
    let delta = |series: &str| counter(&after, series) - counter(&before, series);
    assert_eq!(delta("driftback_trail_objects_read_total"), 5, "{after}");
    for (reason, n) in [("digest", 1), ("config-marker", 1), ("not-a-log-file", 1), ("test-event", 1)] {
        assert_eq!(
            delta(&format!("driftback_trail_objects_ignored_total{{reason=\"{reason}\"}}")),
            n,
            "{reason}: {after}"
        );
    }
    assert_eq!(delta("driftback_events_received_total{source=\"trail\"}"), 6, "{after}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_stays_on_the_queue_until_s3_answers_and_carries_is_enforced() {
    let Some(endpoint) = moto_endpoint() else { return };
    let _one = ONE_AT_A_TIME.lock().await;
    let moto = Moto::new(&endpoint).await;
    let log = json!({"Records": [record("late-1", "2024-05-01T12:00:00Z", "i-9", false)]});
    moto.put(&log_key(true, "eu-west-1", "late"), gzip(log.to_string().as_bytes())).await;
    assert_eq!(moto.messages().await, 2, "the test event and the log file's notification");

    let dir = tempfile::tempdir().unwrap();
    let (store, url) = sqlite_store(&dir).await;
    let ledger = StoreLedger::new(store.clone(), WINDOW);

    // S3 does not answer (nothing listens there): the notification stays; nothing is recorded.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_endpoint = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let mut unreachable = moto.config(Carries::S3Notifications);
    unreachable.s3_endpoint_url = Some(dead_endpoint);
    assert!(!moto.consume(unreachable, ledger.clone(), Duration::from_secs(6)).await);
    assert_eq!(moto.messages().await, 1, "the test event is deleted, the log file's notification is not");
    assert_eq!(store.stats().await.unwrap().events, 0);

    // The store refuses writes (transiently, until shutdown): the message is released, not deleted.
    let refusing = Refusing { inner: ledger.clone(), calls: Arc::default() };
    assert!(!moto.consume(moto.config(Carries::Both), refusing.clone(), Duration::from_secs(4)).await);
    assert!(refusing.calls.load(Ordering::Relaxed) > 0, "the store was never asked");
    assert_eq!(moto.messages().await, 1);
    assert_eq!(store.stats().await.unwrap().events, 0);

    // Both answer: recorded, then deleted.
    assert!(moto.consume(moto.config(Carries::S3Notifications), ledger.clone(), Duration::from_secs(20)).await);
    assert_eq!(store.events_by_id(&["late-1".to_string()]).await.unwrap().len(), 1);

    // A queue said to carry EventBridge envelopes only: a notification is bad input saying what to set.
    moto.put(&log_key(true, "eu-west-1", "later"), gzip(log.to_string().as_bytes())).await;
    assert!(
        moto.consume(moto.config(Carries::Eventbridge).with_no_trail(), ledger.clone(), Duration::from_secs(20)).await
    );
    let bad = bad_records(&url).await;
    assert_eq!(bad.len(), 1, "{bad:#?}");
    assert!(bad[0].1.contains("carries = \"eventbridge\"") && bad[0].1.contains("carries = \"both\""), "{bad:#?}");
    assert_eq!(store.stats().await.unwrap().events, 1);
}

trait NoTrail {
    fn with_no_trail(self) -> Self;
}

impl NoTrail for SqsConfig {
    /// `trail_buckets` needs a queue that carries trail notifications.
    fn with_no_trail(mut self) -> SqsConfig {
        self.trail_buckets.clear();
        self
    }
}

/// The real store, except that recording an intake fails as a busy database does.
#[derive(Clone)]
struct Refusing {
    inner: StoreLedger,
    calls: Arc<AtomicUsize>,
}

impl Ledger for Refusing {
    async fn record_intake(&self, _intake: &Intake) -> Result<IntakeReceipt, LedgerError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        Err(LedgerError { message: "database is locked".into(), transient: true })
    }
    async fn claim_due(
        &self,
        now: DateTime<Utc>,
        owner: &str,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<ClaimedChangeSet>, LedgerError> {
        self.inner.claim_due(now, owner, lease, limit).await
    }
    async fn renew_lease(&self, id: &str, owner: &str, lease: Duration) -> Result<bool, LedgerError> {
        self.inner.renew_lease(id, owner, lease).await
    }
    async fn complete(&self, owner: &str, record: &ChangeSetRecord) -> Result<(), LedgerError> {
        self.inner.complete(owner, record).await
    }
    async fn release(&self, id: &str, owner: &str) -> Result<(), LedgerError> {
        self.inner.release(id, owner).await
    }
    async fn fail(&self, id: &str, owner: &str, reason: &str) -> Result<(), LedgerError> {
        self.inner.fail(id, owner, reason).await
    }
    async fn checkpoint(&self, name: &str) -> Result<Option<DateTime<Utc>>, LedgerError> {
        self.inner.checkpoint(name).await
    }
    async fn advance_checkpoint(&self, name: &str, to: DateTime<Utc>) -> Result<(), LedgerError> {
        self.inner.advance_checkpoint(name, to).await
    }
    async fn ping(&self) -> Result<(), LedgerError> {
        self.inner.ping().await
    }
}
