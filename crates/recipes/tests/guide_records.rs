//! Calls of the documented-records corpus (`tests/corpus-records`) planned from the records as the
//! AWS guides print them: KMS aliases and key state (KMS Developer Guide), keys created with each
//! origin, a Route 53 hosted zone deleted and a health check created (Route 53 Developer Guide), an
//! ECS cluster created (ECS Developer Guide), and S3 server access logging turned on for a bucket
//! whose logging the code does not manage yet.

use std::path::PathBuf;

use driftback_events::{ApiEvent, GroupConfig, decode, group};
use driftback_recipes::{Catalog, Plan, PlanError, plan};
use driftback_terraform::{AttrValue, Op, Repo, State};
use serde_json::{Value, json};

/// The events of a scenario of the documented-records corpus, as printed.
fn printed(scenario: &str) -> Vec<ApiEvent> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/corpus-records/scenarios")
        .join(scenario)
        .join("events.json");
    let batch = decode(&std::fs::read(&path).unwrap(), scenario).unwrap();
    assert!(batch.bad.is_empty(), "{:?}", batch.bad);
    batch.events.into_iter().map(|(e, _)| e).collect()
}

fn resource(rtype: &str, name: &str, attributes: Value) -> Value {
    json!({"mode": "managed", "type": rtype, "name": name,
           "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
           "instances": [{"schema_version": 0, "attributes": attributes}]})
}

fn state(resources: Vec<Value>) -> State {
    let text = json!({"version": 4, "terraform_version": "1.9.5", "serial": 1, "lineage": "x", "outputs": {},
                      "resources": resources});
    State::parse(&text.to_string(), "terraform.tfstate").unwrap()
}

fn planned(events: Vec<ApiEvent>, state: &State, main_tf: &str) -> Result<Plan, PlanError> {
    let repo = Repo::from_files([(PathBuf::from("main.tf"), main_tf.to_string())].into_iter().collect());
    let change_set = group(events, &GroupConfig::default()).remove(0);
    plan(&Catalog::builtin(), &change_set, state, &repo)
}

const APP: &str = "1234abcd-12ab-34cd-56ef-1234567890ab";
const SIGNING: &str = "0987dcba-09fe-87dc-65ba-ab0987654321";

const KEYS_TF: &str = r#"resource "aws_kms_key" "app" {
  description = "Application data key"
}

resource "aws_kms_key" "signing" {
  description = "Release signing key"
}

resource "aws_kms_alias" "my_alias" {
  name          = "alias/my_alias"
  target_key_id = "0987dcba-09fe-87dc-65ba-ab0987654321"
}
"#;

fn keys(region: &str, app_enabled: bool) -> State {
    let key = |name: &str, id: &str, enabled: bool| {
        resource(
            "aws_kms_key",
            name,
            json!({"id": id, "key_id": id, "arn": format!("arn:aws:kms:{region}:111122223333:key/{id}"),
                   "is_enabled": enabled}),
        )
    };
    state(vec![
        key("app", APP, app_enabled),
        key("signing", SIGNING, true),
        resource(
            "aws_kms_alias",
            "my_alias",
            json!({"id": "alias/my_alias", "name": "alias/my_alias", "target_key_id": SIGNING,
                   "arn": format!("arn:aws:kms:{region}:111122223333:alias/my_alias")}),
        ),
    ])
}

fn ops_of(plan: &Plan, address: &str) -> Vec<Op> {
    plan.changes.iter().filter(|c| c.address.to_string() == address).flat_map(|c| c.ops.clone()).collect()
}

fn literal(ops: &[Op], attr: &str) -> Option<Value> {
    ops.iter().find_map(|op| match op {
        Op::Set { path, value: AttrValue::Literal(v) } if path.to_string() == attr => Some(v.clone()),
        _ => None,
    })
}

#[test]
fn enable_and_disable_key_set_is_enabled_on_the_key_the_record_names() {
    let plan = planned(printed("keyring-east-disabled-001-enable-key"), &keys("us-east-1", false), KEYS_TF).unwrap();
    assert_eq!(literal(&ops_of(&plan, "aws_kms_key.app"), "is_enabled"), Some(json!(true)), "{plan:?}");
    let plan = planned(printed("keyring-east-002-disable-key"), &keys("us-east-1", true), KEYS_TF).unwrap();
    assert_eq!(literal(&ops_of(&plan, "aws_kms_key.app"), "is_enabled"), Some(json!(false)), "{plan:?}");
    assert!(ops_of(&plan, "aws_kms_key.signing").is_empty());
}

