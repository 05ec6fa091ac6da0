//! Which embedder produced stored vectors ([`EmbedderSpec`]); names nothing else of the crate.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Which embedder produced the stored vectors. Vectors of different embedders are never mixed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EmbedderSpec {
    /// Stable name of the embedder and its model, e.g. `hashing-v1` or `openai:text-embedding-3-small`.
    pub name: String,
    /// Length of every vector.
    pub dimension: usize,
}

impl fmt::Display for EmbedderSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({} dimensions)", self.name, self.dimension)
    }
}
