//! Git module sources over SSH (`git::ssh://`) against a real `sshd` on loopback serving a bare
//! repository (`sshd.rs`, shared with the daemon's tests): a configured key with its known_hosts
//! file, a passphrase, the default identities under `~/.ssh`; and every refusal (unknown and
//! changed host keys, a key the host does not take, no key at all, a ref that is not there) as
//! the module call's error, naming what to fix and never the key file.
//! Skipped, saying so, where `sshd` or `ssh-keygen` is not installed.

#[path = "../../driftback/tests/support/sshd.rs"]
#[allow(dead_code)]
mod sshd;

use std::path::{Path, PathBuf};
use std::process::Command;

use driftback_modules::{
    CliConfig, DefaultIdentities, Fetcher, HostKey, Loaded, Secret, Settings, SshKey, SshSettings,
};
use driftback_terraform::{Address, Repo};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

const MODULE: &str = r#"variable "instance_type" {
  type = string
}

resource "aws_instance" "this" {
  ami           = "ami-0c55b159cbfafe1f0"
  instance_type = var.instance_type
}
"#;

struct Host {
    work: tempfile::TempDir,
    sshd: sshd::Sshd,
    /// The authorized client key.
    key: PathBuf,
    /// The bare repository, with tag v1.0.0 (and a later commit on main).
    bare: PathBuf,
    /// The commit v1.0.0 names.
    tagged: String,
}

impl Host {
    fn url(&self, reference: &str) -> String {
        format!("git::ssh://{}@127.0.0.1:{}{}?ref={reference}", sshd::user(), self.sshd.port, self.bare.display())
    }

    /// The fingerprint of the server's host key, as `ssh-keygen -l` prints it.
    fn host_fingerprint(&self) -> String {
        let out = Command::new("ssh-keygen").arg("-lf").arg(self.work.path().join("keys/host_ed25519.pub")).output();
        let text = String::from_utf8(out.unwrap().stdout).unwrap();
        text.split_whitespace().nth(1).unwrap().to_string()
    }

    fn known_hosts(&self, text: &str) -> PathBuf {
        let path = self.work.path().join(format!("known_hosts-{}", rand_name()));
        std::fs::write(&path, text).unwrap();
        path
    }

    fn key(&self, private_key: &Path, known_hosts: PathBuf, passphrase: Option<&str>) -> SshSettings {
        SshSettings {
            keys: vec![HostKey {
                hosts: vec!["127.0.0.1".into()],
                key: SshKey {
                    username: "git".into(),
                    private_key: private_key.to_path_buf(),
                    passphrase: passphrase.map(Secret::new),
                    known_hosts,
                },
            }],
            defaults: DefaultIdentities::in_home(None, false),
        }
    }

    /// `load` of a root whose one call is `source`, with `ssh`, in a cache of its own.
    async fn load(&self, source: &str, ssh: SshSettings) -> (Repo, Loaded) {
        let root = tempfile::tempdir_in(self.work.path()).unwrap();
        std::fs::write(
            root.path().join("main.tf"),
            format!("module \"web\" {{\n  source        = \"{source}\"\n  instance_type = \"t3.medium\"\n}}\n"),
        )
        .unwrap();
        let mut settings = Settings::new(root.path().join(".cache"));
        settings.ssh = ssh;
        let fetcher = Fetcher::new(settings, CliConfig::default()).unwrap();
        let mut repo = Repo::load(root.path()).unwrap();
        let loaded = driftback_modules::load(Some(&fetcher), root.path(), &mut repo).await;
        (repo, loaded)
    }
}

fn rand_name() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed).to_string()
}

fn start() -> Option<Host> {
    if !sshd::sshd_available() {
        // CI installs sshd (scripts/test.sh) and sets DRIFTBACK_REQUIRE_SERVICES: there, a skip is a failure.
        assert!(
            std::env::var_os("DRIFTBACK_REQUIRE_SERVICES").is_none(),
            "needs ssh-keygen and sshd (apt-get install openssh-server)"
        );
        eprintln!("skipped: needs ssh-keygen and sshd (apt-get install openssh-server)");
        return None;
    }
    let work = tempfile::tempdir().unwrap();
    let module = work.path().join("module");
    std::fs::create_dir_all(&module).unwrap();
    std::fs::write(module.join("main.tf"), MODULE).unwrap();
    git(&module, &["init", "-q", "-b", "main"]);
    git(&module, &["add", "."]);
    git(&module, &["commit", "-q", "-m", "v1"]);
    git(&module, &["tag", "v1.0.0"]);
    let tagged = git(&module, &["rev-parse", "HEAD"]);
    std::fs::write(module.join("unreleased.tf"), "# not in v1.0.0\n").unwrap();
    git(&module, &["add", "."]);
    git(&module, &["commit", "-q", "-m", "later"]);
    let bare = work.path().join("srv/web.git");
    let out = Command::new("git").args(["clone", "-q", "--bare"]).arg(&module).arg(&bare).output().unwrap();
    assert!(out.status.success());
    let keys = work.path().join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    let key = keys.join("modules_key");
    sshd::keygen(&key);
    let sshd = sshd::start_sshd(&keys, &key.with_extension("pub")).unwrap();
    Some(Host { work, sshd, key, bare, tagged })
}

