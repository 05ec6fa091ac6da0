//! `driftback reconcile`: a CloudTrail file into branches of a repository.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Args as ClapArgs;

use driftback_events::group;
use driftback_feed::Intake;
use driftback_publish::{Author, GitRepo};

use crate::config::Config;
use crate::driver::{
    Deliverer, Delivery, Driven, Driver, Modules, Outcome, Publisher, Stacks, Status, Workspace, load_catalog,
    notifier, open_store, routes_to_stacks,
};

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// CloudTrail records: a log file {"Records": [...]} (plain or .gz), a JSON array, or JSON lines
    /// of records or EventBridge envelopes.
    #[arg(long, value_name = "FILE")]
    pub events: PathBuf,
    /// The Terraform repository (a git working tree with a clean status).
    #[arg(long, value_name = "DIR")]
    pub repo: PathBuf,
    /// Terraform state (format version 4): the repository is read as one root module with this
    /// state. Default: DIR/terraform.tfstate; when there is none, or the configuration names
    /// [[stack]]s, the repository is read as stacks (see --stacks).
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// Route each change set to the stack and workspace whose state manages its resource, as
    /// `serve` does (stacks found in DIR and named by [[stack]] entries; states read where they
    /// live, listed by `driftback stacks`). Without this flag, the repository is read as stacks
    /// when the configuration names [[stack]]s or there is no DIR/terraform.tfstate, and neither
    /// --state nor --workspace is given.
    #[arg(long, conflicts_with_all = ["state", "workspace"])]
    pub stacks: bool,
    /// Plan and decide, print what would happen, and write nothing (no branches, no knowledge base).
    #[arg(long)]
    pub dry_run: bool,
    /// The Terraform workspace the state belongs to (`terraform.workspace`). A drift is then written
    /// where only this workspace reads it: its `--var-file`, or its entry of a map keyed by
    /// `terraform.workspace`.
    #[arg(long, value_name = "NAME")]
    pub workspace: Option<String>,
    /// A variable file of the workspace, as given to `terraform plan -var-file` (repeatable, in
    /// order; relative to DIR).
    #[arg(long = "var-file", value_name = "FILE", requires = "workspace")]
    pub var_files: Vec<PathBuf>,
    /// Another workspace of the same code, `NAME=FILE[,FILE...]` with its variable files
    /// (repeatable): a patch that would change what it evaluates to is refused, so what the
    /// workspaces share changes only when the change holds for all of them.
    #[arg(long = "other-workspace", value_name = "NAME=FILES", requires = "workspace")]
    pub other_workspaces: Vec<String>,
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
    /// The commits made, in order.
    pub commits: Vec<Commit>,
}

/// One reconciled change set's commit.
#[derive(Debug, Clone)]
pub struct Commit {
    pub label: String,
    pub branch: String,
    pub message: String,
    pub diff: String,
}

pub async fn run(config: &Config, args: &Args) -> anyhow::Result<Summary> {
    let git = if args.dry_run { None } else { Some(GitRepo::open_clean(&args.repo)?) };
    let catalog = load_catalog(config, &args.repo)?;
    let default_state = args.repo.join("terraform.tfstate");
    let as_stacks =
        args.stacks || (args.state.is_none() && args.workspace.is_none() && routes_to_stacks(config, &default_state));
    let mut road = if as_stacks {
        let mut stacks =
            Stacks::new(config, &args.repo, catalog.clone()).with_modules(std::sync::Arc::new(Modules::new(config)?));
        let found = stacks.refresh("the working tree").await?;
        if !args.stacks {
            if found.workspaces == 0 {
                anyhow::bail!(
                    "no Terraform state at {} and no stack whose state can be read in {} (a root module with a \
                     backend, a lock file or a local state, or a [[stack]] of the configuration; `driftback stacks \
                     --read` lists them): pass --state FILE",
                    default_state.display(),
                    args.repo.display()
                );
            }
            let why = if config.stack.is_empty() {
                format!("there is no {}", default_state.display())
            } else {
                "the configuration names [[stack]]s".to_string()
            };
            eprintln!(
                "reading the repository as stacks, as serve does: {why} (--state FILE reads it as one root module)"
            );
        }
        eprintln!("stacks: {} workspace(s), {} resource(s) indexed", found.workspaces, stacks.indexed());
        Road::Stacks(Box::new(stacks))
    } else {
        let mut workspace = one_workspace(config, args)?;
        // Registry, git and archive module calls: their code from `.terraform/modules` or fetched.
        Modules::new(config)?.attach(&mut workspace, &args.repo).await;
        Road::One(Box::new(workspace))
    };
    // Triaged as the daemon triages a message: only drift candidates are normalised.
    let intake = Intake::read_file(&args.events, &config.filter)?;
    let store = if args.dry_run { None } else { Some(open_store(&config.store, &args.repo).await?) };

    let mut summary = Summary {
        events_read: intake.events.len() + intake.bad.len(),
        bad_records: intake.bad.len(),
        ..Summary::default()
    };
    for bad in &intake.bad {
        eprintln!("warning: skipped {}: {}", bad.location, bad.reason);
        if let Some(store) = &store {
            store.record_bad_record(&bad.location, &bad.reason, &bad.raw).await?;
        }
    }
    let ids: Vec<String> = intake.events.iter().map(|e| e.id.clone()).collect();
    let seen = match &store {
        Some(store) => store.seen_event_ids(&ids).await?,
        None => Default::default(),
    };
    let mut kept = Vec::new();
    let mut records = Vec::new();
    let mut unique = std::collections::HashSet::new();
    for event in &intake.events {
        if seen.contains(&event.id) || !unique.insert(event.id.clone()) {
            summary.already_seen += 1;
            continue;
        }
        match (event.kept(), event.dropped()) {
            (Some(kept_event), _) => kept.push(kept_event.clone()),
            (None, Some(reason)) => *summary.dropped.entry(reason.as_str()).or_default() += 1,
            (None, None) => {}
        }
        records.push(event.record());
    }
    let change_sets = group(kept, &config.group);
    summary.change_sets = change_sets.len();
    let delivery = match git {
        Some(git) => {
            let publisher = Publisher::from_config(&config.publish, &git, &args.repo)?;
            let author =
                Author { name: config.publish.author_name.clone(), email: config.publish.author_email.clone() };
            let deliverer = Deliverer::new(git, publisher, &config.publish.branch_prefix, author, None)?
                .with_notifier(notifier(&config.notify, &config.publish));
            Delivery::Git(Box::new(deliverer))
        }
        None => Delivery::Off,
    };
    let mut driver = Driver::new(config, catalog, store.clone(), delivery)?;
    driver.set_batch(change_sets.clone());
    for change_set in &change_sets {
        let driven = match &mut road {
            Road::One(workspace) => driver.drive(workspace, change_set).await?,
            Road::Stacks(stacks) => {
                let mut workspace = stacks.workspace_for(config, change_set).await?;
                driver.drive(&mut workspace, change_set).await?
            }
        };
        summary.add(&driven);
    }
    driver.close().await;
    // Events are marked seen only once their change sets are committed and recorded.
    if let Some(store) = &store {
        store.record_events(&records).await?;
    }
    print_summary(&summary, args.dry_run);
    Ok(summary)
}

