//! `.terraform/modules/modules.json`: where `terraform init` put each module call's code.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// One module call `terraform init` installed.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ManifestEntry {
    /// `web`, `web.db`; `""` for the root module.
    #[serde(rename = "Key")]
    pub key: String,
    #[serde(rename = "Source")]
    pub source: String,
    #[serde(rename = "Version", default)]
    pub version: Option<String>,
    /// Relative to the root module's directory.
    #[serde(rename = "Dir")]
    pub dir: String,
}

#[derive(Debug, Deserialize)]
struct Manifest {
    #[serde(rename = "Modules", default)]
    modules: Vec<ManifestEntry>,
}

/// The manifest's path for the root module in `root` (a directory on disk).
pub fn path(root: &Path) -> PathBuf {
    root.join(".terraform").join("modules").join("modules.json")
}

/// Why the manifest cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("{0}")]
    Read(#[from] std::io::Error),
    #[error("does not parse: {0}")]
    Parse(#[from] serde_json::Error),
}

/// Read the manifest at `path`.
pub fn read(path: &Path) -> Result<Vec<ManifestEntry>, ManifestError> {
    let text = std::fs::read_to_string(path)?;
    let manifest: Manifest = serde_json::from_str(&text)?;
    Ok(manifest.modules)
}
