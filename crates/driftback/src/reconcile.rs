//! `driftback reconcile`: a CloudTrail file into branches of a repository.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args as ClapArgs;

use driftback_events::{ChangeSet, Disposition, classify, group, read_file};
use driftback_publish::{Author, GitRepo};
use driftback_recipes::Catalog;
use driftback_store::{ChangeSetRecord, EventRecord};
use driftback_terraform::{Repo, State};

use crate::agent_glue::{self, AgentStage, Knowledge};
use crate::config::Config;
use crate::delivery::Delivery;
use crate::kb_store::StoreKnowledgeBase;
use crate::pipeline::{Outcome, Status};
use crate::publishing::Publisher;

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// CloudTrail records: a log file {"Records": [...]} (plain or .gz), a JSON array, or JSON lines
    /// of records or EventBridge envelopes.
    #[arg(long, value_name = "FILE")]
    pub events: PathBuf,
    /// The Terraform repository (a git working tree with a clean status).
    #[arg(long, value_name = "DIR")]
    pub repo: PathBuf,
    /// Terraform state (format version 4). Default: DIR/terraform.tfstate.
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// Plan and decide, print what would happen, and write nothing (no branches, no knowledge base).
    #[arg(long)]
    pub dry_run: bool,
}

/// What a run did, for the summary and for the demo.
#[derive(Debug, Default)]
pub struct Summary {
    pub events_read: usize,
    pub bad_records: usize,
    pub already_seen: usize,
    pub dropped: BTreeMap<&'static str, usize>,
    pub change_sets: usize,
    pub reconciled: Vec<(String, String)>,
    pub escalated: Vec<(String, String)>,
    pub other: Vec<(String, String)>,
    /// Fields two actors set back and forth, each reported once.
    pub oscillations: Vec<String>,
}

pub fn run(config: &Config, args: &Args) -> anyhow::Result<Summary> {
    let git = if args.dry_run { None } else { Some(GitRepo::open_clean(&args.repo)?) };
    let state_path = args.state.clone().unwrap_or_else(|| args.repo.join("terraform.tfstate"));
    let state_text = std::fs::read_to_string(&state_path)
        .with_context(|| format!("cannot read the Terraform state {}; pass --state FILE", state_path.display()))?;
    let state = State::parse(&state_text, &state_path.display().to_string())?;
    let repo = Repo::load(&args.repo)?;
    if let Some(d) = repo.diagnostics().first() {
        bail!(
            "{}:{}:{}: {}; fix the file and run again",
            args.repo.join(&d.file).display(),
            d.line,
            d.column,
            d.message
        );
    }
    let batch = read_file(&args.events)?;
    let catalog = load_catalog(config, &args.repo)?;
    let policy = crate::policy_cmd::load_policy(config, &args.repo)?;

    // Multi-threaded, so the store and GitHub calls also run when driven through its handle.
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let store =
        if args.dry_run { None } else { Some(runtime.block_on(crate::kb::open_store(&config.store, &args.repo))?) };

    let mut summary = Summary {
        events_read: batch.events.len() + batch.bad.len(),
        bad_records: batch.bad.len(),
        ..Summary::default()
    };
    for bad in &batch.bad {
        eprintln!("warning: skipped {}: {}", bad.location, bad.reason);
        if let Some(store) = &store {
            runtime.block_on(store.record_bad_record(&bad.location, &bad.reason, ""))?;
        }
    }
    let ids: Vec<String> = batch.events.iter().map(|(e, _)| e.id.clone()).collect();
    let seen = match &store {
        Some(store) => runtime.block_on(store.seen_event_ids(&ids))?,
        None => Default::default(),
    };
    let mut kept = Vec::new();
    let mut records = Vec::new();
    let mut unique = std::collections::HashSet::new();
    for (event, raw) in &batch.events {
        if seen.contains(&event.id) || !unique.insert(event.id.clone()) {
            summary.already_seen += 1;
            continue;
        }
        let disposition = classify(event, &config.filter);
        let (disp, reason) = match disposition {
            Disposition::Keep => {
                kept.push(event.clone());
                (driftback_store::Disposition::Kept, None)
            }
            Disposition::Drop(reason) => {
                *summary.dropped.entry(reason.as_str()).or_default() += 1;
                (driftback_store::Disposition::Dropped, Some(reason.as_str().to_string()))
            }
        };
        records.push(EventRecord {
            event_id: event.id.clone(),
            event_time: event.time,
            source: event.source.clone(),
            name: event.raw_name.clone(),
            actor: event.actor.display_name.clone(),
            disposition: disp,
            drop_reason: reason,
            raw: raw.clone(),
        });
    }
    let change_sets = group(kept, &config.group);
    summary.change_sets = change_sets.len();
    let knowledge = match &store {
        Some(store) => {
            let (embedder, spec) = crate::kb::embedder(&config.embed)?;
            Knowledge::Store(StoreKnowledgeBase::new(store.clone(), embedder, spec))
        }
        None => Knowledge::Memory(driftback_agent::InMemoryKnowledgeBase::new()),
    };
    let mut stage = AgentStage::new(runtime.handle().clone(), &config.agent, catalog.clone(), knowledge)?;
    let author = Author { name: config.publish.author_name.clone(), email: config.publish.author_email.clone() };
    let base = git.as_ref().map(|g| g.head_commit()).transpose()?;
    let publisher = match &git {
        Some(git) => Publisher::from_config(&config.publish, git, &args.repo)?,
        None => None,
    };
    // The ownership ledger of this run: field changes seen so far, for oscillation detection.
    let mut ledger: Vec<driftback_policy::LedgerEntry> = match &store {
        Some(store) => {
            runtime.block_on(crate::ownership::load_history(store, &catalog, &state, &repo, &policy, &change_sets))?
        }
        None => Vec::new(),
    };
    for change_set in &change_sets {
        let outcome = stage.process(&state, &repo, change_set, &policy, &ledger);
        ledger.extend(outcome.ledger.iter().cloned());
        if let Some(decision) = &outcome.decision {
            for o in decision.oscillations.iter().filter(|o| o.first_report) {
                summary.oscillations.push(o.describe());
            }
        }
        let label = outcome
            .addresses
            .first()
            .cloned()
            .or_else(|| change_set.resource_id.clone())
            .unwrap_or_else(|| change_set.id.clone());
        let mut record = change_set_record(change_set, &outcome);
        match &outcome.status {
            Status::Reconciled => match (&git, base) {
                (Some(git), Some(base)) => {
                    let base_branch =
                        publisher.as_ref().map(|p| p.base_branch().to_string()).unwrap_or_else(|| git.head_name());
                    let delivery = Delivery {
                        runtime: runtime.handle(),
                        git,
                        store: store.as_ref(),
                        publisher: publisher.as_ref(),
                        catalog: &catalog,
                        state: &state,
                        policy: &policy,
                        ledger: &ledger,
                        branch_prefix: &config.publish.branch_prefix,
                        author: &author,
                        base,
                        base_branch: &base_branch,
                    };
                    let delivered = delivery.deliver(change_set, &outcome, &label, None)?;
                    record.branch = Some(delivered.branch.clone());
                    record.commit_id = Some(delivered.commit.to_string());
                    record.diff = delivered.diff.clone();
                    record.notes.extend(delivered.note());
                    summary.reconciled.push((label.clone(), delivered.describe()));
                }
                _ => {
                    record.status = "dry-run".into();
                    summary.reconciled.push((label.clone(), "(dry run: no branch)".into()));
                }
            },
            Status::Escalated(reason) => summary.escalated.push((label.clone(), reason.clone())),
            Status::Revert(reason) => summary.other.push((label.clone(), format!("revert: {reason}"))),
            Status::NoChange => summary.other.push((label.clone(), format!("no change{}", notes_suffix(&outcome)))),
        }
        if let Some(store) = &store {
            // The decision goes to the audit log with its evidence (ownership::record), so the change
            // set row does not log it a second time without.
            record.decision = None;
            runtime.block_on(store.record_change_set(&record))?;
            runtime.block_on(crate::ownership::record(store, change_set, &outcome))?;
            runtime.block_on(agent_glue::record_agent_work(store, change_set, &outcome, &record))?;
        }
    }
    // Events are marked seen only once their change sets are committed and recorded.
    if let Some(store) = &store {
        runtime.block_on(store.record_events(&records))?;
    }
    print_summary(&summary, args.dry_run);
    Ok(summary)
}

