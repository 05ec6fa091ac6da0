//! Module code for the configuration, brought as `terraform init` brings it: the module calls
//! whose source is a registry, git or an HTTP archive are resolved (versions by their
//! constraints, the newest the registry lists), fetched into a cache in the work directory (once
//! per source and version, written atomically) and handed to the terraform crate as files
//! ([`driftback_terraform::Repo::mount_module`]). When the checkout has
//! `.terraform/modules/modules.json`, exactly what it records is used and nothing is fetched.
//!
//! This crate is I/O at the edge: HTTP (the Module Registry Protocol and archives), git, the file
//! system. Credentials come from where Terraform takes them ([`cli::CliConfig`]; for git over
//! SSH, a configured key or what `ssh` would use, [`SshSettings`]) and are never logged.

pub mod archive;
pub mod cli;
mod fetch;
mod git;
pub mod manifest;
mod settings;
pub mod source;
pub mod version;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use driftback_terraform::{Repo, RepoError, UnresolvedCall};

pub use cli::{CliConfig, CliConfigError, Token};
pub use driftback_gitauth::{DefaultIdentities, Secret, SshKey};
pub use fetch::{FetchError, Fetched, Fetcher};
pub use git::{HostKey, SshSettings};
pub use settings::Settings;
pub use source::{Source, SourceError};
pub use version::{Constraints, Version, VersionError};

/// A module call whose code could not be had, naming the call, its source and version
/// constraint, and the cause.
#[derive(Debug, thiserror::Error)]
pub enum ModuleError {
    #[error("module.{} ({}:{}), source {:?}{}: {cause}", call.key.replace('.', ".module."), call.file.display(), call.line, call.source, version_text(call.version.as_deref()))]
    Call { call: Box<UnresolvedCall>, cause: FetchError },
    #[error("module.{} ({}:{}), source {:?}{}: {reason}", call.key.replace('.', ".module."), call.file.display(), call.line, call.source, version_text(call.version.as_deref()))]
    Manifest { call: Box<UnresolvedCall>, reason: String },
    #[error("{path}: {reason}")]
    ManifestFile { path: PathBuf, reason: String },
    #[error(transparent)]
    Repo(#[from] RepoError),
}

fn version_text(version: Option<&str>) -> String {
    version.map(|v| format!(", version {v:?}")).unwrap_or_default()
}

impl ModuleError {
    /// The module key of the call (`web`, `web.db`), when the error is about one.
    pub fn key(&self) -> Option<&str> {
        match self {
            ModuleError::Call { call, .. } | ModuleError::Manifest { call, .. } => Some(&call.key),
            _ => None,
        }
    }
}

/// One module call's code, mounted in the repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mounted {
    pub key: String,
    pub source: String,
    /// The version chosen (registry sources), or the commit checked out (git sources).
    pub version: Option<String>,
    /// The module's directory in the repository's paths (under `.terraform/modules/KEY`).
    pub dir: PathBuf,
    /// The package on disk (in the cache, or `.terraform/modules`) and the module's directory in it.
    pub package: PathBuf,
    pub subdir: PathBuf,
}

/// What [`load`] did.
#[derive(Debug, Default)]
pub struct Loaded {
    pub mounted: Vec<Mounted>,
    /// Calls whose code could not be had: their resources are not in the configuration.
    pub failed: Vec<ModuleError>,
    /// Whether the code came from `.terraform/modules/modules.json` (nothing was fetched).
    pub from_manifest: bool,
}

