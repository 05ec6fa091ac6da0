//! The Postgres store: production's knowledge base, with pgvector for similarity search and SQL
//! views for people.

use std::collections::HashSet;
use std::str::FromStr;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use pgvector::Vector;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgConnection, PgPool, Row};

use crate::decode::{self, count};
use crate::error::is_transient_sqlx;
use crate::records::{
    ChangeSetRecord, ClaimOutcome, DecisionRecord, Delivery, DeliveryReceipt, Disposition, EmbedderSpec, EventRecord,
    FieldChange, FieldOwner, KnowledgeEntry, KnowledgeText, LoggedDecision, NewKnowledge, PendingChangeSet,
    PendingPlanner, PullRequestRecord, PullRequestState, QueueStatus, QueuedChangeSet, ReconciliationRecord,
    SimilarEntry, Stats, StoredReconciliation,
};
use crate::sqlite::NO_REASON;
use crate::{OpenOptions, StoreError, check, migrate, pending, redact_url};

/// How many ids go into one `= ANY($1)` array.
const ANY_CHUNK: usize = 10_000;

/// Rows per `INSERT ... SELECT FROM UNNEST(...)` statement.
const INSERT_CHUNK: usize = 5_000;

/// pgvector's HNSW index takes vectors of at most this many dimensions; above it, search is exact.
const HNSW_MAX_DIMENSION: usize = 2_000;

/// HNSW returns at most `hnsw.ef_search` rows (default 40); larger `k` raise it for the query.
const HNSW_DEFAULT_EF_SEARCH: usize = 40;

/// The first key of the advisory locks on resource keys (`pg_advisory_xact_lock(class, key)`), so
/// they never meet another lock of driftback's.
const RESOURCE_LOCK_CLASS: i32 = 0x6472_6674; // "drft"

/// `INSERT INTO events` from arrays; an id already recorded is skipped.
macro_rules! insert_events_sql {
    () => {
        "INSERT INTO events (event_id, event_time, source, name, actor, disposition, drop_reason, raw) \
         SELECT i, t, s, n, a, d, r, j::jsonb \
         FROM UNNEST($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[], \
                     $7::text[], $8::text[]) AS u(i, t, s, n, a, d, r, j) \
         ON CONFLICT (event_id) DO NOTHING"
    };
}

/// The longest single wait between connection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// The Postgres knowledge base. Cheap to clone: clones share one connection pool.
#[derive(Debug, Clone)]
pub(crate) struct PgStore {
    pool: PgPool,
}

