//! Hand-written recipes for the calls teams make most (the coverage issue's priority list), each
//! planned on a request as CloudTrail logs it against a fixture state: the right resource is
//! found (by its identity, where a name alone is shared), and the right operation comes out.

mod support;

use std::path::PathBuf;
use support::{change_set, resource};

use driftback_recipes::{Catalog, PlanError, plan};
use driftback_terraform::{AttrValue, Op, Repo, State};
use serde_json::{Value, json};

const MAIN: &str = r#"resource "aws_iam_role_policy_attachment" "app_read" {
  role       = "app"
  policy_arn = "arn:aws:iam::aws:policy/ReadOnlyAccess"
}

resource "aws_iam_role_policy_attachment" "ci_read" {
  role       = "ci"
  policy_arn = "arn:aws:iam::aws:policy/ReadOnlyAccess"
}

resource "aws_iam_role_policy" "app_queue" {
  role   = "app"
  name   = "queue"
  policy = jsonencode({ Version = "2012-10-17", Statement = [{ Effect = "Allow", Action = "sqs:SendMessage", Resource = "*" }] })
}

resource "aws_lambda_permission" "from_s3" {
  statement_id  = "AllowS3"
  function_name = "thumbnails"
  action        = "lambda:InvokeFunction"
  principal     = "s3.amazonaws.com"
}

resource "aws_db_parameter_group" "pg" {
  name   = "app-pg16"
  family = "postgres16"

  parameter {
    name  = "log_min_duration_statement"
    value = "1000"
  }
}

resource "aws_secretsmanager_secret" "db" {
  name = "db"
}

resource "aws_secretsmanager_secret_rotation" "db" {
  secret_id           = "arn:aws:secretsmanager:us-east-1:123456789012:secret:db-AbCdEf"
  rotation_lambda_arn = "arn:aws:lambda:us-east-1:123456789012:function:rotate"

  rotation_rules {
    automatically_after_days = 30
  }
}

resource "aws_eks_node_group" "workers" {
  cluster_name    = "prod"
  node_group_name = "workers"

  scaling_config {
    desired_size = 3
    min_size     = 2
    max_size     = 6
  }
}

resource "aws_s3_bucket_policy" "assets" {
  bucket = "assets"
  policy = "{\"Version\":\"2012-10-17\",\"Statement\":[]}"
}

resource "aws_s3_bucket_acl" "assets" {
  bucket = "assets"
  acl    = "private"
}

resource "aws_ecs_service" "api" {
  name            = "api"
  cluster         = "prod"
  task_definition = "api:7"
  desired_count   = 3

  lifecycle {
    ignore_changes = [desired_count]
  }
}

resource "aws_route_table" "public" {
  vpc_id = "vpc-1"

  route {
    cidr_block = "0.0.0.0/0"
    gateway_id = "igw-1"
  }

  route {
    cidr_block                = "10.20.0.0/16"
    vpc_peering_connection_id = "pcx-1"
  }
}

resource "aws_route" "private_nat" {
  route_table_id         = "rtb-private"
  destination_cidr_block = "0.0.0.0/0"
  nat_gateway_id         = "nat-1"
}

resource "aws_route" "private_peer" {
  route_table_id         = "rtb-private"
  destination_cidr_block = "10.20.0.0/16"
  vpc_peering_connection_id = "pcx-1"
}

resource "aws_route53_record" "www" {
  zone_id = "Z0123456789ABCDEFGHIJ"
  name    = "www.example.com"
  type    = "A"
  ttl     = 300
  records = ["192.0.2.10"]
}

resource "aws_route53_record" "api_blue" {
  zone_id        = "Z0123456789ABCDEFGHIJ"
  name           = "api.example.com"
  type           = "CNAME"
  ttl            = 60
  records        = ["blue.example.com"]
  set_identifier = "blue"

  weighted_routing_policy {
    weight = 90
  }
}

resource "aws_route53_record" "api_green" {
  zone_id        = "Z0123456789ABCDEFGHIJ"
  name           = "api.example.com"
  type           = "CNAME"
  ttl            = 60
  records        = ["green.example.com"]
  set_identifier = "green"

  weighted_routing_policy {
    weight = 10
  }
}

resource "aws_sns_topic" "alerts" {
  name = "alerts"
}

resource "aws_kms_key" "data" {
  description         = "data"
  enable_key_rotation = false
}

