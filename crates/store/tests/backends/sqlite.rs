//! The SQLite store against real database files, each test on a fresh temporary directory: the
//! shared suite, and what only a file has (a path, a journal mode, a header).

use std::path::{Path, PathBuf};

use driftback_store::{Disposition, OpenOptions, Stats, Store, StoreError, migrate};
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{Connection, SqliteConnection};

use crate::suite::{Fixture, change_set, event};

async fn fixture(name: &str) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join(format!("{name}.sqlite")).display());
    let store = Store::open(&url, &OpenOptions::default()).await.unwrap();
    Fixture { store, url, _guard: Box::new(dir) }
}

crate::store_suite!(fixture);

fn db_path(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("state").join("nested").join("driftback.sqlite")
}

/// A plain connection to the file, as `sqlite3` would have, for checks and hand edits.
async fn raw(path: &Path) -> SqliteConnection {
    SqliteConnection::connect_with(&SqliteConnectOptions::new().filename(path)).await.unwrap()
}

#[tokio::test]
async fn migrations_apply_and_reopen_is_a_no_op() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    let store = Store::open_sqlite(&path).await.unwrap();
    assert!(path.is_file(), "parent directories and the file are created");
    store.close().await;

    let mut conn = raw(&path).await;
    let applied: Vec<(i64, String, String)> =
        sqlx::query_as("SELECT version, name, applied_at FROM driftback_schema ORDER BY version")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    let expected: Vec<(i64, String)> = migrate::MIGRATIONS.iter().map(|m| (m.version, m.name.to_owned())).collect();
    assert_eq!(applied.iter().map(|(v, n, _)| (*v, n.clone())).collect::<Vec<_>>(), expected);
    let journal: String = sqlx::query_scalar("PRAGMA journal_mode").fetch_one(&mut conn).await.unwrap();
    assert_eq!(journal, "wal");
    let tables: Vec<String> = sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    for t in [
        "audit_log",
        "bad_records",
        "change_set_queue",
        "change_sets",
        "checkpoints",
        "driftback_schema",
        "events",
        "field_changes",
        "field_owners",
        "knowledge",
        "knowledge_embedder",
        "pull_requests",
        "reconciliations",
    ] {
        assert!(tables.iter().any(|n| n == t), "table {t} missing from {tables:?}");
    }
    conn.close().await.unwrap();

    let store = Store::open_sqlite(&path).await.unwrap();
    assert_eq!(store.stats().await.unwrap(), Stats::default());
    store.close().await;
    let mut conn = raw(&path).await;
    let again: Vec<(i64, String, String)> =
        sqlx::query_as("SELECT version, name, applied_at FROM driftback_schema ORDER BY version")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    assert_eq!(again, applied, "re-opening applies nothing");
}

#[tokio::test]
async fn recording_events_twice_stores_them_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_sqlite(&db_path(&dir)).await.unwrap();
    let batch = vec![
        event("e1", Disposition::Kept, None),
        event("e2", Disposition::Dropped, Some("read-only")),
        event("e3", Disposition::Bad, Some("no requestParameters")),
    ];
    assert_eq!(store.record_events(&batch).await.unwrap(), 3);
    assert_eq!(store.record_events(&batch).await.unwrap(), 0);
    // Overlapping batch with a duplicate inside it: only e4 is new.
    let overlap = vec![
        event("e3", Disposition::Kept, None),
        event("e4", Disposition::Kept, None),
        event("e4", Disposition::Kept, None),
    ];
    assert_eq!(store.record_events(&overlap).await.unwrap(), 1);
    assert_eq!(store.record_events(&[]).await.unwrap(), 0);
    assert_eq!(store.stats().await.unwrap().events, 4);

    let asked: Vec<String> = ["e1", "e2", "e4", "nope", "e1"].iter().map(|s| s.to_string()).collect();
    let seen = store.seen_event_ids(&asked).await.unwrap();
    let mut seen: Vec<_> = seen.into_iter().collect();
    seen.sort();
    assert_eq!(seen, ["e1", "e2", "e4"]);
    assert!(store.seen_event_ids(&[]).await.unwrap().is_empty());

    // The first recording wins: e3 stays 'bad'.
    store.close().await;
    let mut conn = raw(&db_path(&dir)).await;
    let (disposition, raw_json): (String, String) =
        sqlx::query_as("SELECT disposition, raw FROM events WHERE event_id = 'e3'").fetch_one(&mut conn).await.unwrap();
    assert_eq!(disposition, "bad");
    assert_eq!(raw_json, batch[2].raw, "the record text as given");
}

