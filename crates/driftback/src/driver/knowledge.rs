//! The knowledge base as the driver uses it: opening the store the configuration names, the
//! configured embedder, and the agent's [`KnowledgeBase`] over the store (or in memory).
//!
//! In the store, an entry is keyed by its signature's canonical text, which is also the text
//! embedded. Entries stored by driftback before the signature types were unified are keyed by a
//! JSON object; they are read as signatures all the same ([`ChangeSignature::from_stored`]), and
//! [`embedding_text`] gives the canonical text their vectors are (re)computed from.

use std::path::Path;

use anyhow::Context;

use driftback_agent::{
    InMemoryKnowledgeBase, KbError, KnowledgeBase, LearnedRecipe, PastReconciliation, RecipeUse, recipe_toml,
};
use driftback_embed::{ChangeSignature, EmbedConfig, Embedder};
use driftback_recipes::Catalog;
use driftback_store::{EmbedderSpec, KnowledgeEntry, NewKnowledge, Store};

use crate::config::StoreConfig;

/// Opens the knowledge base the configuration names (retrying a database that is not up yet).
pub async fn open_store(config: &StoreConfig, repo: &Path) -> anyhow::Result<Store> {
    let url = config.resolved_url(repo);
    Store::open(&url, &config.open_options())
        .await
        .with_context(|| format!("opening the knowledge base {}", driftback_store::redact_url(&url)))
}

/// The knowledge base to look into (`kb`, `pending`): `url` when given, else the configured one;
/// an embedded SQLite file must exist already (looking must not create: a missing file is a wrong
/// path or repository, not an empty knowledge base).
pub async fn open_existing_store(config: &StoreConfig, url: Option<&str>, repo: &Path) -> anyhow::Result<Store> {
    let mut config = config.clone();
    if let Some(url) = url {
        config.url = Some(url.to_string());
    }
    let resolved = config.resolved_url(repo);
    if let Some(path) = resolved.strip_prefix("sqlite:") {
        anyhow::ensure!(
            Path::new(path).is_file(),
            "there is no knowledge base at {path}; pass --repo DIR (the repository driftback reconciles) or --store URL"
        );
    }
    open_store(&config, repo).await
}

/// The configured embedder and the spec its vectors are stored under.
pub fn embedder(config: &EmbedConfig) -> anyhow::Result<(Embedder, EmbedderSpec)> {
    let embedder = Embedder::from_config(config).context("the [embed] configuration")?;
    let spec = EmbedderSpec { name: embedder.name(), dimension: embedder.dimension() };
    Ok((embedder, spec))
}

/// Where learned recipes and past reconciliations live.
pub enum Knowledge {
    /// For one run with no store (`eval`, a dry run): what is learned in one change set serves the next.
    Memory(InMemoryKnowledgeBase),
    /// The knowledge base in the store.
    Store(StoreKnowledgeBase),
}

impl Knowledge {
    /// The store's knowledge base with the configured embedder, or one in memory without a store.
    pub fn new(store: Option<&Store>, embed: &EmbedConfig) -> anyhow::Result<Knowledge> {
        Ok(match store {
            Some(store) => {
                let (embedder, spec) = embedder(embed)?;
                Knowledge::Store(StoreKnowledgeBase::new(store.clone(), embedder, spec))
            }
            None => Knowledge::Memory(InMemoryKnowledgeBase::new()),
        })
    }
}

impl KnowledgeBase for Knowledge {
    async fn similar(&self, signature: &ChangeSignature, limit: usize) -> Result<Vec<PastReconciliation>, KbError> {
        match self {
            Knowledge::Memory(kb) => kb.similar(signature, limit).await,
            Knowledge::Store(kb) => kb.similar(signature, limit).await,
        }
    }
    async fn record_reconciliation(&self, past: &PastReconciliation) -> Result<(), KbError> {
        match self {
            Knowledge::Memory(kb) => kb.record_reconciliation(past).await,
            Knowledge::Store(kb) => kb.record_reconciliation(past).await,
        }
    }
    async fn store_recipe(&self, recipe: &LearnedRecipe) -> Result<(), KbError> {
        match self {
            Knowledge::Memory(kb) => kb.store_recipe(recipe).await,
            Knowledge::Store(kb) => kb.store_recipe(recipe).await,
        }
    }
    async fn recipes(&self) -> Result<Vec<LearnedRecipe>, KbError> {
        match self {
            Knowledge::Memory(kb) => kb.recipes().await,
            Knowledge::Store(kb) => kb.recipes().await,
        }
    }
    async fn record_recipe_use(&self, id: &str, usage: &RecipeUse) -> Result<(), KbError> {
        match self {
            Knowledge::Memory(kb) => kb.record_recipe_use(id, usage).await,
            Knowledge::Store(kb) => kb.record_recipe_use(id, usage).await,
        }
    }
}

/// The agent's knowledge base over the store: one knowledge entry per kind of change (its
/// signature), with the patch that reconciled it and, once learned, its recipe.
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

    async fn embed(&self, signature: &ChangeSignature) -> Result<Vec<f32>, KbError> {
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
        signature: ChangeSignature::from_stored(&entry.signature).unwrap_or_default(),
        learned_from: entry.change_set_id.clone().unwrap_or_default(),
        uses: entry.uses as u32,
        successes: entry.successes as u32,
        failures: entry.uses.saturating_sub(entry.successes) as u32,
        demoted: entry.demoted.clone(),
    })
}