resource "aws_iam_policy" "deploy" {
  name   = "deploy"
  policy = jsonencode({ Version = "2012-10-17", Statement = [{ Effect = "Allow", Action = "s3:GetObject", Resource = "*" }] })
}
"#;

const SECRET: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:db-AbCdEf";
const KEY: &str = "1234abcd-12ab-34cd-56ef-1234567890ab";
const POLICY: &str = "arn:aws:iam::123456789012:policy/deploy";

fn state() -> State {
    let resources = vec![
        resource(
            "aws_iam_role_policy_attachment",
            "app_read",
            json!({"id": "app-20240101", "role": "app",
            "policy_arn": "arn:aws:iam::aws:policy/ReadOnlyAccess"}),
        ),
        resource(
            "aws_iam_role_policy_attachment",
            "ci_read",
            json!({"id": "ci-20240101", "role": "ci",
            "policy_arn": "arn:aws:iam::aws:policy/ReadOnlyAccess"}),
        ),
        resource(
            "aws_iam_role_policy",
            "app_queue",
            json!({"id": "app:queue", "role": "app", "name": "queue",
            "policy": "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Action\":\"sqs:SendMessage\",\"Resource\":\"*\"}]}"}),
        ),
        resource(
            "aws_lambda_permission",
            "from_s3",
            json!({"id": "AllowS3", "statement_id": "AllowS3",
            "function_name": "thumbnails", "action": "lambda:InvokeFunction", "principal": "s3.amazonaws.com"}),
        ),
        resource(
            "aws_db_parameter_group",
            "pg",
            json!({"id": "app-pg16", "name": "app-pg16", "family": "postgres16",
            "parameter": [{"name": "log_min_duration_statement", "value": "1000", "apply_method": "immediate"}]}),
        ),
        resource(
            "aws_route_table",
            "public",
            json!({"id": "rtb-public", "vpc_id": "vpc-1", "route": [
            {"cidr_block": "0.0.0.0/0", "gateway_id": "igw-1"},
            {"cidr_block": "10.20.0.0/16", "vpc_peering_connection_id": "pcx-1"}]}),
        ),
        resource(
            "aws_route",
            "private_nat",
            json!({"id": "r-rtb-private1080289494", "route_table_id": "rtb-private",
            "destination_cidr_block": "0.0.0.0/0", "nat_gateway_id": "nat-1"}),
        ),
        resource(
            "aws_route",
            "private_peer",
            json!({"id": "r-rtb-private2345", "route_table_id": "rtb-private",
            "destination_cidr_block": "10.20.0.0/16", "vpc_peering_connection_id": "pcx-1"}),
        ),
        resource(
            "aws_route53_record",
            "www",
            json!({"id": "Z0123456789ABCDEFGHIJ_www.example.com_A",
            "zone_id": "Z0123456789ABCDEFGHIJ", "name": "www.example.com", "fqdn": "www.example.com", "type": "A",
            "ttl": 300, "records": ["192.0.2.10"]}),
        ),
        resource(
            "aws_route53_record",
            "api_blue",
            json!({"id": "Z0123456789ABCDEFGHIJ_api.example.com_CNAME_blue",
            "zone_id": "Z0123456789ABCDEFGHIJ", "name": "api.example.com", "fqdn": "api.example.com", "type": "CNAME",
            "ttl": 60, "records": ["blue.example.com"], "set_identifier": "blue", "weighted_routing_policy": [{"weight": 90}]}),
        ),
        resource(
            "aws_route53_record",
            "api_green",
            json!({"id": "Z0123456789ABCDEFGHIJ_api.example.com_CNAME_green",
            "zone_id": "Z0123456789ABCDEFGHIJ", "name": "api.example.com", "fqdn": "api.example.com", "type": "CNAME",
            "ttl": 60, "records": ["green.example.com"], "set_identifier": "green", "weighted_routing_policy": [{"weight": 10}]}),
        ),
        resource(
            "aws_sns_topic",
            "alerts",
            json!({"id": "arn:aws:sns:us-east-1:123456789012:alerts",
            "arn": "arn:aws:sns:us-east-1:123456789012:alerts", "name": "alerts"}),
        ),
        resource("aws_secretsmanager_secret", "db", json!({"id": SECRET, "arn": SECRET, "name": "db"})),
        resource(
            "aws_secretsmanager_secret_rotation",
            "db",
            json!({"id": SECRET, "secret_id": SECRET,
            "rotation_lambda_arn": "arn:aws:lambda:us-east-1:123456789012:function:rotate",
            "rotation_rules": [{"automatically_after_days": 30}]}),
        ),
        resource(
            "aws_eks_node_group",
            "workers",
            json!({"id": "prod:workers", "cluster_name": "prod",
            "node_group_name": "workers", "scaling_config": [{"desired_size": 3, "min_size": 2, "max_size": 6}]}),
        ),
        resource(
            "aws_s3_bucket_policy",
            "assets",
            json!({"id": "assets", "bucket": "assets",
            "policy": "{\"Version\":\"2012-10-17\",\"Statement\":[]}"}),
        ),
        resource("aws_s3_bucket_acl", "assets", json!({"id": "assets,private", "bucket": "assets", "acl": "private"})),
        resource(
            "aws_ecs_service",
            "api",
            json!({"id": "arn:aws:ecs:us-east-1:123456789012:service/prod/api", "name": "api",
                   "cluster": "arn:aws:ecs:us-east-1:123456789012:cluster/prod", "task_definition": "api:7",
                   "desired_count": 3}),
        ),
        resource(
            "aws_kms_key",
            "data",
            json!({"id": KEY, "key_id": KEY,
            "arn": format!("arn:aws:kms:us-east-1:123456789012:key/{KEY}"), "enable_key_rotation": false}),
        ),
        resource(
            "aws_iam_policy",
            "deploy",
            json!({"id": POLICY, "arn": POLICY, "name": "deploy",
            "policy": "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Action\":\"s3:GetObject\",\"Resource\":\"*\"}]}"}),
        ),
    ];
    support::state_of(resources)
}

