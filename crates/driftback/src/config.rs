//! The configuration file (TOML) with environment overrides (`DRIFTBACK_<SECTION>__<KEY>`).

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use driftback_events::{FilterConfig, GroupConfig};

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
    pub recipes: RecipesConfig,
    /// The LLM agent for what no recipe covers.
    pub agent: AgentConfig,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreConfig {
    /// The embedded knowledge base (SQLite). Relative paths are relative to the repository.
    pub sqlite_path: PathBuf,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig { sqlite_path: PathBuf::from(".git/driftback/kb.sqlite") }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PublishConfig {
    /// Branches are named `<prefix>/<address>-<change set>`.
    pub branch_prefix: String,
    pub author_name: String,
    pub author_email: String,
}

impl Default for PublishConfig {
    fn default() -> Self {
        PublishConfig {
            branch_prefix: "driftback".into(),
            author_name: "driftback".into(),
            author_email: "driftback@localhost".into(),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RecipesConfig {
    /// Extra recipe catalogs (same format as the built-in one), tried before the built-in recipes.
    pub catalogs: Vec<PathBuf>,
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
        // Only DRIFTBACK_<SECTION>__<KEY> variables are configuration; DRIFTBACK_CONFIG,
        // DRIFTBACK_LOG and DRIFTBACK_LLM_API_KEY are read on their own.
        let keys: config::Map<String, String> =
            std::env::vars().filter(|(k, _)| k.starts_with("DRIFTBACK_") && k.contains("__")).collect();
        builder = builder.add_source(
            config::Environment::with_prefix("DRIFTBACK")
                .prefix_separator("_")
                .separator("__")
                .try_parsing(true)
                .list_separator(",")
                // Only these are lists; every other value stays one string, commas and all.
                .with_list_parse_key("filter.iac_principals")
                .with_list_parse_key("recipes.catalogs")
                .with_list_parse_key("agent.api_key_env")
                .source(Some(keys)),
        );
        let raw = builder.build().context("reading the configuration")?;
        let origin = path.map(|p| p.display().to_string()).unwrap_or_else(|| "the environment".into());
        raw.try_deserialize::<Config>().with_context(|| format!("invalid configuration in {origin}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
