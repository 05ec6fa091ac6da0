//! Which cloud resources an event is about, by the identifiers in its parameters.
//!
//! Creations name the new resource in their response (`CreateSecurityGroup` -> `groupId`), other
//! calls in their request. The identifier keys below are the ones AWS services use; the first key
//! found (in this order) wins, and all its occurrences count (`CreateTags` on three resources).

use serde_json::Value;

use crate::event::ApiEvent;

/// Identifier parameter names, most specific first.
const ID_KEYS: &[&str] = &[
    "resourceId",
    "instanceId",
    "groupId",
    "bucketName",
    "queueUrl",
    "topicArn",
    "subscriptionArn",
    "functionName",
    "roleName",
    "tableName",
    "dBInstanceIdentifier",
    "dBClusterIdentifier",
    "autoScalingGroupName",
    "alarmName",
    "alarmNames",
    "volumeId",
    "subnetId",
    "vpcId",
    "routeTableId",
    "internetGatewayId",
    "natGatewayId",
    "networkInterfaceId",
    "allocationId",
    "launchTemplateId",
    "loadBalancerArn",
    "targetGroupArn",
    "loadBalancerName",
    "repositoryName",
    "clusterName",
    "keyId",
    "hostedZoneId",
    "secretId",
    "logGroupName",
    "ruleName",
    "stateMachineArn",
    "policyArn",
    "userName",
    "queueName",
    "name",
];

const MAX_DEPTH: usize = 4;
const _: () = assert!(ID_KEYS.len() <= 64, "keys_present keeps one bit per identifier key");

/// Whether a request parameter is one of the identifier keys AWS services name resources by
/// (`instanceId`, `groupId`, `queueUrl`, ...): it says which resource, not what it is set to.
pub fn is_identifier_key(key: &str) -> bool {
    ID_KEYS.contains(&key)
}

/// The identifiers of the resources an event changes, in order, without duplicates.
pub fn resource_ids(event: &ApiEvent) -> Vec<String> {
    let creation =
        ["Create", "Run", "Allocate", "Register", "Import", "Copy"].iter().any(|p| event.name.starts_with(p));
    let sources: &[&Value] = if creation { &[&event.response, &event.request] } else { &[&event.request] };
    for source in sources {
        // One walk finds which identifier keys occur at all; only those are searched, in order.
        let mut present = 0u64;
        keys_present(source, 0, &mut present);
        for (i, key) in ID_KEYS.iter().enumerate() {
            if present & (1 << i) == 0 {
                continue;
            }
            let mut found = Vec::new();
            // `name` alone names the resource only at the top of the request: deeper, it is the
            // name of a part (a container in a task definition, a tag, a setting).
            let depth = if *key == "name" { MAX_DEPTH } else { 0 };
            collect(source, key, depth, &mut found);
            if !found.is_empty() {
                let mut unique: Vec<String> = Vec::new();
                for id in found {
                    if !unique.contains(&id) {
                        unique.push(id);
                    }
                }
                return unique;
            }
        }
    }
    // A creation the keys above do not name (`RegisterTaskDefinition`): the ARN its response gives
    // for what it made (`taskDefinitionArn`, named after the call), else the one ARN it gives.
    if creation {
        let verb =
            ["Create", "Run", "Allocate", "Register", "Import", "Copy"].iter().find(|p| event.name.starts_with(**p));
        let noun = verb.map(|v| &event.name[v.len()..]).unwrap_or_default();
        let mut arns = Vec::new();
        arns_in(&event.response, 0, &mut arns);
        let named = arns.iter().find(|(k, _)| k.eq_ignore_ascii_case(&format!("{noun}Arn")));
        if let Some((_, arn)) = named {
            return vec![arn.clone()];
        }
        if let [(_, arn)] = arns.as_slice() {
            return vec![arn.clone()];
        }
    }
    Vec::new()
}

/// The `...Arn` members with an ARN value, at most two objects deep: (member, ARN).
fn arns_in(value: &Value, depth: usize, out: &mut Vec<(String, String)>) {
    let Value::Object(map) = value else { return };
    for (k, v) in map {
        match v.as_str() {
            Some(arn) if arn.starts_with("arn:") && (k.ends_with("Arn") || k.ends_with("ARN")) => {
                out.push((k.clone(), arn.to_string()))
            }
            _ if depth < 2 => arns_in(v, depth + 1, out),
            _ => {}
        }
    }
}

