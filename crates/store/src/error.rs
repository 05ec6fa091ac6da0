//! The one error type of the store, with what the caller should do about each kind.

use std::time::Duration;

use crate::embedder::EmbedderSpec;

/// An error from the knowledge base. Each variant says what the caller does: retry, fix input, or stop.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store URL is not one this driftback can open. Fix the configuration.
    #[error(
        "{url:?} is not a knowledge base URL: {reason}; use sqlite:PATH (a file) or \
         postgres://USER@HOST:PORT/DATABASE"
    )]
    Url {
        /// The URL given, with any password replaced by `***`.
        url: String,
        /// What is wrong with it.
        reason: String,
    },

    /// The database could not be opened and retrying will not help (missing permissions, a
    /// directory in the way, a file that is not a SQLite database, a password refused). Stop and
    /// tell the user which database.
    #[error("cannot open the knowledge base at {target}: {source}")]
    Open {
        /// The database file, or the URL with any password replaced by `***`.
        target: String,
        /// What went wrong.
        #[source]
        source: sqlx::Error,
    },

    /// The database server did not answer, even after retrying with backoff. Stop; the user starts
    /// the database (or fixes the address) and runs driftback again.
    #[error(
        "the knowledge base at {target} is unreachable after {attempts} attempts over {:.1}s: {source}; \
         check that the database is running and the URL is right (store.connect_attempts and \
         store.connect_max_wait_secs control the retries)",
        waited.as_secs_f64()
    )]
    Unavailable {
        /// The URL with any password replaced by `***`.
        target: String,
        /// How many connection attempts were made.
        attempts: u32,
        /// How long was spent trying.
        waited: Duration,
        /// The last error.
        #[source]
        source: sqlx::Error,
    },

    /// The knowledge base holds vectors from another embedder (or another dimension). Stop: the
    /// user configures the same embedder again or re-embeds the knowledge base (`driftback kb
    /// reembed`); vectors of two embedders are never mixed.
    #[error(
        "the knowledge base's vectors come from {stored} but the configured embedder is {given}; \
         configure the same embedder again, or run `driftback kb reembed` to re-embed every entry with \
         the new one"
    )]
    EmbedderMismatch {
        /// The embedder the stored vectors come from.
        stored: EmbedderSpec,
        /// The embedder the caller used.
        given: EmbedderSpec,
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

impl From<driftback_publish::UnknownPullRequestState> for StoreError {
    fn from(e: driftback_publish::UnknownPullRequestState) -> Self {
        StoreError::Data(e.to_string())
    }
}

impl StoreError {
    /// Whether the same call may succeed if retried later: the database was busy or locked by
    /// another writer, the connection pool timed out, the connection was lost, or Postgres reported
    /// a serialization failure, a deadlock or that it is starting up or shutting down.
    pub fn is_transient(&self) -> bool {
        match self {
            StoreError::Database(e) => is_transient_sqlx(e),
            StoreError::Unavailable { .. } => true,
            StoreError::Url { .. }
            | StoreError::Open { .. }
            | StoreError::EmbedderMismatch { .. }
            | StoreError::SchemaTooNew { .. }
            | StoreError::Migration { .. }
            | StoreError::Data(_) => false,
        }
    }
}

pub(crate) fn is_transient_sqlx(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) | sqlx::Error::PoolClosed | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => {
            let Some(code) = db.code() else { return false };
            // Postgres SQLSTATEs are five characters: 40001 serialization_failure, 40P01 deadlock,
            // class 08 connection exceptions, 57P01-57P03 admin shutdown / crash / cannot connect now.
            // SQLite's extended result codes have at most four digits.
            if code.len() == 5 {
                return matches!(&*code, "40001" | "40P01" | "57P01" | "57P02" | "57P03") || code.starts_with("08");
            }
            // SQLite reports extended result codes; the primary code is the low byte.
            // SQLITE_BUSY = 5, SQLITE_LOCKED = 6.
            let primary = code.parse::<i32>().ok().map(|c| c & 0xff);
            matches!(primary, Some(5) | Some(6))
        }
        _ => false,
    }
}
