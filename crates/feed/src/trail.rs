//! The organisation trail feed: SQS messages that are S3 event notifications (directly, or wrapped
//! in an SNS notification) for new CloudTrail log files in a trail's bucket. Each log file is fetched
//! with S3's `GetObject`, decompressed within a bound, and read through the same [`Intake`] as an
//! EventBridge message; the message is deleted only once every record of every object it names is
//! durably recorded (see `sqs.rs`).
//!
//! What is not a log file (digest files, AWS Config's `ConfigWritesToS3` marker, S3's test event,
//! other objects, removals) is ignored with a counted reason. A log file that cannot be read (too
//! large, not gzip, not JSON, gone) is bad input with its reason; an S3 failure that may pass
//! (network, throttling, permissions, a wrong region) leaves the message for redelivery.

use std::collections::HashMap;
use std::io::Read;
use std::sync::Mutex;

use driftback_events::FilterConfig;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::BadRecord;
use crate::intake::{Intake, Served};

/// `[feed] carries`: what the queue's messages are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Carries {
    /// EventBridge envelopes of "AWS API Call via CloudTrail" (or CloudTrail records as text).
    #[default]
    Eventbridge,
    /// S3 event notifications of a trail bucket's new log files (directly or through SNS).
    S3Notifications,
    /// Both, told apart per message by its shape (one queue that the EventBridge rule and the trail
    /// bucket's notification both target, as deploy/terraform wires it).
    Both,
}

impl Carries {
    pub fn as_str(self) -> &'static str {
        match self {
            Carries::Eventbridge => "eventbridge",
            Carries::S3Notifications => "s3-notifications",
            Carries::Both => "both",
        }
    }

    pub fn trail(self) -> bool {
        self != Carries::Eventbridge
    }

    pub fn eventbridge(self) -> bool {
        self != Carries::S3Notifications
    }
}

/// Why an object named by a notification is not read. The label of
/// `driftback_trail_objects_ignored_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ignored {
    /// S3's `s3:TestEvent`, sent when a notification configuration is saved.
    TestEvent,
    /// A CloudTrail digest file (`CloudTrail-Digest/`): hashes for log file validation, no events.
    Digest,
    /// The `ConfigWritesToS3` object AWS Config writes to check it may write to the bucket.
    ConfigMarker,
    /// An event other than an object's creation (`ObjectRemoved:*`, ...).
    NotCreated,
    /// Any other object: not `AWSLogs/[<org>/]<account>/CloudTrail/<region>/YYYY/MM/DD/<file>.json.gz`
    /// (CloudTrail Insights files, other services' logs, anything else in the bucket).
    NotALogFile,
    /// A log file of an account or region `[feed] accounts` / `regions` does not serve.
    NotServed,
}

impl Ignored {
    pub fn as_str(self) -> &'static str {
        match self {
            Ignored::TestEvent => "test-event",
            Ignored::Digest => "digest",
            Ignored::ConfigMarker => "config-marker",
            Ignored::NotCreated => "not-object-created",
            Ignored::NotALogFile => "not-a-log-file",
            Ignored::NotServed => "not-served",
        }
    }
}

/// One object a notification names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRef {
    pub bucket: String,
    /// The key, URL-decoded (notifications encode it as a form value).
    pub key: String,
    /// The bucket's region, when the notification says.
    pub region: Option<String>,
    /// The size S3 reported, when it did.
    pub size: Option<u64>,
    /// The event name (`ObjectCreated:Put`); CloudTrail's own SNS notification has none.
    pub event: Option<String>,
    /// The notification record's JSON text: what a bad input keeps (small, and what a person replays).
    pub raw: String,
}

impl ObjectRef {
    pub fn location(&self) -> String {
        format!("s3://{}/{}", self.bucket, self.key)
    }
}

/// An SQS body read as a notification of a trail bucket.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Notification {
    /// Objects it names, in order.
    pub objects: Vec<ObjectRef>,
    /// S3's test event: nothing to read.
    pub test_event: bool,
}

