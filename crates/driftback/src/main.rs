//! `driftback`: keeps Terraform code true to the cloud.

mod agent_glue;
mod backfill;
mod config;
mod delivery;
mod demo;
mod eval;
mod field_changes;
mod kb;
mod kb_recipes;
mod kb_store;
mod logs;
mod ownership;
mod pipeline;
mod policy_cmd;
mod publishing;
mod reconcile;
mod serve;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Reads CloudTrail records, finds changes made outside Terraform, and writes them back into the
/// Terraform code as one git branch per change set, or says why not.
#[derive(Debug, Parser)]
#[command(name = "driftback", version, about, long_about = None)]
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
    Policy(policy_cmd::Command),
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    logs::init(matches!(cli.command, Command::Serve(_)));
    let result = (|| -> anyhow::Result<ExitCode> {
        let config = config::Config::load(cli.config.as_deref())?;
        match cli.command {
            Command::Reconcile(args) => reconcile::run(&config, &args).map(|_| ExitCode::SUCCESS),
            Command::Demo(args) => demo::run(&config, &args).map(|_| ExitCode::SUCCESS),
            Command::Eval(args) => eval::run(&config, &args),
            Command::Policy(command) => policy_cmd::run(&config, &command),
            Command::Kb(args) => kb::run(&config, &args).map(|_| ExitCode::SUCCESS),
            Command::Serve(args) => serve::run(&config, &args).map(|_| ExitCode::SUCCESS),
            Command::Backfill(args) => backfill::run(&config, &args).map(|_| ExitCode::SUCCESS),
        }
    })();
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