fn failures(loaded: &Loaded) -> String {
    loaded.failed.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_sources_over_ssh_check_the_host_key_and_offer_the_configured_or_default_key() {
    let Some(host) = start() else { return };
    let source = host.url("v1.0.0");

    // A configured key, the host's line in its known_hosts file: the tag is checked out.
    let known = host.known_hosts(&host.sshd.host_key_line);
    let (repo, loaded) = host.load(&source, host.key(&host.key, known.clone(), None)).await;
    assert!(loaded.failed.is_empty(), "{}", failures(&loaded));
    assert_eq!(loaded.mounted[0].version.as_deref(), Some(host.tagged.as_str()));
    assert!(repo.find_resource(&Address::parse("module.web.aws_instance.this").unwrap()).is_some());
    assert!(repo.files().all(|(p, _)| !p.ends_with("unreleased.tf")), "the tag, not the branch");

    // A key with a passphrase, which the settings carry.
    let locked = host.work.path().join("keys/locked_key");
    let out = Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "open sesame", "-f"]).arg(&locked).output();
    assert!(out.unwrap().status.success());
    let authorized = host.work.path().join("keys/authorized_keys");
    let mut lines = std::fs::read_to_string(&authorized).unwrap();
    lines.push_str(&std::fs::read_to_string(locked.with_extension("pub")).unwrap());
    std::fs::write(&authorized, lines).unwrap();
    let (_, loaded) = host.load(&source, host.key(&locked, known.clone(), Some("open sesame"))).await;
    assert!(loaded.failed.is_empty(), "{}", failures(&loaded));
    let (_, loaded) = host.load(&source, host.key(&locked, known.clone(), Some("wrong-phrase-42"))).await;
    let text = failures(&loaded);
    assert_eq!(loaded.failed.len(), 1, "a wrong passphrase fails");
    assert!(text.contains("the SSH key ([[modules.ssh]] private_key_file) could not be used"), "{text}");
    assert!(!text.contains("wrong-phrase-42") && !text.contains("locked_key"), "{text}");

    // Without a configured key: ~/.ssh/id_ed25519 and ~/.ssh/known_hosts, as ssh would use.
    let home = host.work.path().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::copy(&host.key, home.join(".ssh/id_ed25519")).unwrap();
    std::fs::write(home.join(".ssh/known_hosts"), &host.sshd.host_key_line).unwrap();
    let defaults = SshSettings { keys: Vec::new(), defaults: DefaultIdentities::in_home(Some(&home), false) };
    let (_, loaded) = host.load(&source, defaults).await;
    assert!(loaded.failed.is_empty(), "{}", failures(&loaded));

    // The same with no key anywhere: the call fails saying what was looked for.
    let empty = host.work.path().join("empty-home");
    std::fs::create_dir_all(empty.join(".ssh")).unwrap();
    std::fs::write(empty.join(".ssh/known_hosts"), &host.sshd.host_key_line).unwrap();
    let none = SshSettings { keys: Vec::new(), defaults: DefaultIdentities::in_home(Some(&empty), false) };
    let (_, loaded) = host.load(&source, none).await;
    let text = failures(&loaded);
    assert!(text.starts_with("module.web (main.tf:1), source \"git::ssh://"), "{text}");
    assert!(
        text.contains("no SSH key") && text.contains("~/.ssh/id_ed25519") && text.contains("[[modules.ssh]]"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_host_keys_keys_and_refs_fail_the_call_with_what_to_fix() {
    let Some(host) = start() else { return };
    let source = host.url("v1.0.0");
    let fingerprint = host.host_fingerprint();
    let name = format!("[127.0.0.1]:{}", host.sshd.port);
    let key_path = host.key.display().to_string();

    // The host is not in the known_hosts file: refused, naming the host, its key's fingerprint
    // and the file to add it to.
    let unknown = host
        .known_hosts("github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n");
    let (_, loaded) = host.load(&source, host.key(&host.key, unknown.clone(), None)).await;
    let text = failures(&loaded);
    assert!(text.starts_with("module.web (main.tf:1)"), "{text}");
    assert!(text.contains(&format!("{name} is not in the known_hosts file {}", unknown.display())), "{text}");
    assert!(text.contains(&fingerprint) && text.contains(&format!("ssh-keyscan -p {} 127.0.0.1", host.sshd.port)));
    assert!(loaded.mounted.is_empty());

    // A line for the host with another key: refused as a changed key.
    let other = host.work.path().join("keys/other_host");
    sshd::keygen(&other);
    let other_public = std::fs::read_to_string(other.with_extension("pub")).unwrap();
    let mut fields = other_public.split_whitespace();
    let (kind, key) = (fields.next().unwrap(), fields.next().unwrap());
    let changed = host.known_hosts(&format!("{name} {kind} {key}\n"));
    let (_, loaded) = host.load(&source, host.key(&host.key, changed.clone(), None)).await;
    let text = failures(&loaded);
    assert!(text.contains(&format!("{name}'s host key (ssh-ed25519 {fingerprint}) matches none")), "{text}");
    assert!(text.contains(&changed.display().to_string()), "{text}");

    // A key the host does not take: refused, naming the setting, never the file.
    let known = host.known_hosts(&host.sshd.host_key_line);
    let stranger = host.work.path().join("keys/stranger_key");
    sshd::keygen(&stranger);
    let (_, loaded) = host.load(&source, host.key(&stranger, known.clone(), None)).await;
    let text = failures(&loaded);
    assert!(text.contains("refused the SSH key ([[modules.ssh]] private_key_file)"), "{text}");
    assert!(!text.contains("stranger_key") && !text.contains(&key_path), "{text}");

    // A ref the repository does not have.
    let (_, loaded) = host.load(&host.url("v9.9.9"), host.key(&host.key, known, None)).await;
    let text = failures(&loaded);
    assert!(text.contains("no tag, branch or commit \"v9.9.9\""), "{text}");
    assert!(!text.contains(&key_path), "{text}");
}
