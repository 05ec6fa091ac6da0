//! A conclusion with the evidence it rests on and where it came from ([`Inferred`], [`Source`]);
//! names nothing else of the crate.

use serde::{Deserialize, Serialize};

/// Where an inferred value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The deterministic rules of this crate.
    Rules,
    /// The LLM agent, refining what the rules found.
    Llm,
}

/// A conclusion and what it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inferred<T> {
    pub value: T,
    /// Human-readable facts from the events (`session name "incident-4502" names an incident`).
    pub evidence: Vec<String>,
    pub source: Source,
}

impl<T> Inferred<T> {
    /// A value found by the deterministic rules.
    pub fn by_rules(value: T, evidence: Vec<String>) -> Self {
        Inferred { value, evidence, source: Source::Rules }
    }
}
