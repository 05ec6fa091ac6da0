//! The error of every embedder ([`EmbedError`]); names nothing else of the crate.

/// What went wrong, and what the caller does about it.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The configuration cannot work (a zero dimension, no model). Fix the configuration.
    #[error("invalid embedder configuration: {0}")]
    Config(String),
    /// Nothing to embed: an empty text. Fix the input.
    #[error("nothing to embed: the text is empty")]
    Empty,
    /// The endpoint could not be reached or refused the request (network, HTTP status, rate
    /// limit). Retry later, or check the URL, model and key.
    #[error("the embeddings endpoint {url} failed: {message}")]
    Endpoint {
        /// The base URL.
        url: String,
        /// What it said.
        message: String,
    },
    /// The endpoint returned vectors of another length than configured. Fix `embed.dimension`.
    #[error(
        "{name} returned vectors of {got} dimensions, but embed.dimension is {expected}; set embed.dimension = {got}"
    )]
    Dimension {
        /// The embedder's name.
        name: String,
        /// The configured length.
        expected: usize,
        /// The length returned.
        got: usize,
    },
    /// The endpoint's answer does not fit the request (count, order, non-numbers). Stop: the
    /// endpoint is not OpenAI-compatible.
    #[error("unusable answer from the embeddings endpoint: {0}")]
    Response(String),
}
