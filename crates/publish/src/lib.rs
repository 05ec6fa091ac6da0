//! The publish stage: a change set's commit becomes a branch, a pushed branch, and a pull request
//! whose body tells the story.
//!
//! - [`clone`]: the daemon's working clone: cloned once (a half-created clone is cloned again),
//!   locked to one process, stale git locks cleared, fetched and reset to the latest base.
//! - [`git`]: branch commits from an in-memory index, so HEAD, the index and the working tree of the
//!   repository never move; replaying a change onto a moved base; finding a change set's commit by
//!   its trailer.
//! - [`remote`]: pushes that never force, with rebase onto a moved base, re-validation and retries;
//!   the [`Credentials`] clone, fetch and push share: an HTTPS token ([`token`]: fixed, or a GitHub
//!   App's installation tokens, refreshed before they expire) or an SSH deploy key whose host is
//!   checked against known_hosts (`driftback-gitauth`, which module fetching shares).
//! - [`message`] and [`story`]: the commit message (conventional summary, `Drift-*` trailers) and the
//!   pull request title and body, from plain input structs the caller fills; event text is escaped.
//!   The trailers are read back with [`message::trailers`] and [`message::change_set_of`].
//! - [`github`]: the pull request API behind the [`PullRequestApi`] trait, the GitHub REST client,
//!   and [`github::open_or_update`], which keeps one open pull request per resource.
//! - [`issues`]: decisions that wait for a person as one GitHub issue per resource, and who may
//!   answer in it; [`commands`]: the `/driftback ...` answers people write in those threads.
//! - [`notify`]: escalations to a chat or JSON webhook, grouped and retried.
//! - [`webhook`]: an axum router for GitHub's `pull_request` and `issue_comment` webhooks, signature
//!   checked.
//!
//! This crate knows nothing of the store or of CloudTrail: callers pass what to record and receive
//! what happened.

pub mod clone;
pub mod commands;
mod error;
pub mod git;
pub mod github;
pub mod issues;
pub mod markdown;
pub mod message;
pub mod notify;
pub mod remote;
pub mod story;
pub mod token;
pub mod webhook;

pub use clone::WorkingClone;
/// The SSH key and secret types are the ones module fetching uses too.
pub use driftback_gitauth::{Secret, SshKey};
pub use error::PublishError;
pub use git::{Author, Conflicts, FileChange, GitRepo, branch_name, init_repository, stack_branch_name, unified_diff};
/// A commit id, as every git operation here names commits.
pub use git2::Oid;
pub use github::{GitHub, GitHubError, PullRequest, PullRequestApi, PullRequestState, UnknownPullRequestState};
pub use remote::{Credentials, Pushed, Remote, RetryPolicy};
pub use token::{AppSettings, AppTokenError, AppTokens, Token};
