//! The seam between the store's SQL, written once (`ops.rs`), and the two databases.
//!
//! A statement is written once, in Postgres's dialect with `$1`, `$2`, ... parameters, and its
//! arguments are given as backend-neutral [`Arg`]s. Text, integers and booleans both backends bind
//! alike ([`bind`]); each backend then says, in its own file:
//!
//! - how it keeps the arguments whose type differs ([`Typed`]): a time is a `timestamptz` on
//!   Postgres and RFC 3339 text on SQLite, a list of strings a `text[]` or JSON text, a JSON
//!   document `jsonb` or text, a vector pgvector's `vector` or a blob of little-endian `f32`s;
//! - for SQLite, that it reads the few Postgres constructs the shared statements use rewritten
//!   ([`sqlite_dialect`], here: `now()`, `= ANY($N)`, row locks) and `$N` parameters by number;
//! - how a write transaction begins ([`Dialect::begin`]: `BEGIN` on Postgres, `BEGIN IMMEDIATE` on
//!   SQLite, whose one writer at a time makes the row and advisory locks Postgres takes with
//!   [`Dialect::lock`] unnecessary);
//! - and the operations the dialects do differently: bulk inserts (`UNNEST` arrays or one row at a
//!   time), the vector column and similarity search (pgvector's HNSW index or an exact scan).

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{LazyLock, Mutex};

use chrono::{DateTime, Utc};
use sqlx::query::Query;
use sqlx::{Database, Encode, Executor, IntoArguments, Pool, Type};

use crate::StoreError;
use crate::decode::Columns;
use crate::records::{BadRecord, EmbedderSpec, EventRecord, FieldChangeRecord, SimilarEntry};

/// One argument of a statement, as the caller has it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Arg<'a> {
    Text(&'a str),
    OptionalText(Option<&'a str>),
    Integer(i64),
    Bool(bool),
    /// What each backend keeps its own way.
    Typed(Typed<'a>),
}

/// An argument whose column type differs between the backends.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Typed<'a> {
    /// `timestamptz` on Postgres, RFC 3339 text on SQLite.
    Time(DateTime<Utc>),
    /// `text[]` on Postgres, a JSON array on SQLite.
    TextList(&'a [String]),
    /// `jsonb` on Postgres, JSON text on SQLite.
    Json(&'a serde_json::Value),
    /// pgvector's `vector` on Postgres, little-endian `f32`s in a blob on SQLite.
    Vector(&'a [f32]),
}

/// A statement (Postgres dialect, `$N` parameters) and its arguments, `$1` first.
#[derive(Debug)]
pub(crate) struct Stmt<'a> {
    pub(crate) sql: &'static str,
    pub(crate) args: Vec<Arg<'a>>,
}

/// The statement `sql`, its arguments to be added in order.
pub(crate) fn stmt<'a>(sql: &'static str) -> Stmt<'a> {
    Stmt { sql, args: Vec::new() }
}

impl<'a> Stmt<'a> {
    fn arg(mut self, arg: Arg<'a>) -> Self {
        self.args.push(arg);
        self
    }

    pub(crate) fn text(self, v: &'a str) -> Self {
        self.arg(Arg::Text(v))
    }

    pub(crate) fn optional_text(self, v: Option<&'a str>) -> Self {
        self.arg(Arg::OptionalText(v))
    }

    pub(crate) fn integer(self, v: i64) -> Self {
        self.arg(Arg::Integer(v))
    }

    pub(crate) fn boolean(self, v: bool) -> Self {
        self.arg(Arg::Bool(v))
    }

    pub(crate) fn time(self, v: DateTime<Utc>) -> Self {
        self.arg(Arg::Typed(Typed::Time(v)))
    }

    pub(crate) fn text_list(self, v: &'a [String]) -> Self {
        self.arg(Arg::Typed(Typed::TextList(v)))
    }

    pub(crate) fn json(self, v: &'a serde_json::Value) -> Self {
        self.arg(Arg::Typed(Typed::Json(v)))
    }

    pub(crate) fn vector(self, v: &'a [f32]) -> Self {
        self.arg(Arg::Typed(Typed::Vector(v)))
    }
}

/// What running a statement gave.
pub(crate) enum Done<R> {
    /// How many rows it changed.
    Changed(u64),
    /// The rows it returned.
    Rows(Vec<R>),
}

/// `query` with `args` bound in order: text, integers and booleans as every backend binds them, the
/// others as `typed` says.
pub(crate) fn bind<'q, DB: Database>(
    mut query: Query<'q, DB, DB::Arguments>,
    args: &[Arg<'_>],
    typed: impl Fn(Query<'q, DB, DB::Arguments>, Typed<'_>) -> Result<Query<'q, DB, DB::Arguments>, StoreError>,
) -> Result<Query<'q, DB, DB::Arguments>, StoreError>
where
    for<'a> &'a str: Encode<'a, DB> + Type<DB>,
    for<'a> Option<&'a str>: Encode<'a, DB> + Type<DB>,
    for<'a> i64: Encode<'a, DB> + Type<DB>,
    for<'a> bool: Encode<'a, DB> + Type<DB>,
{
    for arg in args {
        query = match *arg {
            Arg::Text(v) => query.bind(v),
            Arg::OptionalText(v) => query.bind(v),
            Arg::Integer(v) => query.bind(v),
            Arg::Bool(v) => query.bind(v),
            Arg::Typed(v) => typed(query, v)?,
        };
    }
    Ok(query)
}

/// A backend's result of a statement that returns no rows.
pub(crate) trait RowsAffected {
    fn rows_affected(&self) -> u64;
}

macro_rules! rows_affected {
    ($($result:ty),*) => {
        $(impl RowsAffected for $result {
            fn rows_affected(&self) -> u64 {
                self.rows_affected()
            }
        })*
    };
}

rows_affected!(sqlx::postgres::PgQueryResult, sqlx::sqlite::SqliteQueryResult);

/// Runs `query` on `on`: with `rows`, the rows it returns; without, how many rows it changed.
pub(crate) async fn run<'c, DB: Database>(
    on: impl Executor<'c, Database = DB>,
    query: Query<'_, DB, DB::Arguments>,
    rows: bool,
) -> Result<Done<DB::Row>, StoreError>
where
    DB::Arguments: IntoArguments<DB>,
    DB::QueryResult: RowsAffected,
{
    Ok(if rows {
        Done::Rows(query.fetch_all(on).await?)
    } else {
        Done::Changed(query.execute(on).await?.rows_affected())
    })
}

