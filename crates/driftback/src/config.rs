//! The configuration file (TOML) with environment overrides (`DRIFTBACK_<SECTION>__<KEY>`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use driftback_embed::EmbedConfig;
use driftback_events::{FilterConfig, GroupConfig};
use driftback_store::OpenOptions;

/// Where the policy file lives in the infrastructure repository, by default.
pub const DEFAULT_POLICY_FILE: &str = ".driftback/policy.toml";

/// Every key, with its default. Unknown keys are rejected with their name.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Which calls are the IaC tool's own (besides Terraform's and OpenTofu's user agents).
    pub filter: FilterConfig,
    /// How events become change sets.
    pub group: GroupConfig,
    pub store: StoreConfig,
    pub publish: PublishConfig,
    /// Escalations and reverts posted to a chat or JSON webhook.
    pub notify: NotifyConfig,
    pub recipes: RecipesConfig,
    pub policy: PolicyConfig,
    /// How knowledge is embedded for similarity search.
    pub embed: EmbedConfig,
    /// The LLM agent for what no recipe covers.
    pub agent: AgentConfig,
    /// `driftback serve`'s queue: the SQS queue an EventBridge rule feeds.
    pub feed: driftback_feed::SqsConfig,
    /// CloudTrail LookupEvents backfill (`driftback backfill`, and `serve` at start-up).
    pub backfill: driftback_feed::BackfillConfig,
    /// `driftback serve`: the repository, the operations endpoint, leases and shutdown.
    pub serve: ServeConfig,
    /// `[[stack]]`: root modules discovery cannot see, and workspaces, tfvars and partial backend
    /// configuration for those it finds (docs/operations.md, "Stacks and state").
    pub stack: Vec<driftback_stacks::StackConfig>,
    /// Module code for registry, git and archive module sources (docs/operations.md, "Modules").
    pub modules: ModulesConfig,
}

/// `[modules]`: fetching the code of module calls whose source is a registry, git or an archive.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModulesConfig {
    /// Fetch module code that is not in the checkout (a root module's
    /// `.terraform/modules/modules.json` is used whenever it is there, fetched or not).
    pub fetch: bool,
    /// The cache of fetched packages, one directory per source and version. Empty: beside
    /// `[serve] workdir`, in `<workdir>-modules` (never inside the clone).
    pub cache_dir: PathBuf,
    /// The most one package may download, and unpack to.
    pub max_package_bytes: u64,
    /// The longest one package's fetch may take.
    pub fetch_timeout_seconds: u64,
    /// Keys for git module sources over SSH: `[modules.ssh]` (one key for every host) or
    /// `[[modules.ssh]]` entries with `hosts`, the first naming a source's host being used. A
    /// host none names gets what `ssh` would use: the agent, then `~/.ssh/id_ed25519`, then
    /// `~/.ssh/id_rsa`, with `~/.ssh/known_hosts`.
    #[serde(deserialize_with = "one_or_many")]
    pub ssh: Vec<ModulesSshConfig>,
}

impl Default for ModulesConfig {
    fn default() -> Self {
        ModulesConfig {
            fetch: true,
            cache_dir: PathBuf::new(),
            max_package_bytes: 64 << 20,
            fetch_timeout_seconds: 60,
            ssh: Vec::new(),
        }
    }
}

/// `[modules.ssh]` or one `[[modules.ssh]]`: the keys of `[publish.ssh]`, and the hosts the key is
/// for.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModulesSshConfig {
    /// Host names or patterns (`github.com`, `*.corp.example`) of the module sources this key is
    /// for; empty: every host.
    #[serde(default)]
    pub hosts: Vec<String>,
    /// The private key (OpenSSH or PEM format; a mounted secret).
    pub private_key_file: PathBuf,
    /// The hosts' key lines, from `ssh-keyscan HOST` (without `-H`), checked against the
    /// fingerprints the hosts publish.
    pub known_hosts_file: PathBuf,
    /// The user on the git host when the source's URL names none.
    #[serde(default = "default_ssh_user")]
    pub username: String,
    /// The environment variable holding the key's passphrase, if it has one (never the file).
    pub passphrase_env: Option<String>,
}

/// One table or an array of tables, as a list.
fn one_or_many<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<ModulesSshConfig>, D::Error> {
    struct Visitor;
    impl<'de> serde::de::Visitor<'de> for Visitor {
        type Value = Vec<ModulesSshConfig>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a [modules.ssh] table or [[modules.ssh]] tables")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            Ok(vec![ModulesSshConfig::deserialize(serde::de::value::MapAccessDeserializer::new(map))?])
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            Vec::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
        }
    }
    deserializer.deserialize_any(Visitor)
}

