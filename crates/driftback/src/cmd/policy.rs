//! `driftback policy check` and `driftback policy explain`: the ownership policy, checked and
//! explained without touching the repository; and loading the policy for the other commands.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args as ClapArgs, Subcommand};
use serde::Serialize;

use driftback_events::{ChangeSet, group};
use driftback_feed::Intake;
use driftback_policy::{Decision, Policy};

use crate::config::Config;
use crate::driver::{Delivery, Driver, Modules, Workspace, load_catalog, load_policy_file};

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate a policy file and run every rule's examples.
    ///
    /// Errors name the file, the rule and the field. Exits non-zero when the policy is invalid or an
    /// example fails. With no policy file in the repository, lists the built-in defaults in force.
    Check(CheckArgs),
    /// Show, for each change set of a CloudTrail file, the actor, intent and motivation, the rules
    /// that matched each field, and the decision. Reads the repository; writes nothing.
    Explain(ExplainArgs),
}

#[derive(Debug, ClapArgs)]
pub struct CheckArgs {
    /// The policy file. Default: REPO/.driftback/policy.toml (or the `[policy] file` setting).
    pub file: Option<PathBuf>,
    /// The infrastructure repository holding the policy.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, ClapArgs)]
pub struct ExplainArgs {
    /// CloudTrail records: a log file {"Records": [...]} (plain or .gz), a JSON array, or JSON lines
    /// of records or EventBridge envelopes.
    #[arg(long, value_name = "FILE")]
    pub event: PathBuf,
    /// The Terraform repository: its state locates the resources, its policy file decides. Without
    /// it, only the calls themselves are judged, by --policy or the built-in defaults.
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// Terraform state (format version 4). Default: DIR/terraform.tfstate.
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// Policy file to use instead of the repository's.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(config: &Config, command: &Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Check(args) => check(config, args),
        Command::Explain(args) => explain(config, args).await,
    }
}

#[derive(Debug, Serialize)]
struct CheckReport {
    file: String,
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    rules: Vec<String>,
    builtin_rules: Vec<String>,
    actors: Vec<String>,
    oscillation_window_secs: u64,
    examples: Vec<driftback_policy::ExampleResult>,
}

fn check(config: &Config, args: &CheckArgs) -> anyhow::Result<ExitCode> {
    let explicit = args.file.is_some();
    let path = args.file.clone().unwrap_or_else(|| args.repo.join(&config.policy.file));
    let loaded = if path.exists() {
        load_policy_file(&path)
    } else if explicit {
        Err(anyhow::anyhow!("policy file {} does not exist", path.display()))
    } else {
        Ok(Policy::defaults())
    };
    let mut report = CheckReport {
        file: path.display().to_string(),
        ok: loaded.is_ok(),
        error: None,
        rules: vec![],
        builtin_rules: vec![],
        actors: vec![],
        oscillation_window_secs: 0,
        examples: vec![],
    };
    match &loaded {
        Ok(policy) => {
            report.rules = policy.rules[..policy.file_rules].iter().map(|r| r.name.clone()).collect();
            report.builtin_rules = policy.builtin_rules();
            report.actors = policy.actors.iter().map(|a| format!("{} ({})", a.name, a.kind.as_str())).collect();
            report.oscillation_window_secs = policy.oscillation_window_secs;
            report.examples = policy.run_examples();
        }
        Err(e) => report.error = Some(format!("{e:#}")),
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else if let Some(error) = &report.error {
        eprintln!("error: {error}");
    } else {
        if path.exists() {
            println!("policy {}: ok", report.file);
        } else {
            println!("no policy file at {}: the built-in defaults apply", report.file);
        }
        println!(
            "rules from the file: {}",
            if report.rules.is_empty() { "none".into() } else { report.rules.join(", ") }
        );
        println!("built-in rules: {}", report.builtin_rules.join(", "));
        if !report.actors.is_empty() {
            println!("named actors: {}", report.actors.join(", "));
        }
        println!("oscillation window: {} s", report.oscillation_window_secs);
        println!("examples: {} passed", report.examples.iter().filter(|e| e.pass).count());
        for e in &report.examples {
            println!("  {} example {}: {}", e.rule, e.index, e.got);
        }
    }
    Ok(if report.ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// One change set, explained.
#[derive(Debug, Serialize)]
struct Explained {
    change_set: String,
    resource_id: Option<String>,
    first_event_time: String,
    last_event_time: String,
    event_ids: Vec<String>,
    calls: Vec<String>,
    /// Why the change set could not be planned, when it could not.
    plan_error: Option<String>,
    /// The same session's change sets whose changes the decided edit makes too: they share the
    /// value's origin, which is edited once for all of them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    written_with: Vec<String>,
    decision: Decision,
}

async fn explain(config: &Config, args: &ExplainArgs) -> anyhow::Result<ExitCode> {
    let mut workspace = match &args.repo {
        Some(dir) => Workspace::load(config, dir, args.state.as_deref())?,
        None => Workspace::unlocated(Policy::defaults(), "no repository given (--repo): the fields cannot be located")?,
    };
    if let Some(dir) = &args.repo {
        // Explained as reconcile would decide it: with the module code the root calls.
        Modules::new(config)?.attach(&mut workspace, dir).await;
    }
    if let Some(file) = &args.policy {
        workspace.policy = load_policy_file(file)?;
    }
    let catalog = match &args.repo {
        Some(dir) => load_catalog(config, dir)?,
        None => driftback_recipes::Catalog::builtin(),
    };
    let intake = Intake::read_file(&args.event, &config.filter)?;
    for bad in &intake.bad {
        eprintln!("warning: skipped {}: {}", bad.location, bad.reason);
    }
    let kept: Vec<_> = intake.kept().cloned().collect();
    // The same road as `reconcile`, with nothing delivered and nothing recorded.
    let mut driver = Driver::new(config, catalog, None, Delivery::Off)?;
    let mut explained = Vec::new();
    let change_sets = group(kept, &config.group);
    // The same session's change sets plan alongside each other, as `reconcile` plans them.
    driver.set_batch(change_sets.clone());
    for change_set in change_sets {
        let driven = driver.drive(&mut workspace, &change_set).await?;
        let Some(decision) = driven.outcome.decision else { continue };
        explained.push(Explained {
            change_set: change_set.id.clone(),
            resource_id: change_set.resource_id.clone(),
            first_event_time: change_set.first_time().to_rfc3339(),
            last_event_time: change_set.last_time().to_rfc3339(),
            event_ids: change_set.events.iter().map(|e| e.id.clone()).collect(),
            calls: calls(&change_set),
            plan_error: driven.outcome.plan_error,
            written_with: driven.written_with,
            decision,
        });
    }
    let policy = &workspace.policy;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"policy": policy.origin, "change_sets": explained}))?
        );
    } else {
        print!("{}", render(policy, &explained));
    }
    Ok(ExitCode::SUCCESS)
}

