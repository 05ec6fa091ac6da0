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

/// The other change sets of `batch` by the same actor session on another resource, whose events
/// come within `window` of this one's: the [`MAX_SIBLINGS`] nearest in time.
pub(crate) fn siblings<'a>(change_set: &ChangeSet, batch: &'a [ChangeSet], window: Duration) -> Vec<&'a ChangeSet> {
    let session = change_set.actor.session_key();
    let mut found: Vec<&ChangeSet> = batch
        .iter()
        .filter(|other| {
            other.id != change_set.id
                && other.resource_id.is_some()
                && other.resource_id != change_set.resource_id
                && other.first_time() <= change_set.last_time() + window
                && change_set.first_time() <= other.last_time() + window
                && other.actor.session_key() == session
        })
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
            event("4", "2025-06-01T12:00:00Z", "ana", "d"),
        ];
        let batch = group(events, &Default::default());
        assert_eq!(batch.len(), 4);
        let of = |i: usize| -> Vec<String> {
            siblings(&batch[i], &batch, Duration::seconds(120)).iter().map(|c| c.events[0].id.clone()).collect()
        };
        assert_eq!(of(0), ["2"], "bob's change set and ana's two hours later are not siblings");
        assert_eq!(of(1), ["1"]);
        assert!(of(2).is_empty());
        assert!(of(3).is_empty());
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