#[test]
fn an_alias_is_created_updated_and_deleted_by_its_name() {
    let created = planned(printed("keyring-001-create-alias-console"), &keys("us-west-2", true), KEYS_TF).unwrap();
    let imports: Vec<(String, String)> = created
        .changes
        .iter()
        .flat_map(|c| {
            c.ops.iter().filter_map(move |op| match op {
                Op::CreateResource { import_id, spec } => Some((
                    import_id.clone(),
                    spec.literal_attrs().get("name").and_then(Value::as_str).unwrap_or_default().to_string(),
                )),
                _ => None,
            })
        })
        .collect();
    assert_eq!(imports, [("alias/ExampleAlias".to_string(), "alias/ExampleAlias".to_string())], "{created:?}");

    let updated = planned(printed("keyring-002-update-alias-target"), &keys("us-west-2", true), KEYS_TF).unwrap();
    assert_eq!(literal(&ops_of(&updated, "aws_kms_alias.my_alias"), "target_key_id"), Some(json!(APP)));

    let deleted = planned(printed("keyring-east-001-delete-alias"), &keys("us-east-1", true), KEYS_TF).unwrap();
    assert_eq!(ops_of(&deleted, "aws_kms_alias.my_alias"), [Op::RemoveResource], "{deleted:?}");
    // An alias the state does not manage is not some other alias.
    let mut other = printed("keyring-east-001-delete-alias");
    other[0].request["aliasName"] = json!("alias/unknown");
    assert!(matches!(planned(other, &keys("us-east-1", true), KEYS_TF), Err(PlanError::NotManaged { .. })));
}

#[test]
fn a_key_for_imported_material_is_adopted_as_an_external_key_and_others_as_keys() {
    let external =
        planned(printed("keyring-011-create-key-external-origin"), &keys("us-west-2", true), KEYS_TF).unwrap();
    let created: Vec<(String, String)> = external
        .changes
        .iter()
        .flat_map(|c| {
            let rtype = c.address.rtype.clone();
            c.ops.iter().filter_map(move |op| match op {
                Op::CreateResource { import_id, .. } => Some((rtype.clone(), import_id.clone())),
                _ => None,
            })
        })
        .collect();
    assert_eq!(created.len(), 1, "{external:?}");
    assert_eq!(created[0].0, "aws_kms_external_key");
    // The same record with the default origin is an ordinary key.
    let mut events = printed("keyring-011-create-key-external-origin");
    events[0].request["origin"] = json!("AWS_KMS");
    let key = planned(events, &state(vec![]), "").unwrap();
    assert!(key.changes.iter().all(|c| c.address.rtype == "aws_kms_key"), "{key:?}");
    assert!(key.changes.iter().flat_map(|c| &c.ops).any(|op| matches!(op, Op::CreateResource { .. })));
}

#[test]
fn a_hosted_zone_is_deleted_by_its_id_and_a_health_check_adopted_by_the_id_in_the_response() {
    let zone = state(vec![resource(
        "aws_route53_zone",
        "main",
        json!({"id": "Z1PA6795UKMFR9", "zone_id": "Z1PA6795UKMFR9", "name": "example.com"}),
    )]);
    let main = "resource \"aws_route53_zone\" \"main\" {\n  name = \"example.com\"\n}\n";
    let deleted = planned(printed("dns-empty-001-delete-hosted-zone"), &zone, main).unwrap();
    assert_eq!(ops_of(&deleted, "aws_route53_zone.main"), [Op::RemoveResource]);

    let check = planned(printed("dns-002-health-check-created"), &zone, main).unwrap();
    let created: Vec<(String, serde_json::Map<String, Value>)> = check
        .changes
        .iter()
        .flat_map(|c| {
            c.ops.iter().filter_map(|op| match op {
                Op::CreateResource { import_id, spec } => Some((import_id.clone(), spec.literal_attrs())),
                _ => None,
            })
        })
        .collect();
    assert_eq!(created.len(), 1, "{check:?}");
    assert_eq!(created[0].0, "b3c9cbc6-cd18-43bc-93f8-9e557example");
    let attrs = &created[0].1;
    assert_eq!(
        (&attrs["type"], &attrs["ip_address"], &attrs["port"]),
        (&json!("TCP"), &json!("192.0.2.249"), &json!(80))
    );
}

