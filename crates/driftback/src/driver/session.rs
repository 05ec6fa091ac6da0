//! Change sets of one actor session on other resources: a console user enabling a setting on each
//! instance of a cluster in turn makes one change set per instance, yet the code may hold the
//! setting once for all of them (a module input both instances read). Each sibling the recipes plan
//! and the policy would write counts as `alongside` the change set's own plan, so an edit of the
//! shared origin that makes exactly the siblings' changes too is not a leak.
//!
//! The siblings are found by one rule wherever the change sets come from: a batch a command
//! groups from a file ([`siblings`]), or the daemon's queue in the store ([`from_store`]), read
//! around the change set until the run of work it belongs to is whole.

use chrono::{DateTime, Duration, Utc};

use driftback_events::{ChangeSet, ResourceKey};
use driftback_store::{PendingChangeSet, Store};
use driftback_terraform::Address;

/// The most siblings a change set is planned with: a script that touches hundreds of resources in
/// a minute makes hundreds of siblings, each planned for every change set; the nearest in time are
/// the ones a shared edit is likely to need.
pub(crate) const MAX_SIBLINGS: usize = 16;

/// The most queued change sets of one session the daemon reads to find a change set's run of
/// work. A run longer than this is read in part: its siblings are then the nearest in time
/// among those read.
const MAX_SESSION_ROWS: usize = 5000;

/// What the sibling rule reads of a change set: who, on what, when.
pub(crate) trait Member {
    fn id(&self) -> &str;
    fn session_key(&self) -> String;
    fn resource_id(&self) -> Option<&str>;
    fn first_time(&self) -> DateTime<Utc>;
    fn last_time(&self) -> DateTime<Utc>;
}

impl Member for ChangeSet {
    fn id(&self) -> &str {
        &self.id
    }
    fn session_key(&self) -> String {
        self.actor.session_key()
    }
    fn resource_id(&self) -> Option<&str> {
        self.resource_id.as_deref()
    }
    fn first_time(&self) -> DateTime<Utc> {
        ChangeSet::first_time(self)
    }
    fn last_time(&self) -> DateTime<Utc> {
        ChangeSet::last_time(self)
    }
}

/// A change set of the daemon's queue, with the resource its key names (as the feed's claim
/// gives it to the driver).
struct Queued {
    row: PendingChangeSet,
    resource_id: Option<String>,
}

impl From<PendingChangeSet> for Queued {
    fn from(row: PendingChangeSet) -> Queued {
        let resource_id = ResourceKey::parse(&row.resource_key).resource_id().map(str::to_string);
        Queued { row, resource_id }
    }
}

impl Member for Queued {
    fn id(&self) -> &str {
        &self.row.id
    }
    fn session_key(&self) -> String {
        self.row.actor_session.clone()
    }
    fn resource_id(&self) -> Option<&str> {
        self.resource_id.as_deref()
    }
    fn first_time(&self) -> DateTime<Utc> {
        self.row.first_event_time
    }
    fn last_time(&self) -> DateTime<Utc> {
        self.row.last_event_time
    }
}

/// The change sets of `batch` in `change_set`'s run of work: those of its actor session chained
/// by gaps no longer than `window` (a person editing three log groups a minute apart is one run,
/// though the first and the last are further apart), `change_set` among them, by first time.
/// Empty when `change_set` is not in `batch`.
fn run<'a, M: Member>(change_set: &impl Member, batch: &'a [M], window: Duration) -> Vec<&'a M> {
    let session = change_set.session_key();
    let mut same: Vec<&M> = batch.iter().filter(|other| other.session_key() == session).collect();
    same.sort_by(|a, b| (a.first_time(), a.id()).cmp(&(b.first_time(), b.id())));
    // Runs: a change set starting more than `window` after every earlier one has ended starts a new one.
    let mut runs = Vec::with_capacity(same.len());
    let (mut run, mut reach) = (0usize, None);
    for c in &same {
        if reach.is_some_and(|r| c.first_time() > r + window) {
            run += 1;
        }
        reach = Some(reach.map_or(c.last_time(), |r: DateTime<Utc>| r.max(c.last_time())));
        runs.push(run);
    }
    let Some(mine) = same.iter().position(|c| c.id() == change_set.id()).map(|i| runs[i]) else { return Vec::new() };
    same.into_iter().zip(runs).filter(|(_, run)| *run == mine).map(|(c, _)| c).collect()
}