/// Why a trail notification cannot be used. `record`: the S3 event notification record's
/// number, from 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotificationError {
    #[error("an SNS notification from {topic} without a Message")]
    SnsWithoutMessage { topic: String },
    #[error(
        "an SNS notification from {topic} whose Message is not an S3 event notification of a trail bucket; subscribe \
         the queue to the topic the trail bucket notifies (or to CloudTrail's own topic)"
    )]
    SnsNotTrail { topic: String },
    #[error("s3Bucket is not text")]
    BucketNotText,
    #[error("s3ObjectKey is not a list")]
    KeysNotList,
    /// `key`: the JSON of what the list holds in place of a key.
    #[error("s3ObjectKey holds {key}, not a key")]
    KeyNotText { key: String },
    #[error("S3 event notification record {record}: eventSource is not aws:s3 (a notification mixing sources)")]
    MixedSources { record: usize },
    #[error("S3 event notification record {record}: no s3.bucket.name")]
    NoBucket { record: usize },
    #[error("S3 event notification record {record}: no s3.object.key")]
    NoKey { record: usize },
    #[error("S3 event notification record {record}: s3.object.key {encoded:?}: {why}")]
    BadKey { record: usize, encoded: String, why: KeyError },
}

/// Why an S3 notification's URL-encoded key does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("a `%` without two hex digits")]
    BadEscape,
    #[error("not UTF-8 once decoded")]
    NotUtf8,
}

/// Read an SQS body as a trail notification: `None` when its shape is not one (an EventBridge
/// envelope, a CloudTrail record, anything else), `Some(Err)` when it is one but cannot be used.
///
/// Shapes: an S3 event notification (`{"Records": [{"eventSource": "aws:s3", ...}]}`), S3's test
/// event (`{"Event": "s3:TestEvent", ...}`), CloudTrail's own SNS notification
/// (`{"s3Bucket": ..., "s3ObjectKey": [...]}`), and any of these as the `Message` of an SNS
/// notification (an SNS subscription without raw message delivery).
pub fn read_notification(body: &str) -> Option<Result<Notification, NotificationError>> {
    let trimmed = body.trim_start();
    // Most bodies are EventBridge envelopes: they are not parsed twice.
    let marked = ["\"aws:s3\"", "\"s3:TestEvent\"", "\"TopicArn\"", "\"s3Bucket\""].iter().any(|m| body.contains(m));
    if !trimmed.starts_with('{') || !marked {
        return None;
    }
    let value: Value = serde_json::from_str(trimmed).ok()?;
    read_value(&value, 0)
}

