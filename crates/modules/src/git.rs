//! A git package: the repository fetched into a directory and the `?ref=` (a tag, a branch or a
//! commit; the remote's default branch when none) checked out there, bounded in time and bytes.

use std::path::Path;
use std::time::Instant;

use git2::{AutotagOption, Cred, CredentialType, FetchOptions, Oid, RemoteCallbacks, Repository};

/// Why a git package could not be fetched and checked out.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// What git said.
    #[error("{}", .0.message())]
    Git(#[from] git2::Error),
    /// The fetch was stopped: it took too long or grew too large (which setting says so).
    #[error("{0}")]
    Stopped(String),
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
/// checkout. Returns the commit checked out.
pub fn fetch(
    url: &str,
    reference: Option<&str>,
    depth: Option<u32>,
    into: &Path,
    deadline: Instant,
    max_bytes: u64,
) -> Result<String, GitError> {
    let repo = Repository::init(into)?;
    let mut remote = repo.remote_anonymous(url)?;
    let stopped = std::cell::Cell::new(None::<String>);
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
    let mut asked = false;
    callbacks.credentials(move |url, username, allowed| {
        if asked {
            return Err(git2::Error::from_str("the remote refused the credentials offered"));
        }
        asked = true;
        if allowed.contains(CredentialType::SSH_KEY) {
            return Cred::ssh_key_from_agent(username.unwrap_or("git"));
        }
        if allowed.contains(CredentialType::USER_PASS_PLAINTEXT) {
            // git's own credential helpers, as `git clone` would ask them.
            if let Ok(config) = git2::Config::open_default() {
                return Cred::credential_helper(&config, url, username);
            }
        }
        Err(git2::Error::from_str("the remote asks for credentials and none are available to driftback"))
    });
    let mut options = FetchOptions::new();
    options.remote_callbacks(callbacks);
    options.download_tags(AutotagOption::All);
    if let Some(depth) = depth {
        options.depth(depth as i32);
    }
    let refspecs =
        ["+HEAD:refs/remotes/origin/HEAD", "+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"];
    if let Err(e) = remote.fetch(&refspecs, Some(&mut options), None) {
        return Err(stopped.take().map(GitError::Stopped).unwrap_or(GitError::Git(e)));
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