impl PgStore {
    /// Connects (retrying while the server does not answer, as `options` say) and migrates.
    pub(crate) async fn open(url: &str, options: &OpenOptions) -> Result<PgStore, StoreError> {
        let target = redact_url(url);
        let connect = PgConnectOptions::from_str(url)
            .map_err(|e| StoreError::Url { url: target.clone(), reason: e.to_string() })?;
        let pool_options = PgPoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .acquire_timeout(Duration::from_secs(30));
        let started = Instant::now();
        let mut backoff = options.connect_initial_backoff;
        let mut attempt = 0;
        // Probe with one plain connection: the pool's own connect retries silently until its
        // acquire timeout, which would hide the attempts and the backoff asked for.
        loop {
            attempt += 1;
            match PgConnection::connect_with(&connect).await {
                Ok(probe) => {
                    let _ = probe.close().await;
                    break;
                }
                Err(e) if !is_transient_sqlx(&e) => return Err(StoreError::Open { target, source: e }),
                Err(e) => {
                    let waited = started.elapsed();
                    if attempt >= options.connect_attempts.max(1) || waited + backoff > options.connect_max_wait {
                        return Err(StoreError::Unavailable { target, attempts: attempt, waited, source: e });
                    }
                    tracing::warn!(
                        target = %target, attempt, retry_in_ms = backoff.as_millis() as u64, error = %e,
                        "knowledge base unreachable; retrying"
                    );
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
        let pool = pool_options.connect_lazy_with(connect);
        let mut conn = pool.acquire().await?;
        let migrated = migrate::apply_postgres(&mut conn).await;
        drop(conn);
        if let Err(e) = migrated {
            pool.close().await;
            return Err(e);
        }
        Ok(PgStore { pool })
    }

    pub(crate) async fn close(&self) {
        self.pool.close().await;
    }

    pub(crate) async fn seen_event_ids(&self, ids: &[String]) -> Result<HashSet<String>, StoreError> {
        let mut seen = HashSet::new();
        for chunk in ids.chunks(ANY_CHUNK) {
            let found: Vec<String> = sqlx::query_scalar("SELECT event_id FROM events WHERE event_id = ANY($1)")
                .bind(chunk)
                .fetch_all(&self.pool)
                .await?;
            seen.extend(found);
        }
        Ok(seen)
    }

    pub(crate) async fn events_by_id(&self, ids: &[String]) -> Result<Vec<EventRecord>, StoreError> {
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(ANY_CHUNK) {
            let rows = sqlx::query(
                "SELECT event_id, event_time, source, name, actor, disposition, drop_reason, raw FROM events \
                 WHERE event_id = ANY($1)",
            )
            .bind(chunk)
            .fetch_all(&self.pool)
            .await?;
            for row in &rows {
                out.push(decode::event(row)?);
            }
        }
        Ok(out)
    }

    pub(crate) async fn record_events(&self, events: &[EventRecord]) -> Result<usize, StoreError> {
        if events.is_empty() {
            return Ok(0);
        }
        let mut tx = self.pool.begin().await?;
        let mut new = 0;
        for chunk in events.chunks(INSERT_CHUNK) {
            let chunk: Vec<&EventRecord> = chunk.iter().collect();
            let raws = chunk.iter().map(|e| check::raw_text(e)).collect::<Result<Vec<_>, _>>()?;
            new += insert_events(&mut tx, &chunk, &raws, false).await?.len();
        }
        tx.commit().await?;
        Ok(new)
    }

    pub(crate) async fn record_bad_record(&self, location: &str, reason: &str, raw: &str) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO bad_records (location, reason, raw) VALUES ($1, $2, $3)")
            .bind(location)
            .bind(reason)
            .bind(raw)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub(crate) async fn record_change_set(&self, cs: &ChangeSetRecord) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        // The WHERE clause leaves an identical row untouched, updated_at included.
        sqlx::query(
            "INSERT INTO change_sets \
             (id, resource_id, address, actor, via, first_event_time, last_event_time, event_ids, status, \
              decision, rule, rationale, branch, commit_id, diff, notes) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) \
             ON CONFLICT (id) DO UPDATE SET \
              resource_id = EXCLUDED.resource_id, address = EXCLUDED.address, actor = EXCLUDED.actor, \
              via = EXCLUDED.via, first_event_time = EXCLUDED.first_event_time, \
              last_event_time = EXCLUDED.last_event_time, event_ids = EXCLUDED.event_ids, \
              status = EXCLUDED.status, decision = EXCLUDED.decision, rule = EXCLUDED.rule, \
              rationale = EXCLUDED.rationale, branch = EXCLUDED.branch, commit_id = EXCLUDED.commit_id, \
              diff = EXCLUDED.diff, notes = EXCLUDED.notes, updated_at = now() \
             WHERE (change_sets.resource_id, change_sets.address, change_sets.actor, change_sets.via, \
                    change_sets.first_event_time, change_sets.last_event_time, change_sets.event_ids, \
                    change_sets.status, change_sets.decision, change_sets.rule, change_sets.rationale, \
                    change_sets.branch, change_sets.commit_id, change_sets.diff, change_sets.notes) \
                   IS DISTINCT FROM \
                   (EXCLUDED.resource_id, EXCLUDED.address, EXCLUDED.actor, EXCLUDED.via, \
                    EXCLUDED.first_event_time, EXCLUDED.last_event_time, EXCLUDED.event_ids, EXCLUDED.status, \
                    EXCLUDED.decision, EXCLUDED.rule, EXCLUDED.rationale, EXCLUDED.branch, EXCLUDED.commit_id, \
                    EXCLUDED.diff, EXCLUDED.notes)",
        )
        .bind(&cs.id)
        .bind(&cs.resource_id)
        .bind(&cs.address)
        .bind(&cs.actor)
        .bind(&cs.via)
        .bind(cs.first_event_time)
        .bind(cs.last_event_time)
        .bind(&cs.event_ids)
        .bind(&cs.status)
        .bind(&cs.decision)
        .bind(&cs.rule)
        .bind(&cs.rationale)
        .bind(&cs.branch)
        .bind(&cs.commit_id)
        .bind(&cs.diff)
        .bind(&cs.notes)
        .execute(&mut *tx)
        .await?;
        if let Some(decision) = &cs.decision {
            sqlx::query("INSERT INTO audit_log (change_set_id, decision, rule, rationale) VALUES ($1, $2, $3, $4)")
                .bind(&cs.id)
                .bind(decision)
                .bind(&cs.rule)
                .bind(&cs.rationale)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    pub(crate) async fn change_set(&self, id: &str) -> Result<Option<ChangeSetRecord>, StoreError> {
        let row = sqlx::query(
            "SELECT id, resource_id, address, actor, via, first_event_time, last_event_time, event_ids, status, \
             decision, rule, rationale, branch, commit_id, diff, notes FROM change_sets WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(decode::change_set).transpose()
    }

    pub(crate) async fn record_decision(&self, d: &DecisionRecord) -> Result<i64, StoreError> {
        let mut tx = self.pool.begin().await?;
        // Serialise decisions per change set so the "same as the last one" check cannot race.
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(&d.change_set_id)
            .execute(&mut *tx)
            .await?;
        let same: Option<i64> = sqlx::query_scalar(
            "SELECT id FROM (SELECT id, decision, rule, rationale, evidence FROM audit_log \
             WHERE change_set_id = $1 ORDER BY id DESC LIMIT 1) last \
             WHERE decision = $2 AND rule IS NOT DISTINCT FROM $3 AND rationale IS NOT DISTINCT FROM $4 \
             AND evidence = $5",
        )
        .bind(&d.change_set_id)
        .bind(&d.kind)
        .bind(&d.rule)
        .bind(&d.rationale)
        .bind(sqlx::types::Json(&d.evidence))
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(id) = same {
            return Ok(id);
        }
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO audit_log (change_set_id, decision, rule, rationale, evidence) \
             VALUES ($1, $2, $3, $4, $5) RETURNING id",
        )
        .bind(&d.change_set_id)
        .bind(&d.kind)
        .bind(&d.rule)
        .bind(&d.rationale)
        .bind(sqlx::types::Json(&d.evidence))
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(id)
    }

    pub(crate) async fn decisions(&self, change_set_id: &str) -> Result<Vec<LoggedDecision>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, change_set_id, decision, rule, rationale, evidence, recorded_at FROM audit_log \
             WHERE change_set_id = $1 ORDER BY id",
        )
        .bind(change_set_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(decode::logged_decision).collect()
    }

    pub(crate) async fn save_pending(&self, cs: &PendingChangeSet) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await?;
        let saved = save_pending_in(&mut tx, cs).await?;
        tx.commit().await?;
        Ok(saved)
    }

    /// One transaction. Concurrent replicas: the resource keys are locked first (advisory locks,
    /// in one order, so two deliveries never deadlock on them); an event id another transaction is
    /// inserting waits for it and then counts as already recorded, so only the transaction that
    /// really recorded an event forms change sets from it; pending rows are read `FOR UPDATE`, so a
    /// claim in between skips them (`SKIP LOCKED`) instead of claiming a change set being extended.
    pub(crate) async fn record_delivery(
        &self,
        delivery: &Delivery,
        planner: &dyn PendingPlanner,
    ) -> Result<DeliveryReceipt, StoreError> {
        // Sorted by id, so two deliveries sharing events insert them in one order (no deadlock).
        let mut events: Vec<&EventRecord> = delivery.events.iter().collect();
        events.sort_by(|a, b| a.event_id.cmp(&b.event_id));
        let mut raws = Vec::with_capacity(events.len());
        for e in &events {
            raws.push(check::raw_text(e)?);
        }
        let keys: HashSet<&str> = delivery.resource_keys.iter().map(String::as_str).collect();
        let mut locks: Vec<i32> = keys.iter().map(|k| key_lock(k)).collect();
        locks.sort_unstable();
        locks.dedup();

        let mut tx = self.pool.begin().await?;
        if !locks.is_empty() {
            sqlx::query("SELECT count(pg_advisory_xact_lock($1, k)) FROM UNNEST($2::int4[]) AS u(k)")
                .bind(RESOURCE_LOCK_CLASS)
                .bind(&locks)
                .execute(&mut *tx)
                .await?;
        }
        let mut inserted: HashSet<String> = HashSet::new();
        let mut at = 0;
        for chunk in events.chunks(INSERT_CHUNK) {
            let ids: Vec<String> = insert_events(&mut tx, chunk, &raws[at..at + chunk.len()], true).await?;
            inserted.extend(ids);
            at += chunk.len();
        }
        let mut receipt = DeliveryReceipt::default();
        let mut new_kept = HashSet::new();
        for e in &delivery.events {
            if inserted.remove(&e.event_id) {
                receipt.new_event_ids.push(e.event_id.clone());
                if e.disposition == Disposition::Kept {
                    new_kept.insert(e.event_id.clone());
                }
            }
        }
        for chunk in delivery.bad_records.chunks(INSERT_CHUNK) {
            sqlx::query(
                "INSERT INTO bad_records (location, reason, raw) \
                 SELECT l, r, t FROM UNNEST($1::text[], $2::text[], $3::text[]) AS u(l, r, t)",
            )
            .bind(chunk.iter().map(|b| b.location.clone()).collect::<Vec<_>>())
            .bind(chunk.iter().map(|b| b.reason.clone()).collect::<Vec<_>>())
            .bind(chunk.iter().map(|b| b.raw.clone()).collect::<Vec<_>>())
            .execute(&mut *tx)
            .await?;
        }
        if !new_kept.is_empty() {
            let key_list: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
            let rows = sqlx::query(concat!(
                "SELECT ",
                queue_columns!(),
                " FROM change_set_queue WHERE status = 'pending' AND resource_key = ANY($1) \
                 ORDER BY last_event_time, id FOR UPDATE"
            ))
            .bind(&key_list)
            .fetch_all(&mut *tx)
            .await?;
            let open = rows.iter().map(|row| decode::queued(row).map(|q| q.change_set)).collect::<Result<_, _>>()?;
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
            " FROM change_set_queue WHERE status IN ('pending', 'claimed') ORDER BY last_event_time, id"
        ))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(decode::queued).collect()
    }

    pub(crate) async fn queued_change_set(&self, id: &str) -> Result<Option<QueuedChangeSet>, StoreError> {
        let row = sqlx::query(concat!("SELECT ", queue_columns!(), " FROM change_set_queue WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(decode::queued).transpose()
    }

    pub(crate) async fn claim_due_change_sets(
        &self,
        owner: &str,
        quiet_before: DateTime<Utc>,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<QueuedChangeSet>, StoreError> {
        // SKIP LOCKED: rows another replica is claiming right now are passed over, not waited for.
        let rows = sqlx::query(concat!(
            "UPDATE change_set_queue SET status = 'claimed', claimed_by = $1, lease_until = $2, \
             attempts = attempts + 1, updated_at = now() \
             WHERE id IN (SELECT id FROM change_set_queue \
                          WHERE (status = 'pending' AND last_event_time <= $3) \
                             OR (status = 'claimed' AND lease_until < $4) \
                          ORDER BY last_event_time, id LIMIT $5 FOR UPDATE SKIP LOCKED) \
             RETURNING ",
            queue_columns!()
        ))
        .bind(owner)
        .bind(lease_until)
        .bind(quiet_before)
        .bind(now)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await?;
        let mut claimed = rows.iter().map(decode::queued).collect::<Result<Vec<_>, _>>()?;
        claimed.sort_by(|a, b| {
            (a.change_set.last_event_time, &a.change_set.id).cmp(&(b.change_set.last_event_time, &b.change_set.id))
        });
        Ok(claimed)
    }

    pub(crate) async fn renew_claim(
        &self,
        id: &str,
        owner: &str,
        lease_until: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE change_set_queue SET lease_until = $3, updated_at = now() \
             WHERE id = $1 AND status = 'claimed' AND claimed_by = $2",
        )
        .bind(id)
        .bind(owner)
        .bind(lease_until)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    pub(crate) async fn finish_claim(&self, id: &str, owner: &str, outcome: &ClaimOutcome) -> Result<bool, StoreError> {
        let (status, failure, keep_owner) = outcome.queue_update();
        let done = sqlx::query(
            "UPDATE change_set_queue SET status = $3, failure = $4, lease_until = NULL, \
             claimed_by = CASE WHEN $5 THEN claimed_by END, updated_at = now() \
             WHERE id = $1 AND status = 'claimed' AND claimed_by = $2",
        )
        .bind(id)
        .bind(owner)
        .bind(status.as_str())
        .bind(failure)
        .bind(keep_owner)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    pub(crate) async fn checkpoint(&self, key: &str) -> Result<Option<String>, StoreError> {
        Ok(sqlx::query_scalar("SELECT value FROM checkpoints WHERE key = $1")
            .bind(key)
            .fetch_optional(&self.pool)
            .await?)
    }

    pub(crate) async fn set_checkpoint(&self, key: &str, value: &str) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO checkpoints (key, value) VALUES ($1, $2) \
             ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()",
        )
        .bind(key)
        .bind(value)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub(crate) async fn record_field_changes(&self, changes: &[FieldChange]) -> Result<usize, StoreError> {
        if changes.is_empty() {
            return Ok(0);
        }
        let done = sqlx::query(
            "INSERT INTO field_changes (address, attribute_path, actor, event_id, event_time, change_set_id) \
             SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::text[]) \
             ON CONFLICT DO NOTHING",
        )
        .bind(changes.iter().map(|c| c.address.clone()).collect::<Vec<_>>())
        .bind(changes.iter().map(|c| c.attribute_path.clone()).collect::<Vec<_>>())
        .bind(changes.iter().map(|c| c.actor.clone()).collect::<Vec<_>>())
        .bind(changes.iter().map(|c| c.event_id.clone()).collect::<Vec<_>>())
        .bind(changes.iter().map(|c| c.event_time).collect::<Vec<_>>())
        .bind(changes.iter().map(|c| c.change_set_id.clone()).collect::<Vec<_>>())
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() as usize)
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
             WHERE address = $1 AND attribute_path = $2 AND event_time >= $3 \
             ORDER BY event_time DESC, event_id DESC LIMIT $4",
        )
        .bind(address)
        .bind(attribute_path)
        .bind(since)
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
            "INSERT INTO field_owners (address, attribute_path, owner, rule) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (address, attribute_path) DO UPDATE SET owner = EXCLUDED.owner, rule = EXCLUDED.rule, \
             updated_at = now() \
             WHERE (field_owners.owner, field_owners.rule) IS DISTINCT FROM (EXCLUDED.owner, EXCLUDED.rule)",
        )
        .bind(address)
        .bind(attribute_path)
        .bind(owner)
        .bind(rule)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub(crate) async fn field_owner(
        &self,
        address: &str,
        attribute_path: &str,
    ) -> Result<Option<FieldOwner>, StoreError> {
        let row = sqlx::query(
            "SELECT address, attribute_path, owner, rule, updated_at FROM field_owners \
             WHERE address = $1 AND attribute_path = $2",
        )
        .bind(address)
        .bind(attribute_path)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(decode::field_owner).transpose()
    }

    pub(crate) async fn embedder(&self) -> Result<Option<EmbedderSpec>, StoreError> {
        let row: Option<(String, i32)> = sqlx::query_as("SELECT name, dimension FROM knowledge_embedder WHERE id = 1")
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(spec_from_row))
    }

    /// Within a transaction: records `embedder` if none is (giving the vector column its dimension
    /// and its HNSW index), or refuses a different one.
    async fn bind_embedder(conn: &mut PgConnection, embedder: &EmbedderSpec) -> Result<(), StoreError> {
        let stored: Option<(String, i32)> =
            sqlx::query_as("SELECT name, dimension FROM knowledge_embedder WHERE id = 1 FOR SHARE")
                .fetch_optional(&mut *conn)
                .await?;
        let stored = match stored {
            Some(row) => Some(row),
            None => {
                // First use: take the table so two first writers do not both set it up.
                sqlx::query("LOCK TABLE knowledge_embedder IN SHARE ROW EXCLUSIVE MODE").execute(&mut *conn).await?;
                sqlx::query_as("SELECT name, dimension FROM knowledge_embedder WHERE id = 1")
                    .fetch_optional(&mut *conn)
                    .await?
            }
        };
        match stored.map(spec_from_row) {
            Some(stored) if &stored == embedder => Ok(()),
            Some(stored) => Err(StoreError::EmbedderMismatch { stored, given: embedder.clone() }),
            None => {
                sqlx::query("INSERT INTO knowledge_embedder (id, name, dimension) VALUES (1, $1, $2)")
                    .bind(&embedder.name)
                    .bind(dimension_i32(embedder)?)
                    .execute(&mut *conn)
                    .await?;
                set_vector_dimension(conn, embedder).await?;
                create_vector_index(conn, embedder).await
            }
        }
    }

    pub(crate) async fn upsert_knowledge(&self, embedder: &EmbedderSpec, e: &NewKnowledge) -> Result<i64, StoreError> {
        let mut tx = self.pool.begin().await?;
        Self::bind_embedder(&mut tx, embedder).await?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO knowledge (signature, summary, embedding, patch_diff, recipe_toml, change_set_id) \
             VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (signature) DO UPDATE SET summary = EXCLUDED.summary, embedding = EXCLUDED.embedding, \
             patch_diff = EXCLUDED.patch_diff, \
             demoted = CASE WHEN EXCLUDED.recipe_toml IS NOT NULL \
                            AND EXCLUDED.recipe_toml IS DISTINCT FROM knowledge.recipe_toml \
                       THEN NULL ELSE knowledge.demoted END, \
             recipe_toml = COALESCE(EXCLUDED.recipe_toml, knowledge.recipe_toml), \
             change_set_id = COALESCE(EXCLUDED.change_set_id, knowledge.change_set_id), \
             updated_at = now() \
             RETURNING id",
        )
        .bind(&e.signature)
        .bind(&e.summary)
        .bind(Vector::from(e.embedding.clone()))
        .bind(&e.patch_diff)
        .bind(&e.recipe_toml)
        .bind(&e.change_set_id)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(id)
    }

