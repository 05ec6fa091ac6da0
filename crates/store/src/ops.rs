//! The store's operations, written once for both backends: the SQL (Postgres dialect, which SQLite
//! reads after the rewrite in `sql.rs`) and what is done with its rows. What a backend does its own
//! way it does behind [`Dialect`]; [`Store`](crate::Store) checks the input and calls these.

use std::collections::HashSet;

use chrono::{DateTime, Utc};

use crate::StoreError;
use crate::check::{self, to_i64};
use crate::decode::{self, Columns, count};
use crate::pending::{self, Placement};
use crate::records::{
    ChangeSetRecord, ClaimOutcome, CoveredChangeSet, DecisionRecord, Delivery, DeliveryReceipt, Disposition,
    EmbedderSpec, EventRecord, FieldChangeRecord, FieldOwner, KnowledgeEntry, KnowledgeText, LoggedDecision,
    NewKnowledge, PendingChangeSet, PendingPlanner, PullRequestRecord, PullRequestState, QueueStatus, QueuedChangeSet,
    ReconciliationRecord, SimilarEntry, Stats, StoredReconciliation,
};
use crate::sql::{Dialect, Exec, Lock, Stmt, execute, fetch_all, fetch_one, fetch_optional, stmt};

/// How many ids go into one `= ANY($1)` list.
const ID_CHUNK: usize = 10_000;

/// Drop reason reported by `stats` for dropped events recorded without one.
const NO_REASON: &str = "(none)";

/// One bad record; the store's time is when it was recorded.
pub(crate) const INSERT_BAD_RECORD: &str =
    "INSERT INTO bad_records (location, reason, raw, recorded_at) VALUES ($1, $2, $3, now())";

/// The first row `s` gives, decoded; `None` when it gives none.
async fn find<D: Dialect, T>(
    db: &D,
    s: Stmt<'_>,
    decode: impl Fn(&<D::Pool as Exec>::Row) -> Result<T, StoreError>,
) -> Result<Option<T>, StoreError> {
    fetch_optional(&mut db.pool(), s).await?.as_ref().map(decode).transpose()
}

/// Every row `s` gives, decoded.
async fn list<D: Dialect, T>(
    db: &D,
    s: Stmt<'_>,
    decode: impl Fn(&<D::Pool as Exec>::Row) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    fetch_all(&mut db.pool(), s).await?.iter().map(decode).collect()
}

/// `n` rows as a `LIMIT` (at most `i64::MAX`).
fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

pub(crate) async fn seen_event_ids<D: Dialect>(db: &D, ids: &[String]) -> Result<HashSet<String>, StoreError> {
    let mut seen = HashSet::new();
    for chunk in ids.chunks(ID_CHUNK) {
        let found =
            fetch_all(&mut db.pool(), stmt("SELECT event_id FROM events WHERE event_id = ANY($1)").text_list(chunk))
                .await?;
        for row in &found {
            seen.insert(row.text("event_id")?);
        }
    }
    Ok(seen)
}

pub(crate) async fn events_by_id<D: Dialect>(db: &D, ids: &[String]) -> Result<Vec<EventRecord>, StoreError> {
    let mut out = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(ID_CHUNK) {
        let rows = fetch_all(
            &mut db.pool(),
            stmt(
                "SELECT event_id, event_time, source, name, actor, disposition, drop_reason, CAST(raw AS TEXT) AS raw \
                 FROM events \
                 WHERE event_id = ANY($1)",
            )
            .text_list(chunk),
        )
        .await?;
        for row in &rows {
            out.push(decode::event(row)?);
        }
    }
    Ok(out)
}

pub(crate) async fn record_events<D: Dialect>(db: &D, events: &[EventRecord]) -> Result<usize, StoreError> {
    if events.is_empty() {
        return Ok(0);
    }
    let rows = events.iter().map(|e| Ok((e, check::raw_text(e)?))).collect::<Result<Vec<_>, StoreError>>()?;
    let mut tx = db.begin().await?;
    let new = D::insert_events(&mut tx, &rows, false).await?.len();
    D::commit(tx).await?;
    Ok(new)
}

pub(crate) async fn record_bad_record<D: Dialect>(
    db: &D,
    location: &str,
    reason: &str,
    raw: &str,
) -> Result<(), StoreError> {
    execute(&mut db.pool(), stmt(INSERT_BAD_RECORD).text(location).text(reason).text(raw)).await?;
    Ok(())
}

