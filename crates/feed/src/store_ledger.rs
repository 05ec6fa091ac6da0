//! The [`Ledger`] over the real knowledge base ([`driftback_store::Store`]).
//!
//! Recording an intake takes three store writes, ordered so that a crash between any two loses
//! nothing: pending change sets first (merging is idempotent on event ids), then the events (which
//! is what marks them seen), then bad input. A message is acknowledged only after all three.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use driftback_events::{ApiEvent, ChangeSet, normalize, resource_ids};
use driftback_store::{ChangeSetRecord, ClaimOutcome, Disposition, EventRecord, PendingChangeSet, Store, StoreError};

use crate::intake::Intake;
use crate::ledger::{ClaimedChangeSet, IntakeReceipt, Ledger, LedgerError};
use crate::window::QuietWindow;

/// Resource keys of events that name no resource start with this: such an event is a change set
/// of its own and nothing joins it.
const NO_RESOURCE: &str = "event:";

/// The knowledge base as the feed's ledger.
#[derive(Debug, Clone)]
pub struct StoreLedger {
    store: Store,
    window: QuietWindow,
}

impl StoreLedger {
    pub fn new(store: Store, window: QuietWindow) -> StoreLedger {
        StoreLedger { store, window }
    }

    pub fn store(&self) -> &Store {
        &self.store
    }
}

fn err(e: StoreError) -> LedgerError {
    LedgerError { transient: e.is_transient(), message: e.to_string() }
}

