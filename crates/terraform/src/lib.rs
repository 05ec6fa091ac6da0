//! Terraform, understood: state, the repository's HCL, edits that keep formatting, and evaluation.
//!
//! This crate is pure apart from [`Repo::load`], which reads a directory: everything else works on
//! text and values. It knows nothing of CloudTrail, git or the knowledge base.

pub mod address;
pub(crate) mod dynamic_list;
mod dynamic_nested;
mod dynamic_reading;
pub mod edit;
pub mod eval;
pub(crate) mod fleet_pick;
pub mod fmt;
pub mod functions;
pub mod gate;
pub(crate) mod instance_item;
pub(crate) mod list_rewrite;
pub(crate) mod module_exclusive;
pub(crate) mod module_list;
pub(crate) mod module_refusal;
mod module_removal;
pub(crate) mod origin;
mod origin_flatten;
mod origin_lookup;
pub mod patch;
pub mod path;
pub(crate) mod policy_document;
pub mod render;
pub mod repo;
pub mod schema;
pub mod state;
mod values;
pub mod version;

pub use address::{Address, AddressFault, BadAddress, InstanceKey, ModuleStep};
pub use edit::{BlockSel, EditError};
pub use patch::{Applied, Op, PatchError};
pub use path::{AttrPath, BadPath, PathFault, Seg};
pub use render::{AttrValue, BlockSpec, RenderError};
pub use repo::{BlockLocation, Diagnostic, Expansion, ModuleIndex, Repo, RepoError, UnresolvedCall};
pub use schema::{Found, Schema, SchemaError, Step};
pub use state::{State, StateError, StateInstance};

#[cfg(test)]
mod removal_tests;