fn notes_suffix(outcome: &Outcome) -> String {
    if outcome.notes.is_empty() { String::new() } else { format!(": {}", outcome.notes.join("; ")) }
}

pub fn load_catalog(config: &Config, repo: &Path) -> anyhow::Result<Catalog> {
    let mut catalog = Catalog::builtin();
    for path in config.recipes.catalogs.iter().rev() {
        let path = resolve(repo, path);
        let text =
            std::fs::read_to_string(&path).with_context(|| format!("cannot read recipe catalog {}", path.display()))?;
        catalog.extend_front(Catalog::from_toml(&text, &path.display().to_string())?);
    }
    Ok(catalog)
}

fn resolve(base: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() { path.to_path_buf() } else { base.join(path) }
}

pub(crate) fn change_set_record(change_set: &ChangeSet, outcome: &Outcome) -> ChangeSetRecord {
    ChangeSetRecord {
        id: change_set.id.clone(),
        resource_id: change_set.resource_id.clone(),
        address: outcome.addresses.first().cloned(),
        actor: change_set.actor.display_name.clone(),
        via: change_set.actor.via.as_str().to_string(),
        first_event_time: change_set.first_time(),
        last_event_time: change_set.last_time(),
        event_ids: change_set.events.iter().map(|e| e.id.clone()).collect(),
        // `reconciled`, `no-change`, `revert` or `escalated`; `dry-run` is set by the caller.
        status: outcome.status.label().to_string(),
        decision: outcome.decision.as_ref().map(|d| d.kind.as_str().to_string()),
        rule: outcome.decision.as_ref().map(|d| d.rule.clone()),
        rationale: match &outcome.status {
            Status::Escalated(r) | Status::Revert(r) => Some(r.clone()),
            _ => outcome.decision.as_ref().map(|d| d.rationale.clone()),
        },
        branch: None,
        commit_id: None,
        diff: None,
        notes: outcome.notes.clone(),
    }
}

fn print_summary(summary: &Summary, dry_run: bool) {
    println!("events read: {}", summary.events_read);
    if summary.bad_records > 0 {
        println!("  skipped as malformed: {}", summary.bad_records);
    }
    if summary.already_seen > 0 {
        println!("  already seen in an earlier run: {}", summary.already_seen);
    }
    for (reason, n) in &summary.dropped {
        println!("  dropped ({reason}): {n}");
    }
    println!("change sets: {}", summary.change_sets);
    println!("reconciled: {}{}", summary.reconciled.len(), if dry_run { " (dry run)" } else { "" });
    for (label, branch) in &summary.reconciled {
        println!("  {label} -> {branch}");
    }
    println!("escalated: {}", summary.escalated.len());
    for (label, reason) in &summary.escalated {
        println!("  {label}: {reason}");
    }
    for (label, what) in &summary.other {
        println!("  {label}: {what}");
    }
    if !summary.oscillations.is_empty() {
        println!("oscillations: {}", summary.oscillations.len());
        for o in &summary.oscillations {
            println!("  {o}");
        }
    }
}
