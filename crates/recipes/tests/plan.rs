//! Planning against a small repository and state: a call's parameters are either written into the
//! code or refused by name, never dropped without a word.

use std::collections::BTreeMap;
use std::path::PathBuf;

use driftback_events::{ChangeSet, GroupConfig, group, normalize};
use driftback_recipes::{Catalog, PlanError, plan};
use driftback_terraform::{Op, Repo, State};
use serde_json::{Value, json};

const MAIN: &str = r#"resource "aws_sqs_queue" "jobs" {
  name                       = "jobs"
  visibility_timeout_seconds = 30
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.dlq.arn
    maxReceiveCount     = 5
  })
}

resource "aws_dynamodb_table" "sessions" {
  name           = "sessions"
  billing_mode   = "PROVISIONED"
  read_capacity  = 5
  write_capacity = 5
  hash_key       = "id"
}
"#;

const URL: &str = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs";

fn state() -> State {
    let resource = |rtype: &str, attributes: Value| {
        json!({"mode": "managed", "type": rtype, "name": if rtype == "aws_sqs_queue" { "jobs" } else { "sessions" },
               "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
               "instances": [{"schema_version": 0, "attributes": attributes}]})
    };
    let text = json!({
        "version": 4, "terraform_version": "1.9.5", "serial": 1, "lineage": "x", "outputs": {},
        "resources": [
            resource("aws_sqs_queue", json!({"id": URL, "url": URL, "name": "jobs", "visibility_timeout_seconds": 30,
                "redrive_policy": "{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:123456789012:dlq\",\"maxReceiveCount\":5}"})),
            resource("aws_dynamodb_table", json!({"id": "sessions", "name": "sessions", "billing_mode": "PROVISIONED",
                                                  "read_capacity": 5, "write_capacity": 5})),
        ]
    });
    State::parse(&text.to_string(), "terraform.tfstate").unwrap()
}

fn repo() -> Repo {
    Repo::from_files(BTreeMap::from([(PathBuf::from("main.tf"), MAIN.to_string())]))
}

fn change_set(source: &str, name: &str, request: Value) -> ChangeSet {
    let event = normalize(&json!({
        "eventID": "e1", "eventTime": "2024-03-01T10:00:00Z", "eventSource": source, "eventName": name,
        "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/alice", "userName": "alice"},
        "requestParameters": request
    }))
    .unwrap();
    group(vec![event], &GroupConfig::default()).remove(0)
}

fn ops(result: Result<driftback_recipes::Plan, PlanError>) -> Vec<Op> {
    result.unwrap().changes.into_iter().flat_map(|c| c.ops).collect()
}

#[test]
fn an_attribute_no_recipe_rule_maps_is_refused_by_name() {
    let catalog = Catalog::builtin();
    let set = |attributes: Value| {
        change_set("sqs.amazonaws.com", "SetQueueAttributes", json!({"queueUrl": URL, "attributes": attributes}))
    };
    let known = plan(&catalog, &set(json!({"VisibilityTimeout": "60"})), &state(), &repo());
    assert_eq!(ops(known).len(), 1);
    let err =
        plan(&catalog, &set(json!({"VisibilityTimeout": "60", "FutureSetting": "on"})), &state(), &repo()).unwrap_err();
    assert!(matches!(&err, PlanError::Unmapped { params, .. } if params == "FutureSetting"), "{err}");
    assert!(err.to_string().contains("also sets FutureSetting"), "{err}");
}

#[test]
fn on_demand_billing_removes_the_provisioned_capacity() {
    let catalog = Catalog::builtin();
    let cs = change_set(
        "dynamodb.amazonaws.com",
        "UpdateTable",
        json!({"tableName": "sessions", "billingMode": "PAY_PER_REQUEST"}),
    );
    let ops = ops(plan(&catalog, &cs, &state(), &repo()));
    let removed: Vec<String> =
        ops.iter().filter_map(|o| if let Op::Remove { path } = o { Some(path.to_string()) } else { None }).collect();
    assert_eq!(removed, ["read_capacity", "write_capacity"], "{ops:?}");
    // Provisioned billing keeps them.
    let cs = change_set(
        "dynamodb.amazonaws.com",
        "UpdateTable",
        json!({"tableName": "sessions", "billingMode": "PROVISIONED",
        "provisionedThroughput": {"readCapacityUnits": 10, "writeCapacityUnits": 10}}),
    );
    assert!(ops_of(&catalog, &cs).iter().all(|o| !matches!(o, Op::Remove { .. })));
}

fn ops_of(catalog: &Catalog, cs: &ChangeSet) -> Vec<Op> {
    ops(plan(catalog, cs, &state(), &repo()))
}

#[test]
fn a_json_document_built_from_other_resources_changes_member_by_member() {
    let catalog = Catalog::builtin();
    let policy = r#"{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:dlq","maxReceiveCount":3}"#;
    let cs = change_set(
        "sqs.amazonaws.com",
        "SetQueueAttributes",
        json!({"queueUrl": URL, "attributes": {"RedrivePolicy": policy}}),
    );
    let ops = ops_of(&catalog, &cs);
    assert_eq!(ops.len(), 1, "{ops:?}");
    let Op::Set { path, value } = &ops[0] else { panic!("{ops:?}") };
    assert_eq!(path.to_string(), r#"redrive_policy["maxReceiveCount"]"#);
    assert_eq!(value, &driftback_terraform::AttrValue::Literal(json!(3)));
}