fn read_value(value: &Value, depth: u8) -> Option<Result<Notification, NotificationError>> {
    let object = value.as_object()?;
    // SNS: {"Type": "Notification", "TopicArn": ..., "Message": "<JSON text>"}.
    if object.get("Type").and_then(Value::as_str) == Some("Notification") && object.contains_key("TopicArn") {
        let topic = object["TopicArn"].as_str().unwrap_or("?");
        let Some(message) = object.get("Message").and_then(Value::as_str) else {
            return Some(Err(NotificationError::SnsWithoutMessage { topic: topic.to_string() }));
        };
        let inner = serde_json::from_str::<Value>(message).ok();
        return match inner.as_ref().and_then(|v| if depth == 0 { read_value(v, 1) } else { None }) {
            Some(read) => Some(read),
            // An SNS notification of something else: not the trail's; say what it is.
            None => Some(Err(NotificationError::SnsNotTrail { topic: topic.to_string() })),
        };
    }
    if object.get("Event").and_then(Value::as_str) == Some("s3:TestEvent") {
        return Some(Ok(Notification { objects: Vec::new(), test_event: true }));
    }
    // CloudTrail's own SNS notification of a delivered log file.
    if let (Some(bucket), Some(keys)) = (object.get("s3Bucket"), object.get("s3ObjectKey")) {
        let Some(bucket) = bucket.as_str() else { return Some(Err(NotificationError::BucketNotText)) };
        let Some(keys) = keys.as_array() else { return Some(Err(NotificationError::KeysNotList)) };
        let mut objects = Vec::with_capacity(keys.len());
        for key in keys {
            let Some(key) = key.as_str() else {
                return Some(Err(NotificationError::KeyNotText { key: key.to_string() }));
            };
            objects.push(ObjectRef {
                bucket: bucket.to_string(),
                key: key.to_string(),
                region: None,
                size: None,
                event: None,
                raw: serde_json::json!({"s3Bucket": bucket, "s3ObjectKey": [key]}).to_string(),
            });
        }
        return Some(Ok(Notification { objects, test_event: false }));
    }
    let records = object.get("Records")?.as_array()?;
    if !records.iter().any(|r| r.get("eventSource").and_then(Value::as_str) == Some("aws:s3")) {
        return None;
    }
    let mut objects = Vec::with_capacity(records.len());
    for (i, record) in records.iter().enumerate() {
        let record_no = i + 1;
        if record.get("eventSource").and_then(Value::as_str) != Some("aws:s3") {
            return Some(Err(NotificationError::MixedSources { record: record_no }));
        }
        let s3 = &record["s3"];
        let Some(bucket) = s3["bucket"]["name"].as_str() else {
            return Some(Err(NotificationError::NoBucket { record: record_no }));
        };
        let Some(encoded) = s3["object"]["key"].as_str() else {
            return Some(Err(NotificationError::NoKey { record: record_no }));
        };
        let key = match decode_key(encoded) {
            Ok(key) => key,
            Err(why) => {
                return Some(Err(NotificationError::BadKey { record: record_no, encoded: encoded.to_string(), why }));
            }
        };
        objects.push(ObjectRef {
            bucket: bucket.to_string(),
            key,
            region: record.get("awsRegion").and_then(Value::as_str).filter(|r| !r.is_empty()).map(str::to_string),
            size: s3["object"]["size"].as_u64(),
            event: record.get("eventName").and_then(Value::as_str).map(str::to_string),
            raw: record.to_string(),
        });
    }
    Some(Ok(Notification { objects, test_event: false }))
}

/// An S3 notification's key: URL-encoded as a form value (`+` for a space, `%XX` for other bytes).
fn decode_key(encoded: &str) -> Result<String, KeyError> {
    let bytes = encoded.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
                let byte = hex.and_then(|h| u8::from_str_radix(h, 16).ok()).ok_or(KeyError::BadEscape)?;
                out.push(byte);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| KeyError::NotUtf8)
}

/// What a key is, by CloudTrail's layout: `[<prefix>/]AWSLogs/[<org-id>/]<account>/CloudTrail/<region>/YYYY/MM/DD/<file>.json.gz`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyKind {
    LogFile { account: String, region: String },
    Ignored(Ignored),
}

pub fn classify_key(key: &str) -> KeyKind {
    let parts: Vec<&str> = key.split('/').collect();
    if parts.last() == Some(&"ConfigWritesToS3") {
        return KeyKind::Ignored(Ignored::ConfigMarker);
    }
    let Some(logs) = parts.iter().position(|p| *p == "AWSLogs") else {
        return KeyKind::Ignored(Ignored::NotALogFile);
    };
    let mut rest = &parts[logs + 1..];
    // An organisation trail's keys carry the organisation id first.
    if rest.first().is_some_and(|p| is_org_id(p)) {
        rest = &rest[1..];
    }
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    match rest {
        [account, "CloudTrail-Digest", ..] if digits(account, 12) => KeyKind::Ignored(Ignored::Digest),
        [account, "CloudTrail", region, year, month, day, file]
            if digits(account, 12)
                && is_region(region)
                && digits(year, 4)
                && digits(month, 2)
                && digits(day, 2)
                && file.len() > ".json.gz".len()
                && file.ends_with(".json.gz") =>
        {
            KeyKind::LogFile { account: account.to_string(), region: region.to_string() }
        }
        _ => KeyKind::Ignored(Ignored::NotALogFile),
    }
}