#[test]
fn an_ecs_cluster_is_adopted_by_its_name() {
    let plan = planned(printed("data-east-009-create-ecs-cluster"), &state(vec![]), "").unwrap();
    let imports: Vec<String> = plan
        .changes
        .iter()
        .flat_map(|c| c.ops.iter())
        .filter_map(|op| match op {
            Op::CreateResource { import_id, .. } => Some(import_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(imports, ["default"]);
}

#[test]
fn logging_turned_on_for_a_managed_bucket_is_adopted_beside_it() {
    let bucket = state(vec![resource(
        "aws_s3_bucket",
        "critical",
        json!({"id": "critical-data-bucket", "bucket": "critical-data-bucket", "arn": "arn:aws:s3:::critical-data-bucket"}),
    )]);
    let main = "resource \"aws_s3_bucket\" \"critical\" {\n  bucket = \"critical-data-bucket\"\n}\n";
    let plan = planned(printed("storage-west-nolog-001-access-logging-enabled"), &bucket, main).unwrap();
    let created: Vec<(String, serde_json::Map<String, Value>)> = plan
        .changes
        .iter()
        .filter(|c| c.address.rtype == "aws_s3_bucket_logging")
        .flat_map(|c| {
            c.ops.iter().filter_map(|op| match op {
                Op::CreateResource { import_id, spec } => Some((import_id.clone(), spec.literal_attrs())),
                _ => None,
            })
        })
        .collect();
    assert_eq!(created.len(), 1, "{plan:?}");
    assert_eq!(created[0].0, "critical-data-bucket");
    assert_eq!(created[0].1.get("target_prefix"), Some(&json!("logs/")));
    // Logging turned off where the code manages none adopts nothing (a logging resource without a
    // target is no configuration the provider takes).
    let off = planned(printed("storage-west-001-access-logging-disabled"), &bucket, main);
    assert!(
        !matches!(&off, Ok(p) if p.changes.iter().flat_map(|c| &c.ops).any(|op| matches!(op, Op::CreateResource { .. }))),
        "{off:?}"
    );
}

fn created(plan: &Plan) -> Vec<(String, String, serde_json::Map<String, Value>)> {
    plan.changes
        .iter()
        .flat_map(|c| {
            let rtype = c.address.rtype.clone();
            c.ops.iter().filter_map(move |op| match op {
                Op::CreateResource { import_id, spec } => {
                    Some((rtype.clone(), import_id.clone(), spec.literal_attrs()))
                }
                _ => None,
            })
        })
        .collect()
}

#[test]
fn a_network_acl_entry_reads_the_protocol_cloudtrail_logs_as_acl_protocol() {
    let acl = state(vec![
        resource("aws_network_acl", "public", json!({"id": "acl-1111", "vpc_id": "vpc-1"})),
        resource(
            "aws_network_acl_rule",
            "public_100",
            json!({"id": "nacl-1", "network_acl_id": "acl-1111", "rule_number": 100, "egress": false,
                   "protocol": "6", "rule_action": "allow", "cidr_block": "0.0.0.0/0", "from_port": 443, "to_port": 443}),
        ),
    ]);
    let main = r#"resource "aws_network_acl" "public" {
  vpc_id = "vpc-1"
}

resource "aws_network_acl_rule" "public_100" {
  network_acl_id = aws_network_acl.public.id
  rule_number    = 100
  egress         = false
  protocol       = "6"
  rule_action    = "allow"
  cidr_block     = "0.0.0.0/0"
  from_port      = 443
  to_port        = 443
}
"#;
    let plan = planned(printed("platform-west-016-nacl-entry-ports-700-702"), &acl, main).unwrap();
    let rules = created(&plan);
    assert_eq!(rules.len(), 1, "{plan:?}");
    let (rtype, import_id, attrs) = &rules[0];
    assert_eq!(rtype, "aws_network_acl_rule");
    assert_eq!(import_id, "acl-1111:12:6:false");
    assert_eq!(attrs.get("protocol"), Some(&json!("6")), "{attrs:?}");
    assert_eq!((attrs.get("from_port"), attrs.get("to_port")), (Some(&json!(700)), Some(&json!(702))));
}

const FUNCTION_TF: &str = r#"resource "aws_lambda_function" "api" {
  function_name = "production-api"
  role          = "arn:aws:iam::123456789012:role/api"
  handler       = "main.handler"
  runtime       = "python3.12"
  filename      = "api.zip"
  layers        = []
}
"#;

fn function(layers: Value) -> State {
    state(vec![resource(
        "aws_lambda_function",
        "api",
        json!({"id": "production-api", "function_name": "production-api", "handler": "main.handler",
               "runtime": "python3.12", "timeout": 3, "memory_size": 128, "layers": layers,
               "arn": "arn:aws:lambda:us-west-2:123456789012:function:production-api"}),
    )])
}

#[test]
fn a_value_only_the_response_carries_is_read_from_there_and_a_record_without_any_is_refused() {
    const LAYER: &str = "arn:aws:lambda:us-west-2:123456789012:layer:malicious-layer:1";
    let events = printed("platform-west-003-lambda-layer-named-in-response");
    assert!(events[0].request.get("layers").is_none(), "the record's request names only the function");
    let plan = planned(events.clone(), &function(json!([])), FUNCTION_TF).unwrap();
    assert_eq!(literal(&ops_of(&plan, "aws_lambda_function.api"), "layers"), Some(json!([LAYER])), "{plan:?}");

    // The response echoes the function after the call: what the state already holds is no change.
    let plan = planned(events.clone(), &function(json!([LAYER])), FUNCTION_TF).unwrap();
    assert!(plan.is_empty(), "{plan:?}");

    // A record that carries none of the values the recipe reads is refused by name, not "no change".
    let mut bare = events;
    bare[0].response = json!({"functionName": "production-api"});
    let err = planned(bare, &function(json!([])), FUNCTION_TF).unwrap_err();
    assert!(matches!(err, PlanError::NothingRecorded { .. }), "{err:?}");
    assert!(err.to_string().contains("carries none of the values"), "{err}");
}

#[test]
fn an_adopted_queue_is_imported_by_the_url_the_provider_records_whatever_host_the_record_printed() {
    let events = printed("ops-east2-new-001-create-queue");
    assert_eq!(events[0].response["queueUrl"], "https://sqs.us-east-2.amazon.com/123456789012/MyQueue");
    let plan = planned(events.clone(), &state(vec![]), "").unwrap();
    let queues = created(&plan);
    assert_eq!(queues.len(), 1, "{plan:?}");
    assert_eq!(queues[0].0, "aws_sqs_queue");
    assert_eq!(queues[0].1, "https://sqs.us-east-2.amazonaws.com/123456789012/MyQueue");

    // A queue the state already manages under another host form is not adopted again.
    let managed = state(vec![resource(
        "aws_sqs_queue",
        "mine",
        json!({"id": "https://us-east-2.queue.amazonaws.com/123456789012/MyQueue",
               "url": "https://us-east-2.queue.amazonaws.com/123456789012/MyQueue", "name": "MyQueue"}),
    )]);
    let again = planned(events, &managed, "resource \"aws_sqs_queue\" \"mine\" {\n  name = \"MyQueue\"\n}\n").unwrap();
    assert!(created(&again).is_empty(), "{again:?}");
}

#[test]
fn a_document_deleted_whole_leaves_the_code_and_one_version_deleted_changes_nothing() {
    let document = state(vec![resource(
        "aws_ssm_document",
        "example",
        json!({"id": "example-Document", "name": "example-Document", "document_type": "Command",
               "arn": "arn:aws:ssm:us-east-2:123456789012:document/example-Document"}),
    )]);
    let main = "resource \"aws_ssm_document\" \"example\" {\n  name          = \"example-Document\"\n  document_type = \"Command\"\n  content       = \"{}\"\n}\n";
    let events = printed("ops-east2-004-delete-ssm-document");
    let plan = planned(events.clone(), &document, main).unwrap();
    assert_eq!(ops_of(&plan, "aws_ssm_document.example"), [Op::RemoveResource], "{plan:?}");
    for (member, value) in [("documentVersion", json!("2")), ("versionName", json!("release-1"))] {
        let mut one_version = events.clone();
        one_version[0].request[member] = value;
        let plan = planned(one_version, &document, main).unwrap();
        assert!(plan.is_empty(), "{member}: {plan:?}");
        assert!(plan.notes.iter().any(|n| n.contains("changes no configuration")), "{plan:?}");
    }
}

#[test]
fn a_web_acl_created_by_hand_is_adopted_whole_with_the_providers_import_id() {
    let plan = planned(printed("edge-west-new-001-create-web-acl"), &state(vec![]), "").unwrap();
    let acls = created(&plan);
    assert_eq!(acls.len(), 1, "{plan:?}");
    assert_eq!(acls[0].0, "aws_wafv2_web_acl");
    assert_eq!(acls[0].1, "ebbcb976-8d59-4d20-8ca8-4ab2f6b7c07b/foo/CLOUDFRONT");
    let spec = plan
        .changes
        .iter()
        .flat_map(|c| &c.ops)
        .find_map(|op| match op {
            Op::CreateResource { spec, .. } => Some(spec.clone()),
            _ => None,
        })
        .unwrap();
    let blocks: Vec<&str> = spec.blocks.iter().map(|(b, _)| b.as_str()).collect();
    assert_eq!(blocks, ["default_action", "rule", "visibility_config"], "{spec:?}");
    let attrs = spec.literal_attrs();
    assert_eq!((attrs.get("name"), attrs.get("scope")), (Some(&json!("foo")), Some(&json!("CLOUDFRONT"))));
    // A member the provider's schema has no place for refuses the adoption by name.
    let mut odd = printed("edge-west-new-001-create-web-acl");
    odd[0].request["visibilityConfig"]["noSuchSetting"] = json!(true);
    let err = planned(odd, &state(vec![]), "").unwrap_err();
    assert!(err.to_string().contains("visibility_config.no_such_setting"), "{err}");
}

const TRAIL_TF: &str = r#"resource "aws_cloudtrail" "main" {
  name           = "sample-cloudtrail-name"
  s3_bucket_name = "trail-logs"

  event_selector {
    read_write_type           = "WriteOnly"
    include_management_events = true
  }
}
"#;

