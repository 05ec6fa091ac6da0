//! The normalised change signature: what kind of change a set of API calls is, without its values.
//!
//! A signature names the services and APIs called, the Terraform resource type when known, and the
//! request parameter paths with the shape of their values (`instanceType.value=string`,
//! `ipPermissions.items[].ipRanges.items[].cidrIp=cidr`), never the values themselves: two console
//! users raising two instances' types give the same signature, and no secret ends up in one.

use std::collections::BTreeSet;
use std::fmt;

use driftback_events::ApiEvent;
use serde_json::Value;

/// Request parameters deeper than this are summarised by their parent's path.
const MAX_DEPTH: usize = 8;

/// At most this many parameter paths per signature (CloudTrail requests can be large).
const MAX_PARAMETERS: usize = 200;

/// The normalised signature of one change (one or more API calls on one resource).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ChangeSignature {
    /// Short service names (`ec2`, `s3`).
    pub services: BTreeSet<String>,
    /// API names without version suffixes (`ModifyInstanceAttribute`).
    pub apis: BTreeSet<String>,
    /// Terraform resource type, when located (`aws_instance`).
    pub resource_type: Option<String>,
    /// `path=shape` of every request parameter.
    pub parameters: BTreeSet<String>,
}

impl ChangeSignature {
    /// The signature of a change made of `events`, on a resource of `resource_type` if known.
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a ApiEvent>, resource_type: Option<&str>) -> Self {
        let mut sig = ChangeSignature { resource_type: resource_type.map(str::to_owned), ..Default::default() };
        for e in events {
            sig.add_call(e.service(), &e.name, &e.request);
        }
        sig
    }

    /// Adds one API call: `service` (`ec2`), `api` (`ModifyInstanceAttribute`) and its request
    /// parameters.
    pub fn add_call(&mut self, service: &str, api: &str, request: &Value) {
        self.services.insert(service.to_owned());
        self.apis.insert(api.to_owned());
        let mut params = Vec::new();
        walk(request, String::new(), 0, &mut params);
        for p in params {
            if self.parameters.len() >= MAX_PARAMETERS {
                break;
            }
            self.parameters.insert(p);
        }
    }

    /// The canonical text form, one token per feature separated by spaces (`service:ec2
    /// api:ModifyInstanceAttribute type:aws_instance param:instanceType.value=string`): stable for
    /// equal signatures, the key of a knowledge entry, and what the embedders embed.
    pub fn text(&self) -> String {
        let mut tokens: Vec<String> = Vec::new();
        tokens.extend(self.services.iter().map(|s| format!("service:{}", clean(s))));
        tokens.extend(self.apis.iter().map(|a| format!("api:{}", clean(a))));
        if let Some(t) = &self.resource_type {
            tokens.push(format!("type:{}", clean(t)));
        }
        tokens.extend(self.parameters.iter().map(|p| format!("param:{}", clean(p))));
        tokens.join(" ")
    }
}

impl fmt::Display for ChangeSignature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

/// Whitespace would split a token; event data may hold any.
fn clean(s: &str) -> String {
    s.chars().map(|c| if c.is_whitespace() { '_' } else { c }).collect()
}

fn walk(v: &Value, path: String, depth: usize, out: &mut Vec<String>) {
    match v {
        Value::Object(map) if !map.is_empty() && depth < MAX_DEPTH => {
            for (k, child) in map {
                let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                walk(child, p, depth + 1, out);
            }
        }
        Value::Array(items) if !items.is_empty() && depth < MAX_DEPTH => {
            for item in items {
                walk(item, format!("{path}[]"), depth + 1, out);
            }
        }
        _ if path.is_empty() => {}
        _ => out.push(format!("{path}={}", shape(v))),
    }
}

/// The shape of a value: its kind, and for strings what they look like.
pub fn shape(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int",
        Value::Number(_) => "number",
        Value::Array(_) => "list",
        Value::Object(_) => "object",
        Value::String(s) => string_shape(s),
    }
}

fn string_shape(s: &str) -> &'static str {
    if s.is_empty() {
        "empty"
    } else if s == "HIDDEN_DUE_TO_SECURITY_REASONS" {
        "redacted"
    } else if s.starts_with("arn:") {
        "arn"
    } else if s == "true" || s == "false" {
        "bool"
    } else if s.parse::<i64>().is_ok() {
        "int"
    } else if s.parse::<f64>().is_ok() {
        "number"
    } else if is_cidr(s) {
        "cidr"
    } else if is_resource_id(s) {
        "id"
    } else {
        "string"
    }
}

