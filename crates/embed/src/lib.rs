//! Embeddings of change signatures: a deterministic built-in embedder and an OpenAI-compatible endpoint
