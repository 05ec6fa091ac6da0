//! A stand-in for the GitHub REST API on loopback: the real paths, request and response JSON
//! (pull requests, issues, issue comments, labels, collaborators' permissions), bearer
//! authentication, pagination, and a record of every request, so tests assert what was sent as
//! well as what came back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Path, Query, Request, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};

pub const TOKEN: &str = "ghp_test_token_never_logged";

#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub query: String,
    pub body: Value,
}

#[derive(Default)]
pub struct Inner {
    pub pulls: Vec<Value>,
    /// Issues (pull requests share their numbers, as on GitHub).
    pub issues: Vec<Value>,
    /// Collaborators' permission (`admin`, `write`, `read`); anyone else gets 404.
    pub permissions: HashMap<String, String>,
    pub comments: Vec<(u64, String)>,
    pub labels: HashMap<u64, Vec<String>>,
    pub requests: Vec<Recorded>,
    /// Answer this many requests with 502 first.
    pub fail_next: usize,
}

#[derive(Clone, Default)]
pub struct GitHubStandIn {
    pub inner: Arc<Mutex<Inner>>,
    pub base_url: String,
}

type Shared = State<GitHubStandIn>;
type Answer = (StatusCode, Json<Value>);

impl GitHubStandIn {
    /// Serve on a free loopback port, for the lifetime of the test's runtime.
    pub async fn start() -> GitHubStandIn {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = GitHubStandIn {
            base_url: format!("http://{}", listener.local_addr().unwrap()),
            ..GitHubStandIn::default()
        };
        let app = Router::new()
            .route("/repos/{owner}/{repo}/pulls", get(list_pulls).post(create_pull))
            .route("/repos/{owner}/{repo}/pulls/{number}", get(get_pull).patch(update_pull))
            .route("/repos/{owner}/{repo}/issues", get(list_issues).post(create_issue))
            .route("/repos/{owner}/{repo}/issues/{number}", axum::routing::patch(update_issue))
            .route("/repos/{owner}/{repo}/collaborators/{user}/permission", get(permission))
            .route("/repos/{owner}/{repo}/issues/{number}/comments", post(create_comment))
            .route("/repos/{owner}/{repo}/issues/{number}/labels", post(add_labels))
            .route("/repos/{owner}/{repo}/issues/{number}/labels/{name}", axum::routing::delete(remove_label))
            .route_layer(middleware::from_fn_with_state(server.clone(), admit))
            .with_state(server.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        server
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.inner.lock().unwrap().requests.clone()
    }

    /// What GitHub does when `user` presses "Ready for review" on a draft (GraphQL's
    /// `markPullRequestReadyForReview`; the REST API cannot): the pull request as a webhook's
    /// `ready_for_review` delivery carries it.
    pub fn mark_ready(&self, number: u64) -> Value {
        let mut inner = self.inner.lock().unwrap();
        let pr = inner.pulls.iter_mut().find(|p| p["number"] == number).unwrap();
        pr["draft"] = json!(false);
        pr.clone()
    }

    /// What GitHub does when someone presses "Merge" (`maria`; see [`GitHubStandIn::merge_by`]).
    pub fn merge(&self, number: u64) -> Value {
        self.merge_by(number, "maria")
    }

    /// What GitHub does when `user` presses "Merge": a draft cannot be merged (GitHub answers 405
    /// "Pull request is in draft state"), so this panics on one.
    pub fn merge_by(&self, number: u64, user: &str) -> Value {
        let mut inner = self.inner.lock().unwrap();
        let pr = inner.pulls.iter_mut().find(|p| p["number"] == number).unwrap();
        assert_eq!(pr["draft"], json!(false), "GitHub refuses to merge a draft pull request: {pr}");
        pr["merged_by"] = json!({"login": user, "id": 7, "type": "User"});
        pr["state"] = json!("closed");
        pr["merged"] = json!(true);
        pr["merged_at"] = json!("2024-05-02T09:30:00Z");
        pr["closed_at"] = json!("2024-05-02T09:30:00Z");
        pr["merge_commit_sha"] = json!("9f2c1e0d8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e");
        pr.clone()
    }
}

/// In front of every route: records the request, then answers 401 without the token and 502
/// while failures are scheduled, as GitHub would, before the route sees it.
async fn admit(State(server): Shared, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    if let Some(refusal) = refusal(&server, &parts, &body) {
        return refusal.into_response();
    }
    next.run(Request::from_parts(parts, Body::from(body))).await
}

/// Records the request (its body as JSON, null when it has none) and says how GitHub would refuse
/// it, if it would.
fn refusal(server: &GitHubStandIn, request: &Parts, body: &[u8]) -> Option<Answer> {
    let mut inner = server.inner.lock().unwrap();
    inner.requests.push(Recorded {
        method: request.method.to_string(),
        path: request.uri.path().to_string(),
        query: request.uri.query().unwrap_or_default().to_string(),
        body: serde_json::from_slice(body).unwrap_or(Value::Null),
    });
    let headers = &request.headers;
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default();
    if auth != format!("Bearer {TOKEN}") {
        let message = json!({"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"});
        return Some((StatusCode::UNAUTHORIZED, Json(message)));
    }
    let accept = headers.get("accept").and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert_eq!(accept, "application/vnd.github+json");
    if inner.fail_next > 0 {
        inner.fail_next -= 1;
        return Some((StatusCode::BAD_GATEWAY, Json(json!({"message": "Server Error"}))));
    }
    None
}

fn not_found() -> Answer {
    (StatusCode::NOT_FOUND, Json(json!({"message": "Not Found"})))
}

async fn list_pulls(
    State(s): Shared,
    Path((owner, _repo)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Answer {
    let inner = s.inner.lock().unwrap();
    let state = q.get("state").map(String::as_str).unwrap_or("open");
    let per_page: usize = q.get("per_page").and_then(|v| v.parse().ok()).unwrap_or(30);
    let page: usize = q.get("page").and_then(|v| v.parse().ok()).unwrap_or(1);
    let matching: Vec<Value> = inner
        .pulls
        .iter()
        .filter(|p| state == "all" || p["state"] == state)
        .filter(|p| q.get("base").is_none_or(|b| p["base"]["ref"] == b.as_str()))
        .filter(|p| q.get("head").is_none_or(|h| format!("{owner}:{}", p["head"]["ref"].as_str().unwrap()) == *h))
        .map(|p| {
            // The list endpoint has no `merged` field.
            let mut p = p.clone();
            p.as_object_mut().unwrap().remove("merged");
            p
        })
        .collect();
    let page: Vec<Value> = matching.into_iter().skip((page - 1) * per_page).take(per_page).collect();
    (StatusCode::OK, Json(Value::Array(page)))
}

async fn create_pull(State(s): Shared, Path((owner, repo)): Path<(String, String)>, Json(body): Json<Value>) -> Answer {
    let mut inner = s.inner.lock().unwrap();
    let head = body["head"].as_str().unwrap().to_string();
    if inner.pulls.iter().any(|p| p["state"] == "open" && p["head"]["ref"] == head.as_str()) {
        let message = json!({
            "message": "Validation Failed",
            "errors": [{"resource": "PullRequest", "code": "custom", "message": format!("A pull request already exists for {owner}:{head}.")}],
            "documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request"
        });
        return (StatusCode::UNPROCESSABLE_ENTITY, Json(message));
    }
    let number = (inner.pulls.len() + inner.issues.len()) as u64 + 1;
    let pr = json!({
        "url": format!("{}/repos/{owner}/{repo}/pulls/{number}", s.base_url),
        "id": 1000 + number,
        "html_url": format!("https://github.example/{owner}/{repo}/pull/{number}"),
        "number": number,
        "state": "open",
        "locked": false,
        "title": body["title"],
        "user": {"login": "driftback-bot", "id": 1, "type": "Bot"},
        "body": body["body"],
        "labels": [],
        "draft": body["draft"].as_bool().unwrap_or(false),
        "created_at": "2024-05-01T12:10:00Z",
        "updated_at": "2024-05-01T12:10:00Z",
        "closed_at": null,
        "merged_at": null,
        "merge_commit_sha": null,
        "merged": false,
        "merged_by": null,
        "head": {"label": format!("{owner}:{head}"), "ref": head, "sha": "0000000000000000000000000000000000000001"},
        "base": {"label": format!("{owner}:{}", body["base"].as_str().unwrap()), "ref": body["base"], "sha": "0000000000000000000000000000000000000002"}
    });
    inner.pulls.push(pr.clone());
    (StatusCode::CREATED, Json(pr))
}

async fn get_pull(State(s): Shared, Path((_owner, _repo, number)): Path<(String, String, u64)>) -> Answer {
    let inner = s.inner.lock().unwrap();
    match inner.pulls.iter().find(|p| p["number"] == number) {
        Some(pr) => (StatusCode::OK, Json(pr.clone())),
        None => not_found(),
    }
}

async fn update_pull(
    State(s): Shared,
    Path((_owner, _repo, number)): Path<(String, String, u64)>,
    Json(body): Json<Value>,
) -> Answer {
    let mut inner = s.inner.lock().unwrap();
    let Some(pr) = inner.pulls.iter_mut().find(|p| p["number"] == number) else {
        return not_found();
    };
    for key in ["title", "body", "state", "base"] {
        if let Some(v) = body.get(key) {
            pr[key] = v.clone();
        }
    }
    if body.get("state").is_some_and(|s| s == "closed") {
        pr["closed_at"] = json!("2024-05-03T08:00:00Z");
    }
    (StatusCode::OK, Json(pr.clone()))
}

async fn create_comment(
    State(s): Shared,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    Json(body): Json<Value>,
) -> Answer {
    let mut inner = s.inner.lock().unwrap();
    inner.comments.push((number, body["body"].as_str().unwrap().to_string()));
    let id = inner.comments.len();
    let comment = json!({
        "id": id,
        "html_url": format!("https://github.example/{owner}/{repo}/pull/{number}#issuecomment-{id}"),
        "body": body["body"],
        "user": {"login": "driftback-bot", "id": 1, "type": "Bot"},
        "created_at": "2024-05-01T12:20:00Z"
    });
    (StatusCode::CREATED, Json(comment))
}

async fn add_labels(
    State(s): Shared,
    Path((_owner, _repo, number)): Path<(String, String, u64)>,
    Json(body): Json<Value>,
) -> Answer {
    let mut inner = s.inner.lock().unwrap();
    let labels = inner.labels.entry(number).or_default();
    for label in body["labels"].as_array().unwrap() {
        let label = label.as_str().unwrap().to_string();
        if !labels.contains(&label) {
            labels.push(label);
        }
    }
    label_list(labels)
}

/// An issue's labels as GitHub lists them.
fn label_list(labels: &[String]) -> Answer {
    let answer: Vec<Value> = labels
        .iter()
        .enumerate()
        .map(|(i, name)| json!({"id": i + 1, "name": name, "color": "ededed", "default": false}))
        .collect();
    (StatusCode::OK, Json(Value::Array(answer)))
}

/// `DELETE .../issues/{number}/labels/{name}`: the remaining labels, or 404 ("Label does not
/// exist") when the issue does not carry it, as GitHub answers.
async fn remove_label(
    State(s): Shared,
    Path((_owner, _repo, number, name)): Path<(String, String, u64, String)>,
) -> Answer {
    let mut inner = s.inner.lock().unwrap();
    let labels = inner.labels.entry(number).or_default();
    let Some(at) = labels.iter().position(|l| *l == name) else {
        return (StatusCode::NOT_FOUND, Json(json!({"message": "Label does not exist"})));
    };
    labels.remove(at);
    label_list(labels)
}

async fn list_issues(State(s): Shared, Query(q): Query<HashMap<String, String>>) -> Answer {
    let inner = s.inner.lock().unwrap();
    let state = q.get("state").map(String::as_str).unwrap_or("open");
    let per_page: usize = q.get("per_page").and_then(|v| v.parse().ok()).unwrap_or(30);
    let page: usize = q.get("page").and_then(|v| v.parse().ok()).unwrap_or(1);
    let wanted: Vec<&str> = q.get("labels").map(|l| l.split(',').collect()).unwrap_or_default();
    let labels_of = |number: &Value| -> Vec<String> {
        number.as_u64().and_then(|n| inner.labels.get(&n)).cloned().unwrap_or_default()
    };
    // The issues endpoint lists pull requests too, marked with a `pull_request` object.
    let pulls = inner.pulls.iter().map(|p| {
        let mut p = p.clone();
        p["pull_request"] = json!({"url": p["url"].clone()});
        p
    });
    let matching: Vec<Value> = inner
        .issues
        .iter()
        .cloned()
        .chain(pulls)
        .filter(|i| state == "all" || i["state"] == state)
        .filter(|i| wanted.iter().all(|w| labels_of(&i["number"]).iter().any(|l| l == w)))
        .map(|mut i| {
            let labels: Vec<Value> = labels_of(&i["number"]).into_iter().map(|name| json!({"name": name})).collect();
            i["labels"] = Value::Array(labels);
            i
        })
        .collect();
    let page: Vec<Value> = matching.into_iter().skip((page - 1) * per_page).take(per_page).collect();
    (StatusCode::OK, Json(Value::Array(page)))
}

async fn create_issue(
    State(s): Shared,
    Path((owner, repo)): Path<(String, String)>,
    Json(body): Json<Value>,
) -> Answer {
    let mut inner = s.inner.lock().unwrap();
    let number = (inner.pulls.len() + inner.issues.len()) as u64 + 1;
    let issue = json!({
        "url": format!("{}/repos/{owner}/{repo}/issues/{number}", s.base_url),
        "id": 5000 + number,
        "html_url": format!("https://github.example/{owner}/{repo}/issues/{number}"),
        "number": number,
        "state": "open",
        "state_reason": null,
        "title": body["title"],
        "body": body["body"],
        "user": {"login": "driftback-bot", "id": 1, "type": "Bot"},
        "labels": [],
        "comments": 0,
        "created_at": "2024-05-01T12:10:00Z",
        "updated_at": "2024-05-01T12:10:00Z",
        "closed_at": null
    });
    let labels: Vec<String> = body["labels"]
        .as_array()
        .map(|l| l.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    inner.labels.insert(number, labels);
    inner.issues.push(issue.clone());
    (StatusCode::CREATED, Json(issue))
}

async fn update_issue(
    State(s): Shared,
    Path((_owner, _repo, number)): Path<(String, String, u64)>,
    Json(body): Json<Value>,
) -> Answer {
    let mut inner = s.inner.lock().unwrap();
    let Some(issue) = inner.issues.iter_mut().find(|i| i["number"] == number) else {
        return not_found();
    };
    for key in ["title", "body", "state", "state_reason"] {
        if let Some(v) = body.get(key) {
            issue[key] = v.clone();
        }
    }
    if body.get("state").is_some_and(|s| s == "closed") {
        issue["closed_at"] = json!("2024-05-03T08:00:00Z");
    }
    (StatusCode::OK, Json(issue.clone()))
}

async fn permission(State(s): Shared, Path((_owner, _repo, user)): Path<(String, String, String)>) -> Answer {
    let inner = s.inner.lock().unwrap();
    match inner.permissions.get(&user) {
        Some(permission) => (
            StatusCode::OK,
            Json(json!({"permission": permission, "role_name": permission, "user": {"login": user, "type": "User"}})),
        ),
        None => not_found(),
    }
}
