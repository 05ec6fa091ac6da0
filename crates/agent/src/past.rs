//! One reconciliation as the knowledge base remembers it ([`PastReconciliation`]); names nothing
//! else of the crate, so the prompt (`context.rs`) and the knowledge base (`kb.rs`) both use it.

use serde::{Deserialize, Serialize};

use driftback_embed::ChangeSignature;

/// One reconciliation as the knowledge base remembers it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PastReconciliation {
    pub change_set_id: String,
    pub signature: ChangeSignature,
    /// The compact trace summary (one line per call).
    pub summary: String,
    /// What was changed, as a short diff.
    pub patch: String,
    /// `reconciled` or `escalated: <reason>`.
    pub outcome: String,
    /// The recipe that planned it, or `agent`.
    pub planned_by: String,
    pub tokens: u64,
}
