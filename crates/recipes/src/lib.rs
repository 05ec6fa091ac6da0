//! Recipes: known kinds of API calls turned into configuration edits without any LLM.
//!
//! The catalog is data (`catalog/<service>.toml` is built in; more can be loaded), checked
//! when it loads. [`plan`] maps a change set to per-resource operations for the patch stage, or says
//! why it cannot.

mod calls;
mod catalog;
mod document;
mod extract;
mod json_patch;
mod plan;
mod target;

pub use calls::{Call, Calls, NotLogged, closest};
pub use catalog::{Catalog, CatalogError, IdentityRule, Recipe};
pub use plan::{Plan, PlanError, ResourceChange, SecretField, plan};
pub use target::targets;
