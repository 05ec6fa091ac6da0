//! A resource deleted inside a fetched module, written at the root: the only resource of a
//! `for_each` instance leaves the tfvars map that makes the instance; one resource of several
//! turns off the module's own switch (`count = var.create ? 1 : 0`) at this call alone, the
//! module's other resources and the other calls of the same code staying as they are. Never an
//! edit of the module's code, never a removed call while other resources remain, and refused,
//! naming what would break, when something reads the gone instance in a way that fails.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use driftback_terraform::eval::{effective_config, instances};
use driftback_terraform::patch::{self, Op};
use driftback_terraform::{Address, Repo};

fn write(dir: &Path, file: &str, text: &str) {
    let path = dir.join(file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

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

const RDS_MODULE: &str = r#"variable "identifier" {
  type = string
}

variable "create_db_instance" {
  type    = bool
  default = true
}

resource "aws_db_parameter_group" "this" {
  name   = var.identifier
  family = "postgres16"
}

module "db_instance" {
  source = "./modules/db_instance"

  create               = var.create_db_instance
  identifier           = var.identifier
  parameter_group_name = aws_db_parameter_group.this.name
}

output "db_instance_arn" {
  value = module.db_instance.db_instance_arn
}
"#;

const DB_INSTANCE_MODULE: &str = r#"variable "create" {
  type    = bool
  default = true
}

variable "identifier" {
  type = string
}

variable "parameter_group_name" {
  type = string
}

resource "aws_db_instance" "this" {
  count = var.create ? 1 : 0

  identifier           = var.identifier
  instance_class       = "db.t4g.medium"
  parameter_group_name = var.parameter_group_name
}

output "db_instance_arn" {
  value = try(aws_db_instance.this[0].arn, null)
}
"#;

const RDS_ROOT: &str = r#"module "db" {
  source  = "registry.test/acme/rds/aws"
  version = "6.1.0"

  identifier = "orders"
}

module "reports_db" {
  source  = "registry.test/acme/rds/aws"
  version = "6.1.0"

  identifier = "reports"
}
"#;

fn rds(package: &Path, db_instance_module: &str, root: &str) -> Repo {
    write(package, "main.tf", RDS_MODULE);
    write(package, "modules/db_instance/main.tf", db_instance_module);
    let mut repo = Repo::from_files(BTreeMap::from([(PathBuf::from("main.tf"), root.to_string())]));
    repo.mount_module("db", package, Path::new("")).unwrap();
    repo.mount_module("reports_db", package, Path::new("")).unwrap();
    repo
}

const REPORTS_INSTANCE: &str = "module.reports_db.module.db_instance.aws_db_instance.this[0]";

#[test]
fn a_deleted_database_beside_its_parameter_group_turns_off_the_calls_switch() {
    let package = tempfile::tempdir().unwrap();
    let mut repo = rds(package.path(), DB_INSTANCE_MODULE, RDS_ROOT);
    let files = package_files(package.path());
    let gone = Address::parse(REPORTS_INSTANCE).unwrap();
    let group = Address::parse("module.reports_db.aws_db_parameter_group.this").unwrap();
    let orders = Address::parse("module.db.module.db_instance.aws_db_instance.this[0]").unwrap();
    let (group_before, orders_before) =
        (effective_config(&repo, &group).unwrap(), effective_config(&repo, &orders).unwrap());
    let applied = patch::apply(&mut repo, &gone, &Op::RemoveResource).unwrap();
    assert_eq!(applied.files, [PathBuf::from("main.tf")], "{applied:?}");
    let root = repo.text(Path::new("main.tf")).unwrap();
    assert!(root.ends_with("  identifier         = \"reports\"\n  create_db_instance = false\n}\n"), "{root}");
    assert!(root.starts_with(&RDS_ROOT[..RDS_ROOT.find("module \"reports_db\"").unwrap()]), "{root}");
    assert_eq!(driftback_terraform::fmt::tidy(RDS_ROOT, root), root, "laid out as terraform fmt");
    let left = instances(&repo);
    assert!(!left.contains(&gone), "{left:?}");
    assert_eq!(effective_config(&repo, &group).unwrap(), group_before);
    assert_eq!(effective_config(&repo, &orders).unwrap(), orders_before);
    assert_eq!(package_files(package.path()), files);
}

