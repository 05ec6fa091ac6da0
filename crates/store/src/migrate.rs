//! The schema migrations compiled into the binary, and the small runner that applies them at open.
//!
//! Each backend has its own list ([`MIGRATIONS`] for SQLite, [`POSTGRES_MIGRATIONS`]). Applied
//! versions are recorded in `driftback_schema (version, name, applied_at)`. Each migration runs in
//! its own transaction together with its bookkeeping row, so a failed migration leaves the database
//! at the previous version; two processes opening the same database at once apply each migration
//! exactly once (SQLite: `BEGIN IMMEDIATE`; Postgres: an advisory lock held while migrating). A database that records a version this binary does
//! not know was written by a newer driftback, and opening it fails with
//! [`StoreError::SchemaTooNew`](crate::StoreError::SchemaTooNew).

use sqlx::{Connection, PgConnection, SqliteConnection};

use crate::StoreError;

/// One schema migration: a version, a name and the SQL script that applies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migration {
    /// Strictly increasing, starting at 1.
    pub version: i64,
    /// Short description, recorded in `driftback_schema.name`.
    pub name: &'static str,
    /// The SQL script (one or more statements).
    pub sql: &'static str,
}

/// Every SQLite migration this binary knows, in the order they are applied.
pub const MIGRATIONS: &[Migration] = &[
    Migration { version: 1, name: "init", sql: include_str!("../../../migrations/sqlite/0001_init.sql") },
    Migration {
        version: 2,
        name: "daemon, ownership, knowledge",
        sql: include_str!("../../../migrations/sqlite/0002_daemon_ownership_knowledge.sql"),
    },
    Migration {
        version: 3,
        name: "revert status",
        sql: include_str!("../../../migrations/sqlite/0003_revert_status.sql"),
    },
    Migration {
        version: 4,
        name: "stack columns",
        sql: include_str!("../../../migrations/sqlite/0004_stack_columns.sql"),
    },
    Migration {
        version: 5,
        name: "session siblings",
        sql: include_str!("../../../migrations/sqlite/0005_session_siblings.sql"),
    },
];

/// Every Postgres migration this binary knows, in the order they are applied.
pub const POSTGRES_MIGRATIONS: &[Migration] = &[
    Migration { version: 1, name: "init", sql: include_str!("../../../migrations/postgres/0001_init.sql") },
    Migration {
        version: 2,
        name: "revert status",
        sql: include_str!("../../../migrations/postgres/0002_revert_status.sql"),
    },
    Migration {
        version: 3,
        name: "stack columns",
        sql: include_str!("../../../migrations/postgres/0003_stack_columns.sql"),
    },
    Migration {
        version: 4,
        name: "session siblings",
        sql: include_str!("../../../migrations/postgres/0004_session_siblings.sql"),
    },
];

/// The schema version a SQLite database has once this binary has opened it.
pub fn latest_version() -> i64 {
    MIGRATIONS.iter().map(|m| m.version).max().unwrap_or(0)
}

/// The schema version a Postgres database has once this binary has opened it.
pub fn latest_postgres_version() -> i64 {
    POSTGRES_MIGRATIONS.iter().map(|m| m.version).max().unwrap_or(0)
}

const PG_SCHEMA_TABLE: &str = "CREATE TABLE IF NOT EXISTS driftback_schema (
    version    bigint PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)";

/// Arbitrary constant naming driftback's migration lock among the database's advisory locks.
const PG_MIGRATION_LOCK: i64 = 0x6472_6966_7462_6b01;

/// Applies every Postgres migration the database lacks; fails if the database is newer.
pub(crate) async fn apply_postgres(conn: &mut PgConnection) -> Result<(), StoreError> {
    apply_postgres_these(conn, POSTGRES_MIGRATIONS).await
}

async fn apply_postgres_these(conn: &mut PgConnection, migrations: &[Migration]) -> Result<(), StoreError> {
    // A session lock: other driftbacks opening the database wait here until this one is done.
    sqlx::query("SELECT pg_advisory_lock($1)").bind(PG_MIGRATION_LOCK).execute(&mut *conn).await?;
    let result = apply_postgres_locked(conn, migrations).await;
    let unlocked = sqlx::query("SELECT pg_advisory_unlock($1)").bind(PG_MIGRATION_LOCK).execute(&mut *conn).await;
    result?;
    unlocked?;
    Ok(())
}

async fn apply_postgres_locked(conn: &mut PgConnection, migrations: &[Migration]) -> Result<(), StoreError> {
    // Quiet the NOTICE from IF NOT EXISTS on every open.
    sqlx::query("SET client_min_messages = warning").execute(&mut *conn).await?;
    sqlx::query(PG_SCHEMA_TABLE).execute(&mut *conn).await?;
    let applied: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM driftback_schema ORDER BY version").fetch_all(&mut *conn).await?;
    check_known(migrations, &applied)?;
    for m in migrations {
        if applied.contains(&m.version) {
            continue;
        }
        let run = async {
            let mut tx = conn.begin().await?;
            sqlx::raw_sql(m.sql).execute(&mut *tx).await?;
            sqlx::query("INSERT INTO driftback_schema (version, name) VALUES ($1, $2)")
                .bind(m.version)
                .bind(m.name)
                .execute(&mut *tx)
                .await?;
            tx.commit().await
        };
        run.await.map_err(|source| StoreError::Migration { version: m.version, source })?;
    }
    sqlx::query("RESET client_min_messages").execute(&mut *conn).await?;
    Ok(())
}