    pub(crate) async fn knowledge_entry(&self, id: i64) -> Result<Option<KnowledgeEntry>, StoreError> {
        let row = sqlx::query(concat!("SELECT ", knowledge_columns!(), " FROM knowledge WHERE id = $1"))
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
        if k == 0 {
            return Ok(Vec::new());
        }
        let mut tx = self.pool.begin().await?;
        let stored: Option<(String, i32)> =
            sqlx::query_as("SELECT name, dimension FROM knowledge_embedder WHERE id = 1")
                .fetch_optional(&mut *tx)
                .await?;
        match stored.map(spec_from_row) {
            None => return Ok(Vec::new()),
            Some(stored) if &stored != embedder => {
                return Err(StoreError::EmbedderMismatch { stored, given: embedder.clone() });
            }
            Some(_) => {}
        }
        if k > HNSW_DEFAULT_EF_SEARCH {
            sqlx::query("SELECT set_config('hnsw.ef_search', $1, true)")
                .bind(k.min(1000).to_string())
                .execute(&mut *tx)
                .await?;
        }
        // `<=>` is cosine distance; ordering by it lets the HNSW index answer.
        let rows = sqlx::query(concat!(
            "SELECT ",
            knowledge_columns!(),
            ", (1 - (embedding <=> $1))::real AS similarity FROM knowledge WHERE embedding IS NOT NULL \
             ORDER BY embedding <=> $1 LIMIT $2"
        ))
        .bind(Vector::from(query.to_vec()))
        .bind(i64::try_from(k).unwrap_or(i64::MAX))
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        rows.iter()
            .map(|row| Ok(SimilarEntry { entry: decode::knowledge(row)?, similarity: row.try_get("similarity")? }))
            .collect()
    }

