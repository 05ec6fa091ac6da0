//! Events on the same resource by the same actor session, close together in time, become one change set.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::event::{Actor, ApiEvent};
use crate::resource::resource_ids;

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupConfig {
    /// Events further apart than this (by event time) start a new change set.
    pub quiet_window_secs: u64,
}

impl Default for GroupConfig {
    fn default() -> Self {
        Self { quiet_window_secs: 120 }
    }
}

/// Out-of-band events that belong together: one resource, one actor session, one burst of activity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangeSet {
    /// Stable across runs: derived from the resource and the first event.
    pub id: String,
    /// The cloud identifier of the resource (`i-0abc`, a bucket name, a queue URL), or `None` when the
    /// events name no resource we can recognise.
    pub resource_id: Option<String>,
    pub actor: Actor,
    /// Time-ordered.
    pub events: Vec<ApiEvent>,
}

impl ChangeSet {
    pub fn first_time(&self) -> DateTime<Utc> {
        self.events.first().map(|e| e.time).unwrap_or_default()
    }
    pub fn last_time(&self) -> DateTime<Utc> {
        self.events.last().map(|e| e.time).unwrap_or_default()
    }
}

/// Group events (already filtered) into change sets, ordered by their first event's time.
pub fn group(mut events: Vec<ApiEvent>, config: &GroupConfig) -> Vec<ChangeSet> {
    events.sort_by(|a, b| a.time.cmp(&b.time).then_with(|| a.id.cmp(&b.id)));
    let window = Duration::seconds(i64::try_from(config.quiet_window_secs).unwrap_or(i64::MAX / 1000));
    let mut sets: Vec<ChangeSet> = Vec::new();
    // (resource, session) -> index of the open change set in `sets`
    let mut open: std::collections::HashMap<(Option<String>, String), usize> = std::collections::HashMap::new();
    for event in events {
        let ids = resource_ids(&event);
        let targets: Vec<Option<String>> =
            if ids.is_empty() { vec![None] } else { ids.into_iter().map(Some).collect() };
        let session = event.actor.session_key();
        let last = targets.len() - 1;
        let mut event = Some(event);
        for (i, resource_id) in targets.into_iter().enumerate() {
            // The event itself goes to its last change set, copies to the others.
            let event = if i == last { event.take() } else { event.clone() }.expect("taken only at the last target");
            let key = (resource_id, session.clone());
            let joinable =
                key.0.is_some() && open.get(&key).is_some_and(|&i| event.time - sets[i].last_time() <= window);
            if joinable {
                sets[open[&key]].events.push(event);
            } else {
                sets.push(ChangeSet {
                    id: change_set_id(key.0.as_deref(), &event.id),
                    resource_id: key.0.clone(),
                    actor: event.actor.clone(),
                    events: vec![event],
                });
                open.insert(key, sets.len() - 1);
            }
        }
    }
    sets
}

fn change_set_id(resource: Option<&str>, first_event: &str) -> String {
    // FNV-1a: stable across platforms and releases, unlike std's hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in resource.unwrap_or("").bytes().chain([0]).chain(first_event.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("cs-{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::normalize::normalize;
    use serde_json::json;

    fn ev(id: &str, time: &str, user: &str, name: &str, request: serde_json::Value) -> ApiEvent {
        normalize(&json!({
            "eventID": id, "eventTime": time, "eventSource": "ec2.amazonaws.com", "eventName": name,
            "userIdentity": {"type": "IAMUser", "arn": format!("arn:aws:iam::1:user/{user}"), "userName": user},
            "requestParameters": request
        }))
        .unwrap()
    }

    fn shape(sets: &[ChangeSet]) -> Vec<(Option<&str>, Vec<&str>)> {
        sets.iter().map(|s| (s.resource_id.as_deref(), s.events.iter().map(|e| e.id.as_str()).collect())).collect()
    }

    #[test]
    fn grouping_by_resource_session_and_quiet_window() {
        let tags = |r: &str| json!({"resourcesSet": {"items": [{"resourceId": r}]}, "tagSet": {"items": []}});
        let events = vec![
            ev("3", "2024-03-01T10:01:00Z", "alice", "CreateTags", tags("i-1")),
            ev("1", "2024-03-01T10:00:00Z", "alice", "ModifyInstanceAttribute", json!({"instanceId": "i-1"})),
            ev("2", "2024-03-01T10:00:30Z", "bob", "ModifyInstanceAttribute", json!({"instanceId": "i-1"})),
            ev("4", "2024-03-01T10:30:00Z", "alice", "CreateTags", tags("i-1")),
            ev("5", "2024-03-01T10:30:05Z", "alice", "Mystery", json!({})),
        ];
        let sets = group(events, &GroupConfig::default());
        assert_eq!(
            shape(&sets),
            [(Some("i-1"), vec!["1", "3"]), (Some("i-1"), vec!["2"]), (Some("i-1"), vec!["4"]), (None, vec!["5"]),]
        );
        let again = group(sets.iter().flat_map(|s| s.events.clone()).collect(), &GroupConfig::default());
        assert_eq!(sets.iter().map(|s| &s.id).collect::<Vec<_>>(), again.iter().map(|s| &s.id).collect::<Vec<_>>());
    }

    #[test]
    fn one_event_on_two_resources_joins_both() {
        let request = json!({"resourcesSet": {"items": [{"resourceId": "i-1"}, {"resourceId": "i-2"}]}});
        let sets =
            group(vec![ev("1", "2024-03-01T10:00:00Z", "alice", "CreateTags", request)], &GroupConfig::default());
        assert_eq!(shape(&sets), [(Some("i-1"), vec!["1"]), (Some("i-2"), vec!["1"])]);
        assert_ne!(sets[0].id, sets[1].id);
    }
}
