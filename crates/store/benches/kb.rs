//! Knowledge base benchmarks: batched event inserts (SQLite and Postgres) and top-10 similarity
//! search over 100,000 knowledge entries (Postgres with HNSW; SQLite's exact scan for comparison).
//!
//! Run under a Postgres with pgvector, durable as in production:
//!
//!   DRIFTBACK_PG_DURABLE=1 scripts/postgres.sh cargo bench -p driftback-store --bench kb
//!
//! Optional: KB_BENCH_ENTRIES (default 100000), KB_BENCH_QUERIES (default 1000).

use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};
use driftback_embed::HashingEmbedder;
use driftback_store::{Disposition, EmbedderSpec, EventRecord, NewKnowledge, OpenOptions, Store};
use serde_json::json;
use sqlx::{Connection, PgConnection};

const EVENTS: usize = 50_000;
const EVENT_BATCH: usize = 1_000;
const DIMENSION: usize = 256;
const K: usize = 10;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A CloudTrail-sized event (about 1 KB of raw JSON).
fn event(i: usize) -> EventRecord {
    let id = format!("{:08x}-0000-4000-8000-{:012x}", i, i);
    EventRecord {
        event_id: id.clone(),
        event_time: Utc.with_ymd_and_hms(2024, 5, 1, 0, 0, 0).unwrap() + chrono::Duration::milliseconds(i as i64),
        source: "ec2.amazonaws.com".into(),
        name: "ModifyInstanceAttribute".into(),
        actor: format!("arn:aws:iam::123456789012:user/user-{}", i % 50),
        disposition: if i.is_multiple_of(3) { Disposition::Dropped } else { Disposition::Kept },
        drop_reason: i.is_multiple_of(3).then(|| "read-only".to_owned()),
        raw: json!({
            "eventVersion": "1.09", "eventID": id, "eventSource": "ec2.amazonaws.com",
            "eventName": "ModifyInstanceAttribute", "awsRegion": "us-east-1", "sourceIPAddress": "203.0.113.10",
            "userAgent": "aws-cli/2.15.30 md/awscrt#0.19.19 ua/2.0 os/linux#6.5 md/arch#x86_64 lang/python#3.11.8",
            "userIdentity": {"type": "IAMUser", "principalId": "AIDAEXAMPLE", "accountId": "123456789012",
                             "arn": format!("arn:aws:iam::123456789012:user/user-{}", i % 50)},
            "requestParameters": {"instanceId": format!("i-{:017x}", i), "instanceType": {"value": "t3.large"}},
            "responseElements": {"_return": true}, "requestID": format!("req-{i}"), "readOnly": false,
            "eventType": "AwsApiCall", "managementEvent": true, "recipientAccountId": "123456789012"
        })
        .to_string(),
    }
}

