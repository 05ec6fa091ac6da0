//! Result rows to records, written once for both backends.
//!
//! Both schemas name their columns alike but store some of them differently: SQLite keeps times
//! as RFC 3339 text and lists and JSON documents as JSON text, Postgres as `timestamptz`, `text[]`
//! and `jsonb`. Each backend reads its own representation through [`Columns`]; what a record is
//! made of, and which column fills which field, is said here only.

use std::fmt;

use chrono::{DateTime, Utc};
use sqlx::Row;
use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;

use crate::records::{
    ChangeSetRecord, CoveredChangeSet, DecisionRecord, EmbedderSpec, EventRecord, FieldChangeRecord, FieldOwner,
    KnowledgeEntry, LoggedDecision, PendingChangeSet, PullRequestRecord, QueuedChangeSet, ReconciliationRecord,
    StoredReconciliation,
};
use crate::{StoreError, time};

/// One result row's columns, read by name as the backend stores them.
pub(crate) trait Columns {
    /// A text column.
    fn text(&self, column: &str) -> Result<String, StoreError>;
    /// A text column that may be NULL.
    fn optional_text(&self, column: &str) -> Result<Option<String>, StoreError>;
    /// A 64-bit integer column (`bigint` on Postgres).
    fn integer(&self, column: &str) -> Result<i64, StoreError>;
    /// An integer column Postgres keeps as 32-bit `integer`; widened.
    fn small_integer(&self, column: &str) -> Result<i64, StoreError>;
    /// A time column.
    fn time(&self, column: &str) -> Result<DateTime<Utc>, StoreError>;
    /// A time column that may be NULL.
    fn optional_time(&self, column: &str) -> Result<Option<DateTime<Utc>>, StoreError>;
    /// A list of strings; `of` names the record in the error when the column holds something else.
    fn text_list(&self, column: &str, of: fmt::Arguments<'_>) -> Result<Vec<String>, StoreError>;
    /// A JSON document; `of` names the record in the error when the column holds something else.
    fn json(&self, column: &str, of: fmt::Arguments<'_>) -> Result<serde_json::Value, StoreError>;
}

impl Columns for SqliteRow {
    fn text(&self, column: &str) -> Result<String, StoreError> {
        Ok(self.try_get(column)?)
    }

    fn optional_text(&self, column: &str) -> Result<Option<String>, StoreError> {
        Ok(self.try_get(column)?)
    }

    fn integer(&self, column: &str) -> Result<i64, StoreError> {
        Ok(self.try_get(column)?)
    }

    fn small_integer(&self, column: &str) -> Result<i64, StoreError> {
        self.integer(column)
    }

    fn time(&self, column: &str) -> Result<DateTime<Utc>, StoreError> {
        time::from_text(column, &self.text(column)?)
    }

    fn optional_time(&self, column: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        self.optional_text(column)?.map(|text| time::from_text(column, &text)).transpose()
    }

    fn text_list(&self, column: &str, of: fmt::Arguments<'_>) -> Result<Vec<String>, StoreError> {
        serde_json::from_str(&self.text(column)?)
            .map_err(|e| StoreError::Data(format!("{of}: column {column} is not a JSON array of strings: {e}")))
    }

    fn json(&self, column: &str, of: fmt::Arguments<'_>) -> Result<serde_json::Value, StoreError> {
        serde_json::from_str(&self.text(column)?)
            .map_err(|e| StoreError::Data(format!("{of}: column {column} is not JSON: {e}")))
    }
}

impl Columns for PgRow {
    fn text(&self, column: &str) -> Result<String, StoreError> {
        Ok(self.try_get(column)?)
    }

    fn optional_text(&self, column: &str) -> Result<Option<String>, StoreError> {
        Ok(self.try_get(column)?)
    }

    fn integer(&self, column: &str) -> Result<i64, StoreError> {
        Ok(self.try_get(column)?)
    }

    fn small_integer(&self, column: &str) -> Result<i64, StoreError> {
        Ok(i64::from(self.try_get::<i32, _>(column)?))
    }

    fn time(&self, column: &str) -> Result<DateTime<Utc>, StoreError> {
        Ok(self.try_get(column)?)
    }

    fn optional_time(&self, column: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        Ok(self.try_get(column)?)
    }

    fn text_list(&self, column: &str, _of: fmt::Arguments<'_>) -> Result<Vec<String>, StoreError> {
        Ok(self.try_get(column)?)
    }

    fn json(&self, column: &str, _of: fmt::Arguments<'_>) -> Result<serde_json::Value, StoreError> {
        Ok(self.try_get(column)?)
    }
}

/// A stored count; a negative one (never written) reads as 0.
pub(crate) fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// `event_id, event_time, source, name, actor, disposition, drop_reason, raw` of `events`.
pub(crate) fn event(row: &impl Columns) -> Result<EventRecord, StoreError> {
    let event_id = row.text("event_id")?;
    Ok(EventRecord {
        event_time: row.time("event_time")?,
        source: row.text("source")?,
        name: row.text("name")?,
        actor: row.text("actor")?,
        disposition: row.text("disposition")?.parse()?,
        drop_reason: row.optional_text("drop_reason")?,
        raw: row.text("raw")?,
        event_id,
    })
}

/// The columns of `change_sets` that make a [`ChangeSetRecord`].
pub(crate) fn change_set(row: &impl Columns) -> Result<ChangeSetRecord, StoreError> {
    let id = row.text("id")?;
    Ok(ChangeSetRecord {
        resource_id: row.optional_text("resource_id")?,
        address: row.optional_text("address")?,
        actor: row.text("actor")?,
        via: row.text("via")?,
        first_event_time: row.time("first_event_time")?,
        last_event_time: row.time("last_event_time")?,
        event_ids: row.text_list("event_ids", format_args!("change set {id}"))?,
        status: row.text("status")?,
        decision: row.optional_text("decision")?,
        rule: row.optional_text("rule")?,
        rationale: row.optional_text("rationale")?,
        branch: row.optional_text("branch")?,
        commit_id: row.optional_text("commit_id")?,
        diff: row.optional_text("diff")?,
        notes: row.text_list("notes", format_args!("change set {id}"))?,
        stack: row.optional_text("stack")?,
        workspace: row.optional_text("workspace")?,
        state_version: row.optional_text("state_version")?,
        id,
    })
}

/// `id, change_set_id, decision, rule, rationale, evidence, recorded_at` of `audit_log`.
pub(crate) fn logged_decision(row: &impl Columns) -> Result<LoggedDecision, StoreError> {
    let id = row.integer("id")?;
    Ok(LoggedDecision {
        decision: DecisionRecord {
            change_set_id: row.text("change_set_id")?,
            kind: row.text("decision")?,
            rule: row.optional_text("rule")?,
            rationale: row.optional_text("rationale")?,
            evidence: row.json("evidence", format_args!("audit_log row {id}"))?,
        },
        recorded_at: row.time("recorded_at")?,
        id,
    })
}

/// The `queue_columns!()` of `change_set_queue`.
/// `change_set_id, by_change_set_id, branch, commit_id, delivery` of `covered_change_sets`.
pub(crate) fn covered(row: &impl Columns) -> Result<CoveredChangeSet, StoreError> {
    let change_set_id = row.text("change_set_id")?;
    Ok(CoveredChangeSet {
        by_change_set_id: row.text("by_change_set_id")?,
        branch: row.text("branch")?,
        commit_id: row.text("commit_id")?,
        delivery: row.json("delivery", format_args!("covered change set {change_set_id}"))?,
        change_set_id,
    })
}

pub(crate) fn queued(row: &impl Columns) -> Result<QueuedChangeSet, StoreError> {
    let id = row.text("id")?;
    let attempts = row.small_integer("attempts")?;
    Ok(QueuedChangeSet {
        change_set: PendingChangeSet {
            resource_key: row.text("resource_key")?,
            actor_session: row.text("actor_session")?,
            first_event_time: row.time("first_event_time")?,
            last_event_time: row.time("last_event_time")?,
            event_ids: row.text_list("event_ids", format_args!("queued change set {id}"))?,
            id,
        },
        status: row.text("status")?.parse()?,
        claimed_by: row.optional_text("claimed_by")?,
        lease_until: row.optional_time("lease_until")?,
        // Counted up from 0; a corrupt negative count reads as 0.
        attempts: u32::try_from(attempts.max(0)).unwrap_or(u32::MAX),
        failure: row.optional_text("failure")?,
        created_at: row.time("created_at")?,
    })
}

/// `address, attribute_path, actor, event_id, event_time, change_set_id` of `field_changes`.
pub(crate) fn field_change(row: &impl Columns) -> Result<FieldChangeRecord, StoreError> {
    Ok(FieldChangeRecord {
        address: row.text("address")?,
        attribute_path: row.text("attribute_path")?,
        actor: row.text("actor")?,
        event_id: row.text("event_id")?,
        event_time: row.time("event_time")?,
        change_set_id: row.optional_text("change_set_id")?,
    })
}

/// `address, attribute_path, owner, rule, updated_at` of `field_owners`.
pub(crate) fn field_owner(row: &impl Columns) -> Result<FieldOwner, StoreError> {
    Ok(FieldOwner {
        address: row.text("address")?,
        attribute_path: row.text("attribute_path")?,
        owner: row.text("owner")?,
        rule: row.optional_text("rule")?,
        updated_at: row.time("updated_at")?,
    })
}

/// The `knowledge_columns!()` of `knowledge`.
pub(crate) fn knowledge(row: &impl Columns) -> Result<KnowledgeEntry, StoreError> {
    Ok(KnowledgeEntry {
        id: row.integer("id")?,
        signature: row.text("signature")?,
        summary: row.text("summary")?,
        patch_diff: row.optional_text("patch_diff")?,
        recipe_toml: row.optional_text("recipe_toml")?,
        change_set_id: row.optional_text("change_set_id")?,
        uses: count(row.integer("uses")?),
        successes: count(row.integer("successes")?),
        demoted: row.optional_text("demoted")?,
        created_at: row.time("created_at")?,
        updated_at: row.time("updated_at")?,
    })
}

/// `name, dimension` of `knowledge_embedder`.
pub(crate) fn embedder(row: &impl Columns) -> Result<EmbedderSpec, StoreError> {
    Ok(EmbedderSpec {
        name: row.text("name")?,
        dimension: usize::try_from(row.small_integer("dimension")?).unwrap_or(0),
    })
}

/// `number, address, branch, url, state, head_commit` of `pull_requests`.
pub(crate) fn pull_request(row: &impl Columns) -> Result<PullRequestRecord, StoreError> {
    Ok(PullRequestRecord {
        number: count(row.integer("number")?),
        address: row.text("address")?,
        branch: row.text("branch")?,
        url: row.text("url")?,
        state: row.text("state")?.parse()?,
        head_commit: row.text("head_commit")?,
    })
}

/// The `reconciliation_columns!()` of `reconciliations`.
pub(crate) fn reconciliation(row: &impl Columns) -> Result<StoredReconciliation, StoreError> {
    Ok(StoredReconciliation {
        reconciliation: ReconciliationRecord {
            change_set_id: row.text("change_set_id")?,
            trace_summary: row.text("trace_summary")?,
            actor: row.text("actor")?,
            intent: row.text("intent")?,
            motivation: row.text("motivation")?,
            decision: row.text("decision")?,
            patch_diff: row.optional_text("patch_diff")?,
            branch: row.optional_text("branch")?,
            commit_id: row.optional_text("commit_id")?,
            pull_request: row.optional_text("pull_request")?,
            prompt_tokens: count(row.integer("prompt_tokens")?),
            completion_tokens: count(row.integer("completion_tokens")?),
            model: row.optional_text("model")?,
            duration_ms: count(row.integer("duration_ms")?),
            outcome: row.text("outcome")?,
        },
        recorded_at: row.time("recorded_at")?,
    })
}

#[cfg(test)]
mod tests {
    use sqlx::{Connection, SqliteConnection};

    use super::*;
    use crate::records::QueueStatus;

    /// The row a real SQLite returns for `QUEUED` followed by `rest` (literal columns).
    async fn queued_row(rest: &str) -> SqliteRow {
        let mut conn = SqliteConnection::connect("sqlite::memory:").await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(format!("{QUEUED}{rest}"))).fetch_one(&mut conn).await.unwrap()
    }

    const QUEUED: &str = "SELECT 'cs-1' AS id, 'ec2/i-1' AS resource_key, 'alice' AS actor_session, \
         '2024-05-01T12:00:00.000000Z' AS first_event_time, '2024-05-01T12:00:01.500000Z' AS last_event_time, ";

    #[tokio::test]
    async fn sqlite_text_columns_decode_into_the_record() {
        let row = queued_row(
            "'[\"e1\",\"e2\"]' AS event_ids, 'claimed' AS status, 'w1' AS claimed_by, \
             '2024-05-01T12:05:00.000000Z' AS lease_until, 3 AS attempts, NULL AS failure, \
             '2024-05-01T12:00:02.000000Z' AS created_at",
        )
        .await;
        let q = queued(&row).unwrap();
        assert_eq!(q.change_set.id, "cs-1");
        assert_eq!(q.change_set.event_ids, ["e1", "e2"]);
        assert_eq!(q.status, QueueStatus::Claimed);
        assert_eq!(q.attempts, 3);
        assert_eq!(time::to_text(&q.change_set.last_event_time), "2024-05-01T12:00:01.500000Z");
        assert_eq!(q.lease_until.map(|t| time::to_text(&t)).as_deref(), Some("2024-05-01T12:05:00.000000Z"));
        assert_eq!(q.failure, None);
    }

    #[tokio::test]
    async fn a_corrupt_list_names_the_record_and_the_column() {
        let row = queued_row(
            "'e1,e2' AS event_ids, 'pending' AS status, NULL AS claimed_by, NULL AS lease_until, \
             -1 AS attempts, NULL AS failure, '2024-05-01T12:00:02.000000Z' AS created_at",
        )
        .await;
        let err = queued(&row).unwrap_err().to_string();
        assert!(err.contains("queued change set cs-1: column event_ids is not a JSON array of strings"), "{err}");
    }
}
