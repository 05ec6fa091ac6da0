//! A scripted OpenAI-compatible chat-completions server, for tests of the agent and of the binary.
//!
//! It listens on a loopback port, answers `POST /v1/chat/completions` with the next reply of its
//! script in the real wire format (assistant messages with `tool_calls`, `usage` counted with the
//! o200k_base tokenizer), and records every request body so tests can assert what the agent sent.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use crate::context::count_tokens;

/// One answer of the script.
#[derive(Debug, Clone)]
pub enum Reply {
    /// An assistant message calling these tools: `(name, raw JSON arguments)`.
    Tools(Vec<(String, String)>),
    /// An assistant message with text and no tool call.
    Text(String),
    /// Wait this long, then answer with the inner reply.
    Delayed(Duration, Box<Reply>),
    /// This HTTP status with this body.
    Status(u16, String),
    /// The inner reply, reporting this usage (prompt, completion tokens) whatever was exchanged:
    /// an endpoint that under-reports.
    Usage(u32, u32, Box<Reply>),
}

impl Reply {
    /// A single tool call, arguments given as JSON.
    pub fn call(name: &str, arguments: Value) -> Reply {
        Reply::Tools(vec![(name.to_string(), arguments.to_string())])
    }
}

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Value>>,
    authorizations: Mutex<Vec<String>>,
}

/// The running server; stopped when dropped.
pub struct ScriptedModel {
    base_url: String,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedModel").field("base_url", &self.base_url).finish()
    }
}

impl ScriptedModel {
    /// Start serving `script` on a free loopback port, on a thread of its own (usable from
    /// synchronous tests and from tests that run the binary).
    pub fn start(script: Vec<Reply>) -> ScriptedModel {
        let shared = Arc::new(Shared { script: Mutex::new(script.into()), ..Shared::default() });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        listener.set_nonblocking(true).expect("non-blocking listener");
        let port = listener.local_addr().expect("local address").port();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let app = axum::Router::new().route("/v1/chat/completions", post(complete)).with_state(shared.clone());
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
                axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = rx.await;
                    })
                    .await
                    .expect("scripted model serves");
            });
        });
        ScriptedModel {
            base_url: format!("http://127.0.0.1:{port}/v1"),
            shared,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    /// The API base to configure the agent with.
    pub fn base_url(&self) -> String {
        self.base_url.clone()
    }

    /// Every request body received, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.shared.requests.lock().expect("requests").clone()
    }

    /// The `Authorization` header of every request.
    pub fn authorizations(&self) -> Vec<String> {
        self.shared.authorizations.lock().expect("authorizations").clone()
    }

    /// Replies not yet given.
    pub fn remaining(&self) -> usize {
        self.shared.script.lock().expect("script").len()
    }
}

impl Drop for ScriptedModel {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn complete(State(shared): State<Arc<Shared>>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    shared.authorizations.lock().expect("authorizations").push(auth);
    shared.requests.lock().expect("requests").push(body.clone());
    let number = shared.requests.lock().expect("requests").len();
    let mut reply = shared.script.lock().expect("script").pop_front();
    let mut reported = None;
    loop {
        match reply {
            Some(Reply::Delayed(wait, inner)) => {
                tokio::time::sleep(wait).await;
                reply = Some(*inner);
            }
            Some(Reply::Usage(prompt, completion, inner)) => {
                reported = Some((prompt, completion));
                reply = Some(*inner);
            }
            _ => break,
        }
    }
    let prompt_tokens = count_tokens(&body["messages"].to_string());
    let message = match reply {
        None => {
            let error = json!({"error": {"message": "the script is exhausted", "type": "invalid_request_error", "param": null, "code": null}});
            return (StatusCode::BAD_REQUEST, Json(error)).into_response();
        }
        Some(Reply::Status(status, text)) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return (status, [("content-type", "application/json")], text).into_response();
        }
        Some(Reply::Text(text)) => json!({"role": "assistant", "content": text}),
        Some(Reply::Tools(calls)) => {
            let calls: Vec<Value> = calls
                .iter()
                .enumerate()
                .map(|(i, (name, arguments))| {
                    json!({"id": format!("call_{number}_{i}"), "type": "function", "function": {"name": name, "arguments": arguments}})
                })
                .collect();
            json!({"role": "assistant", "content": null, "tool_calls": calls})
        }
        Some(Reply::Delayed(..) | Reply::Usage(..)) => unreachable!("unwrapped above"),
    };
    let completion_tokens = count_tokens(&message.to_string());
    let (prompt_tokens, completion_tokens) =
        reported.map(|(p, c)| (p as usize, c as usize)).unwrap_or((prompt_tokens, completion_tokens));
    let finish = if message.get("tool_calls").is_some() { "tool_calls" } else { "stop" };
    Json(json!({
        "id": format!("chatcmpl-{number}"),
        "object": "chat.completion",
        "created": 1_700_000_000u32,
        "model": body["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": null}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens}
    }))
    .into_response()
}