impl ModulesConfig {
    /// The SSH settings for git module sources: the configured keys, checked (files there, the
    /// passphrase in its variable), and this process's defaults. Errors name the setting, never
    /// the key file.
    pub fn ssh_settings(&self) -> anyhow::Result<driftback_modules::SshSettings> {
        use driftback_modules::{DefaultIdentities, HostKey, Secret, SshKey, SshSettings};
        let mut keys = Vec::new();
        for (n, ssh) in self.ssh.iter().enumerate() {
            let name = if self.ssh.len() == 1 { "modules.ssh".to_string() } else { format!("modules.ssh[{n}]") };
            let passphrase = match &ssh.passphrase_env {
                Some(var) => Some(Secret::new(std::env::var(var).with_context(|| {
                    format!("the SSH key's passphrase is not in the environment variable {var} ({name}.passphrase_env)")
                })?)),
                None => None,
            };
            anyhow::ensure!(
                ssh.private_key_file.is_file(),
                "{name}.private_key_file is not a file: mount the key where the setting says"
            );
            anyhow::ensure!(
                ssh.known_hosts_file.is_file(),
                "{name}.known_hosts_file {} is not a file: write the hosts' lines there (`ssh-keyscan HOST`)",
                ssh.known_hosts_file.display()
            );
            keys.push(HostKey {
                hosts: ssh.hosts.clone(),
                key: SshKey {
                    username: ssh.username.clone(),
                    private_key: ssh.private_key_file.clone(),
                    passphrase,
                    known_hosts: ssh.known_hosts_file.clone(),
                },
            });
        }
        Ok(SshSettings { keys, defaults: DefaultIdentities::from_env() })
    }

    /// The cache directory: `cache_dir`, or `<workdir>-modules` beside the work directory.
    pub fn cache_dir(&self, serve: &ServeConfig) -> PathBuf {
        if !self.cache_dir.as_os_str().is_empty() {
            return self.cache_dir.clone();
        }
        let mut name = serve.workdir.file_name().map(|n| n.to_os_string()).unwrap_or_else(|| "driftback-work".into());
        name.push("-modules");
        serve.workdir.with_file_name(name)
    }
}

/// `[serve]`: the daemon's repository, operations endpoint, change-set leases and shutdown.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServeConfig {
    /// The infrastructure repository to clone (a URL or a path to a bare repository). driftback
    /// owns the clone in `workdir`: it fetches and resets it to `base_branch` before each change set
    /// and pushes its branches there.
    pub repo_url: Option<String>,
    /// Or: a repository mounted in the container, used as it is (no fetch, no reset, no push):
    /// branches start from its checked-out commit.
    pub repo_path: Option<PathBuf>,
    /// Where the clone of `repo_url` lives.
    pub workdir: PathBuf,
    /// The branch every driftback branch starts from.
    pub base_branch: String,
    /// The Terraform state, relative to the repository.
    pub state_path: PathBuf,
    /// Address of `/healthz`, `/readyz` and `/metrics` (and of the GitHub webhook when
    /// `webhook_listen` is not set).
    pub listen: String,
    /// Address of the GitHub webhook (`/webhook/github`) on a listener of its own, so it can be
    /// exposed through an Ingress while the metrics and probes stay inside the cluster.
    pub webhook_listen: Option<String>,
    /// On SIGTERM or SIGINT, in-flight work gets this long to finish before the process exits
    /// (unfinished messages reappear on the queue; unfinished change sets are released).
    pub shutdown_deadline_secs: u64,
    /// A change set takes events for at most this long after its first, so a resource touched
    /// every minute is still reconciled (at most this plus the quiet window after its first event).
    pub max_change_set_age_secs: u64,
    /// This replica's name in change-set leases; default: host name and process id.
    pub replica: Option<String>,
    /// How long a claimed change set is leased (renewed while work goes on).
    pub lease_secs: u64,
    /// How often the store is asked for due change sets when none was due.
    pub poll_ms: u64,
    /// How many times a change set is tried before a failure that persists (an unreachable remote,
    /// a state that does not parse) fails it for good, with the last reason. The pause between
    /// tries doubles up to 60 s, so the default gives a failure about 45 minutes to clear.
    pub max_attempts: u32,
    /// While the feed runs, the CloudTrail checkpoint moves every this many seconds to now minus
    /// `checkpoint_margin_secs` (CloudTrail delivers within about 5 minutes), so a restart backfills
    /// only the time it was down.
    pub checkpoint_interval_secs: u64,
    pub checkpoint_margin_secs: u64,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            repo_url: None,
            repo_path: None,
            workdir: PathBuf::from("driftback-work"),
            base_branch: "main".into(),
            state_path: PathBuf::from("terraform.tfstate"),
            listen: "127.0.0.1:9464".into(),
            webhook_listen: None,
            shutdown_deadline_secs: 30,
            max_change_set_age_secs: 900,
            replica: None,
            lease_secs: 300,
            poll_ms: 1000,
            max_attempts: 50,
            checkpoint_interval_secs: 60,
            checkpoint_margin_secs: 900,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PolicyConfig {
    /// The ownership policy, relative to the repository. Missing file: the built-in safe defaults.
    pub file: PathBuf,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig { file: PathBuf::from(DEFAULT_POLICY_FILE) }
    }
}

