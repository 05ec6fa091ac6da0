//! Embeddings of change signatures: a deterministic built-in embedder and an OpenAI-compatible
//! endpoint, behind one [`Embedder`].
//!
//! What is embedded is text: normally the canonical text of a [`ChangeSignature`] (services, APIs,
//! resource type, parameter paths and value shapes; never values), or free text a person searches
//! with. An embedder has a [`Embedder::name`] and a [`Embedder::dimension`]; the knowledge base
//! records both with its vectors and refuses to mix vectors of different embedders.

mod error;
mod hashing;
mod openai;
mod signature;

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use error::EmbedError;
pub use hashing::{DEFAULT_HASHING_DIMENSION, HASHING_EMBEDDER_NAME, HashingEmbedder};
pub use openai::{OpenAiEmbedder, OpenAiSettings};
pub use signature::{ChangeSignature, SignatureError, shape};

/// Which embedder computes vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbedderKind {
    /// The built-in feature-hashing embedder: no service, deterministic.
    #[default]
    Hashing,
    /// An OpenAI-compatible `/embeddings` endpoint.
    Openai,
}

/// The `[embed]` section of the configuration file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EmbedConfig {
    /// `hashing` (default) or `openai`.
    pub kind: EmbedderKind,
    /// Vector length. Hashing: default 256. OpenAI: required, the model's length (or the length
    /// to ask for with `request_dimensions`).
    pub dimension: Option<usize>,
    /// OpenAI-compatible base URL, up to and including the version.
    pub base_url: String,
    /// The embeddings model.
    pub model: String,
    /// Ask the endpoint for `dimension`-long vectors (OpenAI text-embedding-3 models can).
    pub request_dimensions: bool,
    /// Name of the environment variable holding the API key (the key itself never goes in the
    /// file). Unset or empty: no key is sent.
    pub api_key_env: String,
    /// Seconds one request may take.
    pub timeout_secs: u64,
}

impl Default for EmbedConfig {
    fn default() -> Self {
        EmbedConfig {
            kind: EmbedderKind::Hashing,
            dimension: None,
            base_url: "https://api.openai.com/v1".into(),
            model: "text-embedding-3-small".into(),
            request_dimensions: false,
            api_key_env: "OPENAI_API_KEY".into(),
            timeout_secs: 60,
        }
    }
}

/// An embedder: the built-in one or an endpoint.
#[derive(Debug, Clone)]
pub enum Embedder {
    /// Feature hashing.
    Hashing(HashingEmbedder),
    /// An OpenAI-compatible endpoint (boxed: its client is large).
    OpenAi(Box<OpenAiEmbedder>),
}

impl Embedder {
    /// The embedder `config` describes, reading the API key from the environment variable it
    /// names. Makes no request.
    pub fn from_config(config: &EmbedConfig) -> Result<Embedder, EmbedError> {
        match config.kind {
            EmbedderKind::Hashing => {
                Ok(Embedder::Hashing(HashingEmbedder::new(config.dimension.unwrap_or(DEFAULT_HASHING_DIMENSION))?))
            }
            EmbedderKind::Openai => {
                let api_key = if config.api_key_env.is_empty() {
                    String::new()
                } else {
                    std::env::var(&config.api_key_env).unwrap_or_default()
                };
                Ok(Embedder::OpenAi(Box::new(OpenAiEmbedder::new(&OpenAiSettings {
                    base_url: config.base_url.clone(),
                    model: config.model.clone(),
                    dimension: config.dimension.unwrap_or(0),
                    request_dimensions: config.request_dimensions,
                    api_key,
                    timeout: Duration::from_secs(config.timeout_secs.max(1)),
                })?)))
            }
        }
    }

    /// Stable name of the embedder and model, recorded with the vectors.
    pub fn name(&self) -> String {
        match self {
            Embedder::Hashing(_) => HASHING_EMBEDDER_NAME.to_owned(),
            Embedder::OpenAi(e) => e.name(),
        }
    }

    /// The vector length.
    pub fn dimension(&self) -> usize {
        match self {
            Embedder::Hashing(e) => e.dimension(),
            Embedder::OpenAi(e) => e.dimension(),
        }
    }

    /// One vector per text, in order.
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        match self {
            Embedder::Hashing(e) => texts.iter().map(|t| e.embed(t)).collect(),
            Embedder::OpenAi(e) => e.embed(texts).await,
        }
    }

    /// The vector of one text.
    pub async fn embed_one(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let mut v = self.embed(&[text.to_owned()]).await?;
        v.pop().ok_or_else(|| EmbedError::Response("no vector returned".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_default_is_the_hashing_embedder() {
        let e = Embedder::from_config(&EmbedConfig::default()).unwrap();
        assert_eq!((e.name().as_str(), e.dimension()), (HASHING_EMBEDDER_NAME, DEFAULT_HASHING_DIMENSION));
        let v = e.embed(&["api:PutBucketTagging".into(), "api:DeleteBucket".into()]).await.unwrap();
        assert_eq!(v.len(), 2);
        assert_ne!(v[0], v[1]);
        assert!(matches!(e.embed_one("").await, Err(EmbedError::Empty)));
    }

    #[test]
    fn openai_needs_a_dimension_and_a_model() {
        let config = EmbedConfig { kind: EmbedderKind::Openai, ..EmbedConfig::default() };
        let err = Embedder::from_config(&config).unwrap_err().to_string();
        assert!(err.contains("embed.dimension must be set"), "{err}");
        let config = EmbedConfig { dimension: Some(8), model: " ".into(), ..config };
        assert!(Embedder::from_config(&config).is_err());
        let config = EmbedConfig { model: "m".into(), ..config };
        let e = Embedder::from_config(&config).unwrap();
        assert_eq!((e.name().as_str(), e.dimension()), ("openai:m", 8));
    }
}
