//! The feed's ledger over the real knowledge base: intakes recorded in one transaction, redeliveries
//! that change nothing, and change sets whose events are not all recorded (data an older driftback
//! left after a crash) put back to wait for them, then failed once the wait is over.
//!
//! Each test runs on a SQLite file, and on Postgres when DATABASE_URL names one (scripts/postgres.sh
//! provides it; with DRIFTBACK_REQUIRE_SERVICES set, as in CI, a missing DATABASE_URL fails).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use driftback_events::FilterConfig;
use driftback_feed::{Intake, IntakeReceipt, Ledger, QuietWindow, StoreLedger};
use driftback_store::{Disposition, EventRecord, OpenOptions, PendingChangeSet, QueueStatus, Store};
use serde_json::{Value, json};
use sqlx::Connection;

const WINDOW: QuietWindow = QuietWindow { quiet_secs: 120, max_age_secs: 900 };
const LEASE: Duration = Duration::from_secs(60);

/// A fresh store of each backend available; the guard keeps its file or database alive.
async fn stores(test: &str) -> Vec<(Store, Box<dyn std::any::Any>)> {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Store::open_sqlite(&dir.path().join("kb.sqlite")).await.unwrap();
    let mut out: Vec<(Store, Box<dyn std::any::Any>)> = vec![(sqlite, Box::new(dir))];
    match std::env::var("DATABASE_URL") {
        Ok(admin) if !admin.trim().is_empty() => {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let name = format!("feed_{test}_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
            let mut conn = sqlx::PgConnection::connect(&admin).await.unwrap();
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\""))).execute(&mut conn).await.unwrap();
            conn.close().await.unwrap();
            let (base, _) = admin.rsplit_once('/').unwrap();
            let store = Store::open(&format!("{base}/{name}"), &OpenOptions::default()).await.unwrap();
            // The database stays until scripts/postgres.sh deletes the whole cluster.
            out.push((store, Box::new(name)));
        }
        _ if std::env::var_os("DRIFTBACK_REQUIRE_SERVICES").is_some() => {
            panic!("DRIFTBACK_REQUIRE_SERVICES is set but DATABASE_URL is not: run through scripts/postgres.sh")
        }
        _ => eprintln!("DATABASE_URL is not set: {test} runs on SQLite only (scripts/postgres.sh adds Postgres)"),
    }
    out
}

fn record(id: &str, time: &str, instance: &str, read_only: bool) -> Value {
    json!({
        "eventVersion": "1.09", "eventID": id, "eventTime": time, "eventSource": "ec2.amazonaws.com",
        "eventName": if read_only { "DescribeInstances" } else { "ModifyInstanceAttribute" },
        "eventType": "AwsApiCall", "managementEvent": true, "readOnly": read_only,
        "awsRegion": "eu-west-1", "recipientAccountId": "123456789012",
        "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/alice", "userName": "alice",
                         "accountId": "123456789012"},
        "userAgent": "console.amazonaws.com",
        "requestParameters": {"instanceId": instance, "instanceType": {"value": "t3.large"}}
    })
}

fn intake(records: &[Value]) -> Intake {
    let text = json!({"Records": records}).to_string();
    let intake = Intake::from_text(&text, "sqs message m1", &FilterConfig::default());
    assert!(intake.bad.is_empty(), "{:?}", intake.bad);
    intake
}

fn minutes(n: i64) -> chrono::Duration {
    chrono::Duration::minutes(n)
}

