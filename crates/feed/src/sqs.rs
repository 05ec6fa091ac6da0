//! The SQS consumer: long polling, batches of up to 10, visibility extended while a batch is being
//! recorded, and a message deleted only after its events are durably in the ledger. A message that
//! is an S3 notification of an organisation trail's log file (`[feed] carries`) is read through
//! `trail.rs`: each log file fetched and recorded before the message is deleted.

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::{
    ChangeMessageVisibilityBatchRequestEntry, DeleteMessageBatchRequestEntry, Message, MessageSystemAttributeName,
    QueueAttributeName,
};
use driftback_events::FilterConfig;
use serde::{Deserialize, Serialize};

use crate::BadRecord;
use crate::error::aws_message;
use crate::intake::{Intake, Served};
use crate::ledger::{Ledger, PartOutcome, PartsReceipt, record_parts};
use crate::trail::{Carries, Notification, ObjectError, TrailReader, read_notification, read_object, triage};
use crate::{FeedError, Shutdown};

/// What to do with a message whose body is not a CloudTrail record or EventBridge envelope, once it
/// is recorded in `bad_records`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnparseablePolicy {
    /// Delete it: its text is in the store, nothing else can be done with it.
    #[default]
    Delete,
    /// Leave it: it reappears after the visibility timeout (recorded again each time) until the
    /// queue's redrive policy moves it to the dead-letter queue after `maxReceiveCount` receives.
    Redrive,
}

/// `[feed]`: the SQS queue an EventBridge rule on "AWS API Call via CloudTrail" feeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SqsConfig {
    /// The queue URL (`https://sqs.REGION.amazonaws.com/ACCOUNT/NAME`). Required by `serve`.
    pub queue_url: String,
    /// AWS region; default: from the environment (AWS_REGION) or the AWS profile.
    pub region: Option<String>,
    /// Another SQS endpoint (a local test server); default: AWS's.
    pub endpoint_url: Option<String>,
    /// Messages per receive, 1 to 10.
    pub max_messages: i32,
    /// Long-polling wait, 0 to 20 seconds.
    pub wait_time_secs: i32,
    /// How long a received message stays invisible; extended every half of it while work goes on.
    pub visibility_timeout_secs: i32,
    /// Receive loops running at once (each handles one batch at a time).
    pub receivers: usize,
    /// What happens to an unparseable message after it is recorded: `delete` or `redrive`.
    pub unparseable: UnparseablePolicy,
    /// The AWS accounts whose changes this deployment reconciles (12-digit ids); empty: any. A
    /// record from another account is bad input.
    #[serde(deserialize_with = "account_ids")]
    pub accounts: Vec<String>,
    /// The regions whose changes this deployment reconciles; empty: any. A record from another
    /// region is bad input (IAM, STS and CloudFront calls are logged in us-east-1: list it).
    pub regions: Vec<String>,
    /// Accept CloudTrail records that come without an EventBridge envelope (a bare record, a log
    /// file's `{"Records": [...]}`), for a queue fed some other way than by an EventBridge rule.
    /// Off by default: only an envelope's `aws.*` source shows that AWS sent the record; anyone
    /// allowed `sqs:SendMessage` on the queue can send a bare one.
    pub accept_bare_records: bool,
    /// What the queue's messages are: `eventbridge` (the EventBridge rule's envelopes),
    /// `s3-notifications` (an organisation trail's bucket notifies it of new log files, directly or
    /// through SNS), or `both` (one queue both target; each message told apart by its shape).
    pub carries: Carries,
    /// The trail buckets whose log files are read; empty: any bucket a notification names (the
    /// daemon's IAM role still limits what it can read).
    #[serde(deserialize_with = "one_or_many")]
    pub trail_buckets: Vec<String>,
    /// The most bytes one trail log file may hold, stored and decompressed; a larger one is bad
    /// input, never read whole.
    pub max_object_bytes: u64,
    /// Another S3 endpoint for the trail's log files (a local test server); default: AWS's.
    /// `endpoint_url` is SQS's alone.
    pub s3_endpoint_url: Option<String>,
    /// Path-style S3 requests (`endpoint/bucket/key`), as local test servers need.
    pub s3_force_path_style: bool,
}

