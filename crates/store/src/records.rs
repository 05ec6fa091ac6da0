//! The records the store keeps: events, change sets, and the counts operators look at first.

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::StoreError;
pub use crate::embedder::EmbedderSpec;

/// The statuses a change set may have, as stored in `change_sets.status`.
pub const CHANGE_SET_STATUSES: &[&str] = &["reconciled", "escalated", "no-change", "ignored", "revert", "dry-run"];

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
    /// The CloudTrail record as received: its JSON text, as the scanner read it (Postgres keeps it
    /// as `jsonb` and gives back its own rendering of the same value).
    pub raw: String,
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
    /// Where it was decided, in a repository of many root modules: the stack, the Terraform
    /// workspace and the version of the state read (`None` for one root module and its state file).
    #[serde(default)]
    pub stack: Option<String>,
    #[serde(default)]
    pub workspace: Option<String>,
    #[serde(default)]
    pub state_version: Option<String>,
}

/// Counts an operator looks at first (`driftback kb stats`).
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
    /// Queued change sets (the daemon's work) per queue status, most frequent first.
    pub queue_by_status: Vec<(String, u64)>,
    /// Knowledge entries (past reconciliations the agent can search).
    pub knowledge_entries: u64,
    /// Knowledge entries with a learned recipe that is not demoted.
    pub learned_recipes: u64,
    /// Reconciliations recorded.
    pub reconciliations: u64,
    /// LLM prompt tokens over all reconciliations.
    pub prompt_tokens: u64,
    /// LLM completion tokens over all reconciliations.
    pub completion_tokens: u64,
    /// The embedder the stored vectors come from, once one has been used.
    pub embedder: Option<EmbedderSpec>,
}

/// Where a queued change set is in the daemon's work: stored as `pending`, `claimed`, `done`, `failed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueStatus {
    /// Still collecting events, or waiting for its quiet window to pass.
    Pending,
    /// A worker holds a lease on it and is processing it.
    Claimed,
    /// Processed.
    Done,
    /// Processing failed for good; the reason is kept.
    Failed,
}

impl QueueStatus {
    /// The text stored in the `status` column.
    pub fn as_str(self) -> &'static str {
        match self {
            QueueStatus::Pending => "pending",
            QueueStatus::Claimed => "claimed",
            QueueStatus::Done => "done",
            QueueStatus::Failed => "failed",
        }
    }
}

impl fmt::Display for QueueStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for QueueStatus {
    type Err = StoreError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "pending" => Ok(QueueStatus::Pending),
            "claimed" => Ok(QueueStatus::Claimed),
            "done" => Ok(QueueStatus::Done),
            "failed" => Ok(QueueStatus::Failed),
            other => Err(StoreError::Data(format!(
                "unknown queue status {other:?} (expected pending, claimed, done or failed)"
            ))),
        }
    }
}

/// A change set the daemon is still collecting or has yet to process, persisted so a restart loses
/// no quiet window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingChangeSet {
    /// Stable id chosen by the caller.
    pub id: String,
    /// What the events are grouped on: the resource (service and cloud identifier).
    pub resource_key: String,
    /// The actor session the events came from.
    pub actor_session: String,
    /// Time of the first event (stored to the microsecond).
    pub first_event_time: DateTime<Utc>,
    /// Time of the last event (stored to the microsecond).
    pub last_event_time: DateTime<Utc>,
    /// CloudTrail event ids, in the order first seen.
    pub event_ids: Vec<String>,
}

/// A queued change set with its processing state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueuedChangeSet {
    /// The change set.
    pub change_set: PendingChangeSet,
    /// Where it is.
    pub status: QueueStatus,
    /// The worker holding (or that last held) the lease.
    pub claimed_by: Option<String>,
    /// When the lease ends; after that another worker may claim it.
    pub lease_until: Option<DateTime<Utc>>,
    /// How many times it has been claimed.
    pub attempts: u32,
    /// Why it failed, when it did.
    pub failure: Option<String>,
    /// When the store first saved it (the store's clock, not event time).
    pub created_at: DateTime<Utc>,
}

/// A change set whose change another change set's delivered edit already made: one actor
/// session's edit of a value both read (a shared variable, a local) writes both, once. The
/// delivery that stands for its own is kept here, so a daemon restarted between the two change
/// sets does not write it again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoveredChangeSet {
    /// The change set whose change was made.
    pub change_set_id: String,
    /// The change set whose delivered edit made it.
    pub by_change_set_id: String,
    /// The branch and commit holding the edit.
    pub branch: String,
    pub commit_id: String,
    /// The rest of the delivery as the caller keeps it (commit message, diff, pull request), a
    /// JSON object.
    pub delivery: serde_json::Value,
}

