//! `driftback kb` end to end: a knowledge base filled with corpus changes, searched, shown, counted
//! and re-embedded through the binary, on SQLite and on Postgres.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use driftback_embed::{ChangeSignature, EmbedConfig, Embedder};
use driftback_events::{Disposition, FilterConfig, GroupConfig, classify, group, read_file};
use driftback_store::{EmbedderSpec, NewKnowledge, OpenOptions, Store};
use driftback_terraform::State;

const BIN: &str = env!("CARGO_BIN_EXE_driftback");

/// Corpus scenarios whose changes become knowledge entries.
const LEARNED: &[&str] = &[
    "flat-001-instance-type-console",
    "flat-007-sqs-visibility-cli",
    "flat-017-bucket-tagging-console",
    "flat-012-sg-ingress-add-partner-cidr",
];

fn scenario_events(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/scenarios").join(name).join("events.json")
}

/// The signature of the (first) change set in a scenario's events, as the agent learns it when
/// the state does not locate the resource.
fn signature_of(name: &str) -> ChangeSignature {
    let batch = read_file(&scenario_events(name)).unwrap();
    let kept: Vec<_> = batch
        .events
        .into_iter()
        .map(|(e, _)| e)
        .filter(|e| matches!(classify(e, &FilterConfig::default()), Disposition::Keep))
        .collect();
    let sets = group(kept, &GroupConfig::default());
    driftback_agent::signature(&sets[0], &State::default())
}

/// Fills the store at `url` with one entry per learned scenario the way the agent does: keyed by
/// the signature's canonical text, that text embedded by the default embedder.
fn learn(url: &str) -> Vec<i64> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let store = Store::open(url, &OpenOptions::default()).await.unwrap();
        let embedder = Embedder::from_config(&EmbedConfig::default()).unwrap();
        let spec = EmbedderSpec { name: embedder.name(), dimension: embedder.dimension() };
        let mut ids = Vec::new();
        for (i, name) in LEARNED.iter().enumerate() {
            let signature = signature_of(name);
            let entry = NewKnowledge {
                embedding: embedder.embed_one(&signature.text()).await.unwrap(),
                signature: signature.text(),
                summary: format!("reconciled {name}"),
                patch_diff: Some(format!("+ change {i}\n")),
                recipe_toml: (i == 0).then(|| "[[recipe]]\nname = \"learned\"\n".to_owned()),
                change_set_id: Some(format!("cs-{i}")),
            };
            ids.push(store.upsert_knowledge(&spec, &entry).await.unwrap());
        }
        store.close().await;
        ids
    })
}

fn kb(url: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.arg("kb").args(args).arg("--store").arg(url);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.env_remove("DRIFTBACK_STORE_URL").output().unwrap()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "driftback failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_str(&ok(out)).unwrap()
}

