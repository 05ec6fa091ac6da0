//! Aliases, scaling policies, cache clusters, secrets and parameters: each call planned on a request
//! as CloudTrail logs it, applied, and the effective configuration judged; a secret value, a
//! hidden parameter value and an unmapped setting are refused, never written.

mod support;

use std::path::PathBuf;
use support::{change_set, resource};

use driftback_recipes::{Catalog, PlanError, plan};
use driftback_terraform::eval::effective_config;
use driftback_terraform::{Address, Repo, State};
use serde_json::{Value, json};

const MAIN: &str = r#"resource "aws_lambda_alias" "live" {
  name             = "live"
  function_name    = "checkout"
  function_version = "7"
}

resource "aws_autoscaling_policy" "cpu" {
  name                   = "cpu-target"
  autoscaling_group_name = "web"
  policy_type            = "TargetTrackingScaling"

  target_tracking_configuration {
    target_value = 50

    predefined_metric_specification {
      predefined_metric_type = "ASGAverageCPUUtilization"
    }
  }
}

resource "aws_elasticache_cluster" "sessions" {
  cluster_id      = "sessions"
  engine          = "memcached"
  node_type       = "cache.t4g.small"
  num_cache_nodes = 2
}

resource "aws_secretsmanager_secret" "api" {
  name        = "api-key"
  description = "API key"
}

resource "aws_ssm_parameter" "flag" {
  name  = "/app/feature-flag"
  type  = "String"
  value = "off"
}
"#;

const SECRET: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:api-key-AbCdEf";

fn state() -> State {
    let resources = vec![
        resource(
            "aws_lambda_alias",
            "live",
            json!({"id": "arn:aws:lambda:us-east-1:123456789012:function:checkout:live", "name": "live",
                   "function_name": "checkout", "function_version": "7"}),
        ),
        resource(
            "aws_autoscaling_policy",
            "cpu",
            json!({"id": "cpu-target", "name": "cpu-target", "autoscaling_group_name": "web",
                   "policy_type": "TargetTrackingScaling",
                   "target_tracking_configuration": [{"target_value": 50.0, "disable_scale_in": false,
                     "predefined_metric_specification": [{"predefined_metric_type": "ASGAverageCPUUtilization", "resource_label": ""}]}]}),
        ),
        resource(
            "aws_elasticache_cluster",
            "sessions",
            json!({"id": "sessions", "cluster_id": "sessions", "engine": "memcached",
                   "node_type": "cache.t4g.small", "num_cache_nodes": 2}),
        ),
        resource(
            "aws_secretsmanager_secret",
            "api",
            json!({"id": SECRET, "arn": SECRET, "name": "api-key", "description": "API key"}),
        ),
        resource(
            "aws_ssm_parameter",
            "flag",
            json!({"id": "/app/feature-flag", "name": "/app/feature-flag", "arn": "arn:aws:ssm:us-east-1:123456789012:parameter/app/feature-flag",
                   "type": "String", "value": "off"}),
        ),
    ];
    support::state_of(resources)
}

