//! The daemon's metrics: names, labels and the one place each is counted (and logged).
//!
//! Labels are low-cardinality: a source (`sqs`, `trail`, `backfill`), a drop reason, an outcome.

use std::time::Duration;

use metrics::{counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram};

pub const EVENTS_RECEIVED: &str = "driftback_events_received_total";
pub const EVENTS_DROPPED: &str = "driftback_events_dropped_total";
pub const EVENTS_DUPLICATE: &str = "driftback_events_duplicate_total";
pub const BAD_INPUT: &str = "driftback_bad_input_total";
pub const MESSAGES_DELETED: &str = "driftback_sqs_messages_deleted_total";
pub const MESSAGES_LEFT: &str = "driftback_sqs_messages_left_for_redrive_total";
pub const CHANGE_SETS: &str = "driftback_change_sets_total";
pub const RECONCILE_SECONDS: &str = "driftback_reconcile_duration_seconds";
pub const EVENT_TO_COMMIT_SECONDS: &str = "driftback_event_to_commit_seconds";
pub const LLM_TOKENS: &str = "driftback_llm_tokens_total";
pub const QUEUE_LAG_SECONDS: &str = "driftback_queue_lag_seconds";
pub const QUEUE_VISIBLE: &str = "driftback_queue_messages_visible";
pub const STORE_ERRORS: &str = "driftback_store_errors_total";
pub const RECORDS_REFUSED: &str = "driftback_records_refused_total";
pub const TRAIL_OBJECTS_READ: &str = "driftback_trail_objects_read_total";
pub const TRAIL_OBJECTS_IGNORED: &str = "driftback_trail_objects_ignored_total";
pub const TRAIL_OBJECTS_LEFT: &str = "driftback_trail_objects_left_total";
pub const BACKFILL_REQUESTS: &str = "driftback_backfill_requests_total";
pub const KNOWLEDGE_WRITES_LOST: &str = "driftback_knowledge_writes_lost_total";
/// Counted by the publish stage's notifier (driftback-publish), described here with the rest.
pub const NOTIFICATIONS_LOST: &str = "driftback_notifications_lost_total";

/// Buckets for durations from milliseconds to an hour (the quiet window dominates event-to-commit).
pub const DURATION_BUCKETS: &[f64] =
    &[0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0];

/// Describe every metric once, so `/metrics` documents them before the first sample.
pub fn describe() {
    describe_counter!(EVENTS_RECEIVED, "CloudTrail events received, by source (sqs, backfill)");
    describe_counter!(EVENTS_DROPPED, "Events that are not drift candidates, by reason");
    describe_counter!(EVENTS_DUPLICATE, "Events already recorded (redelivery, another replica, overlapping backfill)");
    describe_counter!(BAD_INPUT, "Input that is not a usable CloudTrail record, recorded verbatim, by source");
    describe_counter!(MESSAGES_DELETED, "SQS messages deleted after their events were durably recorded");
    describe_counter!(MESSAGES_LEFT, "Unparseable SQS messages left on the queue for its redrive policy");
    describe_counter!(CHANGE_SETS, "Change sets reconciled, by outcome");
    describe_histogram!(RECONCILE_SECONDS, metrics::Unit::Seconds, "Time to reconcile one change set");
    describe_histogram!(
        EVENT_TO_COMMIT_SECONDS,
        metrics::Unit::Seconds,
        "From a change set's last event (event time) to its outcome being recorded"
    );
    describe_counter!(LLM_TOKENS, "LLM tokens spent reconciling change sets");
    describe_gauge!(QUEUE_LAG_SECONDS, metrics::Unit::Seconds, "Age of the newest received SQS message");
    describe_gauge!(QUEUE_VISIBLE, "Messages waiting in the queue (ApproximateNumberOfMessages)");
    describe_counter!(STORE_ERRORS, "Failed store writes, by operation (retried)");
    describe_counter!(
        RECORDS_REFUSED,
        "Records the store refused for good, by outcome (bad-input: kept as bad input with the store's reason; \
         unrecorded: refused even so, their message left on the queue)"
    );
    describe_counter!(TRAIL_OBJECTS_READ, "Organisation trail log files fetched from S3 and read");
    describe_counter!(
        TRAIL_OBJECTS_IGNORED,
        "Objects of the trail bucket's notifications not read, by reason (digest, test-event, config-marker, \
         not-object-created, not-a-log-file, not-served)"
    );
    describe_counter!(
        TRAIL_OBJECTS_LEFT,
        "Trail log files whose fetch failed in a way that may pass; their message is left for redelivery"
    );
    describe_counter!(BACKFILL_REQUESTS, "LookupEvents requests, by result (ok, throttled)");
    describe_counter!(
        KNOWLEDGE_WRITES_LOST,
        "Best-effort knowledge-base writes that failed and were not retried (learned recipes, recipe uses, \
         remembered reconciliations), by write"
    );
    describe_counter!(NOTIFICATIONS_LOST, "Escalation notices whose webhook post failed after every retry");
    // Zero-valued series exist from the start, so a rate() over them works.
    counter!(LLM_TOKENS).absolute(0);
}