fn check_kb_commands(url: &str) {
    let ids = learn(url);

    // A CloudTrail file of the same kind of change finds its entry first, with similarity ~1.
    let events = scenario_events(LEARNED[1]);
    let found = json(&kb(url, &["search", "--event", events.to_str().unwrap(), "--json"], &[]));
    let first = &found[0]["matches"][0];
    assert_eq!(first["entry"]["id"], ids[1], "{found:#}");
    assert!(first["similarity"].as_f64().unwrap() > 0.99, "{found:#}");
    assert_eq!(found[0]["query"], signature_of(LEARNED[1]).text());

    // Free text finds entries through the words of their signatures.
    let found = json(&kb(url, &["search", "security group ingress", "-k", "2", "--json"], &[]));
    assert_eq!(found[0]["matches"][0]["entry"]["id"], ids[3], "{found:#}");
    assert_eq!(found[0]["matches"].as_array().unwrap().len(), 2);
    let text = ok(&kb(url, &["search", "instance type"], &[]));
    assert!(text.contains(&format!("#{}", ids[0])) && text.contains("[recipe]"), "{text}");

    let shown = ok(&kb(url, &["show", &ids[0].to_string()], &[]));
    assert!(shown.contains("reconciled flat-001") && shown.contains("name = \"learned\""), "{shown}");
    assert!(shown.contains("+ change 0"), "{shown}");
    let missing = kb(url, &["show", "999999"], &[]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no knowledge entry 999999"));

    let stats = json(&kb(url, &["stats", "--json"], &[]));
    assert_eq!(stats["stats"]["knowledge_entries"], 4);
    assert_eq!(stats["stats"]["learned_recipes"], 1);
    assert_eq!(stats["stats"]["embedder"]["name"], "hashing-v1");

    // Another embedder is refused until the knowledge base is re-embedded with it; then the old
    // one is refused.
    let small = [("DRIFTBACK_EMBED__DIMENSION", "64")];
    let refused = kb(url, &["search", "instance type"], &small);
    assert!(!refused.status.success());
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(message.contains("kb reembed") && message.contains("64 dimensions"), "{message}");
    let done = ok(&kb(url, &["reembed"], &small));
    assert!(done.contains("re-embedded 4 entries") && done.contains("-> hashing-v1 (64 dimensions)"), "{done}");
    let found = json(&kb(url, &["search", "--event", events.to_str().unwrap(), "--json"], &small));
    assert_eq!(found[0]["matches"][0]["entry"]["id"], ids[1]);
    // Re-embedded from the signature's canonical text, the text the agent embeds.
    assert!(found[0]["matches"][0]["similarity"].as_f64().unwrap() > 0.99, "{found:#}");
    assert!(!kb(url, &["search", "instance type"], &[]).status.success());
}

/// The security group change of flat-012 as driftback stored it before there was one signature
/// type: the agent's signature as a JSON key, and the one-line text its vector was computed from.
const LEGACY_KEY: &str = r#"{"calls":["ec2:AuthorizeSecurityGroupIngress"],"resource_type":null,"parameters":["groupId","ipPermissions.items[*].fromPort","ipPermissions.items[*].ipProtocol","ipPermissions.items[*].ipRanges.items[*].cidrIp","ipPermissions.items[*].ipRanges.items[*].description","ipPermissions.items[*].toPort"]}"#;
const LEGACY_EMBEDDED: &str = "ec2:AuthorizeSecurityGroupIngress on an unknown resource (groupId, \
                               ipPermissions.items[*].fromPort, ipPermissions.items[*].ipProtocol, \
                               ipPermissions.items[*].ipRanges.items[*].cidrIp, \
                               ipPermissions.items[*].ipRanges.items[*].description, ipPermissions.items[*].toPort)";

/// The similarity of the best match of `kb search --event` on a scenario's events, and its id.
fn best_match(url: &str, scenario: &str) -> (i64, f64) {
    let events = scenario_events(scenario);
    let found = json(&kb(url, &["search", "--event", events.to_str().unwrap(), "--json"], &[]));
    let first = &found[0]["matches"][0];
    (first["entry"]["id"].as_i64().unwrap(), first["similarity"].as_f64().unwrap())
}

#[test]
fn knowledge_stored_by_the_previous_version_is_found_and_reembed_migrates_its_vector() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("kb.sqlite").display());
    let ids = learn(&url);
    let legacy_id = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
        let store = Store::open(&url, &OpenOptions::default()).await.unwrap();
        let embedder = Embedder::from_config(&EmbedConfig::default()).unwrap();
        let spec = EmbedderSpec { name: embedder.name(), dimension: embedder.dimension() };
        let entry = NewKnowledge {
            signature: LEGACY_KEY.into(),
            summary: "reconciled the partner CIDR (old form)".into(),
            embedding: embedder.embed_one(LEGACY_EMBEDDED).await.unwrap(),
            patch_diff: Some("+ legacy\n".into()),
            recipe_toml: None,
            change_set_id: Some("cs-legacy".into()),
        };
        let id = store.upsert_knowledge(&spec, &entry).await.unwrap();
        store.close().await;
        id
    });
    let scenario = "flat-012-sg-ingress-add-partner-cidr";

    // Found as it is: the new-form entry of the same change first, the old one next, far ahead of
    // the other kinds of change.
    let events = scenario_events(scenario);
    let found = json(&kb(&url, &["search", "--event", events.to_str().unwrap(), "-k", "3", "--json"], &[]));
    let matches = found[0]["matches"].as_array().unwrap();
    assert_eq!(matches[0]["entry"]["id"], ids[3], "{found:#}");
    assert_eq!(matches[1]["entry"]["id"], legacy_id, "{found:#}");
    let legacy_before = matches[1]["similarity"].as_f64().unwrap();
    assert!(legacy_before > matches[2]["similarity"].as_f64().unwrap() + 0.1, "{found:#}");

    // Shown with its signature in the canonical form.
    let shown = ok(&kb(&url, &["show", &legacy_id.to_string()], &[]));
    assert!(
        shown.contains(
            "signature:   service:ec2 api:AuthorizeSecurityGroupIngress call:ec2:AuthorizeSecurityGroupIngress \
             param:groupId param:ipPermissions.items[].fromPort"
        ),
        "{shown}"
    );

    // `kb reembed` recomputes its vector from that canonical text: nearer than before.
    ok(&kb(&url, &["reembed"], &[]));
    let found = json(&kb(&url, &["search", "--event", events.to_str().unwrap(), "-k", "3", "--json"], &[]));
    let legacy_after = found[0]["matches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["entry"]["id"] == legacy_id)
        .map(|m| m["similarity"].as_f64().unwrap())
        .unwrap();
    assert!(legacy_after > legacy_before + 0.05 && legacy_after > 0.7, "{legacy_before} -> {legacy_after}");
    assert_eq!(best_match(&url, scenario).0, ids[3], "the entry of the same change still comes first");
}

