//! The Postgres store against a real Postgres with pgvector: the shared suite, each case on a
//! database of its own, and what only Postgres has (a server that may be down, pgvector's index,
//! a read-only role). Needs DATABASE_URL; `scripts/postgres.sh` provides one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use driftback_store::{EmbedderSpec, NewKnowledge, OpenOptions, Store, StoreError, migrate};
use sqlx::{Connection, PgConnection};

use crate::suite::Fixture;

/// The server the tests create their databases on.
fn admin_url() -> String {
    match std::env::var("DATABASE_URL") {
        Ok(url) if !url.trim().is_empty() => url,
        _ => panic!(
            "DATABASE_URL is not set: the Postgres tests need a Postgres server with pgvector. Run them \
             under scripts/postgres.sh, which starts a throwaway one: scripts/postgres.sh cargo test -p driftback-store"
        ),
    }
}

/// `url` naming database `db` instead of its own.
fn with_database(url: &str, db: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (url, String::new()),
    };
    let authority_start = base.find("://").map(|i| i + 3).unwrap_or(0);
    let root = match base[authority_start..].find('/') {
        Some(slash) => &base[..authority_start + slash],
        None => base,
    };
    format!("{root}/{db}{query}")
}

/// Drops its database when the test is over (left in place if the test panicked, to look at).
struct Database {
    admin: String,
    name: String,
}

impl Drop for Database {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("left database {} for inspection", self.name);
            return;
        }
        let (admin, name) = (self.admin.clone(), self.name.clone());
        // Drop runs inside the test's runtime: do the async work on a thread of its own.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async {
                let mut conn = PgConnection::connect(&admin).await.unwrap();
                sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)")))
                    .execute(&mut conn)
                    .await
                    .unwrap();
            })
        })
        .join();
    }
}

async fn new_database(test: &str) -> (String, Database) {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let admin = admin_url();
    let short: String = test.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_').take(36).collect();
    let name = format!("t_{short}_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
    let mut conn = PgConnection::connect(&admin)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to DATABASE_URL {}: {e}", driftback_store::redact_url(&admin)));
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\""))).execute(&mut conn).await.unwrap();
    conn.close().await.unwrap();
    (with_database(&admin, &name), Database { admin, name })
}

async fn fixture(test: &str) -> Fixture {
    let (url, db) = new_database(test).await;
    let store = Store::open(&url, &OpenOptions::default()).await.unwrap();
    assert_eq!(store.backend_name(), "postgres");
    Fixture { store, url, _guard: Box::new(db) }
}

crate::store_suite!(fixture);

#[test]
fn database_names_are_swapped_into_urls() {
    assert_eq!(with_database("postgres://u@h:5/postgres", "x"), "postgres://u@h:5/x");
    assert_eq!(with_database("postgres://u@h:5", "x"), "postgres://u@h:5/x");
    assert_eq!(with_database("postgres://u@h/db?sslmode=disable", "x"), "postgres://u@h/x?sslmode=disable");
}

