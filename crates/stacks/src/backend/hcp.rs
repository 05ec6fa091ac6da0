//! `remote` and `cloud`: a workspace of HCP Terraform or Terraform Enterprise.

use futures::future::BoxFuture;

use super::{Backend, missing};
use crate::error::StackError;
use crate::location::{HcpLocation, Location};
use crate::read::{ReadError, Readers};
use crate::settings;
use crate::stack::{Stack, Tree};

pub(super) const BACKEND: Hcp = Hcp;

pub(super) struct Hcp;

impl Backend for Hcp {
    fn names(&self) -> &'static [&'static str] {
        &["remote", "cloud"]
    }

    fn locate(&self, stack: &Stack, workspace: &str) -> Result<Location, StackError> {
        let settings = stack.settings_for(workspace);
        let hostname = settings::text(&settings, "hostname").unwrap_or("app.terraform.io").to_string();
        let organization = settings::text(&settings, "organization")
            .ok_or_else(|| {
                missing(stack, "organization", "set organization in the block or the [[stack]] entry's settings")
            })?
            .to_string();
        let name = settings::text(&settings, "workspaces.name");
        let prefix = settings::text(&settings, "workspaces.prefix");
        let hcp_workspace = match (stack.backend.as_str(), name, prefix) {
            ("cloud", Some(name), _) if workspace == name || workspace == "default" => name.to_string(),
            ("remote", Some(name), _) if workspace == "default" || workspace == name => name.to_string(),
            (_, Some(name), _) => {
                return Err(StackError::Backend {
                    stack: stack.name.clone(),
                    message: format!(
                        "no such workspace {workspace:?}: the block names only the workspace {name:?}"
                    ),
                });
            }
            ("remote", None, Some(prefix)) => format!("{prefix}{workspace}"),
            _ => workspace.to_string(),
        };
        let base_url = stack
            .api_endpoint
            .as_deref()
            .map(|e| e.trim_end_matches('/').to_string())
            .unwrap_or_else(|| format!("https://{hostname}"));
        Ok(Location::Hcp(HcpLocation { hostname, base_url, organization, workspace: hcp_workspace }))
    }

    fn workspaces_on_disk(&self, _tree: &Tree, stack: &Stack) -> Vec<String> {
        match stack.backend.as_str() {
            "cloud" => settings::text(&stack.settings, "workspaces.name").map(|n| vec![n.to_string()]).unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// A `cloud` block, and a `remote` one with a prefix, name no default workspace.
    fn has_default_workspace(&self, stack: &Stack) -> bool {
        !(stack.backend == "cloud" || settings::text(&stack.settings, "workspaces.prefix").is_some())
    }

    fn list_workspaces<'a>(
        &'a self,
        readers: &'a Readers,
        stack: &'a Stack,
    ) -> BoxFuture<'a, Result<Option<Vec<String>>, ReadError>> {
        Box::pin(async move { readers.hcp.list_workspaces(stack, self.locate(stack, "default")).await })
    }
}
