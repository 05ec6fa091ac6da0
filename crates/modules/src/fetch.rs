//! Fetching one module source: the Module Registry Protocol (service discovery, versions,
//! download and its `X-Terraform-Get`), git and HTTP archives, into the cache.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use reqwest::{StatusCode, Url};
use sha2::{Digest, Sha256};

use crate::archive;
use crate::cli::CliConfig;
use crate::settings::Settings;
use crate::source::{Getter, RegistryAddress, Remote, Source, SourceError, parse_remote};
use crate::version::{Constraints, Version, VersionError, newest_release};

/// Why a module source could not be fetched.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    Version(#[from] VersionError),
    #[error("a version constraint applies to registry sources only; pin a git source with ?ref= instead")]
    VersionOnNonRegistry,
    #[error("the registry lists no version that the constraint {constraint:?} allows (it lists {available})")]
    NoVersion { constraint: String, available: String },
    #[error("{url}: {reason}")]
    Http { url: String, reason: String },
    #[error("{url}: the server answered {status}{hint}")]
    Status { url: String, status: u16, hint: &'static str },
    #[error("registry {host}: {reason}")]
    Registry { host: String, reason: String },
    #[error("git {url}: {reason}")]
    Git { url: String, reason: String },
    #[error("archive {url}: {reason}")]
    Archive { url: String, reason: String },
    #[error("the module's directory {subdir:?} is not in the package fetched from {package}")]
    NoSubdir { subdir: String, package: String },
    #[error("it took longer than {seconds} s ([modules] fetch_timeout_seconds)")]
    Timeout { seconds: u64 },
    #[error("{what} after {count} redirections through X-Terraform-Get")]
    Redirects { what: String, count: usize },
    #[error("the cache {path}: {reason}")]
    Cache { path: String, reason: String },
}

/// A package in the cache and the module's directory in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    pub package: PathBuf,
    pub subdir: PathBuf,
    /// The registry version chosen, or the git commit checked out.
    pub version: Option<String>,
}

/// Fetches module sources into the cache. One per process (or per base commit): it remembers the
/// registries it discovered and the git packages whose ref can move (branches, the default
/// branch), which it fetches once per `Fetcher`.
#[derive(Debug)]
pub struct Fetcher {
    settings: Settings,
    cli: CliConfig,
    client: reqwest::Client,
    discovered: Mutex<HashMap<String, Url>>,
    fresh: Mutex<HashMap<String, (PathBuf, Option<String>)>>,
}

const MAX_REDIRECTS: usize = 4;

