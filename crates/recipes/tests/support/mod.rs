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

/// A managed resource of a fixture state with one instance of these attributes.
#[allow(dead_code)]
pub fn resource(rtype: &str, name: &str, attributes: Value) -> Value {
    json!({"mode": "managed", "type": rtype, "name": name,
           "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
           "instances": [{"schema_version": 0, "attributes": attributes}]})
}

/// A fixture state of these resources.
#[allow(dead_code)]
pub fn state_of(resources: Vec<Value>) -> driftback_terraform::State {
    let text = json!({"version": 4, "terraform_version": "1.9.5", "serial": 1, "lineage": "x", "outputs": {},
                      "resources": resources});
    driftback_terraform::State::parse(&text.to_string(), "terraform.tfstate").unwrap()
}

/// The operations of the plan's first change that change the code `before`: a value the call
/// re-sends as the code already has it is planned (it is still a change of the field) and writes
/// nothing.
#[allow(dead_code)]
pub fn changing_ops(plan: &driftback_recipes::Plan, before: &driftback_terraform::Repo) -> usize {
    let change = &plan.changes[0];
    let config = driftback_terraform::eval::effective_config(before, &change.address);
    change
        .ops
        .iter()
        .filter(|op| match op {
            driftback_terraform::Op::Set { path, value: driftback_terraform::AttrValue::Literal(v) } => config
                .as_ref()
                .and_then(|c| driftback_terraform::eval::value_at_path(c, path))
                .is_none_or(|have| !driftback_terraform::patch::values_equal(&have, v)),
            _ => true,
        })
        .count()
}