#[tokio::test]
async fn change_set_upsert_is_idempotent_and_updates_status() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    let store = Store::open_sqlite(&path).await.unwrap();
    assert_eq!(store.change_set("cs-1").await.unwrap(), None);

    let first = change_set("cs-1", "dry-run");
    store.record_change_set(&first).await.unwrap();
    assert_eq!(store.change_set("cs-1").await.unwrap().as_ref(), Some(&first));
    let stamps = |path: PathBuf| async move {
        let mut conn = raw(&path).await;
        let s: (String, String, i64) = sqlx::query_as(
            "SELECT recorded_at, updated_at, (SELECT COUNT(*) FROM audit_log) FROM change_sets WHERE id = 'cs-1'",
        )
        .fetch_one(&mut conn)
        .await
        .unwrap();
        conn.close().await.unwrap();
        s
    };
    let before = stamps(path.clone()).await;
    assert_eq!(before.2, 0, "no decision, no audit row");
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    store.record_change_set(&first).await.unwrap();
    assert_eq!(stamps(path.clone()).await, before, "recording the same change set again changes nothing");

    let mut decided = first.clone();
    decided.status = "reconciled".into();
    decided.decision = Some("reconcile".into());
    decided.rule = Some("default-reconcile".into());
    decided.rationale = Some("console change by a team member within bounds".into());
    decided.branch = Some("driftback/cs-1".into());
    decided.commit_id = Some("0123abcd".into());
    decided.diff = Some("-  instance_type = \"t3.medium\"\n+  instance_type = \"t3.large\"\n".into());
    decided.notes = vec!["value changed at var.instance_type".into()];
    store.record_change_set(&decided).await.unwrap();
    assert_eq!(store.change_set("cs-1").await.unwrap().as_ref(), Some(&decided));
    let after = stamps(path.clone()).await;
    assert_eq!(after.0, before.0, "recorded_at is kept");
    assert!(after.1 > before.1, "updated_at moves on");
    assert_eq!(after.2, 1, "one audit row for the decision");

    store.record_change_set(&decided).await.unwrap();
    assert_eq!(stamps(path.clone()).await.2, 2, "one audit row per call with a decision");

    let mut conn = raw(&path).await;
    let audit: Vec<(String, String, Option<String>, Option<String>)> =
        sqlx::query_as("SELECT change_set_id, decision, rule, rationale FROM audit_log ORDER BY id")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    assert_eq!(audit[0], ("cs-1".into(), "reconcile".into(), decided.rule.clone(), decided.rationale.clone()));
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM change_sets").fetch_one(&mut conn).await.unwrap();
    assert_eq!(n, 1);
}

#[tokio::test]
async fn a_database_from_a_newer_driftback_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    Store::open_sqlite(&path).await.unwrap().close().await;
    let future = migrate::latest_version() + 7;
    let mut conn = raw(&path).await;
    sqlx::query("INSERT INTO driftback_schema (version, name, applied_at) VALUES (?, 'from-the-future', '2030-01-01T00:00:00.000000Z')")
        .bind(future)
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();

    match Store::open_sqlite(&path).await {
        Err(e @ StoreError::SchemaTooNew { .. }) => {
            let StoreError::SchemaTooNew { database, binary } = e else { unreachable!() };
            assert_eq!((database, binary), (future, migrate::latest_version()));
            let msg = e.to_string();
            assert!(msg.contains("upgrade driftback"), "{msg}");
            assert!(msg.contains(&future.to_string()), "{msg}");
        }
        other => panic!("expected SchemaTooNew, got {other:?}"),
    }
}