fn trail() -> State {
    state(vec![resource(
        "aws_cloudtrail",
        "main",
        json!({"id": "sample-cloudtrail-name", "name": "sample-cloudtrail-name",
               "arn": "arn:aws:cloudtrail:us-west-2:111122223333:trail/sample-cloudtrail-name",
               "event_selector": [{"read_write_type": "WriteOnly", "include_management_events": true,
                                   "exclude_management_event_sources": [], "data_resource": []}],
               "advanced_event_selector": []}),
    )])
}

fn added_blocks(plan: &Plan, address: &str) -> Vec<(String, driftback_terraform::render::BlockSpec)> {
    ops_of(plan, address)
        .into_iter()
        .filter_map(|op| match op {
            Op::AddBlock { block_type, spec } => Some((block_type, spec)),
            _ => None,
        })
        .collect()
}

#[test]
fn event_selectors_are_written_again_as_the_trails_blocks() {
    let plan = planned(printed("shared-west-007-trail-event-selectors-all"), &trail(), TRAIL_TF).unwrap();
    let ops = ops_of(&plan, "aws_cloudtrail.main");
    assert!(ops.iter().any(|op| matches!(op, Op::RemoveBlocks { block_type, .. } if block_type == "event_selector")));
    let added = added_blocks(&plan, "aws_cloudtrail.main");
    assert_eq!(added.len(), 1, "{plan:?}");
    let attrs = added[0].1.literal_attrs();
    assert_eq!(attrs.get("read_write_type"), Some(&json!("All")));
    assert_eq!(attrs.get("include_management_events"), Some(&json!(true)));

    // Data resources are the selector's nested blocks.
    let mut data = printed("shared-west-007-trail-event-selectors-all");
    data[0].request["eventSelectors"][0]["dataResources"] =
        json!([{"type": "AWS::S3::Object", "values": ["arn:aws:s3:::audit-bucket/"]}]);
    let plan = planned(data, &trail(), TRAIL_TF).unwrap();
    let added = added_blocks(&plan, "aws_cloudtrail.main");
    let nested: Vec<&str> = added[0].1.blocks.iter().map(|(b, _)| b.as_str()).collect();
    assert_eq!(nested, ["data_resource"], "{plan:?}");
    assert_eq!(added[0].1.blocks[0].1.literal_attrs().get("type"), Some(&json!("AWS::S3::Object")));

    // Advanced selectors: one block per selector, one field selector per condition.
    let mut advanced = printed("shared-west-007-trail-event-selectors-all");
    let request = advanced[0].request.as_object_mut().unwrap();
    request.remove("eventSelectors");
    request.insert(
        "advancedEventSelectors".into(),
        json!([{"name": "Management events", "fieldSelectors": [{"field": "eventCategory", "equals": ["Management"]}]}]),
    );
    let plan = planned(advanced, &trail(), TRAIL_TF).unwrap();
    let added = added_blocks(&plan, "aws_cloudtrail.main");
    assert_eq!(added.len(), 1, "{plan:?}");
    assert_eq!(added[0].0, "advanced_event_selector");
    let field = &added[0].1.blocks[0];
    assert_eq!(field.0, "field_selector");
    assert_eq!(field.1.literal_attrs().get("equals"), Some(&json!(["Management"])));
}

