//! `driftback kb recipes`: the recipes the agent taught the knowledge base.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args as ClapArgs, Subcommand};

use driftback_agent::{KnowledgeBase, recipe_toml};
use driftback_store::Store;

use crate::config::Config;
use crate::kb_store::StoreKnowledgeBase;

#[derive(Debug, ClapArgs)]
pub struct Args {
    #[command(subcommand)]
    pub command: KbCommand,
}

#[derive(Debug, Subcommand)]
pub enum KbCommand {
    /// List the recipes learned from validated LLM reconciliations, with use and success counts.
    ///
    /// Demoted recipes (a patch failed validation, or a pull request was closed unmerged) are not
    /// listed; they are no longer used.
    Recipes(RecipesArgs),
}

#[derive(Debug, ClapArgs)]
pub struct RecipesArgs {
    /// The Terraform repository whose knowledge base to read ([store] sqlite_path is relative to it).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,
    /// Print the recipes in the catalog's TOML format (usable under [recipes] catalogs).
    #[arg(long)]
    pub toml: bool,
}

pub fn run(config: &Config, args: &Args) -> anyhow::Result<()> {
    match &args.command {
        KbCommand::Recipes(a) => recipes(config, a),
    }
}

fn recipes(config: &Config, args: &RecipesArgs) -> anyhow::Result<()> {
    let path = if config.store.sqlite_path.is_absolute() {
        config.store.sqlite_path.clone()
    } else {
        args.repo.join(&config.store.sqlite_path)
    };
    anyhow::ensure!(
        path.is_file(),
        "no knowledge base at {}; run `driftback reconcile --repo {}` first, or pass --repo",
        path.display(),
        args.repo.display()
    );
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let store = runtime
        .block_on(Store::open_sqlite(&path))
        .with_context(|| format!("opening the knowledge base {}", path.display()))?;
    let recipes = runtime.block_on(StoreKnowledgeBase::new(store).recipes()).map_err(|e| anyhow::anyhow!("{e}"))?;
    if args.toml {
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