/// One transaction. Concurrent replicas: the resource keys are locked first (Postgres: advisory
/// locks, in one order, so two deliveries never deadlock on them; SQLite has one writer at a time);
/// an event id another transaction is inserting waits for it and then counts as already recorded,
/// so only the transaction that really recorded an event forms change sets from it; pending rows
/// are read `FOR UPDATE`, so a claim in between skips them (`SKIP LOCKED`) instead of claiming a
/// change set being extended.
pub(crate) async fn record_delivery<D: Dialect>(
    db: &D,
    delivery: &Delivery,
    planner: &dyn PendingPlanner,
) -> Result<DeliveryReceipt, StoreError> {
    // Sorted by id, so two deliveries sharing events insert them in one order (no deadlock).
    let mut rows =
        delivery.events.iter().map(|e| Ok((e, check::raw_text(e)?))).collect::<Result<Vec<_>, StoreError>>()?;
    rows.sort_by(|(a, _), (b, _)| a.event_id.cmp(&b.event_id));
    let keys: HashSet<&str> = delivery.resource_keys.iter().map(String::as_str).collect();

    let mut tx = db.begin().await?;
    D::lock(&mut tx, Lock::ResourceKeys(&keys)).await?;
    let mut inserted: HashSet<String> = D::insert_events(&mut tx, &rows, true).await?.into_iter().collect();
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
    D::insert_bad_records(&mut tx, &delivery.bad_records).await?;
    if !new_kept.is_empty() {
        let key_list: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        let rows = fetch_all(
            &mut tx,
            stmt(concat!(
                "SELECT ",
                queue_columns!(),
                " FROM change_set_queue WHERE status = 'pending' AND resource_key = ANY($1) \
                 ORDER BY last_event_time, id FOR UPDATE"
            ))
            .text_list(&key_list),
        )
        .await?;
        let open = rows.iter().map(|row| decode::queued(row).map(|q| q.change_set)).collect::<Result<_, _>>()?;
        for addition in &pending::plan_additions(planner, &new_kept, open, &keys)? {
            let mut placement = Placement::new(planner, addition);
            while !save_pending_in(&mut tx, placement.candidate()).await? {
                placement.retry()?;
            }
            receipt.change_sets.push(placement.into_id());
        }
    }
    D::commit(tx).await?;
    Ok(receipt)
}

pub(crate) async fn record_change_set<D: Dialect>(db: &D, cs: &ChangeSetRecord) -> Result<(), StoreError> {
    let mut tx = db.begin().await?;
    // The WHERE clause leaves an identical row untouched, updated_at included.
    let upsert = stmt(
        "INSERT INTO change_sets \
         (id, resource_id, address, actor, via, first_event_time, last_event_time, event_ids, status, \
          decision, rule, rationale, branch, commit_id, diff, notes, stack, workspace, state_version, \
          recorded_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, \
                 now(), now()) \
         ON CONFLICT (id) DO UPDATE SET \
          resource_id = EXCLUDED.resource_id, address = EXCLUDED.address, actor = EXCLUDED.actor, \
          via = EXCLUDED.via, first_event_time = EXCLUDED.first_event_time, \
          last_event_time = EXCLUDED.last_event_time, event_ids = EXCLUDED.event_ids, \
          status = EXCLUDED.status, decision = EXCLUDED.decision, rule = EXCLUDED.rule, \
          rationale = EXCLUDED.rationale, branch = EXCLUDED.branch, commit_id = EXCLUDED.commit_id, \
          diff = EXCLUDED.diff, notes = EXCLUDED.notes, stack = EXCLUDED.stack, \
          workspace = EXCLUDED.workspace, state_version = EXCLUDED.state_version, updated_at = now() \
         WHERE (change_sets.resource_id, change_sets.address, change_sets.actor, change_sets.via, \
                change_sets.first_event_time, change_sets.last_event_time, change_sets.event_ids, \
                change_sets.status, change_sets.decision, change_sets.rule, change_sets.rationale, \
                change_sets.branch, change_sets.commit_id, change_sets.diff, change_sets.notes, \
                change_sets.stack, change_sets.workspace, change_sets.state_version) \
               IS DISTINCT FROM \
               (EXCLUDED.resource_id, EXCLUDED.address, EXCLUDED.actor, EXCLUDED.via, \
                EXCLUDED.first_event_time, EXCLUDED.last_event_time, EXCLUDED.event_ids, EXCLUDED.status, \
                EXCLUDED.decision, EXCLUDED.rule, EXCLUDED.rationale, EXCLUDED.branch, EXCLUDED.commit_id, \
                EXCLUDED.diff, EXCLUDED.notes, EXCLUDED.stack, EXCLUDED.workspace, EXCLUDED.state_version)",
    )
    .text(&cs.id)
    .optional_text(cs.resource_id.as_deref())
    .optional_text(cs.address.as_deref())
    .text(&cs.actor)
    .text(&cs.via)
    .time(cs.first_event_time)
    .time(cs.last_event_time)
    .text_list(&cs.event_ids)
    .text(&cs.status)
    .optional_text(cs.decision.as_deref())
    .optional_text(cs.rule.as_deref())
    .optional_text(cs.rationale.as_deref())
    .optional_text(cs.branch.as_deref())
    .optional_text(cs.commit_id.as_deref())
    .optional_text(cs.diff.as_deref())
    .text_list(&cs.notes)
    .optional_text(cs.stack.as_deref())
    .optional_text(cs.workspace.as_deref())
    .optional_text(cs.state_version.as_deref());
    execute(&mut tx, upsert).await?;
    if let Some(decision) = &cs.decision {
        let audit = stmt(
            "INSERT INTO audit_log (change_set_id, decision, rule, rationale, recorded_at) \
             VALUES ($1, $2, $3, $4, now())",
        )
        .text(&cs.id)
        .text(decision)
        .optional_text(cs.rule.as_deref())
        .optional_text(cs.rationale.as_deref());
        execute(&mut tx, audit).await?;
    }
    D::commit(tx).await
}