/// The `[store]` section of the configuration file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreConfig {
    /// The knowledge base: `postgres://USER@HOST:PORT/DB` or `sqlite:PATH`. Unset: the SQLite file
    /// `sqlite_path`.
    pub url: Option<String>,
    /// The embedded knowledge base (SQLite) when `url` is unset. Relative paths are relative to the
    /// repository.
    pub sqlite_path: PathBuf,
    /// Connection attempts while the database does not answer at start.
    pub connect_attempts: u32,
    /// The longest time spent on those attempts, in seconds.
    pub connect_max_wait_secs: u64,
    /// Connections in the pool (Postgres).
    pub max_connections: u32,
}

impl Default for StoreConfig {
    fn default() -> Self {
        let open = OpenOptions::default();
        StoreConfig {
            url: None,
            sqlite_path: PathBuf::from(".git/driftback/kb.sqlite"),
            connect_attempts: open.connect_attempts,
            connect_max_wait_secs: open.connect_max_wait.as_secs(),
            max_connections: open.max_connections,
        }
    }
}

impl StoreConfig {
    /// The store URL: `url`, else `sqlite:` and `sqlite_path` resolved against `repo`.
    pub fn resolved_url(&self, repo: &Path) -> String {
        match &self.url {
            Some(url) if !url.trim().is_empty() => url.clone(),
            _ => {
                let path = if self.sqlite_path.is_absolute() {
                    self.sqlite_path.clone()
                } else {
                    repo.join(&self.sqlite_path)
                };
                format!("sqlite:{}", path.display())
            }
        }
    }

    pub fn open_options(&self) -> OpenOptions {
        OpenOptions {
            connect_attempts: self.connect_attempts.max(1),
            connect_max_wait: Duration::from_secs(self.connect_max_wait_secs),
            max_connections: self.max_connections.max(1),
            ..OpenOptions::default()
        }
    }
}

/// Where reconciled change sets go. See docs/publishing.md.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PublishConfig {
    /// `none`: local branches only (the embedded default); `push`: also push each branch to the
    /// remote; `pull-request`: push and open (or update) one pull request per resource.
    pub mode: PublishMode,
    /// Branches are named `<prefix>/<address>-<change set>`.
    pub branch_prefix: String,
    pub author_name: String,
    pub author_email: String,
    /// The remote to push to: `https://...` or a local path. Default: the repository's `origin`.
    pub remote_url: Option<String>,
    /// The branch pull requests target. Default: the checked-out branch.
    pub base_branch: Option<String>,
    /// The environment variable holding the token (HTTPS clone, fetch, push and the GitHub API).
    /// Never logged, never written into the clone.
    pub token_env: String,
    /// Or: a file holding the token (a mounted secret); read at start, wins over `token_env`.
    pub token_file: Option<PathBuf>,
    /// Or: a GitHub App whose installation tokens are minted and refreshed before they expire.
    pub app: Option<AppConfig>,
    /// Or: an SSH deploy key, for an `ssh://` or `git@HOST:` repository URL.
    pub ssh: Option<SshConfig>,
    /// GitHub's REST API: `https://api.github.com`, or `https://HOST/api/v3` for GitHub Enterprise.
    pub api_url: String,
    /// `OWNER/NAME` on GitHub. Default: taken from the remote URL.
    pub repository: Option<String>,
    /// Labels put on new pull requests.
    pub labels: Vec<String>,
    /// Open pull requests as drafts.
    pub draft: bool,
    /// Tries for network and server failures (push, fetch, API), with exponential backoff.
    pub retry_attempts: u32,
    /// The first backoff wait, doubled after each further failure (at most 30 s).
    pub retry_delay_ms: u64,
    /// The environment variable holding the webhook secret (for `X-Hub-Signature-256`).
    pub webhook_secret_env: String,
    /// Or: a file holding the webhook secret (a mounted secret); wins over `webhook_secret_env`.
    pub webhook_secret_file: Option<PathBuf>,
    /// With `pull-request`: publish escalations and reverts as one GitHub issue per resource
    /// (closed when a later change on the resource is written into the code).
    pub escalation_issues: bool,
    /// With escalation issues on: a decision that waits whose held edit can be written (it passes
    /// the checks a reconciled patch passes) is published as a draft pull request holding that
    /// edit instead of an issue, so accepting is marking it ready and merging. `false`: always an
    /// issue (for repositories where a pushed branch starts pipelines, or drafts are unwanted).
    pub escalation_drafts: bool,
}

/// `[publish.app]`: a GitHub App that may read and write the repository (Contents, Pull requests,
/// Issues). Its installation tokens last an hour; the next is minted before one expires.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppConfig {
    /// The App's id (or client id), on its settings page.
    pub app_id: String,
    /// The installation on the repository's owner (the number in the installation's settings URL).
    pub installation_id: u64,
    /// The App's private key, the PEM file GitHub generated (a mounted secret).
    pub private_key_file: PathBuf,
    /// Mint the next token when less than this is left of the current one's hour.
    #[serde(default = "default_refresh_before_secs")]
    pub refresh_before_secs: u64,
}

