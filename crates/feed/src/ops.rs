//! The operations endpoint: `/healthz`, `/readyz`, `/metrics`.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use metrics_exporter_prometheus::PrometheusHandle;

use crate::{FeedError, Shutdown};

/// Why a readiness check failed: the checked service's own error (the store's, the queue's).
pub type ProbeError = Box<dyn std::error::Error + Send + Sync>;

/// One readiness check: a name (`store`, `queue`) and a call that fails with the reason.
pub type Probe =
    (&'static str, Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Result<(), ProbeError>> + Send>> + Send + Sync>);

/// How long one readiness check may take before it counts as failed.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Clone)]
struct OpsState {
    metrics: PrometheusHandle,
    probes: Arc<Vec<Probe>>,
}

/// The router: `/healthz` answers while the process runs; `/readyz` runs every probe and answers
/// 503 naming the failed ones; `/metrics` renders the Prometheus exposition format.
pub fn ops_router(metrics: PrometheusHandle, probes: Vec<Probe>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(render_metrics))
        .with_state(OpsState { metrics, probes: Arc::new(probes) })
}

async fn readyz(State(state): State<OpsState>) -> impl IntoResponse {
    let mut failed = Vec::new();
    for (name, probe) in state.probes.iter() {
        match tokio::time::timeout(PROBE_TIMEOUT, probe()).await {
            Ok(Ok(())) => {}
            Ok(Err(reason)) => failed.push(format!("{name}: {reason}")),
            Err(_) => failed.push(format!("{name}: no answer within {}s", PROBE_TIMEOUT.as_secs())),
        }
    }
    if failed.is_empty() {
        (StatusCode::OK, "ready\n".to_string())
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, format!("not ready\n{}\n", failed.join("\n")))
    }
}

async fn render_metrics(State(state): State<OpsState>) -> impl IntoResponse {
    state.metrics.run_upkeep();
    ([(CONTENT_TYPE, "text/plain; version=0.0.4")], state.metrics.render())
}

/// Listen on `addr` and serve `router` until shutdown. Returns the bound address (port 0 picks one)
/// and the server task.
pub async fn serve_ops(
    addr: &str,
    router: Router,
    shutdown: Shutdown,
) -> Result<(SocketAddr, tokio::task::JoinHandle<()>), FeedError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| FeedError::Listen { addr: addr.to_string(), source })?;
    let bound = listener.local_addr().map_err(|source| FeedError::Listen { addr: addr.to_string(), source })?;
    let task = tokio::spawn(async move {
        let served = axum::serve(listener, router).with_graceful_shutdown(async move { shutdown.wait().await }).await;
        if let Err(e) = served {
            tracing::error!(error = %e, "operations endpoint stopped");
        }
    });
    Ok((bound, task))
}
