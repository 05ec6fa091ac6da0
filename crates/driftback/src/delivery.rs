//! Committing a reconciled change set and publishing it as `[publish] mode` says: the per-change-set
//! work that `driftback reconcile` and `driftback serve` share.

use std::path::PathBuf;

use anyhow::Context;
use git2::Oid;

use driftback_events::ChangeSet;
use driftback_policy::{LedgerEntry, Policy};
use driftback_publish::github::PullRequestAction;
use driftback_publish::{Author, GitRepo, branch_name};
use driftback_recipes::Catalog;
use driftback_store::Store;
use driftback_terraform::{Repo, State};

use crate::pipeline::{self, Outcome, Status};
use crate::publishing::{self, Publisher};

/// What the change set is committed against, and where it goes.
pub struct Delivery<'a> {
    /// Runs the store and GitHub calls; a multi-threaded runtime (called from outside it).
    pub runtime: &'a tokio::runtime::Handle,
    pub git: &'a GitRepo,
    pub store: Option<&'a Store>,
    /// `None` when `[publish] mode` is `none`: the branch stays local.
    pub publisher: Option<&'a Publisher>,
    pub catalog: &'a Catalog,
    pub state: &'a State,
    pub policy: &'a Policy,
    /// The ownership history, for planning again on an open pull request's branch.
    pub ledger: &'a [LedgerEntry],
    pub branch_prefix: &'a str,
    pub author: &'a Author,
    /// The base branch's commit the change set was planned on, and its name.
    pub base: Oid,
    pub base_branch: &'a str,
}

/// What committing and publishing one change set did.
#[derive(Debug, Clone)]
pub struct Delivered {
    /// The branch holding the change: the pushed one when published, else the local one.
    pub branch: String,
    pub commit: Oid,
    pub diff: Option<String>,
    pub pushed: bool,
    pub pull_request: Option<(u64, String, PullRequestAction)>,
}

impl Delivered {
    /// "branch", "branch (pushed)" or "branch (pull request #N opened: URL)", for summaries.
    pub fn describe(&self) -> String {
        match (&self.pull_request, self.pushed) {
            (Some((number, url, action)), _) => {
                format!("{} (pull request #{number} {}: {url})", self.branch, verb(action))
            }
            (None, true) => format!("{} (pushed)", self.branch),
            (None, false) => self.branch.clone(),
        }
    }

    /// The note for the change set record, when a pull request was opened or updated.
    pub fn note(&self) -> Option<String> {
        self.pull_request
            .as_ref()
            .map(|(number, url, action)| format!("pull request #{number} {}: {url}", verb(action)))
    }
}

fn verb(action: &PullRequestAction) -> &'static str {
    match action {
        PullRequestAction::Created => "opened",
        PullRequestAction::Updated => "updated",
    }
}

impl Delivery<'_> {
    /// Commit a reconciled outcome on its own branch (or on top of the open pull request for the
    /// same resource) and publish it. `committed` is a commit of this change set made before (by a
    /// run cut short), which is published instead of committing again.
    pub fn deliver(
        &self,
        change_set: &ChangeSet,
        outcome: &Outcome,
        label: &str,
        committed: Option<Oid>,
    ) -> anyhow::Result<Delivered> {
        let git = self.git;
        let mut story = publishing::story(change_set, outcome, label, String::new(), self.base_branch);
        // One open pull request per resource: a later change is planned on its branch.
        let existing = match self.publisher {
            Some(p) => p.open_pull_request(self.runtime, self.store, label)?,
            None => None,
        };
        let local_branch = branch_name(self.branch_prefix, label, &change_set.id);
        let mut parent = self.base;
        let mut files = outcome.files.clone();
        let mut branch = local_branch.clone();
        if let (Some(p), Some(pr)) = (self.publisher, &existing) {
            if let Some((tip, tree)) = p.branch_files(git, &pr.head.branch)? {
                let on_branch = pipeline::process(
                    self.catalog,
                    self.state,
                    &Repo::from_files(tree),
                    change_set,
                    self.policy,
                    self.ledger,
                );
                if on_branch.status == Status::Reconciled {
                    // The values before are the branch's, where the earlier change is.
                    story = publishing::story(change_set, &on_branch, label, String::new(), self.base_branch);
                    parent = tip;
                    files = on_branch.files;
                    branch = pr.head.branch.clone();
                }
            }
        }
        let (local_branch, commit) = match committed {
            Some(commit) => (local_branch, commit),
            None => {
                let changes: Vec<(PathBuf, Option<String>)> =
                    files.iter().map(|(p, t)| (p.clone(), Some(t.clone()))).collect();
                // The message carries `Drift-Change-Set: <id>`, by which a restarted daemon finds it.
                let message = driftback_publish::message::commit_message(&story);
                git.commit_on_branch(parent, &local_branch, &changes, &message, self.author)?
            }
        };
        let diff = git.diff_of(commit).ok();
        let Some(p) = self.publisher else {
            return Ok(Delivered { branch: local_branch, commit, diff, pushed: false, pull_request: None });
        };
        story.diff = diff.clone().unwrap_or_default();
        let published = p
            .publish(self.runtime, git, commit, &branch, &story, existing.as_ref())
            .with_context(|| format!("publishing the change to {label}"))?;
        if let Some(store) = self.store {
            publishing::record_pull_request(self.runtime, store, label, &published)?;
        }
        Ok(Delivered {
            branch: published.branch,
            commit: published.commit,
            diff,
            pushed: true,
            pull_request: published.pull_request,
        })
    }
}