/// `o-` and 10 to 32 lower-case letters or digits.
fn is_org_id(s: &str) -> bool {
    s.strip_prefix("o-").is_some_and(|id| {
        (10..=32).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    })
}

fn is_region(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Whether `object` is read, and why not. Pure: decided before anything is fetched.
pub fn triage(object: &ObjectRef, served: &Served) -> Result<(), Ignored> {
    if object.event.as_deref().is_some_and(|e| !e.starts_with("ObjectCreated:")) {
        return Err(Ignored::NotCreated);
    }
    match classify_key(&object.key) {
        KeyKind::Ignored(reason) => Err(reason),
        KeyKind::LogFile { account, region } => match served.refusal(&account, &region) {
            Some(_) => Err(Ignored::NotServed),
            None => Ok(()),
        },
    }
}

/// Why a fetched object is not a readable log file (bad input), or why it was not fetched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectError {
    /// Bad input: recorded with the reason, the message deleted (fetching again gives the same).
    #[error("{0}")]
    Bad(String),
    /// It may pass (network, throttling, permissions, region): the message is left for redelivery.
    #[error("{0}")]
    Transient(String),
}

/// The decompressed bytes of an object, at most `max` of them: gzip when it starts with gzip's
/// magic bytes (CloudTrail's are), else as they are. A bomb stops at `max + 1` bytes.
pub fn gunzip_bounded(bytes: &[u8], max: u64, location: &str) -> Result<Vec<u8>, ObjectError> {
    let too_large = |what: &str| {
        ObjectError::Bad(format!(
            "{location}: {what} over [feed] max_object_bytes = {max}: not read (a CloudTrail log file is \
             normally well under 50 MB; raise max_object_bytes if this one is genuine)"
        ))
    };
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        if bytes.len() as u64 > max {
            return Err(too_large(&format!("{} bytes", bytes.len())));
        }
        return Ok(bytes.to_vec());
    }
    let mut out = Vec::with_capacity(bytes.len().saturating_mul(8).min(max as usize));
    flate2::read::MultiGzDecoder::new(bytes)
        .take(max.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| ObjectError::Bad(format!("{location}: not valid gzip data ({} bytes): {e}", bytes.len())))?;
    if out.len() as u64 > max {
        return Err(too_large(&format!("more than {max} bytes once decompressed ({} bytes compressed),", bytes.len())));
    }
    Ok(out)
}

/// Read a fetched object's bytes as a CloudTrail log file into an intake: its records triaged as
/// every message's are; the whole object bad input (one entry, with the notification's text) when
/// it is not a log file.
pub fn read_object(object: &ObjectRef, bytes: &[u8], max: u64, filter: &FilterConfig, served: &Served) -> Intake {
    let location = object.location();
    let bad = |reason: String| Intake {
        events: Vec::new(),
        bad: vec![BadRecord { location: location.clone(), reason, raw: object.raw.clone() }],
    };
    let text = match gunzip_bounded(bytes, max, &location) {
        Ok(plain) => match String::from_utf8(plain) {
            Ok(text) => text,
            Err(e) => {
                return bad(format!(
                    "{location}: not UTF-8 text (at byte {}): not a CloudTrail log file",
                    e.utf8_error().valid_up_to()
                ));
            }
        },
        Err(e) => return bad(e.to_string()),
    };
    if !text.trim_start().starts_with('{') {
        return bad(format!(
            "{location}: {} bytes that are not a CloudTrail log file ({{\"Records\": [...]}})",
            text.len()
        ));
    }
    match Intake::from_log_text(&text, &location, filter) {
        Ok(mut intake) => {
            intake.refuse_unserved(served, &location);
            intake
        }
        Err(e) => bad(e.to_string()),
    }
}

/// Fetches trail objects with S3 clients, one per bucket region.
#[derive(Debug)]
pub struct TrailReader {
    sdk: aws_config::SdkConfig,
    endpoint_url: Option<String>,
    force_path_style: bool,
    /// The most an object may hold, compressed or decompressed.
    pub max_bytes: u64,
    /// The buckets whose objects are read; empty: any the notifications name.
    buckets: Vec<String>,
    clients: Mutex<HashMap<String, aws_sdk_s3::Client>>,
}

