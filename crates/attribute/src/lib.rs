//! The attribute stage: who made a change set, what it was for (intent) and why now (motivation).
//!
//! Pure and deterministic: a [`ChangeSet`] (and the operator's named actors) in, an [`Attribution`]
//! out, every conclusion with the evidence it rests on. Nothing here reads the clock, a file or the
//! network. The LLM agent may refine intent and motivation later: it replaces an [`Inferred`] value
//! with one whose [`Source`] is [`Source::Llm`], and the evidence says what the model saw, so a
//! reviewer can always tell a rule's conclusion from a model's.

mod actor;
mod infer;
mod pattern;
mod words;

use serde::{Deserialize, Serialize};

use driftback_events::ChangeSet;

pub use actor::{ActorInfo, ActorKind, NamedActor, resolve_actor};
pub use infer::{Intent, Motivation, infer_intent, infer_motivation};
pub use pattern::glob_match;

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

/// Who made a change set, what for, and why now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    pub actor: ActorInfo,
    pub intent: Inferred<Intent>,
    pub motivation: Inferred<Motivation>,
}

/// Attribute a change set. `named` are the operator's own actors (from the policy file), checked
/// before the built-in heuristics.
pub fn attribute(change_set: &ChangeSet, named: &[NamedActor]) -> Attribution {
    let actor = resolve_actor(&change_set.actor, named);
    let motivation = infer_motivation(change_set, &actor);
    let intent = infer_intent(change_set, motivation.value);
    Attribution { actor, intent, motivation }
}

#[cfg(test)]
mod tests;
