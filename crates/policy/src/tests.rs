//! Decisions as tables: real CloudTrail-shaped events and real plans in, decisions out.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Value, json};

use driftback_attribute::attribute;
use driftback_events::{ChangeSet, GroupConfig, group, normalize};
use driftback_recipes::{Plan, ResourceChange};
use driftback_terraform::{Address, AttrPath, AttrValue, BlockSpec, Op, Repo};

use crate::*;

fn change_set_at(identity: &Value, ua: &str, source: &str, name: &str, request: Value, time: &str) -> ChangeSet {
    let event = normalize(&json!({
        "eventID": format!("e-{time}"), "eventTime": time, "eventSource": source, "eventName": name,
        "userIdentity": identity, "userAgent": ua, "requestParameters": request
    }))
    .unwrap();
    group(vec![event], &GroupConfig::default()).remove(0)
}

fn change_set(identity: &Value, source: &str, name: &str, request: Value) -> ChangeSet {
    change_set_at(identity, "aws-cli/2.15", source, name, request, "2024-03-01T10:00:00Z")
}

fn set(address: &str, attr: &str, value: Value) -> Plan {
    Plan {
        changes: vec![ResourceChange {
            address: Address::parse(address).unwrap(),
            ops: vec![Op::Set { path: AttrPath::parse(attr).unwrap(), value: AttrValue::Literal(value) }],
            recipes: vec!["r".into()],
            created: false,
        }],
        ..Plan::default()
    }
}

fn whole(address: &str, op: Op) -> Plan {
    Plan {
        changes: vec![ResourceChange {
            address: Address::parse(address).unwrap(),
            ops: vec![op],
            recipes: vec!["r".into()],
            created: false,
        }],
        ..Plan::default()
    }
}

fn decide_with(policy: &Policy, cs: &ChangeSet, plan: &Plan, repo: Option<&Repo>, history: &[LedgerEntry]) -> Decided {
    let attribution = attribute(cs, &policy.actors);
    policy.decide(&DecideInput {
        change_set: cs,
        attribution: &attribution,
        plan: Ok(plan),
        repo,
        history,
        state: None,
    })
}

fn alice() -> Value {
    json!({"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/alice", "userName": "alice"})
}

fn role(role: &str, session: &str) -> Value {
    json!({"type": "AssumedRole", "arn": format!("arn:aws:sts::123456789012:assumed-role/{role}/{session}"),
           "sessionContext": {"sessionIssuer": {"type": "Role", "arn": format!("arn:aws:iam::123456789012:role/{role}")}}})
}

fn asg_service() -> Value {
    json!({"type": "AssumedRole", "arn": "arn:aws:sts::123456789012:assumed-role/AWSServiceRoleForAutoScaling/AutoScaling",
           "invokedBy": "autoscaling.amazonaws.com"})
}