const QUEUE_URL: &str = "https://sqs.us-east-2.amazonaws.com/123456789012/MyQueue";

fn queue(policy: &str) -> State {
    state(vec![resource(
        "aws_sqs_queue",
        "this",
        json!({"id": QUEUE_URL, "url": QUEUE_URL, "name": "MyQueue", "policy": policy,
               "arn": "arn:aws:sqs:us-east-2:123456789012:MyQueue"}),
    )])
}

fn document_of(value: &Value) -> Value {
    serde_json::from_str(value.as_str().unwrap()).unwrap()
}

#[test]
fn a_permission_added_is_a_statement_of_the_queue_policy_and_removed_by_its_label() {
    let main = "resource \"aws_sqs_queue\" \"this\" {\n  name = \"MyQueue\"\n}\n";
    let events = printed("ops-east2-002-queue-add-permission-own-account");
    // No policy in the code: an aws_sqs_queue_policy adopted beside the queue, by the queue's URL.
    let plan = planned(events.clone(), &queue(""), main).unwrap();
    let policies = created(&plan);
    assert_eq!(policies.len(), 1, "{plan:?}");
    assert_eq!((policies[0].0.as_str(), policies[0].1.as_str()), ("aws_sqs_queue_policy", QUEUE_URL));
    let document = document_of(&policies[0].2["policy"]);
    assert_eq!(
        document["Statement"],
        json!([{"Sid": "MyLabel", "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
                "Action": "SQS:SendMessage", "Resource": "arn:aws:sqs:us-east-2:123456789012:MyQueue"}])
    );

    // The queue already has a policy AWS keeps (set outside the code): the adopted resource keeps
    // its statements too, or the import would remove them.
    let existing = json!({"Version": "2012-10-17", "Statement": [{"Sid": "DenyInsecure", "Effect": "Deny",
        "Principal": "*", "Action": "sqs:*", "Resource": "arn:aws:sqs:us-east-2:123456789012:MyQueue",
        "Condition": {"Bool": {"aws:SecureTransport": "false"}}}]});
    let plan = planned(events.clone(), &queue(&existing.to_string()), main).unwrap();
    let statements = document_of(&created(&plan)[0].2["policy"])["Statement"].clone();
    let sids: Vec<&str> = statements.as_array().unwrap().iter().filter_map(|s| s["Sid"].as_str()).collect();
    assert_eq!(sids, ["DenyInsecure", "MyLabel"]);

    // The code writes the queue's policy: the statement joins it there.
    let with_both = json!({"Version": "2012-10-17", "Statement": [existing["Statement"][0].clone(),
        {"Sid": "MyLabel", "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
         "Action": "SQS:SendMessage", "Resource": "arn:aws:sqs:us-east-2:123456789012:MyQueue"}]});
    let inline = format!(
        "resource \"aws_sqs_queue\" \"this\" {{\n  name   = \"MyQueue\"\n  policy = {:?}\n}}\n",
        existing.to_string()
    );
    let mut removed = events.clone();
    removed[0].name = "RemovePermission".into();
    removed[0].raw_name = "RemovePermission".into();
    let request = removed[0].request.as_object_mut().unwrap();
    request.remove("actions");
    request.remove("AWSAccountIds");
    let plan = planned(removed, &queue(&with_both.to_string()), &inline).unwrap();
    let set = literal(&ops_of(&plan, "aws_sqs_queue.this"), "policy").expect("the queue's policy is set");
    assert_eq!(document_of(&set)["Statement"], existing["Statement"], "{plan:?}");
    // A label the policy already has is refused, as SQS refuses it.
    let err = planned(events, &queue(&with_both.to_string()), &inline).unwrap_err();
    assert!(err.to_string().contains("already has a statement labelled"), "{err}");
}