/// The other change sets of `batch` by the same actor session on another resource, in the same
/// run of work as this one ([`run`]). The [`MAX_SIBLINGS`] nearest in time, nearest first.
pub(crate) fn siblings<'a, M: Member>(change_set: &impl Member, batch: &'a [M], window: Duration) -> Vec<&'a M> {
    let mut found: Vec<&M> = run(change_set, batch, window)
        .into_iter()
        .filter(|other| {
            other.id() != change_set.id()
                && other.resource_id().is_some()
                && other.resource_id() != change_set.resource_id()
        })
        .collect();
    found.sort_by_key(|other| (other.first_time() - change_set.first_time()).num_milliseconds().abs());
    found.truncate(MAX_SIBLINGS);
    found
}

/// [`siblings`] among the change sets of the daemon's queue (pending, claimed or done), for
/// `change_set`, one of them: the session's change sets around it are read, wider until its run
/// of work lies inside what was read with a window to spare on each side (so no change set left
/// unread could join the run), and the siblings' events are read back as the feed's claim reads
/// them. A sibling whose events cannot all be read is left out, saying why in the log.
pub(crate) async fn from_store(
    store: &Store,
    change_set: &ChangeSet,
    window: Duration,
) -> anyhow::Result<Vec<ChangeSet>> {
    let session = change_set.actor.session_key();
    let (mut from, mut to) = (change_set.first_time() - window, change_set.last_time() + window);
    let read = loop {
        let read: Vec<Queued> = store
            .session_change_sets(&session, from, to, MAX_SESSION_ROWS)
            .await
            .map_err(|e| anyhow::Error::from(e).context("reading the session's change sets from the knowledge base"))?
            .into_iter()
            .map(|queued| Queued::from(queued.change_set))
            .collect();
        let members = run(change_set, &read, window);
        let (Some(first), Some(last)) =
            (members.iter().map(|m| m.first_time()).min(), members.iter().map(|m| m.last_time()).max())
        else {
            // Not in the queue (a change set driven again from its row): no siblings.
            return Ok(Vec::new());
        };
        if read.len() >= MAX_SESSION_ROWS || (first - window >= from && last + window <= to) {
            break read;
        }
        (from, to) = (from.min(first - window), to.max(last + window));
    };
    let chosen = siblings(change_set, &read, window);
    let ids: Vec<String> = chosen.iter().flat_map(|s| s.row.event_ids.iter().cloned()).collect();
    let events = super::person::read_events(store, &ids)
        .await
        .map_err(|e| e.context("reading the sibling change sets' events from the knowledge base"))?;
    let mut found = Vec::new();
    for sibling in chosen {
        match super::person::change_set_from(
            &sibling.row.id,
            sibling.resource_id.clone(),
            &sibling.row.event_ids,
            &events,
        ) {
            Ok(set) => found.push(set),
            Err(e) => tracing::warn!(
                change_set = %change_set.id,
                sibling = %sibling.row.id,
                error = %format!("{e:#}"),
                "a sibling change set is not planned alongside: its events cannot be read"
            ),
        }
    }
    Ok(found)
}