#[test]
fn safe_defaults_with_no_policy_file() {
    let ingress = |cidr: &str| json!({"groupId": "sg-1", "ipPermissions": {"items": [{"ipProtocol": "tcp", "fromPort": 22, "toPort": 22, "ipRanges": {"items": [{"cidrIp": cidr}]}}]}});
    let plain = set("aws_instance.x", "instance_type", json!("t3.large"));
    let wildcard = "{\"Statement\":[{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"*\"}]}";
    let narrow = "{\"Statement\":[{\"Effect\":\"Allow\",\"Action\":\"s3:GetObject\",\"Resource\":\"*\"}]}";
    let created = whole("aws_iam_role.new", Op::CreateResource { spec: BlockSpec::default(), import_id: "new".into() });
    #[rustfmt::skip]
    let cases: Vec<(Value, &str, &str, Value, Plan, DecisionKind, &str)> = vec![
        (alice(), "ec2.amazonaws.com", "ModifyInstanceAttribute", json!({"instanceId": "i-1"}), plain.clone(), DecisionKind::Reconcile, "default:reconcile"),
        (alice(), "ec2.amazonaws.com", "AuthorizeSecurityGroupIngress", ingress("0.0.0.0/0"), plain.clone(), DecisionKind::Escalate, "default:security-weakening"),
        (alice(), "ec2.amazonaws.com", "AuthorizeSecurityGroupIngress", ingress("10.0.0.0/8"), plain.clone(), DecisionKind::Reconcile, "default:reconcile"),
        (alice(), "s3.amazonaws.com", "PutBucketPublicAccessBlock", json!({"PublicAccessBlockConfiguration": {"BlockPublicAcls": false}}), plain.clone(), DecisionKind::Escalate, "default:security-weakening"),
        (alice(), "iam.amazonaws.com", "PutRolePolicy", json!({"policyDocument": wildcard}), plain.clone(), DecisionKind::Escalate, "default:security-weakening"),
        // A narrow policy granted to a role that already exists is still an IAM change for a person.
        (alice(), "iam.amazonaws.com", "PutRolePolicy", json!({"roleName": "app", "policyDocument": narrow}), plain.clone(), DecisionKind::Escalate, "default:immutable-iam"),
        (alice(), "iam.amazonaws.com", "AttachRolePolicy", json!({"roleName": "app", "policyArn": "arn:aws:iam::aws:policy/ReadOnlyAccess"}), plain.clone(), DecisionKind::Escalate, "default:immutable-iam"),
        (alice(), "iam.amazonaws.com", "AddUserToGroup", json!({"userName": "bob", "groupName": "admins"}), plain.clone(), DecisionKind::Escalate, "default:immutable-iam"),
        (asg_service(), "autoscaling.amazonaws.com", "UpdateAutoScalingGroup", json!({"autoScalingGroupName": "web"}), set("aws_autoscaling_group.x", "desired_capacity", json!(4)), DecisionKind::IgnoreChanges, "default:autoscaling-owns-desired-capacity"),
        (asg_service(), "autoscaling.amazonaws.com", "UpdateAutoScalingGroup", json!({"autoScalingGroupName": "web"}), set("aws_autoscaling_group.x", "max_size", json!(9)), DecisionKind::Reconcile, "default:reconcile"),
        // A person's change to a service-owned field is theirs to codify.
        (alice(), "autoscaling.amazonaws.com", "UpdateAutoScalingGroup", json!({"autoScalingGroupName": "web"}), set("aws_autoscaling_group.x", "desired_capacity", json!(4)), DecisionKind::Reconcile, "default:autoscaling-owns-desired-capacity"),
        // VPC layout, IAM and network boundaries are immutable; their tags and other settings are not.
        (alice(), "ec2.amazonaws.com", "AssociateVpcCidrBlock", json!({"vpcId": "vpc-1"}), set("aws_vpc.main", "cidr_block", json!("10.1.0.0/16")), DecisionKind::Escalate, "default:immutable-vpc-layout"),
        (alice(), "ec2.amazonaws.com", "ModifyVpcAttribute", json!({"vpcId": "vpc-1"}), set("aws_vpc.main", "enable_dns_hostnames", json!(false)), DecisionKind::Reconcile, "default:reconcile"),
        (alice(), "ec2.amazonaws.com", "CreateTags", json!({}), set("aws_vpc.main", "tags.Team", json!("net")), DecisionKind::Reconcile, "default:reconcile"),
        (alice(), "iam.amazonaws.com", "UpdateAssumeRolePolicy", json!({"roleName": "app"}), set("aws_iam_role.app", "assume_role_policy", json!("{}")), DecisionKind::Escalate, "default:immutable-iam"),
        (alice(), "iam.amazonaws.com", "TagRole", json!({"roleName": "app"}), set("aws_iam_role.app", "tags.Team", json!("a")), DecisionKind::Reconcile, "default:reconcile"),
        (alice(), "iam.amazonaws.com", "CreateRole", json!({"roleName": "new"}), created, DecisionKind::Reconcile, "default:reconcile"),
        (alice(), "ec2.amazonaws.com", "CreateRoute", json!({"routeTableId": "rtb-1"}), set("aws_route_table.public", "route", json!([])), DecisionKind::Escalate, "default:immutable-network-boundaries"),
        (alice(), "ec2.amazonaws.com", "DeleteSubnet", json!({"subnetId": "subnet-1"}), whole("aws_subnet.a", Op::RemoveResource), DecisionKind::Escalate, "default:immutable-network-deletion"),
    ];
    let policy = Policy::defaults();
    for (identity, source, name, request, plan, want, rule) in cases {
        let cs = change_set(&identity, source, name, request.clone());
        let out = decide_with(&policy, &cs, &plan, None, &[]);
        let d = &out.decision;
        assert_eq!((d.kind, d.rule.as_str()), (want, rule), "{name} {request}: {d:#?}");
        assert!(!d.rationale.is_empty() && !d.evidence.is_empty());
        match want {
            DecisionKind::IgnoreChanges => {
                assert_eq!(out.plan.changes[0].ops, [Op::IgnoreChanges { attr: "desired_capacity".into() }]);
                assert!(d.rationale.contains("lifecycle ignore_changes"), "{}", d.rationale);
            }
            // Nothing is written, but the edit accepting would make is kept for the person.
            DecisionKind::Escalate | DecisionKind::Revert => {
                assert!(out.plan.is_empty());
                assert_eq!(out.held, plan, "{name}: the held edit is the plan");
            }
            DecisionKind::Reconcile => {
                assert_eq!(out.plan, plan);
                assert!(out.held.is_empty());
            }
        }
    }
}

#[test]
fn a_new_iam_role_with_its_policies_is_codified_a_grant_to_an_existing_one_is_not() {
    let policy = Policy::defaults();
    let attach =
        |role: &str| json!({"roleName": role, "policyArn": "arn:aws:iam::aws:policy/AWSLambdaBasicExecutionRole"});
    let created = whole("aws_iam_role.new", Op::CreateResource { spec: BlockSpec::default(), import_id: "new".into() });
    let mut cs = change_set(&alice(), "iam.amazonaws.com", "CreateRole", json!({"roleName": "new"}));
    cs.events.extend(change_set(&alice(), "iam.amazonaws.com", "AttachRolePolicy", attach("new")).events);
    let d = decide_with(&policy, &cs, &created, None, &[]).decision;
    assert_eq!((d.kind, d.rule.as_str()), (DecisionKind::Reconcile, "default:reconcile"), "{d:#?}");

    // The same burst also granting something to another, existing role: a person decides.
    cs.events.extend(change_set(&alice(), "iam.amazonaws.com", "AttachRolePolicy", attach("prod-app")).events);
    let d = decide_with(&policy, &cs, &created, None, &[]).decision;
    assert_eq!((d.kind, d.rule.as_str()), (DecisionKind::Escalate, "default:immutable-iam"), "{d:#?}");
    assert!(d.rationale.contains("existing IAM role prod-app"), "{}", d.rationale);

    // Disabling the rule disables the check on the calls too.
    let relaxed = Policy::from_toml("[settings]\ndisable_defaults = [\"default:immutable-iam\"]\n", "p.toml").unwrap();
    let d = decide_with(&relaxed, &cs, &created, None, &[]).decision;
    assert_eq!(d.kind, DecisionKind::Reconcile, "{d:#?}");
}

