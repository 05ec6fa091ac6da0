//! `driftback reconcile` on a root whose instance is inside a module called by a `git::ssh://`
//! source, served by a real `sshd` on loopback (`support/sshd.rs`), from a clone without
//! `.terraform`, no ssh agent and an empty home: the module is fetched with the `[modules.ssh]`
//! key after its host key is checked, and the drift is written at the module call. With the host
//! missing from known_hosts, the change set is escalated naming the call, its source, the host,
//! its key's fingerprint and the file to add it to. The key file's path and the passphrase
//! appear nowhere in what the command prints.
//! Skipped, saying so, where `sshd` or `ssh-keygen` is not installed.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::sshd::{keygen, sshd_available, start_sshd, user};
use support::{demo_dir, git, output_text};

const BIN: &str = env!("CARGO_BIN_EXE_driftback");

/// The module the demo's instance moves into: its type and tags are inputs.
const MODULE: &str = r#"variable "instance_type" {
  type = string
}

variable "security_group_ids" {
  type    = list(string)
  default = []
}

variable "tags" {
  type    = map(string)
  default = {}
}

resource "aws_instance" "this" {
  ami           = "ami-0c55b159cbfafe1f0"
  instance_type = var.instance_type
  subnet_id     = "subnet-0a1b2c3d4e5f60718"

  vpc_security_group_ids = var.security_group_ids

  tags = merge({ Name = "web", Team = "platform" }, var.tags)
}
"#;

