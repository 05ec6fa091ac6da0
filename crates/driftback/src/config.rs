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
    pub policy: PolicyConfig,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PolicyConfig {
    /// The ownership policy, relative to the repository. Missing file: the built-in safe defaults.
    pub file: PathBuf,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig { file: PathBuf::from(crate::policy_cmd::DEFAULT_POLICY_FILE) }
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
        builder = builder.add_source(
            config::Environment::with_prefix("DRIFTBACK")
                .prefix_separator("_")
                .separator("__")
                .try_parsing(true)
                .list_separator(","),
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
}
