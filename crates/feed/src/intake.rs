//! What one delivery holds, decoded and classified: pure, no I/O.

use std::collections::HashSet;

use driftback_events::{ApiEvent, Disposition, DropReason, FilterConfig, classify, decode, normalize};
use serde_json::Value;

/// One delivery (an SQS message, a LookupEvents page) decoded: events and bad input.
#[derive(Debug, Default, Clone)]
pub struct Intake {
    /// Normalised events, each once (by `eventID`) within this intake.
    pub events: Vec<IntakeEvent>,
    /// Input that is not a usable CloudTrail record, kept verbatim with the reason.
    pub bad: Vec<BadInput>,
}

/// One event and what the filter made of it.
#[derive(Debug, Clone)]
pub struct IntakeEvent {
    pub event: ApiEvent,
    /// The CloudTrail record as received.
    pub raw: Value,
    /// `None` when the event is a drift candidate; otherwise why it is not.
    pub dropped: Option<DropReason>,
}

/// Input that could not be read as an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadInput {
    /// Where it came from: `sqs message 5f1c...`, `cloudtrail us-east-1 event 9a8b...`.
    pub location: String,
    pub reason: String,
    /// The text verbatim.
    pub raw: String,
}

impl Intake {
    /// Decode one text holding CloudTrail records (an EventBridge envelope, a record, a log file,
    /// JSON lines). A body that does not decode at all becomes one [`BadInput`] holding the text.
    pub fn from_text(text: &str, location: &str, filter: &FilterConfig) -> Intake {
        let mut intake = Intake::default();
        intake.add_text(text, location, filter);
        intake
    }

    /// Add the records of one more text (see [`Intake::from_text`]).
    pub fn add_text(&mut self, text: &str, location: &str, filter: &FilterConfig) {
        match decode(text.as_bytes(), location) {
            Ok(batch) => {
                for bad in batch.bad {
                    self.bad.push(BadInput { location: bad.location, reason: bad.reason, raw: text.to_string() });
                }
                for (event, raw) in batch.events {
                    self.push(event, raw, filter);
                }
            }
            Err(e) => {
                self.bad.push(BadInput { location: location.to_string(), reason: e.to_string(), raw: text.to_string() })
            }
        }
    }

    /// Add one CloudTrail record given as JSON text (LookupEvents' `CloudTrailEvent`).
    pub fn add_record_text(&mut self, text: &str, location: &str, filter: &FilterConfig) {
        let parsed = serde_json::from_str::<Value>(text)
            .map_err(|e| format!("not JSON: {e}"))
            .and_then(|raw| normalize(&raw).map(|event| (event, raw)).map_err(|e| e.to_string()));
        match parsed {
            Ok((event, raw)) => self.push(event, raw, filter),
            Err(reason) => self.bad.push(BadInput { location: location.to_string(), reason, raw: text.to_string() }),
        }
    }

    fn push(&mut self, event: ApiEvent, raw: Value, filter: &FilterConfig) {
        let dropped = match classify(&event, filter) {
            Disposition::Keep => None,
            Disposition::Drop(reason) => Some(reason),
        };
        self.events.push(IntakeEvent { event, raw, dropped });
    }

    /// Merge several intakes (one per message of a batch), keeping each event id once.
    pub fn merge(parts: impl IntoIterator<Item = Intake>) -> Intake {
        let mut out = Intake::default();
        let mut ids = HashSet::new();
        for part in parts {
            out.bad.extend(part.bad);
            for e in part.events {
                if ids.insert(e.event.id.clone()) {
                    out.events.push(e);
                }
            }
        }
        out
    }

    /// The events that go on to grouping.
    pub fn kept(&self) -> impl Iterator<Item = &ApiEvent> {
        self.events.iter().filter(|e| e.dropped.is_none()).map(|e| &e.event)
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
        let ids: Vec<_> = merged.events.iter().map(|e| (e.event.id.as_str(), e.dropped)).collect();
        assert_eq!(ids, [("a", None), ("b", Some(DropReason::ReadOnly))]);
        assert_eq!(merged.kept().count(), 1);
        assert!(merged.bad.is_empty());
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
        intake.add_record_text(&record("c", "StopInstances", false), "cloudtrail page 1", &filter);
        assert_eq!(intake.bad.len(), 1);
        assert_eq!(intake.events.len(), 1);
    }
}
