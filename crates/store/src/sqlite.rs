//! The SQLite store: the embedded default knowledge base, one file a user can open with `sqlite3`.

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow, SqliteSynchronous};
use sqlx::{QueryBuilder, Row, Sqlite, SqlitePool};

use crate::model::{CHANGE_SET_STATUSES, ChangeSetRecord, EventRecord, Stats};
use crate::{StoreError, migrate, time};

/// How many ids go into one `IN (...)` list (SQLite limits bound parameters per statement).
const IN_CHUNK: usize = 500;

/// How long a statement waits for another writer before failing with a transient error.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Drop reason reported by [`Store::stats`] for dropped events recorded without one.
const NO_REASON: &str = "(none)";

/// The knowledge base. Cheap to clone: clones share one connection pool.
#[derive(Debug, Clone)]
pub struct Store {
    pool: SqlitePool,
}

impl Store {
    /// Opens the SQLite knowledge base at `path`, creating its parent directories and the file if
    /// needed, in WAL mode with full fsync on commit, and applies the migrations it lacks.
    pub async fn open_sqlite(path: &Path) -> Result<Store, StoreError> {
        let open_err = |source| StoreError::Open { path: path.to_path_buf(), source };
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
        Ok(Store { pool })
    }

    /// Closes every connection; later calls fail. Dropping the store also closes it, less promptly.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// Which of `ids` are already recorded in `events`, whatever their disposition.
    pub async fn seen_event_ids(&self, ids: &[String]) -> Result<HashSet<String>, StoreError> {
        let mut seen = HashSet::new();
        for chunk in ids.chunks(IN_CHUNK) {
            let mut query = QueryBuilder::<Sqlite>::new("SELECT event_id FROM events WHERE event_id IN (");
            let mut list = query.separated(", ");
            for id in chunk {
                list.push_bind(id.clone());
            }
            list.push_unseparated(")");
            let found: Vec<String> = query.build_query_scalar().fetch_all(&self.pool).await?;
            seen.extend(found);
        }
        Ok(seen)
    }

    /// Records events in one transaction; an event whose id is already recorded is left as it was.
    /// Returns how many were new.
    pub async fn record_events(&self, events: &[EventRecord]) -> Result<usize, StoreError> {
        if events.is_empty() {
            return Ok(0);
        }
        let mut rows = Vec::with_capacity(events.len());
        for e in events {
            if e.event_id.trim().is_empty() {
                return Err(StoreError::Data(format!(
                    "event {} {} at {} has an empty event_id; record it as a bad record instead",
                    e.source, e.name, e.event_time
                )));
            }
            let raw = serde_json::to_string(&e.raw).map_err(|err| {
                StoreError::Data(format!("event {}: raw record is not serialisable: {err}", e.event_id))
            })?;
            rows.push((e, raw));
        }
        let recorded_at = time::now_text();
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let mut new = 0;
        for (e, raw) in rows {
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
            .bind(recorded_at.clone())
            .execute(&mut *tx)
            .await?;
            new += done.rows_affected() as usize;
        }
        tx.commit().await?;
        Ok(new)
    }

    /// Keeps input that could not be read as an event: where it was, why, and the text verbatim.
    pub async fn record_bad_record(&self, location: &str, reason: &str, raw: &str) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO bad_records (location, reason, raw, recorded_at) VALUES (?, ?, ?, ?)")
            .bind(location.to_owned())
            .bind(reason.to_owned())
            .bind(raw.to_owned())
            .bind(time::now_text())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Inserts or updates the change set `cs.id` (recording the same record again changes nothing),
    /// and, when `cs.decision` is set, appends one row to `audit_log` per call, in one transaction.
    pub async fn record_change_set(&self, cs: &ChangeSetRecord) -> Result<(), StoreError> {
        if cs.id.trim().is_empty() {
            return Err(StoreError::Data("change set has an empty id".into()));
        }
        if !CHANGE_SET_STATUSES.contains(&cs.status.as_str()) {
            return Err(StoreError::Data(format!(
                "change set {}: unknown status {:?} (expected one of {})",
                cs.id,
                cs.status,
                CHANGE_SET_STATUSES.join(", ")
            )));
        }
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
    pub async fn change_set(&self, id: &str) -> Result<Option<ChangeSetRecord>, StoreError> {
        let row = sqlx::query(
            "SELECT id, resource_id, address, actor, via, first_event_time, last_event_time, event_ids, status, \
             decision, rule, rationale, branch, commit_id, diff, notes FROM change_sets WHERE id = ?",
        )
        .bind(id.to_owned())
        .fetch_optional(&self.pool)
        .await?;
        row.map(|row| change_set_from_row(&row)).transpose()
    }

    /// Counts of events, dropped events per reason, bad records and change sets per status.
    pub async fn stats(&self) -> Result<Stats, StoreError> {
        let events: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM events").fetch_one(&self.pool).await?;
        let bad_records: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM bad_records").fetch_one(&self.pool).await?;
        let dropped: Vec<(String, i64)> = sqlx::query_as(
            "SELECT COALESCE(drop_reason, ?) AS reason, COUNT(*) AS n FROM events \
             WHERE disposition = 'dropped' GROUP BY reason ORDER BY n DESC, reason",
        )
        .bind(NO_REASON)
        .fetch_all(&self.pool)
        .await?;
        let by_status: Vec<(String, i64)> =
            sqlx::query_as("SELECT status, COUNT(*) AS n FROM change_sets GROUP BY status ORDER BY n DESC, status")
                .fetch_all(&self.pool)
                .await?;
        let counts = |v: Vec<(String, i64)>| v.into_iter().map(|(k, n)| (k, count(n))).collect();
        Ok(Stats {
            events: count(events),
            events_dropped_by_reason: counts(dropped),
            bad_records: count(bad_records),
            change_sets_by_status: counts(by_status),
        })
    }
}

fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn change_set_from_row(row: &SqliteRow) -> Result<ChangeSetRecord, StoreError> {
    let id: String = row.try_get("id")?;
    let list = |column: &str| -> Result<Vec<String>, StoreError> {
        let text: String = row.try_get(column)?;
        serde_json::from_str(&text).map_err(|e| {
            StoreError::Data(format!("change set {id}: column {column} is not a JSON array of strings: {e}"))
        })
    };
    let when = |column: &str| -> Result<_, StoreError> {
        let text: String = row.try_get(column)?;
        time::from_text(column, &text)
    };
    Ok(ChangeSetRecord {
        resource_id: row.try_get("resource_id")?,
        address: row.try_get("address")?,
        actor: row.try_get("actor")?,
        via: row.try_get("via")?,
        first_event_time: when("first_event_time")?,
        last_event_time: when("last_event_time")?,
        event_ids: list("event_ids")?,
        status: row.try_get("status")?,
        decision: row.try_get("decision")?,
        rule: row.try_get("rule")?,
        rationale: row.try_get("rationale")?,
        branch: row.try_get("branch")?,
        commit_id: row.try_get("commit_id")?,
        diff: row.try_get("diff")?,
        notes: list("notes")?,
        id,
    })
}
