//! The [`Ledger`] over the real knowledge base ([`driftback_store::Store`]).
//!
//! An intake is recorded in one store transaction ([`Store::record_delivery`]): its events, its bad
//! input, and the pending change sets formed from the kept events that this very transaction
//! recorded for the first time. A crash before the commit records nothing (the message, not
//! deleted, comes back and is recorded then); after it, everything. A redelivery, or another
//! replica recording the same message at the same time, finds the events recorded and forms no
//! change set from them. A message is acknowledged only after the commit.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use chrono::{DateTime, Utc};
use driftback_events::{
    ApiEvent, ChangeSet, Group, Grouper, Placement, ResourceKey, change_set_id, read_record, time_order,
};
use driftback_store::{
    ChangeSetRecord, ClaimOutcome, Delivery, PendingChangeSet, PendingPlanner, QueuedChangeSet, Store, StoreError,
};

use crate::intake::{Intake, IntakeEvent};
use crate::ledger::{ClaimedChangeSet, IntakeReceipt, Ledger, LedgerError};
use crate::window::QuietWindow;

/// [`plan_pending`] as the store runs it inside its transaction, over this intake's kept events.
struct IntakePlanner<'a> {
    kept: Vec<&'a ApiEvent>,
    window: &'a QuietWindow,
}

impl PendingPlanner for IntakePlanner<'_> {
    fn plan(&self, new_event_ids: &HashSet<String>, open: Vec<PendingChangeSet>) -> Vec<PendingChangeSet> {
        let new: Vec<&ApiEvent> = self.kept.iter().copied().filter(|e| new_event_ids.contains(&e.id)).collect();
        plan_pending(open, &new, self.window)
    }

    fn another_id(&self, addition: &PendingChangeSet, attempt: u32) -> String {
        let first = addition.event_ids.first().map(String::as_str).unwrap_or_default();
        change_set_id(Some(&addition.resource_key), &format!("{first}#{attempt}"))
    }
}

/// The longest failure reason kept with a change set that failed for good.
const MAX_FAILURE_CHARS: usize = 2000;

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

    /// How long a claimed change set whose events are not all recorded is put back to wait for
    /// them, counted from when the store first saved it: the window's maximum age (at least its
    /// quiet period). Since intakes are recorded atomically this only happens to change sets an
    /// older driftback saved before a crash; past this bound the missing events are not coming
    /// (their message went to the dead-letter queue) and the change set is marked failed.
    pub fn incomplete_grace(&self) -> chrono::Duration {
        self.window.max_age().max(self.window.quiet())
    }

    pub fn store(&self) -> &Store {
        &self.store
    }
}

fn err(e: StoreError) -> LedgerError {
    LedgerError { transient: e.is_transient(), message: e.to_string() }
}

/// Where each new kept event goes, given the change sets already pending: for every change set the
/// new events join or start, a [`PendingChangeSet`] holding only those new events (the store
/// merges them into the stored one). Pure, so the joining rules are tested without a database.
///
/// The rules are the shared [`Grouper`]'s (the one [`driftback_events::group`] uses), seeded with
/// the pending change sets; the daemon adds the window's maximum age ([`QuietWindow::join_window`])
/// and leaves out events a pending change set already names ([`Placement::Held`]: a redelivery).
pub(crate) fn plan_pending(
    open: Vec<PendingChangeSet>,
    events: &[&ApiEvent],
    window: &QuietWindow,
) -> Vec<PendingChangeSet> {
    let mut grouper = Grouper::new(window.join_window());
    for p in open {
        grouper.seed(Group {
            id: p.id,
            key: ResourceKey::parse(&p.resource_key),
            actor_session: p.actor_session,
            first_time: p.first_event_time,
            last_time: p.last_event_time,
            event_ids: p.event_ids,
        });
    }
    let mut sorted: Vec<&ApiEvent> = events.to_vec();
    sorted.sort_by(|a, b| time_order(a, b));
    let mut additions: Vec<PendingChangeSet> = Vec::new();
    // Group index -> its addition in `additions`.
    let mut addition_of: HashMap<usize, usize> = HashMap::new();
    for event in sorted {
        for placement in grouper.place(event) {
            let g = match placement {
                // A redelivery of an event already pending: nothing to add.
                Placement::Held(_) => continue,
                Placement::Started(g) | Placement::Joined(g) => g,
            };
            match addition_of.get(&g) {
                Some(&a) => {
                    let a = &mut additions[a];
                    a.event_ids.push(event.id.clone());
                    a.first_event_time = a.first_event_time.min(event.time);
                    a.last_event_time = a.last_event_time.max(event.time);
                }
                None => {
                    let group = &grouper.groups()[g];
                    addition_of.insert(g, additions.len());
                    additions.push(PendingChangeSet {
                        id: group.id.clone(),
                        resource_key: group.key.to_string(),
                        actor_session: group.actor_session.clone(),
                        first_event_time: event.time,
                        last_event_time: event.time,
                        event_ids: vec![event.id.clone()],
                    });
                }
            }
        }
    }
    additions
}