#[tokio::test]
async fn migrations_views_index_and_reader_role() {
    let f = fixture("migrations_views_index").await;
    let mut conn = PgConnection::connect(&f.url).await.unwrap();
    let versions: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM driftback_schema ORDER BY version").fetch_all(&mut conn).await.unwrap();
    assert_eq!(versions, migrate::POSTGRES_MIGRATIONS.iter().map(|m| m.version).collect::<Vec<_>>());

    // Opening again applies nothing and keeps the data.
    f.store.set_checkpoint("k", "v").await.unwrap();
    let again = f.reopen().await;
    assert_eq!(again.checkpoint("k").await.unwrap().as_deref(), Some("v"));
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM driftback_schema").fetch_one(&mut conn).await.unwrap();
    assert_eq!(n, versions.len() as i64);

    // The HNSW index appears with the first vector, and the search query can use it.
    let spec = EmbedderSpec { name: "hashing-v1".into(), dimension: 3 };
    for (i, v) in [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.6, 0.8, 0.0]].into_iter().enumerate() {
        let entry = NewKnowledge {
            signature: format!("sig-{i}"),
            summary: "s".into(),
            embedding: v.to_vec(),
            patch_diff: None,
            recipe_toml: Some("[[recipe]]".into()),
            change_set_id: None,
        };
        f.store.upsert_knowledge(&spec, &entry).await.unwrap();
    }
    let column: String = sqlx::query_scalar(
        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute \
         WHERE attrelid = 'knowledge'::regclass AND attname = 'embedding'",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(column, "vector(3)");
    sqlx::query("SET enable_seqscan = off").execute(&mut conn).await.unwrap();
    let plan: Vec<String> = sqlx::query_scalar(
        "EXPLAIN SELECT id FROM knowledge WHERE embedding IS NOT NULL \
         ORDER BY embedding <=> '[1,0,0]'::vector LIMIT 2",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    assert!(plan.iter().any(|l| l.contains("knowledge_embedding_hnsw")), "{plan:#?}");

    // The views answer.
    f.store.bump_knowledge_use(1).await.unwrap();
    f.store.bump_knowledge_success(1).await.unwrap();
    let stats: Vec<(String, i64, i64)> =
        sqlx::query_as("SELECT signature, uses, successes FROM recipe_statistics ORDER BY signature")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    assert_eq!(stats[0], ("sig-0".into(), 1, 1));
    f.store.record_change_set(&crate::suite::change_set("reverted", "revert")).await.unwrap();
    let reverted: i64 = sqlx::query_scalar("SELECT reverted FROM drift_by_actor").fetch_one(&mut conn).await.unwrap();
    assert_eq!(reverted, 1);
    for view in ["recent_reconciliations", "drift_by_actor", "field_ownership", "recipe_statistics"] {
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("SELECT * FROM {view}"))).execute(&mut conn).await.unwrap();
    }

    // The read-only role reads every table and view, and writes nothing.
    let mut tx = conn.begin().await.unwrap();
    sqlx::query("SET LOCAL ROLE driftback_reader").execute(&mut *tx).await.unwrap();
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM recipe_statistics").fetch_one(&mut *tx).await.unwrap();
    assert_eq!(n, 3);
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM drift_by_actor").fetch_one(&mut *tx).await.unwrap();
    assert_eq!(n, 1, "the view made again by migration 2 is readable too");
    let denied = sqlx::query("DELETE FROM knowledge").execute(&mut *tx).await.unwrap_err();
    assert!(denied.to_string().contains("permission denied"), "{denied}");
    tx.rollback().await.unwrap();
    conn.close().await.unwrap();
}

#[tokio::test]
async fn field_ownership_view_shows_last_actor_and_policy_owner() {
    let f = fixture("field_ownership_view").await;
    let change = |actor: &str, id: &str, secs: i64, path: &str| driftback_store::FieldChangeRecord {
        address: "aws_autoscaling_group.workers".into(),
        attribute_path: path.into(),
        actor: actor.into(),
        event_id: id.into(),
        event_time: crate::suite::at(secs),
        change_set_id: None,
    };
    f.store
        .record_field_changes(&[
            change("alice", "e1", 10, "desired_capacity"),
            change("autoscaling", "e2", 20, "desired_capacity"),
            change("bob", "e3", 5, "max_size"),
        ])
        .await
        .unwrap();
    f.store
        .set_field_owner("aws_autoscaling_group.workers", "desired_capacity", "autoscaling", Some("svc"))
        .await
        .unwrap();
    f.store.set_field_owner("aws_autoscaling_group.workers", "min_size", "terraform", None).await.unwrap();
    let mut conn = PgConnection::connect(&f.url).await.unwrap();
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
}