#[test]
fn an_output_that_reads_the_instance_without_try_or_a_root_that_reads_its_output_refuses() {
    // The module's output reads the instance directly: with the switch off, it would fail.
    let package = tempfile::tempdir().unwrap();
    let direct = DB_INSTANCE_MODULE.replace("try(aws_db_instance.this[0].arn, null)", "aws_db_instance.this[0].arn");
    let mut repo = rds(package.path(), &direct, RDS_ROOT);
    let gone = Address::parse(REPORTS_INSTANCE).unwrap();
    let err = patch::apply(&mut repo, &gone, &Op::RemoveResource).unwrap_err().to_string();
    assert!(err.contains("output \"db_instance_arn\""), "{err}");
    assert!(err.contains("reads aws_db_instance.this[0] directly"), "{err}");
    assert!(err.contains("module.reports_db (source \"registry.test/acme/rds/aws\""), "{err}");
    assert_eq!(repo.text(Path::new("main.tf")), Some(RDS_ROOT));

    // The root reads the output that would become null: a person decides.
    let package = tempfile::tempdir().unwrap();
    let root = format!(
        "{RDS_ROOT}\nresource \"aws_ssm_parameter\" \"reports_arn\" {{\n  name  = \"/reports/arn\"\n  type  = \"String\"\n  value = module.reports_db.db_instance_arn\n}}\n"
    );
    let mut repo = rds(package.path(), DB_INSTANCE_MODULE, &root);
    let err = patch::apply(&mut repo, &gone, &Op::RemoveResource).unwrap_err().to_string();
    assert!(
        err.contains(
            "resource \"aws_ssm_parameter\" \"reports_arn\" in main.tf reads module.reports_db.db_instance_arn"
        ),
        "{err}"
    );
    assert_eq!(repo.text(Path::new("main.tf")), Some(root.as_str()));
}

const SQS_MODULE: &str = r#"variable "create" {
  type    = bool
  default = true
}

variable "name" {
  type = string
}

variable "visibility_timeout_seconds" {
  type    = number
  default = null
}

resource "aws_sqs_queue" "this" {
  count = var.create ? 1 : 0

  name                       = var.name
  visibility_timeout_seconds = var.visibility_timeout_seconds
}

output "queue_url" {
  value = try(aws_sqs_queue.this[0].url, null)
}
"#;

const SQS_ROOT: &str = r#"variable "queues" {
  type = map(object({
    visibility_timeout_seconds = optional(number)
  }))
}

module "queue" {
  source   = "registry.test/acme/sqs/aws"
  version  = "4.2.0"
  for_each = var.queues

  name                       = "events-${each.key}"
  visibility_timeout_seconds = each.value.visibility_timeout_seconds
}
"#;

const SQS_TFVARS: &str = r#"queues = {
  orders = {
    visibility_timeout_seconds = 60
  }
  returns = {}
}
"#;

#[test]
fn the_only_resource_of_a_for_each_instance_takes_its_entry_out_of_the_map() {
    let package = tempfile::tempdir().unwrap();
    write(package.path(), "main.tf", SQS_MODULE);
    let mut repo = Repo::from_files(BTreeMap::from([
        (PathBuf::from("main.tf"), SQS_ROOT.to_string()),
        (PathBuf::from("terraform.tfvars"), SQS_TFVARS.to_string()),
    ]));
    repo.mount_module("queue", package.path(), Path::new("")).unwrap();
    let files = package_files(package.path());
    let returns = Address::parse("module.queue[\"returns\"].aws_sqs_queue.this[0]").unwrap();
    let orders = Address::parse("module.queue[\"orders\"].aws_sqs_queue.this[0]").unwrap();
    let orders_before = effective_config(&repo, &orders).unwrap();
    let applied = patch::apply(&mut repo, &returns, &Op::RemoveResource).unwrap();
    assert_eq!(applied.files, [PathBuf::from("terraform.tfvars")], "{applied:?}");
    assert_eq!(
        repo.text(Path::new("terraform.tfvars")).unwrap(),
        "queues = {\n  orders = {\n    visibility_timeout_seconds = 60\n  }\n}\n"
    );
    assert_eq!(repo.text(Path::new("main.tf")), Some(SQS_ROOT));
    assert!(!instances(&repo).contains(&returns));
    assert_eq!(effective_config(&repo, &orders).unwrap(), orders_before);
    assert_eq!(package_files(package.path()), files);
}

