//! The durable side of the feed, as a small trait: what the daemon needs from the store.

use std::future::Future;
use std::time::Duration;

use chrono::{DateTime, Utc};
use driftback_events::ChangeSet;
use driftback_store::ChangeSetRecord;

pub use crate::error::LedgerError;
use crate::intake::Intake;

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

/// What became of one part of a delivery (one SQS message) in [`record_parts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PartOutcome {
    /// Everything it holds is in the store as it was read.
    Recorded,
    /// In the store, but the store refused some of its records: those are bad input now, with
    /// the store's reason.
    Refused,
    /// The store refused some of it even as bad input: not all of it is recorded (logged and
    /// counted; the caller leaves the message to come back, or to its dead-letter queue).
    Unrecorded,
}

/// What [`record_parts`] did.
#[derive(Debug, Default)]
pub(crate) struct PartsReceipt {
    /// The sum over what was recorded.
    pub receipt: IntakeReceipt,
    /// One outcome per part, in the parts' order.
    pub outcomes: Vec<PartOutcome>,
}

impl IntakeReceipt {
    fn add(&mut self, other: &IntakeReceipt) {
        self.new_events += other.new_events;
        self.duplicates += other.duplicates;
        self.pending += other.pending;
        self.bad += other.bad;
    }
}

/// Record the parts of one delivery (`(location, intake)`, one per SQS message) together, as
/// [`record_durably`] does. When the store refuses that for good (a value it cannot hold, a bug),
/// no one part may stop the rest: each part is recorded on its own, and a part the store refuses
/// record by record, each refused record becoming bad input that carries the store's reason. A
/// refusal is never returned: `Err` is only shutdown during a transient outage (nothing is lost:
/// what was not recorded comes back with its message).
pub(crate) async fn record_parts<L: Ledger>(
    ledger: &L,
    parts: &[(String, Intake)],
    source: &'static str,
    shutdown: &crate::Shutdown,
) -> Result<PartsReceipt, crate::FeedError> {
    let merged = Intake::merge(parts.iter().map(|(_, intake)| intake.clone()));
    match record_durably(ledger, &merged, source, shutdown).await {
        Ok(receipt) => return Ok(PartsReceipt { receipt, outcomes: vec![PartOutcome::Recorded; parts.len()] }),
        Err(crate::FeedError::Ledger(e)) if !e.transient => {
            tracing::warn!(error = %e, parts = parts.len(), "the store refused a delivery; recording it part by part");
        }
        Err(e) => return Err(e),
    }
    let mut out = PartsReceipt::default();
    for (location, intake) in parts {
        let outcome = if parts.len() == 1 {
            // Already refused as a whole above.
            record_one_by_one(ledger, location, intake, source, shutdown, &mut out.receipt).await?
        } else {
            match record_durably(ledger, intake, source, shutdown).await {
                Ok(receipt) => {
                    out.receipt.add(&receipt);
                    PartOutcome::Recorded
                }
                Err(crate::FeedError::Ledger(e)) if !e.transient => {
                    tracing::warn!(%location, error = %e, "the store refused a message; recording it record by record");
                    record_one_by_one(ledger, location, intake, source, shutdown, &mut out.receipt).await?
                }
                Err(e) => return Err(e),
            }
        };
        out.outcomes.push(outcome);
    }
    Ok(out)
}

