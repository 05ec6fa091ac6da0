//! Event sources for the daemon: the SQS consumer (EventBridge envelopes, and an organisation trail's
//! log files through S3 notifications), CloudTrail backfill and operations endpoints.
//!
//! Everything that arrives (an SQS message body, a LookupEvents page) is decoded into an [`Intake`]:
//! normalised events with their filter disposition, and bad input kept verbatim with its reason.
//! An intake is written to a [`Ledger`] (the durable store) in one call; only then is the SQS message
//! deleted or the backfill checkpoint moved. Kept events wait in the ledger as pending change sets
//! until their resource has been quiet for the [`QuietWindow`]; [`run_reconciler`] claims due
//! change sets with a lease, so replicas sharing one queue and one store never reconcile one twice.
//!
//! Nothing here knows Terraform or git: reconciling a change set is the caller's [`Reconcile`].

mod backfill;
mod error;
mod intake;
mod ledger;
pub mod metrics;
mod ops;
mod reconciler;
mod shutdown;
mod sqs;
mod store_ledger;
mod trail;
mod window;

pub use backfill::{
    Backfill, BackfillConfig, BackfillProgress, BackfillReport, LOOKUP_EVENTS_MAX_AGE_DAYS, checkpoint_name,
};
pub use driftback_events::BadRecord;
pub use error::FeedError;
pub use intake::{Intake, IntakeError, IntakeEvent, Served, Triage};
pub use ledger::{ClaimedChangeSet, IntakeReceipt, Ledger, LedgerError};
pub use ops::{Probe, ProbeError, ops_router, serve_ops};
pub use reconciler::{Reconcile, ReconcileError, Reconciled, ReconcilerConfig, reconcile_due, run_reconciler};
pub use shutdown::Shutdown;
pub use sqs::{SqsConfig, SqsConsumer, UnparseablePolicy};
pub use store_ledger::StoreLedger;
pub use trail::{
    Carries, Ignored, KeyError, KeyKind, Notification, NotificationError, ObjectError, ObjectRef, TrailReader,
    classify_key, gunzip_bounded, read_notification, read_object, triage,
};
pub use window::{QuietWindow, due_at};