/// The change set id `driftback_events::group` would give: stable across runs and replicas.
fn change_set_id(resource: Option<&str>, first_event: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in resource.unwrap_or("").bytes().chain([0]).chain(first_event.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("cs-{hash:016x}")
}

/// Where each new kept event goes, given the change sets already pending: for every change set the
/// new events join or start, a [`PendingChangeSet`] holding only those new events (the store
/// merges them into the stored one). Pure, so the joining rules are tested without a database.
pub(crate) fn plan_pending(
    mut open: Vec<PendingChangeSet>,
    events: &[&ApiEvent],
    window: &QuietWindow,
) -> Vec<PendingChangeSet> {
    let mut sorted: Vec<&ApiEvent> = events.to_vec();
    sorted.sort_by(|a, b| a.time.cmp(&b.time).then_with(|| a.id.cmp(&b.id)));
    let mut additions: Vec<PendingChangeSet> = Vec::new();
    for event in sorted {
        let ids = resource_ids(event);
        let keys: Vec<(Option<String>, String)> = if ids.is_empty() {
            vec![(None, format!("{NO_RESOURCE}{}", event.id))]
        } else {
            ids.into_iter().map(|r| (Some(r.clone()), r)).collect()
        };
        let session = event.actor.session_key();
        for (resource, key) in keys {
            let found = open.iter_mut().find(|p| {
                p.resource_key == key
                    && p.actor_session == session
                    && (p.event_ids.contains(&event.id)
                        || (resource.is_some() && window.joins(p.first_event_time, p.last_event_time, event.time)))
            });
            let set = match found {
                // A redelivery of an event already pending: nothing to add.
                Some(p) if p.event_ids.contains(&event.id) => continue,
                Some(p) => {
                    p.event_ids.push(event.id.clone());
                    p.first_event_time = p.first_event_time.min(event.time);
                    p.last_event_time = p.last_event_time.max(event.time);
                    p.clone()
                }
                None => {
                    let p = PendingChangeSet {
                        id: change_set_id(resource.as_deref(), &event.id),
                        resource_key: key,
                        actor_session: session.clone(),
                        first_event_time: event.time,
                        last_event_time: event.time,
                        event_ids: vec![event.id.clone()],
                    };
                    open.push(p.clone());
                    p
                }
            };
            match additions.iter_mut().find(|a| a.id == set.id) {
                Some(a) => {
                    a.event_ids.push(event.id.clone());
                    a.first_event_time = a.first_event_time.min(event.time);
                    a.last_event_time = a.last_event_time.max(event.time);
                }
                None => additions.push(PendingChangeSet {
                    event_ids: vec![event.id.clone()],
                    first_event_time: event.time,
                    last_event_time: event.time,
                    ..set
                }),
            }
        }
    }
    additions
}

fn event_record(e: &crate::IntakeEvent) -> Result<EventRecord, LedgerError> {
    Ok(EventRecord {
        event_id: e.id.clone(),
        event_time: e.time,
        source: e.source.clone(),
        name: e.name.clone(),
        actor: e.actor.clone(),
        disposition: if e.dropped().is_some() { Disposition::Dropped } else { Disposition::Kept },
        drop_reason: e.dropped().map(|r| r.as_str().to_string()),
        // The scanner read this text as JSON already: it parses.
        raw: serde_json::from_str(&e.raw).map_err(|err| LedgerError {
            message: format!("event {}: record is not JSON: {err}", e.id),
            transient: false,
        })?,
    })
}

impl Ledger for StoreLedger {
    async fn record_intake(&self, intake: &Intake) -> Result<IntakeReceipt, LedgerError> {
        let ids: Vec<String> = intake.events.iter().map(|e| e.id.clone()).collect();
        let seen = self.store.seen_event_ids(&ids).await.map_err(err)?;
        let new: Vec<&crate::IntakeEvent> = intake.events.iter().filter(|e| !seen.contains(&e.id)).collect();
        let kept: Vec<&ApiEvent> = new.iter().filter_map(|e| e.kept()).collect();
        if !kept.is_empty() {
            let open: Vec<PendingChangeSet> = self
                .store
                .unfinished_change_sets()
                .await
                .map_err(err)?
                .into_iter()
                .filter(|q| q.status == driftback_store::QueueStatus::Pending)
                .map(|q| q.change_set)
                .collect();
            for pending in plan_pending(open, &kept, &self.window) {
                let mut attempt = 0;
                let mut candidate = pending.clone();
                // `false`: the change set was claimed meanwhile; these events start one of their own.
                while !self.store.save_pending(&candidate).await.map_err(err)? {
                    attempt += 1;
                    let first = format!("{}#{attempt}", pending.event_ids[0]);
                    candidate =
                        PendingChangeSet { id: change_set_id(Some(&pending.resource_key), &first), ..pending.clone() };
                }
            }
        }
        let records: Vec<EventRecord> = new.iter().map(|e| event_record(e)).collect::<Result<_, _>>()?;
        let new_events = self.store.record_events(&records).await.map_err(err)?;
        for bad in &intake.bad {
            self.store.record_bad_record(&bad.location, &bad.reason, &bad.raw).await.map_err(err)?;
        }
        Ok(IntakeReceipt {
            new_events,
            duplicates: intake.events.len() - new_events,
            pending: kept.len(),
            bad: intake.bad.len(),
        })
    }

    async fn claim_due(
        &self,
        now: DateTime<Utc>,
        owner: &str,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<ClaimedChangeSet>, LedgerError> {
        let quiet_before = now - self.window.quiet();
        let claimed = self.store.claim_due_change_sets(owner, quiet_before, now, lease, limit).await.map_err(err)?;
        let mut out = Vec::with_capacity(claimed.len());
        for queued in claimed {
            let pending = queued.change_set;
            let records = self.store.events_by_id(&pending.event_ids).await.map_err(err)?;
            let mut by_id: HashMap<String, ApiEvent> = HashMap::new();
            for r in records {
                if let Ok(event) = normalize(&r.raw) {
                    by_id.insert(r.event_id, event);
                }
            }
            let mut events: Vec<ApiEvent> = pending.event_ids.iter().filter_map(|id| by_id.remove(id)).collect();
            events.sort_by(|a, b| a.time.cmp(&b.time).then_with(|| a.id.cmp(&b.id)));
            if events.len() < pending.event_ids.len() {
                // The change set is saved before its events are recorded. Events still missing are
                // being recorded right now, or their messages (not deleted) will come back after a
                // crash: leave the change set pending until all of them are there, never reconcile
                // part of it.
                tracing::debug!(change_set = %pending.id, missing = pending.event_ids.len() - events.len(),
                    "change set released: some of its events are not recorded yet");
                self.store.finish_claim(&pending.id, owner, &ClaimOutcome::Release).await.map_err(err)?;
                continue;
            }
            let Some(first) = events.first() else {
                self.store
                    .finish_claim(&pending.id, owner, &ClaimOutcome::Failed("it has no events".into()))
                    .await
                    .map_err(err)?;
                continue;
            };
            let resource_id = (!pending.resource_key.starts_with(NO_RESOURCE)).then(|| pending.resource_key.clone());
            let change_set =
                ChangeSet { id: pending.id.clone(), resource_id, actor: first.actor.clone(), events: events.clone() };
            let lease_until = queued.lease_until.unwrap_or(now);
            out.push(ClaimedChangeSet { change_set, lease_until });
        }
        Ok(out)
    }

    async fn renew_lease(&self, id: &str, owner: &str, lease: Duration) -> Result<bool, LedgerError> {
        let until = Utc::now() + chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::MAX);
        self.store.renew_claim(id, owner, until).await.map_err(err)
    }

    async fn complete(&self, owner: &str, record: &ChangeSetRecord) -> Result<(), LedgerError> {
        self.store.record_change_set(record).await.map_err(err)?;
        if !self.store.finish_claim(&record.id, owner, &ClaimOutcome::Done).await.map_err(err)? {
            tracing::warn!(change_set = record.id, "lease had passed to another replica; outcome recorded anyway");
        }
        Ok(())
    }

    async fn release(&self, id: &str, owner: &str) -> Result<(), LedgerError> {
        self.store.finish_claim(id, owner, &ClaimOutcome::Release).await.map_err(err).map(|_| ())
    }

    async fn checkpoint(&self, name: &str) -> Result<Option<DateTime<Utc>>, LedgerError> {
        let Some(text) = self.store.checkpoint(name).await.map_err(err)? else { return Ok(None) };
        DateTime::parse_from_rfc3339(&text).map(|t| Some(t.with_timezone(&Utc))).map_err(|e| LedgerError {
            message: format!("checkpoint {name} holds {text:?}, not an RFC 3339 time: {e}"),
            transient: false,
        })
    }

    async fn advance_checkpoint(&self, name: &str, to: DateTime<Utc>) -> Result<(), LedgerError> {
        if let Some(current) = self.checkpoint(name).await? {
            if current >= to {
                return Ok(());
            }
        }
        self.store.set_checkpoint(name, &to.to_rfc3339()).await.map_err(err)
    }

    async fn ping(&self) -> Result<(), LedgerError> {
        self.store.checkpoint("driftback:ping").await.map(|_| ()).map_err(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(id: &str, time: &str, user: &str, instance: &str) -> ApiEvent {
        normalize(&json!({
            "eventID": id, "eventTime": time, "eventSource": "ec2.amazonaws.com",
            "eventName": "ModifyInstanceAttribute",
            "userIdentity": {"type": "IAMUser", "arn": format!("arn:aws:iam::1:user/{user}"), "userName": user},
            "requestParameters": {"instanceId": instance}
        }))
        .unwrap()
    }

    fn shape(sets: &[PendingChangeSet]) -> Vec<(String, Vec<String>)> {
        let mut v: Vec<_> = sets.iter().map(|p| (p.resource_key.clone(), p.event_ids.clone())).collect();
        v.sort();
        v
    }

    #[test]
    fn new_events_join_open_change_sets_by_resource_session_and_window() {
        let w = QuietWindow { quiet_secs: 120, max_age_secs: 900 };
        let first = [ev("1", "2024-03-01T10:00:00Z", "alice", "i-1"), ev("2", "2024-03-01T10:00:30Z", "bob", "i-1")];
        let saved = plan_pending(vec![], &first.iter().collect::<Vec<_>>(), &w);
        assert_eq!(shape(&saved), [("i-1".into(), vec!["1".into()]), ("i-1".into(), vec!["2".into()])]);

        // Later deliveries: alice again within the window (joins), out of order before her first
        // event (joins), and long after (a new change set); a redelivered event changes nothing.
        let later = [
            ev("3", "2024-03-01T10:01:30Z", "alice", "i-1"),
            ev("0", "2024-03-01T09:59:00Z", "alice", "i-1"),
            ev("4", "2024-03-01T11:00:00Z", "alice", "i-1"),
            ev("2", "2024-03-01T10:00:30Z", "bob", "i-1"),
        ];
        // Only the new events are handed to the store, which merges them into the stored change set.
        let saved2 = plan_pending(saved.clone(), &later.iter().collect::<Vec<_>>(), &w);
        assert_eq!(saved2.len(), 2, "{saved2:?}");
        let alice = saved2.iter().find(|p| p.event_ids.contains(&"3".to_string())).unwrap();
        assert_eq!(alice.event_ids, ["0", "3"]);
        assert_eq!(alice.id, saved.iter().find(|p| p.event_ids == ["1"]).unwrap().id, "the id stays");
        assert_eq!(alice.first_event_time.to_rfc3339(), "2024-03-01T09:59:00+00:00");
        assert_eq!(alice.last_event_time.to_rfc3339(), "2024-03-01T10:01:30+00:00");
        let late = saved2.iter().find(|p| p.event_ids == ["4"]).unwrap();
        assert_ne!(late.id, alice.id);
    }
}
