//! HCP Terraform and Terraform Enterprise (the `cloud` block and the `remote` backend): the
//! workspace's current state version through the API (JSON:API), then its hosted state.
//!
//! The token comes from `TF_TOKEN_<host>` (dots as `_`, hyphens as `__`) or the credentials file
//! `terraform login` writes (`~/.terraform.d/credentials.tfrc.json`). It is sent to the API host
//! only: a download URL on another host (HCP Terraform's archivist) is pre-signed and gets no token.

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use reqwest::{StatusCode, Url};
use serde_json::Value;

use super::parse::parse_state;
use super::reader::{ReadError, StateRead, StateReader, StateVersion};
use crate::error::StackError;
use crate::location::{HcpLocation, Location};
use crate::settings;
use crate::stack::Stack;

const JSON_API: &str = "application/vnd.api+json";

/// A lookup of environment variables by name.
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Reads states through the HCP Terraform / Terraform Enterprise API.
#[derive(Clone)]
pub struct HcpReader {
    http: reqwest::Client,
    env: EnvLookup,
    credentials_file: Option<PathBuf>,
}

impl Default for HcpReader {
    /// Tokens from this process's environment and `$HOME/.terraform.d/credentials.tfrc.json`.
    fn default() -> Self {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        HcpReader::new(
            Arc::new(|name: &str| std::env::var(name).ok()),
            home.map(|h| h.join(".terraform.d/credentials.tfrc.json")),
        )
    }
}

impl HcpReader {
    /// Tokens from `env` (a variable lookup) and the credentials file, if any.
    pub fn new(env: EnvLookup, credentials_file: Option<PathBuf>) -> HcpReader {
        let http = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(60))
            .user_agent(concat!("driftback/", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_default();
        HcpReader { http, env, credentials_file }
    }

    /// The token for `host`: `TF_TOKEN_<host>`, else the credentials file.
    pub fn token(&self, host: &str) -> Result<String, ReadError> {
        let variable = token_variable(host);
        let plain = format!("TF_TOKEN_{}", host.replace('.', "_"));
        for name in [&variable, &plain] {
            if let Some(token) = (self.env)(name).filter(|t| !t.trim().is_empty()) {
                return Ok(token.trim().to_string());
            }
        }
        if let Some(file) = &self.credentials_file {
            if let Ok(text) = std::fs::read_to_string(file) {
                let value: Value = serde_json::from_str(&text).unwrap_or_default();
                if let Some(token) = value["credentials"][host]["token"].as_str().filter(|t| !t.is_empty()) {
                    return Ok(token.to_string());
                }
            }
        }
        Err(ReadError::NoToken { host: host.to_string(), variable })
    }

    async fn get(&self, url: Url, token: &str, shown: &str, missing: &str) -> Result<Value, ReadError> {
        let response = self
            .http
            .get(url)
            .bearer_auth(token)
            .header(reqwest::header::ACCEPT, JSON_API)
            .send()
            .await
            .map_err(|e| ReadError::Unavailable { location: shown.to_string(), message: e.to_string() })?;
        let status = response.status();
        check(status, shown, missing)?;
        response.json().await.map_err(|e| ReadError::Malformed { location: shown.to_string(), message: e.to_string() })
    }

    /// The HCP workspace names with the block's tags, or the CLI names of those with its prefix.
    /// `default` is where the default workspace's state was located.
    pub async fn list_workspaces(
        &self,
        stack: &Stack,
        default: Result<Location, StackError>,
    ) -> Result<Option<Vec<String>>, ReadError> {
        let tags = settings::texts(&stack.settings, "workspaces.tags");
        let prefix = settings::text(&stack.settings, "workspaces.prefix").filter(|_| stack.backend == "remote");
        let (search, value) = match (tags.is_empty(), prefix) {
            (false, _) => ("search[tags]", tags.join(",")),
            (true, Some(prefix)) => ("search[name]", prefix.to_string()),
            (true, None) => return Ok(None),
        };
        // The organization and host do not depend on the workspace.
        let Ok(Location::Hcp(loc)) = default else {
            return Err(ReadError::Malformed {
                location: stack.name.clone(),
                message: "the block names no organization".into(),
            });
        };
        let token = self.token(&loc.hostname)?;
        let shown = format!("{}/{}", loc.hostname, loc.organization);
        let mut names = Vec::new();
        let mut page = 1;
        loop {
            let mut url = api(&loc, &["organizations", &loc.organization, "workspaces"], &shown)?;
            url.query_pairs_mut()
                .append_pair(search, &value)
                .append_pair("page[number]", &page.to_string())
                .append_pair("page[size]", "100");
            let body = self.get(url, &token, &shown, "no such organization, or the token cannot see it").await?;
            for item in body["data"].as_array().into_iter().flatten() {
                let Some(name) = item["attributes"]["name"].as_str() else { continue };
                match prefix {
                    Some(prefix) => names.extend(name.strip_prefix(prefix).map(str::to_string)),
                    None => names.push(name.to_string()),
                }
            }
            match body["meta"]["pagination"]["next-page"].as_u64() {
                Some(next) if next > page => page = next,
                _ => break,
            }
        }
        names.sort();
        Ok(Some(names))
    }
}

impl HcpReader {
    /// The workspace's current state version: the API's answer for it (`data`), found with two
    /// small requests and without downloading the state.
    async fn current_version(&self, loc: &HcpLocation, shown: &str) -> Result<(String, Value), ReadError> {
        let token = self.token(&loc.hostname)?;
        let url = api(loc, &["organizations", &loc.organization, "workspaces", &loc.workspace], shown)?;
        let workspace =
            self.get(url, &token, shown, "no such workspace in the organization, or the token cannot see it").await?;
        let id = workspace["data"]["id"].as_str().ok_or_else(|| ReadError::Malformed {
            location: shown.to_string(),
            message: "the workspace has no data.id".into(),
        })?;
        let url = api(loc, &["workspaces", id, "current-state-version"], shown)?;
        let version = self.get(url, &token, shown, "the workspace has no state yet").await?;
        Ok((token, version["data"].clone()))
    }
}

impl StateReader for HcpReader {
    fn read<'a>(&'a self, location: &'a Location) -> BoxFuture<'a, Result<StateRead, ReadError>> {
        Box::pin(async move {
            let Location::Hcp(loc) = location else {
                return Err(ReadError::Malformed {
                    location: location.to_string(),
                    message: "not an HCP location".into(),
                });
            };
            let shown = location.to_string();
            let (token, data) = self.current_version(loc, &shown).await?;
            let version_id = data["id"].as_str().unwrap_or_default().to_string();
            let download =
                data["attributes"]["hosted-state-download-url"].as_str().ok_or_else(|| ReadError::Malformed {
                    location: shown.clone(),
                    message: "the state version has no hosted-state-download-url".into(),
                })?;
            let base = Url::parse(&loc.base_url).map_err(|e| bad_url(&shown, e))?;
            let download = base.join(download).map_err(|e| bad_url(&shown, e))?;
            let mut request = self.http.get(download.clone());
            // Only the API's own host sees the token.
            if download.origin() == base.origin() {
                request = request.bearer_auth(&token);
            }
            let response = request
                .send()
                .await
                .map_err(|e| ReadError::Unavailable { location: shown.clone(), message: e.to_string() })?;
            check(response.status(), &shown, "the state version's content is gone")?;
            let bytes = response
                .bytes()
                .await
                .map_err(|e| ReadError::Unavailable { location: shown.clone(), message: e.to_string() })?;
            let read = parse_state(&bytes, &shown)?;
            let serial = read.serial.or_else(|| data["attributes"]["serial"].as_u64());
            Ok(StateRead { version: StateVersion::Hcp { id: version_id, serial }, serial, ..read })
        })
    }

