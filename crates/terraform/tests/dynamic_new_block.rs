//! Settings of a nested block that a `dynamic` block makes, for an instance that has none yet:
//! grouped into one new block, written as the element of a `for_each` list of at most one (the
//! instance's tfvars entry gains the key), and nothing else changes.

use std::path::PathBuf;

use driftback_terraform::eval::effective_config;
use driftback_terraform::patch::{apply, grouped_for_dynamic_blocks};
use driftback_terraform::{Address, AttrPath, AttrValue, Op, Repo};
use serde_json::json;

const MAIN: &str = r#"variable "tables" {
  type = map(object({
    ttl_attribute = optional(string)
  }))
}

resource "aws_dynamodb_table" "this" {
  for_each = var.tables

  name         = each.key
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "id"

  dynamic "ttl" {
    for_each = each.value.ttl_attribute == null ? [] : [each.value.ttl_attribute]

    content {
      enabled        = true
      attribute_name = ttl.value
    }
  }
}
"#;

const TFVARS: &str = r#"tables = {
  sessions = {}
  carts = {
    ttl_attribute = "expires_at"
  }
}
"#;

fn set(path: &str, value: serde_json::Value) -> Op {
    Op::Set { path: AttrPath::parse(path).unwrap(), value: AttrValue::Literal(value) }
}

#[test]
fn a_ttl_turned_on_becomes_the_entrys_one_element_and_nothing_else_changes() {
    let mut repo = Repo::from_files(
        [(PathBuf::from("main.tf"), MAIN.to_string()), (PathBuf::from("terraform.tfvars"), TFVARS.to_string())]
            .into_iter()
            .collect(),
    );
    let sessions = Address::parse(r#"aws_dynamodb_table.this["sessions"]"#).unwrap();
    let carts = Address::parse(r#"aws_dynamodb_table.this["carts"]"#).unwrap();
    let carts_before = effective_config(&repo, &carts).unwrap();
    let ops = vec![set("ttl.enabled", json!(true)), set("ttl.attribute_name", json!("expires"))];
    let grouped = grouped_for_dynamic_blocks(&repo, &sessions, &ops);
    assert!(matches!(&grouped[..], [Op::AddBlock { block_type, .. }] if block_type == "ttl"), "{grouped:?}");
    for op in &grouped {
        apply(&mut repo, &sessions, op).unwrap();
    }
    let after = effective_config(&repo, &sessions).unwrap();
    assert_eq!(after["ttl"], json!([{"enabled": true, "attribute_name": "expires"}]), "{after}");
    assert_eq!(effective_config(&repo, &carts).unwrap(), carts_before);
    assert!(repo.text(std::path::Path::new("terraform.tfvars")).unwrap().contains("expires"));
    // Where the instance has the block already, settings stay settings.
    let again = grouped_for_dynamic_blocks(&repo, &carts, &ops);
    assert_eq!(again, ops);
}