const SCHEMA_TABLE: &str = "CREATE TABLE IF NOT EXISTS driftback_schema (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at TEXT NOT NULL
)";

/// Applies every migration the database lacks; fails if the database is newer than this binary.
pub(crate) async fn apply(conn: &mut SqliteConnection) -> Result<(), StoreError> {
    apply_these(conn, MIGRATIONS).await
}

async fn apply_these(conn: &mut SqliteConnection, migrations: &[Migration]) -> Result<(), StoreError> {
    sqlx::query(SCHEMA_TABLE).execute(&mut *conn).await?;
    let applied: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM driftback_schema ORDER BY version").fetch_all(&mut *conn).await?;
    check_known(migrations, &applied)?;
    for m in migrations {
        if applied.contains(&m.version) {
            continue;
        }
        apply_one(conn, m).await.map_err(|source| StoreError::Migration { version: m.version, source })?;
    }
    Ok(())
}

/// Rejects a database that records versions this binary does not know.
fn check_known(migrations: &[Migration], applied: &[i64]) -> Result<(), StoreError> {
    let binary = migrations.iter().map(|m| m.version).max().unwrap_or(0);
    let Some(&database) = applied.iter().max() else { return Ok(()) };
    if database > binary {
        return Err(StoreError::SchemaTooNew { database, binary });
    }
    if let Some(unknown) = applied.iter().find(|v| !migrations.iter().any(|m| m.version == **v)) {
        return Err(StoreError::Data(format!(
            "driftback_schema records version {unknown}, which this driftback does not know; \
             the database was not written by a released driftback"
        )));
    }
    Ok(())
}

async fn apply_one(conn: &mut SqliteConnection, m: &Migration) -> Result<(), sqlx::Error> {
    // IMMEDIATE takes the write lock now, so the check below cannot race another process.
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
    let done: Option<i64> = sqlx::query_scalar("SELECT version FROM driftback_schema WHERE version = ?")
        .bind(m.version)
        .fetch_optional(&mut *tx)
        .await?;
    if done.is_some() {
        return tx.rollback().await;
    }
    sqlx::raw_sql(m.sql).execute(&mut *tx).await?;
    sqlx::query("INSERT INTO driftback_schema (version, name, applied_at) VALUES (?, ?, ?)")
        .bind(m.version)
        .bind(m.name)
        .bind(crate::time::now_text())
        .execute(&mut *tx)
        .await?;
    tx.commit().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_strictly_increase_from_one() {
        for list in [MIGRATIONS, POSTGRES_MIGRATIONS] {
            assert_eq!(list[0].version, 1);
            for w in list.windows(2) {
                assert!(w[0].version < w[1].version, "{} before {}", w[0].version, w[1].version);
            }
        }
        assert_eq!(latest_version(), MIGRATIONS.last().unwrap().version);
        assert_eq!(latest_postgres_version(), POSTGRES_MIGRATIONS.last().unwrap().version);
    }

    #[test]
    fn newer_database_is_rejected() {
        let future = latest_version() + 1;
        match check_known(MIGRATIONS, &[1, future]) {
            Err(StoreError::SchemaTooNew { database, binary }) => {
                assert_eq!((database, binary), (future, latest_version()))
            }
            other => panic!("expected SchemaTooNew, got {other:?}"),
        }
        assert!(check_known(MIGRATIONS, &[]).is_ok());
        assert!(check_known(MIGRATIONS, &[1]).is_ok());
    }

    #[tokio::test]
    async fn a_failed_migration_is_rolled_back_and_the_earlier_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let options =
            sqlx::sqlite::SqliteConnectOptions::new().filename(dir.path().join("m.sqlite")).create_if_missing(true);
        let mut conn = SqliteConnection::connect_with(&options).await.unwrap();
        let list = [
            Migration { version: 1, name: "one", sql: "CREATE TABLE one (x INTEGER);" },
            Migration { version: 2, name: "two", sql: "CREATE TABLE two (x INTEGER); INSERT INTO nowhere VALUES (1);" },
        ];
        match apply_these(&mut conn, &list).await {
            Err(StoreError::Migration { version: 2, .. }) => {}
            other => panic!("expected migration 2 to fail, got {other:?}"),
        }
        let versions: Vec<i64> =
            sqlx::query_scalar("SELECT version FROM driftback_schema").fetch_all(&mut conn).await.unwrap();
        assert_eq!(versions, [1]);
        let tables: Vec<String> = sqlx::query_scalar("SELECT name FROM sqlite_master WHERE name IN ('one', 'two')")
            .fetch_all(&mut conn)
            .await
            .unwrap();
        assert_eq!(tables, ["one"], "migration 2's table is rolled back with it");

        // Fixed, it applies on the next open; the applied one is not run again.
        let fixed = [list[0], Migration { version: 2, name: "two", sql: "CREATE TABLE two (x INTEGER);" }];
        apply_these(&mut conn, &fixed).await.unwrap();
        apply_these(&mut conn, &fixed).await.unwrap();
        let versions: Vec<i64> = sqlx::query_scalar("SELECT version FROM driftback_schema ORDER BY version")
            .fetch_all(&mut conn)
            .await
            .unwrap();
        assert_eq!(versions, [1, 2]);
        // An older binary that only knows version 1 refuses the file.
        assert!(matches!(
            apply_these(&mut conn, &list[..1]).await,
            Err(StoreError::SchemaTooNew { database: 2, binary: 1 })
        ));
    }
}
