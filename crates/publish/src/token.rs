//! Where the repository's HTTPS token comes from: a fixed token (a personal or fine-grained access
//! token, read from the environment or a file), or a GitHub App's installation tokens, minted with
//! the App's private key and minted again before they expire.
//!
//! An installation token lives an hour. [`AppTokens`] keeps the current one and mints the next when
//! less than `refresh_before` of its life is left, so a long-running daemon never sends an expired
//! token: git asks through [`Token::get_blocking`] (its credential callback is synchronous), the
//! GitHub API client through [`Token::get`]. Minting signs a JWT (RS256) with the App's key and calls
//! `POST /app/installations/{id}/access_tokens`. Neither the key nor a token is ever printed.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};

use crate::Secret;

/// A token for HTTPS git and the GitHub API.
#[derive(Debug, Clone)]
pub enum Token {
    /// The same token every time.
    Fixed(Secret),
    /// A GitHub App's installation token, minted and refreshed as needed.
    App(Arc<AppTokens>),
}

impl From<Secret> for Token {
    fn from(secret: Secret) -> Token {
        Token::Fixed(secret)
    }
}

impl Token {
    /// The token to send now (an App's is minted when the one held is about to expire).
    pub async fn get(&self) -> Result<Secret, AppTokenError> {
        match self {
            Token::Fixed(secret) => Ok(secret.clone()),
            Token::App(app) => app.token().await,
        }
    }

    /// As [`Token::get`], from synchronous code (git's credential callback). Minting runs on a
    /// thread of its own, so this may be called on or off an async runtime.
    pub fn get_blocking(&self) -> Result<Secret, AppTokenError> {
        match self {
            Token::Fixed(secret) => Ok(secret.clone()),
            Token::App(app) => app.token_blocking(),
        }
    }

    /// Whether the token is empty (a fixed one); an App's tokens never are.
    pub fn is_empty(&self) -> bool {
        matches!(self, Token::Fixed(secret) if secret.expose().trim().is_empty())
    }
}

/// Why an installation token could not be had. No message holds the key, the JWT or a token.
#[derive(Debug, thiserror::Error)]
pub enum AppTokenError {
    #[error(
        "GitHub App private key {path}: {reason}; give the PEM file GitHub generated for the App (publish.app.private_key_file)"
    )]
    Key { path: String, reason: String },
    #[error("GitHub App settings: {0}")]
    Config(String),
    #[error("GitHub App {app_id}: minting a token for installation {installation}: {message}")]
    Mint { app_id: String, installation: u64, message: String, transient: bool },
}

impl AppTokenError {
    /// Whether asking again later may succeed (GitHub or the network failed).
    pub fn is_transient(&self) -> bool {
        matches!(self, AppTokenError::Mint { transient: true, .. })
    }
}

/// What identifies a GitHub App installation.
#[derive(Debug, Clone)]
pub struct AppSettings {
    /// The App's id (or its client id): the JWT's issuer.
    pub app_id: String,
    /// The installation on the account that owns the repository.
    pub installation_id: u64,
    /// The App's private key, the PEM file GitHub generates (PKCS#1 or PKCS#8).
    pub private_key_file: PathBuf,
    /// `https://api.github.com`, or `https://HOST/api/v3` for GitHub Enterprise.
    pub api_url: String,
    /// Mint the next token when less than this is left of the current one's life.
    pub refresh_before: Duration,
}

/// A GitHub App's installation tokens: the one held and how to mint the next.
pub struct AppTokens {
    app_id: String,
    installation_id: u64,
    key: RsaKeyPair,
    endpoint: String,
    refresh_before: Duration,
    held: Mutex<Option<(Secret, SystemTime)>>,
}

