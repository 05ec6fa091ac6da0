//! A stand-in for the HCP Terraform / Terraform Enterprise API on loopback, speaking its JSON:API
//! wire format: workspaces by name (`GET /api/v2/organizations/{org}/workspaces/{name}`), the
//! workspace list with `search[tags]`/`search[name]` and `page[number]` pagination, and
//! `GET /api/v2/workspaces/{id}/current-state-version` with its `hosted-state-download-url`,
//! which points at a second listener standing in for the archivist (pre-signed: no token).
//! Bearer authentication on the API; every request is recorded with its Authorization header.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Path, Query, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

pub const TOKEN: &str = "hcp-test-token.atlasv1.never-logged";

#[derive(Debug, Clone)]
pub struct Recorded {
    pub host: &'static str,
    pub path: String,
    pub query: String,
    pub authorization: Option<String>,
}

#[derive(Debug, Clone)]
pub struct HcpWorkspace {
    pub id: String,
    pub name: String,
    pub tags: Vec<String>,
    /// `(state version id, serial, state JSON)`; `None`: the workspace has no state yet.
    pub state: Option<(String, u64, String)>,
}

#[derive(Default)]
pub struct Inner {
    pub organization: String,
    pub workspaces: Vec<HcpWorkspace>,
    pub requests: Vec<Recorded>,
}

#[derive(Clone, Default)]
pub struct HcpStandIn {
    pub inner: Arc<Mutex<Inner>>,
    pub base_url: String,
    pub archivist_url: String,
}

type Shared = State<HcpStandIn>;

impl HcpStandIn {
    pub async fn start(organization: &str, workspaces: Vec<HcpWorkspace>) -> HcpStandIn {
        let api = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let archivist = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = HcpStandIn {
            inner: Arc::new(Mutex::new(Inner { organization: organization.into(), workspaces, requests: vec![] })),
            base_url: format!("http://{}", api.local_addr().unwrap()),
            archivist_url: format!("http://{}", archivist.local_addr().unwrap()),
        };
        let app = Router::new()
            .route("/api/v2/organizations/{org}/workspaces", get(list_workspaces))
            .route("/api/v2/organizations/{org}/workspaces/{name}", get(show_workspace))
            .route("/api/v2/workspaces/{id}/current-state-version", get(current_state_version))
            .route_layer(middleware::from_fn_with_state(server.clone(), authenticate))
            .with_state(server.clone());
        let files = Router::new().route("/v1/object/{id}", get(download)).with_state(server.clone());
        tokio::spawn(async move { axum::serve(api, app).await.unwrap() });
        tokio::spawn(async move { axum::serve(archivist, files).await.unwrap() });
        server
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.inner.lock().unwrap().requests.clone()
    }

    fn record(&self, host: &'static str, request: &Request) {
        self.inner.lock().unwrap().requests.push(Recorded {
            host,
            path: request.uri().path().to_string(),
            query: request.uri().query().unwrap_or_default().to_string(),
            authorization: request.headers().get("authorization").and_then(|v| v.to_str().ok()).map(str::to_string),
        });
    }
}

fn jsonapi(status: StatusCode, body: Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/vnd.api+json")], body.to_string()).into_response()
}

fn not_found() -> Response {
    jsonapi(StatusCode::NOT_FOUND, json!({"errors": [{"status": "404", "title": "not found"}]}))
}

async fn authenticate(State(server): Shared, request: Request, next: Next) -> Response {
    server.record("api", &request);
    let auth = request.headers().get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default();
    if auth != format!("Bearer {TOKEN}") {
        return jsonapi(StatusCode::UNAUTHORIZED, json!({"errors": [{"status": "401", "title": "unauthorized"}]}));
    }
    next.run(request).await
}

fn workspace_json(ws: &HcpWorkspace, org: &str) -> Value {
    json!({
        "id": ws.id,
        "type": "workspaces",
        "attributes": {"name": ws.name, "tag-names": ws.tags, "execution-mode": "remote", "locked": false},
        "relationships": {"organization": {"data": {"id": org, "type": "organizations"}}},
        "links": {"self": format!("/api/v2/organizations/{org}/workspaces/{}", ws.name)}
    })
}

async fn show_workspace(State(server): Shared, Path((org, name)): Path<(String, String)>) -> Response {
    let inner = server.inner.lock().unwrap();
    if org != inner.organization {
        return not_found();
    }
    match inner.workspaces.iter().find(|w| w.name == name) {
        Some(ws) => jsonapi(StatusCode::OK, json!({"data": workspace_json(ws, &org)})),
        None => not_found(),
    }
}

/// One workspace a page, so a client that ignores pagination sees only the first.
async fn list_workspaces(
    State(server): Shared,
    Path(org): Path<String>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let inner = server.inner.lock().unwrap();
    if org != inner.organization {
        return not_found();
    }
    let tags: Vec<&str> = query.get("search[tags]").map(|t| t.split(',').collect()).unwrap_or_default();
    let name = query.get("search[name]").cloned().unwrap_or_default();
    let matching: Vec<&HcpWorkspace> = inner
        .workspaces
        .iter()
        .filter(|w| tags.iter().all(|t| w.tags.iter().any(|wt| wt == t)))
        .filter(|w| w.name.contains(&name))
        .collect();
    let page: usize = query.get("page[number]").and_then(|p| p.parse().ok()).unwrap_or(1);
    let total = matching.len();
    let data: Vec<Value> = matching.iter().skip(page - 1).take(1).map(|w| workspace_json(w, &org)).collect();
    let next = if page < total { json!(page + 1) } else { Value::Null };
    jsonapi(
        StatusCode::OK,
        json!({"data": data, "meta": {"pagination": {
            "current-page": page, "page-size": 1, "prev-page": if page > 1 { json!(page - 1) } else { Value::Null },
            "next-page": next, "total-pages": total.max(1), "total-count": total}}}),
    )
}

async fn current_state_version(State(server): Shared, Path(id): Path<String>) -> Response {
    let inner = server.inner.lock().unwrap();
    let Some(ws) = inner.workspaces.iter().find(|w| w.id == id) else { return not_found() };
    let Some((sv, serial, _)) = &ws.state else { return not_found() };
    jsonapi(
        StatusCode::OK,
        json!({"data": {
            "id": sv,
            "type": "state-versions",
            "attributes": {
                "created-at": "2026-11-25T10:00:00.000Z",
                "serial": serial,
                "status": "finalized",
                "state-version": 4,
                "terraform-version": "1.9.5",
                "resources-processed": true,
                "hosted-state-download-url": format!("{}/v1/object/{sv}", server.archivist_url),
                "hosted-json-state-download-url": format!("{}/v1/object/{sv}-json", server.archivist_url)
            },
            "relationships": {"workspace": {"data": {"id": ws.id, "type": "workspaces"}}},
            "links": {"self": format!("/api/v2/state-versions/{sv}")}
        }}),
    )
}

async fn download(State(server): Shared, Path(object): Path<String>, request: Request) -> Response {
    server.record("archivist", &request);
    let inner = server.inner.lock().unwrap();
    let state = inner
        .workspaces
        .iter()
        .filter_map(|w| w.state.as_ref())
        .find(|(sv, _, _)| *sv == object)
        .map(|(_, _, text)| text.clone());
    match state {
        Some(text) => (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], text).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}
