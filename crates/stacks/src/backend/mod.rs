//! The state backends driftback reads, each in its own file behind one trait ([`Backend`]) and
//! registered by name in [`backends!`]: a new backend is a new file here and its name in that
//! list. A backend says where a workspace's state is ([`Backend::locate`]), which workspaces a
//! stack shows without configuration, and which its store lists.

use futures::future::BoxFuture;

use crate::error::StackError;
use crate::location::Location;
use crate::read::{ReadError, Readers};
use crate::stack::{Stack, Tree};

/// One kind of backend, as discovery, locating and listing see it. Pure but for
/// [`Backend::list_workspaces`].
pub trait Backend: Sync {
    /// The backend types it handles: a `backend "NAME"` block's label, `cloud` for a `cloud` block,
    /// `show-json` for an export the configuration names.
    fn names(&self) -> &'static [&'static str];

    /// Whether it is named among the supported backends when a stack's is not one of them.
    fn listed(&self) -> bool {
        true
    }

    /// Where `workspace`'s state of `stack` lives.
    fn locate(&self, stack: &Stack, workspace: &str) -> Result<Location, StackError>;

    /// The workspaces the repository itself shows (local states on disk, a named workspace).
    fn workspaces_on_disk(&self, tree: &Tree, stack: &Stack) -> Vec<String> {
        let _ = (tree, stack);
        Vec::new()
    }

    /// Whether a stack showing no workspace has `default`.
    fn has_default_workspace(&self, stack: &Stack) -> bool {
        let _ = stack;
        true
    }

    /// The workspaces the backend's store holds for `stack`, where it can list them; `None` where
    /// it cannot.
    fn list_workspaces<'a>(
        &'a self,
        readers: &'a Readers,
        stack: &'a Stack,
    ) -> BoxFuture<'a, Result<Option<Vec<String>>, ReadError>> {
        let _ = (readers, stack);
        Box::pin(async { Ok(None) })
    }
}

/// Declares the backend modules and registers each one's `BACKEND`, in the order messages list
/// them.
macro_rules! backends {
    ($($module:ident),* $(,)?) => {
        $(mod $module;)*
        static BACKENDS: &[&dyn Backend] = &[$(&$module::BACKEND),*];
    };
}

backends!(local, show_json, s3, hcp);

/// The backend of that type, if driftback reads it.
pub fn find(name: &str) -> Option<&'static dyn Backend> {
    BACKENDS.iter().copied().find(|b| b.names().contains(&name))
}

/// Where `workspace`'s state of `stack` lives.
pub fn locate(stack: &Stack, workspace: &str) -> Result<Location, StackError> {
    match find(&stack.backend) {
        Some(backend) => backend.locate(stack, workspace),
        None => {
            let supported: Vec<&str> =
                BACKENDS.iter().filter(|b| b.listed()).flat_map(|b| b.names().iter().copied()).collect();
            Err(StackError::Backend {
                stack: stack.name.clone(),
                message: format!(
                    "the {:?} backend is not supported ({}); export its state with `terraform show -json` and name the file as a show-json stack",
                    stack.backend,
                    supported.join(", ")
                ),
            })
        }
    }
}

/// A setting the stack's backend needs and does not have.
pub(crate) fn missing(stack: &Stack, setting: &str, hint: &str) -> StackError {
    StackError::Backend {
        stack: stack.name.clone(),
        message: format!("the {} backend has no {setting}: {hint}", stack.backend),
    }
}

impl Readers {
    /// The workspaces the backend holds for `stack`, where it can list them (S3: the keys under
    /// `workspace_key_prefix`; HCP: the workspaces with the block's tags or prefix); `None` where
    /// it cannot (local files are listed by discovery already).
    pub async fn list_workspaces(&self, stack: &Stack) -> Result<Option<Vec<String>>, ReadError> {
        match find(&stack.backend) {
            Some(backend) => backend.list_workspaces(self, stack).await,
            None => Ok(None),
        }
    }
}