#[tokio::test]
async fn an_intake_is_recorded_once_and_its_redelivery_changes_nothing() {
    for (store, _guard) in stores("redelivery").await {
        let ledger = StoreLedger::new(store.clone(), WINDOW);
        let message = intake(&[
            record("e1", "2024-05-01T12:00:00Z", "i-1", false),
            record("e2", "2024-05-01T12:00:30Z", "i-1", false),
            record("r1", "2024-05-01T12:00:40Z", "i-1", true),
        ]);
        let first = ledger.record_intake(&message).await.unwrap();
        assert_eq!(
            first,
            IntakeReceipt { new_events: 3, duplicates: 0, pending: 2, bad: 0 },
            "{}",
            store.backend_name()
        );
        let queue = store.unfinished_change_sets().await.unwrap();
        assert_eq!(queue.len(), 1);
        assert_eq!(queue[0].change_set.event_ids, ["e1", "e2"]);

        // The message comes back (a crash before it was deleted, a visibility timeout).
        let again = ledger.record_intake(&message).await.unwrap();
        assert_eq!(again, IntakeReceipt { new_events: 0, duplicates: 3, pending: 0, bad: 0 });
        assert_eq!(store.unfinished_change_sets().await.unwrap(), queue, "no second change set");

        let claimed = ledger.claim_due(Utc::now(), "w1", LEASE, 10).await.unwrap();
        assert_eq!(claimed.len(), 1);
        let events: Vec<&str> = claimed[0].change_set.events.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(events, ["e1", "e2"]);
        store.close().await;
    }
}

/// What an older driftback could leave after a crash: a pending change set saved, some of its
/// events never recorded.
async fn left_by_an_older_version(store: &Store, id: &str, recorded: &str, missing: &str, instance: &str) {
    let raw = record(recorded, "2024-05-01T12:00:00Z", instance, false);
    let session = driftback_events::normalize(&raw).unwrap().actor.session_key();
    let time: DateTime<Utc> = "2024-05-01T12:00:00Z".parse().unwrap();
    let event = EventRecord {
        event_id: recorded.into(),
        event_time: time,
        source: "ec2.amazonaws.com".into(),
        name: "ModifyInstanceAttribute".into(),
        actor: "alice".into(),
        disposition: Disposition::Kept,
        drop_reason: None,
        raw: raw.to_string(),
    };
    assert_eq!(store.record_events(&[event]).await.unwrap(), 1);
    let pending = PendingChangeSet {
        id: id.into(),
        resource_key: instance.into(),
        actor_session: session,
        first_event_time: time,
        last_event_time: time + chrono::Duration::seconds(10),
        event_ids: vec![recorded.into(), missing.into()],
    };
    assert!(store.save_pending(&pending).await.unwrap());
}

#[tokio::test]
async fn a_change_set_missing_events_waits_for_them_within_the_bound_then_fails_naming_them() {
    for (store, _guard) in stores("incomplete").await {
        let ledger = StoreLedger::new(store.clone(), WINDOW);
        assert_eq!(ledger.incomplete_grace(), minutes(15), "the window's maximum age");
        left_by_an_older_version(&store, "cs-lost", "e1", "e2", "i-1").await;
        left_by_an_older_version(&store, "cs-late", "e3", "e4", "i-2").await;

        // Young: put back to wait, attempt after attempt, never handed out in part.
        let now = Utc::now();
        for attempt in 1..=3 {
            assert!(ledger.claim_due(now + minutes(attempt), "w1", LEASE, 10).await.unwrap().is_empty());
            for id in ["cs-lost", "cs-late"] {
                let q = store.queued_change_set(id).await.unwrap().unwrap();
                assert_eq!((q.status, q.attempts), (QueueStatus::Pending, attempt as u32), "{}", store.backend_name());
            }
        }

        // The message holding e4 comes back meanwhile: recorded, it completes its change set
        // (which already names it), and nothing new is started.
        let receipt = ledger.record_intake(&intake(&[record("e4", "2024-05-01T12:00:10Z", "i-2", false)])).await;
        assert_eq!(receipt.unwrap(), IntakeReceipt { new_events: 1, duplicates: 0, pending: 1, bad: 0 });
        assert_eq!(store.unfinished_change_sets().await.unwrap().len(), 2);
        let claimed = ledger.claim_due(now + minutes(4), "w1", LEASE, 10).await.unwrap();
        assert_eq!(claimed.len(), 1);
        assert_eq!(claimed[0].change_set.id, "cs-late");
        assert_eq!(claimed[0].change_set.events.len(), 2);
        assert!(store.finish_claim("cs-late", "w1", &driftback_store::ClaimOutcome::Done).await.unwrap());

        // e2 never comes (its message went to the dead-letter queue): past the bound the change
        // set fails for good, naming what is missing, and is not claimed again.
        assert!(ledger.claim_due(now + minutes(16), "w1", LEASE, 10).await.unwrap().is_empty());
        let lost = store.queued_change_set("cs-lost").await.unwrap().unwrap();
        assert_eq!(lost.status, QueueStatus::Failed);
        let failure = lost.failure.unwrap();
        assert!(failure.contains("1 of its 2 events are not recorded") && failure.ends_with(": e2"), "{failure}");
        assert!(ledger.claim_due(now + minutes(60), "w1", LEASE, 10).await.unwrap().is_empty());
        assert_eq!(store.queued_change_set("cs-lost").await.unwrap().unwrap().attempts, 5);
        store.close().await;
    }
}

