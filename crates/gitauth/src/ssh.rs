//! SSH for git2 remotes: which identities a connection offers, in which order, and the host key
//! check every SSH connection makes before it authenticates.
//!
//! A configured key ([`SshKey`]) is the only identity offered, and its hosts are checked against
//! its known_hosts file. With none, a connection offers what `ssh` (and so Terraform's git) would
//! ([`DefaultIdentities`]): the agent at `SSH_AUTH_SOCK`, then `~/.ssh/id_ed25519`, then
//! `~/.ssh/id_rsa`, with host keys from `~/.ssh/known_hosts` and `/etc/ssh/ssh_known_hosts`.
//!
//! Key files and passphrases are never named in errors or logs, nor printed by `Debug`: an error
//! names the setting the key came from.

use std::cell::RefCell;
use std::fmt;
use std::path::{Path, PathBuf};

use git2::{Cred, CredentialType, ErrorClass, ErrorCode, RemoteCallbacks};

use crate::Secret;
use crate::known_hosts::{HostKeyError, KnownHosts, port_of};

/// A private key for SSH remotes (a deploy key) and the known_hosts file its hosts must be in.
#[derive(Clone)]
pub struct SshKey {
    /// The user on the git host (`git` for GitHub); the URL's user wins when it names one.
    pub username: String,
    /// The private key file (OpenSSH or PEM format).
    pub private_key: PathBuf,
    /// Its passphrase, when it has one.
    pub passphrase: Option<Secret>,
    /// OpenSSH known_hosts lines for the git host (`ssh-keyscan HOST`, without `-H`).
    pub known_hosts: PathBuf,
}

impl fmt::Debug for SshKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SshKey")
            .field("username", &self.username)
            .field("private_key", &"***")
            .field("passphrase", &self.passphrase.as_ref().map(|_| "***"))
            .field("known_hosts", &self.known_hosts)
            .finish()
    }
}

/// What a connection offers when no key is configured for its host: what `ssh` would use.
#[derive(Clone, PartialEq, Eq)]
pub struct DefaultIdentities {
    /// The user when the URL names none.
    pub username: String,
    /// Whether an ssh agent is there (`SSH_AUTH_SOCK` is set): offered first.
    pub agent: bool,
    /// The key files offered after the agent, in order (those that exist).
    pub key_files: Vec<PathBuf>,
    /// Where host keys are looked for (files that do not exist are passed over).
    pub known_hosts: Vec<PathBuf>,
}

impl fmt::Debug for DefaultIdentities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DefaultIdentities")
            .field("username", &self.username)
            .field("agent", &self.agent)
            .field("key_files", &self.key_files.len())
            .field("known_hosts", &self.known_hosts)
            .finish()
    }
}

/// The default key files, in the order they are offered (under `~/.ssh`).
pub const DEFAULT_KEY_FILES: [&str; 2] = ["id_ed25519", "id_rsa"];

impl DefaultIdentities {
    /// This process's: the agent when `SSH_AUTH_SOCK` is set, the keys and known_hosts under
    /// `$HOME/.ssh`, and `/etc/ssh/ssh_known_hosts`.
    pub fn from_env() -> DefaultIdentities {
        let agent = std::env::var_os("SSH_AUTH_SOCK").is_some_and(|s| !s.is_empty());
        let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
        DefaultIdentities::in_home(home.as_deref(), agent)
    }

    /// With the home directory `home` (none: no key files, only the system's known_hosts) and an
    /// agent or not.
    pub fn in_home(home: Option<&Path>, agent: bool) -> DefaultIdentities {
        let ssh = home.map(|h| h.join(".ssh"));
        let key_files = ssh
            .iter()
            .flat_map(|dir| DEFAULT_KEY_FILES.iter().map(move |name| dir.join(name)))
            .filter(|p| p.is_file())
            .collect();
        let mut known_hosts: Vec<PathBuf> = ssh.iter().map(|dir| dir.join("known_hosts")).collect();
        known_hosts.push(PathBuf::from("/etc/ssh/ssh_known_hosts"));
        DefaultIdentities { username: "git".into(), agent, key_files, known_hosts }
    }
}

/// How an SSH connection authenticates, and which known_hosts it trusts.
#[derive(Debug, Clone)]
pub enum SshAuth {
    /// A configured key, named by `setting` in errors (`[publish.ssh]`).
    Key { key: SshKey, setting: String },
    /// No key configured for the host: what `ssh` would use. `configure` says where a key would
    /// be configured, for errors.
    Default { identities: DefaultIdentities, configure: String },
}

impl SshAuth {
    /// The known_hosts files this connection's host key must be in.
    pub fn known_hosts(&self) -> KnownHosts {
        match self {
            SshAuth::Key { key, setting } => {
                KnownHosts::file(key.known_hosts.clone(), format!("{setting} known_hosts_file"))
            }
            SshAuth::Default { identities, configure } => KnownHosts {
                files: identities.known_hosts.clone(),
                required: false,
                setting: format!("{configure} known_hosts_file"),
            },
        }
    }
}

