//! The LLM agent: reconciles what no recipe covers, with tools over state, HCL and the knowledge base.
//!
//! A change set the recipes cannot plan goes to [`reconcile`]: a tool loop against any
//! OpenAI-compatible chat-completions endpoint. The model reads state and HCL, searches past
//! reconciliations and edits the configuration only through the origin-aware patch engine of
//! `driftback-terraform` (the same [`Op`](driftback_terraform::Op)s recipes produce). Its result is
//! a [`Plan`](driftback_recipes::Plan) that the caller decides on and applies like a recipe's, or an
//! escalation with the reason; either way with the transcript and the tokens spent.
//!
//! A validated reconciliation is generalised by [`learn`] into a recipe in the catalog's own format
//! and kept in the [`KnowledgeBase`]; [`learned_catalog`] puts the learned recipes in front of the
//! planner so the next change of that kind costs no tokens. A learned recipe whose result fails
//! [`validate`] later, or whose pull request is closed unmerged ([`demote_for_closed_pull_request`]),
//! is demoted and no longer used.
//!
//! Event data is data: the first prompt carries the trace summary, the located resource blocks and
//! similar past reconciliations as JSON inside one delimited data section, with `<` and `>` escaped
//! so nothing in it can close the section early ([`context`]).

pub mod context;
mod finish;
mod kb;
mod learn;
mod llm;
mod past;
mod proof;
#[cfg(feature = "scripted-model")]
pub mod scripted;
mod session;
mod settings;
mod tools;
mod validate;

pub use driftback_attribute::{Intent, Motivation};
pub use kb::{
    InMemoryKnowledgeBase, KbError, KnowledgeBase, LearnedRecipe, PastReconciliation, RecipeUse, count_use, signature,
};
pub use learn::{
    Learned, NotGeneralised, demote_for_closed_pull_request, generalise, learn, learned_catalog, recipe_toml,
};
pub use llm::LlmError;
pub use proof::{Footprint, Member, Proof, Rule, Unproven, creatable_types, deleted_types};
pub use session::{AgentOutcome, AgentResult, Finish, TokenUsage, reconcile};
pub use settings::Settings;
pub use tools::tool_definitions;
pub use validate::{Validation, diff_summary, validate};
