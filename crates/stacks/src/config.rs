//! `[[stack]]` entries of the driftback configuration: stacks discovery cannot see, and what it
//! cannot know about the ones it finds (workspaces, their tfvars, partial backend configuration).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::settings::Settings;

/// One `[[stack]]` entry. An entry whose `path` is a discovered root module adds to it; any other
/// entry declares a stack of its own.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StackConfig {
    /// The root module's directory, relative to the repository (`""` or `"."` for its root).
    pub path: PathBuf,
    /// The stack's name in listings, branches and the index. Default: its path (`.` for the root).
    pub name: Option<String>,
    /// The backend type when the code does not say (`local`, `s3`, `remote`, `cloud`), or
    /// `show-json` for a `terraform show -json` export at `state_file`.
    pub backend: Option<String>,
    /// Backend settings, over those of the code's `backend` block and the `backend_config` files
    /// (`bucket`, `key`, `region`, `workspace_key_prefix`, `endpoints = { s3 = ... }`,
    /// `organization`, `hostname`, `workspaces = { name = ... }`, ...). Never credentials.
    /// `endpoint` here (and only here) moves the HCP Terraform API off `https://<hostname>`.
    pub settings: Settings,
    /// Partial backend configuration files (`-backend-config=FILE`), relative to the repository,
    /// applied in order after the `backend` block.
    pub backend_config: Vec<PathBuf>,
    /// A state file (local backend, or the `show-json` export), relative to the repository.
    pub state_file: Option<PathBuf>,
    /// The workspaces of this root module. Default: what the local state directory shows, else
    /// `default`.
    #[serde(rename = "workspace")]
    pub workspaces: Vec<WorkspaceConfig>,
}

/// `[[stack.workspace]]`: one workspace of a stack.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkspaceConfig {
    pub name: String,
    /// The workspace's variable files (`-var-file`), relative to the repository, in order.
    pub tfvars: Vec<PathBuf>,
    /// Partial backend configuration files for this workspace only, after the stack's.
    pub backend_config: Vec<PathBuf>,
}
