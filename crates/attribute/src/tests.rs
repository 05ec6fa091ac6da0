//! Attribution as tables: CloudTrail identities and parameters in, actor, intent and motivation out.

use serde_json::{Value, json};

use driftback_events::{ChangeSet, GroupConfig, group, normalize};

use crate::{ActorKind, Intent, Motivation, NamedActor, attribute};

fn change_set(identity: Value, user_agent: &str, source: &str, name: &str, request: Value) -> ChangeSet {
    let event = normalize(&json!({
        "eventID": "e1", "eventTime": "2024-03-01T10:00:00Z", "eventSource": source, "eventName": name,
        "userIdentity": identity, "userAgent": user_agent, "requestParameters": request,
        "sourceIPAddress": "203.0.113.7"
    }))
    .unwrap();
    group(vec![event], &GroupConfig::default()).remove(0)
}

fn role(role: &str, session: &str) -> Value {
    json!({"type": "AssumedRole", "arn": format!("arn:aws:sts::123456789012:assumed-role/{role}/{session}"),
           "sessionContext": {"sessionIssuer": {"type": "Role", "arn": format!("arn:aws:iam::123456789012:role/{role}"), "userName": role}}})
}

const CLI: &str = "aws-cli/2.15.30 md/command#ec2.modify-instance-attribute";
const CONSOLE: &str = "AWS Internal";
const BOTO: &str = "Boto3/1.34.69 md/Botocore#1.34.69";

#[test]
fn actors() {
    let sso = json!({"type": "AssumedRole", "arn": "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_AdministratorAccess_0123abcd/carol@example.com",
        "sessionContext": {"sessionIssuer": {"type": "Role", "arn": "arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/AWSReservedSSO_AdministratorAccess_0123abcd"}}});
    let asg = json!({"type": "AssumedRole", "arn": "arn:aws:sts::123456789012:assumed-role/AWSServiceRoleForAutoScaling/AutoScaling",
        "sessionContext": {"sessionIssuer": {"type": "Role", "arn": "arn:aws:iam::123456789012:role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling"}}});
    let mut with_source = role("ops", "bot-session");
    with_source["sessionContext"]["sourceIdentity"] = json!("erin");
    let cases: Vec<(Value, &str, ActorKind, &str, Option<&str>)> = vec![
        (
            json!({"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/alice", "userName": "alice"}),
            CLI,
            ActorKind::Person,
            "alice",
            None,
        ),
        (sso, CONSOLE, ActorKind::Person, "carol@example.com", Some("AdministratorAccess")),
        (
            asg,
            "autoscaling.amazonaws.com",
            ActorKind::AwsService,
            "autoscaling.amazonaws.com",
            Some("AWSServiceRoleForAutoScaling"),
        ),
        (
            json!({"type": "AWSService", "invokedBy": "application-autoscaling.amazonaws.com"}),
            "",
            ActorKind::AwsService,
            "application-autoscaling.amazonaws.com",
            None,
        ),
        (role("terraform-ci", "gha-run-8650277419"), BOTO, ActorKind::Pipeline, "terraform-ci", Some("terraform-ci")),
        (role("ops-bot", "ops-bot-runbook-5301"), BOTO, ActorKind::Automation, "ops-bot", Some("ops-bot")),
        (role("ai-ops-agent", "incident-4502"), BOTO, ActorKind::Agent, "ai-ops-agent", Some("ai-ops-agent")),
        (role("OpsAdmin", "dave"), CLI, ActorKind::Person, "dave", Some("OpsAdmin")),
        (role("OpsAdmin", "dave"), BOTO, ActorKind::Automation, "OpsAdmin", Some("OpsAdmin")),
        (
            role("order-processor-lambda", "order-processor"),
            BOTO,
            ActorKind::Automation,
            "order-processor-lambda",
            Some("order-processor-lambda"),
        ),
        (with_source, BOTO, ActorKind::Person, "erin", Some("ops")),
        (json!({"type": "Root", "arn": "arn:aws:iam::123456789012:root"}), CONSOLE, ActorKind::Person, "root", None),
    ];
    for (identity, ua, kind, id, role) in cases {
        let cs = change_set(
            identity.clone(),
            ua,
            "ec2.amazonaws.com",
            "ModifyInstanceAttribute",
            json!({"instanceId": "i-1"}),
        );
        let a = attribute(&cs, &[]);
        assert_eq!((a.actor.kind, a.actor.id.as_str(), a.actor.role.as_deref()), (kind, id, role), "{identity}");
        assert!(!a.actor.evidence.is_empty(), "{identity}");
    }
}

/// Application Auto Scaling acting for ECS and DynamoDB, as its records show it: through its
/// service-linked roles, with a principal that names the scaled service.
#[test]
fn services_answer_to_their_family_and_their_own_principals() {
    let linked = |role: &str, principal: &str, invoked_by: &str| {
        json!({"type": "AssumedRole",
               "arn": format!("arn:aws:sts::123456789012:assumed-role/{role}/ApplicationAutoScaling"),
               "sessionContext": {"sessionIssuer": {"type": "Role", "userName": role,
                   "arn": format!("arn:aws:iam::123456789012:role/aws-service-role/{principal}/{role}")}},
               "invokedBy": invoked_by})
    };
    let ecs = "ecs.application-autoscaling.amazonaws.com";
    let ddb = "dynamodb.application-autoscaling.amazonaws.com";
    let family = "application-autoscaling.amazonaws.com";
    for (identity, ua, specific) in [
        (linked("AWSServiceRoleForApplicationAutoScaling_ECSService", ecs, ecs), ecs, ecs),
        (linked("AWSServiceRoleForApplicationAutoScaling_DynamoDBTable", ddb, family), family, ddb),
        // No invokedBy: the service-linked role's path says which.
        (linked("AWSServiceRoleForApplicationAutoScaling_ECSService", ecs, ""), "", ecs),
        (json!({"type": "AWSService", "invokedBy": ecs}), ecs, ecs),
    ] {
        let cs = change_set(identity.clone(), ua, "ecs.amazonaws.com", "UpdateService", json!({"service": "api"}));
        let a = attribute(&cs, &[]);
        assert_eq!((a.actor.kind, a.actor.id.as_str()), (ActorKind::AwsService, family), "{identity}");
        assert!(a.actor.matches(family) && a.actor.matches(specific) && a.actor.matches("*.application-autoscaling.*"));
        assert!(!a.actor.matches("autoscaling.amazonaws.com"), "{:?}", a.actor.names);
    }
}