fn default_refresh_before_secs() -> u64 {
    600
}

/// `[publish.ssh]`: a deploy key for an SSH repository URL; the host's key must be in
/// `known_hosts_file`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SshConfig {
    /// The private key (OpenSSH or PEM format; a mounted secret).
    pub private_key_file: PathBuf,
    /// The git host's key lines, from `ssh-keyscan HOST` (without `-H`), checked against the
    /// fingerprints the host publishes.
    pub known_hosts_file: PathBuf,
    /// The user on the git host when the URL names none.
    #[serde(default = "default_ssh_user")]
    pub username: String,
    /// The environment variable holding the key's passphrase, if it has one.
    pub passphrase_env: Option<String>,
}

fn default_ssh_user() -> String {
    "git".into()
}

/// How driftback reaches the repository and GitHub, from `[publish]`: one set of credentials for
/// clone, fetch and push, and the token for the GitHub API (the same App's, when an App is used).
#[derive(Debug, Clone)]
pub struct RepositoryAccess {
    pub credentials: driftback_publish::Credentials,
    pub api_token: Option<driftback_publish::Token>,
}

impl PublishConfig {
    /// The credentials for `url` (`https://`, SSH or a local path) and the GitHub API token. An
    /// App wins over a token; a token file over the environment variable. Nothing configured:
    /// no credentials (a public repository or a local path).
    pub fn access(&self, url: &str) -> anyhow::Result<RepositoryAccess> {
        use driftback_publish::{AppSettings, AppTokens, Credentials, Secret, SshKey, Token};
        if let Some(shown) = without_password(url) {
            anyhow::bail!(
                "the repository URL {shown} holds a password or token: it would be logged and kept in the clone's \
                 .git/config. Give the URL without it, and the token in publish.token_env or publish.token_file \
                 (or a GitHub App, [publish.app])"
            );
        }
        let token = match (&self.app, &self.token_file) {
            (Some(app), _) => {
                let settings = AppSettings {
                    app_id: app.app_id.clone(),
                    installation_id: app.installation_id,
                    private_key_file: app.private_key_file.clone(),
                    api_url: self.api_url.clone(),
                    refresh_before: Duration::from_secs(app.refresh_before_secs),
                };
                Some(Token::App(std::sync::Arc::new(AppTokens::new(&settings)?)))
            }
            (None, Some(file)) => {
                let text = std::fs::read_to_string(file)
                    .with_context(|| format!("reading the token file {} (publish.token_file)", file.display()))?;
                let text = text.trim();
                anyhow::ensure!(
                    !text.is_empty(),
                    "the token file {} (publish.token_file) is empty; put the token in it",
                    file.display()
                );
                Some(Token::Fixed(Secret::new(text)))
            }
            (None, None) => std::env::var(&self.token_env)
                .ok()
                .filter(|t| !t.trim().is_empty())
                .map(|t| Token::Fixed(Secret::new(t.trim()))),
        };
        let lower = url.to_ascii_lowercase();
        let ssh_url = lower.starts_with("ssh://") || is_scp_like(url);
        let credentials = if ssh_url {
            let ssh = self.ssh.as_ref().with_context(|| {
                format!("{url} is an SSH URL: configure [publish.ssh] private_key_file and known_hosts_file")
            })?;
            let passphrase = match &ssh.passphrase_env {
                Some(var) => Some(Secret::new(std::env::var(var).with_context(|| {
                    format!(
                        "the SSH key's passphrase is not in the environment variable {var} (publish.ssh.passphrase_env)"
                    )
                })?)),
                None => None,
            };
            for (file, key) in
                [(&ssh.private_key_file, "private_key_file"), (&ssh.known_hosts_file, "known_hosts_file")]
            {
                anyhow::ensure!(file.is_file(), "publish.ssh.{key} {} is not a file", file.display());
            }
            Credentials::Ssh(SshKey {
                username: ssh.username.clone(),
                private_key: ssh.private_key_file.clone(),
                passphrase,
                known_hosts: ssh.known_hosts_file.clone(),
            })
        } else if lower.starts_with("https://") || lower.starts_with("http://") {
            match &token {
                Some(token) => Credentials::Token { username: "x-access-token".into(), token: token.clone() },
                None => Credentials::None,
            }
        } else {
            Credentials::None
        };
        Ok(RepositoryAccess { credentials, api_token: token })
    }

    /// The webhook secret: from `webhook_secret_file`, else `webhook_secret_env`; `None` when
    /// neither holds one.
    pub fn webhook_secret(&self) -> anyhow::Result<Option<driftback_publish::Secret>> {
        if let Some(file) = &self.webhook_secret_file {
            let text = std::fs::read_to_string(file).with_context(|| {
                format!("reading the webhook secret file {} (publish.webhook_secret_file)", file.display())
            })?;
            let text = text.trim();
            anyhow::ensure!(!text.is_empty(), "the webhook secret file {} is empty", file.display());
            return Ok(Some(driftback_publish::Secret::new(text)));
        }
        Ok(std::env::var(&self.webhook_secret_env).ok().filter(|s| !s.is_empty()).map(driftback_publish::Secret::new))
    }
}