/// A sibling whose planned changes went alongside: its resources and its change set.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sibling {
    pub id: String,
    pub addresses: Vec<Address>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use driftback_events::{ApiEvent, group};

    fn event(id: &str, at: &str, actor: &str, queue: &str) -> ApiEvent {
        driftback_events::normalize(&record(id, at, actor, queue)).unwrap()
    }

    fn record(id: &str, at: &str, actor: &str, queue: &str) -> serde_json::Value {
        serde_json::json!({
            "eventVersion": "1.08", "eventID": id, "eventTime": at, "eventSource": "sqs.amazonaws.com",
            "eventName": "SetQueueAttributes", "awsRegion": "us-east-1", "recipientAccountId": "123456789012",
            "userIdentity": {"type": "AssumedRole", "arn": format!("arn:aws:sts::123456789012:assumed-role/Ops/{actor}")},
            "requestParameters": {"queueUrl": format!("https://sqs.us-east-1.amazonaws.com/123456789012/{queue}"),
                                  "attributes": {"VisibilityTimeout": "60"}}
        })
    }

    #[test]
    fn siblings_are_the_same_sessions_change_sets_on_other_resources_close_in_time() {
        let events = vec![
            event("1", "2025-06-01T10:00:00Z", "ana", "a"),
            event("2", "2025-06-01T10:01:00Z", "ana", "b"),
            event("3", "2025-06-01T10:01:30Z", "bob", "c"),
            event("4", "2025-06-01T10:02:50Z", "ana", "e"),
            event("5", "2025-06-01T12:00:00Z", "ana", "d"),
        ];
        let batch = group(events, &Default::default());
        assert_eq!(batch.len(), 5);
        let of = |i: usize| -> Vec<String> {
            siblings(&batch[i], &batch, Duration::seconds(120)).iter().map(|c| c.events[0].id.clone()).collect()
        };
        // ana's third edit is 170 s after her first, 110 s after her second: one run of work.
        assert_eq!(of(0), ["2", "4"], "bob's change set and ana's two hours later are not siblings");
        assert_eq!(of(1), ["1", "4"]);
        assert!(of(2).is_empty());
        assert_eq!(of(3), ["2", "1"]);
        assert!(of(4).is_empty());
        // A script's burst: only the nearest in time.
        let burst: Vec<ApiEvent> = (0..40)
            .map(|i| event(&format!("b{i}"), &format!("2025-06-01T10:00:{i:02}Z"), "script", &format!("q{i}")))
            .collect();
        let batch = group(burst, &Default::default());
        let near = siblings(&batch[20], &batch, Duration::seconds(120));
        assert_eq!(near.len(), MAX_SIBLINGS);
        let farthest = near.iter().map(|c| (c.first_time() - batch[20].first_time()).num_seconds().abs()).max();
        assert_eq!(farthest, Some(8));
    }

    /// The daemon's siblings are the batch's: its store is read wider until the run of work is
    /// whole, however far the run reaches from the change set.
    #[tokio::test]
    async fn the_stores_siblings_are_the_batchs() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_sqlite(&dir.path().join("kb.sqlite")).await.unwrap();
        // ana edits eight queues 100 s apart (one run, though 700 s long), again an hour later,
        // and one queue twice; bob in between.
        let mut records = Vec::new();
        for i in 0..8 {
            records.push(record(
                &format!("a{i}"),
                &format!("2025-06-01T10:{:02}:{:02}Z", i * 100 / 60, i * 100 % 60),
                "ana",
                &format!("q{i}"),
            ));
        }
        records.push(record("a8", "2025-06-01T10:03:30Z", "ana", "q3"));
        records.push(record("b0", "2025-06-01T10:02:00Z", "bob", "q9"));
        records.push(record("a9", "2025-06-01T11:10:00Z", "ana", "q1"));
        let events: Vec<ApiEvent> = records.iter().map(|r| driftback_events::normalize(r).unwrap()).collect();
        let stored: Vec<driftback_store::EventRecord> = records
            .iter()
            .zip(&events)
            .map(|(raw, e)| driftback_store::EventRecord {
                event_id: e.id.clone(),
                event_time: e.time,
                source: "sqs.amazonaws.com".into(),
                name: e.name.clone(),
                actor: e.actor.session_key(),
                disposition: driftback_store::Disposition::Kept,
                drop_reason: None,
                raw: raw.to_string(),
            })
            .collect();
        store.record_events(&stored).await.unwrap();
        let window = Duration::seconds(120);
        let batch = group(events, &Default::default());
        for set in &batch {
            let queued = PendingChangeSet {
                id: set.id.clone(),
                resource_key: set.resource_id.clone().unwrap(),
                actor_session: set.actor.session_key(),
                first_event_time: set.first_time(),
                last_event_time: set.last_time(),
                event_ids: set.events.iter().map(|e| e.id.clone()).collect(),
            };
            assert!(store.save_pending(&queued).await.unwrap());
        }
        let ids = |sets: Vec<&ChangeSet>| -> Vec<String> { sets.iter().map(|c| c.id.clone()).collect() };
        for set in &batch {
            let from_store = from_store(&store, set, window).await.unwrap();
            assert_eq!(ids(from_store.iter().collect()), ids(siblings(set, &batch, window)), "{}", set.id);
            for (read, given) in from_store.iter().zip(siblings(set, &batch, window)) {
                assert_eq!(format!("{read:?}"), format!("{given:?}"), "read back as grouped");
            }
        }
        let first = batch.iter().find(|c| c.events[0].id == "a0").unwrap();
        let last = batch.iter().find(|c| c.events[0].id == "a7").unwrap();
        assert!(ids(siblings(first, &batch, window)).contains(&last.id), "the run reaches 700 s on");
        store.close().await;
    }
}
