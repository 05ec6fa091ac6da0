//! The reconcile loop: claim due change sets with a lease, hand each to the caller's [`Reconcile`],
//! record the outcome, and renew the lease while the work goes on.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use driftback_events::ChangeSet;
use driftback_store::ChangeSetRecord;
use serde::{Deserialize, Serialize};

use crate::ledger::{ClaimedChangeSet, Ledger};
use crate::{FeedError, Shutdown};

/// Reconciles one change set (plan, decide, patch, commit) and says what became of it. Runs on a
/// blocking thread: git and HCL work is synchronous.
pub trait Reconcile: Send + Sync + 'static {
    /// A transient `Err` means "try again later" (the repository could not be fetched, the store
    /// is down): the change set is released, not recorded. A permanent one (the store refuses what
    /// the change set would write, the reconciliation panicked) fails the change set for good, with
    /// the reason, so it cannot block the change sets behind it.
    fn reconcile(&self, change_set: &ChangeSet) -> Result<Reconciled, ReconcileError>;
}

/// Why a change set was not reconciled, and whether trying again can help.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ReconcileError {
    /// `true`: released and retried later; `false`: failed for good.
    pub transient: bool,
    pub message: String,
}

impl ReconcileError {
    pub fn transient(message: impl Into<String>) -> ReconcileError {
        ReconcileError { transient: true, message: message.into() }
    }

    pub fn permanent(message: impl Into<String>) -> ReconcileError {
        ReconcileError { transient: false, message: message.into() }
    }
}

/// The outcome to record, and the LLM tokens it cost.
#[derive(Debug, Clone)]
pub struct Reconciled {
    pub record: ChangeSetRecord,
    pub tokens: u64,
}

/// `[serve]` keys the reconcile loop reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReconcilerConfig {
    /// This replica's name in leases; default: host name and process id.
    pub replica: String,
    /// How long a claimed change set is leased; renewed every third of it while work goes on.
    pub lease_secs: u64,
    /// How often the store is asked for due change sets when none was due.
    pub poll_ms: u64,
    /// How many claims a change set gets before a transient failure that persists fails it for good.
    pub max_attempts: u32,
}

impl Default for ReconcilerConfig {
    fn default() -> Self {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "driftback".into());
        ReconcilerConfig {
            replica: format!("{host}-{}", std::process::id()),
            lease_secs: 300,
            poll_ms: 1000,
            max_attempts: 50,
        }
    }
}

/// Claim and reconcile due change sets one at a time until shutdown. The change set in hand when
/// shutdown comes is finished (the caller bounds that with its deadline) and then the loop stops.
/// Between polls it also wakes when `wake` is notified (new pending events). Nothing one change set
/// or one store call does ends the loop: failures are logged, counted and retried with a growing
/// pause, and a change set whose record the store refuses is failed for good.
pub async fn run_reconciler<L: Ledger + Clone, R: Reconcile>(
    ledger: L,
    reconcile: Arc<R>,
    config: ReconcilerConfig,
    wake: Arc<tokio::sync::Notify>,
    shutdown: Shutdown,
) -> Result<(), FeedError> {
    let lease = Duration::from_secs(config.lease_secs.max(3));
    let mut delay = Duration::from_millis(config.poll_ms.max(10));
    while !shutdown.is_triggered() {
        let claimed = match ledger.claim_due(Utc::now(), &config.replica, lease, 1).await {
            Ok(claimed) => claimed,
            Err(e) => {
                // Transient or not, the store is asked again after the pause (growing while it
                // keeps failing); /readyz reports the store meanwhile. The daemon does not exit:
                // a restart would meet the same store.
                crate::metrics::store_error("claim_due", &e);
                if !e.transient {
                    tracing::error!(error = %e, retry_in_ms = delay.as_millis() as u64,
                        "the store refused to hand out due change sets; asking again");
                    tokio::select! {
                        _ = shutdown.wait() => break,
                        _ = tokio::time::sleep(delay) => {}
                    }
                    delay = (delay * 2).min(Duration::from_secs(60));
                }
                Vec::new()
            }
        };
        if claimed.is_empty() {
            tokio::select! {
                _ = shutdown.wait() => break,
                _ = tokio::time::sleep(delay) => {}
                _ = wake.notified() => {}
            }
            continue;
        }
        for claim in claimed {
            match one(&ledger, &reconcile, &config.replica, lease, config.max_attempts, claim).await {
                Ok(Done::Failed { id, reason }) => {
                    tracing::error!(change_set = id, reason, "change set failed for good; it is not retried");
                    delay = Duration::from_millis(config.poll_ms.max(10));
                }
                Ok(Done::Recorded(_)) => delay = Duration::from_millis(config.poll_ms.max(10)),
                Err(e) => {
                    tracing::warn!(error = %e, retry_in_ms = delay.as_millis() as u64,
                        "change set not finished; it will be taken up again");
                    // A released change set is due again at once: wait before claiming, so a
                    // failure that persists (a locked clone, an unreachable remote) is retried
                    // with a growing pause, not in a busy loop.
                    tokio::select! {
                        _ = shutdown.wait() => {}
                        _ = tokio::time::sleep(delay) => {}
                    }
                    delay = (delay * 2).min(Duration::from_secs(60));
                }
            }
        }
    }
    Ok(())
}