#[test]
fn a_value_set_back_within_the_change_set_is_nothing_to_do() {
    let repo = Repo::from_files([(PathBuf::from("main.tf"), KEYS_TF.to_string())].into_iter().collect());
    let disable = printed("keyring-east-002-disable-key").remove(0);
    let enable = printed("keyring-east-disabled-001-enable-key").remove(0);
    let together = |first: &ApiEvent, then: &ApiEvent| {
        let mut change_set = group(vec![first.clone()], &GroupConfig::default()).remove(0);
        change_set.events.push(then.clone());
        change_set
    };
    // Disabled and enabled again, on a key the state holds enabled: no branch to make.
    let back = plan(&Catalog::builtin(), &together(&disable, &enable), &keys("us-east-1", true), &repo).unwrap();
    assert!(back.is_empty() && back.changes.is_empty(), "{back:?}");
    assert!(back.notes.iter().any(|n| n.contains("set back")), "{back:?}");
    // Enabled and disabled again, on a key the state holds enabled: the last value is the change.
    let last = plan(&Catalog::builtin(), &together(&enable, &disable), &keys("us-east-1", true), &repo).unwrap();
    assert_eq!(
        ops_of(&last, "aws_kms_key.app"),
        ops_of(&planned(vec![disable], &keys("us-east-1", true), KEYS_TF).unwrap(), "aws_kms_key.app")
    );
    assert_eq!(literal(&ops_of(&last, "aws_kms_key.app"), "is_enabled"), Some(json!(false)), "{last:?}");
}