/// A synthetic change signature: a few hundred kinds of change over 40 services, so entries form
/// clusters as real ones do; the last token makes each one unique.
fn signature(i: usize) -> String {
    let service = i % 40;
    let api = (i / 40) % 300;
    format!(
        "service:svc{service} api:Update{api}Thing type:aws_t{} param:p{}.value=string param:q{}=int \
         param:tags.items[].key=string uniq:{i}",
        api % 60,
        i % 997,
        (i / 7) % 513
    )
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn insert_events(store: &Store, label: &str) {
    let events: Vec<EventRecord> = (0..EVENTS).map(event).collect();
    let started = Instant::now();
    for batch in events.chunks(EVENT_BATCH) {
        store.record_events(batch).await.unwrap();
    }
    let elapsed = started.elapsed();
    println!(
        "{label}: recorded {EVENTS} events in batches of {EVENT_BATCH} in {:.2} s: {:.0} events/s",
        elapsed.as_secs_f64(),
        EVENTS as f64 / elapsed.as_secs_f64()
    );
    // Recording them again (a redelivered batch) inserts nothing.
    let started = Instant::now();
    let mut new = 0;
    for batch in events.chunks(EVENT_BATCH) {
        new += store.record_events(batch).await.unwrap();
    }
    assert_eq!(new, 0);
    println!(
        "{label}: re-recorded the same {EVENTS} events (all duplicates) at {:.0} events/s",
        EVENTS as f64 / started.elapsed().as_secs_f64()
    );
}

async fn search_latencies(store: &Store, spec: &EmbedderSpec, queries: &[Vec<f32>]) -> Vec<Duration> {
    let mut latencies = Vec::with_capacity(queries.len());
    for q in queries {
        let started = Instant::now();
        let found = store.similar_knowledge(spec, q, K).await.unwrap();
        latencies.push(started.elapsed());
        assert_eq!(found.len(), K);
    }
    latencies.sort();
    latencies
}

fn report(label: &str, latencies: &[Duration]) {
    println!(
        "{label}: top-{K} over {} queries: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        latencies.len(),
        ms(percentile(latencies, 0.50)),
        ms(percentile(latencies, 0.99)),
        ms(*latencies.last().unwrap())
    );
}

/// Fraction of the exact top-k that the store returned, averaged over `queries`.
async fn recall(store: &Store, spec: &EmbedderSpec, vectors: &[Vec<f32>], ids: &[i64], queries: &[Vec<f32>]) -> f64 {
    let mut hit = 0usize;
    for q in queries {
        let mut exact: Vec<(f32, i64)> =
            vectors.iter().zip(ids).map(|(v, id)| (v.iter().zip(q).map(|(a, b)| a * b).sum::<f32>(), *id)).collect();
        exact.sort_by(|a, b| b.0.total_cmp(&a.0));
        let truth: Vec<i64> = exact[..K].iter().map(|(_, id)| *id).collect();
        let found = store.similar_knowledge(spec, q, K).await.unwrap();
        hit += found.iter().filter(|s| truth.contains(&s.entry.id)).count();
    }
    hit as f64 / (queries.len() * K) as f64
}

/// Loads `n` knowledge entries: rows in bulk, then every vector through the store's own
/// re-embedding path, which builds the HNSW index once at the end.
async fn load_knowledge(store: &Store, url: Option<&str>, spec: &EmbedderSpec, vectors: &[Vec<f32>]) -> Vec<i64> {
    let embedder = HashingEmbedder::new(DIMENSION).unwrap();
    let started = Instant::now();
    match url {
        Some(url) => {
            // One entry through the API fixes the embedder; the rest in bulk rows without vectors.
            store
                .upsert_knowledge(
                    spec,
                    &NewKnowledge {
                        signature: signature(0),
                        summary: "entry 0".into(),
                        embedding: vectors[0].clone(),
                        patch_diff: None,
                        recipe_toml: None,
                        change_set_id: None,
                    },
                )
                .await
                .unwrap();
            let mut conn = PgConnection::connect(url).await.unwrap();
            for start in (1..vectors.len()).step_by(10_000) {
                let end = (start + 10_000).min(vectors.len());
                let sigs: Vec<String> = (start..end).map(signature).collect();
                let summaries: Vec<String> = (start..end).map(|i| format!("entry {i}")).collect();
                sqlx::query("INSERT INTO knowledge (signature, summary) SELECT * FROM UNNEST($1::text[], $2::text[])")
                    .bind(sigs)
                    .bind(summaries)
                    .execute(&mut conn)
                    .await
                    .unwrap();
            }
            conn.close().await.unwrap();
        }
        None => {
            for (i, v) in vectors.iter().enumerate() {
                let entry = NewKnowledge {
                    signature: signature(i),
                    summary: format!("entry {i}"),
                    embedding: v.clone(),
                    patch_diff: None,
                    recipe_toml: None,
                    change_set_id: None,
                };
                store.upsert_knowledge(spec, &entry).await.unwrap();
            }
        }
    }
    let texts = store.knowledge_texts().await.unwrap();
    assert_eq!(texts.len(), vectors.len());
    let ids: Vec<i64> = texts.iter().map(|t| t.id).collect();
    let pairs: Vec<(i64, Vec<f32>)> = texts.iter().map(|t| (t.id, embedder.embed(&t.signature).unwrap())).collect();
    let reembed = Instant::now();
    store.replace_embeddings(spec, &pairs).await.unwrap();
    println!(
        "{}: loaded {} entries in {:.1} s (re-embedding all of them, index included: {:.1} s)",
        store.backend_name(),
        vectors.len(),
        started.elapsed().as_secs_f64(),
        reembed.elapsed().as_secs_f64()
    );
    ids
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` would pass nothing we need to honour.
    let entries = env_usize("KB_BENCH_ENTRIES", 100_000);
    let query_count = env_usize("KB_BENCH_QUERIES", 1_000);
    let Ok(admin) = std::env::var("DATABASE_URL") else {
        eprintln!("DATABASE_URL is not set: run under scripts/postgres.sh (see the top of benches/kb.rs)");
        std::process::exit(2);
    };

    let embedder = HashingEmbedder::new(DIMENSION).unwrap();
    let spec = EmbedderSpec { name: driftback_embed::HASHING_EMBEDDER_NAME.into(), dimension: DIMENSION };
    let vectors: Vec<Vec<f32>> = (0..entries).map(|i| embedder.embed(&signature(i)).unwrap()).collect();
    // Queries: changes of the same kinds, never stored (other unique tokens).
    let queries: Vec<Vec<f32>> = (0..query_count)
        .map(|i| embedder.embed(&signature(i * 7919 % entries).replace("uniq:", "query:")).unwrap())
        .collect();

    // Postgres.
    let db = format!("driftback_bench_{}", std::process::id());
    let mut conn = PgConnection::connect(&admin).await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {db}"))).execute(&mut conn).await.unwrap();
    let url = format!("{}/{db}", admin.rsplit_once('/').unwrap().0);
    let pg = Store::open(&url, &OpenOptions::default()).await.unwrap();
    insert_events(&pg, "postgres").await;
    let ids = load_knowledge(&pg, Some(&url), &spec, &vectors).await;
    // Warm the cache as a running daemon's would be, then measure.
    search_latencies(&pg, &spec, &queries[..queries.len().min(100)]).await;
    report("postgres (HNSW)", &search_latencies(&pg, &spec, &queries).await);
    let r = recall(&pg, &spec, &vectors, &ids, &queries[..queries.len().min(200)]).await;
    println!("postgres (HNSW): recall@{K} against exact search: {:.3}", r);
    pg.close().await;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP DATABASE {db} WITH (FORCE)"))).execute(&mut conn).await.unwrap();

    // SQLite, for comparison (exact search: fewer entries, fewer queries).
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Store::open(&format!("sqlite:{}", dir.path().join("kb.sqlite").display()), &OpenOptions::default())
        .await
        .unwrap();
    insert_events(&sqlite, "sqlite").await;
    let small = entries.min(10_000);
    load_knowledge(&sqlite, None, &spec, &vectors[..small]).await;
    report(&format!("sqlite (exact, {small} entries)"), &search_latencies(&sqlite, &spec, &queries[..50]).await);
    sqlite.close().await;
}
