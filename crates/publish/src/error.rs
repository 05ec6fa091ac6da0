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
    /// The remote refused the credentials; retrying does not help.
    #[error(
        "remote {url} refused the credentials ({message}); check the token in the environment variable named by publish.token_env and that it may push"
    )]
    Auth { url: String, message: String },
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
    #[error("git: {0}")]
    Git(#[from] git2::Error),
}
