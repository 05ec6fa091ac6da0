//! Records as AWS's service guides print them, planned against a small repository that manages the
//! resource: identifiers read where each API logs them (requestParameters, then responseElements,
//! then resources[]), queues matched by region, account and name whatever host their URL names,
//! and a record that names no resource said as such. The records under `tests/records/` are the
//! guides' examples as printed (DynamoDB developer guide, "Understanding DynamoDB log file
//! entries"; SQS developer guide, "Logging Amazon SQS API calls using AWS CloudTrail").

use std::path::PathBuf;

use driftback_events::{ApiEvent, ChangeSet, GroupConfig, decode, group};
use driftback_recipes::{Catalog, Plan, PlanError, plan};
use driftback_terraform::{AttrValue, Op, Repo, State};
use serde_json::{Value, json};

const MAIN: &str = r#"resource "aws_dynamodb_table" "music" {
  name           = "Music"
  billing_mode   = "PROVISIONED"
  read_capacity  = 10
  write_capacity = 10
  hash_key       = "Artist"
  range_key      = "SongTitle"

  attribute {
    name = "Artist"
    type = "S"
  }

  attribute {
    name = "SongTitle"
    type = "S"
  }
}

resource "aws_sqs_queue" "jobs" {
  name                       = "MyQueue"
  visibility_timeout_seconds = 30
}
"#;

fn resource(rtype: &str, name: &str, attributes: Value) -> Value {
    json!({"mode": "managed", "type": rtype, "name": name,
           "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
           "instances": [{"schema_version": 0, "attributes": attributes}]})
}

/// The state as the provider records it; the queue's URL in the regional `queue` host form.
fn state(extra: Vec<Value>) -> State {
    let mut resources = vec![
        resource(
            "aws_dynamodb_table",
            "music",
            json!({"id": "Music", "name": "Music", "arn": "arn:aws:dynamodb:us-west-2:111122223333:table/Music",
                   "billing_mode": "PROVISIONED", "read_capacity": 10, "write_capacity": 10}),
        ),
        resource(
            "aws_sqs_queue",
            "jobs",
            json!({"id": "https://us-east-2.queue.amazonaws.com/123456789012/MyQueue",
                   "url": "https://us-east-2.queue.amazonaws.com/123456789012/MyQueue",
                   "arn": "arn:aws:sqs:us-east-2:123456789012:MyQueue", "name": "MyQueue",
                   "visibility_timeout_seconds": 30}),
        ),
    ];
    resources.extend(extra);
    let text = json!({"version": 4, "terraform_version": "1.9.5", "serial": 1, "lineage": "x", "outputs": {},
                      "resources": resources});
    State::parse(&text.to_string(), "terraform.tfstate").unwrap()
}

fn repo() -> Repo {
    Repo::from_files([(PathBuf::from("main.tf"), MAIN.to_string())].into_iter().collect())
}

/// The one event of a record file under `tests/records/`.
fn recorded(file: &str) -> ApiEvent {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/records").join(file);
    let batch = decode(&std::fs::read(&path).unwrap(), file).unwrap();
    assert!(batch.bad.is_empty(), "{:?}", batch.bad);
    batch.events.into_iter().next().unwrap().0
}

fn one(event: ApiEvent) -> ChangeSet {
    group(vec![event], &GroupConfig::default()).remove(0)
}

fn planned(event: ApiEvent, state: &State) -> Result<Plan, PlanError> {
    plan(&Catalog::builtin(), &one(event), state, &repo())
}

