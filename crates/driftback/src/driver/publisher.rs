//! Publishing reconciled change sets: push each branch and open (or update) one pull request per
//! resource, as `[publish] mode` says. The mechanics live in driftback-publish; this file reads the
//! configuration and the environment, and keeps the store's view of pull requests current.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};

use driftback_publish::github::{self, PullRequestAction, PullRequestOptions};
use driftback_publish::story::Story;
use driftback_publish::webhook::{PullRequestChange, PullRequestEvents};
use driftback_publish::{
    Credentials, GitHub, GitRepo, Oid, PullRequest, PullRequestApi, PullRequestState, Remote, RetryPolicy, Secret,
};
use driftback_store::{PullRequestRecord, Store};

use crate::config::{PublishConfig, PublishMode};

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
                store.set_pull_request_state(known.number, store_state(state)).await?;
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

    pub fn base_branch(&self) -> &str {
        &self.base_branch
    }
}

/// Record an opened or updated pull request in the store.
pub async fn record_pull_request(store: &Store, address: &str, published: &Published) -> anyhow::Result<()> {
    if let Some((number, url, _)) = &published.pull_request {
        let record = PullRequestRecord {
            number: *number,
            address: address.to_string(),
            branch: published.branch.clone(),
            url: url.clone(),
            state: driftback_store::PullRequestState::Open,
            head_commit: published.commit.to_string(),
        };
        store.record_pull_request(&record).await?;
    }
    Ok(())
}

fn store_state(state: PullRequestState) -> driftback_store::PullRequestState {
    match state {
        PullRequestState::Open => driftback_store::PullRequestState::Open,
        PullRequestState::Merged => driftback_store::PullRequestState::Merged,
        PullRequestState::Closed => driftback_store::PullRequestState::Closed,
    }
}

/// GitHub's webhook deliveries recorded in the store.
pub struct StoreSink(pub Store);

impl PullRequestEvents for StoreSink {
    async fn record(&self, change: PullRequestChange) -> Result<(), String> {
        // A pull request driftback did not open (or not recorded) is not its business.
        self.0
            .set_pull_request_state(change.number, store_state(change.state))
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

/// The webhook router for the daemon to mount (`POST /webhooks/github`), with the secret from the
/// environment variable `publish.webhook_secret_env`.
pub fn webhook_router(config: &PublishConfig, store: Store) -> anyhow::Result<axum::Router> {
    let secret = std::env::var(&config.webhook_secret_env).ok().filter(|s| !s.is_empty()).with_context(|| {
        format!(
            "the pull request webhook needs its secret: set the environment variable {} (publish.webhook_secret_env)",
            config.webhook_secret_env
        )
    })?;
    Ok(driftback_publish::webhook::router(Secret::new(secret), std::sync::Arc::new(StoreSink(store))))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_signed_merge_delivery_is_recorded_in_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_sqlite(&dir.path().join("kb.sqlite")).await.unwrap();
        let record = PullRequestRecord {
            number: 4,
            address: "aws_instance.web".into(),
            branch: "driftback/aws_instance.web-1".into(),
            url: "https://github.example/acme/infra/pull/4".into(),
            state: driftback_store::PullRequestState::Open,
            head_commit: "abc".into(),
        };
        store.record_pull_request(&record).await.unwrap();
        let config =
            PublishConfig { webhook_secret_env: "DRIFTBACK_TEST_WEBHOOK_SECRET_UNSET".into(), ..Default::default() };
        assert!(webhook_router(&config, store.clone()).is_err(), "no secret, no router");

        let router =
            driftback_publish::webhook::router(Secret::new("s"), std::sync::Arc::new(StoreSink(store.clone())));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}{}", listener.local_addr().unwrap(), driftback_publish::webhook::WEBHOOK_PATH);
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        let body = serde_json::json!({
            "action": "closed",
            "pull_request": {
                "number": 4, "html_url": record.url, "state": "closed", "title": "t", "body": null,
                "merged": true, "merged_at": "2024-05-02T09:30:00Z", "merge_commit_sha": "def",
                "head": {"ref": record.branch, "sha": "abc"}, "base": {"ref": "main", "sha": "0"}
            }
        })
        .to_string();
        let status = reqwest::Client::new()
            .post(&url)
            .header("x-github-event", "pull_request")
            .header("x-hub-signature-256", driftback_publish::webhook::signature(&Secret::new("s"), body.as_bytes()))
            .body(body)
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, 200);
        assert!(store.open_pull_request("aws_instance.web").await.unwrap().is_none(), "no longer open");
    }

    #[test]
    fn the_github_repository_is_read_from_https_remotes() {
        assert_eq!(repository_from_url("https://github.com/acme/infra.git").as_deref(), Some("acme/infra"));
        assert_eq!(repository_from_url("https://ghe.example/acme/infra").as_deref(), Some("acme/infra"));
        assert_eq!(repository_from_url("https://ghe.example/a/b/c"), None);
        assert_eq!(repository_from_url("/srv/git/infra.git"), None);
    }
}
