//! driftback's knowledge base: every event seen, every bad record, every change set and decision.
//!
//! The embedded default is a SQLite file ([`Store::open_sqlite`]) that a user can open with `sqlite3`
//! and query with plain SQL. Its schema lives in `migrations/sqlite/` at the workspace root; the
//! migrations are compiled into the binary and applied when the store is opened (see [`migrate`]).
//!
//! Times are stored as UTC RFC 3339 text with exactly six fractional digits
//! (`2024-05-01T12:00:00.000000Z`), so they sort as text and SQLite's date functions read them;
//! precision below a microsecond is dropped, as Postgres would.

mod error;
pub mod migrate;
mod model;
mod sqlite;
mod time;

pub use error::StoreError;
pub use model::{CHANGE_SET_STATUSES, ChangeSetRecord, Disposition, EventRecord, Stats};
pub use sqlite::Store;
