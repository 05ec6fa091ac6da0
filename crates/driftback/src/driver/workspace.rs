//! What a change set is reconciled against, loaded once per run (or once per change set in the
//! daemon, after the clone is refreshed): the repository's HCL index, the Terraform state, the
//! ownership policy and the recipe catalogs.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};

use driftback_policy::Policy;
use driftback_recipes::Catalog;
use driftback_terraform::schema::{Fit, Schema, locked_aws_version, required_aws_version};
use driftback_terraform::{Repo, State};

use super::outcome::Scope;
use crate::config::Config;

/// The repository, its state and its policy, as one change set after another sees them.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// The configuration as it stands before this run's patches (eval applies its patches here).
    pub repo: Repo,
    /// The state before the drift; resources adopted in this run are added to it (copied on that
    /// first write: a workspace is cloned per change set, and its state is shared until then).
    pub state: Arc<State>,
    pub policy: Policy,
    /// Why change sets cannot be located in this workspace (no repository given), when they cannot:
    /// they are decided on their calls alone.
    pub unlocated: Option<String>,
    /// The AWS provider's schema every patch is checked against: the bundled version that fits the
    /// repository's `required_providers` and `.terraform.lock.hcl`.
    pub schema: &'static Schema,
    /// The policy file: where it is on disk, and its path in the repository (`None` when it is
    /// configured outside the repository, or there is no repository). A person's `/driftback own`
    /// edits it.
    pub policy_file: Option<(PathBuf, PathBuf)>,
    /// In a repository of many root modules: the stack and workspace this is, and its state's
    /// version (`None`: the repository is one root module with its state file).
    pub scope: Option<Scope>,
    /// Why a resource no state manages was routed to this stack, when it was: told in its notes.
    pub adopted_because: Option<String>,
    /// The module calls whose code was fetched or read from `.terraform/modules` and mounted
    /// (`driver::Modules::attach`): key, source, version.
    pub fetched_modules: Vec<driftback_modules::Mounted>,
    /// The module calls whose code could not be had: (module key, why, naming the call, its
    /// source and version constraint).
    pub unfetched_modules: Vec<(String, String)>,
}

impl Workspace {
    /// The repository in `dir`, its state (`state`, default `dir/terraform.tfstate`) and its policy.
    pub fn load(config: &Config, dir: &Path, state: Option<&Path>) -> anyhow::Result<Workspace> {
        let state_path = state.map(Path::to_path_buf).unwrap_or_else(|| dir.join("terraform.tfstate"));
        let repo = Repo::load(dir)?;
        let state = Arc::new(read_state(&state_path)?);
        Workspace::with_repo(config, dir, repo, state, None)
    }

    /// One workspace of one stack of the repository in `dir`: `repo` is its root module (with the
    /// workspace's variable files set), `state` the workspace's state as read, `scope` which it is.
    pub fn of_stack(
        config: &Config,
        dir: &Path,
        repo: Repo,
        state: Arc<State>,
        scope: Scope,
    ) -> anyhow::Result<Workspace> {
        Workspace::with_repo(config, dir, repo, state, Some(scope))
    }

    /// `repo` (a root module of the repository in `dir`) with `state`, the repository's policy and
    /// the provider schema that fits the root module.
    fn with_repo(
        config: &Config,
        dir: &Path,
        repo: Repo,
        state: Arc<State>,
        scope: Option<Scope>,
    ) -> anyhow::Result<Workspace> {
        let schema = provider_schema(&repo, &dir.join(repo.root_dir()))?;
        let on_disk = policy_path(config, dir);
        let policy_file = on_disk.strip_prefix(dir).ok().map(|rel| (on_disk.clone(), rel.to_path_buf()));
        Ok(Workspace {
            repo,
            state,
            policy: load_policy(config, dir)?,
            unlocated: None,
            schema,
            policy_file,
            scope,
            adopted_because: None,
            fetched_modules: Vec::new(),
            unfetched_modules: Vec::new(),
        })
    }

    /// No repository: only the calls can be judged, by `policy`.
    pub fn unlocated(policy: Policy, reason: &str) -> anyhow::Result<Workspace> {
        Ok(Workspace {
            repo: Repo::default(),
            state: Arc::default(),
            policy,
            unlocated: Some(reason.to_string()),
            schema: Schema::newest().context("loading the bundled AWS provider schema")?,
            policy_file: None,
            scope: None,
            adopted_because: None,
            fetched_modules: Vec::new(),
            unfetched_modules: Vec::new(),
        })
    }