pub(crate) async fn change_set<D: Dialect>(db: &D, id: &str) -> Result<Option<ChangeSetRecord>, StoreError> {
    find(
        db,
        stmt(
            "SELECT id, resource_id, address, actor, via, first_event_time, last_event_time, event_ids, status, \
             decision, rule, rationale, branch, commit_id, diff, notes, stack, workspace, state_version FROM change_sets WHERE id = $1",
        )
        .text(id),
        decode::change_set,
    )
    .await
}

pub(crate) async fn waiting_for_a_person<D: Dialect>(db: &D, max: usize) -> Result<Vec<ChangeSetRecord>, StoreError> {
    list(
        db,
        stmt(
            "SELECT id, resource_id, address, actor, via, first_event_time, last_event_time, event_ids, status, \
             decision, rule, rationale, branch, commit_id, diff, notes, stack, workspace, state_version FROM change_sets c \
             WHERE (status IN ('escalated', 'revert') \
                 OR (status = 'reconciled' AND EXISTS (SELECT 1 FROM audit_log s WHERE s.change_set_id = c.id \
                     AND s.decision IN ('escalate', 'revert')))) \
             AND NOT EXISTS (SELECT 1 FROM change_sets later WHERE later.address = c.address \
                 AND later.stack IS NOT DISTINCT FROM c.stack \
                 AND later.workspace IS NOT DISTINCT FROM c.workspace \
                 AND later.status = 'reconciled' AND later.last_event_time > c.last_event_time) \
             AND NOT EXISTS (SELECT 1 FROM audit_log a WHERE a.change_set_id = c.id \
                 AND (a.decision LIKE 'person-%' OR a.decision = 'resolved')) \
             ORDER BY last_event_time, id LIMIT $1",
        )
        .integer(limit(max)),
        decode::change_set,
    )
    .await
}

pub(crate) async fn record_decision<D: Dialect>(db: &D, d: &DecisionRecord) -> Result<i64, StoreError> {
    let mut tx = db.begin().await?;
    // Decisions of one change set take turns, so the "same as the last one" check cannot race.
    D::lock(&mut tx, Lock::Decisions(&d.change_set_id)).await?;
    let last = fetch_optional(
        &mut tx,
        stmt(
            "SELECT id, decision, rule, rationale, evidence FROM audit_log WHERE change_set_id = $1 \
             ORDER BY id DESC LIMIT 1",
        )
        .text(&d.change_set_id),
    )
    .await?;
    if let Some(row) = last {
        let same_evidence = row.json("evidence", format_args!("audit_log")).ok().as_ref() == Some(&d.evidence);
        if row.text("decision")? == d.kind
            && row.optional_text("rule")? == d.rule
            && row.optional_text("rationale")? == d.rationale
            && same_evidence
        {
            return row.integer("id");
        }
    }
    let row = fetch_one(
        &mut tx,
        stmt(
            "INSERT INTO audit_log (change_set_id, decision, rule, rationale, evidence, recorded_at) \
             VALUES ($1, $2, $3, $4, $5, now()) RETURNING id",
        )
        .text(&d.change_set_id)
        .text(&d.kind)
        .optional_text(d.rule.as_deref())
        .optional_text(d.rationale.as_deref())
        .json(&d.evidence),
    )
    .await?;
    let id = row.integer("id")?;
    D::commit(tx).await?;
    Ok(id)
}

pub(crate) async fn decisions<D: Dialect>(db: &D, change_set_id: &str) -> Result<Vec<LoggedDecision>, StoreError> {
    list(
        db,
        stmt(
            "SELECT id, change_set_id, decision, rule, rationale, evidence, recorded_at FROM audit_log \
             WHERE change_set_id = $1 ORDER BY id",
        )
        .text(change_set_id),
        decode::logged_decision,
    )
    .await
}