const POLICY: &str = r#"
version = 1

[settings]
oscillation_window = "24h"

[[actor]]
name = "nightly-scaler"
kind = "automation"
principals = ["arn:aws:iam::*:role/capacity-scheduler"]

[[rule]]
name = "asg-size-bounds"
description = "fleets stay between 1 and 12 instances"
resource_type = "aws_autoscaling_group"
attribute = ["min_size", "max_size"]
min = 1
max = 12
  [[rule.example]]
  address = "aws_autoscaling_group.web"
  attribute = "max_size"
  value = 30
  expect = "escalate"
  [[rule.example]]
  address = "aws_autoscaling_group.web"
  attribute = "max_size"
  value = 6
  expect = "no_match"

[[rule]]
name = "instance-types"
resource_type = "aws_instance"
attribute = "instance_type"
allowed = ["t3.small", "t3.medium", "t3.large"]
decision = "revert"

[[rule]]
name = "scheduled-jobs-do-not-write-code"
description = "scheduled jobs change capacity for the night; Terraform keeps the daytime value"
motivation = "scheduled"
decision = "revert"
  [[rule.example]]
  address = "aws_autoscaling_group.web"
  attribute = "max_size"
  motivation = "scheduled"
  expect = "revert"

[[rule]]
name = "queue-tuning-belongs-to-ops-bot"
resource_type = "aws_sqs_queue"
attribute = "visibility_timeout_seconds"
owner = "ops-bot"
decision = "escalate"
  [[rule.example]]
  address = "aws_sqs_queue.orders"
  attribute = "visibility_timeout_seconds"
  actor = "ops-bot"
  actor_kind = "automation"
  expect = "ignore_changes"
  [[rule.example]]
  address = "aws_sqs_queue.orders"
  attribute = "visibility_timeout_seconds"
  actor = "alice"
  expect = "escalate"

[[rule]]
name = "partner-ingress-ok"
resource_type = "aws_security_group"
attribute = "ingress"
decision = "reconcile"
"#;

#[test]
fn policy_file_rules_and_strictest_wins() {
    let policy = Policy::from_toml(POLICY, "policy.toml").unwrap();
    assert_eq!(policy.file_rules, 5);
    assert_eq!(policy.oscillation_window_secs, 86_400);
    assert_eq!(policy.run_examples().iter().filter(|r| r.pass).count(), 5);
    let scheduler = role("capacity-scheduler", "run-1");
    let ops_bot = role("ops-bot", "ops-bot-queue-tuner");
    #[rustfmt::skip]
    let cases: Vec<(Value, Plan, DecisionKind, &str)> = vec![
        (alice(), set("aws_autoscaling_group.web", "max_size", json!(30)), DecisionKind::Escalate, "asg-size-bounds"),
        (alice(), set("aws_autoscaling_group.web", "max_size", json!(8)), DecisionKind::Reconcile, "default:reconcile"),
        (alice(), set("aws_instance.web", "instance_type", json!("m5.24xlarge")), DecisionKind::Revert, "instance-types"),
        (alice(), set("aws_instance.web", "instance_type", json!("t3.large")), DecisionKind::Reconcile, "default:reconcile"),
        // Named actor + session word: scheduled, reverted; but out of bounds is stricter still.
        (scheduler.clone(), set("aws_autoscaling_group.web", "max_size", json!(2)), DecisionKind::Revert, "scheduled-jobs-do-not-write-code"),
        (scheduler, set("aws_autoscaling_group.web", "min_size", json!(0)), DecisionKind::Escalate, "asg-size-bounds"),
        (ops_bot, set("aws_sqs_queue.orders", "visibility_timeout_seconds", json!(90)), DecisionKind::IgnoreChanges, "queue-tuning-belongs-to-ops-bot"),
        (alice(), set("aws_sqs_queue.orders", "visibility_timeout_seconds", json!(90)), DecisionKind::Escalate, "queue-tuning-belongs-to-ops-bot"),
    ];
    for (identity, plan, want, rule) in cases {
        let ua = "Boto3/1.34 md/Botocore#1.34";
        let mut cs =
            change_set_at(&identity, ua, "ec2.amazonaws.com", "ModifyThing", json!({}), "2024-03-01T10:00:00Z");
        if identity["arn"].as_str().is_some_and(|a| a.contains("capacity-scheduler")) {
            // The scheduler's sessions carry the word.
            cs.actor.session_name = Some("nightly-schedule".into());
        }
        let out = decide_with(&policy, &cs, &plan, None, &[]);
        let f = &out.decision.fields[0];
        assert_eq!((out.decision.kind, f.rule.as_str()), (want, rule), "{plan:?}: {:#?}", out.decision);
        if rule == "queue-tuning-belongs-to-ops-bot" {
            assert_eq!(f.owner, "ops-bot");
        }
    }
    // The security default still holds next to a file rule that would reconcile the field.
    let world =
        json!({"groupId": "sg-1", "ipPermissions": {"items": [{"ipRanges": {"items": [{"cidrIp": "0.0.0.0/0"}]}}]}});
    let cs = change_set(&alice(), "ec2.amazonaws.com", "AuthorizeSecurityGroupIngress", world);
    let out = decide_with(&policy, &cs, &set("aws_security_group.web", "ingress", json!([])), None, &[]);
    assert_eq!(out.decision.kind, DecisionKind::Escalate);
    assert_eq!(out.decision.rule, "default:security-weakening");
    assert!(out.decision.fields[0].matched.iter().any(|m| m.rule == "partner-ingress-ok"));
    // ... unless the file disables it by name.
    let relaxed = format!(
        "[settings]\ndisable_defaults = [\"default:security-weakening\"]\n{}",
        &POLICY[POLICY.find("[[actor]]").unwrap()..]
    );
    let relaxed = Policy::from_toml(&relaxed, "relaxed.toml").unwrap();
    let cs = change_set(
        &alice(),
        "ec2.amazonaws.com",
        "AuthorizeSecurityGroupIngress",
        json!({"groupId": "sg-1", "cidrIp": "0.0.0.0/0"}),
    );
    let out = decide_with(&relaxed, &cs, &set("aws_security_group.web", "ingress", json!([])), None, &[]);
    assert_eq!((out.decision.kind, out.decision.rule.as_str()), (DecisionKind::Reconcile, "partner-ingress-ok"));
}

