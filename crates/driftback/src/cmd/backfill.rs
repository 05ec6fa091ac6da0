//! `driftback backfill`: past CloudTrail events through LookupEvents, into the same pipeline as the
//! feed (recorded, deduplicated, grouped into pending change sets), then reconciled.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use chrono::{DateTime, Utc};
use clap::Args as ClapArgs;
use indicatif::{ProgressBar, ProgressStyle};

use driftback_feed::{Backfill, BackfillProgress, Ledger, Shutdown};

use crate::cmd::serve::{Site, reconciler_config};
use crate::config::Config;

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// Start of the range: an RFC 3339 time (2026-11-01T00:00:00Z) or an age (90m, 36h, 7d).
    /// At most 90 days back (LookupEvents' limit). Default: the last checkpoint.
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// End of the range, same forms as --since. Default: now.
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// Record the events and their pending change sets only; `serve` reconciles them later.
    #[arg(long)]
    pub no_reconcile: bool,
}

pub async fn run(config: &Config, args: &Args) -> anyhow::Result<()> {
    let now = Utc::now();
    let until = args.until.as_deref().map(|t| parse_time(t, now)).transpose()?.unwrap_or(now);
    let site = Site::prepare(config).await?;
    let ledger = site.ledger(config);
    let backfill = Backfill::new(config.backfill.clone()).await?;
    let since = match args.since.as_deref() {
        Some(t) => parse_time(t, now)?,
        None => ledger.checkpoint(&backfill.checkpoint_name()).await?.with_context(|| {
            format!("no checkpoint for {} yet: give --since TIME (e.g. --since 24h)", backfill.region())
        })?,
    };
    anyhow::ensure!(since < until, "--since {} is not before --until {}", since.to_rfc3339(), until.to_rfc3339());

    let shutdown = Shutdown::new();
    let on_signal = shutdown.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_signal.trigger();
        }
    });
    let bar = ProgressBar::new((until - since).num_seconds().max(1) as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} backfill [{bar:30}] {percent:>3}% {msg} ({elapsed}, ~{eta} left)")
            .expect("the template is valid")
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    let report = backfill
        .run(&ledger, &config.filter, since..until, &shutdown, |p: BackfillProgress| {
            bar.set_position(p.done_secs);
            bar.set_message(format!("{} events, {} pages", p.events, p.pages));
        })
        .await;
    bar.finish_and_clear();
    let report = report?;
    println!("backfill {}: {} .. {}", backfill.region(), since.to_rfc3339(), until.to_rfc3339());
    println!("  requests: {} ({} throttled and retried)", report.pages + report.throttled, report.throttled);
    println!("  events: {} ({} new, {} already recorded)", report.events, report.new_events, report.duplicates);
    if report.bad > 0 {
        println!("  unusable records kept in bad_records: {}", report.bad);
    }
    if let Some(checkpoint) = report.checkpoint {
        println!("  checkpoint: {}", checkpoint.to_rfc3339());
    }
    if args.no_reconcile {
        return Ok(());
    }
    // The quiet window is by event time, so past change sets are due now.
    let reconciler = Arc::new(site.reconciler(config)?);
    let done = driftback_feed::reconcile_due(&ledger, &reconciler, &reconciler_config(&config.serve)).await?;
    println!("change sets reconciled: {}", done.len());
    for (id, status, branch) in done {
        println!("  {id}: {status}{}", branch.map(|b| format!(" -> {b}")).unwrap_or_default());
    }
    site.store.close().await;
    Ok(())
}

/// An RFC 3339 time, or an age before `now`: `90m`, `36h`, `7d`, `3600s`.
pub fn parse_time(text: &str, now: DateTime<Utc>) -> anyhow::Result<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&Utc));
    }
    let (number, unit) = text.split_at(text.len().saturating_sub(1));
    let seconds = match (number.parse::<i64>(), unit) {
        (Ok(n), "s") => n,
        (Ok(n), "m") => n * 60,
        (Ok(n), "h") => n * 3600,
        (Ok(n), "d") => n * 86_400,
        _ => anyhow::bail!("{text:?} is neither an RFC 3339 time (2026-11-01T00:00:00Z) nor an age (90m, 36h, 7d)"),
    };
    Ok(now - chrono::Duration::seconds(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_ages_parse() {
        let now = DateTime::parse_from_rfc3339("2026-11-22T12:00:00Z").unwrap().with_timezone(&Utc);
        assert_eq!(parse_time("36h", now).unwrap().to_rfc3339(), "2026-11-21T00:00:00+00:00");
        assert_eq!(parse_time("2026-11-01T00:00:00Z", now).unwrap().to_rfc3339(), "2026-11-01T00:00:00+00:00");
        assert!(parse_time("yesterday", now).unwrap_err().to_string().contains("RFC 3339"));
    }
}