fn call(id: &str, time: &str, user: &str, name: &str, request: Value) -> Value {
    json!({
        "eventVersion": "1.09", "eventID": id, "eventTime": time, "eventSource": "ec2.amazonaws.com",
        "eventName": name, "eventType": "AwsApiCall", "managementEvent": true, "readOnly": false,
        "awsRegion": "eu-west-1", "recipientAccountId": "123456789012",
        "userIdentity": {"type": "IAMUser", "arn": format!("arn:aws:iam::123456789012:user/{user}"), "userName": user,
                         "accountId": "123456789012"},
        "userAgent": "console.amazonaws.com",
        "requestParameters": request
    })
}

fn by_first_event(mut sets: Vec<driftback_events::ChangeSet>) -> Vec<driftback_events::ChangeSet> {
    sets.sort_by(|a, b| a.first_time().cmp(&b.first_time()).then_with(|| a.id.cmp(&b.id)));
    sets
}

/// The daemon (intakes recorded one after another, each grouped against the change sets already
/// pending) and the file path (`driftback_events::group`, all events at once) form the same change
/// sets with the same ids: one grouper, one id function.
#[tokio::test]
async fn the_daemon_forms_the_change_sets_the_file_path_forms_with_the_same_ids() {
    let modify = |id: &str, time: &str, user: &str, instance: &str| {
        call(
            id,
            time,
            user,
            "ModifyInstanceAttribute",
            json!({"instanceId": instance, "disableApiStop": {"value": true}}),
        )
    };
    let tags = json!({"resourcesSet": {"items": [{"resourceId": "i-1"}, {"resourceId": "i-2"}]},
                      "tagSet": {"items": [{"key": "team", "value": "web"}]}});
    let deliveries = [
        vec![
            modify("a1", "2024-05-01T12:01:00Z", "alice", "i-1"),
            modify("a0", "2024-05-01T12:00:00Z", "alice", "i-1"),
            modify("b0", "2024-05-01T12:00:30Z", "bob", "i-1"),
        ],
        vec![
            // Joins alice's change set on i-1 (across intakes) and starts one on i-2.
            call("a3", "2024-05-01T12:03:00Z", "alice", "CreateTags", tags),
            modify("a2", "2024-05-01T12:02:30Z", "alice", "i-1"),
            // Names no resource: a change set of its own.
            call("a4", "2024-05-01T12:03:10Z", "alice", "Mystery", json!({})),
        ],
        vec![
            modify("a5", "2024-05-01T12:04:00Z", "alice", "i-2"),
            record("r1", "2024-05-01T12:04:30Z", "i-1", true),
            // Past the quiet window: a new change set.
            modify("a6", "2024-05-01T12:10:00Z", "alice", "i-1"),
        ],
    ];
    let all: Vec<Value> = deliveries.iter().flatten().cloned().collect();
    let file = driftback_events::decode(json!({"Records": all}).to_string().as_bytes(), "a file").unwrap();
    let kept: Vec<_> = file
        .events
        .into_iter()
        .map(|(e, _)| e)
        .filter(|e| driftback_events::classify(e, &FilterConfig::default()) == driftback_events::Disposition::Keep)
        .collect();
    let files = by_first_event(driftback_events::group(
        kept,
        &driftback_events::GroupConfig { quiet_window_secs: WINDOW.quiet_secs },
    ));
    let shape: Vec<(Option<&str>, Vec<&str>)> =
        files.iter().map(|s| (s.resource_id.as_deref(), s.events.iter().map(|e| e.id.as_str()).collect())).collect();
    assert_eq!(
        shape,
        [
            (Some("i-1"), vec!["a0", "a1", "a2", "a3"]),
            (Some("i-1"), vec!["b0"]),
            (Some("i-2"), vec!["a3", "a5"]),
            (None, vec!["a4"]),
            (Some("i-1"), vec!["a6"]),
        ]
    );

    for (store, _guard) in stores("same_change_sets").await {
        let ledger = StoreLedger::new(store.clone(), WINDOW);
        for delivery in &deliveries {
            ledger.record_intake(&intake(delivery)).await.unwrap();
        }
        let claimed = ledger.claim_due(Utc::now(), "w1", LEASE, 100).await.unwrap();
        let daemon = by_first_event(claimed.into_iter().map(|c| c.change_set).collect());
        assert_eq!(daemon, files, "{}", store.backend_name());
        store.close().await;
    }
}

