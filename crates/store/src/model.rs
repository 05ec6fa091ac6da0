//! The records the store keeps: events, change sets, and the counts operators look at first.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::StoreError;

/// The statuses a change set may have, as stored in `change_sets.status`.
pub const CHANGE_SET_STATUSES: &[&str] = &["reconciled", "escalated", "no-change", "ignored", "dry-run"];

/// One CloudTrail event as driftback saw it, and what it did with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    /// CloudTrail `eventID`; the key that makes recording idempotent.
    pub event_id: String,
    /// CloudTrail `eventTime` (stored to the microsecond).
    pub event_time: DateTime<Utc>,
    /// CloudTrail `eventSource`, e.g. `ec2.amazonaws.com`.
    pub source: String,
    /// CloudTrail `eventName`, e.g. `ModifyInstanceAttribute`.
    pub name: String,
    /// Who made the call (principal ARN or the best identity available).
    pub actor: String,
    /// Whether the event went on through the pipeline.
    pub disposition: Disposition,
    /// Why it was dropped; counted by [`Stats::events_dropped_by_reason`].
    pub drop_reason: Option<String>,
    /// The CloudTrail record as received.
    pub raw: serde_json::Value,
}

/// What the pipeline did with an event: stored as the text `kept`, `dropped` or `bad`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Disposition {
    /// Went on to grouping and reconciliation.
    Kept,
    /// Filtered out, with a reason (read-only, failed call, the IaC tool's own call, ...).
    Dropped,
    /// Had an event id but could not be used (malformed fields).
    Bad,
}

impl Disposition {
    /// The text stored in `events.disposition`.
    pub fn as_str(self) -> &'static str {
        match self {
            Disposition::Kept => "kept",
            Disposition::Dropped => "dropped",
            Disposition::Bad => "bad",
        }
    }
}

impl fmt::Display for Disposition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Disposition {
    type Err = StoreError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "kept" => Ok(Disposition::Kept),
            "dropped" => Ok(Disposition::Dropped),
            "bad" => Ok(Disposition::Bad),
            other => Err(StoreError::Data(format!("unknown disposition {other:?} (expected kept, dropped or bad)"))),
        }
    }
}

/// A change set (events on one resource by one actor session) and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangeSetRecord {
    /// Stable id chosen by the caller; recording the same id again updates the row.
    pub id: String,
    /// Cloud identifier of the resource (id, ARN or name), when known.
    pub resource_id: Option<String>,
    /// Terraform address, when located.
    pub address: Option<String>,
    /// Who made the change.
    pub actor: String,
    /// How: console, cli, sdk, service, ...
    pub via: String,
    /// Time of the first event (stored to the microsecond).
    pub first_event_time: DateTime<Utc>,
    /// Time of the last event (stored to the microsecond).
    pub last_event_time: DateTime<Utc>,
    /// CloudTrail event ids in the change set.
    pub event_ids: Vec<String>,
    /// One of [`CHANGE_SET_STATUSES`].
    pub status: String,
    /// The policy decision (reconcile, ignore_changes, revert, escalate); each recording with a
    /// decision appends a row to `audit_log`.
    pub decision: Option<String>,
    /// The policy rule that decided.
    pub rule: Option<String>,
    /// Why.
    pub rationale: Option<String>,
    /// Git branch of the pull request, when published.
    pub branch: Option<String>,
    /// Commit id, when committed.
    pub commit_id: Option<String>,
    /// The patch, as a unified diff.
    pub diff: Option<String>,
    /// Free-form notes for the operator.
    pub notes: Vec<String>,
}

/// Counts an operator looks at first.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Stats {
    /// Events recorded, whatever their disposition.
    pub events: u64,
    /// Dropped events per drop reason (`(none)` when no reason was given), most frequent first.
    pub events_dropped_by_reason: Vec<(String, u64)>,
    /// Rows in `bad_records` (input that could not be read as an event).
    pub bad_records: u64,
    /// Change sets per status, most frequent first.
    pub change_sets_by_status: Vec<(String, u64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disposition_text_and_serde_agree() {
        for d in [Disposition::Kept, Disposition::Dropped, Disposition::Bad] {
            assert_eq!(d.as_str().parse::<Disposition>().unwrap(), d);
            assert_eq!(serde_json::to_value(d).unwrap(), serde_json::Value::String(d.to_string()));
        }
        assert!("Kept".parse::<Disposition>().is_err());
    }
}