    /// Evaluate the root module as Terraform workspace `name` with its `-var-file`s, and hold every
    /// patch to leave `others` (other workspaces, each with its files) as they evaluate now. The
    /// files are read from `dir` (paths relative to it, inside it).
    pub fn select_terraform_workspace(
        &mut self,
        dir: &Path,
        name: &str,
        var_files: &[PathBuf],
        others: &[(String, Vec<PathBuf>)],
    ) -> anyhow::Result<()> {
        let all = var_files.iter().chain(others.iter().flat_map(|(_, files)| files.iter()));
        for file in all {
            let inside = file.is_relative() && file.components().all(|c| matches!(c, std::path::Component::Normal(_)));
            if !inside {
                bail!("the variable file {} must be a path inside the repository, relative to it", file.display());
            }
            if self.repo.text(file).is_none() {
                let text = std::fs::read_to_string(dir.join(file)).with_context(|| {
                    format!(
                        "cannot read the variable file {}; give a path relative to {}",
                        file.display(),
                        dir.display()
                    )
                })?;
                self.repo.set_file(file, text);
            }
        }
        self.repo.set_workspace(name, var_files.to_vec())?;
        self.repo.set_other_workspaces(others.to_vec())?;
        Ok(())
    }

    /// Refuse a repository whose HCL does not parse, naming the first file, line and problem.
    /// Fetched module code is not the repository's to fix: its problems are not counted here.
    pub fn require_parsed(&self, dir: &Path) -> anyhow::Result<()> {
        if let Some(d) = self.repo.diagnostics().iter().find(|d| !self.repo.is_external(&d.file)) {
            bail!("{}:{}:{}: {}; fix the file and run again", dir.join(&d.file).display(), d.line, d.column, d.message);
        }
        Ok(())
    }
}

/// The bundled provider schema that fits the repository: its `required_providers` constraint for
/// `hashicorp/aws` and the version its `.terraform.lock.hcl` locks, else the newest bundled one.
fn provider_schema(repo: &Repo, dir: &Path) -> anyhow::Result<&'static Schema> {
    let constraint = required_aws_version(repo.files().filter_map(|(path, _)| repo.body(path)));
    let lock = std::fs::read_to_string(dir.join(".terraform.lock.hcl")).ok();
    let locked = lock.as_deref().and_then(locked_aws_version);
    let (schema, fit) = match Schema::select(constraint.as_deref(), locked.as_deref()) {
        Ok(found) => found,
        Err(e) => {
            tracing::warn!(error = %e, "the repository's AWS provider version is not understood; checking patches against the newest bundled schema");
            (Schema::newest().context("loading the bundled AWS provider schema")?, Fit::Newest)
        }
    };
    if fit == Fit::Nearest {
        tracing::info!(
            wanted = constraint.or(locked).unwrap_or_default(),
            using = schema.provider_version(),
            "no bundled AWS provider schema fits exactly; checking patches against the nearest"
        );
    }
    Ok(schema)
}

/// The Terraform state file (format version 4).
pub fn read_state(path: &Path) -> anyhow::Result<State> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the Terraform state {}; pass --state FILE", path.display()))?;
    Ok(State::parse(&text, &path.display().to_string())?)
}

/// The repository's policy: its policy file when there is one, else the built-in defaults.
pub fn load_policy(config: &Config, repo: &Path) -> anyhow::Result<Policy> {
    let path = policy_path(config, repo);
    if !path.exists() {
        return Ok(Policy::defaults());
    }
    load_policy_file(&path)
}

/// Where the policy file of the repository in `repo` is (it may not exist).
fn policy_path(config: &Config, repo: &Path) -> PathBuf {
    if config.policy.file.is_absolute() { config.policy.file.clone() } else { repo.join(&config.policy.file) }
}

/// A policy file; errors name the file, the rule and the field.
pub fn load_policy_file(path: &Path) -> anyhow::Result<Policy> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read the policy file {}", path.display()))?;
    Ok(Policy::from_toml(&text, &path.display().to_string())?)
}

/// The built-in recipe catalog with the configured catalogs (`[recipes] catalogs`, relative to the
/// repository) in front of it, less the recipes `[recipes] disabled` names.
pub fn load_catalog(config: &Config, repo: &Path) -> anyhow::Result<Catalog> {
    let mut catalog = Catalog::builtin();
    for path in config.recipes.catalogs.iter().rev() {
        let path: PathBuf = if path.is_absolute() { path.clone() } else { repo.join(path) };
        let text =
            std::fs::read_to_string(&path).with_context(|| format!("cannot read recipe catalog {}", path.display()))?;
        catalog.extend_front(Catalog::from_toml(&text, &path.display().to_string())?);
    }
    catalog.disable(&config.recipes.disabled)?;
    Ok(catalog)
}
