//! How to open a store ([`OpenOptions`]); names nothing else of the crate.

use std::time::Duration;

/// How to open a store: connection retries while the database is not up yet, and pool size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenOptions {
    /// Connection attempts before giving up with [`StoreError::Unavailable`](crate::StoreError::Unavailable) (at least 1).
    pub connect_attempts: u32,
    /// Upper bound on the total time spent retrying.
    pub connect_max_wait: Duration,
    /// The first wait between attempts; each next one doubles, up to 5 seconds.
    pub connect_initial_backoff: Duration,
    /// Connections in the pool (Postgres; SQLite uses a few of its own).
    pub max_connections: u32,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            connect_attempts: 8,
            connect_max_wait: Duration::from_secs(60),
            connect_initial_backoff: Duration::from_millis(250),
            max_connections: 8,
        }
    }
}