#[test]
fn ignore_changes_in_a_module_the_repository_does_not_own_is_escalated() {
    let files: BTreeMap<PathBuf, String> = [(
        PathBuf::from("main.tf"),
        "module \"fleet\" {\n  source = \"terraform-aws-modules/autoscaling/aws\"\n}\n\nresource \"aws_autoscaling_group\" \"local\" {\n  desired_capacity = 2\n}\n".to_string(),
    )]
    .into();
    let repo = Repo::from_files(files);
    let policy = Policy::defaults();
    let cs = change_set(&asg_service(), "autoscaling.amazonaws.com", "UpdateAutoScalingGroup", json!({}));
    let remote = decide_with(
        &policy,
        &cs,
        &set("module.fleet.aws_autoscaling_group.this[0]", "desired_capacity", json!(5)),
        Some(&repo),
        &[],
    );
    assert_eq!(remote.decision.kind, DecisionKind::Escalate, "{:#?}", remote.decision);
    assert_eq!(remote.decision.rule, "default:ignore-changes-outside-repository");
    assert!(remote.decision.rationale.contains("module.fleet"), "{}", remote.decision.rationale);
    let local =
        decide_with(&policy, &cs, &set("aws_autoscaling_group.local", "desired_capacity", json!(5)), Some(&repo), &[]);
    assert_eq!(local.decision.kind, DecisionKind::IgnoreChanges);
}

#[test]
fn oscillation_is_escalated_and_reported_once() {
    let policy = Policy::defaults();
    let plan = |v: i64| set("aws_autoscaling_group.web", "max_size", json!(v));
    let bob_cron = role("ops-bot", "ops-bot-nightly");
    let steps: Vec<(Value, &str, i64, DecisionKind, Option<bool>)> = vec![
        (alice(), "2024-03-01T02:00:00Z", 10, DecisionKind::Reconcile, None),
        (bob_cron.clone(), "2024-03-01T09:00:00Z", 3, DecisionKind::Reconcile, None),
        (alice(), "2024-03-01T14:00:00Z", 10, DecisionKind::Escalate, Some(true)),
        (bob_cron, "2024-03-01T21:00:00Z", 3, DecisionKind::Escalate, Some(false)),
    ];
    let mut history: Vec<LedgerEntry> = Vec::new();
    for (identity, time, value, want, first_report) in steps {
        let cs = change_set_at(
            &identity,
            "aws-cli/2.15",
            "autoscaling.amazonaws.com",
            "UpdateAutoScalingGroup",
            json!({}),
            time,
        );
        let out = decide_with(&policy, &cs, &plan(value), None, &history);
        assert_eq!(out.decision.kind, want, "{time}: {:#?}", out.decision);
        assert_eq!(out.decision.oscillations.first().map(|o| o.first_report), first_report, "{time}");
        if let Some(o) = out.decision.oscillations.first() {
            assert_eq!(o.actors, ["alice", "ops-bot"]);
            assert_eq!(out.decision.rule, "default:oscillation");
            assert!(out.decision.rationale.contains("alice set 10"), "{}", out.decision.rationale);
        }
        assert_eq!(out.ledger.len(), 1);
        assert_eq!(out.ledger[0].decision, want);
        history.extend(out.ledger);
    }
}

