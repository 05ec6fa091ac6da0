//! The store test suite shared by both backends: every case takes a fresh [`Fixture`] and must pass
//! on SQLite and on Postgres alike.

use std::collections::HashSet;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use driftback_store::{
    BadRecord, ChangeSetRecord, ClaimOutcome, DecisionRecord, Delivery, DeliveryReceipt, Disposition, EmbedderSpec,
    EventRecord, FieldChangeRecord, NewKnowledge, OpenOptions, PendingChangeSet, PendingPlanner, PullRequestRecord,
    PullRequestState, QueueStatus, ReconciliationRecord, Stats, Store, StoreError,
};
use serde_json::json;

/// A fresh, empty store and the URL that opens it again (as another replica would).
pub struct Fixture {
    pub store: Store,
    pub url: String,
    /// Whatever must live as long as the store (a temporary directory, a database to drop).
    pub _guard: Box<dyn std::any::Any + Send>,
}

impl Fixture {
    pub async fn reopen(&self) -> Store {
        Store::open(&self.url, &OpenOptions::default()).await.unwrap()
    }
}

pub fn at(secs: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2024, 5, 1, 12, 0, 0).unwrap() + chrono::Duration::seconds(secs)
}

pub fn event(id: &str, disposition: Disposition, reason: Option<&str>) -> EventRecord {
    EventRecord {
        event_id: id.to_owned(),
        event_time: at(0) + chrono::Duration::microseconds(7),
        source: "ec2.amazonaws.com".into(),
        name: "ModifyInstanceAttribute".into(),
        actor: "arn:aws:iam::123456789012:user/alice".into(),
        disposition,
        drop_reason: reason.map(str::to_owned),
        raw: json!({"eventID": id, "requestParameters": {"instanceId": "i-1", "instanceType": {"value": "t3.large"}}})
            .to_string(),
    }
}

pub fn change_set(id: &str, status: &str) -> ChangeSetRecord {
    ChangeSetRecord {
        id: id.to_owned(),
        resource_id: Some("i-0abc".into()),
        address: Some("aws_instance.web".into()),
        actor: "arn:aws:iam::123456789012:user/alice".into(),
        via: "console".into(),
        first_event_time: at(0),
        last_event_time: at(42) + chrono::Duration::microseconds(123_456),
        event_ids: vec!["e1".into(), "e2".into()],
        status: status.to_owned(),
        decision: None,
        rule: None,
        rationale: None,
        branch: None,
        commit_id: None,
        diff: None,
        notes: vec![],
        stack: None,
        workspace: None,
        state_version: None,
    }
}

fn pending(id: &str, first: i64, last: i64, events: &[&str]) -> PendingChangeSet {
    PendingChangeSet {
        id: id.to_owned(),
        resource_key: "ec2:i-0abc".into(),
        actor_session: "alice@console".into(),
        first_event_time: at(first),
        last_event_time: at(last),
        event_ids: events.iter().map(|s| s.to_string()).collect(),
    }
}

fn ids(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

pub async fn events_are_recorded_once(f: Fixture) {
    let store = &f.store;
    let batch = vec![
        event("e1", Disposition::Kept, None),
        event("e2", Disposition::Dropped, Some("read-only")),
        event("e3", Disposition::Bad, Some("no requestParameters")),
    ];
    assert_eq!(store.record_events(&batch).await.unwrap(), 3);
    assert_eq!(store.record_events(&batch).await.unwrap(), 0);
    let overlap = vec![
        event("e3", Disposition::Kept, None),
        event("e4", Disposition::Kept, None),
        event("e4", Disposition::Kept, None),
    ];
    assert_eq!(store.record_events(&overlap).await.unwrap(), 1);
    assert_eq!(store.record_events(&[]).await.unwrap(), 0);
    assert_eq!(store.stats().await.unwrap().events, 4);

    let mut seen: Vec<_> =
        store.seen_event_ids(&ids(&["e1", "e2", "e4", "nope", "e1"])).await.unwrap().into_iter().collect();
    seen.sort();
    assert_eq!(seen, ["e1", "e2", "e4"]);
    assert!(store.seen_event_ids(&[]).await.unwrap().is_empty());

    let err = store.record_events(&[event("ok", Disposition::Kept, None), event(" ", Disposition::Kept, None)]).await;
    assert!(matches!(err, Err(StoreError::Data(_))), "{err:?}");
    assert!(store.seen_event_ids(&ids(&["ok"])).await.unwrap().is_empty(), "nothing of a refused batch is stored");

    store.record_bad_record("events.json:3", "not JSON", "{\"Records\": [").await.unwrap();
    assert_eq!(store.stats().await.unwrap().bad_records, 1);

    // Events come back as recorded (the first recording of an id wins), unknown ids left out.
    let mut back = store.events_by_id(&ids(&["e3", "e1", "nope"])).await.unwrap();
    back.sort_by(|a, b| a.event_id.cmp(&b.event_id));
    // The record's text comes back as the same JSON value (Postgres renders its jsonb its own way).
    let as_json = |records: Vec<EventRecord>| -> Vec<(EventRecord, serde_json::Value)> {
        records.into_iter().map(|e| (EventRecord { raw: String::new(), ..e.clone() }, json(&e.raw))).collect()
    };
    assert_eq!(as_json(back), as_json(vec![batch[0].clone(), batch[2].clone()]));
    assert!(store.events_by_id(&[]).await.unwrap().is_empty());
}

pub async fn many_events_in_one_batch_and_many_ids_in_one_question(f: Fixture) {
    let store = &f.store;
    let events: Vec<EventRecord> = (0..2_500).map(|i| event(&format!("ev-{i:05}"), Disposition::Kept, None)).collect();
    assert_eq!(store.record_events(&events).await.unwrap(), 2_500);
    let asked: Vec<String> = (0..40_000).map(|i| format!("ev-{i:05}")).collect();
    let seen = store.seen_event_ids(&asked).await.unwrap();
    assert_eq!(seen.len(), 2_500);
    assert!(seen.contains("ev-00000") && seen.contains("ev-02499") && !seen.contains("ev-02500"));
}

pub async fn change_sets_upsert_and_log_decisions(f: Fixture) {
    let store = &f.store;
    assert_eq!(store.change_set("cs-1").await.unwrap(), None);
    let first = change_set("cs-1", "dry-run");
    store.record_change_set(&first).await.unwrap();
    store.record_change_set(&first).await.unwrap();
    assert_eq!(store.change_set("cs-1").await.unwrap().as_ref(), Some(&first));
    assert!(store.decisions("cs-1").await.unwrap().is_empty(), "no decision, no audit row");

    let mut decided = first.clone();
    decided.status = "reconciled".into();
    decided.decision = Some("reconcile".into());
    decided.rule = Some("default-reconcile".into());
    decided.rationale = Some("console change within bounds".into());
    decided.branch = Some("driftback/cs-1".into());
    decided.commit_id = Some("0123abcd".into());
    decided.diff = Some("-  instance_type = \"t3.medium\"\n+  instance_type = \"t3.large\"\n".into());
    decided.notes = vec!["value changed at var.instance_type".into()];
    store.record_change_set(&decided).await.unwrap();
    assert_eq!(store.change_set("cs-1").await.unwrap().as_ref(), Some(&decided));
    let log = store.decisions("cs-1").await.unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].decision.kind, "reconcile");
    assert_eq!(log[0].decision.rule, decided.rule);

    let err = store.record_change_set(&change_set("cs-x", "merged")).await.unwrap_err();
    assert!(!err.is_transient());
    assert!(err.to_string().contains("merged") && err.to_string().contains("reconciled"), "{err}");

    let stats = store.stats().await.unwrap();
    assert_eq!(stats.change_sets_by_status, vec![("reconciled".to_string(), 1)]);
}

