//! Pushing a change's branch to a remote, without ever forcing.
//!
//! A push looks at what the remote has first. When the branch already exists there (an open pull
//! request for the same resource, or someone else's commit on it), the change is replayed onto the
//! branch's tip; when the branch is new and the base branch moved, the change is replayed onto the
//! new base. A replayed change is validated again (the caller's callback: the patched files must
//! still parse) before it is pushed. A push rejected as non-fast-forward, because the remote moved
//! between our look and our push, starts over from the look. Network failures, and a branch the
//! remote holds locked for another push, are retried with exponential backoff; refused credentials
//! and conflicts are not.
//!
//! Pushing to a local path writes the remote's refs from this process, so a driftback killed in the
//! middle leaves the remote branch's `.lock` file behind. The lock about to be taken is written down
//! in the clone's git directory first, and the next push from that clone removes it when it is
//! still there (its writer is gone: one driftback holds the clone at a time).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use driftback_gitauth::ssh::{SshAuth, SshCredentials, check_host_key};
use git2::{Cred, CredentialType, Direction, ErrorClass, ErrorCode, FetchOptions, Oid, PushOptions, RemoteCallbacks};

use crate::git::{Conflicts, FileChange, GitRepo};
use crate::token::Token;
use crate::{PublishError, SshKey};

/// How many times a push rejected because the remote moved is tried again from the start.
const MAX_REJECTIONS: u32 = 5;
/// The private namespace for refs driftback needs locally while pushing.
const LOCAL_NAMESPACE: &str = "refs/driftback";
/// Pushes that failed for good, by reason (`auth`, `unavailable`, `conflict`, `invalid`,
/// `no-base-branch`, `other`).
pub const PUSH_FAILURES: &str = "driftback_push_failures_total";
/// The file in the clone's git directory naming the local remote's lock a push in flight takes.
const PUSH_IN_FLIGHT: &str = "driftback-push-in-flight";

/// Credentials for a remote: the same for cloning, fetching and pushing.
#[derive(Debug, Clone)]
pub enum Credentials {
    /// Local paths, or a remote that needs none.
    None,
    /// HTTPS basic authentication with a token (GitHub: any user name, here `x-access-token`): a
    /// fixed token, or a GitHub App's installation tokens, minted again before they expire.
    Token { username: String, token: Token },
    /// An SSH key (a deploy key), with the remote's host key checked against a known_hosts file.
    Ssh(SshKey),
}

impl Credentials {
    /// What the operator configures to give this kind of credential, for error messages.
    pub fn what_to_configure(&self) -> &'static str {
        match self {
            Credentials::None => {
                "no credentials are configured: give an HTTPS token (publish.token_env or publish.token_file), \
                 a GitHub App ([publish.app]) or an SSH deploy key ([publish.ssh])"
            }
            Credentials::Token { token: Token::Fixed(_), .. } => {
                "check the token (publish.token_env or publish.token_file): it must be current and may read \
                 (and, to push, write) the repository's contents"
            }
            Credentials::Token { token: Token::App(_), .. } => {
                "check the GitHub App ([publish.app]): it must be installed on the repository with Contents \
                 read and write"
            }
            Credentials::Ssh(_) => {
                "check the SSH deploy key ([publish.ssh] private_key_file): it must be added to the repository \
                 (with write access, to push)"
            }
        }
    }
}

/// Exponential backoff for failures that may pass (network, server errors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries in all, at least 1.
    pub attempts: u32,
    /// The wait after the first failure; doubled after each further one.
    pub first_delay: Duration,
    /// The longest wait.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy { attempts: 4, first_delay: Duration::from_millis(500), max_delay: Duration::from_secs(8) }
    }
}

impl RetryPolicy {
    /// The wait after the `failures`-th failure (1-based).
    pub fn delay(&self, failures: u32) -> Duration {
        let factor = 2u32.saturating_pow(failures.saturating_sub(1));
        self.first_delay.saturating_mul(factor).min(self.max_delay)
    }
}

/// A remote driftback pushes branches to.
#[derive(Debug, Clone)]
pub struct Remote {
    url: String,
    credentials: Credentials,
    retry: RetryPolicy,
}

