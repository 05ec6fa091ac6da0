//! The values of the patcher: an operation, its error, what it did, and the resource it is applied to.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::address::Address;
use crate::edit::{self, BlockSel, EditError};
use crate::origin::Site;
use crate::path::AttrPath;
use crate::render::{AttrValue, BlockSpec};
use crate::repo::{BlockLocation, Repo};

/// One change to one resource, in the terms of its configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "op")]
pub enum Op {
    /// Set the value at a path (attribute, nested block attribute, map entry).
    Set { path: AttrPath, value: AttrValue },
    /// Remove the attribute, map entry or nested block at a path.
    Remove { path: AttrPath },
    /// Add a nested block (`ingress { ... }`).
    AddBlock { block_type: String, spec: BlockSpec },
    /// Remove the nested blocks of a type whose literal attributes equal all of `matching`.
    RemoveBlocks { block_type: String, matching: Vec<(String, Value)> },
    /// Add an attribute to `lifecycle { ignore_changes }`.
    IgnoreChanges { attr: String },
    /// Remove the resource block (and its `import`/`moved` companions).
    RemoveResource,
    /// Add a resource block, with an `import` block for the cloud object's id.
    CreateResource { spec: BlockSpec, import_id: String },
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PatchError {
    #[error("{address}: no resource block found in the configuration")]
    NoBlock { address: String },
    #[error("{address}: {file}: {source}")]
    Edit { address: String, file: String, source: EditError },
    #[error("{address}: {reason}")]
    Refused { address: String, reason: String },
}

/// Why one road of an edit cannot be written, in words for the person who reads the escalation.
/// A step of a larger edit returns it; the caller names the resource ([`PatchError::Refused`]) or
/// tries another road.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Refusal(pub String);

impl From<String> for Refusal {
    fn from(reason: String) -> Refusal {
        Refusal(reason)
    }
}

impl From<&str> for Refusal {
    fn from(reason: &str) -> Refusal {
        Refusal(reason.to_string())
    }
}

/// What an operation did, for the audit trail and the pull request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Applied {
    pub files: Vec<PathBuf>,
    pub notes: Vec<String>,
}

/// The resource instance an operation is applied to: its address, its resource block, and the
/// changes the same calls make to other resources (`alongside`), which the set, remove and
/// `dynamic` block actions all take.
#[derive(Clone, Copy)]
pub(super) struct Target<'a> {
    pub address: &'a Address,
    pub location: &'a BlockLocation,
    pub alongside: &'a [(Address, Op)],
}

/// The site of a resource block's instance, where tracing starts.
pub(super) fn site_of(repo: &Repo, address: &Address, location: &BlockLocation) -> Site {
    Site {
        module: address.module.clone(),
        dir: repo.module_dir(&address.module_path()).cloned().unwrap_or_default(),
        file: location.file.clone(),
        block: location.sel.clone(),
        key: address.key.clone(),
    }
}

pub(super) fn has_count_or_for_each(text: &str, sel: &BlockSel) -> bool {
    edit::parse(text)
        .ok()
        .and_then(|body| {
            edit::find_block(&body, sel).map(|b| b.body.has_attribute("count") || b.body.has_attribute("for_each"))
        })
        .unwrap_or(false)
}