pub async fn decisions_are_appended_once_per_distinct_decision(f: Fixture) {
    let store = &f.store;
    let d = DecisionRecord {
        change_set_id: "cs-9".into(),
        kind: "ignore_changes".into(),
        rule: Some("service-owned".into()),
        evidence: json!({"owner": "autoscaling", "history": [{"actor": "alice", "at": "2024-05-01T12:00:00Z"}]}),
        rationale: Some("desired_capacity is owned by the autoscaler".into()),
    };
    let id = store.record_decision(&d).await.unwrap();
    assert_eq!(store.record_decision(&d).await.unwrap(), id, "a retried decision is stored once");
    let escalate = DecisionRecord { kind: "escalate".into(), evidence: json!({"oscillations": 3}), ..d.clone() };
    let id2 = store.record_decision(&escalate).await.unwrap();
    assert!(id2 > id);
    let again = store.record_decision(&d).await.unwrap();
    assert!(again > id2, "the same decision after a different one is a new entry");
    store.record_decision(&DecisionRecord { change_set_id: "other".into(), ..d.clone() }).await.unwrap();

    let log = store.decisions("cs-9").await.unwrap();
    assert_eq!(
        log.iter().map(|l| l.decision.kind.as_str()).collect::<Vec<_>>(),
        ["ignore_changes", "escalate", "ignore_changes"]
    );
    assert_eq!(log[0].decision, d);
    assert_eq!(log[1].decision.evidence, json!({"oscillations": 3}));
    assert!(log[0].recorded_at <= log[2].recorded_at);
    assert!(store.record_decision(&DecisionRecord { kind: "".into(), ..d }).await.is_err());
}

pub async fn pending_change_sets_merge_until_claimed(f: Fixture) {
    let store = &f.store;
    assert!(store.save_pending(&pending("cs-a", 10, 20, &["a1", "a2"])).await.unwrap());
    assert!(store.save_pending(&pending("cs-a", 5, 30, &["a3", "a1"])).await.unwrap());
    assert!(store.save_pending(&pending("cs-b", 40, 41, &["b1"])).await.unwrap());
    let unfinished = store.unfinished_change_sets().await.unwrap();
    assert_eq!(unfinished.len(), 2);
    let a = &unfinished[0];
    assert_eq!(a.change_set.id, "cs-a");
    assert_eq!(a.change_set.event_ids, ["a1", "a2", "a3"]);
    assert_eq!((a.change_set.first_event_time, a.change_set.last_event_time), (at(5), at(30)));
    assert_eq!((a.status, a.attempts, a.claimed_by.as_deref()), (QueueStatus::Pending, 0, None));

    // Quiet window: only change sets whose last event is at or before `quiet_before` are due.
    let lease = Duration::from_secs(60);
    let claimed = store.claim_due_change_sets("w1", at(35), at(100), lease, 10).await.unwrap();
    assert_eq!(claimed.iter().map(|c| c.change_set.id.as_str()).collect::<Vec<_>>(), ["cs-a"]);
    assert_eq!(claimed[0].status, QueueStatus::Claimed);
    assert_eq!(claimed[0].claimed_by.as_deref(), Some("w1"));
    assert_eq!(claimed[0].lease_until, Some(at(160)));
    assert_eq!(claimed[0].attempts, 1);
    assert!(store.claim_due_change_sets("w2", at(35), at(100), lease, 10).await.unwrap().is_empty(), "held by w1");

    // New events for a claimed change set are refused: the caller starts a new one.
    assert!(!store.save_pending(&pending("cs-a", 31, 32, &["a4"])).await.unwrap());
    assert_eq!(store.queued_change_set("cs-a").await.unwrap().unwrap().change_set.event_ids, ["a1", "a2", "a3"]);

    // Only the holder renews or finishes.
    assert!(!store.renew_claim("cs-a", "w2", at(500)).await.unwrap());
    assert!(store.renew_claim("cs-a", "w1", at(200)).await.unwrap());
    assert!(!store.finish_claim("cs-a", "w2", &ClaimOutcome::Done).await.unwrap());
    // The lease ended (now = 201 > 200): another worker takes it over, and w1 has lost it.
    let taken = store.claim_due_change_sets("w2", at(35), at(201), lease, 10).await.unwrap();
    assert_eq!(taken.len(), 1);
    assert_eq!((taken[0].claimed_by.as_deref(), taken[0].attempts), (Some("w2"), 2));
    assert!(!store.finish_claim("cs-a", "w1", &ClaimOutcome::Done).await.unwrap());
    assert!(store.finish_claim("cs-a", "w2", &ClaimOutcome::Done).await.unwrap());
    let done = store.queued_change_set("cs-a").await.unwrap().unwrap();
    assert_eq!((done.status, done.lease_until), (QueueStatus::Done, None));
    assert!(!store.save_pending(&pending("cs-a", 31, 32, &["a4"])).await.unwrap());

    // Released work is due again at once; failures keep their reason.
    let b = store.claim_due_change_sets("w1", at(50), at(300), lease, 10).await.unwrap();
    assert_eq!(b[0].change_set.id, "cs-b");
    assert!(store.finish_claim("cs-b", "w1", &ClaimOutcome::Release).await.unwrap());
    let released = store.queued_change_set("cs-b").await.unwrap().unwrap();
    assert_eq!((released.status, released.claimed_by.as_deref()), (QueueStatus::Pending, None));
    let b = store.claim_due_change_sets("w3", at(50), at(301), lease, 10).await.unwrap();
    assert_eq!(b[0].attempts, 2);
    assert!(store.finish_claim("cs-b", "w3", &ClaimOutcome::Failed("repository is not clean".into())).await.unwrap());
    let failed = store.queued_change_set("cs-b").await.unwrap().unwrap();
    assert_eq!((failed.status, failed.failure.as_deref()), (QueueStatus::Failed, Some("repository is not clean")));
    assert!(store.unfinished_change_sets().await.unwrap().is_empty());
    assert!(store.claim_due_change_sets("w1", at(1000), at(1000), lease, 10).await.unwrap().is_empty());
    assert_eq!(store.queued_change_set("nope").await.unwrap(), None);

    let stats = store.stats().await.unwrap();
    assert_eq!(stats.queue_by_status, vec![("done".to_string(), 1), ("failed".to_string(), 1)]);
    assert!(store.save_pending(&pending("bad", 10, 5, &[])).await.is_err(), "first after last is refused");
}