#[test]
fn kb_commands_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("kb.sqlite").display());
    check_kb_commands(&url);
}

#[test]
fn kb_commands_on_postgres() {
    let admin = std::env::var("DATABASE_URL").unwrap_or_else(|_| {
        panic!(
            "DATABASE_URL is not set: this test needs Postgres with pgvector; run it under scripts/postgres.sh \
             (scripts/postgres.sh cargo test -p driftback --test kb)"
        )
    });
    let db = format!("kb_cli_{}", std::process::id());
    let psql = |sql: &str| {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            use sqlx::Connection;
            let mut conn = sqlx::PgConnection::connect(&admin).await.unwrap();
            sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned())).execute(&mut conn).await.unwrap();
        })
    };
    psql(&format!("CREATE DATABASE {db}"));
    let base = admin.rsplit_once('/').map(|(b, _)| b).unwrap();
    check_kb_commands(&format!("{base}/{db}"));
    psql(&format!("DROP DATABASE {db} WITH (FORCE)"));
}

#[test]
fn a_database_that_is_down_is_retried_then_reported() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("postgres://driftback:s3cret@127.0.0.1:{port}/kb");
    let out = kb(
        &url,
        &["stats"],
        &[("DRIFTBACK_STORE__CONNECT_ATTEMPTS", "2"), ("DRIFTBACK_STORE__CONNECT_MAX_WAIT_SECS", "5")],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unreachable after 2 attempts") && err.contains("check that the database is running"),
        "{err}"
    );
    assert!(!err.contains("s3cret"), "{err}");
}

#[test]
fn a_missing_sqlite_file_is_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["kb", "stats", "--repo"])
        .arg(dir.path())
        .env_remove("DRIFTBACK_STORE_URL")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("there is no knowledge base at"));
    assert!(!dir.path().join(".git").exists(), "nothing is created");
}

#[test]
fn a_bad_store_url_is_named() {
    let out = kb("mysql://localhost/kb", &["stats"], &[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mysql://localhost/kb") && err.contains("sqlite:PATH"), "{err}");
}
