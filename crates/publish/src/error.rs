//! What can go wrong while publishing, grouped by what the caller does about it.

/// Errors of the local repository and of pushing. Each message names the input and what to do.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error("{path} is not a git repository ({message}); run `git init` there or point --repo at the repository")]
    NotARepository { path: String, message: String },
    #[error(
        "{path} has uncommitted changes ({files}); commit or stash them first so driftback's branches start from a known base"
    )]
    Dirty { path: String, files: String },
    #[error("{path} has no commits yet; commit the Terraform code first")]
    NoCommits { path: String },
    /// The remote URL cannot be used by this build; the message says which URL forms work.
    #[error("remote {url}: {reason}")]
    UnsupportedRemote { url: String, reason: String },
    /// The remote refused the credentials or asked for some that are not configured (retried: a
    /// token is rotated without driftback's help). Names the remote and what to configure, never
    /// the credential.
    #[error("remote {url} refused the credentials or asked for some ({message}); {configure}")]
    Auth { url: String, message: String, configure: String },
    /// The base branch does not exist on the remote.
    #[error("remote {url} has no branch {branch}; set publish.base_branch to the branch pull requests should target")]
    NoBaseBranch { url: String, branch: String },
    /// Replaying the change onto the moved base conflicts: the same lines changed on both sides.
    #[error(
        "the change for {branch} conflicts with {onto} in {paths}; the base changed the same lines, so the change set must be planned again on the new base"
    )]
    RebaseConflict { branch: String, onto: String, paths: String },
    /// The change, replayed onto the new base, no longer validates.
    #[error("the change for {branch}, rebased onto {onto}, no longer validates: {reason}")]
    Invalid { branch: String, onto: String, reason: String },
    /// The push kept failing after every retry.
    #[error("pushing {branch} to {url} failed after {attempts} attempts: {message}")]
    PushFailed { url: String, branch: String, attempts: u32, message: String },
    /// The working clone's directory holds a clone that is not sound and could not be set aside.
    #[error("{dir} is a clone of {origin}, not of {url}; point [serve] workdir at an empty directory")]
    WrongClone { dir: String, origin: String, url: String },
    /// The working clone's directory holds files but no clone.
    #[error("[serve] workdir {dir} is not empty and not a clone; give an empty or new directory")]
    NotAClone { dir: String },
    /// Another process holds the working clone.
    #[error("another driftback serve is using the working clone {dir}; give each replica its own [serve] workdir")]
    CloneInUse { dir: String },
    /// The working clone's directory has a `.git` that git cannot open.
    #[error("opening the working clone {dir}: {message}; remove the directory to clone again")]
    OpenClone { dir: String, message: String },
    /// The working clone's origin has no base branch to clone or fetch.
    #[error("origin {url} has no branch {branch}; set [serve] base_branch to the branch the Terraform code is on")]
    CloneNoBaseBranch { url: String, branch: String },
    /// Cloning the repository failed; `transient` when the network failed (try again later).
    #[error("cloning {url} (branch {branch}) into {dir}: {message}")]
    Clone { url: String, branch: String, dir: String, message: String, transient: bool },
    /// Fetching the base branch into the working clone failed; `transient` when the network failed.
    #[error("fetching {branch} from origin {url}: {message}")]
    Fetch { url: String, branch: String, message: String, transient: bool },
    /// A file of the working clone could not be read, written, locked or removed.
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("git: {0}")]
    Git(#[from] git2::Error),
}

impl PublishError {
    /// Whether the same work may succeed if tried again later: the network failed while cloning or
    /// fetching, a push kept failing or kept being rejected as the remote moved, git reported a
    /// network failure; or a failure that hits every change set alike and is fixed outside the
    /// change set: refused credentials (an expired or rotated token) and a file that could not be
    /// written (a full disk). Those are retried, within `[serve] max_attempts`, so one outage does not
    /// fail every change set for good. Everything else (a wrong or busy clone, a missing base
    /// branch, a conflict, an invalid change) needs a person or a new plan.
    pub fn is_transient(&self) -> bool {
        match self {
            PublishError::Clone { transient, .. } | PublishError::Fetch { transient, .. } => *transient,
            PublishError::PushFailed { .. } | PublishError::Auth { .. } | PublishError::Io { .. } => true,
            PublishError::Git(e) => is_network(e),
            PublishError::NotARepository { .. }
            | PublishError::Dirty { .. }
            | PublishError::NoCommits { .. }
            | PublishError::UnsupportedRemote { .. }
            | PublishError::NoBaseBranch { .. }
            | PublishError::RebaseConflict { .. }
            | PublishError::Invalid { .. }
            | PublishError::WrongClone { .. }
            | PublishError::NotAClone { .. }
            | PublishError::CloneInUse { .. }
            | PublishError::OpenClone { .. }
            | PublishError::CloneNoBaseBranch { .. } => false,
        }
    }
}

/// A failure talking to a remote that may pass (network, TLS, HTTP, the operating system), as
/// opposed to refused credentials or a repository that is not there.
pub(crate) fn is_network(e: &git2::Error) -> bool {
    e.code() != git2::ErrorCode::Auth
        && matches!(
            e.class(),
            git2::ErrorClass::Net | git2::ErrorClass::Http | git2::ErrorClass::Ssl | git2::ErrorClass::Os
        )
}