#[test]
fn named_actors_come_first_and_match_by_pattern() {
    let named = [NamedActor {
        name: "night-shift-scaler".into(),
        kind: ActorKind::Automation,
        principals: vec!["arn:aws:iam::*:role/OpsAdmin".into()],
    }];
    let cs = change_set(role("OpsAdmin", "dave"), CLI, "ec2.amazonaws.com", "ModifyInstanceAttribute", json!({}));
    let a = attribute(&cs, &named);
    assert_eq!((a.actor.kind, a.actor.id.as_str()), (ActorKind::Automation, "night-shift-scaler"));
    assert!(a.actor.matches("night-shift-scaler"));
    assert!(a.actor.matches("kind:automation"));
    assert!(a.actor.matches("arn:aws:sts::*:assumed-role/OpsAdmin/*"));
    assert!(!a.actor.matches("kind:person"));
}

#[test]
fn intents_and_motivations() {
    let alice = json!({"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/alice", "userName": "alice"});
    let tag = |k: &str, v: &str| json!({"resourcesSet": {"items": [{"resourceId": "i-1"}]}, "tagSet": {"items": [{"key": k, "value": v}]}});
    let cases: Vec<(Value, &str, &str, Value, Intent, Motivation)> = vec![
        (
            alice.clone(),
            "ec2.amazonaws.com",
            "ModifyInstanceAttribute",
            json!({"instanceId": "i-1", "instanceType": {"value": "t3.large"}}),
            Intent::Performance,
            Motivation::Unknown,
        ),
        (
            role("ai-ops-agent", "incident-4502"),
            "ec2.amazonaws.com",
            "ModifyInstanceAttribute",
            json!({"instanceId": "i-1", "instanceType": {"value": "t3.large"}}),
            Intent::Availability,
            Motivation::Incident,
        ),
        (
            role("OpsAdmin", "INC4502-dave"),
            "autoscaling.amazonaws.com",
            "UpdateAutoScalingGroup",
            json!({"autoScalingGroupName": "web", "desiredCapacity": 8}),
            Intent::Availability,
            Motivation::Incident,
        ),
        (
            role("ops-bot", "nightly-scale-down"),
            "autoscaling.amazonaws.com",
            "UpdateAutoScalingGroup",
            json!({"autoScalingGroupName": "web", "desiredCapacity": 2}),
            Intent::Availability,
            Motivation::Scheduled,
        ),
        (
            json!({"type": "AWSService", "invokedBy": "events.amazonaws.com"}),
            "lambda.amazonaws.com",
            "UpdateFunctionConfiguration20150331v2",
            json!({"functionName": "f", "memorySize": 512}),
            Intent::Performance,
            Motivation::Scheduled,
        ),
        (
            alice.clone(),
            "ec2.amazonaws.com",
            "CreateTags",
            tag("CostCenter", "cc-1"),
            Intent::Cost,
            Motivation::Unknown,
        ),
        (
            alice.clone(),
            "ec2.amazonaws.com",
            "CreateTags",
            tag("DataClassification", "restricted"),
            Intent::Compliance,
            Motivation::Unknown,
        ),
        (
            alice.clone(),
            "ec2.amazonaws.com",
            "CreateTags",
            tag("Experiment", "graviton-trial"),
            Intent::Unknown,
            Motivation::Experiment,
        ),
        (
            alice.clone(),
            "ec2.amazonaws.com",
            "AuthorizeSecurityGroupIngress",
            json!({"groupId": "sg-1"}),
            Intent::Security,
            Motivation::Unknown,
        ),
        (
            alice.clone(),
            "ec2.amazonaws.com",
            "RevokeSecurityGroupIngress",
            json!({"groupId": "sg-1", "ipPermissions": {"items": [{"ipRanges": {"items": [{"cidrIp": "0.0.0.0/0"}]}}]}}),
            Intent::Security,
            Motivation::Remediation,
        ),
        (
            role("ops-bot", "ops-bot-tag-enforcer"),
            "ec2.amazonaws.com",
            "CreateTags",
            tag("Owner", "team-a"),
            Intent::Unknown,
            Motivation::Remediation,
        ),
        (
            alice.clone(),
            "s3.amazonaws.com",
            "PutBucketVersioning",
            json!({"bucketName": "b"}),
            Intent::Compliance,
            Motivation::Unknown,
        ),
        (
            alice,
            "sqs.amazonaws.com",
            "SetQueueAttributes",
            json!({"queueUrl": "q", "attributes": {"VisibilityTimeout": "60"}}),
            Intent::Availability,
            Motivation::Unknown,
        ),
    ];
    for (identity, source, name, request, intent, motivation) in cases {
        let cs = change_set(identity, BOTO, source, name, request.clone());
        let a = attribute(&cs, &[]);
        assert_eq!((a.intent.value, a.motivation.value), (intent, motivation), "{name} {request}: {a:#?}");
        assert!(!a.intent.evidence.is_empty() && !a.motivation.evidence.is_empty());
    }
}