/// Input that could not be read as an event, kept verbatim: the one bad-record type, defined with
/// the events it failed to be.
pub use driftback_events::BadRecord;
/// Where a pull request stands, as the publisher reports it: the one definition, kept as text.
pub use driftback_publish::PullRequestState;

/// One delivery (an SQS batch, a LookupEvents page) to record in one transaction with
/// [`Store::record_delivery`](crate::Store::record_delivery).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Delivery {
    /// Its events, kept and dropped; each id at most once.
    pub events: Vec<EventRecord>,
    /// Its input that is not an event.
    pub bad_records: Vec<BadRecord>,
    /// Every resource key a kept event of the delivery may group on. Only pending change sets of
    /// these keys are handed to the planner, and every change set it returns must have one of them
    /// (on Postgres they are also locked, so concurrent deliveries on one resource take turns).
    pub resource_keys: Vec<String>,
}

/// What recording a delivery did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeliveryReceipt {
    /// Ids of the delivery's events recorded for the first time by this call (kept and dropped),
    /// in delivery order. The others were already recorded: a redelivery, another replica.
    pub new_event_ids: Vec<String>,
    /// Ids of the pending change sets started or extended, in the order the planner gave them.
    pub change_sets: Vec<String>,
}

/// The caller's grouping rules, which [`Store::record_delivery`](crate::Store::record_delivery)
/// runs inside its transaction: where the delivery's new kept events go.
pub trait PendingPlanner: Send + Sync {
    /// Given the kept events this transaction recorded for the first time (`new_event_ids`) and
    /// the pending change sets of the delivery's resource keys (`open`, as stored now), the change
    /// sets to start or extend, each holding only new event ids (the store merges an existing one's
    /// ids and times in).
    fn plan(&self, new_event_ids: &HashSet<String>, open: Vec<PendingChangeSet>) -> Vec<PendingChangeSet>;

    /// Another id for `addition`, whose id belongs to a change set that is no longer pending
    /// (claimed, done or failed): the new events start a change set of their own. `attempt` counts
    /// from 1; each attempt must give a different id.
    fn another_id(&self, addition: &PendingChangeSet, attempt: u32) -> String;
}

/// How a worker ends its claim on a change set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// Processed: status `done`.
    Done,
    /// Failed for good, with the reason: status `failed`.
    Failed(String),
    /// Not processed (shutting down, a transient error): back to `pending`, due at once.
    Release,
}

impl ClaimOutcome {
    /// What ending a claim this way writes to the queue row: its status, its failure, and whether
    /// `claimed_by` keeps the worker (a released change set is nobody's).
    pub(crate) fn queue_update(&self) -> (QueueStatus, Option<&str>, bool) {
        match self {
            ClaimOutcome::Done => (QueueStatus::Done, None, true),
            ClaimOutcome::Failed(reason) => (QueueStatus::Failed, Some(reason.as_str()), true),
            ClaimOutcome::Release => (QueueStatus::Pending, None, false),
        }
    }
}

/// Who set one field of one resource, from one event: a row of the field ownership ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldChangeRecord {
    /// Terraform resource address, e.g. `aws_instance.web`.
    pub address: String,
    /// Attribute path, dotted, e.g. `tags.Owner` or `ingress[0].from_port`.
    pub attribute_path: String,
    /// Who set it.
    pub actor: String,
    /// The CloudTrail event that set it; with the address and path, the key that makes recording
    /// idempotent.
    pub event_id: String,
    /// When it was set (stored to the microsecond).
    pub event_time: DateTime<Utc>,
    /// The change set the event belongs to, when known.
    pub change_set_id: Option<String>,
}

/// The owner of a field by policy, as last set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldOwner {
    /// Terraform resource address.
    pub address: String,
    /// Attribute path, dotted.
    pub attribute_path: String,
    /// The owning actor (or actor class, e.g. `autoscaling`, `terraform`).
    pub owner: String,
    /// The policy rule that made it the owner.
    pub rule: Option<String>,
    /// When it was set.
    pub updated_at: DateTime<Utc>,
}

/// One policy decision for the audit log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionRecord {
    /// The change set decided on.
    pub change_set_id: String,
    /// reconcile, ignore_changes, revert, escalate, ...
    pub kind: String,
    /// The policy rule that decided.
    pub rule: Option<String>,
    /// What the decision was based on (a JSON object).
    pub evidence: serde_json::Value,
    /// Why, in words.
    pub rationale: Option<String>,
}

