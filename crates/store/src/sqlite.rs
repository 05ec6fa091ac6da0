//! The SQLite store: the embedded default knowledge base, one file a user can open with `sqlite3`.

use std::path::Path;
use std::time::Duration;

use sqlx::query::Query;
use sqlx::sqlite::{
    SqliteArguments, SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow, SqliteSynchronous,
};
use sqlx::{Sqlite, SqlitePool, Transaction};

use crate::records::{BadRecord, EmbedderSpec, EventRecord, FieldChangeRecord, SimilarEntry};
use crate::sql::{self, Dialect, Done, Exec, Lock, Stmt, Typed, execute, sqlite_dialect, stmt};
use crate::{StoreError, migrate, ops, time};

/// How long a statement waits for another writer before failing with a transient error.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

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
        // Turning a new file to WAL takes its lock without waiting for the busy timeout: a process
        // opening the file while another creates it is told "database is locked" at once. Such an
        // open is tried again within the same timeout.
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        let pool = loop {
            match SqlitePoolOptions::new().max_connections(4).connect_with(options.clone()).await {
                Err(e) if is_busy(&e) && std::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                done => break done.map_err(open_err)?,
            }
        };
        let mut conn = pool.acquire().await.map_err(open_err)?;
        let migrated = migrate::apply(&mut conn).await;
        drop(conn);
        Ok(SqliteStore { pool: sql::migrated(pool, migrated).await? })
    }
}

/// Whether SQLite said the database is busy (`SQLITE_BUSY` and its extended codes).
fn is_busy(error: &sqlx::Error) -> bool {
    let code = error.as_database_error().and_then(|e| e.code()).and_then(|c| c.parse::<i32>().ok());
    code.is_some_and(|c| c & 0xff == 5)
}

/// A write transaction, and what `now()` is in it: the time it began (as on Postgres), so every
/// row it writes carries one time.
pub(crate) struct SqliteTx {
    tx: Transaction<'static, Sqlite>,
    now: String,
}

