//! A call that points an argument at another instance of a fleet the code picks from by a computed
//! key (`target_key_id = aws_kms_key.this[each.value].key_id`): the plan sets a reference to that
//! instance, never the id as a literal over the reference, and the patch changes the map entry.

use std::path::{Path, PathBuf};

use driftback_events::{GroupConfig, decode, group};
use driftback_recipes::{Catalog, plan};
use driftback_terraform::{Address, AttrValue, Op, Repo, State};
use serde_json::{Value, json};

const KMS_TF: &str = r#"locals {
  aliases = {
    "orders"  = "data"
    "release" = "signing"
  }
}

resource "aws_kms_key" "this" {
  for_each    = toset(["data", "signing"])
  description = each.key
}

resource "aws_kms_alias" "this" {
  for_each = local.aliases

  name          = "alias/${each.key}"
  target_key_id = aws_kms_key.this[each.value].key_id
}
"#;

const DATA: &str = "5f2b1c3e-0000-4000-8000-00000000d474";
const SIGNING: &str = "9a8b7c6d-0000-4000-8000-0000005161e6";

fn instance(key: &str, attributes: Value) -> Value {
    json!({"index_key": key, "schema_version": 0, "attributes": attributes})
}

fn state() -> State {
    let key = |k: &str, id: &str| {
        instance(k, json!({"id": id, "key_id": id, "arn": format!("arn:aws:kms:eu-west-1:444455556666:key/{id}")}))
    };
    let alias = |k: &str, target: &str| {
        instance(k, json!({"id": format!("alias/{k}"), "name": format!("alias/{k}"), "target_key_id": target}))
    };
    let resource = |rtype: &str, instances: Vec<Value>| {
        json!({"mode": "managed", "type": rtype, "name": "this",
               "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]", "instances": instances})
    };
    let text = json!({"version": 4, "terraform_version": "1.9.5", "serial": 1, "lineage": "x", "outputs": {},
    "resources": [
        resource("aws_kms_key", vec![key("data", DATA), key("signing", SIGNING)]),
        resource("aws_kms_alias", vec![alias("orders", DATA), alias("release", SIGNING)]),
    ]});
    State::parse(&text.to_string(), "terraform.tfstate").unwrap()
}

fn update_alias(target: &str) -> Vec<u8> {
    json!({"Records": [{
        "eventVersion": "1.08",
        "userIdentity": {"type": "IAMUser", "principalId": "AIDAEXAMPLE", "arn": "arn:aws:iam::444455556666:user/ops",
                         "accountId": "444455556666", "userName": "ops"},
        "eventTime": "2026-03-02T10:00:00Z", "eventSource": "kms.amazonaws.com", "eventName": "UpdateAlias",
        "awsRegion": "eu-west-1", "sourceIPAddress": "198.51.100.7", "userAgent": "aws-cli/2.15.0",
        "requestParameters": {"aliasName": "alias/release", "targetKeyId": target},
        "responseElements": null, "requestID": "0c1d2e3f-0000-4000-8000-000000000001",
        "eventID": "0c1d2e3f-0000-4000-8000-000000000002", "readOnly": false,
        "eventType": "AwsApiCall", "managementEvent": true, "recipientAccountId": "444455556666"}]})
    .to_string()
    .into_bytes()
}

fn planned_ops(target: &str) -> (Repo, Address, Vec<Op>) {
    let repo = Repo::from_files([(PathBuf::from("kms.tf"), KMS_TF.to_string())].into_iter().collect());
    let events = decode(&update_alias(target), "update-alias").unwrap().events.into_iter().map(|(e, _)| e).collect();
    let change_set = group(events, &GroupConfig::default()).remove(0);
    let plan = plan(&Catalog::builtin(), &change_set, &state(), &repo).unwrap();
    let change = plan.changes.into_iter().next().expect("one change");
    (repo, change.address, change.ops)
}

#[test]
fn an_alias_pointed_at_another_key_of_the_fleet_is_a_reference_to_it_written_in_the_map() {
    for target in [DATA.to_string(), format!("arn:aws:kms:eu-west-1:444455556666:key/{DATA}")] {
        let (mut repo, address, ops) = planned_ops(&target);
        assert_eq!(address.to_string(), r#"aws_kms_alias.this["release"]"#);
        assert!(
            matches!(&ops[..], [Op::Set { value: AttrValue::Reference(r), .. }] if r == r#"aws_kms_key.this["data"].key_id"#),
            "{target}: {ops:?}"
        );
        for op in &ops {
            driftback_terraform::patch::apply(&mut repo, &address, op).unwrap();
        }
        let text = repo.text(Path::new("kms.tf")).unwrap();
        assert!(text.contains("\"release\" = \"data\""), "{text}");
        assert!(text.contains("target_key_id = aws_kms_key.this[each.value].key_id"), "{text}");
    }
}

#[test]
fn a_key_outside_the_fleet_stays_a_value() {
    let (_, _, ops) = planned_ops("0f0f0f0f-0000-4000-8000-00000000beef");
    assert!(matches!(&ops[..], [Op::Set { value: AttrValue::Literal(_), .. }]), "{ops:?}");
}
