//! Embeddings from an OpenAI-compatible `/embeddings` endpoint (OpenAI, Azure-style gateways,
//! vLLM, Ollama, LiteLLM...), through async-openai.

use std::time::Duration;

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::types::embeddings::{CreateEmbeddingRequestArgs, EmbeddingInput};

use crate::error::EmbedError;

/// Texts per request (OpenAI takes up to 2048 inputs; smaller batches fail less at once).
const BATCH: usize = 128;

/// An embeddings endpoint, a model and the vector length it returns.
#[derive(Debug, Clone)]
pub struct OpenAiEmbedder {
    client: Client<OpenAIConfig>,
    base_url: String,
    model: String,
    dimension: usize,
    request_dimensions: bool,
}

/// How to reach the endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiSettings {
    /// Base URL up to and including the version, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// The model, e.g. `text-embedding-3-small`.
    pub model: String,
    /// The vector length the model returns (or is asked for, with `request_dimensions`).
    pub dimension: usize,
    /// Send `dimensions` in the request (models that can shorten their vectors, such as OpenAI's
    /// text-embedding-3 family); otherwise the returned length is only checked.
    pub request_dimensions: bool,
    /// The API key; empty for endpoints that need none.
    pub api_key: String,
    /// How long one request may take.
    pub timeout: Duration,
}

impl OpenAiEmbedder {
    /// A client for `settings`. Makes no request.
    pub fn new(settings: &OpenAiSettings) -> Result<Self, EmbedError> {
        if settings.model.trim().is_empty() {
            return Err(EmbedError::Config("embed.model is empty; name the embeddings model".into()));
        }
        if settings.dimension == 0 {
            return Err(EmbedError::Config(format!(
                "embed.dimension must be set for the openai embedder: the length of {}'s vectors (e.g. 1536 for \
                 text-embedding-3-small)",
                settings.model
            )));
        }
        let http = reqwest::Client::builder()
            .timeout(settings.timeout)
            .build()
            .map_err(|e| EmbedError::Config(format!("cannot build the HTTP client: {e}")))?;
        let config =
            OpenAIConfig::new().with_api_base(settings.base_url.trim_end_matches('/')).with_api_key(&settings.api_key);
        Ok(OpenAiEmbedder {
            client: Client::build(http, config),
            base_url: settings.base_url.clone(),
            model: settings.model.clone(),
            dimension: settings.dimension,
            request_dimensions: settings.request_dimensions,
        })
    }

    /// `openai:MODEL`: vectors of one model are comparable whichever server computed them.
    pub fn name(&self) -> String {
        format!("openai:{}", self.model)
    }

    /// The vector length.
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// One vector per text, in order.
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.iter().any(|t| t.trim().is_empty()) {
            return Err(EmbedError::Empty);
        }
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH) {
            out.extend(self.embed_batch(batch).await?);
        }
        Ok(out)
    }

    async fn embed_batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut args = CreateEmbeddingRequestArgs::default();
        args.model(self.model.clone()).input(EmbeddingInput::StringArray(texts.to_vec()));
        if self.request_dimensions {
            let d = u32::try_from(self.dimension)
                .map_err(|_| EmbedError::Config(format!("embed.dimension {} is too large", self.dimension)))?;
            args.dimensions(d);
        }
        let request = args.build().map_err(|e| EmbedError::Config(e.to_string()))?;
        let response = self
            .client
            .embeddings()
            .create(request)
            .await
            .map_err(|e| EmbedError::Endpoint { url: self.base_url.clone(), message: e.to_string() })?;
        if response.data.len() != texts.len() {
            return Err(EmbedError::Response(format!(
                "{} returned {} embeddings for {} inputs",
                self.base_url,
                response.data.len(),
                texts.len()
            )));
        }
        let mut data = response.data;
        // The API gives each embedding the index of its input; order by it rather than trust order.
        data.sort_by_key(|d| d.index);
        let mut vectors = Vec::with_capacity(data.len());
        for (i, d) in data.into_iter().enumerate() {
            if d.index as usize != i {
                return Err(EmbedError::Response(format!(
                    "{} returned embeddings with indexes that do not match the inputs",
                    self.base_url
                )));
            }
            if d.embedding.len() != self.dimension {
                return Err(EmbedError::Dimension {
                    name: self.name(),
                    expected: self.dimension,
                    got: d.embedding.len(),
                });
            }
            if d.embedding.iter().any(|x| !x.is_finite()) {
                return Err(EmbedError::Response(format!("{} returned a vector with a non-number", self.base_url)));
            }
            vectors.push(d.embedding);
        }
        Ok(vectors)
    }
}