/// The record of a change set reconciled with nothing to change.
fn no_change(change_set: &driftback_events::ChangeSet, rationale: Option<String>) -> driftback_store::ChangeSetRecord {
    driftback_store::ChangeSetRecord {
        id: change_set.id.clone(),
        resource_id: change_set.resource_id.clone(),
        address: None,
        actor: change_set.actor.display_name.clone(),
        via: change_set.actor.via.as_str().into(),
        first_event_time: change_set.first_time(),
        last_event_time: change_set.last_time(),
        event_ids: change_set.events.iter().map(|e| e.id.clone()).collect(),
        status: "no-change".into(),
        decision: None,
        rule: None,
        rationale,
        branch: None,
        commit_id: None,
        diff: None,
        notes: vec![],
        stack: None,
        workspace: None,
        state_version: None,
    }
}

/// Fails the change sets on `poison` for good, those on `flaky` once for a while, reconciles the rest.
struct Scripted {
    poison: &'static str,
    flaky: &'static str,
    flaky_failures: AtomicUsize,
}

impl driftback_feed::Reconcile for Scripted {
    fn reconcile(
        &self,
        change_set: &driftback_events::ChangeSet,
    ) -> Result<driftback_feed::Reconciled, driftback_feed::ReconcileError> {
        let on = change_set.resource_id.as_deref().unwrap_or_default();
        if on == self.poison {
            return Err(driftback_feed::ReconcileError::permanent(format!("the store refuses {}", "x".repeat(5000))));
        }
        if on == self.flaky && self.flaky_failures.fetch_add(1, Ordering::SeqCst) == 0 {
            return Err(driftback_feed::ReconcileError::transient("the remote did not answer"));
        }
        Ok(driftback_feed::Reconciled { record: no_change(change_set, None), tokens: 0 })
    }
}

#[tokio::test]
async fn a_permanent_failure_fails_its_change_set_for_good_and_a_transient_one_is_retried() {
    for (store, _guard) in stores("failures").await {
        let ledger = StoreLedger::new(store.clone(), WINDOW);
        ledger
            .record_intake(&intake(&[
                record("p1", "2024-05-01T12:00:00Z", "i-poison", false),
                record("f1", "2024-05-01T12:00:10Z", "i-flaky", false),
                record("ok", "2024-05-01T12:00:20Z", "i-fine", false),
            ]))
            .await
            .unwrap();
        let reconcile =
            std::sync::Arc::new(Scripted { poison: "i-poison", flaky: "i-flaky", flaky_failures: AtomicUsize::new(0) });
        let config =
            driftback_feed::ReconcilerConfig { replica: "w1".into(), lease_secs: 60, poll_ms: 10, max_attempts: 50 };
        // The transient failure is released and stops this one-shot run, as a failed fetch would.
        let first = driftback_feed::reconcile_due(&ledger, &reconcile, &config).await;
        assert!(first.is_err(), "{first:?}");
        let done = driftback_feed::reconcile_due(&ledger, &reconcile, &config).await.unwrap();
        let mut all: Vec<(String, String)> = done.into_iter().map(|(id, status, _)| (id, status)).collect();
        all.sort();
        let status_of = |resource: &str| {
            let id = driftback_events::change_set_id(
                Some(resource),
                match resource {
                    "i-poison" => "p1",
                    "i-flaky" => "f1",
                    _ => "ok",
                },
            );
            all.iter().find(|(i, _)| *i == id).map(|(_, s)| s.clone())
        };
        // The poison failed for good in the first run and was not claimed again; the rest were
        // reconciled, the flaky one on its second attempt.
        assert_eq!(status_of("i-poison"), None, "{all:?}");
        assert_eq!(status_of("i-flaky").as_deref(), Some("no-change"), "{all:?}");
        assert_eq!(status_of("i-fine").as_deref(), Some("no-change"), "{all:?}");
        assert!(store.unfinished_change_sets().await.unwrap().is_empty());
        let poison = driftback_events::change_set_id(Some("i-poison"), "p1");
        let failed = store.queued_change_set(&poison).await.unwrap().unwrap();
        assert_eq!((failed.status, failed.attempts), (QueueStatus::Failed, 1));
        let reason = failed.failure.unwrap();
        assert!(reason.starts_with("the store refuses"), "{reason}");
        assert!(reason.chars().count() <= 2000, "the reason is bounded: {}", reason.len());
        // Nothing is due any more: the failed one is not claimed again.
        assert!(ledger.claim_due(Utc::now(), "w2", LEASE, 10).await.unwrap().is_empty());
        store.close().await;
    }
}