impl Fetcher {
    pub fn new(settings: Settings, cli: CliConfig) -> Result<Fetcher, FetchError> {
        std::fs::create_dir_all(&settings.cache_dir)
            .map_err(|e| FetchError::Cache { path: settings.cache_dir.display().to_string(), reason: e.to_string() })?;
        let client = reqwest::Client::builder()
            .timeout(settings.fetch_timeout)
            .redirect(reqwest::redirect::Policy::limited(10))
            .user_agent(concat!("driftback/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| FetchError::Http { url: String::new(), reason: e.to_string() })?;
        Ok(Fetcher { settings, cli, client, discovered: Mutex::default(), fresh: Mutex::default() })
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Fetch the module at `source` (a module call's `source`, not a local path), at the newest
    /// version `constraint` allows for a registry source.
    pub async fn fetch(&self, source: &str, constraint: Option<&str>) -> Result<Fetched, FetchError> {
        let seconds = self.settings.fetch_timeout.as_secs();
        match tokio::time::timeout(self.settings.fetch_timeout, self.fetch_unbounded(source, constraint)).await {
            Ok(result) => result,
            Err(_) => Err(FetchError::Timeout { seconds }),
        }
    }

    async fn fetch_unbounded(&self, source: &str, constraint: Option<&str>) -> Result<Fetched, FetchError> {
        match Source::parse(source)? {
            Source::Local(path) => Err(SourceError {
                address: path,
                reason: "is a local path outside the repository, which driftback does not read".into(),
            }
            .into()),
            Source::Registry(address) => self.fetch_registry(&address, constraint).await,
            Source::Remote(remote) => {
                if constraint.is_some() {
                    return Err(FetchError::VersionOnNonRegistry);
                }
                let (package, version) = self.fetch_package(&remote, None, 0).await?;
                self.located(package, None, remote.subdir.as_deref(), version)
            }
        }
    }

    fn located(
        &self,
        package: PathBuf,
        outer: Option<&str>,
        inner: Option<&str>,
        version: Option<String>,
    ) -> Result<Fetched, FetchError> {
        let subdir: PathBuf = [outer, inner].into_iter().flatten().collect();
        if !package.join(&subdir).is_dir() {
            return Err(FetchError::NoSubdir {
                subdir: subdir.display().to_string(),
                package: package.display().to_string(),
            });
        }
        Ok(Fetched { package, subdir, version })
    }

    async fn fetch_registry(&self, address: &RegistryAddress, constraint: Option<&str>) -> Result<Fetched, FetchError> {
        let host = &address.host;
        let base = self.modules_service(host).await?;
        let module = format!("{}/{}/{}/", address.namespace, address.name, address.provider);
        let versions_url = join(&base, &format!("{module}versions"))?;
        let listing: serde_json::Value = self.get_json(&versions_url, Some(host)).await?;
        let available: Vec<Version> = listing
            .get("modules")
            .and_then(|m| m.get(0))
            .and_then(|m| m.get("versions"))
            .and_then(|v| v.as_array())
            .into_iter()
            .flatten()
            .filter_map(|v| v.get("version").and_then(|s| s.as_str()))
            .filter_map(|s| Version::parse(s).ok())
            .collect();
        let chosen = match constraint {
            Some(c) => Constraints::parse(c)?.newest(&available),
            None => newest_release(&available),
        }
        .ok_or_else(|| {
            let mut listed: Vec<&Version> = available.iter().collect();
            listed.sort();
            let listed: Vec<String> = listed.iter().rev().take(8).map(|v| v.to_string()).collect();
            FetchError::NoVersion {
                constraint: constraint.unwrap_or("(none)").to_string(),
                available: if listed.is_empty() { "none".into() } else { listed.join(", ") },
            }
        })?
        .clone();
        let key = format!("registry {}@{}", address.package(), chosen);
        let entry = self.entry_path(&key);
        if entry.is_dir() {
            tracing::debug!(module = %address.package(), version = %chosen, "module package from the cache");
            return self.located(entry, None, address.subdir.as_deref(), Some(chosen.to_string()));
        }
        let download_url = join(&base, &format!("{module}{chosen}/download"))?;
        let location = self.download_location(&download_url, Some(host)).await?;
        let remote = parse_remote(&location)?;
        let (package, _) = self.fetch_package(&remote, Some(&key), 0).await?;
        self.located(package, remote.subdir.as_deref(), address.subdir.as_deref(), Some(chosen.to_string()))
    }

    /// The `modules.v1` base URL of a registry host: a CLI configuration `host` block's, else
    /// service discovery's (`https://HOST/.well-known/terraform.json`).
    async fn modules_service(&self, host: &str) -> Result<Url, FetchError> {
        if let Some(url) = self.discovered.lock().unwrap_or_else(|p| p.into_inner()).get(host) {
            return Ok(url.clone());
        }
        let registry = |reason: String| FetchError::Registry { host: host.to_string(), reason };
        let discovery = Url::parse(&format!("https://{host}/.well-known/terraform.json"))
            .map_err(|e| registry(format!("not a host name: {e}")))?;
        let url = match self.cli.service(host, "modules.v1") {
            Some(url) => Url::parse(url)
                .or_else(|_| discovery.join(url))
                .map_err(|e| registry(format!("the CLI configuration's modules.v1 {url:?} is not a URL: {e}")))?,
            None => {
                let services: serde_json::Value = self.get_json(&discovery, Some(host)).await?;
                let Some(service) = services.get("modules.v1").and_then(|v| v.as_str()) else {
                    return Err(registry("its service discovery document offers no modules.v1 service".into()));
                };
                discovery.join(service).map_err(|e| registry(format!("modules.v1 {service:?} is not a URL: {e}")))?
            }
        };
        // Relative paths are joined under the service's URL, which must end with a slash.
        let url = if url.path().ends_with('/') { url } else { Url::parse(&format!("{url}/")).unwrap_or(url) };
        self.discovered.lock().unwrap_or_else(|p| p.into_inner()).insert(host.to_string(), url.clone());
        Ok(url)
    }

    /// A GET of `url`: a registry API call (`registry_host`) carries that registry's token, as
    /// Terraform's registry client sends it to the registry's services wherever they are; any
    /// other URL carries a token only when one is configured for its own host.
    fn request(&self, url: &Url, registry_host: Option<&str>) -> reqwest::RequestBuilder {
        let request = self.client.get(url.clone());
        let own_host = url.host_str().map(|h| match url.port() {
            Some(port) => format!("{h}:{port}"),
            None => h.to_string(),
        });
        let token = match registry_host {
            Some(host) => self.cli.token(host),
            None => own_host.as_deref().and_then(|h| self.cli.token(h)),
        };
        match token {
            Some(token) => request.bearer_auth(token.expose()),
            None => request,
        }
    }

    async fn send(&self, url: &Url, registry_host: Option<&str>) -> Result<reqwest::Response, FetchError> {
        let response = self.request(url, registry_host).send().await.map_err(|e| self.http_error(url, &e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let hint = match status {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                " (give a token: TF_TOKEN_<host> or a credentials block in the file TF_CLI_CONFIG_FILE names)"
            }
            StatusCode::NOT_FOUND => " (no such module or version on this registry)",
            _ => "",
        };
        Err(FetchError::Status { url: redact(url), status: status.as_u16(), hint })
    }

    async fn get_json(&self, url: &Url, registry_host: Option<&str>) -> Result<serde_json::Value, FetchError> {
        let bytes = self.bounded_body(self.send(url, registry_host).await?, url).await?;
        serde_json::from_slice(&bytes)
            .map_err(|e| FetchError::Http { url: redact(url), reason: format!("the answer is not JSON: {e}") })
    }

    /// The registry's download answer: the `X-Terraform-Get` header (204), or a JSON body's
    /// `location`, resolved against the download URL.
    async fn download_location(&self, url: &Url, registry_host: Option<&str>) -> Result<String, FetchError> {
        let response = self.send(url, registry_host).await?;
        let header = response.headers().get("x-terraform-get").and_then(|v| v.to_str().ok()).map(str::to_string);
        let location = match header {
            Some(h) => h,
            None => {
                let body = self.bounded_body(response, url).await?;
                serde_json::from_slice::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|v| v.get("location").and_then(|l| l.as_str()).map(str::to_string))
                    .ok_or_else(|| FetchError::Http {
                        url: redact(url),
                        reason: "the answer names no package: no X-Terraform-Get header and no JSON location".into(),
                    })?
            }
        };
        Ok(resolve_location(url, &location))
    }

    async fn bounded_body(&self, mut response: reqwest::Response, url: &Url) -> Result<Vec<u8>, FetchError> {
        let limit = self.settings.max_package_bytes;
        let too_large = || FetchError::Http {
            url: redact(url),
            reason: format!("the answer is larger than {limit} bytes ([modules] max_package_bytes)"),
        };
        if response.content_length().is_some_and(|n| n > limit) {
            return Err(too_large());
        }
        let mut out = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| self.http_error(url, &e))? {
            out.extend_from_slice(&chunk);
            if out.len() as u64 > limit {
                return Err(too_large());
            }
        }
        Ok(out)
    }

    /// Fetch a go-getter package into the cache (under `key`, or a key of its own), following
    /// `X-Terraform-Get` redirections. Returns the package's directory and, for git, the commit.
    async fn fetch_package(
        &self,
        remote: &Remote,
        key: Option<&str>,
        redirects: usize,
    ) -> Result<(PathBuf, Option<String>), FetchError> {
        let own_key;
        let key = match key {
            Some(k) => k,
            None => {
                own_key = package_key(&remote.getter);
                &own_key
            }
        };
        let mutable =
            matches!(&remote.getter, Getter::Git { reference, .. } if !is_immutable_ref(reference.as_deref()));
        let entry = self.entry_path(key);
        if mutable {
            if let Some(fresh) = self.fresh.lock().unwrap_or_else(|p| p.into_inner()).get(key) {
                return Ok(fresh.clone());
            }
        } else if entry.is_dir() {
            return Ok((entry, None));
        }
        let staging =
            tempfile::Builder::new().prefix(".partial-").tempdir_in(&self.settings.cache_dir).map_err(|e| {
                FetchError::Cache { path: self.settings.cache_dir.display().to_string(), reason: e.to_string() }
            })?;
        let into = staging.path().join("package");
        let version = match &remote.getter {
            Getter::Git { url, reference, depth } => {
                let (url, reference, depth) = (url.clone(), reference.clone(), *depth);
                let deadline = Instant::now() + self.settings.fetch_timeout;
                let max = self.settings.max_package_bytes;
                let dir = into.clone();
                let shown = redact_str(&url);
                let ssh = self.settings.ssh.clone();
                let commit = tokio::task::spawn_blocking(move || {
                    std::fs::create_dir_all(&dir).map_err(crate::git::GitError::Directory)?;
                    crate::git::fetch(&url, reference.as_deref(), depth, &dir, deadline, max, &ssh)
                })
                .await
                .map_err(|e| FetchError::Git { url: shown.clone(), reason: e.to_string() })?
                .map_err(|reason| FetchError::Git { url: shown, reason: reason.to_string() })?;
                Some(commit)
            }
            Getter::Archive { url, kind } => {
                let parsed =
                    Url::parse(url).map_err(|e| FetchError::Archive { url: redact_str(url), reason: e.to_string() })?;
                let bytes = self.bounded_body(self.send(&parsed, None).await?, &parsed).await?;
                let (kind, limit, dir) = (*kind, self.settings.max_package_bytes, into.clone());
                tokio::task::spawn_blocking(move || {
                    std::fs::create_dir_all(&dir).map_err(|e| archive::UnpackError::Write {
                        path: dir.display().to_string(),
                        reason: e.to_string(),
                    })?;
                    archive::unpack(kind, &bytes, &dir, limit)
                })
                .await
                .map_err(|e| FetchError::Archive { url: redact(&parsed), reason: e.to_string() })?
                .map_err(|e| FetchError::Archive { url: redact(&parsed), reason: e.to_string() })?;
                None
            }
            Getter::Http { url } => {
                if redirects >= MAX_REDIRECTS {
                    return Err(FetchError::Redirects { what: redact_str(url), count: redirects });
                }
                let mut parsed =
                    Url::parse(url).map_err(|e| FetchError::Http { url: redact_str(url), reason: e.to_string() })?;
                parsed.query_pairs_mut().append_pair("terraform-get", "1");
                let location = self.download_location(&parsed, None).await?;
                let next = parse_remote(&location)?;
                if next.subdir.is_some() {
                    return Err(FetchError::Http {
                        url: redact_str(url),
                        reason: "its X-Terraform-Get names a subdirectory, which driftback does not follow; name the package and its //subdir in the module source".into(),
                    });
                }
                return Box::pin(self.fetch_package(&next, Some(key), redirects + 1)).await;
            }
        };
        let staged = staging.keep();
        let package = staged.join("package");
        let publish = |from: &Path| -> Result<(), FetchError> {
            let cache =
                |e: std::io::Error| FetchError::Cache { path: entry.display().to_string(), reason: e.to_string() };
            if mutable && entry.exists() {
                let old = staged.join("replaced");
                std::fs::rename(&entry, &old).map_err(cache)?;
            }
            match std::fs::rename(from, &entry) {
                Ok(()) => Ok(()),
                // Another fetch of the same package won the race: its copy is as good.
                Err(_) if entry.is_dir() => Ok(()),
                Err(e) => Err(cache(e)),
            }
        };
        let published = publish(&package);
        let _ = std::fs::remove_dir_all(&staged);
        published?;
        if mutable {
            self.fresh
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(key.to_string(), (entry.clone(), version.clone()));
        }
        Ok((entry, version))
    }

    fn http_error(&self, url: &Url, e: &reqwest::Error) -> FetchError {
        if e.is_timeout() {
            return FetchError::Timeout { seconds: self.settings.fetch_timeout.as_secs() };
        }
        FetchError::Http { url: redact(url), reason: describe_reqwest(e) }
    }

    fn entry_path(&self, key: &str) -> PathBuf {
        let digest = hex::encode(Sha256::digest(key.as_bytes()));
        let slug: String = key
            .rsplit(['/', ':'])
            .next()
            .unwrap_or("module")
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '@' { c } else { '_' })
            .take(40)
            .collect();
        self.settings.cache_dir.join(format!("{}-{slug}", &digest[..16]))
    }
}

/// The cache key of a package fetched by its own address.
fn package_key(getter: &Getter) -> String {
    match getter {
        Getter::Git { url, reference, .. } => format!("git {url}@{}", reference.as_deref().unwrap_or("HEAD")),
        Getter::Archive { url, .. } | Getter::Http { url } => format!("http {url}"),
    }
}

/// A ref that names one commit for good: a full commit id, or a version tag (`v1.2.3`, `1.2.3`).
fn is_immutable_ref(reference: Option<&str>) -> bool {
    let Some(r) = reference else { return false };
    let commit = r.len() == 40 && r.chars().all(|c| c.is_ascii_hexdigit());
    commit || Version::parse(r).is_ok()
}

/// `X-Terraform-Get` resolved as go-getter does: a path or relative reference against the URL it
/// came from; anything else (a forced getter, a URL, a shorthand) as it is.
fn resolve_location(base: &Url, location: &str) -> String {
    let relative = location.starts_with('/') || location.starts_with("./") || location.starts_with("../");
    if relative {
        // The `//subdir` marker must not be taken for a path by the URL join.
        let (path, subdir) = crate::source::split_subdir(location);
        let joined = base.join(path).map(|u| u.to_string()).unwrap_or_else(|_| location.to_string());
        return match subdir {
            Some(sub) => format!("{joined}//{sub}"),
            None => joined,
        };
    }
    location.to_string()
}

fn join(base: &Url, path: &str) -> Result<Url, FetchError> {
    base.join(path).map_err(|e| FetchError::Http { url: base.to_string(), reason: e.to_string() })
}

/// A URL as it may be shown: without user information or query (which can carry signatures).
fn redact(url: &Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_password(None);
    let _ = shown.set_username("");
    shown.set_query(None);
    shown.to_string()
}

fn redact_str(url: &str) -> String {
    match Url::parse(url) {
        Ok(u) => redact(&u),
        Err(_) => url.split('?').next().unwrap_or(url).to_string(),
    }
}

fn describe_reqwest(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_resolve_against_the_download_url() {
        let base = Url::parse("http://127.0.0.1:8080/v1/modules/acme/vpc/aws/1.0.0/download").unwrap();
        assert_eq!(resolve_location(&base, "/archives/vpc.tar.gz"), "http://127.0.0.1:8080/archives/vpc.tar.gz");
        assert_eq!(
            resolve_location(&base, "./vpc.tar.gz//modules/x"),
            "http://127.0.0.1:8080/v1/modules/acme/vpc/aws/1.0.0/vpc.tar.gz//modules/x"
        );
        assert_eq!(
            resolve_location(&base, "git::https://example.com/vpc.git?ref=v1"),
            "git::https://example.com/vpc.git?ref=v1"
        );
        assert!(is_immutable_ref(Some("v1.2.3")) && is_immutable_ref(Some(&"a".repeat(40))));
        assert!(!is_immutable_ref(Some("main")) && !is_immutable_ref(None));
        assert_eq!(
            redact(&Url::parse("https://u:p@example.com/x.zip?sig=secret").unwrap()),
            "https://example.com/x.zip"
        );
    }
}
