//! Values a fetched module builds from its inputs, changed at the root's call: `for_each` over an
//! input map (behind `var.create ? ... : {}`), `try(each.value.x, var.default)` and
//! `lookup(each.value, "key", default)` (the entry gains the key it lacked, the other entries keep
//! the default), an entry's existing value; and a value the module hard-codes, refused naming the
//! call, its version and "the module exposes no input".

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use driftback_terraform::patch::{self, Op};
use driftback_terraform::{Address, AttrPath, AttrValue, Repo, Seg};
use serde_json::json;

const MODULE: &str = r#"variable "create" {
  type    = bool
  default = true
}

variable "alarms" {
  type = any
}

variable "default_threshold" {
  type    = number
  default = 80
}

resource "aws_cloudwatch_metric_alarm" "this" {
  for_each = var.create ? var.alarms : {}

  alarm_name          = each.key
  namespace           = "AWS/EC2"
  metric_name         = each.value.metric
  comparison_operator = "GreaterThanThreshold"
  statistic           = "Average"
  period              = 300
  threshold           = try(each.value.threshold, var.default_threshold)
  evaluation_periods  = lookup(each.value, "periods", 2)
}
"#;

const ROOT: &str = r#"module "alarms" {
  source  = "registry.test/acme/alarms/aws"
  version = "1.0.0"

  alarms = {
    cpu = {
      metric    = "CPUUtilization"
      threshold = 85
    }
    mem = {
      metric = "MemoryUtilization"
    }
  }
}
"#;

fn repository(package: &Path) -> Repo {
    std::fs::write(package.join("main.tf"), MODULE).unwrap();
    let mut repo = Repo::from_files(BTreeMap::from([(PathBuf::from("main.tf"), ROOT.to_string())]));
    repo.mount_module("alarms", package, Path::new("")).unwrap();
    repo
}

fn set(repo: &mut Repo, key: &str, attr: &str, value: serde_json::Value) -> Result<String, String> {
    let address = Address::parse(&format!("module.alarms.aws_cloudwatch_metric_alarm.this[\"{key}\"]")).unwrap();
    let op = Op::Set { path: AttrPath(vec![Seg::Name(attr.into())]), value: AttrValue::Literal(value) };
    match patch::apply(repo, &address, &op) {
        Ok(applied) => {
            assert_eq!(applied.files, [PathBuf::from("main.tf")], "{applied:?}");
            Ok(repo.text(Path::new("main.tf")).unwrap().to_string())
        }
        Err(e) => Err(e.to_string()),
    }
}

fn config(repo: &Repo, key: &str) -> serde_json::Value {
    let address = Address::parse(&format!("module.alarms.aws_cloudwatch_metric_alarm.this[\"{key}\"]")).unwrap();
    driftback_terraform::eval::effective_config(repo, &address).unwrap()
}

#[test]
fn an_entry_of_the_input_map_gains_the_key_try_and_lookup_read() {
    let package = tempfile::tempdir().unwrap();
    let mut repo = repository(package.path());
    // try(each.value.threshold, var.default_threshold): mem had none.
    let text = set(&mut repo, "mem", "threshold", json!(70)).unwrap();
    assert!(
        text.contains("    mem = {\n      metric    = \"MemoryUtilization\"\n      threshold = 70\n    }"),
        "{text}"
    );
    // lookup(each.value, "periods", 2): cpu gains periods; mem keeps the module's default.
    let text = set(&mut repo, "cpu", "evaluation_periods", json!(3)).unwrap();
    assert!(text.contains("      periods   = 3\n"), "{text}");
    assert_eq!(config(&repo, "cpu")["evaluation_periods"], json!(3));
    assert_eq!(config(&repo, "mem")["evaluation_periods"], json!(2));
    // An entry's existing value changes where it is.
    let text = set(&mut repo, "cpu", "threshold", json!(90)).unwrap();
    assert!(text.contains("      threshold = 90\n"), "{text}");
    assert_eq!(config(&repo, "mem")["threshold"], json!(70));
}

#[test]
fn a_value_the_module_hard_codes_is_refused_naming_the_call_and_the_missing_input() {
    let package = tempfile::tempdir().unwrap();
    let mut repo = repository(package.path());
    let err = set(&mut repo, "cpu", "period", json!(60)).unwrap_err();
    assert!(
        err.contains("module.alarms (source \"registry.test/acme/alarms/aws\", version \"1.0.0\", main.tf:1)"),
        "{err}"
    );
    assert!(
        err.contains("makes aws_cloudwatch_metric_alarm.this[\"cpu\"], and the module exposes no input for period"),
        "{err}"
    );
    assert_eq!(repo.text(Path::new("main.tf")), Some(ROOT));
}

const INLINE_RULES_MODULE: &str = r#"variable "name" {
  type = string
}

variable "ingress_rules" {
  type    = any
  default = []
}

resource "aws_security_group" "this" {
  name = var.name

  dynamic "ingress" {
    for_each = var.ingress_rules
    content {
      from_port   = ingress.value.from_port
      to_port     = ingress.value.to_port
      protocol    = ingress.value.protocol
      cidr_blocks = ingress.value.cidr_blocks
    }
  }
}
"#;

const INLINE_RULES_ROOT: &str = r#"module "web_sg" {
  source  = "registry.test/acme/sg-inline/aws"
  version = "2.0.0"

  name = "web"

  ingress_rules = [
    {
      from_port   = 443
      to_port     = 443
      protocol    = "tcp"
      cidr_blocks = ["0.0.0.0/0"]
    },
  ]
}
"#;

/// A rule added to the group of a module that writes its rules inline from a list input: the
/// separate rule resource is refused by the gate (`module_exclusive`), and the inline block becomes
/// the next element of the list the module's `dynamic` block reads, at the root's call; the
/// fetched module's code is never written.
#[test]
fn an_inline_rule_of_a_fetched_module_is_a_new_element_of_the_calls_list() {
    let package = tempfile::tempdir().unwrap();
    std::fs::write(package.path().join("main.tf"), INLINE_RULES_MODULE).unwrap();
    let mut repo = Repo::from_files(BTreeMap::from([(PathBuf::from("main.tf"), INLINE_RULES_ROOT.to_string())]));
    repo.mount_module("web_sg", package.path(), Path::new("")).unwrap();
    let address = Address::parse("module.web_sg.aws_security_group.this").unwrap();
    let spec = driftback_terraform::BlockSpec {
        attrs: vec![
            ("from_port".into(), AttrValue::Literal(json!(8443))),
            ("to_port".into(), AttrValue::Literal(json!(8443))),
            ("protocol".into(), AttrValue::Literal(json!("tcp"))),
            ("cidr_blocks".into(), AttrValue::Literal(json!(["10.30.0.0/16"]))),
        ],
        blocks: vec![],
    };
    let applied = patch::apply(&mut repo, &address, &Op::AddBlock { block_type: "ingress".into(), spec }).unwrap();
    assert!(format!("{applied:?}").contains("the input ingress_rules of module.web_sg"), "{applied:?}");
    let root = repo.text(Path::new("main.tf")).unwrap();
    let (kept, added) = root.split_once("8443").expect("the new rule is in the root's call");
    assert!(kept.contains("cidr_blocks = [\"0.0.0.0/0\"]"), "{root}");
    assert!(added.contains("10.30.0.0/16") && root.contains("module \"web_sg\""), "{root}");
    assert_eq!(std::fs::read_to_string(package.path().join("main.tf")).unwrap(), INLINE_RULES_MODULE);
}
