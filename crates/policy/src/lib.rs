//! The decide stage: whether an out-of-band change is written into code, and why.
//!
//! Pure: a change set and its plan in, a [`Decision`] (and possibly rewritten operations) out.
//! These are the safe defaults that hold with no policy file: reconcile ordinary changes, escalate
//! changes that weaken security, and leave fields that well-known AWS services own to those services
//! (`lifecycle { ignore_changes }`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use driftback_events::{ApiEvent, CallVia, ChangeSet, IdentityType};
use driftback_recipes::Plan;
use driftback_terraform::{Op, Seg};

/// What happens to a change made outside Terraform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// Write the change into the code.
    Reconcile,
    /// Another actor owns the field: add it to the resource's `lifecycle { ignore_changes }`.
    IgnoreChanges,
    /// Do not codify: the next apply will revert it.
    Revert,
    /// A person decides.
    Escalate,
}

impl DecisionKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            DecisionKind::Reconcile => "reconcile",
            DecisionKind::IgnoreChanges => "ignore_changes",
            DecisionKind::Revert => "revert",
            DecisionKind::Escalate => "escalate",
        }
    }
}

/// A decision with the rule that made it and the reasons, for the audit log and the pull request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub kind: DecisionKind,
    pub rule: String,
    pub rationale: String,
}

/// Services whose changes to certain fields are theirs to make.
const SERVICE_OWNERS: &[(&str, &str, &[&str])] = &[
    ("autoscaling.amazonaws.com", "aws_autoscaling_group", &["desired_capacity"]),
    ("application-autoscaling.amazonaws.com", "aws_ecs_service", &["desired_count"]),
    ("application-autoscaling.amazonaws.com", "aws_dynamodb_table", &["read_capacity", "write_capacity"]),
    ("application-autoscaling.amazonaws.com", "aws_appautoscaling_target", &["min_capacity", "max_capacity"]),
];

/// Decide with the safe defaults. Returns the decision and, for `ignore_changes`, the rewritten plan.
pub fn decide(change_set: &ChangeSet, plan: &Plan) -> (Decision, Plan) {
    if let Some(reason) = change_set.events.iter().find_map(security_weakening) {
        let decision = Decision {
            kind: DecisionKind::Escalate,
            rule: "default: security-weakening changes need a person".into(),
            rationale: reason,
        };
        return (decision, Plan::default());
    }
    if let Some(service) = owning_service(change_set) {
        let mut owned = Vec::new();
        let mut rewritten = plan.clone();
        for change in &mut rewritten.changes {
            let fields: Vec<&str> = SERVICE_OWNERS
                .iter()
                .filter(|(s, t, _)| *s == service && *t == change.address.rtype)
                .flat_map(|(_, _, f)| f.iter().copied())
                .collect();
            let mut ops = Vec::new();
            for op in &change.ops {
                match op {
                    Op::Set { path, .. }
                        if path.0.len() == 1 && matches!(&path.0[0], Seg::Name(n) if fields.contains(&n.as_str())) =>
                    {
                        let attr = path.to_string();
                        owned.push(format!("{}.{attr}", change.address));
                        ops.push(Op::IgnoreChanges { attr });
                    }
                    other => ops.push(other.clone()),
                }
            }
            change.ops = ops;
        }
        if !owned.is_empty() {
            let decision = Decision {
                kind: DecisionKind::IgnoreChanges,
                rule: format!("default: {service} owns {}", owned.join(", ")),
                rationale: format!(
                    "{service} manages these fields at run time; codifying its values would fight it, so Terraform is told to ignore them"
                ),
            };
            return (decision, rewritten);
        }
    }
    let decision = Decision {
        kind: DecisionKind::Reconcile,
        rule: "default: reconcile ordinary changes".into(),
        rationale: format!(
            "{} changed the resource outside Terraform; the code is updated to match the cloud",
            describe_actor(change_set)
        ),
    };
    (decision, plan.clone())
}

fn describe_actor(change_set: &ChangeSet) -> String {
    format!("{} ({})", change_set.actor.display_name, change_set.actor.via.as_str())
}

/// The AWS service that made the change on its own behalf, if any.
fn owning_service(change_set: &ChangeSet) -> Option<&'static str> {
    let actor = &change_set.actor;
    let text = [actor.invoked_by.as_deref(), actor.principal_arn.as_deref(), actor.session_issuer.as_deref()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    let by_service = actor.identity_type == IdentityType::AwsService
        || actor.via == CallVia::AwsService
        || text.contains("AWSServiceRoleFor");
    if !by_service {
        return None;
    }
    if text.contains("application-autoscaling") || text.contains("AWSServiceRoleForApplicationAutoScaling") {
        Some("application-autoscaling.amazonaws.com")
    } else if text.contains("autoscaling.amazonaws.com") || text.contains("AWSServiceRoleForAutoScaling") {
        Some("autoscaling.amazonaws.com")
    } else {
        None
    }
}

