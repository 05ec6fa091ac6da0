//! `driftback reconcile` on a root whose instance is inside a module called from a git source
//! (a bare repository over `git::file://`), from a clone without `.terraform`: the module code is
//! fetched into the `[modules]` cache and the instance is found inside it; a change the module
//! exposes no input for is escalated, and nothing is written into the fetched code.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_driftback");

fn demo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("demo")
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn commit_all(dir: &Path) {
    git(dir, &["add", "."]);
    git(dir, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init"]);
}

const MODULE: &str = r#"variable "instance_type" {
  type = string
}

variable "security_group_ids" {
  type    = list(string)
  default = []
}

resource "aws_instance" "this" {
  ami           = "ami-0c55b159cbfafe1f0"
  instance_type = var.instance_type
  subnet_id     = "subnet-0a1b2c3d4e5f60718"

  vpc_security_group_ids = var.security_group_ids

  tags = {
    Name = "web"
    Team = "platform"
  }
}
"#;

/// The demo project with its instance moved into a module (`module_text`) released as tag v1.0.0
/// of a bare repository, reconciled over the demo's events: (work dir, repository, output).
fn reconcile_with_module(module_text: &str) -> (tempfile::TempDir, PathBuf, String) {
    let work = tempfile::tempdir().unwrap();
    // The module, released as tag v1.0.0 in a bare repository.
    let module = work.path().join("module");
    std::fs::create_dir_all(&module).unwrap();
    std::fs::write(module.join("main.tf"), module_text).unwrap();
    git(&module, &["init", "-q", "-b", "main"]);
    commit_all(&module);
    git(&module, &["tag", "v1.0.0"]);
    let bare = work.path().join("web.git");
    let out = Command::new("git").args(["clone", "-q", "--bare"]).arg(&module).arg(&bare).output().unwrap();
    assert!(out.status.success());

    // The demo project with its instance moved into the module.
    let repo = work.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let main = std::fs::read_to_string(demo_dir().join("project/main.tf")).unwrap();
    let start = main.find("resource \"aws_instance\" \"web\"").unwrap();
    let end = start + main[start..].find("\n}\n").unwrap() + 3;
    let call = format!(
        "module \"web\" {{\n  source = \"git::file://{}?ref=v1.0.0\"\n\n  instance_type      = \"t3.medium\"\n  security_group_ids = [aws_security_group.web.id]\n}}\n",
        bare.display()
    );
    std::fs::write(repo.join("main.tf"), format!("{}{call}{}", &main[..start], &main[end..])).unwrap();
    let mut state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(demo_dir().join("project/terraform.tfstate")).unwrap()).unwrap();
    for resource in state["resources"].as_array_mut().unwrap() {
        if resource["type"] == "aws_instance" {
            resource["module"] = "module.web".into();
            resource["name"] = "this".into();
        }
    }
    std::fs::write(repo.join("terraform.tfstate"), state.to_string()).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    commit_all(&repo);

    let cache = work.path().join("cache");
    let home = work.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out: Output = Command::new(BIN)
        .args(["reconcile", "--events"])
        .arg(demo_dir().join("events.json"))
        .arg("--repo")
        .arg(&repo)
        .env("DRIFTBACK_MODULES__CACHE_DIR", &cache)
        .env("HOME", &home)
        .env_remove("TF_CLI_CONFIG_FILE")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert!(std::fs::read_dir(&cache).unwrap().any(|_| true), "the package is in the cache");

    (work, repo, text)
}

#[test]
fn a_drift_inside_a_git_module_is_found_and_never_written_into_the_fetched_code() {
    let (_work, repo, text) = reconcile_with_module(MODULE);
    // The change set on the instance sets its type (an input of the module) and adds a tag the
    // module hard-codes: no input carries the tag, so the change set is escalated saying so, and
    // nothing is written into the fetched code.
    let escalation =
        text.lines().find(|l| l.starts_with("  module.web.aws_instance.this: ")).unwrap_or_else(|| panic!("{text}"));
    assert!(escalation.contains("tags[\"CostCenter\"]"), "{escalation}");
    assert!(escalation.contains("module code from outside the repository"), "{escalation}");
    let branches = git(&repo, &["branch", "--list", "driftback/*", "--format=%(refname:short)"]);
    assert!(!branches.contains("module.web"), "{branches}");
    for branch in branches.lines() {
        let files = git(&repo, &["diff", "--name-only", "main", branch]);
        assert!(!files.contains(".terraform"), "{branch}: {files}");
    }
    // The clone has no .terraform: the fetched code stayed in the cache.
    assert!(!repo.join(".terraform").exists());
}

#[test]
fn a_drift_inside_a_git_module_is_written_at_the_module_call() {
    // The same module with a `tags` input merged into the instance's tags.
    let module = MODULE.replace(
        "  tags = {\n    Name = \"web\"\n    Team = \"platform\"\n  }\n",
        "  tags = merge({ Name = \"web\", Team = \"platform\" }, var.tags)\n",
    ) + "\nvariable \"tags\" {\n  type    = map(string)\n  default = {}\n}\n";
    let (_work, repo, text) = reconcile_with_module(&module);
    let branches = git(&repo, &["branch", "--list", "driftback/*", "--format=%(refname:short)"]);
    let web = branches
        .lines()
        .find(|b| b.contains("module.web.aws_instance.this"))
        .unwrap_or_else(|| panic!("no branch for the instance inside the module: {branches}\n{text}"));
    assert_eq!(git(&repo, &["diff", "--name-only", "main", web]).trim(), "main.tf");
    let diff = git(&repo, &["diff", "main", web]);
    assert!(diff.contains("instance_type      = \"t3.large\""), "{diff}");
    assert!(diff.contains("CostCenter = \"cc-4411\""), "{diff}");
}
