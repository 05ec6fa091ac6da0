//! Origin-aware patches: each change lands where the value comes from, and only the drifted
//! instance's effective configuration changes (checked by the evaluator).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use driftback_terraform::eval::{effective_config, instances};
use driftback_terraform::patch::{self, PatchError};
use driftback_terraform::{Address, AttrPath, AttrValue, Op, Repo};
use serde_json::{Value, json};

const ROOT: &str = r#"variable "queues" {
  type = map(object({
    visibility = number
    delay      = optional(number, 0)
  }))
  default = {
    ingest = { visibility = 60 }
    render = { visibility = 300 }
  }
}

variable "shared_type" {
  default = "t3.small"
}

locals {
  common = { Project = "x" }
  apps = {
    api = { tags = { Team = "core" } }
    web = { tags = { Team = "edge", Tier = "front" } }
  }
}

resource "aws_sqs_queue" "jobs" {
  for_each                   = var.queues
  visibility_timeout_seconds = each.value.visibility
  delay_seconds              = each.value.delay
}

resource "aws_instance" "app" {
  for_each      = local.apps
  instance_type = var.shared_type
  tags          = merge(local.common, each.value.tags, { App = each.key })
}

resource "aws_instance" "bastion" {
  instance_type = var.shared_type
}

resource "aws_s3_bucket" "logs" {
  bucket = "logs"
}

resource "aws_s3_bucket_versioning" "logs" {
  bucket = aws_s3_bucket.logs.id
}

resource "aws_s3_bucket" "data" {
  bucket = "data"
}

resource "aws_s3_bucket_policy" "data" {
  bucket = aws_s3_bucket.data.id
  policy = "{}"
}

resource "aws_cloudfront_distribution" "site" {
  origin_bucket = aws_s3_bucket.data.bucket_regional_domain_name
}

output "logs_bucket" {
  value = aws_s3_bucket.logs.arn
}

module "orders" {
  source     = "./queue"
  name       = "orders"
  visibility = 60
}

module "emails" {
  source = "./queue"
  name   = "emails"
}
"#;

const QUEUE_MODULE: &str = r#"variable "name" {}

variable "visibility" {
  default = 30
}

variable "retention" {
  default = 345600
}

resource "aws_sqs_queue" "this" {
  name                       = var.name
  visibility_timeout_seconds = var.visibility
  message_retention_seconds  = var.retention
}
"#;

fn repo() -> Repo {
    let files: BTreeMap<PathBuf, String> = [("main.tf", ROOT), ("queue/main.tf", QUEUE_MODULE)]
        .iter()
        .map(|(p, t)| (PathBuf::from(p), t.to_string()))
        .collect();
    let repo = Repo::from_files(files);
    assert!(repo.diagnostics().is_empty(), "{:?}", repo.diagnostics());
    repo
}

fn addr(text: &str) -> Address {
    Address::parse(text).unwrap()
}

fn value(repo: &Repo, address: &str, path: &str) -> Option<Value> {
    let config = effective_config(repo, &addr(address))?;
    driftback_terraform::eval::value_at_path(&config, &AttrPath::parse(path).unwrap())
}

fn set(repo: &mut Repo, address: &str, path: &str, v: Value) -> Result<patch::Applied, PatchError> {
    patch::apply(repo, &addr(address), &Op::Set { path: AttrPath::parse(path).unwrap(), value: AttrValue::Literal(v) })
}

/// Every instance's configuration except the named ones.
fn others(repo: &Repo, except: &[&str]) -> BTreeMap<String, Value> {
    instances(repo)
        .into_iter()
        .filter(|a| !except.contains(&a.to_string().as_str()))
        .filter_map(|a| Some((a.to_string(), effective_config(repo, &a)?)))
        .collect()
}