/// `https://user:SECRET@host/...` with the secret shown as `***`; `None` when the URL holds no
/// password (no user information, or a user name alone).
fn without_password(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let (userinfo, host) = authority.rsplit_once('@')?;
    let (user, _) = userinfo.split_once(':')?;
    Some(format!("{scheme}://{user}:***@{host}{}", &rest[authority.len()..]))
}

/// `git@github.com:owner/repo.git`: a colon before the first slash, and not a drive letter.
fn is_scp_like(url: &str) -> bool {
    match (url.find(':'), url.find('/')) {
        (Some(colon), slash) => colon > 1 && slash.is_none_or(|s| colon < s) && !url.contains("://"),
        (None, _) => false,
    }
}

/// `[notify]`: escalations and reverts posted to a chat or JSON webhook. See docs/publishing.md.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NotifyConfig {
    /// The environment variable holding the webhook URL (a chat webhook URL is a secret: never in
    /// the configuration file). Unset or empty: no notifications.
    pub url_env: String,
    /// `slack` (Slack's incoming-webhook format, `{"text": ...}`) or `json`.
    pub format: driftback_publish::notify::NotifyFormat,
    /// Notices arriving within this many seconds of the first become one message.
    pub group_secs: u64,
}

impl Default for NotifyConfig {
    fn default() -> Self {
        NotifyConfig {
            url_env: "DRIFTBACK_NOTIFY_URL".into(),
            format: driftback_publish::notify::NotifyFormat::Slack,
            group_secs: 60,
        }
    }
}

/// How far publishing goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", try_from = "String")]
pub enum PublishMode {
    #[default]
    None,
    Push,
    PullRequest,
}

impl TryFrom<String> for PublishMode {
    type Error = String;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        match value.as_str() {
            "none" => Ok(PublishMode::None),
            "push" => Ok(PublishMode::Push),
            "pull-request" => Ok(PublishMode::PullRequest),
            other => Err(format!("publish.mode {other:?} is not one of none, push, pull-request")),
        }
    }
}

