//! New nested blocks of resources inside fetched modules whose `dynamic` blocks make them from a
//! list input, written at the root's call: through a module that passes the list on to a module
//! it calls, with content arguments read through `lookup()`, `try()` and `split()`, and through a
//! `for_each` that makes a list of one from an optional object (`length(var.x) > 0 ? [var.x] :
//! []`). The module's code is never written, and the other calls of the same code keep their
//! configuration.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use driftback_terraform::eval::effective_config;
use driftback_terraform::patch::{self, Op, grouped_for_dynamic_blocks};
use driftback_terraform::{Address, AttrPath, AttrValue, BlockSpec, Repo};
use serde_json::{Value, json};

fn write(dir: &Path, file: &str, text: &str) {
    let path = dir.join(file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The root's file laid out as `terraform fmt` lays out what the edit touched.
fn assert_fmt_clean(before: &str, repo: &Repo) {
    let after = repo.text(Path::new("main.tf")).unwrap();
    assert_eq!(driftback_terraform::fmt::tidy(before, after), after, "not laid out as terraform fmt");
}

fn spec(attrs: &[(&str, Value)]) -> BlockSpec {
    BlockSpec {
        attrs: attrs.iter().map(|(k, v)| (k.to_string(), AttrValue::Literal(v.clone()))).collect(),
        blocks: vec![],
    }
}

/// The files of the package as they were mounted, to hold them unchanged.
fn package_files(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.insert(path.clone(), std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    out
}

const DB_MODULE: &str = r#"variable "identifier" {
  type = string
}

variable "parameters" {
  type    = list(map(string))
  default = []
}

module "db_parameter_group" {
  source = "./modules/db_parameter_group"

  name       = var.identifier
  parameters = var.parameters
}
"#;

const PARAMETER_GROUP_MODULE: &str = r#"variable "create" {
  type    = bool
  default = true
}

variable "name" {
  type = string
}

variable "parameters" {
  type    = list(map(string))
  default = []
}

resource "aws_db_parameter_group" "this" {
  count = var.create ? 1 : 0

  name   = var.name
  family = "postgres16"

  dynamic "parameter" {
    for_each = var.parameters
    content {
      name         = parameter.value.name
      value        = parameter.value.value
      apply_method = lookup(parameter.value, "apply_method", null)
    }
  }
}
"#;

const DB_ROOT: &str = r#"module "db" {
  source  = "registry.test/acme/rds/aws"
  version = "6.1.0"

  identifier = "orders"

  parameters = [
    {
      name  = "log_min_duration_statement"
      value = "1000"
    },
    {
      name         = "rds.force_ssl"
      value        = "1"
      apply_method = "pending-reboot"
    },
  ]
}

module "reports_db" {
  source  = "registry.test/acme/rds/aws"
  version = "6.1.0"

  identifier = "reports"

  parameters = [
    {
      name  = "log_min_duration_statement"
      value = "5000"
    },
  ]
}
"#;

fn db_repository(package: &Path) -> Repo {
    write(package, "main.tf", DB_MODULE);
    write(package, "modules/db_parameter_group/main.tf", PARAMETER_GROUP_MODULE);
    let mut repo = Repo::from_files(BTreeMap::from([(PathBuf::from("main.tf"), DB_ROOT.to_string())]));
    repo.mount_module("db", package, Path::new("")).unwrap();
    repo.mount_module("reports_db", package, Path::new("")).unwrap();
    repo
}