/// The call planned and applied: the effective configuration of `address` afterwards.
fn applied(source: &str, name: &str, request: Value, address: &str) -> Result<Value, PlanError> {
    let mut repo = Repo::from_files([(PathBuf::from("main.tf"), MAIN.to_string())].into_iter().collect());
    let plan = plan(&Catalog::builtin(), &change_set(source, name, request), &state(), &repo)?;
    for change in &plan.changes {
        for op in &change.ops {
            driftback_terraform::patch::apply(&mut repo, &change.address, op).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
    Ok(effective_config(&repo, &Address::parse(address).unwrap()).unwrap())
}

#[test]
fn an_alias_moved_to_a_new_version_with_a_canary_weight() {
    let alias = applied(
        "lambda.amazonaws.com",
        "UpdateAlias20150331",
        json!({"functionName": "checkout", "name": "live", "functionVersion": "8",
               "routingConfig": {"additionalVersionWeights": {"9": 0.1}}}),
        "aws_lambda_alias.live",
    )
    .unwrap();
    assert_eq!(alias["function_version"], "8");
    assert_eq!(alias["routing_config"][0]["additional_version_weights"]["9"], 0.1, "{alias}");
}

#[test]
fn a_target_tracking_policy_gets_its_new_target_and_step_adjustments_are_refused() {
    let policy = applied(
        "autoscaling.amazonaws.com",
        "PutScalingPolicy",
        json!({"autoScalingGroupName": "web", "policyName": "cpu-target", "policyType": "TargetTrackingScaling",
               "targetTrackingConfiguration": {"targetValue": 65.0,
                 "predefinedMetricSpecification": {"predefinedMetricType": "ASGAverageCPUUtilization"}}}),
        "aws_autoscaling_policy.cpu",
    )
    .unwrap();
    assert_eq!(policy["target_tracking_configuration"][0]["target_value"], 65, "{policy}");
    let err = applied(
        "autoscaling.amazonaws.com",
        "PutScalingPolicy",
        json!({"autoScalingGroupName": "web", "policyName": "cpu-target", "policyType": "StepScaling",
               "stepAdjustments": [{"metricIntervalLowerBound": 0, "scalingAdjustment": 2}]}),
        "aws_autoscaling_policy.cpu",
    )
    .unwrap_err();
    assert!(err.to_string().contains("stepAdjustments"), "{err}");
}

#[test]
fn a_cache_cluster_grows_without_writing_when_to_apply() {
    let cluster = applied(
        "elasticache.amazonaws.com",
        "ModifyCacheCluster",
        json!({"cacheClusterId": "sessions", "numCacheNodes": 3, "applyImmediately": true}),
        "aws_elasticache_cluster.sessions",
    )
    .unwrap();
    assert_eq!(cluster["num_cache_nodes"], 3);
    assert!(cluster.get("apply_immediately").is_none_or(Value::is_null), "{cluster}");
}

#[test]
fn a_secrets_description_is_written_and_a_new_secret_value_never_is() {
    let secret = applied(
        "secretsmanager.amazonaws.com",
        "UpdateSecret",
        json!({"secretId": "api-key", "description": "API key for the payments provider"}),
        "aws_secretsmanager_secret.api",
    )
    .unwrap();
    assert_eq!(secret["description"], "API key for the payments provider");
    let err = applied(
        "secretsmanager.amazonaws.com",
        "UpdateSecret",
        json!({"secretId": SECRET, "description": "rotated", "secretString": "HIDDEN_DUE_TO_SECURITY_REASONS"}),
        "aws_secretsmanager_secret.api",
    )
    .unwrap_err();
    assert!(err.to_string().contains("secretString"), "{err}");
}

#[test]
fn a_parameter_value_is_held_whether_hidden_or_not() {
    // `aws_ssm_parameter.value` is sensitive in the provider's schema (and CloudTrail hides
    // PutParameter's value whatever the type): even a value in clear is held, never written.
    let request = json!({"name": "/app/feature-flag", "value": "on", "type": "String", "overwrite": true});
    let repo = Repo::from_files([(PathBuf::from("main.tf"), MAIN.to_string())].into_iter().collect());
    match plan(&Catalog::builtin(), &change_set("ssm.amazonaws.com", "PutParameter", request), &state(), &repo) {
        Ok(planned) => {
            let held: Vec<String> = planned.secrets.iter().map(|s| s.path.to_string()).collect();
            assert_eq!(held, ["value"]);
        }
        Err(e) => assert!(matches!(e, PlanError::Secret { .. }), "{e}"),
    }
    // Made a SecureString with a hidden value: the type is planned, the value held (never written).
    let request = json!({"name": "/app/feature-flag", "value": "HIDDEN_DUE_TO_SECURITY_REASONS",
                         "type": "SecureString", "overwrite": true});
    let cs = change_set("ssm.amazonaws.com", "PutParameter", request);
    let repo = Repo::from_files([(PathBuf::from("main.tf"), MAIN.to_string())].into_iter().collect());
    let planned = plan(&Catalog::builtin(), &cs, &state(), &repo).unwrap();
    let held: Vec<String> = planned.secrets.iter().map(|s| s.path.to_string()).collect();
    assert_eq!(held, ["value"]);
    let parameter = applied(
        "ssm.amazonaws.com",
        "PutParameter",
        json!({"name": "/app/feature-flag", "value": "HIDDEN_DUE_TO_SECURITY_REASONS", "type": "SecureString",
               "overwrite": true}),
        "aws_ssm_parameter.flag",
    )
    .unwrap();
    assert_eq!((&parameter["type"], &parameter["value"]), (&json!("SecureString"), &json!("off")), "{parameter}");
    // Only the hidden value: nothing can be written, and the call is refused as a secret.
    let err = applied(
        "ssm.amazonaws.com",
        "PutParameter",
        json!({"name": "/app/feature-flag", "value": "HIDDEN_DUE_TO_SECURITY_REASONS", "overwrite": true}),
        "aws_ssm_parameter.flag",
    )
    .unwrap_err();
    assert!(matches!(err, PlanError::Secret { .. }), "{err}");
}

fn run_instances(identity: Value, max: u32) -> driftback_events::ChangeSet {
    let record = json!({
        "eventID": "e1", "eventTime": "2024-03-01T10:00:00Z", "eventSource": "ec2.amazonaws.com",
        "eventName": "RunInstances", "userIdentity": identity,
        "requestParameters": {"instancesSet": {"items": [{"imageId": "ami-0abc1234def567890", "minCount": 1, "maxCount": max}]},
            "instanceType": "t3.small", "subnetId": "subnet-0a1b2c3d", "keyName": "ops",
            "securityGroupIdSet": {"items": [{"securityGroupId": "sg-0123456789abcdef0"}]},
            "disableApiTermination": false, "clientToken": "c1"},
        "responseElements": {"instancesSet": {"items": [{"instanceId": "i-0fedcba9876543210", "imageId": "ami-0abc1234def567890"}]}}
    });
    driftback_events::group(vec![driftback_events::normalize(&record).unwrap()], &Default::default()).remove(0)
}

#[test]
fn an_instance_launched_by_hand_is_adopted_and_one_an_aws_service_launched_is_not() {
    let repo = Repo::from_files([(PathBuf::from("main.tf"), MAIN.to_string())].into_iter().collect());
    let person = json!({"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/alice", "userName": "alice"});
    let planned = plan(&Catalog::builtin(), &run_instances(person.clone(), 1), &state(), &repo).unwrap();
    let [change] = &planned.changes[..] else { panic!("{planned:?}") };
    assert_eq!(change.address.rtype, "aws_instance");
    let [driftback_terraform::Op::CreateResource { spec, import_id }] = &change.ops[..] else { panic!("{change:?}") };
    assert_eq!(import_id, "i-0fedcba9876543210");
    let attr = |name: &str| spec.attrs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    assert_eq!(attr("ami"), Some(driftback_terraform::AttrValue::Literal(json!("ami-0abc1234def567890"))));
    assert_eq!(
        attr("vpc_security_group_ids"),
        Some(driftback_terraform::AttrValue::Literal(json!(["sg-0123456789abcdef0"])))
    );
    // Several instances in one launch: not this recipe's.
    assert!(plan(&Catalog::builtin(), &run_instances(person, 3), &state(), &repo).is_err());
    // An Auto Scaling group's instance belongs to the group: nothing adopted, and said.
    let autoscaling = json!({"type": "AssumedRole", "invokedBy": "autoscaling.amazonaws.com",
        "arn": "arn:aws:sts::123456789012:assumed-role/AWSServiceRoleForAutoScaling/AutoScaling",
        "sessionContext": {"sessionIssuer": {"type": "Role", "userName": "AWSServiceRoleForAutoScaling",
            "arn": "arn:aws:iam::123456789012:role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling"}}});
    let planned = plan(&Catalog::builtin(), &run_instances(autoscaling, 1), &state(), &repo).unwrap();
    assert!(planned.changes.is_empty(), "{planned:?}");
    assert!(planned.notes.iter().any(|n| n.contains("AWS service")), "{:?}", planned.notes);
}

#[test]
fn the_console_launch_wizards_network_interface_and_instance_tags_are_read() {
    let repo = Repo::from_files([(PathBuf::from("main.tf"), MAIN.to_string())].into_iter().collect());
    let record = json!({
        "eventID": "e2", "eventTime": "2024-03-01T10:00:00Z", "eventSource": "ec2.amazonaws.com", "eventName": "RunInstances",
        "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/alice", "userName": "alice"},
        "userAgent": "AWS Internal",
        "requestParameters": {"instancesSet": {"items": [{"imageId": "ami-0abc1234def567890", "minCount": 1, "maxCount": 1}]},
            "instanceType": "t3.small",
            "networkInterfaceSet": {"items": [{"deviceIndex": 0, "subnetId": "subnet-0a1b2c3d",
                "groupSet": {"items": [{"groupId": "sg-0123456789abcdef0"}, {"groupId": "sg-0fedcba987654321f"}]}}]},
            "tagSpecificationSet": {"items": [
                {"resourceType": "volume", "tags": [{"key": "Backup", "value": "daily"}]},
                {"resourceType": "instance", "tags": [{"key": "Name", "value": "api-04"}, {"key": "Team", "value": "payments"}]}]}},
        "responseElements": {"instancesSet": {"items": [{"instanceId": "i-0fedcba9876543211"}]}}
    });
    let change_set =
        driftback_events::group(vec![driftback_events::normalize(&record).unwrap()], &Default::default()).remove(0);
    let planned = plan(&Catalog::builtin(), &change_set, &state(), &repo).unwrap();
    let [driftback_terraform::Op::CreateResource { spec, .. }] = &planned.changes[0].ops[..] else {
        panic!("{planned:?}")
    };
    let attr = |name: &str| spec.attrs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let literal = |v: Value| Some(driftback_terraform::AttrValue::Literal(v));
    assert_eq!(attr("subnet_id"), literal(json!("subnet-0a1b2c3d")));
    assert_eq!(attr("vpc_security_group_ids"), literal(json!(["sg-0123456789abcdef0", "sg-0fedcba987654321f"])));
    // The instance's tags, not the volume's.
    assert_eq!(attr("tags"), literal(json!({"Name": "api-04", "Team": "payments"})));
    assert!(
        !planned.notes.iter().any(|n| n.contains("networkInterfaceSet")),
        "read, so not said unwritten: {:?}",
        planned.notes
    );
}

const TARGETS: &str = r#"resource "aws_lb_target_group" "api" {
  name     = "api"
  port     = 8080
  protocol = "HTTP"
  vpc_id   = "vpc-1"
}