/// What a push did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    /// The remote branch.
    pub branch: String,
    /// The commit the remote branch now points at (the change, or the change replayed).
    pub commit: Oid,
    /// The commit the change was replayed onto, when it was.
    pub rebased_onto: Option<Oid>,
    /// Whether the branch was new on the remote.
    pub created: bool,
    /// Whether the remote already had the change (nothing was pushed).
    pub already_there: bool,
    /// Pushes the remote rejected because it had moved.
    pub rejections: u32,
}

/// Checks the files a replayed change leaves: `Err(reason)` stops the push. The reason is the
/// caller's own error (a file that does not parse, a gate's problems).
pub type Validate<'a> = dyn FnMut(&[FileChange]) -> Result<(), Box<dyn std::error::Error + Send + Sync>> + 'a;

impl Remote {
    /// A remote by URL: `https://...`, a local path (`file://`, absolute or relative), or SSH
    /// (`ssh://...`, `git@HOST:OWNER/REPO`) with an SSH key on a build whose git has SSH. Plain HTTP
    /// is refused (it would expose the token) except to this machine's loopback address.
    pub fn new(url: &str, credentials: Credentials, retry: RetryPolicy) -> Result<Remote, PublishError> {
        check_url(url, &credentials)?;
        Ok(Remote {
            url: url.to_string(),
            credentials,
            retry: RetryPolicy { attempts: retry.attempts.max(1), ..retry },
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Push the change `change` (one commit on its parent) to `branch`, replaying it onto the
    /// remote branch or the moved `base_branch` as needed. Never forces. A push that fails is
    /// counted in `driftback_push_failures_total` by reason.
    pub fn push_change(
        &self,
        repo: &GitRepo,
        change: Oid,
        branch: &str,
        base_branch: &str,
        validate: &mut Validate<'_>,
    ) -> Result<Pushed, PublishError> {
        let pushed = self.push_change_once(repo, change, branch, base_branch, validate);
        if let Err(e) = &pushed {
            let reason = match e {
                PublishError::Auth { .. } => "auth",
                PublishError::PushFailed { .. } => "unavailable",
                PublishError::RebaseConflict { .. } => "conflict",
                PublishError::Invalid { .. } => "invalid",
                PublishError::NoBaseBranch { .. } => "no-base-branch",
                _ => "other",
            };
            metrics::counter!(PUSH_FAILURES, "reason" => reason).increment(1);
        }
        pushed
    }

    fn push_change_once(
        &self,
        repo: &GitRepo,
        change: Oid,
        branch: &str,
        base_branch: &str,
        validate: &mut Validate<'_>,
    ) -> Result<Pushed, PublishError> {
        let mut rejections = 0;
        let mut failures = 0;
        let mut candidate = change;
        let mut rebased_onto = None;
        loop {
            let attempt =
                self.look_and_push(repo, change, &mut candidate, &mut rebased_onto, branch, base_branch, validate);
            match attempt {
                Ok(Attempt::Done { created, already_there }) => {
                    return Ok(Pushed {
                        branch: branch.to_string(),
                        commit: candidate,
                        rebased_onto,
                        created,
                        already_there,
                        rejections,
                    });
                }
                Ok(Attempt::Rejected(message)) => {
                    rejections += 1;
                    tracing::info!(branch, rejections, reason = %message, "push rejected, the remote moved; rebasing");
                    if rejections > MAX_REJECTIONS {
                        return Err(PublishError::PushFailed {
                            url: self.url.clone(),
                            branch: branch.to_string(),
                            attempts: rejections + failures,
                            message: format!("rejected {rejections} times as the remote kept moving: {message}"),
                        });
                    }
                }
                Err(Failure::Permanent(e)) => return Err(e),
                Err(Failure::Transient(e)) => {
                    failures += 1;
                    if failures >= self.retry.attempts {
                        return Err(PublishError::PushFailed {
                            url: self.url.clone(),
                            branch: branch.to_string(),
                            attempts: failures + rejections,
                            message: e.message().to_string(),
                        });
                    }
                    let delay = self.retry.delay(failures);
                    tracing::warn!(branch, failures, delay_ms = delay.as_millis() as u64, error = %e.message(), "push failed; retrying");
                    std::thread::sleep(delay);
                }
            }
        }
    }

    /// Fetch `branch` from the remote; its commit, or `None` when the remote has no such branch.
    /// A follow-up change on an open pull request is planned on this commit's files.
    pub fn fetch_branch(&self, repo: &GitRepo, branch: &str) -> Result<Option<Oid>, PublishError> {
        let mut failures = 0;
        loop {
            let attempt = self.list_heads(repo).and_then(|heads| {
                let name = format!("refs/heads/{branch}");
                match heads.get(&name) {
                    Some(&tip) => self.fetch(repo, &[name.as_str()]).map(|()| Some(tip)),
                    None => Ok(None),
                }
            });
            match attempt.map_err(|e| self.classify(e)) {
                Ok(tip) => return Ok(tip),
                Err(Failure::Permanent(e)) => return Err(e),
                Err(Failure::Transient(e)) => {
                    failures += 1;
                    if failures >= self.retry.attempts {
                        return Err(PublishError::PushFailed {
                            url: self.url.clone(),
                            branch: branch.to_string(),
                            attempts: failures,
                            message: e.message().to_string(),
                        });
                    }
                    std::thread::sleep(self.retry.delay(failures));
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn look_and_push(
        &self,
        repo: &GitRepo,
        change: Oid,
        candidate: &mut Oid,
        rebased_onto: &mut Option<Oid>,
        branch: &str,
        base_branch: &str,
        validate: &mut Validate<'_>,
    ) -> Result<Attempt, Failure> {
        let heads = self.list_heads(repo).map_err(|e| self.classify(e))?;
        let base_ref = format!("refs/heads/{base_branch}");
        let branch_ref = format!("refs/heads/{branch}");
        let Some(&base_tip) = heads.get(&base_ref) else {
            return Err(Failure::Permanent(PublishError::NoBaseBranch {
                url: self.url.clone(),
                branch: base_branch.to_string(),
            }));
        };
        let branch_tip = heads.get(&branch_ref).copied();
        let wanted: Vec<&str> =
            [Some(base_ref.as_str()), branch_tip.map(|_| branch_ref.as_str())].into_iter().flatten().collect();
        self.fetch(repo, &wanted).map_err(|e| self.classify(e))?;

        if let Some(tip) = branch_tip {
            if repo.is_ancestor(change, tip)? || tip == *candidate {
                *candidate = tip;
                return Ok(Attempt::Done { created: false, already_there: true });
            }
        }
        let onto = branch_tip.unwrap_or(base_tip);
        if repo.parent_of(*candidate)? != onto {
            let conflicts = if branch_tip.is_some() { Conflicts::PreferChange } else { Conflicts::Fail };
            let replayed = repo.replay(change, onto, conflicts, branch).map_err(Failure::Permanent)?;
            if repo.same_tree(replayed, onto)? {
                // The branch already holds this change (an earlier run pushed it, then stopped).
                *candidate = onto;
                return Ok(Attempt::Done { created: false, already_there: true });
            }
            let files = repo.changed_files(replayed)?;
            validate(&files).map_err(|reason| {
                Failure::Permanent(PublishError::Invalid {
                    branch: branch.to_string(),
                    onto: onto.to_string(),
                    reason: reason.to_string(),
                })
            })?;
            *candidate = replayed;
            *rebased_onto = Some(onto);
        }
        match self.push_commit(repo, *candidate, branch) {
            Ok(None) => Ok(Attempt::Done { created: branch_tip.is_none(), already_there: false }),
            Ok(Some(status)) if is_lock_held(&status) => Err(Failure::Transient(git2::Error::from_str(&format!(
                "the remote holds {branch_ref} locked for another update ({status}){}",
                self.lock_hint(branch)
            )))),
            Ok(Some(rejection)) => Ok(Attempt::Rejected(rejection)),
            Err(e) if is_rejection(&e) => Ok(Attempt::Rejected(e.message().to_string())),
            Err(e) => Err(self.classify(e)),
        }
    }

    fn callbacks(&self) -> RemoteCallbacks<'_> {
        callbacks(&self.url, &self.credentials)
    }

    /// The remote's branches and their commits (`git ls-remote --heads`).
    fn list_heads(&self, repo: &GitRepo) -> Result<BTreeMap<String, Oid>, git2::Error> {
        let mut remote = repo.raw().remote_anonymous(&self.url)?;
        let connection = remote.connect_auth(Direction::Fetch, Some(self.callbacks()), None)?;
        let heads = connection
            .list()?
            .iter()
            .filter(|h| h.name().starts_with("refs/heads/"))
            .map(|h| (h.name().to_string(), h.oid()))
            .collect();
        Ok(heads)
    }

    fn fetch(&self, repo: &GitRepo, refs: &[&str]) -> Result<(), git2::Error> {
        let refspecs: Vec<String> =
            refs.iter().map(|r| format!("+{r}:{LOCAL_NAMESPACE}/remote/{}", r.trim_start_matches("refs/"))).collect();
        let mut remote = repo.raw().remote_anonymous(&self.url)?;
        let mut options = FetchOptions::new();
        options.remote_callbacks(self.callbacks());
        remote.fetch(&refspecs, Some(&mut options), None)
    }

    /// Push `commit` to `branch`. `Ok(Some(status))`: the remote refused the update and said why.
    fn push_commit(&self, repo: &GitRepo, commit: Oid, branch: &str) -> Result<Option<String>, git2::Error> {
        let local = format!("{LOCAL_NAMESPACE}/push/{branch}");
        repo.raw().reference(&local, commit, true, "driftback: commit to push")?;
        let in_flight = repo.raw().path().join(PUSH_IN_FLIGHT);
        remove_lock_left_in_flight(&in_flight);
        let remote_lock = self.local_branch_lock(branch);
        if let Some(lock) = &remote_lock {
            write_in_flight(&in_flight, lock)
                .map_err(|e| git2::Error::from_str(&format!("writing {}: {e}", in_flight.display())))?;
        }
        let pushed = self.push_refspec(repo, &local, branch);
        if remote_lock.is_some() {
            let _ = std::fs::remove_file(&in_flight);
        }
        pushed
    }

    fn push_refspec(&self, repo: &GitRepo, local: &str, branch: &str) -> Result<Option<String>, git2::Error> {
        let rejection = RefCell::new(None);
        {
            let mut callbacks = self.callbacks();
            callbacks.push_update_reference(|_refname, status| {
                if let Some(status) = status {
                    *rejection.borrow_mut() = Some(status.to_string());
                }
                Ok(())
            });
            let mut options = PushOptions::new();
            options.remote_callbacks(callbacks);
            let mut remote = repo.raw().remote_anonymous(&self.url)?;
            remote.push(&[format!("{local}:refs/heads/{branch}")], Some(&mut options))?;
        }
        Ok(rejection.into_inner())
    }

    /// The lock file pushing `branch` takes in the remote's git directory, when the remote is a
    /// local path (written by this process, so left behind if it is killed mid-push).
    fn local_branch_lock(&self, branch: &str) -> Option<PathBuf> {
        if self.url.to_ascii_lowercase().starts_with("https://") {
            return None;
        }
        let path = self.url.strip_prefix("file://").unwrap_or(&self.url);
        let remote = git2::Repository::open(path).ok()?;
        Some(remote.path().join("refs/heads").join(format!("{branch}.lock")))
    }

    /// What to do about a lock on a local remote that does not go away.
    fn lock_hint(&self, branch: &str) -> String {
        match self.local_branch_lock(branch) {
            Some(lock) => format!("; if no git process is writing to {}, remove {}", self.url, lock.display()),
            None => String::new(),
        }
    }

    fn classify(&self, e: git2::Error) -> Failure {
        if e.code() == ErrorCode::Auth {
            return Failure::Permanent(auth_error(&self.url, &self.credentials, &e));
        }
        if crate::clone::is_network(&e) { Failure::Transient(e) } else { Failure::Permanent(PublishError::Git(e)) }
    }
}

enum Attempt {
    Done { created: bool, already_there: bool },
    Rejected(String),
}

enum Failure {
    Transient(git2::Error),
    Permanent(PublishError),
}

impl From<PublishError> for Failure {
    fn from(e: PublishError) -> Self {
        Failure::Permanent(e)
    }
}

/// A push status saying the remote could not lock the branch: another update holds it (or a killed
/// writer left its lock), not a branch that moved.
fn is_lock_held(status: &str) -> bool {
    let status = status.to_ascii_lowercase();
    status.contains("failed to lock") || status.contains("unable to lock") || status.contains("unable to create")
}

/// Write down the remote lock a push is about to take (a whole file or none: written aside, renamed).
fn write_in_flight(in_flight: &Path, lock: &Path) -> std::io::Result<()> {
    let aside = in_flight.with_extension("new");
    std::fs::write(&aside, lock.as_os_str().as_encoded_bytes())?;
    std::fs::rename(&aside, in_flight)
}

/// Remove the remote lock a push from this clone took and never released: the process that wrote
/// `in_flight` stopped mid-push (it removes the note when its push returns).
fn remove_lock_left_in_flight(in_flight: &Path) {
    let Ok(text) = std::fs::read_to_string(in_flight) else { return };
    let lock = PathBuf::from(text.trim_end());
    let is_branch_lock =
        lock.extension().is_some_and(|e| e == "lock") && lock.components().any(|c| c.as_os_str() == "refs");
    if is_branch_lock && lock.is_file() {
        tracing::warn!(lock = %lock.display(), "removing the remote branch lock a driftback stopped mid-push left behind");
        if let Err(e) = std::fs::remove_file(&lock) {
            tracing::warn!(lock = %lock.display(), error = %e, "could not remove the stale remote lock");
            return;
        }
    }
    let _ = std::fs::remove_file(in_flight);
}

fn is_rejection(e: &git2::Error) -> bool {
    let message = e.message().to_ascii_lowercase();
    e.code() == ErrorCode::NotFastForward
        || message.contains("non-fast-forward")
        || message.contains("not present locally")
        || message.contains("fetch first")
}

/// Whether driftback can talk to `url` with `credentials`, with what to use instead when not.
pub(crate) fn check_url(url: &str, credentials: &Credentials) -> Result<(), PublishError> {
    let refuse =
        |reason: &str| Err(PublishError::UnsupportedRemote { url: url.to_string(), reason: reason.to_string() });
    let lower = url.to_ascii_lowercase();
    let ssh = lower.starts_with("ssh://") || is_scp_like(url);
    match credentials {
        Credentials::Ssh(_) if !ssh => {
            return refuse(
                "an SSH key is configured ([publish.ssh]) but the URL is not an SSH one; use ssh://git@HOST/OWNER/REPO.git or git@HOST:OWNER/REPO.git",
            );
        }
        Credentials::Token { .. } if ssh => {
            return refuse(
                "a token is configured but the URL is an SSH one; use https://HOST/OWNER/REPO.git, or configure [publish.ssh] with a deploy key",
            );
        }
        _ => {}
    }
    if lower.starts_with("https://") || lower.starts_with("file://") {
        return Ok(());
    }
    if ssh {
        if !git2::Version::get().ssh() {
            return refuse(
                "this build's git has no SSH transport (libssh2 is not linked; see docs/deploy.md); use the https:// URL of the repository with a token or a GitHub App",
            );
        }
        if !matches!(credentials, Credentials::Ssh(_)) {
            return refuse(
                "an SSH remote needs a deploy key: configure [publish.ssh] private_key_file and known_hosts_file",
            );
        }
        return Ok(());
    }
    if crate::token::is_loopback_http(url) {
        return Ok(());
    }
    if lower.starts_with("http://") || lower.starts_with("git://") {
        return refuse("unencrypted transports would expose the token; use the https:// URL of the repository");
    }
    if lower.contains("://") {
        return refuse("unknown URL scheme; use https://HOST/OWNER/REPO.git or a local path");
    }
    if url.trim().is_empty() {
        return refuse("the URL is empty; set publish.remote_url");
    }
    Ok(())
}

/// The error for a remote that refused the credentials or asked for some: names the remote and
/// what to configure, never the credential.
pub(crate) fn auth_error(url: &str, credentials: &Credentials, e: &git2::Error) -> PublishError {
    if let Credentials::Token { token: Token::App(app), .. } = credentials {
        // Revoked before its time: the next ask mints a new one.
        app.forget();
    }
    PublishError::Auth {
        url: url.to_string(),
        message: e.message().to_string(),
        configure: credentials.what_to_configure().to_string(),
    }
}

/// The callbacks that answer the remote's request for credentials (once: a second ask means the
/// first answer was refused) and, for SSH, check the remote's host key against known_hosts.
pub(crate) fn callbacks<'a>(url: &'a str, credentials: &'a Credentials) -> RemoteCallbacks<'a> {
    let mut callbacks = RemoteCallbacks::new();
    let mut asked = false;
    let ssh = match credentials {
        Credentials::Ssh(key) => Some(ssh_auth(key)),
        _ => None,
    };
    let mut ssh_answers = ssh.clone().map(SshCredentials::new);
    callbacks.credentials(move |_url, username, allowed| {
        if let Some(answers) = ssh_answers.as_mut() {
            return answers.answer(username, allowed);
        }
        if asked {
            return Err(git2::Error::new(ErrorCode::Auth, ErrorClass::Http, "the remote refused the credentials"));
        }
        asked = true;
        match credentials {
            Credentials::Token { username: user, token } if allowed.contains(CredentialType::USER_PASS_PLAINTEXT) => {
                let secret = token.get_blocking().map_err(|e| {
                    let code = if e.is_transient() { ErrorCode::GenericError } else { ErrorCode::Auth };
                    git2::Error::new(code, ErrorClass::Http, e.to_string())
                })?;
                Cred::userpass_plaintext(username.unwrap_or(user), secret.expose())
            }
            _ => Err(git2::Error::new(
                ErrorCode::Auth,
                ErrorClass::Http,
                "the remote asks for credentials and none of the kind it takes are configured",
            )),
        }
    });
    if let Some(ssh) = ssh {
        let known_hosts = ssh.known_hosts();
        callbacks.certificate_check(move |cert, host| {
            // libgit2's SSH transport replaces this message with its own ("invalid or unknown
            // remote ssh hostkey"): check_host_key logs the reason.
            check_host_key(&known_hosts, url, cert, host)
                .map_err(|e| git2::Error::new(ErrorCode::Certificate, ErrorClass::Ssh, e.to_string()))
        });
    }
    callbacks
}

/// A deploy key as the shared SSH code takes it: the only identity offered, named by its setting.
fn ssh_auth(key: &SshKey) -> SshAuth {
    SshAuth::Key { key: key.clone(), setting: "[publish.ssh]".into() }
}

/// `git@github.com:owner/repo.git`: a colon before the first slash, and not a Windows drive letter.
fn is_scp_like(url: &str) -> bool {
    if url.contains("://") {
        return false;
    }
    match (url.find(':'), url.find('/')) {
        (Some(colon), slash) => colon > 1 && slash.is_none_or(|s| colon < s),
        (None, _) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Secret;

    #[test]
    fn urls_this_build_cannot_push_to_are_refused_with_what_to_use() {
        for url in ["git@github.com:acme/infra.git", "ssh://git@github.com/acme/infra.git"] {
            let err = Remote::new(url, Credentials::None, RetryPolicy::default()).unwrap_err().to_string();
            assert!(err.contains("SSH") && (err.contains("https://") || err.contains("[publish.ssh]")), "{err}");
        }
        let token = Credentials::Token { username: "x".into(), token: Token::Fixed(Secret::new("t")) };
        let err = Remote::new("git@github.com:acme/infra.git", token, RetryPolicy::default()).unwrap_err();
        assert!(err.to_string().contains("https://HOST/OWNER/REPO.git"), "{err}");
        let ssh = Credentials::Ssh(SshKey {
            username: "git".into(),
            private_key: "/k".into(),
            passphrase: None,
            known_hosts: "/kh".into(),
        });
        let err = Remote::new("https://github.com/acme/infra.git", ssh, RetryPolicy::default()).unwrap_err();
        assert!(err.to_string().contains("ssh://"), "{err}");
        assert!(Remote::new("http://127.0.0.1:9/infra.git", Credentials::None, RetryPolicy::default()).is_ok());
        let err = Remote::new("http://example.test/x.git", Credentials::None, RetryPolicy::default()).unwrap_err();
        assert!(err.to_string().contains("https://"), "{err}");
        for url in ["https://github.com/acme/infra.git", "/srv/git/infra.git", "file:///srv/git/infra.git", "../up.git"]
        {
            assert!(Remote::new(url, Credentials::None, RetryPolicy::default()).is_ok(), "{url}");
        }
    }

    #[test]
    fn backoff_doubles_up_to_the_maximum() {
        let retry =
            RetryPolicy { attempts: 5, first_delay: Duration::from_millis(100), max_delay: Duration::from_millis(350) };
        let delays: Vec<u128> = (1..=4).map(|n| retry.delay(n).as_millis()).collect();
        assert_eq!(delays, [100, 200, 350, 350]);
    }
}
