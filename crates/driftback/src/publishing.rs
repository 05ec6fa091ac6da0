//! Publishing reconciled change sets: push each branch and open (or update) one pull request per
//! resource, as `[publish] mode` says. The mechanics live in driftback-publish; this file turns the
//! pipeline's values into its inputs and reads the configuration and the environment.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use git2::Oid;

use driftback_events::ChangeSet;
use driftback_publish::github::{self, PullRequestAction, PullRequestOptions};
use driftback_publish::story::{ActorInfo, DecisionInfo, Story, TimelineEntry};
use driftback_publish::{Credentials, GitHub, GitRepo, PullRequest, Remote, RetryPolicy, Secret};

use crate::config::{PublishConfig, PublishMode};
use crate::pipeline::Outcome;

/// Everything needed to publish, checked once at the start of a run.
pub struct Publisher {
    remote: Remote,
    base_branch: String,
    github: Option<GitHub>,
    options: PullRequestOptions,
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
        let token = std::env::var(&config.token_env).ok().filter(|t| !t.trim().is_empty()).map(Secret::new);
        let retry = RetryPolicy {
            attempts: config.retry_attempts.max(1),
            first_delay: Duration::from_millis(config.retry_delay_ms),
            max_delay: Duration::from_secs(30),
        };
        let credentials = match (&token, url.to_ascii_lowercase().starts_with("https://")) {
            (Some(token), true) => Credentials::Token { username: "x-access-token".into(), token: token.clone() },
            (None, true) => bail!(
                "pushing to {url} needs a token: set the environment variable {} (publish.token_env)",
                config.token_env
            ),
            (_, false) => Credentials::None,
        };
        let remote = Remote::new(&url, credentials, retry)?;
        let base_branch = config.base_branch.clone().unwrap_or_else(|| git.head_name());
        let github = if config.mode == PublishMode::PullRequest {
            let token = token.with_context(|| {
                format!(
                    "opening pull requests needs a GitHub token: set the environment variable {} (publish.token_env)",
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
        Ok(Some(Publisher { remote, base_branch, github, options }))
    }

    /// The open pull request already carrying `address`, if pull requests are on.
    pub fn open_pull_request(
        &self,
        runtime: &tokio::runtime::Runtime,
        address: &str,
    ) -> anyhow::Result<Option<PullRequest>> {
        let Some(api) = &self.github else { return Ok(None) };
        Ok(runtime.block_on(github::find_open_for_resource(api, None, address, &self.base_branch))?)
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
    pub fn publish(
        &self,
        runtime: &tokio::runtime::Runtime,
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
                let (pr, action) = runtime.block_on(github::open_or_update(
                    api,
                    existing,
                    story,
                    branch,
                    &pushed.commit.to_string(),
                    &self.options,
                ))?;
                Some((pr.number, pr.html_url, action))
            }
        };
        Ok(Published { branch: branch.to_string(), commit: pushed.commit, pull_request })
    }

    pub fn base_branch(&self) -> &str {
        &self.base_branch
    }
}

/// The re-validation after a replay: every changed Terraform file must still parse.
fn still_parses(files: &[driftback_publish::FileChange]) -> Result<(), String> {
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
fn repository_from_url(url: &str) -> Option<String> {
    let rest = url.strip_prefix("https://")?;
    let mut parts = rest.trim_end_matches('/').trim_end_matches(".git").split('/').skip(1);
    let (owner, name) = (parts.next()?, parts.next()?);
    (parts.next().is_none() && !owner.is_empty() && !name.is_empty()).then(|| format!("{owner}/{name}"))
}

/// The pull request's story, from the change set and what the pipeline made of it.
pub fn story(change_set: &ChangeSet, outcome: &Outcome, address: &str, diff: String, base_branch: &str) -> Story {
    let actor = &change_set.actor;
    let mut evidence = vec![format!("CloudTrail identity type {:?}", actor.identity_type)];
    if let Some(issuer) = &actor.session_issuer {
        evidence.push(format!("a session of the role {issuer}"));
    }
    if let Some(session) = &actor.session_name {
        evidence.push(format!("session name {session}"));
    }
    if let Some(source) = &actor.source_identity {
        evidence.push(format!("source identity {source}"));
    }
    if let Some(by) = &actor.invoked_by {
        evidence.push(format!("invoked by {by}"));
    }
    evidence.push(format!("the user agent and identity say it came through the {}", actor.via.as_str()));
    let decision = match &outcome.decision {
        Some(d) => DecisionInfo { kind: d.kind.as_str().into(), rule: d.rule.clone(), rationale: d.rationale.clone() },
        None => DecisionInfo { kind: "reconcile".into(), rule: "default".into(), rationale: String::new() },
    };
    Story {
        address: address.to_string(),
        resource_id: change_set.resource_id.clone(),
        change_set_id: change_set.id.clone(),
        changes: vec![],
        timeline: change_set
            .events
            .iter()
            .map(|e| TimelineEntry {
                time: e.time.format("%Y-%m-%d %H:%M:%SZ").to_string(),
                actor: e.actor.display_name.clone(),
                source: e.source.clone(),
                name: e.raw_name.clone(),
                event_id: e.id.clone(),
            })
            .collect(),
        actor: ActorInfo {
            name: actor.display_name.clone(),
            via: actor.via.as_str().into(),
            principal: actor.principal_arn.clone(),
            kind: None,
            evidence,
        },
        intent: None,
        motivation: None,
        decision,
        diff,
        notes: outcome.notes.clone(),
        base_branch: base_branch.to_string(),
    }
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