/// Reconcile every change set that is due now, one at a time, and return what became of each:
/// (change set id, status, branch), status `failed` for one that failed for good. For one-shot
/// runs such as `driftback backfill`.
pub async fn reconcile_due<L: Ledger + Clone, R: Reconcile>(
    ledger: &L,
    reconcile: &Arc<R>,
    config: &ReconcilerConfig,
) -> Result<Vec<(String, String, Option<String>)>, FeedError> {
    let lease = Duration::from_secs(config.lease_secs.max(3));
    let mut done = Vec::new();
    loop {
        let claimed = ledger.claim_due(Utc::now(), &config.replica, lease, 1).await?;
        if claimed.is_empty() {
            return Ok(done);
        }
        for claim in claimed {
            match one(ledger, reconcile, &config.replica, lease, config.max_attempts, claim).await? {
                Done::Recorded(record) => done.push((record.id, record.status, record.branch)),
                Done::Failed { id, .. } => done.push((id, "failed".into(), None)),
            }
        }
    }
}

/// What became of a claimed change set that was not released.
enum Done {
    Recorded(Box<ChangeSetRecord>),
    Failed { id: String, reason: String },
}

async fn one<L: Ledger + Clone, R: Reconcile>(
    ledger: &L,
    reconcile: &Arc<R>,
    owner: &str,
    lease: Duration,
    max_attempts: u32,
    claim: ClaimedChangeSet,
) -> Result<Done, FeedError> {
    let id = claim.change_set.id.clone();
    let started = Instant::now();
    let renewer = tokio::spawn({
        let (ledger, id, owner) = (ledger.clone(), id.clone(), owner.to_string());
        async move {
            loop {
                tokio::time::sleep(lease / 3).await;
                match ledger.renew_lease(&id, &owner, lease).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(change_set = id, "lease lost while reconciling");
                        break;
                    }
                    Err(e) => crate::metrics::store_error("renew_lease", &e),
                }
            }
        }
    });
    let work = {
        let reconcile = reconcile.clone();
        let change_set = claim.change_set.clone();
        tokio::task::spawn_blocking(move || reconcile.reconcile(&change_set)).await
    };
    renewer.abort();
    let result = match work {
        Ok(result) => result,
        // The same change set would panic again: retrying it would block every one behind it.
        Err(e) => Err(ReconcileError::permanent(format!("reconciliation panicked: {e}"))),
    };
    match result {
        Ok(done) => {
            match ledger.complete(owner, &done.record).await {
                Ok(()) => {}
                Err(e) if e.transient => return Err(e.into()),
                Err(e) => {
                    // A record the store cannot hold (a value it refuses) is this change set's
                    // failure, never the daemon's: it is failed for good with the store's reason.
                    let reason = format!("the store refused its record: {}", e.message);
                    ledger.fail(&id, owner, &reason).await?;
                    crate::metrics::change_set_done(&id, "failed", started.elapsed(), None, 0);
                    return Ok(Done::Failed { id, reason });
                }
            }
            let lag = (Utc::now() - claim.change_set.last_time()).to_std().ok();
            crate::metrics::change_set_done(&id, &done.record.status, started.elapsed(), lag, done.tokens);
            Ok(Done::Recorded(Box::new(done.record)))
        }
        Err(e) if e.transient && claim.attempts < max_attempts.max(1) => {
            ledger.release(&id, owner).await?;
            Err(FeedError::Config(format!("change set {id}: {}", e.message)))
        }
        Err(e) => {
            let reason = if e.transient {
                format!("failed on each of {} attempts, the last with: {}", claim.attempts, e.message)
            } else {
                e.message
            };
            let e = ReconcileError::permanent(reason);
            ledger.fail(&id, owner, &e.message).await?;
            crate::metrics::change_set_done(&id, "failed", started.elapsed(), None, 0);
            Ok(Done::Failed { id, reason: e.message })
        }
    }
}
