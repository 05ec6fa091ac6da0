//! The one error type of the store, with what the caller should do about each kind.

use std::path::PathBuf;

/// An error from the knowledge base. Each variant says what the caller does: retry, fix input, or stop.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database file could not be created or opened (missing permissions, a directory in the
    /// way, a file that is not a SQLite database, a full disk). Stop and tell the user the path.
    #[error("cannot open the knowledge base at {}: {source}", path.display())]
    Open {
        /// The database file that was being opened.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: sqlx::Error,
    },

    /// The database was written by a newer driftback, whose schema this binary does not know.
    /// Stop: the user must upgrade driftback (or point it at another database file).
    #[error(
        "the knowledge base has schema version {database} but this driftback only knows versions up to \
         {binary}; it was written by a newer driftback: upgrade driftback to use it"
    )]
    SchemaTooNew {
        /// The highest schema version recorded in the database.
        database: i64,
        /// The highest schema version this binary knows.
        binary: i64,
    },

    /// A schema migration failed and was rolled back; the database is left at the previous version.
    /// Stop and report it: it is a bug in driftback or a database edited by hand.
    #[error("schema migration {version} failed and was rolled back: {source}")]
    Migration {
        /// The version of the migration that failed.
        version: i64,
        /// What went wrong.
        #[source]
        source: sqlx::Error,
    },

    /// The database refused or failed an operation. Retry when [`StoreError::is_transient`] says so
    /// (the database was busy or locked, the pool timed out); otherwise stop.
    #[error("knowledge base error: {0}")]
    Database(#[from] sqlx::Error),

    /// The data given to the store, or read back from it, is not valid (an unknown status, an empty
    /// id, a row edited by hand into something unreadable). Fix the input; retrying will not help.
    #[error("invalid knowledge base data: {0}")]
    Data(String),
}

impl StoreError {
    /// Whether the same call may succeed if retried later: the database was busy or locked by
    /// another writer, the connection pool timed out, or an I/O error occurred.
    pub fn is_transient(&self) -> bool {
        match self {
            StoreError::Database(e) => is_transient_sqlx(e),
            _ => false,
        }
    }
}

fn is_transient_sqlx(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) => true,
        sqlx::Error::Database(db) => {
            // SQLite reports extended result codes; the primary code is the low byte.
            // SQLITE_BUSY = 5, SQLITE_LOCKED = 6.
            let primary = db.code().and_then(|c| c.parse::<i32>().ok()).map(|c| c & 0xff);
            matches!(primary, Some(5) | Some(6))
        }
        _ => false,
    }
}
