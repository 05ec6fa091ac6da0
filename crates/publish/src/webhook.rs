//! GitHub's `pull_request` and `issue_comment` webhooks as an axum [`Router`] the daemon mounts: a
//! delivery is accepted only with a valid `X-Hub-Signature-256` (HMAC-SHA256 of the body with the
//! shared secret); a closed, merged or reopened pull request is handed to the caller's
//! [`PullRequestEvents`] to record, and a new comment holding a `/driftback` command to answer.

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::Secret;
use crate::commands::{self, CommentCommand};
use crate::github::{PullRequest, PullRequestState};

/// The path the router serves.
pub const WEBHOOK_PATH: &str = "/webhooks/github";

/// A pull request that changed state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PullRequestChange {
    pub number: u64,
    pub state: PullRequestState,
    pub html_url: String,
    pub head_branch: String,
    pub head_sha: String,
    pub merge_commit_sha: Option<String>,
    pub merged_at: Option<String>,
    /// Who merged it, when it was merged.
    #[serde(default)]
    pub merged_by: Option<String>,
    /// Whether it is (still) a draft.
    #[serde(default)]
    pub draft: bool,
    /// Its description: a held draft's carries the resource's escalation marker and its change set.
    #[serde(default)]
    pub body: Option<String>,
}

impl From<&PullRequest> for PullRequestChange {
    fn from(pr: &PullRequest) -> Self {
        PullRequestChange {
            number: pr.number,
            state: pr.lifecycle(),
            html_url: pr.html_url.clone(),
            head_branch: pr.head.branch.clone(),
            head_sha: pr.head.sha.clone(),
            merge_commit_sha: pr.merge_commit_sha.clone(),
            merged_at: pr.merged_at.clone(),
            merged_by: pr.merged_by.as_ref().map(|u| u.login.clone()),
            draft: pr.draft,
            body: pr.body.clone(),
        }
    }
}

/// Why a sink could not take a delivery: the sink's own error (its store's, its GitHub client's),
/// which this crate only logs.
pub type SinkError = Box<dyn std::error::Error + Send + Sync>;

/// Where state changes go (the daemon records them in its store). `Err(reason)` answers 500, so the
/// delivery shows as failed in GitHub and can be redelivered.
pub trait PullRequestEvents: Send + Sync + 'static {
    fn record(&self, change: PullRequestChange) -> impl Future<Output = Result<(), SinkError>> + Send;

    /// A `/driftback` command written by a person (bots' comments never reach here). The sink
    /// checks who wrote it before doing anything. By default commands are not answered.
    fn command(&self, command: CommentCommand) -> impl Future<Output = Result<(), SinkError>> + Send {
        let _ = command;
        async { Ok(()) }
    }
}

struct Hook<S> {
    secret: Secret,
    sink: Arc<S>,
}

/// The webhook router, serving `POST /webhooks/github`.
pub fn router<S: PullRequestEvents>(secret: Secret, sink: Arc<S>) -> Router {
    Router::new().route(WEBHOOK_PATH, post(deliver::<S>)).with_state(Arc::new(Hook { secret, sink }))
}

/// The `X-Hub-Signature-256` value GitHub sends for `body`.
pub fn signature(secret: &Secret, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.expose().as_bytes()).expect("HMAC takes keys of any length");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// Whether `header` is the signature of `body`, compared in constant time.
pub fn verify(secret: &Secret, body: &[u8], header: &str) -> bool {
    let Some(hex_digest) = header.trim().strip_prefix("sha256=") else { return false };
    let Ok(expected) = hex::decode(hex_digest) else { return false };
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.expose().as_bytes()).expect("HMAC takes keys of any length");
    mac.update(body);
    mac.verify_slice(&expected).is_ok()
}

#[derive(Deserialize)]
struct Delivery {
    action: String,
    pull_request: PullRequest,
    /// Who did what the delivery reports (GitHub sends it with every event).
    #[serde(default)]
    sender: Option<User>,
}

