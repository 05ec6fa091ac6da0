//! The knowledge base against real databases: one suite (`suite/`) run on SQLite files and on
//! Postgres with pgvector, plus what is particular to each backend.

mod suite;

#[path = "backends/sqlite.rs"]
mod sqlite;

#[path = "backends/postgres.rs"]
mod postgres;