pub async fn a_sessions_change_sets_and_the_covered_ones_are_found_again(f: Fixture) {
    let store = &f.store;
    let of = |id: &str, session: &str, first: i64, last: i64| PendingChangeSet {
        actor_session: session.into(),
        resource_key: format!("ec2:{id}"),
        ..pending(id, first, last, &[id])
    };
    for p in [
        of("a1", "alice", 0, 10),
        of("a2", "alice", 100, 200),
        of("a3", "alice", 400, 400),
        of("b1", "bob", 100, 100),
        of("a0", "alice", -500, -400),
    ] {
        assert!(store.save_pending(&p).await.unwrap());
    }
    // Done or pending, a change set of the session overlapping the span is listed, by first time.
    let claimed = store.claim_due_change_sets("w", at(50), at(60), Duration::from_secs(60), 10).await.unwrap();
    assert_eq!(claimed.iter().map(|c| c.change_set.id.as_str()).collect::<Vec<_>>(), ["a0", "a1"]);
    assert!(store.finish_claim("a1", "w", &ClaimOutcome::Done).await.unwrap());
    let ids = |sets: Vec<driftback_store::QueuedChangeSet>| -> Vec<String> {
        sets.into_iter().map(|q| q.change_set.id).collect()
    };
    assert_eq!(ids(store.session_change_sets("alice", at(5), at(150), 10).await.unwrap()), ["a1", "a2"]);
    assert_eq!(ids(store.session_change_sets("alice", at(-400), at(400), 10).await.unwrap()), ["a0", "a1", "a2", "a3"]);
    assert_eq!(ids(store.session_change_sets("alice", at(-400), at(400), 2).await.unwrap()), ["a0", "a1"]);
    assert_eq!(ids(store.session_change_sets("alice", at(201), at(399), 10).await.unwrap()), Vec::<String>::new());
    assert_eq!(ids(store.session_change_sets("bob", at(0), at(1000), 10).await.unwrap()), ["b1"]);

    let covered = |id: &str, by: &str, branch: &str| driftback_store::CoveredChangeSet {
        change_set_id: id.into(),
        by_change_set_id: by.into(),
        branch: branch.into(),
        commit_id: "0123abcd".into(),
        delivery: json!({"message": "drift: tags\n\nDrift-Change-Set: a1", "diff": null, "pushed": true}),
    };
    assert_eq!(store.covered_change_set("a2").await.unwrap(), None);
    store.record_covered(&[covered("a2", "a1", "driftback/x"), covered("a3", "a1", "driftback/x")]).await.unwrap();
    // Recorded again by a later change set of the session: the later one is kept.
    store.record_covered(&[covered("a3", "a2", "driftback/x")]).await.unwrap();
    // Refused whole when one row is not whole.
    let refused = store.record_covered(&[covered("a0", "a1", "driftback/x"), covered("b1", "a1", " ")]).await;
    assert!(refused.unwrap_err().to_string().contains("branch is empty"));
    let not_an_object = driftback_store::CoveredChangeSet { delivery: json!("text"), ..covered("a0", "a1", "b") };
    assert!(store.record_covered(&[not_an_object]).await.is_err());
    // A restarted daemon finds them.
    let again = f.reopen().await;
    assert_eq!(again.covered_change_set("a2").await.unwrap(), Some(covered("a2", "a1", "driftback/x")));
    assert_eq!(again.covered_change_set("a3").await.unwrap(), Some(covered("a3", "a2", "driftback/x")));
    assert_eq!(again.covered_change_set("a0").await.unwrap(), None);
    again.close().await;
}

pub async fn claims_are_oldest_first_and_limited(f: Fixture) {
    let store = &f.store;
    for (id, last) in [("c3", 30), ("c1", 10), ("c2", 20)] {
        store.save_pending(&pending(id, last, last, &[id])).await.unwrap();
    }
    let lease = Duration::from_secs(30);
    let first = store.claim_due_change_sets("w", at(100), at(100), lease, 2).await.unwrap();
    assert_eq!(first.iter().map(|c| c.change_set.id.as_str()).collect::<Vec<_>>(), ["c1", "c2"]);
    let rest = store.claim_due_change_sets("w", at(100), at(100), lease, 2).await.unwrap();
    assert_eq!(rest.iter().map(|c| c.change_set.id.as_str()).collect::<Vec<_>>(), ["c3"]);
    assert!(store.claim_due_change_sets("w", at(100), at(100), lease, 0).await.unwrap().is_empty());
}

/// Replicas sharing one store, each with its own connection pool, claiming at the same time:
/// every change set is claimed by exactly one of them.
pub async fn replicas_never_claim_one_change_set_twice(f: Fixture) {
    const N: usize = 60;
    for i in 0..N {
        f.store.save_pending(&pending(&format!("cs-{i:03}"), 0, 1, &[&format!("e{i}")])).await.unwrap();
    }
    let mut workers = tokio::task::JoinSet::new();
    for w in 0..4 {
        let replica = f.reopen().await;
        workers.spawn(async move {
            let owner = format!("replica-{w}");
            let mut mine = Vec::new();
            loop {
                let got = replica.claim_due_change_sets(&owner, at(10), at(10), Duration::from_secs(600), 3).await;
                let got = match got {
                    Ok(got) => got,
                    Err(e) if e.is_transient() => continue,
                    Err(e) => panic!("{owner}: {e}"),
                };
                if got.is_empty() {
                    break;
                }
                for c in got {
                    assert_eq!(c.claimed_by.as_deref(), Some(owner.as_str()));
                    mine.push(c.change_set.id);
                }
            }
            replica.close().await;
            mine
        });
    }
    let mut all = Vec::new();
    while let Some(mine) = workers.join_next().await {
        all.extend(mine.unwrap());
    }
    let unique: HashSet<&String> = all.iter().collect();
    assert_eq!(all.len(), N, "every change set claimed once: {all:?}");
    assert_eq!(unique.len(), N);
}

pub async fn checkpoints_are_replaced(f: Fixture) {
    let store = &f.store;
    assert_eq!(store.checkpoint("cloudtrail:us-east-1").await.unwrap(), None);
    store.set_checkpoint("cloudtrail:us-east-1", "2024-05-01T12:00:00Z").await.unwrap();
    store.set_checkpoint("cloudtrail:us-east-1", "2024-05-01T13:00:00Z").await.unwrap();
    store.set_checkpoint("sqs", "").await.unwrap();
    assert_eq!(store.checkpoint("cloudtrail:us-east-1").await.unwrap().as_deref(), Some("2024-05-01T13:00:00Z"));
    assert_eq!(store.checkpoint("sqs").await.unwrap().as_deref(), Some(""));
    assert!(store.set_checkpoint("", "x").await.is_err());
}

pub async fn field_ownership_ledger(f: Fixture) {
    let store = &f.store;
    let change = |actor: &str, event_id: &str, secs: i64| FieldChangeRecord {
        address: "aws_autoscaling_group.workers".into(),
        attribute_path: "desired_capacity".into(),
        actor: actor.into(),
        event_id: event_id.into(),
        event_time: at(secs),
        change_set_id: Some(format!("cs-{event_id}")),
    };
    let history = vec![change("alice", "e1", 10), change("autoscaling", "e2", 20), change("alice", "e3", 30)];
    assert_eq!(store.record_field_changes(&history).await.unwrap(), 3);
    assert_eq!(store.record_field_changes(&history[1..]).await.unwrap(), 0, "recorded again: nothing new");
    let other = FieldChangeRecord { attribute_path: "max_size".into(), ..change("bob", "e4", 40) };
    assert_eq!(store.record_field_changes(&[other]).await.unwrap(), 1);

    let all = store.field_history("aws_autoscaling_group.workers", "desired_capacity", at(0), 10).await.unwrap();
    assert_eq!(all, history);
    let since = store.field_history("aws_autoscaling_group.workers", "desired_capacity", at(20), 10).await.unwrap();
    assert_eq!(since.iter().map(|c| c.event_id.as_str()).collect::<Vec<_>>(), ["e2", "e3"]);
    // Bounded: the latest changes, still oldest first.
    let latest = store.field_history("aws_autoscaling_group.workers", "desired_capacity", at(0), 2).await.unwrap();
    assert_eq!(latest.iter().map(|c| c.event_id.as_str()).collect::<Vec<_>>(), ["e2", "e3"]);
    assert!(store.field_history("aws_autoscaling_group.workers", "min_size", at(0), 10).await.unwrap().is_empty());

    assert_eq!(store.field_owner("aws_autoscaling_group.workers", "desired_capacity").await.unwrap(), None);
    store.set_field_owner("aws_autoscaling_group.workers", "desired_capacity", "terraform", None).await.unwrap();
    store
        .set_field_owner("aws_autoscaling_group.workers", "desired_capacity", "autoscaling", Some("service-owned"))
        .await
        .unwrap();
    let owner = store.field_owner("aws_autoscaling_group.workers", "desired_capacity").await.unwrap().unwrap();
    assert_eq!((owner.owner.as_str(), owner.rule.as_deref()), ("autoscaling", Some("service-owned")));
    assert!(
        store.record_field_changes(&[FieldChangeRecord { event_id: "".into(), ..change("x", "e9", 1) }]).await.is_err()
    );
}