impl std::fmt::Debug for AppTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppTokens")
            .field("app_id", &self.app_id)
            .field("installation_id", &self.installation_id)
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl AppTokens {
    /// Read the App's key; nothing is minted until a token is asked for.
    pub fn new(settings: &AppSettings) -> Result<AppTokens, AppTokenError> {
        if settings.app_id.trim().is_empty() {
            return Err(AppTokenError::Config("publish.app.app_id is empty; give the App's id".into()));
        }
        let base = settings.api_url.trim_end_matches('/');
        if !(base.starts_with("https://") || is_loopback_http(base)) {
            return Err(AppTokenError::Config(format!(
                "publish.api_url {base:?} must be an https:// URL (the App's JWT and tokens travel on it)"
            )));
        }
        let key = read_key(&settings.private_key_file)?;
        Ok(AppTokens {
            app_id: settings.app_id.trim().to_string(),
            installation_id: settings.installation_id,
            key,
            endpoint: format!("{base}/app/installations/{}/access_tokens", settings.installation_id),
            refresh_before: settings.refresh_before,
            held: Mutex::new(None),
        })
    }

    /// The token held while it has more than `refresh_before` to live; otherwise a new one.
    pub async fn token(&self) -> Result<Secret, AppTokenError> {
        if let Some(token) = self.fresh() {
            return Ok(token);
        }
        let (token, expires) = self.mint().await?;
        *self.held.lock().unwrap_or_else(|p| p.into_inner()) = Some((token.clone(), expires));
        Ok(token)
    }

    /// As [`AppTokens::token`], from synchronous code: minting runs on a thread with its own
    /// small runtime (and its own HTTP client), so no caller's runtime is blocked or re-entered.
    pub fn token_blocking(&self) -> Result<Secret, AppTokenError> {
        if let Some(token) = self.fresh() {
            return Ok(token);
        }
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| self.mint_error(format!("cannot start a runtime to mint the token: {e}"), true))?;
                    runtime.block_on(self.token())
                })
                .join()
                .unwrap_or_else(|_| Err(self.mint_error("minting the token panicked".into(), true)))
        })
    }

    /// Forget the token held (GitHub refused it: revoked before its time), so the next ask mints.
    pub fn forget(&self) {
        *self.held.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    fn fresh(&self) -> Option<Secret> {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let (token, expires) = held.as_ref()?;
        let left = expires.duration_since(SystemTime::now()).unwrap_or_default();
        (left > self.refresh_before).then(|| token.clone())
    }

    fn mint_error(&self, message: String, transient: bool) -> AppTokenError {
        AppTokenError::Mint { app_id: self.app_id.clone(), installation: self.installation_id, message, transient }
    }

    /// The App's JWT: issued a minute in the past (clock drift), valid nine minutes (GitHub allows ten).
    fn jwt(&self) -> Result<String, AppTokenError> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"RS256","typ":"JWT"}"#);
        let claims = serde_json::json!({ "iat": now.saturating_sub(60), "exp": now + 540, "iss": self.app_id });
        let claims = URL_SAFE_NO_PAD.encode(claims.to_string());
        let signed = format!("{header}.{claims}");
        let mut signature = vec![0; self.key.public().modulus_len()];
        self.key
            .sign(&RSA_PKCS1_SHA256, &ring::rand::SystemRandom::new(), signed.as_bytes(), &mut signature)
            .map_err(|_| self.mint_error("signing the JWT failed".into(), false))?;
        Ok(format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature)))
    }

    async fn mint(&self) -> Result<(Secret, SystemTime), AppTokenError> {
        let jwt = self.jwt()?;
        let http = reqwest::Client::builder()
            .user_agent(concat!("driftback/", env!("CARGO_PKG_VERSION")))
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| self.mint_error(format!("cannot build the HTTP client: {e}"), false))?;
        let response = http
            .post(&self.endpoint)
            .header("Accept", "application/vnd.github+json")
            .header("X-GitHub-Api-Version", "2022-11-28")
            .bearer_auth(jwt)
            .send()
            .await
            .map_err(|e| self.mint_error(format!("{} did not answer: {}", self.endpoint, e.without_url()), true))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|e| self.mint_error(format!("reading the answer: {}", e.without_url()), true))?;
        if !status.is_success() {
            let said = serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(str::to_string))
                .unwrap_or_default();
            let what = match status.as_u16() {
                401 => {
                    "GitHub refused the App's JWT: check publish.app.app_id and that the key is the App's current one"
                }
                403 => "GitHub forbade it: the App may be suspended or lack the permissions asked for",
                404 => {
                    "no such installation: check publish.app.installation_id (the App must be installed on the repository's owner)"
                }
                _ => "GitHub refused it",
            };
            return Err(self.mint_error(format!("HTTP {status}: {what} ({said})"), status.is_server_error()));
        }
        #[derive(serde::Deserialize)]
        struct Minted {
            token: String,
            expires_at: String,
        }
        let minted: Minted = serde_json::from_slice(&body)
            .map_err(|e| self.mint_error(format!("the answer is not an installation token: {e}"), false))?;
        let expires = chrono::DateTime::parse_from_rfc3339(&minted.expires_at).map_err(|e| {
            self.mint_error(format!("the token's expires_at {:?} is not a time: {e}", minted.expires_at), false)
        })?;
        let expires = UNIX_EPOCH + Duration::from_secs(expires.timestamp().max(0) as u64);
        tracing::info!(
            app_id = %self.app_id,
            installation = self.installation_id,
            expires_at = %minted.expires_at,
            "minted a GitHub App installation token"
        );
        Ok((Secret::new(minted.token), expires))
    }
}