pub(crate) async fn save_pending<D: Dialect>(db: &D, cs: &PendingChangeSet) -> Result<bool, StoreError> {
    let mut tx = db.begin().await?;
    let saved = save_pending_in(&mut tx, cs).await?;
    D::commit(tx).await?;
    Ok(saved)
}

/// Inserts `cs` into the work queue or merges it into the pending change set of its id, inside
/// the caller's transaction. `false`, changing nothing, when that id is no longer pending.
async fn save_pending_in<E: Exec>(tx: &mut E, cs: &PendingChangeSet) -> Result<bool, StoreError> {
    let insert = stmt(
        "INSERT INTO change_set_queue (id, resource_key, actor_session, first_event_time, last_event_time, \
         event_ids, status, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, 'pending', now(), now()) \
         ON CONFLICT (id) DO NOTHING",
    );
    if execute(tx, pending_values(insert, cs)).await? == 1 {
        return Ok(true);
    }
    let row = fetch_one(
        tx,
        stmt(concat!("SELECT ", queue_columns!(), " FROM change_set_queue WHERE id = $1 FOR UPDATE")).text(&cs.id),
    )
    .await?;
    let stored = decode::queued(&row)?;
    if stored.status != QueueStatus::Pending {
        return Ok(false);
    }
    let merged = pending::merge_pending(&stored.change_set, cs);
    if merged != stored.change_set {
        let update = stmt(
            "UPDATE change_set_queue SET resource_key = $2, actor_session = $3, first_event_time = $4, \
             last_event_time = $5, event_ids = $6, updated_at = now() WHERE id = $1",
        );
        execute(tx, pending_values(update, &merged)).await?;
    }
    Ok(true)
}

/// `$1` to `$6` of a pending change set: id, resource key, actor session, times, event ids.
fn pending_values<'a>(s: Stmt<'a>, cs: &'a PendingChangeSet) -> Stmt<'a> {
    s.text(&cs.id)
        .text(&cs.resource_key)
        .text(&cs.actor_session)
        .time(cs.first_event_time)
        .time(cs.last_event_time)
        .text_list(&cs.event_ids)
}

pub(crate) async fn unfinished_change_sets<D: Dialect>(db: &D) -> Result<Vec<QueuedChangeSet>, StoreError> {
    list(
        db,
        stmt(concat!(
            "SELECT ",
            queue_columns!(),
            " FROM change_set_queue WHERE status IN ('pending', 'claimed') ORDER BY last_event_time, id"
        )),
        decode::queued,
    )
    .await
}

pub(crate) async fn queued_change_set<D: Dialect>(db: &D, id: &str) -> Result<Option<QueuedChangeSet>, StoreError> {
    find(
        db,
        stmt(concat!("SELECT ", queue_columns!(), " FROM change_set_queue WHERE id = $1")).text(id),
        decode::queued,
    )
    .await
}

/// One statement, so one transaction on either backend. Postgres: `SKIP LOCKED`, rows another
/// replica is claiming right now are passed over, not waited for. SQLite: a writing statement
/// holds the write lock from its first read, so no other process claims in between.
pub(crate) async fn claim_due_change_sets<D: Dialect>(
    db: &D,
    owner: &str,
    quiet_before: DateTime<Utc>,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
    limit_to: usize,
) -> Result<Vec<QueuedChangeSet>, StoreError> {
    let mut claimed = list(
        db,
        stmt(concat!(
            "UPDATE change_set_queue SET status = 'claimed', claimed_by = $1, lease_until = $2, \
             attempts = attempts + 1, updated_at = now() \
             WHERE id IN (SELECT id FROM change_set_queue \
                          WHERE (status = 'pending' AND last_event_time <= $3) \
                             OR (status = 'claimed' AND lease_until < $4) \
                          ORDER BY last_event_time, id LIMIT $5 FOR UPDATE SKIP LOCKED) \
             RETURNING ",
            queue_columns!()
        ))
        .text(owner)
        .time(lease_until)
        .time(quiet_before)
        .time(now)
        .integer(limit(limit_to)),
        decode::queued,
    )
    .await?;
    claimed.sort_by(|a, b| {
        (a.change_set.last_event_time, &a.change_set.id).cmp(&(b.change_set.last_event_time, &b.change_set.id))
    });
    Ok(claimed)
}

pub(crate) async fn renew_claim<D: Dialect>(
    db: &D,
    id: &str,
    owner: &str,
    lease_until: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let renew = stmt(
        "UPDATE change_set_queue SET lease_until = $3, updated_at = now() \
         WHERE id = $1 AND status = 'claimed' AND claimed_by = $2",
    );
    Ok(execute(&mut db.pool(), renew.text(id).text(owner).time(lease_until)).await? == 1)
}

