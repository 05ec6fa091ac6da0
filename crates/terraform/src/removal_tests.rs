//! Deletions that take blocks with them: one instance of a module called with `for_each`, and a
//! resource whose only referrer makes no instance.

use std::path::{Path, PathBuf};

use crate::eval::{effective_config, instances};
use crate::patch::{Op, apply};
use crate::{Address, Repo};

fn repo(files: &[(&str, &str)]) -> Repo {
    Repo::from_files(files.iter().map(|(p, t)| (PathBuf::from(p), t.to_string())).collect())
}

const CALL: &str = r#"module "table" {
  source   = "./modules/table"
  for_each = var.tables

  name     = each.key
  hash_key = each.value.hash_key
}

variable "tables" {
  type = map(object({ hash_key = string }))
}
"#;

const MODULE: &str = r#"variable "name" {
  type = string
}

variable "hash_key" {
  type = string
}

resource "aws_dynamodb_table" "this" {
  name     = var.name
  hash_key = var.hash_key
}
"#;

const TABLES: &str = r#"tables = {
  Music = {
    hash_key = "Artist"
  }
  Books = {
    hash_key = "Isbn"
  }
}
"#;

#[test]
fn a_table_of_a_for_each_module_call_goes_as_its_map_entry_and_nothing_else() {
    let mut repo = repo(&[("main.tf", CALL), ("modules/table/main.tf", MODULE), ("terraform.tfvars", TABLES)]);
    let music = Address::parse(r#"module.table["Music"].aws_dynamodb_table.this"#).unwrap();
    let books = Address::parse(r#"module.table["Books"].aws_dynamodb_table.this"#).unwrap();
    let books_before = effective_config(&repo, &books).unwrap();
    let applied = apply(&mut repo, &music, &Op::RemoveResource).unwrap();
    assert_eq!(applied.files, vec![PathBuf::from("terraform.tfvars")], "{applied:?}");
    assert_eq!(
        repo.text(Path::new("terraform.tfvars")).unwrap(),
        "tables = {\n  Books = {\n    hash_key = \"Isbn\"\n  }\n}\n"
    );
    assert_eq!(repo.text(Path::new("main.tf")).unwrap(), CALL, "the call stays");
    assert_eq!(instances(&repo), vec![books.clone()]);
    assert_eq!(effective_config(&repo, &books).unwrap(), books_before);
}

#[test]
fn a_module_instance_named_elsewhere_is_a_persons_to_remove() {
    let output = "output \"music_arn\" {\n  value = module.table[\"Music\"].arn\n}\n";
    let mut repo = repo(&[
        ("main.tf", CALL),
        ("outputs.tf", output),
        ("modules/table/main.tf", MODULE),
        ("terraform.tfvars", TABLES),
    ]);
    let music = Address::parse(r#"module.table["Music"].aws_dynamodb_table.this"#).unwrap();
    let err = apply(&mut repo, &music, &Op::RemoveResource).unwrap_err().to_string();
    assert!(err.contains("module.table[\"Music\"]") && err.contains("outputs.tf"), "{err}");
    assert_eq!(repo.text(Path::new("terraform.tfvars")).unwrap(), TABLES);
}

const DNS: &str = r#"resource "aws_route53_zone" "main" {
  name = "example.com"
}

resource "aws_route53_record" "a" {
  for_each = var.a_records

  zone_id = aws_route53_zone.main.zone_id
  name    = each.key
  type    = "A"
  ttl     = 300
  records = each.value
}

variable "a_records" {
  type    = map(list(string))
  default = {}
}
"#;

#[test]
fn a_zone_goes_with_a_referrer_that_makes_no_instance() {
    let mut repo = repo(&[("dns.tf", DNS)]);
    let zone = Address::parse("aws_route53_zone.main").unwrap();
    let applied = apply(&mut repo, &zone, &Op::RemoveResource).unwrap();
    let text = repo.text(Path::new("dns.tf")).unwrap();
    assert!(!text.contains("aws_route53_zone") && !text.contains("aws_route53_record"), "{text}");
    assert!(text.contains("variable \"a_records\""), "{text}");
    assert!(applied.notes.iter().any(|n| n.contains("makes no instance")), "{applied:?}");
}

#[test]
fn a_zone_whose_referrer_has_instances_stays_for_a_person() {
    let tfvars = "a_records = {\n  www = [\"192.0.2.10\"]\n}\n";
    let mut repo = repo(&[("dns.tf", DNS), ("terraform.tfvars", tfvars)]);
    let zone = Address::parse("aws_route53_zone.main").unwrap();
    let err = apply(&mut repo, &zone, &Op::RemoveResource).unwrap_err().to_string();
    assert!(err.contains("aws_route53_record"), "{err}");
    assert_eq!(repo.text(Path::new("dns.tf")).unwrap(), DNS);
    // Nor when another workspace gives it instances.
    let mut repo = crate::Repo::from_files(
        [(PathBuf::from("dns.tf"), DNS.to_string()), (PathBuf::from("prod.tfvars"), tfvars.to_string())]
            .into_iter()
            .collect(),
    );
    repo.set_other_workspaces(vec![("prod".into(), vec![PathBuf::from("prod.tfvars")])]).unwrap();
    let err = apply(&mut repo, &zone, &Op::RemoveResource).unwrap_err().to_string();
    assert!(err.contains("aws_route53_record"), "{err}");
}