fn commit_all(dir: &Path) {
    git(dir, &["add", "."]);
    git(dir, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init"]);
}

struct Setup {
    work: tempfile::TempDir,
    _sshd: support::sshd::Sshd,
    port: u16,
    host_key_line: String,
    key: PathBuf,
    repo: PathBuf,
}

/// The module released as v1.0.0 in a bare repository behind sshd, and the demo project calling
/// it by `git::ssh://`, committed without `.terraform`.
fn setup() -> Option<Setup> {
    if !sshd_available() {
        assert!(
            std::env::var_os("DRIFTBACK_REQUIRE_SERVICES").is_none(),
            "needs sshd and ssh-keygen (apt-get install openssh-server)"
        );
        eprintln!("NOTICE: SSH module test skipped: needs sshd and ssh-keygen (apt-get install openssh-server)");
        return None;
    }
    let work = tempfile::tempdir().unwrap();
    let module = work.path().join("module");
    std::fs::create_dir_all(&module).unwrap();
    std::fs::write(module.join("main.tf"), MODULE).unwrap();
    git(&module, &["init", "-q", "-b", "main"]);
    commit_all(&module);
    git(&module, &["tag", "v1.0.0"]);
    let bare = work.path().join("srv/web.git");
    let out = Command::new("git").args(["clone", "-q", "--bare"]).arg(&module).arg(&bare).output().unwrap();
    assert!(out.status.success());

    let keys = work.path().join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    let key = keys.join("modules_deploy_key");
    keygen(&key);
    let sshd = start_sshd(&keys, &key.with_extension("pub")).unwrap();

    let repo = work.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let main = std::fs::read_to_string(demo_dir().join("project/main.tf")).unwrap();
    let start = main.find("resource \"aws_instance\" \"web\"").unwrap();
    let end = start + main[start..].find("\n}\n").unwrap() + 3;
    let call = format!(
        "module \"web\" {{\n  source = \"git::ssh://{}@127.0.0.1:{}{}?ref=v1.0.0\"\n\n  instance_type      = \"t3.medium\"\n  security_group_ids = [aws_security_group.web.id]\n}}\n",
        user(),
        sshd.port,
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
    let (port, host_key_line) = (sshd.port, sshd.host_key_line.clone());
    Some(Setup { work, _sshd: sshd, port, host_key_line, key, repo })
}

impl Setup {
    /// `driftback reconcile` over the demo's events with `[modules.ssh]` naming the key and
    /// `known_hosts` (its text), no agent, an empty home and a store of its own (each run sees
    /// the events anew).
    fn reconcile(&self, name: &str, known_hosts: &str) -> (bool, String) {
        let dir = self.work.path().join(name);
        std::fs::create_dir_all(dir.join("home")).unwrap();
        let known = dir.join("known_hosts");
        std::fs::write(&known, known_hosts).unwrap();
        let config = dir.join("driftback.toml");
        std::fs::write(
            &config,
            format!(
                "[store]\nsqlite_path = {:?}\n\n[modules]\ncache_dir = {:?}\n\n[[modules.ssh]]\nhosts = [\"127.0.0.1\"]\nprivate_key_file = {:?}\nknown_hosts_file = {:?}\n",
                dir.join("driftback.db").display().to_string(),
                dir.join("cache").display().to_string(),
                self.key.display().to_string(),
                known.display().to_string()
            ),
        )
        .unwrap();
        let out = Command::new(BIN)
            .args(["reconcile", "--config"])
            .arg(&config)
            .arg("--events")
            .arg(demo_dir().join("events.json"))
            .arg("--repo")
            .arg(&self.repo)
            .env("HOME", dir.join("home"))
            .env("DRIFTBACK_LOG", "debug")
            .env_remove("SSH_AUTH_SOCK")
            .env_remove("TF_CLI_CONFIG_FILE")
            .output()
            .unwrap();
        let text = output_text(&out);
        assert!(!text.contains("modules_deploy_key"), "the key file's path is never printed:\n{text}");
        (out.status.success(), text)
    }

    fn branches(&self) -> Vec<String> {
        let list = git(&self.repo, &["branch", "--list", "driftback/*", "--format=%(refname:short)"]);
        list.lines().map(str::to_string).collect()
    }
}

#[test]
fn a_git_ssh_module_is_fetched_with_the_configured_key_and_the_drift_written_at_the_call() {
    let Some(setup) = setup() else { return };

    // The host is not in known_hosts: nothing is fetched, and the change set on the instance
    // inside the module is escalated with the call, its source and what to add where.
    let (ok, text) = setup.reconcile(
        "unknown-host",
        "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n",
    );
    assert!(ok, "{text}");
    let escalation =
        text.lines().find(|l| l.starts_with("  module.web.aws_instance.this: ")).unwrap_or_else(|| panic!("{text}"));
    let fingerprint = {
        let out = Command::new("ssh-keygen")
            .arg("-lf")
            .arg(setup.work.path().join("keys/host_ed25519.pub"))
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap().split_whitespace().nth(1).unwrap().to_string()
    };
    for needle in [
        "module.web (main.tf:",
        "source \"git::ssh://",
        "?ref=v1.0.0",
        &format!("[127.0.0.1]:{} is not in the known_hosts file", setup.port),
        &fingerprint,
        &setup.work.path().join("unknown-host/known_hosts").display().to_string(),
    ] {
        assert!(escalation.contains(needle), "{needle:?} is not in: {escalation}");
    }
    assert!(setup.branches().iter().all(|b| !b.contains("module.web")), "{:?}", setup.branches());

    // With the host's line: fetched over SSH and written at the module call, in the root's file.
    let (ok, text) = setup.reconcile("known-host", &setup.host_key_line);
    assert!(ok, "{text}");
    assert!(std::fs::read_dir(setup.work.path().join("known-host/cache")).unwrap().any(|_| true), "cached");
    let branches = setup.branches();
    let web = branches
        .iter()
        .find(|b| b.contains("module.web.aws_instance.this"))
        .unwrap_or_else(|| panic!("no branch for the instance inside the module: {branches:?}\n{text}"));
    assert_eq!(git(&setup.repo, &["diff", "--name-only", "main", web]).trim(), "main.tf");
    let diff = git(&setup.repo, &["diff", "main", web]);
    assert!(diff.contains("instance_type      = \"t3.large\""), "{diff}");
    assert!(diff.contains("CostCenter = \"cc-4411\""), "{diff}");
    assert!(!setup.repo.join(".terraform").exists());
}