pub(crate) async fn finish_claim<D: Dialect>(
    db: &D,
    id: &str,
    owner: &str,
    outcome: &ClaimOutcome,
) -> Result<bool, StoreError> {
    let (status, failure, keep_owner) = outcome.queue_update();
    let finish = stmt(
        "UPDATE change_set_queue SET status = $3, failure = $4, lease_until = NULL, \
         claimed_by = CASE WHEN $5 THEN claimed_by END, updated_at = now() \
         WHERE id = $1 AND status = 'claimed' AND claimed_by = $2",
    );
    let finish = finish.text(id).text(owner).text(status.as_str()).optional_text(failure).boolean(keep_owner);
    Ok(execute(&mut db.pool(), finish).await? == 1)
}

pub(crate) async fn session_change_sets<D: Dialect>(
    db: &D,
    actor_session: &str,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    limit_to: usize,
) -> Result<Vec<QueuedChangeSet>, StoreError> {
    list(
        db,
        stmt(concat!(
            "SELECT ",
            queue_columns!(),
            " FROM change_set_queue WHERE actor_session = $1 AND last_event_time >= $2 AND first_event_time <= $3 \
             ORDER BY first_event_time, id LIMIT $4"
        ))
        .text(actor_session)
        .time(from)
        .time(to)
        .integer(limit(limit_to)),
        decode::queued,
    )
    .await
}

/// One transaction: every row or none.
pub(crate) async fn record_covered<D: Dialect>(db: &D, covered: &[CoveredChangeSet]) -> Result<(), StoreError> {
    let mut tx = db.begin().await?;
    for c in covered {
        let upsert = stmt(
            "INSERT INTO covered_change_sets (change_set_id, by_change_set_id, branch, commit_id, delivery, \
             recorded_at) VALUES ($1, $2, $3, $4, $5, now()) \
             ON CONFLICT (change_set_id) DO UPDATE SET by_change_set_id = EXCLUDED.by_change_set_id, \
             branch = EXCLUDED.branch, commit_id = EXCLUDED.commit_id, delivery = EXCLUDED.delivery, \
             recorded_at = now()",
        );
        let upsert = upsert
            .text(&c.change_set_id)
            .text(&c.by_change_set_id)
            .text(&c.branch)
            .text(&c.commit_id)
            .json(&c.delivery);
        execute(&mut tx, upsert).await?;
    }
    D::commit(tx).await?;
    Ok(())
}

pub(crate) async fn covered_change_set<D: Dialect>(
    db: &D,
    change_set_id: &str,
) -> Result<Option<CoveredChangeSet>, StoreError> {
    find(
        db,
        stmt(
            "SELECT change_set_id, by_change_set_id, branch, commit_id, delivery FROM covered_change_sets \
             WHERE change_set_id = $1",
        )
        .text(change_set_id),
        decode::covered,
    )
    .await
}

pub(crate) async fn checkpoint<D: Dialect>(db: &D, key: &str) -> Result<Option<String>, StoreError> {
    find(db, stmt("SELECT value FROM checkpoints WHERE key = $1").text(key), |row| row.text("value")).await
}

pub(crate) async fn set_checkpoint<D: Dialect>(db: &D, key: &str, value: &str) -> Result<(), StoreError> {
    let set = stmt(
        "INSERT INTO checkpoints (key, value, updated_at) VALUES ($1, $2, now()) \
         ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()",
    );
    execute(&mut db.pool(), set.text(key).text(value)).await?;
    Ok(())
}

/// `$1` to `$6` of a field change: address, attribute path, actor, event id and time, change set.
pub(crate) fn field_change_values<'a>(s: Stmt<'a>, c: &'a FieldChangeRecord) -> Stmt<'a> {
    s.text(&c.address)
        .text(&c.attribute_path)
        .text(&c.actor)
        .text(&c.event_id)
        .time(c.event_time)
        .optional_text(c.change_set_id.as_deref())
}

pub(crate) async fn field_history<D: Dialect>(
    db: &D,
    address: &str,
    attribute_path: &str,
    since: DateTime<Utc>,
    limit_to: usize,
) -> Result<Vec<FieldChangeRecord>, StoreError> {
    let mut changes = list(
        db,
        stmt(
            "SELECT address, attribute_path, actor, event_id, event_time, change_set_id FROM field_changes \
             WHERE address = $1 AND attribute_path = $2 AND event_time >= $3 \
             ORDER BY event_time DESC, event_id DESC LIMIT $4",
        )
        .text(address)
        .text(attribute_path)
        .time(since)
        .integer(limit(limit_to)),
        decode::field_change,
    )
    .await?;
    changes.reverse();
    Ok(changes)
}