fn repo() -> Repo {
    Repo::from_files([(PathBuf::from("main.tf"), MAIN.to_string())].into_iter().collect())
}

/// The changes planned for a call: (address, operations).
fn planned(source: &str, name: &str, request: Value) -> Result<Vec<(String, Vec<Op>)>, PlanError> {
    let plan = plan(&Catalog::builtin(), &change_set(source, name, request), &state(), &repo())?;
    Ok(plan.changes.into_iter().map(|c| (c.address.to_string(), c.ops)).collect())
}

fn set(path: &str, value: Value) -> Op {
    Op::Set { path: driftback_terraform::AttrPath::parse(path).unwrap(), value: AttrValue::Literal(value) }
}

#[test]
fn a_detached_policy_removes_the_attachment_of_that_role_only() {
    let got = planned(
        "iam.amazonaws.com",
        "DetachRolePolicy",
        json!({"roleName": "ci", "policyArn": "arn:aws:iam::aws:policy/ReadOnlyAccess"}),
    )
    .unwrap();
    assert_eq!(got, vec![("aws_iam_role_policy_attachment.ci_read".to_string(), vec![Op::RemoveResource])]);
    // A role the code attaches nothing to: not managed here, so nothing is guessed.
    let err = planned(
        "iam.amazonaws.com",
        "DetachRolePolicy",
        json!({"roleName": "batch", "policyArn": "arn:aws:iam::aws:policy/ReadOnlyAccess"}),
    )
    .unwrap_err();
    assert!(matches!(err, PlanError::NotManaged { .. }), "{err}");
}

#[test]
fn an_inline_role_policy_changes_member_by_member_where_the_code_builds_it() {
    let doc = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"sqs:SendMessage","Resource":"arn:aws:sqs:us-east-1:123456789012:jobs"}]}"#;
    let got = planned(
        "iam.amazonaws.com",
        "PutRolePolicy",
        json!({"roleName": "app", "policyName": "queue", "policyDocument": doc}),
    )
    .unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, "aws_iam_role_policy.app_queue");
    // The member that differs, not the whole document as a string over `jsonencode(...)`.
    assert!(
        matches!(&got[0].1[..], [Op::Set { path, .. }] if path.to_string().starts_with("policy")
        && path.0.len() > 1),
        "{:?}",
        got[0].1
    );
    // Applied, the code still builds the document with jsonencode, and it is the new one.
    let mut repo = repo();
    let address = driftback_terraform::Address::parse("aws_iam_role_policy.app_queue").unwrap();
    for op in &got[0].1 {
        driftback_terraform::patch::apply(&mut repo, &address, op).unwrap();
    }
    let text = repo.text(std::path::Path::new("main.tf")).unwrap();
    assert!(text.contains("policy = jsonencode({"), "{text}");
    let config = driftback_terraform::eval::effective_config(&repo, &address).unwrap();
    let built: Value = serde_json::from_str(config["policy"].as_str().unwrap()).unwrap();
    assert_eq!(built, serde_json::from_str::<Value>(doc).unwrap());
}

