//! What the recipe tests share: a change set of one call, as CloudTrail logs it.

use driftback_events::{ChangeSet, GroupConfig, group, normalize};
use serde_json::{Value, json};

/// The change set of one call by a person, with these request parameters.
pub fn change_set(source: &str, name: &str, request: Value) -> ChangeSet {
    let event = normalize(&json!({
        "eventID": "e1", "eventTime": "2024-03-01T10:00:00Z", "eventSource": source, "eventName": name,
        "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/alice", "userName": "alice"},
        "requestParameters": request
    }))
    .unwrap();
    group(vec![event], &GroupConfig::default()).remove(0)
}