    /// The current state version's id (`sv-...`), without downloading the state.
    fn probe<'a>(&'a self, location: &'a Location) -> BoxFuture<'a, Result<Option<String>, ReadError>> {
        Box::pin(async move {
            let Location::Hcp(loc) = location else { return Ok(None) };
            let (_, data) = self.current_version(loc, &location.to_string()).await?;
            Ok(data["id"].as_str().map(|id| format!("state version {id}")))
        })
    }
}

/// `TF_TOKEN_app_terraform_io` for `app.terraform.io`; hyphens become `__`.
pub fn token_variable(host: &str) -> String {
    format!("TF_TOKEN_{}", host.replace('-', "__").replace('.', "_"))
}

fn api(loc: &HcpLocation, segments: &[&str], shown: &str) -> Result<Url, ReadError> {
    let mut url = Url::parse(&loc.base_url).map_err(|e| bad_url(shown, e))?;
    url.path_segments_mut()
        .map_err(|_| ReadError::Malformed {
            location: shown.to_string(),
            message: "the API URL cannot have a path".into(),
        })?
        .pop_if_empty()
        .extend(["api", "v2"])
        .extend(segments);
    Ok(url)
}

fn bad_url(shown: &str, e: impl std::fmt::Display) -> ReadError {
    ReadError::Malformed { location: shown.to_string(), message: format!("bad URL: {e}") }
}

fn check(status: StatusCode, shown: &str, missing: &str) -> Result<(), ReadError> {
    let location = shown.to_string();
    match status.as_u16() {
        200..=299 => Ok(()),
        401 => Err(ReadError::Denied { location, message: "the token was rejected (401)".into() }),
        403 => Err(ReadError::Denied { location, message: "the token may not read this state (403)".into() }),
        404 => Err(ReadError::Missing { location, hint: missing.to_string() }),
        429 | 500..=599 => Err(ReadError::Unavailable { location, message: format!("HTTP {status}") }),
        _ => Err(ReadError::Malformed { location, message: format!("HTTP {status}") }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_come_from_the_environment_then_the_credentials_file() {
        assert_eq!(token_variable("tfe.my-corp.example"), "TF_TOKEN_tfe_my__corp_example");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("credentials.tfrc.json");
        std::fs::write(&file, r#"{"credentials": {"app.terraform.io": {"token": "from-file"}}}"#).unwrap();
        let env: EnvLookup =
            Arc::new(|name: &str| (name == "TF_TOKEN_tfe_example_com").then(|| "from-env".to_string()));
        let reader = HcpReader::new(env, Some(file));
        assert_eq!(reader.token("tfe.example.com").unwrap(), "from-env");
        assert_eq!(reader.token("app.terraform.io").unwrap(), "from-file");
        let err = reader.token("other.example.com").unwrap_err().to_string();
        assert!(err.contains("TF_TOKEN_other_example_com") && err.contains("terraform login"), "{err}");
    }
}