/// Where statements run: a backend's pool (each statement on its own) or one of its transactions.
pub(crate) trait Exec: Send {
    type Row: Columns + Send;

    /// Runs `stmt`: with `rows`, returns the rows it gives; without, how many rows it changed.
    fn run(&mut self, stmt: Stmt<'_>, rows: bool) -> impl Future<Output = Result<Done<Self::Row>, StoreError>> + Send;
}

/// How many rows `stmt` changed.
pub(crate) async fn execute<E: Exec>(on: &mut E, stmt: Stmt<'_>) -> Result<u64, StoreError> {
    match on.run(stmt, false).await? {
        Done::Changed(n) => Ok(n),
        Done::Rows(rows) => Ok(rows.len() as u64),
    }
}

/// Every row `stmt` returns.
pub(crate) async fn fetch_all<E: Exec>(on: &mut E, stmt: Stmt<'_>) -> Result<Vec<E::Row>, StoreError> {
    match on.run(stmt, true).await? {
        Done::Rows(rows) => Ok(rows),
        Done::Changed(_) => Ok(Vec::new()),
    }
}

/// The first row `stmt` returns, if any.
pub(crate) async fn fetch_optional<E: Exec>(on: &mut E, stmt: Stmt<'_>) -> Result<Option<E::Row>, StoreError> {
    Ok(fetch_all(on, stmt).await?.into_iter().next())
}

/// The first row `stmt` returns; none is an error (`sqlx::Error::RowNotFound`).
pub(crate) async fn fetch_one<E: Exec>(on: &mut E, stmt: Stmt<'_>) -> Result<E::Row, StoreError> {
    fetch_optional(on, stmt).await?.ok_or_else(|| sqlx::Error::RowNotFound.into())
}

/// `pool`, once `migrated` (its migrations applied) succeeded; closed when it failed.
pub(crate) async fn migrated<DB: Database>(
    pool: Pool<DB>,
    migrated: Result<(), StoreError>,
) -> Result<Pool<DB>, StoreError> {
    match migrated {
        Ok(()) => Ok(pool),
        Err(e) => {
            pool.close().await;
            Err(e)
        }
    }
}

/// What a transaction locks on Postgres before the shared statements run. SQLite's write
/// transaction (`BEGIN IMMEDIATE`) already holds the whole database, so there it locks nothing.
pub(crate) enum Lock<'a> {
    /// The audit log of one change set: its "same as the last decision" check cannot race.
    Decisions(&'a str),
    /// The resource keys a delivery groups on: concurrent deliveries on one resource take turns.
    ResourceKeys(&'a HashSet<&'a str>),
    /// The embedder row, before the first embedder is recorded.
    Embedder,
    /// The embedder row and every knowledge entry, while the embedder is swapped.
    Knowledge,
}

/// A backend: its connection pool, its write transactions, its locks, and what it does its own way.
pub(crate) trait Dialect: Send + Sync {
    /// Runs each statement on a connection of the pool.
    type Pool: Exec;
    /// A write transaction.
    type Tx: Exec;

    fn pool(&self) -> Self::Pool;

    /// Begins a write transaction.
    fn begin(&self) -> impl Future<Output = Result<Self::Tx, StoreError>> + Send;

    fn commit(tx: Self::Tx) -> impl Future<Output = Result<(), StoreError>> + Send;

    fn close(&self) -> impl Future<Output = ()> + Send;