impl TrailReader {
    pub fn new(
        sdk: aws_config::SdkConfig,
        endpoint_url: Option<String>,
        force_path_style: bool,
        max_bytes: u64,
        buckets: Vec<String>,
    ) -> TrailReader {
        TrailReader { sdk, endpoint_url, force_path_style, max_bytes, buckets, clients: Mutex::default() }
    }

    /// Why objects of `bucket` are not read, if they are not.
    pub fn refusal(&self, object: &ObjectRef) -> Option<String> {
        if self.buckets.is_empty() || self.buckets.contains(&object.bucket) {
            return None;
        }
        Some(format!(
            "{}: bucket {:?} is not one of [feed] trail_buckets ({}): not read; add it if this queue should \
             read its log files",
            object.location(),
            object.bucket,
            self.buckets.join(", ")
        ))
    }

    fn client(&self, region: Option<&str>) -> aws_sdk_s3::Client {
        let name = region.unwrap_or("").to_string();
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        clients
            .entry(name)
            .or_insert_with(|| {
                let mut builder = aws_sdk_s3::config::Builder::from(&self.sdk).force_path_style(self.force_path_style);
                // The SDK configuration's endpoint is SQS's: S3 gets its own, or AWS's.
                builder.set_endpoint_url(self.endpoint_url.clone());
                if let Some(region) = region {
                    builder = builder.region(aws_sdk_s3::config::Region::new(region.to_string()));
                }
                aws_sdk_s3::Client::from_conf(builder.build())
            })
            .clone()
    }

