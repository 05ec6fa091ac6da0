//! Pull requests: the [`PullRequestApi`] trait, its GitHub REST implementation ([`GitHub`], which
//! works with GitHub Enterprise through its API base URL), and the rule "one open pull request per
//! resource" ([`find_open_for_resource`], [`open_or_update`]).

use std::future::Future;
use std::time::Duration;

use reqwest::{Method, StatusCode, Url};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::story::{Story, resource_marker};
use crate::{RetryPolicy, Secret, Token};

/// GitHub refuses longer bodies.
pub(crate) const MAX_BODY_CHARS: usize = 65_000;
/// Open pull requests (and issues) looked through for a resource's marker (100 a page).
pub(crate) const MAX_PAGES: u32 = 10;
pub(crate) const PER_PAGE: usize = 100;

/// A pull request as the API returns it (the fields driftback reads).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PullRequest {
    pub number: u64,
    pub html_url: String,
    /// `open` or `closed`.
    pub state: String,
    pub title: String,
    pub body: Option<String>,
    #[serde(default)]
    pub draft: bool,
    /// Only in the single pull request response.
    #[serde(default)]
    pub merged: Option<bool>,
    pub merged_at: Option<String>,
    pub merge_commit_sha: Option<String>,
    /// Who merged it (`null` until merged).
    #[serde(default)]
    pub merged_by: Option<Login>,
    pub head: GitRef,
    pub base: GitRef,
}

/// A GitHub user, as far as driftback reads one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Login {
    pub login: String,
}

/// A branch and its commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GitRef {
    #[serde(rename = "ref")]
    pub branch: String,
    pub sha: String,
}

/// Where a pull request stands: the one vocabulary of the webhook, the publisher and the store
/// (which keeps it as `open`, `merged` or `closed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PullRequestState {
    /// Open for review.
    Open,
    /// Merged into the base branch.
    Merged,
    /// Closed without merging.
    Closed,
}

impl PullRequestState {
    /// `open`, `merged`, `closed`: the text the store keeps.
    pub fn as_str(self) -> &'static str {
        match self {
            PullRequestState::Open => "open",
            PullRequestState::Merged => "merged",
            PullRequestState::Closed => "closed",
        }
    }
}

/// A text that is not one of [`PullRequestState::as_str`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown pull request state {0:?} (expected open, merged or closed)")]
pub struct UnknownPullRequestState(pub String);

impl std::str::FromStr for PullRequestState {
    type Err = UnknownPullRequestState;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "open" => Ok(PullRequestState::Open),
            "merged" => Ok(PullRequestState::Merged),
            "closed" => Ok(PullRequestState::Closed),
            other => Err(UnknownPullRequestState(other.to_string())),
        }
    }
}

impl PullRequest {
    pub fn lifecycle(&self) -> PullRequestState {
        if self.state == "open" {
            PullRequestState::Open
        } else if self.merged == Some(true) || self.merged_at.is_some() {
            PullRequestState::Merged
        } else {
            PullRequestState::Closed
        }
    }
}

/// A pull request to open.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NewPullRequest {
    pub title: String,
    pub head: String,
    pub base: String,
    pub body: String,
    pub draft: bool,
}

/// What the pull request service can do, as driftback uses it. [`GitHub`] implements it.
pub trait PullRequestApi {
    /// Open pull requests into `base`, every page.
    fn list_open(&self, base: &str) -> impl Future<Output = Result<Vec<PullRequest>, GitHubError>> + Send;
    /// The open pull request whose head is `branch` of this repository, if any.
    fn find_open_by_head(&self, branch: &str) -> impl Future<Output = Result<Option<PullRequest>, GitHubError>> + Send;
    /// One pull request, with its merge state.
    fn get(&self, number: u64) -> impl Future<Output = Result<PullRequest, GitHubError>> + Send;
    fn create(&self, new: &NewPullRequest) -> impl Future<Output = Result<PullRequest, GitHubError>> + Send;
    /// Replace the title and body.
    fn update(
        &self,
        number: u64,
        title: &str,
        body: &str,
    ) -> impl Future<Output = Result<PullRequest, GitHubError>> + Send;
    /// Close without merging (`PATCH .../pulls/{number}` with `state: closed`).
    fn close(&self, number: u64) -> impl Future<Output = Result<PullRequest, GitHubError>> + Send;
    fn comment(&self, number: u64, body: &str) -> impl Future<Output = Result<(), GitHubError>> + Send;
    fn add_labels(&self, number: u64, labels: &[String]) -> impl Future<Output = Result<(), GitHubError>> + Send;
}

