//! The records the store keeps: events, change sets, and the counts operators look at first.

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::StoreError;

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

/// Input that could not be read as an event, kept verbatim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BadRecord {
    /// Where it came from: a file and line, an SQS message id, ...
    pub location: String,
    /// Why it is not an event.
    pub reason: String,
    /// The text verbatim.
    pub raw: String,
}

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
pub struct FieldChange {
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

/// Which embedder produced the stored vectors. Vectors of different embedders are never mixed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EmbedderSpec {
    /// Stable name of the embedder and its model, e.g. `hashing-v1` or `openai:text-embedding-3-small`.
    pub name: String,
    /// Length of every vector.
    pub dimension: usize,
}

impl fmt::Display for EmbedderSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({} dimensions)", self.name, self.dimension)
    }
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

/// The state of a pull request, stored as `open`, `merged` or `closed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PullRequestState {
    /// Open for review.
    Open,
    /// Merged into the base branch.
    Merged,
    /// Closed without merging.
    Closed,
}

impl PullRequestState {
    /// The text stored in `pull_requests.state`.
    pub fn as_str(self) -> &'static str {
        match self {
            PullRequestState::Open => "open",
            PullRequestState::Merged => "merged",
            PullRequestState::Closed => "closed",
        }
    }
}

impl FromStr for PullRequestState {
    type Err = StoreError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "open" => Ok(PullRequestState::Open),
            "merged" => Ok(PullRequestState::Merged),
            "closed" => Ok(PullRequestState::Closed),
            other => {
                Err(StoreError::Data(format!("unknown pull request state {other:?} (expected open, merged or closed)")))
            }
        }
    }
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

/// `n` as the signed 64-bit integer both databases store; `what` names it when it does not fit.
pub(crate) fn to_i64(what: &str, n: u64) -> Result<i64, StoreError> {
    i64::try_from(n).map_err(|_| StoreError::Data(format!("{what} {n} is too large to store")))
}

/// The raw record of `e` as JSON text (SQLite keeps it so; Postgres casts it to jsonb).
pub(crate) fn raw_text(e: &EventRecord) -> Result<String, StoreError> {
    serde_json::to_string(&e.raw)
        .map_err(|err| StoreError::Data(format!("event {}: raw record is not serialisable: {err}", e.event_id)))
}

/// Refuses an empty (or blank) required text field, naming it.
pub(crate) fn check_nonempty(what: &str, value: &str) -> Result<(), StoreError> {
    if value.trim().is_empty() {
        return Err(StoreError::Data(format!("{what} is empty")));
    }
    Ok(())
}

pub(crate) fn check_events(events: &[EventRecord]) -> Result<(), StoreError> {
    for e in events {
        if e.event_id.trim().is_empty() {
            return Err(StoreError::Data(format!(
                "event {} {} at {} has an empty event_id; record it as a bad record instead",
                e.source, e.name, e.event_time
            )));
        }
        if e.event_id.chars().any(char::is_control) {
            return Err(StoreError::Data(format!(
                "event {} {} at {} has control characters in its event_id {:?}; record it as a bad record instead",
                e.source, e.name, e.event_time, e.event_id
            )));
        }
    }
    Ok(())
}

/// What the store keeps of text from the outside. Postgres cannot hold the NUL character in `text`
/// or `jsonb`, and event data is whatever a caller put in an API call: both backends keep U+FFFD in
/// its place, so a hostile value is recorded (and looks the same whichever the backend) instead of
/// failing the delivery that carries it.
pub(crate) fn without_nul(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\0') { text.replace('\0', "\u{fffd}").into() } else { text.into() }
}

fn json_has_nul(value: &serde_json::Value) -> bool {
    match value {
        serde_json::Value::String(s) => s.contains('\0'),
        serde_json::Value::Array(items) => items.iter().any(json_has_nul),
        serde_json::Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || json_has_nul(v)),
        _ => false,
    }
}

fn json_without_nul(value: &serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::String(s) => serde_json::Value::String(without_nul(s).into_owned()),
        serde_json::Value::Array(items) => items.iter().map(json_without_nul).collect(),
        serde_json::Value::Object(map) => {
            map.iter().map(|(k, v)| (without_nul(k).into_owned(), json_without_nul(v))).collect()
        }
        other => other.clone(),
    }
}

