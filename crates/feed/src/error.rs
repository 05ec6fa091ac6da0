//! The feed's error types, by what the caller does with them; names nothing else of the crate.

/// A store failure. `transient` says whether the same call may succeed later (a busy database, a
/// lost connection): the feed retries those and stops on the others.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct LedgerError {
    pub message: String,
    pub transient: bool,
}

/// An error from an event source. Each variant says what the caller does: retry later, or stop.
#[derive(Debug, thiserror::Error)]
pub enum FeedError {
    /// The configuration cannot work (an empty queue URL, a rate above CloudTrail's limit, a start
    /// time outside LookupEvents' 90 days). Stop and fix the configuration or the arguments.
    #[error("{0}")]
    Config(String),
    /// An AWS call failed after its retries (network, credentials, permissions, an unknown queue).
    /// The message names the call and the queue or region; retry later or fix the access.
    #[error("{call} failed: {message}")]
    Aws {
        /// The API call, e.g. `sqs:ReceiveMessage`.
        call: &'static str,
        /// AWS's error code and message, or the transport error.
        message: String,
    },
    /// The durable store refused a write; nothing was acknowledged. Retry later.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// Shutdown was requested before the work finished; what was done is durable, the rest will be
    /// redone (messages reappear on the queue, the checkpoint has not moved past unrecorded events).
    #[error("interrupted by shutdown")]
    Interrupted,
    /// The operations endpoint could not listen.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address from the configuration.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Render an AWS SDK error with its code and message (the SDK's Display only says "service error").
pub(crate) fn aws_message<E>(err: &E) -> String
where
    E: aws_sdk_sqs::error::ProvideErrorMetadata + std::error::Error,
{
    match (err.code(), err.message()) {
        (Some(code), Some(message)) => format!("{code}: {message}"),
        (Some(code), None) => code.to_string(),
        _ => {
            // Transport errors: the chain says what (connection refused, timeout, DNS).
            let mut text = err.to_string();
            let mut source = err.source();
            while let Some(s) = source {
                text.push_str(": ");
                text.push_str(&s.to_string());
                source = s.source();
            }
            text
        }
    }
}