/// A parameter added in the console to the group a nested module makes from the list the root
/// passes down: the root's list gains the element, the other elements and the other call stay.
#[test]
fn a_new_parameter_through_a_nested_module_is_the_next_element_of_the_roots_list() {
    let package = tempfile::tempdir().unwrap();
    let mut repo = db_repository(package.path());
    let files = package_files(package.path());
    let orders = Address::parse("module.db.module.db_parameter_group.aws_db_parameter_group.this[0]").unwrap();
    let reports = Address::parse("module.reports_db.module.db_parameter_group.aws_db_parameter_group.this[0]").unwrap();
    let reports_before = effective_config(&repo, &reports).unwrap();
    let parameter = spec(&[
        ("name", json!("idle_in_transaction_session_timeout")),
        ("value", json!("60000")),
        ("apply_method", json!("immediate")),
    ]);
    let applied =
        patch::apply(&mut repo, &orders, &Op::AddBlock { block_type: "parameter".into(), spec: parameter }).unwrap();
    assert_eq!(applied.files, [PathBuf::from("main.tf")], "{applied:?}");
    let root = repo.text(Path::new("main.tf")).unwrap();
    let new = "    {\n      name         = \"idle_in_transaction_session_timeout\"\n      value        = \"60000\"\n      apply_method = \"immediate\"\n    },\n  ]\n}\n\nmodule \"reports_db\"";
    assert!(root.contains(new), "{root}");
    assert_fmt_clean(DB_ROOT, &repo);
    let after = effective_config(&repo, &orders).unwrap();
    let parameters = after["parameter"].as_array().unwrap();
    assert_eq!(parameters.len(), 3, "{after}");
    assert_eq!(parameters[0]["value"], json!("1000"));
    assert_eq!(parameters[1]["apply_method"], json!("pending-reboot"));
    assert_eq!(parameters[2]["name"], json!("idle_in_transaction_session_timeout"));
    assert_eq!(parameters[2]["value"], json!("60000"));
    assert_eq!(effective_config(&repo, &reports).unwrap(), reports_before);
    assert_eq!(package_files(package.path()), files);
}

const SG_MODULE: &str = r#"variable "name" {
  type = string
}

variable "ingress_cidr_blocks" {
  type    = list(string)
  default = []
}

variable "ingress_with_cidr_blocks" {
  type    = list(map(string))
  default = []
}

resource "aws_security_group" "this" {
  name = var.name

  dynamic "ingress" {
    for_each = var.ingress_with_cidr_blocks
    content {
      cidr_blocks = split(",", lookup(ingress.value, "cidr_blocks", join(",", var.ingress_cidr_blocks)))
      description = lookup(ingress.value, "description", "Ingress Rule")
      from_port   = lookup(ingress.value, "from_port", 0)
      to_port     = lookup(ingress.value, "to_port", 0)
      protocol    = lookup(ingress.value, "protocol", "-1")
    }
  }
}
"#;

const SG_ROOT: &str = r#"module "app_sg" {
  source  = "registry.test/acme/security-group/aws"
  version = "4.17.2"

  name = "app"

  ingress_with_cidr_blocks = [
    {
      from_port   = 443
      to_port     = 443
      protocol    = "tcp"
      cidr_blocks = "10.30.0.0/16"
      description = "HTTPS inside the VPC"
    },
  ]
}
"#;

fn sg_repository(package: &Path) -> Repo {
    write(package, "main.tf", SG_MODULE);
    let mut repo = Repo::from_files(BTreeMap::from([(PathBuf::from("main.tf"), SG_ROOT.to_string())]));
    repo.mount_module("app_sg", package, Path::new("")).unwrap();
    repo
}

/// An inline rule whose content reads the element through `lookup()` with defaults, and its CIDR
/// list through `split(",", ...)`: the new element holds the list joined, in its siblings' layout.
#[test]
fn an_inline_rule_read_through_lookup_and_split_is_an_element_with_the_cidrs_joined() {
    let package = tempfile::tempdir().unwrap();
    let mut repo = sg_repository(package.path());
    let files = package_files(package.path());
    let group = Address::parse("module.app_sg.aws_security_group.this").unwrap();
    let rule = spec(&[
        ("from_port", json!(8443)),
        ("to_port", json!(8443)),
        ("protocol", json!("tcp")),
        ("cidr_blocks", json!(["10.40.0.0/16", "10.41.0.0/16"])),
        ("description", json!("Admin API from the ops VPCs")),
    ]);
    patch::apply(&mut repo, &group, &Op::AddBlock { block_type: "ingress".into(), spec: rule }).unwrap();
    let root = repo.text(Path::new("main.tf")).unwrap();
    let new = "    {\n      from_port   = 8443\n      to_port     = 8443\n      protocol    = \"tcp\"\n      cidr_blocks = \"10.40.0.0/16,10.41.0.0/16\"\n      description = \"Admin API from the ops VPCs\"\n    },\n  ]\n";
    assert!(root.contains(new), "{root}");
    assert_fmt_clean(SG_ROOT, &repo);
    let ingress = effective_config(&repo, &group).unwrap()["ingress"].clone();
    assert_eq!(ingress[0]["cidr_blocks"], json!(["10.30.0.0/16"]));
    assert_eq!(ingress[1]["cidr_blocks"], json!(["10.40.0.0/16", "10.41.0.0/16"]));
    assert_eq!(ingress[1]["from_port"], json!(8443));
    assert_eq!(package_files(package.path()), files);

    // A CIDR list whose item holds the separator cannot be joined: refused, nothing written.
    let before = repo.text(Path::new("main.tf")).unwrap().to_string();
    let odd = spec(&[
        ("from_port", json!(22)),
        ("to_port", json!(22)),
        ("protocol", json!("tcp")),
        ("cidr_blocks", json!(["10.0.0.0/8,10.1.0.0/16"])),
        ("description", json!("SSH")),
    ]);
    assert!(patch::apply(&mut repo, &group, &Op::AddBlock { block_type: "ingress".into(), spec: odd }).is_err());
    assert_eq!(repo.text(Path::new("main.tf")).unwrap(), before);
}

