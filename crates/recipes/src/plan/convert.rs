//! Values as the records hold them made into Terraform values, paths and block specs.

use serde_json::{Map, Value};

use driftback_events::ApiEvent;
use driftback_terraform::{AttrPath, AttrValue, BlockSpec, Seg};

use crate::catalog::Convert;
use crate::extract::{event_value, value_at};

pub(crate) fn convert(value: Value, convert: Option<Convert>) -> Value {
    match (convert, &value) {
        (Some(Convert::DnsText), Value::String(s)) => Value::String(dns_text(s)),
        (Some(Convert::DnsName), Value::String(s)) => Value::String(without_final_dot(s).to_string()),
        (Some(Convert::DnsText), Value::Array(items)) => Value::Array(
            items.iter().map(|v| v.as_str().map_or_else(|| v.clone(), |s| Value::String(dns_text(s)))).collect(),
        ),
        (Some(Convert::Number), Value::String(s)) => s
            .trim()
            .parse::<i64>()
            .map(Value::from)
            .or_else(|_| s.trim().parse::<f64>().map(Value::from))
            .unwrap_or(value),
        (Some(Convert::Bool), Value::String(s)) => match s.to_ascii_lowercase().as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => value,
        },
        (Some(Convert::String), Value::Number(n)) => Value::String(n.to_string()),
        // `[{"name": "InstanceId", "value": "i-1"}]` (CloudWatch dimensions) -> `{"InstanceId": "i-1"}`.
        (Some(Convert::NameValueMap), Value::Array(items)) => {
            // CloudTrail writes `name`/`value`, some SDK shapes `Name`/`Value`.
            let field = |item: &Value, lower: &str, upper: &str| item.get(lower).or_else(|| item.get(upper)).cloned();
            let pairs: Option<Map<String, Value>> = items
                .iter()
                .map(|i| Some((field(i, "name", "Name")?.as_str()?.to_string(), field(i, "value", "Value")?)))
                .collect();
            pairs.map(Value::Object).unwrap_or(value)
        }
        (Some(Convert::String), Value::Bool(b)) => Value::String(b.to_string()),
        // `[{"key": "Team", "value": "orders"}]` (tags of most create calls) -> `{"Team": "orders"}`.
        (Some(Convert::KeyValueMap), Value::Array(items)) => {
            let field = |item: &Value, lower: &str, upper: &str| item.get(lower).or_else(|| item.get(upper)).cloned();
            let pairs: Option<Map<String, Value>> = items
                .iter()
                .map(|i| Some((field(i, "key", "Key")?.as_str()?.to_string(), field(i, "value", "Value")?)))
                .collect();
            pairs.map(Value::Object).unwrap_or(value)
        }
        // A policy CloudTrail logs parsed (S3's `bucketPolicy`): the document as JSON text.
        (Some(Convert::Json), Value::Object(_) | Value::Array(_)) => Value::String(value.to_string()),
        // Whole numbers CloudTrail writes as floats (80.0) stay whole.
        (Some(Convert::Number), Value::Number(n)) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9e15 => Value::from(f as i64),
            _ => value,
        },
        _ => value,
    }
}

/// A DNS record value as Terraform writes it (see [`Convert::DnsText`]).
fn dns_text(value: &str) -> String {
    match value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        Some(inner) => inner.replace("\" \"", "\"\""),
        None => value.to_string(),
    }
}

/// A DNS name as Terraform writes it: without the final dot Route 53 logs.
pub(super) fn without_final_dot(name: &str) -> &str {
    name.strip_suffix('.').unwrap_or(name)
}

/// A scalar as text, for comparing values one call sends as a string and another as a number.
pub(super) fn text_of(value: &Value) -> String {
    value.as_str().map(str::to_string).unwrap_or_else(|| value.to_string())
}

pub(super) fn fill_template(template: &str, event: &ApiEvent) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let Some(end) = rest[start..].find('}') else { break };
        let key = &rest[start + 1..start + end];
        let (path, dns) = match key.strip_suffix(":dns") {
            Some(path) => (path, true),
            None => (key, false),
        };
        if let Some(v) = event_value(event, path) {
            let text = text_of(&v);
            match dns {
                true => out.push_str(&without_final_dot(&text).to_ascii_lowercase()),
                false => out.push_str(&text),
            }
        }
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    out
}

/// Attribute values of one item: `[*]` paths give lists, absent values are left out.
pub(super) fn item_attrs(item: &Value, attrs: &Map<String, Value>) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = attrs
        .iter()
        .filter_map(|(attr, from)| {
            // `a | b`: the first of several paths that has a value.
            let value = from.as_str()?.split('|').find_map(|from| value_at(item, from.trim()))?;
            Some((attr.clone(), value))
        })
        .collect();
    // "All traffic" rules have no ports in the request; Terraform wants 0.
    let all = out.iter().any(|(k, v)| (k == "protocol" || k == "ip_protocol") && v == "-1");
    if all {
        for port in ["from_port", "to_port"] {
            if attrs.contains_key(port) && !out.iter().any(|(k, _)| k == port) {
                out.push((port.to_string(), Value::from(0)));
            }
        }
    }
    out
}

/// A block from attribute paths: `path_pattern.values` is `values` in a nested `path_pattern`.
pub(super) fn nested_spec(attrs: impl IntoIterator<Item = (String, AttrValue)>) -> BlockSpec {
    let mut spec = BlockSpec::default();
    for (attr, value) in attrs {
        let names: Vec<String> = attr.split('.').map(str::to_string).collect();
        insert_at(&mut spec, &names, value);
    }
    spec
}

/// Put `value` at `names` in `spec`: the last name an attribute, the others nested blocks (made
/// once, reused by later paths).
pub(super) fn insert_at(spec: &mut BlockSpec, names: &[String], value: AttrValue) {
    match names {
        [] => {}
        [attr] => spec.attrs.push((attr.clone(), value)),
        [block, rest @ ..] => {
            let nested = match spec.blocks.iter().position(|(b, _)| b == block) {
                Some(i) => &mut spec.blocks[i].1,
                None => {
                    spec.blocks.push((block.clone(), BlockSpec::default()));
                    &mut spec.blocks.last_mut().expect("just pushed").1
                }
            };
            insert_at(nested, rest, value);
        }
    }
}

pub(super) fn with_key(path: &AttrPath, key: &str) -> AttrPath {
    let mut segs = path.0.clone();
    segs.push(Seg::Key(key.to_string()));
    AttrPath(segs)
}

pub(super) fn with_index(path: &AttrPath, index: usize) -> AttrPath {
    let mut segs = path.0.clone();
    segs.push(Seg::Index(index));
    AttrPath(segs)
}

pub(super) fn is_empty_json(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.is_empty(),
        Value::Object(members) => members.is_empty(),
        _ => false,
    }
}

/// Whether two lists hold the same values, in any order (a list the provider keeps as a set).
pub(super) fn same_members(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().all(|v| b.contains(v))
}

/// A `create` rule's event path and its conversion suffix: `tags:map`, `port:number`, `ttl:bool`,
/// `value:dns`, `name:dns_name`; a path without one converts nothing.
pub(super) fn path_and_conversion(from: &str) -> (&str, Option<Convert>) {
    match from.split_once(':') {
        Some((p, "number")) => (p, Some(Convert::Number)),
        Some((p, "bool")) => (p, Some(Convert::Bool)),
        Some((p, "map")) => (p, Some(Convert::KeyValueMap)),
        Some((p, "dns")) => (p, Some(Convert::DnsText)),
        Some((p, "dns_name")) => (p, Some(Convert::DnsName)),
        _ => (from, None),
    }
}