fn spec(name: &str, dimension: usize) -> EmbedderSpec {
    EmbedderSpec { name: name.into(), dimension }
}

fn unit(dimension: usize, hot: &[(usize, f32)]) -> Vec<f32> {
    let mut v = vec![0.0; dimension];
    for (i, x) in hot {
        v[*i] = *x;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / norm).collect()
}

fn knowledge(signature: &str, embedding: Vec<f32>, recipe: Option<&str>) -> NewKnowledge {
    NewKnowledge {
        signature: signature.into(),
        summary: format!("learned from {signature}"),
        embedding,
        patch_diff: Some("+  instance_type = \"t3.large\"\n".into()),
        recipe_toml: recipe.map(str::to_owned),
        change_set_id: Some("cs-1".into()),
    }
}

pub async fn knowledge_search_and_recipes(f: Fixture) {
    let store = &f.store;
    let hashing = spec("hashing-v1", 8);
    assert_eq!(store.embedder().await.unwrap(), None);
    assert!(store.similar_knowledge(&hashing, &unit(8, &[(0, 1.0)]), 5).await.unwrap().is_empty());

    let a = store
        .upsert_knowledge(&hashing, &knowledge("ec2 ModifyInstanceAttribute", unit(8, &[(0, 1.0)]), None))
        .await
        .unwrap();
    let b = store
        .upsert_knowledge(
            &hashing,
            &knowledge(
                "ec2 ModifyInstanceAttribute tags",
                unit(8, &[(0, 1.0), (1, 1.0)]),
                Some("[[recipe]]\nname = \"b\"\n"),
            ),
        )
        .await
        .unwrap();
    let c = store
        .upsert_knowledge(
            &hashing,
            &knowledge("sqs SetQueueAttributes", unit(8, &[(5, 1.0)]), Some("[[recipe]]\nname = \"c\"\n")),
        )
        .await
        .unwrap();
    assert_eq!(store.embedder().await.unwrap(), Some(hashing.clone()));

    let found = store.similar_knowledge(&hashing, &unit(8, &[(0, 1.0), (1, 0.2)]), 2).await.unwrap();
    assert_eq!(found.iter().map(|s| s.entry.id).collect::<Vec<_>>(), [a, b]);
    assert!(found[0].similarity > found[1].similarity && found[0].similarity > 0.9 && found[0].similarity <= 1.0001);
    assert_eq!(found[1].entry.recipe_toml.as_deref(), Some("[[recipe]]\nname = \"b\"\n"));
    let all = store.similar_knowledge(&hashing, &unit(8, &[(5, 1.0)]), 10).await.unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(all[0].entry.id, c);

    // The same signature updates its entry, keeping its id and counts.
    assert!(store.bump_knowledge_use(b).await.unwrap());
    assert!(store.bump_knowledge_use(b).await.unwrap());
    assert!(store.bump_knowledge_success(b).await.unwrap());
    assert!(store.bump_knowledge_use(c).await.unwrap());
    let b_again = store
        .upsert_knowledge(&hashing, &knowledge("ec2 ModifyInstanceAttribute tags", unit(8, &[(1, 1.0)]), None))
        .await
        .unwrap();
    assert_eq!(b_again, b);
    let entry = store.knowledge_entry(b).await.unwrap().unwrap();
    assert_eq!((entry.uses, entry.successes), (2, 1));
    assert_eq!(entry.recipe_toml.as_deref(), Some("[[recipe]]\nname = \"b\"\n"), "no new recipe keeps the old");
    assert!(entry.updated_at >= entry.created_at);
    assert_eq!(store.knowledge_entry(9_999).await.unwrap(), None);
    assert!(!store.bump_knowledge_use(9_999).await.unwrap());

    let recipes = store.learned_recipes().await.unwrap();
    assert_eq!(recipes.iter().map(|e| e.id).collect::<Vec<_>>(), [b, c], "most successful first");
    assert!(store.demote_knowledge(b, "its patch failed validation twice").await.unwrap());
    assert_eq!(store.learned_recipes().await.unwrap().iter().map(|e| e.id).collect::<Vec<_>>(), [c]);
    assert_eq!(
        store.knowledge_entry(b).await.unwrap().unwrap().demoted.as_deref(),
        Some("its patch failed validation twice")
    );
    // A new recipe for the signature lifts the demotion.
    store
        .upsert_knowledge(
            &hashing,
            &knowledge("ec2 ModifyInstanceAttribute tags", unit(8, &[(1, 1.0)]), Some("[[recipe]]\nname = \"b2\"\n")),
        )
        .await
        .unwrap();
    assert_eq!(store.learned_recipes().await.unwrap().len(), 2);

    let stats = store.stats().await.unwrap();
    assert_eq!((stats.knowledge_entries, stats.learned_recipes, stats.embedder), (3, 2, Some(hashing.clone())));

    // Another embedder's vectors are refused, for writing and for searching.
    let openai = spec("openai:text-embedding-3-small", 4);
    let err = store.upsert_knowledge(&openai, &knowledge("x", unit(4, &[(0, 1.0)]), None)).await.unwrap_err();
    assert!(matches!(err, StoreError::EmbedderMismatch { .. }), "{err:?}");
    assert!(err.to_string().contains("kb reembed") && err.to_string().contains("hashing-v1"), "{err}");
    let renamed = spec("hashing-v2", 8);
    assert!(matches!(
        store.similar_knowledge(&renamed, &unit(8, &[(0, 1.0)]), 3).await,
        Err(StoreError::EmbedderMismatch { .. })
    ));
    assert!(matches!(store.similar_knowledge(&hashing, &unit(4, &[(0, 1.0)]), 3).await, Err(StoreError::Data(_))));
}

pub async fn reembedding_switches_every_vector_at_once(f: Fixture) {
    let store = &f.store;
    let old = spec("hashing-v1", 8);
    let a = store.upsert_knowledge(&old, &knowledge("a", unit(8, &[(0, 1.0)]), None)).await.unwrap();
    let b = store.upsert_knowledge(&old, &knowledge("b", unit(8, &[(1, 1.0)]), None)).await.unwrap();
    let texts = store.knowledge_texts().await.unwrap();
    assert_eq!(texts.iter().map(|t| (t.id, t.signature.as_str())).collect::<Vec<_>>(), [(a, "a"), (b, "b")]);

    let new = spec("openai:text-embedding-3-small", 3);
    // Leaving an entry out is refused, and changes nothing.
    let err = store.replace_embeddings(&new, &[(a, unit(3, &[(2, 1.0)]))]).await.unwrap_err();
    assert!(err.to_string().contains("1 entries missing"), "{err}");
    assert_eq!(store.embedder().await.unwrap(), Some(old.clone()));
    assert_eq!(store.similar_knowledge(&old, &unit(8, &[(1, 1.0)]), 1).await.unwrap()[0].entry.id, b);

    store.replace_embeddings(&new, &[(a, unit(3, &[(2, 1.0)])), (b, unit(3, &[(0, 1.0)]))]).await.unwrap();
    assert_eq!(store.embedder().await.unwrap(), Some(new.clone()));
    let found = store.similar_knowledge(&new, &unit(3, &[(2, 1.0), (0, 0.1)]), 2).await.unwrap();
    assert_eq!(found.iter().map(|s| s.entry.id).collect::<Vec<_>>(), [a, b]);
    assert!(matches!(
        store.similar_knowledge(&old, &unit(8, &[(0, 1.0)]), 1).await,
        Err(StoreError::EmbedderMismatch { .. })
    ));
    // New entries now use the new embedder.
    store.upsert_knowledge(&new, &knowledge("c", unit(3, &[(1, 1.0)]), None)).await.unwrap();
    assert_eq!(store.similar_knowledge(&new, &unit(3, &[(1, 1.0)]), 1).await.unwrap()[0].entry.signature, "c");
}