#[tokio::test]
async fn over_long_fields_make_their_record_bad_input_and_the_rest_of_the_delivery_is_recorded() {
    for (store, _guard) in stores("overlong").await {
        let ledger = StoreLedger::new(store.clone(), WINDOW);
        let mut records: Vec<Value> = (0..9)
            .map(|i| record(&format!("ok{i}"), &format!("2024-05-01T12:00:{:02}Z", i * 5), "i-1", false))
            .collect();
        // Each longer than AWS sends, in an indexed column: the id, the resource, the actor.
        records.push(record(&"e".repeat(3000), "2024-05-01T12:01:00Z", "i-1", false));
        records.push(record("long-resource", "2024-05-01T12:01:05Z", &format!("i-{}", "9".repeat(3000)), false));
        let mut long_actor = record("long-actor", "2024-05-01T12:01:10Z", "i-1", false);
        long_actor["userIdentity"]["arn"] = json!(format!("arn:aws:iam::123456789012:user/{}", "a".repeat(3000)));
        long_actor["userIdentity"]["userName"] = json!("a".repeat(3000));
        records.push(long_actor);
        let message =
            Intake::from_text(&json!({"Records": records}).to_string(), "sqs message m1", &FilterConfig::default());
        assert_eq!((message.events.len(), message.bad.len()), (9, 3), "{:?}", message.bad);
        for bad in &message.bad {
            assert!(bad.reason.contains("bytes long"), "{}", bad.reason);
            assert!(bad.location.len() < 200, "the location quotes a bounded id: {}", bad.location.len());
        }
        let receipt = ledger.record_intake(&message).await.unwrap();
        assert_eq!(
            receipt,
            IntakeReceipt { new_events: 9, duplicates: 0, pending: 9, bad: 3 },
            "{}",
            store.backend_name()
        );
        assert_eq!(store.stats().await.unwrap().events, 9);
        assert_eq!(store.stats().await.unwrap().bad_records, 3);
        store.close().await;
    }
}

/// Never reaches the remote.
struct AlwaysDown;

impl driftback_feed::Reconcile for AlwaysDown {
    fn reconcile(
        &self,
        _: &driftback_events::ChangeSet,
    ) -> Result<driftback_feed::Reconciled, driftback_feed::ReconcileError> {
        Err(driftback_feed::ReconcileError::transient("fetching main from origin: connection refused"))
    }
}