const QUEUE_WITH_ALARM_MODULE: &str = r#"variable "create" {
  type    = bool
  default = true
}

variable "name" {
  type = string
}

variable "delay_seconds" {
  type    = number
  default = 0
}

resource "aws_sqs_queue" "this" {
  count = var.create ? 1 : 0

  name          = var.name
  delay_seconds = var.delay_seconds
}

resource "aws_cloudwatch_metric_alarm" "age" {
  alarm_name          = "${var.name}-age"
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateAgeOfOldestMessage"
  comparison_operator = "GreaterThanThreshold"
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 600
  dimensions = {
    QueueName = var.name
  }
}
"#;

const QUEUE_WITH_ALARM_ROOT: &str = r#"module "queue" {
  source   = "registry.test/acme/sqs-alarmed/aws"
  version  = "1.0.0"
  for_each = toset(["orders", "returns"])

  name          = "events-${each.key}"
  delay_seconds = try(each.value.delay_seconds, 0)
}
"#;

/// One resource of several in a `for_each` instance: the switch is turned off for that instance
/// alone (read per instance from the collection's entry), and the instance's other resource and
/// the other instance stay; a `toset()` of names has no entry to hold it, so a person decides.
#[test]
fn one_resource_of_a_for_each_instance_with_others_left_is_never_its_whole_entry() {
    let package = tempfile::tempdir().unwrap();
    write(package.path(), "main.tf", QUEUE_WITH_ALARM_MODULE);
    let mut repo = Repo::from_files(BTreeMap::from([(PathBuf::from("main.tf"), QUEUE_WITH_ALARM_ROOT.to_string())]));
    repo.mount_module("queue", package.path(), Path::new("")).unwrap();
    let returns = Address::parse("module.queue[\"returns\"].aws_sqs_queue.this[0]").unwrap();
    let err = patch::apply(&mut repo, &returns, &Op::RemoveResource).unwrap_err().to_string();
    assert!(err.contains("module.queue (source \"registry.test/acme/sqs-alarmed/aws\""), "{err}");
    assert!(err.contains("its switch `count = var.create ? 1 : 0` turned off for this call"), "{err}");
    assert_eq!(repo.text(Path::new("main.tf")), Some(QUEUE_WITH_ALARM_ROOT));

    // With a map of objects, the instance's entry holds the switch.
    let root = QUEUE_WITH_ALARM_ROOT
        .replace("toset([\"orders\", \"returns\"])", "{\n    orders  = { delay_seconds = 5 }\n    returns = {}\n  }");
    let mut repo = Repo::from_files(BTreeMap::from([(PathBuf::from("main.tf"), root.clone())]));
    repo.mount_module("queue", package.path(), Path::new("")).unwrap();
    let alarm = Address::parse("module.queue[\"returns\"].aws_cloudwatch_metric_alarm.age").unwrap();
    let orders = Address::parse("module.queue[\"orders\"].aws_sqs_queue.this[0]").unwrap();
    let (alarm_before, orders_before) =
        (effective_config(&repo, &alarm).unwrap(), effective_config(&repo, &orders).unwrap());
    patch::apply(&mut repo, &returns, &Op::RemoveResource).unwrap();
    let text = repo.text(Path::new("main.tf")).unwrap();
    assert!(text.contains("    returns = {\n      create = false\n    }\n  }\n"), "{text}");
    // After a blank line, alone in its alignment run: one space before its `=`.
    assert!(text.contains("\n\n  create = try(each.value.create, true)\n}\n"), "{text}");
    let left = instances(&repo);
    assert!(!left.contains(&returns) && left.contains(&alarm) && left.contains(&orders), "{left:?}");
    assert_eq!(effective_config(&repo, &alarm).unwrap(), alarm_before);
    assert_eq!(effective_config(&repo, &orders).unwrap(), orders_before);
}
