//! `driftback kb`: look into the knowledge base (search, stats, show, learned recipes) and
//! re-embed it.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Args as ClapArgs, Subcommand};
use serde::Serialize;

use driftback_events::group;
use driftback_feed::Intake;
use driftback_store::{SimilarEntry, Store};
use driftback_terraform::State;

use crate::config::Config;
use crate::driver::{embedder, embedding_text, open_existing_store, read_state};

/// Texts per embedding request while re-embedding.
const REEMBED_BATCH: usize = 128;

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// The knowledge base URL (postgres://... or sqlite:PATH). Default: store.url from the
    /// configuration, else the SQLite file store.sqlite_path in the repository.
    #[arg(long, global = true, value_name = "URL", env = "DRIFTBACK_STORE_URL")]
    pub store: Option<String>,
    /// The repository whose embedded knowledge base to use when no URL is given.
    #[arg(long, global = true, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: KbCommand,
}

#[derive(Debug, Subcommand)]
pub enum KbCommand {
    /// Find the knowledge entries most similar to a text or to the changes in a CloudTrail file.
    ///
    /// With TEXT, the text is embedded as it is (words like "instance type" find signatures that
    /// contain them). With --event FILE, the file's changes are grouped into change sets as
    /// `reconcile` would, and each change set's signature is searched: the same signature the
    /// agent stores, with the resource type located in the Terraform state (--state).
    Search(SearchArgs),
    /// Counts: events, drops by reason, change sets, the work queue, knowledge, tokens, embedder.
    Stats,
    /// One knowledge entry: signature, summary, learned recipe, patch and counts.
    Show {
        /// The entry's id (as printed by `kb search`).
        id: i64,
    },
    /// Re-embed every knowledge entry with the configured embedder, in one transaction.
    ///
    /// Needed after changing [embed] (kind, model or dimension): the knowledge base refuses to mix
    /// vectors of two embedders.
    Reembed,
    /// The recipes learned from validated LLM reconciliations, with use and success counts.
    ///
    /// Demoted recipes (a patch failed validation, or a pull request was closed unmerged) are not
    /// listed; they are no longer used.
    Recipes {
        /// Print them in the recipe catalog's TOML format (usable under [recipes] catalogs).
        #[arg(long)]
        toml: bool,
    },
}

#[derive(Debug, ClapArgs)]
pub struct SearchArgs {
    /// What to look for (free text or a signature such as "service:ec2 api:ModifyInstanceAttribute").
    #[arg(required_unless_present = "event", conflicts_with = "event")]
    pub text: Option<String>,
    /// CloudTrail records (same formats as `reconcile --events`): search for each change set in it.
    #[arg(long, value_name = "FILE")]
    pub event: Option<PathBuf>,
    /// The Terraform state that locates each change set's resource type, as `reconcile` does
    /// [default: terraform.tfstate in --repo, when there is one; without a state, signatures
    /// have no resource type].
    #[arg(long, value_name = "FILE", requires = "event")]
    pub state: Option<PathBuf>,
    /// How many entries to show.
    #[arg(short = 'k', long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub limit: u16,
}

/// One search and its answers, as printed with --json.
#[derive(Debug, Serialize)]
struct SearchResult {
    query: String,
    matches: Vec<SimilarEntry>,
}

pub async fn run(config: &Config, args: &Args) -> anyhow::Result<()> {
    let store = open_existing_store(&config.store, args.store.as_deref(), &args.repo).await?;
    let result = match &args.command {
        KbCommand::Search(search) => run_search(config, &store, search, &args.repo, args.json).await,
        KbCommand::Stats => run_stats(config, &store, args.json).await,
        KbCommand::Show { id } => run_show(&store, *id, args.json).await,
        KbCommand::Reembed => run_reembed(config, &store, args.json).await,
        KbCommand::Recipes { toml } => crate::cmd::kb_recipes::run(config, &store, *toml, args.json).await,
    };
    store.close().await;
    result
}

async fn run_search(config: &Config, store: &Store, args: &SearchArgs, repo: &Path, json: bool) -> anyhow::Result<()> {
    let (embedder, spec) = embedder(&config.embed)?;
    let queries = match (&args.text, &args.event) {
        (Some(text), _) => vec![text.clone()],
        (None, Some(path)) => event_signatures(config, path, &search_state(args.state.as_deref(), repo)?)?,
        (None, None) => bail!("give a TEXT to search for, or --event FILE"),
    };
    let mut results = Vec::with_capacity(queries.len());
    for query in queries {
        let vector = embedder.embed_one(&query).await.with_context(|| format!("embedding {query:?}"))?;
        let matches = store.similar_knowledge(&spec, &vector, usize::from(args.limit)).await?;
        results.push(SearchResult { query, matches });
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&results)?);
        return Ok(());
    }
    if store.embedder().await?.is_none() {
        println!("The knowledge base has no entries yet: it learns from reconciliations.");
        return Ok(());
    }
    for (i, r) in results.iter().enumerate() {
        if i > 0 {
            println!();
        }
        println!("query: {}", r.query);
        if r.matches.is_empty() {
            println!("  no match");
        }
        for m in &r.matches {
            let recipe = if m.entry.recipe_toml.is_some() && m.entry.demoted.is_none() { "  [recipe]" } else { "" };
            println!(
                "  #{:<6} {:.3}  uses {} / successes {}{recipe}",
                m.entry.id, m.similarity, m.entry.uses, m.entry.successes
            );
            println!("          {}", first_line(&m.entry.summary));
            println!("          {}", embedding_text(&m.entry.signature));
        }
    }
    Ok(())
}