    /// Takes `lock` until the end of `tx`.
    fn lock(tx: &mut Self::Tx, lock: Lock<'_>) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Inserts the events whose id is not recorded yet, each with its raw record as JSON text.
    /// Returns one string per event inserted: its id (without `ids`, Postgres sends nothing back
    /// and gives empty strings).
    fn insert_events(
        tx: &mut Self::Tx,
        rows: &[(&EventRecord, String)],
        ids: bool,
    ) -> impl Future<Output = Result<Vec<String>, StoreError>> + Send;

    fn insert_bad_records(tx: &mut Self::Tx, bad: &[BadRecord]) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Inserts the field changes not recorded yet; returns how many were new.
    fn record_field_changes(
        &self,
        changes: &[FieldChangeRecord],
    ) -> impl Future<Output = Result<usize, StoreError>> + Send;

    /// Readies the vector column for `embedder`'s vectors, the first time one is recorded.
    fn prepare_vectors(
        tx: &mut Self::Tx,
        embedder: &EmbedderSpec,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Replaces every entry's vector with one of `spec`'s (`vectors` covers every entry).
    fn write_vectors(
        tx: &mut Self::Tx,
        spec: &EmbedderSpec,
        vectors: &[(i64, Vec<f32>)],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The `k` entries most similar to `query`, most similar first (see `Store::similar_knowledge`).
    fn nearest(
        &self,
        spec: &EmbedderSpec,
        query: &[f32],
        k: usize,
    ) -> impl Future<Output = Result<Vec<SimilarEntry>, StoreError>> + Send;
}

/// A shared statement as SQLite reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SqliteSql {
    pub(crate) sql: &'static str,
    /// How many arguments the statement takes (its highest `$N`).
    pub(crate) params: usize,
    /// The parameter that takes the current time (for `now()` and `clock_timestamp()`), if used:
    /// the one after them.
    pub(crate) now: Option<usize>,
}

/// `sql` (Postgres dialect) in SQLite's: `now()` and `clock_timestamp()` become one more parameter
/// (the caller binds the time: the transaction's, like Postgres's `now()`, or the statement's);
/// `x = ANY($N)` of a list becomes `x IN (SELECT value FROM json_each($N))`, the list being bound
/// as a JSON array; row locks (`FOR UPDATE [SKIP LOCKED]`, `FOR SHARE`) are dropped, SQLite's write
/// transaction holding the whole database. `$N` parameters SQLite reads as they are. Each
/// statement is rewritten once.
pub(crate) fn sqlite_dialect(sql: &'static str) -> SqliteSql {
    static DONE: LazyLock<Mutex<HashMap<&'static str, SqliteSql>>> = LazyLock::new(Default::default);
    let mut done = DONE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    *done.entry(sql).or_insert_with(|| {
        let (text, now) = rewrite_for_sqlite(sql);
        SqliteSql { sql: Box::leak(text.into_boxed_str()), params: max_param(sql), now }
    })
}

fn rewrite_for_sqlite(sql: &str) -> (String, Option<usize>) {
    let mut text = sql.replace(" FOR UPDATE SKIP LOCKED", "").replace(" FOR UPDATE", "").replace(" FOR SHARE", "");
    while let Some(start) = text.find("= ANY($") {
        let Some(close) = text[start..].find(')') else { break };
        let end = start + close;
        let param = text[start + "= ANY(".len()..end].to_owned();
        text.replace_range(start..=end, &format!("IN (SELECT value FROM json_each({param}))"));
    }
    let now = if text.contains("now()") || text.contains("clock_timestamp()") {
        let param = max_param(&text) + 1;
        text = text.replace("clock_timestamp()", &format!("${param}")).replace("now()", &format!("${param}"));
        Some(param)
    } else {
        None
    };
    (text, now)
}

/// The highest `$N` in `sql` (0 when there is none).
fn max_param(sql: &str) -> usize {
    sql.split('$')
        .skip(1)
        .filter_map(|rest| rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_reads_the_shared_statements_rewritten() {
        let (sql, now) = rewrite_for_sqlite(
            "UPDATE q SET a = $2, updated_at = now() WHERE id IN (SELECT id FROM q WHERE k = ANY($1) \
             LIMIT $3 FOR UPDATE SKIP LOCKED) RETURNING id",
        );
        assert_eq!(
            sql,
            "UPDATE q SET a = $2, updated_at = $4 WHERE id IN (SELECT id FROM q WHERE k IN \
             (SELECT value FROM json_each($1)) LIMIT $3) RETURNING id"
        );
        assert_eq!(now, Some(4));
        assert_eq!(
            rewrite_for_sqlite("SELECT 1 FROM t WHERE id = $1 FOR UPDATE"),
            ("SELECT 1 FROM t WHERE id = $1".into(), None)
        );
        assert_eq!(rewrite_for_sqlite("INSERT INTO t (a, at) VALUES (1, clock_timestamp())").1, Some(1));
        assert_eq!(sqlite_dialect("SELECT $10, $9").sql, "SELECT $10, $9");
    }
}