const OPEN_CIDRS: &[&str] = &["0.0.0.0/0", "::/0"];

/// Why an event weakens security, if it does.
fn security_weakening(event: &ApiEvent) -> Option<String> {
    let r = &event.request;
    let name = event.name.as_str();
    let says = |what: &str| Some(format!("{} {what}", event.raw_name));
    match (event.service(), name) {
        ("ec2", "AuthorizeSecurityGroupIngress") | ("ec2", "ModifySecurityGroupRules") => {
            let cidrs = strings_under(r, &["cidrIp", "cidrIpv6", "CidrIpv4", "CidrIpv6", "cidrIpv4"]);
            cidrs
                .iter()
                .find(|c| OPEN_CIDRS.contains(&c.as_str()))
                .and_then(|c| says(&format!("opens ingress from {c} (the whole internet)")))
        }
        ("s3", "PutPublicAccessBlock") | ("s3", "PutAccountPublicAccessBlock") => {
            let flags =
                bools_under(r, &["BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy", "RestrictPublicBuckets"]);
            flags.contains(&false).then(|| format!("{} turns public access protection off", event.raw_name))
        }
        ("s3", "DeletePublicAccessBlock") => says("removes public access protection"),
        ("s3", "DeleteBucketEncryption") => says("turns default encryption off"),
        ("s3", "PutBucketAcl") => {
            let text = r.to_string();
            (text.contains("AllUsers") || text.contains("public-read"))
                .then(|| format!("{} makes the bucket public", event.raw_name))
        }
        ("s3", "PutBucketPolicy") => {
            let text = r.to_string().replace(' ', "");
            (text.contains("\\\"Principal\\\":\\\"*\\\"")
                || text.contains("\"Principal\":\"*\"")
                || text.contains("\\\"AWS\\\":\\\"*\\\""))
            .then(|| format!("{} grants access to everyone", event.raw_name))
        }
        ("s3", "DeleteBucketLogging") => says("turns access logging off"),
        ("s3", "PutBucketLogging") => {
            let text = r.to_string();
            (!text.contains("LoggingEnabled")).then(|| format!("{} turns access logging off", event.raw_name))
        }
        ("cloudtrail", "StopLogging") | ("cloudtrail", "DeleteTrail") => says("turns audit logging off"),
        ("ec2", "DeleteFlowLogs") => says("turns VPC flow logs off"),
        ("kms", "DisableKeyRotation") | ("kms", "ScheduleKeyDeletion") | ("kms", "DisableKey") => {
            says("weakens encryption keys")
        }
        ("iam", "PutRolePolicy")
        | ("iam", "PutUserPolicy")
        | ("iam", "PutGroupPolicy")
        | ("iam", "CreatePolicy")
        | ("iam", "CreatePolicyVersion") => {
            let doc = strings_under(r, &["policyDocument"]).join(" ");
            has_wildcard_action(&doc).then(|| format!("{} grants wildcard IAM permissions", event.raw_name))
        }
        ("iam", "AttachRolePolicy") | ("iam", "AttachUserPolicy") | ("iam", "AttachGroupPolicy") => {
            let arn = strings_under(r, &["policyArn"]).join(" ");
            (arn.ends_with("/AdministratorAccess") || arn.ends_with("/IAMFullAccess"))
                .then(|| format!("{} grants administrator access", event.raw_name))
        }
        ("rds", "ModifyDBInstance") | ("rds", "ModifyDBCluster") => {
            let public = bools_under(r, &["publiclyAccessible"]).contains(&true);
            let unencrypted = bools_under(r, &["storageEncrypted"]).contains(&false);
            (public || unencrypted).then(|| format!("{} makes the database public or unencrypted", event.raw_name))
        }
        _ => None,
    }
}

fn has_wildcard_action(doc: &str) -> bool {
    let Ok(value) = serde_json::from_str::<Value>(doc) else {
        let compact = doc.replace([' ', '\n'], "");
        return compact.contains("\"Action\":\"*\"") || compact.contains("\"Action\":[\"*\"");
    };
    let statements = match value.get("Statement") {
        Some(Value::Array(s)) => s.clone(),
        Some(s) => vec![s.clone()],
        None => vec![],
    };
    statements.iter().any(|s| {
        let allow = s.get("Effect").and_then(Value::as_str) != Some("Deny");
        let actions = match s.get("Action") {
            Some(Value::String(a)) => vec![a.clone()],
            Some(Value::Array(a)) => a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect(),
            _ => vec![],
        };
        allow && actions.iter().any(|a| a == "*" || a.ends_with(":*") && a.len() <= 2 || a == "*:*")
    })
}

fn strings_under(value: &Value, keys: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    walk(value, &mut |k, v| {
        if keys.contains(&k) {
            if let Some(s) = v.as_str() {
                out.push(s.to_string());
            }
        }
    });
    out
}

