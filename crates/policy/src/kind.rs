//! What happens to a change made outside Terraform: the one word a decision comes down to, shared by
//! the decision, the ledger and the policy file.

use serde::{Deserialize, Serialize};

/// What happens to a change made outside Terraform. Ordered from the most permissive to the
/// strictest; when several rules match, the strictest wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// Write the change into the code.
    Reconcile,
    /// Another actor owns the field: add it to the resource's `lifecycle { ignore_changes }`.
    IgnoreChanges,
    /// Do not codify: the next apply will revert it.
    Revert,
    /// A person decides.
    Escalate,
}

impl DecisionKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            DecisionKind::Reconcile => "reconcile",
            DecisionKind::IgnoreChanges => "ignore_changes",
            DecisionKind::Revert => "revert",
            DecisionKind::Escalate => "escalate",
        }
    }

    /// Parse the policy file's spelling (`reconcile`, `ignore_changes`, `revert`, `escalate`).
    pub fn parse(text: &str) -> Option<DecisionKind> {
        DecisionKind::ALL.into_iter().find(|k| k.as_str() == text)
    }

    pub const ALL: [DecisionKind; 4] =
        [DecisionKind::Reconcile, DecisionKind::IgnoreChanges, DecisionKind::Revert, DecisionKind::Escalate];
}