/// `events` as the store keeps them (see [`without_nul`]); borrowed when nothing needs replacing.
pub(crate) fn storable_events(events: &[EventRecord]) -> std::borrow::Cow<'_, [EventRecord]> {
    let text_has_nul = |e: &EventRecord| {
        [&e.source, &e.name, &e.actor].iter().any(|t| t.contains('\0'))
            || e.drop_reason.as_deref().is_some_and(|r| r.contains('\0'))
    };
    if !events.iter().any(|e| text_has_nul(e) || json_has_nul(&e.raw)) {
        return events.into();
    }
    let clean = |t: &str| without_nul(t).into_owned();
    events
        .iter()
        .map(|e| EventRecord {
            source: clean(&e.source),
            name: clean(&e.name),
            actor: clean(&e.actor),
            drop_reason: e.drop_reason.as_deref().map(clean),
            raw: json_without_nul(&e.raw),
            ..e.clone()
        })
        .collect::<Vec<_>>()
        .into()
}

/// `bad` as the store keeps it (see [`without_nul`]); borrowed when nothing needs replacing.
pub(crate) fn storable_bad_records(bad: &[BadRecord]) -> std::borrow::Cow<'_, [BadRecord]> {
    if !bad.iter().any(|b| [&b.location, &b.reason, &b.raw].iter().any(|t| t.contains('\0'))) {
        return bad.into();
    }
    let clean = |t: &str| without_nul(t).into_owned();
    bad.iter()
        .map(|b| BadRecord { location: clean(&b.location), reason: clean(&b.reason), raw: clean(&b.raw) })
        .collect::<Vec<_>>()
        .into()
}

pub(crate) fn check_change_set(cs: &ChangeSetRecord) -> Result<(), StoreError> {
    check_nonempty("change set id", &cs.id)?;
    if !CHANGE_SET_STATUSES.contains(&cs.status.as_str()) {
        return Err(StoreError::Data(format!(
            "change set {}: unknown status {:?} (expected one of {})",
            cs.id,
            cs.status,
            CHANGE_SET_STATUSES.join(", ")
        )));
    }
    Ok(())
}

pub(crate) fn check_pending(cs: &PendingChangeSet) -> Result<(), StoreError> {
    check_nonempty("pending change set id", &cs.id)?;
    if cs.first_event_time > cs.last_event_time {
        return Err(StoreError::Data(format!(
            "pending change set {}: first event time {} is after last event time {}",
            cs.id, cs.first_event_time, cs.last_event_time
        )));
    }
    if cs.event_ids.iter().any(|id| id.trim().is_empty()) {
        return Err(StoreError::Data(format!("pending change set {}: an event id is empty", cs.id)));
    }
    Ok(())
}

/// The planner's change sets must be valid, hold only events new in this delivery, and group on
/// one of the delivery's resource keys: nothing else may start or extend a change set.
fn check_additions(
    additions: &[PendingChangeSet],
    new_kept: &HashSet<String>,
    resource_keys: &HashSet<&str>,
) -> Result<(), StoreError> {
    for a in additions {
        check_pending(a)?;
        if a.event_ids.is_empty() {
            return Err(StoreError::Data(format!("pending change set {}: it has no events", a.id)));
        }
        if let Some(id) = a.event_ids.iter().find(|id| !new_kept.contains(*id)) {
            return Err(StoreError::Data(format!(
                "pending change set {}: event {id} is not a kept event recorded for the first time by this delivery",
                a.id
            )));
        }
        if !resource_keys.contains(a.resource_key.as_str()) {
            return Err(StoreError::Data(format!(
                "pending change set {}: resource key {:?} is not among the delivery's resource keys",
                a.id, a.resource_key
            )));
        }
    }
    Ok(())
}

/// How many other ids [`PendingPlanner::another_id`] is asked for before giving up.
const MAX_ID_ATTEMPTS: u32 = 100;

/// The change sets `planner` forms from the kept events a delivery recorded for the first time
/// (`new_kept`) and the `open` pending ones on its resource keys, checked.
pub(crate) fn plan_additions(
    planner: &dyn PendingPlanner,
    new_kept: &HashSet<String>,
    open: Vec<PendingChangeSet>,
    resource_keys: &HashSet<&str>,
) -> Result<Vec<PendingChangeSet>, StoreError> {
    let additions = planner.plan(new_kept, open);
    check_additions(&additions, new_kept, resource_keys)?;
    Ok(additions)
}

/// One planned change set on its way into the queue: first under the planner's id, then, each
/// time that id turns out to be no longer pending, under [`PendingPlanner::another_id`].
pub(crate) struct Placement<'a> {
    planner: &'a dyn PendingPlanner,
    addition: &'a PendingChangeSet,
    candidate: PendingChangeSet,
    attempt: u32,
}

