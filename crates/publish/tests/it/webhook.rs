//! The webhook router over a real socket: signed deliveries are recorded, unsigned or forged ones
//! are refused.

use std::sync::{Arc, Mutex};

use driftback_publish::Secret;
use driftback_publish::github::PullRequestState;
use driftback_publish::webhook::{PullRequestChange, PullRequestEvents, SinkError, WEBHOOK_PATH, router, signature};
use serde_json::{Value, json};

#[derive(Default)]
pub struct Recorder(pub Mutex<Vec<PullRequestChange>>);

impl PullRequestEvents for Recorder {
    async fn record(&self, change: PullRequestChange) -> Result<(), SinkError> {
        self.0.lock().unwrap().push(change);
        Ok(())
    }
}

/// Serve the router on a free loopback port; returns its URL.
pub async fn serve(secret: &str, recorder: Arc<Recorder>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}{WEBHOOK_PATH}", listener.local_addr().unwrap());
    let app = router(Secret::new(secret), recorder);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// Deliver `payload` as GitHub does, signed with `secret` (or not at all).
pub async fn deliver(url: &str, event: &str, payload: &Value, secret: Option<&str>) -> (u16, String) {
    let body = serde_json::to_vec(payload).unwrap();
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("x-github-event", event)
        .header("x-github-delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958");
    if let Some(secret) = secret {
        request = request.header("x-hub-signature-256", signature(&Secret::new(secret), &body));
    }
    let response = request.body(body).send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

pub fn closed_payload(pr: &Value) -> Value {
    json!({
        "action": "closed",
        "number": pr["number"],
        "pull_request": pr,
        "repository": {"full_name": "acme/infra"},
        "sender": {"login": "bob"}
    })
}

#[tokio::test]
async fn only_signed_deliveries_are_recorded() {
    let recorder = Arc::new(Recorder::default());
    let url = serve("webhook-secret", recorder.clone()).await;
    let pr = json!({
        "number": 7, "html_url": "https://github.example/acme/infra/pull/7", "state": "closed",
        "title": "drift: x", "body": "b", "draft": false, "merged": true,
        "merged_at": "2024-05-02T09:30:00Z", "merge_commit_sha": "abc",
        "head": {"ref": "driftback/aws_instance.web-1", "sha": "1"}, "base": {"ref": "main", "sha": "2"}
    });
    let payload = closed_payload(&pr);

    assert_eq!(deliver(&url, "pull_request", &payload, None).await.0, 401);
    assert_eq!(deliver(&url, "pull_request", &payload, Some("wrong-secret")).await.0, 401);
    assert!(recorder.0.lock().unwrap().is_empty());

    assert_eq!(
        deliver(&url, "ping", &json!({"zen": "Keep it logically awesome."}), Some("webhook-secret")).await.0,
        200
    );
    let opened = json!({"action": "opened", "pull_request": pr});
    assert_eq!(deliver(&url, "pull_request", &opened, Some("webhook-secret")).await.0, 202);
    let (status, text) = deliver(&url, "pull_request", &payload, Some("webhook-secret")).await;
    assert_eq!(status, 200, "{text}");
    let recorded = recorder.0.lock().unwrap().clone();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].number, 7);
    assert_eq!(recorded[0].state, PullRequestState::Merged);
    assert_eq!(recorded[0].merge_commit_sha.as_deref(), Some("abc"));

    let mut unmerged = pr.clone();
    unmerged["merged"] = json!(false);
    unmerged["merged_at"] = Value::Null;
    deliver(&url, "pull_request", &closed_payload(&unmerged), Some("webhook-secret")).await;
    assert_eq!(recorder.0.lock().unwrap()[1].state, PullRequestState::Closed);
}