pub(crate) async fn set_field_owner<D: Dialect>(
    db: &D,
    address: &str,
    attribute_path: &str,
    owner: &str,
    rule: Option<&str>,
) -> Result<(), StoreError> {
    let set = stmt(
        "INSERT INTO field_owners (address, attribute_path, owner, rule, updated_at) VALUES ($1, $2, $3, $4, now()) \
         ON CONFLICT (address, attribute_path) DO UPDATE SET owner = EXCLUDED.owner, rule = EXCLUDED.rule, \
         updated_at = now() \
         WHERE (field_owners.owner, field_owners.rule) IS DISTINCT FROM (EXCLUDED.owner, EXCLUDED.rule)",
    );
    execute(&mut db.pool(), set.text(address).text(attribute_path).text(owner).optional_text(rule)).await?;
    Ok(())
}

pub(crate) async fn field_owner<D: Dialect>(
    db: &D,
    address: &str,
    attribute_path: &str,
) -> Result<Option<FieldOwner>, StoreError> {
    find(
        db,
        stmt(
            "SELECT address, attribute_path, owner, rule, updated_at FROM field_owners \
             WHERE address = $1 AND attribute_path = $2",
        )
        .text(address)
        .text(attribute_path),
        decode::field_owner,
    )
    .await
}

pub(crate) async fn close<D: Dialect>(db: &D) {
    db.close().await
}

pub(crate) async fn record_field_changes<D: Dialect>(
    db: &D,
    changes: &[FieldChangeRecord],
) -> Result<usize, StoreError> {
    db.record_field_changes(changes).await
}

pub(crate) async fn similar_knowledge<D: Dialect>(
    db: &D,
    embedder: &EmbedderSpec,
    query: &[f32],
    k: usize,
) -> Result<Vec<SimilarEntry>, StoreError> {
    db.nearest(embedder, query, k).await
}

/// Whether `stored` (the embedder the stored vectors come from) is `given`: `false` when none is
/// stored yet, an error when another one is.
pub(crate) fn is_embedder(stored: Option<EmbedderSpec>, given: &EmbedderSpec) -> Result<bool, StoreError> {
    match stored {
        None => Ok(false),
        Some(stored) if &stored != given => Err(StoreError::EmbedderMismatch { stored, given: given.clone() }),
        Some(_) => Ok(true),
    }
}

/// The embedder the stored vectors come from, as `knowledge_embedder` records it.
pub(crate) async fn stored_embedder<E: Exec>(on: &mut E) -> Result<Option<EmbedderSpec>, StoreError> {
    fetch_optional(on, stmt("SELECT name, dimension FROM knowledge_embedder WHERE id = 1"))
        .await?
        .as_ref()
        .map(decode::embedder)
        .transpose()
}

pub(crate) async fn embedder<D: Dialect>(db: &D) -> Result<Option<EmbedderSpec>, StoreError> {
    stored_embedder(&mut db.pool()).await
}

/// Within a transaction: records `embedder` if none is (readying the vector column), or refuses a
/// different one.
async fn bind_embedder<D: Dialect>(tx: &mut D::Tx, embedder: &EmbedderSpec) -> Result<(), StoreError> {
    let mut stored = fetch_optional(tx, stmt("SELECT name, dimension FROM knowledge_embedder WHERE id = 1 FOR SHARE"))
        .await?
        .as_ref()
        .map(decode::embedder)
        .transpose()?;
    if stored.is_none() {
        // First use: take the table so two first writers do not both set it up.
        D::lock(tx, Lock::Embedder).await?;
        stored = stored_embedder(tx).await?;
    }
    if is_embedder(stored, embedder)? {
        return Ok(());
    }
    D::prepare_vectors(tx, embedder).await?;
    let record = stmt("INSERT INTO knowledge_embedder (id, name, dimension, recorded_at) VALUES (1, $1, $2, now())");
    execute(tx, record.text(&embedder.name).integer(dimension(embedder))).await?;
    Ok(())
}

fn dimension(embedder: &EmbedderSpec) -> i64 {
    i64::try_from(embedder.dimension).unwrap_or(i64::MAX)
}