#[test]
fn change_sets_that_cannot_be_planned_are_escalated_unless_a_rule_is_stricter() {
    let policy = Policy::from_toml(
        "[[rule]]\nname = \"no-experiments\"\nmotivation = \"experiment\"\ndecision = \"revert\"\n",
        "p.toml",
    )
    .unwrap();
    let decide = |identity: &Value| {
        let cs = change_set(identity, "ec2.amazonaws.com", "ModifyMystery", json!({}));
        let attribution = attribute(&cs, &[]);
        policy
            .decide(&DecideInput {
                change_set: &cs,
                attribution: &attribution,
                plan: Err("no recipe"),
                repo: None,
                history: &[],
                state: None,
            })
            .decision
    };
    let d = decide(&alice());
    assert_eq!(
        (d.kind, d.rule.as_str(), d.rationale.starts_with("no recipe")),
        (DecisionKind::Escalate, NO_PLAN, true)
    );
    let d = decide(&role("Admin", "graviton-experiment"));
    assert_eq!((d.kind, d.rule.as_str()), (DecisionKind::Revert, "no-experiments"));
}

#[test]
fn policy_file_errors_name_the_file_rule_and_field() {
    let rule = |body: &str| format!("[[rule]]\nname = \"r1\"\n{body}\n");
    #[rustfmt::skip]
    let cases: Vec<(String, &str)> = vec![
        ("[[rule]]\nname = \"r1\"\ndecison = \"revert\"\n".into(), "p.toml: rule \"r1\" (rule 1): `decison`: unknown field"),
        (rule(""), "`decision`: required"),
        (rule("decision = \"approve\""), "`decision`: unknown value \"approve\""),
        (rule("decision = \"revert\"\nintent = [\"speed\"]"), "`intent`: unknown value \"speed\"; expected one of: availability"),
        (rule("min = 3"), "`attribute`: required with min"),
        (rule("attribute = \"x\"\nmin = 3\nmax = 1"), "`min`: 3 is above max 1"),
        (rule("immutable = true\ndecision = \"reconcile\""), "`decision`: a change to an immutable field"),
        (rule("decision = \"revert\"\napi = \"AuthorizeSecurityGroupIngress\""), "`api`: \"AuthorizeSecurityGroupIngress\" is not `service:EventName`"),
        (format!("{}{}", rule("decision = \"revert\""), rule("decision = \"revert\"")), "rule \"r1\" (rule 2): `name`: another rule has the same name"),
        ("[[rule]]\nname = \"default:mine\"\ndecision = \"revert\"\n".into(), "reserved for the built-in rules"),
        ("[[rule]]\ndecision = \"revert\"\n".into(), "rule 1: `name`: required"),
        ("[settings]\ndisable_defaults = [\"default:nope\"]\n".into(), "[settings]: `disable_defaults`: no built-in rule \"default:nope\""),
        ("[settings]\noscillation_window = \"two days\"\n".into(), "`oscillation_window`: \"two days\" is not a duration"),
        ("[[actor]]\nname = \"bot\"\nkind = \"robot\"\nprincials = []\n".into(), "actor \"bot\": `princials`: unknown field"),
        ("version = 2\n".into(), "`version`: this driftback reads policy version 1"),
        ("[[rule]\nname = 1".into(), "p.toml: not valid TOML"),
        (rule("resource_type = \"aws_instance\"\nattribute = \"instance_type\"\ndecision = \"revert\"\n[[rule.example]]\naddress = \"aws_instance.web\"\nattribute = \"instance_type\"\nexpect = \"reconcile\""),
         "p.toml: rule \"r1\", example 1: expected reconcile, but the rule gives revert"),
        (rule("decision = \"revert\"\n[[rule.example]]\naddress = \"aws_instance.web\"\nexpect = \"revert\""), "example 1: `attribute`: required for an update"),
    ];
    for (text, want) in cases {
        let err = Policy::from_toml(&text, "p.toml").unwrap_err().to_string();
        assert!(err.contains(want), "{text}\n-> {err}\nwanted: {want}");
    }
}

