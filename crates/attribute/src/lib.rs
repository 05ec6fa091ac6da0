//! The attribute stage: who made a change set, what it was for (intent) and why now (motivation).
//!
//! Pure and deterministic: a [`ChangeSet`] (and the operator's named actors) in, an [`Attribution`]
//! out, every conclusion with the evidence it rests on. Nothing here reads the clock, a file or the
//! network. The LLM agent may refine intent and motivation later: it replaces an [`Inferred`] value
//! with one whose [`Source`] is [`Source::Llm`], and the evidence says what the model saw, so a
//! reviewer can always tell a rule's conclusion from a model's.

mod actor;
mod infer;
mod inferred;
mod pattern;
mod words;

use serde::{Deserialize, Serialize};

use driftback_events::ChangeSet;

pub use actor::{ActorInfo, ActorKind, NamedActor, resolve_actor};
pub use infer::{Intent, Motivation, infer_intent, infer_motivation};
pub use inferred::{Inferred, Source};
pub use pattern::glob_match;

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