/// The key an entry is stored under: the signature's canonical text.
fn key(signature: &ChangeSignature) -> String {
    signature.text()
}

/// The text a stored entry's vector is computed from: its signature's canonical text, whichever
/// form the signature was stored in; a key that is no signature (written by other tools) as it is.
pub fn embedding_text(stored_signature: &str) -> String {
    match ChangeSignature::from_stored(stored_signature) {
        Ok(signature) => signature.text(),
        Err(_) => stored_signature.to_owned(),
    }
}

impl KnowledgeBase for StoreKnowledgeBase {
    async fn similar(&self, signature: &ChangeSignature, limit: usize) -> Result<Vec<PastReconciliation>, KbError> {
        let found =
            self.store.similar_knowledge(&self.spec, &self.embed(signature).await?, limit).await.map_err(kb_error)?;
        Ok(found
            .into_iter()
            .filter(|s| s.similarity > 0.0)
            .filter_map(|s| {
                let signature = ChangeSignature::from_stored(&s.entry.signature).ok()?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A key and the text its vector was computed from, as driftback stored them before the
    /// signature types were unified.
    const LEGACY_KEY: &str = r#"{"calls":["ec2:ModifyVpcAttribute"],"resource_type":"aws_vpc","parameters":["enableDnsHostnames.value","vpcId"]}"#;
    const LEGACY_EMBEDDED: &str = "ec2:ModifyVpcAttribute on aws_vpc (enableDnsHostnames.value, vpcId)";

    const DNS_HOSTNAMES: &str = "service:ec2 api:ModifyVpcAttribute call:ec2:ModifyVpcAttribute type:aws_vpc \
                                 param:enableDnsHostnames.value=bool param:vpcId=id";

    #[test]
    fn every_stored_form_is_embedded_by_its_canonical_text() {
        let signature: ChangeSignature = DNS_HOSTNAMES.parse().unwrap();
        assert_eq!(embedding_text(&key(&signature)), signature.text());
        assert_eq!(
            embedding_text(LEGACY_KEY),
            "service:ec2 api:ModifyVpcAttribute call:ec2:ModifyVpcAttribute type:aws_vpc \
             param:enableDnsHostnames.value param:vpcId"
        );
        assert_eq!(embedding_text("instance type changes"), "instance type changes");
    }

    fn past(id: &str, signature: &ChangeSignature) -> PastReconciliation {
        PastReconciliation {
            change_set_id: id.into(),
            signature: signature.clone(),
            summary: format!("summary of {id}"),
            patch: format!("patch of {id}"),
            outcome: "reconciled".into(),
            planned_by: "agent".into(),
            tokens: 5,
        }
    }

    #[tokio::test]
    async fn recorded_knowledge_is_found_by_its_signature_and_legacy_entries_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_sqlite(&dir.path().join("kb.sqlite")).await.unwrap();
        let embedder = Embedder::from_config(&driftback_embed::EmbedConfig::default()).unwrap();
        let spec = EmbedderSpec { name: embedder.name(), dimension: embedder.dimension() };
        // An entry the previous version wrote.
        let legacy = NewKnowledge {
            signature: LEGACY_KEY.into(),
            summary: "legacy".into(),
            embedding: embedder.embed_one(LEGACY_EMBEDDED).await.unwrap(),
            patch_diff: Some("legacy patch".into()),
            recipe_toml: None,
            change_set_id: Some("cs-legacy".into()),
        };
        store.upsert_knowledge(&spec, &legacy).await.unwrap();
        let kb = StoreKnowledgeBase::new(store.clone(), embedder, spec);

        let dns: ChangeSignature = DNS_HOSTNAMES.parse().unwrap();
        let found = kb.similar(&dns, 5).await.unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].change_set_id, "cs-legacy");
        assert_eq!(found[0].signature, ChangeSignature::from_stored(LEGACY_KEY).unwrap());

        let tags: ChangeSignature =
            "service:ec2 api:CreateTags call:ec2:CreateTags type:aws_vpc param:tagSet.items[].key=string"
                .parse()
                .unwrap();
        kb.record_reconciliation(&past("cs-dns", &dns)).await.unwrap();
        kb.record_reconciliation(&past("cs-tags", &tags)).await.unwrap();
        let keys: Vec<String> = store.knowledge_texts().await.unwrap().into_iter().map(|t| t.signature).collect();
        assert_eq!(keys, [LEGACY_KEY.to_owned(), dns.text(), tags.text()]);

        let found = kb.similar(&dns, 5).await.unwrap();
        let ids: Vec<&str> = found.iter().map(|p| p.change_set_id.as_str()).collect();
        assert_eq!(ids[0], "cs-dns", "{ids:?}");
        assert_eq!(found[0].signature, dns);
        assert!(ids.contains(&"cs-legacy"), "{ids:?}");
        assert_eq!(kb.similar(&tags, 1).await.unwrap()[0].change_set_id, "cs-tags");
        store.close().await;
    }
}
