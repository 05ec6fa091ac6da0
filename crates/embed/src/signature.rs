//! The change signature: what kind of change a set of API calls is, without its values. It is the
//! one description of a change the knowledge base knows: the agent files and searches knowledge and
//! learned recipes by it, `driftback kb` searches, shows and re-embeds by it.
//!
//! A signature names the calls (`ec2:ModifyInstanceAttribute`), the Terraform resource type when
//! known, and the request parameter paths with the shape of their values
//! (`instanceType.value=string`, `ipPermissions.items[].ipRanges.items[].cidrIp=cidr`), never the
//! values themselves: two console users raising two instances' types give the same signature, and no
//! secret ends up in one. Transport keys (client tokens, hosts, `x-amz-*`) are left out.
//!
//! [`ChangeSignature::of`] builds one; [`ChangeSignature::text`] renders its canonical text, which is
//! both the key a knowledge entry is stored under and exactly what is embedded.
//! [`ChangeSignature::from_stored`] reads a stored key back, in the canonical form or in the JSON
//! form the agent stored before the two signature types were unified.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use driftback_events::{ChangeSet, is_transport_key};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// Request parameters deeper than this are summarised by their parent's path.
const MAX_DEPTH: usize = 8;

/// At most this many parameter paths per signature (CloudTrail requests can be large).
const MAX_PARAMETERS: usize = 200;

/// The signature of one change (one or more API calls on one resource).
///
/// Serialised (serde) as its canonical text; read from the canonical text or from the legacy JSON
/// object (`{"calls": [...], "resource_type": ..., "parameters": [...]}`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ChangeSignature {
    /// `service:Api` of every call (`ec2:ModifyInstanceAttribute`), API version suffixes already
    /// stripped by normalisation.
    pub calls: BTreeSet<String>,
    /// Terraform resource type, when located (`aws_instance`).
    pub resource_type: Option<String>,
    /// `path=shape` of every request parameter (`instanceType.value=string`); list items are
    /// written `[]`. A signature read from the legacy form has paths without `=shape`.
    pub parameters: BTreeSet<String>,
}

/// A stored signature that is neither canonical text nor the legacy JSON form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a change signature ({reason}): {text:?}")]
pub struct SignatureError {
    /// What was read (cut to 200 characters).
    pub text: String,
    /// What is wrong with it.
    pub reason: String,
}

impl SignatureError {
    fn new(text: &str, reason: impl Into<String>) -> Self {
        SignatureError { text: text.chars().take(200).collect(), reason: reason.into() }
    }
}

impl ChangeSignature {
    /// The signature of `change_set`, on a resource of `resource_type` if known. The only way a
    /// signature is built from events.
    pub fn of(change_set: &ChangeSet, resource_type: Option<&str>) -> Self {
        let mut sig = ChangeSignature { resource_type: resource_type.map(clean), ..Default::default() };
        for e in &change_set.events {
            sig.add_call(e.service(), &e.name, &e.request);
        }
        sig
    }

    /// Adds one API call: `service` (`ec2`), `api` (`ModifyInstanceAttribute`) and its request
    /// parameters.
    fn add_call(&mut self, service: &str, api: &str, request: &Value) {
        self.calls.insert(format!("{}:{}", clean(service), clean(api)));
        let mut params = Vec::new();
        walk(request, String::new(), 0, &mut params);
        for p in params {
            if self.parameters.len() >= MAX_PARAMETERS {
                break;
            }
            self.parameters.insert(clean(&p));
        }
    }

    /// The services called (`ec2`), sorted.
    pub fn services(&self) -> BTreeSet<&str> {
        self.calls.iter().map(|c| c.split_once(':').map_or(c.as_str(), |(s, _)| s)).collect()
    }

    /// The APIs called (`ModifyInstanceAttribute`), sorted.
    pub fn apis(&self) -> BTreeSet<&str> {
        self.calls.iter().map(|c| c.split_once(':').map_or(c.as_str(), |(_, a)| a)).collect()
    }

