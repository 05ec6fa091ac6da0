//! `driftback pending`: what waits for a person: escalated and revert change sets nobody has
//! answered and no later change resolved, oldest first, with their age and where they were
//! published.

use std::path::PathBuf;

use chrono::Utc;
use clap::Args as ClapArgs;

use crate::config::Config;
use crate::driver::open_existing_store;

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// The knowledge base URL (postgres://... or sqlite:PATH). Default: store.url from the
    /// configuration, else the SQLite file store.sqlite_path in the repository.
    #[arg(long, value_name = "URL", env = "DRIFTBACK_STORE_URL")]
    pub store: Option<String>,
    /// The repository whose embedded knowledge base to use when no URL is given.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,
    /// At most this many, oldest first.
    #[arg(long, default_value_t = 100)]
    pub limit: usize,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(config: &Config, args: &Args) -> anyhow::Result<()> {
    let store = open_existing_store(&config.store, args.store.as_deref(), &args.repo).await?;
    let waiting = store.waiting_for_a_person(args.limit).await;
    store.close().await;
    let waiting = waiting?;
    let now = Utc::now();
    if waiting.is_empty() && !args.json {
        println!("Nothing waits for a person.");
        return Ok(());
    }
    for cs in &waiting {
        let age = now - cs.last_event_time;
        let published: Vec<&str> = cs
            .notes
            .iter()
            .filter(|n| {
                n.starts_with("issue #") || n.starts_with("draft pull request #") || n.starts_with("pull request #")
            })
            .map(String::as_str)
            .collect();
        if args.json {
            let line = serde_json::json!({
                "change_set": cs.id, "status": cs.status, "address": cs.address, "resource_id": cs.resource_id,
                "stack": cs.stack, "workspace": cs.workspace,
                "actor": cs.actor, "rule": cs.rule, "rationale": cs.rationale,
                "last_event_time": cs.last_event_time.to_rfc3339(), "age_secs": age.num_seconds().max(0),
                "published": published,
            });
            println!("{line}");
        } else {
            println!(
                "{:<9} {:<44} {:>6}  {}  {}{}",
                cs.status,
                match (&cs.stack, &cs.workspace, cs.address.as_deref().or(cs.resource_id.as_deref())) {
                    (Some(stack), Some(workspace), Some(resource)) => format!("{resource} in {stack} ({workspace})"),
                    (_, _, resource) => resource.unwrap_or("-").to_string(),
                },
                human_age(age.num_seconds()),
                cs.id,
                cs.rationale.as_deref().unwrap_or(""),
                published.first().map(|p| format!("  [{p}]")).unwrap_or_default(),
            );
        }
    }
    if !args.json {
        println!("\n{} change set(s) wait for a person", waiting.len());
    }
    Ok(())
}

/// `42s`, `17m`, `5h`, `3d`.
fn human_age(secs: i64) -> String {
    let secs = secs.max(0);
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ages_read_at_a_glance() {
        assert_eq!(super::human_age(-5), "0s");
        assert_eq!(super::human_age(59), "59s");
        assert_eq!(super::human_age(3599), "59m");
        assert_eq!(super::human_age(7200), "2h");
        assert_eq!(super::human_age(3 * 86_400 + 5), "3d");
    }
}