impl StoreLedger {
    /// A claimed change set some of whose events (`missing`) are not recorded, or not readable:
    /// never reconciled in part. Put back to wait for them while younger than
    /// [`StoreLedger::incomplete_grace`]; after that marked failed, naming them.
    async fn incomplete(
        &self,
        queued: &QueuedChangeSet,
        missing: &[&str],
        now: DateTime<Utc>,
        owner: &str,
    ) -> Result<(), LedgerError> {
        let id = &queued.change_set.id;
        let age = now - queued.created_at;
        let outcome = if age < self.incomplete_grace() {
            tracing::debug!(change_set = %id, missing = ?missing, "change set released: some of its events are not recorded yet");
            ClaimOutcome::Release
        } else {
            let reason = format!(
                "{} of its {} events are not recorded (or not readable) {}s after it was saved, so they are not \
                 coming (their message went to the dead-letter queue?): {}",
                missing.len(),
                queued.change_set.event_ids.len(),
                age.num_seconds(),
                missing.join(", ")
            );
            tracing::warn!(change_set = %id, %reason, "change set failed: its events are incomplete");
            ClaimOutcome::Failed(reason)
        };
        self.store.finish_claim(id, owner, &outcome).await.map_err(err)?;
        Ok(())
    }
}

impl Ledger for StoreLedger {
    async fn record_intake(&self, intake: &Intake) -> Result<IntakeReceipt, LedgerError> {
        let kept: Vec<&ApiEvent> = intake.events.iter().filter_map(|e| e.kept()).collect();
        let mut keys: Vec<String> = kept.iter().flat_map(|e| ResourceKey::of(e)).map(|key| key.to_string()).collect();
        keys.sort_unstable();
        keys.dedup();
        let delivery = Delivery {
            events: intake.events.iter().map(IntakeEvent::record).collect(),
            bad_records: intake.bad.clone(),
            resource_keys: keys,
        };
        let planner = IntakePlanner { kept, window: &self.window };
        let receipt = self.store.record_delivery(&delivery, &planner).await.map_err(err)?;
        let new: HashSet<&str> = receipt.new_event_ids.iter().map(String::as_str).collect();
        Ok(IntakeReceipt {
            new_events: new.len(),
            duplicates: intake.events.len() - new.len(),
            pending: planner.kept.iter().filter(|e| new.contains(e.id.as_str())).count(),
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
            let pending = &queued.change_set;
            let records = self.store.events_by_id(&pending.event_ids).await.map_err(err)?;
            let mut by_id: HashMap<String, ApiEvent> = HashMap::new();
            for r in records {
                // Read as intake read it: the same scanner, on the same record text.
                if let Ok(event) = read_record(&r.raw).and_then(|record| record.to_event()) {
                    by_id.insert(r.event_id, event);
                }
            }
            let missing: Vec<&str> =
                pending.event_ids.iter().filter(|id| !by_id.contains_key(*id)).map(String::as_str).collect();
            if !missing.is_empty() {
                self.incomplete(&queued, &missing, now, owner).await?;
                continue;
            }
            let mut events: Vec<ApiEvent> = pending.event_ids.iter().filter_map(|id| by_id.remove(id)).collect();
            events.sort_by(time_order);
            let Some(first) = events.first() else {
                self.store
                    .finish_claim(&pending.id, owner, &ClaimOutcome::Failed("it has no events".into()))
                    .await
                    .map_err(err)?;
                continue;
            };
            let resource_id = ResourceKey::parse(&pending.resource_key).resource_id().map(str::to_string);
            let change_set =
                ChangeSet { id: pending.id.clone(), resource_id, actor: first.actor.clone(), events: events.clone() };
            let lease_until = queued.lease_until.unwrap_or(now);
            out.push(ClaimedChangeSet { change_set, lease_until, attempts: queued.attempts });
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

    async fn fail(&self, id: &str, owner: &str, reason: &str) -> Result<(), LedgerError> {
        // The reason may quote hostile event data: keep what a person reads, not all of it.
        let reason: String = reason.chars().take(MAX_FAILURE_CHARS).collect();
        let outcome = ClaimOutcome::Failed(reason);
        self.store.finish_claim(id, owner, &outcome).await.map_err(err).map(|_| ())
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
    use driftback_events::GroupConfig;
    use serde_json::json;

    fn ev(id: &str, time: &str, user: &str, instance: &str) -> ApiEvent {
        driftback_events::normalize(&json!({
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
    /// The planner as written before the shared grouper: the reference the daemon must still match.
    fn reference_plan_pending(
        mut open: Vec<PendingChangeSet>,
        events: &[&ApiEvent],
        window: &QuietWindow,
    ) -> Vec<PendingChangeSet> {
        fn id(resource: Option<&str>, first_event: &str) -> String {
            let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
            for byte in resource.unwrap_or("").bytes().chain([0]).chain(first_event.bytes()) {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
            format!("cs-{hash:016x}")
        }
        fn joins(w: &QuietWindow, first: DateTime<Utc>, last: DateTime<Utc>, time: DateTime<Utc>) -> bool {
            let open_until = crate::window::due_at(first, last, w);
            time >= first - w.quiet() && time <= last + w.quiet() && time <= open_until
        }
        let mut sorted: Vec<&ApiEvent> = events.to_vec();
        sorted.sort_by(|a, b| a.time.cmp(&b.time).then_with(|| a.id.cmp(&b.id)));
        let mut additions: Vec<PendingChangeSet> = Vec::new();
        for event in sorted {
            let ids = driftback_events::resource_ids(event);
            let keys: Vec<(Option<String>, String)> = if ids.is_empty() {
                vec![(None, format!("event:{}", event.id))]
            } else {
                ids.into_iter().map(|r| (Some(r.clone()), r)).collect()
            };
            let session = event.actor.session_key();
            for (resource, key) in keys {
                let found = open.iter_mut().find(|p| {
                    p.resource_key == key
                        && p.actor_session == session
                        && (p.event_ids.contains(&event.id)
                            || (resource.is_some() && joins(window, p.first_event_time, p.last_event_time, event.time)))
                });
                let set = match found {
                    Some(p) if p.event_ids.contains(&event.id) => continue,
                    Some(p) => {
                        p.event_ids.push(event.id.clone());
                        p.first_event_time = p.first_event_time.min(event.time);
                        p.last_event_time = p.last_event_time.max(event.time);
                        p.clone()
                    }
                    None => {
                        let p = PendingChangeSet {
                            id: id(resource.as_deref(), &event.id),
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

    /// What the store does with a planner's additions: merge each into the pending change set of
    /// its id, or save it as a new one.
    fn merge(pending: &mut Vec<PendingChangeSet>, additions: Vec<PendingChangeSet>) {
        for a in additions {
            match pending.iter_mut().find(|p| p.id == a.id) {
                Some(p) => {
                    p.event_ids.extend(a.event_ids);
                    p.first_event_time = p.first_event_time.min(a.first_event_time);
                    p.last_event_time = p.last_event_time.max(a.last_event_time);
                }
                None => pending.push(a),
            }
        }
        // As the store hands them to the planner.
        pending.sort_by(|a, b| a.last_event_time.cmp(&b.last_event_time).then_with(|| a.id.cmp(&b.id)));
    }

    /// A small deterministic generator (no dependency for randomness).
    struct Lcg(u64);
    impl Lcg {
        fn below(&mut self, n: u64) -> u64 {
            self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 33) % n
        }
    }

    /// `n` events with unique ids, time-ordered, on a few resources (some naming two, some none) by
    /// two users, in bursts and gaps around the quiet window and the maximum age.
    fn random_events(rng: &mut Lcg, n: usize) -> Vec<ApiEvent> {
        let base: DateTime<Utc> = "2024-03-01T10:00:00Z".parse().unwrap();
        let mut t = 0i64;
        (0..n)
            .map(|i| {
                t += [0, 5, 30, 90, 119, 120, 121, 200, 900][rng.below(9) as usize];
                let user = ["alice", "bob"][rng.below(2) as usize];
                let (name, request) = match rng.below(6) {
                    0 => ("Mystery", json!({})),
                    1 => (
                        "CreateTags",
                        json!({"resourcesSet": {"items": [{"resourceId": "i-1"}, {"resourceId": "i-2"}]}}),
                    ),
                    r => ("ModifyInstanceAttribute", json!({"instanceId": format!("i-{}", r % 3)})),
                };
                driftback_events::normalize(&json!({
                    "eventID": format!("e{i:03}"), "eventTime": (base + chrono::Duration::seconds(t)).to_rfc3339(),
                    "eventSource": "ec2.amazonaws.com", "eventName": name,
                    "userIdentity": {"type": "IAMUser", "arn": format!("arn:aws:iam::1:user/{user}"), "userName": user},
                    "requestParameters": request
                }))
                .unwrap()
            })
            .collect()
    }

    /// Splits `events` into intakes of 1 to 6 events each.
    fn intakes<'a>(rng: &mut Lcg, events: &[&'a ApiEvent]) -> Vec<Vec<&'a ApiEvent>> {
        let mut out = Vec::new();
        let mut rest = events;
        while !rest.is_empty() {
            let n = (1 + rng.below(6) as usize).min(rest.len());
            let (intake, tail) = rest.split_at(n);
            let mut intake = intake.to_vec();
            intake.reverse();
            out.push(intake);
            rest = tail;
        }
        out
    }

    #[test]
    fn the_planner_plans_as_the_algorithm_it_replaced_whatever_the_order_of_delivery() {
        let mut rng = Lcg(13);
        for round in 0..300 {
            let events = random_events(&mut rng, 1 + round % 30);
            // Late deliveries: events shuffled across intakes, and some delivered again.
            let mut order: Vec<&ApiEvent> = events.iter().collect();
            for i in (1..order.len()).rev() {
                if rng.below(3) == 0 {
                    order.swap(i, rng.below(i as u64 + 1) as usize);
                }
            }
            for _ in 0..rng.below(4) {
                order.push(&events[rng.below(events.len() as u64) as usize]);
            }
            let w = [
                QuietWindow { quiet_secs: 120, max_age_secs: 900 },
                QuietWindow { quiet_secs: 120, max_age_secs: 300 },
                QuietWindow { quiet_secs: 0, max_age_secs: 0 },
            ][round % 3];
            let (mut ours, mut theirs) = (Vec::new(), Vec::new());
            for intake in intakes(&mut rng, &order) {
                let planned = plan_pending(ours.clone(), &intake, &w);
                assert_eq!(planned, reference_plan_pending(theirs.clone(), &intake, &w), "round {round}");
                merge(&mut ours, planned.clone());
                merge(&mut theirs, planned);
            }
        }
    }

    /// The change sets of the daemon's pending ones, as [`StoreLedger::claim_due`] builds them.
    fn claimed(pending: &[PendingChangeSet], events: &[ApiEvent]) -> Vec<ChangeSet> {
        pending
            .iter()
            .map(|p| {
                let mut events: Vec<ApiEvent> =
                    events.iter().filter(|e| p.event_ids.contains(&e.id)).cloned().collect();
                events.sort_by(time_order);
                ChangeSet {
                    id: p.id.clone(),
                    resource_id: ResourceKey::parse(&p.resource_key).resource_id().map(str::to_string),
                    actor: events[0].actor.clone(),
                    events,
                }
            })
            .collect()
    }

    #[test]
    fn the_daemon_groups_intakes_as_the_file_path_groups_them_all_at_once() {
        let mut rng = Lcg(7);
        // No maximum age within reach: the file path has none.
        let w = QuietWindow { quiet_secs: 120, max_age_secs: 86_400 };
        for round in 0..300 {
            let events = random_events(&mut rng, 1 + round % 40);
            let mut pending = Vec::new();
            // Delivered in time order, in intakes of a few events each (in any order within one).
            for intake in intakes(&mut rng, &events.iter().collect::<Vec<_>>()) {
                let planned = plan_pending(pending.clone(), &intake, &w);
                merge(&mut pending, planned);
            }
            let mut daemon = claimed(&pending, &events);
            daemon.sort_by(|a, b| a.first_time().cmp(&b.first_time()).then_with(|| a.id.cmp(&b.id)));
            let mut files = driftback_events::group(events.clone(), &GroupConfig { quiet_window_secs: w.quiet_secs });
            files.sort_by(|a, b| a.first_time().cmp(&b.first_time()).then_with(|| a.id.cmp(&b.id)));
            assert_eq!(daemon, files, "round {round}");
        }
    }
}
