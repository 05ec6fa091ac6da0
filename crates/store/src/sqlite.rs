//! The SQLite store: the embedded default knowledge base, one file a user can open with `sqlite3`.

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::query::Query;
use sqlx::sqlite::{
    SqliteArguments, SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow, SqliteSynchronous,
};
use sqlx::{QueryBuilder, Sqlite, SqliteConnection, SqlitePool};

use crate::decode::{self, count};
use crate::records::{
    ChangeSetRecord, ClaimOutcome, DecisionRecord, Delivery, DeliveryReceipt, Disposition, EmbedderSpec, EventRecord,
    FieldChange, FieldOwner, KnowledgeEntry, KnowledgeText, LoggedDecision, NewKnowledge, PendingChangeSet,
    PendingPlanner, PullRequestRecord, PullRequestState, QueueStatus, QueuedChangeSet, ReconciliationRecord,
    SimilarEntry, Stats, StoredReconciliation,
};
use crate::{StoreError, check, migrate, pending, time};

/// How many ids go into one `IN (...)` list (SQLite limits bound parameters per statement).
const IN_CHUNK: usize = 500;

/// How long a statement waits for another writer before failing with a transient error.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// `UPDATE change_set_queue SET <set>` of the change set `id = ?` while `claimed_by = ?` holds its
/// claim; see [`SqliteStore::update_held_claim`].
macro_rules! update_held_claim {
    ($set:literal) => {
        concat!("UPDATE change_set_queue SET ", $set, " WHERE id = ? AND status = 'claimed' AND claimed_by = ?")
    };
}

/// Drop reason reported by `stats` for dropped events recorded without one.
pub(crate) const NO_REASON: &str = "(none)";

/// The SQLite knowledge base. Cheap to clone: clones share one connection pool.
#[derive(Debug, Clone)]
pub(crate) struct SqliteStore {
    pool: SqlitePool,
}

