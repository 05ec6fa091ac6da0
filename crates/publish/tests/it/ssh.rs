//! An SSH deploy key against a real `sshd` on loopback (`sshd.rs`: the system's OpenSSH server with
//! its own host key and an authorized key made here): clone, fetch and push, with the host's key
//! checked against known_hosts, and refused when it is not there or differs.
//! Skipped, saying so, where `sshd` or `ssh-keygen` is not installed or this build's git has no SSH.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use driftback_publish::{Author, Credentials, PublishError, Remote, RetryPolicy, SshKey, WorkingClone};

use crate::auth::{logged, logs};
use crate::sshd::{keygen, sshd_path, start_sshd, user};
use crate::{Setup, git};

#[test]
fn a_deploy_key_clones_fetches_and_pushes_over_ssh_with_the_host_key_checked() {
    if !git2::Version::get().ssh() || Command::new("ssh-keygen").arg("-?").output().is_err() || sshd_path().is_none() {
        // CI installs sshd (scripts/test.sh) and sets DRIFTBACK_REQUIRE_SERVICES: there, a skip is a failure.
        assert!(
            std::env::var_os("DRIFTBACK_REQUIRE_SERVICES").is_none(),
            "needs git2's ssh feature, ssh-keygen and sshd (apt-get install openssh-server)"
        );
        eprintln!("skipped: needs git2's ssh feature, ssh-keygen and sshd (apt-get install openssh-server)");
        return;
    }
    logs();
    let setup = Setup::create();
    let keys = tempfile::tempdir().unwrap();
    let client = keys.path().join("deploy_key");
    keygen(&client);
    let Some(sshd) = start_sshd(keys.path(), &client.with_extension("pub")) else { return };
    let known_hosts = keys.path().join("known_hosts");
    std::fs::write(&known_hosts, &sshd.host_key_line).unwrap();
    let url = format!("ssh://{}@127.0.0.1:{}{}", user(), sshd.port, setup.remote.display());
    let credentials = Credentials::Ssh(SshKey {
        username: user(),
        private_key: client.clone(),
        passphrase: None,
        known_hosts: known_hosts.clone(),
    });
    let dir = setup.dir.path().join("clone");

    let clone = WorkingClone::open_or_clone(&url, &dir, "main", &credentials).unwrap();
    setup.teammate_pushes("main", "main", "main.tf", "# moved\n");
    let tip = clone.refresh().unwrap();
    assert_eq!(tip.to_string(), git(&setup.remote, &["rev-parse", "main"]));
    let repo = clone.repo().unwrap();
    let changes = vec![(PathBuf::from("extra.tf"), Some("# over ssh\n".to_string()))];
    let (_, commit) =
        repo.commit_on_branch(tip, "driftback/over-ssh", &changes, "drift: over ssh", &Author::default()).unwrap();
    let no_wait = RetryPolicy { attempts: 1, first_delay: Duration::ZERO, max_delay: Duration::ZERO };
    let remote = Remote::new(&url, credentials.clone(), no_wait).unwrap();
    remote.push_change(&repo, commit, "driftback/over-ssh", "main", &mut |_| Ok(())).unwrap();
    assert_eq!(git(&setup.remote, &["rev-parse", "driftback/over-ssh"]), commit.to_string());

    // A host key that is not the one in known_hosts, and a host missing from it, are refused.
    let other = keys.path().join("other_host");
    keygen(&other);
    let other_public = std::fs::read_to_string(other.with_extension("pub")).unwrap();
    let mut fields = other_public.split_whitespace();
    let (kind, key) = (fields.next().unwrap(), fields.next().unwrap());
    std::fs::write(&known_hosts, format!("[127.0.0.1]:{} {kind} {key}\n", sshd.port)).unwrap();
    let err = WorkingClone::open_or_clone(&url, &setup.dir.path().join("mismatch"), "main", &credentials).unwrap_err();
    // libgit2 says only that it refused the key; the reason is in the log.
    assert!(err.to_string().contains(&url) && err.to_string().contains("hostkey"), "{err}");
    assert!(logged().contains("matches none of its lines"), "the mismatch is logged");
    std::fs::write(
        &known_hosts,
        "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n",
    )
    .unwrap();
    let err = WorkingClone::open_or_clone(&url, &setup.dir.path().join("unknown"), "main", &credentials).unwrap_err();
    assert!(!matches!(err, PublishError::Auth { .. }) && err.to_string().contains("hostkey"), "{err}");
    assert!(logged().contains("is not in the known_hosts file"), "the unknown host is logged");
}