impl Default for PublishConfig {
    fn default() -> Self {
        PublishConfig {
            mode: PublishMode::None,
            branch_prefix: "driftback".into(),
            author_name: "driftback".into(),
            author_email: "driftback@localhost".into(),
            remote_url: None,
            base_branch: None,
            token_env: "GITHUB_TOKEN".into(),
            token_file: None,
            app: None,
            ssh: None,
            api_url: "https://api.github.com".into(),
            repository: None,
            labels: vec!["driftback".into()],
            draft: false,
            retry_attempts: 4,
            retry_delay_ms: 500,
            webhook_secret_env: "DRIFTBACK_WEBHOOK_SECRET".into(),
            webhook_secret_file: None,
            escalation_issues: true,
            escalation_drafts: true,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RecipesConfig {
    /// Extra recipe catalogs (same format as the built-in one), tried before the built-in recipes.
    pub catalogs: Vec<PathBuf>,
    /// Recipes not to use, by id (`driftback catalog` lists them) or by call
    /// (`<eventSource>:<eventName>`): a recipe that misbehaves on your code can be switched off
    /// without a release. Its change sets go to the agent or a person.
    pub disabled: Vec<String>,
}

/// `[agent]`: the LLM agent for change sets no recipe covers. Without an API key it is off and
/// those change sets are escalated with the reason.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// Set to false to never call an LLM, even with a key.
    pub enabled: bool,
    /// An OpenAI-compatible API base (OpenAI, Azure's /openai/v1, vLLM, Ollama, LiteLLM, ...).
    pub base_url: String,
    pub model: String,
    /// Environment variables that may hold the API key, tried in order. The key is never read
    /// from the configuration file.
    pub api_key_env: Vec<String>,
    pub temperature: f32,
    /// Model turns per change set before it is escalated.
    pub max_rounds: u32,
    /// Prompt plus completion tokens per change set before it is escalated.
    pub max_tokens_per_change_set: u64,
    /// Upper bound on one completion.
    pub max_completion_tokens: u32,
    /// Per HTTP request to the endpoint.
    pub timeout_secs: u64,
    /// Further attempts after a transport error, a timeout, HTTP 429 or 5xx.
    pub retries: u32,
    /// Wait before the first retry, doubled for each next one.
    pub backoff_ms: u64,
    /// Similar past reconciliations put in the first prompt.
    pub similar: usize,
    /// Tool calls carried out from one model turn; the rest are answered with an error.
    pub max_tool_calls_per_turn: usize,
    /// Generalise validated LLM reconciliations into recipes.
    pub learn: bool,
}

impl Default for AgentConfig {
    fn default() -> Self {
        let d = driftback_agent::Settings::default();
        AgentConfig {
            enabled: true,
            base_url: d.base_url,
            model: d.model,
            api_key_env: vec!["DRIFTBACK_LLM_API_KEY".into()],
            temperature: d.temperature,
            max_rounds: d.max_rounds,
            max_tokens_per_change_set: d.max_tokens,
            max_completion_tokens: d.max_completion_tokens,
            timeout_secs: d.timeout.as_secs(),
            retries: d.retries,
            backoff_ms: d.backoff.as_millis() as u64,
            similar: d.similar,
            max_tool_calls_per_turn: d.max_tool_calls_per_turn,
            learn: true,
        }
    }
}

impl AgentConfig {
    /// The agent's settings, or `None` (with the reason) when it is off.
    pub fn settings(&self) -> anyhow::Result<Result<driftback_agent::Settings, String>> {
        if !self.enabled {
            return Ok(Err("the LLM agent is disabled ([agent] enabled = false)".into()));
        }
        let key = self.api_key_env.iter().find_map(|name| std::env::var(name).ok().filter(|k| !k.trim().is_empty()));
        let Some(api_key) = key else {
            return Ok(Err(format!("the LLM agent is off: no API key in {}", self.api_key_env.join(" or "))));
        };
        anyhow::ensure!(
            self.base_url.starts_with("http://") || self.base_url.starts_with("https://"),
            "[agent] base_url {:?} is not an http(s) URL",
            self.base_url
        );
        anyhow::ensure!((0.0..=2.0).contains(&self.temperature), "[agent] temperature must be between 0 and 2");
        anyhow::ensure!(self.max_rounds >= 1, "[agent] max_rounds must be at least 1");
        anyhow::ensure!(self.timeout_secs >= 1, "[agent] timeout_secs must be at least 1");
        anyhow::ensure!(self.max_tool_calls_per_turn >= 1, "[agent] max_tool_calls_per_turn must be at least 1");
        Ok(Ok(driftback_agent::Settings {
            base_url: self.base_url.clone(),
            model: self.model.clone(),
            api_key,
            temperature: self.temperature,
            max_rounds: self.max_rounds,
            max_tokens: self.max_tokens_per_change_set,
            max_completion_tokens: self.max_completion_tokens,
            timeout: std::time::Duration::from_secs(self.timeout_secs),
            retries: self.retries,
            backoff: std::time::Duration::from_millis(self.backoff_ms),
            similar: self.similar,
            max_tool_calls_per_turn: self.max_tool_calls_per_turn,
            ..driftback_agent::Settings::default()
        }))
    }
}

impl Config {
    /// Load `path` (if given) and the environment. A missing explicit file is an error.
    pub fn load(path: Option<&Path>) -> anyhow::Result<Config> {
        let mut builder = config::Config::builder();
        if let Some(path) = path {
            anyhow::ensure!(path.is_file(), "configuration file {} does not exist", path.display());
            builder = builder.add_source(config::File::from(path).format(config::FileFormat::Toml));
        }
        // Only DRIFTBACK_<SECTION>__<KEY>: DRIFTBACK_LOG, DRIFTBACK_CONFIG and the like are not keys.
        let vars = std::env::vars().filter(|(k, _)| k.starts_with("DRIFTBACK_") && k.contains("__")).collect();
        builder = builder.add_source(environment().source(Some(vars)));
        let raw = builder.build().context("reading the configuration")?;
        let origin = path.map(|p| p.display().to_string()).unwrap_or_else(|| "the environment".into());
        raw.try_deserialize::<Config>().with_context(|| format!("invalid configuration in {origin}"))
    }
}

/// `DRIFTBACK_<SECTION>__<KEY>` variables. Only the keys that are lists are split on commas;
/// every other value stays one string or number (a URL keeps its commas).
fn environment() -> config::Environment {
    config::Environment::with_prefix("DRIFTBACK")
        .prefix_separator("_")
        .separator("__")
        .try_parsing(true)
        .list_separator(",")
        .with_list_parse_key("filter.iac_principals")
        .with_list_parse_key("recipes.catalogs")
        .with_list_parse_key("recipes.disabled")
        .with_list_parse_key("publish.labels")
        .with_list_parse_key("agent.api_key_env")
        .with_list_parse_key("feed.accounts")
        .with_list_parse_key("feed.regions")
        .with_list_parse_key("feed.trail_buckets")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_wins_over_the_sqlite_path() {
        let config = StoreConfig::default();
        assert_eq!(config.resolved_url(Path::new("/repo")), "sqlite:/repo/.git/driftback/kb.sqlite");
        let config = StoreConfig { sqlite_path: "/var/lib/kb.sqlite".into(), ..StoreConfig::default() };
        assert_eq!(config.resolved_url(Path::new("/repo")), "sqlite:/var/lib/kb.sqlite");
        let config = StoreConfig { url: Some("postgres://kb@db/kb".into()), ..config };
        assert_eq!(config.resolved_url(Path::new("/repo")), "postgres://kb@db/kb");
    }

    #[test]
    fn repository_access_takes_a_token_file_an_app_or_an_ssh_key_and_says_what_is_missing() {
        use driftback_publish::{Credentials, Token};
        let dir = tempfile::tempdir().unwrap();
        let token_file = dir.path().join("token");
        std::fs::write(&token_file, "ghp_from_a_file\n").unwrap();
        let config = PublishConfig {
            token_env: "DRIFTBACK_TEST_TOKEN_UNSET".into(),
            token_file: Some(token_file.clone()),
            ..PublishConfig::default()
        };
        let access = config.access("https://github.com/acme/infra.git").unwrap();
        match access.credentials {
            Credentials::Token { token: Token::Fixed(secret), .. } => assert_eq!(secret.expose(), "ghp_from_a_file"),
            other => panic!("{other:?}"),
        }
        // A local path needs none; the API token is still there for pull requests.
        assert!(matches!(config.access("/srv/git/infra.git").unwrap().credentials, Credentials::None));
        assert!(config.access("/srv/git/infra.git").unwrap().api_token.is_some());
        // Nothing configured: no credentials (a public repository); the clone says what to set if asked.
        let none = PublishConfig { token_env: "DRIFTBACK_TEST_TOKEN_UNSET".into(), ..PublishConfig::default() };
        assert!(matches!(none.access("https://github.com/a/b.git").unwrap().credentials, Credentials::None));
        // An SSH URL needs [publish.ssh].
        let err = none.access("git@github.com:acme/infra.git").unwrap_err().to_string();
        assert!(err.contains("[publish.ssh]"), "{err}");
        // A token in the URL is refused, naming where it goes instead, without repeating it.
        let err = none.access("https://x-access-token:ghp_inTheUrl@github.com/a/b.git").unwrap_err().to_string();
        assert!(err.contains("https://x-access-token:***@github.com/a/b.git") && err.contains("publish.token_env"));
        assert!(!err.contains("ghp_inTheUrl"), "{err}");
        // A user name alone, or an @ further on, is no password.
        assert!(none.access("https://git@github.com/a/b.git").is_ok());
        assert!(none.access("https://github.com/a/b@c:d").is_ok());
        // An App whose key file is missing is named.
        let path = dir.path().join("driftback.toml");
        std::fs::write(
            &path,
            "[publish.app]\napp_id = \"12\"\ninstallation_id = 34\nprivate_key_file = \"/nonexistent/app.pem\"\n",
        )
        .unwrap();
        let config = Config::load(Some(&path)).unwrap();
        assert_eq!(config.publish.app.as_ref().unwrap().refresh_before_secs, 600);
        let err = config.publish.access("https://github.com/a/b.git").unwrap_err().to_string();
        assert!(err.contains("/nonexistent/app.pem"), "{err}");
        // The webhook secret from a file.
        let secret = dir.path().join("webhook");
        std::fs::write(&secret, "s3cret\n").unwrap();
        let config = PublishConfig { webhook_secret_file: Some(secret), ..PublishConfig::default() };
        assert_eq!(config.webhook_secret().unwrap().unwrap().expose(), "s3cret");
    }

    #[test]
    fn unknown_keys_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("driftback.toml");
        std::fs::write(&path, "[group]\nquiet_window_secs = 30\n").unwrap();
        assert_eq!(Config::load(Some(&path)).unwrap().group.quiet_window_secs, 30);
        std::fs::write(&path, "[group]\nquiet_windw_secs = 30\n").unwrap();
        let err = format!("{:#}", Config::load(Some(&path)).unwrap_err());
        assert!(err.contains("quiet_windw_secs"), "{err}");
        assert!(Config::load(Some(&dir.path().join("missing.toml"))).is_err());
    }

    #[test]
    fn the_modules_cache_is_beside_the_work_directory_unless_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("driftback.toml");
        std::fs::write(&path, "[serve]\nworkdir = \"/var/lib/driftback/infra/\"\n").unwrap();
        let config = Config::load(Some(&path)).unwrap();
        assert!(config.modules.fetch);
        assert_eq!(config.modules.cache_dir(&config.serve), PathBuf::from("/var/lib/driftback/infra-modules"));
        std::fs::write(&path, "[modules]\nfetch = false\ncache_dir = \"/cache\"\nfetch_timeout_seconds = 5\n").unwrap();
        let config = Config::load(Some(&path)).unwrap();
        assert!(!config.modules.fetch);
        assert_eq!(config.modules.fetch_timeout_seconds, 5);
        assert_eq!(config.modules.cache_dir(&config.serve), PathBuf::from("/cache"));
        std::fs::write(&path, "[modules]\ncache = \"/x\"\n").unwrap();
        assert!(format!("{:#}", Config::load(Some(&path)).unwrap_err()).contains("cache"));
    }

