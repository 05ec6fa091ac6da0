//! JSON Patch operations read as request members: API Gateway's REST API `Update*` calls send
//! `{"op": "replace", "path": "/*/*/throttling/rateLimit", "value": "400"}` where other APIs send
//! `{"throttlingRateLimit": 400}`. See [`PatchRule`] for the form a recipe reads.

use serde_json::{Map, Value};

use driftback_events::ApiEvent;

use crate::catalog::{PatchRule, Recipe};
use crate::extract::{as_list, event_value};

/// The items the call's operations make under `rule`, or `None` when the call is not in the form
/// the rule reads (no operations, an operation other than `add`/`replace`, a path of another
/// length): then the recipe does not apply, and the call goes where calls no recipe maps go.
pub(crate) fn items(rule: &PatchRule, event: &ApiEvent) -> Option<Vec<Value>> {
    let operations = as_list(&event_value(event, &rule.from)?);
    if operations.is_empty() {
        return None;
    }
    let mut groups: Vec<(String, Map<String, Value>)> = Vec::new();
    for operation in &operations {
        let op = operation.get("op").and_then(Value::as_str)?;
        if !matches!(op, "add" | "replace") {
            return None;
        }
        let segments = pointer_segments(operation.get("path").and_then(Value::as_str)?)?;
        if !rule.depths.contains(&segments.len()) {
            return None;
        }
        let value = operation.get("value").cloned().unwrap_or(Value::Null);
        let (head, rest) = segments.split_at(rule.group);
        let name = head.join("/").trim_start_matches('/').to_string();
        let index = match groups.iter().position(|(n, _)| *n == name) {
            Some(i) => i,
            None => {
                let mut members = Map::new();
                if let Some(key_as) = &rule.key_as {
                    members.insert(key_as.clone(), Value::String(name.clone()));
                }
                groups.push((name, members));
                groups.len() - 1
            }
        };
        insert_nested(&mut groups[index].1, rest, value)?;
    }
    Some(groups.into_iter().map(|(_, members)| Value::Object(members)).collect())
}

/// The members an item sets that `recipe` reads nowhere (its item name aside): writing the rest
/// without them would lose them silently.
pub(crate) fn unread_members(recipe: &Recipe, item: &Value) -> Vec<String> {
    let mut read = recipe.read_paths();
    for map in recipe.map_merge.iter().chain(&recipe.map_replace) {
        read.extend(map.object.as_deref());
    }
    let mut leaves = Vec::new();
    leaf_paths(item, "", &mut leaves);
    leaves.into_iter().filter(|leaf| !read.iter().any(|r| leaf == r || leaf.starts_with(&format!("{r}.")))).collect()
}

/// A JSON Pointer's segments, unescaped (`~1` is `/`, `~0` is `~`); `None` for a path that is not
/// a pointer.
fn pointer_segments(path: &str) -> Option<Vec<String>> {
    let rest = path.strip_prefix('/')?;
    Some(rest.split('/').map(|s| s.replace("~1", "/").replace("~0", "~")).collect())
}

/// Put `value` at `path` in `members`, making the objects on the way; `None` when the path runs
/// into a value an earlier operation set (`/a` then `/a/b`).
fn insert_nested(members: &mut Map<String, Value>, path: &[String], value: Value) -> Option<()> {
    let (first, rest) = path.split_first()?;
    if rest.is_empty() {
        members.insert(first.clone(), value);
        return Some(());
    }
    let next = members.entry(first.clone()).or_insert_with(|| Value::Object(Map::new()));
    insert_nested(next.as_object_mut()?, rest, value)
}

fn leaf_paths(value: &Value, prefix: &str, out: &mut Vec<String>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (name, v) in map {
                let path = if prefix.is_empty() { name.clone() } else { format!("{prefix}.{name}") };
                leaf_paths(v, &path, out);
            }
        }
        _ => out.push(prefix.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(request: Value) -> ApiEvent {
        driftback_events::normalize(&json!({
            "eventVersion": "1.08", "eventID": "e", "eventTime": "2025-06-06T08:20:33Z",
            "eventSource": "apigateway.amazonaws.com", "eventName": "UpdateStage", "awsRegion": "us-east-1",
            "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/alice", "userName": "alice"},
            "requestParameters": request,
        }))
        .unwrap()
    }

    fn rule(toml_text: &str) -> PatchRule {
        toml::from_str(toml_text).unwrap()
    }

    #[test]
    fn operations_group_by_their_leading_segments() {
        let methods = rule(
            "from = 'updateStageInput.patchOperations|patchOperations'\ndepths = [4]\ngroup = 2\nkey_as = 'methodPath'",
        );
        let call = event(json!({"restApiId": "a1", "updateStageInput": {"patchOperations": [
            {"op": "replace", "path": "/*/*/throttling/rateLimit", "value": "400"},
            {"op": "replace", "path": "/~1pets/GET/logging/loglevel", "value": "ERROR"},
            {"op": "replace", "path": "/*/*/throttling/burstLimit", "value": "800"},
        ]}}));
        assert_eq!(
            items(&methods, &call).unwrap(),
            vec![
                json!({"methodPath": "*/*", "throttling": {"rateLimit": "400", "burstLimit": "800"}}),
                json!({"methodPath": "pets/GET", "logging": {"loglevel": "ERROR"}}),
            ]
        );
        // The same operations sent at the top of the request, as the API models name them.
        let top =
            event(json!({"patchOperations": [{"op": "replace", "path": "/*/*/metrics/enabled", "value": "true"}]}));
        assert_eq!(items(&methods, &top).unwrap(), vec![json!({"methodPath": "*/*", "metrics": {"enabled": "true"}})]);
    }

    #[test]
    fn another_form_of_the_call_is_not_read() {
        let stage = rule("from = 'patchOperations'\ndepths = [1, 2]");
        let ok = event(json!({"patchOperations": [
            {"op": "replace", "path": "/description", "value": "v2"},
            {"op": "replace", "path": "/accessLogSettings/format", "value": "$context.requestId"},
        ]}));
        assert_eq!(
            items(&stage, &ok).unwrap(),
            vec![json!({"description": "v2", "accessLogSettings": {"format": "$context.requestId"}})]
        );
        // A method setting beside a stage setting: neither recipe's form, so neither reads half.
        let mixed = event(json!({"patchOperations": [
            {"op": "replace", "path": "/description", "value": "v2"},
            {"op": "replace", "path": "/*/*/throttling/rateLimit", "value": "400"},
        ]}));
        assert_eq!(items(&stage, &mixed), None);
        // A removal says "back to the default", which no set rule writes.
        let removal = event(json!({"patchOperations": [{"op": "remove", "path": "/description"}]}));
        assert_eq!(items(&stage, &removal), None);
        assert_eq!(items(&stage, &event(json!({"patchOperations": []}))), None);
        assert_eq!(items(&stage, &event(json!({"patchOperations": [{"op": "replace", "path": "description"}]}))), None);
    }
}
