//! How modules are fetched ([`Settings`]): the cache, the bounds on each package, SSH.

use std::path::PathBuf;
use std::time::Duration;

use crate::git::SshSettings;

/// How modules are fetched: where the cache is, and the bounds on each package.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The cache: one directory per (source, resolved version).
    pub cache_dir: PathBuf,
    /// The most bytes one package may download, and unpack to.
    pub max_package_bytes: u64,
    /// The longest one package's fetch (discovery, versions, download, unpack) may take.
    pub fetch_timeout: Duration,
    /// Keys and host keys for git sources over SSH.
    pub ssh: SshSettings,
}

impl Settings {
    /// The default bounds, and SSH as this process's environment gives it (no key configured).
    pub fn new(cache_dir: impl Into<PathBuf>) -> Settings {
        Settings {
            cache_dir: cache_dir.into(),
            max_package_bytes: 64 << 20,
            fetch_timeout: Duration::from_secs(60),
            ssh: SshSettings::from_env(),
        }
    }
}