    pub(crate) async fn learned_recipes(&self) -> Result<Vec<KnowledgeEntry>, StoreError> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            knowledge_columns!(),
            " FROM knowledge WHERE recipe_toml IS NOT NULL AND demoted IS NULL ORDER BY successes DESC, uses DESC, id"
        ))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(decode::knowledge).collect()
    }

    pub(crate) async fn bump_knowledge_use(&self, id: i64) -> Result<bool, StoreError> {
        let done = sqlx::query("UPDATE knowledge SET uses = uses + 1, updated_at = now() WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    pub(crate) async fn bump_knowledge_success(&self, id: i64) -> Result<bool, StoreError> {
        let done = sqlx::query("UPDATE knowledge SET successes = successes + 1, updated_at = now() WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    pub(crate) async fn demote_knowledge(&self, id: i64, reason: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("UPDATE knowledge SET demoted = $2, updated_at = now() WHERE id = $1")
            .bind(id)
            .bind(reason)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
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
        let mut tx = self.pool.begin().await?;
        // Writers of knowledge wait until the switch is complete: no vector of the old embedder
        // can be added meanwhile.
        sqlx::query("LOCK TABLE knowledge_embedder, knowledge IN SHARE ROW EXCLUSIVE MODE").execute(&mut *tx).await?;
        let ids: Vec<i64> = sqlx::query_scalar("SELECT id FROM knowledge ORDER BY id").fetch_all(&mut *tx).await?;
        check::check_covers(&ids, vectors)?;
        sqlx::query("DROP INDEX IF EXISTS knowledge_embedding_hnsw").execute(&mut *tx).await?;
        sqlx::query("UPDATE knowledge SET embedding = NULL").execute(&mut *tx).await?;
        set_vector_dimension(&mut tx, embedder).await?;
        for chunk in vectors.chunks(1_000) {
            sqlx::query(
                "UPDATE knowledge SET embedding = u.v::vector, updated_at = now() \
                 FROM UNNEST($1::bigint[], $2::text[]) AS u(id, v) WHERE knowledge.id = u.id",
            )
            .bind(chunk.iter().map(|(id, _)| *id).collect::<Vec<_>>())
            .bind(chunk.iter().map(|(_, v)| vector_text(v)).collect::<Vec<_>>())
            .execute(&mut *tx)
            .await?;
        }
        sqlx::query(
            "INSERT INTO knowledge_embedder (id, name, dimension) VALUES (1, $1, $2) \
             ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, dimension = EXCLUDED.dimension, \
             recorded_at = now()",
        )
        .bind(&embedder.name)
        .bind(dimension_i32(embedder)?)
        .execute(&mut *tx)
        .await?;
        create_vector_index(&mut tx, embedder).await?;
        tx.commit().await?;
        Ok(())
    }

    pub(crate) async fn record_pull_request(&self, pr: &PullRequestRecord) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO pull_requests (number, address, branch, url, state, head_commit) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (number) DO UPDATE SET address = EXCLUDED.address, \
             branch = EXCLUDED.branch, url = EXCLUDED.url, state = EXCLUDED.state, \
             head_commit = EXCLUDED.head_commit, updated_at = now()",
        )
        .bind(check::to_i64("pull request number", pr.number)?)
        .bind(&pr.address)
        .bind(&pr.branch)
        .bind(&pr.url)
        .bind(pr.state.as_str())
        .bind(&pr.head_commit)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub(crate) async fn open_pull_request(&self, address: &str) -> Result<Option<PullRequestRecord>, StoreError> {
        let row = sqlx::query(
            "SELECT number, address, branch, url, state, head_commit FROM pull_requests \
             WHERE address = $1 AND state = 'open' ORDER BY number DESC LIMIT 1",
        )
        .bind(address)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(decode::pull_request).transpose()
    }

    pub(crate) async fn set_pull_request_state(
        &self,
        number: u64,
        state: PullRequestState,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query("UPDATE pull_requests SET state = $2, updated_at = now() WHERE number = $1")
            .bind(check::to_i64("pull request number", number)?)
            .bind(state.as_str())
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    pub(crate) async fn record_reconciliation(&self, r: &ReconciliationRecord) -> Result<(), StoreError> {
        sqlx::query(concat!(
            "INSERT INTO reconciliations (",
            reconciliation_columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, clock_timestamp()) \
             ON CONFLICT (change_set_id) DO UPDATE SET trace_summary = EXCLUDED.trace_summary, \
             actor = EXCLUDED.actor, intent = EXCLUDED.intent, motivation = EXCLUDED.motivation, \
             decision = EXCLUDED.decision, patch_diff = EXCLUDED.patch_diff, branch = EXCLUDED.branch, \
             commit_id = EXCLUDED.commit_id, pull_request = EXCLUDED.pull_request, \
             prompt_tokens = EXCLUDED.prompt_tokens, completion_tokens = EXCLUDED.completion_tokens, \
             model = EXCLUDED.model, duration_ms = EXCLUDED.duration_ms, outcome = EXCLUDED.outcome, \
             recorded_at = EXCLUDED.recorded_at"
        ))
        .bind(&r.change_set_id)
        .bind(&r.trace_summary)
        .bind(&r.actor)
        .bind(&r.intent)
        .bind(&r.motivation)
        .bind(&r.decision)
        .bind(&r.patch_diff)
        .bind(&r.branch)
        .bind(&r.commit_id)
        .bind(&r.pull_request)
        .bind(check::to_i64("prompt_tokens", r.prompt_tokens)?)
        .bind(check::to_i64("completion_tokens", r.completion_tokens)?)
        .bind(&r.model)
        .bind(check::to_i64("duration_ms", r.duration_ms)?)
        .bind(&r.outcome)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub(crate) async fn reconciliation(&self, change_set_id: &str) -> Result<Option<StoredReconciliation>, StoreError> {
        let row = sqlx::query(concat!(
            "SELECT ",
            reconciliation_columns!(),
            " FROM reconciliations WHERE change_set_id = $1"
        ))
        .bind(change_set_id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(decode::reconciliation).transpose()
    }

    pub(crate) async fn recent_reconciliations(&self, limit: usize) -> Result<Vec<StoredReconciliation>, StoreError> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            reconciliation_columns!(),
            " FROM reconciliations ORDER BY recorded_at DESC, change_set_id LIMIT $1"
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
            "SELECT COALESCE(drop_reason, $1) AS reason, count(*) AS n FROM events \
             WHERE disposition = 'dropped' GROUP BY reason ORDER BY n DESC, reason",
        )
        .bind(NO_REASON)
        .fetch_all(&self.pool)
        .await?;
        let counts = |v: Vec<(String, i64)>| v.into_iter().map(|(k, n)| (k, count(n))).collect();
        Ok(Stats {
            events: count(scalar("SELECT count(*) FROM events").await?),
            events_dropped_by_reason: counts(dropped),
            bad_records: count(scalar("SELECT count(*) FROM bad_records").await?),
            change_sets_by_status: counts(
                grouped("SELECT status, count(*) AS n FROM change_sets GROUP BY status ORDER BY n DESC, status")
                    .await?,
            ),
            queue_by_status: counts(
                grouped("SELECT status, count(*) AS n FROM change_set_queue GROUP BY status ORDER BY n DESC, status")
                    .await?,
            ),
            knowledge_entries: count(scalar("SELECT count(*) FROM knowledge").await?),
            learned_recipes: count(
                scalar("SELECT count(*) FROM knowledge WHERE recipe_toml IS NOT NULL AND demoted IS NULL").await?,
            ),
            reconciliations: count(scalar("SELECT count(*) FROM reconciliations").await?),
            prompt_tokens: count(scalar("SELECT COALESCE(sum(prompt_tokens), 0)::bigint FROM reconciliations").await?),
            completion_tokens: count(
                scalar("SELECT COALESCE(sum(completion_tokens), 0)::bigint FROM reconciliations").await?,
            ),
            embedder: self.embedder().await?,
        })
    }
}