/// Each security check fires on a call as CloudTrail logs it: its examples are real request shapes,
/// their names and members exist in the table of calls generated from the AWS API models (so a check
/// written with an API name CloudTrail never logs, like `PutPublicAccessBlock`, cannot pass
/// unnoticed), the weakening ones fire that very check and the ordinary ones fire none.
#[test]
fn security_table_checks_fire_on_their_examples_as_cloudtrail_logs_them() {
    let calls = driftback_recipes::Calls::builtin();
    let table = crate::SecurityTable::builtin();
    let mut ids = std::collections::BTreeSet::new();
    for check in &table.checks {
        assert!(ids.insert(&check.id), "duplicate check id {}", check.id);
        assert!(check.examples.iter().any(|e| e.weakens), "{}: no example that weakens", check.id);
        for event in &check.events {
            calls.check_event(&check.source, event).unwrap_or_else(|e| panic!("{}: {e}", check.id));
        }
        for example in &check.examples {
            let request: Value = serde_json::from_str(&example.request)
                .unwrap_or_else(|e| panic!("{}: example is not JSON: {e}", check.id));
            let event = example.event.as_ref().unwrap_or(&check.events[0]);
            assert!(check.events.contains(event), "{}: example of {event}, which the check does not name", check.id);
            let call = calls.check_event(&check.source, event).unwrap();
            for member in request.as_object().unwrap().keys() {
                assert!(call.has_member(member), "{}: {} {event} has no member {member}", check.id, check.source);
            }
            let cs = change_set(&alice(), &check.source, event, request.clone());
            let fired = table.check(&cs.events[0]).map(|c| c.id.as_str());
            if example.weakens {
                assert_eq!(fired, Some(check.id.as_str()), "{event} {request}");
            } else {
                assert_eq!(fired, None, "{}: {event} {request} is ordinary", check.id);
            }
        }
    }
    // The API's own name is not what CloudTrail logs, and no check is written for it.
    assert!(calls.check_event("s3.amazonaws.com", "PutPublicAccessBlock").is_err());
    // The reason names the call as logged.
    let cs = change_set(
        &alice(),
        "lambda.amazonaws.com",
        "AddPermission20150331v2",
        json!({"functionName": "f", "statementId": "s", "action": "lambda:InvokeFunction", "principal": "*"}),
    );
    assert_eq!(security_weakening(&cs.events[0]).unwrap(), "AddPermission20150331v2 lets anyone invoke the function");
    let nacl = change_set(
        &alice(),
        "ec2.amazonaws.com",
        "CreateNetworkAclEntry",
        json!({"networkAclId": "acl-1", "ruleNumber": 50, "egress": false, "ruleAction": "allow", "aclProtocol": "-1",
               "ipv6CidrBlock": "::/0"}),
    );
    assert_eq!(
        security_weakening(&nacl.events[0]).unwrap(),
        "CreateNetworkAclEntry allows all traffic from ::/0 (the whole internet)"
    );
    // CloudFront's dated event name is checked as UpdateDistribution, and the reason names the
    // security policy the distribution now allows.
    let cdn = change_set(
        &alice(),
        "cloudfront.amazonaws.com",
        "UpdateDistribution2020_05_31",
        json!({"id": "E2K7T4N8QX3B1Z", "ifMatch": "E1XZ7G9M4R2TQB", "distributionConfig": {
            "defaultCacheBehavior": {"targetOriginId": "s3-site", "viewerProtocolPolicy": "redirect-to-https"},
            "viewerCertificate": {"cloudFrontDefaultCertificate": false, "sSLSupportMethod": "sni-only",
                                  "minimumProtocolVersion": "TLSv1.1_2016"},
            "webACLId": "arn:aws:wafv2:us-east-1:123456789012:global/webacl/cdn/c4e81b2a"}}),
    );
    assert_eq!(
        security_weakening(&cdn.events[0]).unwrap(),
        "UpdateDistribution2020_05_31 lets viewers connect with TLSv1.1_2016, older than TLSv1.2_2021"
    );
}

/// The table covers what the security rules must know: public principals in resource policies,
/// encryption off, public accessibility, logging and audit off.
#[test]
fn security_table_covers_the_required_kinds_of_weakening() {
    let table = crate::SecurityTable::builtin();
    let fires = |source: &str, event: &str| {
        table.checks.iter().any(|c| c.source == source && c.events.iter().any(|e| e == event))
    };
    for (source, event) in [
        ("sqs.amazonaws.com", "SetQueueAttributes"),
        ("sns.amazonaws.com", "SetTopicAttributes"),
        ("s3.amazonaws.com", "PutBucketPolicy"),
        ("ecr.amazonaws.com", "SetRepositoryPolicy"),
        ("kms.amazonaws.com", "PutKeyPolicy"),
        ("secretsmanager.amazonaws.com", "PutResourcePolicy"),
        ("lambda.amazonaws.com", "AddPermission"),
        ("s3.amazonaws.com", "DeleteBucketEncryption"),
        ("ec2.amazonaws.com", "DisableEbsEncryptionByDefault"),
        ("dynamodb.amazonaws.com", "UpdateTable"),
        ("kinesis.amazonaws.com", "StopStreamEncryption"),
        ("rds.amazonaws.com", "ModifyDBInstance"),
        ("redshift.amazonaws.com", "ModifyCluster"),
        ("es.amazonaws.com", "UpdateDomainConfig"),
        ("cloudtrail.amazonaws.com", "StopLogging"),
        ("s3.amazonaws.com", "PutBucketLogging"),
        ("ec2.amazonaws.com", "DeleteFlowLogs"),
        ("apigateway.amazonaws.com", "UpdateRoute"),
        ("rds.amazonaws.com", "ModifyDBClusterParameterGroup"),
        ("rds.amazonaws.com", "ModifyDBParameterGroup"),
        ("cloudfront.amazonaws.com", "UpdateDistribution"),
    ] {
        assert!(fires(source, event), "no security check for {source} {event}");
    }
}

/// One plan on one resource setting each `(path, value)`, with the secrets `secrets` held.
fn sets(address: &str, fields: &[(&str, Value)], secrets: &[&str]) -> Plan {
    let address = Address::parse(address).unwrap();
    Plan {
        changes: vec![ResourceChange {
            address: address.clone(),
            ops: fields
                .iter()
                .map(|(path, value)| Op::Set {
                    path: AttrPath::parse(path).unwrap(),
                    value: AttrValue::Literal(value.clone()),
                })
                .collect(),
            recipes: vec!["r".into()],
            created: false,
        }],
        secrets: secrets
            .iter()
            .map(|path| driftback_recipes::SecretField {
                address: address.clone(),
                path: AttrPath::parse(path).unwrap(),
                reason: format!("the new value of `{path}` is hidden by CloudTrail"),
            })
            .collect(),
        ..Plan::default()
    }
}