    #[test]
    fn module_ssh_keys_are_one_table_or_several_with_hosts_and_say_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("driftback.toml");
        let (key, known_hosts) = (dir.path().join("modules-key"), dir.path().join("known_hosts"));
        std::fs::write(&known_hosts, "github.com ssh-ed25519 AAAA\n").unwrap();
        let table = format!(
            "[modules.ssh]\nprivate_key_file = {:?}\nknown_hosts_file = {:?}\n",
            key.display().to_string(),
            known_hosts.display().to_string()
        );
        std::fs::write(&path, &table).unwrap();
        let config = Config::load(Some(&path)).unwrap();
        assert_eq!(config.modules.ssh.len(), 1);
        assert!(config.modules.ssh[0].hosts.is_empty() && config.modules.ssh[0].username == "git");
        // The key file is not there yet: the error names the setting, never the file.
        let err = format!("{:#}", config.modules.ssh_settings().unwrap_err());
        assert!(err.contains("modules.ssh.private_key_file is not a file") && !err.contains("modules-key"), "{err}");
        std::fs::write(&key, "key").unwrap();
        let settings = config.modules.ssh_settings().unwrap();
        assert!(settings.keys[0].hosts.is_empty() && settings.keys[0].key.passphrase.is_none());

        let entries = format!(
            "[[modules.ssh]]\nhosts = [\"github.com\"]\nprivate_key_file = {k:?}\nknown_hosts_file = {h:?}\n\
             passphrase_env = \"DRIFTBACK_TEST_UNSET_PASSPHRASE\"\n\
             [[modules.ssh]]\nhosts = [\"*.corp.example\"]\nprivate_key_file = {k:?}\nknown_hosts_file = {h:?}\nusername = \"deploy\"\n",
            k = key.display().to_string(),
            h = known_hosts.display().to_string()
        );
        std::fs::write(&path, &entries).unwrap();
        let config = Config::load(Some(&path)).unwrap();
        assert_eq!(config.modules.ssh.len(), 2);
        assert_eq!(
            (config.modules.ssh[1].hosts[0].as_str(), config.modules.ssh[1].username.as_str()),
            ("*.corp.example", "deploy")
        );
        let err = format!("{:#}", config.modules.ssh_settings().unwrap_err());
        assert!(err.contains("DRIFTBACK_TEST_UNSET_PASSPHRASE (modules.ssh[0].passphrase_env)"), "{err}");

