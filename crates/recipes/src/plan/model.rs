//! The plan a change set gives, and why a change set cannot be planned by recipe.

use serde::{Deserialize, Serialize};

use driftback_terraform::{Address, AttrPath, Op};

/// The marker CloudTrail writes instead of sensitive values.
pub const REDACTED: &str = "HIDDEN_DUE_TO_SECURITY_REASONS";

/// Operations for one resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceChange {
    pub address: Address,
    pub ops: Vec<Op>,
    /// The recipes that produced the operations.
    pub recipes: Vec<String>,
    /// True when the resource was created out of band and is being adopted.
    pub created: bool,
}

/// What a change set means for the configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub changes: Vec<ResourceChange>,
    /// Things worth telling the reviewer (values that equal provider default tags, ...).
    pub notes: Vec<String>,
    /// What the same calls do to other resources, which are change sets of their own (one
    /// `CreateTags` on two subnets): an edit that makes exactly these changes to them too (an input
    /// both read) is not a leak.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alongside: Vec<ResourceChange>,
    /// Fields the calls set that can never be written into code (a value CloudTrail redacted, or
    /// a secret): left out of `changes` and held for a person, while the rest of the plan stands.
    /// A plan whose calls set nothing else is refused instead ([`PlanError::Secret`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<SecretField>,
}

/// A field of a resource whose new value must never be written: what the policy holds for a
/// person ([`Plan::secrets`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecretField {
    pub address: Address,
    pub path: AttrPath,
    /// Why it is not written (the text of [`PlanError::Secret`]).
    pub reason: String,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.changes.iter().all(|c| c.ops.is_empty())
    }
}

/// Why a change set cannot be planned by recipe: each is escalated with this text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("no recipe for {service} {name}")]
    NoRecipe { service: String, name: String },
    #[error("{} changed by {name} is not managed by this Terraform state", resource_said(id))]
    NotManaged { id: String, name: String },
    #[error("{name} names no resource driftback can recognise")]
    NoResource { name: String },
    /// The call is known, but its record does not say which resource it changed.
    #[error(
        "the record of {name} names no {what}: it has no `{key}` in requestParameters or responseElements, and \
         resources[] names none; a person must say which {what} it changed"
    )]
    NoIdentifier { name: String, what: String, key: String },
    #[error("{name} on {id:?} matches several resources in the state ({addresses}); a person must choose")]
    Ambiguous { id: String, name: String, addresses: String },
    #[error(
        "the new value of `{path}` is hidden by CloudTrail ({REDACTED}) or is a secret; it will not be written into code"
    )]
    Secret { path: String },
    #[error("recipe {recipe}: {message}")]
    Recipe { recipe: String, message: String },
    /// The record carries none of the values the recipe reads, in the request or the response: what
    /// the call changed is not in it, and saying "nothing changed" would lose it silently.
    #[error(
        "the record of {name} carries none of the values recipe {recipe} reads ({members}) in requestParameters or \
         responseElements: what the call changed is not in the record; a person must say"
    )]
    NothingRecorded { recipe: String, name: String, members: String },
    /// The call sets something the recipe does not map: writing the rest would lose it silently.
    #[error("{name} also sets {params}, which recipe {recipe} does not map to Terraform; a person (or the agent) must")]
    Unmapped { recipe: String, name: String, params: String },
}

/// A resource as an escalation names it: by what it is when its identifier says so (the SQS queue
/// of an account and region, whatever host its URL names), with the identifier as recorded.
fn resource_said(id: &str) -> String {
    match driftback_terraform::state::Identity::parse(id) {
        Some(identity) => format!("{identity} ({id:?})"),
        None => format!("the resource {id:?}"),
    }
}