/// What change sets are reconciled against: one root module with its state, or the stacks.
enum Road {
    One(Box<Workspace>),
    Stacks(Box<Stacks>),
}

/// The repository as one root module with its state (`--state`), as `--workspace` evaluates it.
fn one_workspace(config: &Config, args: &Args) -> anyhow::Result<Workspace> {
    let mut workspace = Workspace::load(config, &args.repo, args.state.as_deref())?;
    if let Some(name) = &args.workspace {
        let others = args
            .other_workspaces
            .iter()
            .map(|other| {
                let (name, files) =
                    other.split_once('=').filter(|(n, f)| !n.is_empty() && !f.is_empty()).ok_or_else(|| {
                        anyhow::anyhow!(
                            "--other-workspace {other:?} is not NAME=FILE[,FILE...] (staging=envs/staging.tfvars)"
                        )
                    })?;
                Ok((name.to_string(), files.split(',').map(PathBuf::from).collect()))
            })
            .collect::<anyhow::Result<Vec<(String, Vec<PathBuf>)>>>()?;
        workspace.select_terraform_workspace(&args.repo, name, &args.var_files, &others)?;
    }
    workspace.require_parsed(&args.repo)?;
    Ok(workspace)
}

impl Summary {
    fn add(&mut self, driven: &Driven) {
        let outcome = &driven.outcome;
        if let Some(decision) = &outcome.decision {
            for o in decision.oscillations.iter().filter(|o| o.first_report) {
                self.oscillations.push(o.describe());
            }
        }
        let label = driven.label.clone();
        match (&outcome.status, &driven.delivered) {
            (Status::Reconciled, Some(delivered)) => {
                self.reconciled.push((label.clone(), delivered.describe()));
                self.commits.push(Commit {
                    label,
                    branch: delivered.branch.clone(),
                    message: delivered.message.clone(),
                    diff: delivered.diff.clone().unwrap_or_default(),
                });
            }
            (Status::Reconciled, None) => self.reconciled.push((label, "(dry run: no branch)".into())),
            (Status::Escalated(reason), _) => self.escalated.push((label, reason.clone())),
            (Status::Revert(reason), _) => self.other.push((label, format!("revert: {reason}"))),
            (Status::NoChange, _) => self.other.push((label, format!("no change{}", notes_suffix(outcome)))),
        }
    }
}

fn notes_suffix(outcome: &Outcome) -> String {
    if outcome.notes.is_empty() { String::new() } else { format!(": {}", outcome.notes.join("; ")) }
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
    if !summary.other.is_empty() {
        println!("not changed: {}", summary.other.len());
        for (label, what) in &summary.other {
            println!("  {label}: {what}");
        }
    }
    if !summary.oscillations.is_empty() {
        println!("oscillations: {}", summary.oscillations.len());
        for o in &summary.oscillations {
            println!("  {o}");
        }
    }
}
