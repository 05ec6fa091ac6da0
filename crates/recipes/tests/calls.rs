//! The table of calls (data/aws-calls.tsv) against the catalog format and the corpus's events.

use std::path::Path;

use driftback_recipes::{Calls, Catalog};
use serde_json::Value;

fn recipe(source: &str, event: &str, body: &str) -> String {
    format!(
        "[[recipe]]\nid = \"probe\"\nsource = \"{source}\"\nevents = [\"{event}\"]\ntypes = [\"aws_instance\"]\n{body}\n"
    )
}

#[test]
fn the_builtin_catalog_loads_under_the_check() {
    let catalog = Catalog::builtin();
    let calls = Calls::builtin();
    for r in &catalog.recipes {
        for event in &r.events {
            assert!(calls.get(&r.source, event).is_some(), "{} {} {event}", r.id, r.source);
        }
    }
}

#[test]
fn a_misspelled_event_is_refused_by_name_with_the_closest_names() {
    let text = recipe("ec2.amazonaws.com", "ModifyInstanceAtribute", "key = \"instanceId\"\ndelete = true");
    let err = Catalog::from_toml(&text, "c.toml").unwrap_err().to_string();
    assert!(err.contains("recipe \"probe\""), "{err}");
    assert!(err.contains("`ModifyInstanceAtribute`"), "{err}");
    assert!(err.contains("closest: ModifyInstanceAttribute"), "{err}");
}

#[test]
fn an_api_operation_name_is_refused_with_the_name_cloudtrail_logs() {
    let text = recipe("s3.amazonaws.com", "PutPublicAccessBlock", "key = \"bucketName\"\nremove = [\"tags\"]");
    let err = Catalog::from_toml(&text, "c.toml").unwrap_err().to_string();
    assert!(err.contains("recipe \"probe\""), "{err}");
    assert!(err.contains("CloudTrail logs this as PutBucketPublicAccessBlock"), "{err}");
    let fixed = recipe("s3.amazonaws.com", "PutBucketPublicAccessBlock", "key = \"bucketName\"\nremove = [\"tags\"]");
    Catalog::from_toml(&fixed, "c.toml").unwrap();
}

#[test]
fn a_member_that_does_not_exist_is_refused() {
    let text = recipe(
        "ec2.amazonaws.com",
        "ModifyInstanceAttribute",
        "key = \"instanceId\"\nset = [{ path = \"instance_type\", from = \"instanceTipe.value\" }]",
    );
    let err = Catalog::from_toml(&text, "c.toml").unwrap_err().to_string();
    assert!(err.contains("recipe \"probe\""), "{err}");
    assert!(err.contains("no request member `instanceTipe`") && err.contains("instanceType"), "{err}");

    // Every path kind is checked: a key, a map rule's items, a create rule's attributes.
    let text = recipe("sqs.amazonaws.com", "SetQueueAttributes", "key = \"queueURL\"\nremove = [\"tags\"]");
    let err = Catalog::from_toml(&text, "c.toml").unwrap_err().to_string();
    assert!(err.contains("`queueURL`") && err.contains("queueUrl"), "{err}");
    let text = recipe(
        "sqs.amazonaws.com",
        "TagQueue",
        "key = \"queueUrl\"\nmap_merge = [{ path = \"tags\", object = \"tag\" }]",
    );
    let err = Catalog::from_toml(&text, "c.toml").unwrap_err().to_string();
    assert!(err.contains("`tag`"), "{err}");
    let text = recipe(
        "sqs.amazonaws.com",
        "CreateQueue",
        "create = { type = \"aws_sqs_queue\", name = \"queueName\", import_id = \"response.queueUrl\", attrs = { delay_seconds = \"attribute.DelaySeconds:number\" } }",
    );
    let err = Catalog::from_toml(&text, "c.toml").unwrap_err().to_string();
    assert!(err.contains("`attribute`") && err.contains("attributes"), "{err}");

    // Inside an EC2 `<Operation>Request` wrapper, the wire names.
    let text = recipe(
        "ec2.amazonaws.com",
        "ModifyVolume",
        "key = \"ModifyVolumeRequest.VolumeId\"\nset = [{ path = \"size\", from = \"ModifyVolumeRequest.Sise\" }]",
    );
    let err = Catalog::from_toml(&text, "c.toml").unwrap_err().to_string();
    assert!(err.contains("`Sise`") && err.contains("Size"), "{err}");
}

/// Corpus events whose names the table says CloudTrail does not log: (eventSource, eventName, what
/// CloudTrail logs). None: the corpus uses the names CloudTrail logs.
const CORPUS_KNOWN_WRONG: &[(&str, &str, &str)] = &[];

/// Request members CloudTrail logs that the API models do not have: (eventSource, eventName,
/// member, why).
const CORPUS_KNOWN_WRONG_MEMBERS: &[(&str, &str, &str, &str)] = &[(
    "dynamodb.amazonaws.com",
    "PutItem",
    "key",
    "a DynamoDB data event logs the item's primary key as `key`, not the item the API sends",
)];

/// Every event in the corpora exists in the table, with every top-level request member, and EC2's
/// wrapper form where the table expects it: the corpus was written from real request shapes, so this
/// checks the table's naming rules (and the table flags the corpus's hand-written slips).
#[test]
fn the_corpus_events_are_in_the_table() {
    let calls = Calls::builtin();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests");
    let mut checked = 0;
    let mut problems = Vec::new();
    for corpus in ["corpus", "corpus-wild"] {
        let Ok(dirs) = std::fs::read_dir(root.join(corpus).join("scenarios")) else { continue };
        for dir in dirs.flatten() {
            let Ok(text) = std::fs::read_to_string(dir.path().join("events.json")) else { continue };
            let Ok(value) = serde_json::from_str::<Value>(&text) else { continue };
            let records = value.get("Records").and_then(Value::as_array).cloned().unwrap_or_default();
            for record in records {
                let record = record.get("detail").cloned().unwrap_or(record);
                let (Some(source), Some(name)) = (record["eventSource"].as_str(), record["eventName"].as_str()) else {
                    continue;
                };
                // What a service does on its own (KMS's automatic `RotateKey`) is no API operation.
                if record["eventType"] == "AwsServiceEvent" {
                    continue;
                }
                checked += 1;
                if CORPUS_KNOWN_WRONG.iter().any(|(s, e, _)| *s == source && *e == name) {
                    let err = calls.check_event(source, name).unwrap_err().to_string();
                    assert!(err.contains("CloudTrail logs this as"), "{err}");
                    continue;
                }
                let call = match calls.check_event(source, name) {
                    Ok(call) => call,
                    Err(e) => {
                        problems.push(format!("{}: {e}", dir.path().display()));
                        continue;
                    }
                };
                if let Some(Value::Object(params)) = record.get("requestParameters") {
                    for key in params.keys() {
                        if CORPUS_KNOWN_WRONG_MEMBERS.iter().any(|(s, e, m, _)| *s == source && *e == name && m == key)
                        {
                            assert!(call.check_path(key).is_err(), "{source} {name} {key} is in the table now");
                            continue;
                        }
                        if let Err(e) = call.check_path(key) {
                            problems.push(format!("{}: {e}", dir.path().display()));
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} corpus events found");
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}