pub(crate) async fn upsert_knowledge<D: Dialect>(
    db: &D,
    embedder: &EmbedderSpec,
    e: &NewKnowledge,
) -> Result<i64, StoreError> {
    let mut tx = db.begin().await?;
    bind_embedder::<D>(&mut tx, embedder).await?;
    let row = fetch_one(
        &mut tx,
        stmt(
            "INSERT INTO knowledge (signature, summary, embedding, patch_diff, recipe_toml, change_set_id, \
             created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, now(), now()) \
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
        .text(&e.signature)
        .text(&e.summary)
        .vector(&e.embedding)
        .optional_text(e.patch_diff.as_deref())
        .optional_text(e.recipe_toml.as_deref())
        .optional_text(e.change_set_id.as_deref()),
    )
    .await?;
    let id = row.integer("id")?;
    D::commit(tx).await?;
    Ok(id)
}

pub(crate) async fn knowledge_entry<D: Dialect>(db: &D, id: i64) -> Result<Option<KnowledgeEntry>, StoreError> {
    find(
        db,
        stmt(concat!("SELECT ", knowledge_columns!(), " FROM knowledge WHERE id = $1")).integer(id),
        decode::knowledge,
    )
    .await
}

pub(crate) async fn learned_recipes<D: Dialect>(db: &D) -> Result<Vec<KnowledgeEntry>, StoreError> {
    list(
        db,
        stmt(concat!(
            "SELECT ",
            knowledge_columns!(),
            " FROM knowledge WHERE recipe_toml IS NOT NULL AND demoted IS NULL ORDER BY successes DESC, uses DESC, id"
        )),
        decode::knowledge,
    )
    .await
}

pub(crate) async fn bump_knowledge_use<D: Dialect>(db: &D, id: i64) -> Result<bool, StoreError> {
    let bump = stmt("UPDATE knowledge SET uses = uses + 1, updated_at = now() WHERE id = $1");
    Ok(execute(&mut db.pool(), bump.integer(id)).await? == 1)
}

pub(crate) async fn bump_knowledge_success<D: Dialect>(db: &D, id: i64) -> Result<bool, StoreError> {
    let bump = stmt("UPDATE knowledge SET successes = successes + 1, updated_at = now() WHERE id = $1");
    Ok(execute(&mut db.pool(), bump.integer(id)).await? == 1)
}

pub(crate) async fn demote_knowledge<D: Dialect>(db: &D, id: i64, reason: &str) -> Result<bool, StoreError> {
    let demote = stmt("UPDATE knowledge SET demoted = $2, updated_at = now() WHERE id = $1");
    Ok(execute(&mut db.pool(), demote.integer(id).text(reason)).await? == 1)
}

pub(crate) async fn knowledge_texts<D: Dialect>(db: &D) -> Result<Vec<KnowledgeText>, StoreError> {
    list(db, stmt("SELECT id, signature FROM knowledge ORDER BY id"), |row| {
        Ok(KnowledgeText { id: row.integer("id")?, signature: row.text("signature")? })
    })
    .await
}

pub(crate) async fn replace_embeddings<D: Dialect>(
    db: &D,
    embedder: &EmbedderSpec,
    vectors: &[(i64, Vec<f32>)],
) -> Result<(), StoreError> {
    let mut tx = db.begin().await?;
    // Writers of knowledge wait until the switch is complete: no vector of the old embedder can be
    // added meanwhile.
    D::lock(&mut tx, Lock::Knowledge).await?;
    let ids = fetch_all(&mut tx, stmt("SELECT id FROM knowledge ORDER BY id"))
        .await?
        .iter()
        .map(|row| row.integer("id"))
        .collect::<Result<Vec<_>, _>>()?;
    check::check_covers(&ids, vectors)?;
    D::write_vectors(&mut tx, embedder, vectors).await?;
    let record = stmt(
        "INSERT INTO knowledge_embedder (id, name, dimension, recorded_at) VALUES (1, $1, $2, now()) \
         ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, dimension = EXCLUDED.dimension, \
         recorded_at = now()",
    );
    execute(&mut tx, record.text(&embedder.name).integer(dimension(embedder))).await?;
    D::commit(tx).await
}

pub(crate) async fn record_pull_request<D: Dialect>(db: &D, pr: &PullRequestRecord) -> Result<(), StoreError> {
    let record = stmt(
        "INSERT INTO pull_requests (number, address, branch, url, state, head_commit, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, now(), now()) ON CONFLICT (number) DO UPDATE SET \
         address = EXCLUDED.address, branch = EXCLUDED.branch, url = EXCLUDED.url, state = EXCLUDED.state, \
         head_commit = EXCLUDED.head_commit, updated_at = now()",
    )
    .integer(to_i64("pull request number", pr.number)?)
    .text(&pr.address)
    .text(&pr.branch)
    .text(&pr.url)
    .text(pr.state.as_str())
    .text(&pr.head_commit);
    execute(&mut db.pool(), record).await?;
    Ok(())
}

pub(crate) async fn open_pull_request<D: Dialect>(
    db: &D,
    address: &str,
) -> Result<Option<PullRequestRecord>, StoreError> {
    find(
        db,
        stmt(
            "SELECT number, address, branch, url, state, head_commit FROM pull_requests \
             WHERE address = $1 AND state = 'open' ORDER BY number DESC LIMIT 1",
        )
        .text(address),
        decode::pull_request,
    )
    .await
}

pub(crate) async fn set_pull_request_state<D: Dialect>(
    db: &D,
    number: u64,
    state: PullRequestState,
) -> Result<bool, StoreError> {
    let set = stmt("UPDATE pull_requests SET state = $2, updated_at = now() WHERE number = $1");
    let set = set.integer(to_i64("pull request number", number)?).text(state.as_str());
    Ok(execute(&mut db.pool(), set).await? == 1)
}

pub(crate) async fn record_reconciliation<D: Dialect>(db: &D, r: &ReconciliationRecord) -> Result<(), StoreError> {
    let record = stmt(concat!(
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
    .text(&r.change_set_id)
    .text(&r.trace_summary)
    .text(&r.actor)
    .text(&r.intent)
    .text(&r.motivation)
    .text(&r.decision)
    .optional_text(r.patch_diff.as_deref())
    .optional_text(r.branch.as_deref())
    .optional_text(r.commit_id.as_deref())
    .optional_text(r.pull_request.as_deref())
    .integer(to_i64("prompt_tokens", r.prompt_tokens)?)
    .integer(to_i64("completion_tokens", r.completion_tokens)?)
    .optional_text(r.model.as_deref())
    .integer(to_i64("duration_ms", r.duration_ms)?)
    .text(&r.outcome);
    execute(&mut db.pool(), record).await?;
    Ok(())
}

pub(crate) async fn reconciliation<D: Dialect>(
    db: &D,
    change_set_id: &str,
) -> Result<Option<StoredReconciliation>, StoreError> {
    find(
        db,
        stmt(concat!("SELECT ", reconciliation_columns!(), " FROM reconciliations WHERE change_set_id = $1"))
            .text(change_set_id),
        decode::reconciliation,
    )
    .await
}

pub(crate) async fn recent_reconciliations<D: Dialect>(
    db: &D,
    limit_to: usize,
) -> Result<Vec<StoredReconciliation>, StoreError> {
    list(
        db,
        stmt(concat!(
            "SELECT ",
            reconciliation_columns!(),
            " FROM reconciliations ORDER BY recorded_at DESC, change_set_id LIMIT $1"
        ))
        .integer(limit(limit_to)),
        decode::reconciliation,
    )
    .await
}

/// The count `n` of the one row `sql` returns.
async fn count_of<D: Dialect>(db: &D, sql: &'static str) -> Result<u64, StoreError> {
    Ok(count(fetch_one(&mut db.pool(), stmt(sql)).await?.integer("n")?))
}

/// The rows of `s` as (key `k`, count `n`) pairs.
async fn counts_of<D: Dialect>(db: &D, s: Stmt<'_>) -> Result<Vec<(String, u64)>, StoreError> {
    list(db, s, |row| Ok((row.text("k")?, count(row.integer("n")?)))).await
}

pub(crate) async fn stats<D: Dialect>(db: &D) -> Result<Stats, StoreError> {
    let dropped = "SELECT COALESCE(drop_reason, $1) AS k, count(*) AS n FROM events \
                   WHERE disposition = 'dropped' GROUP BY k ORDER BY n DESC, k";
    Ok(Stats {
        events: count_of(db, "SELECT count(*) AS n FROM events").await?,
        events_dropped_by_reason: counts_of(db, stmt(dropped).text(NO_REASON)).await?,
        bad_records: count_of(db, "SELECT count(*) AS n FROM bad_records").await?,
        change_sets_by_status: counts_of(
            db,
            stmt("SELECT status AS k, count(*) AS n FROM change_sets GROUP BY status ORDER BY n DESC, status"),
        )
        .await?,
        queue_by_status: counts_of(
            db,
            stmt("SELECT status AS k, count(*) AS n FROM change_set_queue GROUP BY status ORDER BY n DESC, status"),
        )
        .await?,
        knowledge_entries: count_of(db, "SELECT count(*) AS n FROM knowledge").await?,
        learned_recipes: count_of(
            db,
            "SELECT count(*) AS n FROM knowledge WHERE recipe_toml IS NOT NULL AND demoted IS NULL",
        )
        .await?,
        reconciliations: count_of(db, "SELECT count(*) AS n FROM reconciliations").await?,
        prompt_tokens: count_of(db, "SELECT CAST(COALESCE(sum(prompt_tokens), 0) AS bigint) AS n FROM reconciliations")
            .await?,
        completion_tokens: count_of(
            db,
            "SELECT CAST(COALESCE(sum(completion_tokens), 0) AS bigint) AS n FROM reconciliations",
        )
        .await?,
        embedder: embedder(db).await?,
    })
}
