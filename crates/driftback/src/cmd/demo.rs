//! `driftback demo`: the whole pipeline on a bundled example, in a scratch directory.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args as ClapArgs;

use driftback_publish::{Author, init_repository};

use crate::cmd::reconcile;
use crate::config::Config;

const PROJECT: &[(&str, &str)] = &[
    ("main.tf", include_str!("../../demo/project/main.tf")),
    ("terraform.tfstate", include_str!("../../demo/project/terraform.tfstate")),
];
const EVENTS: &str = include_str!("../../demo/events.json");

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// Where to create the example repository (default: a new temporary directory, kept).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub async fn run(config: &Config, args: &Args) -> anyhow::Result<()> {
    let dir = match &args.dir {
        Some(dir) => {
            anyhow::ensure!(
                !dir.exists() || std::fs::read_dir(dir)?.next().is_none(),
                "{} is not empty; give an empty or new directory",
                dir.display()
            );
            std::fs::create_dir_all(dir)?;
            dir.clone()
        }
        None => tempfile::Builder::new().prefix("driftback-demo-").tempdir()?.keep(),
    };
    let repo_dir = dir.join("infra");
    std::fs::create_dir_all(&repo_dir)?;
    for (name, text) in PROJECT {
        std::fs::write(repo_dir.join(name), text).with_context(|| format!("writing {name}"))?;
    }
    init_repository(&repo_dir, "Terraform for the demo web stack", &Author::default())?;
    let events = dir.join("cloudtrail.json");
    std::fs::write(&events, EVENTS)?;
    println!("Example repository: {}", repo_dir.display());
    println!("CloudTrail file:    {}\n", events.display());

    let args = reconcile::Args {
        events,
        repo: repo_dir.clone(),
        state: None,
        stacks: false,
        dry_run: false,
        workspace: None,
        var_files: Vec::new(),
        other_workspaces: Vec::new(),
    };
    let summary = reconcile::run(config, &args).await?;
    for commit in &summary.commits {
        println!("\n=== {} ({})\n{}", commit.branch, commit.label, commit.message.trim_end());
        print!("{}", commit.diff);
    }
    println!(
        "\nThe branches are in {}: `git -C {} branch --list 'driftback/*'`",
        repo_dir.display(),
        repo_dir.display()
    );
    Ok(())
}
