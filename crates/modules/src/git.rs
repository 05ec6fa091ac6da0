//! A git package: the repository fetched into a directory and the `?ref=` (a tag, a branch or a
//! commit; the remote's default branch when none) checked out there, bounded in time and bytes.

use std::path::Path;
use std::time::Instant;

use driftback_gitauth::known_hosts::{glob, host_of};
use driftback_gitauth::{DefaultIdentities, Refusal, SshAuth, SshKey};
use git2::{AutotagOption, Cred, CredentialType, FetchOptions, Oid, RemoteCallbacks, Repository};

/// How git module sources over SSH (`git::ssh://`, `git::USER@HOST:PATH`) authenticate, and
/// which host keys they trust.
#[derive(Debug, Clone)]
pub struct SshSettings {
    /// Keys for particular hosts: the first whose `hosts` name a source's host (or that names
    /// none: every host) is the only identity offered, and its known_hosts file is checked.
    pub keys: Vec<HostKey>,
    /// For a host no key is for: what `ssh` (and so Terraform's git) would use, the agent, then
    /// `~/.ssh/id_ed25519`, then `~/.ssh/id_rsa`, with `~/.ssh/known_hosts` and
    /// `/etc/ssh/ssh_known_hosts`.
    pub defaults: DefaultIdentities,
}

/// A key for the hosts its patterns name (`github.com`, `*.corp.example`; none: every host).
#[derive(Debug, Clone)]
pub struct HostKey {
    pub hosts: Vec<String>,
    pub key: SshKey,
}

/// The setting module sources' SSH keys come from, as errors name it.
const SETTING: &str = "[[modules.ssh]]";

impl SshSettings {
    /// No keys; the defaults of this process's environment (`SSH_AUTH_SOCK`, `HOME`).
    pub fn from_env() -> SshSettings {
        SshSettings { keys: Vec::new(), defaults: DefaultIdentities::from_env() }
    }

    /// What a connection to `url` offers and trusts.
    pub fn auth_for(&self, url: &str) -> SshAuth {
        let host = host_of(url).unwrap_or_default();
        let chosen = self
            .keys
            .iter()
            .find(|k| k.hosts.is_empty() || k.hosts.iter().any(|pattern| glob(&pattern.to_ascii_lowercase(), &host)));
        match chosen {
            Some(k) => SshAuth::Key { key: k.key.clone(), setting: SETTING.into() },
            None => SshAuth::Default { identities: self.defaults.clone(), configure: SETTING.into() },
        }
    }
}

/// Whether git reaches `url` over SSH: `ssh://` (or `git+ssh://`, `ssh+git://`), or scp-like.
fn is_ssh(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    ["ssh://", "git+ssh://", "ssh+git://"].iter().any(|s| lower.starts_with(s))
        || (!lower.contains("://") && host_of(url).is_some())
}

/// Why a git package could not be fetched and checked out.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// What git said.
    #[error("{}", .0.message())]
    Git(#[from] git2::Error),
    /// The fetch was stopped: it took too long or grew too large (which setting says so).
    #[error("{0}")]
    Stopped(String),
    /// The SSH host key or every identity was refused, with why.
    #[error("{0}")]
    Refused(String),
    #[error("the repository has no tag, branch or commit {0:?}")]
    NoReference(String),
    #[error("the repository has no default branch")]
    NoDefaultBranch,
    #[error("creating the package's directory: {0}")]
    Directory(std::io::Error),
    #[error("removing .git: {0}")]
    RemoveGit(std::io::Error),
}