const ALB_MODULE: &str = r#"variable "name" {
  type = string
}

variable "access_logs" {
  type    = map(string)
  default = {}
}

resource "aws_lb" "this" {
  name = var.name

  dynamic "access_logs" {
    for_each = length(var.access_logs) > 0 ? [var.access_logs] : []

    content {
      bucket  = access_logs.value.bucket
      enabled = try(access_logs.value.enabled, true)
      prefix  = try(access_logs.value.prefix, null)
    }
  }
}
"#;

const ALB_ROOT: &str = r#"module "alb" {
  source  = "registry.test/acme/alb/aws"
  version = "9.4.0"

  name = "public"
}

module "internal_alb" {
  source  = "registry.test/acme/alb/aws"
  version = "9.4.0"

  name = "internal"
}
"#;

/// Access logs turned on where the module makes the block from an optional object (a list of one
/// when the map is not empty): the call gains the input, and a field `try()` already defaults to
/// the value is left out, as the module's users write it.
#[test]
fn a_block_from_an_optional_object_is_a_new_input_at_the_call() {
    let package = tempfile::tempdir().unwrap();
    write(package.path(), "main.tf", ALB_MODULE);
    let mut repo = Repo::from_files(BTreeMap::from([(PathBuf::from("main.tf"), ALB_ROOT.to_string())]));
    repo.mount_module("alb", package.path(), Path::new("")).unwrap();
    repo.mount_module("internal_alb", package.path(), Path::new("")).unwrap();
    let files = package_files(package.path());
    let alb = Address::parse("module.alb.aws_lb.this").unwrap();
    let internal = Address::parse("module.internal_alb.aws_lb.this").unwrap();
    let internal_before = effective_config(&repo, &internal).unwrap();
    let set =
        |path: &str, value: Value| Op::Set { path: AttrPath::parse(path).unwrap(), value: AttrValue::Literal(value) };
    let ops = vec![
        set("access_logs.enabled", json!(true)),
        set("access_logs.bucket", json!("edge-alb-logs")),
        set("access_logs.prefix", json!("public")),
    ];
    let grouped = grouped_for_dynamic_blocks(&repo, &alb, &ops);
    assert!(matches!(&grouped[..], [Op::AddBlock { block_type, .. }] if block_type == "access_logs"), "{grouped:?}");
    for op in &grouped {
        patch::apply(&mut repo, &alb, op).unwrap();
    }
    let root = repo.text(Path::new("main.tf")).unwrap();
    assert!(root.contains("  name = \"public\"\n  access_logs = {\n"), "{root}");
    assert!(root.contains("bucket = \"edge-alb-logs\"") && root.contains("prefix = \"public\""), "{root}");
    assert!(!root.contains("enabled"), "try() defaults enabled to true: {root}");
    assert_fmt_clean(ALB_ROOT, &repo);
    let logs = effective_config(&repo, &alb).unwrap()["access_logs"].clone();
    assert_eq!(logs[0]["bucket"], json!("edge-alb-logs"));
    assert_eq!(logs[0]["prefix"], json!("public"));
    assert!(driftback_terraform::patch::values_equal(&logs[0]["enabled"], &json!(true)), "{logs}");
    assert_eq!(effective_config(&repo, &internal).unwrap(), internal_before);
    assert_eq!(package_files(package.path()), files);
}

const S3_MODULE: &str = r#"variable "bucket" {
  type = string
}

variable "server_side_encryption_configuration" {
  type    = any
  default = {}
}

resource "aws_s3_bucket" "this" {
  bucket = var.bucket
}