impl SqliteStore {
    /// Opens the file at `path`, creating its parent directories and the file if needed, in WAL
    /// mode with full fsync on commit, and applies the migrations it lacks.
    pub(crate) async fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        let open_err = |source| StoreError::Open { target: path.display().to_string(), source };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| open_err(sqlx::Error::Io(e)))?;
        }
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // A message leaves the queue only once its events are durably stored: fsync each commit.
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let pool = SqlitePoolOptions::new().max_connections(4).connect_with(options).await.map_err(open_err)?;
        let mut conn = pool.acquire().await.map_err(open_err)?;
        let applied = migrate::apply(&mut conn).await;
        drop(conn);
        if let Err(e) = applied {
            pool.close().await;
            return Err(e);
        }
        Ok(SqliteStore { pool })
    }

    /// Closes every connection; later calls fail. Dropping the store also closes it, less promptly.
    pub(crate) async fn close(&self) {
        self.pool.close().await;
    }

    /// The first row `sql` returns with `keys` bound in order, decoded; `None` when it returns none.
    async fn find<T>(
        &self,
        sql: &'static str,
        keys: &[&str],
        decode: fn(&SqliteRow) -> Result<T, StoreError>,
    ) -> Result<Option<T>, StoreError> {
        let mut query = sqlx::query(sql);
        for key in keys {
            query = query.bind(key.to_string());
        }
        query.fetch_optional(&self.pool).await?.as_ref().map(decode).transpose()
    }

    /// Which of `ids` are already recorded in `events`, whatever their disposition.
    pub(crate) async fn seen_event_ids(&self, ids: &[String]) -> Result<HashSet<String>, StoreError> {
        let mut seen = HashSet::new();
        for chunk in ids.chunks(IN_CHUNK) {
            let mut query = in_list("SELECT event_id FROM events WHERE event_id IN (", chunk, ")");
            let found: Vec<String> = query.build_query_scalar().fetch_all(&self.pool).await?;
            seen.extend(found);
        }
        Ok(seen)
    }

    /// The recorded events among `ids`, in no particular order.
    pub(crate) async fn events_by_id(&self, ids: &[String]) -> Result<Vec<EventRecord>, StoreError> {
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(IN_CHUNK) {
            let mut query = in_list(
                "SELECT event_id, event_time, source, name, actor, disposition, drop_reason, raw FROM events \
                 WHERE event_id IN (",
                chunk,
                ")",
            );
            for row in query.build().fetch_all(&self.pool).await? {
                out.push(decode::event(&row)?);
            }
        }
        Ok(out)
    }

    /// Records events in one transaction; an event whose id is already recorded is left as it was.
    /// Returns how many were new.
    pub(crate) async fn record_events(&self, events: &[EventRecord]) -> Result<usize, StoreError> {
        if events.is_empty() {
            return Ok(0);
        }
        let mut rows = Vec::with_capacity(events.len());
        for e in events {
            rows.push((e, check::raw_text(e)?));
        }
        let recorded_at = time::now_text();
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let mut new = 0;
        for (e, raw) in rows {
            new += usize::from(insert_event(&mut tx, e, raw, &recorded_at).await?);
        }
        tx.commit().await?;
        Ok(new)
    }

    /// Keeps input that could not be read as an event: where it was, why, and the text verbatim.
    pub(crate) async fn record_bad_record(&self, location: &str, reason: &str, raw: &str) -> Result<(), StoreError> {
        let mut conn = self.pool.acquire().await?;
        insert_bad_record(&mut conn, location, reason, raw, &time::now_text()).await
    }

    /// Inserts or updates the change set `cs.id` (recording the same record again changes nothing),
    /// and, when `cs.decision` is set, appends one row to `audit_log` per call, in one transaction.
    pub(crate) async fn record_change_set(&self, cs: &ChangeSetRecord) -> Result<(), StoreError> {
        let json = |what: &str, v: &Vec<String>| {
            serde_json::to_string(v).map_err(|e| StoreError::Data(format!("change set {}: {what}: {e}", cs.id)))
        };
        let event_ids = json("event_ids", &cs.event_ids)?;
        let notes = json("notes", &cs.notes)?;
        let now = time::now_text();

        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        // The WHERE clause leaves an identical row untouched, updated_at included.
        sqlx::query(
            "INSERT INTO change_sets \
             (id, resource_id, address, actor, via, first_event_time, last_event_time, event_ids, status, \
              decision, rule, rationale, branch, commit_id, diff, notes, recorded_at, updated_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (id) DO UPDATE SET \
              resource_id = excluded.resource_id, address = excluded.address, actor = excluded.actor, \
              via = excluded.via, first_event_time = excluded.first_event_time, \
              last_event_time = excluded.last_event_time, event_ids = excluded.event_ids, \
              status = excluded.status, decision = excluded.decision, rule = excluded.rule, \
              rationale = excluded.rationale, branch = excluded.branch, commit_id = excluded.commit_id, \
              diff = excluded.diff, notes = excluded.notes, updated_at = excluded.updated_at \
             WHERE change_sets.resource_id IS NOT excluded.resource_id \
              OR change_sets.address IS NOT excluded.address \
              OR change_sets.actor IS NOT excluded.actor \
              OR change_sets.via IS NOT excluded.via \
              OR change_sets.first_event_time IS NOT excluded.first_event_time \
              OR change_sets.last_event_time IS NOT excluded.last_event_time \
              OR change_sets.event_ids IS NOT excluded.event_ids \
              OR change_sets.status IS NOT excluded.status \
              OR change_sets.decision IS NOT excluded.decision \
              OR change_sets.rule IS NOT excluded.rule \
              OR change_sets.rationale IS NOT excluded.rationale \
              OR change_sets.branch IS NOT excluded.branch \
              OR change_sets.commit_id IS NOT excluded.commit_id \
              OR change_sets.diff IS NOT excluded.diff \
              OR change_sets.notes IS NOT excluded.notes",
        )
        .bind(cs.id.clone())
        .bind(cs.resource_id.clone())
        .bind(cs.address.clone())
        .bind(cs.actor.clone())
        .bind(cs.via.clone())
        .bind(time::to_text(&cs.first_event_time))
        .bind(time::to_text(&cs.last_event_time))
        .bind(event_ids)
        .bind(cs.status.clone())
        .bind(cs.decision.clone())
        .bind(cs.rule.clone())
        .bind(cs.rationale.clone())
        .bind(cs.branch.clone())
        .bind(cs.commit_id.clone())
        .bind(cs.diff.clone())
        .bind(notes)
        .bind(now.clone())
        .bind(now.clone())
        .execute(&mut *tx)
        .await?;
        if let Some(decision) = &cs.decision {
            sqlx::query(
                "INSERT INTO audit_log (change_set_id, decision, rule, rationale, recorded_at) VALUES (?, ?, ?, ?, ?)",
            )
            .bind(cs.id.clone())
            .bind(decision.clone())
            .bind(cs.rule.clone())
            .bind(cs.rationale.clone())
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The change set `id`, if recorded.
    pub(crate) async fn change_set(&self, id: &str) -> Result<Option<ChangeSetRecord>, StoreError> {
        self.find(
            "SELECT id, resource_id, address, actor, via, first_event_time, last_event_time, event_ids, status, \
             decision, rule, rationale, branch, commit_id, diff, notes FROM change_sets WHERE id = ?",
            &[id],
            decode::change_set,
        )
        .await
    }

    pub(crate) async fn record_decision(&self, d: &DecisionRecord) -> Result<i64, StoreError> {
        let evidence = json_text("decision evidence", &d.evidence)?;
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let last: Option<AuditRow> = sqlx::query_as(
            "SELECT id, decision, rule, rationale, evidence FROM audit_log WHERE change_set_id = ? \
             ORDER BY id DESC LIMIT 1",
        )
        .bind(d.change_set_id.clone())
        .fetch_optional(&mut *tx)
        .await?;
        if let Some((id, kind, rule, rationale, stored_evidence)) = last {
            let same_evidence =
                serde_json::from_str::<serde_json::Value>(&stored_evidence).ok().as_ref() == Some(&d.evidence);
            if kind == d.kind && rule == d.rule && rationale == d.rationale && same_evidence {
                return Ok(id);
            }
        }
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO audit_log (change_set_id, decision, rule, rationale, evidence, recorded_at) \
             VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(d.change_set_id.clone())
        .bind(d.kind.clone())
        .bind(d.rule.clone())
        .bind(d.rationale.clone())
        .bind(evidence)
        .bind(time::now_text())
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(id)
    }

    pub(crate) async fn decisions(&self, change_set_id: &str) -> Result<Vec<LoggedDecision>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, change_set_id, decision, rule, rationale, evidence, recorded_at FROM audit_log \
             WHERE change_set_id = ? ORDER BY id",
        )
        .bind(change_set_id.to_owned())
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(decode::logged_decision).collect()
    }

    pub(crate) async fn save_pending(&self, cs: &PendingChangeSet) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let saved = save_pending_in(&mut tx, cs).await?;
        tx.commit().await?;
        Ok(saved)
    }

    /// One `BEGIN IMMEDIATE` transaction: SQLite has one writer at a time, so a redelivery or
    /// another process recording the same events waits and then finds them recorded.
    pub(crate) async fn record_delivery(
        &self,
        delivery: &Delivery,
        planner: &dyn PendingPlanner,
    ) -> Result<DeliveryReceipt, StoreError> {
        let mut rows = Vec::with_capacity(delivery.events.len());
        for e in &delivery.events {
            rows.push((e, check::raw_text(e)?));
        }
        let recorded_at = time::now_text();
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let mut receipt = DeliveryReceipt::default();
        let mut new_kept = HashSet::new();
        for (e, raw) in rows {
            if insert_event(&mut tx, e, raw, &recorded_at).await? {
                receipt.new_event_ids.push(e.event_id.clone());
                if e.disposition == Disposition::Kept {
                    new_kept.insert(e.event_id.clone());
                }
            }
        }
        for bad in &delivery.bad_records {
            insert_bad_record(&mut tx, &bad.location, &bad.reason, &bad.raw, &recorded_at).await?;
        }
        if !new_kept.is_empty() {
            let keys: HashSet<&str> = delivery.resource_keys.iter().map(String::as_str).collect();
            let mut open = Vec::new();
            let key_list: Vec<&str> = keys.iter().copied().collect();
            for chunk in key_list.chunks(IN_CHUNK) {
                let mut query = in_list(
                    concat!(
                        "SELECT ",
                        queue_columns!(),
                        " FROM change_set_queue WHERE status = 'pending' AND resource_key IN ("
                    ),
                    chunk,
                    ") ORDER BY last_event_time, id",
                );
                for row in query.build().fetch_all(&mut *tx).await? {
                    open.push(decode::queued(&row)?.change_set);
                }
            }
            for addition in &pending::plan_additions(planner, &new_kept, open, &keys)? {
                let mut placement = pending::Placement::new(planner, addition);
                while !save_pending_in(&mut tx, placement.candidate()).await? {
                    placement.retry()?;
                }
                receipt.change_sets.push(placement.into_id());
            }
        }
        tx.commit().await?;
        Ok(receipt)
    }

    pub(crate) async fn unfinished_change_sets(&self) -> Result<Vec<QueuedChangeSet>, StoreError> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            queue_columns!(),
            " FROM change_set_queue WHERE status IN ('pending', 'claimed') \
             ORDER BY last_event_time, id"
        ))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(decode::queued).collect()
    }

    pub(crate) async fn queued_change_set(&self, id: &str) -> Result<Option<QueuedChangeSet>, StoreError> {
        self.find(concat!("SELECT ", queue_columns!(), " FROM change_set_queue WHERE id = ?"), &[id], decode::queued)
            .await
    }

    pub(crate) async fn claim_due_change_sets(
        &self,
        owner: &str,
        quiet_before: DateTime<Utc>,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<QueuedChangeSet>, StoreError> {
        // BEGIN IMMEDIATE holds the write lock from the first read: no other process can claim
        // between the select and the update.
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let ids: Vec<String> = sqlx::query_scalar(
            "SELECT id FROM change_set_queue \
             WHERE (status = 'pending' AND last_event_time <= ?) OR (status = 'claimed' AND lease_until < ?) \
             ORDER BY last_event_time, id LIMIT ?",
        )
        .bind(time::to_text(&quiet_before))
        .bind(time::to_text(&now))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&mut *tx)
        .await?;
        let mut claimed = Vec::with_capacity(ids.len());
        for id in ids {
            let row = sqlx::query(concat!(
                "UPDATE change_set_queue SET status = 'claimed', claimed_by = ?, lease_until = ?, \
                 attempts = attempts + 1, updated_at = ? WHERE id = ? RETURNING ",
                queue_columns!()
            ))
            .bind(owner.to_owned())
            .bind(time::to_text(&lease_until))
            .bind(time::now_text())
            .bind(id)
            .fetch_one(&mut *tx)
            .await?;
            claimed.push(decode::queued(&row)?);
        }
        tx.commit().await?;
        Ok(claimed)
    }

    pub(crate) async fn renew_claim(
        &self,
        id: &str,
        owner: &str,
        lease_until: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let update = sqlx::query(update_held_claim!("lease_until = ?, updated_at = ?"))
            .bind(time::to_text(&lease_until))
            .bind(time::now_text());
        self.update_held_claim(update, id, owner).await
    }

    pub(crate) async fn finish_claim(&self, id: &str, owner: &str, outcome: &ClaimOutcome) -> Result<bool, StoreError> {
        let (status, failure, keep_owner) = outcome.queue_update();
        let update = sqlx::query(update_held_claim!(
            "status = ?, failure = ?, lease_until = NULL, claimed_by = CASE WHEN ? THEN claimed_by END, updated_at = ?"
        ))
        .bind(status.as_str())
        .bind(failure.map(str::to_owned))
        .bind(keep_owner)
        .bind(time::now_text());
        self.update_held_claim(update, id, owner).await
    }

    /// Runs `update` (from [`update_held_claim!`], its SET values bound) on change set `id` if
    /// `owner` still holds its claim; `true` when it did.
    async fn update_held_claim(
        &self,
        update: Query<'_, Sqlite, SqliteArguments>,
        id: &str,
        owner: &str,
    ) -> Result<bool, StoreError> {
        let done = update.bind(id.to_owned()).bind(owner.to_owned()).execute(&self.pool).await?;
        Ok(done.rows_affected() == 1)
    }

    pub(crate) async fn checkpoint(&self, key: &str) -> Result<Option<String>, StoreError> {
        Ok(sqlx::query_scalar("SELECT value FROM checkpoints WHERE key = ?")
            .bind(key.to_owned())
            .fetch_optional(&self.pool)
            .await?)
    }

    pub(crate) async fn set_checkpoint(&self, key: &str, value: &str) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO checkpoints (key, value, updated_at) VALUES (?, ?, ?) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        )
        .bind(key.to_owned())
        .bind(value.to_owned())
        .bind(time::now_text())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub(crate) async fn record_field_changes(&self, changes: &[FieldChange]) -> Result<usize, StoreError> {
        if changes.is_empty() {
            return Ok(0);
        }
        let now = time::now_text();
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let mut new = 0;
        for c in changes {
            let done = sqlx::query(
                "INSERT INTO field_changes (address, attribute_path, actor, event_id, event_time, change_set_id, \
                 recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            )
            .bind(c.address.clone())
            .bind(c.attribute_path.clone())
            .bind(c.actor.clone())
            .bind(c.event_id.clone())
            .bind(time::to_text(&c.event_time))
            .bind(c.change_set_id.clone())
            .bind(now.clone())
            .execute(&mut *tx)
            .await?;
            new += done.rows_affected() as usize;
        }
        tx.commit().await?;
        Ok(new)
    }

    pub(crate) async fn field_history(
        &self,
        address: &str,
        attribute_path: &str,
        since: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<FieldChange>, StoreError> {
        let mut rows = sqlx::query(
            "SELECT address, attribute_path, actor, event_id, event_time, change_set_id FROM field_changes \
             WHERE address = ? AND attribute_path = ? AND event_time >= ? \
             ORDER BY event_time DESC, event_id DESC LIMIT ?",
        )
        .bind(address.to_owned())
        .bind(attribute_path.to_owned())
        .bind(time::to_text(&since))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await?;
        rows.reverse();
        rows.iter().map(decode::field_change).collect()
    }

    pub(crate) async fn set_field_owner(
        &self,
        address: &str,
        attribute_path: &str,
        owner: &str,
        rule: Option<&str>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO field_owners (address, attribute_path, owner, rule, updated_at) VALUES (?, ?, ?, ?, ?) \
             ON CONFLICT (address, attribute_path) DO UPDATE SET owner = excluded.owner, rule = excluded.rule, \
             updated_at = excluded.updated_at \
             WHERE field_owners.owner IS NOT excluded.owner OR field_owners.rule IS NOT excluded.rule",
        )
        .bind(address.to_owned())
        .bind(attribute_path.to_owned())
        .bind(owner.to_owned())
        .bind(rule.map(str::to_owned))
        .bind(time::now_text())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub(crate) async fn field_owner(
        &self,
        address: &str,
        attribute_path: &str,
    ) -> Result<Option<FieldOwner>, StoreError> {
        self.find(
            "SELECT address, attribute_path, owner, rule, updated_at FROM field_owners \
             WHERE address = ? AND attribute_path = ?",
            &[address, attribute_path],
            decode::field_owner,
        )
        .await
    }

    pub(crate) async fn embedder(&self) -> Result<Option<EmbedderSpec>, StoreError> {
        stored_embedder(&mut *self.pool.acquire().await?).await
    }

    /// Within `tx`: records `embedder` if none is, or refuses a different one.
    async fn bind_embedder(tx: &mut sqlx::SqliteConnection, embedder: &EmbedderSpec) -> Result<(), StoreError> {
        match stored_embedder(tx).await? {
            Some(stored) => {
                if &stored != embedder {
                    return Err(StoreError::EmbedderMismatch { stored, given: embedder.clone() });
                }
            }
            None => {
                sqlx::query("INSERT INTO knowledge_embedder (id, name, dimension, recorded_at) VALUES (1, ?, ?, ?)")
                    .bind(embedder.name.clone())
                    .bind(embedder.dimension as i64)
                    .bind(time::now_text())
                    .execute(&mut *tx)
                    .await?;
            }
        }
        Ok(())
    }

    pub(crate) async fn upsert_knowledge(&self, embedder: &EmbedderSpec, e: &NewKnowledge) -> Result<i64, StoreError> {
        let now = time::now_text();
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        Self::bind_embedder(&mut tx, embedder).await?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO knowledge (signature, summary, embedding, patch_diff, recipe_toml, change_set_id, \
             created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (signature) DO UPDATE SET summary = excluded.summary, embedding = excluded.embedding, \
             patch_diff = excluded.patch_diff, \
             demoted = CASE WHEN excluded.recipe_toml IS NOT NULL AND excluded.recipe_toml IS NOT knowledge.recipe_toml \
                       THEN NULL ELSE knowledge.demoted END, \
             recipe_toml = COALESCE(excluded.recipe_toml, knowledge.recipe_toml), \
             change_set_id = COALESCE(excluded.change_set_id, knowledge.change_set_id), \
             updated_at = excluded.updated_at \
             RETURNING id",
        )
        .bind(e.signature.clone())
        .bind(e.summary.clone())
        .bind(vector_blob(&e.embedding))
        .bind(e.patch_diff.clone())
        .bind(e.recipe_toml.clone())
        .bind(e.change_set_id.clone())
        .bind(now.clone())
        .bind(now)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(id)
    }

    pub(crate) async fn knowledge_entry(&self, id: i64) -> Result<Option<KnowledgeEntry>, StoreError> {
        let row = sqlx::query(concat!("SELECT ", knowledge_columns!(), " FROM knowledge WHERE id = ?"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(decode::knowledge).transpose()
    }

    pub(crate) async fn similar_knowledge(
        &self,
        embedder: &EmbedderSpec,
        query: &[f32],
        k: usize,
    ) -> Result<Vec<SimilarEntry>, StoreError> {
        match self.embedder().await? {
            None => return Ok(Vec::new()),
            Some(stored) if &stored != embedder => {
                return Err(StoreError::EmbedderMismatch { stored, given: embedder.clone() });
            }
            Some(_) => {}
        }
        if k == 0 {
            return Ok(Vec::new());
        }
        // Exact search: the embedded store is small enough to scan; Postgres uses an HNSW index.
        let rows: Vec<(i64, Vec<u8>)> =
            sqlx::query_as("SELECT id, embedding FROM knowledge WHERE embedding IS NOT NULL")
                .fetch_all(&self.pool)
                .await?;
        let query_norm = query.iter().map(|x| x * x).sum::<f32>().sqrt();
        let mut scored: Vec<(f32, i64)> = Vec::with_capacity(rows.len());
        for (id, blob) in rows {
            scored.push((cosine_with_blob(id, query, query_norm, &blob)?, id));
        }
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.truncate(k);
        let mut out = Vec::with_capacity(scored.len());
        for (similarity, id) in scored {
            if let Some(entry) = self.knowledge_entry(id).await? {
                out.push(SimilarEntry { entry, similarity });
            }
        }
        Ok(out)
    }

    pub(crate) async fn learned_recipes(&self) -> Result<Vec<KnowledgeEntry>, StoreError> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            knowledge_columns!(),
            " FROM knowledge WHERE recipe_toml IS NOT NULL AND demoted IS NULL \
             ORDER BY successes DESC, uses DESC, id"
        ))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(decode::knowledge).collect()
    }

    pub(crate) async fn bump_knowledge_use(&self, id: i64) -> Result<bool, StoreError> {
        self.knowledge_update("UPDATE knowledge SET uses = uses + 1, updated_at = ? WHERE id = ?", id, None).await
    }

    pub(crate) async fn bump_knowledge_success(&self, id: i64) -> Result<bool, StoreError> {
        self.knowledge_update("UPDATE knowledge SET successes = successes + 1, updated_at = ? WHERE id = ?", id, None)
            .await
    }

    pub(crate) async fn demote_knowledge(&self, id: i64, reason: &str) -> Result<bool, StoreError> {
        self.knowledge_update("UPDATE knowledge SET updated_at = ?, demoted = ? WHERE id = ?", id, Some(reason)).await
    }

    async fn knowledge_update(&self, sql: &'static str, id: i64, text: Option<&str>) -> Result<bool, StoreError> {
        let mut q = sqlx::query(sql).bind(time::now_text());
        if let Some(text) = text {
            q = q.bind(text.to_owned());
        }
        Ok(q.bind(id).execute(&self.pool).await?.rows_affected() == 1)
    }

    pub(crate) async fn knowledge_texts(&self) -> Result<Vec<KnowledgeText>, StoreError> {
        let rows: Vec<(i64, String)> =
            sqlx::query_as("SELECT id, signature FROM knowledge ORDER BY id").fetch_all(&self.pool).await?;
        Ok(rows.into_iter().map(|(id, signature)| KnowledgeText { id, signature }).collect())
    }

    pub(crate) async fn replace_embeddings(
        &self,
        embedder: &EmbedderSpec,
        vectors: &[(i64, Vec<f32>)],
    ) -> Result<(), StoreError> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let ids: Vec<i64> = sqlx::query_scalar("SELECT id FROM knowledge ORDER BY id").fetch_all(&mut *tx).await?;
        check::check_covers(&ids, vectors)?;
        let now = time::now_text();
        for (id, v) in vectors {
            sqlx::query("UPDATE knowledge SET embedding = ?, updated_at = ? WHERE id = ?")
                .bind(vector_blob(v))
                .bind(now.clone())
                .bind(*id)
                .execute(&mut *tx)
                .await?;
        }
        sqlx::query(
            "INSERT INTO knowledge_embedder (id, name, dimension, recorded_at) VALUES (1, ?, ?, ?) \
             ON CONFLICT (id) DO UPDATE SET name = excluded.name, dimension = excluded.dimension, \
             recorded_at = excluded.recorded_at",
        )
        .bind(embedder.name.clone())
        .bind(embedder.dimension as i64)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    pub(crate) async fn record_pull_request(&self, pr: &PullRequestRecord) -> Result<(), StoreError> {
        let now = time::now_text();
        sqlx::query(
            "INSERT INTO pull_requests (number, address, branch, url, state, head_commit, created_at, updated_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (number) DO UPDATE SET address = excluded.address, \
             branch = excluded.branch, url = excluded.url, state = excluded.state, \
             head_commit = excluded.head_commit, updated_at = excluded.updated_at",
        )
        .bind(pr_number(pr.number)?)
        .bind(pr.address.clone())
        .bind(pr.branch.clone())
        .bind(pr.url.clone())
        .bind(pr.state.as_str())
        .bind(pr.head_commit.clone())
        .bind(now.clone())
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub(crate) async fn open_pull_request(&self, address: &str) -> Result<Option<PullRequestRecord>, StoreError> {
        self.find(
            "SELECT number, address, branch, url, state, head_commit FROM pull_requests \
             WHERE address = ? AND state = 'open' ORDER BY number DESC LIMIT 1",
            &[address],
            decode::pull_request,
        )
        .await
    }

    pub(crate) async fn set_pull_request_state(
        &self,
        number: u64,
        state: PullRequestState,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query("UPDATE pull_requests SET state = ?, updated_at = ? WHERE number = ?")
            .bind(state.as_str())
            .bind(time::now_text())
            .bind(pr_number(number)?)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    pub(crate) async fn record_reconciliation(&self, r: &ReconciliationRecord) -> Result<(), StoreError> {
        sqlx::query(concat!(
            "INSERT OR REPLACE INTO reconciliations (",
            reconciliation_columns!(),
            ") \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        ))
        .bind(r.change_set_id.clone())
        .bind(r.trace_summary.clone())
        .bind(r.actor.clone())
        .bind(r.intent.clone())
        .bind(r.motivation.clone())
        .bind(r.decision.clone())
        .bind(r.patch_diff.clone())
        .bind(r.branch.clone())
        .bind(r.commit_id.clone())
        .bind(r.pull_request.clone())
        .bind(check::to_i64("prompt_tokens", r.prompt_tokens)?)
        .bind(check::to_i64("completion_tokens", r.completion_tokens)?)
        .bind(r.model.clone())
        .bind(check::to_i64("duration_ms", r.duration_ms)?)
        .bind(r.outcome.clone())
        .bind(time::now_text())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub(crate) async fn reconciliation(&self, change_set_id: &str) -> Result<Option<StoredReconciliation>, StoreError> {
        self.find(
            concat!("SELECT ", reconciliation_columns!(), " FROM reconciliations WHERE change_set_id = ?"),
            &[change_set_id],
            decode::reconciliation,
        )
        .await
    }

    pub(crate) async fn recent_reconciliations(&self, limit: usize) -> Result<Vec<StoredReconciliation>, StoreError> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            reconciliation_columns!(),
            " FROM reconciliations ORDER BY recorded_at DESC, change_set_id LIMIT ?"
        ))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(decode::reconciliation).collect()
    }

    pub(crate) async fn stats(&self) -> Result<Stats, StoreError> {
        let scalar = |sql: &'static str| sqlx::query_scalar::<_, i64>(sql).fetch_one(&self.pool);
        let grouped = |sql: &'static str| sqlx::query_as::<_, (String, i64)>(sql).fetch_all(&self.pool);
        let dropped: Vec<(String, i64)> = sqlx::query_as(
            "SELECT COALESCE(drop_reason, ?) AS reason, COUNT(*) AS n FROM events \
             WHERE disposition = 'dropped' GROUP BY reason ORDER BY n DESC, reason",
        )
        .bind(NO_REASON)
        .fetch_all(&self.pool)
        .await?;
        let counts = |v: Vec<(String, i64)>| v.into_iter().map(|(k, n)| (k, count(n))).collect();
        Ok(Stats {
            events: count(scalar("SELECT COUNT(*) FROM events").await?),
            events_dropped_by_reason: counts(dropped),
            bad_records: count(scalar("SELECT COUNT(*) FROM bad_records").await?),
            change_sets_by_status: counts(
                grouped("SELECT status, COUNT(*) AS n FROM change_sets GROUP BY status ORDER BY n DESC, status")
                    .await?,
            ),
            queue_by_status: counts(
                grouped("SELECT status, COUNT(*) AS n FROM change_set_queue GROUP BY status ORDER BY n DESC, status")
                    .await?,
            ),
            knowledge_entries: count(scalar("SELECT COUNT(*) FROM knowledge").await?),
            learned_recipes: count(
                scalar("SELECT COUNT(*) FROM knowledge WHERE recipe_toml IS NOT NULL AND demoted IS NULL").await?,
            ),
            reconciliations: count(scalar("SELECT COUNT(*) FROM reconciliations").await?),
            prompt_tokens: count(scalar("SELECT COALESCE(SUM(prompt_tokens), 0) FROM reconciliations").await?),
            completion_tokens: count(scalar("SELECT COALESCE(SUM(completion_tokens), 0) FROM reconciliations").await?),
            embedder: self.embedder().await?,
        })
    }
}

/// `head`, then `values` bound one by one and separated by commas, then `tail`: for
/// `... IN (` `)` lists of at most [`IN_CHUNK`] values.
fn in_list(head: &'static str, values: &[impl AsRef<str>], tail: &'static str) -> QueryBuilder<Sqlite> {
    let mut query = QueryBuilder::<Sqlite>::new(head);
    let mut list = query.separated(", ");
    for value in values {
        list.push_bind(value.as_ref().to_owned());
    }
    list.push_unseparated(tail);
    query
}

/// The embedder the stored vectors come from, as `knowledge_embedder` records it.
async fn stored_embedder(conn: &mut SqliteConnection) -> Result<Option<EmbedderSpec>, StoreError> {
    let row: Option<(String, i64)> = sqlx::query_as("SELECT name, dimension FROM knowledge_embedder WHERE id = 1")
        .fetch_optional(&mut *conn)
        .await?;
    Ok(row.map(|(name, dimension)| EmbedderSpec { name, dimension: usize::try_from(dimension).unwrap_or(0) }))
}

/// id, decision, rule, rationale, evidence of an audit log row.
type AuditRow = (i64, String, Option<String>, Option<String>, String);

fn json_text<T: serde::Serialize + ?Sized>(what: &str, value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Data(format!("{what} is not serialisable: {e}")))
}

fn pr_number(n: u64) -> Result<i64, StoreError> {
    check::to_i64("pull request number", n)
}

fn vector_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Cosine similarity of `query` and a stored vector, read straight from its bytes (no copy).
fn cosine_with_blob(id: i64, query: &[f32], query_norm: f32, blob: &[u8]) -> Result<f32, StoreError> {
    if blob.len() != query.len() * 4 {
        return Err(StoreError::Data(format!(
            "knowledge {id}: embedding is {} bytes, not {} float32s; run `driftback kb reembed`",
            blob.len(),
            query.len()
        )));
    }
    let (mut dot, mut norm) = (0f32, 0f32);
    for (q, c) in query.iter().zip(blob.chunks_exact(4)) {
        let x = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        dot += q * x;
        norm += x * x;
    }
    let denominator = query_norm * norm.sqrt();
    Ok(if denominator == 0.0 { 0.0 } else { dot / denominator })
}

/// Inserts one event unless its id is recorded; `true` when it was new.
async fn insert_event(
    conn: &mut SqliteConnection,
    e: &EventRecord,
    raw: String,
    recorded_at: &str,
) -> Result<bool, StoreError> {
    let done = sqlx::query(
        "INSERT INTO events \
         (event_id, event_time, source, name, actor, disposition, drop_reason, raw, recorded_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) \
         ON CONFLICT (event_id) DO NOTHING",
    )
    .bind(e.event_id.clone())
    .bind(time::to_text(&e.event_time))
    .bind(e.source.clone())
    .bind(e.name.clone())
    .bind(e.actor.clone())
    .bind(e.disposition.as_str())
    .bind(e.drop_reason.clone())
    .bind(raw)
    .bind(recorded_at.to_owned())
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

async fn insert_bad_record(
    conn: &mut SqliteConnection,
    location: &str,
    reason: &str,
    raw: &str,
    recorded_at: &str,
) -> Result<(), StoreError> {
    sqlx::query("INSERT INTO bad_records (location, reason, raw, recorded_at) VALUES (?, ?, ?, ?)")
        .bind(location.to_owned())
        .bind(reason.to_owned())
        .bind(raw.to_owned())
        .bind(recorded_at.to_owned())
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Inserts `cs` into the work queue or merges it into the pending change set of its id, inside
/// the caller's transaction. `false`, changing nothing, when that id is no longer pending.
async fn save_pending_in(conn: &mut SqliteConnection, cs: &PendingChangeSet) -> Result<bool, StoreError> {
    let row = sqlx::query(concat!("SELECT ", queue_columns!(), " FROM change_set_queue WHERE id = ?"))
        .bind(cs.id.clone())
        .fetch_optional(&mut *conn)
        .await?;
    let merged = match row {
        Some(row) => {
            let stored = decode::queued(&row)?;
            if stored.status != QueueStatus::Pending {
                return Ok(false);
            }
            let merged = pending::merge_pending(&stored.change_set, cs);
            if merged == stored.change_set {
                return Ok(true);
            }
            merged
        }
        None => cs.clone(),
    };
    let event_ids = json_text("event_ids", &merged.event_ids)?;
    let now = time::now_text();
    sqlx::query(
        "INSERT INTO change_set_queue (id, resource_key, actor_session, first_event_time, last_event_time, \
         event_ids, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?) \
         ON CONFLICT (id) DO UPDATE SET resource_key = excluded.resource_key, \
         actor_session = excluded.actor_session, first_event_time = excluded.first_event_time, \
         last_event_time = excluded.last_event_time, event_ids = excluded.event_ids, \
         updated_at = excluded.updated_at",
    )
    .bind(merged.id.clone())
    .bind(merged.resource_key.clone())
    .bind(merged.actor_session.clone())
    .bind(time::to_text(&merged.first_event_time))
    .bind(time::to_text(&merged.last_event_time))
    .bind(event_ids)
    .bind(now.clone())
    .bind(now)
    .execute(&mut *conn)
    .await?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_straight_from_the_stored_bytes() {
        let cos = |a: &[f32], b: &[f32]| {
            let norm = a.iter().map(|x| x * x).sum::<f32>().sqrt();
            cosine_with_blob(1, a, norm, &vector_blob(b)).unwrap()
        };
        assert!((cos(&[1.0, 0.0], &[2.0, 0.0]) - 1.0).abs() < 1e-6);
        assert!(cos(&[1.0, 0.0], &[0.0, 3.0]).abs() < 1e-6);
        assert!((cos(&[1.0, 0.0], &[-1.0, 0.0]) + 1.0).abs() < 1e-6);
        assert_eq!(cos(&[1.0, 0.0], &[0.0, 0.0]), 0.0);
        let err = cosine_with_blob(7, &[1.0, 0.0], 1.0, &[0u8; 12]).unwrap_err().to_string();
        assert!(err.contains("knowledge 7") && err.contains("kb reembed"), "{err}");
    }
}