pub async fn pull_requests_per_address(f: Fixture) {
    let store = &f.store;
    let pr = PullRequestRecord {
        number: 17,
        address: "aws_instance.web".into(),
        branch: "driftback/aws_instance.web-cs1".into(),
        url: "https://github.com/acme/infra/pull/17".into(),
        state: PullRequestState::Open,
        head_commit: "aaaa".into(),
    };
    assert_eq!(store.open_pull_request("aws_instance.web").await.unwrap(), None);
    store.record_pull_request(&pr).await.unwrap();
    let updated = PullRequestRecord { head_commit: "bbbb".into(), ..pr.clone() };
    store.record_pull_request(&updated).await.unwrap();
    assert_eq!(store.open_pull_request("aws_instance.web").await.unwrap(), Some(updated.clone()));
    assert_eq!(store.open_pull_request("aws_instance.api").await.unwrap(), None);

    assert!(store.set_pull_request_state(17, PullRequestState::Merged).await.unwrap());
    assert_eq!(store.open_pull_request("aws_instance.web").await.unwrap(), None);
    assert!(!store.set_pull_request_state(18, PullRequestState::Closed).await.unwrap());
    let next = PullRequestRecord { number: 21, head_commit: "cccc".into(), ..pr.clone() };
    store.record_pull_request(&next).await.unwrap();
    assert_eq!(store.open_pull_request("aws_instance.web").await.unwrap().map(|p| p.number), Some(21));
}

fn reconciliation(cs: &str, prompt: u64, completion: u64) -> ReconciliationRecord {
    ReconciliationRecord {
        change_set_id: cs.into(),
        trace_summary: "recipe ec2-instance-type; 1 edit at var.instance_type".into(),
        actor: "arn:aws:iam::123456789012:user/alice".into(),
        intent: "performance".into(),
        motivation: "incident".into(),
        decision: "reconcile".into(),
        patch_diff: Some("+x\n".into()),
        branch: Some(format!("driftback/{cs}")),
        commit_id: Some("abcd".into()),
        pull_request: None,
        prompt_tokens: prompt,
        completion_tokens: completion,
        model: Some("gpt-4.1-mini".into()),
        duration_ms: 1234,
        outcome: "reconciled".into(),
    }
}

