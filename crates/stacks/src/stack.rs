//! The values discovery makes and every backend reads: the repository as [`scan`](crate::scan)
//! read it ([`Tree`]), a root module ([`Stack`]) and its [`Workspace`]s. A leaf: it imports nothing
//! of the crate but the settings.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use driftback_terraform::Repo;

use crate::settings::{self, Settings};

/// What [`scan`] read of a repository: its Terraform files parsed, and the names of the other
/// files discovery looks at (lock files, local states, partial backend configuration).
#[derive(Debug, Clone, Default)]
pub struct Tree {
    /// Every `.tf` and `.tfvars` file of the repository, parsed once.
    pub repo: Repo,
    /// Every other file's path, relative to the root.
    pub files: BTreeSet<PathBuf>,
    /// Partial backend configuration files (`*.tfbackend`, `backend.hcl`, and those the
    /// configuration names), by path.
    pub backend_files: BTreeMap<PathBuf, String>,
}

/// A root module of the repository, and how to reach its state.
#[derive(Debug, Clone, PartialEq)]
pub struct Stack {
    pub name: String,
    /// Relative to the repository's root (empty for the root itself).
    pub dir: PathBuf,
    /// Why this directory is a stack: `backend "s3" block (main.tf:3)`, `lock file`, ...
    pub found_by: Vec<String>,
    /// `local`, `s3`, `remote`, `cloud`, `show-json`, or another backend type driftback lists but
    /// cannot read.
    pub backend: String,
    /// The backend's settings: its block, then the stack's partial configuration files, then the
    /// configuration's `settings`.
    pub settings: Settings,
    /// A state file given by the configuration (local backend, or a `show-json` export).
    pub state_file: Option<PathBuf>,
    pub workspaces: Vec<Workspace>,
    /// Whether the workspaces were listed in the configuration (else they were inferred).
    pub workspaces_configured: bool,
    /// The HCP Terraform API's address when it is not `https://<hostname>` (tests, proxies):
    /// the configuration's `endpoint` setting only, never the repository's, since the token for
    /// `hostname` is sent there.
    pub api_endpoint: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Workspace {
    pub name: String,
    /// The workspace's own variable files, in order (the auto-loaded ones are the stack's).
    pub tfvars: Vec<PathBuf>,
    /// Settings over the stack's, from the workspace's partial configuration files.
    pub settings: Settings,
}

impl Stack {
    /// The settings a workspace's state is reached with.
    pub fn settings_for(&self, workspace: &str) -> Settings {
        let mut out = self.settings.clone();
        if let Some(ws) = self.workspaces.iter().find(|w| w.name == workspace) {
            settings::merge(&mut out, &ws.settings);
        }
        out
    }

    pub fn workspace(&self, name: &str) -> Option<&Workspace> {
        self.workspaces.iter().find(|w| w.name == name)
    }
}

/// `./envs/prod/` -> `envs/prod`; `.` -> ``.
pub(crate) fn normal(path: &Path) -> PathBuf {
    path.components().filter(|c| !matches!(c, std::path::Component::CurDir)).collect()
}

/// Workspaces with a local state in `dir`: `default` for `path`, and each
/// `<workspace_dir>/<name>/terraform.tfstate`.
pub(crate) fn local_workspaces(tree: &Tree, dir: &Path, path: &str, workspace_dir: &str) -> Vec<String> {
    let mut out = Vec::new();
    if tree.files.contains(&normal(&dir.join(path))) {
        out.push("default".to_string());
    }
    let ws_root = normal(&dir.join(workspace_dir));
    for file in tree.files.range(ws_root.clone()..) {
        let Ok(rest) = file.strip_prefix(&ws_root) else { break };
        let parts: Vec<_> = rest.components().collect();
        if parts.len() == 2 && parts[1].as_os_str() == "terraform.tfstate" {
            out.push(parts[0].as_os_str().to_string_lossy().into_owned());
        }
    }
    out
}
