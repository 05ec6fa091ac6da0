//! What a read returns ([`StateRead`], its [`StateVersion`]), why it fails ([`ReadError`]) and
//! the trait every reader implements ([`StateReader`]). Names nothing else of `read`, so the
//! readers and the parser use it without importing the module that routes to them.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;

use driftback_terraform::{State, StateError};

use crate::location::Location;

/// A state as read, with what identifies its version.
#[derive(Debug, Clone)]
pub struct StateRead {
    /// Shared: the index and the workspaces built on it hold the one parsed copy.
    pub state: Arc<State>,
    pub version: StateVersion,
    /// The serial and lineage the state records (a `show -json` export has neither).
    pub serial: Option<u64>,
    pub lineage: Option<String>,
    /// Resources whose provider configuration has an alias: `module.x.aws_s3_bucket.logs` ->
    /// `west` (keys without instance keys, `data.` for data sources).
    pub provider_aliases: HashMap<String, String>,
    /// The size of the state as read, in bytes.
    pub bytes: usize,
}

/// What identifies one version of a state: equal identities mean the same state.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StateVersion {
    /// An S3 object: its ETag (and version id where the bucket keeps versions).
    S3 { etag: String, version_id: Option<String> },
    /// An HCP Terraform state version (`sv-...`) and its serial.
    Hcp { id: String, serial: Option<u64> },
    /// A state file: the serial and lineage it records.
    Serial { serial: u64, lineage: String },
    /// A file without serial or lineage (a `show -json` export): a digest of its content.
    Digest(String),
}

impl std::fmt::Display for StateVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StateVersion::S3 { etag, version_id: Some(v) } => write!(f, "etag {etag} version {v}"),
            StateVersion::S3 { etag, version_id: None } => write!(f, "etag {etag}"),
            StateVersion::Hcp { id, serial: Some(s) } => write!(f, "{id} (serial {s})"),
            StateVersion::Hcp { id, serial: None } => write!(f, "{id}"),
            StateVersion::Serial { serial, lineage } => write!(f, "serial {serial} lineage {lineage}"),
            StateVersion::Digest(d) => write!(f, "sha256 {d}"),
        }
    }
}

/// Why a state could not be read, by what the caller does about it.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Nothing at the location: the workspace does not exist (yet) or the key/path is wrong.
    /// Fix the configuration; retrying does not help.
    #[error("no state at {location}: {hint}")]
    Missing { location: String, hint: String },
    /// The location lacks something only the configuration can give (an S3 region). Fix it.
    #[error("{location}: {message}")]
    Configuration { location: String, message: String },
    /// The S3 bucket does not exist (or is in another partition). Fix the configuration.
    #[error("bucket {bucket:?} does not exist: check the backend's bucket and region")]
    NoBucket { bucket: String },
    /// No AWS credentials were found. Provide them in the environment or the usual files.
    #[error(
        "no AWS credentials ({message}): set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run with a role attached; credentials are never read from the repository"
    )]
    NoCredentials { message: String },
    /// No token for an HCP Terraform / Terraform Enterprise host. Provide one.
    #[error(
        "no API token for {host}: set {variable} or run `terraform login {host}` (~/.terraform.d/credentials.tfrc.json)"
    )]
    NoToken { host: String, variable: String },
    /// The credentials or token were refused. Fix the permissions; retrying does not help.
    #[error("{location}: access denied: {message}")]
    Denied { location: String, message: String },
    /// The server did not answer, or answered with a server error. Retry later.
    #[error("{location}: {message}")]
    Unavailable { location: String, message: String },
    /// The server answered something that is not what its API promises.
    #[error("{location}: unexpected answer: {message}")]
    Malformed { location: String, message: String },
    /// The bytes are not a state driftback reads.
    #[error(transparent)]
    State(#[from] StateError),
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

impl ReadError {
    /// Whether trying again later may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(self, ReadError::Unavailable { .. })
    }
}

/// Reads the state at a location.
pub trait StateReader: Send + Sync {
    fn read<'a>(&'a self, location: &'a Location) -> BoxFuture<'a, Result<StateRead, ReadError>>;

    /// What identifies the state's current version, found without reading it (an S3 object's
    /// ETag from a HEAD request, a file's size and modification time): equal answers mean the
    /// state read before is still current. `None` where only a read can tell.
    fn probe<'a>(&'a self, location: &'a Location) -> BoxFuture<'a, Result<Option<String>, ReadError>> {
        let _ = location;
        Box::pin(async { Ok(None) })
    }
}