impl Default for SqsConfig {
    fn default() -> Self {
        SqsConfig {
            queue_url: String::new(),
            region: None,
            endpoint_url: None,
            max_messages: 10,
            wait_time_secs: 20,
            visibility_timeout_secs: 60,
            receivers: 2,
            unparseable: UnparseablePolicy::Delete,
            accounts: Vec::new(),
            regions: Vec::new(),
            accept_bare_records: false,
            carries: Carries::Eventbridge,
            trail_buckets: Vec::new(),
            max_object_bytes: DEFAULT_MAX_OBJECT_BYTES,
            s3_endpoint_url: None,
            s3_force_path_style: false,
        }
    }
}

/// `[feed] max_object_bytes` by default: 128 MiB. CloudTrail starts a new log file every few
/// minutes per account and region; even busy accounts' files stay far below this. Reading one
/// takes about three times its decompressed size at its peak (the text, each record's own text,
/// the rows written), once per receive loop at a time: 2 loops at this bound stay under 1 GiB.
pub const DEFAULT_MAX_OBJECT_BYTES: u64 = 128 << 20;

impl SqsConfig {
    /// Check the values against SQS's limits, naming the key to fix.
    pub fn validate(&self) -> Result<(), FeedError> {
        let bad = |m: String| Err(FeedError::Config(m));
        if self.queue_url.trim().is_empty() {
            return bad("[feed] queue_url is not set: give the SQS queue URL the EventBridge rule targets \
                        (or DRIFTBACK_FEED__QUEUE_URL)"
                .into());
        }
        if !(1..=10).contains(&self.max_messages) {
            return bad(format!("[feed] max_messages = {} is outside SQS's 1..=10", self.max_messages));
        }
        if !(0..=20).contains(&self.wait_time_secs) {
            return bad(format!("[feed] wait_time_secs = {} is outside SQS's 0..=20", self.wait_time_secs));
        }
        if !(2..=43_200).contains(&self.visibility_timeout_secs) {
            return bad(format!(
                "[feed] visibility_timeout_secs = {} is outside 2..=43200 (SQS's maximum is 12 hours)",
                self.visibility_timeout_secs
            ));
        }
        if self.receivers == 0 {
            return bad("[feed] receivers must be at least 1".into());
        }
        if let Some(a) = self.accounts.iter().find(|a| a.len() != 12 || !a.bytes().all(|b| b.is_ascii_digit())) {
            return bad(format!("[feed] accounts: {a:?} is not an AWS account id (12 digits)"));
        }
        if let Some(r) = self
            .regions
            .iter()
            .find(|r| r.is_empty() || !r.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'))
        {
            return bad(format!("[feed] regions: {r:?} is not an AWS region name (like eu-west-1)"));
        }
        if self.max_object_bytes < 1024 {
            return bad(format!(
                "[feed] max_object_bytes = {} is too small for any CloudTrail log file (default {})",
                self.max_object_bytes, DEFAULT_MAX_OBJECT_BYTES
            ));
        }
        if let Some(b) = self.trail_buckets.iter().find(|b| {
            !(3..=63).contains(&b.len())
                || !b.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' || c == b'.')
        }) {
            return bad(format!("[feed] trail_buckets: {b:?} is not an S3 bucket name"));
        }
        if !self.carries.trail() && !self.trail_buckets.is_empty() {
            return bad(format!(
                "[feed] trail_buckets is set but carries = \"{}\": set carries = \"both\" (or \"s3-notifications\") \
                 for the trail's log files to be read",
                self.carries.as_str()
            ));
        }
        Ok(())
    }

    /// The accounts and regions this feed serves.
    pub fn served(&self) -> Served {
        Served { accounts: self.accounts.clone(), regions: self.regions.clone() }
    }
}

/// Account ids as a list or one value, as text or as a number (an environment variable holding one
/// id is read as a number; account ids are 12 digits, so a leading zero it lost is put back).
fn account_ids<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Id {
        Text(String),
        Number(u64),
    }
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        Many(Vec<Id>),
        One(Id),
    }
    let text = |id: Id| match id {
        Id::Text(t) => t,
        Id::Number(n) => format!("{n:012}"),
    };
    Ok(match OneOrMany::deserialize(deserializer)? {
        OneOrMany::Many(ids) => ids.into_iter().map(text).collect(),
        OneOrMany::One(id) => vec![text(id)],
    })
}