/// Give `repo` (loaded from the checkout in `repo_dir`) the code of every module call that is not
/// a path in the repository, nested calls included: from the root module's
/// `.terraform/modules/modules.json` when there is one, else fetched (and cached) by `fetcher`
/// (`None`: fetching is off). Calls that cannot be had are listed in [`Loaded::failed`]; the rest
/// are mounted.
pub async fn load(fetcher: Option<&Fetcher>, repo_dir: &Path, repo: &mut Repo) -> Loaded {
    let root = repo_dir.join(repo.root_dir());
    let manifest_path = manifest::path(&root);
    let mut loaded = Loaded::default();
    let entries = if manifest_path.is_file() {
        loaded.from_manifest = true;
        match manifest::read(&manifest_path) {
            Ok(entries) => Some(entries),
            Err(reason) => {
                loaded.failed.push(ModuleError::ManifestFile { path: manifest_path, reason: reason.to_string() });
                return loaded;
            }
        }
    } else {
        None
    };
    let mut given_up: BTreeSet<String> = BTreeSet::new();
    // Each round mounts the calls found so far; nested calls appear in the next. The depth of
    // nesting is bounded as Terraform's is.
    for _round in 0..32 {
        let calls: Vec<UnresolvedCall> =
            repo.unresolved_module_calls().into_iter().filter(|c| !given_up.contains(&c.key)).collect();
        if calls.is_empty() {
            break;
        }
        for call in calls {
            let result = match &entries {
                Some(entries) => from_manifest(entries, &root, &call),
                None => match fetcher {
                    Some(fetcher) => fetcher
                        .fetch(&call.source, call.version.as_deref())
                        .await
                        .map_err(|cause| ModuleError::Call { call: Box::new(call.clone()), cause }),
                    None => Err(ModuleError::Manifest {
                        call: Box::new(call.clone()),
                        reason: "is not fetched: [modules] fetch is off and the checkout has no .terraform/modules/modules.json".into(),
                    }),
                },
            };
            let mounted = result.and_then(|fetched| {
                let dir = repo.mount_module(&call.key, &fetched.package, &fetched.subdir)?;
                Ok(Mounted {
                    key: call.key.clone(),
                    source: call.source.clone(),
                    version: fetched.version,
                    dir,
                    package: fetched.package,
                    subdir: fetched.subdir,
                })
            });
            match mounted {
                Ok(m) => {
                    tracing::debug!(module = %m.key, source = %m.source, version = ?m.version, "module code mounted");
                    loaded.mounted.push(m);
                }
                Err(e) => {
                    given_up.insert(call.key.clone());
                    loaded.failed.push(e);
                }
            }
        }
    }
    loaded
}

/// The package `terraform init` installed for `call`, as the manifest records it.
fn from_manifest(
    entries: &[manifest::ManifestEntry],
    root: &Path,
    call: &UnresolvedCall,
) -> Result<Fetched, ModuleError> {
    let fail = |reason: String| ModuleError::Manifest { call: Box::new(call.clone()), reason };
    let entry = entries.iter().find(|e| e.key == call.key).ok_or_else(|| {
        fail("is not in .terraform/modules/modules.json: run terraform init again, or remove .terraform so that driftback fetches it".into())
    })?;
    let same = match (Source::parse(&entry.source), Source::parse(&call.source)) {
        (Ok(a), Ok(b)) => a == b,
        _ => entry.source == call.source,
    };
    if !same {
        return Err(fail(format!(
            "terraform init installed it from {:?}; the source has changed since: run terraform init again",
            entry.source
        )));
    }
    if let (Some(constraint), Some(version)) = (&call.version, &entry.version) {
        let allowed = Constraints::parse(constraint)
            .map_err(|e| fail(e.to_string()))?
            .allows(&Version::parse(version).map_err(|e| fail(e.to_string()))?);
        if !allowed {
            return Err(fail(format!(
                "terraform init installed version {version}, which the constraint does not allow: run terraform init again"
            )));
        }
    }
    let subdir = match Source::parse(&entry.source) {
        Ok(Source::Registry(r)) => r.subdir,
        Ok(Source::Remote(r)) => r.subdir,
        _ => None,
    };
    let dir = PathBuf::from(&entry.dir);
    let (package, subdir) = match &subdir {
        Some(sub) if dir.ends_with(sub) => {
            let package: PathBuf =
                dir.components().take(dir.components().count() - Path::new(sub).components().count()).collect();
            (package, PathBuf::from(sub))
        }
        _ => (dir, PathBuf::new()),
    };
    let package = root.join(package);
    if !package.is_dir() {
        return Err(fail(format!(
            "modules.json places it in {}, which is not a directory: run terraform init again",
            package.display()
        )));
    }
    Ok(Fetched { package, subdir, version: entry.version.clone() })
}
