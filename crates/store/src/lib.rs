//! driftback's knowledge base: every event seen, every change set, decision, reconciliation and
//! pull request, the daemon's work queue, the field ownership ledger, and what was learned.
//!
//! One [`Store`] opens from a URL: `sqlite:PATH` for the embedded default (a file a user can open
//! with `sqlite3`), `postgres://...` for production (Postgres with pgvector, inspectable with
//! `psql`). Both keep the same records with the same semantics; the schemas live in
//! `migrations/sqlite/` and `migrations/postgres/` at the workspace root, are compiled into the
//! binary, and are applied when the store is opened (see [`migrate`]).
//!
//! Every write is idempotent on its natural key (event id, change set id, pull request number,
//! knowledge signature, (address, attribute path, event id)), so a caller that lost its connection
//! mid-write simply writes again.
//!
//! Each operation is written once (`ops.rs`): its SQL, in Postgres's dialect with `$N` parameters,
//! and what is done with the rows. `sql.rs` is the seam with the two databases: arguments each
//! backend binds its own way, SQLite's reading of the few Postgres constructs used (`now()`,
//! `= ANY($N)`, row locks), write transactions (`BEGIN IMMEDIATE` on SQLite; Postgres's row and
//! advisory locks), and what only a backend does (bulk inserts, the vector column and similarity
//! search), in `postgres.rs` and `sqlite.rs`. Rows are decoded into records in `decode.rs`.
//!
//! On SQLite, times are stored as UTC RFC 3339 text with exactly six fractional digits
//! (`2024-05-01T12:00:00.000000Z`), so they sort as text and SQLite's date functions read them;
//! on Postgres they are `timestamptz`. Precision below a microsecond is dropped on both.

#[macro_use]
mod columns;
mod check;
mod decode;
mod embedder;
mod error;
pub mod migrate;
mod ops;
mod options;
mod pending;
mod postgres;
mod records;
mod sql;
mod sqlite;
mod time;
mod url;

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};

pub use error::StoreError;
pub use options::OpenOptions;
pub use records::{
    BadRecord, CHANGE_SET_STATUSES, ChangeSetRecord, ClaimOutcome, CoveredChangeSet, DecisionRecord, Delivery,
    DeliveryReceipt, Disposition, EmbedderSpec, EventRecord, FieldChangeRecord, FieldOwner, KnowledgeEntry,
    KnowledgeText, LoggedDecision, NewKnowledge, PendingChangeSet, PendingPlanner, PullRequestRecord, PullRequestState,
    QueueStatus, QueuedChangeSet, ReconciliationRecord, SimilarEntry, Stats, StoredReconciliation,
};
pub use url::redact_url;

use postgres::PgStore;
use sqlite::SqliteStore;

/// The knowledge base, on SQLite or Postgres. Cheap to clone: clones share one connection pool.
#[derive(Debug, Clone)]
pub struct Store {
    backend: Backend,
}

#[derive(Debug, Clone)]
enum Backend {
    Sqlite(SqliteStore),
    Postgres(PgStore),
}

/// Runs the operation (`ops.rs`, written once) on whichever backend the store has.
macro_rules! dispatch {
    ($self:ident . $op:ident ( $($arg:expr),* )) => {
        match &$self.backend {
            Backend::Sqlite(s) => ops::$op(s $(, $arg)*).await,
            Backend::Postgres(p) => ops::$op(p $(, $arg)*).await,
        }
    };
}

impl Store {
    /// Opens the store at `url` (`sqlite:PATH` or `postgres://...`), retrying a database that does
    /// not answer yet as `options` say, and applies the migrations it lacks.
    pub async fn open(url: &str, options: &OpenOptions) -> Result<Store, StoreError> {
        match url::parse(url)? {
            url::Target::Sqlite(path) => Store::open_sqlite(&path).await,
            url::Target::Postgres(url) => Ok(Store { backend: Backend::Postgres(PgStore::open(&url, options).await?) }),
        }
    }

    /// Opens the SQLite knowledge base at `path`, creating its parent directories and the file if
    /// needed, in WAL mode with full fsync on commit, and applies the migrations it lacks.
    pub async fn open_sqlite(path: &Path) -> Result<Store, StoreError> {
        Ok(Store { backend: Backend::Sqlite(SqliteStore::open(path).await?) })
    }