/// `http://127.0.0.1...`, `http://localhost...`, `http://[::1]...`: a stand-in on this machine.
pub(crate) fn is_loopback_http(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    let Some(rest) = lower.strip_prefix("http://") else { return false };
    let host = rest.split(['/', '?']).next().unwrap_or("");
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let name = if host.starts_with('[') {
        host.split(']').next().map(|h| format!("{h}]")).unwrap_or_default()
    } else {
        host.split(':').next().unwrap_or("").to_string()
    };
    name == "localhost" || name == "[::1]" || name.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

/// The App's RSA key from its PEM file: `RSA PRIVATE KEY` (PKCS#1, what GitHub hands out) or
/// `PRIVATE KEY` (PKCS#8).
fn read_key(path: &Path) -> Result<RsaKeyPair, AppTokenError> {
    let fail = |reason: String| AppTokenError::Key { path: path.display().to_string(), reason };
    let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot be read ({e})")))?;
    let block = |label: &str| {
        let begin = format!("-----BEGIN {label}-----");
        let end = format!("-----END {label}-----");
        let start = text.find(&begin)? + begin.len();
        let stop = start + text[start..].find(&end)?;
        Some(text[start..stop].split_whitespace().collect::<String>())
    };
    let (der, pkcs8) = match (block("RSA PRIVATE KEY"), block("PRIVATE KEY")) {
        (Some(b64), _) => (b64, false),
        (None, Some(b64)) => (b64, true),
        (None, None) => return Err(fail("it holds no RSA PRIVATE KEY or PRIVATE KEY PEM block".into())),
    };
    let der = STANDARD.decode(der).map_err(|e| fail(format!("its PEM block is not base64 ({e})")))?;
    let key = if pkcs8 { RsaKeyPair::from_pkcs8(&der) } else { RsaKeyPair::from_der(&der) };
    key.map_err(|e| fail(format!("it is not an RSA private key ring accepts ({e})")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_http_is_told_from_other_hosts() {
        for url in ["http://127.0.0.1:8080/x.git", "http://localhost/x", "http://[::1]:9/x", "http://u@127.0.0.1/x"] {
            assert!(is_loopback_http(url), "{url}");
        }
        for url in
            ["http://example.com/x", "https://127.0.0.1/x", "http://127.0.0.1.evil.test/x", "http://localhost.evil/"]
        {
            assert!(!is_loopback_http(url), "{url}");
        }
    }

    #[test]
    fn a_key_file_that_is_not_a_key_is_named_with_what_to_give() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.pem");
        std::fs::write(&path, "-----BEGIN RSA PRIVATE KEY-----\nbm90IGEga2V5\n-----END RSA PRIVATE KEY-----\n")
            .unwrap();
        let settings = AppSettings {
            app_id: "12".into(),
            installation_id: 3,
            private_key_file: path.clone(),
            api_url: "https://api.github.com".into(),
            refresh_before: Duration::from_secs(300),
        };
        let err = AppTokens::new(&settings).unwrap_err().to_string();
        assert!(err.contains(&path.display().to_string()) && err.contains("publish.app.private_key_file"), "{err}");
        let err = AppTokens::new(&AppSettings { private_key_file: dir.path().join("missing.pem"), ..settings })
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing.pem") && err.contains("cannot be read"), "{err}");
    }
}
