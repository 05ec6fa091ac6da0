//! The durable side of the feed, as a small trait: what the daemon needs from the store.

use std::future::Future;
use std::time::Duration;

use chrono::{DateTime, Utc};
use driftback_events::ChangeSet;
use driftback_store::ChangeSetRecord;

use crate::intake::Intake;

/// A store failure. `transient` says whether the same call may succeed later (a busy database, a
/// lost connection): the feed retries those and stops on the others.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct LedgerError {
    pub message: String,
    pub transient: bool,
}

/// What recording an intake did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct IntakeReceipt {
    /// Events recorded for the first time.
    pub new_events: usize,
    /// Events already recorded (a redelivery, another replica, an overlapping backfill).
    pub duplicates: usize,
    /// New kept events, now in pending change sets.
    pub pending: usize,
    /// Bad input recorded.
    pub bad: usize,
}

/// A pending change set this replica holds a lease on.
#[derive(Debug, Clone)]
pub struct ClaimedChangeSet {
    pub change_set: ChangeSet,
    /// When its lease runs out unless renewed; after that another replica may claim it.
    pub lease_until: DateTime<Utc>,
    /// How many times it has been claimed, this claim included.
    pub attempts: u32,
}

/// The durable store as the feed uses it. Every method is one transaction: it happens entirely or
/// not at all, so an acknowledgement given after it returns `Ok` never loses an event.
pub trait Ledger: Send + Sync + 'static {
    /// Record an intake: each event once by `eventID` (later copies are counted as duplicates and
    /// change nothing), bad input verbatim, and every new kept event joined to the pending change set
    /// of its resource and actor session (or a new one) under the ledger's [`QuietWindow`](crate::QuietWindow).
    fn record_intake(&self, intake: &Intake) -> impl Future<Output = Result<IntakeReceipt, LedgerError>> + Send;

    /// Claim up to `limit` pending change sets that are due at `now` (their quiet window has passed)
    /// and not leased by another replica, leasing them to `owner` for `lease`.
    fn claim_due(
        &self,
        now: DateTime<Utc>,
        owner: &str,
        lease: Duration,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<ClaimedChangeSet>, LedgerError>> + Send;

    /// Extend `owner`'s lease on change set `id`; `false` when the lease was lost.
    fn renew_lease(
        &self,
        id: &str,
        owner: &str,
        lease: Duration,
    ) -> impl Future<Output = Result<bool, LedgerError>> + Send;

    /// Record what became of a claimed change set and remove it from the pending ones.
    fn complete(&self, owner: &str, record: &ChangeSetRecord) -> impl Future<Output = Result<(), LedgerError>> + Send;

    /// Give a claimed change set back unprocessed (shutdown, a transient failure).
    fn release(&self, id: &str, owner: &str) -> impl Future<Output = Result<(), LedgerError>> + Send;

    /// End a claimed change set as failed for good, with the reason: it is not claimed again.
    fn fail(&self, id: &str, owner: &str, reason: &str) -> impl Future<Output = Result<(), LedgerError>> + Send;

    /// The named checkpoint: every event before it is durably recorded.
    fn checkpoint(&self, name: &str) -> impl Future<Output = Result<Option<DateTime<Utc>>, LedgerError>> + Send;

    /// Move the named checkpoint forward to `to` (never backward).
    fn advance_checkpoint(&self, name: &str, to: DateTime<Utc>)
    -> impl Future<Output = Result<(), LedgerError>> + Send;

    /// Whether the store answers (for `/readyz`).
    fn ping(&self) -> impl Future<Output = Result<(), LedgerError>> + Send;
}

/// Record `intake`, retrying transient store failures with backoff until it is durable or shutdown
/// is requested; counts what was received, dropped, duplicated and bad.
pub(crate) async fn record_durably<L: Ledger>(
    ledger: &L,
    intake: &Intake,
    source: &'static str,
    shutdown: &crate::Shutdown,
) -> Result<IntakeReceipt, crate::FeedError> {
    let mut delay = Duration::from_millis(200);
    let receipt = loop {
        match ledger.record_intake(intake).await {
            Ok(receipt) => break receipt,
            Err(e) if e.transient && !shutdown.is_triggered() => {
                crate::metrics::store_error("record_intake", &e);
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(30));
            }
            Err(e) => return Err(e.into()),
        }
    };
    crate::metrics::events_received(source, intake.events.len());
    for e in &intake.events {
        if let Some(reason) = e.dropped() {
            crate::metrics::event_dropped(reason.as_str());
        }
    }
    crate::metrics::duplicates(receipt.duplicates);
    for bad in &intake.bad {
        crate::metrics::bad_input(source, &bad.location, &bad.reason);
    }
    Ok(receipt)
}
