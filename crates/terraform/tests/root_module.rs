//! A repository of many root modules (`envs/prod`, `stacks/network`) sharing modules in
//! `modules/`: each root module is loaded on its own, its paths still relative to the repository,
//! so `../../modules/x` sources resolve, `terraform.tfvars` of the root module is read, and a patch
//! lands in the stack's own files or the shared module with paths a commit can use.

use std::path::{Path, PathBuf};

use driftback_terraform::eval::{effective_config, instances};
use driftback_terraform::{Address, AttrPath, AttrValue, Op, Repo};
use serde_json::json;

fn write(root: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

const QUEUE_MODULE: &str = r#"variable "name" {
  type = string
}

variable "visibility_timeout" {
  type    = number
  default = 30
}

resource "aws_sqs_queue" "this" {
  name                       = var.name
  visibility_timeout_seconds = var.visibility_timeout
}
"#;

fn monorepo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            ("modules/queue/main.tf", QUEUE_MODULE),
            (
                "envs/prod/main.tf",
                r#"variable "jobs_timeout" {
  type = number
}

module "jobs" {
  source             = "../../modules/queue"
  name               = "jobs-prod"
  visibility_timeout = var.jobs_timeout
}

resource "aws_sns_topic" "alerts" {
  name = "alerts-prod"
}
"#,
            ),
            ("envs/prod/terraform.tfvars", "jobs_timeout = 60\n"),
            (
                "envs/staging/main.tf",
                r#"module "jobs" {
  source = "../../modules/queue"
  name   = "jobs-staging"
}
"#,
            ),
            // Another root module's variables file at the top is not the stack's.
            ("terraform.tfvars", "jobs_timeout = 999\n"),
            ("README.tf", "resource \"aws_sns_topic\" \"other\" {\n  name = \"x\"\n}\n"),
        ],
    );
    dir
}

#[test]
fn a_root_module_in_a_subdirectory_reads_its_own_files_and_the_shared_modules() {
    let dir = monorepo();
    let prod = Repo::load_root_module(dir.path(), Path::new("envs/prod")).unwrap();
    assert_eq!(prod.root_dir(), Path::new("envs/prod"));
    assert_eq!(prod.module_dir(""), Some(&PathBuf::from("envs/prod")));
    assert_eq!(prod.module_dir("module.jobs"), Some(&PathBuf::from("modules/queue")));
    let files: Vec<String> = prod.files().map(|(p, _)| p.display().to_string()).collect();
    assert_eq!(files, ["envs/prod/main.tf", "envs/prod/terraform.tfvars", "modules/queue/main.tf"]);

    let mut addresses: Vec<String> = instances(&prod).iter().map(ToString::to_string).collect();
    addresses.sort();
    assert_eq!(addresses, ["aws_sns_topic.alerts", "module.jobs.aws_sqs_queue.this"]);
    let queue = effective_config(&prod, &Address::parse("module.jobs.aws_sqs_queue.this").unwrap()).unwrap();
    assert_eq!(queue["name"], "jobs-prod");
    assert_eq!(queue["visibility_timeout_seconds"], 60, "the stack's own terraform.tfvars, not the top one");

    let staging = Repo::load_root_module(dir.path(), Path::new("./envs/staging/")).unwrap();
    let queue = effective_config(&staging, &Address::parse("module.jobs.aws_sqs_queue.this").unwrap()).unwrap();
    assert_eq!(queue["visibility_timeout_seconds"], 30);
}

#[test]
fn a_drift_lands_in_the_stacks_variables_file_or_its_own_code() {
    let dir = monorepo();
    let mut prod = Repo::load_root_module(dir.path(), Path::new("envs/prod")).unwrap();
    let set = |path: &str, value: serde_json::Value| Op::Set {
        path: AttrPath::parse(path).unwrap(),
        value: AttrValue::Literal(value),
    };
    let queue = Address::parse("module.jobs.aws_sqs_queue.this").unwrap();
    let edited =
        driftback_terraform::patch::apply(&mut prod, &queue, &set("visibility_timeout_seconds", json!(90))).unwrap();
    assert_eq!(edited.files, [PathBuf::from("envs/prod/terraform.tfvars")]);
    assert_eq!(prod.text(Path::new("envs/prod/terraform.tfvars")), Some("jobs_timeout = 90\n"));
    assert_eq!(prod.text(Path::new("modules/queue/main.tf")), Some(QUEUE_MODULE), "the shared module is untouched");

    let topic = Address::parse("aws_sns_topic.alerts").unwrap();
    let edited = driftback_terraform::patch::apply(&mut prod, &topic, &set("display_name", json!("Alerts"))).unwrap();
    assert_eq!(edited.files, [PathBuf::from("envs/prod/main.tf")]);
    assert!(prod.text(Path::new("envs/prod/main.tf")).unwrap().contains("display_name = \"Alerts\""));
}

#[test]
fn a_root_module_outside_the_repository_is_refused_by_name() {
    let dir = monorepo();
    let err = Repo::load_root_module(dir.path(), Path::new("../elsewhere")).unwrap_err().to_string();
    assert!(err.contains("../elsewhere") && err.contains("inside the repository"), "{err}");
}

#[test]
fn a_root_module_taken_from_the_whole_repository_holds_its_files_and_modules_only() {
    let dir = monorepo();
    let whole = Repo::load_root_module(dir.path(), Path::new("")).unwrap();
    // The whole repository, as a scan reads it: every file parsed once.
    let mut all = whole.clone();
    for path in ["envs/prod/main.tf", "envs/prod/terraform.tfvars", "envs/staging/main.tf", "modules/queue/main.tf"] {
        all.set_file(Path::new(path), std::fs::read_to_string(dir.path().join(path)).unwrap());
    }
    let prod = all.root_module(Path::new("envs/prod"));
    let files: Vec<String> = prod.files().map(|(p, _)| p.display().to_string()).collect();
    assert_eq!(files, ["envs/prod/main.tf", "envs/prod/terraform.tfvars", "modules/queue/main.tf"]);
    let loaded = Repo::load_root_module(dir.path(), Path::new("envs/prod")).unwrap();
    let queue = Address::parse("module.jobs.aws_sqs_queue.this").unwrap();
    assert_eq!(effective_config(&prod, &queue), effective_config(&loaded, &queue));
    assert!(prod.diagnostics().is_empty());
}

#[test]
fn reading_a_new_commit_parses_only_the_files_that_changed() {
    let dir = monorepo();
    let before = Repo::load_root_module(dir.path(), Path::new("envs/prod")).unwrap();
    let mut texts: std::collections::BTreeMap<PathBuf, String> =
        before.files().map(|(p, t)| (p.clone(), t.to_string())).collect();
    texts.insert(PathBuf::from("envs/prod/terraform.tfvars"), "jobs_timeout = 75\n".into());
    let after = before.with_texts(texts);
    let same = Path::new("modules/queue/main.tf");
    assert!(std::ptr::eq(before.body(same).unwrap(), after.body(same).unwrap()), "an unchanged file keeps its parse");
    let changed = Path::new("envs/prod/terraform.tfvars");
    assert!(!std::ptr::eq(before.body(changed).unwrap(), after.body(changed).unwrap()));
    assert_eq!(after.root_dir(), Path::new("envs/prod"));
    let queue = effective_config(&after, &Address::parse("module.jobs.aws_sqs_queue.this").unwrap()).unwrap();
    assert_eq!(queue["visibility_timeout_seconds"], 75);
}
