//! The `local` backend: state files in the repository's working tree.

use super::Backend;
use crate::error::StackError;
use crate::location::Location;
use crate::settings;
use crate::stack::{Stack, Tree, local_workspaces};

pub(super) const BACKEND: Local = Local;

pub(super) struct Local;

impl Backend for Local {
    fn names(&self) -> &'static [&'static str] {
        &["local"]
    }

    fn locate(&self, stack: &Stack, workspace: &str) -> Result<Location, StackError> {
        if let Some(file) = &stack.state_file {
            return Ok(Location::Local { path: file.clone() });
        }
        let settings = stack.settings_for(workspace);
        let path = settings::text(&settings, "path").unwrap_or("terraform.tfstate");
        let dir = settings::text(&settings, "workspace_dir").unwrap_or("terraform.tfstate.d");
        let path = if workspace == "default" {
            stack.dir.join(path)
        } else {
            stack.dir.join(dir).join(workspace).join("terraform.tfstate")
        };
        Ok(Location::Local { path })
    }

    fn workspaces_on_disk(&self, tree: &Tree, stack: &Stack) -> Vec<String> {
        if stack.state_file.is_some() {
            return Vec::new();
        }
        let path = settings::text(&stack.settings, "path").unwrap_or("terraform.tfstate");
        let dir = settings::text(&stack.settings, "workspace_dir").unwrap_or("terraform.tfstate.d");
        local_workspaces(tree, &stack.dir, path, dir)
    }
}