/// Answers a remote's requests for SSH credentials, one identity per request: a further request
/// means the remote refused the identity before. When none is left, the answer is an error saying
/// what was offered and what to configure.
#[derive(Debug)]
pub struct SshCredentials {
    auth: SshAuth,
    offered: Vec<&'static str>,
    next: usize,
}

impl SshCredentials {
    pub fn new(auth: SshAuth) -> SshCredentials {
        SshCredentials { auth, offered: Vec::new(), next: 0 }
    }

    /// The answer to one request: the URL's user (`username`) wins over the configured one.
    pub fn answer(&mut self, username: Option<&str>, allowed: CredentialType) -> Result<Cred, git2::Error> {
        let default_user = match &self.auth {
            SshAuth::Key { key, .. } => key.username.as_str(),
            SshAuth::Default { identities, .. } => identities.username.as_str(),
        };
        let user = username.filter(|u| !u.is_empty()).unwrap_or(default_user);
        if !allowed.contains(CredentialType::SSH_KEY) {
            if allowed.contains(CredentialType::USERNAME) {
                return Cred::username(user);
            }
            return Err(refused("the remote asks for a kind of credential other than an SSH key".into()));
        }
        let index = self.next;
        self.next += 1;
        match &self.auth {
            SshAuth::Key { key, setting } => {
                if index == 0 {
                    self.offered.push("key");
                    return Cred::ssh_key(user, None, &key.private_key, key.passphrase.as_ref().map(Secret::expose));
                }
                Err(refused(format!(
                    "the remote refused the SSH key ({setting} private_key_file) for user {user:?}: add its public key \
                     to the git host (for that user, with read access to the repository), or check the passphrase \
                     ({setting} passphrase_env)"
                )))
            }
            SshAuth::Default { identities, configure } => {
                let mut candidates: Vec<(&'static str, Option<&Path>)> = Vec::new();
                if identities.agent {
                    candidates.push(("the ssh agent (SSH_AUTH_SOCK)", None));
                }
                for file in &identities.key_files {
                    let shown = match file.file_name().and_then(|n| n.to_str()) {
                        Some("id_rsa") => "~/.ssh/id_rsa",
                        _ => "~/.ssh/id_ed25519",
                    };
                    candidates.push((shown, Some(file)));
                }
                match candidates.get(index) {
                    Some((shown, None)) => {
                        self.offered.push(shown);
                        Cred::ssh_key_from_agent(user)
                    }
                    Some((shown, Some(file))) => {
                        self.offered.push(shown);
                        Cred::ssh_key(user, None, file, None)
                    }
                    None if self.offered.is_empty() => Err(refused(format!(
                        "no SSH key for user {user:?}: no key is configured for this host ({configure}), no ssh agent \
                         (SSH_AUTH_SOCK) and no ~/.ssh/id_ed25519 or ~/.ssh/id_rsa"
                    ))),
                    None => Err(refused(format!(
                        "the remote refused every SSH identity offered for user {user:?} ({}); configure a key for \
                         this host ({configure} private_key_file)",
                        self.offered.join(", ")
                    ))),
                }
            }
        }
    }
}

fn refused(message: String) -> git2::Error {
    git2::Error::new(ErrorCode::Auth, ErrorClass::Ssh, message)
}

/// Why an SSH connection was refused, kept for the caller's error: libgit2 replaces a host key
/// check's message with its own ("unknown remote ssh hostkey").
#[derive(Debug, Default)]
pub struct Refusal(RefCell<Option<String>>);

impl Refusal {
    fn set(&self, reason: String) {
        self.0.replace(Some(reason));
    }