        // A passphrase in the file, or any other unknown key, is refused by name.
        std::fs::write(&path, format!("{table}passphrase = \"x\"\n")).unwrap();
        let err = format!("{:#}", Config::load(Some(&path)).unwrap_err());
        assert!(err.contains("passphrase"), "{err}");
    }

    #[test]
    fn agent_settings_come_from_the_file_and_the_key_only_from_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("driftback.toml");
        std::fs::write(
            &path,
            "[agent]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\napi_key_env = [\"DRIFTBACK_TEST_KEY_A\"]\nmax_rounds = 5\n",
        )
        .unwrap();
        let config = Config::load(Some(&path)).unwrap();
        let off = config.agent.settings().unwrap().unwrap_err();
        assert!(off.contains("no API key in DRIFTBACK_TEST_KEY_A"), "{off}");
        std::fs::write(&path, "[agent]\napi_key = \"sk-in-a-file\"\n").unwrap();
        let err = format!("{:#}", Config::load(Some(&path)).unwrap_err());
        assert!(err.contains("api_key"), "{err}");
        std::fs::write(&path, "[agent]\nbase_url = \"file:///etc/passwd\"\napi_key_env = [\"PATH\"]\n").unwrap();
        let err = Config::load(Some(&path)).unwrap().agent.settings().unwrap_err().to_string();
        assert!(err.contains("not an http(s) URL"), "{err}");
    }

    #[test]
    fn environment_values_keep_their_types() {
        let vars = [
            ("DRIFTBACK_FEED__ENDPOINT_URL", "http://127.0.0.1:5000"),
            ("DRIFTBACK_FEED__MAX_MESSAGES", "7"),
            ("DRIFTBACK_FILTER__IAC_PRINCIPALS", "terraform-ci,atlantis"),
        ];
        let map = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let raw = config::Config::builder().add_source(environment().source(Some(map))).build().unwrap();
        let config: Config = raw.try_deserialize().unwrap();
        assert_eq!(config.feed.endpoint_url.as_deref(), Some("http://127.0.0.1:5000"));
        assert_eq!(config.feed.max_messages, 7);
        assert_eq!(config.filter.iac_principals, ["terraform-ci", "atlantis"]);
    }

    #[test]
    fn publish_mode_is_none_unless_chosen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("driftback.toml");
        std::fs::write(&path, "").unwrap();
        assert_eq!(Config::load(Some(&path)).unwrap().publish.mode, PublishMode::None);
        std::fs::write(&path, "[publish]\nmode = \"pull-request\"\nlabels = [\"drift\"]\n").unwrap();
        let config = Config::load(Some(&path)).unwrap();
        assert_eq!(config.publish.mode, PublishMode::PullRequest);
        assert_eq!(config.publish.labels, ["drift"]);
        std::fs::write(&path, "[publish]\nmode = \"pr\"\n").unwrap();
        let err = format!("{:#}", Config::load(Some(&path)).unwrap_err());
        assert!(err.contains("pull-request"), "{err}");
    }
}
