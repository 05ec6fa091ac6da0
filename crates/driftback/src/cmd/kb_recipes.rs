//! `driftback kb recipes`: the recipes the agent taught the knowledge base.

use driftback_agent::{KnowledgeBase, recipe_toml};
use driftback_store::Store;

use crate::config::Config;
use crate::driver::{StoreKnowledgeBase, embedder};

pub async fn run(config: &Config, store: &Store, toml: bool, json: bool) -> anyhow::Result<()> {
    let (embedder, spec) = embedder(&config.embed)?;
    let kb = StoreKnowledgeBase::new(store.clone(), embedder, spec);
    let recipes = kb.recipes().await.map_err(|e| anyhow::anyhow!("{e}"))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&recipes)?);
        return Ok(());
    }
    if toml {
        for l in &recipes {
            println!("# learned from change set {}; used {} times, {} validated", l.learned_from, l.uses, l.successes);
            println!("{}", recipe_toml(&l.recipe));
        }
        return Ok(());
    }
    if recipes.is_empty() {
        println!("no learned recipes yet");
        return Ok(());
    }
    println!("{:<50} {:>5} {:>9}  calls -> types", "recipe", "uses", "successes");
    for l in &recipes {
        println!(
            "{:<50} {:>5} {:>9}  {} {} -> {}",
            l.recipe.id,
            l.uses,
            l.successes,
            l.recipe.source,
            l.recipe.events.join(","),
            l.recipe.types.join(",")
        );
    }
    Ok(())
}