resource "aws_instance" "api_a" {
  ami           = "ami-1"
  instance_type = "t3.small"
}

resource "aws_instance" "api_b" {
  ami           = "ami-1"
  instance_type = "t3.small"
}

resource "aws_lb_target_group_attachment" "api_a" {
  target_group_arn = aws_lb_target_group.api.arn
  target_id        = aws_instance.api_a.id
  port             = 8080
}
"#;

const GROUP: &str = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/api/73e2d6bc24d8a067";

fn targets_state() -> State {
    support::state_of(vec![
        resource("aws_lb_target_group", "api", json!({"id": GROUP, "arn": GROUP, "name": "api", "port": 8080})),
        resource("aws_instance", "api_a", json!({"id": "i-0aaa", "ami": "ami-1", "instance_type": "t3.small"})),
        resource("aws_instance", "api_b", json!({"id": "i-0bbb", "ami": "ami-1", "instance_type": "t3.small"})),
        resource(
            "aws_lb_target_group_attachment",
            "api_a",
            json!({"id": format!("{GROUP}-20240101"), "target_group_arn": GROUP, "target_id": "i-0aaa", "port": 8080}),
        ),
    ])
}

#[test]
fn a_registered_target_gains_an_attachment_without_import_and_a_deregistered_one_loses_its_own() {
    let mut repo = Repo::from_files([(PathBuf::from("main.tf"), TARGETS.to_string())].into_iter().collect());
    let register = change_set(
        "elasticloadbalancing.amazonaws.com",
        "RegisterTargets",
        json!({"targetGroupArn": GROUP, "targets": [{"id": "i-0bbb", "port": 8080}]}),
    );
    let planned = plan(&Catalog::builtin(), &register, &targets_state(), &repo).unwrap();
    for change in &planned.changes {
        for op in &change.ops {
            driftback_terraform::patch::apply(&mut repo, &change.address, op).unwrap();
        }
    }
    let text = repo.text(std::path::Path::new("main.tf")).unwrap();
    assert!(text.contains("target_id        = aws_instance.api_b.id"), "{text}");
    assert!(text.contains("target_group_arn = aws_lb_target_group.api.arn"), "{text}");
    assert!(!text.contains("import {"), "{text}");
    // Deregistered: that target's attachment goes, the other stays.
    let repo = Repo::from_files([(PathBuf::from("main.tf"), TARGETS.to_string())].into_iter().collect());
    let deregister = change_set(
        "elasticloadbalancing.amazonaws.com",
        "DeregisterTargets",
        json!({"targetGroupArn": GROUP, "targets": [{"id": "i-0aaa", "port": 8080}]}),
    );
    let planned = plan(&Catalog::builtin(), &deregister, &targets_state(), &repo).unwrap();
    let [change] = &planned.changes[..] else { panic!("{planned:?}") };
    assert_eq!(change.address.to_string(), "aws_lb_target_group_attachment.api_a");
    assert_eq!(change.ops, vec![driftback_terraform::Op::RemoveResource]);
}
