//! The OpenAI-compatible embedder against an HTTP server in the test that speaks the real
//! `/v1/embeddings` wire format and records what it was sent.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use driftback_embed::{EmbedConfig, EmbedError, Embedder, EmbedderKind, OpenAiEmbedder, OpenAiSettings};
use serde_json::{Value, json};

/// How the server answers.
#[derive(Clone, Copy)]
enum Mode {
    /// Vectors of the requested (or 4) dimensions, listed in reverse order of their index.
    Good,
    /// Vectors one component too long.
    WrongLength,
    /// HTTP 429 with OpenAI's error body.
    RateLimited,
}

/// Each request's Authorization header and JSON body.
type Recorded = Arc<Mutex<Vec<(Option<String>, Value)>>>;

#[derive(Clone)]
struct Server {
    mode: Mode,
    requests: Recorded,
}

/// A vector that depends on the text, so the test can tell which input it belongs to.
fn vector_of(text: &str, dimension: usize) -> Vec<f32> {
    (0..dimension).map(|i| (text.len() * (i + 1)) as f32 + if i == 0 { 0.5 } else { 0.0 }).collect()
}

async fn embeddings(
    State(server): State<Server>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
    server.requests.lock().unwrap().push((auth, body.clone()));
    let inputs: Vec<String> = match &body["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items.iter().map(|v| v.as_str().unwrap().to_owned()).collect(),
        other => panic!("unexpected input {other}"),
    };
    let dimension = body["dimensions"].as_u64().unwrap_or(4) as usize;
    match server.mode {
        Mode::RateLimited => (
            StatusCode::TOO_MANY_REQUESTS,
            Json(json!({"error": {"message": "Rate limit reached for text-embedding-3-small", "type": "requests",
                                  "param": null, "code": "rate_limit_exceeded"}})),
        ),
        Mode::Good | Mode::WrongLength => {
            let extra = usize::from(matches!(server.mode, Mode::WrongLength));
            let mut data: Vec<Value> = inputs
                .iter()
                .enumerate()
                .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": vector_of(t, dimension + extra)}))
                .collect();
            data.reverse();
            let tokens: usize = inputs.iter().map(|t| t.split_whitespace().count()).sum();
            (
                StatusCode::OK,
                Json(json!({"object": "list", "data": data, "model": body["model"],
                            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})),
            )
        }
    }
}

async fn serve(mode: Mode) -> (String, Server) {
    let server = Server { mode, requests: Arc::default() };
    let app = axum::Router::new().route("/v1/embeddings", post(embeddings)).with_state(server.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, server)
}

fn settings(base_url: &str, dimension: usize, request_dimensions: bool) -> OpenAiSettings {
    OpenAiSettings {
        base_url: base_url.to_owned(),
        model: "text-embedding-3-small".into(),
        dimension,
        request_dimensions,
        api_key: "sk-test-123".into(),
        timeout: Duration::from_secs(10),
    }
}

#[tokio::test]
async fn vectors_come_back_in_input_order_and_the_request_is_openais() {
    let (url, server) = serve(Mode::Good).await;
    let e = OpenAiEmbedder::new(&settings(&url, 4, false)).unwrap();
    let texts = vec!["api:PutBucketTagging".to_owned(), "a".to_owned(), "service:ec2 api:RunInstances".to_owned()];
    let vectors = e.embed(&texts).await.unwrap();
    assert_eq!(vectors, texts.iter().map(|t| vector_of(t, 4)).collect::<Vec<_>>());
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 1);
    let (auth, body) = &requests[0];
    assert_eq!(auth.as_deref(), Some("Bearer sk-test-123"));
    assert_eq!(body["model"], "text-embedding-3-small");
    assert_eq!(body["input"], json!(texts));
    assert!(body.get("dimensions").is_none(), "dimensions not sent unless asked: {body}");
    assert_eq!(e.name(), "openai:text-embedding-3-small");
}

#[tokio::test]
async fn dimensions_are_requested_when_configured_and_large_inputs_are_batched() {
    let (url, server) = serve(Mode::Good).await;
    let e = OpenAiEmbedder::new(&settings(&url, 6, true)).unwrap();
    let texts: Vec<String> = (0..300).map(|i| format!("text number {i}")).collect();
    let vectors = e.embed(&texts).await.unwrap();
    assert_eq!(vectors.len(), 300);
    assert_eq!(vectors[299], vector_of(&texts[299], 6));
    let requests = server.requests.lock().unwrap().clone();
    let sizes: Vec<usize> = requests.iter().map(|(_, b)| b["input"].as_array().unwrap().len()).collect();
    assert_eq!(sizes, [128, 128, 44]);
    assert!(requests.iter().all(|(_, b)| b["dimensions"] == 6));
}

#[tokio::test]
async fn a_vector_of_another_length_is_refused_with_the_fix() {
    let (url, _server) = serve(Mode::WrongLength).await;
    let e = OpenAiEmbedder::new(&settings(&url, 4, false)).unwrap();
    let err = e.embed(&["x".to_owned()]).await.unwrap_err();
    assert!(matches!(err, EmbedError::Dimension { expected: 4, got: 5, .. }), "{err:?}");
    assert!(err.to_string().contains("set embed.dimension = 5"), "{err}");
}

#[tokio::test]
async fn endpoint_errors_carry_the_servers_message() {
    let (url, _server) = serve(Mode::RateLimited).await;
    let e = OpenAiEmbedder::new(&settings(&url, 4, false)).unwrap();
    let err = e.embed(&["x".to_owned()]).await.unwrap_err();
    assert!(matches!(err, EmbedError::Endpoint { .. }), "{err:?}");
    assert!(err.to_string().contains("Rate limit reached") && err.to_string().contains(&url), "{err}");

    // Nothing listening at all.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let e = OpenAiEmbedder::new(&settings(&format!("http://{closed}/v1"), 4, false)).unwrap();
    assert!(matches!(e.embed(&["x".to_owned()]).await, Err(EmbedError::Endpoint { .. })));
}

#[tokio::test]
async fn configured_from_the_embed_section_without_a_key() {
    let (url, server) = serve(Mode::Good).await;
    // A key variable that is not set (local endpoints need no key): no key is sent.
    let config = EmbedConfig {
        kind: EmbedderKind::Openai,
        dimension: Some(4),
        base_url: url,
        model: "nomic-embed-text".into(),
        api_key_env: "DRIFTBACK_TEST_EMBED_KEY_THAT_IS_NEVER_SET".into(),
        ..EmbedConfig::default()
    };
    let e = Embedder::from_config(&config).unwrap();
    assert_eq!(e.name(), "openai:nomic-embed-text");
    let v = e.embed_one("api:CreateQueue").await.unwrap();
    assert_eq!(v, vector_of("api:CreateQueue", 4));
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(requests[0].1["model"], "nomic-embed-text");
    let auth = requests[0].0.as_deref().unwrap_or("");
    assert!(auth.trim_end() == "Bearer" || auth.is_empty(), "no key sent: {auth:?}");
}