/// `(address, path = value)` of every literal the plan sets.
fn sets(plan: &Plan) -> Vec<(String, String)> {
    plan.changes
        .iter()
        .flat_map(|c| {
            c.ops.iter().filter_map(move |op| match op {
                Op::Set { path, value: AttrValue::Literal(v) } => {
                    Some((c.address.to_string(), format!("{path} = {v}")))
                }
                _ => None,
            })
        })
        .collect()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

#[test]
fn a_table_named_only_in_the_response_is_found_there() {
    let event = recorded("dynamodb-update-table.json");
    assert!(event.request.get("tableName").is_none(), "the console's request names no table");
    let plan = planned(event, &state(vec![])).unwrap();
    assert_eq!(
        sets(&plan),
        pairs(&[
            ("aws_dynamodb_table.music", "read_capacity = 25"),
            ("aws_dynamodb_table.music", "write_capacity = 25")
        ])
    );
}

#[test]
fn a_table_named_only_in_resources_is_found_there() {
    let mut event = recorded("dynamodb-update-table.json");
    event.response = Value::Null;
    // As the same guide prints `resources[]` for DynamoDB calls.
    event.resources = vec![driftback_events::TouchedResource {
        arn: Some("arn:aws:dynamodb:us-west-2:111122223333:table/Music".into()),
        resource_type: Some("AWS::DynamoDB::Table".into()),
        account_id: Some("111122223333".into()),
    }];
    let plan = planned(event, &state(vec![])).unwrap();
    assert_eq!(sets(&plan).len(), 2, "{plan:?}");
    assert!(plan.changes.iter().all(|c| c.address.to_string() == "aws_dynamodb_table.music"));
}

#[test]
fn a_record_that_names_no_table_says_so() {
    let mut event = recorded("dynamodb-update-table.json");
    event.response = json!({"tableDescription": {"tableStatus": "UPDATING"}});
    let err = planned(event, &state(vec![])).unwrap_err();
    assert!(matches!(err, PlanError::NoIdentifier { .. }), "{err}");
    let said = err.to_string();
    assert!(said.contains("names no dynamodb table") && said.contains("tableName"), "{said}");
    assert!(!said.contains("no recipe"), "{said}");
}

#[test]
fn a_queue_is_the_same_queue_whatever_host_its_url_names() {
    let printed = recorded("sqs-set-queue-attributes.json");
    let state = state(vec![]);
    for url in [
        // As the guide prints it.
        printed.request["queueUrl"].as_str().unwrap().to_string(),
        "https://sqs.us-east-2.amazonaws.com/123456789012/MyQueue".into(),
        "https://us-east-2.queue.amazonaws.com/123456789012/MyQueue".into(),
    ] {
        let mut event = printed.clone();
        event.request["queueUrl"] = json!(url);
        let plan = planned(event, &state).unwrap_or_else(|e| panic!("{url}: {e}"));
        assert_eq!(sets(&plan), pairs(&[("aws_sqs_queue.jobs", "visibility_timeout_seconds = 100")]), "{url}");
    }
    // Another account's queue of the same name is not this one.
    let mut event = printed.clone();
    event.request["queueUrl"] = json!("https://sqs.us-east-2.amazonaws.com/210987654321/MyQueue");
    let err = planned(event, &state).unwrap_err();
    assert!(matches!(err, PlanError::NotManaged { .. }), "{err}");
    assert!(err.to_string().starts_with("the SQS queue MyQueue of account 210987654321 in us-east-2"), "{err}");
}

#[test]
fn a_redrive_policy_managed_apart_is_found_whatever_host_its_url_names() {
    // The redrive policy's own resource records the queue by its `sqs.` host; the call names the
    // `queue.` host: the policy is still changed where it is managed, never on the queue.
    let policy = resource(
        "aws_sqs_queue_redrive_policy",
        "jobs",
        json!({"id": "https://sqs.us-east-2.amazonaws.com/123456789012/MyQueue",
               "queue_url": "https://sqs.us-east-2.amazonaws.com/123456789012/MyQueue",
               "redrive_policy": "{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-2:123456789012:dlq\",\"maxReceiveCount\":5}"}),
    );
    let mut event = recorded("sqs-set-queue-attributes.json");
    event.request = json!({
        "queueUrl": "https://us-east-2.queue.amazonaws.com/123456789012/MyQueue",
        "attributes": {"RedrivePolicy": "{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-2:123456789012:dlq\",\"maxReceiveCount\":9}"}
    });
    let plan = planned(event, &state(vec![policy])).unwrap();
    let addresses: Vec<String> = plan.changes.iter().map(|c| c.address.to_string()).collect();
    assert_eq!(addresses, ["aws_sqs_queue_redrive_policy.jobs"], "{plan:?}");
}