#[test]
fn an_adopted_resource_leaves_default_tags_to_the_provider_and_says_what_the_record_did_not_carry() {
    let providers = "provider \"aws\" {\n  region = \"us-east-2\"\n\n  default_tags {\n    tags = {\n      Team      = \"ops\"\n      ManagedBy = \"terraform\"\n    }\n  }\n}\n";
    let mut events = printed("ops-east2-new-001-create-queue");
    events[0].request["tags"] = json!({"Team": "ops", "ManagedBy": "console", "Owner": "alice"});
    events[0].request["attributes"] = json!({"VisibilityTimeout": "45"});
    let plan = planned(events, &state(vec![]), providers).unwrap();
    let queues = created(&plan);
    assert_eq!(queues.len(), 1, "{plan:?}");
    // Team is the provider's (same value); ManagedBy differs, so the queue keeps its own.
    assert_eq!(queues[0].2.get("tags"), Some(&json!({"ManagedBy": "console", "Owner": "alice"})), "{plan:?}");
    assert!(plan.notes.iter().any(|n| n.contains("Team left out")), "{:?}", plan.notes);
    assert_eq!(queues[0].2.get("visibility_timeout_seconds"), Some(&json!(45)));
    let said = plan.notes.iter().find(|n| n.contains("does not carry")).expect("a note on what AWS chose");
    assert!(said.contains("max_message_size") && said.contains("message_retention_seconds"), "{said}");
    assert!(!said.contains("visibility_timeout_seconds") && !said.contains("tags"), "{said}");
}

#[test]
fn a_from_with_spaces_around_its_bar_reads_each_form() {
    // `matcher.httpCode | matcher.grpcCode`: a target group's matcher by either code.
    let group = state(vec![resource(
        "aws_lb_target_group",
        "api",
        json!({"id": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/api/1",
               "arn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/api/1",
               "health_check": [{"path": "/", "matcher": "200"}]}),
    )]);
    let main = "resource \"aws_lb_target_group\" \"api\" {\n  name = \"api\"\n\n  health_check {\n    path    = \"/\"\n    matcher = \"200\"\n  }\n}\n";
    let mut events = printed("keyring-east-002-disable-key");
    events[0].source = "elasticloadbalancing.amazonaws.com".into();
    events[0].name = "ModifyTargetGroup".into();
    events[0].raw_name = "ModifyTargetGroup".into();
    events[0].request = json!({"targetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/api/1",
                               "healthCheckPath": "/healthz", "matcher": {"httpCode": "200-299"}});
    let plan = planned(events, &group, main).unwrap();
    let ops = ops_of(&plan, "aws_lb_target_group.api");
    assert_eq!(literal(&ops, "health_check.matcher"), Some(json!("200-299")), "{plan:?}");
    assert_eq!(literal(&ops, "health_check.path"), Some(json!("/healthz")), "{plan:?}");
}

