//! Change sets of one actor session on other resources: a console user enabling a setting on each
//! instance of a cluster in turn makes one change set per instance, yet the code may hold the
//! setting once for all of them (a module input both instances read). Each sibling the recipes plan
//! and the policy would write counts as `alongside` the change set's own plan, so an edit of the
//! shared origin that makes exactly the siblings' changes too is not a leak.

use chrono::Duration;

use driftback_events::ChangeSet;
use driftback_terraform::Address;

/// The most siblings a change set is planned with: a script that touches hundreds of resources in
/// a minute makes hundreds of siblings, each planned for every change set; the nearest in time are
/// the ones a shared edit is likely to need.
pub(crate) const MAX_SIBLINGS: usize = 16;

/// The other change sets of `batch` by the same actor session on another resource, in the same
/// run of work as this one: change sets chained by gaps no longer than `window` (a person editing
/// three log groups a minute apart is one run, though the first and the last are further apart).
/// The [`MAX_SIBLINGS`] nearest in time.
pub(crate) fn siblings<'a>(change_set: &ChangeSet, batch: &'a [ChangeSet], window: Duration) -> Vec<&'a ChangeSet> {
    let session = change_set.actor.session_key();
    let mut same: Vec<&ChangeSet> = batch.iter().filter(|other| other.actor.session_key() == session).collect();
    same.sort_by_key(|c| (c.first_time(), c.id.clone()));
    // Runs: a change set starting more than `window` after every earlier one has ended starts a new one.
    let mut runs = Vec::with_capacity(same.len());
    let (mut run, mut reach) = (0usize, None);
    for c in &same {
        if reach.is_some_and(|r| c.first_time() > r + window) {
            run += 1;
        }
        reach = Some(reach.map_or(c.last_time(), |r: chrono::DateTime<chrono::Utc>| r.max(c.last_time())));
        runs.push(run);
    }
    let Some(mine) = same.iter().position(|c| c.id == change_set.id).map(|i| runs[i]) else { return Vec::new() };
    let mut found: Vec<&ChangeSet> = same
        .iter()
        .zip(&runs)
        .filter(|(other, run)| {
            **run == mine
                && other.id != change_set.id
                && other.resource_id.is_some()
                && other.resource_id != change_set.resource_id
        })
        .map(|(other, _)| *other)
        .collect();
    found.sort_by_key(|other| (other.first_time() - change_set.first_time()).num_milliseconds().abs());
    found.truncate(MAX_SIBLINGS);
    found
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
        let record = serde_json::json!({
            "eventVersion": "1.08", "eventID": id, "eventTime": at, "eventSource": "sqs.amazonaws.com",
            "eventName": "SetQueueAttributes", "awsRegion": "us-east-1", "recipientAccountId": "123456789012",
            "userIdentity": {"type": "AssumedRole", "arn": format!("arn:aws:sts::123456789012:assumed-role/Ops/{actor}")},
            "requestParameters": {"queueUrl": format!("https://sqs.us-east-1.amazonaws.com/123456789012/{queue}"),
                                  "attributes": {"VisibilityTimeout": "60"}}
        });
        driftback_events::normalize(&record).unwrap()
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
}