async fn set_vector_dimension(conn: &mut PgConnection, embedder: &EmbedderSpec) -> Result<(), StoreError> {
    // A type modifier cannot be a bind parameter; the dimension is a checked integer.
    let sql = format!("ALTER TABLE knowledge ALTER COLUMN embedding TYPE vector({})", dimension_i32(embedder)?);
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&mut *conn).await?;
    Ok(())
}

async fn create_vector_index(conn: &mut PgConnection, embedder: &EmbedderSpec) -> Result<(), StoreError> {
    if embedder.dimension > HNSW_MAX_DIMENSION {
        tracing::warn!(
            embedder = %embedder,
            "vectors have more than {HNSW_MAX_DIMENSION} dimensions, which pgvector's HNSW index does not take; \
             similarity search scans every entry"
        );
        return Ok(());
    }
    // Building the graph in memory is several times faster than spilling; 256 MB holds about
    // 150,000 vectors of 256 dimensions. Local to the transaction.
    sqlx::query("SELECT set_config('maintenance_work_mem', '256MB', true)").execute(&mut *conn).await?;
    sqlx::query(
        "CREATE INDEX IF NOT EXISTS knowledge_embedding_hnsw ON knowledge USING hnsw (embedding vector_cosine_ops)",
    )
    .execute(&mut *conn)
    .await?;
    Ok(())
}

