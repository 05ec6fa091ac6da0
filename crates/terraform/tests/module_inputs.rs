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
