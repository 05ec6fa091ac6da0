//! Reading values out of an event by path: `instanceType.value`, `ipRanges.items[*].cidrIp`,
//! `response.groupId`.

use serde_json::Value;

use driftback_events::ApiEvent;

/// The value at `path` in the event (request unless the path starts with `response.`).
pub fn event_value(event: &ApiEvent, path: &str) -> Option<Value> {
    // `subnetId|networkInterfaceSet.items[0].subnetId`: the first of the forms a call may take.
    path.split('|').map(str::trim).find_map(|path| match path.strip_prefix("response.") {
        Some(rest) => value_at(&event.response, rest),
        None => value_at(&event.request, path),
    })
}

/// The value at a dotted path; `[*]` collects over a list (a lone object counts as a one-item list),
/// `[n]` picks one element. Missing, null and empty collections give `None`.
pub fn value_at(root: &Value, path: &str) -> Option<Value> {
    if path.is_empty() {
        return non_empty(root.clone());
    }
    let (head, rest) = split_first(path);
    let (name, index) = match head.find('[') {
        Some(i) => (&head[..i], Some(&head[i + 1..head.len() - 1])),
        None => (head, None),
    };
    let value = if name.is_empty() { root } else { root.get(name)? };
    match index {
        None => value_at(value, rest),
        Some("*") => {
            let items: Vec<Value> = as_list(value).iter().filter_map(|v| value_at(v, rest)).collect();
            non_empty(Value::Array(items))
        }
        Some(n) => {
            let n: usize = n.parse().ok()?;
            value_at(as_list(value).get(n)?, rest)
        }
    }
}

/// A list, or a lone object as a one-item list (as S3 writes `TagSet.Tag`).
pub fn as_list(value: &Value) -> Vec<Value> {
    match value {
        Value::Array(items) => items.clone(),
        Value::Null => Vec::new(),
        other => vec![other.clone()],
    }
}

fn split_first(path: &str) -> (&str, &str) {
    // Split at the first `.` that is not inside brackets.
    let mut depth = 0;
    for (i, c) in path.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            '.' if depth == 0 => return (&path[..i], &path[i + 1..]),
            _ => {}
        }
    }
    (path, "")
}

fn non_empty(value: Value) -> Option<Value> {
    match &value {
        Value::Null => None,
        Value::Array(a) if a.is_empty() => None,
        Value::Object(o) if o.is_empty() => None,
        _ => Some(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths() {
        let v = json!({
            "instanceType": {"value": "t3.large"},
            "ipPermissions": {"items": [{"fromPort": 22, "ipRanges": {"items": [{"cidrIp": "10.0.0.0/8"}, {"cidrIp": "10.1.0.0/16"}]}, "ipv6Ranges": {}}]},
            "Tagging": {"TagSet": {"Tag": {"Key": "a", "Value": "b"}}}
        });
        assert_eq!(value_at(&v, "instanceType.value"), Some(json!("t3.large")));
        assert_eq!(
            value_at(&v, "ipPermissions.items[0].ipRanges.items[*].cidrIp"),
            Some(json!(["10.0.0.0/8", "10.1.0.0/16"]))
        );
        assert_eq!(value_at(&v, "ipPermissions.items[0].ipv6Ranges.items[*].cidrIpv6"), None);
        assert_eq!(value_at(&v, "Tagging.TagSet.Tag[*].Key"), Some(json!(["a"])));
        assert_eq!(value_at(&v, "nope.x"), None);
    }
}