    /// The reason the last connection was refused by these callbacks, if it was.
    pub fn take(&self) -> Option<String> {
        self.0.take()
    }
}

/// Check the host key `cert` that `host` presented for `url` against `known_hosts`; non-SSH
/// certificates are left to git. A refusal is logged (`refusing the SSH host key`).
pub fn check_host_key(
    known_hosts: &KnownHosts,
    url: &str,
    cert: &git2::cert::Cert<'_>,
    host: &str,
) -> Result<git2::CertificateCheckStatus, HostKeyError> {
    let Some(hostkey) = cert.as_hostkey() else {
        return Ok(git2::CertificateCheckStatus::CertificatePassthrough);
    };
    let port = port_of(url);
    let checked = match hostkey.hostkey() {
        Some(blob) => known_hosts.check(host, port, blob),
        None => Err(HostKeyError::NoKey { host: host.to_string() }),
    };
    checked.map(|()| git2::CertificateCheckStatus::CertificateOk).inspect_err(|e| {
        tracing::error!(host, port, reason = %e, "refusing the SSH host key");
    })
}

/// What to tell the operator when git could not use the key it was given (libssh2 says
/// "Unsupported private key format" for a wrong passphrase too): the setting to check, never the
/// file. `None` for other failures.
pub fn key_unusable(e: &git2::Error, auth: &SshAuth) -> Option<String> {
    let message = e.message();
    let lower = message.to_ascii_lowercase();
    let about_key = e.class() == ErrorClass::Ssh
        && (lower.contains("private key") || lower.contains("passphrase") || lower.contains("decrypt"));
    if !about_key {
        return None;
    }
    Some(match auth {
        SshAuth::Key { setting, .. } => format!(
            "the SSH key ({setting} private_key_file) could not be used ({message}): it must be an OpenSSH or PEM \
             private key, and its passphrase must be in the variable {setting} passphrase_env names"
        ),
        SshAuth::Default { configure, .. } => format!(
            "a default SSH key (~/.ssh/id_ed25519 or ~/.ssh/id_rsa) could not be used ({message}): a key with a \
             passphrase needs the ssh agent, or configure it ({configure} private_key_file, passphrase_env)"
        ),
    })
}

/// Install on `callbacks` the SSH credential answers ([`SshCredentials`]) and the host key check
/// for `url` with `auth`. A refusal's reason (a host key, every identity) is kept in `refusal`.
pub fn install<'a>(callbacks: &mut RemoteCallbacks<'a>, url: &'a str, auth: &SshAuth, refusal: &'a Refusal) {
    let mut answers = SshCredentials::new(auth.clone());
    callbacks.credentials(move |_url, username, allowed| {
        answers.answer(username, allowed).inspect_err(|e| refusal.set(e.message().to_string()))
    });
    let known_hosts = auth.known_hosts();
    callbacks.certificate_check(move |cert, host| {
        check_host_key(&known_hosts, url, cert, host).map_err(|e| {
            let message = e.to_string();
            refusal.set(message.clone());
            git2::Error::new(ErrorCode::Certificate, ErrorClass::Ssh, message)
        })
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SshKey {
        SshKey {
            username: "git".into(),
            private_key: "/run/secrets/deploy-key".into(),
            passphrase: Some(Secret::new("hunter2")),
            known_hosts: "/run/secrets/known_hosts".into(),
        }
    }

    #[test]
    fn a_configured_key_is_offered_once_and_its_refusal_names_the_setting_not_the_file() {
        let auth = SshAuth::Key { key: key(), setting: "[publish.ssh]".into() };
        let mut answers = SshCredentials::new(auth.clone());
        assert!(answers.answer(None, CredentialType::USERNAME).is_ok());
        assert!(answers.answer(Some("deploy"), CredentialType::SSH_KEY).is_ok());
        let err = answers.answer(Some("deploy"), CredentialType::SSH_KEY).err().unwrap();
        let text = err.message();
        assert_eq!(err.code(), ErrorCode::Auth);
        assert!(text.contains("[publish.ssh] private_key_file") && text.contains("\"deploy\""), "{text}");
        assert!(!text.contains("/run/secrets") && !text.contains("hunter2"), "{text}");
        let debug = format!("{auth:?}");
        assert!(!debug.contains("deploy-key") && !debug.contains("hunter2"), "{debug}");
    }

    #[test]
    fn without_a_key_the_agent_then_the_default_files_are_offered_in_order() {
        let home = std::env::temp_dir().join(format!("gitauth-home-{}", std::process::id()));
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".ssh/id_rsa"), "not read here").unwrap();
        std::fs::write(home.join(".ssh/id_ed25519"), "not read here").unwrap();
        let identities = DefaultIdentities::in_home(Some(&home), true);
        assert_eq!(identities.key_files, [home.join(".ssh/id_ed25519"), home.join(".ssh/id_rsa")]);
        let auth = SshAuth::Default { identities, configure: "[[modules.ssh]]".into() };
        assert_eq!(auth.known_hosts().files, [home.join(".ssh/known_hosts"), "/etc/ssh/ssh_known_hosts".into()]);
        let mut answers = SshCredentials::new(auth.clone());
        for _ in 0..3 {
            assert!(answers.answer(None, CredentialType::SSH_KEY).is_ok());
        }
        assert_eq!(answers.offered, ["the ssh agent (SSH_AUTH_SOCK)", "~/.ssh/id_ed25519", "~/.ssh/id_rsa"]);
        let text = answers.answer(None, CredentialType::SSH_KEY).err().unwrap().message().to_string();
        assert!(text.contains("~/.ssh/id_ed25519, ~/.ssh/id_rsa") && text.contains("[[modules.ssh]]"), "{text}");
        assert!(!text.contains(home.to_str().unwrap()), "{text}");

        let bare = DefaultIdentities::in_home(Some(&home.join("nothing")), false);
        let auth = SshAuth::Default { identities: bare, configure: "[[modules.ssh]]".into() };
        let text = SshCredentials::new(auth.clone())
            .answer(None, CredentialType::SSH_KEY)
            .err()
            .unwrap()
            .message()
            .to_string();
        assert!(text.starts_with("no SSH key") && text.contains("SSH_AUTH_SOCK"), "{text}");
        std::fs::remove_dir_all(&home).unwrap();
    }
}
