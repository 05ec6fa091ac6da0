//! States in the repository's working tree: `terraform.tfstate`,
//! `terraform.tfstate.d/<workspace>/terraform.tfstate`, and `terraform show -json` exports.

use std::path::PathBuf;

use futures::future::BoxFuture;

use super::parse::parse_state;
use super::reader::{ReadError, StateRead, StateReader};
use crate::location::Location;

/// Reads files relative to the repository's root.
pub struct LocalReader {
    root: PathBuf,
}

impl LocalReader {
    pub fn new(root: impl Into<PathBuf>) -> LocalReader {
        LocalReader { root: root.into() }
    }
}

impl StateReader for LocalReader {
    fn read<'a>(&'a self, location: &'a Location) -> BoxFuture<'a, Result<StateRead, ReadError>> {
        Box::pin(async move {
            let (Location::Local { path } | Location::ShowJson { path }) = location else {
                return Err(ReadError::Malformed {
                    location: location.to_string(),
                    message: "not a file location".into(),
                });
            };
            let abs = self.root.join(path);
            let bytes = match tokio::fs::read(&abs).await {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(ReadError::Missing {
                        location: location.to_string(),
                        hint: "no such workspace, or the state is kept elsewhere: name the backend or state_file in a [[stack]] entry".into(),
                    });
                }
                Err(source) => return Err(ReadError::Io { path: abs, source }),
            };
            parse_state(&bytes, &path.display().to_string())
        })
    }

    fn probe<'a>(&'a self, location: &'a Location) -> BoxFuture<'a, Result<Option<String>, ReadError>> {
        Box::pin(async move {
            let (Location::Local { path } | Location::ShowJson { path }) = location else { return Ok(None) };
            let abs = self.root.join(path);
            match tokio::fs::metadata(&abs).await {
                Ok(meta) => {
                    let modified = meta
                        .modified()
                        .ok()
                        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                        .map(|d| d.as_nanos())
                        .unwrap_or_default();
                    Ok(Some(format!("{} bytes, modified {modified}", meta.len())))
                }
                // The read says what is wrong, with its hint.
                Err(_) => Ok(None),
            }
        })
    }
}