fn is_cidr(s: &str) -> bool {
    let Some((addr, bits)) = s.split_once('/') else { return false };
    bits.parse::<u8>().is_ok() && addr.parse::<std::net::IpAddr>().is_ok()
}

/// `i-0abc123...`, `sg-12345678`, `vpc-...`: a short lowercase prefix, a dash, 8 to 17 hex digits.
fn is_resource_id(s: &str) -> bool {
    let Some((prefix, rest)) = s.split_once('-') else { return false };
    !prefix.is_empty()
        && prefix.len() <= 10
        && prefix.chars().all(|c| c.is_ascii_lowercase())
        && (8..=17).contains(&rest.len())
        && rest.chars().all(|c| c.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parameters_become_paths_with_shapes_and_no_values() {
        let mut sig = ChangeSignature::default();
        sig.add_call(
            "ec2",
            "AuthorizeSecurityGroupIngress",
            &json!({
                "groupId": "sg-0123456789abcdef0",
                "ipPermissions": {"items": [
                    {"ipProtocol": "tcp", "fromPort": 22, "toPort": 22,
                     "ipRanges": {"items": [{"cidrIp": "203.0.113.0/24"}, {"cidrIp": "10.0.0.0/8"}]}}
                ]},
                "dryRun": false,
                "description": "",
                "password": "HIDDEN_DUE_TO_SECURITY_REASONS",
                "roleArn": "arn:aws:iam::123456789012:role/x",
                "size": "100"
            }),
        );
        assert_eq!(
            sig.text(),
            "service:ec2 api:AuthorizeSecurityGroupIngress param:description=empty param:dryRun=bool \
             param:groupId=id param:ipPermissions.items[].fromPort=int \
             param:ipPermissions.items[].ipProtocol=string \
             param:ipPermissions.items[].ipRanges.items[].cidrIp=cidr param:ipPermissions.items[].toPort=int \
             param:password=redacted param:roleArn=arn param:size=int"
        );
        assert!(!sig.text().contains("203.0.113"));
    }

    #[test]
    fn the_same_kind_of_change_on_other_resources_has_the_same_signature() {
        let mut a = ChangeSignature { resource_type: Some("aws_instance".into()), ..Default::default() };
        a.add_call(
            "ec2",
            "ModifyInstanceAttribute",
            &json!({"instanceId": "i-0aaaaaaaaaaaaaaaa", "instanceType": {"value": "t3.large"}}),
        );
        let mut b = ChangeSignature { resource_type: Some("aws_instance".into()), ..Default::default() };
        b.add_call(
            "ec2",
            "ModifyInstanceAttribute",
            &json!({"instanceType": {"value": "m5.xlarge"}, "instanceId": "i-0bbbbbbbbbbbbbbbb"}),
        );
        assert_eq!(a.text(), b.text());
        // Call order does not matter; repeated calls count once.
        let mut c = ChangeSignature::default();
        c.add_call("ec2", "CreateTags", &json!({"resourcesSet": {"items": [{"resourceId": "i-0aaaaaaaaaaaaaaaa"}]}}));
        c.add_call("ec2", "ModifyInstanceAttribute", &json!({}));
        let mut d = ChangeSignature::default();
        d.add_call("ec2", "ModifyInstanceAttribute", &json!(null));
        d.add_call("ec2", "CreateTags", &json!({"resourcesSet": {"items": [{"resourceId": "i-0bbbbbbbbbbbbbbbb"}]}}));
        d.add_call("ec2", "ModifyInstanceAttribute", &json!({}));
        assert_eq!(c.text(), d.text());
    }

    #[test]
    fn whitespace_in_event_data_cannot_forge_tokens() {
        let mut sig = ChangeSignature::default();
        sig.add_call("s3", "PutBucketTagging", &json!({"weird key api:Evil": "x"}));
        assert!(sig.text().contains("param:weird_key_api:Evil=string"), "{}", sig.text());
        assert_eq!(sig.text().split(' ').filter(|t| t.starts_with("api:")).count(), 1);
    }

    #[test]
    fn deep_and_wide_requests_are_bounded() {
        let mut deep = json!("leaf");
        for _ in 0..50 {
            deep = json!({ "a": deep });
        }
        let mut sig = ChangeSignature::default();
        sig.add_call("x", "Deep", &deep);
        assert_eq!(sig.parameters.len(), 1);
        assert!(sig.text().ends_with("=object"));
        let wide: serde_json::Map<String, Value> = (0..1000).map(|i| (format!("k{i}"), json!(i))).collect();
        sig.add_call("x", "Wide", &Value::Object(wide));
        assert_eq!(sig.parameters.len(), MAX_PARAMETERS);
    }
}