/// The paths a plan sets or removes.
fn paths(plan: &Plan) -> Vec<String> {
    plan.changes
        .iter()
        .flat_map(|c| &c.ops)
        .map(|op| match op {
            Op::Set { path, .. } | Op::Remove { path } => path.to_string(),
            other => format!("{other:?}"),
        })
        .collect()
}

#[test]
fn independent_fields_are_split_from_held_ones_dependent_ones_wait_with_them() {
    let policy = Policy::from_toml(POLICY, "policy.toml").unwrap();
    let tags_rule = Policy::from_toml(
        "[[rule]]\nname = \"owner-tag\"\nattribute = \"tags.Owner\"\nimmutable = true\n",
        "tags.toml",
    )
    .unwrap();
    let defaults = Policy::defaults();
    let cs = change_set(&alice(), "autoscaling.amazonaws.com", "UpdateAutoScalingGroup", json!({}));
    let asg = "aws_autoscaling_group.web";
    #[rustfmt::skip]
    let cases: Vec<(&Policy, Plan, &[&str], &[&str])> = vec![
        // The bound that holds min_size covers max_size too: they wait together.
        (&policy, sets(asg, &[("min_size", json!(0)), ("max_size", json!(10))], &[]), &[], &["min_size", "max_size"]),
        // A field no rule relates to the held one is written.
        (&policy, sets(asg, &[("min_size", json!(0)), ("health_check_grace_period", json!(60))], &[]), &["health_check_grace_period"], &["min_size"]),
        // One map: Terraform writes and ignores `tags` as a whole.
        (&tags_rule, sets(asg, &[("tags.Owner", json!("bob")), ("tags.Team", json!("web"))], &[]), &[], &["tags.Owner", "tags.Team"]),
        (&tags_rule, sets(asg, &[("tags.Owner", json!("bob")), ("max_size", json!(4))], &[]), &["max_size"], &["tags.Owner"]),
        // A redacted value is held alone; the storage resize beside it is written.
        (&defaults, sets("aws_db_instance.main", &[("allocated_storage", json!(200))], &["password"]), &["allocated_storage"], &[]),
    ];
    for (policy, plan, written, held) in cases {
        let out = decide_with(policy, &cs, &plan, None, &[]);
        let d = &out.decision;
        assert!(d.kind >= DecisionKind::Revert, "{plan:?}: {d:#?}");
        assert_eq!(paths(&out.plan), written, "written, for {plan:?}: {d:#?}");
        assert_eq!(paths(&out.held), held, "held, for {plan:?}");
        match &d.split {
            Some(split) => {
                assert!(!written.is_empty());
                let codified: Vec<&str> = split.codified.iter().map(|f| f.path.as_str()).collect();
                assert_eq!(codified, written);
                assert!(split.describe().starts_with("split: "), "{}", split.describe());
                assert!(d.rationale.contains("(split)"), "{}", d.rationale);
            }
            None => assert!(written.is_empty(), "{d:#?}"),
        }
    }

    // The secret is a field of the decision, held by its own rule and saying why.
    let plan = sets("aws_db_instance.main", &[("allocated_storage", json!(200))], &["password"]);
    let out = decide_with(&Policy::defaults(), &cs, &plan, None, &[]);
    let d = &out.decision;
    assert_eq!((d.kind, d.rule.as_str()), (DecisionKind::Escalate, "default:secret-value"));
    let split = d.split.as_ref().unwrap();
    assert_eq!(split.held_paths(), ["password"]);
    assert!(split.held[0].why.contains("a redacted value can never be written"), "{}", split.held[0].why);
    assert_eq!(split.codified_kind(), DecisionKind::Reconcile);
    assert!(out.plan.secrets.is_empty() && out.held.secrets.len() == 1);

    // A check on the calls themselves holds every field: nothing is split.
    let world =
        json!({"groupId": "sg-1", "ipPermissions": {"items": [{"ipRanges": {"items": [{"cidrIp": "0.0.0.0/0"}]}}]}});
    let cs = change_set(&alice(), "ec2.amazonaws.com", "AuthorizeSecurityGroupIngress", world);
    let plan = sets("aws_security_group.web", &[("ingress", json!([])), ("description", json!("x"))], &[]);
    let out = decide_with(&Policy::defaults(), &cs, &plan, None, &[]);
    assert!(out.decision.split.is_none() && out.plan.is_empty(), "{:#?}", out.decision);

    // A resource created in the same change set goes with everything: nothing is split.
    let mut plan =
        whole("aws_db_instance.new", Op::CreateResource { spec: BlockSpec::default(), import_id: "new".into() });
    plan.secrets = sets("aws_db_instance.new", &[], &["password"]).secrets;
    let cs = change_set(&alice(), "rds.amazonaws.com", "CreateDBInstance", json!({}));
    let out = decide_with(&Policy::defaults(), &cs, &plan, None, &[]);
    assert!(out.decision.split.is_none() && out.plan.is_empty(), "{:#?}", out.decision);
    assert_eq!(out.decision.kind, DecisionKind::Escalate);
}