fn bools_under(value: &Value, keys: &[&str]) -> Vec<bool> {
    let mut out = Vec::new();
    walk(value, &mut |k, v| {
        if keys.contains(&k) {
            match v {
                Value::Bool(b) => out.push(*b),
                Value::String(s) if s.eq_ignore_ascii_case("true") || s.eq_ignore_ascii_case("false") => {
                    out.push(s.eq_ignore_ascii_case("true"))
                }
                _ => {}
            }
        }
    });
    out
}

fn walk(value: &Value, f: &mut dyn FnMut(&str, &Value)) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                f(k, v);
                walk(v, f);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| walk(v, f)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use driftback_events::{GroupConfig, group, normalize};
    use driftback_recipes::ResourceChange;
    use driftback_terraform::{Address, AttrPath, AttrValue};
    use serde_json::json;

    fn change_set(identity: Value, source: &str, name: &str, request: Value) -> ChangeSet {
        let event = normalize(&json!({
            "eventID": "e", "eventTime": "2024-03-01T10:00:00Z", "eventSource": source, "eventName": name,
            "userIdentity": identity, "userAgent": "aws-cli/2.15", "requestParameters": request
        }))
        .unwrap();
        group(vec![event], &GroupConfig::default()).remove(0)
    }

    fn plan_setting(rtype: &str, attr: &str, value: Value) -> Plan {
        Plan {
            changes: vec![ResourceChange {
                address: Address::resource(rtype, "x"),
                ops: vec![Op::Set { path: AttrPath::parse(attr).unwrap(), value: AttrValue::Literal(value) }],
                recipes: vec!["r".into()],
                created: false,
            }],
            notes: vec![],
        }
    }

    #[test]
    fn default_decisions() {
        let alice = json!({"type": "IAMUser", "arn": "arn:aws:iam::1:user/alice", "userName": "alice"});
        let asg_service = json!({"type": "AssumedRole", "arn": "arn:aws:sts::1:assumed-role/AWSServiceRoleForAutoScaling/AutoScaling",
                                 "invokedBy": "autoscaling.amazonaws.com"});
        let ingress = |cidr: &str| json!({"groupId": "sg-1", "ipPermissions": {"items": [{"ipProtocol": "tcp", "fromPort": 22, "toPort": 22, "ipRanges": {"items": [{"cidrIp": cidr}]}}]}});
        let plain = plan_setting("aws_instance", "instance_type", json!("t3.large"));
        let cases = [
            (
                alice.clone(),
                "ec2.amazonaws.com",
                "ModifyInstanceAttribute",
                json!({"instanceId": "i-1"}),
                plain.clone(),
                DecisionKind::Reconcile,
            ),
            (
                alice.clone(),
                "ec2.amazonaws.com",
                "AuthorizeSecurityGroupIngress",
                ingress("0.0.0.0/0"),
                plain.clone(),
                DecisionKind::Escalate,
            ),
            (
                alice.clone(),
                "ec2.amazonaws.com",
                "AuthorizeSecurityGroupIngress",
                ingress("10.0.0.0/8"),
                plain.clone(),
                DecisionKind::Reconcile,
            ),
            (
                alice.clone(),
                "s3.amazonaws.com",
                "PutPublicAccessBlock",
                json!({"PublicAccessBlockConfiguration": {"BlockPublicAcls": false}}),
                plain.clone(),
                DecisionKind::Escalate,
            ),
            (
                alice.clone(),
                "iam.amazonaws.com",
                "PutRolePolicy",
                json!({"policyDocument": "{\"Statement\":[{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"*\"}]}"}),
                plain.clone(),
                DecisionKind::Escalate,
            ),
            (
                alice.clone(),
                "iam.amazonaws.com",
                "PutRolePolicy",
                json!({"policyDocument": "{\"Statement\":[{\"Effect\":\"Allow\",\"Action\":\"s3:GetObject\",\"Resource\":\"*\"}]}"}),
                plain.clone(),
                DecisionKind::Reconcile,
            ),
            (
                asg_service.clone(),
                "autoscaling.amazonaws.com",
                "UpdateAutoScalingGroup",
                json!({"autoScalingGroupName": "web"}),
                plan_setting("aws_autoscaling_group", "desired_capacity", json!(4)),
                DecisionKind::IgnoreChanges,
            ),
            (
                asg_service,
                "autoscaling.amazonaws.com",
                "UpdateAutoScalingGroup",
                json!({"autoScalingGroupName": "web"}),
                plan_setting("aws_autoscaling_group", "max_size", json!(9)),
                DecisionKind::Reconcile,
            ),
        ];
        for (identity, source, name, request, plan, want) in cases {
            let (decision, out) = decide(&change_set(identity, source, name, request.clone()), &plan);
            assert_eq!(decision.kind, want, "{name} {request}");
            if want == DecisionKind::IgnoreChanges {
                assert_eq!(out.changes[0].ops, [Op::IgnoreChanges { attr: "desired_capacity".into() }]);
            }
            if want == DecisionKind::Escalate {
                assert!(out.is_empty());
            }
        }
    }
}
