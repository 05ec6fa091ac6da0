//! Publishing reconciled change sets: push each branch and open (or update) one pull request per
//! resource, as `[publish] mode` says. The mechanics live in driftback-publish; this file reads the
//! configuration and the environment, and keeps the store's view of pull requests current.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};

use driftback_publish::github::{self, PullRequestAction, PullRequestOptions};
use driftback_publish::issues::{self, IssueAction};
use driftback_publish::notify::Notifier;
use driftback_publish::story::Story;
use driftback_publish::{
    Credentials, GitHub, GitRepo, Oid, PullRequest, PullRequestApi, PullRequestState, Remote, RetryPolicy,
};
use driftback_store::{PullRequestRecord, Store};

use crate::config::{PublishConfig, PublishMode};

/// Everything needed to publish, checked once at the start of a run.
pub struct Publisher {
    remote: Remote,
    base_branch: String,
    github: Option<GitHub>,
    options: PullRequestOptions,
    /// Escalations and reverts become issues (with pull requests on).
    escalation_issues: bool,
    /// ... or held draft pull requests, where their edit can be written.
    escalation_drafts: bool,
}

/// The resource's open held draft pull request: as the issues endpoint lists it (its body and
/// labels) and as the pulls endpoint gives it (its branch).
pub struct HeldDraft {
    pub thread: issues::Issue,
    pub pull_request: PullRequest,
}

/// What publishing one change set did, for the summary and the store.
#[derive(Debug, Clone)]
pub struct Published {
    pub branch: String,
    pub commit: Oid,
    pub pull_request: Option<(u64, String, PullRequestAction)>,
}

impl Publisher {
    /// `None` when the mode is `none`. Errors name the setting to fix.
    pub fn from_config(config: &PublishConfig, git: &GitRepo, repo_dir: &Path) -> anyhow::Result<Option<Publisher>> {
        if config.mode == PublishMode::None {
            return Ok(None);
        }
        let url = match &config.remote_url {
            Some(url) => url.clone(),
            None => git.remote_url("origin").with_context(|| {
                format!(
                    "{} has no `origin` remote; set publish.remote_url to the repository to push to",
                    repo_dir.display()
                )
            })?,
        };
        let url = resolve_local(&url, repo_dir);
        let access = config.access(&url)?;
        let retry = RetryPolicy {
            attempts: config.retry_attempts.max(1),
            first_delay: Duration::from_millis(config.retry_delay_ms),
            max_delay: Duration::from_secs(30),
        };
        let credentials = access.credentials;
        if matches!(credentials, Credentials::None) && url.to_ascii_lowercase().starts_with("https://") {
            bail!(
                "pushing to {url} needs credentials: set the environment variable {} (publish.token_env), \
                 publish.token_file, or a GitHub App ([publish.app])",
                config.token_env
            );
        }
        let token = access.api_token;
        let remote = Remote::new(&url, credentials, retry)?;
        let base_branch = config.base_branch.clone().unwrap_or_else(|| git.head_name());
        let github = if config.mode == PublishMode::PullRequest {
            let token = token.with_context(|| {
                format!(
                    "opening pull requests needs a GitHub token: set the environment variable {} (publish.token_env), \
                     publish.token_file, or a GitHub App ([publish.app])",
                    config.token_env
                )
            })?;
            let repository = match &config.repository {
                Some(r) => r.clone(),
                None => repository_from_url(&url).with_context(|| {
                    format!("cannot tell the GitHub repository from the remote {url}; set publish.repository = \"OWNER/NAME\"")
                })?,
            };
            Some(GitHub::new(&config.api_url, &repository, token, retry)?)
        } else {
            None
        };
        let options = PullRequestOptions { labels: config.labels.clone(), draft: config.draft };
        Ok(Some(Publisher {
            remote,
            base_branch,
            github,
            options,
            escalation_issues: config.escalation_issues,
            escalation_drafts: config.escalation_issues && config.escalation_drafts,
        }))
    }