fn decide_in_state(policy: &Policy, cs: &ChangeSet, plan: &Plan, state: &driftback_terraform::State) -> Decided {
    let attribution = attribute(cs, &policy.actors);
    policy.decide(&DecideInput {
        change_set: cs,
        attribution: &attribution,
        plan: Ok(plan),
        repo: None,
        history: &[],
        state: Some(state),
    })
}

fn db_state(protected: bool) -> driftback_terraform::State {
    let text = json!({"version": 4, "terraform_version": "1.9.5", "serial": 1, "lineage": "x", "outputs": {},
        "resources": [{"mode": "managed", "type": "aws_db_instance", "name": "orders",
            "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
            "instances": [{"schema_version": 2, "attributes": {"id": "db-1", "identifier": "orders", "engine": "postgres",
                "instance_class": "db.t3.micro", "deletion_protection": protected, "backup_retention_period": 7}}]}]});
    driftback_terraform::State::parse(&text.to_string(), "test").unwrap()
}

fn console_modify(request: Value) -> ChangeSet {
    change_set(&alice(), "rds.amazonaws.com", "ModifyDBInstance", request)
}

fn two_fields(class: &str, protection: bool) -> Plan {
    let mut plan = set("aws_db_instance.orders", "instance_class", json!(class));
    plan.changes[0].ops.push(Op::Set {
        path: AttrPath::parse("deletion_protection").unwrap(),
        value: AttrValue::Literal(json!(protection)),
    });
    plan
}

/// A console form that resizes the database and turns deletion protection off: the weakened field
/// waits for a person with its control, the resize is written.
#[test]
fn a_weakened_field_is_held_with_its_control_and_the_independent_rest_is_written() {
    let cs = console_modify(json!({"dBInstanceIdentifier": "orders", "dBInstanceClass": "db.t3.large",
        "deletionProtection": false, "applyImmediately": true}));
    let out = decide_in_state(&Policy::defaults(), &cs, &two_fields("db.t3.large", false), &db_state(true));
    assert_eq!(out.decision.kind, DecisionKind::Escalate, "{:#?}", out.decision);
    let protection = out.decision.fields.iter().find(|f| f.path.as_deref() == Some("deletion_protection")).unwrap();
    assert_eq!(protection.rule, "default:security-baseline");
    let reason = &protection.matched[0].reason;
    assert!(reason.contains("RDS.8") && reason.contains("deletion_protection true -> false"), "{reason}");
    // The split writes the resize and holds the protection.
    assert!(out.decision.split.is_some(), "{:#?}", out.decision);
    let written: Vec<String> = field_changes(&out.plan).into_iter().filter_map(|f| f.path).collect();
    let held: Vec<String> = field_changes(&out.held).into_iter().filter_map(|f| f.path).collect();
    assert_eq!((written, held), (vec!["instance_class".to_string()], vec!["deletion_protection".to_string()]));
}

/// The same call turning protection on (a tightening) or only resizing is reconciled: the judge
/// reads the resulting value, not the call's name.
#[test]
fn a_tightening_on_the_same_call_is_reconciled() {
    let cs = console_modify(json!({"dBInstanceIdentifier": "orders", "deletionProtection": true}));
    let on = decide_in_state(&Policy::defaults(), &cs, &two_fields("db.t3.micro", true), &db_state(false));
    assert_eq!(on.decision.kind, DecisionKind::Reconcile, "{:#?}", on.decision);
    // The console form echoes protection off on a database that never had it: no weakening.
    let echo = decide_in_state(&Policy::defaults(), &cs, &two_fields("db.t3.large", false), &db_state(false));
    assert_eq!(echo.decision.kind, DecisionKind::Reconcile, "{:#?}", echo.decision);
}

/// An owner's accept in the policy file lets the weakening be written, and the decision says who
/// accepted it and why.
#[test]
fn an_accepted_control_is_written_and_audited() {
    let policy = Policy::from_toml(
        "[[accept]]\ncontrol = \"RDS.8\"\naddresses = [\"aws_db_instance.orders\"]\nby = \"dba-team\"\nreason = \"torn down nightly\"\n",
        "p.toml",
    )
    .unwrap();
    let cs = console_modify(json!({"dBInstanceIdentifier": "orders", "deletionProtection": false}));
    let out = decide_in_state(
        &policy,
        &cs,
        &set("aws_db_instance.orders", "deletion_protection", json!(false)),
        &db_state(true),
    );
    assert_eq!(out.decision.kind, DecisionKind::Reconcile, "{:#?}", out.decision);
    assert!(
        out.decision
            .evidence
            .iter()
            .any(|e| e.contains("dba-team accepted RDS.8 on aws_db_instance.orders: torn down nightly")),
        "{:#?}",
        out.decision.evidence
    );
    // An accept names a control of the baseline, and says by whom and why.
    let unknown = Policy::from_toml(
        "[[accept]]\ncontrol = \"RDS.999\"\naddresses = \"x\"\nby = \"a\"\nreason = \"b\"\n",
        "p.toml",
    );
    assert!(unknown.unwrap_err().to_string().contains("\"RDS.999\" is not a control of the security baseline"));
    let no_reason = Policy::from_toml("[[accept]]\ncontrol = \"RDS.8\"\naddresses = \"x\"\nby = \"a\"\n", "p.toml");
    assert!(no_reason.unwrap_err().to_string().contains("`reason`"));
}
