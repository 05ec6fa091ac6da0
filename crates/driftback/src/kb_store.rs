//! The agent's knowledge base over the store: one knowledge entry per kind of change (its
//! signature), with the patch that reconciled it and, once learned, its recipe.

use driftback_agent::{KbError, KnowledgeBase, LearnedRecipe, PastReconciliation, RecipeUse, Signature, recipe_toml};
use driftback_embed::Embedder;
use driftback_recipes::Catalog;
use driftback_store::{EmbedderSpec, KnowledgeEntry, NewKnowledge, Store};

pub struct StoreKnowledgeBase {
    store: Store,
    /// The configured embedder ([embed]), so the agent's vectors are never mixed with others.
    embedder: Embedder,
    spec: EmbedderSpec,
}

impl StoreKnowledgeBase {
    pub fn new(store: Store, embedder: Embedder, spec: EmbedderSpec) -> Self {
        StoreKnowledgeBase { store, embedder, spec }
    }

    async fn embed(&self, signature: &Signature) -> Result<Vec<f32>, KbError> {
        self.embedder.embed_one(&signature.text()).await.map_err(|e| KbError(e.to_string()))
    }

    async fn entries_with_recipes(&self) -> Result<Vec<(KnowledgeEntry, LearnedRecipe)>, KbError> {
        let entries = self.store.learned_recipes().await.map_err(kb_error)?;
        Ok(entries.into_iter().filter_map(|e| learned(&e).map(|l| (e, l))).collect())
    }
}

fn kb_error(e: driftback_store::StoreError) -> KbError {
    KbError(e.to_string())
}

/// A stored entry's recipe, as the agent knows it; entries written by others without one are skipped.
fn learned(entry: &KnowledgeEntry) -> Option<LearnedRecipe> {
    let text = entry.recipe_toml.as_deref()?;
    let recipe = Catalog::from_toml(text, &format!("knowledge entry {}", entry.id)).ok()?.recipes.into_iter().next()?;
    Some(LearnedRecipe {
        recipe,
        signature: serde_json::from_str(&entry.signature).unwrap_or_default(),
        learned_from: entry.change_set_id.clone().unwrap_or_default(),
        uses: entry.uses as u32,
        successes: entry.successes as u32,
        failures: entry.uses.saturating_sub(entry.successes) as u32,
        demoted: entry.demoted.clone(),
    })
}

fn key(signature: &Signature) -> String {
    serde_json::to_string(signature).unwrap_or_default()
}

impl KnowledgeBase for StoreKnowledgeBase {
    async fn similar(&self, signature: &Signature, limit: usize) -> Result<Vec<PastReconciliation>, KbError> {
        let found =
            self.store.similar_knowledge(&self.spec, &self.embed(signature).await?, limit).await.map_err(kb_error)?;
        Ok(found
            .into_iter()
            .filter(|s| s.similarity > 0.0)
            .filter_map(|s| {
                let signature = serde_json::from_str(&s.entry.signature).ok()?;
                Some(PastReconciliation {
                    change_set_id: s.entry.change_set_id.clone().unwrap_or_default(),
                    signature,
                    summary: s.entry.summary.clone(),
                    patch: s.entry.patch_diff.clone().unwrap_or_default(),
                    outcome: "reconciled".into(),
                    planned_by: if s.entry.recipe_toml.is_some() { "a learned recipe".into() } else { String::new() },
                    tokens: 0,
                })
            })
            .collect())
    }

    async fn record_reconciliation(&self, past: &PastReconciliation) -> Result<(), KbError> {
        let entry = NewKnowledge {
            signature: key(&past.signature),
            summary: format!("{} (planned by {}, {} tokens)", past.summary, past.planned_by, past.tokens),
            embedding: self.embed(&past.signature).await?,
            patch_diff: Some(past.patch.clone()),
            recipe_toml: None,
            change_set_id: Some(past.change_set_id.clone()),
        };
        self.store.upsert_knowledge(&self.spec, &entry).await.map_err(kb_error).map(|_| ())
    }

    async fn store_recipe(&self, recipe: &LearnedRecipe) -> Result<(), KbError> {
        let entry = NewKnowledge {
            signature: key(&recipe.signature),
            summary: format!("learned recipe {} ({})", recipe.recipe.id, recipe.signature.text()),
            embedding: self.embed(&recipe.signature).await?,
            patch_diff: None,
            recipe_toml: Some(recipe_toml(&recipe.recipe)),
            change_set_id: Some(recipe.learned_from.clone()),
        };
        self.store.upsert_knowledge(&self.spec, &entry).await.map_err(kb_error).map(|_| ())
    }

    async fn recipes(&self) -> Result<Vec<LearnedRecipe>, KbError> {
        Ok(self.entries_with_recipes().await?.into_iter().map(|(_, l)| l).collect())
    }

    async fn record_recipe_use(&self, id: &str, usage: &RecipeUse) -> Result<(), KbError> {
        let entries = self.entries_with_recipes().await?;
        let Some((entry, _)) = entries.iter().find(|(_, l)| l.recipe.id == id) else {
            return Err(KbError(format!("no learned recipe {id:?} in the store")));
        };
        match usage {
            RecipeUse::Validated => {
                self.store.bump_knowledge_use(entry.id).await.map_err(kb_error)?;
                self.store.bump_knowledge_success(entry.id).await.map_err(kb_error)?;
            }
            RecipeUse::FailedValidation(reason) => {
                self.store.bump_knowledge_use(entry.id).await.map_err(kb_error)?;
                let why = format!("its patch failed validation: {reason}");
                self.store.demote_knowledge(entry.id, &why).await.map_err(kb_error)?;
            }
            RecipeUse::PullRequestClosed(pr) => {
                let why = format!("a pull request of its patch was closed unmerged: {pr}");
                self.store.demote_knowledge(entry.id, &why).await.map_err(kb_error)?;
            }
        }
        Ok(())
    }
}