    /// The canonical tokens, in order: `service:`, `api:`, `call:`, `type:`, `param:`. Services and
    /// APIs are repeated on their own so that free text like `api:PutBucketTagging` meets them,
    /// which also makes the calls weigh more than the parameters.
    pub fn tokens(&self) -> Vec<String> {
        let mut tokens: Vec<String> = Vec::new();
        tokens.extend(self.services().iter().map(|s| format!("service:{}", clean(s))));
        tokens.extend(self.apis().iter().map(|a| format!("api:{}", clean(a))));
        tokens.extend(self.calls.iter().map(|c| format!("call:{}", clean(c))));
        if let Some(t) = &self.resource_type {
            tokens.push(format!("type:{}", clean(t)));
        }
        tokens.extend(self.parameters.iter().map(|p| format!("param:{}", clean(p))));
        tokens
    }

    /// The canonical text: the [`tokens`](Self::tokens) separated by spaces (`service:ec2
    /// api:ModifyInstanceAttribute call:ec2:ModifyInstanceAttribute type:aws_instance
    /// param:instanceType.value=string`). Equal signatures have equal text; it is the key of a
    /// knowledge entry and exactly what the embedders embed.
    pub fn text(&self) -> String {
        self.tokens().join(" ")
    }

    /// Jaccard similarity of the two signatures' tokens, from 0 (nothing shared) to 1 (equal).
    pub fn similarity(&self, other: &ChangeSignature) -> f64 {
        let a: BTreeSet<String> = self.tokens().into_iter().collect();
        let b: BTreeSet<String> = other.tokens().into_iter().collect();
        let union = a.union(&b).count();
        if union == 0 { 0.0 } else { a.intersection(&b).count() as f64 / union as f64 }
    }

    /// Reads a signature as a knowledge entry stores it: the canonical [`text`](Self::text), or the
    /// legacy JSON form, whose list items `[*]` become `[]` and whose parameters have no shape.
    pub fn from_stored(stored: &str) -> Result<ChangeSignature, SignatureError> {
        if stored.trim_start().starts_with('{') {
            let legacy: LegacySignature = serde_json::from_str(stored)
                .map_err(|e| SignatureError::new(stored, format!("a JSON signature that does not read: {e}")))?;
            return Ok(legacy.into());
        }
        stored.parse()
    }
}

impl FromStr for ChangeSignature {
    type Err = SignatureError;

    /// Parses the canonical text. `service:` and `api:` tokens must agree with the `call:` tokens.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut sig = ChangeSignature::default();
        let (mut services, mut apis) = (BTreeSet::new(), BTreeSet::new());
        for token in text.split_whitespace() {
            let (kind, value) =
                token.split_once(':').ok_or_else(|| SignatureError::new(text, format!("{token:?} has no kind")))?;
            if value.is_empty() {
                return Err(SignatureError::new(text, format!("{token:?} is empty")));
            }
            match kind {
                "service" => {
                    services.insert(value);
                }
                "api" => {
                    apis.insert(value);
                }
                "call" if value.contains(':') => {
                    sig.calls.insert(value.to_owned());
                }
                "type" if sig.resource_type.is_none() => sig.resource_type = Some(value.to_owned()),
                "param" => {
                    sig.parameters.insert(value.to_owned());
                }
                _ => return Err(SignatureError::new(text, format!("unexpected token {token:?}"))),
            }
        }
        if sig.calls.is_empty() {
            return Err(SignatureError::new(text, "no call: token"));
        }
        if services != sig.services() || apis != sig.apis() {
            return Err(SignatureError::new(text, "its service: and api: tokens do not match its calls"));
        }
        Ok(sig)
    }
}

impl fmt::Display for ChangeSignature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

impl Serialize for ChangeSignature {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text())
    }
}

impl<'de> Deserialize<'de> for ChangeSignature {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Stored {
            Text(String),
            Legacy(LegacySignature),
        }
        match Stored::deserialize(deserializer)? {
            Stored::Text(text) => text.parse().map_err(serde::de::Error::custom),
            Stored::Legacy(legacy) => Ok(legacy.into()),
        }
    }
}

/// The form the agent stored signatures in before there was one signature type: calls, resource
/// type and parameter paths (lists as `[*]`), no value shapes.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LegacySignature {
    calls: Vec<String>,
    resource_type: Option<String>,
    parameters: Vec<String>,
}