async fn deliver<S: PullRequestEvents>(
    State(hook): State<Arc<Hook<S>>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, String) {
    let Some(sig) = headers.get("x-hub-signature-256").and_then(|v| v.to_str().ok()) else {
        return (StatusCode::UNAUTHORIZED, "missing X-Hub-Signature-256\n".into());
    };
    if !verify(&hook.secret, &body, sig) {
        tracing::warn!("webhook delivery with a bad signature refused");
        return (StatusCode::UNAUTHORIZED, "bad signature\n".into());
    }
    let event = headers.get("x-github-event").and_then(|v| v.to_str().ok()).unwrap_or_default();
    match event {
        "ping" => return (StatusCode::OK, "pong\n".into()),
        "pull_request" => {}
        "issue_comment" => return comment(&hook, &body).await,
        other => return (StatusCode::ACCEPTED, format!("ignored event {other:?}\n")),
    }
    let delivery: Delivery = match serde_json::from_slice(&body) {
        Ok(d) => d,
        Err(e) => return (StatusCode::BAD_REQUEST, format!("not a pull_request payload: {e}\n")),
    };
    if !matches!(delivery.action.as_str(), "closed" | "reopened") {
        return (StatusCode::ACCEPTED, format!("ignored action {:?}\n", delivery.action));
    }
    let mut change = PullRequestChange::from(&delivery.pull_request);
    if change.state == PullRequestState::Merged && change.merged_by.is_none() {
        change.merged_by = delivery.sender.map(|s| s.login);
    }
    let (number, state) = (change.number, change.state);
    match hook.sink.record(change).await {
        Ok(()) => {
            tracing::info!(number, state = state.as_str(), "pull request state recorded from webhook");
            (StatusCode::OK, format!("recorded #{number} as {}\n", state.as_str()))
        }
        Err(reason) => {
            tracing::error!(number, %reason, "recording a pull request state failed");
            (StatusCode::INTERNAL_SERVER_ERROR, "could not record the change; redeliver later\n".into())
        }
    }
}

#[derive(Deserialize)]
struct CommentDelivery {
    action: String,
    issue: CommentedIssue,
    comment: Comment,
}

#[derive(Deserialize)]
struct CommentedIssue {
    number: u64,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    pull_request: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Comment {
    #[serde(default)]
    body: Option<String>,
    user: User,
}

#[derive(Deserialize)]
struct User {
    login: String,
    #[serde(rename = "type", default)]
    kind: String,
}

async fn comment<S: PullRequestEvents>(hook: &Hook<S>, body: &[u8]) -> (StatusCode, String) {
    let delivery: CommentDelivery = match serde_json::from_slice(body) {
        Ok(d) => d,
        Err(e) => return (StatusCode::BAD_REQUEST, format!("not an issue_comment payload: {e}\n")),
    };
    if delivery.action != "created" {
        return (StatusCode::ACCEPTED, format!("ignored action {:?}\n", delivery.action));
    }
    // driftback's own replies (and any bot's) are never commands: no loops.
    if delivery.comment.user.kind == "Bot" {
        return (StatusCode::ACCEPTED, "ignored a bot's comment\n".into());
    }
    let Some(command) = commands::parse(delivery.comment.body.as_deref().unwrap_or_default()) else {
        return (StatusCode::ACCEPTED, "no command\n".into());
    };
    let number = delivery.issue.number;
    let request = CommentCommand {
        number,
        on_pull_request: delivery.issue.pull_request.is_some(),
        thread_body: delivery.issue.body.unwrap_or_default(),
        user: delivery.comment.user.login,
        command,
    };
    match hook.sink.command(request).await {
        Ok(()) => (StatusCode::OK, format!("answered the command on #{number}\n")),
        Err(reason) => {
            tracing::error!(number, %reason, "answering a comment command failed");
            (StatusCode::INTERNAL_SERVER_ERROR, "could not answer the command; redeliver later\n".into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_match_githubs_documented_example() {
        // The example in GitHub's "Validating webhook deliveries" documentation.
        let secret = Secret::new("It's a Secret to Everybody");
        let expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        assert_eq!(signature(&secret, b"Hello, World!"), expected);
        assert!(verify(&secret, b"Hello, World!", expected));
        assert!(!verify(&secret, b"Hello, World?", expected));
        assert!(!verify(&Secret::new("other"), b"Hello, World!", expected));
        assert!(!verify(&secret, b"Hello, World!", "sha1=757107"));
        assert!(!verify(&secret, b"Hello, World!", "sha256=zz"));
    }
}
