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
    /// `driftback serve`'s queue: the SQS queue an EventBridge rule feeds.
    pub feed: driftback_feed::SqsConfig,
    /// CloudTrail LookupEvents backfill (`driftback backfill`, and `serve` at start-up).
    pub backfill: driftback_feed::BackfillConfig,
    /// `driftback serve`: the repository, the operations endpoint, leases and shutdown.
    pub serve: ServeConfig,
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
    /// Address of `/healthz`, `/readyz` and `/metrics`.
    pub listen: String,
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
            shutdown_deadline_secs: 30,
            max_change_set_age_secs: 900,
            replica: None,
            lease_secs: 300,
            poll_ms: 1000,
            checkpoint_interval_secs: 60,
            checkpoint_margin_secs: 900,
        }
    }
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
}
