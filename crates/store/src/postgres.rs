//! The Postgres store: production's knowledge base, with pgvector for similarity search and SQL
//! views for people.

use std::str::FromStr;
use std::time::{Duration, Instant};

use pgvector::Vector;
use sqlx::postgres::{PgArguments, PgConnectOptions, PgPoolOptions, PgRow};
use sqlx::query::Query;
use sqlx::{Connection, PgConnection, PgPool, Postgres, Row, Transaction};

use crate::decode;
use crate::error::is_transient_sqlx;
use crate::options::OpenOptions;
use crate::records::{BadRecord, EmbedderSpec, EventRecord, FieldChangeRecord, SimilarEntry};
use crate::sql::{self, Dialect, Done, Exec, Lock, Stmt, Typed};
use crate::{StoreError, migrate, ops, redact_url};

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
        Ok(PgStore { pool: sql::migrated(pool, migrated).await? })
    }
}

/// `s` with its arguments as Postgres types.
fn bound(s: &Stmt<'_>) -> Result<Query<'static, Postgres, PgArguments>, StoreError> {
    sql::bind(sqlx::query(s.sql), &s.args, |query, arg| {
        Ok(match arg {
            Typed::Time(v) => query.bind(v),
            Typed::TextList(v) => query.bind(v),
            Typed::Json(v) => query.bind(sqlx::types::Json(v)),
            Typed::Vector(v) => query.bind(Vector::from(v.to_vec())),
        })
    })
}

impl Exec for PgPool {
    type Row = PgRow;

    async fn run(&mut self, s: Stmt<'_>, rows: bool) -> Result<Done<PgRow>, StoreError> {
        sql::run(&*self, bound(&s)?, rows).await
    }
}

impl Exec for Transaction<'_, Postgres> {
    type Row = PgRow;

    async fn run(&mut self, s: Stmt<'_>, rows: bool) -> Result<Done<PgRow>, StoreError> {
        sql::run(&mut **self, bound(&s)?, rows).await
    }
}

impl Dialect for PgStore {
    type Pool = PgPool;
    type Tx = Transaction<'static, Postgres>;

    fn pool(&self) -> PgPool {
        self.pool.clone()
    }

    async fn begin(&self) -> Result<Self::Tx, StoreError> {
        Ok(self.pool.begin().await?)
    }

    async fn commit(tx: Self::Tx) -> Result<(), StoreError> {
        Ok(tx.commit().await?)
    }

    async fn close(&self) {
        self.pool.close().await;
    }

    async fn lock(tx: &mut Self::Tx, lock: Lock<'_>) -> Result<(), StoreError> {
        match lock {
            Lock::Decisions(change_set_id) => {
                sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
                    .bind(change_set_id)
                    .execute(&mut **tx)
                    .await?;
            }
            Lock::ResourceKeys(keys) => {
                // In one order, so two deliveries never deadlock on them.
                let mut locks: Vec<i32> = keys.iter().map(|k| key_lock(k)).collect();
                locks.sort_unstable();
                locks.dedup();
                if !locks.is_empty() {
                    sqlx::query("SELECT count(pg_advisory_xact_lock($1, k)) FROM UNNEST($2::int4[]) AS u(k)")
                        .bind(RESOURCE_LOCK_CLASS)
                        .bind(&locks)
                        .execute(&mut **tx)
                        .await?;
                }
            }
            Lock::Embedder => {
                sqlx::query("LOCK TABLE knowledge_embedder IN SHARE ROW EXCLUSIVE MODE").execute(&mut **tx).await?;
            }
            Lock::Knowledge => {
                sqlx::query("LOCK TABLE knowledge_embedder, knowledge IN SHARE ROW EXCLUSIVE MODE")
                    .execute(&mut **tx)
                    .await?;
            }
        }
        Ok(())
    }

    async fn insert_events(
        tx: &mut Self::Tx,
        rows: &[(&EventRecord, String)],
        ids: bool,
    ) -> Result<Vec<String>, StoreError> {
        let mut inserted = Vec::new();
        for chunk in rows.chunks(INSERT_CHUNK) {
            inserted.extend(insert_events(tx, chunk, ids).await?);
        }
        Ok(inserted)
    }