#[tokio::test]
async fn a_file_that_is_not_a_database_fails_to_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(
        &path,
        "this is not a SQLite database, just some text that is long enough to have a header\n".repeat(20),
    )
    .unwrap();
    match Store::open_sqlite(&path).await {
        Err(StoreError::Open { target, .. }) => assert_eq!(target, path.display().to_string()),
        other => panic!("expected Open, got {other:?}"),
    }
    let blocked = dir.path().join("notes.txt").join("kb.sqlite");
    assert!(matches!(Store::open_sqlite(&blocked).await, Err(StoreError::Open { .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_opening_a_new_file_at_once_apply_each_migration_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    let (a, b) = tokio::join!(Store::open_sqlite(&path), Store::open_sqlite(&path));
    let (a, b) = (a.unwrap(), b.unwrap());
    a.record_events(&[event("e1", Disposition::Kept, None)]).await.unwrap();
    assert_eq!(b.seen_event_ids(&["e1".to_owned()]).await.unwrap().len(), 1);
    a.close().await;
    b.close().await;
    let mut conn = raw(&path).await;
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM driftback_schema").fetch_one(&mut conn).await.unwrap();
    assert_eq!(n, migrate::MIGRATIONS.len() as i64);
}

#[tokio::test]
async fn the_views_for_people_answer_on_sqlite_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    let store = Store::open_sqlite(&path).await.unwrap();
    let change = |actor: &str, id: &str, secs: i64, path: &str| driftback_store::FieldChangeRecord {
        address: "aws_autoscaling_group.workers".into(),
        attribute_path: path.into(),
        actor: actor.into(),
        event_id: id.into(),
        event_time: crate::suite::at(secs),
        change_set_id: None,
    };
    store
        .record_field_changes(&[
            change("alice", "e1", 10, "desired_capacity"),
            change("autoscaling", "e2", 20, "desired_capacity"),
            change("bob", "e3", 5, "max_size"),
        ])
        .await
        .unwrap();
    store
        .set_field_owner("aws_autoscaling_group.workers", "desired_capacity", "autoscaling", Some("svc"))
        .await
        .unwrap();
    store.set_field_owner("aws_autoscaling_group.workers", "min_size", "terraform", None).await.unwrap();
    store.record_change_set(&change_set("a", "reconciled")).await.unwrap();
    store.record_change_set(&change_set("b", "escalated")).await.unwrap();
    store.close().await;

    let mut conn = raw(&path).await;
    let rows: Vec<(String, Option<String>, i64, Option<String>)> = sqlx::query_as(
        "SELECT attribute_path, last_actor, changes, policy_owner FROM field_ownership ORDER BY attribute_path",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    assert_eq!(
        rows,
        vec![
            ("desired_capacity".into(), Some("autoscaling".into()), 2, Some("autoscaling".into())),
            ("max_size".into(), Some("bob".into()), 1, None),
            ("min_size".into(), None, 0, Some("terraform".into())),
        ]
    );
    let by_actor: (String, i64, i64, i64) =
        sqlx::query_as("SELECT actor, change_sets, reconciled, escalated FROM drift_by_actor")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    assert_eq!((by_actor.1, by_actor.2, by_actor.3), (2, 1, 1));
    for view in ["recent_reconciliations", "recipe_statistics"] {
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("SELECT * FROM {view}"))).execute(&mut conn).await.unwrap();
    }
}

#[tokio::test]
async fn a_version_2_database_keeps_its_change_sets_and_learns_the_revert_status() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.sqlite");
    {
        // The database as driftback with migrations 1 and 2 left it, with a change set and its
        // decision in the audit log.
        let mut conn =
            SqliteConnection::connect_with(&SqliteConnectOptions::new().filename(&path).create_if_missing(true))
                .await
                .unwrap();
        sqlx::raw_sql(
            "CREATE TABLE driftback_schema (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
        )
        .execute(&mut conn)
        .await
        .unwrap();
        for m in migrate::MIGRATIONS.iter().filter(|m| m.version <= 2) {
            sqlx::raw_sql(m.sql).execute(&mut conn).await.unwrap();
            sqlx::query("INSERT INTO driftback_schema VALUES (?, ?, '2024-05-01T00:00:00Z')")
                .bind(m.version)
                .bind(m.name)
                .execute(&mut conn)
                .await
                .unwrap();
        }
        sqlx::raw_sql(
            "INSERT INTO change_sets (id, resource_id, address, actor, via, first_event_time, last_event_time, event_ids,
                                      status, decision, rule, rationale, branch, notes, recorded_at, updated_at)
             VALUES ('old', 'i-0abc', 'aws_instance.web', 'alice', 'console', '2024-05-01T10:00:00.000000Z',
                     '2024-05-01T10:05:00.000000Z', '[\"e1\"]', 'ignored', 'revert', 'owned', 'Terraform owns it',
                     'driftback/x', '[\"n\"]', '2024-05-01T10:06:00.000000Z', '2024-05-01T10:06:00.000000Z');
             INSERT INTO audit_log (change_set_id, decision, rule, rationale, recorded_at)
             VALUES ('old', 'revert', 'owned', 'Terraform owns it', '2024-05-01T10:06:00.000000Z');",
        )
        .execute(&mut conn)
        .await
        .unwrap();
        let refused = sqlx::raw_sql(
            "INSERT INTO change_sets (id, actor, via, first_event_time, last_event_time, status, recorded_at, updated_at)
             VALUES ('new', 'bob', 'cli', 'x', 'x', 'revert', 'x', 'x')",
        )
        .execute(&mut conn)
        .await;
        assert!(refused.is_err(), "version 2 knows no revert status");
        conn.close().await.unwrap();
    }

    let store = Store::open_sqlite(&path).await.unwrap();
    let old = store.change_set("old").await.unwrap().unwrap();
    assert_eq!(
        (old.status.as_str(), old.decision.as_deref(), old.branch.as_deref(), old.event_ids, old.notes),
        ("ignored", Some("revert"), Some("driftback/x"), vec!["e1".to_string()], vec!["n".to_string()])
    );
    let mut new = change_set("new", "revert");
    new.actor = "alice".into();
    store.record_change_set(&new).await.unwrap();
    store.close().await;

    let mut conn = raw(&path).await;
    let versions: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM driftback_schema ORDER BY version").fetch_all(&mut conn).await.unwrap();
    assert_eq!(versions, migrate::MIGRATIONS.iter().map(|m| m.version).collect::<Vec<_>>());
    let by_actor: (String, i64, i64, i64) =
        sqlx::query_as("SELECT actor, change_sets, ignored, reverted FROM drift_by_actor")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    assert_eq!(by_actor, ("alice".into(), 2, 1, 1));
    let indexes: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'change_sets' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    assert_eq!(
        indexes,
        [
            "change_sets_address",
            "change_sets_last_event_time",
            "change_sets_resource_id",
            "change_sets_stack",
            "change_sets_status"
        ]
    );
    let audit: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM audit_log WHERE change_set_id = 'old'")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(audit, 1);
}