/// Marks (bit `i` for `ID_KEYS[i]`) the identifier keys of every object `collect` would look into.
fn keys_present(value: &Value, depth: usize, present: &mut u64) {
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if let Some(i) = ID_KEYS.iter().position(|key| key == k) {
                    *present |= 1 << i;
                }
                keys_present(v, depth + 1, present);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| keys_present(v, depth + 1, present)),
        _ => {}
    }
}

fn collect(value: &Value, key: &str, depth: usize, out: &mut Vec<String>) {
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => {
            if let Some(v) = map.get(key) {
                match v {
                    Value::String(s) if !s.is_empty() => out.push(s.clone()),
                    Value::Array(items) => {
                        out.extend(items.iter().filter_map(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string))
                    }
                    _ => {}
                }
                if !out.is_empty() {
                    return;
                }
            }
            for v in map.values() {
                collect(v, key, depth + 1, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect(v, key, depth + 1, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::normalize;
    use serde_json::json;

    fn ids(name: &str, request: Value, response: Value) -> Vec<String> {
        let r = json!({
            "eventID": "e", "eventTime": "2024-03-01T10:00:00Z", "eventSource": "x.amazonaws.com",
            "eventName": name, "userIdentity": {"type": "Root"},
            "requestParameters": request, "responseElements": response
        });
        resource_ids(&normalize(&r).unwrap())
    }

    #[test]
    fn identifiers_by_api_shape() {
        assert_eq!(
            ids(
                "ModifyInstanceAttribute",
                json!({"instanceId": "i-1", "instanceType": {"value": "t3.large"}}),
                json!({"_return": true})
            ),
            ["i-1"]
        );
        assert_eq!(
            ids(
                "CreateTags",
                json!({"resourcesSet": {"items": [{"resourceId": "i-1"}, {"resourceId": "sg-2"}, {"resourceId": "i-1"}]},
                                     "tagSet": {"items": [{"key": "a", "value": "b"}]}}),
                json!({"_return": true})
            ),
            ["i-1", "sg-2"]
        );
        assert_eq!(
            ids(
                "CreateSecurityGroup",
                json!({"groupName": "web", "vpcId": "vpc-1"}),
                json!({"_return": true, "groupId": "sg-9"})
            ),
            ["sg-9"]
        );
        assert_eq!(
            ids("CreateQueue", json!({"queueName": "jobs"}), json!({"queueUrl": "https://sqs/1/jobs"})),
            ["https://sqs/1/jobs"]
        );
        assert_eq!(ids("CreateBucket", json!({"bucketName": "b", "Host": "b.s3.amazonaws.com"}), Value::Null), ["b"]);
        assert_eq!(
            ids(
                "CreateRole",
                json!({"roleName": "r", "assumeRolePolicyDocument": "{}"}),
                json!({"role": {"roleName": "r", "arn": "arn:r"}})
            ),
            ["r"]
        );
        assert_eq!(ids("AttachRolePolicy", json!({"roleName": "r", "policyArn": "arn:p"}), Value::Null), ["r"]);
        assert_eq!(
            ids(
                "CreateTable",
                json!({"tableName": "t"}),
                json!({"tableDescription": {"tableName": "t", "tableArn": "arn:t"}})
            ),
            ["t"]
        );
        assert_eq!(
            ids(
                "TerminateInstances",
                json!({"instancesSet": {"items": [{"instanceId": "i-1"}, {"instanceId": "i-2"}]}}),
                Value::Null
            ),
            ["i-1", "i-2"]
        );
        assert_eq!(ids("DeleteAlarms", json!({"alarmNames": ["a", "b"]}), Value::Null), ["a", "b"]);
        assert!(ids("DoSomething", json!({"flag": true}), Value::Null).is_empty());
        // One task definition, whatever its containers are called.
        assert_eq!(
            ids(
                "RegisterTaskDefinition",
                json!({"family": "api", "containerDefinitions": [{"name": "app"}, {"name": "log-router"}]}),
                json!({"taskDefinition": {"taskDefinitionArn": "arn:aws:ecs:us-east-1:1:task-definition/api:8",
                       "executionRoleArn": "arn:aws:iam::1:role/exec"}})
            ),
            ["arn:aws:ecs:us-east-1:1:task-definition/api:8"]
        );
        // A top-level `name` still names the resource.
        assert_eq!(ids("UpdateSomething", json!({"name": "n", "settings": [{"name": "inner"}]}), Value::Null), ["n"]);
    }
}
