//! `driftback`: keeps Terraform code true to the cloud.

mod cmd;
mod config;
mod driver;
mod logs;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use cmd::{backfill, catalog, configuration, demo, eval, kb, pending, policy, probe, reconcile, serve, stacks};

/// Reads CloudTrail records, finds changes made outside Terraform, and writes them back into the
/// Terraform code as one git branch per change set, or says why not.
#[derive(Debug, Parser)]
#[command(name = "driftback", version = env!("DRIFTBACK_VERSION"), about, long_about = None)]
struct Cli {
    /// Configuration file (TOML). Every key can also be set as DRIFTBACK_<SECTION>__<KEY>.
    #[arg(long, global = true, env = "DRIFTBACK_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Reconcile the drift in a CloudTrail file into branches of a Terraform repository.
    ///
    /// Each change set (events on one resource by one actor session) becomes its own branch from
    /// the checked-out commit; the checked-out branch and the working tree are left as they were.
    /// Events already seen in an earlier run are skipped.
    Reconcile(reconcile::Args),
    /// Run the pipeline on a bundled example project and CloudTrail file, in a scratch directory.
    ///
    /// No cloud account, server or LLM key is needed. Prints each branch's diff and the directory.
    Demo(demo::Args),
    /// Run a drift-scenario corpus and judge each scenario against its expectations.
    ///
    /// CORPUS holds projects/<name>/ and scenarios/<id>/{scenario.toml,events.json}. Prints one line
    /// per scenario and ends with `N passed, N failed`. Exits non-zero when a scenario fails.
    Eval(eval::Args),
    /// Check the ownership policy, or explain what it decides for a CloudTrail file.
    ///
    /// The policy lives in the infrastructure repository (.driftback/policy.toml); without one the
    /// built-in safe defaults apply. Nothing is written.
    #[command(subcommand)]
    Policy(policy::Command),
    /// Look into the knowledge base: similar past changes, counts, entries; re-embed it.
    ///
    /// The knowledge base is store.url from the configuration (or --store URL): Postgres, or the
    /// repository's SQLite file by default. `kb recipes` lists the recipes learned from the LLM agent.
    Kb(kb::Args),
    /// Run the daemon: consume the SQS queue an EventBridge rule on "AWS API Call via CloudTrail"
    /// feeds, and reconcile each change set once its resource has been quiet.
    ///
    /// Needs [feed] queue_url and [serve] repo_url (a clone driftback keeps) or repo_path. Serves
    /// /healthz, /readyz and /metrics on [serve] listen. SIGTERM or SIGINT stops it gracefully.
    /// See docs/operations.md.
    Serve(serve::Args),
    /// Read past events through CloudTrail LookupEvents (at most 90 days, 2 requests a second) into
    /// the same pipeline, then reconcile the change sets they make.
    Backfill(backfill::Args),
    /// List what waits for a person: escalated and revert change sets nobody answered yet.
    ///
    /// Oldest first, with the resource, the age, the reason and where it was published (the
    /// escalation issue). A later change written into the code, or a person's answer in the
    /// thread, takes a change set off the list.
    Pending(pending::Args),
    /// Show what the recipes cover: pairs by service, or one JSON object per call with --json.
    ///
    /// Built-in recipes are written by hand (crates/recipes/catalog/); generated ones are mapped
    /// from the AWS API models to the provider's schema (scripts/generate-recipes.py). Calls that
    /// change something and have no recipe go to the LLM agent, or to a person without one.
    Catalog(catalog::Args),
    /// List the repository's stacks (root modules), their workspaces and where each state lives.
    ///
    /// A stack is a directory with a backend or cloud block, a .terraform.lock.hcl or a local
    /// state, or a [[stack]] entry of the configuration. With --read each state is read (S3, HCP
    /// Terraform, files) and its resources counted. See docs/operations.md, "Stacks and state".
    Stacks(stacks::Args),
    /// Print the effective configuration (file, DRIFTBACK_* variables, defaults) as TOML.
    ///
    /// Loading it is the check: an unknown key or a bad value fails naming the key. Passwords in
    /// URLs are shown as ***.
    Config,
    /// Ask a running daemon's health endpoint; exits 0 on a 2xx answer (container health checks).
    Probe(probe::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let json_logs = logs::init(matches!(cli.command, Command::Serve(_)));
    let result =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(anyhow::Error::from).and_then(
            |runtime| {
                let result = runtime.block_on(run(cli));
                // A reconciliation still running past the daemon's shutdown deadline is not waited
                // for: its change set is taken up again when its lease ends.
                runtime.shutdown_timeout(std::time::Duration::from_secs(1));
                result
            },
        );
    match result {
        Ok(code) => code,
        Err(e) => {
            logs::fatal(json_logs, &e);
            ExitCode::FAILURE
        }
    }
}

/// The command, on the one runtime of the process.
async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    // A probe must not fail because of the configuration of the daemon it asks about.
    if let Command::Probe(args) = &cli.command {
        return probe::run(args).map(|_| ExitCode::SUCCESS);
    }
    if let Command::Catalog(args) = &cli.command {
        return catalog::run(args).map(|_| ExitCode::SUCCESS);
    }
    let config = config::Config::load(cli.config.as_deref())?;
    let done = ExitCode::SUCCESS;
    match cli.command {
        Command::Reconcile(args) => reconcile::run(&config, &args).await.map(|_| done),
        Command::Demo(args) => demo::run(&config, &args).await.map(|_| done),
        Command::Eval(args) => eval::run(&config, &args).await,
        Command::Policy(command) => policy::run(&config, &command).await,
        Command::Kb(args) => kb::run(&config, &args).await.map(|_| done),
        Command::Serve(args) => serve::run(&config, &args).await.map(|_| done),
        Command::Backfill(args) => backfill::run(&config, &args).await.map(|_| done),
        Command::Config => configuration::run(&config).map(|_| done),
        Command::Pending(args) => pending::run(&config, &args).await.map(|_| done),
        Command::Stacks(args) => stacks::run(&config, &args).await,
        Command::Probe(_) | Command::Catalog(_) => unreachable!("answered before the configuration is loaded"),
    }
}
