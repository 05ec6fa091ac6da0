//! The model's closing account of a reconciliation ([`Finish`]); names nothing else of the crate,
//! so the tools (`tools.rs`) and the loop (`session.rs`) both use it.

use serde::{Deserialize, Serialize};

use driftback_attribute::{Intent, Motivation};

/// The model's closing account of a reconciliation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finish {
    pub summary: String,
    pub intent: Intent,
    pub motivation: Motivation,
    pub confidence: f64,
}