    /// `sqlite` or `postgres`.
    pub fn backend_name(&self) -> &'static str {
        match &self.backend {
            Backend::Sqlite(_) => "sqlite",
            Backend::Postgres(_) => "postgres",
        }
    }

    /// Closes every connection; later calls fail. Dropping the store also closes it, less promptly.
    pub async fn close(&self) {
        dispatch!(self.close())
    }

    // ---- events -------------------------------------------------------------------------------

    /// Which of `ids` are already recorded in `events`, whatever their disposition.
    pub async fn seen_event_ids(&self, ids: &[String]) -> Result<HashSet<String>, StoreError> {
        dispatch!(self.seen_event_ids(ids))
    }

    /// The recorded events among `ids` (raw records included), in no particular order; ids not
    /// recorded are left out. The daemon rebuilds a claimed change set's events from them.
    pub async fn events_by_id(&self, ids: &[String]) -> Result<Vec<EventRecord>, StoreError> {
        dispatch!(self.events_by_id(ids))
    }

    /// Records events in one transaction; an event whose id is already recorded is left as it was.
    /// Returns how many were new. A batch with an empty event id is refused whole.
    pub async fn record_events(&self, events: &[EventRecord]) -> Result<usize, StoreError> {
        check::check_events(events)?;
        let events = &*check::storable_events(events);
        dispatch!(self.record_events(events))
    }

    /// Records one delivery in ONE transaction: its events (each once by id; an id already
    /// recorded is left as it was), its bad records, and the pending change sets `planner` forms
    /// from the kept events that this transaction recorded for the first time. Either all of it is
    /// stored or none of it, so a crash at any point leaves no change set whose events are missing,
    /// and a redelivery (or another replica recording the same delivery at the same time) finds its
    /// events recorded and starts or extends no change set. A change set already claimed is never
    /// extended: the planner only sees pending ones, and an id it returns that is no longer pending
    /// is replaced by [`PendingPlanner::another_id`].
    ///
    /// On Postgres, concurrent deliveries sharing a resource key take turns (a transaction-level
    /// advisory lock per key), so two replicas never start two change sets for one burst.
    pub async fn record_delivery(
        &self,
        delivery: &Delivery,
        planner: &dyn PendingPlanner,
    ) -> Result<DeliveryReceipt, StoreError> {
        check::check_events(&delivery.events)?;
        if let Some(key) = delivery.resource_keys.iter().find(|k| k.trim().is_empty()) {
            return Err(StoreError::Data(format!("delivery resource key {key:?} is empty")));
        }
        let storable =
            match (check::storable_events(&delivery.events), check::storable_bad_records(&delivery.bad_records)) {
                (std::borrow::Cow::Borrowed(_), std::borrow::Cow::Borrowed(_)) => None,
                (events, bad) => Some(Delivery {
                    events: events.into_owned(),
                    bad_records: bad.into_owned(),
                    resource_keys: delivery.resource_keys.clone(),
                }),
            };
        let delivery = storable.as_ref().unwrap_or(delivery);
        dispatch!(self.record_delivery(delivery, planner))
    }

    /// Keeps input that could not be read as an event: where it was, why, and the text verbatim.
    /// NUL characters are kept as U+FFFD (Postgres cannot hold them), in events' text too.
    pub async fn record_bad_record(&self, location: &str, reason: &str, raw: &str) -> Result<(), StoreError> {
        let (location, reason, raw) =
            (&*check::without_nul(location), &*check::without_nul(reason), &*check::without_nul(raw));
        dispatch!(self.record_bad_record(location, reason, raw))
    }

    // ---- change sets and the audit log --------------------------------------------------------

    /// Inserts or updates the change set `cs.id` (recording the same record again changes nothing),
    /// and, when `cs.decision` is set, appends one row to the audit log per call, in one transaction.
    pub async fn record_change_set(&self, cs: &ChangeSetRecord) -> Result<(), StoreError> {
        check::check_change_set(cs)?;
        dispatch!(self.record_change_set(cs))
    }

    /// The change set `id`, if recorded.
    pub async fn change_set(&self, id: &str) -> Result<Option<ChangeSetRecord>, StoreError> {
        dispatch!(self.change_set(id))
    }

    /// Escalated and revert change sets nobody has answered yet, and split ones (reconciled, with
    /// an `escalate` or `revert` decision in the audit log: part of them waits), oldest first (at most `max`):
    /// neither resolved by a later reconciled change set on the same address nor answered by a
    /// person (an audit log decision `person-...`) nor marked resolved (an audit log decision
    /// `resolved`: its drift went back, or a later change covered its fields).
    pub async fn waiting_for_a_person(&self, max: usize) -> Result<Vec<ChangeSetRecord>, StoreError> {
        dispatch!(self.waiting_for_a_person(max))
    }

    /// Appends a policy decision to the audit log and returns its row id. Recording the same
    /// decision for the same change set twice in a row (a retry) stores it once and returns the
    /// first row's id.
    pub async fn record_decision(&self, decision: &DecisionRecord) -> Result<i64, StoreError> {
        check::check_nonempty("decision change_set_id", &decision.change_set_id)?;
        check::check_nonempty("decision kind", &decision.kind)?;
        dispatch!(self.record_decision(decision))
    }

    /// The audit log of one change set, oldest first.
    pub async fn decisions(&self, change_set_id: &str) -> Result<Vec<LoggedDecision>, StoreError> {
        dispatch!(self.decisions(change_set_id))
    }

    // ---- the daemon's work queue --------------------------------------------------------------

    /// Saves a change set that is still collecting events: inserts it, or merges it into the stored
    /// one (event ids united in order, first and last event times widened). Returns `false`, and
    /// changes nothing, when that id is no longer pending (claimed, done or failed): the caller then
    /// starts a new change set for the new events.
    ///
    /// It does not record the events: the daemon uses [`Store::record_delivery`], which records
    /// both at once. This is for tools and tests (e.g. the data an older driftback left behind).
    pub async fn save_pending(&self, cs: &PendingChangeSet) -> Result<bool, StoreError> {
        check::check_pending(cs)?;
        dispatch!(self.save_pending(cs))
    }

    /// Change sets not yet done or failed (pending or claimed), oldest first: what a restarted
    /// daemon resumes.
    pub async fn unfinished_change_sets(&self) -> Result<Vec<QueuedChangeSet>, StoreError> {
        dispatch!(self.unfinished_change_sets())
    }

    /// The queued change set `id`, whatever its status.
    pub async fn queued_change_set(&self, id: &str) -> Result<Option<QueuedChangeSet>, StoreError> {
        dispatch!(self.queued_change_set(id))
    }

    /// Atomically claims up to `limit` change sets for `owner` until `now + lease`: pending ones
    /// whose last event is at or before `quiet_before` (their quiet window has passed), and claimed
    /// ones whose lease ended before `now` (their worker died). Oldest first. Two workers sharing a
    /// store never both claim one change set (Postgres: `FOR UPDATE SKIP LOCKED`).
    pub async fn claim_due_change_sets(
        &self,
        owner: &str,
        quiet_before: DateTime<Utc>,
        now: DateTime<Utc>,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<QueuedChangeSet>, StoreError> {
        check::check_nonempty("claim owner", owner)?;
        let lease_until = now + chrono::Duration::from_std(lease).map_err(|e| StoreError::Data(e.to_string()))?;
        dispatch!(self.claim_due_change_sets(owner, quiet_before, now, lease_until, limit))
    }

    /// Extends `owner`'s lease on `id` to `lease_until`. Returns `false` when `owner` no longer
    /// holds it (the lease ended and another worker claimed it): stop working on it.
    pub async fn renew_claim(&self, id: &str, owner: &str, lease_until: DateTime<Utc>) -> Result<bool, StoreError> {
        dispatch!(self.renew_claim(id, owner, lease_until))
    }

    /// Ends `owner`'s claim on `id`. Returns `false`, changing nothing, when `owner` no longer holds
    /// it.
    pub async fn finish_claim(&self, id: &str, owner: &str, outcome: &ClaimOutcome) -> Result<bool, StoreError> {
        dispatch!(self.finish_claim(id, owner, outcome))
    }

    /// The queued change sets (whatever their status) of the actor session `actor_session` whose
    /// events overlap `from..=to` (last event at or after `from`, first at or before `to`), by
    /// first event time, at most `max`: where the daemon finds a change set's siblings, the same
    /// session's change sets on other resources.
    pub async fn session_change_sets(
        &self,
        actor_session: &str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        max: usize,
    ) -> Result<Vec<QueuedChangeSet>, StoreError> {
        dispatch!(self.session_change_sets(actor_session, from, to, max))
    }

    /// Records, in one transaction, that each change set of `covered` had its change made by
    /// another one's delivered edit, replacing what an earlier recording said of the same change
    /// set.
    pub async fn record_covered(&self, covered: &[CoveredChangeSet]) -> Result<(), StoreError> {
        for c in covered {
            check::check_nonempty("covered change set id", &c.change_set_id)?;
            check::check_nonempty("covered change set's covering change set id", &c.by_change_set_id)?;
            check::check_nonempty("covered change set branch", &c.branch)?;
            check::check_nonempty("covered change set commit id", &c.commit_id)?;
            if !c.delivery.is_object() {
                return Err(StoreError::Data(format!(
                    "covered change set {}: the delivery is not a JSON object",
                    c.change_set_id
                )));
            }
        }
        dispatch!(self.record_covered(covered))
    }

    /// What [`Store::record_covered`] last recorded of `change_set_id`: the delivery that made its
    /// change, if another change set's did.
    pub async fn covered_change_set(&self, change_set_id: &str) -> Result<Option<CoveredChangeSet>, StoreError> {
        dispatch!(self.covered_change_set(change_set_id))
    }

    // ---- source checkpoints -------------------------------------------------------------------

    /// The checkpoint stored under `key` (e.g. the last CloudTrail backfill position).
    pub async fn checkpoint(&self, key: &str) -> Result<Option<String>, StoreError> {
        dispatch!(self.checkpoint(key))
    }

    /// Stores `value` under `key`, replacing the previous one.
    pub async fn set_checkpoint(&self, key: &str, value: &str) -> Result<(), StoreError> {
        check::check_nonempty("checkpoint key", key)?;
        dispatch!(self.set_checkpoint(key, value))
    }

    // ---- field ownership ----------------------------------------------------------------------

    /// Records who set which fields. A change already recorded (same address, path and event id)
    /// is left as it was. Returns how many were new.
    pub async fn record_field_changes(&self, changes: &[FieldChangeRecord]) -> Result<usize, StoreError> {
        for c in changes {
            check::check_field_change(c)?;
        }
        let changes: Vec<FieldChangeRecord> = changes
            .iter()
            .map(|c| FieldChangeRecord {
                address: check::index_key(&c.address).into_owned(),
                attribute_path: check::index_key(&c.attribute_path).into_owned(),
                ..c.clone()
            })
            .collect();
        let changes = changes.as_slice();
        dispatch!(self.record_field_changes(changes))
    }

    /// The latest `limit` changes of one field at or after `since`, oldest first (for oscillation
    /// detection: bounded, so a field changed thousands of times costs no more than `limit`).
    pub async fn field_history(
        &self,
        address: &str,
        attribute_path: &str,
        since: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<FieldChangeRecord>, StoreError> {
        let (address, attribute_path) = (&*check::index_key(address), &*check::index_key(attribute_path));
        dispatch!(self.field_history(address, attribute_path, since, limit))
    }

    /// Sets the owner of a field by policy.
    pub async fn set_field_owner(
        &self,
        address: &str,
        attribute_path: &str,
        owner: &str,
        rule: Option<&str>,
    ) -> Result<(), StoreError> {
        check::check_nonempty("field owner address", address)?;
        check::check_nonempty("field owner attribute_path", attribute_path)?;
        check::check_nonempty("field owner", owner)?;
        let (address, attribute_path) = (&*check::index_key(address), &*check::index_key(attribute_path));
        dispatch!(self.set_field_owner(address, attribute_path, owner, rule))
    }

    /// The owner of a field by policy, if one was set.
    pub async fn field_owner(&self, address: &str, attribute_path: &str) -> Result<Option<FieldOwner>, StoreError> {
        let (address, attribute_path) = (&*check::index_key(address), &*check::index_key(attribute_path));
        dispatch!(self.field_owner(address, attribute_path))
    }

    // ---- knowledge ----------------------------------------------------------------------------

    /// The embedder the stored vectors come from, once one has been used.
    pub async fn embedder(&self) -> Result<Option<EmbedderSpec>, StoreError> {
        dispatch!(self.embedder())
    }

    /// Adds the knowledge entry for `entry.signature`, or updates it (summary, vector, patch; the
    /// recipe when one is given; a new recipe clears a demotion). Use and success counts are kept.
    /// The first vector stored fixes the embedder; a vector from another one is refused with
    /// [`StoreError::EmbedderMismatch`]. Returns the entry's id.
    pub async fn upsert_knowledge(&self, embedder: &EmbedderSpec, entry: &NewKnowledge) -> Result<i64, StoreError> {
        check::check_nonempty("knowledge signature", &entry.signature)?;
        check::check_vector(embedder, &entry.embedding)?;
        let bounded;
        let entry = match check::index_key(&entry.signature) {
            std::borrow::Cow::Borrowed(_) => entry,
            std::borrow::Cow::Owned(signature) => {
                bounded = NewKnowledge { signature, ..entry.clone() };
                &bounded
            }
        };
        dispatch!(self.upsert_knowledge(embedder, entry))
    }

    /// The knowledge entry `id`.
    pub async fn knowledge_entry(&self, id: i64) -> Result<Option<KnowledgeEntry>, StoreError> {
        dispatch!(self.knowledge_entry(id))
    }

    /// The `k` entries most similar to `query` (cosine), most similar first. Exact on SQLite;
    /// approximate (HNSW) on Postgres. Refused when `embedder` is not the one the vectors come from.
    pub async fn similar_knowledge(
        &self,
        embedder: &EmbedderSpec,
        query: &[f32],
        k: usize,
    ) -> Result<Vec<SimilarEntry>, StoreError> {
        check::check_vector(embedder, query)?;
        dispatch!(self.similar_knowledge(embedder, query, k))
    }

    /// Entries with a learned recipe that is not demoted, most successful first.
    pub async fn learned_recipes(&self) -> Result<Vec<KnowledgeEntry>, StoreError> {
        dispatch!(self.learned_recipes())
    }

    /// Counts one use of entry `id`. Returns `false` when there is no such entry.
    pub async fn bump_knowledge_use(&self, id: i64) -> Result<bool, StoreError> {
        dispatch!(self.bump_knowledge_use(id))
    }

    /// Counts one successful use of entry `id`. Returns `false` when there is no such entry.
    pub async fn bump_knowledge_success(&self, id: i64) -> Result<bool, StoreError> {
        dispatch!(self.bump_knowledge_success(id))
    }

    /// Demotes entry `id`'s recipe (it is no longer listed by [`Store::learned_recipes`]), saying
    /// why. Returns `false` when there is no such entry.
    pub async fn demote_knowledge(&self, id: i64, reason: &str) -> Result<bool, StoreError> {
        check::check_nonempty("demotion reason", reason)?;
        dispatch!(self.demote_knowledge(id, reason))
    }

    /// Every entry's id and signature, to compute new vectors for [`Store::replace_embeddings`].
    pub async fn knowledge_texts(&self) -> Result<Vec<KnowledgeText>, StoreError> {
        dispatch!(self.knowledge_texts())
    }

    /// Replaces every entry's vector with one from `embedder`, in one transaction, and records
    /// `embedder` as the one the vectors come from. `vectors` must cover every entry exactly once.
    pub async fn replace_embeddings(
        &self,
        embedder: &EmbedderSpec,
        vectors: &[(i64, Vec<f32>)],
    ) -> Result<(), StoreError> {
        for (_, v) in vectors {
            check::check_vector(embedder, v)?;
        }
        dispatch!(self.replace_embeddings(embedder, vectors))
    }

    // ---- pull requests ------------------------------------------------------------------------

    /// Inserts or updates the pull request `pr.number`.
    pub async fn record_pull_request(&self, pr: &PullRequestRecord) -> Result<(), StoreError> {
        check::check_nonempty("pull request address", &pr.address)?;
        check::check_nonempty("pull request branch", &pr.branch)?;
        dispatch!(self.record_pull_request(pr))
    }

    /// The open pull request for `address`, the most recent if several are open.
    pub async fn open_pull_request(&self, address: &str) -> Result<Option<PullRequestRecord>, StoreError> {
        dispatch!(self.open_pull_request(address))
    }

    /// Sets the state of pull request `number`. Returns `false` when it is not recorded.
    pub async fn set_pull_request_state(&self, number: u64, state: PullRequestState) -> Result<bool, StoreError> {
        dispatch!(self.set_pull_request_state(number, state))
    }

    // ---- reconciliations ----------------------------------------------------------------------

    /// Records the reconciliation of `r.change_set_id`, replacing an earlier one of the same change
    /// set.
    pub async fn record_reconciliation(&self, r: &ReconciliationRecord) -> Result<(), StoreError> {
        check::check_nonempty("reconciliation change_set_id", &r.change_set_id)?;
        dispatch!(self.record_reconciliation(r))
    }

    /// The reconciliation of `change_set_id`, if recorded.
    pub async fn reconciliation(&self, change_set_id: &str) -> Result<Option<StoredReconciliation>, StoreError> {
        dispatch!(self.reconciliation(change_set_id))
    }

    /// The `limit` most recently recorded reconciliations, newest first.
    pub async fn recent_reconciliations(&self, limit: usize) -> Result<Vec<StoredReconciliation>, StoreError> {
        dispatch!(self.recent_reconciliations(limit))
    }

    // ---- counts -------------------------------------------------------------------------------

    /// Counts of events, dropped events per reason, bad records, change sets per status, the work
    /// queue, knowledge, reconciliations and tokens.
    pub async fn stats(&self) -> Result<Stats, StoreError> {
        dispatch!(self.stats())
    }
}
