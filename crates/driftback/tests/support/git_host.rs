//! A private git host on loopback: git's own smart HTTP (`git http-backend`, run as a CGI program)
//! behind a Basic authentication check that answers 401 without a valid token, as GitHub does;
//! and, on the same server, a GitHub App stand-in that mints installation tokens in GitHub's wire
//! format (`POST /api/app/installations/{id}/access_tokens`, an RS256 JWT as bearer), which expire
//! as quickly as the test asks. Every request's outcome is recorded.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::any;
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::signature::{RSA_PKCS1_2048_8192_SHA256, UnparsedPublicKey};

/// What the host saw.
#[derive(Default)]
pub struct Seen {
    /// Git requests: (path and query, status answered).
    pub git: Vec<(String, u16)>,
    /// Installation tokens minted, with the JWT claims that asked for them.
    pub minted: Vec<(String, serde_json::Value)>,
    /// Mint requests refused, and why.
    pub refused_mints: Vec<String>,
}

#[derive(Default)]
struct Inner {
    /// Tokens the git host accepts, until when.
    tokens: HashMap<String, Instant>,
    seen: Seen,
}

#[derive(Clone)]
struct Host {
    root: PathBuf,
    inner: Arc<Mutex<Inner>>,
    /// The App's public key (DER RSAPublicKey) the stand-in checks JWTs with, and its id.
    app: Option<(Vec<u8>, String)>,
    token_life: Duration,
}

/// The running host; stops with the value.
pub struct GitHost {
    pub base_url: String,
    inner: Arc<Mutex<Inner>>,
    _runtime: tokio::runtime::Runtime,
}

impl GitHost {
    /// Serve the bare repositories under `root` at `BASE/git/NAME.git`. `app`: the App's public
    /// key and id for the token stand-in; `token_life`: how long a minted token is accepted.
    pub fn start(root: PathBuf, app: Option<(Vec<u8>, String)>, token_life: Duration) -> GitHost {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let inner = Arc::new(Mutex::new(Inner::default()));
        let host = Host { root, inner: inner.clone(), app, token_life };
        let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let router = Router::new()
            .route("/api/app/installations/{id}/access_tokens", any(mint))
            .route("/git/{*path}", any(git))
            .with_state(host);
        runtime.spawn(async move { axum::serve(listener, router).await.unwrap() });
        GitHost { base_url, inner, _runtime: runtime }
    }

    /// Accept `token` for git until the host stops.
    pub fn accept(&self, token: &str) {
        self.inner.lock().unwrap().tokens.insert(token.to_string(), Instant::now() + Duration::from_secs(3600));
    }

    pub fn url(&self, repo: &str) -> String {
        format!("{}/git/{repo}", self.base_url)
    }

    pub fn api_url(&self) -> String {
        format!("{}/api", self.base_url)
    }

    pub fn seen<T>(&self, f: impl FnOnce(&Seen) -> T) -> T {
        f(&self.inner.lock().unwrap().seen)
    }
}

fn status(code: StatusCode, body: &str) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = code;
    response
}

/// The token a request's `Authorization: Basic` carries (the password; any user name).
fn basic_password(request: &Request) -> Option<String> {
    let value = request.headers().get("authorization")?.to_str().ok()?;
    let encoded = value.strip_prefix("Basic ")?;
    let decoded = String::from_utf8(STANDARD.decode(encoded).ok()?).ok()?;
    decoded.split_once(':').map(|(_, password)| password.to_string())
}

async fn git(State(host): State<Host>, request: Request) -> Response {
    let uri = request.uri().clone();
    let shown = uri.path_and_query().map(|p| p.to_string()).unwrap_or_default();
    let valid = basic_password(&request).is_some_and(|token| {
        let inner = host.inner.lock().unwrap();
        inner.tokens.get(&token).is_some_and(|until| Instant::now() < *until)
    });
    if !valid {
        host.inner.lock().unwrap().seen.git.push((shown, 401));
        let mut response = status(StatusCode::UNAUTHORIZED, "authentication required\n");
        response.headers_mut().insert("www-authenticate", HeaderValue::from_static("Basic realm=\"git\""));
        return response;
    }
    let method = request.method().to_string();
    let content_type = request.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let encoding = request.headers().get("content-encoding").and_then(|v| v.to_str().ok()).map(str::to_string);
    let body = to_bytes(request.into_body(), 64 << 20).await.unwrap();
    let path_info = uri.path().strip_prefix("/git").unwrap_or("").to_string();
    let mut command = tokio::process::Command::new("git");
    command
        .arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_PROJECT_ROOT", &host.root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("GATEWAY_INTERFACE", "CGI/1.1")
        .env("SERVER_PROTOCOL", "HTTP/1.1")
        .env("REQUEST_METHOD", method)
        .env("PATH_INFO", path_info)
        .env("QUERY_STRING", uri.query().unwrap_or(""))
        .env("CONTENT_TYPE", content_type)
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("REMOTE_USER", "driftback")
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    if let Some(encoding) = encoding {
        command.env("HTTP_CONTENT_ENCODING", encoding);
    }
    let mut child = command.spawn().expect("git http-backend runs");
    let mut stdin = child.stdin.take().unwrap();
    let writer = tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        let _ = stdin.write_all(&body).await;
    });
    let output = child.wait_with_output().await.unwrap();
    let _ = writer.await;
    // CGI: header lines, a blank line, the body.
    let out = output.stdout;
    let split = out.windows(4).position(|w| w == b"\r\n\r\n").map(|p| (p, 4));
    let split = split.or_else(|| out.windows(2).position(|w| w == b"\n\n").map(|p| (p, 2)));
    let Some((end, gap)) = split else {
        return status(StatusCode::INTERNAL_SERVER_ERROR, &String::from_utf8_lossy(&output.stderr));
    };
    let mut response = Response::new(Body::from(out[end + gap..].to_vec()));
    for line in String::from_utf8_lossy(&out[..end]).lines() {
        let Some((name, value)) = line.split_once(':') else { continue };
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            let code = value.split_whitespace().next().and_then(|c| c.parse().ok()).unwrap_or(500);
            *response.status_mut() = StatusCode::from_u16(code).unwrap();
        } else if let (Ok(name), Ok(value)) =
            (axum::http::HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(value))
        {
            response.headers_mut().append(name, value);
        }
    }
    host.inner.lock().unwrap().seen.git.push((shown, response.status().as_u16()));
    response
}

