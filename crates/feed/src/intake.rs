//! What one delivery holds, decoded and classified: pure, no I/O.

use std::collections::HashSet;

use std::path::Path;

use chrono::{DateTime, Utc};
use driftback_events::{
    ApiEvent, BadRecord, Disposition, DropReason, Entry, FilterConfig, ReadError, Record, read_record, read_text, scan,
};
use driftback_store::EventRecord;

/// One delivery (an SQS message, a LookupEvents page) decoded: events and bad input.
#[derive(Debug, Default, Clone)]
pub struct Intake {
    /// Every usable record, each once (by `eventID`) within this intake.
    pub events: Vec<IntakeEvent>,
    /// Input that is not a usable CloudTrail record, kept verbatim with the reason.
    pub bad: Vec<BadRecord>,
}

/// One event and what the filter made of it. A dropped event is not normalised: what the ledger
/// keeps of it (id, time, call, actor, the record) is read straight from the record.
#[derive(Debug, Clone)]
pub struct IntakeEvent {
    /// `eventID`.
    pub id: String,
    pub time: DateTime<Utc>,
    /// `eventSource`.
    pub source: String,
    /// `eventName` as recorded.
    pub name: String,
    /// Who made the call (the actor's short name).
    pub actor: String,
    /// The account the call was made in (`recipientAccountId`, else the caller's).
    pub account: String,
    /// `awsRegion`.
    pub region: String,
    /// The CloudTrail record's JSON text, as received.
    pub raw: String,
    pub triage: Triage,
}

/// The accounts and regions a deployment serves (`[feed] accounts`, `regions`); an empty list
/// serves every one. A record from elsewhere on the queue (a forwarding rule set too wide, or a
/// forged one) is bad input, never a change set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Served {
    pub accounts: Vec<String>,
    pub regions: Vec<String>,
}

impl Served {
    /// Why a record of `account` in `region` is not served, if it is not.
    pub fn refusal(&self, account: &str, region: &str) -> Option<String> {
        if !self.accounts.is_empty() && !self.accounts.iter().any(|a| a == account) {
            return Some(format!(
                "made in account {account:?}, which [feed] accounts does not serve ({}): not a change to this \
                 deployment's infrastructure",
                self.accounts.join(", ")
            ));
        }
        if !self.regions.is_empty() && !self.regions.iter().any(|r| r == region) {
            return Some(format!(
                "made in region {region:?}, which [feed] regions does not serve ({}): not a change to this \
                 deployment's infrastructure",
                self.regions.join(", ")
            ));
        }
        None
    }
}

/// What the filter made of an event.
#[derive(Debug, Clone)]
pub enum Triage {
    /// A drift candidate, normalised for grouping.
    Kept(Box<ApiEvent>),
    /// Not a drift candidate, and why.
    Dropped(DropReason),
}

/// The longest eventID kept: CloudTrail's are 36-character UUIDs.
pub const MAX_EVENT_ID_BYTES: usize = 128;
/// The longest event source or name kept: AWS's are short (`UpdateFunctionConfiguration20150331v2`).
pub const MAX_CALL_NAME_BYTES: usize = 256;
/// The longest actor or resource identifier kept: 2,048 is the longest ARN AWS documents (IAM's),
/// and it stays under the 2,704 bytes a Postgres index entry may hold.
pub const MAX_IDENTIFIER_BYTES: usize = 2048;