impl<'a> Placement<'a> {
    pub(crate) fn new(planner: &'a dyn PendingPlanner, addition: &'a PendingChangeSet) -> Placement<'a> {
        Placement { planner, addition, candidate: addition.clone(), attempt: 0 }
    }

    /// The change set to save now.
    pub(crate) fn candidate(&self) -> &PendingChangeSet {
        &self.candidate
    }

    /// Moves on to another id, after the candidate's was found no longer pending; refused after
    /// [`MAX_ID_ATTEMPTS`].
    pub(crate) fn retry(&mut self) -> Result<(), StoreError> {
        self.attempt += 1;
        if self.attempt > MAX_ID_ATTEMPTS {
            return Err(no_free_id(self.addition));
        }
        self.candidate.id = self.planner.another_id(self.addition, self.attempt);
        check_pending(&self.candidate)
    }

    /// The id it was saved under.
    pub(crate) fn into_id(self) -> String {
        self.candidate.id
    }
}

fn no_free_id(a: &PendingChangeSet) -> StoreError {
    StoreError::Data(format!(
        "pending change set {}: no free id after {MAX_ID_ATTEMPTS} attempts (another_id repeats itself?)",
        a.id
    ))
}

pub(crate) fn check_field_change(c: &FieldChange) -> Result<(), StoreError> {
    check_nonempty("field change address", &c.address)?;
    check_nonempty("field change attribute_path", &c.attribute_path)?;
    check_nonempty("field change event_id", &c.event_id)
}

/// A vector must have the embedder's dimension and finite components.
pub(crate) fn check_vector(embedder: &EmbedderSpec, v: &[f32]) -> Result<(), StoreError> {
    check_nonempty("embedder name", &embedder.name)?;
    if embedder.dimension == 0 {
        return Err(StoreError::Data(format!("embedder {} has dimension 0", embedder.name)));
    }
    if v.len() != embedder.dimension {
        return Err(StoreError::Data(format!(
            "a vector of {} has {} components, not {}",
            embedder.name,
            v.len(),
            embedder.dimension
        )));
    }
    if v.iter().any(|x| !x.is_finite()) {
        return Err(StoreError::Data(format!(
            "a vector of {} has a component that is not a finite number",
            embedder.name
        )));
    }
    Ok(())
}

/// Merges `new` into `stored`: event ids united (stored order, then new ones), times widened.
pub(crate) fn merge_pending(stored: &PendingChangeSet, new: &PendingChangeSet) -> PendingChangeSet {
    let mut event_ids = stored.event_ids.clone();
    for id in &new.event_ids {
        if !event_ids.contains(id) {
            event_ids.push(id.clone());
        }
    }
    PendingChangeSet {
        id: stored.id.clone(),
        resource_key: new.resource_key.clone(),
        actor_session: new.actor_session.clone(),
        first_event_time: stored.first_event_time.min(new.first_event_time),
        last_event_time: stored.last_event_time.max(new.last_event_time),
        event_ids,
    }
}

/// `vectors` must name every id in `ids` exactly once (a re-embedding leaves no entry behind).
pub(crate) fn check_covers(ids: &[i64], vectors: &[(i64, Vec<f32>)]) -> Result<(), StoreError> {
    let mut given: Vec<i64> = vectors.iter().map(|(id, _)| *id).collect();
    given.sort_unstable();
    if given != ids {
        let missing = ids.iter().filter(|id| given.binary_search(id).is_err()).count();
        return Err(StoreError::Data(format!(
            "re-embedding must give one vector for each of the {} knowledge entries; {} given, {missing} entries \
             missing (entries were added meanwhile, or an id is unknown or repeated): run it again",
            ids.len(),
            vectors.len()
        )));
    }
    Ok(())
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

    #[test]
    fn merging_a_pending_change_set_unites_ids_and_widens_times() {
        use chrono::TimeZone;
        let t = |s| Utc.with_ymd_and_hms(2024, 5, 1, 12, 0, s).unwrap();
        let stored = PendingChangeSet {
            id: "cs".into(),
            resource_key: "ec2:i-1".into(),
            actor_session: "alice".into(),
            first_event_time: t(10),
            last_event_time: t(20),
            event_ids: vec!["a".into(), "b".into()],
        };
        let new = PendingChangeSet {
            first_event_time: t(5),
            last_event_time: t(15),
            event_ids: vec!["c".into(), "a".into()],
            ..stored.clone()
        };
        let merged = merge_pending(&stored, &new);
        assert_eq!(merged.event_ids, ["a", "b", "c"]);
        assert_eq!((merged.first_event_time, merged.last_event_time), (t(5), t(20)));
    }

    #[test]
    fn vectors_must_match_the_embedder() {
        let spec = EmbedderSpec { name: "hashing-v1".into(), dimension: 3 };
        assert!(check_vector(&spec, &[0.1, 0.2, 0.3]).is_ok());
        let short = check_vector(&spec, &[0.1, 0.2]).unwrap_err().to_string();
        assert!(short.contains("2 components, not 3"), "{short}");
        assert!(check_vector(&spec, &[0.1, f32::NAN, 0.3]).is_err());
    }
}