/// Errors of the pull request API, by what the operator does about them.
#[derive(Debug, thiserror::Error)]
pub enum GitHubError {
    #[error("invalid GitHub settings: {0}")]
    Config(String),
    #[error(
        "GitHub refused the token for {what} (HTTP 401); put a valid token in the environment variable named by publish.token_env"
    )]
    Unauthorized { what: String },
    #[error(
        "GitHub forbade {what} (HTTP 403: {message}); the token needs write access to pull requests and issues of the repository"
    )]
    Forbidden { what: String, message: String },
    #[error("GitHub found no {what} (HTTP 404); check publish.repository and that the token can see the repository")]
    NotFound { what: String },
    #[error("GitHub rejected {what} (HTTP 422): {message}")]
    Rejected { what: String, message: String },
    /// Network failures, server errors and rate limits that outlasted every retry.
    #[error("GitHub did not answer {what} after {attempts} attempts: {message}")]
    Unavailable { what: String, attempts: u32, message: String },
    #[error("GitHub answered {what} with something unexpected: {message}")]
    Protocol { what: String, message: String },
}

/// The GitHub REST API (github.com or GitHub Enterprise).
#[derive(Debug, Clone)]
pub struct GitHub {
    http: reqwest::Client,
    api: Url,
    owner: String,
    name: String,
    token: Token,
    retry: RetryPolicy,
}

impl GitHub {
    /// `api_url`: `https://api.github.com`, or `https://HOST/api/v3` for GitHub Enterprise;
    /// `repository`: `owner/name`.
    pub fn new(
        api_url: &str,
        repository: &str,
        token: impl Into<Token>,
        retry: RetryPolicy,
    ) -> Result<GitHub, GitHubError> {
        let token = token.into();
        let mut api = Url::parse(api_url)
            .map_err(|e| GitHubError::Config(format!("publish.api_url {api_url:?} is not a URL ({e})")))?;
        if !api.path().ends_with('/') {
            let path = format!("{}/", api.path());
            api.set_path(&path);
        }
        let (owner, name) = repository
            .split_once('/')
            .filter(|(o, n)| !o.is_empty() && !n.is_empty() && !n.contains('/'))
            .ok_or_else(|| GitHubError::Config(format!("publish.repository {repository:?} is not OWNER/NAME")))?;
        if token.is_empty() {
            return Err(GitHubError::Config("the GitHub token is empty".into()));
        }
        let http = reqwest::Client::builder()
            .user_agent(concat!("driftback/", env!("CARGO_PKG_VERSION")))
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| GitHubError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(GitHub { http, api, owner: owner.to_string(), name: name.to_string(), token, retry })
    }

    pub(crate) fn url(&self, path: &str, query: &[(&str, String)]) -> Result<Url, GitHubError> {
        let mut url = self
            .api
            .join(&format!("repos/{}/{}/{path}", self.owner, self.name))
            .map_err(|e| GitHubError::Config(format!("cannot build the API URL: {e}")))?;
        if !query.is_empty() {
            let mut pairs = url.query_pairs_mut();
            for (k, v) in query {
                pairs.append_pair(k, v);
            }
        }
        Ok(url)
    }

    /// Send with retries on network errors, server errors and rate limits; decode the JSON answer.
    pub(crate) async fn call<T: DeserializeOwned>(
        &self,
        what: &str,
        method: Method,
        url: Url,
        body: Option<&Value>,
    ) -> Result<T, GitHubError> {
        let mut failures = 0;
        loop {
            let token: Secret = self.token.get().await.map_err(|e| match e.is_transient() {
                true => GitHubError::Unavailable { what: what.to_string(), attempts: 1, message: e.to_string() },
                false => GitHubError::Config(e.to_string()),
            })?;
            let mut request = self
                .http
                .request(method.clone(), url.clone())
                .header("Accept", "application/vnd.github+json")
                .header("X-GitHub-Api-Version", "2022-11-28")
                .bearer_auth(token.expose());
            if let Some(body) = body {
                request = request.json(body);
            }
            // A failure worth retrying, described; success and final errors return.
            let message = match request.send().await {
                Err(e) => e.without_url().to_string(),
                Ok(response) => {
                    let status = response.status();
                    let retry_after = response
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.parse::<u64>().ok());
                    let rate_limited = status == StatusCode::TOO_MANY_REQUESTS
                        || (status == StatusCode::FORBIDDEN
                            && response.headers().get("x-ratelimit-remaining").is_some_and(|v| v == "0"));
                    match response.bytes().await {
                        Err(e) => e.without_url().to_string(),
                        Ok(bytes) if status.is_success() => {
                            return serde_json::from_slice(&bytes).map_err(|e| GitHubError::Protocol {
                                what: what.to_string(),
                                message: format!("HTTP {status}: {e}"),
                            });
                        }
                        Ok(bytes) if status.is_server_error() || rate_limited => {
                            let message = format!("HTTP {status}: {}", api_message(&bytes));
                            if let Some(secs) = retry_after {
                                failures += 1;
                                if failures >= self.retry.attempts {
                                    return Err(GitHubError::Unavailable {
                                        what: what.to_string(),
                                        attempts: failures,
                                        message,
                                    });
                                }
                                tokio::time::sleep(Duration::from_secs(secs).min(self.retry.max_delay)).await;
                                continue;
                            }
                            message
                        }
                        Ok(bytes) => return Err(client_error(what, status, api_message(&bytes))),
                    }
                }
            };
            failures += 1;
            if failures >= self.retry.attempts {
                return Err(GitHubError::Unavailable { what: what.to_string(), attempts: failures, message });
            }
            let delay = self.retry.delay(failures);
            tracing::warn!(what, failures, delay_ms = delay.as_millis() as u64, error = %message, "GitHub call failed; retrying");
            tokio::time::sleep(delay).await;
        }
    }
}