pub async fn reconciliations_are_kept_per_change_set(f: Fixture) {
    let store = &f.store;
    store.record_reconciliation(&reconciliation("cs-1", 100, 20)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    store.record_reconciliation(&reconciliation("cs-2", 1000, 200)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let replaced = ReconciliationRecord {
        pull_request: Some("https://github.com/acme/infra/pull/3".into()),
        ..reconciliation("cs-1", 150, 30)
    };
    store.record_reconciliation(&replaced).await.unwrap();

    assert_eq!(store.reconciliation("cs-1").await.unwrap().unwrap().reconciliation, replaced);
    assert_eq!(store.reconciliation("cs-3").await.unwrap(), None);
    let recent = store.recent_reconciliations(10).await.unwrap();
    assert_eq!(recent.iter().map(|r| r.reconciliation.change_set_id.as_str()).collect::<Vec<_>>(), ["cs-1", "cs-2"]);
    assert_eq!(store.recent_reconciliations(1).await.unwrap().len(), 1);
    let stats = store.stats().await.unwrap();
    assert_eq!((stats.reconciliations, stats.prompt_tokens, stats.completion_tokens), (2, 1150, 230));
}

pub async fn stats_count_everything(f: Fixture) {
    let store = &f.store;
    assert_eq!(store.stats().await.unwrap(), Stats::default());
    store
        .record_events(&[
            event("k1", Disposition::Kept, None),
            event("d1", Disposition::Dropped, Some("read-only")),
            event("d2", Disposition::Dropped, Some("read-only")),
            event("d3", Disposition::Dropped, Some("iac-principal")),
            event("d4", Disposition::Dropped, None),
            event("b1", Disposition::Bad, Some("missing resource id")),
        ])
        .await
        .unwrap();
    store.record_bad_record("sqs:msg-9", "record without eventID", "{}").await.unwrap();
    for (id, status) in [("a", "reconciled"), ("b", "escalated"), ("c", "escalated"), ("d", "no-change")] {
        store.record_change_set(&change_set(id, status)).await.unwrap();
    }
    store.record_change_set(&change_set("d", "escalated")).await.unwrap();
    let stats = store.stats().await.unwrap();
    assert_eq!(stats.events, 6);
    assert_eq!(
        stats.events_dropped_by_reason,
        vec![("read-only".into(), 2), ("(none)".into(), 1), ("iac-principal".into(), 1)]
    );
    assert_eq!(stats.bad_records, 1);
    assert_eq!(stats.change_sets_by_status, vec![("escalated".into(), 3), ("reconciled".into(), 1)]);
}

pub async fn reverts_are_a_status_of_their_own(f: Fixture) {
    let store = &f.store;
    let mut reverted = change_set("r", "revert");
    reverted.decision = Some("revert".into());
    reverted.rationale = Some("the instance type is owned by Terraform".into());
    store.record_change_set(&reverted).await.unwrap();
    store.record_change_set(&change_set("i", "ignored")).await.unwrap();
    assert_eq!(store.change_set("r").await.unwrap().unwrap().status, "revert");
    let stats = store.stats().await.unwrap();
    assert_eq!(stats.change_sets_by_status, vec![("ignored".into(), 1), ("revert".into(), 1)]);
    // A later outcome of the same change set replaces the status.
    store.record_change_set(&change_set("r", "reconciled")).await.unwrap();
    assert_eq!(store.change_set("r").await.unwrap().unwrap().status, "reconciled");
    // Still no status outside the list.
    assert!(store.record_change_set(&change_set("x", "reverted")).await.is_err());
}

pub async fn decisions_wait_for_a_person_until_answered_or_resolved(f: Fixture) {
    let store = &f.store;
    let on = |id: &str, address: &str, status: &str, secs: i64| ChangeSetRecord {
        address: Some(address.into()),
        last_event_time: at(secs),
        ..change_set(id, status)
    };
    store.record_change_set(&on("web-1", "aws_instance.web", "escalated", 10)).await.unwrap();
    store.record_change_set(&on("db-1", "aws_db_instance.main", "revert", 20)).await.unwrap();
    store.record_change_set(&on("sg-1", "aws_security_group.app", "escalated", 30)).await.unwrap();
    store.record_change_set(&on("q-1", "aws_sqs_queue.jobs", "reconciled", 5)).await.unwrap();
    let waiting = |s: Vec<ChangeSetRecord>| s.into_iter().map(|c| c.id).collect::<Vec<_>>();
    assert_eq!(waiting(store.waiting_for_a_person(10).await.unwrap()), ["web-1", "db-1", "sg-1"]);
    assert_eq!(waiting(store.waiting_for_a_person(1).await.unwrap()), ["web-1"]);
    // A later change on the web server written into the code resolves its escalation ...
    store.record_change_set(&on("web-2", "aws_instance.web", "reconciled", 40)).await.unwrap();
    // ... and a person's answer resolves the database's revert.
    let answer = DecisionRecord {
        change_set_id: "db-1".into(),
        kind: "person-revert".into(),
        rule: Some("person".into()),
        evidence: json!({"by": "maria"}),
        rationale: None,
    };
    store.record_decision(&answer).await.unwrap();
    assert_eq!(waiting(store.waiting_for_a_person(10).await.unwrap()), ["sg-1"]);
    // A split change set was written (reconciled) and part of it waits: its decision says so.
    store.record_change_set(&on("rds-1", "aws_db_instance.main", "reconciled", 50)).await.unwrap();
    let split = DecisionRecord { change_set_id: "rds-1".into(), kind: "escalate".into(), ..answer.clone() };
    store.record_decision(&split).await.unwrap();
    assert_eq!(waiting(store.waiting_for_a_person(10).await.unwrap()), ["sg-1", "rds-1"]);
    // A plain reconciliation does not wait.
    let plain = DecisionRecord { change_set_id: "q-1".into(), kind: "reconcile".into(), ..answer };
    store.record_decision(&plain).await.unwrap();
    assert_eq!(waiting(store.waiting_for_a_person(10).await.unwrap()), ["sg-1", "rds-1"]);

    // In a repository of many stacks, the same address in another stack or workspace is another
    // resource: its change does not resolve this one's escalation.
    let scoped = |id: &str, stack: &str, workspace: &str, status: &str, secs: i64| ChangeSetRecord {
        stack: Some(stack.into()),
        workspace: Some(workspace.into()),
        state_version: Some("etag \"abc\"".into()),
        ..on(id, "module.jobs.aws_sqs_queue.this", status, secs)
    };
    store.record_change_set(&scoped("jobs-prod", "envs/app", "prod", "escalated", 80)).await.unwrap();
    store.record_change_set(&scoped("jobs-staging", "envs/app", "staging", "reconciled", 90)).await.unwrap();
    assert_eq!(waiting(store.waiting_for_a_person(10).await.unwrap()), ["sg-1", "rds-1", "jobs-prod"]);
    let kept = store.change_set("jobs-prod").await.unwrap().unwrap();
    assert_eq!(
        (kept.stack.as_deref(), kept.workspace.as_deref(), kept.state_version.as_deref()),
        (Some("envs/app"), Some("prod"), Some("etag \"abc\""))
    );
    store.record_change_set(&scoped("jobs-prod-2", "envs/app", "prod", "reconciled", 100)).await.unwrap();
    assert_eq!(waiting(store.waiting_for_a_person(10).await.unwrap()), ["sg-1", "rds-1"]);
}

// ---- recording deliveries ----------------------------------------------------------------------

/// A kept event on resource `key` at `secs` (the key travels in the raw record, where the test
/// planner reads it).
fn kept_on(id: &str, key: &str, secs: i64) -> EventRecord {
    EventRecord {
        event_time: at(secs),
        raw: json!({"eventID": id, "resource": key}).to_string(),
        ..event(id, Disposition::Kept, None)
    }
}

fn delivery(events: Vec<EventRecord>, bad: usize) -> Delivery {
    let mut resource_keys: Vec<String> =
        events.iter().filter_map(|e| json(&e.raw)["resource"].as_str().map(str::to_owned)).collect();
    resource_keys.sort();
    resource_keys.dedup();
    let bad_records = (0..bad)
        .map(|i| BadRecord { location: format!("sqs message m{i}"), reason: "not JSON".into(), raw: "{oops".into() })
        .collect();
    Delivery { events, bad_records, resource_keys }
}

/// Groups new events by resource key: one pending change set per key, joined whatever the times
/// (the feed's real rules are tested in the feed), so a test sees exactly which events formed
/// which change set.
struct ByResource {
    /// Event id -> (resource key, time), for every event the test will deliver.
    events: std::collections::HashMap<String, (String, DateTime<Utc>)>,
}

impl ByResource {
    fn of(deliveries: &[&Delivery]) -> ByResource {
        let events = deliveries
            .iter()
            .flat_map(|d| &d.events)
            .filter_map(|e| Some((e.event_id.clone(), (json(&e.raw)["resource"].as_str()?.to_owned(), e.event_time))))
            .collect();
        ByResource { events }
    }
}

impl PendingPlanner for ByResource {
    fn plan(&self, new_event_ids: &HashSet<String>, mut open: Vec<PendingChangeSet>) -> Vec<PendingChangeSet> {
        let mut ids: Vec<&String> = new_event_ids.iter().collect();
        ids.sort();
        let mut out: Vec<PendingChangeSet> = Vec::new();
        for id in ids {
            let (key, time) = self.events[id].clone();
            let base = match open.iter().find(|p| p.resource_key == key) {
                Some(p) => p.clone(),
                None => {
                    let p = PendingChangeSet {
                        id: format!("cs-{key}-{id}"),
                        resource_key: key.clone(),
                        actor_session: "alice".into(),
                        first_event_time: time,
                        last_event_time: time,
                        event_ids: vec![],
                    };
                    open.push(p.clone());
                    p
                }
            };
            match out.iter_mut().find(|a| a.id == base.id) {
                Some(a) => {
                    a.event_ids.push(id.clone());
                    a.first_event_time = a.first_event_time.min(time);
                    a.last_event_time = a.last_event_time.max(time);
                }
                None => out.push(PendingChangeSet {
                    event_ids: vec![id.clone()],
                    first_event_time: time,
                    last_event_time: time,
                    ..base
                }),
            }
        }
        out
    }

    fn another_id(&self, addition: &PendingChangeSet, attempt: u32) -> String {
        format!("{}#{attempt}", addition.id)
    }
}

/// A planner that breaks the rules: it puts an event that is not new into the change set.
struct Sneaky<'a>(&'a ByResource, &'a str);

impl PendingPlanner for Sneaky<'_> {
    fn plan(&self, new_event_ids: &HashSet<String>, open: Vec<PendingChangeSet>) -> Vec<PendingChangeSet> {
        let mut out = self.0.plan(new_event_ids, open);
        out[0].event_ids.push(self.1.to_owned());
        out
    }
    fn another_id(&self, addition: &PendingChangeSet, attempt: u32) -> String {
        self.0.another_id(addition, attempt)
    }
}

/// Makes every write to the work queue fail in the database itself (a trigger), as a crash or a
/// full disk would between recording a delivery's events and its change sets; `false` undoes it.
async fn fail_queue_writes(f: &Fixture, fail: bool) {
    use sqlx::Connection;
    if let Some(path) = f.url.strip_prefix("sqlite:") {
        let mut conn = sqlx::SqliteConnection::connect_with(&sqlx::sqlite::SqliteConnectOptions::new().filename(path))
            .await
            .unwrap();
        let sql = if fail {
            "CREATE TRIGGER test_fail_queue BEFORE INSERT ON change_set_queue \
             BEGIN SELECT RAISE(ABORT, 'injected failure: the work queue refuses writes'); END"
        } else {
            "DROP TRIGGER test_fail_queue"
        };
        sqlx::raw_sql(sql).execute(&mut conn).await.unwrap();
        conn.close().await.unwrap();
    } else {
        let mut conn = sqlx::PgConnection::connect(&f.url).await.unwrap();
        let sql = if fail {
            "CREATE FUNCTION test_fail_queue() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN RAISE EXCEPTION 'injected failure: the work queue refuses writes'; END $$; \
             CREATE TRIGGER test_fail_queue BEFORE INSERT OR UPDATE ON change_set_queue \
             FOR EACH ROW EXECUTE FUNCTION test_fail_queue()"
        } else {
            "DROP TRIGGER test_fail_queue ON change_set_queue; DROP FUNCTION test_fail_queue()"
        };
        sqlx::raw_sql(sql).execute(&mut conn).await.unwrap();
        conn.close().await.unwrap();
    }
}

fn queued_ids(queue: &[driftback_store::QueuedChangeSet]) -> Vec<(String, Vec<String>)> {
    let mut v: Vec<_> = queue.iter().map(|q| (q.change_set.id.clone(), q.change_set.event_ids.clone())).collect();
    v.sort();
    v
}

pub async fn a_delivery_is_recorded_whole_or_not_at_all(f: Fixture) {
    let store = &f.store;
    let first = delivery(
        vec![kept_on("e1", "i-1", 10), event("d1", Disposition::Dropped, Some("read-only")), kept_on("e2", "i-1", 5)],
        1,
    );
    let broken = delivery(vec![kept_on("e3", "i-1", 20), kept_on("e4", "i-2", 21)], 2);
    let planner = ByResource::of(&[&first, &broken]);
    let before = std::time::SystemTime::now();
    let receipt = store.record_delivery(&first, &planner).await.unwrap();
    assert_eq!(receipt, DeliveryReceipt { new_event_ids: ids(&["e1", "d1", "e2"]), change_sets: ids(&["cs-i-1-e1"]) });
    let queued = store.queued_change_set("cs-i-1-e1").await.unwrap().unwrap();
    assert_eq!(queued.change_set.event_ids, ["e1", "e2"]);
    assert_eq!((queued.change_set.first_event_time, queued.change_set.last_event_time), (at(5), at(10)));
    assert_eq!(queued.status, QueueStatus::Pending);
    let saved_at = std::time::SystemTime::from(queued.created_at);
    assert!(saved_at + Duration::from_secs(5) >= before, "created_at is the store's clock: {:?}", queued.created_at);
    assert_eq!(store.stats().await.unwrap().bad_records, 1);

    // The database refuses the change set write after the events were inserted: nothing of the
    // delivery stays, neither its events nor its bad records.
    fail_queue_writes(&f, true).await;
    let e = store.record_delivery(&broken, &planner).await.unwrap_err();
    assert!(e.to_string().contains("injected failure"), "{e}");
    assert!(store.seen_event_ids(&ids(&["e3", "e4"])).await.unwrap().is_empty(), "events rolled back");
    assert_eq!(store.stats().await.unwrap().bad_records, 1, "bad records rolled back");
    fail_queue_writes(&f, false).await;

    // A planner that puts an event into a change set that this delivery did not record first is
    // refused, whole.
    let e = store.record_delivery(&broken, &Sneaky(&planner, "e1")).await.unwrap_err();
    assert!(e.to_string().contains("event e1 is not a kept event recorded for the first time"), "{e}");
    assert!(!e.is_transient());
    assert!(store.seen_event_ids(&ids(&["e3", "e4"])).await.unwrap().is_empty());
    assert_eq!(store.queued_change_set("cs-i-1-e1").await.unwrap().unwrap().change_set.event_ids, ["e1", "e2"]);

    // The message comes back (it was not deleted): now it is recorded, whole.
    let receipt = store.record_delivery(&broken, &planner).await.unwrap();
    assert_eq!(receipt.new_event_ids, ["e3", "e4"]);
    assert_eq!(receipt.change_sets, ["cs-i-1-e1", "cs-i-2-e4"]);
    assert_eq!(
        queued_ids(&store.unfinished_change_sets().await.unwrap()),
        [("cs-i-1-e1".to_string(), ids(&["e1", "e2", "e3"])), ("cs-i-2-e4".to_string(), ids(&["e4"]))]
    );
    assert_eq!(store.stats().await.unwrap().bad_records, 3);
    assert_eq!(store.stats().await.unwrap().events, 5);

    // An empty event id is refused before anything is written; so is an empty resource key.
    let bad_id = delivery(vec![kept_on("e5", "i-3", 1), kept_on(" ", "i-3", 1)], 0);
    assert!(store.record_delivery(&bad_id, &planner).await.is_err());
    let no_key = Delivery { resource_keys: vec!["".into()], ..delivery(vec![], 0) };
    assert!(store.record_delivery(&no_key, &planner).await.is_err());
    assert!(store.seen_event_ids(&ids(&["e5"])).await.unwrap().is_empty());
}

/// Event data is whatever a caller put in an API call, NUL characters included (which Postgres
/// cannot store): the delivery is recorded, with U+FFFD in their place, on both backends alike.
/// Key columns bounded: a field path or a knowledge signature far over Postgres's index entry limit
/// (about 2,700 bytes) is stored under its bounded form, found again by the same long value, and
/// never confused with another long value sharing its beginning.
pub async fn over_long_keys_are_stored_bounded_and_found_again(f: Fixture) {
    let store = &f.store;
    let path = |tail: &str| format!("tags[\"{}{tail}\"]", "k".repeat(6_000));
    let change = |attribute_path: String, event_id: &str| FieldChangeRecord {
        address: "aws_sqs_queue.jobs".into(),
        attribute_path,
        actor: "mallory".into(),
        event_id: event_id.into(),
        event_time: at(10),
        change_set_id: None,
    };
    assert_eq!(store.record_field_changes(&[change(path("a"), "e1"), change(path("b"), "e2")]).await.unwrap(), 2);
    let history = store.field_history("aws_sqs_queue.jobs", &path("a"), at(0), 10).await.unwrap();
    assert_eq!(history.iter().map(|c| c.event_id.as_str()).collect::<Vec<_>>(), ["e1"]);
    assert!(history[0].attribute_path.len() < 1_100, "{} bytes stored", history[0].attribute_path.len());
    store.set_field_owner("aws_sqs_queue.jobs", &path("a"), "terraform", None).await.unwrap();
    assert_eq!(store.field_owner("aws_sqs_queue.jobs", &path("a")).await.unwrap().unwrap().owner, "terraform");
    assert_eq!(store.field_owner("aws_sqs_queue.jobs", &path("b")).await.unwrap(), None);

    let hashing = spec("hashing-v1", 8);
    let signature = format!("call:sqs:SetQueueAttributes {}", "param:x ".repeat(2_000));
    let first = store.upsert_knowledge(&hashing, &knowledge(&signature, unit(8, &[(0, 1.0)]), None)).await.unwrap();
    let again = store.upsert_knowledge(&hashing, &knowledge(&signature, unit(8, &[(1, 1.0)]), None)).await.unwrap();
    assert_eq!(first, again, "the same long signature is one entry");
    let entry = store.knowledge_entry(first).await.unwrap().unwrap();
    assert!(entry.signature.len() < 1_100 && entry.signature.contains("sha256"), "{}", entry.signature);
}

pub async fn hostile_text_is_recorded_with_nul_replaced(f: Fixture) {
    let store = &f.store;
    let mut hostile = kept_on("h1", "i-9", 1);
    hostile.actor = "mallory\0".into();
    hostile.raw = json!({"eventID": "h1", "resource": "i-9", "tags": {"k\0": "v\0v"}}).to_string();
    let mut d = delivery(vec![hostile, event("h2", Disposition::Dropped, Some("read-only\0"))], 0);
    d.bad_records.push(BadRecord { location: "sqs message \0".into(), reason: "not JSON".into(), raw: "{\0".into() });
    let planner = ByResource::of(&[&d]);
    let receipt = store.record_delivery(&d, &planner).await.unwrap();
    assert_eq!(receipt.new_event_ids, ids(&["h1", "h2"]));
    let stored = store.events_by_id(&ids(&["h1"])).await.unwrap();
    assert_eq!(stored[0].actor, "mallory\u{fffd}");
    assert_eq!(json(&stored[0].raw)["tags"], json!({"k\u{fffd}": "v\u{fffd}v"}));
    store.record_bad_record("line \0", "bad \0", "\0\0").await.unwrap();
    assert_eq!(store.stats().await.unwrap().bad_records, 2);

    // An event id is an identity: one with control characters is refused, nothing written.
    let bad_id = delivery(vec![kept_on("h3\0", "i-9", 2)], 0);
    let e = store.record_delivery(&bad_id, &planner).await.unwrap_err();
    assert!(e.to_string().contains("control characters"), "{e}");
    assert_eq!(store.stats().await.unwrap().events, 2);
}

/// Records `d` until it is recorded, as the feed does with transient errors (SQLite: busy).
async fn record_retrying(store: &Store, d: &Delivery, planner: &ByResource) -> DeliveryReceipt {
    loop {
        match store.record_delivery(d, planner).await {
            Ok(receipt) => return receipt,
            Err(e) if e.is_transient() => tokio::time::sleep(Duration::from_millis(20)).await,
            Err(e) => panic!("{e}"),
        }
    }
}

/// Records each delivery on a replica of its own (its own connection pool), all starting at once.
async fn at_once(f: &Fixture, deliveries: Vec<Delivery>, planner: &std::sync::Arc<ByResource>) -> Vec<DeliveryReceipt> {
    let start = std::sync::Arc::new(tokio::sync::Barrier::new(deliveries.len()));
    let mut replicas = tokio::task::JoinSet::new();
    for d in deliveries {
        let (replica, planner, start) = (f.reopen().await, planner.clone(), start.clone());
        // A connection in hand before the start, so they really begin together.
        replica.checkpoint("warm").await.unwrap();
        replicas.spawn(async move {
            start.wait().await;
            let receipt = record_retrying(&replica, &d, &planner).await;
            replica.close().await;
            receipt
        });
    }
    let mut receipts = Vec::new();
    while let Some(r) = replicas.join_next().await {
        receipts.push(r.unwrap());
    }
    receipts
}

pub async fn redeliveries_and_replicas_form_one_change_set(f: Fixture) {
    let store = &f.store;
    let burst = delivery(vec![kept_on("e1", "i-1", 10), kept_on("e2", "i-1", 11)], 0);
    let same = delivery(vec![kept_on("r1", "i-2", 10), kept_on("r2", "i-2", 12), kept_on("r3", "i-3", 12)], 0);
    let parts: Vec<Delivery> = (0..6).map(|i| delivery(vec![kept_on(&format!("p{i}"), "i-4", i)], 0)).collect();
    let mut all: Vec<&Delivery> = vec![&burst, &same];
    all.extend(parts.iter());
    let planner = std::sync::Arc::new(ByResource::of(&all));

    // A redelivery: the events are there, nothing new, no change set started or extended.
    assert_eq!(store.record_delivery(&burst, planner.as_ref()).await.unwrap().change_sets.len(), 1);
    let before = store.unfinished_change_sets().await.unwrap();
    let again = store.record_delivery(&burst, planner.as_ref()).await.unwrap();
    assert_eq!(again, DeliveryReceipt::default(), "all duplicates");
    assert_eq!(store.unfinished_change_sets().await.unwrap(), before);

    // Four replicas receive the same message at once: one records it and forms its change sets,
    // the others find every event recorded.
    let mut receipts = at_once(&f, vec![same.clone(); 4], &planner).await;
    receipts.sort_by_key(|r| std::cmp::Reverse(r.new_event_ids.len()));
    assert_eq!(receipts[0].new_event_ids, ["r1", "r2", "r3"]);
    assert_eq!(receipts[0].change_sets, ["cs-i-2-r1", "cs-i-3-r3"]);
    assert!(receipts[1..].iter().all(|r| *r == DeliveryReceipt::default()), "{receipts:?}");

    // Six replicas each receive a different event of one resource at once: they take turns, and
    // every event joins the one change set of that resource.
    for receipt in at_once(&f, parts.clone(), &planner).await {
        assert_eq!(receipt.new_event_ids.len(), 1);
    }
    let queue = store.unfinished_change_sets().await.unwrap();
    let of_i4: Vec<_> = queue.iter().filter(|q| q.change_set.resource_key == "i-4").collect();
    assert_eq!(of_i4.len(), 1, "one change set for one resource: {of_i4:?}");
    let mut events = of_i4[0].change_set.event_ids.clone();
    events.sort();
    assert_eq!(events, ["p0", "p1", "p2", "p3", "p4", "p5"]);
    assert_eq!((of_i4[0].change_set.first_event_time, of_i4[0].change_set.last_event_time), (at(0), at(5)));
    assert_eq!(queue.len(), 4);
    assert_eq!(store.stats().await.unwrap().events, 11);
}

pub async fn deliveries_never_extend_a_claimed_change_set(f: Fixture) {
    let store = &f.store;
    let first = delivery(vec![kept_on("e1", "i-1", 10)], 0);
    let late = delivery(vec![kept_on("e2", "i-1", 11)], 0);
    let later = delivery(vec![kept_on("e3", "i-1", 12)], 0);
    let planner = ByResource::of(&[&first, &late, &later]);
    store.record_delivery(&first, &planner).await.unwrap();
    let claimed = store.claim_due_change_sets("w1", at(100), at(100), Duration::from_secs(60), 10).await.unwrap();
    assert_eq!(claimed.len(), 1);

    // The planner is shown only pending change sets: the late event starts one of its own.
    let receipt = store.record_delivery(&late, &planner).await.unwrap();
    assert_eq!(receipt.change_sets, ["cs-i-1-e2"]);
    assert_eq!(store.queued_change_set("cs-i-1-e1").await.unwrap().unwrap().change_set.event_ids, ["e1"]);

    // A planner whose new change set would take the id of a claimed one (data an older version
    // left, a hash collision) gets another id for it.
    store.claim_due_change_sets("w1", at(100), at(100), Duration::from_secs(60), 10).await.unwrap();
    struct SameId<'a>(&'a ByResource);
    impl PendingPlanner for SameId<'_> {
        fn plan(&self, new: &HashSet<String>, open: Vec<PendingChangeSet>) -> Vec<PendingChangeSet> {
            assert!(open.is_empty(), "claimed change sets are not shown: {open:?}");
            let mut out = self.0.plan(new, open);
            out[0].id = "cs-i-1-e1".into();
            out
        }
        fn another_id(&self, addition: &PendingChangeSet, attempt: u32) -> String {
            self.0.another_id(addition, attempt)
        }
    }
    let receipt = store.record_delivery(&later, &SameId(&planner)).await.unwrap();
    assert_eq!(receipt.change_sets, ["cs-i-1-e1#1"]);
    let fresh = store.queued_change_set("cs-i-1-e1#1").await.unwrap().unwrap();
    assert_eq!((fresh.status, fresh.change_set.event_ids.clone()), (QueueStatus::Pending, ids(&["e3"])));
    assert_eq!(store.queued_change_set("cs-i-1-e1").await.unwrap().unwrap().status, QueueStatus::Claimed);
}