#[tokio::test]
async fn a_database_from_a_newer_driftback_is_refused() {
    let f = fixture("newer_refused").await;
    f.store.close().await;
    let future = migrate::latest_postgres_version() + 3;
    let mut conn = PgConnection::connect(&f.url).await.unwrap();
    sqlx::query("INSERT INTO driftback_schema (version, name) VALUES ($1, 'from-the-future')")
        .bind(future)
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    let err = Store::open(&f.url, &OpenOptions::default()).await.unwrap_err();
    match &err {
        StoreError::SchemaTooNew { database, binary } => {
            assert_eq!((*database, *binary), (future, migrate::latest_postgres_version()))
        }
        other => panic!("expected SchemaTooNew, got {other:?}"),
    }
    assert!(err.to_string().contains("upgrade driftback"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_opening_a_new_database_at_once_migrate_it_once() {
    let (url, _db) = new_database("concurrent_open").await;
    let options = OpenOptions::default();
    let (a, b, c) = tokio::join!(Store::open(&url, &options), Store::open(&url, &options), Store::open(&url, &options));
    let (a, b, c) = (a.unwrap(), b.unwrap(), c.unwrap());
    a.set_checkpoint("k", "1").await.unwrap();
    assert_eq!(c.checkpoint("k").await.unwrap().as_deref(), Some("1"));
    for s in [a, b, c] {
        s.close().await;
    }
    let mut conn = PgConnection::connect(&url).await.unwrap();
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM driftback_schema").fetch_one(&mut conn).await.unwrap();
    assert_eq!(n, migrate::POSTGRES_MIGRATIONS.len() as i64);
}

/// A loopback port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[tokio::test]
async fn a_server_that_stays_down_is_retried_then_reported() {
    let url = format!("postgres://driftback:hunter2@127.0.0.1:{}/kb", closed_port());
    let options = OpenOptions {
        connect_attempts: 3,
        connect_initial_backoff: Duration::from_millis(50),
        connect_max_wait: Duration::from_secs(30),
        max_connections: 2,
    };
    let err = Store::open(&url, &options).await.unwrap_err();
    match &err {
        StoreError::Unavailable { attempts, .. } => assert_eq!(*attempts, 3),
        other => panic!("expected Unavailable, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.contains("unreachable after 3 attempts") && msg.contains("127.0.0.1"), "{msg}");
    assert!(!msg.contains("hunter2"), "the password is never shown: {msg}");
    assert!(err.is_transient());

    // The total wait bounds the attempts too: it gives up long before its 1,000 attempts.
    let bounded = OpenOptions { connect_attempts: 1000, connect_max_wait: Duration::from_millis(300), ..options };
    match Store::open(&url, &bounded).await {
        Err(StoreError::Unavailable { attempts, .. }) => assert!(attempts < 10, "{attempts} attempts"),
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

#[tokio::test]
async fn a_server_that_comes_up_late_is_waited_for() {
    let (url, _db) = new_database("late_server").await;
    // A loopback proxy to the real server that starts listening only after a while, as a
    // database container that is still booting would.
    let real = {
        let authority = url.split("://").nth(1).unwrap().split('/').next().unwrap();
        authority.rsplit('@').next().unwrap().to_owned()
    };
    let port = closed_port();
    let late_url = url.replacen(&real, &format!("127.0.0.1:{port}"), 1);
    let proxy = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(700)).await;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.unwrap();
        loop {
            let (mut client, _) = listener.accept().await.unwrap();
            let real = real.clone();
            tokio::spawn(async move {
                let mut server = tokio::net::TcpStream::connect(real).await.unwrap();
                let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
            });
        }
    });
    let options = OpenOptions {
        connect_attempts: 20,
        connect_initial_backoff: Duration::from_millis(100),
        connect_max_wait: Duration::from_secs(30),
        max_connections: 2,
    };
    let store = Store::open(&late_url, &options).await.unwrap();
    store.set_checkpoint("up", "yes").await.unwrap();
    assert_eq!(store.checkpoint("up").await.unwrap().as_deref(), Some("yes"));
    store.close().await;
    proxy.abort();
}

#[tokio::test]
async fn a_missing_database_is_reported_at_once_not_retried() {
    let url = with_database(&admin_url(), "driftback_no_such_database");
    let options =
        OpenOptions { connect_attempts: 50, connect_initial_backoff: Duration::from_secs(1), ..OpenOptions::default() };
    // Open, not Unavailable: reported on the first answer, without the 50 attempts.
    let err = Store::open(&url, &options).await.unwrap_err();
    assert!(matches!(err, StoreError::Open { .. }), "{err:?}");
    assert!(err.to_string().contains("driftback_no_such_database"), "{err}");
}

/// The server drops every connection mid-run (a restart, a failover): the pool notices and
/// reconnects (or the call that hits a dead connection fails with a transient error and is
/// retried), and the retried idempotent write stores each event once.
#[tokio::test]
async fn connections_lost_mid_run_are_replaced_and_writes_retried_once() {
    use driftback_store::{Disposition, EventRecord};
    let f = fixture("connections_lost").await;
    let batch: Vec<EventRecord> =
        (0..3).map(|i| crate::suite::event(&format!("e{i}"), Disposition::Kept, None)).collect();
    assert_eq!(f.store.record_events(&batch[..1]).await.unwrap(), 1);

    let db = f.url.rsplit('/').next().unwrap().to_owned();
    let mut admin = PgConnection::connect(&admin_url()).await.unwrap();
    let killed: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = $1 AND pid <> pg_backend_pid()) t",
    )
    .bind(&db)
    .fetch_one(&mut admin)
    .await
    .unwrap();
    assert!(killed >= 1, "the store's pooled connection was open");

    let mut attempts = 0;
    let recorded = loop {
        attempts += 1;
        match f.store.record_events(&batch).await {
            Ok(n) => break n,
            Err(e) if e.is_transient() && attempts < 5 => continue,
            Err(e) => panic!("attempt {attempts}: {e} (transient: {})", e.is_transient()),
        }
    };
    assert_eq!(recorded, 2, "e0 was stored before; e1 and e2 once");
    assert_eq!(f.store.stats().await.unwrap().events, 3);
}