/// The Terraform state `kb search --event` locates resource types in: `--state FILE` (which must
/// read), else `terraform.tfstate` in the repository when it exists, else an empty state.
fn search_state(given: Option<&Path>, repo: &Path) -> anyhow::Result<State> {
    let path = match given {
        Some(path) => path.to_path_buf(),
        None => {
            let default = repo.join("terraform.tfstate");
            if !default.is_file() {
                eprintln!(
                    "note: no Terraform state at {}: the signatures searched have no resource type (pass --state FILE)",
                    default.display()
                );
                return Ok(State::default());
            }
            default
        }
    };
    read_state(&path)
}

/// The signature text of each change set in a CloudTrail file, grouped as `reconcile` groups it
/// and signed as the agent signs what it stores ([`driftback_agent::signature`]).
fn event_signatures(config: &Config, path: &Path, state: &State) -> anyhow::Result<Vec<String>> {
    let intake = Intake::read_file(path, &config.filter)?;
    for bad in &intake.bad {
        eprintln!("warning: skipped {}: {}", bad.location, bad.reason);
    }
    let kept: Vec<_> = intake.kept().cloned().collect();
    if kept.is_empty() {
        bail!(
            "{} holds no change to search for (every event is read-only, failed, a data event or the IaC tool's own)",
            path.display()
        );
    }
    Ok(group(kept, &config.group).iter().map(|cs| driftback_agent::signature(cs, state).text()).collect())
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

async fn run_stats(config: &Config, store: &Store, json: bool) -> anyhow::Result<()> {
    let stats = store.stats().await?;
    let configured = embedder(&config.embed).map(|(_, spec)| spec).ok();
    if json {
        let value = serde_json::json!({
            "backend": store.backend_name(),
            "configured_embedder": configured,
            "stats": stats,
        });
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(());
    }
    let list = |v: &[(String, u64)]| {
        if v.is_empty() {
            "none".to_owned()
        } else {
            v.iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", ")
        }
    };
    println!("backend:          {}", store.backend_name());
    println!("events:           {}", stats.events);
    println!("  dropped:        {}", list(&stats.events_dropped_by_reason));
    println!("bad records:      {}", stats.bad_records);
    println!("change sets:      {}", list(&stats.change_sets_by_status));
    println!("work queue:       {}", list(&stats.queue_by_status));
    println!("reconciliations:  {}", stats.reconciliations);
    println!("tokens:           {} prompt, {} completion", stats.prompt_tokens, stats.completion_tokens);
    println!("knowledge:        {} entries, {} learned recipes", stats.knowledge_entries, stats.learned_recipes);
    match (&stats.embedder, &configured) {
        (Some(stored), Some(configured)) if stored != configured => println!(
            "embedder:         vectors from {stored}, but {configured} is configured: run `driftback kb reembed`"
        ),
        (Some(stored), _) => println!("embedder:         {stored}"),
        (None, Some(configured)) => println!("embedder:         none yet ({configured} is configured)"),
        (None, None) => println!("embedder:         none yet"),
    }
    Ok(())
}

async fn run_show(store: &Store, id: i64, json: bool) -> anyhow::Result<()> {
    let Some(entry) = store.knowledge_entry(id).await? else {
        bail!("there is no knowledge entry {id}; `driftback kb search TEXT` lists entries with their ids");
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&entry)?);
        return Ok(());
    }
    println!("entry:       #{}", entry.id);
    println!("signature:   {}", embedding_text(&entry.signature));
    println!("uses:        {} ({} successful)", entry.uses, entry.successes);
    println!("learned at:  {}, updated {}", entry.created_at.to_rfc3339(), entry.updated_at.to_rfc3339());
    if let Some(cs) = &entry.change_set_id {
        println!("change set:  {cs}");
    }
    if let Some(reason) = &entry.demoted {
        println!("demoted:     {reason}");
    }
    println!("\n{}", entry.summary);
    if let Some(recipe) = &entry.recipe_toml {
        println!("\nrecipe:\n{}", recipe.trim_end());
    }
    if let Some(diff) = &entry.patch_diff {
        println!("\npatch:\n{}", diff.trim_end());
    }
    Ok(())
}

async fn run_reembed(config: &Config, store: &Store, json: bool) -> anyhow::Result<()> {
    let (embedder, spec) = embedder(&config.embed)?;
    let texts = store.knowledge_texts().await?;
    let mut vectors = Vec::with_capacity(texts.len());
    for (i, batch) in texts.chunks(REEMBED_BATCH).enumerate() {
        let inputs: Vec<String> = batch.iter().map(|t| embedding_text(&t.signature)).collect();
        let embedded = embedder.embed(&inputs).await.context("re-embedding the knowledge base; nothing was changed")?;
        vectors.extend(batch.iter().map(|t| t.id).zip(embedded));
        if !json && texts.len() > REEMBED_BATCH {
            eprintln!("embedded {} of {}", (i * REEMBED_BATCH + batch.len()), texts.len());
        }
    }
    let previous = store.embedder().await?;
    store.replace_embeddings(&spec, &vectors).await.context("storing the new vectors; nothing was changed")?;
    if json {
        let value = serde_json::json!({"entries": vectors.len(), "from": previous, "to": spec});
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        let from = previous.map(|p| p.to_string()).unwrap_or_else(|| "no embedder".into());
        println!("re-embedded {} entries: {from} -> {spec}", vectors.len());
    }
    Ok(())
}