#[test]
fn a_removed_lambda_permission_removes_its_resource() {
    let got = planned(
        "lambda.amazonaws.com",
        "RemovePermission20150331v2",
        json!({"functionName": "thumbnails", "statementId": "AllowS3"}),
    )
    .unwrap();
    assert_eq!(got, vec![("aws_lambda_permission.from_s3".to_string(), vec![Op::RemoveResource])]);
}

#[test]
fn a_parameter_group_change_sets_the_parameter_by_name_and_adds_a_new_one() {
    let got = planned(
        "rds.amazonaws.com",
        "ModifyDBParameterGroup",
        json!({"dBParameterGroupName": "app-pg16", "parameters": [
            {"parameterName": "log_min_duration_statement", "parameterValue": "500", "applyMethod": "immediate"},
            {"parameterName": "idle_in_transaction_session_timeout", "parameterValue": "60000", "applyMethod": "immediate"}
        ]}),
    )
    .unwrap();
    let (address, ops) = &got[0];
    assert_eq!(address, "aws_db_parameter_group.pg");
    assert!(ops.contains(&set("parameter[0].value", json!("500"))), "{ops:?}");
    assert!(
        ops.iter().any(|op| matches!(op, Op::AddBlock { block_type, spec } if block_type == "parameter"
            && spec.attrs.contains(&("name".into(), AttrValue::Literal(json!("idle_in_transaction_session_timeout")))))),
        "{ops:?}"
    );
}

#[test]
fn rotation_settings_change_on_the_rotation_resource_and_an_unknown_rule_is_refused() {
    let got = planned(
        "secretsmanager.amazonaws.com",
        "RotateSecret",
        json!({"secretId": SECRET, "rotationRules": {"automaticallyAfterDays": 7}, "rotateImmediately": false}),
    )
    .unwrap();
    assert_eq!(
        got,
        vec![(
            "aws_secretsmanager_secret_rotation.db".to_string(),
            vec![set("rotation_rules.automatically_after_days", json!(7))]
        )]
    );
    let err = planned(
        "secretsmanager.amazonaws.com",
        "RotateSecret",
        json!({"secretId": SECRET, "rotationRules": {"automaticallyAfterDays": 7, "someFutureRule": "x"}}),
    )
    .unwrap_err();
    assert!(matches!(err, PlanError::Unmapped { .. }), "{err}");
}