fn api_message(bytes: &[u8]) -> String {
    let Ok(value) = serde_json::from_slice::<Value>(bytes) else {
        return String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned();
    };
    let mut message = value.get("message").and_then(Value::as_str).unwrap_or("no message").to_string();
    if let Some(errors) = value.get("errors").and_then(Value::as_array) {
        let details: Vec<String> = errors
            .iter()
            .map(|e| e.get("message").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| e.to_string()))
            .collect();
        if !details.is_empty() {
            message.push_str(&format!(" ({})", details.join("; ")));
        }
    }
    message
}

fn client_error(what: &str, status: StatusCode, message: String) -> GitHubError {
    let what = what.to_string();
    match status {
        StatusCode::UNAUTHORIZED => GitHubError::Unauthorized { what },
        StatusCode::FORBIDDEN => GitHubError::Forbidden { what, message },
        StatusCode::NOT_FOUND => GitHubError::NotFound { what },
        StatusCode::UNPROCESSABLE_ENTITY => GitHubError::Rejected { what, message },
        other => GitHubError::Protocol { what, message: format!("HTTP {other}: {message}") },
    }
}

impl PullRequestApi for GitHub {
    async fn list_open(&self, base: &str) -> Result<Vec<PullRequest>, GitHubError> {
        let mut all = Vec::new();
        for page in 1..=MAX_PAGES {
            let query = [
                ("state", "open".to_string()),
                ("base", base.to_string()),
                ("per_page", PER_PAGE.to_string()),
                ("page", page.to_string()),
            ];
            let url = self.url("pulls", &query)?;
            let batch: Vec<PullRequest> = self.call("the list of open pull requests", Method::GET, url, None).await?;
            let last = batch.len() < PER_PAGE;
            all.extend(batch);
            if last {
                break;
            }
        }
        Ok(all)
    }

    async fn find_open_by_head(&self, branch: &str) -> Result<Option<PullRequest>, GitHubError> {
        let query = [("state", "open".to_string()), ("head", format!("{}:{branch}", self.owner))];
        let url = self.url("pulls", &query)?;
        let found: Vec<PullRequest> =
            self.call(&format!("the pull requests of branch {branch}"), Method::GET, url, None).await?;
        Ok(found.into_iter().find(|pr| pr.head.branch == branch))
    }

    async fn get(&self, number: u64) -> Result<PullRequest, GitHubError> {
        let url = self.url(&format!("pulls/{number}"), &[])?;
        self.call(&format!("pull request #{number}"), Method::GET, url, None).await
    }

    async fn create(&self, new: &NewPullRequest) -> Result<PullRequest, GitHubError> {
        let url = self.url("pulls", &[])?;
        let body = serde_json::to_value(new).map_err(|e| GitHubError::Config(e.to_string()))?;
        self.call(&format!("a pull request from {}", new.head), Method::POST, url, Some(&body)).await
    }

    async fn update(&self, number: u64, title: &str, body: &str) -> Result<PullRequest, GitHubError> {
        let url = self.url(&format!("pulls/{number}"), &[])?;
        let payload = json!({ "title": title, "body": body });
        self.call(&format!("the update of pull request #{number}"), Method::PATCH, url, Some(&payload)).await
    }

    async fn close(&self, number: u64) -> Result<PullRequest, GitHubError> {
        let url = self.url(&format!("pulls/{number}"), &[])?;
        let payload = json!({ "state": "closed" });
        self.call(&format!("closing pull request #{number}"), Method::PATCH, url, Some(&payload)).await
    }

    async fn comment(&self, number: u64, body: &str) -> Result<(), GitHubError> {
        let url = self.url(&format!("issues/{number}/comments"), &[])?;
        let payload = json!({ "body": body });
        let _: Value = self.call(&format!("a comment on #{number}"), Method::POST, url, Some(&payload)).await?;
        Ok(())
    }

