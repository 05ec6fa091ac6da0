//! What reading can say about its input: the whole of it unreadable ([`ReadError`]), or one record in
//! it that is not an event ([`BadRecord`]). Shared by the container reader and the scanner under it.

/// The whole input could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{origin}: not valid gzip data: {source}")]
    Gzip { origin: String, source: std::io::Error },
    #[error(
        "{origin}: line {line}, column {column}: {message}; expected a CloudTrail log file \
         ({{\"Records\": [...]}}), a JSON array of records, or JSON lines of records or EventBridge envelopes"
    )]
    Syntax { origin: String, line: usize, column: usize, message: String },
    #[error(
        "{origin}: a JSON {found} is not a CloudTrail container; expected {{\"Records\": [...]}}, \
         a JSON array of records, or JSON lines"
    )]
    NotCloudTrail { origin: String, found: &'static str },
}

/// Input that could not be read as an event, and why: the one bad-record type, which the feed
/// collects and the store keeps.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BadRecord {
    /// Where it was: `FILE: record 3`, `FILE: line 7`, an SQS message id, ...
    pub location: String,
    /// Why it is not an event.
    pub reason: String,
    /// The text verbatim (of the record or line, where the reader could cut it out).
    pub raw: String,
}