#[test]
fn node_group_scaling_is_found_by_cluster_and_name_and_labels_are_map_entries() {
    let got = planned(
        "eks.amazonaws.com",
        "UpdateNodegroupConfig",
        json!({"clusterName": "prod", "nodegroupName": "workers", "scalingConfig": {"desiredSize": 5, "minSize": 2, "maxSize": 8}}),
    )
    .unwrap();
    let (address, ops) = &got[0];
    assert_eq!(address, "aws_eks_node_group.workers");
    assert!(
        ops.contains(&set("scaling_config.desired_size", json!(5)))
            && ops.contains(&set("scaling_config.max_size", json!(8))),
        "{ops:?}"
    );
    let err = planned(
        "eks.amazonaws.com",
        "UpdateNodegroupConfig",
        json!({"clusterName": "staging", "nodegroupName": "workers", "scalingConfig": {"desiredSize": 5}}),
    )
    .unwrap_err();
    assert!(matches!(err, PlanError::NotManaged { .. }), "another cluster's group of the same name: {err}");
    // Labels are entries of the `labels` map; a member beside them no rule reads (taints) refuses.
    let got = planned(
        "eks.amazonaws.com",
        "UpdateNodegroupConfig",
        json!({"clusterName": "prod", "nodegroupName": "workers", "labels": {"addOrUpdateLabels": {"tier": "batch"}}}),
    )
    .unwrap();
    assert!(got[0].1.contains(&set(r#"labels["tier"]"#, json!("batch"))), "{:?}", got[0].1);
    let err = planned(
        "eks.amazonaws.com",
        "UpdateNodegroupConfig",
        json!({"clusterName": "prod", "nodegroupName": "workers", "labels": {"addOrUpdateLabels": {"tier": "batch"}},
               "taints": {"addOrUpdateTaints": [{"key": "gpu", "value": "true", "effect": "NO_SCHEDULE"}]}}),
    )
    .unwrap_err();
    assert!(matches!(err, PlanError::Unmapped { .. }), "{err}");
}

#[test]
fn a_bucket_policy_logged_parsed_is_written_as_json_text_and_a_canned_acl_as_its_name() {
    let got = planned(
        "s3.amazonaws.com",
        "PutBucketPolicy",
        json!({"bucketName": "assets", "policy": "", "Host": "assets.s3.amazonaws.com",
               "bucketPolicy": {"Version": "2012-10-17", "Statement": [{"Sid": "TLS", "Effect": "Deny", "Principal": "*",
                 "Action": "s3:*", "Resource": "arn:aws:s3:::assets/*", "Condition": {"Bool": {"aws:SecureTransport": "false"}}}]}}),
    )
    .unwrap();
    let (address, ops) = &got[0];
    assert_eq!(address, "aws_s3_bucket_policy.assets");
    let Op::Set { value: AttrValue::Literal(Value::String(text)), .. } = &ops[0] else { panic!("{ops:?}") };
    let doc: Value = serde_json::from_str(text).unwrap();
    assert_eq!(doc["Statement"][0]["Sid"], "TLS");
    let got = planned(
        "s3.amazonaws.com",
        "PutBucketAcl",
        json!({"bucketName": "assets", "acl": "", "Host": "assets.s3.amazonaws.com", "x-amz-acl": ["log-delivery-write"]}),
    )
    .unwrap();
    assert_eq!(got, vec![("aws_s3_bucket_acl.assets".to_string(), vec![set("acl", json!("log-delivery-write"))])]);
}

#[test]
fn key_rotation_is_turned_on_by_the_calls_name_and_a_key_scheduled_for_deletion_goes() {
    let arn = format!("arn:aws:kms:us-east-1:123456789012:key/{KEY}");
    let got = planned("kms.amazonaws.com", "EnableKeyRotation", json!({"keyId": arn})).unwrap();
    assert_eq!(got, vec![("aws_kms_key.data".to_string(), vec![set("enable_key_rotation", json!(true))])]);
    let got =
        planned("kms.amazonaws.com", "ScheduleKeyDeletion", json!({"keyId": KEY, "pendingWindowInDays": 7})).unwrap();
    assert_eq!(got, vec![("aws_kms_key.data".to_string(), vec![Op::RemoveResource])]);
}

#[test]
fn a_change_to_an_argument_the_code_ignores_is_not_planned() {
    let plan = plan(
        &Catalog::builtin(),
        &change_set(
            "ecs.amazonaws.com",
            "UpdateService",
            json!({"cluster": "prod", "service": "api", "desiredCount": 5}),
        ),
        &state(),
        &repo(),
    )
    .unwrap();
    assert!(plan.changes.iter().all(|c| c.ops.is_empty()), "{:?}", plan.changes);
    assert!(
        plan.notes.iter().any(|n| n.contains("desired_count is in its lifecycle ignore_changes")),
        "{:?}",
        plan.notes
    );
    // What it does not ignore still changes.
    let got = planned(
        "ecs.amazonaws.com",
        "UpdateService",
        json!({"cluster": "prod", "service": "api", "taskDefinition": "api:8"}),
    )
    .unwrap();
    assert_eq!(got, vec![("aws_ecs_service.api".to_string(), vec![set("task_definition", json!("api:8"))])]);
}

#[test]
fn a_call_by_name_finds_the_resource_known_by_the_arn_of_that_name() {
    // `aws secretsmanager rotate-secret --secret-id db`: the rotation knows the secret by its ARN.
    let got = planned(
        "secretsmanager.amazonaws.com",
        "RotateSecret",
        json!({"secretId": "db", "rotationRules": {"automaticallyAfterDays": 14}}),
    )
    .unwrap();
    assert_eq!(
        got,
        vec![(
            "aws_secretsmanager_secret_rotation.db".to_string(),
            vec![set("rotation_rules.automatically_after_days", json!(14))]
        )]
    );
    let err = planned(
        "secretsmanager.amazonaws.com",
        "RotateSecret",
        json!({"secretId": "other", "rotationRules": {"automaticallyAfterDays": 14}}),
    )
    .unwrap_err();
    assert!(matches!(err, PlanError::NotManaged { .. }), "{err}");
}

#[test]
fn a_deleted_route_removes_its_route_resource_or_the_tables_inline_block() {
    let got = planned(
        "ec2.amazonaws.com",
        "DeleteRoute",
        json!({"routeTableId": "rtb-private", "destinationCidrBlock": "10.20.0.0/16"}),
    )
    .unwrap();
    assert_eq!(got, vec![("aws_route.private_peer".to_string(), vec![Op::RemoveResource])]);
    let got = planned(
        "ec2.amazonaws.com",
        "DeleteRoute",
        json!({"routeTableId": "rtb-public", "destinationCidrBlock": "10.20.0.0/16"}),
    )
    .unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, "aws_route_table.public");
    assert!(
        matches!(&got[0].1[..], [Op::RemoveBlocks { block_type, matching }] if block_type == "route"
            && matching == &vec![("cidr_block".to_string(), json!("10.20.0.0/16"))]),
        "{:?}",
        got[0].1
    );
}

#[test]
fn a_topic_created_in_the_console_keeps_what_its_call_set_and_what_it_cannot_write_is_said() {
    let cs = change_set(
        "sns.amazonaws.com",
        "CreateTopic",
        json!({"name": "orders-alarms", "attributes": {"DisplayName": "Orders", "ArchivePolicy": "{}"},
               "tags": [{"key": "Team", "value": "orders"}]}),
    );
    let mut cs = cs;
    cs.events[0].response = json!({"topicArn": "arn:aws:sns:us-east-1:123456789012:orders-alarms"});
    let plan = plan(&Catalog::builtin(), &cs, &state(), &repo()).unwrap();
    let change = &plan.changes[0];
    let Op::CreateResource { spec, import_id } = &change.ops[0] else { panic!("{:?}", change.ops) };
    assert_eq!(import_id, "arn:aws:sns:us-east-1:123456789012:orders-alarms");
    assert_eq!(spec.attrs[0], ("name".to_string(), AttrValue::Literal(json!("orders-alarms"))));
    assert!(spec.attrs.contains(&("display_name".to_string(), AttrValue::Literal(json!("Orders")))), "{spec:?}");
    assert!(spec.attrs.contains(&("tags".to_string(), AttrValue::Literal(json!({"Team": "orders"})))), "{spec:?}");
    assert!(
        plan.notes.iter().any(|n| n.contains("also set attributes.ArchivePolicy, which the new block does not write")),
        "{:?}",
        plan.notes
    );
}

/// A Route 53 batch as CloudTrail logs it.
fn record_change(action: &str, record: Value) -> Value {
    json!({"hostedZoneId": "Z0123456789ABCDEFGHIJ",
           "changeBatch": {"changes": [{"action": action, "resourceRecordSet": record}]}})
}

#[test]
fn a_record_changed_in_a_batch_is_found_by_name_type_and_set_identifier() {
    let got = planned(
        "route53.amazonaws.com",
        "ChangeResourceRecordSets",
        record_change(
            "UPSERT",
            json!({"name": "www.example.com.", "type": "A", "tTL": 60,
                                        "resourceRecords": [{"value": "192.0.2.10"}]}),
        ),
    )
    .unwrap();
    assert_eq!(got[0].0, "aws_route53_record.www");
    assert!(got[0].1.contains(&set("ttl", json!(60))), "{:?}", got[0].1);
    let got = planned(
        "route53.amazonaws.com",
        "ChangeResourceRecordSets",
        record_change(
            "UPSERT",
            json!({"name": "api.example.com.", "type": "CNAME", "setIdentifier": "green",
            "weight": 50, "tTL": 60, "resourceRecords": [{"value": "green.example.com"}]}),
        ),
    )
    .unwrap();
    assert_eq!(got[0].0, "aws_route53_record.api_green");
    assert!(got[0].1.contains(&set("weighted_routing_policy.weight", json!(50))), "{:?}", got[0].1);
    let got = planned(
        "route53.amazonaws.com",
        "ChangeResourceRecordSets",
        record_change(
            "DELETE",
            json!({"name": "api.example.com.", "type": "CNAME", "setIdentifier": "blue",
            "weight": 90, "tTL": 60, "resourceRecords": [{"value": "blue.example.com"}]}),
        ),
    )
    .unwrap();
    assert_eq!(got, vec![("aws_route53_record.api_blue".to_string(), vec![Op::RemoveResource])]);
    // A routing setting no rule reads is refused by name, never dropped.
    let err = planned(
        "route53.amazonaws.com",
        "ChangeResourceRecordSets",
        record_change(
            "UPSERT",
            json!({"name": "www.example.com.", "type": "A", "tTL": 60,
            "geoLocation": {"countryCode": "DE"}, "resourceRecords": [{"value": "192.0.2.10"}]}),
        ),
    )
    .unwrap_err();
    assert!(matches!(err, PlanError::Unmapped { .. }), "{err}");
    // A new record is adopted with the provider's import id, its name without the final dot.
    let got = planned(
        "route53.amazonaws.com",
        "ChangeResourceRecordSets",
        record_change(
            "CREATE",
            json!({"name": "new.example.com.", "type": "TXT", "tTL": 60,
            "resourceRecords": [{"value": "\"v=spf1 -all\""}]}),
        ),
    )
    .unwrap();
    let [(address, ops)] = &got[..] else { panic!("{got:?}") };
    assert_eq!(address, "aws_route53_record.new_example_com");
    let [Op::CreateResource { spec, import_id }] = &ops[..] else { panic!("{ops:?}") };
    assert_eq!(import_id, "Z0123456789ABCDEFGHIJ_new.example.com_TXT");
    let attr = |name: &str| spec.attrs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    assert_eq!(attr("name"), Some(AttrValue::Literal(json!("new.example.com"))));
    // TXT values as Terraform writes them: without Route 53's wire quotes.
    assert_eq!(attr("records"), Some(AttrValue::Literal(json!(["v=spf1 -all"]))));
    // A new record with a routing policy the block would not write is refused, not adopted as a plain one.
    let err = planned(
        "route53.amazonaws.com",
        "ChangeResourceRecordSets",
        record_change(
            "CREATE",
            json!({"name": "geo.example.com.", "type": "A", "tTL": 60, "setIdentifier": "eu",
            "geoLocation": {"continentCode": "EU"}, "resourceRecords": [{"value": "192.0.2.30"}]}),
        ),
    )
    .unwrap_err();
    assert!(matches!(err, PlanError::Unmapped { .. }), "{err}");
}

#[test]
fn an_attribute_a_named_setting_recipe_does_not_map_is_refused_by_name() {
    let err = planned(
        "sns.amazonaws.com",
        "SetTopicAttributes",
        json!({"topicArn": "arn:aws:sns:us-east-1:123456789012:alerts", "attributeName": "ArchivePolicy",
               "attributeValue": "{\"MessageRetentionPeriod\":\"30\"}"}),
    )
    .unwrap_err();
    assert!(err.to_string().contains("attributeName ArchivePolicy"), "{err}");
}

#[test]
fn a_call_on_several_resources_plans_its_own_and_says_what_it_does_to_the_others() {
    let request = json!({"resourcesSet": {"items": [{"resourceId": "rtb-public"}, {"resourceId": "rtb-private-unknown"}]},
                         "tagSet": {"items": [{"key": "Tier", "value": "edge"}]}});
    let mut cs = change_set("ec2.amazonaws.com", "CreateTags", request.clone());
    cs.resource_id = Some("rtb-public".into());
    let planned = plan(&Catalog::builtin(), &cs, &state(), &repo()).unwrap();
    assert_eq!(planned.changes.len(), 1);
    assert_eq!(planned.changes[0].address.to_string(), "aws_route_table.public");
    // The other resource is not managed here: nothing alongside.
    assert!(planned.alongside.is_empty(), "{:?}", planned.alongside);
    let both = json!({"resourcesSet": {"items": [{"resourceId": "rtb-public"}, {"resourceId": KEY}]},
                      "tagSet": {"items": [{"key": "Tier", "value": "edge"}]}});
    let mut cs = change_set("ec2.amazonaws.com", "CreateTags", both);
    cs.resource_id = Some("rtb-public".into());
    let planned = plan(&Catalog::builtin(), &cs, &state(), &repo()).unwrap();
    let alongside: Vec<String> = planned.alongside.iter().map(|c| c.address.to_string()).collect();
    assert_eq!(alongside, ["aws_kms_key.data"]);
    assert_eq!(planned.alongside[0].ops, planned.changes[0].ops);
}

#[test]
fn a_permission_added_to_a_function_is_adopted_with_the_providers_import_id() {
    let request = json!({"functionName": "thumbnails", "statementId": "AllowEventBridge",
                         "action": "lambda:InvokeFunction", "principal": "events.amazonaws.com",
                         "sourceArn": "arn:aws:events:us-east-1:123456789012:rule/nightly"});
    let first = plan(
        &Catalog::builtin(),
        &change_set("lambda.amazonaws.com", "AddPermission20150331v2", request),
        &state(),
        &repo(),
    )
    .unwrap();
    let change = &first.changes[0];
    assert_eq!(change.address.to_string(), "aws_lambda_permission.alloweventbridge");
    let Op::CreateResource { spec, import_id } = &change.ops[0] else { panic!("{:?}", change.ops) };
    assert_eq!(import_id, "thumbnails/AllowEventBridge");
    assert!(spec.attrs.contains(&("principal".to_string(), AttrValue::Literal(json!("events.amazonaws.com")))));
    // The statement the code already has: nothing to adopt.
    let again = json!({"functionName": "thumbnails", "statementId": "AllowS3", "action": "lambda:InvokeFunction",
                       "principal": "s3.amazonaws.com"});
    let second = plan(
        &Catalog::builtin(),
        &change_set("lambda.amazonaws.com", "AddPermission20150331v2", again),
        &state(),
        &repo(),
    )
    .unwrap();
    assert!(second.changes.is_empty(), "{:?}", second.changes);
}

#[test]
fn a_new_default_policy_version_changes_the_policy_and_a_version_kept_aside_is_not_written() {
    let doc = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:PutObject","Resource":"*"}]}"#;
    let got = planned(
        "iam.amazonaws.com",
        "CreatePolicyVersion",
        json!({"policyArn": POLICY, "policyDocument": doc, "setAsDefault": true}),
    )
    .unwrap();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, "aws_iam_policy.deploy");
    // The code builds the document with jsonencode: the changed member is written, not the whole text.
    let written = format!("{:?}", got[0].1);
    assert!(written.contains("s3:PutObject"), "{written}");
    assert!(!written.contains("s3:GetObject"), "{written}");
    // A version created without becoming the default is not what the code describes: nothing planned.
    let kept_aside = planned(
        "iam.amazonaws.com",
        "CreatePolicyVersion",
        json!({"policyArn": POLICY, "policyDocument": doc, "setAsDefault": false}),
    )
    .unwrap();
    assert!(kept_aside.iter().all(|(_, ops)| ops.is_empty()), "{kept_aside:?}");
}

#[test]
fn a_version_made_the_default_later_takes_its_document_from_the_call_that_created_it() {
    let doc = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:ListBucket","Resource":"*"}]}"#;
    let record = |id: &str, name: &str, request: Value, response: Value| {
        json!({"eventID": id, "eventTime": format!("2024-03-01T10:0{}:00Z", id.len()), "eventSource": "iam.amazonaws.com",
               "eventName": name, "requestParameters": request, "responseElements": response,
               "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/alice", "userName": "alice"}})
    };
    let create = record(
        "e1",
        "CreatePolicyVersion",
        json!({"policyArn": POLICY, "policyDocument": doc, "setAsDefault": false}),
        json!({"policyVersion": {"versionId": "v3", "isDefaultVersion": false}}),
    );
    let set_default =
        record("e22", "SetDefaultPolicyVersion", json!({"policyArn": POLICY, "versionId": "v3"}), Value::Null);
    let events = [&create, &set_default].map(|r| driftback_events::normalize(r).unwrap()).to_vec();
    let change_set = driftback_events::group(events, &Default::default()).remove(0);
    assert_eq!(change_set.events.len(), 2);
    let planned = plan(&Catalog::builtin(), &change_set, &state(), &repo()).unwrap();
    let written = format!("{:?}", planned.changes);
    assert!(written.contains("s3:ListBucket"), "{written}");
    assert_eq!(planned.changes[0].address.to_string(), "aws_iam_policy.deploy");
    // Alone, the call names a version whose document no event holds: a person must say it.
    let alone = driftback_events::group(vec![driftback_events::normalize(&set_default).unwrap()], &Default::default())
        .remove(0);
    let err = plan(&Catalog::builtin(), &alone, &state(), &repo()).unwrap_err();
    assert!(err.to_string().contains("no such call is in this change set"), "{err}");
}