    async fn add_labels(&self, number: u64, labels: &[String]) -> Result<(), GitHubError> {
        if labels.is_empty() {
            return Ok(());
        }
        let url = self.url(&format!("issues/{number}/labels"), &[])?;
        let payload = json!({ "labels": labels });
        let _: Value = self.call(&format!("the labels of #{number}"), Method::POST, url, Some(&payload)).await?;
        Ok(())
    }
}

/// The open pull request that carries `address`: the one the caller has on record (`known`, from
/// its store) while it is still open, otherwise the open pull request into `base` whose body holds
/// the resource's marker (so a lost or fresh store does not duplicate pull requests).
pub async fn find_open_for_resource<A: PullRequestApi>(
    api: &A,
    known: Option<u64>,
    address: &str,
    base: &str,
) -> Result<Option<PullRequest>, GitHubError> {
    if let Some(number) = known {
        match api.get(number).await {
            Ok(pr) if pr.lifecycle() == PullRequestState::Open => return Ok(Some(pr)),
            Ok(_) | Err(GitHubError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    let marker = resource_marker(address);
    let open = api.list_open(base).await?;
    Ok(open.into_iter().find(|pr| pr.body.as_deref().is_some_and(|b| b.lines().any(|l| l.trim() == marker))))
}

/// How new pull requests are opened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PullRequestOptions {
    pub labels: Vec<String>,
    pub draft: bool,
}

/// Whether the pull request was opened or an open one was updated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullRequestAction {
    Created,
    Updated,
}

/// Open the pull request for a pushed `head` branch, or add the story to `existing` (the resource's
/// open pull request, whose branch `commit` was pushed onto): its title follows the latest change,
/// its body gains a section, and a comment says what was added.
pub async fn open_or_update<A: PullRequestApi>(
    api: &A,
    existing: Option<&PullRequest>,
    story: &Story,
    head: &str,
    commit: &str,
    options: &PullRequestOptions,
) -> Result<(PullRequest, PullRequestAction), GitHubError> {
    if let Some(pr) = existing {
        let mut body = pr.body.clone().unwrap_or_default();
        if !body.lines().any(|l| l.trim() == story.marker()) {
            body = format!("{}\n{body}", story.marker());
        }
        body.push_str(&story.update_section());
        if body.chars().count() > MAX_BODY_CHARS {
            body = format!(
                "{}\n\n*Earlier changes on this branch are in the commits and comments; the description kept only the latest.*",
                story.body()
            );
        }
        let updated = api.update(pr.number, &story.title(), &body).await?;
        api.comment(pr.number, &story.update_comment(commit)).await?;
        return Ok((updated, PullRequestAction::Updated));
    }
    // A pull request for this very branch may exist when an earlier run stopped before recording it.
    if let Some(pr) = api.find_open_by_head(head).await? {
        return Ok((pr, PullRequestAction::Created));
    }
    let new = NewPullRequest {
        title: story.title(),
        head: head.to_string(),
        base: story.base_branch.clone(),
        body: story.body(),
        draft: options.draft,
    };
    let pr = api.create(&new).await?;
    api.add_labels(pr.number, &options.labels).await?;
    Ok((pr, PullRequestAction::Created))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked_with_what_is_wrong() {
        let retry = RetryPolicy::default();
        let err = GitHub::new("not a url", "a/b", Secret::new("t"), retry).unwrap_err().to_string();
        assert!(err.contains("publish.api_url"), "{err}");
        let err = GitHub::new("https://api.github.com", "just-a-name", Secret::new("t"), retry).unwrap_err();
        assert!(err.to_string().contains("OWNER/NAME"), "{err}");
        let ok = GitHub::new("https://ghe.example/api/v3", "acme/infra", Secret::new("hunter2"), retry).unwrap();
        assert_eq!(ok.url("pulls", &[]).unwrap().as_str(), "https://ghe.example/api/v3/repos/acme/infra/pulls");
        assert!(!format!("{ok:?}").contains("hunter2"));
    }

    #[test]
    fn merge_state_comes_from_state_and_merged() {
        let mut pr: PullRequest = serde_json::from_value(json!({
            "number": 1, "html_url": "u", "state": "closed", "title": "t", "body": null,
            "merged_at": null, "merge_commit_sha": null,
            "head": {"ref": "h", "sha": "1"}, "base": {"ref": "main", "sha": "2"}
        }))
        .unwrap();
        assert_eq!(pr.lifecycle(), PullRequestState::Closed);
        pr.merged_at = Some("2024-05-01T00:00:00Z".into());
        assert_eq!(pr.lifecycle(), PullRequestState::Merged);
        pr.state = "open".into();
        assert_eq!(pr.lifecycle(), PullRequestState::Open);
    }
}