/// Fetch `url` at `reference` into the empty directory `into`; its `.git` is removed after the
/// checkout. Returns the commit checked out. Over SSH, the host key is checked and the identities
/// `ssh` settles are offered.
pub fn fetch(
    url: &str,
    reference: Option<&str>,
    depth: Option<u32>,
    into: &Path,
    deadline: Instant,
    max_bytes: u64,
    ssh: &SshSettings,
) -> Result<String, GitError> {
    let repo = Repository::init(into)?;
    let mut remote = repo.remote_anonymous(url)?;
    let stopped = std::cell::Cell::new(None::<String>);
    let refusal = Refusal::default();
    let mut callbacks = RemoteCallbacks::new();
    callbacks.transfer_progress(|progress| {
        if Instant::now() > deadline {
            stopped.set(Some("it took longer than [modules] fetch_timeout_seconds".into()));
            return false;
        }
        if progress.received_bytes() as u64 > max_bytes {
            stopped.set(Some(format!("it is larger than {max_bytes} bytes ([modules] max_package_bytes)")));
            return false;
        }
        true
    });
    if is_ssh(url) {
        driftback_gitauth::ssh::install(&mut callbacks, url, &ssh.auth_for(url), &refusal);
    } else {
        let mut asked = false;
        callbacks.credentials(move |url, username, allowed| {
            if asked {
                return Err(git2::Error::from_str("the remote refused the credentials offered"));
            }
            asked = true;
            if allowed.contains(CredentialType::USER_PASS_PLAINTEXT) {
                // git's own credential helpers, as `git clone` would ask them.
                if let Ok(config) = git2::Config::open_default() {
                    return Cred::credential_helper(&config, url, username);
                }
            }
            Err(git2::Error::from_str("the remote asks for credentials and none are available to driftback"))
        });
    }
    let mut options = FetchOptions::new();
    options.remote_callbacks(callbacks);
    options.download_tags(AutotagOption::All);
    if let Some(depth) = depth {
        options.depth(depth as i32);
    }
    let refspecs =
        ["+HEAD:refs/remotes/origin/HEAD", "+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"];
    if let Err(e) = remote.fetch(&refspecs, Some(&mut options), None) {
        let unusable = || is_ssh(url).then(|| driftback_gitauth::ssh::key_unusable(&e, &ssh.auth_for(url))).flatten();
        let refused = refusal.take().or_else(unusable).map(GitError::Refused);
        return Err(stopped.take().map(GitError::Stopped).or(refused).unwrap_or(GitError::Git(e)));
    }
    drop(remote);
    let commit = match reference {
        None => repo.revparse_single("refs/remotes/origin/HEAD"),
        Some(r) => repo
            .revparse_single(&format!("refs/tags/{r}"))
            .or_else(|_| repo.revparse_single(&format!("refs/remotes/origin/{r}")))
            .or_else(|_| Oid::from_str(r).and_then(|oid| repo.find_object(oid, None)))
            .or_else(|_| repo.revparse_single(r)),
    }
    .and_then(|object| object.peel_to_commit())
    .map_err(|_| match reference {
        Some(r) => GitError::NoReference(r.to_string()),
        None => GitError::NoDefaultBranch,
    })?;
    let mut checkout = git2::build::CheckoutBuilder::new();
    checkout.force();
    repo.checkout_tree(commit.as_object(), Some(&mut checkout))?;
    let id = commit.id().to_string();
    drop(commit);
    drop(repo);
    std::fs::remove_dir_all(into.join(".git")).map_err(GitError::RemoveGit)?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> SshKey {
        SshKey {
            username: "git".into(),
            private_key: format!("/keys/{name}").into(),
            passphrase: None,
            known_hosts: format!("/keys/{name}.known_hosts").into(),
        }
    }

    #[test]
    fn a_source_takes_the_first_key_for_its_host_else_the_defaults() {
        let settings = SshSettings {
            keys: vec![
                HostKey { hosts: vec!["GitLab.corp.example".into(), "*.git.example".into()], key: key("corp") },
                HostKey { hosts: vec!["github.com".into()], key: key("github") },
            ],
            defaults: DefaultIdentities::in_home(None, false),
        };
        let chosen = |url: &str| match settings.auth_for(url) {
            SshAuth::Key { key, .. } => Some(key.private_key.display().to_string()),
            SshAuth::Default { .. } => None,
        };
        assert_eq!(chosen("ssh://git@gitlab.corp.example:2222/infra/m.git").as_deref(), Some("/keys/corp"));
        assert_eq!(chosen("git@eu.git.example:infra/m.git").as_deref(), Some("/keys/corp"));
        assert_eq!(chosen("git@github.com:acme/m.git").as_deref(), Some("/keys/github"));
        assert_eq!(chosen("ssh://git@bitbucket.org/acme/m.git"), None);
        let mut every = settings.clone();
        every.keys.push(HostKey { hosts: vec![], key: key("any") });
        assert!(matches!(every.auth_for("ssh://git@bitbucket.org/acme/m.git"), SshAuth::Key { .. }));
        assert!(is_ssh("ssh://git@h/x.git") && is_ssh("git@h:x.git") && is_ssh("git+ssh://h/x.git"));
        assert!(!is_ssh("https://h/x.git") && !is_ssh("file:///srv/x.git") && !is_ssh("/srv/x.git"));
    }
}