pub(crate) fn events_received(source: &'static str, n: usize) {
    counter!(EVENTS_RECEIVED, "source" => source).increment(n as u64);
}

pub(crate) fn event_dropped(reason: &'static str) {
    counter!(EVENTS_DROPPED, "reason" => reason).increment(1);
}

pub(crate) fn trail_object_read(location: &str, bytes: usize) {
    tracing::debug!(object = location, bytes, "trail log file read");
    counter!(TRAIL_OBJECTS_READ).increment(1);
}

pub(crate) fn trail_object_ignored(location: &str, reason: &'static str) {
    tracing::debug!(object = location, reason, "trail object ignored");
    counter!(TRAIL_OBJECTS_IGNORED, "reason" => reason).increment(1);
}

pub(crate) fn trail_object_left(sqs_message_id: &str, error: &str) {
    tracing::warn!(sqs_message_id, error, "trail log file not fetched; its message is left for redelivery");
    counter!(TRAIL_OBJECTS_LEFT).increment(1);
}

pub(crate) fn duplicates(n: usize) {
    counter!(EVENTS_DUPLICATE).increment(n as u64);
}

pub(crate) fn bad_input(source: &'static str, location: &str, reason: &str) {
    tracing::warn!(source, location, reason, "unusable input recorded in bad_records");
    counter!(BAD_INPUT, "source" => source).increment(1);
}

/// A best-effort knowledge-base write that failed: the reconciliation stands, what it would have
/// taught is lost (and counted, so an outage's cost shows).
pub fn knowledge_write_lost(write: &'static str, error: &dyn std::fmt::Display) {
    tracing::warn!(write, %error, "a knowledge-base write failed and is not retried");
    counter!(KNOWLEDGE_WRITES_LOST, "write" => write).increment(1);
}

pub(crate) fn store_error(operation: &'static str, error: &dyn std::fmt::Display) {
    tracing::warn!(operation, %error, "store write failed; will retry");
    counter!(STORE_ERRORS, "operation" => operation).increment(1);
}

/// One change set's outcome; `event_lag` is from its last event to now.
pub(crate) fn change_set_done(id: &str, outcome: &str, took: Duration, event_lag: Option<Duration>, tokens: u64) {
    tracing::info!(change_set = id, outcome, seconds = took.as_secs_f64(), "change set reconciled");
    counter!(CHANGE_SETS, "outcome" => outcome.to_string()).increment(1);
    histogram!(RECONCILE_SECONDS).record(took.as_secs_f64());
    if let Some(lag) = event_lag {
        histogram!(EVENT_TO_COMMIT_SECONDS).record(lag.as_secs_f64());
    }
    if tokens > 0 {
        counter!(LLM_TOKENS).increment(tokens);
    }
}

pub(crate) fn queue_lag(seconds: f64) {
    gauge!(QUEUE_LAG_SECONDS).set(seconds);
}

pub(crate) fn queue_visible(n: f64) {
    gauge!(QUEUE_VISIBLE).set(n);
}
