//! What the agent needs from the knowledge base, and an in-memory implementation of it.

use std::future::Future;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use driftback_embed::ChangeSignature;
use driftback_events::ChangeSet;
use driftback_recipes::Recipe;
use driftback_terraform::State;

use crate::context::located_type;
pub use crate::past::PastReconciliation;

/// A knowledge-base failure; the caller logs it and goes on without the knowledge base's help.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("knowledge base: {0}")]
pub struct KbError(pub String);

/// The signature the knowledge base files `change_set` under, and searches it by: its calls and
/// parameters, and the type of the resource the state locates it on. Everything that records or
/// looks up knowledge for a change set (the agent, learning, the pipeline, `kb search --event`)
/// calls this, so what is stored and what is searched for cannot drift apart.
pub fn signature(change_set: &ChangeSet, state: &State) -> ChangeSignature {
    ChangeSignature::of(change_set, located_type(change_set, state).as_deref())
}

/// A recipe the agent taught the knowledge base, in the built-in catalog's format, with its record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LearnedRecipe {
    pub recipe: Recipe,
    /// The kind of change it was learned from.
    pub signature: ChangeSignature,
    /// The change set it was learned from.
    pub learned_from: String,
    pub uses: u32,
    pub successes: u32,
    pub failures: u32,
    /// Why it is no longer used, once demoted.
    pub demoted: Option<String>,
}

/// What became of one use of a learned recipe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "reason")]
pub enum RecipeUse {
    /// Its patch validated: one use, one success.
    Validated,
    /// Its patch did not validate: one use, one failure, and the recipe is demoted.
    FailedValidation(String),
    /// The pull request of one of its patches was closed unmerged: one failure, and it is demoted.
    PullRequestClosed(String),
}

/// The knowledge base as the agent sees it. The binary implements it over the store; tests use
/// [`InMemoryKnowledgeBase`].
pub trait KnowledgeBase: Send + Sync {
    /// The past reconciliations most like `signature`, best first.
    fn similar(
        &self,
        signature: &ChangeSignature,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<PastReconciliation>, KbError>> + Send;
    /// Remember a reconciliation (by recipe or by the agent) for later searches.
    fn record_reconciliation(&self, past: &PastReconciliation) -> impl Future<Output = Result<(), KbError>> + Send;
    /// Store a learned recipe; one with the same id is replaced, its counts kept.
    fn store_recipe(&self, recipe: &LearnedRecipe) -> impl Future<Output = Result<(), KbError>> + Send;
    /// Every learned recipe, demoted ones included.
    fn recipes(&self) -> impl Future<Output = Result<Vec<LearnedRecipe>, KbError>> + Send;
    /// Count a use of a learned recipe (and demote it when the use failed).
    fn record_recipe_use(&self, id: &str, usage: &RecipeUse) -> impl Future<Output = Result<(), KbError>> + Send;
}

/// Apply one [`RecipeUse`] to a recipe's counts: the one rule every implementation follows.
pub fn count_use(recipe: &mut LearnedRecipe, usage: &RecipeUse) {
    match usage {
        RecipeUse::Validated => {
            recipe.uses += 1;
            recipe.successes += 1;
        }
        RecipeUse::FailedValidation(reason) => {
            recipe.uses += 1;
            recipe.failures += 1;
            recipe.demoted = Some(format!("its patch failed validation: {reason}"));
        }
        RecipeUse::PullRequestClosed(reason) => {
            recipe.failures += 1;
            recipe.demoted = Some(format!("a pull request of its patch was closed unmerged: {reason}"));
        }
    }
}

/// A knowledge base held in memory: for tests, and for `eval`, where it lives for one run.
#[derive(Debug, Default)]
pub struct InMemoryKnowledgeBase {
    past: Mutex<Vec<PastReconciliation>>,
    recipes: Mutex<Vec<LearnedRecipe>>,
}

impl InMemoryKnowledgeBase {
    pub fn new() -> Self {
        Self::default()
    }
}

impl KnowledgeBase for InMemoryKnowledgeBase {
    async fn similar(&self, signature: &ChangeSignature, limit: usize) -> Result<Vec<PastReconciliation>, KbError> {
        let past = self.past.lock().map_err(|e| KbError(e.to_string()))?;
        let mut scored: Vec<(f64, &PastReconciliation)> =
            past.iter().map(|p| (p.signature.similarity(signature), p)).filter(|(s, _)| *s > 0.0).collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        Ok(scored.into_iter().take(limit).map(|(_, p)| p.clone()).collect())
    }

    async fn record_reconciliation(&self, past: &PastReconciliation) -> Result<(), KbError> {
        let mut all = self.past.lock().map_err(|e| KbError(e.to_string()))?;
        all.retain(|p| p.change_set_id != past.change_set_id);
        all.push(past.clone());
        Ok(())
    }

    async fn store_recipe(&self, recipe: &LearnedRecipe) -> Result<(), KbError> {
        let mut all = self.recipes.lock().map_err(|e| KbError(e.to_string()))?;
        match all.iter_mut().find(|r| r.recipe.id == recipe.recipe.id) {
            Some(existing) => {
                existing.recipe = recipe.recipe.clone();
                existing.learned_from = recipe.learned_from.clone();
                existing.demoted = recipe.demoted.clone();
            }
            None => all.push(recipe.clone()),
        }
        Ok(())
    }

    async fn recipes(&self) -> Result<Vec<LearnedRecipe>, KbError> {
        Ok(self.recipes.lock().map_err(|e| KbError(e.to_string()))?.clone())
    }

    async fn record_recipe_use(&self, id: &str, usage: &RecipeUse) -> Result<(), KbError> {
        let mut all = self.recipes.lock().map_err(|e| KbError(e.to_string()))?;
        let recipe = all.iter_mut().find(|r| r.recipe.id == id).ok_or_else(|| KbError(format!("no recipe {id:?}")))?;
        count_use(recipe, usage);
        Ok(())
    }
}