/// A decision as stored in the audit log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggedDecision {
    /// Row id, increasing in the order decisions were recorded.
    pub id: i64,
    /// The decision.
    pub decision: DecisionRecord,
    /// When it was recorded.
    pub recorded_at: DateTime<Utc>,
}

/// A knowledge entry to add or update: what was learned from one kind of change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewKnowledge {
    /// The normalised change signature; recording the same signature again updates its entry.
    pub signature: String,
    /// What the change was and how it was reconciled, in words.
    pub summary: String,
    /// The signature's embedding, from the embedder named when recording it.
    pub embedding: Vec<f32>,
    /// The patch that reconciled it, as a unified diff.
    pub patch_diff: Option<String>,
    /// The recipe learned from it, as TOML in the built-in catalog's format.
    pub recipe_toml: Option<String>,
    /// The change set it was learned from.
    pub change_set_id: Option<String>,
}

/// A stored knowledge entry (without its vector).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KnowledgeEntry {
    /// Row id, shown by `driftback kb show ID`.
    pub id: i64,
    /// The normalised change signature (unique).
    pub signature: String,
    /// What the change was and how it was reconciled.
    pub summary: String,
    /// The patch, as a unified diff.
    pub patch_diff: Option<String>,
    /// The learned recipe (TOML), if any.
    pub recipe_toml: Option<String>,
    /// The change set it was (last) learned from.
    pub change_set_id: Option<String>,
    /// How many times the entry or its recipe was used.
    pub uses: u64,
    /// How many of those uses led to a validated reconciliation.
    pub successes: u64,
    /// Why its recipe was demoted (no longer offered), if it was.
    pub demoted: Option<String>,
    /// When it was first recorded.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

/// A knowledge entry found by similarity search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimilarEntry {
    /// The entry.
    pub entry: KnowledgeEntry,
    /// Cosine similarity to the query, from -1 to 1 (1: same direction).
    pub similarity: f32,
}

/// The text of a knowledge entry that its embedding was computed from, for re-embedding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnowledgeText {
    /// Row id.
    pub id: i64,
    /// The normalised change signature.
    pub signature: String,
}

/// A pull request driftback opened for a resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRequestRecord {
    /// The pull request number in the repository; the key that makes recording idempotent.
    pub number: u64,
    /// The Terraform resource address it changes.
    pub address: String,
    /// Its head branch.
    pub branch: String,
    /// Its web address.
    pub url: String,
    /// Open, merged or closed.
    pub state: PullRequestState,
    /// The commit its branch points at.
    pub head_commit: String,
}

/// One reconciliation: what the pipeline (and the agent, if it ran) did with one change set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReconciliationRecord {
    /// The change set; recording the same change set again replaces its reconciliation.
    pub change_set_id: String,
    /// The agent's or recipe's trace, summarised.
    pub trace_summary: String,
    /// Who made the change.
    pub actor: String,
    /// availability, cost, security, compliance, performance, unknown.
    pub intent: String,
    /// incident, schedule, remediation, experiment, unknown.
    pub motivation: String,
    /// reconcile, ignore_changes, revert, escalate.
    pub decision: String,
    /// The patch, as a unified diff.
    pub patch_diff: Option<String>,
    /// The branch it was committed on.
    pub branch: Option<String>,
    /// The commit.
    pub commit_id: Option<String>,
    /// The pull request (its web address).
    pub pull_request: Option<String>,
    /// LLM prompt tokens spent (0 for a recipe).
    pub prompt_tokens: u64,
    /// LLM completion tokens spent.
    pub completion_tokens: u64,
    /// The LLM model, when one was used.
    pub model: Option<String>,
    /// Wall-clock time spent, in milliseconds.
    pub duration_ms: u64,
    /// How it ended: reconciled, escalated, failed, ...
    pub outcome: String,
}

/// A reconciliation as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredReconciliation {
    /// The reconciliation.
    pub reconciliation: ReconciliationRecord,
    /// When it was (last) recorded.
    pub recorded_at: DateTime<Utc>,
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

    #[test]
    fn queue_status_and_pull_request_state_text_round_trip() {
        for s in [QueueStatus::Pending, QueueStatus::Claimed, QueueStatus::Done, QueueStatus::Failed] {
            assert_eq!(s.as_str().parse::<QueueStatus>().unwrap(), s);
            assert_eq!(serde_json::to_value(s).unwrap(), serde_json::Value::String(s.to_string()));
        }
        for s in [PullRequestState::Open, PullRequestState::Merged, PullRequestState::Closed] {
            assert_eq!(s.as_str().parse::<PullRequestState>().unwrap(), s);
        }
        assert!("running".parse::<QueueStatus>().is_err());
        assert!("draft".parse::<PullRequestState>().is_err());
    }
}
