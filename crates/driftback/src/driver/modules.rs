//! Module code for a workspace: the module calls whose source is a registry, git or an archive,
//! read from the root module's `.terraform/modules/modules.json` when the checkout has one, else
//! fetched into the cache (`[modules]`), and mounted in the repository's index. Once per base
//! commit: the daemon keeps the workspace it loaded until the base moves.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use driftback_modules::{CliConfig, Fetcher, Settings};
use driftback_terraform::Address;

use super::workspace::Workspace;
use crate::config::Config;

/// What fetches module code for this process (`None` when `[modules] fetch` is off).
#[derive(Debug)]
pub struct Modules {
    fetcher: Option<Fetcher>,
}

impl Modules {
    /// From `[modules]` (its SSH keys checked), with the Terraform CLI configuration and tokens of
    /// this process's environment (`TF_CLI_CONFIG_FILE`, `TF_TOKEN_<host>`) and its SSH agent and
    /// `~/.ssh` keys for hosts no `[modules.ssh]` key is for.
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
            ssh: modules.ssh_settings()?,
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

/// Why a change set on `targets` (its resources' addresses) cannot be planned: one of them is
/// inside a module call whose code could not be had, named with its source, version and the
/// cause. Planning without the module's code would be a guess.
pub fn unfetched(workspace: &Workspace, targets: Option<&[Address]>) -> Option<String> {
    let targets: Vec<String> = targets?.iter().map(|t| without_keys(&t.to_string())).collect();
    workspace.unfetched_modules.iter().find_map(|(key, why)| {
        // No key: the whole manifest could not be read, so no module's code is there.
        let prefix =
            if key.is_empty() { "module.".to_string() } else { format!("module.{}.", key.replace('.', ".module.")) };
        targets
            .iter()
            .any(|t| t.starts_with(&prefix))
            .then(|| format!("the code of the module it is in could not be had: {why}"))
    })
}

/// An address without its instance keys (`module.web["a"].aws_instance.this[0]` ->
/// `module.web.aws_instance.this`), as module keys name calls.
fn without_keys(address: &str) -> String {
    let (mut out, mut depth, mut quoted, mut escaped) = (String::new(), 0usize, false, false);
    for c in address.chars() {
        if depth > 0 {
            match c {
                _ if escaped => escaped = false,
                '\\' if quoted => escaped = true,
                '"' => quoted = !quoted,
                ']' if !quoted => depth -= 1,
                _ => {}
            }
        } else if c == '[' {
            depth = 1;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_set_inside_a_module_that_could_not_be_had_says_so() {
        let policy = driftback_policy::Policy::defaults();
        let mut workspace = Workspace::unlocated(policy, "x").unwrap();
        workspace.unfetched_modules =
            vec![("web.db".into(), "module.web.module.db (main.tf:3), source \"git::ssh://h/x.git\": refused".into())];
        let at = |a: &str| vec![Address::parse(a).unwrap()];
        let why = unfetched(&workspace, Some(&at("module.web[\"a\"].module.db.aws_db_instance.this[0]"))).unwrap();
        assert!(why.ends_with("source \"git::ssh://h/x.git\": refused"), "{why}");
        assert!(unfetched(&workspace, Some(&at("module.web.aws_instance.this"))).is_none());
        assert!(unfetched(&workspace, Some(&at("aws_instance.web"))).is_none());
        assert!(unfetched(&workspace, None).is_none());
        workspace.unfetched_modules = vec![(String::new(), ".terraform/modules/modules.json: not JSON".into())];
        assert!(unfetched(&workspace, Some(&at("module.web.aws_instance.this"))).is_some());
        assert!(unfetched(&workspace, Some(&at("aws_instance.web"))).is_none());
    }
}