#[tokio::test]
async fn a_transient_failure_that_persists_fails_the_change_set_after_its_attempts() {
    for (store, _guard) in stores("attempts").await {
        let ledger = StoreLedger::new(store.clone(), WINDOW);
        ledger.record_intake(&intake(&[record("a1", "2024-05-01T12:00:00Z", "i-1", false)])).await.unwrap();
        let config =
            driftback_feed::ReconcilerConfig { replica: "w1".into(), lease_secs: 60, poll_ms: 10, max_attempts: 3 };
        let reconcile = std::sync::Arc::new(AlwaysDown);
        let id = driftback_events::change_set_id(Some("i-1"), "a1");
        // Released and retried while attempts remain ...
        for attempt in 1..3 {
            assert!(driftback_feed::reconcile_due(&ledger, &reconcile, &config).await.is_err());
            let queued = store.queued_change_set(&id).await.unwrap().unwrap();
            assert_eq!((queued.status, queued.attempts), (QueueStatus::Pending, attempt), "{}", store.backend_name());
        }
        // ... then failed for good with the last reason, and not claimed again.
        let done = driftback_feed::reconcile_due(&ledger, &reconcile, &config).await.unwrap();
        assert_eq!(done, vec![(id.clone(), "failed".to_string(), None)]);
        let failed = store.queued_change_set(&id).await.unwrap().unwrap();
        assert_eq!(failed.status, QueueStatus::Failed);
        let reason = failed.failure.unwrap();
        assert!(reason.contains("each of 3 attempts") && reason.contains("connection refused"), "{reason}");
        assert!(ledger.claim_due(Utc::now(), "w2", LEASE, 10).await.unwrap().is_empty());
        store.close().await;
    }
}

/// Reconciles every change set; the record of the one on `refused` holds a NUL character, which
/// Postgres refuses in text (SQLite keeps it).
struct RefusedRecord {
    refused: &'static str,
}

impl driftback_feed::Reconcile for RefusedRecord {
    fn reconcile(
        &self,
        change_set: &driftback_events::ChangeSet,
    ) -> Result<driftback_feed::Reconciled, driftback_feed::ReconcileError> {
        let refused = change_set.resource_id.as_deref() == Some(self.refused);
        let rationale = refused.then(|| "a value with a \0 in it".to_string());
        Ok(driftback_feed::Reconciled { record: no_change(change_set, rationale), tokens: 0 })
    }
}

#[tokio::test]
async fn a_record_the_store_refuses_fails_its_change_set_and_the_daemon_goes_on() {
    for (store, _guard) in stores("refused").await {
        let ledger = StoreLedger::new(store.clone(), QuietWindow { quiet_secs: 0, max_age_secs: 900 });
        ledger
            .record_intake(&intake(&[
                record("r1", "2024-05-01T12:00:00Z", "i-refused", false),
                record("k1", "2024-05-01T12:00:10Z", "i-kept", false),
            ]))
            .await
            .unwrap();
        let config =
            driftback_feed::ReconcilerConfig { replica: "w1".into(), lease_secs: 60, poll_ms: 10, max_attempts: 5 };
        let shutdown = driftback_feed::Shutdown::new();
        let daemon = tokio::spawn(driftback_feed::run_reconciler(
            ledger.clone(),
            std::sync::Arc::new(RefusedRecord { refused: "i-refused" }),
            config,
            std::sync::Arc::new(tokio::sync::Notify::new()),
            shutdown.clone(),
        ));
        let refused = driftback_events::change_set_id(Some("i-refused"), "r1");
        let kept = driftback_events::change_set_id(Some("i-kept"), "k1");
        let started = std::time::Instant::now();
        while !store.unfinished_change_sets().await.unwrap().is_empty() {
            assert!(!daemon.is_finished(), "the reconcile loop ended: {:?}", daemon.await);
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{}: change sets left unfinished",
                store.backend_name()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Both handled, and the loop is still running until it is asked to stop.
        assert!(!daemon.is_finished());
        assert_eq!(store.change_set(&kept).await.unwrap().unwrap().status, "no-change");
        let queued = store.queued_change_set(&refused).await.unwrap().unwrap();
        if store.backend_name() == "postgres" {
            assert_eq!(queued.status, QueueStatus::Failed);
            let reason = queued.failure.unwrap();
            assert!(reason.starts_with("the store refused its record"), "{reason}");
        } else {
            assert_eq!(queued.status, QueueStatus::Done, "SQLite keeps the NUL");
        }
        shutdown.trigger();
        daemon.await.unwrap().unwrap();
        store.close().await;
    }
}
