//! Module code for a workspace: the module calls whose source is a registry, git or an archive,
//! read from the root module's `.terraform/modules/modules.json` when the checkout has one, else
//! fetched into the cache (`[modules]`), and mounted in the repository's index. Once per base
//! commit: the daemon keeps the workspace it loaded until the base moves.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use driftback_modules::{CliConfig, Fetcher, Settings};

use super::workspace::Workspace;
use crate::config::Config;

/// What fetches module code for this process (`None` when `[modules] fetch` is off).
#[derive(Debug)]
pub struct Modules {
    fetcher: Option<Fetcher>,
}

impl Modules {
    /// From `[modules]`, with the Terraform CLI configuration and tokens of this process's
    /// environment (`TF_CLI_CONFIG_FILE`, `TF_TOKEN_<host>`).
    pub fn new(config: &Config) -> anyhow::Result<Modules> {
        let modules = &config.modules;
        if !modules.fetch {
            return Ok(Modules { fetcher: None });
        }
        let cli = CliConfig::from_env().context("reading the Terraform CLI configuration for module registries")?;
        let settings = Settings {
            cache_dir: modules.cache_dir(&config.serve),
            max_package_bytes: modules.max_package_bytes,
            fetch_timeout: Duration::from_secs(modules.fetch_timeout_seconds),
        };
        let cache = settings.cache_dir.display().to_string();
        let fetcher = Fetcher::new(settings, cli).with_context(|| format!("[modules] cache_dir {cache}"))?;
        Ok(Modules { fetcher: Some(fetcher) })
    }

    /// Mount the module code `workspace`'s root module calls (the checkout is in `dir`). A call
    /// whose code cannot be had is recorded on the workspace with the reason, and logged; its
    /// resources are then not in the configuration, and change sets on them say why.
    pub async fn attach(&self, workspace: &mut Workspace, dir: &Path) {
        if workspace.repo.unresolved_module_calls().is_empty() {
            return;
        }
        let loaded = driftback_modules::load(self.fetcher.as_ref(), dir, &mut workspace.repo).await;
        for failed in &loaded.failed {
            tracing::warn!(error = %failed, "module code not available");
        }
        if !loaded.mounted.is_empty() {
            tracing::info!(modules = loaded.mounted.len(), from_manifest = loaded.from_manifest, "module code mounted");
        }
        workspace.unfetched_modules =
            loaded.failed.iter().map(|e| (e.key().unwrap_or_default().to_string(), e.to_string())).collect();
        workspace.fetched_modules = loaded.mounted;
    }
}