/// Each event and bad input of `intake` recorded on its own; an event the store refuses is recorded
/// as bad input with the store's reason.
async fn record_one_by_one<L: Ledger>(
    ledger: &L,
    location: &str,
    intake: &Intake,
    source: &'static str,
    shutdown: &crate::Shutdown,
    receipt: &mut IntakeReceipt,
) -> Result<PartOutcome, crate::FeedError> {
    let mut outcome = PartOutcome::Recorded;
    let mut bad_inputs: Vec<crate::BadRecord> = Vec::new();
    for event in &intake.events {
        let one = Intake { events: vec![event.clone()], bad: Vec::new() };
        match record_durably(ledger, &one, source, shutdown).await {
            Ok(r) => receipt.add(&r),
            Err(crate::FeedError::Ledger(e)) if !e.transient => {
                let id: String = event.id.chars().take(64).collect();
                metrics::counter!(crate::metrics::RECORDS_REFUSED, "outcome" => "bad-input").increment(1);
                outcome = PartOutcome::Refused;
                bad_inputs.push(crate::BadRecord {
                    location: format!("{location}: event {id}"),
                    reason: format!("the store refused this record: {e}"),
                    raw: event.raw.clone(),
                });
            }
            Err(e) => return Err(e),
        }
    }
    bad_inputs.extend(intake.bad.iter().cloned());
    for bad in bad_inputs {
        let one = Intake { events: Vec::new(), bad: vec![bad] };
        match record_durably(ledger, &one, source, shutdown).await {
            Ok(r) => receipt.add(&r),
            Err(crate::FeedError::Ledger(e)) if !e.transient => {
                let bad = &one.bad[0];
                tracing::error!(
                    location = bad.location,
                    reason = bad.reason,
                    error = %e,
                    "the store refused this input even as a bad record: it is not recorded"
                );
                metrics::counter!(crate::metrics::RECORDS_REFUSED, "outcome" => "unrecorded").increment(1);
                outcome = PartOutcome::Unrecorded;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{QuietWindow, Shutdown, StoreLedger};
    use driftback_events::FilterConfig;
    use driftback_store::Store;
    use sqlx::Connection;

    /// A SQLite store, and a Postgres one when DATABASE_URL names a server (scripts/postgres.sh).
    async fn stores(dir: &std::path::Path) -> Vec<(Store, String)> {
        let path = dir.join("kb.sqlite");
        let mut out = vec![(Store::open_sqlite(&path).await.unwrap(), format!("sqlite://{}", path.display()))];
        match std::env::var("DATABASE_URL") {
            Ok(admin) if !admin.trim().is_empty() => {
                let name = format!("feed_parts_{}", std::process::id());
                let mut conn = sqlx::PgConnection::connect(&admin).await.unwrap();
                sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
                    .execute(&mut conn)
                    .await
                    .unwrap();
                conn.close().await.unwrap();
                let url = format!("{}/{name}", admin.rsplit_once('/').unwrap().0);
                out.push((Store::open(&url, &driftback_store::OpenOptions::default()).await.unwrap(), url));
            }
            _ if std::env::var_os("DRIFTBACK_REQUIRE_SERVICES").is_some() => {
                panic!("DRIFTBACK_REQUIRE_SERVICES is set but DATABASE_URL is not: run through scripts/postgres.sh")
            }
            _ => {}
        }
        out
    }

    fn message(ids: &[&str], second: u32) -> Intake {
        let records: Vec<String> = ids
            .iter()
            .enumerate()
            .map(|(n, id)| {
                format!(
                    r#"{{"eventVersion":"1.09","eventID":"{id}","eventTime":"2024-03-01T10:00:{:02}Z","eventSource":"ec2.amazonaws.com","eventName":"ModifyInstanceAttribute","awsRegion":"us-east-1","eventType":"AwsApiCall","managementEvent":true,"readOnly":false,"userIdentity":{{"type":"IAMUser","arn":"arn:aws:iam::1:user/alice","userName":"alice"}},"requestParameters":{{"instanceId":"i-{id}"}}}}"#,
                    second + n as u32
                )
            })
            .collect();
        let intake = Intake::from_text(&records.join("\n"), "m", &FilterConfig::default());
        assert!(intake.bad.is_empty(), "{:?}", intake.bad);
        intake
    }

    #[tokio::test]
    async fn a_record_the_store_refuses_is_bad_input_and_the_rest_of_the_delivery_is_recorded() {
        let dir = tempfile::tempdir().unwrap();
        for (store, url) in stores(dir.path()).await {
            let backend = store.backend_name();
            let ledger = StoreLedger::new(store.clone(), QuietWindow { quiet_secs: 0, max_age_secs: 900 });
            // What intake lets through but the store refuses: here an id the store's own checks
            // refuse (intake refuses blank ids too, so it is forged past it), and on Postgres an
            // id longer than a btree index entry may be.
            let mut refused = message(&["c"], 10);
            let mut blank = refused.events[0].clone();
            blank.id = "   ".into();
            refused.events.push(blank);
            if backend == "postgres" {
                let mut long = refused.events[0].clone();
                // Incompressible: Postgres compresses an index entry before it measures it.
                let mut seed = 7u64;
                long.id = (0..3000)
                    .map(|_| {
                        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        char::from(b"abcdefghijklmnopqrstuvwxyz0123456789"[(seed >> 33) as usize % 36])
                    })
                    .collect();
                refused.events.push(long);
            }
            refused.bad.push(crate::BadRecord {
                location: "m2: line 9".into(),
                reason: "not JSON".into(),
                raw: "{".into(),
            });
            let parts = vec![
                ("m1".to_string(), message(&["a", "b"], 0)),
                ("m2".to_string(), refused.clone()),
                ("m3".to_string(), message(&["d"], 20)),
            ];
            let got = record_parts(&ledger, &parts, "sqs", &Shutdown::new()).await.unwrap();
            assert_eq!(got.outcomes, [PartOutcome::Recorded, PartOutcome::Refused, PartOutcome::Recorded], "{backend}");
            let refused_n = refused.events.len() - 1;
            assert_eq!(
                got.receipt,
                IntakeReceipt { new_events: 4, duplicates: 0, pending: 4, bad: 1 + refused_n },
                "{backend}"
            );
            let stats = store.stats().await.unwrap();
            assert_eq!((stats.events, stats.bad_records), (4, 1 + refused_n as u64), "{backend}");
            let ids = ["a", "b", "c", "d"].map(String::from);
            assert_eq!(store.events_by_id(&ids).await.unwrap().len(), 4, "{backend}");
            // Each refused record is kept with where it was and the store's reason.
            let query = "SELECT location, reason FROM bad_records ORDER BY id";
            let rows: Vec<(String, String)> = if backend == "postgres" {
                let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
                sqlx::query_as(query).fetch_all(&mut conn).await.unwrap()
            } else {
                let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
                sqlx::query_as(query).fetch_all(&mut conn).await.unwrap()
            };
            assert_eq!(rows[0].0, "m2: event    ", "{rows:?}");
            assert!(rows[0].1.starts_with("the store refused this record: ") && rows[0].1.contains("empty event_id"));
            if backend == "postgres" {
                assert_eq!(rows[1].0, format!("m2: event {}", &refused.events[2].id[..64]));
                assert!(rows[1].1.contains("index row size"), "{rows:?}");
            }
            assert_eq!(rows.last().unwrap().0, "m2: line 9");

            // One message alone, refused: record by record straight away.
            let again = record_parts(&ledger, &parts[1..2], "sqs", &Shutdown::new()).await.unwrap();
            assert_eq!(again.outcomes, [PartOutcome::Refused], "{backend}");
            assert_eq!(again.receipt.duplicates, 1, "{backend}");
            store.close().await;
        }
    }
}