impl From<LegacySignature> for ChangeSignature {
    fn from(legacy: LegacySignature) -> Self {
        ChangeSignature {
            calls: legacy.calls.iter().map(|c| clean(c)).collect(),
            resource_type: legacy.resource_type.as_deref().map(clean),
            parameters: legacy.parameters.iter().map(|p| clean(&p.replace("[*]", "[]"))).collect(),
        }
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
                if is_transport_key(k) {
                    continue;
                }
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
            "service:ec2 api:AuthorizeSecurityGroupIngress call:ec2:AuthorizeSecurityGroupIngress \
             param:description=empty param:dryRun=bool \
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
        let mut spaced = ChangeSignature { resource_type: Some("aws x".into()), ..Default::default() };
        spaced.add_call("my service", "Put Thing", &json!({"a b": 1}));
        assert_eq!(spaced.text().parse::<ChangeSignature>().unwrap().text(), spaced.text());
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

    fn instance_type_change() -> ChangeSignature {
        let mut sig = ChangeSignature { resource_type: Some("aws_instance".into()), ..Default::default() };
        sig.add_call(
            "ec2",
            "ModifyInstanceAttribute",
            &json!({"instanceId": "i-0aaaaaaaaaaaaaaaa", "instanceType": {"value": "t3.large"}, "clientToken": "abc",
                    "x-amz-user-agent": "aws-cli"}),
        );
        sig.add_call("ec2", "CreateTags", &json!({"resourcesSet": {"items": [{"resourceId": "i-0aaaaaaaaaaaaaaaa"}]}}));
        sig
    }

    #[test]
    fn transport_keys_are_left_out() {
        let sig = instance_type_change();
        assert!(!sig.text().contains("clientToken") && !sig.text().contains("x-amz"), "{}", sig.text());
        assert_eq!(sig.services(), BTreeSet::from(["ec2"]));
        assert_eq!(sig.apis(), BTreeSet::from(["CreateTags", "ModifyInstanceAttribute"]));
    }

    #[test]
    fn the_canonical_text_reads_back_to_the_same_signature() {
        let sig = instance_type_change();
        assert_eq!(sig.text().parse::<ChangeSignature>().unwrap(), sig);
        assert_eq!(ChangeSignature::from_stored(&sig.text()).unwrap(), sig);
        // Serde speaks the canonical text too.
        let json = serde_json::to_string(&sig).unwrap();
        assert_eq!(json, format!("{:?}", sig.text()));
        assert_eq!(serde_json::from_str::<ChangeSignature>(&json).unwrap(), sig);
    }

    #[test]
    fn text_that_is_not_a_signature_is_refused() {
        for bad in [
            "",
            "instance type",
            "service:ec2 api:RunInstances",
            "call:ec2:RunInstances",
            "service:ec2 api:RunInstances call:ec2:RunInstances type:a type:b",
            "service:s3 api:RunInstances call:ec2:RunInstances",
            "service:ec2 api:RunInstances call:ec2:RunInstances param:",
        ] {
            assert!(ChangeSignature::from_stored(bad).is_err(), "{bad:?} was read as a signature");
        }
        let err = ChangeSignature::from_stored("{\"calls\": 3}").unwrap_err().to_string();
        assert!(err.contains("JSON signature"), "{err}");
    }

    #[test]
    fn the_legacy_json_form_is_read_with_paths_and_no_shapes() {
        let legacy = r#"{"calls":["ec2:AuthorizeSecurityGroupIngress"],"resource_type":"aws_security_group",
            "parameters":["groupId","ipPermissions.items[*].ipRanges.items[*].cidrIp"]}"#;
        let sig = ChangeSignature::from_stored(legacy).unwrap();
        assert_eq!(
            sig.text(),
            "service:ec2 api:AuthorizeSecurityGroupIngress call:ec2:AuthorizeSecurityGroupIngress \
             type:aws_security_group param:groupId param:ipPermissions.items[].ipRanges.items[].cidrIp"
        );
        assert_eq!(serde_json::from_str::<ChangeSignature>(legacy).unwrap(), sig);
        assert_eq!(ChangeSignature::from_stored(&sig.text()).unwrap(), sig);
    }

    #[test]
    fn similarity_is_one_for_equal_signatures_and_falls_with_differences() {
        let a = instance_type_change();
        assert_eq!(a.similarity(&a), 1.0);
        let untyped = ChangeSignature { resource_type: None, ..a.clone() };
        let other = ChangeSignature { calls: BTreeSet::from(["s3:PutBucketTagging".to_owned()]), ..Default::default() };
        assert!(a.similarity(&untyped) < 1.0 && a.similarity(&untyped) > 0.8);
        assert_eq!(a.similarity(&other), 0.0);
    }
}