/// Text items as a list or one value (`DRIFTBACK_FEED__TRAIL_BUCKETS=one-bucket`).
fn one_or_many<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        Many(Vec<String>),
        One(String),
    }
    Ok(match OneOrMany::deserialize(deserializer)? {
        OneOrMany::Many(items) => items,
        OneOrMany::One(item) => vec![item],
    })
}

/// A running consumer of one queue.
#[derive(Debug, Clone)]
pub struct SqsConsumer {
    client: Client,
    config: Arc<SqsConfig>,
    served: Arc<Served>,
    /// Reads the organisation trail's log files, when the queue carries their notifications.
    trail: Option<Arc<TrailReader>>,
    /// Notified when a batch added events to pending change sets (wakes the reconcile loop).
    wake: Arc<tokio::sync::Notify>,
}

/// One received message and what its body decoded to.
struct Received {
    message_id: String,
    receipt: String,
    /// `sqs message ID (receive N)`, as bad input names it.
    location: String,
    body: Body,
}

enum Body {
    /// CloudTrail records (EventBridge envelopes), or bad input.
    Events(Intake),
    /// An organisation trail's log files to fetch.
    Trail(Notification),
}

/// What became of a trail message's log files.
enum TrailDone {
    /// Every object is recorded or ignored: the message may go.
    Recorded,
    /// A fetch or the store failed in a way that may pass: the message stays for redelivery.
    Left,
}