#[test]
fn optional_attribute_defaults_apply() {
    let r = repo();
    assert_eq!(value(&r, r#"aws_sqs_queue.jobs["ingest"]"#, "delay_seconds"), Some(json!(0)));
}

#[test]
fn a_for_each_value_changes_in_its_map_entry() {
    let mut r = repo();
    let before = others(&r, &[r#"aws_sqs_queue.jobs["render"]"#]);
    set(&mut r, r#"aws_sqs_queue.jobs["render"]"#, "delay_seconds", json!(15)).unwrap();
    assert_eq!(value(&r, r#"aws_sqs_queue.jobs["render"]"#, "delay_seconds"), Some(json!(15)));
    assert_eq!(others(&r, &[r#"aws_sqs_queue.jobs["render"]"#]), before);
    let text = r.text(Path::new("main.tf")).unwrap();
    assert!(text.contains("render = { visibility = 300, delay = 15 }"), "{text}");
}

#[test]
fn a_module_input_left_to_the_default_is_given_to_the_one_call() {
    let mut r = repo();
    let before = others(&r, &["module.emails.aws_sqs_queue.this"]);
    set(&mut r, "module.emails.aws_sqs_queue.this", "message_retention_seconds", json!(86400)).unwrap();
    assert_eq!(value(&r, "module.emails.aws_sqs_queue.this", "message_retention_seconds"), Some(json!(86400)));
    assert_eq!(others(&r, &["module.emails.aws_sqs_queue.this"]), before);
    assert_eq!(r.text(Path::new("queue/main.tf")).unwrap(), QUEUE_MODULE, "the shared module is untouched");
    // A literal input at the call is changed there.
    set(&mut r, "module.orders.aws_sqs_queue.this", "visibility_timeout_seconds", json!(120)).unwrap();
    assert!(r.text(Path::new("main.tf")).unwrap().contains("visibility = 120"));
    assert_eq!(value(&r, "module.emails.aws_sqs_queue.this", "visibility_timeout_seconds"), Some(json!(30)));
}

#[test]
fn a_shared_variable_is_overridden_on_the_one_resource() {
    let mut r = repo();
    let applied = set(&mut r, "aws_instance.bastion", "instance_type", json!("t3.large")).unwrap();
    assert_eq!(value(&r, "aws_instance.bastion", "instance_type"), Some(json!("t3.large")));
    assert_eq!(value(&r, r#"aws_instance.app["api"]"#, "instance_type"), Some(json!("t3.small")));
    assert!(applied.notes.iter().any(|n| n.contains("wrote the value")), "{:?}", applied.notes);
}

#[test]
fn a_note_names_the_file_the_line_and_how_the_value_gets_there() {
    let mut r = repo();
    // A literal on the resource itself.
    let applied = set(&mut r, "module.orders.aws_sqs_queue.this", "visibility_timeout_seconds", json!(120)).unwrap();
    let text = r.text(Path::new("main.tf")).unwrap();
    let line = text[..text.find("visibility = 120").unwrap()].matches('\n').count() + 1;
    let note = applied.notes.join("; ");
    assert!(note.contains(&format!("main.tf:{line}, through the input visibility")), "{note}");
    assert!(!note.contains("  ") && !note.contains("at ("), "no gap where the origin goes: {note}");
}

#[test]
fn tags_through_merge_change_in_the_instance_entry() {
    let mut r = repo();
    let before = others(&r, &[r#"aws_instance.app["api"]"#]);
    set(&mut r, r#"aws_instance.app["api"]"#, "tags.OnCall", json!("core-primary")).unwrap();
    assert_eq!(value(&r, r#"aws_instance.app["api"]"#, "tags.OnCall"), Some(json!("core-primary")));
    assert_eq!(others(&r, &[r#"aws_instance.app["api"]"#]), before);
    let web = addr(r#"aws_instance.app["web"]"#);
    patch::apply(&mut r, &web, &Op::Remove { path: AttrPath::parse("tags.Tier").unwrap() }).unwrap();
    assert_eq!(value(&r, r#"aws_instance.app["web"]"#, "tags.Tier"), None);
    assert_eq!(value(&r, r#"aws_instance.app["web"]"#, "tags.Team"), Some(json!("edge")));
    // A key that comes from the shared local cannot be removed for one instance only.
    let err = patch::apply(&mut r, &web, &Op::Remove { path: AttrPath::parse("tags.Project").unwrap() }).unwrap_err();
    assert!(err.to_string().contains("would change"), "{err}");
}

#[test]
fn deleting_one_for_each_instance_drops_its_entry() {
    let mut r = repo();
    let before = others(&r, &[r#"aws_sqs_queue.jobs["ingest"]"#]);
    patch::apply(&mut r, &addr(r#"aws_sqs_queue.jobs["ingest"]"#), &Op::RemoveResource).unwrap();
    assert!(effective_config(&r, &addr(r#"aws_sqs_queue.jobs["ingest"]"#)).is_none());
    assert_eq!(others(&r, &[r#"aws_sqs_queue.jobs["ingest"]"#]), before);
}

#[test]
fn a_deleted_resource_takes_its_dependents_and_outputs_but_other_references_escalate() {
    let mut r = repo();
    let applied = patch::apply(&mut r, &addr("aws_s3_bucket.logs"), &Op::RemoveResource).unwrap();
    let text = r.text(Path::new("main.tf")).unwrap();
    assert!(!text.contains("aws_s3_bucket_versioning\" \"logs\""), "{text}");
    assert!(!text.contains("output \"logs_bucket\""), "{text}");
    assert!(applied.notes.iter().any(|n| n.contains("only exposed")), "{:?}", applied.notes);
    let err = patch::apply(&mut r, &addr("aws_s3_bucket.data"), &Op::RemoveResource).unwrap_err();
    assert!(err.to_string().contains("aws_cloudfront_distribution"), "{err}");
    // Refused means untouched.
    assert!(r.text(Path::new("main.tf")).unwrap().contains("resource \"aws_s3_bucket_policy\" \"data\""));
}

#[test]
fn a_module_whose_only_resource_is_deleted_loses_its_call() {
    let mut r = repo();
    patch::apply(&mut r, &addr("module.emails.aws_sqs_queue.this"), &Op::RemoveResource).unwrap();
    let text = r.text(Path::new("main.tf")).unwrap();
    assert!(!text.contains("module \"emails\""), "{text}");
    assert!(text.contains("module \"orders\""));
    assert!(effective_config(&r, &addr("module.orders.aws_sqs_queue.this")).is_some());
}

#[test]
fn a_value_computed_from_another_resource_is_not_overwritten_with_a_literal() {
    let mut r = repo();
    let before = r.text(Path::new("main.tf")).unwrap().to_string();
    let err =
        set(&mut r, "aws_cloudfront_distribution.site", "origin_bucket", json!("other.s3.amazonaws.com")).unwrap_err();
    assert!(err.to_string().contains("computed from other resources"), "{err}");
    assert_eq!(r.text(Path::new("main.tf")).unwrap(), before, "nothing written");
    // A literal is still changed in place.
    set(&mut r, "aws_s3_bucket_policy.data", "policy", json!("{\"Version\":\"2012-10-17\"}")).unwrap();
    assert_eq!(value(&r, "aws_s3_bucket_policy.data", "policy"), Some(json!("{\"Version\":\"2012-10-17\"}")));
}

const QUEUES: &str = r#"resource "aws_sqs_queue" "dlq" {
  name = "orders-dlq"
}

resource "aws_sqs_queue" "orders" {
  name = "orders"
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.dlq.arn
    maxReceiveCount     = 5
  })
}
"#;

#[test]
fn a_member_of_a_json_document_built_from_other_resources_is_edited_in_place() {
    let mut r = Repo::from_files(BTreeMap::from([(PathBuf::from("main.tf"), QUEUES.to_string())]));
    let applied = set(&mut r, "aws_sqs_queue.orders", r#"redrive_policy["maxReceiveCount"]"#, json!(3)).unwrap();
    let text = r.text(Path::new("main.tf")).unwrap();
    assert!(text.contains("maxReceiveCount     = 3"), "{text}");
    assert!(text.contains("deadLetterTargetArn = aws_sqs_queue.dlq.arn"), "the reference stays: {text}");
    assert!(applied.notes.iter().any(|n| n.contains("jsonencode")), "{:?}", applied.notes);

    // With the state's values for the references, the document evaluates as `terraform plan` sees it.
    let state = driftback_terraform::State::parse(
        &json!({"version": 4, "terraform_version": "1.9.5", "serial": 1, "lineage": "x", "outputs": {},
                "resources": [{"mode": "managed", "type": "aws_sqs_queue", "name": "dlq",
                               "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
                               "instances": [{"schema_version": 0, "attributes": {"arn": "arn:aws:sqs:us-east-1:1:orders-dlq"}}]}]})
        .to_string(),
        "state",
    )
    .unwrap();
    let known = state.known_values(&[]);
    let config =
        driftback_terraform::eval::effective_config_resolved(&r, &addr("aws_sqs_queue.orders"), &known).unwrap();
    let document: Value = serde_json::from_str(config["redrive_policy"].as_str().unwrap()).unwrap();
    assert_eq!(document, json!({"deadLetterTargetArn": "arn:aws:sqs:us-east-1:1:orders-dlq", "maxReceiveCount": 3}));
    // Without them, the reference stays symbolic.
    assert!(value(&r, "aws_sqs_queue.orders", "redrive_policy").unwrap().as_str().unwrap().starts_with("${"));
}

/// A module called once per list entry, each call reading its own entry through
/// `try(var.list[count.index].key, default)`.
#[test]
fn a_count_call_reading_its_list_entry_through_try_changes_that_entry() {
    let root = r#"variable "servers" {
  default = [
    { type = "m5.large" },
    {},
  ]
}

module "api" {
  source        = "./server"
  count         = length(var.servers)
  instance_type = try(var.servers[count.index].type, "t3.small")
}
"#;
    let module = r#"variable "instance_type" {}

resource "aws_instance" "this" {
  instance_type = var.instance_type
}
"#;
    let files: BTreeMap<PathBuf, String> = [("main.tf", root), ("server/main.tf", module)]
        .iter()
        .map(|(p, t)| (PathBuf::from(p), t.to_string()))
        .collect();
    let mut r = Repo::from_files(files);
    let second = "module.api[1].aws_instance.this";
    assert_eq!(value(&r, second, "instance_type"), Some(json!("t3.small")));
    let before = others(&r, &[second]);
    let applied = set(&mut r, second, "instance_type", json!("m5.xlarge")).unwrap();
    assert_eq!(value(&r, second, "instance_type"), Some(json!("m5.xlarge")));
    assert_eq!(others(&r, &[second]), before, "the first server keeps its type");
    let text = r.text(Path::new("main.tf")).unwrap();
    assert!(text.contains("type = \"m5.xlarge\""), "the entry gained the key: {text}");
    assert!(text.contains("try(var.servers[count.index].type, \"t3.small\")"), "the call is untouched: {text}");
    assert!(applied.notes.iter().any(|n| n.contains("try()")), "{:?}", applied.notes);
}

#[test]
fn the_last_instance_of_a_count_module_goes_with_its_list_entry() {
    let root = r#"variable "servers" {
  default = [
    { type = "m5.large" },
    {},
    { type = "t3.micro" },
  ]
}

module "api" {
  source        = "./server"
  count         = length(var.servers)
  instance_type = try(var.servers[count.index].type, "t3.small")
}

output "api_ids" {
  value = module.api[*].id
}
"#;
    let module = r#"variable "create" {
  default = true
}

variable "instance_type" {}

resource "aws_instance" "this" {
  count         = var.create ? 1 : 0
  instance_type = var.instance_type
}

output "id" {
  value = try(aws_instance.this[0].id, null)
}
"#;
    let files: BTreeMap<PathBuf, String> = [("main.tf", root), ("server/main.tf", module)]
        .iter()
        .map(|(p, t)| (PathBuf::from(p), t.to_string()))
        .collect();
    let mut r = Repo::from_files(files.clone());
    // The middle one: dropping its entry would renumber the others; the module's switch turns it
    // off instead (see a_module_instance_in_the_middle_is_turned_off_by_the_modules_own_switch).
    let middle = patch::apply(&mut r.clone(), &addr("module.api[1].aws_instance.this[0]"), &Op::RemoveResource);
    assert!(middle.as_ref().is_ok_and(|a| a.notes.iter().any(|n| n.contains("own switch"))), "{middle:?}");
    // Without a switch, a person decides.
    let mut no_switch = files;
    no_switch.insert(
        PathBuf::from("server/main.tf"),
        module
            .replace("  count         = var.create ? 1 : 0\n", "")
            .replace("aws_instance.this[0].id", "aws_instance.this.id"),
    );
    let middle =
        patch::apply(&mut Repo::from_files(no_switch), &addr("module.api[1].aws_instance.this"), &Op::RemoveResource);
    assert!(
        matches!(&middle, Err(PatchError::Refused { reason, .. }) if reason.contains("not the last")),
        "{middle:?}"
    );
    // The last one: its entry leaves the list; the others are as they were.
    let last = "module.api[2].aws_instance.this[0]";
    let before = others(&r, &[last]);
    patch::apply(&mut r, &addr(last), &Op::RemoveResource).unwrap();
    assert!(effective_config(&r, &addr(last)).is_none());
    assert_eq!(others(&r, &[last]), before);
    let text = r.text(Path::new("main.tf")).unwrap();
    assert!(!text.contains("t3.micro") && text.contains("m5.large"), "{text}");
    assert!(
        r.text(Path::new("server/main.tf")).unwrap().contains("try(aws_instance.this[0].id, null)"),
        "the module is untouched"
    );
}

/// A project where one variable feeds a literal-valued argument of one resource and an expression
/// of another that the evaluator cannot compute (it reads another resource, or `path.cwd`).
fn shared_with_uncomputable(uncomputable: &str) -> Repo {
    let main = format!(
        r#"variable "env" {{
  default = "dev"
}}

resource "aws_instance" "api" {{
  instance_type = "t3.small"
  tags = {{
    Env = var.env
  }}
}}

resource "aws_s3_bucket" "logs" {{
  bucket = {uncomputable}
}}
"#
    );
    let repo = Repo::from_files([(PathBuf::from("main.tf"), main)].into_iter().collect());
    assert!(repo.diagnostics().is_empty(), "{:?}", repo.diagnostics());
    repo
}

#[test]
fn an_expression_the_evaluator_cannot_compute_still_shows_the_variables_it_reads() {
    for uncomputable in [r#""${aws_s3_bucket.base.id}-${var.env}""#, r#""${basename(path.cwd)}-${var.env}""#] {
        let repo = shared_with_uncomputable(uncomputable);
        let bucket = value(&repo, "aws_s3_bucket.logs", "bucket").unwrap();
        let text = bucket.as_str().unwrap();
        assert!(text.starts_with("${") && text.contains(r#"var.env = "dev""#), "{text}");
    }
}

#[test]
fn an_edit_whose_effect_on_another_instance_cannot_be_computed_is_not_chosen() {
    // Changing `var.env` would rename the bucket too, though the evaluator cannot say to what: the
    // edit must not pass as leaving the bucket unchanged. The narrow literal on the instance does.
    for uncomputable in [r#""${aws_s3_bucket.base.id}-${var.env}""#, r#""${basename(path.cwd)}-${var.env}""#] {
        let mut repo = shared_with_uncomputable(uncomputable);
        let before = others(&repo, &["aws_instance.api"]);
        let applied = set(&mut repo, "aws_instance.api", "tags.Env", json!("prod")).unwrap();
        assert_eq!(value(&repo, "aws_instance.api", "tags.Env"), Some(json!("prod")));
        assert_eq!(others(&repo, &["aws_instance.api"]), before, "{applied:?}");
        let main = repo.text(Path::new("main.tf")).unwrap();
        assert!(main.contains("default = \"dev\""), "the shared variable was edited:\n{main}");
    }
}

#[test]
fn an_origin_shared_with_another_argument_of_the_drifted_resource_is_not_edited() {
    // The threshold variable also names the alarm: editing it would rename, and so replace, the
    // alarm. The new threshold is written on the alarm itself.
    let main = r#"variable "threshold" {
  default = 80
}

resource "aws_cloudwatch_metric_alarm" "cpu" {
  alarm_name  = "cpu-above-${var.threshold}"
  threshold   = var.threshold
  metric_name = "CPUUtilization"
}
"#;
    let mut repo = Repo::from_files([(PathBuf::from("main.tf"), main.to_string())].into_iter().collect());
    let applied = set(&mut repo, "aws_cloudwatch_metric_alarm.cpu", "threshold", json!(90)).unwrap();
    assert_eq!(value(&repo, "aws_cloudwatch_metric_alarm.cpu", "threshold"), Some(json!(90)), "{applied:?}");
    assert_eq!(value(&repo, "aws_cloudwatch_metric_alarm.cpu", "alarm_name"), Some(json!("cpu-above-80")));
    let text = repo.text(Path::new("main.tf")).unwrap();
    assert!(text.contains("default = 80"), "{text}");
}

/// Lifecycle rules from `dynamic` blocks over a filtered `for` map of a `for_each` variable, in the
/// style of split S3 resources: the effective configuration has one block per element, and a
/// changed rule is written at the variable's entry, through the iterator and the `for` expression.
fn dynamic_rules() -> Repo {
    let main = r#"variable "buckets" {
  default = {
    raw     = { noncurrent_days = 30, expiration_days = null }
    curated = { noncurrent_days = 90, expiration_days = 14 }
    scratch = { noncurrent_days = null, expiration_days = null }
  }
}

locals {
  with_rules = { for name, cfg in var.buckets : name => cfg if cfg.noncurrent_days != null || cfg.expiration_days != null }
}

resource "aws_s3_bucket_lifecycle_configuration" "this" {
  for_each = local.with_rules
  bucket   = each.key

  rule {
    id     = "abort-uploads"
    status = "Enabled"
  }

  dynamic "rule" {
    for_each = each.value.noncurrent_days == null ? [] : [each.value.noncurrent_days]
    content {
      id     = "expire-noncurrent"
      status = "Enabled"
      noncurrent_version_expiration {
        noncurrent_days = rule.value
      }
    }
  }

  dynamic "rule" {
    for_each = each.value.expiration_days == null ? [] : [each.value.expiration_days]
    iterator = days
    content {
      id     = "expire-objects"
      status = "Enabled"
      expiration {
        days = days.value
      }
    }
  }
}
"#;
    let repo = Repo::from_files([(PathBuf::from("main.tf"), main.to_string())].into_iter().collect());
    assert!(repo.diagnostics().is_empty(), "{:?}", repo.diagnostics());
    repo
}

#[test]
fn dynamic_blocks_expand_in_the_effective_configuration() {
    let repo = dynamic_rules();
    let curated = effective_config(&repo, &addr(r#"aws_s3_bucket_lifecycle_configuration.this["curated"]"#)).unwrap();
    let ids: Vec<&str> = curated["rule"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["abort-uploads", "expire-noncurrent", "expire-objects"]);
    assert_eq!(
        value(&repo, r#"aws_s3_bucket_lifecycle_configuration.this["curated"]"#, "rule[2].expiration.days"),
        Some(json!(14))
    );
    let raw = effective_config(&repo, &addr(r#"aws_s3_bucket_lifecycle_configuration.this["raw"]"#)).unwrap();
    assert_eq!(raw["rule"].as_array().unwrap().len(), 2);
    assert!(effective_config(&repo, &addr(r#"aws_s3_bucket_lifecycle_configuration.this["scratch"]"#)).is_none());
}

#[test]
fn a_rule_from_a_dynamic_block_changes_at_its_variable_entry() {
    let mut repo = dynamic_rules();
    let raw = r#"aws_s3_bucket_lifecycle_configuration.this["raw"]"#;
    let before = others(&repo, &[raw]);
    set(&mut repo, raw, "rule[1].noncurrent_version_expiration.noncurrent_days", json!(60)).unwrap();
    assert_eq!(value(&repo, raw, "rule[1].noncurrent_version_expiration.noncurrent_days"), Some(json!(60)));
    assert_eq!(others(&repo, &[raw]), before);
    let text = repo.text(Path::new("main.tf")).unwrap();
    assert!(text.contains("raw     = { noncurrent_days = 60, expiration_days = null }"), "{text}");
    // A rule written in the body is still found by its place among the written blocks.
    let curated = r#"aws_s3_bucket_lifecycle_configuration.this["curated"]"#;
    set(&mut repo, curated, "rule[2].expiration.days", json!(30)).unwrap();
    assert!(repo.text(Path::new("main.tf")).unwrap().contains("expiration_days = 30 }"));
    set(&mut repo, curated, "rule[0].status", json!("Disabled")).unwrap();
    assert_eq!(value(&repo, curated, "rule[0].status"), Some(json!("Disabled")));
    assert_eq!(value(&repo, raw, "rule[0].status"), Some(json!("Enabled")));
}

#[test]
fn an_input_a_count_module_call_does_not_pass_yet_is_added_per_instance() {
    let files = [
        (
            "main.tf",
            r#"variable "api_instances" {
  type = any
}

module "api" {
  source = "./modules/instance"
  count  = length(var.api_instances)

  monitoring = try(var.api_instances[count.index].monitoring, false)
}
"#,
        ),
        ("terraform.tfvars", "api_instances = [\n  {\n    monitoring = true\n  },\n  {},\n]\n"),
        (
            "modules/instance/main.tf",
            r#"variable "monitoring" {
  default = false
}

variable "disable_api_termination" {
  default = false
}

resource "aws_instance" "this" {
  monitoring              = var.monitoring
  disable_api_termination = var.disable_api_termination
}
"#,
        ),
    ];
    let mut repo = Repo::from_files(files.iter().map(|(p, t)| (PathBuf::from(p), t.to_string())).collect());
    let before = others(&repo, &["module.api[0].aws_instance.this"]);
    let applied = set(&mut repo, "module.api[0].aws_instance.this", "disable_api_termination", json!(true)).unwrap();
    assert_eq!(value(&repo, "module.api[0].aws_instance.this", "disable_api_termination"), Some(json!(true)));
    assert_eq!(others(&repo, &["module.api[0].aws_instance.this"]), before, "{applied:?}");
    let main = repo.text(Path::new("main.tf")).unwrap();
    assert!(
        main.contains("disable_api_termination = try(var.api_instances[count.index].disable_api_termination, false)"),
        "{main}"
    );
    let tfvars = repo.text(Path::new("terraform.tfvars")).unwrap();
    assert!(tfvars.contains("monitoring              = true\n    disable_api_termination = true"), "{tfvars}");
    let module = repo.text(Path::new("modules/instance/main.tf")).unwrap();
    assert_eq!(module, files[2].1, "the module's default is every instance's");
}

#[test]
fn a_tag_for_one_call_of_a_shared_module_is_merged_into_that_calls_own_input() {
    let files = [
        (
            "main.tf",
            r#"variable "tags" {
  default = { Owner = "platform" }
}

module "prod" {
  source = "./modules/vpc"
  name   = "prod"
  tags   = var.tags
}

module "shared" {
  source = "./modules/vpc"
  name   = "shared"
  tags   = var.tags
}
"#,
        ),
        (
            "modules/vpc/variables.tf",
            "variable \"name\" {}\n\nvariable \"tags\" {\n  type    = map(string)\n  default = {}\n}\n",
        ),
        (
            "modules/vpc/main.tf",
            "resource \"aws_vpc\" \"this\" {\n  cidr_block = \"10.0.0.0/16\"\n  tags       = merge({ Name = var.name }, var.tags)\n}\n",
        ),
    ];
    let mut repo = Repo::from_files(files.iter().map(|(p, t)| (PathBuf::from(p), t.to_string())).collect());
    let target = "module.prod.aws_vpc.this";
    let before = others(&repo, &[target]);
    let applied = set(&mut repo, target, "tags.CostCenter", json!("cc-1200")).unwrap();
    assert_eq!(value(&repo, target, "tags.CostCenter"), Some(json!("cc-1200")), "{applied:?}");
    assert_eq!(value(&repo, target, "tags.Owner"), Some(json!("platform")));
    assert_eq!(others(&repo, &[target]), before);
    // The call's own reading of the shared variable gains the tag; the module is untouched.
    assert_eq!(repo.text(Path::new("modules/vpc/main.tf")).unwrap(), files[2].1);
    assert_eq!(repo.text(Path::new("modules/vpc/variables.tf")).unwrap(), files[1].1);
    let main = repo.text(Path::new("main.tf")).unwrap();
    assert!(
        main.contains("  tags   = merge(var.tags, { CostCenter = \"cc-1200\" })\n}\n\nmodule \"shared\""),
        "{main}"
    );
    assert!(main.contains("default = { Owner = \"platform\" }"), "the shared variable was edited:\n{main}");
}

#[test]
fn a_module_instance_in_the_middle_is_turned_off_by_the_modules_own_switch() {
    let files = [
        (
            "main.tf",
            r#"variable "api_instances" {
  type = any
}

module "api" {
  source = "./modules/instance"
  count  = length(var.api_instances)

  instance_type = try(var.api_instances[count.index].instance_type, "t3.small")
}
"#,
        ),
        ("terraform.tfvars", "api_instances = [\n  {\n    instance_type = \"m5.large\"\n  },\n  {},\n  {},\n]\n"),
        (
            "modules/instance/main.tf",
            r#"variable "create" {
  type    = bool
  default = true
}

variable "instance_type" {}

resource "aws_instance" "this" {
  count         = var.create ? 1 : 0
  instance_type = var.instance_type
}

output "id" {
  value = try(aws_instance.this[0].id, null)
}
"#,
        ),
    ];
    let mut repo = Repo::from_files(files.iter().map(|(p, t)| (PathBuf::from(p), t.to_string())).collect());
    let target = "module.api[0].aws_instance.this[0]";
    let before = others(&repo, &[target]);
    let applied = patch::apply(&mut repo, &addr(target), &Op::RemoveResource).unwrap();
    assert!(effective_config(&repo, &addr(target)).is_none(), "{applied:?}");
    assert_eq!(others(&repo, &[target]), before, "the other instances keep their numbers and configuration");
    let main = repo.text(Path::new("main.tf")).unwrap();
    assert!(main.contains("create = try(var.api_instances[count.index].create, true)"), "{main}");
    let tfvars = repo.text(Path::new("terraform.tfvars")).unwrap();
    assert!(tfvars.contains("create        = false"), "{tfvars}");
    assert!(tfvars.matches("{}").count() == 2, "{tfvars}");
}

#[test]
fn a_new_block_where_a_dynamic_block_makes_them_is_a_new_entry_of_its_map() {
    let main = r#"variable "db_parameters" {
  type = map(string)
  default = {
    log_min_duration_statement = "1000"
  }
}

resource "aws_db_parameter_group" "pg" {
  name   = "app"
  family = "postgres16"

  dynamic "parameter" {
    for_each = var.db_parameters
    content {
      name  = parameter.key
      value = parameter.value
    }
  }
}
"#;
    let mut repo = Repo::from_files([(PathBuf::from("main.tf"), main.to_string())].into_iter().collect());
    let spec = driftback_terraform::BlockSpec {
        attrs: vec![
            ("name".into(), AttrValue::Literal(json!("statement_timeout"))),
            ("value".into(), AttrValue::Literal(json!("30000"))),
        ],
        blocks: vec![],
    };
    let add = Op::AddBlock { block_type: "parameter".into(), spec: spec.clone() };
    patch::apply(&mut repo, &addr("aws_db_parameter_group.pg"), &add).unwrap();
    assert_eq!(value(&repo, "aws_db_parameter_group.pg", "parameter[1].name"), Some(json!("statement_timeout")));
    let text = repo.text(Path::new("main.tf")).unwrap();
    assert!(text.contains("statement_timeout          = \"30000\""), "{text}");
    assert_eq!(text.matches("parameter {").count(), 0, "no literal block beside the dynamic one:\n{text}");
    // A block the dynamic content cannot write (it has no `apply_method`) is refused, not added
    // as a literal block beside the dynamic ones.
    let mut spec = spec;
    spec.attrs.push(("apply_method".into(), AttrValue::Literal(json!("pending-reboot"))));
    let err = patch::apply(
        &mut repo,
        &addr("aws_db_parameter_group.pg"),
        &Op::AddBlock { block_type: "parameter".into(), spec },
    )
    .unwrap_err();
    assert!(err.to_string().contains("dynamic"), "{err}");
}

#[test]
fn a_resource_named_like_a_for_each_fleet_joins_it_as_a_new_entry() {
    let main = r#"variable "queues" {
  default = {
    ingest = { visibility = 60 }
    render = { visibility = 300 }
  }
}

resource "aws_sqs_queue" "jobs" {
  for_each                   = var.queues
  name                       = "fleet-${each.key}"
  visibility_timeout_seconds = each.value.visibility
  tags                       = { Queue = each.key }
}
"#;
    let mut repo = Repo::from_files([(PathBuf::from("main.tf"), main.to_string())].into_iter().collect());
    assert_eq!(patch::fleet_address(&repo, "aws_sqs_queue", "name", "other-audit"), None);
    assert_eq!(patch::fleet_address(&repo, "aws_sqs_queue", "name", "fleet-render"), None, "an existing key");
    let address = patch::fleet_address(&repo, "aws_sqs_queue", "name", "fleet-audit").unwrap();
    assert_eq!(address.to_string(), r#"aws_sqs_queue.jobs["audit"]"#);
    let spec = |tags: Value| driftback_terraform::BlockSpec {
        attrs: vec![
            ("name".into(), AttrValue::Literal(json!("fleet-audit"))),
            ("visibility_timeout_seconds".into(), AttrValue::Literal(json!(120))),
            ("tags".into(), AttrValue::Literal(tags)),
        ],
        blocks: vec![],
    };
    let create = |tags| Op::CreateResource { spec: spec(tags), import_id: "https://sqs/1/fleet-audit".into() };
    // Tags the fleet would not give it: not a member of the fleet.
    assert!(patch::apply(&mut repo.clone(), &address, &create(json!({"Queue": "audit", "Owner": "x"}))).is_err());
    let before = others(&repo, &[]);
    patch::apply(&mut repo, &address, &create(json!({"Queue": "audit"}))).unwrap();
    assert_eq!(value(&repo, r#"aws_sqs_queue.jobs["audit"]"#, "visibility_timeout_seconds"), Some(json!(120)));
    assert_eq!(others(&repo, &[r#"aws_sqs_queue.jobs["audit"]"#]), before);
    let text = repo.text(Path::new("main.tf")).unwrap();
    assert!(
        text.contains("import {\n  to = aws_sqs_queue.jobs[\"audit\"]\n  id = \"https://sqs/1/fleet-audit\"\n}"),
        "{text}"
    );
}

#[test]
fn an_edit_that_also_makes_what_the_same_call_did_to_another_resource_is_not_a_leak() {
    let main = r#"variable "public_tags" {
  default = {}
}

resource "aws_subnet" "a" {
  cidr_block = "10.0.1.0/24"
  tags       = merge({ Name = "a" }, var.public_tags)
}

resource "aws_subnet" "b" {
  cidr_block = "10.0.2.0/24"
  tags       = merge({ Name = "b" }, var.public_tags)
}

resource "aws_subnet" "private" {
  cidr_block = "10.0.3.0/24"
  tags       = { Name = "private" }
}
"#;
    let repo = Repo::from_files([(PathBuf::from("main.tf"), main.to_string())].into_iter().collect());
    let tag = |address: &str| {
        (
            addr(address),
            Op::Set { path: AttrPath::parse("tags.Role").unwrap(), value: AttrValue::Literal(json!("elb")) },
        )
    };
    // One call tagged both public subnets: the shared input is the edit, and it is not a leak.
    let (a, op) = tag("aws_subnet.a");
    let mut with = repo.clone();
    patch::apply_alongside(&mut with, &a, &op, &[tag("aws_subnet.b")]).unwrap();
    assert_eq!(value(&with, "aws_subnet.a", "tags.Role"), Some(json!("elb")));
    assert_eq!(value(&with, "aws_subnet.b", "tags.Role"), Some(json!("elb")));
    assert!(with.text(Path::new("main.tf")).unwrap().contains("Role = \"elb\""));
    assert_eq!(value(&with, "aws_subnet.private", "tags.Role"), None);
    // Alone, the shared input would change the other subnet: a narrower edit instead.
    let mut alone = repo.clone();
    patch::apply(&mut alone, &a, &op).unwrap();
    assert_eq!(value(&alone, "aws_subnet.a", "tags.Role"), Some(json!("elb")));
    assert_eq!(value(&alone, "aws_subnet.b", "tags.Role"), None);
    // What the call did to another resource is no licence for anything else.
    let (_, other) = tag("aws_subnet.b");
    let different = Op::Set { path: AttrPath::parse("tags.Role").unwrap(), value: AttrValue::Literal(json!("x")) };
    let mut wrong = repo.clone();
    patch::apply_alongside(&mut wrong, &a, &op, &[(addr("aws_subnet.b"), different)]).unwrap();
    assert_eq!(value(&wrong, "aws_subnet.b", "tags.Role"), None, "{other:?}");
}

/// A queue and its dead-letter queue, both made from one entry of the same map.
fn queues_with_dead_letters() -> Repo {
    let main = r#"variable "queues" {
  default = {
    exports = { timeout = 30 }
    scans   = { timeout = 360 }
  }
}

resource "aws_sqs_queue" "dlq" {
  for_each = var.queues
  name     = "${each.key}-dlq"
}

resource "aws_sqs_queue" "this" {
  for_each                   = var.queues
  name                       = each.key
  visibility_timeout_seconds = each.value.timeout
}
"#;
    Repo::from_files([(PathBuf::from("main.tf"), main.to_string())].into_iter().collect())
}

#[test]
fn an_entry_two_deleted_instances_share_goes_when_the_same_calls_delete_both() {
    let repo = queues_with_dead_letters();
    let queue = addr(r#"aws_sqs_queue.this["exports"]"#);
    let dead_letters = addr(r#"aws_sqs_queue.dlq["exports"]"#);
    // Alone, dropping the entry would delete a dead-letter queue that still exists: the queue's
    // own for_each leaves the entry out instead.
    let mut alone = repo.clone();
    patch::apply(&mut alone, &queue, &Op::RemoveResource).unwrap();
    assert_eq!(effective_config(&alone, &queue), None);
    assert!(effective_config(&alone, &dead_letters).is_some());
    let text = alone.text(Path::new("main.tf")).unwrap();
    assert!(
        text.contains(r#"for_each                   = { for k, v in var.queues : k => v if k != "exports" }"#),
        "{text}"
    );
    // Both deleted by the same calls: the entry goes, and nothing else changes.
    let mut both = repo.clone();
    patch::apply_alongside(&mut both, &queue, &Op::RemoveResource, &[(dead_letters.clone(), Op::RemoveResource)])
        .unwrap();
    let left: Vec<String> = instances(&both).iter().map(Address::to_string).collect();
    assert_eq!(left, [r#"aws_sqs_queue.dlq["scans"]"#, r#"aws_sqs_queue.this["scans"]"#]);
    assert!(!both.text(Path::new("main.tf")).unwrap().contains("exports"), "the entry itself goes");
    assert_eq!(value(&both, r#"aws_sqs_queue.this["scans"]"#, "visibility_timeout_seconds"), Some(json!(360)));
    // Another change to the other instance is no licence to delete it.
    let tagged = Op::Set { path: AttrPath::parse("tags.Gone").unwrap(), value: AttrValue::Literal(json!("no")) };
    let mut retagged = repo.clone();
    patch::apply_alongside(&mut retagged, &queue, &Op::RemoveResource, &[(dead_letters.clone(), tagged)]).unwrap();
    assert!(effective_config(&retagged, &dead_letters).is_some());
}

#[test]
fn a_block_added_to_one_instance_of_a_shared_resource_block_is_refused() {
    let main = r#"variable "acls" {
  default = { edge = "CLOUDFRONT", api = "REGIONAL" }
}

variable "enabled" {
  default = true
}

resource "aws_wafv2_web_acl" "many" {
  for_each = var.acls
  name     = each.key
  scope    = each.value
}

resource "aws_wafv2_web_acl" "optional" {
  count = var.enabled ? 1 : 0
  name  = "optional"
  scope = "REGIONAL"
}
"#;
    let repo = Repo::from_files([(PathBuf::from("main.tf"), main.to_string())].into_iter().collect());
    let spec = driftback_terraform::BlockSpec {
        attrs: vec![("name".into(), AttrValue::Literal(json!("r"))), ("priority".into(), AttrValue::Literal(json!(1)))],
        blocks: vec![],
    };
    let add = Op::AddBlock { block_type: "rule".into(), spec };
    // Written in the shared block, the rule would be the other ACL's too.
    let err = patch::apply(&mut repo.clone(), &addr(r#"aws_wafv2_web_acl.many["edge"]"#), &add).unwrap_err();
    assert!(err.to_string().contains(r#"would be aws_wafv2_web_acl.many["api"]'s too"#), "{err}");
    // The one instance of an optional resource has the block to itself.
    let mut one = repo.clone();
    patch::apply(&mut one, &addr("aws_wafv2_web_acl.optional[0]"), &add).unwrap();
    assert_eq!(value(&one, "aws_wafv2_web_acl.optional[0]", "rule[0].priority"), Some(json!(1)));
}

/// Two calls of one module reading one shared map each: parameters from a local, rules from a
/// variable.
fn two_calls_of_a_shared_map() -> Repo {
    let root = r#"variable "trusted_cidrs" {
  default = { vpn = "10.8.0.0/16", bastion = "10.20.250.0/28" }
}

locals {
  parameters = {
    "rds.force_ssl"   = "1"
    idle_timeout      = "300000"
  }
}

module "orders" {
  source     = "./db"
  name       = "orders"
  parameters = merge(local.parameters, { log_min = "500" })
  cidrs      = var.trusted_cidrs
}

module "inventory" {
  source     = "./db"
  name       = "inventory"
  parameters = local.parameters
  cidrs      = var.trusted_cidrs
}
"#;
    let module = r#"variable "name" {}
variable "parameters" {}
variable "cidrs" {}

resource "aws_rds_cluster_parameter_group" "this" {
  name   = var.name
  family = "aurora-postgresql16"

  dynamic "parameter" {
    for_each = var.parameters
    content {
      name  = parameter.key
      value = parameter.value
    }
  }
}

resource "aws_vpc_security_group_ingress_rule" "cidr" {
  for_each          = var.cidrs
  security_group_id = "sg-1"
  cidr_ipv4         = each.value
  ip_protocol       = "tcp"
}
"#;
    let files: BTreeMap<PathBuf, String> =
        [("main.tf", root), ("db/main.tf", module)].iter().map(|(p, t)| (PathBuf::from(p), t.to_string())).collect();
    Repo::from_files(files)
}

#[test]
fn a_shared_map_one_call_reads_is_overridden_at_that_call_only() {
    let mut r = two_calls_of_a_shared_map();
    let group = "module.inventory.aws_rds_cluster_parameter_group.this";
    let before = others(&r, &[group]);
    // parameter[0] is idle_timeout (dynamic blocks follow the map's sorted keys).
    assert_eq!(value(&r, group, "parameter[0].name"), Some(json!("idle_timeout")));
    set(&mut r, group, "parameter[0].value", json!("60000")).unwrap();
    assert_eq!(value(&r, group, "parameter[0].value"), Some(json!("60000")));
    assert_eq!(others(&r, &[group]), before, "the orders call keeps the local's value");
    let text = r.text(Path::new("main.tf")).unwrap();
    assert!(text.contains(r#"parameters = merge(local.parameters, { idle_timeout = "60000" })"#), "{text}");
    assert!(text.contains(r#"idle_timeout      = "300000""#), "the local is untouched:\n{text}");
}

#[test]
fn an_entry_of_a_shared_map_is_filtered_out_of_one_call_and_a_reader_left_behind_refuses() {
    let mut r = two_calls_of_a_shared_map();
    let rule = r#"module.inventory.aws_vpc_security_group_ingress_rule.cidr["bastion"]"#;
    let before = others(&r, &[rule]);
    patch::apply(&mut r, &addr(rule), &Op::RemoveResource).unwrap();
    assert_eq!(effective_config(&r, &addr(rule)), None);
    assert_eq!(others(&r, &[rule]), before);
    let text = r.text(Path::new("main.tf")).unwrap();
    assert!(text.contains(r#"cidrs      = { for k, v in var.trusted_cidrs : k => v if k != "bastion" }"#), "{text}");

    // A queue that reads its dead-letter queue by `each.key` cannot lose that queue alone.
    let mut queues = queues_with_dead_letters();
    let main = queues.text(Path::new("main.tf")).unwrap().replace(
        "  name                       = each.key\n",
        "  name                       = each.key\n  redrive_policy             = jsonencode({ deadLetterTargetArn = aws_sqs_queue.dlq[each.key].arn })\n",
    );
    queues.set_file(Path::new("main.tf"), main);
    let dead_letters = addr(r#"aws_sqs_queue.dlq["exports"]"#);
    let err = patch::apply(&mut queues.clone(), &dead_letters, &Op::RemoveResource).unwrap_err();
    assert!(err.to_string().contains(r#"aws_sqs_queue.this["exports"] reads aws_sqs_queue.dlq[each.key]"#), "{err}");
    // Deleted by the same calls as its reader, it goes.
    let queue = addr(r#"aws_sqs_queue.this["exports"]"#);
    patch::apply_alongside(&mut queues, &dead_letters, &Op::RemoveResource, &[(queue.clone(), Op::RemoveResource)])
        .unwrap();
    assert_eq!(effective_config(&queues, &queue), None);
}

#[test]
fn an_attribute_the_object_type_does_not_declare_is_dropped_and_no_edit_relies_on_it() {
    let main = r#"variable "queues" {
  type = map(object({ visibility = number }))
  default = {
    a = { visibility = 30, delay = 5 }
    b = { visibility = 60 }
  }
}

resource "aws_sqs_queue" "q" {
  for_each                   = var.queues
  visibility_timeout_seconds = each.value.visibility
  delay_seconds              = try(each.value.delay, 0)
}
"#;
    let mut r = Repo::from_files([(PathBuf::from("main.tf"), main.to_string())].into_iter().collect());
    // Terraform's conversion to the variable's type discards `delay`: the try() falls back.
    assert_eq!(value(&r, r#"aws_sqs_queue.q["a"]"#, "delay_seconds"), Some(json!(0)));
    let before = others(&r, &[r#"aws_sqs_queue.q["a"]"#]);
    let applied = set(&mut r, r#"aws_sqs_queue.q["a"]"#, "delay_seconds", json!(15)).unwrap();
    assert_eq!(value(&r, r#"aws_sqs_queue.q["a"]"#, "delay_seconds"), Some(json!(15)), "{applied:?}");
    assert_eq!(others(&r, &[r#"aws_sqs_queue.q["a"]"#]), before);
    let text = r.text(Path::new("main.tf")).unwrap();
    assert!(!text.contains("delay = 15"), "an entry the type would discard is not the edit:\n{text}");
}

#[test]
fn a_computed_condition_is_never_replaced_by_a_literal() {
    let main = r#"variable "days" {
  default = 30
}

resource "aws_cloudwatch_log_group" "service" {
  for_each          = toset(["api", "worker"])
  name              = each.key
  retention_in_days = each.key == "api" ? 90 : var.days
}
"#;
    let mut r = Repo::from_files([(PathBuf::from("main.tf"), main.to_string())].into_iter().collect());
    let worker = r#"aws_cloudwatch_log_group.service["worker"]"#;
    let before = others(&r, &[worker]);
    set(&mut r, worker, "retention_in_days", json!(90)).unwrap();
    assert_eq!(value(&r, worker, "retention_in_days"), Some(json!(90)));
    assert_eq!(others(&r, &[worker]), before);
    let text = r.text(Path::new("main.tf")).unwrap();
    assert!(!text.contains("true ?") && text.contains("each.key == \"api\" ? 90"), "{text}");
    assert!(text.contains("default = 90"), "the value the worker reads is the variable's:\n{text}");
}

#[test]
fn a_dynamic_block_keyed_through_tonumber_gains_its_map_entry_written_like_its_siblings() {
    let main = r#"variable "error_responses" {
  type = map(object({ response_code = number, page_path = string, ttl = optional(number, 10) }))
  default = {
    "404" = { response_code = 404, page_path = "/404.html" }
    "500" = { response_code = 500, page_path = "/500.html", ttl = 0 }
  }
}

resource "aws_cloudfront_distribution" "site" {
  enabled = true

  dynamic "custom_error_response" {
    for_each = var.error_responses
    content {
      error_code         = tonumber(custom_error_response.key)
      response_code      = custom_error_response.value.response_code
      response_page_path = custom_error_response.value.page_path
      error_caching_min_ttl = custom_error_response.value.ttl
    }
  }
}
"#;
    let mut r = Repo::from_files([(PathBuf::from("main.tf"), main.to_string())].into_iter().collect());
    let spec = driftback_terraform::BlockSpec {
        attrs: vec![
            ("error_code".into(), AttrValue::Literal(json!(504))),
            ("response_code".into(), AttrValue::Literal(json!(503))),
            ("response_page_path".into(), AttrValue::Literal(json!("/maintenance.html"))),
            ("error_caching_min_ttl".into(), AttrValue::Literal(json!(10))),
        ],
        blocks: vec![],
    };
    let site = addr("aws_cloudfront_distribution.site");
    patch::apply(&mut r, &site, &Op::AddBlock { block_type: "custom_error_response".into(), spec }).unwrap();
    assert_eq!(value(&r, "aws_cloudfront_distribution.site", "custom_error_response[2].error_code"), Some(json!(504)));
    assert_eq!(
        value(&r, "aws_cloudfront_distribution.site", "custom_error_response[2].error_caching_min_ttl"),
        Some(json!(10))
    );
    let text = r.text(Path::new("main.tf")).unwrap();
    // One line like the entries beside it, in their key order, without what optional() gives.
    assert!(
        text.contains("    \"500\" = { response_code = 500, page_path = \"/500.html\", ttl = 0 }\n    \"504\" = { response_code = 503, page_path = \"/maintenance.html\" }\n"),
        "{text}"
    );
}

const TOPIC: &str = r#"variable "region" {
  default = "eu-west-1"
}

resource "aws_sns_topic" "events" {
  name = "events"
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "Account"
        Effect    = "Allow"
        Principal = { AWS = "arn:aws:iam::111122223333:root" }
        Action    = ["sns:Publish", "sns:Subscribe"]
        Resource  = "arn:aws:sns:${var.region}:111122223333:events"
      },
    ]
  })
}
"#;

fn topic() -> Repo {
    Repo::from_files(BTreeMap::from([(PathBuf::from("main.tf"), TOPIC.to_string())]))
}

fn policy(repo: &Repo) -> Value {
    serde_json::from_str(value(repo, "aws_sns_topic.events", "policy").unwrap().as_str().unwrap()).unwrap()
}

#[test]
fn a_new_item_of_a_list_inside_jsonencode_is_appended_in_the_lists_layout() {
    let mut r = topic();
    let statement = json!({"Action": "sns:Publish", "Effect": "Allow", "Principal": {"Service": "events.amazonaws.com"},
                           "Resource": "*", "Sid": "Events"});
    set(&mut r, "aws_sns_topic.events", "policy.Statement[1]", statement.clone()).unwrap();
    let text = r.text(Path::new("main.tf")).unwrap();
    assert!(text.contains("policy = jsonencode({"), "the document stays jsonencode: {text}");
    assert!(text.contains("${var.region}"), "the first statement keeps its interpolation: {text}");
    // The new statement is written with its keys in the order the statement before it uses.
    let sid = text.find("= \"Events\"").expect(text);
    let effect = text[sid..].find("Effect").unwrap();
    let principal = text[sid..].find("Principal").unwrap();
    assert!(effect < principal, "{text}");
    assert_eq!(policy(&r)["Statement"][1], statement);
    assert_eq!(policy(&r)["Statement"].as_array().unwrap().len(), 2);
    driftback_terraform::edit::parse(text).unwrap();
}

#[test]
fn an_item_removed_from_a_list_inside_jsonencode_leaves_the_others_in_order() {
    let mut r = topic();
    let applied = patch::apply(
        &mut r,
        &addr("aws_sns_topic.events"),
        &Op::Remove { path: AttrPath::parse("policy.Statement[0].Action[1]").unwrap() },
    )
    .unwrap();
    assert_eq!(policy(&r)["Statement"][0]["Action"], json!(["sns:Publish"]), "{:?}", applied.notes);
    assert!(r.text(Path::new("main.tf")).unwrap().contains("policy = jsonencode({"));

    // An index past the end removes nothing and says so.
    let before = r.text(Path::new("main.tf")).unwrap().to_string();
    let applied = patch::apply(
        &mut r,
        &addr("aws_sns_topic.events"),
        &Op::Remove { path: AttrPath::parse("policy.Statement[3]").unwrap() },
    )
    .unwrap();
    assert_eq!(r.text(Path::new("main.tf")).unwrap(), before);
    assert!(applied.notes.iter().any(|n| n.contains("nothing to remove")), "{:?}", applied.notes);
}

#[test]
fn a_document_written_as_a_heredoc_stays_a_heredoc_with_its_data_escaped() {
    let code = "resource \"aws_sqs_queue\" \"q\" {\n  name   = \"q\"\n  policy = <<-EOT\n    {\"Version\": \"2012-10-17\", \"Statement\": []}\n  EOT\n}\n";
    let mut r = Repo::from_files(BTreeMap::from([(PathBuf::from("main.tf"), code.to_string())]));
    let new = json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sqs:SendMessage",
                     "Resource": "*", "Condition": {"StringEquals": {"aws:SourceArn": "${hostile}"}}}]});
    set(&mut r, "aws_sqs_queue.q", "policy", json!(new.to_string())).unwrap();
    let text = r.text(Path::new("main.tf")).unwrap();
    assert!(text.contains("policy = <<-EOT\n    {\n"), "{text}");
    assert!(text.contains("\n  EOT\n}"), "{text}");
    assert!(text.contains("$${hostile}"), "a template sequence in the data is escaped: {text}");
    let got: Value = serde_json::from_str(value(&r, "aws_sqs_queue.q", "policy").unwrap().as_str().unwrap()).unwrap();
    assert_eq!(got, new);
}

#[test]
fn a_member_of_a_document_built_by_jsonencode_in_a_shared_local_is_never_merged_into_the_string() {
    let code = "locals {\n  doc = jsonencode({ Version = \"2012-10-17\", Statement = [] })\n}\nresource \"aws_sqs_queue\" \"a\" {\n  name   = \"a\"\n  policy = local.doc\n}\nresource \"aws_sqs_queue\" \"b\" {\n  name   = \"b\"\n  policy = local.doc\n}\n";
    let mut r = Repo::from_files(BTreeMap::from([(PathBuf::from("main.tf"), code.to_string())]));
    let result = set(&mut r, "aws_sqs_queue.a", "policy.Version", json!("2008-10-17"));
    let text = r.text(Path::new("main.tf")).unwrap();
    assert!(!text.contains("merge("), "{text}");
    assert!(result.is_err() || value(&r, "aws_sqs_queue.b", "policy") == value(&r, "aws_sqs_queue.a", "policy"));
}

#[test]
fn an_argument_no_instance_sets_is_given_to_the_drifted_key_only() {
    let mut r = repo();
    let others = others(&r, &["aws_sqs_queue.jobs[\"ingest\"]"]);
    let applied = set(&mut r, "aws_sqs_queue.jobs[\"ingest\"]", "max_message_size", json!(1024)).unwrap();
    assert_eq!(value(&r, "aws_sqs_queue.jobs[\"ingest\"]", "max_message_size"), Some(json!(1024)));
    // The other key gets `null`, which is the argument left out: its configuration is unchanged.
    assert_eq!(value(&r, "aws_sqs_queue.jobs[\"render\"]", "max_message_size"), None, "{:?}", applied.notes);
    let after = super_others(&r);
    for (address, config) in &others {
        assert_eq!(
            driftback_terraform::patch::without_lifecycle(after.get(address).cloned()),
            driftback_terraform::patch::without_lifecycle(Some(config.clone())),
            "{address}"
        );
    }
}

fn super_others(repo: &Repo) -> BTreeMap<String, Value> {
    others(repo, &["aws_sqs_queue.jobs[\"ingest\"]"])
}