/// `s` rewritten for SQLite (see [`sqlite_dialect`]) with its arguments as SQLite keeps them
/// (times as RFC 3339 text, lists and documents as JSON text, vectors as blobs), and `now` as the
/// current time where the statement asks for it.
fn bound(s: &Stmt<'_>, now: &str) -> Result<Query<'static, Sqlite, SqliteArguments>, StoreError> {
    let sql = sqlite_dialect(s.sql);
    if s.args.len() != sql.params {
        // SQLite would read the missing ones as NULL.
        return Err(StoreError::Data(format!("{} arguments given to {:?}", s.args.len(), s.sql)));
    }
    let query = sql::bind(sqlx::query(sql.sql), &s.args, |query, arg| {
        Ok(match arg {
            Typed::Time(v) => query.bind(time::to_text(&v)),
            Typed::TextList(v) => query.bind(json_text("a list", v)?),
            Typed::Json(v) => query.bind(json_text("a JSON document", v)?),
            Typed::Vector(v) => query.bind(vector_blob(v)),
        })
    })?;
    Ok(if sql.now.is_some() { query.bind(now.to_owned()) } else { query })
}

impl Exec for SqlitePool {
    type Row = SqliteRow;

    /// `now()` is the time the statement is bound.
    async fn run(&mut self, s: Stmt<'_>, rows: bool) -> Result<Done<SqliteRow>, StoreError> {
        sql::run(&*self, bound(&s, &time::now_text())?, rows).await
    }
}

impl Exec for SqliteTx {
    type Row = SqliteRow;

    async fn run(&mut self, s: Stmt<'_>, rows: bool) -> Result<Done<SqliteRow>, StoreError> {
        let query = bound(&s, &self.now)?;
        sql::run(&mut *self.tx, query, rows).await
    }
}

impl Dialect for SqliteStore {
    type Pool = SqlitePool;
    type Tx = SqliteTx;

    fn pool(&self) -> SqlitePool {
        self.pool.clone()
    }

    /// `BEGIN IMMEDIATE`: the write lock is taken at once, so the transaction never reads data
    /// another writer changes before it writes.
    async fn begin(&self) -> Result<SqliteTx, StoreError> {
        let tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        Ok(SqliteTx { tx, now: time::now_text() })
    }

    async fn commit(tx: SqliteTx) -> Result<(), StoreError> {
        Ok(tx.tx.commit().await?)
    }

    /// Closes every connection; later calls fail. Dropping the store also closes it, less promptly.
    async fn close(&self) {
        self.pool.close().await;
    }

    /// Nothing to take: the transaction holds the database's one write lock.
    async fn lock(_tx: &mut SqliteTx, _lock: Lock<'_>) -> Result<(), StoreError> {
        Ok(())
    }

    async fn insert_events(
        tx: &mut SqliteTx,
        rows: &[(&EventRecord, String)],
        _: bool,
    ) -> Result<Vec<String>, StoreError> {
        let mut inserted = Vec::new();
        for (e, raw) in rows {
            let insert = stmt(
                "INSERT INTO events \
                 (event_id, event_time, source, name, actor, disposition, drop_reason, raw, recorded_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now()) ON CONFLICT (event_id) DO NOTHING",
            )
            .text(&e.event_id)
            .time(e.event_time)
            .text(&e.source)
            .text(&e.name)
            .text(&e.actor)
            .text(e.disposition.as_str())
            .optional_text(e.drop_reason.as_deref())
            .text(raw);
            if execute(tx, insert).await? == 1 {
                inserted.push(e.event_id.clone());
            }
        }
        Ok(inserted)
    }

    async fn insert_bad_records(tx: &mut SqliteTx, bad: &[BadRecord]) -> Result<(), StoreError> {
        for b in bad {
            execute(tx, stmt(ops::INSERT_BAD_RECORD).text(&b.location).text(&b.reason).text(&b.raw)).await?;
        }
        Ok(())
    }

    async fn record_field_changes(&self, changes: &[FieldChangeRecord]) -> Result<usize, StoreError> {
        if changes.is_empty() {
            return Ok(0);
        }
        let mut tx = self.begin().await?;
        let mut new = 0;
        for c in changes {
            let insert = stmt(
                "INSERT INTO field_changes (address, attribute_path, actor, event_id, event_time, change_set_id, \
                 recorded_at) VALUES ($1, $2, $3, $4, $5, $6, now()) ON CONFLICT DO NOTHING",
            );
            new += execute(&mut tx, ops::field_change_values(insert, c)).await? as usize;
        }
        Self::commit(tx).await?;
        Ok(new)
    }

    /// Nothing to ready: vectors are blobs of any length.
    async fn prepare_vectors(_tx: &mut SqliteTx, _embedder: &EmbedderSpec) -> Result<(), StoreError> {
        Ok(())
    }

    async fn write_vectors(tx: &mut SqliteTx, _: &EmbedderSpec, vectors: &[(i64, Vec<f32>)]) -> Result<(), StoreError> {
        for (id, v) in vectors {
            let update = stmt("UPDATE knowledge SET embedding = $2, updated_at = now() WHERE id = $1");
            execute(tx, update.integer(*id).vector(v)).await?;
        }
        Ok(())
    }

    /// Exact search: the embedded store is small enough to scan; Postgres uses an HNSW index.
    async fn nearest(&self, spec: &EmbedderSpec, query: &[f32], k: usize) -> Result<Vec<SimilarEntry>, StoreError> {
        if !ops::is_embedder(ops::embedder(self).await?, spec)? {
            return Ok(Vec::new());
        }
        if k == 0 {
            return Ok(Vec::new());
        }
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
            if let Some(entry) = ops::knowledge_entry(self, id).await? {
                out.push(SimilarEntry { entry, similarity });
            }
        }
        Ok(out)
    }
}

fn json_text<T: serde::Serialize + ?Sized>(what: &str, value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Data(format!("{what} is not serialisable: {e}")))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::Columns;

    #[tokio::test]
    async fn sqlite_binds_the_shared_statements_parameters_by_number() {
        let mut pool = SqlitePool::connect("sqlite::memory:").await.unwrap();
        let list = vec!["b".to_owned(), "c".to_owned()];
        let rows = sql::fetch_all(
            &mut pool,
            stmt(
                "SELECT $2 AS two, $1 AS one, $2 AS again, now() AS at, value AS v \
                 FROM json_each('[\"a\",\"b\",\"c\"]') WHERE value = ANY($3) ORDER BY value",
            )
            .text("first")
            .integer(2)
            .text_list(&list),
        )
        .await
        .unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].text("v").unwrap(), rows[1].text("v").unwrap()), ("b".into(), "c".into()));
        assert_eq!(rows[0].text("one").unwrap(), "first");
        assert_eq!((rows[0].integer("two").unwrap(), rows[0].integer("again").unwrap()), (2, 2));
        rows[0].time("at").unwrap();
        let err = sql::fetch_all(&mut pool, stmt("SELECT $1 AS a, $2 AS b").text("only one")).await.unwrap_err();
        assert!(err.to_string().contains("1 arguments given"), "{err}");
    }

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