fn dimension_i32(embedder: &EmbedderSpec) -> Result<i32, StoreError> {
    i32::try_from(embedder.dimension)
        .ok()
        .filter(|d| *d > 0 && *d <= 16_000)
        .ok_or_else(|| StoreError::Data(format!("{embedder}: pgvector takes 1 to 16000 dimensions")))
}

fn spec_from_row((name, dimension): (String, i32)) -> EmbedderSpec {
    EmbedderSpec { name, dimension: usize::try_from(dimension).unwrap_or(0) }
}

/// pgvector's text form, `[1,2,3]`, for binding vectors inside arrays.
fn vector_text(v: &[f32]) -> String {
    let parts: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    format!("[{}]", parts.join(","))
}

/// Inserts events whose id is not recorded yet. With `ids`, returns the ids inserted; without,
/// as many empty strings (only their number is wanted, and nothing is sent back).
async fn insert_events(
    conn: &mut PgConnection,
    events: &[&EventRecord],
    raws: &[String],
    ids: bool,
) -> Result<Vec<String>, StoreError> {
    let sql = if ids { concat!(insert_events_sql!(), " RETURNING event_id") } else { insert_events_sql!() };
    let query = sqlx::query(sql)
        .bind(events.iter().map(|e| e.event_id.clone()).collect::<Vec<_>>())
        .bind(events.iter().map(|e| e.event_time).collect::<Vec<_>>())
        .bind(events.iter().map(|e| e.source.clone()).collect::<Vec<_>>())
        .bind(events.iter().map(|e| e.name.clone()).collect::<Vec<_>>())
        .bind(events.iter().map(|e| e.actor.clone()).collect::<Vec<_>>())
        .bind(events.iter().map(|e| e.disposition.as_str().to_owned()).collect::<Vec<_>>())
        .bind(events.iter().map(|e| e.drop_reason.clone()).collect::<Vec<_>>())
        .bind(raws.to_vec());
    if ids {
        let rows = query.fetch_all(&mut *conn).await?;
        rows.iter().map(|row| row.try_get::<String, _>("event_id").map_err(StoreError::from)).collect()
    } else {
        let done = query.execute(&mut *conn).await?;
        Ok(vec![String::new(); done.rows_affected() as usize])
    }
}