#[test]
fn step_functions_activities_and_state_machines_are_adopted_by_the_arn_the_response_gives() {
    let activity = planned(printed("workflows-east-001-create-activity"), &state(vec![]), "").unwrap();
    let made = created(&activity);
    assert_eq!(made.len(), 1, "{activity:?}");
    let arn = "arn:aws:states:us-east-1:123456789012:activity:OtherActivityPrefix.2016-10-27-18-16-56.894c791e-2ced-4cf4-8523-376469410c25";
    assert_eq!((made[0].0.as_str(), made[0].1.as_str()), ("aws_sfn_activity", arn));
    assert_eq!(made[0].2["name"], json!(arn.rsplit(':').next().unwrap()));

    let machine = planned(printed("workflows-east-002-create-state-machine"), &state(vec![]), "").unwrap();
    let made = created(&machine);
    assert_eq!(made.len(), 1, "{machine:?}");
    assert_eq!(made[0].0, "aws_sfn_state_machine");
    assert!(made[0].1.ends_with(":stateMachine:testUser.2016-10-27-18-17-06.bd144e18-0437-476e-9bb"), "{made:?}");
    assert_eq!(made[0].2["role_arn"], json!("arn:aws:iam::123456789012:role/graphene/tests/graphene-execution-role"));
    let definition: Value = serde_json::from_str(made[0].2["definition"].as_str().unwrap()).unwrap();
    assert_eq!(definition["StartAt"], json!("SinglePass"));
}

#[test]
fn an_activity_the_record_names_by_its_arn_is_deleted() {
    let arn = "arn:aws:states:us-east-1:123456789012:activity:testUser.2016-10-27-18-11-35.f017c391-9363-481a-be2e-";
    let worker = state(vec![resource("aws_sfn_activity", "worker", json!({"id": arn, "arn": arn, "name": "w"}))]);
    let main = "resource \"aws_sfn_activity\" \"worker\" {\n  name = \"w\"\n}\n";
    let plan = planned(printed("workflows-east-003-delete-activity"), &worker, main).unwrap();
    assert_eq!(ops_of(&plan, "aws_sfn_activity.worker"), [Op::RemoveResource]);
}

#[test]
fn kinesis_streams_are_adopted_by_name_and_deleted_by_name_and_a_split_names_no_count() {
    let made =
        planned(printed("streams-east-new-001-create-stream-unencrypted-event-version-1-01"), &state(vec![]), "")
            .map(|p| created(&p))
            .unwrap();
    assert_eq!(made.len(), 1, "{made:?}");
    assert_eq!((made[0].0.as_str(), made[0].1.as_str()), ("aws_kinesis_stream", "GoodStream"));
    assert_eq!((&made[0].2["name"], &made[0].2["shard_count"]), (&json!("GoodStream"), &json!(1)));

    let arn = "arn:aws:kinesis:us-east-1:012345678910:stream/GoodStream";
    let good = state(vec![resource(
        "aws_kinesis_stream",
        "good",
        json!({"id": arn, "arn": arn, "name": "GoodStream", "shard_count": 1}),
    )]);
    let main = "resource \"aws_kinesis_stream\" \"good\" {\n  name        = \"GoodStream\"\n  shard_count = 1\n}\n";
    let deleted = planned(printed("streams-east-001-delete-stream-event-version-1-01"), &good, main).unwrap();
    assert_eq!(ops_of(&deleted, "aws_kinesis_stream.good"), [Op::RemoveResource]);
    // A split changes the count of open shards without saying it: no recipe writes a count.
    assert!(planned(printed("streams-east-002-split-shard-count-not-recorded"), &good, main).is_err());
}

#[test]
fn an_ecr_repository_and_a_resolver_endpoint_are_adopted_with_the_providers_import_ids() {
    let repo = planned(printed("ops-east2-009-create-ecr-repository-console"), &state(vec![]), "").unwrap();
    let made = created(&repo);
    assert_eq!(made.len(), 1, "{repo:?}");
    assert_eq!((made[0].0.as_str(), made[0].1.as_str()), ("aws_ecr_repository", "testrepo"));

    let endpoint = planned(printed("platform-west-022-create-outbound-resolver-endpoint"), &state(vec![]), "").unwrap();
    let made = created(&endpoint);
    assert_eq!(made.len(), 1, "{endpoint:?}");
    assert_eq!(
        (made[0].0.as_str(), made[0].1.as_str()),
        ("aws_route53_resolver_endpoint", "rslvr-out-1f4031f1f5example")
    );
    assert_eq!(made[0].2["direction"], json!("OUTBOUND"));
    let subnets: Vec<String> = endpoint
        .changes
        .iter()
        .flat_map(|c| c.ops.iter())
        .filter_map(|op| match op {
            Op::CreateResource { spec, .. } => Some(format!("{spec:?}")),
            _ => None,
        })
        .collect();
    assert!(subnets[0].contains("subnet-01cb0c4676example") && subnets[0].contains("subnet-0534819b32example"));
}