    async fn insert_bad_records(tx: &mut Self::Tx, bad: &[BadRecord]) -> Result<(), StoreError> {
        for chunk in bad.chunks(INSERT_CHUNK) {
            sqlx::query(
                "INSERT INTO bad_records (location, reason, raw) \
                 SELECT l, r, t FROM UNNEST($1::text[], $2::text[], $3::text[]) AS u(l, r, t)",
            )
            .bind(chunk.iter().map(|b| b.location.clone()).collect::<Vec<_>>())
            .bind(chunk.iter().map(|b| b.reason.clone()).collect::<Vec<_>>())
            .bind(chunk.iter().map(|b| b.raw.clone()).collect::<Vec<_>>())
            .execute(&mut **tx)
            .await?;
        }
        Ok(())
    }

    async fn record_field_changes(&self, changes: &[FieldChangeRecord]) -> Result<usize, StoreError> {
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

    /// Gives the vector column its dimension and its HNSW index.
    async fn prepare_vectors(tx: &mut Self::Tx, embedder: &EmbedderSpec) -> Result<(), StoreError> {
        set_vector_dimension(tx, embedder).await?;
        create_vector_index(tx, embedder).await
    }

    async fn write_vectors(
        tx: &mut Self::Tx,
        spec: &EmbedderSpec,
        vectors: &[(i64, Vec<f32>)],
    ) -> Result<(), StoreError> {
        sqlx::query("DROP INDEX IF EXISTS knowledge_embedding_hnsw").execute(&mut **tx).await?;
        sqlx::query("UPDATE knowledge SET embedding = NULL").execute(&mut **tx).await?;
        set_vector_dimension(tx, spec).await?;
        for chunk in vectors.chunks(1_000) {
            sqlx::query(
                "UPDATE knowledge SET embedding = u.v::vector, updated_at = now() \
                 FROM UNNEST($1::bigint[], $2::text[]) AS u(id, v) WHERE knowledge.id = u.id",
            )
            .bind(chunk.iter().map(|(id, _)| *id).collect::<Vec<_>>())
            .bind(chunk.iter().map(|(_, v)| vector_text(v)).collect::<Vec<_>>())
            .execute(&mut **tx)
            .await?;
        }
        create_vector_index(tx, spec).await
    }

    async fn nearest(&self, spec: &EmbedderSpec, query: &[f32], k: usize) -> Result<Vec<SimilarEntry>, StoreError> {
        if k == 0 {
            return Ok(Vec::new());
        }
        let mut tx = self.pool.begin().await?;
        if !ops::is_embedder(ops::stored_embedder(&mut tx).await?, spec)? {
            return Ok(Vec::new());
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

/// pgvector's text form, `[1,2,3]`, for binding vectors inside arrays.
fn vector_text(v: &[f32]) -> String {
    let parts: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    format!("[{}]", parts.join(","))
}

/// Inserts events whose id is not recorded yet. With `ids`, returns the ids inserted; without,
/// as many empty strings (only their number is wanted, and nothing is sent back).
async fn insert_events(
    conn: &mut PgConnection,
    rows: &[(&EventRecord, String)],
    ids: bool,
) -> Result<Vec<String>, StoreError> {
    let events: Vec<&EventRecord> = rows.iter().map(|(e, _)| *e).collect();
    let sql = if ids { concat!(insert_events_sql!(), " RETURNING event_id") } else { insert_events_sql!() };
    let query = sqlx::query(sql)
        .bind(events.iter().map(|e| e.event_id.clone()).collect::<Vec<_>>())
        .bind(events.iter().map(|e| e.event_time).collect::<Vec<_>>())
        .bind(events.iter().map(|e| e.source.clone()).collect::<Vec<_>>())
        .bind(events.iter().map(|e| e.name.clone()).collect::<Vec<_>>())
        .bind(events.iter().map(|e| e.actor.clone()).collect::<Vec<_>>())
        .bind(events.iter().map(|e| e.disposition.as_str().to_owned()).collect::<Vec<_>>())
        .bind(events.iter().map(|e| e.drop_reason.clone()).collect::<Vec<_>>())
        .bind(rows.iter().map(|(_, raw)| raw.clone()).collect::<Vec<_>>());
    if ids {
        let rows = query.fetch_all(&mut *conn).await?;
        rows.iter().map(|row| row.try_get::<String, _>("event_id").map_err(StoreError::from)).collect()
    } else {
        let done = query.execute(&mut *conn).await?;
        Ok(vec![String::new(); done.rows_affected() as usize])
    }
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