    /// The object's bytes as stored (compressed), at most `max_bytes` of them.
    pub async fn fetch(&self, object: &ObjectRef) -> Result<Vec<u8>, ObjectError> {
        use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
        let location = object.location();
        let too_large = |size: u64| {
            ObjectError::Bad(format!(
                "{location}: {size} bytes stored, over [feed] max_object_bytes = {}: not read (raise \
                 max_object_bytes if this log file is genuine)",
                self.max_bytes
            ))
        };
        if let Some(size) = object.size.filter(|s| *s > self.max_bytes) {
            return Err(too_large(size));
        }
        let sent =
            self.client(object.region.as_deref()).get_object().bucket(&object.bucket).key(&object.key).send().await;
        let out = match sent {
            Ok(out) => out,
            Err(e) => {
                let code = e.code().unwrap_or_default().to_string();
                let status = match &e {
                    SdkError::ServiceError(s) => Some(s.raw().status().as_u16()),
                    _ => None,
                };
                let detail = match e.message() {
                    Some(m) => format!("{code}: {m}"),
                    None => format!("{}", DisplayErrorContext(&e)),
                };
                return Err(if code == "NoSuchKey" || (status == Some(404) && code != "NoSuchBucket") {
                    // Gone before it was read (a lifecycle rule, a forged notification): nothing to wait for.
                    ObjectError::Bad(format!("{location}: s3:GetObject found no such object ({detail})"))
                } else {
                    let hint = match (code.as_str(), status) {
                        ("AccessDenied", _) | (_, Some(403)) => {
                            "; grant the daemon s3:GetObject on the trail's log files (and kms:Decrypt on the trail's \
                             key when it has one)"
                        }
                        ("PermanentRedirect" | "AuthorizationHeaderMalformed", _) | (_, Some(301)) => {
                            "; the bucket is in another region than the notification says"
                        }
                        ("NoSuchBucket", _) => "; check [feed] s3_endpoint_url and the notification's bucket",
                        _ => "",
                    };
                    ObjectError::Transient(format!("{location}: s3:GetObject failed: {detail}{hint}"))
                });
            }
        };
        if let Some(size) = out.content_length().and_then(|n| u64::try_from(n).ok()).filter(|n| *n > self.max_bytes) {
            return Err(too_large(size));
        }
        let mut body = out.body;
        let mut bytes = Vec::new();
        loop {
            match body.try_next().await {
                Ok(Some(chunk)) => {
                    bytes.extend_from_slice(&chunk);
                    if bytes.len() as u64 > self.max_bytes {
                        return Err(too_large(bytes.len() as u64));
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    return Err(ObjectError::Transient(format!(
                        "{location}: reading the object's body failed after {} bytes: {}",
                        bytes.len(),
                        DisplayErrorContext(&e)
                    )));
                }
            }
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn s3_record(bucket: &str, key: &str, event: &str) -> Value {
        serde_json::json!({
            "eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "eu-west-1",
            "eventTime": "2024-05-01T12:05:00.000Z", "eventName": event,
            "s3": {"s3SchemaVersion": "1.0", "configurationId": "trail",
                   "bucket": {"name": bucket, "arn": format!("arn:aws:s3:::{bucket}")},
                   "object": {"key": key, "size": 1234, "eTag": "abc", "sequencer": "0055"}}
        })
    }

    #[test]
    fn s3_notifications_are_read_directly_and_through_sns_and_their_keys_decoded() {
        let key = "AWSLogs/o-abcdefghij/123456789012/CloudTrail/eu-west-1/2024/05/01/123456789012_CloudTrail_eu-west-1_20240501T1205Z_a+b%2Bc.json.gz";
        let body = serde_json::json!({"Records": [s3_record("trail", key, "ObjectCreated:Put")]}).to_string();
        let direct = read_notification(&body).unwrap().unwrap();
        assert_eq!(direct.objects.len(), 1);
        let object = &direct.objects[0];
        assert_eq!(object.bucket, "trail");
        assert!(object.key.ends_with("_a b+c.json.gz"), "{}", object.key);
        assert_eq!((object.region.as_deref(), object.size), (Some("eu-west-1"), Some(1234)));
        // moto encodes the slashes too.
        let moto = body.replace("AWSLogs/o-abcdefghij/", "AWSLogs%2Fo-abcdefghij%2F");
        assert_eq!(read_notification(&moto).unwrap().unwrap().objects[0].key, object.key);

        let sns = serde_json::json!({
            "Type": "Notification", "MessageId": "m", "TopicArn": "arn:aws:sns:eu-west-1:123456789012:trail",
            "Subject": "Amazon S3 Notification", "Message": body, "Timestamp": "2024-05-01T12:05:01.000Z",
            "SignatureVersion": "1", "Signature": "x", "SigningCertURL": "https://x", "UnsubscribeURL": "https://x"
        })
        .to_string();
        let through_sns = read_notification(&sns).unwrap().unwrap();
        assert_eq!(through_sns.objects[0].key, direct.objects[0].key);

        let test =
            r#"{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2024-05-01T12:00:00.000Z","Bucket":"trail"}"#;
        assert!(read_notification(test).unwrap().unwrap().test_event);

        // CloudTrail's own SNS notification, inside SNS's envelope.
        let own = serde_json::json!({"s3Bucket": "trail", "s3ObjectKey": [key.replace("%2B", "+")]}).to_string();
        let sns = serde_json::json!({"Type": "Notification", "TopicArn": "arn:aws:sns:eu-west-1:1:t", "Message": own});
        let read = read_notification(&sns.to_string()).unwrap().unwrap();
        assert_eq!(read.objects[0].key, key.replace("%2B", "+"), "CloudTrail's own keys are not encoded");

        // Not notifications: an EventBridge envelope, a CloudTrail log file, text.
        let envelope = r#"{"version":"0","detail-type":"AWS API Call via CloudTrail","detail":{"eventID":"x"}}"#;
        assert!(read_notification(envelope).is_none());
        assert!(read_notification(r#"{"Records":[{"eventSource":"ec2.amazonaws.com"}]}"#).is_none());
        assert!(read_notification("not json").is_none());
        // Notifications that cannot be used say why.
        let err = read_notification(r#"{"Records":[{"eventSource":"aws:s3","s3":{"bucket":{"name":"b"}}}]}"#)
            .unwrap()
            .unwrap_err();
        assert_eq!(err, NotificationError::NoKey { record: 1 });
        assert!(err.to_string().contains("record 1: no s3.object.key"), "{err}");
        let other_sns = r#"{"Type":"Notification","TopicArn":"arn:aws:sns:eu-west-1:1:alarms","Message":"CPU high"}"#;
        let err = read_notification(other_sns).unwrap().unwrap_err();
        assert!(err.to_string().contains("arn:aws:sns:eu-west-1:1:alarms"), "{err}");
        let err = read_notification(
            r#"{"Records":[{"eventSource":"aws:s3","s3":{"bucket":{"name":"b"},"object":{"key":"%zz"}}}]}"#,
        )
        .unwrap()
        .unwrap_err();
        assert!(matches!(err, NotificationError::BadKey { why: KeyError::BadEscape, .. }), "{err:?}");
        assert!(err.to_string().contains("hex digits"), "{err}");
    }

    #[test]
    fn keys_are_log_files_only_in_cloudtrails_layout() {
        let log = |account: &str, region: &str| KeyKind::LogFile { account: account.into(), region: region.into() };
        let file = "2024/05/01/123456789012_CloudTrail_eu-west-1_20240501T1205Z_x.json.gz";
        assert_eq!(
            classify_key(&format!("AWSLogs/o-abcdefghij/123456789012/CloudTrail/eu-west-1/{file}")),
            log("123456789012", "eu-west-1")
        );
        assert_eq!(
            classify_key(&format!("AWSLogs/123456789012/CloudTrail/us-east-1/{file}")),
            log("123456789012", "us-east-1")
        );
        assert_eq!(
            classify_key(&format!("team/trails/AWSLogs/123456789012/CloudTrail/us-east-1/{file}")),
            log("123456789012", "us-east-1"),
            "a trail's S3 key prefix comes before AWSLogs"
        );
        let ignored = |key: &str| match classify_key(key) {
            KeyKind::Ignored(reason) => reason,
            other => panic!("{key}: {other:?}"),
        };
        assert_eq!(
            ignored("AWSLogs/o-abcdefghij/123456789012/CloudTrail-Digest/eu-west-1/2024/05/01/x_Digest.json.gz"),
            Ignored::Digest
        );
        assert_eq!(ignored("AWSLogs/123456789012/Config/ConfigWritesToS3"), Ignored::ConfigMarker);
        assert_eq!(
            ignored("AWSLogs/123456789012/CloudTrail-Insight/eu-west-1/2024/05/01/x.json.gz"),
            Ignored::NotALogFile
        );
        assert_eq!(ignored("AWSLogs/123456789012/CloudTrail/eu-west-1/2024/05/01/x.json"), Ignored::NotALogFile);
        assert_eq!(ignored("AWSLogs/12345/CloudTrail/eu-west-1/2024/05/01/x.json.gz"), Ignored::NotALogFile);
        assert_eq!(ignored("AWSLogs/123456789012/CloudTrail/eu-west-1/2024/5/01/x.json.gz"), Ignored::NotALogFile);
        assert_eq!(ignored("reports/2024.csv"), Ignored::NotALogFile);
    }

    #[test]
    fn only_created_log_files_of_served_accounts_are_read() {
        let object = |key: &str, event: &str| ObjectRef {
            bucket: "b".into(),
            key: key.into(),
            region: None,
            size: None,
            event: Some(event.into()),
            raw: String::new(),
        };
        let key = "AWSLogs/o-abcdefghij/123456789012/CloudTrail/eu-west-1/2024/05/01/x.json.gz";
        let all = Served::default();
        assert_eq!(triage(&object(key, "ObjectCreated:CompleteMultipartUpload"), &all), Ok(()));
        assert_eq!(triage(&object(key, "ObjectRemoved:Delete"), &all), Err(Ignored::NotCreated));
        let other = Served { accounts: vec!["210987654321".into()], regions: vec![] };
        assert_eq!(triage(&object(key, "ObjectCreated:Put"), &other), Err(Ignored::NotServed));
        let region = Served { accounts: vec![], regions: vec!["us-east-1".into()] };
        assert_eq!(triage(&object(key, "ObjectCreated:Put"), &region), Err(Ignored::NotServed));
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn decompression_stops_at_the_bound_and_names_the_object() {
        let plain = vec![b' '; 10_000];
        assert_eq!(gunzip_bounded(&gzip(&plain), 10_000, "s3://b/k").unwrap().len(), 10_000);
        let err = gunzip_bounded(&gzip(&plain), 9_999, "s3://b/k").unwrap_err();
        assert!(
            matches!(&err, ObjectError::Bad(m) if m.contains("s3://b/k") && m.contains("max_object_bytes = 9999")),
            "{err}"
        );
        // A bomb: 64 MB of zeros in about 64 KB; stops after the bound, not at its end.
        let bomb = gzip(&vec![0u8; 64 << 20]);
        assert!(bomb.len() < 200_000);
        assert!(matches!(gunzip_bounded(&bomb, 1 << 20, "s3://b/bomb"), Err(ObjectError::Bad(_))));
        let mut truncated = gzip(b"{\"Records\": []}");
        truncated.truncate(truncated.len() - 6);
        let err = gunzip_bounded(&truncated, 1 << 20, "s3://b/t").unwrap_err().to_string();
        assert!(err.contains("s3://b/t: not valid gzip data"), "{err}");
        // Plain bytes are taken as they are, within the bound.
        assert!(gunzip_bounded(b"{}", 1, "s3://b/p").is_err());
    }

    #[test]
    fn an_object_is_read_as_a_log_file_or_is_one_bad_input() {
        let object = ObjectRef {
            bucket: "b".into(),
            key: "AWSLogs/123456789012/CloudTrail/eu-west-1/2024/05/01/x.json.gz".into(),
            region: None,
            size: None,
            event: None,
            raw: "{\"notification\":1}".into(),
        };
        let record = |id: &str| {
            serde_json::json!({"eventVersion": "1.09", "eventID": id, "eventTime": "2024-05-01T12:00:00Z",
                "eventSource": "ec2.amazonaws.com", "eventName": "StopInstances", "awsRegion": "eu-west-1",
                "recipientAccountId": "123456789012", "eventType": "AwsApiCall", "readOnly": false,
                "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/alice"},
                "requestParameters": {"instancesSet": {"items": [{"instanceId": "i-1"}]}}})
        };
        let filter = FilterConfig::default();
        let served = Served::default();
        let file = serde_json::json!({"Records": [record("e1"), {"eventID": 7}, record("e2")]}).to_string();
        let intake = read_object(&object, &gzip(file.as_bytes()), 1 << 20, &filter, &served);
        assert_eq!(intake.events.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), ["e1", "e2"]);
        assert_eq!(intake.bad.len(), 1, "the bad record among good ones: {:?}", intake.bad);
        assert!(intake.bad[0].location.starts_with("s3://b/AWSLogs/"), "{:?}", intake.bad);

        for (bytes, says) in [
            (gzip(b"{\"Records\": [{\"eventID\""), "line 1"),
            (gzip(b"hello"), "not a CloudTrail log file"),
            (gzip(b""), "not a CloudTrail log file"),
            (gzip(&[0xff, 0xfe]), "not UTF-8"),
            (b"\x1f\x8bnot gzip".to_vec(), "not valid gzip"),
        ] {
            let intake = read_object(&object, &bytes, 1 << 20, &filter, &served);
            assert!(intake.events.is_empty());
            assert_eq!(intake.bad.len(), 1);
            let bad = &intake.bad[0];
            assert!(bad.reason.contains(says) && bad.reason.contains("s3://b/AWSLogs/"), "{says}: {bad:?}");
            assert_eq!(
                (bad.location.as_str(), bad.raw.as_str()),
                ("s3://b/AWSLogs/123456789012/CloudTrail/eu-west-1/2024/05/01/x.json.gz", "{\"notification\":1}")
            );
        }
    }
}