impl SqsConsumer {
    /// Build the client from the environment's AWS configuration and `config`.
    pub async fn new(config: SqsConfig) -> Result<SqsConsumer, FeedError> {
        config.validate()?;
        let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest());
        if let Some(region) = &config.region {
            loader = loader.region(aws_config::Region::new(region.clone()));
        }
        if let Some(endpoint) = &config.endpoint_url {
            loader = loader.endpoint_url(endpoint.clone());
        }
        let sdk = loader.load().await;
        let served = Arc::new(config.served());
        let trail = config.carries.trail().then(|| {
            Arc::new(TrailReader::new(
                sdk.clone(),
                config.s3_endpoint_url.clone(),
                config.s3_force_path_style,
                config.max_object_bytes,
                config.trail_buckets.clone(),
            ))
        });
        Ok(SqsConsumer { client: Client::new(&sdk), config: Arc::new(config), served, trail, wake: Arc::default() })
    }

    /// Notify `wake` whenever a batch adds events to pending change sets, so a reconcile loop
    /// waiting on it looks for due change sets at once instead of at its next poll.
    pub fn with_wakeup(mut self, wake: Arc<tokio::sync::Notify>) -> SqsConsumer {
        self.wake = wake;
        self
    }

    pub fn queue_url(&self) -> &str {
        &self.config.queue_url
    }

    /// What the queue's messages are taken to be.
    pub fn carries(&self) -> Carries {
        self.config.carries
    }

    /// Whether the queue answers; updates the visible-messages gauge.
    pub async fn probe(&self) -> Result<(), FeedError> {
        let out = self
            .client
            .get_queue_attributes()
            .queue_url(&self.config.queue_url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .send()
            .await
            .map_err(|e| FeedError::Aws {
                call: "sqs:GetQueueAttributes",
                message: format!("{} ({})", aws_message(&e), self.config.queue_url),
            })?;
        if let Some(n) = out.attributes().and_then(|a| a.get(&QueueAttributeName::ApproximateNumberOfMessages)) {
            if let Ok(n) = n.parse::<f64>() {
                crate::metrics::queue_visible(n);
            }
        }
        Ok(())
    }

    /// Run `receivers` receive loops until shutdown. Each loop finishes the batch it holds (records
    /// and deletes it) before it stops; a batch it could not record is made visible again at once.
    /// No message ends a loop: `Err` only says a loop panicked.
    pub async fn run<L: Ledger + Clone>(
        &self,
        ledger: L,
        filter: FilterConfig,
        shutdown: Shutdown,
    ) -> Result<(), FeedError> {
        let filter = Arc::new(filter);
        let mut tasks = tokio::task::JoinSet::new();
        for n in 0..self.config.receivers {
            let (me, ledger, filter, shutdown) = (self.clone(), ledger.clone(), filter.clone(), shutdown.clone());
            tasks.spawn(async move { me.receive_loop(n, &ledger, &filter, &shutdown).await });
        }
        let mut result = Ok(());
        while let Some(done) = tasks.join_next().await {
            if let Err(e) = done {
                shutdown.trigger();
                result = Err(FeedError::Config(format!("a receive loop panicked: {e}")));
            }
        }
        result
    }

    async fn receive_loop<L: Ledger>(&self, n: usize, ledger: &L, filter: &Arc<FilterConfig>, shutdown: &Shutdown) {
        let mut failures = 0u32;
        while !shutdown.is_triggered() {
            // A receive cut short by shutdown loses nothing: messages SQS already handed out
            // reappear after the visibility timeout.
            let received = tokio::select! {
                _ = shutdown.wait() => break,
                r = self.receive() => r,
            };
            let messages = match received {
                Ok(messages) => {
                    failures = 0;
                    messages
                }
                Err(e) => {
                    failures += 1;
                    let delay = Duration::from_millis(500 * 2u64.pow(failures.min(6)));
                    tracing::warn!(receiver = n, error = %e, retry_in_ms = delay.as_millis() as u64, "receive failed");
                    tokio::select! {
                        _ = shutdown.wait() => break,
                        _ = tokio::time::sleep(delay) => continue,
                    }
                }
            };
            if messages.is_empty() {
                continue;
            }
            self.handle_batch(messages, ledger, filter, shutdown).await;
        }
        tracing::debug!(receiver = n, "receive loop stopped");
    }

    async fn receive(&self) -> Result<Vec<Message>, FeedError> {
        let out = self
            .client
            .receive_message()
            .queue_url(&self.config.queue_url)
            .max_number_of_messages(self.config.max_messages)
            .wait_time_seconds(self.config.wait_time_secs)
            .visibility_timeout(self.config.visibility_timeout_secs)
            .message_system_attribute_names(MessageSystemAttributeName::SentTimestamp)
            .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
            .send()
            .await
            .map_err(|e| FeedError::Aws {
                call: "sqs:ReceiveMessage",
                message: format!("{} ({})", aws_message(&e), self.config.queue_url),
            })?;
        Ok(out.messages.unwrap_or_default())
    }

    /// What a message's body is, as `[feed] carries` allows.
    fn decode(&self, body: &str, location: &str, filter: &FilterConfig) -> Body {
        let bad = |reason: String| {
            Body::Events(Intake {
                events: Vec::new(),
                bad: vec![BadRecord { location: location.to_string(), reason, raw: body.to_string() }],
            })
        };
        match (self.config.carries, read_notification(body)) {
            (Carries::Eventbridge, Some(_)) => bad(
                "an S3 event notification (an organisation trail's bucket?), but [feed] carries = \"eventbridge\": \
                 set carries = \"both\" (or \"s3-notifications\") for its log files to be read"
                    .into(),
            ),
            (_, Some(Ok(notification))) => Body::Trail(notification),
            (_, Some(Err(reason))) => bad(reason.to_string()),
            (Carries::S3Notifications, None) => {
                bad("not an S3 event notification of a trail bucket, and [feed] carries = \"s3-notifications\": set \
                 carries = \"both\" if the EventBridge rule targets this queue too"
                    .into())
            }
            (_, None) => {
                let mut intake = Intake::from_message(body, location, filter, self.config.accept_bare_records);
                intake.refuse_unserved(&self.served, location);
                Body::Events(intake)
            }
        }
    }

    /// Decode, record durably, then delete. Visibility is extended while the store works and while
    /// trail log files are fetched. Nothing in a message stops the loop: what the store refuses is
    /// bad input ([`record_parts`]).
    async fn handle_batch<L: Ledger>(
        &self,
        messages: Vec<Message>,
        ledger: &L,
        filter: &Arc<FilterConfig>,
        shutdown: &Shutdown,
    ) {
        let now_ms = chrono::Utc::now().timestamp_millis();
        let mut received = Vec::with_capacity(messages.len());
        for m in messages {
            let (Some(id), Some(receipt)) = (m.message_id.clone(), m.receipt_handle.clone()) else { continue };
            if let Some(sent) = m.attributes().and_then(|a| a.get(&MessageSystemAttributeName::SentTimestamp)) {
                if let Ok(sent) = sent.parse::<i64>() {
                    crate::metrics::queue_lag((now_ms - sent).max(0) as f64 / 1000.0);
                }
            }
            let receives = m
                .attributes()
                .and_then(|a| a.get(&MessageSystemAttributeName::ApproximateReceiveCount))
                .cloned()
                .unwrap_or_else(|| "1".into());
            let location = format!("sqs message {id} (receive {receives})");
            let body = self.decode(m.body().unwrap_or_default(), &location, filter);
            received.push(Received { message_id: id, receipt, location, body });
        }
        let receipts: Vec<(String, String)> =
            received.iter().map(|r| (r.message_id.clone(), r.receipt.clone())).collect();
        let heartbeat = tokio::spawn({
            let me = self.clone();
            let receipts = receipts.clone();
            async move { me.keep_invisible(&receipts).await }
        });
        let parts: Vec<(String, Intake)> = received
            .iter()
            .filter_map(|r| match &r.body {
                Body::Events(intake) => Some((r.location.clone(), intake.clone())),
                Body::Trail(_) => None,
            })
            .collect();
        let recorded = if parts.is_empty() {
            Ok(PartsReceipt::default())
        } else {
            record_parts(ledger, &parts, "sqs", shutdown).await
        };
        let recorded = match recorded {
            Ok(recorded) => recorded,
            Err(e) => {
                heartbeat.abort();
                // Shutdown during an outage: nothing was acknowledged; make the messages visible
                // again for this or another replica.
                tracing::error!(error = %e, messages = receipts.len(), "batch not recorded; releasing it");
                self.set_visibility(&receipts, 0).await;
                return;
            }
        };
        let receipt = &recorded.receipt;
        if receipt.pending > 0 {
            self.wake.notify_one();
        }
        tracing::debug!(
            messages = received.len(),
            new = receipt.new_events,
            duplicates = receipt.duplicates,
            bad = receipt.bad,
            "batch recorded"
        );
        let mut delete = Vec::new();
        let mut outcomes = recorded.outcomes.iter();
        let mut release = Vec::new();
        let mut interrupted = None;
        for r in &received {
            let entry = (r.message_id.clone(), r.receipt.clone());
            match &r.body {
                Body::Events(intake) => {
                    let outcome = outcomes.next().copied().unwrap_or(PartOutcome::Recorded);
                    let bad = !intake.bad.is_empty() || outcome == PartOutcome::Refused;
                    if outcome == PartOutcome::Unrecorded {
                        // Logged with the store's reason: it comes back after the visibility
                        // timeout, and goes to the dead-letter queue after the redrive policy's receives.
                        tracing::error!(
                            sqs_message_id = r.message_id,
                            "message not entirely recorded; left on the queue"
                        );
                        metrics::counter!(crate::metrics::MESSAGES_LEFT).increment(1);
                    } else if bad && self.config.unparseable == UnparseablePolicy::Redrive {
                        tracing::warn!(
                            sqs_message_id = r.message_id,
                            "unparseable message left for the queue's redrive policy"
                        );
                        metrics::counter!(crate::metrics::MESSAGES_LEFT).increment(1);
                    } else {
                        delete.push(entry);
                    }
                }
                Body::Trail(_) if interrupted.is_some() => release.push(entry),
                Body::Trail(notification) => match self.read_trail(r, notification, ledger, filter, shutdown).await {
                    Ok(TrailDone::Recorded) => delete.push(entry),
                    // Left invisible until its visibility timeout runs out: a failing bucket is not
                    // asked again at once.
                    Ok(TrailDone::Left) => {}
                    Err(e) => {
                        release.push(entry);
                        interrupted = Some(e);
                    }
                },
            }
        }
        heartbeat.abort();
        self.delete(&delete).await;
        self.set_visibility(&release, 0).await;
        if let Some(e) = interrupted {
            // Shutdown during an outage: the message comes back for this or another replica.
            tracing::error!(error = %e, "a trail log file was not recorded; its message is released");
        }
    }

    /// Fetch, read and record each log file a trail message names, in order; ignored objects are
    /// counted by reason, unreadable ones recorded as bad input. `Left` on a fetch failure that may
    /// pass; `Err` when the store did not record (the message must not be deleted).
    async fn read_trail<L: Ledger>(
        &self,
        message: &Received,
        notification: &Notification,
        ledger: &L,
        filter: &Arc<FilterConfig>,
        shutdown: &Shutdown,
    ) -> Result<TrailDone, FeedError> {
        let Some(trail) = &self.trail else { return Ok(TrailDone::Left) };
        if notification.test_event {
            crate::metrics::trail_object_ignored(&format!("sqs message {}", message.message_id), "test-event");
            return Ok(TrailDone::Recorded);
        }
        for object in &notification.objects {
            let location = object.location();
            let bad = |reason: String| Intake {
                events: Vec::new(),
                bad: vec![BadRecord { location: location.clone(), reason, raw: object.raw.clone() }],
            };
            let intake = if let Some(reason) = trail.refusal(object) {
                bad(reason)
            } else if let Err(ignored) = triage(object, &self.served) {
                crate::metrics::trail_object_ignored(&location, ignored.as_str());
                continue;
            } else {
                match trail.fetch(object).await {
                    Ok(bytes) => {
                        crate::metrics::trail_object_read(&location, bytes.len());
                        let (object, filter, served) = (object.clone(), filter.clone(), self.served.clone());
                        let max = trail.max_bytes;
                        // Decompressing and scanning a large file is CPU work: off the async threads.
                        tokio::task::spawn_blocking(move || read_object(&object, &bytes, max, &filter, &served))
                            .await
                            .map_err(|e| FeedError::Config(format!("reading {location} panicked: {e}")))?
                    }
                    Err(ObjectError::Bad(reason)) => bad(reason),
                    Err(ObjectError::Transient(error)) => {
                        crate::metrics::trail_object_left(&message.message_id, &error);
                        return Ok(TrailDone::Left);
                    }
                }
            };
            if intake.is_empty() {
                continue;
            }
            // What the store refuses for good is bad input with its reason; what it refuses even
            // so leaves the message to come back (and reach its dead-letter queue).
            let recorded = record_parts(ledger, &[(location.clone(), intake)], "trail", shutdown).await?;
            if recorded.outcomes.first() == Some(&PartOutcome::Unrecorded) {
                tracing::error!(object = location, "trail log file not entirely recorded; its message is left");
                return Ok(TrailDone::Left);
            }
            let receipt = recorded.receipt;
            if receipt.pending > 0 {
                self.wake.notify_one();
            }
            tracing::debug!(
                object = location,
                new = receipt.new_events,
                duplicates = receipt.duplicates,
                bad = receipt.bad,
                "trail log file recorded"
            );
        }
        Ok(TrailDone::Recorded)
    }

    async fn keep_invisible(&self, receipts: &[(String, String)]) {
        let every = Duration::from_secs((self.config.visibility_timeout_secs as u64 / 2).max(1));
        loop {
            tokio::time::sleep(every).await;
            self.set_visibility(receipts, self.config.visibility_timeout_secs).await;
        }
    }

    async fn set_visibility(&self, receipts: &[(String, String)], seconds: i32) {
        if receipts.is_empty() {
            return;
        }
        let entries: Vec<ChangeMessageVisibilityBatchRequestEntry> = receipts
            .iter()
            .enumerate()
            .filter_map(|(i, (_, receipt))| {
                ChangeMessageVisibilityBatchRequestEntry::builder()
                    .id(format!("m{i}"))
                    .receipt_handle(receipt)
                    .visibility_timeout(seconds)
                    .build()
                    .ok()
            })
            .collect();
        let sent = self
            .client
            .change_message_visibility_batch()
            .queue_url(&self.config.queue_url)
            .set_entries(Some(entries))
            .send()
            .await;
        if let Err(e) = sent {
            tracing::warn!(error = %aws_message(&e), seconds, "could not change message visibility");
        }
    }

    /// Delete recorded messages. A failed delete is harmless: the message comes back, and its events
    /// are recognised as duplicates by their eventID.
    async fn delete(&self, messages: &[(String, String)]) {
        if messages.is_empty() {
            return;
        }
        let entries: Vec<DeleteMessageBatchRequestEntry> = messages
            .iter()
            .enumerate()
            .filter_map(|(i, (_, receipt))| {
                DeleteMessageBatchRequestEntry::builder().id(format!("m{i}")).receipt_handle(receipt).build().ok()
            })
            .collect();
        match self
            .client
            .delete_message_batch()
            .queue_url(&self.config.queue_url)
            .set_entries(Some(entries))
            .send()
            .await
        {
            Ok(out) => {
                let failed = out.failed().len();
                if failed > 0 {
                    tracing::warn!(failed, "some deletes failed; those messages will be received again");
                }
                metrics::counter!(crate::metrics::MESSAGES_DELETED).increment((messages.len() - failed) as u64);
            }
            Err(e) => tracing::warn!(error = %aws_message(&e), "delete failed; the messages will be received again"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounts_read_from_one_value_or_a_list_keep_their_leading_zeros() {
        let read = |toml_text: &str| toml::from_str::<SqsConfig>(toml_text).map(|c| c.accounts);
        assert_eq!(read("accounts = 12345678901").unwrap(), ["012345678901"]);
        assert_eq!(read("accounts = \"123456789012\"").unwrap(), ["123456789012"]);
        assert_eq!(read("accounts = [\"123456789012\", 210987654321]").unwrap(), ["123456789012", "210987654321"]);
        assert!(read("accounts = [true]").is_err());
    }

    #[test]
    fn the_trail_settings_are_read_and_checked_naming_what_to_set() {
        let read = |toml_text: &str| toml::from_str::<SqsConfig>(&format!("queue_url = \"http://q\"\n{toml_text}"));
        let config = read("carries = \"both\"\ntrail_buckets = \"acme-org-trail\"").unwrap();
        assert_eq!(
            (config.carries, config.trail_buckets.as_slice()),
            (Carries::Both, ["acme-org-trail".to_string()].as_slice())
        );
        assert!(config.validate().is_ok());
        assert_eq!(config.max_object_bytes, DEFAULT_MAX_OBJECT_BYTES);
        assert!(read("carries = \"s3\"").is_err(), "an unknown value is refused");
        let err = read("trail_buckets = [\"acme-org-trail\"]").unwrap().validate().unwrap_err().to_string();
        assert!(err.contains("carries = \"eventbridge\"") && err.contains("carries = \"both\""), "{err}");
        let err =
            read("carries = \"both\"\ntrail_buckets = [\"Acme_Trail\"]").unwrap().validate().unwrap_err().to_string();
        assert!(err.contains("\"Acme_Trail\" is not an S3 bucket name"), "{err}");
        let err = read("max_object_bytes = 10").unwrap().validate().unwrap_err().to_string();
        assert!(err.contains("max_object_bytes = 10 is too small"), "{err}");
    }

    #[test]
    fn accounts_and_regions_are_checked_naming_the_bad_value() {
        let config = |accounts: &[&str], regions: &[&str]| SqsConfig {
            queue_url: "http://127.0.0.1:1/q".into(),
            accounts: accounts.iter().map(|s| s.to_string()).collect(),
            regions: regions.iter().map(|s| s.to_string()).collect(),
            ..SqsConfig::default()
        };
        assert!(config(&["123456789012"], &["eu-west-1"]).validate().is_ok());
        let err = config(&["12345"], &[]).validate().unwrap_err().to_string();
        assert!(err.contains("\"12345\" is not an AWS account id"), "{err}");
        let err = config(&[], &["EU West"]).validate().unwrap_err().to_string();
        assert!(err.contains("\"EU West\" is not an AWS region name"), "{err}");
    }
}