fn calls(change_set: &ChangeSet) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in &change_set.events {
        let call = format!("{}:{}", e.service(), e.raw_name);
        if !out.contains(&call) {
            out.push(call);
        }
    }
    out
}

fn render(policy: &Policy, explained: &[Explained]) -> String {
    let mut out = format!("policy: {}\n", policy.origin);
    for x in explained {
        let d = &x.decision;
        out.push_str(&format!(
            "\nchange set {} ({} events, {} .. {})\n",
            x.change_set,
            x.event_ids.len(),
            x.first_event_time,
            x.last_event_time
        ));
        out.push_str(&format!("  calls: {}\n", x.calls.join(", ")));
        if let Some(a) = &d.attribution {
            out.push_str(&format!("  actor: {}\n", a.actor.describe()));
            for e in &a.actor.evidence {
                out.push_str(&format!("    - {e}\n"));
            }
            out.push_str(&format!("  intent: {}\n", a.intent.value.as_str()));
            for e in &a.intent.evidence {
                out.push_str(&format!("    - {e}\n"));
            }
            out.push_str(&format!("  motivation: {}\n", a.motivation.value.as_str()));
            for e in &a.motivation.evidence {
                out.push_str(&format!("    - {e}\n"));
            }
        }
        if let Some(e) = &x.plan_error {
            out.push_str(&format!("  not planned: {e}\n"));
        }
        if !x.written_with.is_empty() {
            out.push_str(&format!(
                "  the edit also makes change set(s) {} of the same session: they share the value's origin\n",
                x.written_with.join(", ")
            ));
        }
        for f in &d.fields {
            let what = match &f.path {
                Some(p) => format!("{}.{p}", f.address),
                None => format!("{} ({})", f.address, f.change.as_str()),
            };
            let value = f.value.as_ref().map(|v| format!(" = {v}")).unwrap_or_default();
            out.push_str(&format!("  field {what}{value}: {} (owner {})\n", f.kind.as_str(), f.owner));
            for m in &f.matched {
                out.push_str(&format!("    - {} -> {}: {}\n", m.rule, m.decision.as_str(), m.reason));
            }
        }
        if !d.matched.is_empty() {
            out.push_str("  change set as a whole:\n");
            for m in &d.matched {
                out.push_str(&format!("    - {} -> {}: {}\n", m.rule, m.decision.as_str(), m.reason));
            }
        }
        for o in &d.oscillations {
            let note = if o.first_report { "reported now" } else { "already reported" };
            out.push_str(&format!("  oscillation ({note}): {}\n", o.describe()));
        }
        out.push_str(&format!("  decision: {} (rule {})\n", d.kind.as_str(), d.rule));
        out.push_str(&format!("  rationale: {}\n", d.rationale));
    }
    out
}