resource "aws_s3_bucket_server_side_encryption_configuration" "this" {
  count = length(keys(var.server_side_encryption_configuration)) > 0 ? 1 : 0

  bucket = aws_s3_bucket.this.id

  dynamic "rule" {
    for_each = try(flatten([var.server_side_encryption_configuration["rule"]]), [])

    content {
      bucket_key_enabled = try(rule.value.bucket_key_enabled, null)

      dynamic "apply_server_side_encryption_by_default" {
        for_each = try([rule.value.apply_server_side_encryption_by_default], [])

        content {
          sse_algorithm     = apply_server_side_encryption_by_default.value.sse_algorithm
          kms_master_key_id = try(apply_server_side_encryption_by_default.value.kms_master_key_id, null)
        }
      }
    }
  }
}
"#;

const S3_ROOT: &str = r#"module "assets" {
  source  = "registry.test/acme/s3-bucket/aws"
  version = "4.2.0"

  bucket = "assets"

  server_side_encryption_configuration = {
    rule = {
      apply_server_side_encryption_by_default = {
        sse_algorithm = "AES256"
      }
    }
  }
}

module "logs" {
  source  = "registry.test/acme/s3-bucket/aws"
  version = "4.2.0"

  bucket = "logs"

  server_side_encryption_configuration = {
    rule = {
      apply_server_side_encryption_by_default = {
        sse_algorithm = "AES256"
      }
    }
  }
}
"#;

/// Encryption changed to a customer key: the values sit in a `dynamic` block nested in another's
/// content, whose `for_each` reads the outer element through `try([...])`, and the outer one the
/// input through `try(flatten([...]))`. Each value lands in the call's nested object; the other
/// call of the same code keeps its own.
#[test]
fn values_of_a_dynamic_block_nested_in_another_land_in_the_calls_nested_object() {
    let package = tempfile::tempdir().unwrap();
    write(package.path(), "main.tf", S3_MODULE);
    let mut repo = Repo::from_files(BTreeMap::from([(PathBuf::from("main.tf"), S3_ROOT.to_string())]));
    repo.mount_module("assets", package.path(), Path::new("")).unwrap();
    repo.mount_module("logs", package.path(), Path::new("")).unwrap();
    let files = package_files(package.path());
    let assets = Address::parse("module.assets.aws_s3_bucket_server_side_encryption_configuration.this[0]").unwrap();
    let logs = Address::parse("module.logs.aws_s3_bucket_server_side_encryption_configuration.this[0]").unwrap();
    let logs_before = effective_config(&repo, &logs).unwrap();
    let key = "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab";
    let set =
        |path: &str, value: Value| Op::Set { path: AttrPath::parse(path).unwrap(), value: AttrValue::Literal(value) };
    for op in [
        set("rule.apply_server_side_encryption_by_default.sse_algorithm", json!("aws:kms")),
        set("rule.apply_server_side_encryption_by_default.kms_master_key_id", json!(key)),
        set("rule.bucket_key_enabled", json!(true)),
    ] {
        let applied = patch::apply(&mut repo, &assets, &op).unwrap();
        assert_eq!(applied.files, [PathBuf::from("main.tf")], "{applied:?}");
    }
    let root = repo.text(Path::new("main.tf")).unwrap();
    let (assets_call, logs_call) = root.split_once("module \"logs\"").unwrap();
    let object = format!(
        "    rule = {{\n      apply_server_side_encryption_by_default = {{\n        sse_algorithm     = \"aws:kms\"\n        kms_master_key_id = \"{key}\"\n      }}\n      bucket_key_enabled = true\n    }}\n"
    );
    assert!(assets_call.contains(&object), "{root}");
    assert_fmt_clean(S3_ROOT, &repo);
    assert_eq!(format!("module \"logs\"{logs_call}"), S3_ROOT[S3_ROOT.find("module \"logs\"").unwrap()..]);
    let rule = effective_config(&repo, &assets).unwrap()["rule"][0].clone();
    assert_eq!(rule["bucket_key_enabled"], json!(true));
    assert_eq!(rule["apply_server_side_encryption_by_default"][0]["sse_algorithm"], json!("aws:kms"));
    assert_eq!(rule["apply_server_side_encryption_by_default"][0]["kms_master_key_id"], json!(key));
    assert_eq!(effective_config(&repo, &logs).unwrap(), logs_before);
    assert_eq!(package_files(package.path()), files);
}