    /// The open pull request already carrying `address`, if pull requests are on. The one the store
    /// knows is polled first: when it was merged or closed meanwhile, the store learns it here.
    pub async fn open_pull_request(&self, store: Option<&Store>, address: &str) -> anyhow::Result<Option<PullRequest>> {
        let Some(api) = &self.github else { return Ok(None) };
        let known = match store {
            Some(store) => store.open_pull_request(address).await?,
            None => None,
        };
        if let (Some(store), Some(known)) = (store, &known) {
            let pr = api.get(known.number).await?;
            let state = pr.lifecycle();
            if state != PullRequestState::Open {
                store.set_pull_request_state(known.number, state).await?;
                tracing::info!(
                    number = known.number,
                    state = state.as_str(),
                    "pull request state recorded from polling"
                );
            }
        }
        let known = known.map(|k| k.number);
        Ok(github::find_open_for_resource(api, known, address, &self.base_branch).await?)
    }

    /// The commit and files of an open pull request's branch, to plan a later change on top of it.
    pub fn branch_files(
        &self,
        git: &GitRepo,
        branch: &str,
    ) -> anyhow::Result<Option<(Oid, std::collections::BTreeMap<PathBuf, String>)>> {
        match self.remote.fetch_branch(git, branch)? {
            Some(tip) => Ok(Some((tip, git.files_at(tip)?))),
            None => Ok(None),
        }
    }

    /// Push `commit` to `branch` (replaying and re-validating it if the remote moved) and, with
    /// pull requests on, open one or update `existing`.
    pub async fn publish(
        &self,
        git: &GitRepo,
        commit: Oid,
        branch: &str,
        story: &Story,
        existing: Option<&PullRequest>,
    ) -> anyhow::Result<Published> {
        let pushed = self.remote.push_change(git, commit, branch, &self.base_branch, &mut still_parses)?;
        if pushed.rebased_onto.is_some() {
            tracing::info!(branch, "the remote had moved; the change was replayed on it and validated again");
        }
        let pull_request = match &self.github {
            None => None,
            Some(api) => {
                let (pr, action) =
                    github::open_or_update(api, existing, story, branch, &pushed.commit.to_string(), &self.options)
                        .await?;
                Some((pr.number, pr.html_url, action))
            }
        };
        Ok(Published { branch: branch.to_string(), commit: pushed.commit, pull_request })
    }

    /// Close pull request `number` without merging, saying why in a comment first, and record it
    /// closed in the store.
    pub async fn close_pull_request(&self, store: Option<&Store>, number: u64, why: &str) -> anyhow::Result<()> {
        let Some(api) = &self.github else { return Ok(()) };
        api.comment(number, why).await?;
        api.close(number).await?;
        if let Some(store) = store {
            store.set_pull_request_state(number, PullRequestState::Closed).await?;
        }
        Ok(())
    }

    pub fn base_branch(&self) -> &str {
        &self.base_branch
    }

    /// Publish a decision that waits for a person as the resource's issue (opened or updated),
    /// when pull requests and escalation issues are on: its number, URL and what was done.
    pub async fn publish_escalation(&self, story: &Story) -> anyhow::Result<Option<(u64, String, IssueAction)>> {
        let Some(api) = self.github.as_ref().filter(|_| self.escalation_issues) else { return Ok(None) };
        let (issue, action) = issues::publish_escalation(api, story, &self.options.labels).await?;
        Ok(Some((issue.number, issue.html_url, action)))
    }

    /// Whether a decision that waits, with a held edit that can be written, goes to a held draft
    /// pull request (pull requests, escalation issues and drafts on).
    pub fn drafts_held_edits(&self) -> bool {
        self.github.is_some() && self.escalation_drafts
    }

    /// The resource's open held draft pull request, if drafts are on and there is one.
    pub async fn open_held_draft(&self, address: &str) -> anyhow::Result<Option<HeldDraft>> {
        let Some(api) = self.github.as_ref().filter(|_| self.escalation_issues) else { return Ok(None) };
        let Some(thread) = issues::find_open_draft(api, address).await? else { return Ok(None) };
        let pull_request = api.get(thread.number).await?;
        Ok(Some(HeldDraft { thread, pull_request }))
    }