/// `POST /app/installations/{id}/access_tokens` as GitHub answers it: the JWT must be RS256, signed
/// by the App's key, issued by the App, and live at most ten minutes.
async fn mint(State(host): State<Host>, request: Request) -> Response {
    let refuse = |why: String| {
        host.inner.lock().unwrap().seen.refused_mints.push(why.clone());
        let body = serde_json::json!({ "message": why, "documentation_url": "https://docs.github.com/rest" });
        let mut response = status(StatusCode::UNAUTHORIZED, &body.to_string());
        response.headers_mut().insert("content-type", HeaderValue::from_static("application/json"));
        response
    };
    if request.method() != "POST" {
        return refuse(format!("method {} not allowed", request.method()));
    }
    let Some((public_key, app_id)) = &host.app else { return refuse("no App here".into()) };
    let Some(jwt) = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string)
    else {
        return refuse("A JSON web token could not be decoded".into());
    };
    let parts: Vec<&str> = jwt.split('.').collect();
    if parts.len() != 3 {
        return refuse("A JSON web token could not be decoded".into());
    }
    let decode = |part: &str| URL_SAFE_NO_PAD.decode(part).ok();
    let header: Option<serde_json::Value> = decode(parts[0]).and_then(|b| serde_json::from_slice(&b).ok());
    let claims: Option<serde_json::Value> = decode(parts[1]).and_then(|b| serde_json::from_slice(&b).ok());
    let (Some(header), Some(claims), Some(signature)) = (header, claims, decode(parts[2])) else {
        return refuse("A JSON web token could not be decoded".into());
    };
    if header["alg"] != "RS256" {
        return refuse(format!("alg {} is not RS256", header["alg"]));
    }
    let signed = format!("{}.{}", parts[0], parts[1]);
    if UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, public_key).verify(signed.as_bytes(), &signature).is_err() {
        return refuse("'Issuer' claim ('iss') must be an Integer: signature does not verify".into());
    }
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64;
    let (iat, exp) = (claims["iat"].as_i64().unwrap_or(0), claims["exp"].as_i64().unwrap_or(0));
    if claims["iss"].as_str() != Some(app_id.as_str())
        && claims["iss"].as_i64().map(|i| i.to_string()).as_ref() != Some(app_id)
    {
        return refuse(format!("iss {} is not the App", claims["iss"]));
    }
    if exp <= now || iat > now + 60 || exp - iat > 600 {
        return refuse("'Expiration time' claim ('exp') is too far in the future or already past".into());
    }
    let token = format!("ghs_{:032x}", rand_u128());
    let life = host.token_life;
    let expires = SystemTime::now() + life;
    let expires_at = chrono::DateTime::<chrono::Utc>::from(expires).format("%Y-%m-%dT%H:%M:%SZ").to_string();
    {
        let mut inner = host.inner.lock().unwrap();
        inner.tokens.insert(token.clone(), Instant::now() + life);
        inner.seen.minted.push((token.clone(), claims));
    }
    let body = serde_json::json!({
        "token": token,
        "expires_at": expires_at,
        "permissions": { "contents": "write", "pull_requests": "write", "issues": "write", "metadata": "read" },
        "repository_selection": "selected",
    });
    let mut response = status(StatusCode::CREATED, &body.to_string());
    response.headers_mut().insert("content-type", HeaderValue::from_static("application/json; charset=utf-8"));
    response
}

fn rand_u128() -> u128 {
    let mut bytes = [0u8; 16];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes).unwrap();
    u128::from_le_bytes(bytes)
}