/// Why a record is bad input rather than an event: the reason kept with it.
#[derive(Debug, thiserror::Error)]
pub enum IntakeError {
    #[error("{field} is {bytes} bytes long ({start:?}…); AWS sends at most {max}: not a record this driftback keeps")]
    TooLong { field: &'static str, bytes: usize, start: String, max: usize },
    #[error("eventID {0:?} has control characters: not a CloudTrail event id")]
    ControlCharacters(String),
    #[error("eventID {0:?} is blank: not a CloudTrail event id")]
    BlankId(String),
    #[error("a resource identifier is blank ({0:?}): not one AWS sends")]
    BlankResourceId(String),
    #[error("not JSON: {0}")]
    NotJson(#[from] serde_json::Error),
    #[error(transparent)]
    Normalize(#[from] driftback_events::NormalizeError),
}

/// `Err` naming the field when `value` is longer than AWS itself would send.
fn bounded(field: &'static str, value: &str, max: usize) -> Result<(), IntakeError> {
    if value.len() <= max {
        return Ok(());
    }
    let start: String = value.chars().take(40).collect();
    Err(IntakeError::TooLong { field, bytes: value.len(), start, max })
}

impl IntakeEvent {
    /// Triage one record: normalise it only when it is a drift candidate. A field longer than AWS
    /// itself sends (ids, names, ARNs, resource identifiers) makes the record bad input: what
    /// reaches the store's indexes is bounded, and the records around it go on.
    ///
    /// A record holding the NUL character (which Postgres cannot store) is triaged as the store
    /// will keep it, each NUL replaced by U+FFFD: its actor, resource ids and grouping keys are
    /// then the same whether read now or later from the store.
    pub fn from_record(record: &Record<'_>, filter: &FilterConfig) -> Result<IntakeEvent, IntakeError> {
        bounded("eventID", record.id(), MAX_EVENT_ID_BYTES)?;
        // The id is what deduplication and change sets refer to: it must be plain text.
        if record.id().chars().any(char::is_control) {
            return Err(IntakeError::ControlCharacters(record.id().to_string()));
        }
        if record.id().trim().is_empty() {
            return Err(IntakeError::BlankId(record.id().to_string()));
        }
        if !record.text().contains("\\u0000") {
            return IntakeEvent::triage(record, filter);
        }
        let clean = json_without_nul(record.text())?;
        let record = read_record(&clean)?;
        IntakeEvent::triage(&record, filter)
    }

    fn triage(record: &Record<'_>, filter: &FilterConfig) -> Result<IntakeEvent, IntakeError> {
        bounded("eventSource", record.source(), MAX_CALL_NAME_BYTES)?;
        bounded("eventName", record.raw_name(), MAX_CALL_NAME_BYTES)?;
        bounded("the actor", record.actor_name(), MAX_IDENTIFIER_BYTES)?;
        let triage = match record.disposition(filter) {
            Disposition::Keep => {
                let event = record.to_event()?;
                if let Some(arn) = &event.actor.principal_arn {
                    bounded("userIdentity.arn", arn, MAX_IDENTIFIER_BYTES)?;
                }
                for id in driftback_events::resource_ids(&event) {
                    bounded("a resource identifier", &id, MAX_IDENTIFIER_BYTES)?;
                    // Change sets group on it: a blank one would join unrelated calls.
                    if id.trim().is_empty() {
                        return Err(IntakeError::BlankResourceId(id));
                    }
                }
                Triage::Kept(Box::new(event))
            }
            Disposition::Drop(reason) => Triage::Dropped(reason),
        };
        Ok(IntakeEvent {
            id: record.id().to_string(),
            time: record.time(),
            source: record.source().to_string(),
            name: record.raw_name().to_string(),
            actor: record.actor_name().to_string(),
            account: record.account().to_string(),
            region: record.region().to_string(),
            raw: record.text().to_string(),
            triage,
        })
    }

    /// The normalised event, when it is a drift candidate.
    pub fn kept(&self) -> Option<&ApiEvent> {
        match &self.triage {
            Triage::Kept(event) => Some(event),
            Triage::Dropped(_) => None,
        }
    }

    /// What the knowledge base keeps of the event: its identity, call, actor, disposition and the
    /// record's text as received (the scanner read it as JSON, so it is).
    pub fn record(&self) -> EventRecord {
        EventRecord {
            event_id: self.id.clone(),
            event_time: self.time,
            source: self.source.clone(),
            name: self.name.clone(),
            actor: self.actor.clone(),
            disposition: if self.dropped().is_some() {
                driftback_store::Disposition::Dropped
            } else {
                driftback_store::Disposition::Kept
            },
            drop_reason: self.dropped().map(|r| r.as_str().to_string()),
            raw: self.raw.clone(),
        }
    }

    /// Why the event is not a drift candidate, when it is not.
    pub fn dropped(&self) -> Option<DropReason> {
        match self.triage {
            Triage::Kept(_) => None,
            Triage::Dropped(reason) => Some(reason),
        }
    }
}

/// `text` (a JSON record) with every NUL character in its strings and keys replaced by U+FFFD, as
/// the store keeps it.
fn json_without_nul(text: &str) -> Result<String, IntakeError> {
    fn clean(value: serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        let text = |s: String| if s.contains('\0') { s.replace('\0', "\u{fffd}") } else { s };
        match value {
            Value::String(s) => Value::String(text(s)),
            Value::Array(items) => items.into_iter().map(clean).collect(),
            Value::Object(map) => map.into_iter().map(|(k, v)| (text(k), clean(v))).collect(),
            other => other,
        }
    }
    let value: serde_json::Value = serde_json::from_str(text)?;
    Ok(clean(value).to_string())
}

/// What a bad input keeps verbatim.
#[derive(Debug, Clone, Copy)]
enum Verbatim {
    /// The whole text it came in (a message body: small, and what a person replays).
    Text,
    /// The record's own text when there is one, else nothing (a file: kept once, where it is).
    Record,
}

/// Whether records must come inside an EventBridge envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Envelopes {
    Optional,
    Required,
}

impl Intake {
    /// Decode one text holding CloudTrail records (an EventBridge envelope, a record, a log file,
    /// JSON lines). A body that does not decode at all becomes one [`BadRecord`] holding the text.
    pub fn from_text(text: &str, location: &str, filter: &FilterConfig) -> Intake {
        let mut intake = Intake::default();
        intake.add_text(text, location, filter);
        intake
    }

    /// Decode one SQS message body as [`Intake::from_text`] does, except that, unless
    /// `accept_bare` is set, a record that did not come inside an EventBridge envelope (a bare
    /// record, a log file, a list) is bad input. EventBridge always writes an envelope, whose `source`
    /// only AWS can set to `aws.*`; a record without one was sent by whoever may send to the queue,
    /// and nothing in it shows it is not forged.
    pub fn from_message(text: &str, location: &str, filter: &FilterConfig, accept_bare: bool) -> Intake {
        let envelopes = if accept_bare { Envelopes::Optional } else { Envelopes::Required };
        let mut intake = Intake::default();
        if let Err(e) = intake.scan(text, location, filter, Verbatim::Text, envelopes) {
            // All of the text or none of it, as in [`Intake::add_text`].
            let bad = BadRecord { location: location.to_string(), reason: e.to_string(), raw: text.into() };
            intake = Intake { events: Vec::new(), bad: vec![bad] };
        }
        intake
    }

    /// A file of CloudTrail records (a log file, plain or gzip; an array; JSON lines), triaged as
    /// the daemon triages a message. Unlike a message, a file whose container cannot be read is an
    /// error naming where it stops being readable; a bad record among good ones is bad input.
    pub fn read_file(path: &Path, filter: &FilterConfig) -> Result<Intake, ReadError> {
        let text = read_text(path)?;
        Intake::from_log_text(&text, &path.display().to_string(), filter)
    }

    /// The text of a file of CloudTrail records (an organisation trail's log file once fetched and
    /// decompressed), read as [`Intake::read_file`] reads a file: an error when its container
    /// cannot be read, a bad record among good ones bad input keeping its own text.
    pub fn from_log_text(text: &str, location: &str, filter: &FilterConfig) -> Result<Intake, ReadError> {
        let mut intake = Intake::default();
        intake.scan(text, location, filter, Verbatim::Record, Envelopes::Optional)?;
        Ok(intake)
    }

    /// Add the records of one more text (see [`Intake::from_text`]). All of the text or none of it:
    /// when the text turns out not to be readable as a whole, nothing read from it is kept but the
    /// text itself, as bad input.
    pub fn add_text(&mut self, text: &str, location: &str, filter: &FilterConfig) {
        let mut part = Intake::default();
        match part.scan(text, location, filter, Verbatim::Text, Envelopes::Optional) {
            Ok(()) => {
                self.events.append(&mut part.events);
                self.bad.append(&mut part.bad);
            }
            Err(e) => {
                self.bad.push(BadRecord { location: location.to_string(), reason: e.to_string(), raw: text.into() })
            }
        }
    }

    /// Scan `text` into this intake; `Err` when its container cannot be read (what was read before
    /// is then in the intake: the caller decides whether to keep it).
    fn scan(
        &mut self,
        text: &str,
        location: &str,
        filter: &FilterConfig,
        verbatim: Verbatim,
        envelopes: Envelopes,
    ) -> Result<(), ReadError> {
        let bad = |location: String, reason: String, record: Option<&str>| {
            let raw = match verbatim {
                Verbatim::Text => text.to_string(),
                Verbatim::Record => record.unwrap_or_default().to_string(),
            };
            BadRecord { location, reason, raw }
        };
        scan(text, location, |entry| match entry {
            Entry::Record(record) if envelopes == Envelopes::Required && !record.enveloped() => {
                let id: String = record.id().chars().take(64).collect();
                let reason = "a CloudTrail record without its EventBridge envelope: the queue takes only what \
                              EventBridge sends (an `aws.*` source, which only AWS can set), so this one may be \
                              forged ([feed] accept_bare_records accepts such records)"
                    .to_string();
                self.bad.push(bad(format!("{location}: event {id}"), reason, Some(record.text())))
            }
            Entry::Record(record) => match IntakeEvent::from_record(&record, filter) {
                Ok(event) => self.events.push(event),
                Err(reason) => {
                    let id: String = record.id().chars().take(64).collect();
                    self.bad.push(bad(format!("{location}: event {id}"), reason.to_string(), Some(record.text())))
                }
            },
            Entry::Bad(b) => self.bad.push(bad(b.location, b.reason, None)),
        })
    }

    /// Add one CloudTrail record given as JSON text (LookupEvents' `CloudTrailEvent`).
    pub fn add_record_text(&mut self, text: &str, location: &str, filter: &FilterConfig) {
        let triaged =
            read_record(text).map_err(IntakeError::from).and_then(|record| IntakeEvent::from_record(&record, filter));
        match triaged {
            Ok(event) => self.events.push(event),
            Err(reason) => self.bad.push(BadRecord {
                location: location.to_string(),
                reason: reason.to_string(),
                raw: text.to_string(),
            }),
        }
    }

    /// Merge several intakes (one per message of a batch), keeping each event id once.
    pub fn merge(parts: impl IntoIterator<Item = Intake>) -> Intake {
        let mut out = Intake::default();
        let mut ids = HashSet::new();
        for part in parts {
            out.bad.extend(part.bad);
            for e in part.events {
                if ids.insert(e.id.clone()) {
                    out.events.push(e);
                }
            }
        }
        out
    }

    /// Move the events of accounts or regions `served` does not serve to bad input, each with the
    /// reason and its record's text.
    pub fn refuse_unserved(&mut self, served: &Served, location: &str) {
        if served.accounts.is_empty() && served.regions.is_empty() {
            return;
        }
        let events = std::mem::take(&mut self.events);
        for event in events {
            match served.refusal(&event.account, &event.region) {
                None => self.events.push(event),
                Some(reason) => {
                    let id: String = event.id.chars().take(64).collect();
                    self.bad.push(BadRecord { location: format!("{location}: event {id}"), reason, raw: event.raw })
                }
            }
        }
    }

    /// The events that go on to grouping.
    pub fn kept(&self) -> impl Iterator<Item = &ApiEvent> {
        self.events.iter().filter_map(IntakeEvent::kept)
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty() && self.bad.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, name: &str, read_only: bool) -> String {
        format!(
            r#"{{"eventVersion":"1.09","eventID":"{id}","eventTime":"2024-03-01T10:00:00Z","eventSource":"ec2.amazonaws.com","eventName":"{name}","awsRegion":"us-east-1","eventType":"AwsApiCall","managementEvent":true,"readOnly":{read_only},"userIdentity":{{"type":"IAMUser","arn":"arn:aws:iam::1:user/alice","userName":"alice"}},"requestParameters":{{"instanceId":"i-1"}}}}"#
        )
    }

    fn envelope(detail: &str) -> String {
        format!(
            r#"{{"version":"0","id":"x","detail-type":"AWS API Call via CloudTrail","source":"aws.ec2","region":"us-east-1","time":"2024-03-01T10:00:00Z","resources":[],"detail":{detail}}}"#
        )
    }

    #[test]
    fn envelopes_and_raw_records_decode_and_are_classified() {
        let filter = FilterConfig::default();
        let a = Intake::from_text(&envelope(&record("a", "ModifyInstanceAttribute", false)), "m1", &filter);
        let b = Intake::from_text(&record("b", "DescribeInstances", true), "m2", &filter);
        let merged = Intake::merge([a.clone(), b, a]);
        let ids: Vec<_> = merged.events.iter().map(|e| (e.id.as_str(), e.dropped())).collect();
        assert_eq!(ids, [("a", None), ("b", Some(DropReason::ReadOnly))]);
        assert_eq!(merged.kept().count(), 1);
        assert!(merged.bad.is_empty());
    }

    #[test]
    fn records_of_accounts_and_regions_not_served_become_bad_input() {
        let filter = FilterConfig::default();
        // The caller's account (arn:aws:iam::1:...) stands in when the record names no recipient.
        let text = [
            record("here", "ModifyInstanceAttribute", false)
                .replace("\"awsRegion\"", "\"recipientAccountId\":\"123456789012\",\"awsRegion\""),
            record("other-account", "ModifyInstanceAttribute", false)
                .replace("\"awsRegion\"", "\"recipientAccountId\":\"999999999999\",\"awsRegion\""),
            record("other-region", "ModifyInstanceAttribute", false).replace(
                "\"awsRegion\":\"us-east-1\"",
                "\"recipientAccountId\":\"123456789012\",\"awsRegion\":\"ap-south-1\"",
            ),
        ]
        .join("\n");
        let served = Served { accounts: vec!["123456789012".into()], regions: vec!["us-east-1".into()] };
        let mut intake = Intake::from_text(&text, "m1", &filter);
        assert_eq!(intake.events.len(), 3);
        intake.refuse_unserved(&served, "m1");
        assert_eq!(intake.events.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), ["here"]);
        let reasons: Vec<&str> = intake.bad.iter().map(|b| b.reason.as_str()).collect();
        assert!(reasons[0].contains("account \"999999999999\"") && reasons[0].contains("123456789012"), "{reasons:?}");
        assert!(reasons[1].contains("region \"ap-south-1\""), "{reasons:?}");
        assert_eq!(intake.bad[0].location, "m1: event other-account");
        assert!(intake.bad[0].raw.contains("\"other-account\""));
        // Serving everything (the default) keeps everything.
        let mut all = Intake::from_text(&text, "m1", &filter);
        all.refuse_unserved(&Served::default(), "m1");
        assert_eq!((all.events.len(), all.bad.len()), (3, 0));
    }

    #[test]
    fn undecodable_bodies_are_kept_verbatim_with_the_reason() {
        let filter = FilterConfig::default();
        let intake = Intake::from_text("hello, not json", "sqs message 7", &filter);
        assert_eq!(intake.bad.len(), 1);
        assert_eq!(intake.bad[0].raw, "hello, not json");
        assert_eq!(intake.bad[0].location, "sqs message 7");
        let other = r#"{"detail-type":"EC2 Instance State-change Notification","detail":{}}"#;
        let intake = Intake::from_text(other, "sqs message 8", &filter);
        assert!(intake.bad[0].reason.contains("EC2 Instance State-change"), "{:?}", intake.bad);
        assert_eq!(intake.bad[0].raw, other);

        let mut intake = Intake::default();
        intake.add_record_text("{\"eventID\": 3}", "cloudtrail page 1", &filter);
        intake.add_record_text(&record("c", "ModifyInstanceAttribute", false), "cloudtrail page 1", &filter);
        assert_eq!(intake.bad.len(), 1);
        assert_eq!(intake.events.len(), 1);

        // An event id that is not plain text is bad input, not an event.
        let intake = Intake::from_text(&record("d\\u0000", "ModifyInstanceAttribute", false), "sqs message 9", &filter);
        assert!(intake.events.is_empty());
        assert!(intake.bad[0].reason.contains("control characters"), "{:?}", intake.bad);
    }

    #[test]
    fn a_message_must_be_an_envelope_unless_bare_records_are_accepted() {
        let filter = FilterConfig::default();
        let bare = record("bare", "ModifyInstanceAttribute", false);
        let log_file = format!(r#"{{"Records":[{}]}}"#, record("listed", "ModifyInstanceAttribute", false));
        let enveloped = envelope(&record("enveloped", "ModifyInstanceAttribute", false));
        for (text, id) in [(&bare, "bare"), (&log_file, "listed")] {
            let refused = Intake::from_message(text, "sqs message 1", &filter, false);
            assert!(refused.events.is_empty(), "{id}: {:?}", refused.events);
            assert_eq!(refused.bad.len(), 1, "{id}");
            assert_eq!(refused.bad[0].location, format!("sqs message 1: event {id}"));
            assert!(refused.bad[0].reason.contains("without its EventBridge envelope"), "{:?}", refused.bad);
            assert_eq!(&refused.bad[0].raw, text, "the message body is kept");
            let accepted = Intake::from_message(text, "sqs message 1", &filter, true);
            assert_eq!((accepted.events.len(), accepted.bad.len()), (1, 0), "{id}");
        }
        let intake = Intake::from_message(&enveloped, "sqs message 2", &filter, false);
        assert_eq!(intake.events.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), ["enveloped"]);
        // A body that is not readable at all is one bad input either way.
        assert_eq!(Intake::from_message("{\"truncated\": ", "m", &filter, false).bad.len(), 1);
    }

    #[test]
    fn blank_ids_are_bad_input() {
        let filter = FilterConfig::default();
        let intake = Intake::from_text(&record("   ", "ModifyInstanceAttribute", false), "m", &filter);
        assert!(intake.events.is_empty());
        assert!(intake.bad[0].reason.contains("eventID \"   \" is blank"), "{:?}", intake.bad);
        let blank_resource = record("r", "ModifyInstanceAttribute", false).replace("\"i-1\"", "\"   \"");
        let intake = Intake::from_text(&blank_resource, "m", &filter);
        assert!(intake.events.is_empty());
        assert!(intake.bad[0].reason.contains("a resource identifier is blank"), "{:?}", intake.bad);
    }

    #[test]
    fn nul_characters_are_read_as_the_store_keeps_them() {
        let filter = FilterConfig::default();
        let text = record("n", "ModifyInstanceAttribute", false)
            .replace("\"i-1\"", "\"i-1\\u0000x\"")
            .replace("user/alice", "user/al\\u0000ice");
        let intake = Intake::from_text(&text, "m", &filter);
        assert!(intake.bad.is_empty(), "{:?}", intake.bad);
        let event = intake.events[0].kept().unwrap();
        assert_eq!(driftback_events::resource_ids(event), ["i-1\u{fffd}x"]);
        assert_eq!(event.actor.principal_arn.as_deref(), Some("arn:aws:iam::1:user/al\u{fffd}ice"));
        assert!(!event.actor.session_key().contains('\0'));
        assert!(!intake.events[0].raw.contains("\\u0000") && intake.events[0].raw.contains('\u{fffd}'));
    }
}