/// Inserts `cs` into the work queue or merges it into the pending change set of its id, inside
/// the caller's transaction. `false`, changing nothing, when that id is no longer pending.
async fn save_pending_in(conn: &mut PgConnection, cs: &PendingChangeSet) -> Result<bool, StoreError> {
    let inserted = sqlx::query(
        "INSERT INTO change_set_queue (id, resource_key, actor_session, first_event_time, last_event_time, \
         event_ids) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING",
    )
    .bind(&cs.id)
    .bind(&cs.resource_key)
    .bind(&cs.actor_session)
    .bind(cs.first_event_time)
    .bind(cs.last_event_time)
    .bind(&cs.event_ids)
    .execute(&mut *conn)
    .await?;
    if inserted.rows_affected() == 1 {
        return Ok(true);
    }
    let row = sqlx::query(concat!("SELECT ", queue_columns!(), " FROM change_set_queue WHERE id = $1 FOR UPDATE"))
        .bind(&cs.id)
        .fetch_one(&mut *conn)
        .await?;
    let stored = decode::queued(&row)?;
    if stored.status != QueueStatus::Pending {
        return Ok(false);
    }
    let merged = pending::merge_pending(&stored.change_set, cs);
    if merged != stored.change_set {
        sqlx::query(
            "UPDATE change_set_queue SET resource_key = $2, actor_session = $3, first_event_time = $4, \
             last_event_time = $5, event_ids = $6, updated_at = now() WHERE id = $1",
        )
        .bind(&merged.id)
        .bind(&merged.resource_key)
        .bind(&merged.actor_session)
        .bind(merged.first_event_time)
        .bind(merged.last_event_time)
        .bind(&merged.event_ids)
        .execute(&mut *conn)
        .await?;
    }
    Ok(true)
}

/// The advisory lock of a resource key (32 bits of FNV-1a; two keys sharing one only wait for
/// each other).
fn key_lock(key: &str) -> i32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in key.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    i32::from_ne_bytes(hash.to_ne_bytes())
}