/// Generates one `#[tokio::test]` per suite case, each on a fresh store made by `$fixture`.
#[macro_export]
macro_rules! store_suite {
    ($fixture:path) => {
        $crate::store_suite!(@cases $fixture;
            events_are_recorded_once,
            many_events_in_one_batch_and_many_ids_in_one_question,
            change_sets_upsert_and_log_decisions,
            decisions_are_appended_once_per_distinct_decision,
            pending_change_sets_merge_until_claimed,
            claims_are_oldest_first_and_limited,
            a_sessions_change_sets_and_the_covered_ones_are_found_again,
            replicas_never_claim_one_change_set_twice,
            checkpoints_are_replaced,
            field_ownership_ledger,
            knowledge_search_and_recipes,
            reembedding_switches_every_vector_at_once,
            pull_requests_per_address,
            reconciliations_are_kept_per_change_set,
            stats_count_everything,
            reverts_are_a_status_of_their_own,
            decisions_wait_for_a_person_until_answered_or_resolved,
            a_delivery_is_recorded_whole_or_not_at_all,
            redeliveries_and_replicas_form_one_change_set,
            deliveries_never_extend_a_claimed_change_set,
            hostile_text_is_recorded_with_nul_replaced,
            over_long_keys_are_stored_bounded_and_found_again,
        );
    };
    (@cases $fixture:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let fixture = $fixture(stringify!($case)).await;
                $crate::suite::$case(fixture).await;
            }
        )*
    };
}

/// A stored record's JSON text, read.
fn json(raw: &str) -> serde_json::Value {
    serde_json::from_str(raw).expect("the store gives back JSON")
}