    /// Push `commit` (the held edit, or `None` when `existing`'s branch already holds it) to
    /// `branch` and open the held draft pull request, or update `existing`: its number, URL and
    /// what was done.
    pub async fn publish_held_draft(
        &self,
        git: &GitRepo,
        commit: Option<Oid>,
        branch: &str,
        story: &Story,
        existing: Option<&HeldDraft>,
    ) -> anyhow::Result<(u64, String, IssueAction)> {
        let api = self.github.as_ref().context("held drafts need pull requests on (publish.mode)")?;
        let pushed = match commit {
            Some(commit) => {
                let pushed = self.remote.push_change(git, commit, branch, &self.base_branch, &mut still_parses)?;
                Some(pushed.commit.to_string())
            }
            None => None,
        };
        let (pr, action) = issues::publish_held_draft(
            api,
            existing.map(|d| &d.thread),
            story,
            branch,
            pushed.as_deref(),
            &self.options.labels,
        )
        .await?;
        Ok((pr.number, pr.html_url, action))
    }

    /// Close what waits on the resource (its escalation issue, its held draft), when `covered`
    /// covers the fields it waits on, saying why.
    pub async fn resolve_escalation_if_covered(
        &self,
        address: &str,
        covered: &[String],
        why: &str,
    ) -> anyhow::Result<Vec<issues::Closed>> {
        let Some(api) = self.github.as_ref().filter(|_| self.escalation_issues) else { return Ok(vec![]) };
        Ok(issues::resolve_if_covered(api, address, covered, why).await?)
    }
}

/// The notifier `[notify]` asks for: `None` when its URL variable is unset or empty.
pub fn notifier(config: &crate::config::NotifyConfig, publish: &PublishConfig) -> Option<Notifier> {
    let url = std::env::var(&config.url_env).ok().filter(|u| !u.trim().is_empty())?;
    let retry = RetryPolicy {
        attempts: publish.retry_attempts.max(1),
        first_delay: Duration::from_millis(publish.retry_delay_ms),
        max_delay: Duration::from_secs(30),
    };
    Some(Notifier::start(url, config.format, Duration::from_secs(config.group_secs), retry))
}

/// Record an opened or updated pull request in the store.
pub async fn record_pull_request(store: &Store, address: &str, published: &Published) -> anyhow::Result<()> {
    if let Some((number, url, _)) = &published.pull_request {
        let record = PullRequestRecord {
            number: *number,
            address: address.to_string(),
            branch: published.branch.clone(),
            url: url.clone(),
            state: PullRequestState::Open,
            head_commit: published.commit.to_string(),
        };
        store.record_pull_request(&record).await?;
    }
    Ok(())
}

/// The re-validation after a replay: every changed Terraform file must still parse.
fn still_parses(files: &[driftback_publish::FileChange]) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    for (path, content) in files {
        let is_hcl = path.extension().is_some_and(|e| e == "tf" || e == "tfvars");
        if let (true, Some(text)) = (is_hcl, content) {
            driftback_terraform::edit::parse(text).map_err(|e| format!("{} does not parse: {e}", path.display()))?;
        }
    }
    Ok(())
}

/// A relative local path in the configuration is relative to the repository.
fn resolve_local(url: &str, repo_dir: &Path) -> String {
    if url.contains("://") || url.contains('@') || Path::new(url).is_absolute() {
        url.to_string()
    } else {
        repo_dir.join(url).display().to_string()
    }
}

/// `OWNER/NAME` from `https://HOST/OWNER/NAME(.git)`.
pub(super) fn repository_from_url(url: &str) -> Option<String> {
    let rest = url.strip_prefix("https://")?;
    let mut parts = rest.trim_end_matches('/').trim_end_matches(".git").split('/').skip(1);
    let (owner, name) = (parts.next()?, parts.next()?);
    (parts.next().is_none() && !owner.is_empty() && !name.is_empty()).then(|| format!("{owner}/{name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_github_repository_is_read_from_https_remotes() {
        assert_eq!(repository_from_url("https://github.com/acme/infra.git").as_deref(), Some("acme/infra"));
        assert_eq!(repository_from_url("https://ghe.example/acme/infra").as_deref(), Some("acme/infra"));
        assert_eq!(repository_from_url("https://ghe.example/a/b/c"), None);
        assert_eq!(repository_from_url("/srv/git/infra.git"), None);
    }
}
